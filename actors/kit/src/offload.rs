//! Blocking work (redb reads, the keychain) run off the async workers.

/// A blocking task panicked or was cancelled: a bug or a shutdown on bosund's side, so retrying
/// may help. Returned by [`blocking`]; every area's error takes it in.
#[derive(Debug, thiserror::Error)]
#[error("a blocking task failed: {0}")]
pub struct BlockingError(String);

/// Runs `f` on a blocking thread.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BlockingError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BlockingError(e.to_string()))
}
