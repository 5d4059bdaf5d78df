//! What the person is to hear of now (the web UI shows it as a desktop notification, so does
//! bosund's notifier): the lead merged a card's pull request, a card's merge needs the person,
//! or a server needs the person to sign in again. The areas that see it happen make a
//! [`Notice`]; bosund tells it to every UI.

use serde::{Deserialize, Serialize};

use crate::{CardId, ChatId, Timestamp};

/// Something the person is to hear of now: `text` says it in plain words; `card` and `chat` say
/// where to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub kind: NotificationKind,
    pub text: String,
    pub card: Option<CardId>,
    pub chat: Option<ChatId>,
    pub at: Timestamp,
}

/// What a notice is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// The lead merged a card's pull request.
    Merged,
    /// A card QA passed cannot be merged by the lead (failed checks, conflicts, a blocked
    /// merge): the person sees to it.
    NeedsYou,
    /// An MCP server's sign-in can no longer be used (its refresh was refused, its client
    /// forgotten): the person signs in again.
    SignIn,
}
