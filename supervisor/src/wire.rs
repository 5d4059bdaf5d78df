//! The one place errors meet the wire: each area's error becomes a [`WireError`] (its code
//! chosen here, its message the error's own words). `actors` never sees the wire.

use bosun_agents::AgentsError;
use bosun_auth::AuthError;
use bosun_auth::client_document::ClientDocumentError;
use bosun_auth::discovery::DiscoveryError;
use bosun_auth::oauth::OAuthError;
use bosun_board::BoardError;
use bosun_kit::error::{Refused, RefusedKind, Starting};
use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_kit::prefix::PrefixError;
use bosun_lead::ChatsError;
use bosun_mcp::McpError;
use bosun_mcp::RegistryError;
use bosun_protocol::frame::shorten;
use bosun_protocol::{ErrorCode, WireError};
use bosun_runs::RunsError;
use bosun_store::StoreError;

/// The code a program reacts to, for each way a request can fail.
pub trait Code {
    fn code(&self) -> ErrorCode;
}

/// A failed request on its way to the wire: any area's error (or a [`WireError`] made here)
/// becomes one with `?`, its code chosen by [`Code`] and its message the error's own words.
#[derive(Debug)]
pub struct Failure(pub WireError);

/// The most bytes of an error's words that cross the wire. Words are for a person, and a
/// refusal may quote what the request gave (a run's id prefix, a name): a request of megabytes
/// must not be echoed back whole. Real messages, a server's stderr tail included, fit well
/// within this; a longer one keeps its start and its end.
const ERROR_WORDS_MAX: usize = 8 * 1024;

impl<E: Code + std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        let words = shorten(&e.to_string(), ERROR_WORDS_MAX);
        Failure(WireError::new(e.code(), words))
    }
}

impl Code for WireError {
    fn code(&self) -> ErrorCode {
        self.code
    }
}

impl Code for Starting {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unavailable
    }
}

impl Code for crate::settings::SettingError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadRequest
    }
}

/// A time cap the request gave that no run could have (zero, or over a week).
impl Code for bosun_shared::time::TimeCapError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadRequest
    }
}

/// A stop ladder's grace the request gave that is too long (over an hour).
impl Code for bosun_shared::time::StopGraceError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadRequest
    }
}

/// A gateway rule's value out of its range.
impl Code for bosun_shared::gateway::RuleError {
    fn code(&self) -> ErrorCode {
        ErrorCode::BadRequest
    }
}

impl Code for StoreError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Internal
    }
}

impl Code for BlockingError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Internal
    }
}

/// A keychain that is absent, locked or failing is something the person can fix.
impl Code for KeychainError {
    fn code(&self) -> ErrorCode {
        ErrorCode::Unavailable
    }
}

impl Code for PrefixError {
    fn code(&self) -> ErrorCode {
        match self {
            PrefixError::NoMatch(_) => ErrorCode::NotFound,
            PrefixError::Ambiguous { .. } => ErrorCode::Ambiguous,
        }
    }
}

impl Code for McpError {
    fn code(&self) -> ErrorCode {
        // An answer too large is the same answer next time: the person asks for less.
        if matches!(self, McpError::TooLarge { .. }) {
            return ErrorCode::BadRequest;
        }
        match self.sign_in_asked() {
            Some(_) => ErrorCode::Unauthorized,
            None => ErrorCode::Unavailable,
        }
    }
}

/// A fetch that failed may work later; metadata the server got wrong is a conflict the person
/// takes up with the server.
impl Code for DiscoveryError {
    fn code(&self) -> ErrorCode {
        match self {
            DiscoveryError::Fetch { .. } => ErrorCode::Unavailable,
            DiscoveryError::Malformed { .. }
            | DiscoveryError::ForeignResource { .. }
            | DiscoveryError::NoAuthorizationServer
            | DiscoveryError::NoPkce { .. }
            | DiscoveryError::BadUrl(_)
            | DiscoveryError::UnsafeEndpoint { .. } => ErrorCode::Conflict,
        }
    }
}

impl Code for OAuthError {
    fn code(&self) -> ErrorCode {
        match self {
            OAuthError::Unreachable { .. } => ErrorCode::Unavailable,
            OAuthError::Refused { .. } | OAuthError::Malformed(_) | OAuthError::BadUrl(_) => {
                ErrorCode::Conflict
            }
        }
    }
}

