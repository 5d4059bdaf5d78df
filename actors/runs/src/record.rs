//! The stored form of a run (`runs[run id]`) and its reads and write. Only `bosund` reads and
//! writes it; what the UI sees is the protocol's `RunView`, made from a [`RunSnapshot`] by
//! bosund's api. Its agent part
//! ([`AgentRun`]) is the agents' own (`agents::record`).

use std::path::PathBuf;

use bosun_protocol::runner::{StopLadder, StopOrder};
use bosun_shared::placement::Placement;
use bosun_shared::process::{Pgid, Pid, ProcessIdentity};
use bosun_shared::projects::RunGit;
use bosun_shared::run::{ExitInfo, RunState};
use bosun_shared::{RunId, Timestamp};
use serde::{Deserialize, Serialize};

use std::collections::HashMap;
use std::sync::Arc;

use bosun_agents::record::{AgentRun, Decision};

use crate::decisions::{self, DecisionRow};
use bosun_store::writer::{Change, StoreWriter, WriteOp};
use bosun_store::{Record, Store, StoreError};

/// The program of a run as the runner reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: Pid,
    pub pgid: Pgid,
    pub start_time: u64,
}

impl ProcessInfo {
    pub fn leader(&self) -> ProcessIdentity {
        ProcessIdentity {
            pid: self.pid,
            start_time: self.start_time,
        }
    }
}

/// Everything bosun keeps about a run. Environment *values* are not kept (only names): the
/// plan that carried them is gone once the runner has it. (A run placed on another host keeps
/// its plan apart until then, its secrets sealed: [`crate::sealed`].)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: RunId,
    pub name: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env_names: Vec<String>,
    pub time_cap_ms: Option<u64>,
    pub ladder: StopLadder,
    pub state: RunState,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    /// The runner, recorded before it is handed its plan.
    pub runner: Option<ProcessIdentity>,
    /// The program, as the runner reported it.
    pub process: Option<ProcessInfo>,
    /// SHA-256 of the runner's token, to check it when it reconnects after a restart.
    pub token_digest: String,
    /// A stop asked for and not yet carried out, kept so a runner that reconnects gets it.
    pub stop: Option<StopOrder>,
    pub exit: Option<ExitInfo>,
    /// The last committed output seq, set when the run ends (live runs: the log hub has it).
    pub last_seq: u64,
    /// Files of the run that hold secrets: deleted by the runner at the end, or at startup
    /// after a crash.
    pub secret_files: Vec<PathBuf>,
    /// For a run of an agent: the agent, and what the CLI's own stream said.
    #[serde(default)]
    pub agent: Option<AgentRun>,
    /// For a run of a card of a project: its branch, and its head commit at the start and the
    /// end. Left out of the record otherwise, as runs were before projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<RunGit>,
    /// For a run placed on another host: its backend's job. Left out for a local run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed: Option<Placed>,
    /// Set once the run's log and MCP call records were pruned (`bosund`'s retention, or
    /// `logs.max`); this record, the run's summary, stays. Left out until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_pruned: Option<LogPruned>,
}

/// A finished run's log and MCP call records pruned: when, why, and how much went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogPruned {
    pub at: Timestamp,
    pub why: PruneWhy,
    /// What the run's folder held and gave back.
    pub bytes: u64,
}

/// Why a run's log was pruned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneWhy {
    /// The run ended longer ago than bosund's retention.
    Retention,
    /// The finished runs' logs took more than `logs.max`; this run's were among the oldest.
    Size,
}

/// A run handed to a cluster engine: its job, its folder on the shared filesystem, and the
/// certificate issued to its runner (by SHA-256), the only one its link is taken with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    pub placement: Placement,
    pub job: String,
    pub dir: PathBuf,
    pub cert_digest: String,
    /// The host the engine put it on, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// When it was handed to the engine (runs placed before this was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<Timestamp>,
    /// When bosund first saw its job leave the queue: its runner asked for its plan, or the
    /// engine said the job runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_queue_at: Option<Timestamp>,
}

impl Placed {
    /// How long the job waited in the engine's queue, once it has left it.
    pub fn queued_ms(&self) -> Option<u64> {
        let (from, to) = (self.submitted_at?, self.left_queue_at?);
        Some(u64::try_from(to.since(from).as_millis()).unwrap_or(u64::MAX))
    }
}

