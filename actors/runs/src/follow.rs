//! Following a run's log: replay from the store, then live from the run's hub, with no gap and
//! no duplicate, for any number of followers at once.
//!
//! A follower keeps one position, the next seq to send ([`Follower::next`]). **Invariant:** the
//! position moves only by handing out exactly the chunk at it, one seq at a time
//! ([`Follower::take`]); a source that offers anything else (a later seq, because memory or the
//! file does not have `next` at the moment) is waited on or read again, never skipped past.
//!
//! Where `next` comes from: the hub's memory while it is there; otherwise the run's log file,
//! but only up to what the hub says is stored (a chunk leaves memory only once stored, so
//! whatever is not in memory and not yet stored has not arrived). A follower that falls out of
//! memory because it is slow is told so (`LogLagged`) and goes on from the file at its
//! position, so it never loses a chunk, and the run never waits for it.
//!
//! The decisions are made by [`Follower::plan`], a plain function of the hub's state, so that
//! a test can drive it through any interleaving of writes, evictions and slow reads; [`follow`]
//! only carries them out (handing out, reading the file on a blocking thread, waiting for the
//! hub). What it hands out are [`LogItem`]s, to a [`LogSink`] of the caller's: the session
//! that asked turns each into its frame, so this area knows nothing of the wire.

use crate::record::RunReads;
use std::borrow::Borrow;
use std::sync::Arc;

use bosun_shared::RunId;
use bosun_shared::run::Stream;

use super::log_hub::LogHub;
use crate::record::RunRecord;
use bosun_store::logfile::LogReader;
use bosun_store::{LogChunk, Store, StoreError};

const STORE_BATCH_CHUNKS: usize = 256;
const STORE_BATCH_BYTES: usize = 4 * 1024 * 1024;
const HUB_BATCH_CHUNKS: usize = 256;

/// What to follow.
#[derive(Clone, Copy, Debug)]
pub struct FollowSpec {
    pub run: RunId,
    pub from_seq: u64,
    /// Keep going until the run ends; otherwise stop at what has arrived now.
    pub follow: bool,
    pub stream: Option<Stream>,
    /// The subscriber reads the log file itself: it is told how far the file goes
    /// ([`LogItem::Progress`]), not handed the chunks.
    pub direct: bool,
}

/// What a follower hands its subscriber, in order.
pub enum LogItem {
    /// The next chunk of output (of the stream asked for), as memory holds it.
    Chunk(Arc<LogChunk>),
    /// The follower fell behind live output and goes on from the log file at `resume_from`;
    /// nothing is lost.
    Lagged { resume_from: u64 },
    /// For a direct subscriber: the log file holds every chunk up to `upto`.
    Progress { upto: u64 },
    /// Everything up to `last_seq` was handed out: the last item, with the run as it stands.
    End { last_seq: u64, run: Box<RunRecord> },
    /// The log could not be followed past `last_seq`, and why: the last item.
    Failed { last_seq: u64, message: String },
}

/// Where a follower's items go (for bosund, a session's frames to its UI).
pub trait LogSink: Send + Sync {
    /// Hands one item on, waiting while the subscriber is behind; false when it is gone.
    fn send(&self, item: LogItem) -> impl Future<Output = bool> + Send;
}

/// One follower's position in a run's log.
#[derive(Debug)]
pub struct Follower {
    next: u64,
    /// The last chunks came from memory: falling back to the file is a lag to report.
    live: bool,
}

/// What a follower does next.
pub enum Plan {
    /// Send these chunks, taken from the hub's memory (the first is `next`).
    Memory(Vec<Arc<LogChunk>>),
    /// Tell the subscriber it fell behind live output and goes on from the file at this seq.
    Lagged(u64),
    /// Read `next..=upto` from the log file: every one of them is stored.
    File { upto: u64 },
    /// Everything up to the bound is sent.
    Caught,
    /// `next` has arrived but is neither in memory nor stored yet: wait for the hub to move.
    Wait,
}

impl Follower {
    pub fn new(from_seq: u64) -> Self {
        Self {
            next: from_seq.max(1),
            live: false,
        }
    }

