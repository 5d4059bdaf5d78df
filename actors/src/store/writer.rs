//! The store's one writer: a thread that commits in groups.
//!
//! Jobs queue up while a commit is being made; the next commit takes all of them (up to a bound)
//! in one transaction. A run's record (any state change) is always committed durably, with an
//! fsync, before its waiter is told. Output chunks are committed without an fsync first
//! (*visible*: readable by the daemon) and made durable by the next durable commit, which comes
//! within [`DURABLE_EVERY`] or with the next state change, whichever is first; only then is the
//! runner acked, so a chunk the runner forgets is always on disk. Jobs are applied in the order
//! they were submitted, so a run's final state, submitted after its last chunk, is never
//! committed before it.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use bosun_shared::RunId;
use redb::Durability;
use tokio::sync::oneshot;

use super::{LogChunk, RUN_LOG, RUNS, RunRecord, Store, StoreError};

/// The most jobs in one commit.
const MAX_JOBS_PER_COMMIT: usize = 8192;
/// About the most log bytes in one commit.
const MAX_BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;
/// The longest a committed chunk waits for its fsync.
pub const DURABLE_EVERY: Duration = Duration::from_millis(100);

/// One change to the store.
#[derive(Debug)]
pub enum WriteOp {
    PutRun(Box<RunRecord>),
    AppendLog { run: RunId, chunk: Arc<LogChunk> },
}

impl WriteOp {
    fn bytes(&self) -> usize {
        match self {
            WriteOp::PutRun(_) => 512,
            WriteOp::AppendLog { chunk, .. } => chunk.data.len(),
        }
    }

    fn needs_fsync(&self) -> bool {
        match self {
            WriteOp::PutRun(_) => true,
            WriteOp::AppendLog { .. } => false,
        }
    }
}

/// How far a job has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// Written and readable by this daemon; lost if the daemon dies before the next fsync.
    Visible,
    /// On disk.
    Durable,
}

/// Called on the writer thread as a job is committed: with `Visible` (output chunks only) and
/// then `Durable`, or once with an error. It must not block: it sends a message and returns.
pub type Done = Box<dyn FnMut(Result<Committed, StoreError>) + Send>;

struct Job {
    op: WriteOp,
    done: Option<Done>,
}

/// The handle to the writer thread. Cheap to clone; the thread ends when every handle is gone.
#[derive(Clone)]
pub struct StoreWriter {
    tx: mpsc::Sender<Job>,
}

impl StoreWriter {
    /// Starts the writer thread.
    pub fn start(store: Store) -> std::io::Result<(Self, thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel::<Job>();
        let handle = thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_loop(&store, &rx))?;
        Ok((Self { tx }, handle))
    }

    /// Submits a change; `done` hears how far it got.
    pub fn submit(&self, op: WriteOp, done: Option<Done>) -> Result<(), StoreError> {
        self.tx
            .send(Job { op, done })
            .map_err(|_| StoreError::Closed)
    }

    /// Writes a run's record durably and returns once it is on disk.
    pub async fn put_run(&self, record: &RunRecord) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        let mut tx = Some(tx);
        let done: Done = Box::new(move |r| {
            if let Some(tx) = tx.take() {
                let _ = tx.send(r.map(|_| ()));
            }
        });
        self.submit(WriteOp::PutRun(Box::new(record.clone())), Some(done))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn write_loop(store: &Store, rx: &mpsc::Receiver<Job>) {
    // Jobs committed without an fsync, waiting for the next durable commit.
    let mut waiting: Vec<Done> = Vec::new();
    let mut last_durable = Instant::now();
    loop {
        let first = if waiting.is_empty() {
            match rx.recv() {
                Ok(job) => Some(job),
                Err(_) => return,
            }
        } else {
            match rx.recv_timeout(DURABLE_EVERY.saturating_sub(last_durable.elapsed())) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    // Shutting down: make what is waiting durable, then stop.
                    let result = commit(store, &[], Durability::Immediate);
                    finish(&mut waiting, &result, Committed::Durable);
                    return;
                }
            }
        };
        let mut jobs = Vec::new();
        let mut bytes = 0;
        if let Some(job) = first {
            bytes += job.op.bytes();
            jobs.push(job);
            while jobs.len() < MAX_JOBS_PER_COMMIT && bytes < MAX_BYTES_PER_COMMIT {
                match rx.try_recv() {
                    Ok(job) => {
                        bytes += job.op.bytes();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
        }
        let durable = jobs.iter().any(|j| j.op.needs_fsync())
            || last_durable.elapsed() >= DURABLE_EVERY
            || jobs.is_empty();
        let durability = if durable {
            Durability::Immediate
        } else {
            Durability::None
        };
        let result = commit(store, &jobs, durability);
        if let Err(e) = &result {
            tracing::error!(error = %e, jobs = jobs.len(), "a store commit failed");
        }
        let mut dones: Vec<Done> = jobs.into_iter().filter_map(|j| j.done).collect();
        if durable {
            last_durable = Instant::now();
            finish(&mut waiting, &result, Committed::Durable);
            finish(&mut dones, &result, Committed::Durable);
        } else if result.is_ok() {
            for done in &mut dones {
                done(Ok(Committed::Visible));
            }
            waiting.append(&mut dones);
        } else {
            finish(&mut dones, &result, Committed::Visible);
        }
    }
}

/// Tells each waiter how its job went, and forgets the waiters.
fn finish(dones: &mut Vec<Done>, result: &Result<(), StoreError>, level: Committed) {
    for mut done in dones.drain(..) {
        done(match result {
            Ok(()) => Ok(level),
            Err(e) => Err(StoreError::CommitFailed(e.to_string())),
        });
    }
}

fn commit(store: &Store, jobs: &[Job], durability: Durability) -> Result<(), StoreError> {
    let mut txn = store.db().begin_write()?;
    txn.set_durability(durability)
        .map_err(|e| StoreError::CommitFailed(e.to_string()))?;
    {
        let mut runs = txn.open_table(RUNS)?;
        let mut log = txn.open_table(RUN_LOG)?;
        for job in jobs {
            match &job.op {
                WriteOp::PutRun(rec) => {
                    let key = rec.id.to_string();
                    runs.insert(key.as_str(), rec.encode().as_slice())?;
                }
                WriteOp::AppendLog { run, chunk } => {
                    let key = run.to_string();
                    log.insert((key.as_str(), chunk.seq), chunk.encode_value().as_slice())?;
                }
            }
        }
    }
    txn.commit()?;
    Ok(())
}
