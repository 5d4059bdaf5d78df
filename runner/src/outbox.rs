//! The runner's outbox: every message frame the daemon has not acked yet, in seq order.
//!
//! Frames stay in memory up to a limit; past it, new frames go to a spool file in the run's
//! directory, so a daemon that is slow or gone never makes the runner stop reading the program's
//! output (which would block the program). Memory always holds the oldest frames and the spool
//! the newer ones; as acks free memory, frames move back from the spool in order. When
//! everything is acked the spool is emptied.
//!
//! **A storage error never loses a frame and never ends the runner.** When the spool cannot be
//! written (a full disk, a quota, a read-only or failing file system), the frame is kept in
//! memory after the spool's frames (the *overflow*), and the outbox is [`held`](Outbox::held):
//! the relay stops reading the program's pipes, so the program blocks on its next write, as it
//! would on a full pipe. The overflow is tried again on every ack and every
//! [`retry`](Outbox::retry); once it is gone the relay reads on. Memory past the limit is
//! bounded by what the relay had read before it stopped.

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
    /// Frames after those in the spool that the spool could not take, contiguous.
    overflow: VecDeque<Frame>,
    /// Why the spool could not take them.
    fault: Option<io::Error>,
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
            overflow: VecDeque::new(),
            fault: None,
        }
    }

    /// Adds a frame made by `make(seq)` for the next seq. It is always kept: in memory, in the
    /// spool, or (when the spool cannot take it) in the overflow, which holds the outbox.
    pub fn push(&mut self, make: impl FnOnce(u64) -> Vec<u8>) {
        let seq = self.next_seq;
        let frame = make(seq);
        self.next_seq += 1;
        if !self.overflow.is_empty() {
            self.overflow.push_back(Arc::new(frame));
            return;
        }
        let spooling = self.spool.as_ref().is_some_and(|s| !s.index.is_empty());
        if spooling || self.mem_bytes + frame.len() > self.mem_limit {
            if let Err(e) = self.spool_append(&frame) {
                self.fault = Some(e);
                self.overflow.push_back(Arc::new(frame));
            }
        } else {
            self.mem_bytes += frame.len();
            self.mem_peak = self.mem_peak.max(self.mem_bytes);
            self.mem.push_back(Arc::new(frame));
        }
    }

    /// Whether output must wait: frames are kept that the spool could not take. The relay reads
    /// no more of the program's output while this is true.
    pub fn held(&self) -> bool {
        !self.overflow.is_empty()
    }

    /// Why the outbox is held (the spool's error), while it is.
    pub fn fault(&self) -> Option<&io::Error> {
        self.fault.as_ref().filter(|_| self.held())
    }

    /// Tries again to place the overflow: in memory when the spool is empty and there is room,
    /// else in the spool. Stops at the first frame that still cannot go.
    pub fn retry(&mut self) {
        let spooling = self.spool.as_ref().is_some_and(|s| !s.index.is_empty());
        if !spooling {
            while let Some(f) = self.overflow.front() {
                if self.mem_bytes + f.len() > self.mem_limit {
                    break;
                }
                if let Some(f) = self.overflow.pop_front() {
                    self.mem_bytes += f.len();
                    self.mem_peak = self.mem_peak.max(self.mem_bytes);
                    self.mem.push_back(f);
                }
            }
        }
        while let Some(f) = self.overflow.front().cloned() {
            if let Err(e) = self.spool_append(&f) {
                self.fault = Some(e);
                return;
            }
            self.overflow.pop_front();
        }
        self.fault = None;
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
        let i = i - self.mem.len();
        let spooled = self.spool.as_ref().map_or(0, |s| s.index.len());
        if i >= spooled {
            return Ok(self.overflow.get(i - spooled).cloned());
        }
        let Some(spool) = &self.spool else {
            return Ok(None);
        };
        let Some(&(offset, len)) = spool.index.get(i) else {
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
            } else if let Some(s) = self.spool.as_mut().filter(|s| !s.index.is_empty()) {
                s.index.pop_front();
            } else {
                self.overflow.pop_front();
            }
        }
        self.refill_from_spool()?;
        if self.held() {
            self.retry();
        }
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
            o.push(frame_of);
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
        o.push(frame_of);
        assert_eq!(read(&o, 11), Some(frame_of(11)));
        o.ack(11)?;
        assert!(o.all_acked());
        assert_eq!(o.spooled(), 0);
        assert_eq!(std::fs::metadata(dir.path().join("spool"))?.len(), 0);
        o.remove_spool();
        assert!(!dir.path().join("spool").exists());
        Ok(())
    }

    /// `/dev/full` takes no write (ENOSPC), as a spool on a full disk.
    #[test]
    fn a_spool_that_cannot_be_written_holds_the_outbox_and_loses_nothing() -> io::Result<()> {
        let mut o = Outbox::new(PathBuf::from("/dev/full"), 30);
        for _ in 0..5 {
            o.push(frame_of);
        }
        assert!(o.held(), "frames 4 and 5 could not be spooled");
        assert_eq!(o.fault().and_then(|e| e.raw_os_error()), Some(libc::ENOSPC));
        for seq in 1..=5 {
            assert_eq!(read(&o, seq), Some(frame_of(seq)), "seq {seq} while held");
        }
        // Frames pushed while held queue up behind, in order.
        o.push(frame_of);
        assert_eq!(read(&o, 6), Some(frame_of(6)));
        // Acks make room in memory: the overflow moves there, and output may flow again.
        o.ack(3)?;
        assert!(!o.held());
        assert!(o.fault().is_none());
        for seq in 4..=6 {
            assert_eq!(
                read(&o, seq),
                Some(frame_of(seq)),
                "seq {seq} after the hold"
            );
        }
        o.ack(6)?;
        assert!(o.all_acked());
        Ok(())
    }

    #[test]
    fn an_ack_beyond_what_was_pushed_is_clamped() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut o = Outbox::new(dir.path().join("spool"), 1024);
        o.push(frame_of);
        o.ack(99)?;
        assert_eq!(o.acked(), 1);
        o.push(frame_of);
        assert_eq!(read(&o, 2), Some(frame_of(2)));
        Ok(())
    }
}
