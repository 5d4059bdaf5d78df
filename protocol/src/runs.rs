//! The UI protocol's requests about runs and the daemon itself: start, list, show and stop runs,
//! follow their logs, subscribe to their changes, the daemon's status and its stop; the run's
//! own view, [`RunView`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::agents::AgentRunView;
use super::runner::StopLadder;
use bosun_shared::RunId;
use bosun_shared::Timestamp;
use bosun_shared::placement::{PlacedView, Placement};
use bosun_shared::process::{Pgid, Pid};
use bosun_shared::projects::RunGit;
use bosun_shared::run::{ExitInfo, Outcome, RunState, Stream};

/// The runs that are not over; with `all`, the finished ones too; in the order they were made.
///
/// With `page`, the answer is one page of them, at most about [`RUNS_PAGE_BYTES`] of JSON, and
/// [`RunList::next`] says where the next page starts. Without it (clients from before pages),
/// all of them come in one answer, which a long history can make larger than a frame may be.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListRuns {
    pub all: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<RunsPage>,
}

impl ListRuns {
    /// The first page of the runs (finished ones too with `all`).
    pub fn first_page(all: bool) -> Self {
        Self {
            all,
            page: Some(RunsPage { after: None }),
        }
    }
}

/// About the most JSON one page of [`ListRuns`] holds: a quarter of a frame. A page holds at
/// least one run, however large.
pub const RUNS_PAGE_BYTES: usize = 1024 * 1024;

/// Which page of [`ListRuns`]: the first (no `after`), or the one after a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunsPage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<RunsCursor>,
}

/// Where a page of runs ended: its last run, by what runs are ordered by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunsCursor {
    pub created_at: Timestamp,
    pub run: RunId,
}

/// The answer to [`ListRuns`]: the runs, and, when they are a page and more follow, where the
/// next page starts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunList {
    pub runs: Vec<RunView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<RunsCursor>,
}

/// One run, by full id or unique prefix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetRun {
    pub run: String,
}

/// Stop a run by its ladder.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StopRun {
    pub run: String,
}

/// Stop a log subscription opened by a [`FollowParams`] request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unfollow {
    pub sub: u64,
}

/// Receive `Event::RunChanged` for every run, and the chats' and pending actions' events,
/// from now on.
#[derive(Clone, Copy, Debug, Default)]
pub struct SubscribeRuns;

/// The daemon's [`DaemonStatusView`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonStatus;

/// Change bosund's own settings, each written `KEY=VALUE` (today `notify=on|off`); answers
/// the daemon's [`DaemonStatusView`] as it is after them. Settings are kept in the store and
/// hold across restarts; a bad one is refused with the keys there are, and none is changed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonSet {
    pub settings: Vec<String>,
}

/// How bosund tells the person, on the desktop, of what starts waiting for them and of runs
/// that failed (`bosun daemon set notify=on|off`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotifyView {
    pub on: bool,
    /// Notifications shown since bosund started.
    pub shown: u64,
    /// Why the last notification could not be shown (no session bus, no notification
    /// service answered); absent once one is shown again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Stop every run by its ladder and exit. A second `DaemonStop` (or a second signal) makes the
/// stop immediate.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonStop;

/// A log subscription opened; its events carry `sub`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Following {
    pub sub: u64,
    pub run: Box<RunView>,
    /// For a direct subscription: the run's log file, which the subscriber reads itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonStatusView {
    pub pid: u32,
    pub version: String,
    pub protocol_version: u32,
    pub state_dir: PathBuf,
    pub started_at: Timestamp,
    pub live_runs: usize,
    /// Live runs whose runner is connected now (after a restart, the ones reattached so far).
    pub attached_runners: usize,
    pub shutting_down: bool,
    /// Set while output cannot be written to the state directory: why, and how many runs wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_fault: Option<String>,
    /// The last storage fault that ended since bosund started: what it was, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_last_fault: Option<String>,
    /// Where runners on other hosts dial bosund (mutual TLS), when remote placement is
    /// configured; bosund listens on no network address otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_listener: Option<String>,
    /// What this bosund did when it upgraded the store at its start, in words (the schema, the
    /// backup, what each agent's permission mode was carried over as); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<String>,
    /// Desktop notifications: whether they are on, and how they fare (absent from a bosund
    /// older than them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyView>,
    /// How long decided approvals and finished runs' decision details are kept, in ms (absent
    /// from a bosund older than retention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
    /// The last round of pruning since bosund started (absent before the first, and from a
    /// bosund older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prune: Option<PruneView>,
    /// The most the finished runs' logs may take together (`logs.max`), in bytes; absent when
    /// there is no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs_max: Option<u64>,
    /// The store file's size now, in bytes (absent from a bosund older than compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_bytes: Option<u64>,
    /// The last compaction of the store since bosund started (absent before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_compact: Option<CompactView>,
}

/// Compact bosund's store now: the file gives back the space pruning freed. Answers the
/// daemon's [`DaemonStatusView`] with the compaction as its `last_compact`. Runs' changes wait
/// while it works.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonCompact;

