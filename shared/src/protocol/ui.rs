//! The UI protocol: what the `bosun` command line and the web UI say to `bosund`.
//!
//! The client sends [`ClientFrame::Request`]s with ids it chooses; the daemon answers each with a
//! [`ServerFrame::Response`] carrying the same id, and pushes [`ServerFrame::Event`]s for the
//! subscriptions the client opened (a log being followed, run changes).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::agents::{AgentParams, AgentRunView, AgentView, BuiltinToolsView, EditAgentParams};
use super::board::{
    AddCardParams, AddColumnParams, BoardView, CardView, ColumnView, EditCardParams, NoteSummary,
    NoteView, SetColumnParams,
};
use super::frame::{BinaryFrame, Decode, FrameError};
use super::lead::{ChatView, MessageView, PendingView};
use super::mcp::{
    AddServerParams, CallView, EditServerParams, ImportCandidateView, ImportParams, ImportScan,
    InspectView, ServerView, ToolListing,
};
use super::runner::StopLadder;
use super::{LogBytes, WireError};
use crate::process::{Pgid, Pid};
use crate::run::{ExitInfo, Outcome, RunState, Stream};
use crate::{ChatId, RunId, Timestamp};

/// A frame from a UI to the daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    Request { id: u64, body: Request },
}

impl Decode for ClientFrame {}

/// A frame from the daemon to a UI.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    Response {
        id: u64,
        result: ResponseResult,
    },
    Event(Event),
    /// The client sent something the daemon could not read; the connection stays open unless
    /// the code says the frame was too large.
    Error(WireError),
}

/// A log event comes as a binary frame ([`super::fast::log_event_frame`]) or, from a daemon of
/// before binary frames, as JSON; everything else as JSON.
impl Decode for ServerFrame {
    fn from_binary(frame: BinaryFrame) -> Result<Self, FrameError> {
        match frame {
            BinaryFrame::Log { sub, chunk } => Ok(ServerFrame::Event(Event::Log {
                sub,
                seq: chunk.seq,
                stream: chunk.stream,
                at: chunk.at,
                data: chunk.data,
            })),
            other @ BinaryFrame::Output(_) => Err(other.unexpected()),
        }
    }
}

/// A frame on its way to a UI: typed, or already encoded by [`super::fast`] (log chunks, in their
/// binary form).
#[derive(Debug)]
pub enum Outbound {
    Frame(ServerFrame),
    Encoded(Vec<u8>),
}

impl From<ServerFrame> for Outbound {
    fn from(f: ServerFrame) -> Self {
        Outbound::Frame(f)
    }
}

/// The answer to one request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseResult {
    Ok(Response),
    Err(WireError),
}

/// What a UI can ask.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "method", content = "params", rename_all = "snake_case")]
pub enum Request {
    /// Start a supervised run of a program.
    StartRun(StartRunParams),
    /// The runs that are not over; with `all`, the finished ones too.
    ListRuns {
        all: bool,
    },
    /// One run, by full id or unique prefix.
    GetRun {
        run: String,
    },
    /// Stop a run by its ladder.
    StopRun {
        run: String,
    },
    /// Replay a run's log from a seq, and with `follow` keep streaming until the run ends.
    FollowLog(FollowParams),
    /// Stop a log subscription opened by [`Request::FollowLog`].
    Unfollow {
        sub: u64,
    },
    /// Receive [`Event::RunChanged`] for every run, and the chats' and pending actions' events,
    /// from now on.
    SubscribeRuns,
    DaemonStatus,
    /// Stop every run by its ladder and exit. A second `DaemonStop` (or a second signal) makes
    /// the stop immediate.
    DaemonStop,
    McpAdd(AddServerParams),
    McpEdit(EditServerParams),
    McpRename {
        server: String,
        new_name: String,
    },
    McpRemove {
        server: String,
    },
    McpList,
    McpShow {
        server: String,
    },
    /// Start (or call) the server and list its tools; the listing is kept. With `cached`, the
    /// last listing kept, without starting anything.
    McpTools {
        server: String,
        cached: bool,
    },
    McpInspect {
        server: String,
    },
    McpCall {
        server: String,
        tool: String,
        args: serde_json::Value,
    },
    McpImportScan(ImportScan),
    McpImport(ImportParams),
    /// Starts a sign-in: the answer is the page for the person to open.
    McpSignIn {
        server: String,
    },
    /// Waits for a started sign-in to end (10 minutes at most).
    McpSignInFinish {
        attempt: u64,
    },
    /// Revokes (where the server offers that) and forgets a server's sign-in.
    McpSignOut {
        server: String,
    },
    AgentAdd(AgentParams),
    AgentEdit(EditAgentParams),
    /// Switches as `key=value` (`mcp.<server>`, `mcp.<server>.<tool>`, `web.search`,
    /// `web.fetch`, `browser`, `browser.insecure-certs`, `skills`).
    AgentSet {
        agent: String,
        settings: Vec<String>,
    },
    AgentShow {
        agent: String,
    },
    AgentList,
    AgentRemove {
        agent: String,
    },
    /// Starts a run of the agent with this prompt.
    AgentRun {
        agent: String,
        prompt: String,
    },
    /// The CLI's own tools; with `ask`, asks the installed Claude Code for its list.
    AgentTools {
        agent: String,
        ask: bool,
    },
    /// The board: its columns, its cards, the limit on card runs.
    Board,
    ColumnAdd(AddColumnParams),
    ColumnSet(SetColumnParams),
    CardAdd(AddCardParams),
    CardEdit(EditCardParams),
    CardShow {
        card: String,
    },
    /// The most card runs going at once (1–64).
    BoardLimit {
        limit: u32,
    },
    NoteList,
    NoteShow {
        path: String,
    },
    /// Writes a note. `base_version`: the version the text was based on; the write fails when
    /// the note has moved on since (absent: the note must not exist yet, or is overwritten
    /// when `force`).
    NoteWrite {
        path: String,
        text: String,
        #[serde(default)]
        base_version: Option<u64>,
        #[serde(default)]
        force: bool,
    },
    /// A new chat with the lead (the agent with role `lead`, or the one named).
    ChatNew {
        #[serde(default)]
        agent: Option<String>,
    },
    /// Sends a message; the answer is a run, streamed like any run's log.
    ChatSend {
        chat: String,
        message: String,
        /// Files the person adds (absolute paths): the lead may attach them to cards.
        #[serde(default)]
        files: Vec<PathBuf>,
    },
    ChatShow {
        chat: String,
    },
    ChatList,
    /// The pending actions waiting for the person (of one chat, or all).
    Inbox {
        #[serde(default)]
        chat: Option<String>,
    },
    /// Runs exactly that call, once, as the lead.
    Approve {
        action: String,
    },
    /// Runs every waiting action of the chat, one after the other, in the order tried.
    ApproveAll {
        chat: String,
    },
    Discard {
        action: String,
    },
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
}

