//! The store's one writer: a thread that commits in groups.
//!
//! Jobs queue up while a commit is being made; the next commit takes all of them (up to a bound).
//! Output chunks are appended to their run's log file, one write per run per group, and their
//! waiters are told at once: from then on a crash of bosund cannot lose them. Run records (every
//! state change) and every other record go into redb in one durable commit (fsync) before their
//! waiters are told. Jobs are applied in the order they were submitted, so a run's final state,
//! submitted after its last chunk, is never saved before it. The writer knows no domain: a
//! record reaches it as a [`Change`], its table, key and bytes, made through [`Record`].
//!
//! **Output is never dropped for a storage fault.** When a run's output cannot be written (a
//! full disk, a quota, a read-only or failing file system), its chunks, and every later chunk of
//! that run, are held here and written again every [`RETRY_HELD`]; their waiters hear nothing
//! until they are written, so nothing is acked, the daemon stops reading that runner once too
//! much waits (the hub's bound), and the runner holds the program. A write that failed half-way
//! is simply written again at the same place (the file's end only moves on success).
//!
//! Log files are fdatasynced by a second thread, so the disk's pace never holds up a commit:
//! every file written to is synced within [`SYNC_EVERY`], and a run's file once more when the
//! run ends.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use bosun_shared::RunId;
use redb::{Durability, Table};
use tokio::sync::oneshot;

use super::health::StorageHealth;
use super::logfile::LogFile;
use super::record::{Record, table};
use super::{LogChunk, Store, StoreError};

/// The most jobs in one commit.
const MAX_JOBS_PER_COMMIT: usize = 8192;
/// About the most log bytes in one commit.
const MAX_BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;
/// The longest written output waits for its fdatasync.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);
/// How often held output is tried again.
const RETRY_HELD: Duration = Duration::from_millis(250);

/// One change to the store.
#[derive(Debug)]
pub enum WriteOp {
    AppendLog {
        run: RunId,
        chunk: Arc<LogChunk>,
    },
    /// Records put and deleted, committed together, in this order.
    Commit {
        changes: Vec<Change>,
        /// A run whose record, in `changes`, says it ended: once they are saved, its log file
        /// goes to disk and is closed.
        ends_log: Option<RunId>,
    },
}

impl WriteOp {
    fn bytes(&self) -> usize {
        match self {
            WriteOp::Commit { changes, .. } => 512 * changes.len(),
            WriteOp::AppendLog { chunk, .. } => chunk.data.len(),
        }
    }
}

/// One record put or deleted: its table, its key and (put) its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    table: &'static str,
    key: String,
    /// `None` deletes.
    value: Option<Vec<u8>>,
}

impl Change {
    /// Puts the record in its table (in place of the one with its key, if any).
    pub fn put<R: Record>(record: &R) -> Self {
        Self {
            table: R::TABLE,
            key: record.key(),
            value: Some(record.encode()),
        }
    }

    /// Deletes the record of type `R` with this key, if there is one.
    pub fn delete<R: Record>(key: &R::Key) -> Self {
        Self {
            table: R::TABLE,
            key: key.to_string(),
            value: None,
        }
    }
}

/// Called on the writer thread once a job is saved (or failed). It must not block: it sends a
/// message and returns.
pub type Done = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

struct Job {
    op: WriteOp,
    done: Option<Done>,
}

/// The handle to the writer thread. Cheap to clone; the thread ends when every handle is gone.
#[derive(Clone)]
pub struct StoreWriter {
    tx: mpsc::Sender<Job>,
    health: Arc<StorageHealth>,
}

