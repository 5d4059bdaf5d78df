//! What the store writer knows of the state directory's disk, for whoever asks: which runs'
//! output is held because it cannot be written, whether changes can be saved, which runs' logs
//! could not be flushed to disk, since when, and why.
//!
//! The writer thread updates it as things fail and succeed again; `bosun ps`, `show` and
//! `daemon status` read it (one lock, no message to anyone), and the Events actor watches it
//! ([`StorageHealth::watch`]) to tell attached UIs when storage becomes faulty and when it
//! recovers. It says what happened in plain words; it never holds any output itself.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use bosun_shared::{RunId, Timestamp};
use nix::errno::Errno;
use tokio::sync::watch;

use super::StoreError;

/// The writer's view of the disk.
#[derive(Debug)]
pub struct StorageHealth {
    inner: Mutex<Inner>,
    /// The fault as it is now; changes only when storage becomes faulty or recovers.
    tx: watch::Sender<Option<Fault>>,
}

impl Default for StorageHealth {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            tx: watch::Sender::new(None),
        }
    }
}

/// Storage is faulty: why, in plain words, and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub message: String,
    pub since: Timestamp,
}

#[derive(Debug, Default)]
struct Inner {
    held: HashMap<RunId, Held>,
    /// Changes cannot be saved (the last commit failed): since when, and why.
    commit: Option<Problem>,
    /// Runs whose log could not be flushed to disk: since when, and why.
    unsynced: HashMap<RunId, Problem>,
    /// The last fault that ended: what it was, and when it ended.
    last: Option<(Fault, Timestamp)>,
    /// When the current fault began.
    since: Option<Timestamp>,
}

#[derive(Clone, Debug)]
struct Held {
    since: Timestamp,
    bytes: u64,
    error: String,
}

#[derive(Clone, Debug)]
struct Problem {
    since: Timestamp,
    error: String,
}

impl StorageHealth {
    /// Hears when storage becomes faulty (`Some`) and when it recovers (`None`).
    pub fn watch(&self) -> watch::Receiver<Option<Fault>> {
        self.tx.subscribe()
    }

    /// `run`'s output (`bytes` of it) cannot be written: `error` says why.
    pub fn hold(&self, run: RunId, bytes: u64, error: &StoreError) {
        self.update(|i| {
            let since = i.held.get(&run).map_or_else(Timestamp::now, |h| h.since);
            i.held.insert(
                run,
                Held {
                    since,
                    bytes,
                    error: plain(error),
                },
            );
        });
    }

    /// `run`'s held output is written.
    pub fn release(&self, run: RunId) {
        self.update(|i| {
            i.held.remove(&run);
        });
    }

    /// A commit failed: `why` says so in plain words. Changes are refused until one succeeds.
    pub(super) fn commit_failed(&self, why: &str) {
        self.update(|i| {
            let since = i.commit.as_ref().map_or_else(Timestamp::now, |p| p.since);
            i.commit = Some(Problem {
                since,
                error: why.to_string(),
            });
        });
    }

    /// A commit succeeded: changes are saved again.
    pub(super) fn commit_ok(&self) {
        if self.lock().commit.is_some() {
            self.update(|i| i.commit = None);
        }
    }

    /// Whether the last commit failed.
    pub(super) fn commit_faulty(&self) -> bool {
        self.lock().commit.is_some()
    }

    /// `run`'s log could not be flushed to disk (`error`); what it wrote since its last flush
    /// is not safe until it is written and flushed again.
    pub fn unsynced(&self, run: RunId, error: &std::io::Error) {
        self.update(|i| {
            let since = i.unsynced.get(&run).map_or_else(Timestamp::now, |p| p.since);
            i.unsynced.insert(
                run,
                Problem {
                    since,
                    error: format!(
                        "the log of run {} could not be flushed to disk ({error}); its output since {} is written again and is not safe until that works: {}",
                        run.short(),
                        since.rfc3339(),
                        flush_fix(error)
                    ),
                },
            );
        });
    }

    /// `run`'s log could not be flushed and what was not flushed could not be read back whole
    /// (`why`): the log lacks it for good. Said until bosund restarts.
    pub fn log_lost(&self, run: RunId, why: String) {
        self.update(|i| {
            let since = i
                .unsynced
                .get(&run)
                .map_or_else(Timestamp::now, |p| p.since);
            let error = format!(
                "{why} (since {}): nothing brings that output back; check the state directory's disk before it loses more",
                since.rfc3339()
            );
            i.unsynced.insert(run, Problem { since, error });
        });
    }

