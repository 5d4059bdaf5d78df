//! The runner protocol: the launch plan on the runner's stdin, and the messages between a runner
//! and `bosund` over the socket.
//!
//! The plan travels on stdin, never in argv or the environment, because both are readable by
//! other processes in `/proc`. Output carries a sequence number per chunk; the daemon acks the
//! highest seq it has committed, and after any reconnect the runner resends everything after the
//! last ack, so the log has no gap and no duplicate.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use super::bytes::OutputChunk;
use super::frame::{BinaryFrame, Decode, FrameError};
use bosun_shared::process::{Pgid, Pid};
use bosun_shared::run::ExitInfo;
use bosun_shared::{RunId, RunToken, Timestamp};

/// Everything a runner needs to carry out one run. The runner executes the plan and nothing else.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LaunchPlan {
    pub run_id: RunId,
    pub token: RunToken,
    /// The daemon's socket, to connect back to.
    pub socket: PathBuf,
    /// The run's own directory (0700), for its files and the output spool.
    pub run_dir: PathBuf,
    pub program: String,
    pub args: Vec<String>,
    /// The program's whole environment: nothing else is inherited.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Files to write before the program starts (mode 0600).
    pub files: Vec<PlanFile>,
    /// The run is stopped by its ladder when this much time has passed since the start.
    pub time_cap_ms: Option<u64>,
    pub ladder: StopLadder,
    /// The program's file mode creation mask (bosun's own processes use 0o077).
    pub umask: u32,
    /// bosun's own lines for the run's log (what was left out of the run, and why), sent as
    /// [`Stream::Note`](bosun_shared::run::Stream::Note) output before the program starts.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The most bytes of the program's output the runner keeps; past it, output is read (so
    /// the program never blocks on it) and dropped, with a note in the log.
    #[serde(default)]
    pub max_output: Option<u64>,
    /// Set when the program is a coding CLI that hands its tool calls to bosun: the runner
    /// keeps its stdin as a pipe and speaks its control protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlPlan>,
    /// Secret values the run was given: wherever the program prints one, its output says
    /// `[redacted]` instead (before the output leaves the runner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact: Vec<String>,
    /// The run's log file, when the runner is on bosund's machine: the runner appends the
    /// output records to it itself and tells bosund how far it got ([`RunnerMsg::Logged`]),
    /// so the bytes never cross the socket. `None` (a runner on another host): output goes to
    /// bosund as [`RunnerMsg::Output`] and bosund writes the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
    /// Set for a run of an agent whose workspace is limited: the runner fences the program (and
    /// everything it starts) in with Landlock before it starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<FencePlan>,
    /// The stdio MCP servers the program reaches through the runner's gateway (their secrets
    /// here and in the runner only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateway: Vec<bosun_shared::gateway::GatewayServer>,
    /// Folders of the run's own that the runner makes (0700) before the program starts: a
    /// coding CLI's state (kept after the run, with its transcripts) and the run's scratch
    /// (its `TMPDIR` when fenced, its caches), removed with all they hold when the run ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<RunFolder>,
    /// Lines of the program's stdout that begin with one of these are not kept: pieces of a
    /// message that a later whole line of the CLI's repeats (Claude Code's
    /// `--include-partial-messages`). They are dropped before redaction, so that no secret
    /// value reaches the log cut into pieces that no redaction matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_lines: Vec<String>,
}

impl Decode for LaunchPlan {}

/// A folder of a run's own, and what becomes of it when the run ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFolder {
    pub path: PathBuf,
    pub at_end: AtEnd,
}

/// What the runner does with a [`RunFolder`] when the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtEnd {
    /// Left as it is: what the person may want again (a CLI's session transcripts).
    Keep,
    /// Removed with everything in it: scratch only the run needed.
    Remove,
}