impl Code for ClientDocumentError {
    fn code(&self) -> ErrorCode {
        match self {
            ClientDocumentError::Unreachable { .. } => ErrorCode::Unavailable,
            ClientDocumentError::Status { .. }
            | ClientDocumentError::TooLarge { .. }
            | ClientDocumentError::NotJson { .. }
            | ClientDocumentError::OtherClientId { .. }
            | ClientDocumentError::NoLoopbackRedirect { .. } => ErrorCode::Conflict,
        }
    }
}

impl Code for Refused {
    fn code(&self) -> ErrorCode {
        match self.kind {
            RefusedKind::Invalid => ErrorCode::BadRequest,
            RefusedKind::NotFound => ErrorCode::NotFound,
            RefusedKind::Conflict => ErrorCode::Conflict,
            RefusedKind::Unavailable => ErrorCode::Unavailable,
            RefusedKind::Internal => ErrorCode::Internal,
        }
    }
}

impl Code for AuthError {
    fn code(&self) -> ErrorCode {
        match self {
            AuthError::Refused(r) => r.code(),
            AuthError::Unreachable { .. } => ErrorCode::Unavailable,
            AuthError::NeedsSignIn { .. } => ErrorCode::Unauthorized,
            AuthError::Discovery { error, .. } => error.code(),
            AuthError::OAuth { error, .. } => error.code(),
            AuthError::ClientDocument { error, .. } => error.code(),
            AuthError::Store(e) => e.code(),
            AuthError::Keychain(e) => e.code(),
            AuthError::Blocking(e) => e.code(),
        }
    }
}

impl Code for RegistryError {
    fn code(&self) -> ErrorCode {
        match self {
            RegistryError::Refused(r) => r.code(),
            RegistryError::Browser(_) => ErrorCode::BadRequest,
            RegistryError::BrowserCannotStart(_) => ErrorCode::Unavailable,
            RegistryError::Starting(e) => e.code(),
            RegistryError::Look { error, .. } => error.as_ref().code(),
            RegistryError::NothingRemoved(e) | RegistryError::NothingImported(e) => e.code(),
            RegistryError::Auth(e) => e.code(),
            RegistryError::Store(e) => e.code(),
            RegistryError::Keychain(e) => e.code(),
            RegistryError::Blocking(e) => e.code(),
        }
    }
}

impl Code for AgentsError {
    fn code(&self) -> ErrorCode {
        match self {
            AgentsError::Refused(r) => r.code(),
            AgentsError::Starting(e) => e.code(),
            AgentsError::NothingRemoved(e) => e.code(),
            AgentsError::Auth(e) => e.code(),
            AgentsError::Store(e) => e.code(),
            AgentsError::Keychain(e) => e.code(),
            AgentsError::Blocking(e) => e.code(),
        }
    }
}

impl Code for RunsError {
    fn code(&self) -> ErrorCode {
        match self {
            RunsError::Refused(r) => r.code(),
            RunsError::Starting(e) => e.code(),
            RunsError::ShuttingDown(_) => ErrorCode::ShuttingDown,
            RunsError::Store(e) => e.code(),
            RunsError::Blocking(e) => e.code(),
        }
    }
}

impl Code for BoardError {
    fn code(&self) -> ErrorCode {
        match self {
            BoardError::Refused(r) => r.code(),
            BoardError::Starting(e) => e.code(),
            BoardError::Prefix(e) => e.code(),
            BoardError::Agents(e) => e.code(),
            BoardError::Runs(e) => e.code(),
            BoardError::Store(e) => e.code(),
            BoardError::Blocking(e) => e.code(),
        }
    }
}

impl Code for ChatsError {
    fn code(&self) -> ErrorCode {
        match self {
            ChatsError::Refused(r) => r.code(),
            ChatsError::Starting(e) => e.code(),
            ChatsError::Prefix(e) => e.code(),
            ChatsError::Agents(e) => e.code(),
            ChatsError::Runs(e) => e.code(),
            ChatsError::Store(e) => e.code(),
            ChatsError::Blocking(e) => e.code(),
        }
    }
}
