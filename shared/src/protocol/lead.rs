//! The UI protocol's part for chats with the lead and the pending actions that wait for the
//! person's OK.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ActionId, AnswerId, ChatId, RunId, Timestamp};

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
