//! The UI protocol's part for chats with the lead and the pending actions that wait for the
//! person's OK.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_shared::{ActionId, AnswerId, ChatId, RunId, Timestamp};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatView {
    pub id: ChatId,
    pub short_id: String,
    /// The lead agent's name.
    pub agent: String,
    pub created_at: Timestamp,
    /// The answer being written now, and its run.
    pub answering: Option<RunId>,
    /// Pending actions waiting for the person.
    pub waiting: u32,
    /// Only in `chat_show`.
    pub messages: Vec<MessageView>,
    /// The chat of the board checks (bosun starts the lead here for cards it may merge).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub board_checks: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageView {
    pub n: u64,
    pub at: Timestamp,
    /// `person`, `lead` or `note` (bosun's own).
    pub kind: String,
    pub text: String,
    /// A note of a failure (shown in red).
    pub failed: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingView {
    pub id: ActionId,
    pub short_id: String,
    pub chat: ChatId,
    pub answer: AnswerId,
    pub tool: String,
    pub args: Value,
    /// The outside tool the answer had used.
    pub cause: String,
    pub at: Timestamp,
    /// `waiting`, `approving`, `approved`, `failed`, `discarded`, `replaced`, `gone`.
    pub state: String,
    /// What it does, in one plain line.
    pub line: String,
    /// Worked out when shown, from the board and the notes as they are now.
    pub preview: String,
    /// Why approving would fail as things are now, when bosun can tell.
    pub would_fail: Option<String>,
    /// The result of an approval, or why it failed.
    pub result: Option<String>,
}

/// A new chat with the lead (the agent with role `lead`, or the one named).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChatNew {
    #[serde(default)]
    pub agent: Option<String>,
}

/// Sends a message; the answer is a run, streamed like any run's log.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChatSend {
    pub chat: String,
    pub message: String,
    /// Files the person adds (absolute paths): the lead may attach them to cards.
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChatShow {
    pub chat: String,
}

/// Every chat, without its messages.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChatList;

/// The pending actions waiting for the person (of one chat, or all).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Inbox {
    #[serde(default)]
    pub chat: Option<String>,
}

/// Runs exactly that call, once, as the lead.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Approve {
    pub action: String,
}

/// Runs every waiting action of the chat, one after the other, in the order tried.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApproveAll {
    pub chat: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Discard {
    pub action: String,
}

/// A message was sent; the lead's answer is this run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnswerStarted {
    pub chat: Box<ChatView>,
    pub run: Box<super::runs::RunView>,
}