/// One compaction of the store: when it ended, how long it took, the file's size before and
/// after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactView {
    pub ended_at: Timestamp,
    pub took_ms: u64,
    pub before: u64,
    pub after: u64,
}

/// One round of pruning what was older than the retention: when it ended, how long it took,
/// and what went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneView {
    pub ended_at: Timestamp,
    pub took_ms: u64,
    /// Decided approvals deleted.
    pub approvals: u64,
    /// Finished runs whose decisions' details were dropped (their summaries kept).
    pub runs: u64,
    /// Finished runs whose logs and MCP call records were deleted (their summaries kept).
    #[serde(default)]
    pub logs: u64,
    /// What those runs' folders gave back, in bytes.
    #[serde(default)]
    pub log_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StartRunParams {
    pub name: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    /// Absolute; the command line sends its own working directory when none is given.
    pub cwd: PathBuf,
    /// The program's whole environment.
    pub env: Vec<(String, String)>,
    pub time_cap_ms: Option<u64>,
    pub ladder: Option<StopLadder>,
    /// The file mode creation mask the program starts with (the caller's own); 0o022 when
    /// absent.
    pub umask: Option<u32>,
    /// The most bytes of output (stdout and stderr together) kept for the run; past it, output
    /// is read and dropped, and the log says so. No cap when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Where the run's runner runs; on this machine when absent.
    #[serde(default, skip_serializing_if = "Placement::is_local")]
    pub placement: Placement,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FollowParams {
    pub run: String,
    /// The first seq to send; 0 or 1 sends from the start.
    pub from_seq: u64,
    /// Keep streaming new output until the run ends; otherwise end at what is committed now.
    pub follow: bool,
    /// Only this stream; both when absent.
    pub stream: Option<Stream>,
    /// The subscriber reads the run's log file itself (it is on bosund's machine): bosund
    /// answers with the file ([`Following::log_file`]) and sends how far it goes
    /// ([`Event::LogProgress`]) instead of the chunks. Its bytes then cross no socket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
}

/// A run as the UI shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub id: RunId,
    pub short_id: String,
    pub name: Option<String>,
    /// `queued`, `starting`, `running`, `stopping` or `exited`.
    pub state: String,
    /// How it ended, once it has.
    pub outcome: Option<Outcome>,
    pub exit: Option<ExitInfo>,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub created_at: Timestamp,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    pub pid: Option<Pid>,
    pub pgid: Option<Pgid>,
    pub time_cap_ms: Option<u64>,
    /// The seq of the last committed output chunk (0 when none).
    pub last_seq: u64,
    /// Set while a stop is under way: why.
    pub stop_reason: Option<String>,
    /// For a run of an agent: the agent, and what the CLI's own stream said.
    #[serde(default)]
    pub agent: Option<AgentRunView>,
    /// Set while the run's output cannot be written (a full disk, a read-only state directory):
    /// why, and since when. The run is held, not lost; it goes on by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
    /// Set while the run's log is not safe on disk (it could not be flushed), or lacks output
    /// for good: what, since when, and what to do, in the words of `bosun daemon status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_unflushed: Option<String>,
    /// For a run of a card of a project: its branch and head commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<RunGit>,
    /// For a run placed on another host: where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placed: Option<PlacedView>,
    /// The MCP calls the run made through bosun's gateway (in `bosun show`, not in lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_calls: Option<McpCallsView>,
    /// Set once the run's log and MCP call records were pruned; the rest of this view, its
    /// summary, stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_pruned: Option<LogPrunedView>,
}

/// A finished run's log and MCP call records pruned by bosund.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogPrunedView {
    pub at: Timestamp,
    /// `retention` (the run ended longer ago than bosund's retention) or `size` (the finished
    /// runs' logs took more than `logs.max`, and this run's were among the oldest).
    pub why: String,
    /// What the run's folder gave back.
    pub bytes: u64,
}

impl LogPrunedView {
    /// In words, for `bosun logs`, `bosun show` and the web UI's run page.
    pub fn words(&self, short_id: &str) -> String {
        let why = match self.why.as_str() {
            "size" => {
                "the finished runs' logs took more than bosund's logs.max, and this run's were among the oldest"
            }
            _ => "the run ended longer ago than bosund's retention",
        };
        format!(
            "the log and MCP call records of run {short_id} were pruned at {} ({why}); its summary is kept: `bosun show {short_id}`",
            self.at.rfc3339()
        )
    }
}

/// A run's MCP calls: how many, and the last of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCallsView {
    pub total: u64,
    /// The last [`McpCallsView::SHOWN`] calls, oldest first.
    pub calls: Vec<bosun_shared::gateway::CallEntry>,
}

impl McpCallsView {
    /// How many calls a view holds at most.
    pub const SHOWN: usize = 200;
}

impl RunView {
    /// The run's state as the domain type.
    pub fn run_state(&self) -> RunState {
        match (self.state.as_str(), self.outcome) {
            ("queued", _) => RunState::Queued,
            ("starting", _) => RunState::Starting,
            ("running", _) => RunState::Running,
            ("stopping", _) => RunState::Stopping,
            (_, Some(o)) => RunState::Exited(o),
            (_, None) => RunState::Exited(Outcome::Lost),
        }
    }
}
