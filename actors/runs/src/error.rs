//! Why a run could not be started or stopped, in the person's words.

use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
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
