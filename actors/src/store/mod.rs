//! The store: the redb file `bosun.redb`, opened by `bosund` alone, and each run's output in an
//! append-only file of its own (`runs/<run-id>/log`, see [`logfile`]).
//!
//! Reads go through [`Store`] from blocking threads. Every write goes through the one
//! [`writer::StoreWriter`] thread, which commits in groups: whatever arrived while the previous
//! commit was being made goes into the next one.

pub mod logfile;
mod record;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_shared::run::Stream;
use bosun_shared::{ChatId, RunId, ServerId, Timestamp};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use crate::board::record::{self as board_record, BoardMeta, CardRecord, ColumnRecord, NoteRecord};
use crate::lead::record::{ChatRecord, MessageRecord, PendingRecord};

pub use record::{ProcessInfo, RunRecord};

use crate::agents::record::AgentRecord;
use crate::auth::record::SignInRecord;
use crate::mcp::record::ServerRecord;

/// The schema this build reads and writes.
pub const SCHEMA_VERSION: u64 = 1;

pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(crate) const RUNS: TableDefinition<&str, &[u8]> = TableDefinition::new("runs");
pub(crate) const SERVERS: TableDefinition<&str, &[u8]> = TableDefinition::new("servers");
pub(crate) const AGENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("agents");
pub(crate) const OAUTH: TableDefinition<&str, &[u8]> = TableDefinition::new("oauth");
/// The board as stored: its settings (none before its first start), columns and cards.
pub type StoredBoard = (Option<BoardMeta>, Vec<ColumnRecord>, Vec<CardRecord>);

pub(crate) const COLUMNS: TableDefinition<&str, &[u8]> = TableDefinition::new("columns");
pub(crate) const CARDS: TableDefinition<&str, &[u8]> = TableDefinition::new("cards");
pub(crate) const NOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("notes");
pub(crate) const CHATS: TableDefinition<&str, &[u8]> = TableDefinition::new("chats");
pub(crate) const MESSAGES: TableDefinition<&str, &[u8]> = TableDefinition::new("messages");
pub(crate) const PENDING: TableDefinition<&str, &[u8]> = TableDefinition::new("pending");

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another daemon holds the file. Returned by [`Store::open`]; not retryable until it exits.
    #[error("another bosund is already running on this state directory")]
    AlreadyOpen,
    /// The file was written by a newer bosun. Returned by [`Store::open`].
    #[error(
        "the store was written by a newer bosun (schema {found}, this one reads {SCHEMA_VERSION}); run the newer bosun"
    )]
    NewerSchema { found: u64 },
    /// A record could not be read back. Means corruption or a bug; not retryable.
    #[error("a stored record is not readable: {0}")]
    Corrupt(String),
    /// redb failed (I/O, full disk). Retrying may help once the cause is fixed.
    #[error("the store failed: {0}")]
    Db(#[from] redb::Error),
    /// A run's log file could not be written or read (full disk, I/O error).
    #[error("a run's log file failed: {0}")]
    LogFile(#[from] std::io::Error),
    /// A group commit failed (full disk, I/O error); none of its changes were written. Retrying
    /// may help once the cause is fixed.
    #[error("could not save to the store: {0}")]
    CommitFailed(String),
    /// The writer thread is gone (the daemon is shutting down).
    #[error("the store is closed")]
    Closed,
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { StoreError::Db(e.into()) }
        }
    )*};
}
from_redb!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// A chunk of a run's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogChunk {
    pub seq: u64,
    pub stream: Stream,
    pub at: Timestamp,
    pub data: Vec<u8>,
}

/// The daemon's handle on the store, for reads. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<Database>,
    runs_dir: PathBuf,
}