/// Where a fenced program may write: beneath these paths (folders, or single files such as
/// `/dev/null`), and nowhere else. Reading and running programs are left alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencePlan {
    pub writable: Vec<PathBuf>,
    /// Folders among `writable` that the runner makes (0700) when they are missing, before the
    /// fence names them: a Landlock rule names an open folder, so one that a program would
    /// make itself (its cache, its state, the run's `TMPDIR`) must exist first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub make: Vec<PathBuf>,
    /// Paths inside the writable ones that stay read-only for everything the run starts (a
    /// repository's hooks and configuration, the shell's rc files, the CLIs' project
    /// settings). Those that exist at the start are bound read-only in the run's own mount
    /// namespace; those that do not are checked at the run's end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<PathBuf>,
    /// Paths nothing the run starts may read (where the person's secrets live): an empty
    /// folder or file nobody may open is mounted over each that exists at the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<PathBuf>,
    /// Paths beneath hidden ones that stay as they are (the run's own folder in bosun's state
    /// directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<PathBuf>,
    /// The run's network, when it is fenced: a namespace of its own with only loopback, whose
    /// one way out is the runner's proxy. `None`: the network is left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetPlan>,
}

/// What the runner's proxy lets a fenced run reach: each host (with a port, or any port) for a
/// reason; nothing else.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetPlan {
    pub allow: Vec<NetAllow>,
    /// Hosts beyond `allow` that are refused without asking the person: the CLI's own
    /// provider hosts, which it reaches by itself (its checks and telemetry) when the agent
    /// points its model API elsewhere. Any other host is asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quiet: Vec<NetAllow>,
}

/// One host a fenced run may reach, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetAllow {
    /// A DNS name, `*.` and a domain (any name beneath it), an IP address, or `*` (any host).
    pub host: String,
    /// The one port allowed; any port when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The rule, in words: "the model API of Claude Code", "web.fetch".
    pub why: String,
}

/// The `why` of the hosts `web.fetch` lists, and of every host when it says `any`: the runner
/// gives these to bosun's built-in browser too.
pub const WEB_FETCH_WHY: &str = "web.fetch";
pub const WEB_FETCH_ANY_WHY: &str = "web.fetch=any";

impl NetAllow {
    /// The host and port of an `http` or `https` URL, allowed for `why`.
    pub fn from_url(url: &str, why: &str) -> Option<NetAllow> {
        let (host, port) = bosun_shared::hosts::url_host(url)?;
        Some(NetAllow {
            host,
            port: Some(port),
            why: why.to_string(),
        })
    }

    /// Whether the agent's `web.fetch` put it in the list.
    pub fn is_web_fetch(&self) -> bool {
        self.why == WEB_FETCH_WHY || self.why == WEB_FETCH_ANY_WHY
    }
}

/// How the runner drives a CLI through its control protocol, so that each of its tool calls
/// waits for bosun's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlPlan {
    pub protocol: ControlProtocol,
    /// The task, handed to the CLI by the protocol rather than on its command line.
    pub prompt: String,
    /// What the protocol needs besides (Codex's thread settings, Gemini's session settings);
    /// `null` when nothing.
    #[serde(default)]
    pub settings: serde_json::Value,
}

/// The control protocols bosun speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlProtocol {
    /// Claude Code: `--input-format stream-json --permission-prompt-tool stdio`, a PreToolUse
    /// hook registered at initialize so that every call is asked about.
    ClaudeStreamJson,
    /// Codex: `codex app-server` (JSON-RPC over stdio).
    CodexAppServer,
    /// Gemini CLI: the Agent Client Protocol (`--acp`).
    GeminiAcp,
}

/// A CLI asks whether it may use a tool. `key` is the CLI's own id of the request, which stays
/// the same however often the runner sends it (after each reconnect, until it is decided).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolAsk {
    pub key: String,
    /// The tool's name as the CLI gives it (`Bash`, `mcp__github__create_issue`,
    /// `exec_command`, `run_shell_command`).
    pub tool: String,
    /// Its arguments; cut to a summary when very large (`input_cut`).
    pub input: serde_json::Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_cut: bool,
    /// The folder it would act in, when the CLI says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    pub at: Timestamp,
    /// The call held a secret value the run was given (in its name, its input or its folder):
    /// the runner wrote `[redacted]` in its place before the ask left it, as in the run's
    /// output. bosund never sees the value, so it cannot judge the call by it: such a call
    /// never runs without the person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// bosun's answer to a [`ToolAsk`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum ToolAnswer {
    Allow,
    /// The call does not run; `message` is what the model is told.
    Deny {
        message: String,
    },
}

/// A file the runner writes for the program, such as a per-run config.
#[derive(Clone, Serialize, Deserialize)]
pub struct PlanFile {
    pub path: PathBuf,
    pub contents: String,
    /// A secret file is deleted when the run ends, and swept at startup after a crash.
    pub secret: bool,
}

