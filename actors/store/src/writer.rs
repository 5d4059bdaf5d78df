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
//! **State changes are never half-made.** A commit that fails (a full disk, a read-only
//! directory, an I/O error) is refused as a whole, with the reason in plain words to every job in
//! it (a group of several is tried again job by job, so one change too big for what is left
//! does not refuse the others). redb refuses every write after a failed one until its file is
//! opened again, so the writer opens it again at once ([`Store::reopen`]); while that fails, or
//! while the last commit failed, an empty commit is tried every [`PROBE_EVERY`] so that the
//! fault ends by itself once the cause is fixed.
//!
//! Log files are fdatasynced by a second thread, so the disk's pace never holds up a commit:
//! every file written to is synced within [`SYNC_EVERY`], and a run's file once more when the
//! run ends. **An fdatasync that fails means the data is unsafe**: the kernel may have dropped
//! the pages it could not write and will not report it again, so syncing again would say
//! "fine" about data that is gone. The range written since the last good sync is instead read
//! back, checked record by record, written again and synced again; until that works the run's
//! log is said to be unsafe ([`StorageHealth`]). A range that no longer reads back whole is said
//! to be lost.

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

use super::health::{StorageHealth, commit_reason};
use super::logfile::{LogFile, rewrite_range};
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
/// How often, while changes cannot be saved, the store is tried again.
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How the syncer flushes a file to disk: `File::sync_data`, or a failing one in tests.
pub type SyncFn = Arc<dyn Fn(&File) -> std::io::Result<()> + Send + Sync>;

/// A run's log file to flush, and the range written since its last good flush.
struct SyncJob {
    run: RunId,
    file: File,
    from: u64,
    upto: u64,
    /// The range failed to flush before and was written again.
    again: bool,
}

/// What the syncer did with a [`SyncJob`].
struct Synced {
    job: SyncJob,
    result: std::io::Result<()>,
}

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
    /// Compact the store file ([`Store::compact`]) once what came before it is committed.
    Compact,
}

