//! Why signing in, refreshing or signing out failed, in the words the person reads.

use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

use super::client_document::ClientDocumentError;
use super::discovery::DiscoveryError;
use super::oauth::OAuthError;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
    /// The server could not be reached, or answered bosun's first request oddly, as a sign-in
    /// began: from `signin::start`. Retrying later may help.
    #[error("could not reach `{name}` at {url}: {error}")]
    Unreachable {
        name: String,
        url: String,
        error: ProbeError,
    },
    /// The server's tokens are no good any more: from the TokenRefresher. Only signing in again
    /// helps.
    #[error("`{name}` needs you to sign in again: {why}; run `bosun mcp sign-in {name}`")]
    NeedsSignIn { name: String, why: String },
    /// Finding out how the server signs in failed: from the discovery. A fetch that failed may
    /// work on a retry; metadata the server got wrong will not.
    #[error("could not sign in to `{name}`: {error}")]
    Discovery { name: String, error: DiscoveryError },
    /// bosun's client metadata document, checked before the browser opens, cannot be used:
    /// from `signin::start`. Retrying helps once the document is fixed (or, for a fetch that
    /// failed, once it can be reached).
    #[error("could not sign in to `{name}`: {error}")]
    ClientDocument {
        name: String,
        error: ClientDocumentError,
    },
    /// The authorization server refused or could not be reached: from the OAuth exchanges. An
    /// unreachable server may answer on a retry; a refusal will not change.
    #[error("could not sign in to `{name}`: {error}")]
    OAuth { name: String, error: OAuthError },
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

bosun_kit::message_constructors!(AuthError);

/// Why a server did not answer bosun's requests without a token (the opening one, then
/// `tools/list`) with a challenge or a welcome: from the probe the caller hands
/// `signin::start`, and carried in [`AuthError::Unreachable`].
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The server could not be reached, or answered neither with a challenge nor as an MCP
    /// server: the MCP client's plain words, redacted. A retry may help once the server (or
    /// the network) changes.
    #[error("{0}")]
    Failed(String),
}
