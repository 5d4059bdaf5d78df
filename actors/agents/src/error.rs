//! Why a change to an agent, a look at it or the start of its run failed, in the person's words.

use bosun_auth::AuthError;
use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
    /// The Agents actor has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// A removal stopped on `0` before anything was removed: from `remove`.
    #[error("{0}; nothing was removed")]
    NothingRemoved(Box<AgentsError>),
    /// A server's sign-in failed while a run was prepared.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// The keychain is absent, locked or failed: retrying helps once it is unlocked.
    #[error(transparent)]
    Keychain(#[from] KeychainError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

bosun_kit::message_constructors!(AgentsError);
