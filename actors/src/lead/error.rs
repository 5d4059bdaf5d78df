//! Why a chat, an answer or a decision on a pending action failed, in the person's words.

use crate::agents::AgentsError;
use crate::offload::BlockingError;
use crate::prefix::PrefixError;
use crate::runs::RunsError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ChatsError {
    /// The request is not acceptable as given (an empty message, a file that is not absolute,
    /// an agent that is not a lead): retrying as is cannot help.
    #[error("{0}")]
    Invalid(String),
    /// No chat or pending action answers to what the person named: retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The chat or the action is not in a state for it (an answer is under way, the action was
    /// decided): retrying helps once that changes.
    #[error("{0}")]
    Conflict(String),
    /// Something the chat needs cannot be had now (its chat is restarting, bosun's MCP server is
    /// starting): retrying in a moment helps.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (a chat went away, the chats did not answer): retrying may
    /// help.
    #[error("{0}")]
    Internal(String),
    /// The Chats actor has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] crate::error::Starting),
    /// What the person typed named no one chat or action.
    #[error(transparent)]
    Prefix(#[from] PrefixError),
    /// The lead agent could not be found or its answer's run prepared.
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// The answer's run could not start.
    #[error(transparent)]
    Runs(#[from] RunsError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

crate::error::message_constructors!(ChatsError);