    /// The next seq to send.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Takes from `chunks` the unbroken run that starts at `next` (chunks before `next`, sent
    /// already, are passed over) and moves `next` past it: the chunks to send, in order. A
    /// source whose chunks skip `next` gives `Err(next)`; one with a hole after it gives the
    /// chunks before the hole, and the hole is asked for again.
    pub fn accept<'a, C: Borrow<LogChunk>>(&mut self, chunks: &'a [C]) -> Result<&'a [C], u64> {
        let seq = |c: &C| Borrow::<LogChunk>::borrow(c).seq;
        let start = chunks.partition_point(|c| seq(c) < self.next);
        let run = chunks[start..]
            .iter()
            .zip(self.next..)
            .take_while(|(c, want)| seq(c) == *want)
            .count();
        if run == 0 && !chunks.is_empty() {
            return Err(self.next);
        }
        self.next += run as u64;
        Ok(&chunks[start..start + run])
    }

    /// A direct subscriber was told that the file has every chunk up to `upto` (it reads them
    /// there itself): its position moves past them.
    pub fn told_upto(&mut self, upto: u64) {
        self.next = self.next.max(upto + 1);
    }

    /// What to do to get `next`, when everything up to `upto` is to be sent.
    pub fn plan(&mut self, hub: &LogHub, upto: u64) -> Plan {
        if self.next > upto {
            return Plan::Caught;
        }
        if let Some(mut chunks) = hub.read_from(self.next, HUB_BATCH_CHUNKS) {
            // From `next` on with no seq missing, so the first `upto - next + 1` are the ones
            // up to `upto`.
            chunks.truncate(usize::try_from(upto - self.next + 1).unwrap_or(usize::MAX));
            self.live = true;
            return Plan::Memory(chunks);
        }
        let stored = hub.state().stored.min(upto);
        if self.next > stored {
            return Plan::Wait;
        }
        if std::mem::take(&mut self.live) {
            return Plan::Lagged(self.next);
        }
        Plan::File { upto: stored }
    }
}

/// Reads a run's log file on from where it stopped.
pub struct FileCursor {
    path: std::path::PathBuf,
    reader: Option<LogReader>,
}

impl FileCursor {
    pub fn new(store: &Store, run: RunId) -> Self {
        Self::at(store.log_path(run))
    }

    /// A cursor on the log file at `path`.
    pub fn at(path: std::path::PathBuf) -> Self {
        Self { path, reader: None }
    }

    /// Up to a batch of chunks from `next` on, none past `upto`, as the file has them.
    pub fn read_blocking(&mut self, next: u64, upto: u64) -> Result<Vec<LogChunk>, StoreError> {
        if self.reader.is_none() {
            self.reader = LogReader::open(&self.path)?;
        }
        let mut chunks = Vec::new();
        if let Some(r) = self.reader.as_mut() {
            r.skip_to(next)?;
            let mut bytes = 0;
            while chunks.len() < STORE_BATCH_CHUNKS && bytes < STORE_BATCH_BYTES {
                match r.next_upto(upto, true)? {
                    Some(c) => {
                        bytes += c.data.len();
                        chunks.push(c);
                    }
                    None => break,
                }
            }
        }
        Ok(chunks)
    }

    /// [`Self::read_blocking`] on a blocking thread.
    pub async fn read(&mut self, next: u64, upto: u64) -> Result<Vec<LogChunk>, StoreError> {
        let mut me = Self {
            path: self.path.clone(),
            reader: self.reader.take(),
        };
        let (me, chunks) = tokio::task::spawn_blocking(move || {
            let chunks = me.read_blocking(next, upto);
            (me, chunks)
        })
        .await
        .map_err(|e| StoreError::Corrupt(format!("a log read was cut off: {e}")))?;
        self.reader = me.reader;
        chunks
    }
}

/// The file does not hold a seq that it must: it was damaged or cut under bosund.
fn missing(run: RunId, seq: u64) -> StoreError {
    StoreError::LogDamaged(format!(
        "the log file of run {run} has no chunk {seq}, though it was stored; the log is damaged from there"
    ))
}

/// Hands the log to `out` chunk by chunk, then an [`LogItem::End`] (or a [`LogItem::Failed`]
/// saying why it could not go on). Returns when done, or when the subscriber is gone.
pub async fn follow(
    store: Store,
    hub: Option<Arc<LogHub>>,
    spec: FollowSpec,
    out: impl LogSink,
) -> Result<(), StoreError> {
    let mut f = Follower::new(spec.from_seq);
    let served = if spec.direct {
        serve_direct(&store, hub, &spec, &mut f, &out).await
    } else {
        serve(&store, hub, &spec, &mut f, &out).await
    };
    match served {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(e) => {
            let failed = LogItem::Failed {
                last_seq: f.next() - 1,
                message: e.to_string(),
            };
            out.send(failed).await;
            return Err(e);
        }
    }
    let run = spec.run;
    let last_seq = f.next() - 1;
    let rec = blocking(&store, move |s| s.run(run)).await?;
    if let Some(rec) = rec {
        out.send(LogItem::End {
            last_seq,
            run: Box::new(rec),
        })
        .await;
    }
    Ok(())
}