impl std::fmt::Debug for PlanFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanFile")
            .field("path", &self.path)
            .field("contents", &format_args!("<{} bytes>", self.contents.len()))
            .field("secret", &self.secret)
            .finish()
    }
}

/// How long each rung of the stop ladder waits before the next: SIGINT, wait `int_grace_ms`,
/// SIGTERM, wait `term_grace_ms`, SIGKILL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopLadder {
    pub int_grace_ms: u64,
    pub term_grace_ms: u64,
}

impl Default for StopLadder {
    fn default() -> Self {
        Self {
            int_grace_ms: 5_000,
            term_grace_ms: 5_000,
        }
    }
}

/// The most tools one [`RunnerMsg::HeldBack`] tells of: a server lists more only to flood bosun.
pub const MOST_HELD_BACK: usize = 500;
/// The most bytes of tool definitions one [`RunnerMsg::HeldBack`] carries, well inside a frame.
pub const HELD_BACK_BYTES: usize = 1024 * 1024;

/// A runner's message to the daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunnerMsg {
    /// The program started. Sent again after each reconnect until the daemon has recorded it.
    Started(Started),
    /// A chunk of output: whole lines, unless a line was very long or no newline came for a
    /// while.
    Output(OutputChunk),
    /// The program and everything it left behind are gone, and the run's secret files are
    /// deleted. Sent after all output is acked; the runner exits after [`DaemonMsg::ExitAck`].
    Exited(ExitInfo),
    /// The CLI asks about a tool call; the runner keeps it waiting until bosund answers
    /// [`DaemonMsg::Decided`]. Sent again after each reconnect until then.
    Ask(ToolAsk),
    /// The answer to `key` was handed to the CLI. Sent again after each reconnect.
    Delivered { key: String },
    /// The CLI withdrew the ask `key` before it was decided. Sent again after each reconnect.
    Withdrawn { key: String },
    /// Every chunk up to `upto` is in the run's log file, appended there by the runner itself
    /// (a plan with [`LaunchPlan::log_file`]). Sent as the file grows, and again first thing
    /// after each reconnect; sent before [`RunnerMsg::Exited`], once the file is flushed to disk.
    Logged { upto: u64 },
    /// Output waits in the runner because it cannot be written (the run's log file or the
    /// spool: a full disk, say), and so the program waits too; `None` once it flows again.
    /// Sent when that changes, and again after each reconnect while it lasts.
    OutputHeld { held: Option<HeldOutput> },
    /// The runner's own log file could not be flushed to disk (`failed`), or (`None`) is on
    /// disk again, whole. Sent when that changes, and again after each reconnect while it lasts.
    LogFlush { failed: Option<FlushFailure> },
    /// A runner on another host has no plan yet: the first thing it says on its link, answered
    /// by [`DaemonMsg::Plan`] (or a stop, when bosund no longer holds the plan).
    WantPlan,
    /// The gateway needs a server's access token anew (the server refused the one it has):
    /// answered by [`DaemonMsg::Token`]. Sent again after each reconnect until then.
    Token(TokenAsk),
    /// A server asks what only the person can answer (its gateway policy is `ask`): waits in
    /// the inbox, answered by [`DaemonMsg::ServerAnswer`]. Sent again after each reconnect
    /// until then.
    ServerAsk(ServerAsk),
    /// The gateway held tools of `server` back from the run: new, or changed since the person
    /// last approved the server's tools. `tools` are their definitions as the server listed
    /// them to the run (the run's secret values written `[redacted]`), so that the server's
    /// pending list shows them at once. Not answered; sent again after each reconnect (bosund
    /// takes a tool it already knows as it is). At most [`MOST_HELD_BACK`] tools and
    /// [`HELD_BACK_BYTES`] of definitions go in one message, whatever the server lists;
    /// `left_out` counts the tools held back but not told (absent when none were).
    HeldBack {
        server: String,
        tools: Vec<serde_json::Value>,
        #[serde(default, skip_serializing_if = "bosun_shared::usage::is_zero")]
        left_out: u64,
    },
    /// A decision bosund told `unsaved` and has not said is saved ([`DaemonMsg::Saved`]): the
    /// ask it answered, the answer and who made it, for bosund to save as it was told (it went
    /// away before the commit was on disk, and the call went on meanwhile). Sent again first
    /// thing after each reconnect until saved; only to a bosund that takes it back
    /// ([`super::Welcome::keeps_unsaved`]).
    Unsaved {
        ask: ToolAsk,
        answer: ToolAnswer,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        by: String,
        /// When the runner was told it: the decision's time (absent from an older runner,
        /// whose decision is dated when saved).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<bosun_shared::Timestamp>,
    },
}

