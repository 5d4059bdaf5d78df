//! Runs: the supervisor of every RunActor, and the one place a run is started.
//!
//! It validates a start request, records nothing itself (the new RunActor persists the run before
//! the person hears of it), restarts a RunActor that fails within its [`RestartBudget`], and at
//! startup brings back every run the store says is not over. It also carries out the daemon's
//! shutdown: every run stopped by its ladder, the caller told when the last one has ended.

use crate::record::RunReads;
use crate::record::RunWrites;
mod error;
pub mod follow;
pub use error::RunsError;
pub mod decisions;
pub mod events;
pub mod live;
pub mod log_hub;
pub mod record;
pub mod run_actor;
pub mod sealed;
mod spawn;
pub mod spend;

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_protocol::runner::{
    AtEnd, ControlPlan, FencePlan, LaunchPlan, PlanFile, RunFolder, StopLadder, StopOrder,
};
use bosun_shared::agents::CliKind;
use bosun_shared::gateway::GatewayServer;
use bosun_shared::paths::StateDir;
use bosun_shared::placement::Placement;
use bosun_shared::process::{self, SweepTarget};
use bosun_shared::projects::RunGit;
use bosun_shared::run::{ExitInfo, Outcome, RunRequest, RunState};
use bosun_shared::time::TimeCap;
use bosun_shared::{CardId, RunId, RunToken, Timestamp};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tracing::{error, info, warn};

use crate::events::RunsEvent;
use bosun_agents::adapter::RUN_DIR;
use bosun_agents::launch::Prepared;
use bosun_agents::record::{AgentRun, ToolCall};
use bosun_agents::registry::AgentsHandle;
use bosun_agents::secrets::{SecretLine, SecretReader};
use bosun_kit::supervision::{RestartBudget, RestartPolicy, Verdict};
use bosun_kit::tell::Tell;
use bosun_placement::{PlacementError, Remote};
use bosun_shared::prices::Prices;
use bosun_store::writer::{Change, StoreWriter};
use bosun_store::{Store, StoreError};
use live::LiveRuns;
use log_hub::LogHub;
use record::{RunRecord, RunSnapshot};
use run_actor::{Launch, RunActor, RunArgs, RunMsg};

/// What every RunActor shares.
pub struct RunsContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub dirs: StateDir,
    pub runner_bin: PathBuf,
    pub live: LiveRuns,
    /// Where the runs' changes and their calls' approvals are told (bosund tells every UI).
    pub tell: Tell<RunsEvent>,
    /// Where a run of an agent reports what it found.
    pub agents: AgentsHandle,
    /// Where an answer of the lead reports the tools it called, as they are read.
    pub answers: Arc<dyn CallsRead>,
    /// Placing runs on other hosts, when `placement.toml` configures it.
    pub remote: Option<Arc<Remote>>,
    /// What a run costs when its CLI does not say.
    pub prices: Arc<Prices>,
    /// Where a sealed plan's secrets are read again when its runner asks for it.
    pub secrets: SecretReader,
    /// What the runs of each card, and of each project per day, spent together.
    pub spend: Arc<spend::Spend>,
    /// The caps of cards and projects (the board's).
    pub budgets: Arc<dyn spend::SharedBudgets>,
    /// The MCP registry, told of the tools a run's gateway held back.
    pub registry: bosun_kit::handle::ActorHandle<bosun_mcp::registry::RegistryMsg>,
}

/// Who hears the tool calls read so far from the stream of a run that is an answer of the lead:
/// the lead's answers, which check a privileged call against what came before it. Defined here
/// and implemented by the lead, so that runs know nothing of the chats that start them.
pub trait CallsRead: Send + Sync {
    /// The run's stream has been read further: `calls` are all its tool calls so far, in order.
    fn calls_read(&self, run: RunId, calls: &[ToolCall]);
}

impl RunsContext {
    /// Tells that the run changed (its record saved first), with the last seq of its output
    /// that arrived.
    pub(crate) fn announce(&self, record: &RunRecord, last_seq: u64) {
        (self.tell)(RunsEvent::Run(Box::new(RunSnapshot::new(
            record.clone(),
            last_seq,
        ))));
    }

