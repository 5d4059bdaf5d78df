//! Blocking work (redb reads, the keychain) run off the async workers, and the daemon's own
//! failures in the words a person is told over the socket.

use bosun_shared::protocol::{ErrorCode, WireError};

use crate::keychain::KeychainError;
use crate::store::StoreError;

/// Runs `f` on a blocking thread; a panicked task becomes an internal error.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, WireError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| WireError::internal(format!("a blocking task failed: {e}")))
}

/// The store failed: nothing the person did, so `internal`.
pub fn store_error(e: StoreError) -> WireError {
    WireError::internal(format!("bosund could not use its store: {e}"))
}

/// The keychain failed (locked, absent): `unavailable`, with what to do in the message.
pub fn keychain_error(e: KeychainError) -> WireError {
    WireError::new(ErrorCode::Unavailable, e.to_string())
}
