//! The runner's outbox: where the run's output goes until bosund has it, in seq order.
//!
//! **On bosund's machine** (a plan with a log file) the runner appends every chunk to the run's
//! log file itself, as records of the log's own format, and only tells bosund how far the file
//! goes ([`RunnerMsg::Logged`](bosun_protocol::runner::RunnerMsg::Logged)): the bytes
//! never cross the socket, and a daemon that is away costs nothing but that message. The file is
//! the outbox then; see [`OwnLog`].
//!
//! **Otherwise** (a runner on another host, or a file that could not be opened) output goes to
//! bosund as frames, and the outbox keeps every frame the daemon has not acked yet:
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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_protocol::fast;
use bosun_protocol::runner::{FlushFailure, HeldOutput};
use bosun_shared::Timestamp;
use bosun_shared::logfile::{LogChunk, LogFile};
use bosun_shared::run::Stream;

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
    /// The run's log file, when the runner writes it itself.
    own: Option<OwnLog>,
    /// The last flush of the runner's own log file failed (sticky once what it wrote was lost).
    flush_failure: Option<FlushFailure>,
}

/// The run's log file, written by the runner.
///
/// **A storage error never loses a chunk:** a chunk the file cannot take (a full disk) waits in
/// memory with every later one, in order, and holds the outbox as a spool that cannot be
/// written does; [`Outbox::retry`] tries them again. What is written is flushed to disk within
/// a second ([`Outbox::flush_job`]) and before the runner reports the run's end.
pub struct OwnLog {
    log: LogFile,
    waiting: VecDeque<LogChunk>,
    fault: Option<io::Error>,
}

impl OwnLog {
    fn push(&mut self, chunk: LogChunk) {
        if self.waiting.is_empty() {
            match self.log.append([&chunk]) {
                Ok(()) => return,
                Err(e) => self.fault = Some(e),
            }
        }
        self.waiting.push_back(chunk);
    }

    fn retry(&mut self) {
        while let Some(c) = self.waiting.front() {
            if let Err(e) = self.log.append([c]) {
                self.fault = Some(e);
                return;
            }
            self.waiting.pop_front();
        }
        self.fault = None;
    }
}

/// How a file is flushed to disk: `File::sync_data`, or a failing one in tests.
pub type SyncFn = fn(&File) -> io::Result<()>;

/// Flushes a job's range to disk. A failed flush is not tried again as if nothing happened (the
/// kernel may have dropped the pages and will not say so twice): the range is read back,
/// checked record by record, written again and flushed again.
pub fn flush(job: &FlushJob, sync: SyncFn) -> Result<(), FlushFailure> {
    let Err(e) = sync(&job.file) else {
        return Ok(());
    };
    let errno = e.raw_os_error();
    if let Err(why) = bosun_shared::logfile::rewrite_range(&job.file, job.from, job.upto) {
        return Err(FlushFailure {
            errno,
            error: format!("{e}, and {why}"),
            lost: true,
        });
    }
    sync(&job.file).map_err(|again| FlushFailure {
        errno: again.raw_os_error().or(errno),
        error: format!("{e}, and again after writing it anew: {again}"),
        lost: false,
    })
}

