//! The store's one writer: a thread that commits in groups.
//!
//! Jobs queue up while a commit is being made; the next commit takes all of them (up to a bound)
//! in one durable transaction, then tells each job's waiter. A waiter is told only after the
//! fsync, so "committed" always means "survives a crash". Jobs are applied in the order they
//! were submitted, so a run's final state, submitted after its last log chunk, is never
//! committed before it.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use bosun_shared::RunId;
use redb::Durability;
use tokio::sync::oneshot;

use super::{LogChunk, RUN_LOG, RUNS, RunRecord, Store, StoreError};

/// The most jobs in one commit.
const MAX_JOBS_PER_COMMIT: usize = 8192;
/// About the most log bytes in one commit.
const MAX_BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;

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
}

/// Called on the writer thread once a job is committed (or failed). It must not block: it
/// sends a message and returns.
pub type Done = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

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

    /// Submits a change; `done` is told once it is durable.
    pub fn submit(&self, op: WriteOp, done: Option<Done>) -> Result<(), StoreError> {
        self.tx
            .send(Job { op, done })
            .map_err(|_| StoreError::Closed)
    }

    /// Writes a run's record durably and returns once it is committed.
    pub async fn put_run(&self, record: &RunRecord) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        let done: Done = Box::new(move |r| {
            let _ = tx.send(r);
        });
        self.submit(WriteOp::PutRun(Box::new(record.clone())), Some(done))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn write_loop(store: &Store, rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
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
        let result = commit(store, &jobs);
        if let Err(e) = &result {
            tracing::error!(error = %e, jobs = jobs.len(), "a store commit failed");
        }
        for job in jobs {
            if let Some(done) = job.done {
                done(match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(StoreError::CommitFailed(e.to_string())),
                });
            }
        }
    }
}

fn commit(store: &Store, jobs: &[Job]) -> Result<(), StoreError> {
    let mut txn = store.db().begin_write()?;
    txn.set_durability(Durability::Immediate)
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
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
