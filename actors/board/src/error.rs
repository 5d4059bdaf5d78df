//! Why a change to the board or the notes failed, in the person's words.

use bosun_agents::AgentsError;
use bosun_kit::offload::BlockingError;
use bosun_kit::prefix::PrefixError;
use bosun_runs::RunsError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
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