impl Record for RunRecord {
    const TABLE: &'static str = "runs";
    const WHAT: &'static str = "run";
    type Key = RunId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// A run as it stands: its record, and the last seq of its output that arrived (a live run's
/// hub knows it before the record does).
#[derive(Clone, Debug, PartialEq)]
pub struct RunSnapshot {
    pub record: RunRecord,
    pub last_seq: u64,
}

impl RunSnapshot {
    /// The run with the output its runner sent so far (never less than its record says).
    pub fn new(record: RunRecord, received: u64) -> Self {
        let last_seq = received.max(record.last_seq);
        Self { record, last_seq }
    }

    /// A stored run as its record has it.
    pub fn stored(record: RunRecord) -> Self {
        Self::new(record, 0)
    }
}

/// The runs' reads of the store. A record is read with its decisions (kept apart, see
/// [`crate::decisions`]), in one read transaction.
pub trait RunReads {
    /// One run's record.
    fn run(&self, id: RunId) -> Result<Option<RunRecord>, StoreError>;

    /// Every run record, in id order.
    fn runs(&self) -> Result<Vec<RunRecord>, StoreError>;

    /// Every run record without its decisions (an agent run's are left empty), in id order:
    /// what a page of runs is chosen from before the decisions of the chosen ones are read.
    fn runs_without_decisions(&self) -> Result<Vec<RunRecord>, StoreError>;

    /// A run's decisions, in the order they were made.
    fn decisions_of(&self, id: RunId) -> Result<Vec<Arc<Decision>>, StoreError>;

    /// The decisions of each of `ids`, in the same order, read in one read transaction.
    fn decisions_of_each(&self, ids: &[RunId]) -> Result<Vec<Vec<Arc<Decision>>>, StoreError>;

    /// The ids of runs whose id starts with `prefix`, at most `limit` of them.
    fn run_ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<RunId>, StoreError>;
}

impl RunReads for Store {
    fn run(&self, id: RunId) -> Result<Option<RunRecord>, StoreError> {
        let read = self.read()?;
        let Some(mut rec) = read.get::<RunRecord>(&id)? else {
            return Ok(None);
        };
        if let Some(agent) = rec.agent.as_mut() {
            agent.decisions = decisions::of_run(&read, id)?;
        }
        Ok(Some(rec))
    }

    fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let read = self.read()?;
        let mut runs = read.all::<RunRecord>()?;
        // One pass over the decisions, in key order: run by run, each run's in order.
        let at: HashMap<RunId, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        read.each::<DecisionRow>(|row| {
            if let Some(agent) = at.get(&row.run).and_then(|&i| runs[i].agent.as_mut()) {
                agent.decisions.push(Arc::new(row.decision));
            }
            Ok(())
        })?;
        Ok(runs)
    }

    fn runs_without_decisions(&self) -> Result<Vec<RunRecord>, StoreError> {
        self.read()?.all::<RunRecord>()
    }

    fn decisions_of(&self, id: RunId) -> Result<Vec<Arc<Decision>>, StoreError> {
        decisions::of_run(&self.read()?, id)
    }

    fn decisions_of_each(&self, ids: &[RunId]) -> Result<Vec<Vec<Arc<Decision>>>, StoreError> {
        let read = self.read()?;
        ids.iter().map(|&id| decisions::of_run(&read, id)).collect()
    }

    fn run_ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<RunId>, StoreError> {
        let keys = self.read()?.keys_with_prefix::<RunRecord>(prefix, limit)?;
        Ok(keys.iter().filter_map(|k| k.parse().ok()).collect())
    }
}

/// The runs' writes through the store writer.
pub trait RunWrites {
    /// Writes a run's record durably and returns once it is on disk. A record that says the
    /// run ended also closes the run's log file, synced, once it is saved: the run has written
    /// its last output.
    fn put_run(&self, record: &RunRecord) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`RunWrites::put_run`] with other changes in the same commit (its usage row; a remote
    /// run's sealed plan kept or deleted with the record that says why).
    fn put_run_with(
        &self,
        record: &RunRecord,
        also: Vec<Change>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl RunWrites for StoreWriter {
    fn put_run(&self, record: &RunRecord) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.put_run_with(record, Vec::new())
    }

    fn put_run_with(
        &self,
        record: &RunRecord,
        also: Vec<Change>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let mut changes = vec![Change::put(record)];
        changes.extend(also);
        self.durably(WriteOp::Commit {
            changes,
            ends_log: record.state.is_final().then_some(record.id),
        })
    }
}
