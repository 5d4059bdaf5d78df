//! A live run's log as its followers see it.
//!
//! Chunks enter the hub the moment they arrive from the runner, in seq order, so followers see
//! output without waiting for the store. Each chunk is then *stored* (written to the run's log
//! file) and acked to the runner, which keeps and resends everything unacked after a crash, with
//! the same seqs and bytes.
//!
//! **Invariant:** a chunk stays in the hub's memory until it is stored, so every seq up to the
//! last received is always in one place or the other, and a follower never finds a hole. Past
//! that, the hub keeps a window of recent chunks for followers that are live.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};

use bosun_store::LogChunk;

/// Stored bytes kept in memory per live run, for live followers.
const RING_BYTES: usize = 2 * 1024 * 1024;
/// Bytes received but not yet stored, past which the runner's link stops being
/// read until the store catches up (the runner keeps the rest in its outbox).
const MAX_UNSTORED_BYTES: usize = 32 * 1024 * 1024;

/// Where a run's log is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HubState {
    /// The last seq received from the runner.
    pub received: u64,
    /// Every seq up to this is in the run's log file (and acked to the runner).
    pub stored: u64,
    /// The run is over and its end is recorded: nothing more will come.
    pub ended: bool,
}

pub struct LogHub {
    ring: Mutex<Ring>,
    /// Stored bytes kept in memory for live followers ([`RING_BYTES`], smaller in tests).
    window: usize,
    state: watch::Sender<HubState>,
    room: Notify,
}

#[derive(Default)]
struct Ring {
    chunks: VecDeque<Arc<LogChunk>>,
    /// Bytes of chunks already stored.
    stored_bytes: usize,
    /// Bytes of chunks not yet stored.
    unstored_bytes: usize,
}

impl LogHub {
    /// A hub for a run whose log is in the store up to `stored`.
    pub fn new(stored: u64) -> Arc<Self> {
        Self::with_window(stored, RING_BYTES)
    }

    /// A hub that keeps at most `window` bytes of stored chunks in memory (tests use a tiny
    /// one, so that followers fall back to the file all the time).
    pub fn with_window(stored: u64, window: usize) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(Ring::default()),
            window,
            state: watch::Sender::new(HubState {
                received: stored,
                stored,
                ended: false,
            }),
            room: Notify::new(),
        })
    }

    pub fn state(&self) -> HubState {
        *self.state.borrow()
    }

    pub fn subscribe(&self) -> watch::Receiver<HubState> {
        self.state.subscribe()
    }

    /// A chunk arrived from the runner: followers may have it now. Only the next seq is taken
    /// (the caller drops resent ones), so memory always holds one unbroken run of seqs; false
    /// when `chunk` is not the next one.
    pub fn push(&self, chunk: Arc<LogChunk>) -> bool {
        let seq = chunk.seq;
        if seq != self.state().received + 1 {
            return false;
        }
        if let Ok(mut ring) = self.ring.lock() {
            ring.unstored_bytes += chunk.data.len();
            ring.chunks.push_back(chunk);
        }
        self.state.send_modify(|s| s.received = seq);
        true
    }

    /// Every chunk up to `seq` is stored: the oldest of them may leave memory.
    pub fn stored(&self, seq: u64) {
        let before = self.state().stored;
        if let Ok(mut ring) = self.ring.lock() {
            let moved: usize = ring
                .chunks
                .iter()
                .filter(|c| c.seq > before && c.seq <= seq)
                .map(|c| c.data.len())
                .sum();
            ring.unstored_bytes -= moved;
            ring.stored_bytes += moved;
            while ring.stored_bytes > self.window
                && ring.chunks.front().is_some_and(|c| c.seq <= seq)
            {
                if let Some(old) = ring.chunks.pop_front() {
                    ring.stored_bytes -= old.data.len();
                }
            }
        }
        self.state.send_modify(|s| s.stored = s.stored.max(seq));
        self.room.notify_waiters();
    }

    /// The runner wrote every chunk up to `seq` into the run's log file itself: they have
    /// arrived and are stored at once, and none of them is in memory (followers read them from
    /// the file).
    pub fn logged(&self, seq: u64) {
        self.state.send_modify(|s| {
            s.received = s.received.max(seq);
            s.stored = s.stored.max(seq);
        });
        self.room.notify_waiters();
    }

    /// Marks the run over: followers finish once they have everything.
    pub fn end(&self) {
        self.state.send_modify(|s| s.ended = true);
    }

    /// Waits while too much received output is not yet in the store. The runner's link is read
    /// only after this, so a fast program is slowed by its runner's outbox, never by the
    /// daemon's memory.
    pub async fn room(&self) {
        loop {
            let notified = self.room.notified();
            let full = self
                .ring
                .lock()
                .map(|r| r.unstored_bytes > MAX_UNSTORED_BYTES)
                .unwrap_or(false);
            if !full {
                return;
            }
            notified.await;
        }
    }

    /// Chunks `from_seq`, `from_seq + 1`, … (up to `max` of them, with no seq missing) if
    /// `from_seq` is in memory. `None` means it is not (it left memory, or has not arrived):
    /// the follower reads it from the store, or waits for it.
    pub fn read_from(&self, from_seq: u64, max: usize) -> Option<Vec<Arc<LogChunk>>> {
        let ring = self.ring.lock().ok()?;
        let first = ring.chunks.front()?.seq;
        let start = usize::try_from(from_seq.checked_sub(first)?).ok()?;
        let chunks: Vec<Arc<LogChunk>> = ring
            .chunks
            .range(start.min(ring.chunks.len())..)
            .take(max)
            .zip(from_seq..)
            .take_while(|(c, want)| c.seq == *want)
            .map(|(c, _)| c.clone())
            .collect();
        (!chunks.is_empty()).then_some(chunks)
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
    fn chunks_stay_in_memory_until_stored_then_only_a_window_is_kept() {
        let hub = LogHub::new(0);
        for s in 1..=4 {
            hub.push(chunk(s, 1024 * 1024));
        }
        assert_eq!(hub.state().received, 4);
        // Nothing is stored yet: everything stays, however much it is.
        let all: Vec<u64> = hub
            .read_from(1, 10)
            .unwrap_or_default()
            .iter()
            .map(|c| c.seq)
            .collect();
        assert_eq!(all, vec![1, 2, 3, 4]);
        // Stored up to 3: the oldest leave memory down to the window.
        hub.stored(3);
        assert!(
            hub.read_from(1, 10).is_none(),
            "seq 1 is read from the store now"
        );
        let kept: Vec<u64> = hub
            .read_from(2, 10)
            .unwrap_or_default()
            .iter()
            .map(|c| c.seq)
            .collect();
        assert_eq!(kept, vec![2, 3, 4]);
        assert_eq!(hub.state().stored, 3);
    }
}
