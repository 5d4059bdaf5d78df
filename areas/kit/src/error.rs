//! What the areas' error enums share: the plain-words constructors of their message-carrying
//! variants. Each area (`mcp`, `agents`, `auth`, `board`, `lead`, `runs`) keeps its own enum, in
//! its own words; `bosund` alone turns them into what crosses the socket.

/// Adds `invalid`, `not_found`, `conflict`, `unavailable` and `internal` constructors to an area
/// error enum with the variants of those names (`Invalid`, `NotFound`, …), each holding the
/// sentence the person reads.
#[macro_export]
macro_rules! message_constructors {
    ($t:ty) => {
        #[allow(dead_code)]
        impl $t {
            pub(crate) fn invalid(m: impl Into<String>) -> Self {
                Self::Invalid(m.into())
            }
            pub(crate) fn not_found(m: impl Into<String>) -> Self {
                Self::NotFound(m.into())
            }
            pub(crate) fn conflict(m: impl Into<String>) -> Self {
                Self::Conflict(m.into())
            }
            pub(crate) fn unavailable(m: impl Into<String>) -> Self {
                Self::Unavailable(m.into())
            }
            pub(crate) fn internal(m: impl Into<String>) -> Self {
                Self::Internal(m.into())
            }
        }
    };
}

/// The daemon has not started the actor a request needs yet (it is starting, or restarting
/// that part): returned by every area that asks an actor. Retrying in a moment helps.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("bosund is starting; try again in a moment")]
pub struct Starting;