    /// `run`'s log is flushed to disk again, whole.
    pub fn synced(&self, run: RunId) {
        if self.lock().unsynced.contains_key(&run) {
            self.update(|i| {
                i.unsynced.remove(&run);
            });
        }
    }

    /// Why `run`'s log is not safe on disk, while it is not (or lacks output for good): in the
    /// words `daemon status` gives it, for `bosun show`.
    pub fn unflushed(&self, run: RunId) -> Option<String> {
        self.lock().unsynced.get(&run).map(|p| p.error.clone())
    }

    /// Why `run` is paused, when its output is held.
    pub fn paused(&self, run: RunId) -> Option<String> {
        let inner = self.lock();
        let h = inner.held.get(&run)?;
        Some(format!(
            "paused: {}; {} of its output waits to be written (since {})",
            h.error,
            megabytes(h.bytes),
            h.since.rfc3339()
        ))
    }

    /// The fault, while there is one: held output, changes that cannot be saved, logs that
    /// could not be flushed.
    pub fn fault(&self) -> Option<String> {
        self.lock().fault().map(|f| f.message)
    }

    /// The last fault that ended, and when: for `daemon status`.
    pub fn last_fault(&self) -> Option<String> {
        let inner = self.lock();
        let (fault, ended) = inner.last.as_ref()?;
        Some(format!(
            "the last storage fault ended at {} (it began at {}: {})",
            ended.rfc3339(),
            fault.since.rfc3339(),
            fault.message
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the state, and tells the watchers when storage became faulty or recovered.
    fn update(&self, change: impl FnOnce(&mut Inner)) {
        let mut inner = self.lock();
        let before = inner.fault();
        change(&mut inner);
        let after = inner.fault();
        match (before, after) {
            (None, Some(_)) => {
                let since = Timestamp::now();
                inner.since = Some(since);
                if let Some(fault) = inner.fault() {
                    self.tx.send_replace(Some(fault));
                }
            }
            (Some(was), None) => {
                inner.since = None;
                inner.last = Some((was, Timestamp::now()));
                self.tx.send_replace(None);
            }
            (None, None) | (Some(_), Some(_)) => {}
        }
    }
}

impl Inner {
    fn fault(&self) -> Option<Fault> {
        let mut parts = Vec::new();
        let mut first: Option<Timestamp> = None;
        let mut seen = |t: Timestamp| {
            if first.is_none_or(|f| t.as_millis() < f.as_millis()) {
                first = Some(t);
            }
        };
        if let Some(p) = &self.commit {
            seen(p.since);
            parts.push(format!("changes cannot be saved: {}", p.error));
        }
        if let Some(h) = self.held.values().min_by_key(|h| h.since.as_millis()) {
            seen(h.since);
            let bytes: u64 = self.held.values().map(|h| h.bytes).sum();
            parts.push(format!(
                "{}; {} run(s) paused with {} of output waiting to be written, since {}",
                h.error,
                self.held.len(),
                megabytes(bytes),
                h.since.rfc3339()
            ));
        }
        let mut unsynced: Vec<&Problem> = self.unsynced.values().collect();
        unsynced.sort_by_key(|p| p.since.as_millis());
        for p in unsynced {
            seen(p.since);
            parts.push(p.error.clone());
        }
        if parts.is_empty() {
            return None;
        }
        let since = self.since.or(first)?;
        Some(Fault {
            message: parts.join("; and "),
            since,
        })
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// The OS error under a store error, if there is one.
pub(super) fn errno(e: &StoreError) -> Option<Errno> {
    let io = match e {
        StoreError::LogFile(io) => Some(io),
        StoreError::Db(redb::Error::Io(io)) => Some(io),
        StoreError::Db(_)
        | StoreError::AlreadyOpen
        | StoreError::Damaged { .. }
        | StoreError::NoAccess { .. }
        | StoreError::NewerSchema { .. }
        | StoreError::Corrupt(_)
        | StoreError::LogDamaged(_)
        | StoreError::CommitFailed(_)
        | StoreError::Unavailable(_)
        | StoreError::Compact(_)
        | StoreError::Closed => None,
    };
    io.and_then(std::io::Error::raw_os_error)
        .map(Errno::from_raw)
}

/// Why a run's output cannot be written, in a person's words, with what to do.
fn plain(e: &StoreError) -> String {
    match errno(e) {
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

/// What to do when a run's log could not be flushed to disk (`error`): both flushers try again
/// by themselves.
fn flush_fix(error: &std::io::Error) -> &'static str {
    match error.raw_os_error().map(Errno::from_raw) {
        Some(Errno::ENOSPC) => {
            "free some space on the state directory's disk and it is flushed again by itself"
        }
        Some(Errno::EDQUOT) => {
            "raise the disk quota or free some space and it is flushed again by itself"
        }
        Some(Errno::EROFS) => {
            "make the state directory writable again and it is flushed again by itself"
        }
        _ => {
            "check the state directory's disk (the kernel's log says what failed); it is tried again by itself"
        }
    }
}

/// Why a change could not be saved, in a person's words, with what to do. Nothing of the
/// change was made, except after an I/O error, where the disk may or may not have it.
pub(super) fn commit_reason(e: &StoreError, free: Option<u64>) -> String {
    let free = free
        .map(|b| format!(" ({} free)", megabytes(b)))
        .unwrap_or_default();
    match errno(e) {
        Some(Errno::ENOSPC) => format!(
            "the state directory's disk is full{free}; nothing of this change was made: free some space and try again"
        ),
        Some(Errno::EDQUOT) => "the state directory's disk quota is used up; nothing of this change was made: raise the quota or free some space and try again".into(),
        Some(Errno::EROFS) => "the state directory is read-only; nothing of this change was made: make it writable again and try again".into(),
        Some(Errno::EIO) => "the state directory's disk failed to write (an I/O error); this change may or may not have been saved: look before trying again, and check the disk".into(),
        _ => match e {
            StoreError::Unavailable(why) => format!("{why}; nothing of this change was made"),
            StoreError::AlreadyOpen
            | StoreError::Damaged { .. }
            | StoreError::NoAccess { .. }
            | StoreError::NewerSchema { .. }
            | StoreError::Corrupt(_)
            | StoreError::LogDamaged(_)
            | StoreError::Db(_)
            | StoreError::LogFile(_)
            | StoreError::CommitFailed(_)
            | StoreError::Compact(_)
            | StoreError::Closed => format!(
                "bosund could not save this change ({e}); nothing of it was made: try again"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_hears_the_fault_begin_and_end_once_each() {
        let h = StorageHealth::default();
        let mut rx = h.watch();
        assert!(h.fault().is_none());
        h.commit_failed("the state directory's disk is full");
        assert!(rx.has_changed().unwrap_or(false));
        let f = rx.borrow_and_update().clone();
        assert!(f.is_some_and(|f| {
            f.message
                .contains("changes cannot be saved: the state directory's disk is full")
        }));
        // Another failure while faulty: no new event.
        let run = RunId::new();
        h.unsynced(run, &std::io::Error::from_raw_os_error(5));
        assert!(!rx.has_changed().unwrap_or(true));
        let said = h.unflushed(run).unwrap_or_default();
        assert!(
            said.contains("could not be flushed to disk")
                && said.contains("check the state directory's disk"),
            "{said}"
        );
        assert!(
            h.fault().is_some_and(|f| f.contains(&said)),
            "the same words"
        );
        assert_eq!(h.unflushed(RunId::new()), None);
        assert!(
            h.fault()
                .is_some_and(|f| f.contains("could not be flushed to disk"))
        );
        h.commit_ok();
        assert!(!rx.has_changed().unwrap_or(true));
        h.synced(run);
        assert_eq!(h.unflushed(run), None);
        assert!(rx.has_changed().unwrap_or(false));
        assert!(rx.borrow_and_update().is_none());
        assert!(h.fault().is_none());
        assert!(
            h.last_fault()
                .is_some_and(|l| l.contains("the last storage fault ended at"))
        );
    }

    #[test]
    fn a_full_disk_is_said_plainly_with_what_to_do() {
        let e = StoreError::Db(redb::Error::Io(std::io::Error::from_raw_os_error(28)));
        let why = commit_reason(&e, Some(2_000_000));
        assert_eq!(
            why,
            "the state directory's disk is full (2.0 MB free); nothing of this change was made: free some space and try again"
        );
    }
}