impl WriteOp {
    fn bytes(&self) -> usize {
        match self {
            WriteOp::Commit { changes, .. } => 512 * changes.len(),
            WriteOp::AppendLog { chunk, .. } => chunk.data.len(),
            WriteOp::Compact => 0,
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
        Self::start_with(store, Arc::new(File::sync_data))
    }

    /// Starts the writer thread with its syncer flushing files by `sync` (tests make it fail).
    pub fn start_with(
        store: Store,
        sync: SyncFn,
    ) -> std::io::Result<(Self, thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (sync_tx, sync_rx) = mpsc::channel::<SyncJob>();
        let (synced_tx, synced_rx) = mpsc::channel::<Synced>();
        let syncer = thread::Builder::new()
            .name("log-syncer".into())
            .spawn(move || {
                while let Ok(job) = sync_rx.recv() {
                    let result = sync(&job.file);
                    if synced_tx.send(Synced { job, result }).is_err() {
                        break;
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
                    synced: synced_rx,
                    rewriting: HashMap::new(),
                    resync: Vec::new(),
                    held: HashMap::new(),
                    health: writer_health,
                    needs_reopen: false,
                }
                .run(&rx);
                let _ = syncer.join();
            })?;
        Ok((Self { tx, health }, handle))
    }

    /// Which runs' output is held, whether changes can be saved, which logs could not be
    /// flushed, and why: for `ps`, `show`, `daemon status` and the Events actor.
    pub fn health(&self) -> &Arc<StorageHealth> {
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

    /// Compacts the store file once every change submitted before is committed, and returns
    /// once it is done. Changes submitted meanwhile wait.
    pub async fn compact(&self) -> Result<(), StoreError> {
        self.durably(WriteOp::Compact).await
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
    syncer: mpsc::Sender<SyncJob>,
    /// What the syncer did.
    synced: mpsc::Receiver<Synced>,
    /// Per run, how many ranges of its log failed to flush and are being written again.
    rewriting: HashMap<RunId, usize>,
    /// Ranges written again, to flush again when their time comes.
    resync: Vec<(Instant, SyncJob)>,
    /// Output that could not be written yet, per run, in seq order, with its waiters.
    held: HashMap<RunId, Held>,
    /// What the held output is told to whoever asks.
    health: Arc<StorageHealth>,
    /// The last commit failed and the store could not be opened again yet.
    needs_reopen: bool,
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
        let mut last_probe = Instant::now();
        loop {
            let wait = if !self.held.is_empty() || !self.resync.is_empty() {
                RETRY_HELD
            } else if self.health.commit_faulty() {
                PROBE_EVERY
            } else {
                SYNC_EVERY
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
            if self.health.commit_faulty() && last_probe.elapsed() >= PROBE_EVERY {
                last_probe = Instant::now();
                self.probe();
            }
            self.after_syncs();
            if last_sync.elapsed() >= SYNC_EVERY {
                last_sync = Instant::now();
                self.sync_dirty();
            }
        }
        // Shutting down: every log file to disk.
        for (run, mut log) in self.logs.drain() {
            if let Err(e) = log.sync() {
                tracing::error!(run_id = %run, error = %e, "could not flush a run's log file to disk at shutdown; its last output may be lost if the machine crashes");
            }
        }
    }

    fn apply(&mut self, jobs: Vec<Job>) {
        // Output first, grouped by run, one write each; then the records, in one durable commit.
        let mut by_run: HashMap<RunId, Held> = HashMap::new();
        let mut records = Vec::new();
        let mut compacts = Vec::new();
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
                WriteOp::Compact => compacts.extend(job.done),
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
        self.commit_records(records);
        if !compacts.is_empty() {
            self.compact(compacts);
        }
    }

    /// Compacts the store (after the commits of the same group, which came before) and tells
    /// each waiter how it went. A store that cannot be written is not compacted.
    fn compact(&mut self, waiters: Vec<Done>) {
        let started = Instant::now();
        let result = if self.needs_reopen || self.health.commit_faulty() {
            Err("changes cannot be saved now, so it was not tried".to_string())
        } else {
            // Told again as a compaction's failure, its reason once.
            self.store.compact().map_err(|e| {
                if let StoreError::Compact(why) = e {
                    why
                } else {
                    e.to_string()
                }
            })
        };
        match &result {
            Ok(moved) => {
                tracing::info!(moved, took = ?started.elapsed(), "the store was compacted")
            }
            Err(why) => tracing::warn!(%why, "the store could not be compacted"),
        }
        for done in waiters {
            done(match &result {
                Ok(_) => Ok(()),
                Err(why) => Err(StoreError::Compact(why.clone())),
            });
        }
    }

    /// Commits the records of a group, in one durable commit, and tells their waiters.
    fn commit_records(&mut self, records: Vec<(Vec<Change>, Option<RunId>, Option<Done>)>) {
        if records.is_empty() {
            return;
        }
        let commit = self.commit_refusing(records.iter().map(|(changes, _, _)| changes));
        let results: Vec<Result<(), StoreError>> = match commit {
            Ok(()) => records.iter().map(|_| Ok(())).collect(),
            // One of several may be what does not fit: each is tried again alone.
            Err(_) if records.len() > 1 => records
                .iter()
                .map(|(changes, _, _)| self.commit_refusing(std::iter::once(changes)))
                .collect(),
            Err(why) => vec![Err(why)],
        };
        for ((_, ends_log, done), result) in records.into_iter().zip(results) {
            // A run that ended has written its last output: its file goes to disk and is closed.
            if result.is_ok()
                && let Some(run) = ends_log
                && let Some(mut log) = self.logs.remove(&run)
                && let Some(job) = take_dirty(run, &mut log)
            {
                let _ = self.syncer.send(job);
            }
            if let Some(done) = done {
                done(result);
            }
        }
    }

    /// Commits, or refuses as a whole with the reason in plain words ([`StoreError::CommitFailed`]),
    /// says so in the health, and opens the store again after a failure (redb writes nothing
    /// more until then).
    fn commit_refusing<'a>(
        &mut self,
        groups: impl Iterator<Item = &'a Vec<Change>>,
    ) -> Result<(), StoreError> {
        if self.needs_reopen {
            self.reopen();
        }
        let result = if self.needs_reopen {
            Err(StoreError::Unavailable(
                "bosund could not open its store again after a failed save".into(),
            ))
        } else {
            self.commit(groups)
        };
        match result {
            Ok(()) => {
                self.health.commit_ok();
                Ok(())
            }
            Err(e) => {
                let why = commit_reason(&e, self.store.free_bytes());
                tracing::error!(error = %e, %why, "a store commit failed; it was refused as a whole");
                self.health.commit_failed(&why);
                if !matches!(e, StoreError::Unavailable(_)) {
                    self.needs_reopen = true;
                    self.reopen();
                }
                Err(StoreError::CommitFailed(why))
            }
        }
    }

    /// Opens the store again after a failed commit.
    fn reopen(&mut self) {
        match self.store.reopen() {
            Ok(()) => {
                tracing::info!("the store is open again after a failed save");
                self.needs_reopen = false;
            }
            Err(why) => {
                tracing::error!(%why, "could not open the store again");
                self.health.commit_failed(&why.to_string());
            }
        }
    }

    /// While changes cannot be saved: opens the store again if need be and tries an empty
    /// commit; when it works, the fault is over.
    fn probe(&mut self) {
        if self.needs_reopen {
            self.reopen();
            if self.needs_reopen {
                return;
            }
        }
        // An empty commit needs little room; after a full disk it is only tried with some.
        if self.store.free_bytes().is_some_and(|b| b < 1024 * 1024) {
            return;
        }
        let empty: Vec<Change> = Vec::new();
        match self.commit(std::iter::once(&empty)) {
            Ok(()) => {
                tracing::info!("changes can be saved again");
                self.health.commit_ok();
            }
            Err(_) => {
                self.needs_reopen = true;
                self.reopen();
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
        let db = self.store.db()?;
        let mut txn = db.begin_write()?;
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
        for (run, log) in &mut self.logs {
            if let Some(job) = take_dirty(*run, log) {
                let _ = self.syncer.send(job);
            }
        }
    }

    /// Hears what the syncer did. A failed flush is not tried again as if nothing happened:
    /// the range is read back, checked, written again, and then flushed again.
    fn after_syncs(&mut self) {
        while let Ok(Synced { mut job, result }) = self.synced.try_recv() {
            let run = job.run;
            match result {
                Ok(()) => {
                    if let Some(log) = self.logs.get_mut(&run) {
                        log.mark_synced(job.upto);
                    }
                    if job.again
                        && let Some(n) = self.rewriting.get_mut(&run)
                    {
                        *n = n.saturating_sub(1);
                        if *n == 0 {
                            self.rewriting.remove(&run);
                            self.health.synced(run);
                            tracing::info!(run_id = %run, "a run's log is flushed to disk again, whole");
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(run_id = %run, error = %e, from = job.from, upto = job.upto, "could not flush a run's log file to disk; what it wrote since the last flush is written again");
                    self.health.unsynced(run, &e);
                    if !job.again {
                        job.again = true;
                        *self.rewriting.entry(run).or_insert(0) += 1;
                    }
                    match rewrite_range(&job.file, job.from, job.upto) {
                        // Flushed again on a later round, not at once: a failing disk is not
                        // hammered.
                        Ok(()) => self.resync.push((Instant::now() + RETRY_HELD, job)),
                        Err(why) => {
                            self.rewriting.remove(&run);
                            let why = format!(
                                "the log of run {} could not be flushed to disk ({e}), and what it wrote since then no longer reads back whole ({why}): the log lacks it",
                                run.short()
                            );
                            tracing::error!(run_id = %run, %why, "a run's log lost output");
                            self.health.log_lost(run, why);
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.resync)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.resync = later;
        for (_, job) in due {
            let _ = self.syncer.send(job);
        }
    }
}

/// A job for the syncer, if anything was written to `log` since its last flush.
fn take_dirty(run: RunId, log: &mut LogFile) -> Option<SyncJob> {
    let from = log.synced();
    match log.take_dirty() {
        Ok(Some((file, upto))) => Some(SyncJob {
            run,
            file,
            from,
            upto,
            again: false,
        }),
        Ok(None) => None,
        Err(e) => {
            tracing::error!(run_id = %run, error = %e, "could not take a run's log file to flush it");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bosun_shared::Timestamp;
    use bosun_shared::run::Stream;

    use super::*;
    use crate::logfile::{LogReader, RecordsError, check_records};

    fn chunk(seq: u64) -> Arc<LogChunk> {
        Arc::new(LogChunk {
            seq,
            stream: Stream::Stdout,
            at: Timestamp::from_millis(seq),
            data: format!("line {seq}\n").into_bytes(),
        })
    }

    fn wait(what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// An fdatasync that fails is not tried again as if nothing happened: the run's log is said
    /// to be unsafe, what was written since the last good flush is written again, and only a
    /// flush after that ends the fault. The log is whole.
    #[test]
    fn a_failed_flush_is_said_and_the_range_is_written_again_before_it_is_flushed()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let runs = dir.path().join("runs");
        let store = Store::open(&dir.path().join("bosun.redb"), &runs, &[])?;
        let run = RunId::new();
        std::fs::create_dir_all(runs.join(run.to_string()))?;
        // The first two flushes fail with EIO; then the disk works again.
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let sync: SyncFn = Arc::new(move |f: &File| {
            if seen.fetch_add(1, Ordering::SeqCst) < 2 {
                return Err(std::io::Error::from_raw_os_error(5));
            }
            f.sync_data()
        });
        let (writer, thread) = StoreWriter::start_with(store.clone(), sync)?;
        let mut watch = writer.health().watch();
        for seq in 1..=3 {
            writer.submit(
                WriteOp::AppendLog {
                    run,
                    chunk: chunk(seq),
                },
                None,
            )?;
        }
        wait("the fault", || {
            writer
                .health()
                .fault()
                .is_some_and(|f| f.contains("could not be flushed to disk"))
        });
        let fault = writer.health().fault().unwrap_or_default();
        assert!(
            fault.contains(&format!("the log of run {}", run.short())),
            "{fault}"
        );
        assert!(watch.borrow_and_update().is_some());
        wait("the fault to end", || writer.health().fault().is_none());
        // It took a flush after the failed ones (the range written again) to end it.
        assert!(calls.load(Ordering::SeqCst) >= 3);
        assert!(watch.borrow_and_update().is_none());
        assert!(writer.health().last_fault().is_some());
        let mut reader = LogReader::open(&store.log_path(run))?.ok_or("no log file")?;
        let mut seqs = Vec::new();
        while let Some(c) = reader.next(true)? {
            seqs.push(c.seq);
        }
        assert_eq!(seqs, vec![1, 2, 3]);
        drop(writer);
        let _ = thread.join();
        Ok(())
    }

    /// What failed to flush and no longer reads back whole is said to be lost, not written
    /// again as if it were good.
    #[test]
    fn a_range_that_does_not_read_back_whole_is_said_to_be_lost() {
        let mut good = Vec::new();
        for seq in 1..=2 {
            let c = chunk(seq);
            let dir = tempfile::tempdir().ok();
            let Some(dir) = dir else { return };
            let path = dir.path().join("log");
            let Ok(mut f) = LogFile::open_for_append(&path) else {
                return;
            };
            let _ = f.append([c.as_ref()]);
            good.extend(std::fs::read(&path).unwrap_or_default());
        }
        assert_eq!(check_records(&good), Ok(()));
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        assert_eq!(check_records(&bad), Err(RecordsError::BadChecksum(2)));
        assert_eq!(
            check_records(&bad).map_err(|e| e.to_string()),
            Err("chunk 2 does not check out".into())
        );
        assert!(check_records(&good[..good.len() - 3]).is_err());
    }

    /// A commit that fails is refused as a whole with the reason, and the store is opened again
    /// so that the next one can succeed: here the redb file is made read-only under the writer
    /// is not possible as root, so the failure is a change too big for redb to take.
    #[test]
    fn a_refused_commit_leaves_the_store_usable() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(
            &dir.path().join("bosun.redb"),
            &dir.path().join("runs"),
            &["t"],
        )?;
        let (writer, thread) = StoreWriter::start(store.clone())?;
        let rt = tokio::runtime::Builder::new_current_thread().build()?;
        rt.block_on(async {
            let ok = Change {
                table: "t",
                key: "a".into(),
                value: Some(b"1".to_vec()),
            };
            writer.commit(vec![ok]).await?;
            // The store is opened again in place; reads and writes go on.
            writer.health().commit_failed("test");
            assert!(store.reopen().is_ok());
            let ok = Change {
                table: "t",
                key: "b".into(),
                value: Some(b"2".to_vec()),
            };
            writer.commit(vec![ok]).await?;
            assert!(writer.health().fault().is_none());
            Ok::<(), StoreError>(())
        })?;
        let read = store.read()?;
        let t = read.0.open_table(table("t"))?;
        assert!(t.get("a")?.is_some() && t.get("b")?.is_some());
        drop(t);
        drop(read);
        drop(writer);
        let _ = thread.join();
        Ok(())
    }
}