    pub(crate) fn delete_secret_files(&self, rec: &RunRecord) {
        for path in &rec.secret_files {
            match std::fs::remove_file(path) {
                Ok(()) => {
                    info!(run_id = %rec.id, path = %path.display(), "deleted a leftover secret file")
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    warn!(run_id = %rec.id, path = %path.display(), error = %e, "could not delete a secret file")
                }
            }
        }
    }
}

/// A run checked and ready: its record, its plan, where it goes, and its plan's secrets.
type Checked = (RunRecord, LaunchPlan, Placement, Vec<SecretLine>);

/// A run to start: what the person asked for, or what an agent's adapter made.
#[derive(Debug, Default)]
pub struct RunSpec {
    pub request: RunRequest,
    /// Files the runner writes (mode 0600) before the program starts and deletes when the run
    /// ends: (path, contents), the path under [`RUN_DIR`](bosun_agents::adapter::RUN_DIR).
    pub files: Vec<(String, String)>,
    /// Files the runner writes (mode 0600) before the program starts and leaves when the run
    /// ends (a continued session's transcript), named the same way.
    pub kept_files: Vec<(String, String)>,
    /// Lines for the run's log, before the program's output.
    pub notes: Vec<String>,
    /// Set for a run of an agent.
    pub agent: Option<AgentRun>,
    /// Set when the runner drives the CLI through its control protocol.
    pub control: Option<ControlPlan>,
    /// Secret values the runner hides in the run's output.
    pub redact: Vec<String>,
    /// The stdio MCP servers the run reaches through its runner's gateway.
    pub gateway: Vec<GatewayServer>,
    /// For a run of a card of a project: its branch and head commit as it starts (the head at
    /// its end is read when it ends).
    pub git: Option<RunGit>,
    /// Every secret value in the run's plan, with where it came from: a run placed on another
    /// host keeps its plan sealed with them ([`sealed`]).
    pub secrets: Vec<SecretLine>,
}

impl RunSpec {
    pub fn plain(request: RunRequest) -> Self {
        Self {
            request,
            ..Self::default()
        }
    }
}

impl From<Prepared> for RunSpec {
    fn from(p: Prepared) -> Self {
        Self {
            request: p.request,
            files: p.files,
            kept_files: p.kept_files,
            notes: p.notes,
            agent: Some(p.run),
            control: p.control,
            redact: p.redact,
            gateway: p.gateway,
            git: None,
            secrets: p.secrets,
        }
    }
}

/// Starts a run through the current Runs actor.
pub async fn start(
    runs: &bosun_kit::handle::ActorHandle<RunsMsg>,
    spec: impl Into<RunSpec>,
) -> Result<RunSnapshot, RunsError> {
    let runs = runs.get().ok_or(bosun_kit::error::Starting)?;
    let spec = Box::new(spec.into());
    ractor::call!(runs, |reply| RunsMsg::Start { spec, reply })
        .map_err(|e| RunsError::internal(format!("bosund could not start the run: {e}")))?
}

/// The Runs actor's messages.
pub enum RunsMsg {
    Start {
        spec: Box<RunSpec>,
        reply: RpcReplyPort<Result<RunSnapshot, RunsError>>,
    },
    /// Stop every run (by the ladder, or at once) and answer when none is left.
    Shutdown {
        immediate: bool,
        reply: RpcReplyPort<()>,
    },
    /// Whether a shutdown is under way.
    ShuttingDown { reply: RpcReplyPort<bool> },
}

pub struct Runs;

pub struct RunsState {
    ctx: Arc<RunsContext>,
    by_actor: HashMap<ActorId, RunId>,
    budgets: HashMap<RunId, RestartBudget>,
    shutting_down: bool,
    shutdown_waiters: Vec<RpcReplyPort<()>>,
    /// The run made for each move of a board card: a second ask for the same move gets that
    /// run, so a card is never started twice for one move (whatever crashed in between).
    by_card: HashMap<(CardId, u64), RunId>,
}

