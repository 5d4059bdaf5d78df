//! The UI protocol: what the `bosun` command line and the web UI say to `bosund`.
//!
//! The client sends [`ClientFrame::Request`]s with ids it chooses; the daemon answers each with a
//! [`ServerFrame::Response`] carrying the same id, and pushes [`ServerFrame::Event`]s for the
//! subscriptions the client opened (a log being followed, run changes).
//!
//! Each method's params are a request type kept with its area ([`super::runs`], [`super::mcp`],
//! [`super::auth`], [`super::agents`], [`super::board`], [`super::lead`], [`super::projects`]) that names its reply
//! ([`super::call`]).

use serde::{Deserialize, Serialize};

pub use bosun_shared::notice::NotificationKind;

use super::agents::{AgentView, BuiltinToolsView};
use super::approvals::ApprovalView;
use super::auth::SignInStarted;
use super::board::{BoardView, CardView, ColumnView, NoteSummary, NoteView};
use super::frame::{BinaryFrame, Decode, FrameError};
use super::lead::{AnswerStarted, ChatView, MessageView, PendingView};
use super::mcp::{CallView, ImportCandidates, Imported, InspectView, ServerView, ToolListing};
use super::projects::ProjectView;
use super::runs::{DaemonStatusView, Following, RunList};
pub use super::runs::{FollowParams, RunView, StartRunParams};
use super::usage::UsageView;
use super::{LogBytes, WireError};
use bosun_shared::run::Stream;
use bosun_shared::{CardId, ChatId, Timestamp};

/// A frame from a UI to the daemon.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    Request { id: u64, body: Request },
}

impl Decode for ClientFrame {}

impl ClientFrame {
    /// Reads a frame's body as a UI's frame. What cannot be read is refused with why, and with
    /// the request's id and method when its JSON has them, so that the answer can go to that
    /// request and name it.
    pub fn decode(body: &[u8]) -> Result<ClientFrame, UnreadFrame> {
        super::frame::decode_body(body).map_err(|e| {
            let detail = match e {
                FrameError::Malformed { detail } => detail,
                other @ (FrameError::Io(_)
                | FrameError::TooLarge { .. }
                | FrameError::Truncated) => other.to_string(),
            };
            UnreadFrame::of(body, detail)
        })
    }
}

/// A UI's frame that is not a request bosund can read: why, and what could be read of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadFrame {
    /// The request's id, when the frame's JSON has one: the answer goes to it.
    pub id: Option<u64>,
    /// The method asked for, when there is one, cut to [`UnreadFrame::METHOD_MAX`] bytes.
    pub method: Option<String>,
    /// Why it could not be read, cut to a few hundred bytes
    /// ([`super::frame::QUOTE_MAX`]).
    pub detail: String,
}

impl UnreadFrame {
    /// The most bytes of a method's name an answer quotes.
    pub const METHOD_MAX: usize = 64;

    /// What can be read of `body`, whose reading as a request failed for `detail`: its id and
    /// method, if it is a JSON object that has them. (The body is read a second time, as plain
    /// JSON: only a frame that was refused pays for it.)
    fn of(body: &[u8], detail: String) -> Self {
        let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let id = json
            .as_ref()
            .and_then(|v| v.get("id"))
            .and_then(serde_json::Value::as_u64);
        let method = json
            .as_ref()
            .and_then(|v| v.get("body"))
            .and_then(|b| b.get("method"))
            .and_then(serde_json::Value::as_str)
            .map(|m| super::frame::shorten(m, Self::METHOD_MAX));
        Self { id, method, detail }
    }
}

impl std::fmt::Display for UnreadFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let detail = &self.detail;
        match (&self.method, self.id) {
            (Some(method), Some(_)) => write!(
                f,
                "request `{method}` could not be read, so it was not done: {detail}"
            ),
            (None, Some(id)) => write!(
                f,
                "request {id} could not be read, so it was not done: {detail}"
            ),
            (_, None) => write!(
                f,
                "a frame was not a valid request and was ignored: {detail}"
            ),
        }
    }
}

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
    /// A binary frame in two parts: its start ([`fast::log_event_head`](super::fast::log_event_head))
    /// and the output chunk whose bytes follow it, sent without being copied together.
    Split {
        head: Vec<u8>,
        chunk: std::sync::Arc<bosun_shared::logfile::LogChunk>,
    },
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

/// Makes [`Request`] from the table of every request ([`crate::every_request`]).
macro_rules! request_enum {
    ($(
        $variant:ident [$($decl:tt)*] [$($bind:tt)*] [$($value:tt)*] $ty:ty => $reply:ty;
    )*) => {
        /// What a UI can ask. Each method's params are its request type, documented where it
        /// is defined with its area and naming its reply ([`super::call::Call`]); a method
        /// without params is a unit variant (no `params` on the wire).
        #[derive(Clone, Debug, Serialize, Deserialize)]
        #[serde(tag = "method", content = "params", rename_all = "snake_case")]
        pub enum Request {
            $( $variant $($decl)*, )*
        }
    };
}

crate::every_request!(request_enum);

/// A successful answer. (Tagged `answer`, since a run or a server may have a field `kind`.)
/// Each reply type of a request is carried by one variant ([`super::call::Reply`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Response {
    Run(Box<RunView>),
    Runs(RunList),
    Following(Following),
    Done,
    Status(Box<DaemonStatusView>),
    Server(Box<ServerView>),
    Servers {
        servers: Vec<ServerView>,
    },
    /// A server's tools, and the server (with its listing recorded).
    Tools(Box<ToolListing>),
    Inspect(Box<InspectView>),
    Call(Box<CallView>),
    ImportCandidates(ImportCandidates),
    Imported(Imported),
    SignInStarted(SignInStarted),
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
    AnswerStarted(AnswerStarted),
    Pending {
        actions: Vec<PendingView>,
    },
    Approvals {
        approvals: Vec<ApprovalView>,
    },
    Approval(Box<ApprovalView>),
    BuiltinTools(Box<BuiltinToolsView>),
    Project(Box<ProjectView>),
    Projects {
        projects: Vec<ProjectView>,
    },
    Usage(Box<UsageView>),
    Audit(Box<super::audit::AuditView>),
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
    /// A direct subscription ([`FollowParams::direct`]): every chunk up to `upto` is in the
    /// run's log file, to be read there.
    LogProgress { sub: u64, upto: u64 },
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
    /// A run's tool call started waiting for the person, or was decided (its `state` says
    /// which).
    ApprovalChanged { approval: Box<ApprovalView> },
    /// A chat got a message (the person's, the lead's, or a note of bosun's).
    ChatMessage { chat: ChatId, message: MessageView },
    /// Storage became faulty (a full disk, a read-only state directory, a failing disk): what
    /// cannot be done and why, in plain words, and since when. Runs' output is held, changes
    /// are refused, until [`Event::StorageRecovered`].
    StorageFault { message: String, since: Timestamp },
    /// The storage fault that began at `since` is over (`fault` says what it was): held output
    /// flows again and changes are saved.
    StorageRecovered {
        fault: String,
        since: Timestamp,
        at: Timestamp,
    },
    /// Something the person is to hear of now (the web UI shows it as a desktop notification):
    /// the lead merged a card's pull request, a card's merge needs the person, or a server
    /// needs the person to sign in again. `text` says it
    /// in plain words; `card` and `chat` say where to look. (That the lead waits for the
    /// person's OK is told by [`Event::PendingChanged`].)
    Notification {
        kind: NotificationKind,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        card: Option<CardId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<ChatId>,
        at: Timestamp,
    },
}