/// A successful answer. (Tagged `answer`, since a run or a server may have a field `kind`.)
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Response {
    Run(Box<RunView>),
    Runs {
        runs: Vec<RunView>,
    },
    /// A log subscription opened; its events carry `sub`.
    Following {
        sub: u64,
        run: Box<RunView>,
    },
    Done,
    Status(DaemonStatus),
    Server(Box<ServerView>),
    Servers {
        servers: Vec<ServerView>,
    },
    /// A server's tools, and the server (with its listing recorded).
    Tools(Box<ToolListing>),
    Inspect(Box<InspectView>),
    Call(Box<CallView>),
    /// What an import would find; `problems` are files that could not be read, in words.
    ImportCandidates {
        candidates: Vec<ImportCandidateView>,
        problems: Vec<String>,
    },
    Imported {
        servers: Vec<ServerView>,
    },
    /// A started sign-in: open `url` in the person's browser, then ask `mcp_sign_in_finish`.
    SignInStarted {
        attempt: u64,
        url: String,
        wait_secs: u64,
    },
    Agent(Box<AgentView>),
    Agents {
        agents: Vec<AgentView>,
    },
    Board(Box<BoardView>),
    Column(ColumnView),
    Card(Box<CardView>),
    Notes {
        notes: Vec<NoteSummary>,
    },
    Note(NoteView),
    Chat(Box<ChatView>),
    Chats {
        chats: Vec<ChatView>,
    },
    /// A message was sent; the lead's answer is this run.
    AnswerStarted {
        chat: Box<ChatView>,
        run: Box<RunView>,
    },
    Pending {
        actions: Vec<PendingView>,
    },
    BuiltinTools(Box<BuiltinToolsView>),
}

/// Something the daemon pushes on a subscription.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A chunk of a followed log.
    Log {
        sub: u64,
        seq: u64,
        stream: Stream,
        at: Timestamp,
        data: LogBytes,
    },
    /// The subscriber fell behind the live stream; it goes on from the store at `resume_from`,
    /// and nothing is skipped.
    LogLagged { sub: u64, resume_from: u64 },
    /// The subscription is over: everything up to `last_seq` was sent. `run` is the run as it
    /// is now (over, when following ended because the run ended).
    LogEnd {
        sub: u64,
        last_seq: u64,
        run: Box<RunView>,
    },
    /// The subscription broke off after `last_seq` because the log could not be read on (a
    /// damaged or deleted log file); `message` says why in plain words.
    LogFailed {
        sub: u64,
        last_seq: u64,
        message: String,
    },
    /// A run changed state.
    RunChanged { run: Box<RunView> },
    /// A pending action was kept, or decided (its `state` says which).
    PendingChanged { action: Box<PendingView> },
    /// A chat got a message (the person's, the lead's, or a note of bosun's).
    ChatMessage { chat: ChatId, message: MessageView },
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonStatus {
    pub pid: u32,
    pub version: String,
    pub protocol_version: u32,
    pub state_dir: PathBuf,
    pub started_at: Timestamp,
    pub live_runs: usize,
    /// Live runs whose runner is connected now (after a restart, the ones reattached so far).
    pub attached_runners: usize,
    pub shutting_down: bool,
}
