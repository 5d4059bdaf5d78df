//! The runner's outbox: every message frame the daemon has not acked yet, in seq order.
//!
//! Frames stay in memory up to a limit; past it, new frames go to a spool file in the run's
//! directory, so a daemon that is slow or gone never makes the runner stop reading the program's
//! output (which would block the program). Memory always holds the oldest frames and the spool
//! the newer ones; as acks free memory, frames move back from the spool in order. When
//! everything is acked the spool is emptied.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

/// Memory held at a peak above this is given back to the system once it is free again.
const GIVE_BACK_AFTER: usize = 1024 * 1024;

/// A frame ready to send, shared between the outbox and the link.
pub type Frame = Arc<Vec<u8>>;

pub struct Outbox {
    spool_path: PathBuf,
    mem_limit: usize,
    /// The seq the next pushed frame gets. Seqs start at 1.
    next_seq: u64,
    /// Everything up to and including this seq is committed by the daemon.
    acked: u64,
    /// Frames for seqs `acked + 1 ..`, contiguous.
    mem: VecDeque<Frame>,
    mem_bytes: usize,
    /// The most bytes held in memory since memory was last given back.
    mem_peak: usize,
    /// Frames after those in memory, contiguous.
    spool: Option<Spool>,
}

struct Spool {
    file: File,
    /// (offset, length) of each spooled frame, oldest first.
    index: VecDeque<(u64, usize)>,
    end: u64,
}

impl Outbox {
    pub fn new(spool_path: PathBuf, mem_limit: usize) -> Self {
        Self {
            spool_path,
            mem_limit,
            next_seq: 1,
            acked: 0,
            mem: VecDeque::new(),
            mem_bytes: 0,
            mem_peak: 0,
            spool: None,
        }
    }

    /// Adds a frame made by `make(seq)` for the next seq.
    pub fn push(&mut self, make: impl FnOnce(u64) -> Vec<u8>) -> io::Result<()> {
        let seq = self.next_seq;
        let frame = make(seq);
        let spooling = self.spool.as_ref().is_some_and(|s| !s.index.is_empty());
        if spooling || self.mem_bytes + frame.len() > self.mem_limit {
            self.spool_append(&frame)?;
        } else {
            self.mem_bytes += frame.len();
            self.mem_peak = self.mem_peak.max(self.mem_bytes);
            self.mem.push_back(Arc::new(frame));
        }
        self.next_seq += 1;
        Ok(())
    }

    fn spool_append(&mut self, frame: &[u8]) -> io::Result<()> {
        let spool = match &mut self.spool {
            Some(s) => s,
            None => {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&self.spool_path)?;
                self.spool.insert(Spool {
                    file,
                    index: VecDeque::new(),
                    end: 0,
                })
            }
        };
        spool.file.write_all_at(frame, spool.end)?;
        spool.index.push_back((spool.end, frame.len()));
        spool.end += frame.len() as u64;
        Ok(())
    }

    /// The highest seq handed out so far (0 when none).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Whether every frame pushed so far is acked.
    pub fn all_acked(&self) -> bool {
        self.acked >= self.last_seq()
    }

    /// The frame of `seq`, if it is pushed and not acked.
    pub fn frame(&self, seq: u64) -> io::Result<Option<Frame>> {
        if seq <= self.acked || seq >= self.next_seq {
            return Ok(None);
        }
        let i = (seq - self.acked - 1) as usize;
        if let Some(f) = self.mem.get(i) {
            return Ok(Some(f.clone()));
        }
        let Some(spool) = &self.spool else {
            return Ok(None);
        };
        let Some(&(offset, len)) = spool.index.get(i - self.mem.len()) else {
            return Ok(None);
        };
        let mut buf = vec![0u8; len];
        spool.file.read_exact_at(&mut buf, offset)?;
        Ok(Some(Arc::new(buf)))
    }

    /// Forgets every frame up to and including `seq`.
    pub fn ack(&mut self, seq: u64) -> io::Result<()> {
        let seq = seq.min(self.last_seq());
        while self.acked < seq {
            self.acked += 1;
            if let Some(f) = self.mem.pop_front() {
                self.mem_bytes -= f.len();
            } else if let Some(s) = &mut self.spool {
                s.index.pop_front();
            }
        }
        self.refill_from_spool()?;
        if self.mem.is_empty() && self.mem_peak > GIVE_BACK_AFTER {
            // A burst is over: hand the memory it took back to the system, so an idle runner
            // stays small. glibc keeps freed heap memory otherwise.
            self.mem_peak = 0;
            // SAFETY: malloc_trim only releases free memory of the allocator; it has no
            // preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        Ok(())
    }

    /// Moves spooled frames back into memory while there is room, oldest first, and empties
    /// the spool file once nothing is left in it.
    fn refill_from_spool(&mut self) -> io::Result<()> {
        let Some(spool) = &mut self.spool else {
            return Ok(());
        };
        while let Some(&(offset, len)) = spool.index.front() {
            if self.mem_bytes + len > self.mem_limit / 2 {
                break;
            }
            let mut buf = vec![0u8; len];
            spool.file.read_exact_at(&mut buf, offset)?;
            spool.index.pop_front();
            self.mem_bytes += len;
            self.mem.push_back(Arc::new(buf));
        }
        if spool.index.is_empty() && spool.end > 0 {
            spool.file.set_len(0)?;
            spool.end = 0;
        }
        Ok(())
    }

    /// Deletes the spool file (when the run is over and everything is acked).
    pub fn remove_spool(&mut self) {
        if self.spool.take().is_some() {
            let _ = std::fs::remove_file(&self.spool_path);
        }
    }

    #[cfg(test)]
    fn spooled(&self) -> usize {
        self.spool.as_ref().map_or(0, |s| s.index.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(seq: u64) -> Vec<u8> {
        format!("frame {seq:04}").into_bytes()
    }

    fn read(o: &Outbox, seq: u64) -> Option<Vec<u8>> {
        o.frame(seq).ok().flatten().map(|f| f.to_vec())
    }

    #[test]
    fn frames_past_the_memory_limit_go_to_the_spool_and_come_back_in_order() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        // Each frame is 10 bytes; memory holds 3.
        let mut o = Outbox::new(dir.path().join("spool"), 30);
        for _ in 0..10 {
            o.push(frame_of)?;
        }
        assert_eq!(o.spooled(), 7);
        for seq in 1..=10 {
            assert_eq!(read(&o, seq), Some(frame_of(seq)), "seq {seq}");
        }
        o.ack(4)?;
        assert_eq!(read(&o, 4), None);
        for seq in 5..=10 {
            assert_eq!(read(&o, seq), Some(frame_of(seq)), "seq {seq} after ack");
        }
        o.push(frame_of)?;
        assert_eq!(read(&o, 11), Some(frame_of(11)));
        o.ack(11)?;
        assert!(o.all_acked());
        assert_eq!(o.spooled(), 0);
        assert_eq!(std::fs::metadata(dir.path().join("spool"))?.len(), 0);
        o.remove_spool();
        assert!(!dir.path().join("spool").exists());
        Ok(())
    }

    #[test]
    fn an_ack_beyond_what_was_pushed_is_clamped() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut o = Outbox::new(dir.path().join("spool"), 1024);
        o.push(frame_of)?;
        o.ack(99)?;
        assert_eq!(o.acked(), 1);
        o.push(frame_of)?;
        assert_eq!(read(&o, 2), Some(frame_of(2)));
        Ok(())
    }
}