impl Actor for Runs {
    type Msg = RunsMsg;
    type State = RunsState;
    type Arguments = Arc<RunsContext>;

    async fn pre_start(
        &self,
        _myself: ActorRef<RunsMsg>,
        ctx: Arc<RunsContext>,
    ) -> Result<RunsState, ActorProcessingErr> {
        // After a restart of Runs, the RunActors of the previous one are gone (ractor kills the
        // children of a failed supervisor); recovery below brings every unfinished run back.
        ctx.live.clear();
        Ok(RunsState {
            ctx,
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
            shutting_down: false,
            shutdown_waiters: Vec::new(),
            by_card: HashMap::new(),
        })
    }

    /// Startup recovery: every run that is not over gets its RunActor back, which waits for its
    /// runner or finds it gone. Leftover secret files of finished runs are deleted.
    async fn post_start(
        &self,
        myself: ActorRef<RunsMsg>,
        state: &mut RunsState,
    ) -> Result<(), ActorProcessingErr> {
        // One pass over the runs, a record at a time: a store keeps years of them, each with its
        // decisions, and only the few that are not over are kept whole.
        let (store, ctx) = (state.ctx.store.clone(), state.ctx.clone());
        let (moves, not_over) = tokio::task::spawn_blocking(move || {
            let (mut moves, mut not_over) = (Vec::new(), Vec::new());
            store.read()?.each::<RunRecord>(|rec| {
                if let Some(card) = rec.agent.as_ref().and_then(|a| a.card).filter(|c| c.1 > 0) {
                    moves.push((card, rec.id));
                }
                if rec.state.is_final() {
                    ctx.delete_secret_files(&rec);
                } else {
                    not_over.push(rec);
                }
                Ok(())
            })?;
            Ok::<_, StoreError>((moves, not_over))
        })
        .await??;
        state.by_card.extend(moves);
        let mut recovering = 0;
        for rec in not_over {
            if state.ctx.live.get(rec.id).is_some() {
                continue;
            }
            state
                .spawn_run(
                    &myself,
                    rec,
                    Launch::Recover {
                        daemon_restart: true,
                    },
                )
                .await?;
            recovering += 1;
        }
        if recovering > 0 {
            info!(
                runs = recovering,
                "recovering runs that were live when bosund stopped"
            );
        }
        if let Some(remote) = state.ctx.remote.clone() {
            tokio::spawn(cancel_orphan_jobs(remote, state.ctx.store.clone()));
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RunsMsg>,
        msg: RunsMsg,
        state: &mut RunsState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("runs"), async move {
        match msg {
            RunsMsg::Start { spec, reply } => {
                if state.shutting_down {
                    let _ = reply.send(Err(RunsError::ShuttingDown(
                        "bosund is shutting down and starts no new runs; start the run again once it is back".into(),
                    )));
                    return Ok(());
                }
                // A run the person started for a card (move 0) is no move's.
                let card = spec.agent.as_ref().and_then(|a| a.card).filter(|c| c.1 > 0);
                if let Some(made) = card.and_then(|c| state.by_card.get(&c).copied()) {
                    let store = state.ctx.store.clone();
                    let found = tokio::task::spawn_blocking(move || store.run(made)).await?;
                    let _ = reply.send(match found {
                        Ok(Some(rec)) => Ok(RunSnapshot::stored(rec)),
                        Ok(None) | Err(_) => Err(RunsError::internal(format!(
                            "this card's move already has run {made}, which could not be read"
                        ))),
                    });
                    return Ok(());
                }
                match state.prepare(*spec) {
                    Ok((rec, plan, placement, secrets)) => {
                        if let Some(c) = card {
                            state.by_card.insert(c, rec.id);
                        }
                        let launch = Launch::Fresh {
                            plan: Box::new(plan),
                            placement,
                            secrets,
                            reply: Some(reply),
                        };
                        state.spawn_run(&myself, rec, launch).await?;
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            RunsMsg::Shutdown { immediate, reply } => {
                state.shutting_down = true;
                state.shutdown_waiters.push(reply);
                let order = StopOrder {
                    reason: "bosund was shut down".into(),
                    immediate,
                };
                for entry in state.ctx.live.entries() {
                    let _ = entry.actor.cast(RunMsg::Stop {
                        order: order.clone(),
                        reply: None,
                    });
                }
                state.answer_shutdown_if_done();
            }
            RunsMsg::ShuttingDown { reply } => {
                let _ = reply.send(state.shutting_down);
            }
        }
        Ok(())
        })
        .await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RunsMsg>,
        event: SupervisionEvent,
        state: &mut RunsState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(id) = state.by_actor.remove(&cell.get_id()) {
                    state.ctx.live.remove(id);
                    state.budgets.remove(&id);
                }
                state.answer_shutdown_if_done();
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(id) = state.by_actor.remove(&cell.get_id()) else {
                    return Ok(());
                };
                state.ctx.live.remove(id);
                let err = err.to_string();
                error!(run_id = %id, error = %err, "a run actor failed");
                let budget = state
                    .budgets
                    .entry(id)
                    .or_insert_with(|| RestartBudget::new(RestartPolicy::DEFAULT));
                match budget.on_failure(Instant::now()) {
                    Verdict::Restart { n } => {
                        info!(run_id = %id, restart = n, "restarting the run actor from the store");
                        state.restart_run(&myself, id).await?;
                    }
                    Verdict::GiveUp => {
                        let reason = format!(
                            "bosund's actor for this run {}",
                            budget.give_up_reason(&err)
                        );
                        state.budgets.remove(&id);
                        state.give_up(id, reason).await;
                    }
                }
                state.answer_shutdown_if_done();
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

/// After a restart: a job of a run of this store that is over (a crash between its submission
/// and its record, or a run lost while its job still waited) is cancelled, so nothing of it
/// starts later. Jobs of runs this store does not know (another bosund's) are left alone. A
/// backend that cannot be asked (or a cancel that fails) is tried again a few times: it may be
/// starting too, or busy.
async fn cancel_orphan_jobs(remote: Arc<Remote>, store: Store) {
    const TRIES: u32 = 6;
    const APART: Duration = Duration::from_secs(5);
    for attempt in 1..=TRIES {
        match cancel_orphans_once(&remote, &store).await {
            Ok(()) => return,
            Err(e) if attempt < TRIES => {
                warn!(error = %e, attempt, "could not finish looking for orphan jobs; trying again");
                tokio::time::sleep(APART).await;
            }
            Err(e) => {
                warn!(error = %e, "gave up looking for orphan jobs");
            }
        }
    }
}

async fn cancel_orphans_once(remote: &Remote, store: &Store) -> Result<(), PlacementError> {
    let jobs = remote.unfinished_jobs().await?;
    let mut failed = None;
    for (run, placement, job) in jobs {
        let s = store.clone();
        let over = tokio::task::spawn_blocking(move || s.run(run))
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
            .is_some_and(|rec| rec.state.is_final());
        if over {
            info!(run_id = %run, %job, "cancelling the job of a run that is over");
            if let Err(e) = remote.signal(&placement, &job, None).await {
                warn!(run_id = %run, %job, error = %e, "could not cancel the job");
                failed = Some(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl RunsState {
    /// Checks a start request and turns it into a record and a launch plan (with the secret
    /// values in it, and where they come from).
    fn prepare(&self, spec: RunSpec) -> Result<Checked, RunsError> {
        let RunSpec {
            request: mut p,
            files,
            kept_files,
            notes,
            agent,
            control,
            redact,
            gateway,
            git,
            secrets,
        } = spec;
        Self::check_request(&p)?;
        check_free_space(self.ctx.dirs.root())?;
        let id = RunId::new();
        let token = RunToken::generate();
        let ladder = p.ladder.map_or_else(StopLadder::default, |l| StopLadder {
            int_grace_ms: l.int_grace.as_millis(),
            term_grace_ms: l.term_grace.as_millis(),
        });
        // A run placed on another host keeps its folder where the node sees it.
        let placement = p.placement.clone();
        let run_dir = self.run_dir(&p.placement, id)?;
        let fence = Self::fence(agent.as_ref(), &mut p, &run_dir, self.ctx.dirs.root());
        let folders = Self::folders(agent.as_ref(), &p, &run_dir);
        let drop_lines = match agent.as_ref().and_then(|a| a.cli) {
            Some(CliKind::Claude) => vec![bosun_agents::stream::CLAUDE_PIECE.to_string()],
            _ => Vec::new(),
        };
        let plan_files = if agent.is_some() {
            Self::into_run_dir(&mut p, &files, &kept_files, &run_dir)
        } else {
            Vec::new()
        };
        let rec = RunRecord {
            id,
            name: p.name,
            program: p.program.clone(),
            args: p.args.clone(),
            cwd: p.cwd.clone(),
            env_names: p.env.iter().map(|(k, _)| k.clone()).collect(),
            time_cap_ms: p.time_cap.map(TimeCap::as_millis),
            ladder,
            state: RunState::Queued,
            created_at: Timestamp::now(),
            started_at: None,
            ended_at: None,
            runner: None,
            process: None,
            token_digest: token.digest(),
            stop: None,
            exit: None,
            last_seq: 0,
            secret_files: plan_files
                .iter()
                .filter(|f| f.secret)
                .map(|f| f.path.clone())
                .collect(),
            agent,
            git,
            placed: None,
            log_pruned: None,
        };
        let plan = LaunchPlan {
            run_id: id,
            token,
            socket: self.ctx.dirs.socket(),
            run_dir,
            program: p.program,
            args: p.args,
            env: p.env,
            cwd: p.cwd,
            files: plan_files,
            time_cap_ms: p.time_cap.map(TimeCap::as_millis),
            ladder,
            umask: p.umask.unwrap_or(0o022) & 0o777,
            notes,
            max_output: p.max_output.map(NonZeroU64::get),
            // On this machine the runner writes the log file itself.
            log_file: placement.is_local().then(|| self.ctx.store.log_path(id)),
            control,
            redact,
            fence,
            gateway,
            folders,
            drop_lines,
        };
        Ok((rec, plan, placement, secrets))
    }

    /// Refuses a start request whose program, folder, name or environment is not valid, saying
    /// which (its time cap, ladder and output cap were checked where they were read).
    fn check_request(p: &RunRequest) -> Result<(), RunsError> {
        let bad = |m: String| Err(RunsError::invalid(m));
        if p.program.trim().is_empty() {
            return bad("no program given; say what to run after `--`".into());
        }
        if !p.cwd.is_absolute() {
            return bad(format!(
                "the working directory {} is not an absolute path",
                p.cwd.display()
            ));
        }
        if let Some(why) = bosun_shared::paths::not_a_folder(&p.cwd) {
            return bad(format!("the working directory {} {why}", p.cwd.display()));
        }
        if let Some(name) = &p.name
            && (name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control))
        {
            return bad(
                "a run's name must be 1 to 100 characters, without control characters".into(),
            );
        }
        for (k, v) in &p.env {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return bad(format!("`{k}` is not a valid environment variable name"));
            }
        }
        Ok(())
    }

    /// The run's folder: in bosun's state directory for a run on this machine, where the node
    /// sees it for a run placed on another host (refused when this bosund places none).
    fn run_dir(&self, placement: &Placement, id: RunId) -> Result<PathBuf, RunsError> {
        if placement.is_local() {
            return Ok(self.ctx.dirs.run_dir(id));
        }
        let remote = self.ctx.remote.as_ref().ok_or_else(|| {
            RunsError::invalid(format!(
                "this run is placed on {}, but this bosund places runs on this machine only: write $BOSUN_HOME/{} (listen = an address the nodes reach, and a [{}] section) and restart bosund with `bosun daemon stop`; see docs/placement.md",
                placement,
                bosun_placement::CONFIG_FILE,
                match placement {
                    Placement::Local | Placement::Slurm { .. } => "slurm",
                    Placement::Kubernetes { .. } => "kubernetes",
                }
            ))
        })?;
        remote
            .run_dir(placement, id)
            .map_err(|e| RunsError::invalid(e.to_string()))
    }

    /// What the runner fences the program in with, for an agent's run with a limited workspace
    /// (its `TMPDIR` set in the run's environment); none for any other run.
    fn fence(
        agent: Option<&AgentRun>,
        p: &mut RunRequest,
        run_dir: &Path,
        state_dir: &Path,
    ) -> Option<FencePlan> {
        // An agent's run with a limited workspace is fenced in by its runner, with a temporary
        // folder of its own.
        agent.and_then(|a| {
            let space = a.workspace.as_ref().filter(|w| !w.unrestricted)?;
            let cli = a.cli.unwrap_or(CliKind::Command);
            let tmp = run_dir.join(bosun_agents::fence::TMP);
            p.env.retain(|(k, _)| k != "TMPDIR");
            p.env.push(("TMPDIR".into(), tmp.display().to_string()));
            Some(bosun_agents::fence::plan(&bosun_agents::fence::Confine {
                cli,
                folder: &p.cwd,
                workspace: space,
                env: &p.env,
                run_dir,
                state_dir,
                net: a.net.as_deref(),
                person_home: std::env::var_os("HOME").as_deref().map(Path::new),
            }))
        })
    }

    /// The folders of an agent's run's own that its runner makes: the CLI's state (kept), and
    /// the caches and a fenced run's `TMPDIR` (removed at the end).
    fn folders(agent: Option<&AgentRun>, p: &RunRequest, run_dir: &Path) -> Vec<RunFolder> {
        let Some(a) = agent else {
            return Vec::new();
        };
        let cli = a.cli.unwrap_or(CliKind::Command);
        let kept = bosun_agents::homes::state(cli).map(|d| RunFolder {
            path: run_dir.join(d),
            at_end: AtEnd::Keep,
        });
        let tmp = p
            .env
            .iter()
            .find(|(k, _)| k == "TMPDIR")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|t| *t == run_dir.join(bosun_agents::fence::TMP));
        let scratch = bosun_agents::homes::CACHES
            .iter()
            .map(|c| run_dir.join(c))
            .chain(tmp)
            .map(|path| RunFolder {
                path,
                at_end: AtEnd::Remove,
            });
        kept.into_iter().chain(scratch).collect()
    }

    /// An agent's arguments and environment with the run's folder written in, and its files,
    /// named by that folder: the plan's secret files, and the ones kept after the run.
    fn into_run_dir(
        p: &mut RunRequest,
        files: &[(String, String)],
        kept_files: &[(String, String)],
        run_dir: &Path,
    ) -> Vec<PlanFile> {
        // An agent's invocation names its own files by the run's directory, known only now.
        let dir = run_dir.display().to_string();
        let here = |s: &str| s.replace(RUN_DIR, &dir);
        p.args = p.args.iter().map(|a| here(a)).collect();
        p.env = p.env.iter().map(|(k, v)| (k.clone(), here(v))).collect();
        let file = |secret: bool| {
            move |(path, contents): &(String, String)| PlanFile {
                path: PathBuf::from(here(path)),
                contents: contents.clone(),
                secret,
            }
        };
        files
            .iter()
            .map(file(true))
            .chain(kept_files.iter().map(file(false)))
            .collect()
    }

    async fn spawn_run(
        &mut self,
        myself: &ActorRef<RunsMsg>,
        rec: RunRecord,
        launch: Launch,
    ) -> Result<(), ActorProcessingErr> {
        let id = rec.id;
        let stored = if rec.state == RunState::Queued {
            0
        } else {
            let store = self.ctx.store.clone();
            tokio::task::spawn_blocking(move || store.last_log_seq(id)).await??
        };
        let args = RunArgs {
            ctx: self.ctx.clone(),
            record: rec,
            hub: LogHub::new(stored),
            launch,
        };
        let (actor, _) = Actor::spawn_linked(None, RunActor, args, myself.get_cell()).await?;
        self.by_actor.insert(actor.get_id(), id);
        Ok(())
    }

    async fn restart_run(
        &mut self,
        myself: &ActorRef<RunsMsg>,
        id: RunId,
    ) -> Result<(), ActorProcessingErr> {
        let store = self.ctx.store.clone();
        let rec = tokio::task::spawn_blocking(move || store.run(id)).await??;
        match rec {
            Some(rec) if !rec.state.is_final() => {
                self.spawn_run(
                    myself,
                    rec,
                    Launch::Recover {
                        daemon_restart: false,
                    },
                )
                .await
            }
            Some(_) | None => Ok(()),
        }
    }

    /// The run's actor keeps failing: end what the run left and record it lost, with why.
    async fn give_up(&mut self, id: RunId, reason: String) {
        let store = self.ctx.store.clone();
        let rec = match tokio::task::spawn_blocking(move || store.run(id)).await {
            Ok(Ok(Some(rec))) => rec,
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return,
        };
        if rec.state.is_final() {
            return;
        }
        let target = SweepTarget {
            marker: Some(id.to_string()),
            runner: rec.runner,
            group_leader: rec.process.map(|p| p.leader()),
            reap_children: false,
        };
        if let Some(r) = rec.runner {
            let _ = process::signal_process(r.pid, nix::sys::signal::Signal::SIGKILL);
        }
        let _ =
            tokio::task::spawn_blocking(move || process::sweep(&target, Duration::from_secs(5)))
                .await;
        self.ctx.delete_secret_files(&rec);
        let mut rec = rec;
        rec.state = RunState::Exited(Outcome::Lost);
        rec.ended_at = Some(Timestamp::now());
        rec.exit = Some(ExitInfo {
            outcome: Outcome::Lost,
            code: None,
            signal: None,
            reason: reason.clone(),
        });
        error!(run_id = %id, %reason, "gave up on a run");
        // A remote run's sealed plan goes with it.
        let also = match rec.placed {
            Some(_) => vec![Change::delete::<sealed::SealedPlan>(&id)],
            None => Vec::new(),
        };
        if self.ctx.writer.put_run_with(&rec, also).await.is_ok() {
            self.ctx.announce(&rec, rec.last_seq);
        }
    }

    fn answer_shutdown_if_done(&mut self) {
        if self.shutting_down && self.by_actor.is_empty() {
            for w in self.shutdown_waiters.drain(..) {
                let _ = w.send(());
            }
        }
    }
}

/// The default stop ladder, for the command line's help text.
pub fn default_ladder() -> StopLadder {
    StopLadder::default()
}

/// The free space bosun keeps on the state directory's disk for the logs of the runs it has:
/// below it, new runs are refused (runs already going are held, not lost, when the disk fills).
/// `BOSUN_MIN_FREE_MB` in bosund's environment sets it (0 turns the check off).
const MIN_FREE_MB: u64 = 64;

/// Refuses a new run when the state directory's disk is below the floor, with the reason.
fn check_free_space(dir: &std::path::Path) -> Result<(), RunsError> {
    let floor_mb = std::env::var("BOSUN_MIN_FREE_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(MIN_FREE_MB);
    if floor_mb == 0 {
        return Ok(());
    }
    // A disk that cannot be asked is not refused for it: the run's own writes will tell.
    let Ok(st) = nix::sys::statvfs::statvfs(dir) else {
        return Ok(());
    };
    // Refused up front, rather than recorded and failed at once for want of its folder.
    if st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY) {
        return Err(RunsError::unavailable(format!(
            "the state directory {} is on a read-only file system, where bosun cannot keep a new run's folder and log; the run was not started: make it writable and start the run again",
            dir.display()
        )));
    }
    let free = st.blocks_available().saturating_mul(st.fragment_size());
    let mb = |b: u64| b as f64 / 1_000_000.0;
    if free < floor_mb * 1_000_000 {
        return Err(RunsError::unavailable(format!(
            "the state directory's disk has only {:.1} MB free, below the {floor_mb} MB bosun keeps for run logs; free some space on {} and start the run again (BOSUN_MIN_FREE_MB in bosund's environment sets the floor)",
            mb(free),
            dir.display()
        )));
    }
    Ok(())
}
