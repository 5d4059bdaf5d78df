//! Why a change to an agent, a look at it or the start of its run failed, in the person's words.

use bosun_auth::AuthError;
use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// The request is not acceptable as given (a name, a switch, a value, a prompt): from the
    /// checks made before anything is written or started. Retrying as is cannot help; the
    /// message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// No agent (or server, or tool a switch names) answers to what the person named: from the
    /// lookups. Retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The request clashes with what is there (a name in use, a secret missing from the
    /// keychain): retrying helps once that changes.
    #[error("{0}")]
    Conflict(String),
    /// Something the run needs cannot be had now (the CLI is not signed in, the browser cannot
    /// start, Claude Code did not list its tools): retrying later may help.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (the Agents actor did not answer): retrying may help.
    #[error("{0}")]
    Internal(String),
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
