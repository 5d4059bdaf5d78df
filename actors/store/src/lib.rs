//! The store: the redb file `bosun.redb`, opened by `bosund` alone, and each run's output in an
//! append-only file of its own (`runs/<run-id>/log`, see [`logfile`]).
//!
//! The store knows no domain. It owns the file, its schema version (`meta["schema_version"]`),
//! the generic reads ([`Store::get`], [`Store::all`], one moment through [`Store::read`]) and the
//! one writer; each domain owns its records and their tables through the [`Record`] trait, and
//! adds its own reads as an `impl Store` block of its own.
//!
//! The schema version is raised by every migration. A file of an older schema is opened as it
//! is and must be upgraded before anything uses it ([`Store::upgrade_from`], [`Store::rewrite`]:
//! the domains' migration writes the store anew, keeping a backup of it as it was); a file of a
//! newer schema is refused, never read by a build that would drop what it does not know.
//!
//! Reads go through [`Store`] from blocking threads. Every write goes through the one
//! [`writer::StoreWriter`] thread, which commits in groups: whatever arrived while the previous
//! commit was being made goes into the next one.

pub mod health;
mod record;
pub mod rewrite;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use bosun_shared::RunId;
use redb::{Database, ReadableDatabase, ReadableTable};

pub use record::{Reader, Record, decode_part};
pub use rewrite::Rewrite;

/// The schema this build reads and writes; it reads the older ones by upgrading them.
///
/// 1. Every record as JSON in a `&str` → `&[u8]` table.
/// 2. The agents' permission modes carried over as saved verdicts, and no address query left in
///    the store or in its free pages (`crate::upgrade`).
/// 3. A usage row (`usage[run_id]`) for every run of a coding CLI, written with its record.
/// 4. A run's decisions in rows of their own (`decisions["<run_id>/<n>"]`), out of its record.
pub const SCHEMA_VERSION: u64 = 4;

/// The store's own table: the schema version (and, under keys of their own, records that
/// domains keep one of, such as the board's settings under `board`).
pub const META: &str = "meta";

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another daemon holds the file. Returned by [`Store::open`]; not retryable until it exits.
    #[error("another bosund is already running on this state directory")]
    AlreadyOpen,
    /// The file is there but is not a whole store: empty, cut short, or with a damaged page.
    /// Returned by [`Store::open`], which leaves the file as it found it; not retryable: the
    /// person restores a backup or moves the file aside.
    #[error(
        "bosun's store {path} is damaged ({why}); bosund does not start on it, and has left it untouched. Restore it from a backup, or move it aside to start afresh with an empty store (such as `mv {path} {path}.damaged`; everything kept in it, agents, servers, cards, notes and the runs' records, is then gone from bosun)",
        path = .path.display()
    )]
    Damaged { path: PathBuf, why: String },
    /// The file is there but this process may not read and write it: another user's, made
    /// read-only, or on a read-only file system. Returned by [`Store::open`] before redb opens
    /// the file (which would say only "Permission denied"); not retryable until the person
    /// gives it back or uses another state directory.
    #[error("{}", no_access_words(path, *owner, *mode, *you, *read_only_fs))]
    NoAccess {
        path: PathBuf,
        /// The file's owner and permission bits.
        owner: u32,
        mode: u32,
        /// The user bosund runs as.
        you: u32,
        /// The file system is mounted read-only: no mode or owner helps.
        read_only_fs: bool,
    },
    /// The file was written by a newer bosun. Returned by [`Store::open`]; not retryable with
    /// this build. `backup` is where the newer bosun kept the store as it was in this build's
    /// schema, when it upgraded it.
    #[error(
        "this state directory was made by a newer bosun: upgrade, or restore the backup it made (its store has schema {found}, this bosun reads {SCHEMA_VERSION}; the newer bosun kept the store as it was in {}: stop bosund and put it in place of {})",
        backup.display(), store.display()
    )]
    NewerSchema {
        found: u64,
        backup: PathBuf,
        store: PathBuf,
    },
    /// A record could not be read back. Means corruption or a bug; not retryable.
    #[error("a stored record is not readable: {0}")]
    Corrupt(String),
    /// A run's log file lacks chunks the run wrote (a record that does not check out, or the
    /// file cut or deleted under bosund). Returned by log readers; the log is whole up to the
    /// seq named, and retrying does not help.
    #[error("{0}")]
    LogDamaged(String),
    /// redb failed (I/O, full disk). Retrying may help once the cause is fixed. (redb's error
    /// is in the words, not a source, so that a chain of causes does not say it twice.)
    #[error("the store failed: {0}")]
    Db(redb::Error),
    /// A run's log file could not be written or read (full disk, I/O error). (The I/O error is
    /// in the words, not a source, for the same reason.)
    #[error("a run's log file failed: {0}")]
    LogFile(std::io::Error),
    /// A group commit failed (full disk, I/O error): refused as a whole, none of its changes
    /// were made. The text says why in plain words and what to do; retrying helps once the
    /// cause is fixed.
    #[error("{0}")]
    CommitFailed(String),
    /// The store could not be opened again after a failed save (the text says why); the
    /// writer tries again every second. Retrying helps once the cause is fixed.
    #[error("{0}")]
    Unavailable(String),
    /// The writer thread is gone (the daemon is shutting down).
    #[error("the store is closed")]
    Closed,
    /// The store could not be compacted (a read held it past the wait, or redb failed); it is
    /// as it was, whole. Returned by [`writer::StoreWriter::compact`]; a later try may help.
    #[error("bosund's store could not be compacted: {0}")]
    Compact(String),
}