/// A server's request for the person, by the gateway of a run. `key` stays the same however
/// often the runner sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerAsk {
    pub key: String,
    /// The server's name in bosun's list.
    pub server: String,
    pub what: ServerAskKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServerAskKind {
    /// `elicitation/create`: a form for the person to fill in.
    Elicitation {
        form: bosun_shared::elicitation::Form,
    },
    /// `sampling/createMessage`: a message of the model, which the run's CLI writes once the
    /// person allows it. `preview` is what the server sends the model, in words.
    Sampling { preview: String, max_tokens: u64 },
}

/// bosund's answer to a [`ServerAsk`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ServerAnswer {
    /// It waits in the inbox (`note` says so, for the run's log) for at most `wait_ms`; the
    /// person's answer follows.
    Waiting { note: String, wait_ms: u64 },
    /// The person filled in the form (`content`, checked against it) or, for sampling, allowed
    /// it (`content` absent).
    Accept {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// The person said no (`message` says so).
    Decline { message: String },
    /// Nobody answered in time, or the run ended (`message` says which).
    Cancel { message: String },
}

/// The gateway asks bosund for the current access token of a server bosun signs in to, because
/// the server refused the one the run has (HTTP 401), or asked for a wider scope (403
/// `insufficient_scope`). `key` stays the same however often the runner sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenAsk {
    pub key: String,
    /// The server's name in bosun's list.
    pub server: String,
    /// The fingerprint ([`bosun_shared::gateway::fingerprint`]) of the token the server refused: that
    /// one is refreshed, not handed out again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The server asked for a wider scope (403 `insufficient_scope`; `scope` what it named):
    /// only a new sign-in by the person can give it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wider: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// bosund's answer to a [`TokenAsk`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum TokenAnswer {
    /// The server's current access token (secret: it crosses only the runner's link).
    Token { token: String },
    /// No token can be had without the person: the ask waits in the inbox (`note` says so,
    /// for the run's log) for at most `wait_ms`; a [`TokenAnswer::Token`] or
    /// [`TokenAnswer::Failed`] follows.
    Waiting { note: String, wait_ms: u64 },
    /// No token: `message` says why (for the model and the run's log).
    Failed { message: String },
}

impl std::fmt::Debug for TokenAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenAnswer::Token { .. } => f.write_str("Token { token: <secret> }"),
            TokenAnswer::Waiting { note, wait_ms } => f
                .debug_struct("Waiting")
                .field("note", note)
                .field("wait_ms", wait_ms)
                .finish(),
            TokenAnswer::Failed { message } => {
                f.debug_struct("Failed").field("message", message).finish()
            }
        }
    }
}

/// Output comes as a binary frame ([`super::fast::output_frame`]) or, from a runner of before
/// binary frames, as JSON.
impl Decode for RunnerMsg {
    fn from_binary(frame: BinaryFrame) -> Result<Self, FrameError> {
        match frame {
            BinaryFrame::Output(chunk) => Ok(RunnerMsg::Output(chunk)),
            other @ BinaryFrame::Log { .. } => Err(other.unexpected()),
        }
    }
}

/// Why the runner's own log file is not known to be on disk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushFailure {
    /// The flush's OS error (`EIO`, …), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    /// The error as the runner got it.
    pub error: String,
    /// What was written since the last good flush no longer reads back whole: the log lacks it
    /// for good (else it is written again and flushed again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
}

/// Why output waits in the runner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOutput {
    /// The OS error (`ENOSPC`, …), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    /// The error as the runner got it.
    pub error: String,
    /// Bytes of output waiting in the runner's memory when it was held.
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub pid: Pid,
    pub pgid: Pgid,
    /// The program's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), so a
    /// sweep after a crash never kills a process that merely reuses the pid.
    pub start_time: u64,
    pub at: Timestamp,
    /// The fence the program was started under, in words (what Landlock applied, and what the
    /// kernel lacked when it was partial); absent when the plan asked for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<String>,
}