/// Sends everything up to the end (or, not following, up to what had arrived). False when the
/// receiver is gone.
async fn serve(
    store: &Store,
    hub: Option<Arc<LogHub>>,
    spec: &FollowSpec,
    f: &mut Follower,
    out: &impl LogSink,
) -> Result<bool, StoreError> {
    let mut file = FileCursor::new(store, spec.run);
    let Some(hub) = hub else {
        // The run is over: everything is in its file.
        loop {
            let chunks = shared(file.read(f.next(), u64::MAX).await?);
            if chunks.is_empty() {
                // The file ends here; if the run wrote more, the file lost it (a record that
                // does not check out, or a file cut or deleted): say so, never end quietly.
                let run = spec.run;
                let last = blocking(store, move |s| s.run(run))
                    .await?
                    .map_or(0, |r| r.last_seq);
                if f.next() <= last {
                    return Err(StoreError::LogDamaged(format!(
                        "the log file of run {run} ends after chunk {}, but the run wrote {last}: the rest is damaged or was deleted",
                        f.next() - 1
                    )));
                }
                return Ok(true);
            }
            if !send_taken(f, spec, &chunks, out).await? {
                return Ok(false);
            }
        }
    };
    let mut watch = hub.subscribe();
    let target = hub.state().received;
    loop {
        let state = *watch.borrow_and_update();
        let upto = if spec.follow { state.received } else { target };
        match f.plan(&hub, upto) {
            Plan::Memory(chunks) => {
                if !send_taken(f, spec, &chunks, out).await? {
                    return Ok(false);
                }
            }
            Plan::Lagged(resume_from) => {
                if !out.send(LogItem::Lagged { resume_from }).await {
                    return Ok(false);
                }
            }
            Plan::File { upto } => {
                let chunks = shared(file.read(f.next(), upto).await?);
                if chunks.is_empty() {
                    return Err(missing(spec.run, f.next()));
                }
                if !send_taken(f, spec, &chunks, out).await? {
                    return Ok(false);
                }
            }
            Plan::Caught if !spec.follow || state.ended => return Ok(true),
            Plan::Caught | Plan::Wait => {
                if watch.changed().await.is_err() {
                    return Ok(true);
                }
            }
        }
    }
}

/// Chunks read from the file, in the form memory holds them (sent without a copy).
fn shared(chunks: Vec<LogChunk>) -> Vec<Arc<LogChunk>> {
    chunks.into_iter().map(Arc::new).collect()
}

/// A direct subscription: tells the subscriber how far the log file goes, as it grows, up to the
/// end (or, not following, up to what had arrived). Only what is stored is ever told, so the
/// file has every chunk up to it. False when the receiver is gone.
async fn serve_direct(
    store: &Store,
    hub: Option<Arc<LogHub>>,
    spec: &FollowSpec,
    f: &mut Follower,
    out: &impl LogSink,
) -> Result<bool, StoreError> {
    let tell = |upto: u64| out.send(LogItem::Progress { upto });
    let Some(hub) = hub else {
        // The run is over: its file has everything it wrote.
        let run = spec.run;
        let last = blocking(store, move |s| s.run(run))
            .await?
            .map_or(0, |r| r.last_seq);
        if last >= f.next() {
            if !tell(last).await {
                return Ok(false);
            }
            f.told_upto(last);
        }
        return Ok(true);
    };
    let mut watch = hub.subscribe();
    let target = hub.state().received;
    loop {
        let state = *watch.borrow_and_update();
        let bound = if spec.follow { state.received } else { target };
        let upto = state.stored.min(bound);
        if upto >= f.next() {
            if !tell(upto).await {
                return Ok(false);
            }
            f.told_upto(upto);
        }
        if f.next() > bound && (!spec.follow || state.ended) {
            return Ok(true);
        }
        if watch.changed().await.is_err() {
            return Ok(true);
        }
    }
}

/// Sends the chunks the follower accepts, in order. False when the receiver is gone.
async fn send_taken(
    f: &mut Follower,
    spec: &FollowSpec,
    chunks: &[Arc<LogChunk>],
    out: &impl LogSink,
) -> Result<bool, StoreError> {
    let taken = f.accept(chunks).map_err(|seq| missing(spec.run, seq))?;
    for c in taken {
        if !send_chunk(spec, c, out).await {
            return Ok(false);
        }
    }
    Ok(true)
}

async fn send_chunk(spec: &FollowSpec, c: &Arc<LogChunk>, out: &impl LogSink) -> bool {
    if spec.stream.is_some_and(|s| s != c.stream) {
        return true;
    }
    out.send(LogItem::Chunk(c.clone())).await
}

#[cfg(test)]
mod tests;

/// Runs a store read on a blocking thread.
pub async fn blocking<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|e| StoreError::Corrupt(format!("a store read was cut off: {e}")))?
}
