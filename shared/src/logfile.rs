//! A run's output: an append-only file of records, `runs/<run-id>/log`.
//!
//! Output does not go into redb. A chatty run would otherwise make every commit of every other
//! run wait behind its megabytes, and redb's page copying would cost more than the disk does. A
//! record is written with one `write` and is then as safe as the runner's own copy: a crash of
//! bosund cannot lose it (it is in the page cache), so the runner is acked right after. The file
//! is fdatasynced in the background within a second, and when the run ends.
//!
//! A record: `[magic "BL"][stream u8][0u8][len u32][seq u64][at u64][crc32 u32]` then `len`
//! bytes; all big-endian; the CRC covers the header before it and the bytes. A reader stops at
//! the first record that is incomplete or does not check out (a write cut off by a crash, or a
//! page the disk never got); [`LogFile::open_for_append`] cuts the file there.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::Timestamp;
use crate::run::Stream;

/// A chunk of a run's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogChunk {
    pub seq: u64,
    pub stream: Stream,
    pub at: Timestamp,
    pub data: Vec<u8>,
}

const MAGIC: [u8; 2] = *b"BL";
const HEADER: usize = 28;
/// A record's bytes, at most: chunks are far smaller; anything larger is corruption.
const MAX_RECORD: u32 = 16 * 1024 * 1024;

fn encode_header(chunk: &LogChunk) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..2].copy_from_slice(&MAGIC);
    h[2] = chunk.stream.as_byte();
    h[4..8].copy_from_slice(&(chunk.data.len() as u32).to_be_bytes());
    h[8..16].copy_from_slice(&chunk.seq.to_be_bytes());
    h[16..24].copy_from_slice(&chunk.at.as_millis().to_be_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h[..24]);
    crc.update(&chunk.data);
    h[24..28].copy_from_slice(&crc.finalize().to_be_bytes());
    h
}

/// A record's header, read back.
struct Header {
    stream: Stream,
    len: u32,
    seq: u64,
    at: Timestamp,
    crc: u32,
}

fn decode_header(h: &[u8; HEADER]) -> Option<Header> {
    if h[0..2] != MAGIC {
        return None;
    }
    let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[i..i + 8]);
        u64::from_be_bytes(b)
    };
    let len = u32_at(4);
    if len > MAX_RECORD {
        return None;
    }
    Some(Header {
        stream: Stream::from_byte(h[2])?,
        len,
        seq: u64_at(8),
        at: Timestamp::from_millis(u64_at(16)),
        crc: u32_at(24),
    })
}

/// Reads a run's log file from the start, record by record, and can go on where it stopped as
/// the file grows.
pub struct LogReader {
    file: File,
    /// Where the next record starts.
    offset: u64,
    /// The seq of the record just before `offset` (0 at the start).
    behind: u64,
}

