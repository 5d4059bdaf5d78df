//! Why a change to the board or the notes failed, in the person's words.

use bosun_agents::AgentsError;
use bosun_kit::offload::BlockingError;
use bosun_kit::prefix::PrefixError;
use bosun_runs::RunsError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    /// The request is not acceptable as given (a name, a title, a note's path, a limit): from
    /// the checks made before anything is written. Retrying as is cannot help.
    #[error("{0}")]
    Invalid(String),
    /// No column, card or note answers to what the person named: retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The request clashes with what is there (a name in use, a note that moved on since its
    /// base version): retrying helps once that changes (with `force`, for a note).
    #[error("{0}")]
    Conflict(String),
    /// Something the board needs cannot be had now: retrying later may help.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (the Board did not answer, a card went away): retrying may
    /// help.
    #[error("{0}")]
    Internal(String),
    /// The Board has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// A card's start named no one card.
    #[error(transparent)]
    Prefix(#[from] PrefixError),
    /// The card's agent could not be found or its run prepared.
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// The card's run could not start.
    #[error(transparent)]
    Runs(#[from] RunsError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

bosun_kit::message_constructors!(BoardError);
