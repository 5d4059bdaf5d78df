//! Why a run could not be started or stopped, in the person's words.

use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// The run's spec is not acceptable (no program, a relative folder, a bad time cap): from
    /// `Runs::prepare`. Retrying as is cannot help; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// No such run: retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The run is not in a state for it (it has ended, a card's move already has its run):
    /// retrying cannot help.
    #[error("{0}")]
    Conflict(String),
    /// Something the run needs cannot be had now: retrying later may help.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (Runs did not answer, the stop could not be recorded):
    /// retrying may help.
    #[error("{0}")]
    Internal(String),
    /// Runs has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// The daemon is shutting down and starts no run: from `Runs`. Retrying helps only with the
    /// next bosund.
    #[error("{0}")]
    ShuttingDown(String),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

bosun_kit::message_constructors!(RunsError);