/// Why [`Store::reopen`] could not open the store again; the writer tries again later.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReopenError {
    /// The file cannot be opened for writing (a read-only directory): the handle is kept.
    #[error("bosund cannot open its store for writing ({0}); it tries again")]
    NotWritable(std::io::Error),
    #[error("a read held bosund's store for 5 s; it tries again")]
    ReadHeld,
    /// The store is closed until a later try opens it.
    #[error(
        "bosund could not open its store again after a failed save ({0}); it tries again every second"
    )]
    Open(StoreError),
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { StoreError::Db(e.into()) }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::LogFile(e)
    }
}

/// What [`StoreError::NoAccess`] says: whose the file is, and the one thing to do about it.
fn no_access_words(path: &Path, owner: u32, mode: u32, you: u32, read_only_fs: bool) -> String {
    let path = path.display();
    let elsewhere = "or use another state directory (set BOSUN_HOME)";
    if read_only_fs {
        format!(
            "bosun's store {path} is on a read-only file system, and bosund must write it; mount it read-write, {elsewhere}"
        )
    } else if owner != you {
        format!(
            "bosun's store {path} belongs to another user (owner uid {owner}, mode {mode:04o}; you are uid {you}), and bosund must read and write it; run bosun as its owner, give it to yourself (such as `sudo chown {you} {path}`), {elsewhere}"
        )
    } else {
        format!(
            "bosun's store {path} is not writable by you (owner uid {owner}, mode {mode:04o}), and bosund must read and write it; give it back with `chmod u+rw {path}`, {elsewhere}"
        )
    }
}

pub use bosun_shared::logfile::{self, LogChunk};

/// The daemon's handle on the store, for reads. Cheap to clone.
///
/// After a commit fails on an I/O error redb refuses every later write ("previous I/O error")
/// until the file is opened again, so the writer opens it again in place ([`Store::reopen`]):
/// every clone of the handle then reads and writes the file as it is on disk, which has every
/// commit that succeeded and nothing of the one that failed.
#[derive(Clone)]
pub struct Store {
    db: Arc<RwLock<Handle>>,
    path: PathBuf,
    runs_dir: PathBuf,
    /// The file's schema when it is older than this build's, until it is upgraded.
    older: Option<u64>,
}

