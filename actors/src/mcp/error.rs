//! Why a change to the MCP servers, a look at one or an import failed, in the person's words.

use crate::auth::AuthError;
use crate::keychain::KeychainError;
use crate::offload::BlockingError;
use crate::store::StoreError;

use super::client::McpError;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The request is not acceptable as given (a name, a flag, a value, a file to import from):
    /// from the checks made before anything is written. Retrying as is cannot help; the message
    /// says what to change.
    #[error("{0}")]
    Invalid(String),
    /// No server (or import candidate, or kept listing) answers to what the person named: from
    /// the lookups. Retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The request clashes with what is there (a name in use, a value missing from the
    /// keychain, a server Claude Code signs in to): retrying helps once that changes.
    #[error("{0}")]
    Conflict(String),
    /// Something the server needs cannot be had now (its browser cannot start): retrying later
    /// may help.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (the registry did not answer, a server answered without its
    /// details): retrying may help.
    #[error("{0}")]
    Internal(String),
    /// The registry has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] crate::error::Starting),
    /// Reaching or using the server failed: from List tools, inspect and call. Whether a retry
    /// helps depends on `error` (a server that needs a sign-in needs the person first).
    #[error("could not {what} `{server}`: {error}{advice}")]
    Look {
        server: String,
        what: String,
        error: Box<McpError>,
        advice: String,
    },
    /// A removal stopped on `0` before anything was removed: from `remove`.
    #[error("{0}; nothing was removed")]
    NothingRemoved(Box<RegistryError>),
    /// An import stopped on `0` after the servers before it were added back out: from
    /// `adopt::import`.
    #[error("{0}; nothing was imported")]
    NothingImported(Box<RegistryError>),
    /// A sign-in (or its refresh, or signing out) failed.
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

crate::error::message_constructors!(RegistryError);
