//! A live run's log as its followers see it: the recently committed chunks in memory, and a
//! watch of how far the log is committed and whether the run is over.
//!
//! Only committed chunks enter the hub, so what a follower is sent is always in the store too.
//! A follower reads from the hub while its position is still in memory and from the store
//! otherwise; either way it never misses a chunk, never gets one twice, and never slows the
//! run down (the run does not wait for followers).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::store::LogChunk;

/// Committed bytes kept in memory per live run.
const RING_BYTES: usize = 2 * 1024 * 1024;

/// How far a run's log is committed, and whether the run is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HubState {
    pub committed: u64,
    pub ended: bool,
}

pub struct LogHub {
    ring: Mutex<Ring>,
    state: watch::Sender<HubState>,
}

#[derive(Default)]
struct Ring {
    chunks: VecDeque<Arc<LogChunk>>,
    bytes: usize,
}

impl LogHub {
    pub fn new(committed: u64) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(Ring::default()),
            state: watch::Sender::new(HubState {
                committed,
                ended: false,
            }),
        })
    }

    pub fn state(&self) -> HubState {
        *self.state.borrow()
    }

    pub fn subscribe(&self) -> watch::Receiver<HubState> {
        self.state.subscribe()
    }

    /// Adds chunks that are now committed, in seq order, and wakes the followers.
    pub fn committed(&self, chunks: impl IntoIterator<Item = Arc<LogChunk>>) {
        let mut last = None;
        if let Ok(mut ring) = self.ring.lock() {
            for chunk in chunks {
                last = Some(chunk.seq);
                ring.bytes += chunk.data.len();
                ring.chunks.push_back(chunk);
            }
            while ring.bytes > RING_BYTES && ring.chunks.len() > 1 {
                if let Some(old) = ring.chunks.pop_front() {
                    ring.bytes -= old.data.len();
                }
            }
        }
        if let Some(seq) = last {
            self.state
                .send_modify(|s| s.committed = s.committed.max(seq));
        }
    }

    /// Marks the run over: followers finish once they have everything up to `committed`.
    pub fn end(&self) {
        self.state.send_modify(|s| s.ended = true);
    }

    /// Chunks from `from_seq` on, up to `max`, if `from_seq` is still in memory. `None` means
    /// the follower must read from the store.
    pub fn read_from(&self, from_seq: u64, max: usize) -> Option<Vec<Arc<LogChunk>>> {
        let ring = self.ring.lock().ok()?;
        let first = ring.chunks.front()?.seq;
        if from_seq < first {
            return None;
        }
        let start = ring.chunks.partition_point(|c| c.seq < from_seq);
        Some(ring.chunks.range(start..).take(max).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::Timestamp;
    use bosun_shared::run::Stream;

    fn chunk(seq: u64, len: usize) -> Arc<LogChunk> {
        Arc::new(LogChunk {
            seq,
            stream: Stream::Stdout,
            at: Timestamp::now(),
            data: vec![b'x'; len],
        })
    }

    #[test]
    fn the_ring_keeps_the_newest_chunks_and_sends_old_positions_to_the_store() {
        let hub = LogHub::new(0);
        hub.committed((1..=3).map(|s| chunk(s, 1024 * 1024)));
        assert_eq!(hub.state().committed, 3);
        assert!(hub.read_from(1, 10).is_none(), "seq 1 fell out of memory");
        let got: Vec<u64> = hub
            .read_from(2, 10)
            .unwrap_or_default()
            .iter()
            .map(|c| c.seq)
            .collect();
        assert_eq!(got, vec![2, 3]);
        assert_eq!(hub.read_from(4, 10).map(|v| v.len()), Some(0));
    }
}
