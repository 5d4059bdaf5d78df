//! What the areas' error enums share: their refusals in the person's words ([`Refused`], of a
//! [`RefusedKind`]) and the constructors of them. Each area (`mcp`, `agents`, `auth`, `board`, `lead`, `runs`) keeps its own enum, in
//! its own words; `bosund` alone turns them into what crosses the socket.

/// A request refused in the person's words, and of which kind: the one variant each area's
/// error enum holds for the refusals it words itself (`Refused(#[from] Refused)`), so the
/// kinds are defined once, here, and bosund maps them to the wire in one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub kind: RefusedKind,
    /// The sentence the person reads: what was wrong, and what to do.
    pub message: String,
}

/// What kind of refusal it is, which says whether retrying can help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedKind {
    /// The request is not acceptable as given (a name, a switch, a value): from the checks made
    /// before anything is written or started. Retrying as is cannot help; the message says what
    /// to change.
    Invalid,
    /// Nothing answers to what the person named. Retrying cannot help.
    NotFound,
    /// The request clashes with what is there (a name in use, a secret missing from the
    /// keychain, a note that moved on): retrying helps once that changes.
    Conflict,
    /// Something the request needs cannot be had now (a CLI not signed in, a server not
    /// answering): retrying later may help.
    Unavailable,
    /// bosund failed on its side (an actor did not answer, a record went away): retrying may
    /// help.
    Internal,
}

/// Adds `invalid`, `not_found`, `conflict`, `unavailable` and `internal` constructors to an area
/// error enum with a `Refused(Refused)` variant, each taking the sentence the person reads (a `String`, or an error whose words it is).
#[macro_export]
macro_rules! message_constructors {
    ($t:ty) => {
        #[allow(dead_code)]
        impl $t {
            fn refused(kind: $crate::error::RefusedKind, m: impl std::fmt::Display) -> Self {
                Self::Refused($crate::error::Refused {
                    kind,
                    message: m.to_string(),
                })
            }
            pub(crate) fn invalid(m: impl std::fmt::Display) -> Self {
                Self::refused($crate::error::RefusedKind::Invalid, m)
            }
            pub(crate) fn not_found(m: impl std::fmt::Display) -> Self {
                Self::refused($crate::error::RefusedKind::NotFound, m)
            }
            pub(crate) fn conflict(m: impl std::fmt::Display) -> Self {
                Self::refused($crate::error::RefusedKind::Conflict, m)
            }
            pub(crate) fn unavailable(m: impl std::fmt::Display) -> Self {
                Self::refused($crate::error::RefusedKind::Unavailable, m)
            }
            pub(crate) fn internal(m: impl std::fmt::Display) -> Self {
                Self::refused($crate::error::RefusedKind::Internal, m)
            }
        }
    };
}

/// The daemon has not started the actor a request needs yet (it is starting, or restarting
/// that part): returned by every area that asks an actor. Retrying in a moment helps.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("bosund is starting; try again in a moment")]
pub struct Starting;