/// The daemon's message to a runner.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DaemonMsg {
    /// Every chunk up to and including `seq` is committed; the runner may forget them.
    Ack { seq: u64 },
    /// The start is recorded; the runner stops resending it.
    StartedAck,
    /// Stop the program by the ladder.
    Stop(StopOrder),
    /// The exit is recorded; the runner may exit.
    ExitAck,
    /// The decision on a [`RunnerMsg::Ask`], committed before it is sent. Sent again when the
    /// runner asks again: always the same decision. `by` says who made it, in the words the
    /// run's record keeps (the policy's rule with its step, the person, the deadline, …; empty
    /// from a bosund of before it): the gateway's record of the call says it.
    ///
    /// `unsaved`: a decision of the policy alone, told to a runner that keeps such decisions
    /// while its commit is under way; [`DaemonMsg::Saved`] follows once it is on disk. Until
    /// then the runner keeps it, and tells it back ([`RunnerMsg::Unsaved`]) to a bosund that
    /// went away meanwhile, which saves it as it was told, never deciding the call again.
    Decided {
        key: String,
        answer: ToolAnswer,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        by: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unsaved: bool,
    },
    /// The decision on the ask `key`, told `unsaved`, is on disk now.
    Saved { key: String },
    /// An ask waits for the person: `note` says so (and how to decide), for the run's log.
    /// Said again, with an empty note, when the runner asks again while it waits.
    Waiting { key: String, note: String },
    /// The launch plan, for a runner on another host that asked for it: the plan and its secrets
    /// travel only over the link, after the runner proved itself.
    Plan(Box<LaunchPlan>),
    /// The answer to a [`RunnerMsg::Token`] (a `Waiting` one is followed by another).
    Token { key: String, answer: TokenAnswer },
    /// The answer to a [`RunnerMsg::ServerAsk`] (a `Waiting` one is followed by another).
    ServerAnswer { key: String, answer: ServerAnswer },
}

impl Decode for DaemonMsg {}

/// Why a run is being stopped, and how hard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopOrder {
    /// Recorded as the run's end reason, e.g. "stopped by the person".
    pub reason: String,
    /// Skip the ladder and SIGKILL the group at once (a second shutdown signal).
    pub immediate: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answer_never_shows_its_token() {
        let answer = TokenAnswer::Token {
            token: "tok-never-shown-5f1a".into(),
        };
        let msg = DaemonMsg::Token {
            key: "k".into(),
            answer,
        };
        assert!(!format!("{msg:?}").contains("tok-never-shown-5f1a"));
    }

    #[test]
    fn a_decision_says_who_made_it_and_one_of_an_older_bosund_reads_without() {
        let old: DaemonMsg =
            serde_json::from_str(r#"{"type":"decided","key":"k","answer":{"behavior":"allow"}}"#)
                .unwrap();
        assert!(matches!(old, DaemonMsg::Decided { ref by, .. } if by.is_empty()));
        let now = DaemonMsg::Decided {
            key: "k".into(),
            answer: ToolAnswer::Allow,
            by: "the person".into(),
            unsaved: false,
        };
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            r#"{"type":"decided","key":"k","answer":{"behavior":"allow"},"by":"the person"}"#
        );
        let held = RunnerMsg::HeldBack {
            server: "drift".into(),
            tools: vec![serde_json::json!({"name": "tool-01"})],
            left_out: 0,
        };
        assert_eq!(
            serde_json::to_string(&held).unwrap(),
            r#"{"type":"held_back","server":"drift","tools":[{"name":"tool-01"}]}"#
        );
    }

    #[test]
    fn a_token_ask_of_a_runner_that_says_little_reads_back() {
        let ask: RunnerMsg =
            serde_json::from_str(r#"{"type":"token","key":"k1","server":"remote"}"#).unwrap();
        let RunnerMsg::Token(ask) = ask else {
            panic!("a token ask")
        };
        assert_eq!(ask.server, "remote");
        assert!(!ask.wider && ask.refused.is_none() && ask.scope.is_none());
        let answer: DaemonMsg = serde_json::from_str(
            r#"{"type":"token","key":"k1","answer":{"answer":"waiting","note":"n","wait_ms":5}}"#,
        )
        .unwrap();
        assert!(matches!(
            answer,
            DaemonMsg::Token {
                answer: TokenAnswer::Waiting { wait_ms: 5, .. },
                ..
            }
        ));
    }
}
