//! Chats with the lead (`chats[chat id]`), their messages (`messages["<chat id>/<n>"]`), and
//! pending actions (`pending[action id]`), as stored; and [`ChatChange`], the chats' one batch
//! write. Also where bosun's own MCP server listens (`meta["mcp_server"]`).

use bosun_shared::{ActionId, AgentId, AnswerId, CardId, ChatId, RunId, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_store::writer::Change;
use bosun_store::{META, Record, Store, StoreError};

/// Where bosun's own MCP server listened last; stored under the key `mcp_server`. A bosund that
/// starts again listens on the same port if it is free, so the runs that outlived the last one
/// (a QA run, an answer of the lead) still reach it at the address their config holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerMeta {
    pub port: u16,
}

impl Record for McpServerMeta {
    const TABLE: &'static str = META;
    const WHAT: &'static str = "MCP server's address";
    type Key = str;

    fn key(&self) -> String {
        Self::KEY.to_string()
    }
}

impl McpServerMeta {
    pub const KEY: &'static str = "mcp_server";
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatRecord {
    pub id: ChatId,
    /// The lead agent.
    pub agent: AgentId,
    pub created_at: Timestamp,
    /// Claude Code's session, continued by each answer.
    pub session: Option<String>,
    /// The answer's run that wrote the session last: the next answer's run gets its transcript
    /// from that run's folder. None for a chat from before each run kept its CLI's state in
    /// its own folder (the session is then looked for in the lead's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_run: Option<RunId>,
    /// How many messages it has.
    pub messages: u64,
    /// The answer being written, if any.
    pub answering: Option<AnswerRecord>,
    /// What the person decided since the lead last answered: the next answer starts with it.
    pub untold: Vec<String>,
    /// Files the person added to the chat (absolute paths).
    pub files: Vec<String>,
    /// The order of the next pending action.
    pub next_action: u64,
    /// The chat of the board checks: each check with findings is an answer of the lead here,
    /// and what needs the person is told here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub board_checks: bool,
}

impl Record for ChatRecord {
    const TABLE: &'static str = "chats";
    const WHAT: &'static str = "chat";
    type Key = ChatId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    pub id: AnswerId,
    pub run: Option<RunId>,
    /// SHA-256 of the bearer token bosun's MCP server knows the answer by.
    pub token_digest: String,
    pub started_at: Timestamp,
    /// A board check's answer: the cards it offered the lead to merge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offered: Vec<CardId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    Person,
    Lead,
    Note,
}

impl MessageKind {
    pub fn word(self) -> &'static str {
        match self {
            MessageKind::Person => "person",
            MessageKind::Lead => "lead",
            MessageKind::Note => "note",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRecord {
    pub chat: ChatId,
    pub n: u64,
    pub at: Timestamp,
    pub kind: MessageKind,
    pub text: String,
    pub failed: bool,
}

/// A message's key is `"<chat id>/<n>"`, with `n` in 12 digits (at least) so that a chat's
/// messages are in order.
impl Record for MessageRecord {
    const TABLE: &'static str = "messages";
    const WHAT: &'static str = "message";
    type Key = str;

    fn key(&self) -> String {
        Self::key_of(self.chat, self.n)
    }
}

impl MessageRecord {
    pub fn key_of(chat: ChatId, n: u64) -> String {
        format!("{chat}/{n:012}")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    pub id: ActionId,
    pub chat: ChatId,
    pub answer: AnswerId,
    pub tool: String,
    pub args: Value,
    /// The outside tool the answer had used.
    pub cause: String,
    pub at: Timestamp,
    /// Its place in the chat's order (the order tried).
    pub order: u64,
    pub state: PendingState,
}

impl Record for PendingRecord {
    const TABLE: &'static str = "pending";
    const WHAT: &'static str = "pending action";
    type Key = ActionId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PendingState {
    Waiting,
    /// The person approved; committed before the call runs. Found at startup, the call may or
    /// may not have happened.
    Approving {
        at: Timestamp,
    },
    Approved {
        at: Timestamp,
        result: String,
    },
    Failed {
        at: Timestamp,
        why: String,
    },
    Discarded {
        at: Timestamp,
    },
    /// A newer write or append of the same note took its place.
    Replaced {
        by: ActionId,
    },
    /// The lead made the same call itself and it ran.
    Gone {
        why: String,
    },
}

impl PendingState {
    pub fn word(&self) -> &'static str {
        match self {
            PendingState::Waiting => "waiting",
            PendingState::Approving { .. } => "approving",
            PendingState::Approved { .. } => "approved",
            PendingState::Failed { .. } => "failed",
            PendingState::Discarded { .. } => "discarded",
            PendingState::Replaced { .. } => "replaced",
            PendingState::Gone { .. } => "gone",
        }
    }
}

/// One change to the tables of the chats, their messages and the pending actions; the changes
/// of one step are committed together.
#[derive(Clone, Debug)]
pub enum ChatChange {
    Chat(Box<ChatRecord>),
    Message(Box<MessageRecord>),
    Pending(Box<PendingRecord>),
}

impl From<&ChatChange> for Change {
    fn from(change: &ChatChange) -> Self {
        match change {
            ChatChange::Chat(c) => Change::put(c.as_ref()),
            ChatChange::Message(m) => Change::put(m.as_ref()),
            ChatChange::Pending(p) => Change::put(p.as_ref()),
        }
    }
}

/// The chats' reads of the store.
pub trait ChatReads {
    /// Every chat and every pending action (decided or not), as of one moment.
    fn chats(&self) -> Result<(Vec<ChatRecord>, Vec<PendingRecord>), StoreError>;

    /// A chat's messages, in order.
    fn messages(&self, chat: ChatId) -> Result<Vec<MessageRecord>, StoreError>;
}

impl ChatReads for Store {
    fn chats(&self) -> Result<(Vec<ChatRecord>, Vec<PendingRecord>), StoreError> {
        let read = self.read()?;
        Ok((read.all::<ChatRecord>()?, read.all::<PendingRecord>()?))
    }

    fn messages(&self, chat: ChatId) -> Result<Vec<MessageRecord>, StoreError> {
        let (from, to) = (
            MessageRecord::key_of(chat, 0),
            MessageRecord::key_of(chat, u64::MAX / 2),
        );
        self.read()?.range::<MessageRecord>(&from, &to)
    }
}