impl StoreWriter {
    /// Starts the writer thread (and its syncer).
    pub fn start(store: Store) -> std::io::Result<(Self, thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (sync_tx, sync_rx) = mpsc::channel::<File>();
        let syncer = thread::Builder::new()
            .name("log-syncer".into())
            .spawn(move || {
                while let Ok(file) = sync_rx.recv() {
                    if let Err(e) = file.sync_data() {
                        tracing::error!(error = %e, "could not fdatasync a run's log file");
                    }
                }
            })?;
        let health = Arc::new(StorageHealth::default());
        let writer_health = health.clone();
        let handle = thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                Writer {
                    store,
                    logs: HashMap::new(),
                    syncer: sync_tx,
                    held: HashMap::new(),
                    health: writer_health,
                }
                .run(&rx);
                let _ = syncer.join();
            })?;
        Ok((Self { tx, health }, handle))
    }

    /// Which runs' output is held, and why: for `ps`, `show` and `daemon status`.
    pub fn health(&self) -> &StorageHealth {
        &self.health
    }

    /// Submits a change; `done` hears when it is saved.
    pub fn submit(&self, op: WriteOp, done: Option<Done>) -> Result<(), StoreError> {
        self.tx
            .send(Job { op, done })
            .map_err(|_| StoreError::Closed)
    }

    /// Writes a record durably and returns once it is on disk.
    pub async fn put<R: Record>(&self, record: &R) -> Result<(), StoreError> {
        self.commit(vec![Change::put(record)]).await
    }

    /// Deletes a record durably.
    pub async fn delete<R: Record>(&self, key: &R::Key) -> Result<(), StoreError> {
        self.commit(vec![Change::delete::<R>(key)]).await
    }

    /// Commits changes together, durably: all of them or none.
    pub async fn commit(&self, changes: Vec<Change>) -> Result<(), StoreError> {
        self.durably(WriteOp::Commit {
            changes,
            ends_log: None,
        })
        .await
    }

    /// Submits a change and returns once it is saved.
    pub async fn durably(&self, op: WriteOp) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        let done: Done = Box::new(move |r| {
            let _ = tx.send(r);
        });
        self.submit(op, Some(done))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

struct Writer {
    store: Store,
    /// Log files of runs that are writing, open for appending.
    logs: HashMap<RunId, LogFile>,
    syncer: mpsc::Sender<File>,
    /// Output that could not be written yet, per run, in seq order, with its waiters.
    held: HashMap<RunId, Held>,
    /// What the held output is told to whoever asks.
    health: Arc<StorageHealth>,
}

/// A run's output waiting for the storage to take it again.
struct Held {
    chunks: Vec<Arc<LogChunk>>,
    dones: Vec<Done>,
    /// When the hold began.
    since: Instant,
}

impl Held {
    fn bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.data.len() as u64).sum()
    }
}

impl Writer {
    fn run(mut self, rx: &mpsc::Receiver<Job>) {
        let mut last_sync = Instant::now();
        let mut last_retry = Instant::now();
        loop {
            let wait = if self.held.is_empty() {
                SYNC_EVERY
            } else {
                RETRY_HELD
            };
            let first = match rx.recv_timeout(wait) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            if let Some(first) = first {
                let mut bytes = first.op.bytes();
                let mut jobs = vec![first];
                while jobs.len() < MAX_JOBS_PER_COMMIT && bytes < MAX_BYTES_PER_COMMIT {
                    match rx.try_recv() {
                        Ok(job) => {
                            bytes += job.op.bytes();
                            jobs.push(job);
                        }
                        Err(_) => break,
                    }
                }
                self.apply(jobs);
            }
            if !self.held.is_empty() && last_retry.elapsed() >= RETRY_HELD {
                last_retry = Instant::now();
                self.retry_held();
            }
            if last_sync.elapsed() >= SYNC_EVERY {
                last_sync = Instant::now();
                self.sync_dirty();
            }
        }
        // Shutting down: every log file to disk.
        for (_, mut log) in self.logs.drain() {
            let _ = log.sync();
        }
    }