impl Store {
    /// Opens (or creates) the store, refusing a file held by another daemon or written by a newer
    /// bosun, and creates `tables` (every domain's: bosund names them all) so that a new file has them
    /// all from the start. Run directories (and their log files) are under `runs_dir`. A file of
    /// an older schema keeps its version until it is upgraded ([`Store::upgrade_from`]).
    pub fn open(path: &Path, runs_dir: &Path, tables: &[&'static str]) -> Result<Self, StoreError> {
        let db = open_checked(path)?;
        let mut older = None;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(record::table(META))?;
            let found = meta
                .get("schema_version")?
                .map(|v| {
                    v.value()
                        .try_into()
                        .map(u64::from_be_bytes)
                        .map_err(|_| StoreError::Corrupt("schema_version is malformed".into()))
                })
                .transpose()?;
            match found {
                Some(v) if v > SCHEMA_VERSION => {
                    return Err(StoreError::NewerSchema {
                        found: v,
                        backup: rewrite::backup_path(path, SCHEMA_VERSION),
                        store: path.to_path_buf(),
                    });
                }
                Some(v) if v < SCHEMA_VERSION => older = Some(v),
                Some(_) => {}
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION.to_be_bytes().as_slice())?;
                }
            }
            for name in tables {
                txn.open_table(record::table(name))?;
            }
        }
        txn.commit()?;
        Ok(Self {
            db: Arc::new(RwLock::new(Handle::Open(Arc::new(db)))),
            path: path.to_path_buf(),
            runs_dir: runs_dir.to_path_buf(),
            older,
        })
    }

    /// The database as it is now (another one after a [`Store::reopen`]), or why there is
    /// none (it could not be opened again).
    pub(crate) fn db(&self) -> Result<Arc<Database>, StoreError> {
        match &*self.db.read().unwrap_or_else(PoisonError::into_inner) {
            Handle::Open(db) => Ok(db.clone()),
            Handle::Closed(why) => Err(StoreError::Unavailable(why.clone())),
        }
    }

    /// Opens the file again, in place of the handle every clone uses: after a failed commit
    /// redb refuses every write until then. The old handle is closed first (its file lock must
    /// go before the new one is taken); a read under way on it fails once, and the next read
    /// uses the new one. A file that cannot be opened for writing (a read-only directory) is
    /// left as it was, still readable, and tried again later. Called by the writer thread
    /// only, between commits; `Err` says why.
    pub(crate) fn reopen(&self) -> Result<(), ReopenError> {
        // Not openable for writing: keep the handle we have, which still reads.
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(&self.path) {
            return Err(ReopenError::NotWritable(e));
        }
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        // Readers take a clone of the handle only to begin a read, so the last clone goes
        // within moments; until it does, the file is still locked by it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while let Handle::Open(db) = &*slot
            && Arc::strong_count(db) > 1
        {
            if std::time::Instant::now() > deadline {
                return Err(ReopenError::ReadHeld);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The old handle is closed by its drop (a close that fails leaves the file for the
        // next open to recover, which redb does), then the file is opened again.
        *slot = Handle::Closed("bosund's store is being opened again; try again".into());
        match open_db(&self.path) {
            Ok(db) => {
                *slot = Handle::Open(Arc::new(db));
                Ok(())
            }
            Err(e) => {
                let e = ReopenError::Open(e);
                *slot = Handle::Closed(e.to_string());
                Err(e)
            }
        }
    }

    /// Compacts the file in place: redb moves the live pages toward its start and gives the
    /// free end back to the file system. redb needs the database to itself for it, so no
    /// read may begin meanwhile: the handle is held for writing (a read that begins waits on
    /// it; compaction is brief next to how rarely it is done), and the reads already under way
    /// are waited for, [`COMPACT_WAIT`] at most. Called by the writer thread only, between
    /// commits, so no write of ours is under way. A compaction cut short by a crash leaves a
    /// whole file: redb makes each step a durable commit.
    pub(crate) fn compact(&self) -> Result<bool, StoreError> {
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        let deadline = std::time::Instant::now() + COMPACT_WAIT;
        let held = || {
            StoreError::Compact(format!(
                "a read held the store for {} s; try again",
                COMPACT_WAIT.as_secs()
            ))
        };
        loop {
            let db = match &mut *slot {
                Handle::Open(db) => db,
                Handle::Closed(why) => return Err(StoreError::Unavailable(why.clone())),
            };
            // A reader holds a clone only while it begins a read transaction.
            let Some(db) = Arc::get_mut(db) else {
                if std::time::Instant::now() > deadline {
                    return Err(held());
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            match db.compact() {
                Ok(compacted) => return Ok(compacted),
                // A read transaction begun before the handle was held: wait for its end.
                Err(redb::CompactionError::TransactionInProgress)
                    if std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(redb::CompactionError::TransactionInProgress) => return Err(held()),
                Err(e) => return Err(StoreError::Compact(e.to_string())),
            }
        }
    }

    /// The store file's size on disk, if it can be read.
    pub fn file_bytes(&self) -> Option<u64> {
        std::fs::metadata(&self.path).ok().map(|m| m.len())
    }

    /// A moment of the store, to read several records that must agree.
    pub fn read(&self) -> Result<Reader, StoreError> {
        Ok(Reader(self.db()?.begin_read()?))
    }

    /// The record with this key, if there is one.
    pub fn get<R: Record>(&self, key: &R::Key) -> Result<Option<R>, StoreError> {
        self.read()?.get(key)
    }

    /// Every record of a table, in key order.
    pub fn all<R: Record>(&self) -> Result<Vec<R>, StoreError> {
        self.read()?.all()
    }

    /// The free space of the state directory's disk, in bytes, if it can be told.
    pub(crate) fn free_bytes(&self) -> Option<u64> {
        let dir = self.path.parent()?;
        let st = nix::sys::statvfs::statvfs(dir).ok()?;
        Some(st.blocks_available() * st.fragment_size())
    }

    /// The folder of a run on this machine.
    pub fn run_dir(&self, id: RunId) -> PathBuf {
        self.runs_dir.join(id.to_string())
    }

    /// The log file of a run.
    pub fn log_path(&self, id: RunId) -> PathBuf {
        self.run_dir(id).join("log")
    }

    /// The seq of a run's last stored chunk (0 when it has none).
    pub fn last_log_seq(&self, id: RunId) -> Result<u64, StoreError> {
        let Some(mut reader) = logfile::LogReader::open(&self.log_path(id))? else {
            return Ok(0);
        };
        let mut last = 0;
        while let Some(c) = reader.next(false)? {
            last = c.seq;
        }
        Ok(last)
    }
}

/// The longest a compaction waits for the reads under way when it begins.
const COMPACT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The store's redb handle: open, or closed after a failed save could not open it again.
enum Handle {
    Open(Arc<Database>),
    Closed(String),
}

/// Opens the redb file at startup, or creates it when there is none, checking a file that is
/// there whole before anything uses it.
///
/// redb trusts a file that was shut down cleanly, so a page damaged outside it (a disk, a
/// copy cut short) surfaces later as a panic in whatever reads it ("entered unreachable
/// code"), and an empty file is taken as a new store and written over. So: an empty file is
/// refused as it is; any other is opened with redb's integrity check, which reads the whole
/// file and reports damage as an error; and a panic of redb on it is caught and refused the
/// same way. A refused file is left as it was found (the check writes only to a file that
/// passes it: its repair commit).
fn open_checked(path: &Path) -> Result<Database, StoreError> {
    let damaged = |why: String| StoreError::Damaged {
        path: path.to_path_buf(),
        why,
    };
    match std::fs::metadata(path) {
        Ok(m) if m.len() == 0 => {
            return Err(damaged(
                "it is empty: 0 bytes, where even a new store has its header".into(),
            ));
        }
        Ok(m) => no_access(path, &m)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return open_db(path),
        Err(e) => return Err(StoreError::Db(redb::Error::Io(e))),
    }
    let started = std::time::Instant::now();
    let opened =
        std::panic::catch_unwind(|| builder().set_check_integrity_on_open(true).open(path));
    tracing::info!(took = ?started.elapsed(), "the store was checked whole");
    match opened {
        // The check read the whole file through redb's page cache and left it full: the file
        // is opened again, with an empty cache, so that bosund does not hold 64 MiB of pages
        // it read once (the close records the allocator's state, so the open is quick).
        Ok(Ok(db)) => {
            let started = std::time::Instant::now();
            drop(db);
            bosun_shared::process::give_back_memory();
            let db = open_db(path);
            tracing::info!(took = ?started.elapsed(), "the store was opened again, its page cache empty");
            db
        }
        Ok(Err(redb::DatabaseError::DatabaseAlreadyOpen)) => Err(StoreError::AlreadyOpen),
        Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Corrupted(why)))) => {
            Err(damaged(why))
        }
        Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Io(e))))
            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            Err(damaged(format!("it is cut short: {e}")))
        }
        Ok(Err(e)) => Err(StoreError::Db(e.into())),
        Err(panic) => {
            let said = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no words".into());
            Err(damaged(format!("reading it made redb fail: {said}")))
        }
    }
}