impl LogReader {
    /// Opens the log file; a run that never wrote output has none, which reads as empty.
    pub fn open(path: &Path) -> io::Result<Option<Self>> {
        match File::open(path) {
            Ok(file) => Ok(Some(Self {
                file,
                offset: 0,
                behind: 0,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The next complete, checked record, or `None` at the end (or at a torn tail). With
    /// `want_data` false only the header is read and the data is skipped.
    pub fn next(&mut self, want_data: bool) -> io::Result<Option<LogChunk>> {
        self.next_upto(u64::MAX, want_data)
    }

    /// Like [`Self::next`], but a record past seq `upto` is left unread: the reader stays
    /// before it, so the next call can still return it. (A reader that stepped over a record it
    /// did not hand out would make its caller skip that seq.)
    pub fn next_upto(&mut self, upto: u64, want_data: bool) -> io::Result<Option<LogChunk>> {
        let mut h = [0u8; HEADER];
        if !read_exact_at(&self.file, &mut h, self.offset)? {
            return Ok(None);
        }
        let Some(header) = decode_header(&h) else {
            return Ok(None);
        };
        if header.seq > upto {
            return Ok(None);
        }
        let mut data = vec![0u8; header.len as usize];
        if !read_exact_at(&self.file, &mut data, self.offset + HEADER as u64)? {
            return Ok(None);
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[..24]);
        crc.update(&data);
        if crc.finalize() != header.crc {
            return Ok(None);
        }
        self.offset += HEADER as u64 + header.len as u64;
        self.behind = header.seq;
        if !want_data {
            data = Vec::new();
        }
        Ok(Some(LogChunk {
            seq: header.seq,
            stream: header.stream,
            at: header.at,
            data,
        }))
    }

    /// Like [`Self::next_upto`], but the record's bytes are read into `buf[..len]`, a buffer
    /// kept from one record to the next (it only grows, and is never cleared), so that a reader
    /// of many records neither allocates nor zeroes memory for each. Gives the record's seq,
    /// stream, time and length.
    pub fn next_upto_into(
        &mut self,
        upto: u64,
        buf: &mut Vec<u8>,
    ) -> io::Result<Option<(u64, Stream, Timestamp, usize)>> {
        let mut h = [0u8; HEADER];
        if !read_exact_at(&self.file, &mut h, self.offset)? {
            return Ok(None);
        }
        let Some(header) = decode_header(&h) else {
            return Ok(None);
        };
        if header.seq > upto {
            return Ok(None);
        }
        let len = header.len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        if !read_exact_at(&self.file, &mut buf[..len], self.offset + HEADER as u64)? {
            return Ok(None);
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[..24]);
        crc.update(&buf[..len]);
        if crc.finalize() != header.crc {
            return Ok(None);
        }
        self.offset += (HEADER + len) as u64;
        self.behind = header.seq;
        Ok(Some((header.seq, header.stream, header.at, len)))
    }

    /// Where the reader is: the end of the last good record it read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Moves to the record `seq`: past the records before it, reading only their headers (what
    /// is skipped is not checked; the record at `seq` is, when it is read), or back to the
    /// start first when the reader is already past it.
    pub fn skip_to(&mut self, seq: u64) -> io::Result<()> {
        if seq <= self.behind {
            self.offset = 0;
            self.behind = 0;
        }
        loop {
            let mut h = [0u8; HEADER];
            if !read_exact_at(&self.file, &mut h, self.offset)? {
                return Ok(());
            }
            let Some(header) = decode_header(&h) else {
                return Ok(());
            };
            if header.seq >= seq {
                return Ok(());
            }
            let end = self.offset + HEADER as u64 + header.len as u64;
            if self.file.metadata()?.len() < end {
                return Ok(());
            }
            self.offset = end;
            self.behind = header.seq;
        }
    }
}

/// Fills `buf` from `offset`; false when the file ends first.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => return Ok(false),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Checks that `buf` is whole records, each one checking out: what a range of a log file read
/// back must be before it is written again. `Err` says where it does not.
pub fn check_records(buf: &[u8]) -> Result<(), RecordsError> {
    let mut at = 0usize;
    while at < buf.len() {
        let Some(h) = buf.get(at..at + HEADER) else {
            let len = buf.len();
            return Err(RecordsError::HeaderCutShort { at, len });
        };
        let mut header = [0u8; HEADER];
        header.copy_from_slice(h);
        let Some(decoded) = decode_header(&header) else {
            return Err(RecordsError::NoRecord(at));
        };
        let end = at + HEADER + decoded.len as usize;
        let Some(data) = buf.get(at + HEADER..end) else {
            return Err(RecordsError::ChunkCutShort(decoded.seq));
        };
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header[..24]);
        crc.update(data);
        if crc.finalize() != decoded.crc {
            return Err(RecordsError::BadChecksum(decoded.seq));
        }
        at = end;
    }
    Ok(())
}

/// Where [`check_records`] found a range not to be whole records.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordsError {
    #[error("a record cut short at byte {at} of {len}")]
    HeaderCutShort { at: usize, len: usize },
    #[error("no record starts at byte {0}")]
    NoRecord(usize),
    /// The chunk of this sequence number has fewer bytes than its header says.
    #[error("chunk {0} is cut short")]
    ChunkCutShort(u64),
    #[error("chunk {0} does not check out")]
    BadChecksum(u64),
}

/// Reads back what a failed flush may have lost, checks every record of it, and writes it again
/// in place so that the next flush has it to write.
pub fn rewrite_range(file: &File, from: u64, upto: u64) -> Result<(), RewriteError> {
    let len = usize::try_from(upto.saturating_sub(from)).map_err(RewriteError::TooLong)?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, from)
        .map_err(RewriteError::Read)?;
    check_records(&buf)?;
    file.write_all_at(&buf, from).map_err(RewriteError::Write)
}

/// Why [`rewrite_range`] could not write a range again.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    /// The range does not fit in memory's address space.
    #[error("{0}")]
    TooLong(std::num::TryFromIntError),
    #[error("reading it back failed: {0}")]
    Read(io::Error),
    /// What was read back is not whole records: the range is lost.
    #[error(transparent)]
    Records(#[from] RecordsError),
    #[error("writing it again failed: {0}")]
    Write(io::Error),
}

/// Writes all of `slices` at `offset`, as many `pwritev` calls as it takes.
fn write_all_vectored_at(
    file: &File,
    mut slices: &mut [IoSlice<'_>],
    offset: u64,
) -> io::Result<()> {
    let mut at = offset;
    while !slices.is_empty() {
        let off = i64::try_from(at).map_err(io::Error::other)?;
        // At most IOV_MAX (1024 on Linux) slices per call.
        let some = slices.len().min(1024);
        match nix::sys::uio::pwritev(file, &slices[..some], off) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => {
                at += n as u64;
                IoSlice::advance_slices(&mut slices, n);
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    Ok(())
}

/// A run's log file, open for appending.
pub struct LogFile {
    file: File,
    end: u64,
    last_seq: u64,
    dirty: bool,
    /// Where the file was known to be on disk at the last good flush.
    synced: u64,
}

impl LogFile {
    /// Opens (or creates, mode 0600) the log file, checks every record, and cuts off whatever
    /// follows the last good one.
    pub fn open_for_append(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)?;
        let mut reader = LogReader {
            file: file.try_clone()?,
            offset: 0,
            behind: 0,
        };
        let mut last_seq = 0;
        while let Some(c) = reader.next(false)? {
            last_seq = c.seq;
        }
        let end = reader.offset();
        if file.metadata()?.len() > end {
            file.set_len(end)?;
        }
        Ok(Self {
            file,
            end,
            last_seq,
            dirty: false,
            synced: end,
        })
    }

    /// The last seq in the file (0 when none).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Appends chunks with one write (a vectored one: the bytes are not copied together first).
    pub fn append<'a>(&mut self, chunks: impl IntoIterator<Item = &'a LogChunk>) -> io::Result<()> {
        let chunks: Vec<&LogChunk> = chunks.into_iter().collect();
        let Some(last) = chunks.last().map(|c| c.seq) else {
            return Ok(());
        };
        let headers: Vec<[u8; HEADER]> = chunks.iter().map(|c| encode_header(c)).collect();
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(chunks.len() * 2);
        let mut len = 0u64;
        for (h, c) in headers.iter().zip(&chunks) {
            slices.push(IoSlice::new(h));
            slices.push(IoSlice::new(&c.data));
            len += (HEADER + c.data.len()) as u64;
        }
        if let Err(e) = write_all_vectored_at(&self.file, &mut slices, self.end) {
            // A write cut short (a full disk) leaves part of a record past the end: cut it
            // off, so that the file ends with whole records whatever happens next.
            let _ = self.file.set_len(self.end);
            return Err(e);
        }
        self.end += len;
        self.last_seq = last;
        self.dirty = true;
        Ok(())
    }

    /// A handle for fdatasync from another thread, and the end of what it is to flush, if
    /// anything was written since the last one.
    pub fn take_dirty(&mut self) -> io::Result<Option<(File, u64)>> {
        if !self.dirty {
            return Ok(None);
        }
        self.dirty = false;
        self.file.try_clone().map(|f| Some((f, self.end)))
    }

    /// Where the next record goes: the length of the file's whole records.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// A second handle on the file (for a flush on another thread).
    pub fn handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// Where the file was known to be on disk at the last good flush.
    pub fn synced(&self) -> u64 {
        self.synced
    }

    /// A flush of everything up to `upto` succeeded.
    pub fn mark_synced(&mut self, upto: u64) {
        self.synced = self.synced.max(upto);
    }

    /// Flushes to disk now.
    pub fn sync(&mut self) -> io::Result<()> {
        self.dirty = false;
        self.file.sync_data()?;
        self.synced = self.end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: u64, text: &str) -> LogChunk {
        LogChunk {
            seq,
            stream: if seq.is_multiple_of(2) {
                Stream::Stderr
            } else {
                Stream::Stdout
            },
            at: Timestamp::from_millis(1000 + seq),
            data: text.as_bytes().to_vec(),
        }
    }

    fn read_all(path: &Path) -> Vec<LogChunk> {
        let mut r = LogReader::open(path).ok().flatten().expect("file");
        let mut out = Vec::new();
        while let Ok(Some(c)) = r.next(true) {
            out.push(c);
        }
        out
    }

    #[test]
    fn records_come_back_as_written() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("log");
        let mut f = LogFile::open_for_append(&path)?;
        let chunks = [chunk(1, "a\n"), chunk(2, "b\u{ff}c"), chunk(3, "")];
        f.append(&chunks)?;
        assert_eq!(read_all(&path), chunks);
        let f = LogFile::open_for_append(&path)?;
        assert_eq!(f.last_seq(), 3);
        // Read into one kept buffer, the same records (a longer one first, so the buffer is
        // longer than the records after it), and none past the bound.
        let mut r = LogReader::open(&path)?.ok_or_else(|| io::Error::other("no file"))?;
        let mut buf = vec![b'z'; 10];
        let mut again = Vec::new();
        while let Some((seq, stream, at, len)) = r.next_upto_into(2, &mut buf)? {
            again.push(LogChunk {
                seq,
                stream,
                at,
                data: buf[..len].to_vec(),
            });
        }
        assert_eq!(again, chunks[..2]);
        Ok(())
    }

    #[test]
    fn skipping_reads_headers_only_and_lands_on_the_seq() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("log");
        let mut f = LogFile::open_for_append(&path)?;
        let chunks: Vec<LogChunk> = (1..=5).map(|s| chunk(s, "line\n")).collect();
        f.append(&chunks)?;
        let mut r = LogReader::open(&path)?.expect("file");
        r.skip_to(4)?;
        assert_eq!(r.next(true)?.map(|c| c.seq), Some(4));
        r.skip_to(99)?;
        assert_eq!(r.next(true)?, None);
        Ok(())
    }

    /// The cause of lost live lines: a reader asked for seqs up to N read record N+1 to find
    /// out it was past N, and the next read began after it.
    #[test]
    fn a_record_past_the_bound_is_left_for_the_next_read() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("log");
        let mut f = LogFile::open_for_append(&path)?;
        f.append(&(1..=4).map(|s| chunk(s, "line\n")).collect::<Vec<_>>())?;
        let mut r = LogReader::open(&path)?.expect("file");
        assert_eq!(r.next_upto(2, true)?.map(|c| c.seq), Some(1));
        assert_eq!(r.next_upto(2, true)?.map(|c| c.seq), Some(2));
        assert_eq!(r.next_upto(2, true)?, None);
        assert_eq!(r.next_upto(4, true)?.map(|c| c.seq), Some(3));
        // Asked for an earlier seq, it goes back.
        r.skip_to(2)?;
        assert_eq!(r.next(true)?.map(|c| c.seq), Some(2));
        Ok(())
    }

    #[test]
    fn a_torn_or_corrupt_tail_is_cut_off_and_appending_goes_on() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("log");
        let mut f = LogFile::open_for_append(&path)?;
        f.append(&[chunk(1, "one\n"), chunk(2, "two\n")])?;
        drop(f);
        let good = std::fs::metadata(&path)?.len();
        // A record cut in the middle, as by a crash during the write.
        let mut torn = encode_header(&chunk(3, "three\n")).to_vec();
        torn.extend_from_slice(b"thr");
        let file = OpenOptions::new().append(true).open(&path)?;
        std::io::Write::write_all(&mut &file, &torn)?;
        drop(file);
        let mut f = LogFile::open_for_append(&path)?;
        assert_eq!(f.last_seq(), 2);
        assert_eq!(std::fs::metadata(&path)?.len(), good);
        f.append(&[chunk(3, "three\n")])?;
        assert_eq!(read_all(&path).len(), 3);

        // A flipped byte inside a record: the reader stops before it.
        let mut bytes = std::fs::read(&path)?;
        let last = bytes.len() - 2;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes)?;
        assert_eq!(read_all(&path).len(), 2);
        Ok(())
    }
}