    fn apply(&mut self, jobs: Vec<Job>) {
        // Output first, grouped by run, one write each; then the records, in one durable commit.
        let mut by_run: HashMap<RunId, Held> = HashMap::new();
        let mut records = Vec::new();
        for job in jobs {
            match job.op {
                WriteOp::AppendLog { run, chunk } => {
                    let out = by_run.entry(run).or_insert_with(|| Held {
                        chunks: Vec::new(),
                        dones: Vec::new(),
                        since: Instant::now(),
                    });
                    out.chunks.push(chunk);
                    out.dones.extend(job.done);
                }
                WriteOp::Commit { changes, ends_log } => {
                    records.push((changes, ends_log, job.done));
                }
            }
        }
        for (run, out) in by_run {
            match self.held.get_mut(&run) {
                // Behind output that waits: it waits too, in order.
                Some(held) => {
                    held.chunks.extend(out.chunks);
                    held.dones.extend(out.dones);
                }
                None => self.write_out(run, out),
            }
        }
        if records.is_empty() {
            return;
        }
        let commit = self.commit(records.iter().map(|(changes, _, _)| changes));
        if let Err(e) = &commit {
            tracing::error!(error = %e, "a store commit failed");
        }
        for (_, ends_log, done) in records {
            // A run that ended has written its last output: its file goes to disk and is closed.
            if commit.is_ok()
                && let Some(run) = ends_log
                && let Some(mut log) = self.logs.remove(&run)
                && let Ok(Some(file)) = log.take_dirty()
            {
                let _ = self.syncer.send(file);
            }
            if let Some(done) = done {
                done(match &commit {
                    Ok(()) => Ok(()),
                    Err(e) => Err(StoreError::CommitFailed(e.to_string())),
                });
            }
        }
    }

    /// Writes a run's output and tells its waiters; output that cannot be written is held.
    fn write_out(&mut self, run: RunId, out: Held) {
        match self.append(run, &out.chunks) {
            Ok(()) => {
                for done in out.dones {
                    done(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!(run_id = %run, error = %e, "could not write a run's output; it is held and tried again until it can be written");
                self.health.hold(run, out.bytes(), &e);
                self.held.insert(run, out);
            }
        }
    }

    /// Tries held output again, run by run.
    fn retry_held(&mut self) {
        let runs: Vec<RunId> = self.held.keys().copied().collect();
        for run in runs {
            let Some(out) = self.held.remove(&run) else {
                continue;
            };
            match self.append(run, &out.chunks) {
                Ok(()) => {
                    self.health.release(run);
                    tracing::info!(run_id = %run, held_for = ?out.since.elapsed(), "held output is written");
                    for done in out.dones {
                        done(Ok(()));
                    }
                }
                Err(e) => {
                    self.health.hold(run, out.bytes(), &e);
                    self.held.insert(run, out);
                }
            }
        }
    }

    fn append(&mut self, run: RunId, chunks: &[Arc<LogChunk>]) -> Result<(), StoreError> {
        let log = match self.logs.get_mut(&run) {
            Some(log) => log,
            None => {
                let log = LogFile::open_for_append(&self.store.log_path(run))?;
                self.logs.entry(run).or_insert(log)
            }
        };
        // Chunks the file already has (resent after a crash) are not written twice.
        let last = log.last_seq();
        log.append(chunks.iter().filter(|c| c.seq > last).map(|c| c.as_ref()))?;
        Ok(())
    }

    fn commit<'a>(&self, groups: impl Iterator<Item = &'a Vec<Change>>) -> Result<(), StoreError> {
        let mut txn = self.store.db().begin_write()?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| StoreError::CommitFailed(e.to_string()))?;
        {
            // Each table is opened once per commit, when its first change comes.
            let mut tables: HashMap<&'static str, Table<&'static str, &'static [u8]>> =
                HashMap::new();
            for changes in groups {
                for change in changes {
                    let t = match tables.entry(change.table) {
                        Entry::Occupied(e) => e.into_mut(),
                        Entry::Vacant(e) => e.insert(txn.open_table(table(change.table))?),
                    };
                    match &change.value {
                        Some(value) => {
                            t.insert(change.key.as_str(), value.as_slice())?;
                        }
                        None => {
                            t.remove(change.key.as_str())?;
                        }
                    }
                }
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn sync_dirty(&mut self) {
        for log in self.logs.values_mut() {
            if let Ok(Some(file)) = log.take_dirty() {
                let _ = self.syncer.send(file);
            }
        }
    }
}