impl Store {
    /// Opens (or creates) the store, refusing a file held by another daemon or written by a newer
    /// bosun, and creates every table so reads never meet a missing one. Run directories (and
    /// their log files) are under `runs_dir`.
    pub fn open(path: &Path, runs_dir: &Path) -> Result<Self, StoreError> {
        let db = match Database::create(path) {
            Ok(db) => db,
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(StoreError::AlreadyOpen),
            Err(e) => return Err(StoreError::Db(e.into())),
        };
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
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
                Some(v) if v > SCHEMA_VERSION => return Err(StoreError::NewerSchema { found: v }),
                Some(_) => {}
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION.to_be_bytes().as_slice())?;
                }
            }
            txn.open_table(RUNS)?;
            txn.open_table(SERVERS)?;
            txn.open_table(AGENTS)?;
            txn.open_table(OAUTH)?;
            txn.open_table(COLUMNS)?;
            txn.open_table(CARDS)?;
            txn.open_table(NOTES)?;
            txn.open_table(CHATS)?;
            txn.open_table(MESSAGES)?;
            txn.open_table(PENDING)?;
        }
        txn.commit()?;
        Ok(Self {
            db: Arc::new(db),
            runs_dir: runs_dir.to_path_buf(),
        })
    }

    pub(crate) fn db(&self) -> &Database {
        &self.db
    }

    /// The log file of a run.
    pub fn log_path(&self, id: RunId) -> PathBuf {
        self.runs_dir.join(id.to_string()).join("log")
    }

    /// One run's record.
    pub fn run(&self, id: RunId) -> Result<Option<RunRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(RUNS)?;
        let key = id.to_string();
        let Some(v) = table.get(key.as_str())? else {
            return Ok(None);
        };
        RunRecord::decode(v.value()).map(Some)
    }

    /// Every run record, in id order.
    pub fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(RUNS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, v) = entry?;
            out.push(RunRecord::decode(v.value())?);
        }
        Ok(out)
    }

    /// The ids of runs whose id starts with `prefix`, at most `limit` of them.
    pub fn run_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<RunId>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(RUNS)?;
        let mut out = Vec::new();
        for entry in table.range(prefix..)? {
            let (k, _) = entry?;
            let key = k.value();
            if !key.starts_with(prefix) || out.len() >= limit {
                break;
            }
            if let Ok(id) = key.parse() {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Every MCP server, in name order.
    pub fn servers(&self) -> Result<Vec<ServerRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(SERVERS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, v) = entry?;
            out.push(ServerRecord::decode(v.value())?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The server with this name, or whose id is this (or starts with it, when only one does).
    pub fn find_server(&self, name_or_id: &str) -> Result<Option<ServerRecord>, StoreError> {
        let servers = self.servers()?;
        if let Some(s) = servers.iter().find(|s| s.name == name_or_id) {
            return Ok(Some(s.clone()));
        }
        let lower = name_or_id.to_ascii_lowercase();
        let mut by_id = servers
            .into_iter()
            .filter(|s| s.id.to_string().starts_with(&lower));
        match (by_id.next(), by_id.next()) {
            (Some(s), None) if lower.len() >= 4 => Ok(Some(s)),
            (Some(_), _) | (None, _) => Ok(None),
        }
    }

    /// Every agent, in name order.
    pub fn agents(&self) -> Result<Vec<AgentRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(AGENTS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, v) = entry?;
            out.push(AgentRecord::decode(v.value())?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The agent with this name, or whose id starts with this (when only one does).
    pub fn find_agent(&self, name_or_id: &str) -> Result<Option<AgentRecord>, StoreError> {
        let agents = self.agents()?;
        if let Some(a) = agents.iter().find(|a| a.name == name_or_id) {
            return Ok(Some(a.clone()));
        }
        let lower = name_or_id.to_ascii_lowercase();
        let mut by_id = agents
            .into_iter()
            .filter(|a| a.id.to_string().starts_with(&lower));
        match (by_id.next(), by_id.next()) {
            (Some(a), None) if lower.len() >= 4 => Ok(Some(a)),
            (Some(_), _) | (None, _) => Ok(None),
        }
    }

    /// Every sign-in to an MCP server.
    pub fn sign_ins(&self) -> Result<Vec<SignInRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(OAUTH)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, v) = entry?;
            out.push(SignInRecord::decode(v.value())?);
        }
        Ok(out)
    }

    /// The sign-in to one server, if there is one.
    pub fn sign_in(&self, server: ServerId) -> Result<Option<SignInRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(OAUTH)?;
        let key = server.to_string();
        table
            .get(key.as_str())?
            .map(|v| SignInRecord::decode(v.value()))
            .transpose()
    }

    /// The board: its settings (none before the first start), columns and cards.
    pub fn board(&self) -> Result<StoredBoard, StoreError> {
        let txn = self.db.begin_read()?;
        let meta = txn
            .open_table(META)?
            .get("board")?
            .map(|v| board_record::decode("board", v.value()))
            .transpose()?;
        let mut columns = Vec::new();
        for entry in txn.open_table(COLUMNS)?.iter()? {
            let (_, v) = entry?;
            columns.push(board_record::decode::<ColumnRecord>("column", v.value())?);
        }
        let mut cards = Vec::new();
        for entry in txn.open_table(CARDS)?.iter()? {
            let (_, v) = entry?;
            cards.push(board_record::decode::<CardRecord>("card", v.value())?);
        }
        Ok((meta, columns, cards))
    }

    /// Every memory note, in path order.
    pub fn notes(&self) -> Result<Vec<NoteRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let mut out = Vec::new();
        for entry in txn.open_table(NOTES)?.iter()? {
            let (_, v) = entry?;
            out.push(board_record::decode::<NoteRecord>("note", v.value())?);
        }
        Ok(out)
    }

    /// One memory note.
    pub fn note(&self, path: &str) -> Result<Option<NoteRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        txn.open_table(NOTES)?
            .get(path)?
            .map(|v| board_record::decode("note", v.value()))
            .transpose()
    }

    /// Every chat and every pending action (decided or not).
    pub fn chats(&self) -> Result<(Vec<ChatRecord>, Vec<PendingRecord>), StoreError> {
        let txn = self.db.begin_read()?;
        let mut chats = Vec::new();
        for entry in txn.open_table(CHATS)?.iter()? {
            let (_, v) = entry?;
            chats.push(board_record::decode::<ChatRecord>("chat", v.value())?);
        }
        let mut pending = Vec::new();
        for entry in txn.open_table(PENDING)?.iter()? {
            let (_, v) = entry?;
            pending.push(board_record::decode::<PendingRecord>(
                "pending action",
                v.value(),
            )?);
        }
        Ok((chats, pending))
    }

    /// A chat's messages, in order.
    pub fn messages(&self, chat: ChatId) -> Result<Vec<MessageRecord>, StoreError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(MESSAGES)?;
        let (from, to) = (
            MessageRecord::key(chat, 0),
            MessageRecord::key(chat, u64::MAX / 2),
        );
        let mut out = Vec::new();
        for entry in table.range(from.as_str()..to.as_str())? {
            let (_, v) = entry?;
            out.push(board_record::decode::<MessageRecord>("message", v.value())?);
        }
        Ok(out)
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
