//! What the store writer knows of the state directory's disk, for whoever asks: which runs'
//! output is held because it cannot be written, since when, and why.
//!
//! The writer thread updates it as output is held and written again; `bosun ps`, `show` and
//! `daemon status` read it (one lock, no message to anyone). It says what happened in plain
//! words; it never holds any output itself.

use std::collections::HashMap;
use std::sync::Mutex;

use bosun_shared::{RunId, Timestamp};

use super::StoreError;

/// The writer's view of the disk.
#[derive(Debug, Default)]
pub struct StorageHealth {
    held: Mutex<HashMap<RunId, Held>>,
}

#[derive(Clone, Debug)]
struct Held {
    since: Timestamp,
    bytes: u64,
    error: String,
}

impl StorageHealth {
    /// `run`'s output (`bytes` of it) cannot be written: `error` says why.
    pub(super) fn hold(&self, run: RunId, bytes: u64, error: &StoreError) {
        if let Ok(mut held) = self.held.lock() {
            let since = held.get(&run).map_or_else(Timestamp::now, |h| h.since);
            held.insert(
                run,
                Held {
                    since,
                    bytes,
                    error: plain(error),
                },
            );
        }
    }

    /// `run`'s held output is written.
    pub(super) fn release(&self, run: RunId) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(&run);
        }
    }

    /// Why `run` is paused, when its output is held.
    pub fn paused(&self, run: RunId) -> Option<String> {
        let held = self.held.lock().ok()?;
        let h = held.get(&run)?;
        Some(format!(
            "paused: {}; {} of its output waits to be written (since {})",
            h.error,
            megabytes(h.bytes),
            h.since.rfc3339()
        ))
    }

    /// The fault, while any run's output is held.
    pub fn fault(&self) -> Option<String> {
        let held = self.held.lock().ok()?;
        let first = held.values().min_by_key(|h| h.since.as_millis())?;
        let bytes: u64 = held.values().map(|h| h.bytes).sum();
        Some(format!(
            "{}; {} run(s) paused with {} of output waiting to be written, since {}",
            first.error,
            held.len(),
            megabytes(bytes),
            first.since.rfc3339()
        ))
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// The error in a person's words, with what to do.
fn plain(e: &StoreError) -> String {
    use nix::errno::Errno;
    let errno = match e {
        StoreError::LogFile(io) => io.raw_os_error().map(Errno::from_raw),
        StoreError::AlreadyOpen
        | StoreError::NewerSchema { .. }
        | StoreError::Corrupt(_)
        | StoreError::LogDamaged(_)
        | StoreError::Db(_)
        | StoreError::CommitFailed(_)
        | StoreError::Closed => None,
    };
    match errno {
        Some(Errno::ENOSPC) => {
            "the state directory's disk is full; free some space and it goes on by itself".into()
        }
        Some(Errno::EDQUOT) => {
            "the state directory's disk quota is used up; raise it or free some space and it goes on by itself".into()
        }
        Some(Errno::EROFS) => {
            "the state directory is read-only; make it writable again and it goes on by itself".into()
        }
        _ => format!("the run's log cannot be written ({e}); it is tried again every 250 ms"),
    }
}