/// A range of the run's own log file to flush to disk: the file, from where it was last known
/// to be on disk, up to its end now.
pub struct FlushJob {
    pub file: File,
    pub from: u64,
    pub upto: u64,
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
            own: None,
            flush_failure: None,
        }
    }

    /// An outbox that appends output to the run's log file at `log` itself. Falls back to
    /// frames (and says why) when the file cannot be opened.
    pub fn writing(spool_path: PathBuf, mem_limit: usize, log: Option<&Path>) -> Self {
        let mut outbox = Self::new(spool_path, mem_limit);
        if let Some(path) = log {
            match LogFile::open_for_append(path) {
                Ok(log) => {
                    outbox.next_seq = log.last_seq() + 1;
                    outbox.own = Some(OwnLog {
                        log,
                        waiting: VecDeque::new(),
                        fault: None,
                    });
                }
                Err(e) => say!(
                    "bosun-runner: could not open the run's log file {} ({e}); output goes to bosund instead",
                    path.display()
                ),
            }
        }
        outbox
    }

    /// Takes a chunk of output: into the log file when the runner writes it, else as a frame.
    pub fn push_output(&mut self, stream: Stream, at: Timestamp, bytes: Vec<u8>) {
        match &mut self.own {
            Some(own) => {
                let seq = self.next_seq;
                self.next_seq += 1;
                own.push(LogChunk {
                    seq,
                    stream,
                    at,
                    data: bytes,
                });
            }
            None => self.push(|seq| fast::output_frame(seq, stream, at, &bytes)),
        }
    }

    /// How far the run's log file goes, when the runner writes it (`None`: output goes as
    /// frames).
    pub fn logged(&self) -> Option<u64> {
        self.own.as_ref().map(|o| o.log.last_seq())
    }

    /// What of the runner's own log file is not known to be on disk, if anything.
    pub fn flush_job(&self) -> io::Result<Option<FlushJob>> {
        let Some(own) = &self.own else {
            return Ok(None);
        };
        let (from, upto) = (own.log.synced(), own.log.end());
        if from >= upto {
            return Ok(None);
        }
        Ok(Some(FlushJob {
            file: own.log.handle()?,
            from,
            upto,
        }))
    }

    /// The runner's own log file is on disk up to `upto`.
    pub fn flushed(&mut self, upto: u64) {
        if let Some(own) = &mut self.own {
            own.log.mark_synced(upto);
        }
    }

    /// What a [`flush`] of a job up to `upto` came to. A range that no longer read back whole
    /// is given up (nothing more can be done for it), and that is said until the runner ends.
    pub fn flush_done(&mut self, upto: u64, result: Result<(), FlushFailure>) {
        let lost = self.flush_failure.as_ref().is_some_and(|f| f.lost);
        match result {
            Ok(()) => {
                self.flushed(upto);
                if !lost {
                    self.flush_failure = None;
                }
            }
            Err(failure) => {
                if failure.lost {
                    self.flushed(upto);
                }
                if !lost {
                    self.flush_failure = Some(failure);
                }
            }
        }
    }

    /// Why the runner's own log file is not known to be on disk, while it is not.
    pub fn flush_failure(&self) -> Option<&FlushFailure> {
        self.flush_failure.as_ref()
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
        !self.overflow.is_empty() || self.own.as_ref().is_some_and(|o| !o.waiting.is_empty())
    }

    /// Why the outbox is held (the spool's error), while it is.
    pub fn fault(&self) -> Option<&io::Error> {
        let own = self.own.as_ref().and_then(|o| o.fault.as_ref());
        own.or(self.fault.as_ref()).filter(|_| self.held())
    }

    /// Why output is held, as bosund is told it, while it is.
    pub fn held_output(&self) -> Option<HeldOutput> {
        if !self.held() {
            return None;
        }
        let waiting: usize = match &self.own {
            Some(own) => own.waiting.iter().map(|c| c.data.len()).sum(),
            None => self.overflow.iter().map(|f| f.len()).sum(),
        };
        let fault = self.fault();
        Some(HeldOutput {
            errno: fault.and_then(io::Error::raw_os_error),
            error: fault.map(ToString::to_string).unwrap_or_default(),
            bytes: waiting as u64,
        })
    }

    /// What cannot be written while output is held: the run's log file or the spool.
    pub fn held_where(&self) -> &'static str {
        if self.own.is_some() {
            "the run's log"
        } else {
            "the run's spool"
        }
    }

    /// Tries again to place the overflow: in memory when the spool is empty and there is room,
    /// else in the spool. Stops at the first frame that still cannot go.
    pub fn retry(&mut self) {
        if let Some(own) = &mut self.own {
            own.retry();
            return;
        }
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

    /// Whether every frame pushed so far is acked (the runner's own log: every chunk is in
    /// the file).
    pub fn all_acked(&self) -> bool {
        match &self.own {
            Some(own) => own.waiting.is_empty(),
            None => self.acked >= self.last_seq(),
        }
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

    fn read_log(path: &std::path::Path) -> io::Result<Vec<LogChunk>> {
        let mut out = Vec::new();
        if let Some(mut r) = bosun_shared::logfile::LogReader::open(path)? {
            while let Some(c) = r.next(true)? {
                out.push(c);
            }
        }
        Ok(out)
    }

    #[test]
    fn a_runner_that_writes_the_log_appends_records_and_reports_how_far_they_go() -> io::Result<()>
    {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("log");
        let mut o = Outbox::writing(dir.path().join("spool"), 30, Some(&log));
        assert_eq!(o.logged(), Some(0));
        for i in 1..=5u8 {
            o.push_output(
                Stream::Stdout,
                Timestamp::from_millis(7),
                vec![b'a' + i; 100],
            );
        }
        // Past the memory limit, yet nothing is spooled or kept: the file has it all.
        assert_eq!(o.logged(), Some(5));
        assert!(o.all_acked());
        assert!(!dir.path().join("spool").exists());
        assert!(o.frame(1)?.is_none(), "nothing goes to bosund as a frame");
        let chunks = read_log(&log)?;
        assert_eq!(
            chunks.iter().map(|c| c.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(chunks[2].data, vec![b'd'; 100]);
        // What is not on disk yet is one job, and then nothing.
        let job = o
            .flush_job()?
            .ok_or_else(|| io::Error::other("no flush job"))?;
        assert_eq!((job.from, job.upto), (0, std::fs::metadata(&log)?.len()));
        job.file.sync_data()?;
        o.flushed(job.upto);
        assert!(o.flush_job()?.is_none());
        // A runner that opens the file again (it never does twice; a test of the seqs) goes on
        // after the last record.
        let mut again = Outbox::writing(dir.path().join("spool"), 30, Some(&log));
        again.push_output(Stream::Stderr, Timestamp::from_millis(8), b"six\n".to_vec());
        assert_eq!(again.logged(), Some(6));
        Ok(())
    }

    fn eio(_: &File) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EIO))
    }

    fn fine(_: &File) -> io::Result<()> {
        Ok(())
    }

    #[test]
    fn a_failed_flush_is_kept_said_and_cleared_by_the_next_good_one() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("log");
        let mut o = Outbox::writing(dir.path().join("spool"), 1024, Some(&log));
        o.push_output(Stream::Stdout, Timestamp::from_millis(1), b"one\n".to_vec());
        let job = o.flush_job()?.ok_or_else(|| io::Error::other("no job"))?;
        let upto = job.upto;
        let result = flush(&job, eio);
        let failure = result
            .clone()
            .err()
            .ok_or_else(|| io::Error::other("no failure"))?;
        assert_eq!(failure.errno, Some(libc::EIO));
        assert!(
            !failure.lost,
            "the range read back whole and was written again"
        );
        o.flush_done(upto, result);
        assert_eq!(o.flush_failure().map(|f| f.errno), Some(Some(libc::EIO)));
        // Not marked on disk: the next round flushes the same range again.
        let again = o
            .flush_job()?
            .ok_or_else(|| io::Error::other("no job again"))?;
        assert_eq!((again.from, again.upto), (0, upto));
        o.flush_done(again.upto, flush(&again, fine));
        assert!(o.flush_failure().is_none());
        assert!(o.flush_job()?.is_none());
        Ok(())
    }

    #[test]
    fn a_range_that_no_longer_reads_back_is_said_lost_for_good() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("log");
        let mut o = Outbox::writing(dir.path().join("spool"), 1024, Some(&log));
        o.push_output(Stream::Stdout, Timestamp::from_millis(1), b"one\n".to_vec());
        let job = o.flush_job()?.ok_or_else(|| io::Error::other("no job"))?;
        // The file cut under the runner: what it wrote cannot be read back.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&log)?
            .set_len(5)?;
        let result = flush(&job, eio);
        assert!(result.as_ref().is_err_and(|f| f.lost), "{result:?}");
        o.flush_done(job.upto, result);
        // Given up (nothing more to flush), and said until the runner ends.
        assert!(o.flush_job()?.is_none());
        o.flush_done(job.upto, Ok(()));
        assert!(o.flush_failure().is_some_and(|f| f.lost));
        Ok(())
    }

    /// `/dev/full` takes no write (ENOSPC): a log file on a full disk.
    #[test]
    fn a_log_file_that_cannot_be_written_holds_the_outbox_and_loses_nothing() -> io::Result<()> {
        let mut o = Outbox::writing(PathBuf::from("/dev/null"), 30, Some(Path::new("/dev/full")));
        o.push_output(Stream::Stdout, Timestamp::from_millis(1), b"one\n".to_vec());
        o.push_output(Stream::Stdout, Timestamp::from_millis(2), b"two\n".to_vec());
        assert!(o.held(), "the file took nothing, so output must wait");
        assert!(!o.all_acked());
        assert_eq!(o.logged(), Some(0));
        let held = o
            .held_output()
            .ok_or_else(|| io::Error::other("not held"))?;
        assert_eq!(held.errno, Some(libc::ENOSPC));
        assert_eq!(held.bytes, 8);
        assert_eq!(o.held_where(), "the run's log");
        o.retry();
        assert!(o.held(), "still full");
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
