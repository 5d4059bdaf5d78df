//! Following a run's log: replay from the store, then live from the run's hub, with no gap and
//! no duplicate, for any number of followers at once.
//!
//! A follower keeps one position (the next seq to send). While that position is in the hub's
//! memory it is served from there; otherwise from the run's log file, read on from where it last
//! stopped. A follower that falls out of memory because it is slow is told so (`LogLagged`) and
//! goes on from the file at its position, so it never loses a chunk, and the run never waits for
//! it.

use std::sync::Arc;

use bosun_shared::RunId;
use bosun_shared::protocol::fast;
use bosun_shared::protocol::ui::{Event, Outbound, ServerFrame};
use bosun_shared::run::Stream;
use tokio::sync::mpsc;

use super::log_hub::LogHub;
use crate::store::logfile::LogReader;
use crate::store::{LogChunk, Store, StoreError};

const STORE_BATCH_CHUNKS: usize = 256;
const STORE_BATCH_BYTES: usize = 4 * 1024 * 1024;
const HUB_BATCH_CHUNKS: usize = 256;

/// What to follow.
#[derive(Clone, Copy, Debug)]
pub struct FollowSpec {
    pub sub: u64,
    pub run: RunId,
    pub from_seq: u64,
    /// Keep going until the run ends; otherwise stop at what has arrived now.
    pub follow: bool,
    pub stream: Option<Stream>,
}

/// Reads a run's log file on from where it stopped.
struct FileCursor {
    store: Store,
    run: RunId,
    reader: Option<LogReader>,
}

impl FileCursor {
    /// Up to a batch of chunks from `next` to `upto`, from the file.
    async fn read(&mut self, next: u64, upto: u64) -> Result<Vec<LogChunk>, StoreError> {
        let path = self.store.log_path(self.run);
        let mut reader = self.reader.take();
        let (reader, chunks) = tokio::task::spawn_blocking(move || {
            if reader.is_none() {
                reader = LogReader::open(&path)?;
            }
            let mut chunks = Vec::new();
            if let Some(r) = reader.as_mut() {
                r.skip_to(next)?;
                let mut bytes = 0;
                while chunks.len() < STORE_BATCH_CHUNKS && bytes < STORE_BATCH_BYTES {
                    match r.next(true)? {
                        Some(c) if c.seq <= upto => {
                            bytes += c.data.len();
                            chunks.push(c);
                        }
                        Some(_) | None => break,
                    }
                }
            }
            Ok::<_, StoreError>((reader, chunks))
        })
        .await
        .map_err(|e| StoreError::Corrupt(format!("a log read was cut off: {e}")))??;
        self.reader = reader;
        Ok(chunks)
    }
}

/// Sends the log to `out` as `Log` events, then a `LogEnd`. Returns when done, or when the
/// receiver is gone.
pub async fn follow(
    store: Store,
    hub: Option<Arc<LogHub>>,
    spec: FollowSpec,
    out: mpsc::Sender<Outbound>,
) -> Result<(), StoreError> {
    let mut next = spec.from_seq.max(1);
    let mut file = FileCursor {
        store: store.clone(),
        run: spec.run,
        reader: None,
    };
    match hub {
        None => {
            // The run is over: everything is in its file.
            if !send_from_file(&mut file, &spec, &mut next, u64::MAX, &out).await? {
                return Ok(());
            }
        }
        Some(hub) => {
            let mut watch = hub.subscribe();
            let target = hub.state().received;
            let mut served_live = false;
            loop {
                let state = *watch.borrow_and_update();
                let upto = if spec.follow { state.received } else { target };
                while next <= upto {
                    match hub.read_from(next, HUB_BATCH_CHUNKS) {
                        Some(chunks) if !chunks.is_empty() => {
                            served_live = true;
                            for c in chunks.iter().take_while(|c| c.seq <= upto) {
                                if !send_chunk(&spec, c, &out).await {
                                    return Ok(());
                                }
                                next = c.seq + 1;
                            }
                        }
                        Some(_) | None => {
                            if served_live {
                                let lagged = Event::LogLagged {
                                    sub: spec.sub,
                                    resume_from: next,
                                };
                                if out.send(ServerFrame::Event(lagged).into()).await.is_err() {
                                    return Ok(());
                                }
                                served_live = false;
                            }
                            // Not in memory means in the file (see the hub's invariant).
                            let stored_upto = upto.min(hub.state().stored);
                            let before = next;
                            if !send_from_file(&mut file, &spec, &mut next, stored_upto, &out)
                                .await?
                            {
                                return Ok(());
                            }
                            if next == before {
                                // Nothing to read yet: wait for the hub to move.
                                break;
                            }
                        }
                    }
                }
                if !spec.follow || state.ended {
                    break;
                }
                if watch.changed().await.is_err() {
                    break;
                }
            }
        }
    }
    let run = spec.run;
    let view = blocking(&store, move |s| s.run(run)).await?;
    if let Some(rec) = view {
        let end = Event::LogEnd {
            sub: spec.sub,
            last_seq: next - 1,
            run: Box::new(rec.view(next - 1)),
        };
        let _ = out.send(ServerFrame::Event(end).into()).await;
    }
    Ok(())
}

/// Sends chunks `next..=upto` from the file, as far as the file has them. False when the
/// receiver is gone.
async fn send_from_file(
    file: &mut FileCursor,
    spec: &FollowSpec,
    next: &mut u64,
    upto: u64,
    out: &mpsc::Sender<Outbound>,
) -> Result<bool, StoreError> {
    while *next <= upto {
        let chunks = file.read(*next, upto).await?;
        let Some(last) = chunks.last().map(|c| c.seq) else {
            break;
        };
        for c in &chunks {
            if !send_chunk(spec, c, out).await {
                return Ok(false);
            }
        }
        *next = last + 1;
    }
    Ok(true)
}

async fn send_chunk(spec: &FollowSpec, c: &LogChunk, out: &mpsc::Sender<Outbound>) -> bool {
    if spec.stream.is_some_and(|s| s != c.stream) {
        return true;
    }
    let frame = fast::log_event_frame(spec.sub, c.seq, c.stream, c.at, &c.data);
    out.send(Outbound::Encoded(frame)).await.is_ok()
}

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
