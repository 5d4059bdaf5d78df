//! The store's one writer: a thread that commits in groups.
//!
//! Jobs queue up while a commit is being made; the next commit takes all of them (up to a bound).
//! Output chunks are appended to their run's log file, one write per run per group, and their
//! waiters are told at once: from then on a crash of bosund cannot lose them. Run records (every
//! state change) go into redb in one durable commit (fsync) before their waiters are told. Jobs
//! are applied in the order they were submitted, so a run's final state, submitted after its
//! last chunk, is never saved before it.
//!
//! Log files are fdatasynced by a second thread, so the disk's pace never holds up a commit:
//! every file written to is synced within [`SYNC_EVERY`], and a run's file once more when the
//! run ends.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use bosun_shared::{AgentId, RunId, ServerId};
use redb::Durability;
use tokio::sync::oneshot;

use super::logfile::LogFile;
use super::{
    AGENTS, CARDS, CHATS, COLUMNS, LogChunk, MESSAGES, META, NOTES, OAUTH, PENDING, RUNS,
    RunRecord, SERVERS, Store, StoreError,
};
use crate::agents::record::AgentRecord;
use crate::auth::record::SignInRecord;
use crate::board::record::{BoardChange, encode};
use crate::lead::record::MessageRecord;
use crate::mcp::record::ServerRecord;

/// The most jobs in one commit.
const MAX_JOBS_PER_COMMIT: usize = 8192;
/// About the most log bytes in one commit.
const MAX_BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;
/// The longest written output waits for its fdatasync.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// One change to the store.
#[derive(Debug)]
pub enum WriteOp {
    PutRun(Box<RunRecord>),
    AppendLog {
        run: RunId,
        chunk: Arc<LogChunk>,
    },
    PutServer(Box<ServerRecord>),
    DeleteServer(ServerId),
    PutAgent(Box<AgentRecord>),
    DeleteAgent(AgentId),
    PutSignIn(Box<SignInRecord>),
    DeleteSignIn(ServerId),
    /// Changes to the board and the notes, committed together.
    Board(Vec<BoardChange>),
}

impl WriteOp {
    fn bytes(&self) -> usize {
        match self {
            WriteOp::PutRun(_)
            | WriteOp::PutServer(_)
            | WriteOp::DeleteServer(_)
            | WriteOp::PutAgent(_)
            | WriteOp::DeleteAgent(_)
            | WriteOp::PutSignIn(_)
            | WriteOp::DeleteSignIn(_) => 512,
            WriteOp::Board(changes) => 512 * changes.len(),
            WriteOp::AppendLog { chunk, .. } => chunk.data.len(),
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
        let handle = thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || {
                Writer {
                    store,
                    logs: HashMap::new(),
                    syncer: sync_tx,
                }
                .run(&rx);
                let _ = syncer.join();
            })?;
        Ok((Self { tx }, handle))
    }

    /// Submits a change; `done` hears when it is saved.
    pub fn submit(&self, op: WriteOp, done: Option<Done>) -> Result<(), StoreError> {
        self.tx
            .send(Job { op, done })
            .map_err(|_| StoreError::Closed)
    }

    /// Writes a run's record durably and returns once it is on disk.
    pub async fn put_run(&self, record: &RunRecord) -> Result<(), StoreError> {
        self.durably(WriteOp::PutRun(Box::new(record.clone())))
            .await
    }

    /// Writes a server's record durably and returns once it is on disk.
    pub async fn put_server(&self, record: &ServerRecord) -> Result<(), StoreError> {
        self.durably(WriteOp::PutServer(Box::new(record.clone())))
            .await
    }

    /// Deletes a server's record durably.
    pub async fn delete_server(&self, id: ServerId) -> Result<(), StoreError> {
        self.durably(WriteOp::DeleteServer(id)).await
    }

    /// Commits changes to the board and the notes together, durably.
    pub async fn board(&self, changes: Vec<BoardChange>) -> Result<(), StoreError> {
        self.durably(WriteOp::Board(changes)).await
    }

    /// Writes an agent's record durably.
    pub async fn put_agent(&self, record: &AgentRecord) -> Result<(), StoreError> {
        self.durably(WriteOp::PutAgent(Box::new(record.clone())))
            .await
    }

    /// Deletes an agent's record durably.
    pub async fn delete_agent(&self, id: AgentId) -> Result<(), StoreError> {
        self.durably(WriteOp::DeleteAgent(id)).await
    }

    /// Writes a sign-in's record durably.
    pub async fn put_sign_in(&self, record: &SignInRecord) -> Result<(), StoreError> {
        self.durably(WriteOp::PutSignIn(Box::new(record.clone())))
            .await
    }

    /// Deletes a sign-in's record durably.
    pub async fn delete_sign_in(&self, server: ServerId) -> Result<(), StoreError> {
        self.durably(WriteOp::DeleteSignIn(server)).await
    }