/// Refuses a store this process may not read and write, saying whose it is and what to do.
/// (As root, only a read-only file system refuses: root may write any file.)
fn no_access(path: &Path, m: &std::fs::Metadata) -> Result<(), StoreError> {
    use nix::unistd::{AccessFlags, access};
    use std::os::unix::fs::MetadataExt;
    match access(path, AccessFlags::R_OK | AccessFlags::W_OK) {
        Ok(()) => Ok(()),
        Err(errno) => Err(StoreError::NoAccess {
            path: path.to_path_buf(),
            owner: m.uid(),
            mode: m.mode() & 0o7777,
            you: nix::unistd::getuid().as_raw(),
            read_only_fs: errno == nix::errno::Errno::EROFS,
        }),
    }
}

/// How much memory redb may keep of the file's pages (its default is 1 GiB). Its integrity
/// check at start reads the whole file through this cache, so on a store of some history the
/// default was filled at once and kept: bosund held 1.9–3.3 GiB before its first request on the
/// soak's 2.2 GiB store (the file is now opened again after the check, with an empty cache).
/// Pages past it are read again from the file, which the system caches.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// A redb builder with the store's settings.
fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_cache_size(CACHE_BYTES);
    b
}

/// Opens (or creates) the redb file, telling a file held by another daemon apart.
fn open_db(path: &Path) -> Result<Database, StoreError> {
    match builder().create(path) {
        Ok(db) => Ok(db),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Err(StoreError::AlreadyOpen),
        Err(e) => Err(StoreError::Db(e.into())),
    }
}