    async fn durably(&self, op: WriteOp) -> Result<(), StoreError> {
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
}

impl Writer {
    fn run(mut self, rx: &mpsc::Receiver<Job>) {
        let mut last_sync = Instant::now();
        loop {
            let first = match rx.recv_timeout(SYNC_EVERY) {
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
        let mut by_run: HashMap<RunId, Vec<Arc<LogChunk>>> = HashMap::new();
        let mut records = Vec::new();
        for job in &jobs {
            match &job.op {
                WriteOp::AppendLog { run, chunk } => {
                    by_run.entry(*run).or_default().push(chunk.clone());
                }
                WriteOp::PutRun(_)
                | WriteOp::PutServer(_)
                | WriteOp::DeleteServer(_)
                | WriteOp::PutAgent(_)
                | WriteOp::DeleteAgent(_)
                | WriteOp::PutSignIn(_)
                | WriteOp::DeleteSignIn(_)
                | WriteOp::Board(_) => {
                    records.push(&job.op);
                }
            }
        }
        let mut failed_runs: HashMap<RunId, String> = HashMap::new();
        for (run, chunks) in by_run {
            if let Err(e) = self.append(run, &chunks) {
                tracing::error!(run_id = %run, error = %e, "could not write a run's output");
                failed_runs.insert(run, e.to_string());
            }
        }
        let commit = if records.is_empty() {
            Ok(())
        } else {
            self.commit(&records)
        };
        if let Err(e) = &commit {
            tracing::error!(error = %e, "a store commit failed");
        }
        // A run that ended has written its last output: its file goes to disk and is closed.
        if commit.is_ok() {
            for op in &records {
                if let WriteOp::PutRun(rec) = op
                    && rec.state.is_final()
                    && let Some(mut log) = self.logs.remove(&rec.id)
                    && let Ok(Some(file)) = log.take_dirty()
                {
                    let _ = self.syncer.send(file);
                }
            }
        }
        for job in jobs {
            let Some(done) = job.done else { continue };
            let result = match &job.op {
                WriteOp::AppendLog { run, .. } => match failed_runs.get(run) {
                    Some(e) => Err(StoreError::CommitFailed(e.clone())),
                    None => Ok(()),
                },
                WriteOp::PutRun(_)
                | WriteOp::PutServer(_)
                | WriteOp::DeleteServer(_)
                | WriteOp::PutAgent(_)
                | WriteOp::DeleteAgent(_)
                | WriteOp::PutSignIn(_)
                | WriteOp::DeleteSignIn(_)
                | WriteOp::Board(_) => match &commit {
                    Ok(()) => Ok(()),
                    Err(e) => Err(StoreError::CommitFailed(e.to_string())),
                },
            };
            done(result);
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

    fn commit(&self, ops: &[&WriteOp]) -> Result<(), StoreError> {
        let mut txn = self.store.db().begin_write()?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| StoreError::CommitFailed(e.to_string()))?;
        {
            let mut runs = txn.open_table(RUNS)?;
            let mut servers = txn.open_table(SERVERS)?;
            let mut agents = txn.open_table(AGENTS)?;
            let mut oauth = txn.open_table(OAUTH)?;
            let mut meta = txn.open_table(META)?;
            let mut columns = txn.open_table(COLUMNS)?;
            let mut cards = txn.open_table(CARDS)?;
            let mut notes = txn.open_table(NOTES)?;
            let mut chats = txn.open_table(CHATS)?;
            let mut messages = txn.open_table(MESSAGES)?;
            let mut pending = txn.open_table(PENDING)?;
            for op in ops {
                match op {
                    WriteOp::PutRun(rec) => {
                        let key = rec.id.to_string();
                        runs.insert(key.as_str(), rec.encode().as_slice())?;
                    }
                    WriteOp::PutServer(rec) => {
                        let key = rec.id.to_string();
                        servers.insert(key.as_str(), rec.encode().as_slice())?;
                    }
                    WriteOp::DeleteServer(id) => {
                        let key = id.to_string();
                        servers.remove(key.as_str())?;
                    }
                    WriteOp::PutAgent(rec) => {
                        let key = rec.id.to_string();
                        agents.insert(key.as_str(), rec.encode().as_slice())?;
                    }
                    WriteOp::DeleteAgent(id) => {
                        let key = id.to_string();
                        agents.remove(key.as_str())?;
                    }
                    WriteOp::PutSignIn(rec) => {
                        let key = rec.server.to_string();
                        oauth.insert(key.as_str(), rec.encode().as_slice())?;
                    }
                    WriteOp::DeleteSignIn(id) => {
                        let key = id.to_string();
                        oauth.remove(key.as_str())?;
                    }
                    WriteOp::Board(changes) => {
                        for change in changes {
                            match change {
                                BoardChange::Meta(m) => {
                                    meta.insert("board", encode(m).as_slice())?;
                                }
                                BoardChange::Column(c) => {
                                    let key = c.id.to_string();
                                    columns.insert(key.as_str(), encode(c).as_slice())?;
                                }
                                BoardChange::Card(c) => {
                                    let key = c.id.to_string();
                                    cards.insert(key.as_str(), encode(c.as_ref()).as_slice())?;
                                }
                                BoardChange::Note(n) => {
                                    notes.insert(n.path.as_str(), encode(n).as_slice())?;
                                }
                                BoardChange::DeleteNote(path) => {
                                    notes.remove(path.as_str())?;
                                }
                                BoardChange::Chat(c) => {
                                    let key = c.id.to_string();
                                    chats.insert(key.as_str(), encode(c.as_ref()).as_slice())?;
                                }
                                BoardChange::Message(m) => {
                                    let key = MessageRecord::key(m.chat, m.n);
                                    messages.insert(key.as_str(), encode(m.as_ref()).as_slice())?;
                                }
                                BoardChange::Pending(p) => {
                                    let key = p.id.to_string();
                                    pending.insert(key.as_str(), encode(p.as_ref()).as_slice())?;
                                }
                            }
                        }
                    }
                    WriteOp::AppendLog { .. } => {}
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
