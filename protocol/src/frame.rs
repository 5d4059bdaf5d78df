//! The one frame codec: a big-endian `u32` length, then that many bytes of body. A body is JSON,
//! or, for the two frames that carry a program's output, binary: a kind byte, a fixed header
//! and the output's raw bytes to the end of the frame (see [`BinaryFrame`]).
//!
//! A frame longer than [`MAX_FRAME_LEN`] is refused before its body is read: the reader reports
//! [`FrameError::TooLarge`] and the connection must be closed, because skipping gigabytes to find
//! the next frame is not worth it. A frame of the right length whose JSON is not of the expected
//! shape, or whose binary header is cut short or wrong, is consumed whole and reported as
//! [`FrameError::Malformed`]; the connection stays in step and can go on.

use std::io;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};

use super::bytes::OutputChunk;
use bosun_shared::Timestamp;
use bosun_shared::run::Stream;

/// The longest frame either side accepts: 4 MiB.
pub const MAX_FRAME_LEN: usize = 4 * 1024 * 1024;

/// The first byte of a binary frame's body: a runner's output chunk.
pub const KIND_OUTPUT: u8 = 0x01;
/// The first byte of a binary frame's body: a log chunk for a UI's subscription.
pub const KIND_LOG: u8 = 0x02;
/// An output frame's header, its kind byte included: kind, seq (u64), stream (u8), at (u64).
pub const OUTPUT_HEADER_LEN: usize = 1 + 8 + 1 + 8;
/// A log frame's header, its kind byte included: kind, sub (u64), seq (u64), stream (u8), at
/// (u64).
pub const LOG_HEADER_LEN: usize = 1 + 8 + 8 + 1 + 8;

/// Whether a body starting with `first` is binary. JSON text starts with `{` (or whitespace),
/// never with a control character, so every byte below 0x20 but tab, newline and carriage
/// return is free to mark a binary frame; only [`KIND_OUTPUT`] and [`KIND_LOG`] are used.
pub fn is_binary(first: u8) -> bool {
    first < 0x20 && !matches!(first, b'\t' | b'\n' | b'\r')
}

/// What can go wrong with a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The socket failed. The connection is gone.
    #[error("connection failed: {0}")]
    Io(#[from] io::Error),
    /// The length prefix asks for more than the limit. The body was not read; close the
    /// connection.
    #[error("a frame of {len} bytes is over the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    /// The peer closed the connection in the middle of a frame.
    #[error("the connection closed in the middle of a frame")]
    Truncated,
    /// The frame was read whole but is not a message of the expected shape. The connection is
    /// still in step.
    #[error("a frame is not valid: {detail}")]
    Malformed { detail: String },
}

impl FrameError {
    /// Whether the connection can still carry frames after this error.
    pub fn connection_usable(&self) -> bool {
        match self {
            FrameError::Malformed { .. } => true,
            FrameError::Io(_) | FrameError::TooLarge { .. } | FrameError::Truncated => false,
        }
    }
}

fn malformed(detail: String) -> FrameError {
    FrameError::Malformed { detail }
}

/// A binary frame, decoded: the header's fields, and the output's bytes exactly as they were
/// sent (any bytes at all, UTF-8 or not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinaryFrame {
    /// [`KIND_OUTPUT`]: a runner's chunk, read as
    /// [`RunnerMsg::Output`](super::runner::RunnerMsg::Output).
    Output(OutputChunk),
    /// [`KIND_LOG`]: a chunk of a followed log, read as
    /// [`ServerFrame::Event`](super::ui::ServerFrame::Event) with
    /// [`Event::Log`](super::ui::Event::Log).
    Log { sub: u64, chunk: OutputChunk },
}

impl BinaryFrame {
    fn name(&self) -> &'static str {
        match self {
            BinaryFrame::Output(_) => "output",
            BinaryFrame::Log { .. } => "log",
        }
    }

    /// The error for a binary frame that is not one the reader expects here.
    pub fn unexpected(&self) -> FrameError {
        malformed(format!(
            "a binary {} frame came where it has no place",
            self.name()
        ))
    }
}

/// The header length of a binary frame of `kind`, its kind byte included.
fn header_len(kind: u8) -> Result<usize, FrameError> {
    match kind {
        KIND_OUTPUT => Ok(OUTPUT_HEADER_LEN),
        KIND_LOG => Ok(LOG_HEADER_LEN),
        other => Err(malformed(format!("unknown binary frame kind {other:#04x}"))),
    }
}

/// A binary frame's header, read; the frame is whole once its data is added.
struct Header {
    sub: Option<u64>,
    seq: u64,
    stream: Stream,
    at: Timestamp,
}

impl Header {
    /// Reads a whole header (`header_len(header[0])` bytes).
    fn parse(header: &[u8]) -> Result<Header, FrameError> {
        let u64_at = |i: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&header[i..i + 8]);
            u64::from_be_bytes(b)
        };
        let (sub, rest) = match header.first() {
            Some(&KIND_LOG) => (Some(u64_at(1)), 9),
            _ => (None, 1),
        };
        let stream = Stream::from_byte(header[rest + 8]).ok_or_else(|| {
            malformed(format!(
                "a binary frame names stream {}, which is none of 1 (stdout), 2 (stderr), 3 (note)",
                header[rest + 8]
            ))
        })?;
        Ok(Header {
            sub,
            seq: u64_at(rest),
            stream,
            at: Timestamp::from_millis(u64_at(rest + 9)),
        })
    }

    fn with_data(self, data: Vec<u8>) -> BinaryFrame {
        let chunk = OutputChunk {
            seq: self.seq,
            stream: self.stream,
            at: self.at,
            data: super::LogBytes(data),
        };
        match self.sub {
            Some(sub) => BinaryFrame::Log { sub, chunk },
            None => BinaryFrame::Output(chunk),
        }
    }
}

/// Writes a binary frame's length prefix and header into `buf`, for a payload of `data_len`
/// bytes that follows it.
pub(super) fn put_header(
    buf: &mut Vec<u8>,
    sub: Option<u64>,
    seq: u64,
    stream: Stream,
    at: Timestamp,
    data_len: usize,
) {
    let header_len = if sub.is_some() {
        LOG_HEADER_LEN
    } else {
        OUTPUT_HEADER_LEN
    };
    // A chunk is at most a few hundred KiB (the runner cuts them), far below `u32::MAX`; a frame
    // over [`MAX_FRAME_LEN`] would be refused by the reader.
    let len = (header_len + data_len) as u32;
    buf.extend_from_slice(&len.to_be_bytes());
    match sub {
        Some(sub) => {
            buf.push(KIND_LOG);
            buf.extend_from_slice(&sub.to_be_bytes());
        }
        None => buf.push(KIND_OUTPUT),
    }
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.push(stream.as_byte());
    buf.extend_from_slice(&at.as_millis().to_be_bytes());
}

/// Decodes a binary frame body held whole in memory (the reader does not need this: it reads
/// the payload straight into the chunk's own buffer). The payload is copied.
pub fn decode_binary(body: &[u8]) -> Result<BinaryFrame, FrameError> {
    let kind = body
        .first()
        .copied()
        .ok_or_else(|| malformed("an empty frame".into()))?;
    let header_len = header_len(kind)?;
    if body.len() < header_len {
        return Err(short_header(kind, body.len(), header_len));
    }
    let header = Header::parse(&body[..header_len])?;
    Ok(header.with_data(body[header_len..].to_vec()))
}

fn short_header(kind: u8, len: usize, header_len: usize) -> FrameError {
    let name = if kind == KIND_LOG { "log" } else { "output" };
    malformed(format!(
        "a binary {name} frame of {len} bytes is shorter than its {header_len}-byte header"
    ))
}

/// A message that [`FrameReader::read`] can return. Every message has a JSON form, read with
/// serde; the two that carry output also take the binary form, by overriding
/// [`Decode::from_binary`].
pub trait Decode: DeserializeOwned {
    /// The message a binary frame stands for. By default a binary frame has no place here.
    fn from_binary(frame: BinaryFrame) -> Result<Self, FrameError> {
        Err(frame.unexpected())
    }
}

/// Encodes one message as a frame: length prefix and JSON body.
pub fn encode_frame<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut buf, msg).map_err(|e| FrameError::Malformed {
        detail: e.to_string(),
    })?;
    let len = buf.len() - 4;
    if len > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_FRAME_LEN,
        });
    }
    buf[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(buf)
}

/// Whether `msg` fits in one frame, found by counting its encoding rather than keeping it: a
/// message made from what a peer said (a server's tools, a CLI's call) is refused where it is
/// made when it cannot fit, rather than failing a link each time it is sent.
pub fn check_fits<T: Serialize>(msg: &T) -> Result<(), FrameError> {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, msg).map_err(|e| malformed(e.to_string()))?;
    if count.0 > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge {
            len: count.0,
            max: MAX_FRAME_LEN,
        });
    }
    Ok(())
}

/// Decodes a JSON frame body read by [`FrameReader::read_raw`]. Why a body is not valid is
/// said in at most [`QUOTE_MAX`] bytes, since serde's words quote the value they could not
/// take whole, and the error goes back to the peer that sent it.
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    if let Some(&first) = body.first()
        && is_binary(first)
    {
        return Err(malformed(format!(
            "a binary frame (kind {first:#04x}) came where a JSON message was expected"
        )));
    }
    serde_json::from_slice(body).map_err(|e| FrameError::Malformed {
        detail: shorten(&e.to_string(), QUOTE_MAX),
    })
}

/// The most bytes of why a frame is not valid that an error says: a few hundred, enough for
/// what was expected and where, however large the value it quotes.
pub const QUOTE_MAX: usize = 300;

/// `text` whole when it has at most `max` bytes, else its start and its end (where serde says
/// what it expected and at which line and column) around `…`, in at most `max` bytes; cut
/// between characters, never inside one.
pub fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    const ELLIPSIS: &str = "…";
    let room = max.saturating_sub(ELLIPSIS.len());
    let tail_want = room / 3;
    let mut head_end = room - tail_want;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - tail_want;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!("{}{ELLIPSIS}{}", &text[..head_end], &text[tail_start..])
}

/// Reads frames from a byte stream.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max: usize,
    /// The body of the last JSON frame, reused so a stream of frames costs no allocation each.
    body: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, inner),
            max: MAX_FRAME_LEN,
            body: Vec::new(),
        }
    }

    /// The next frame's length, or `None` when the peer closed the connection between frames.
    async fn read_len(&mut self) -> Result<Option<usize>, FrameError> {
        let mut len_buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            let n = self.inner.read(&mut len_buf[got..]).await?;
            if n == 0 {
                return if got == 0 {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated)
                };
            }
            got += n;
        }
        let len = u32::from_be_bytes(len_buf) as usize;
        if len > self.max {
            return Err(FrameError::TooLarge { len, max: self.max });
        }
        Ok(Some(len))
    }

    /// The next frame's body, or `None` when the peer closed the connection between frames.
    /// The body is valid until the next read. A binary frame's body is returned as it is.
    pub async fn read_raw(&mut self) -> Result<Option<&[u8]>, FrameError> {
        let Some(len) = self.read_len().await? else {
            return Ok(None);
        };
        self.body.clear();
        self.body.reserve(len);
        read_into(&mut self.inner, &mut self.body, len).await?;
        Ok(Some(&self.body))
    }

    /// The next frame decoded as `T`, JSON or binary, or `None` at a clean end of the
    /// connection.
    pub async fn read<T: Decode>(&mut self) -> Result<Option<T>, FrameError> {
        let Some(len) = self.read_len().await? else {
            return Ok(None);
        };
        if len > 0 {
            let first = match self.inner.fill_buf().await?.first() {
                Some(&b) => b,
                None => return Err(FrameError::Truncated),
            };
            if is_binary(first) {
                let frame = self.read_binary(first, len).await?;
                return T::from_binary(frame).map(Some);
            }
        }
        self.body.clear();
        self.body.reserve(len);
        read_into(&mut self.inner, &mut self.body, len).await?;
        decode_body(&self.body).map(Some)
    }

    /// Reads a binary frame of `len` bytes whose first byte is `kind`: the header into a small
    /// buffer, then the payload straight into a buffer of its own, which becomes the chunk's.
    /// A frame with a wrong header is read to its end, so the stream stays in step.
    async fn read_binary(&mut self, kind: u8, len: usize) -> Result<BinaryFrame, FrameError> {
        let header_len = match header_len(kind) {
            Ok(n) => n,
            Err(e) => {
                self.skip(len).await?;
                return Err(e);
            }
        };
        if len < header_len {
            self.skip(len).await?;
            return Err(short_header(kind, len, header_len));
        }
        let mut header = [0u8; LOG_HEADER_LEN];
        match self.inner.read_exact(&mut header[..header_len]).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(FrameError::Truncated);
            }
            Err(e) => return Err(FrameError::Io(e)),
        }
        let header = match Header::parse(&header[..header_len]) {
            Ok(h) => h,
            Err(e) => {
                self.skip(len - header_len).await?;
                return Err(e);
            }
        };
        let mut data = Vec::with_capacity(len - header_len);
        read_into(&mut self.inner, &mut data, len - header_len).await?;
        Ok(header.with_data(data))
    }

    /// Reads and drops `n` bytes.
    async fn skip(&mut self, n: usize) -> Result<(), FrameError> {
        let skipped = tokio::io::copy(
            &mut (&mut self.inner).take(n as u64),
            &mut tokio::io::sink(),
        )
        .await?;
        if skipped < n as u64 {
            return Err(FrameError::Truncated);
        }
        Ok(())
    }
}

/// Appends exactly `n` bytes from `r` to `buf`, straight into its spare capacity (no
/// zero-filling; a read of a buffer's size or more bypasses the `BufReader`'s own buffer).
async fn read_into<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    n: usize,
) -> Result<(), FrameError> {
    let end = buf.len() + n;
    while buf.len() < end {
        let want = (end - buf.len()) as u64;
        if (&mut *r).take(want).read_buf(buf).await? == 0 {
            return Err(FrameError::Truncated);
        }
    }
    Ok(())
}

/// The buffer of a [`FrameWriter`].
const WRITE_BUFFER: usize = 64 * 1024;

/// Writes frames to a byte stream, buffered: call [`FrameWriter::flush`] when a burst is done.
pub struct FrameWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner: BufWriter::with_capacity(WRITE_BUFFER, inner),
        }
    }

    /// Queues one message; it reaches the peer at the next flush or when the buffer fills.
    pub async fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), FrameError> {
        let frame = encode_frame(msg)?;
        self.send_encoded(&frame).await
    }

    /// Queues a frame already made by [`encode_frame`].
    pub async fn send_encoded(&mut self, frame: &[u8]) -> Result<(), FrameError> {
        self.inner.write_all(frame).await?;
        Ok(())
    }

    /// Queues a frame given in two parts, `head` then `body`. A large body is not copied into
    /// the buffer: what is buffered goes first, then the body straight from its own memory.
    pub async fn send_split(&mut self, head: &[u8], body: &[u8]) -> Result<(), FrameError> {
        self.inner.write_all(head).await?;
        if body.len() >= WRITE_BUFFER / 4 {
            self.inner.flush().await?;
            self.inner.get_mut().write_all(body).await?;
        } else {
            self.inner.write_all(body).await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> Result<(), FrameError> {
        self.inner.flush().await?;
        Ok(())
    }

    /// Sends one message and flushes.
    pub async fn send_now<T: Serialize>(&mut self, msg: &T) -> Result<(), FrameError> {
        self.send(msg).await?;
        self.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::process::{Pgid, Pid};
    use serde::Deserialize;

    /// Issue 44: a frame whose JSON held a 3 MB string of the wrong type was refused with
    /// serde's words, which quote the string whole, and they went back to the client.
    #[test]
    fn why_a_frame_is_not_valid_is_said_in_a_few_hundred_bytes_whatever_it_quotes() {
        let body = format!("{{\"n\":\"{}é\"}}", "x".repeat(3_000_000));
        let Err(FrameError::Malformed { detail }) = decode_body::<Ping>(body.as_bytes()) else {
            panic!("refused as malformed");
        };
        assert!(detail.len() <= QUOTE_MAX, "{} bytes", detail.len());
        assert!(detail.starts_with("invalid type: string \"xxx"), "{detail}");
        assert!(detail.contains('…'), "{detail}");
        assert!(
            detail.contains("é\", expected u32 at line 1 column "),
            "what was expected and where are kept: {detail}"
        );
        assert_eq!(shorten("short", 300), "short");
        let cut = shorten(&"é".repeat(400), 301);
        assert!(cut.len() <= 301 && cut.contains('…'), "{cut}");
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Ping {
        n: u32,
    }

    impl Decode for Ping {}

    /// A reader that can take binary frames: it reads them as `RunnerMsg`.
    fn reader_of(bytes: Vec<u8>) -> FrameReader<std::io::Cursor<Vec<u8>>> {
        FrameReader::new(std::io::Cursor::new(bytes))
    }

    /// A frame of the given body, length prefix first.
    fn framed(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    #[tokio::test]
    async fn frames_round_trip_in_order() -> Result<(), FrameError> {
        let (a, b) = tokio::io::duplex(1024);
        let writer = tokio::spawn(async move {
            let mut w = FrameWriter::new(a);
            for n in 0..100 {
                w.send(&Ping { n }).await?;
            }
            w.flush().await
        });
        let mut r = FrameReader::new(b);
        for n in 0..100 {
            assert_eq!(r.read::<Ping>().await?, Some(Ping { n }));
        }
        assert_eq!(r.read::<Ping>().await?, None);
        writer
            .await
            .map_err(|e| FrameError::Io(io::Error::other(e)))??;
        Ok(())
    }

    #[tokio::test]
    async fn binary_and_json_frames_mix_on_a_stream_that_delivers_a_few_bytes_at_a_time()
    -> Result<(), FrameError> {
        use super::super::fast::output_frame;
        use super::super::runner::{RunnerMsg, Started};
        let sizes = [0usize, 1, 17, 63, 64, 65, 1000, 70_000, 200_000];
        let (a, b) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut w = FrameWriter::new(a);
            for (i, &n) in sizes.iter().enumerate() {
                let data: Vec<u8> = (0..n).map(|j| (i + j) as u8).collect();
                w.send_encoded(&output_frame(
                    i as u64,
                    Stream::Stdout,
                    Timestamp::from_millis(i as u64),
                    &data,
                ))
                .await?;
                let started = Started {
                    pid: Pid::from_raw(i as i32),
                    pgid: Pgid::from_raw(1),
                    start_time: 2,
                    at: Timestamp::from_millis(3),
                    fence: None,
                };
                w.send(&RunnerMsg::Started(started)).await?;
            }
            w.flush().await
        });
        let mut r = FrameReader::new(b);
        for (i, &n) in sizes.iter().enumerate() {
            match r.read::<RunnerMsg>().await? {
                Some(RunnerMsg::Output(c)) => {
                    assert_eq!((c.seq, c.at.as_millis()), (i as u64, i as u64));
                    let want: Vec<u8> = (0..n).map(|j| (i + j) as u8).collect();
                    assert!(c.data.0 == want, "frame {i}");
                }
                other => panic!("{other:?}"),
            }
            match r.read::<RunnerMsg>().await? {
                Some(RunnerMsg::Started(s)) => assert_eq!(s.pid, Pid::from_raw(i as i32)),
                other => panic!("{other:?}"),
            }
        }
        assert!(r.read::<RunnerMsg>().await?.is_none());
        writer
            .await
            .map_err(|e| FrameError::Io(io::Error::other(e)))??;
        Ok(())
    }

    #[tokio::test]
    async fn a_malformed_frame_leaves_the_stream_in_step() -> Result<(), FrameError> {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&3u32.to_be_bytes()).await?;
        a.write_all(b"{x}").await?;
        a.write_all(&encode_frame(&Ping { n: 7 })?).await?;
        drop(a);
        let mut r = FrameReader::new(b);
        let err = r.read::<Ping>().await.err();
        assert!(matches!(err, Some(FrameError::Malformed { .. })), "{err:?}");
        assert!(err.is_some_and(|e| e.connection_usable()));
        assert_eq!(r.read::<Ping>().await?, Some(Ping { n: 7 }));
        Ok(())
    }

    #[tokio::test]
    async fn an_oversized_frame_is_refused_before_its_body_is_read() -> Result<(), FrameError> {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&u32::MAX.to_be_bytes()).await?;
        let mut r = FrameReader::new(b);
        let err = r.read::<Ping>().await.err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("a frame of 4294967295 bytes is over the limit of 4194304 bytes")
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_frame_cut_short_is_reported_as_truncated() -> Result<(), FrameError> {
        let (mut a, b) = tokio::io::duplex(1024);
        a.write_all(&10u32.to_be_bytes()).await?;
        a.write_all(b"{\"n\"").await?;
        drop(a);
        let mut r = FrameReader::new(b);
        assert!(matches!(r.read::<Ping>().await, Err(FrameError::Truncated)));
        Ok(())
    }

    fn output_body(stream: u8, data: &[u8]) -> Vec<u8> {
        let mut b = vec![KIND_OUTPUT];
        b.extend_from_slice(&7u64.to_be_bytes());
        b.push(stream);
        b.extend_from_slice(&42u64.to_be_bytes());
        b.extend_from_slice(data);
        b
    }

    async fn read_output(
        r: &mut FrameReader<std::io::Cursor<Vec<u8>>>,
    ) -> Result<Option<OutputChunk>, FrameError> {
        use super::super::runner::RunnerMsg;
        match r.read::<RunnerMsg>().await? {
            Some(RunnerMsg::Output(c)) => Ok(Some(c)),
            Some(other) => Err(malformed(format!("not output: {other:?}"))),
            None => Ok(None),
        }
    }

    #[tokio::test]
    async fn a_binary_output_frame_reads_field_by_field() -> Result<(), FrameError> {
        let mut r = reader_of(framed(&output_body(2, b"\xff\x00raw")));
        let c = read_output(&mut r).await?;
        let c = c.ok_or_else(|| malformed("no frame".into()))?;
        assert_eq!((c.seq, c.stream, c.at.as_millis()), (7, Stream::Stderr, 42));
        assert_eq!(c.data.as_slice(), b"\xff\x00raw");
        assert!(read_output(&mut r).await?.is_none());
        Ok(())
    }

    #[tokio::test]
    async fn a_short_or_wrong_binary_header_is_malformed_and_the_stream_stays_in_step()
    -> Result<(), FrameError> {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                vec![KIND_OUTPUT, 0, 0, 0],
                "a binary output frame of 4 bytes is shorter than its 18-byte header",
            ),
            (
                vec![KIND_LOG; 25],
                "a binary log frame of 25 bytes is shorter than its 26-byte header",
            ),
            (
                output_body(9, b"data"),
                "a binary frame names stream 9, which is none of 1 (stdout), 2 (stderr), 3 (note)",
            ),
            (vec![0x07, 1, 2, 3], "unknown binary frame kind 0x07"),
        ];
        for (body, want) in cases {
            let mut bytes = framed(&body);
            bytes.extend_from_slice(&framed(&output_body(1, b"next")));
            let mut r = reader_of(bytes.clone());
            match read_output(&mut r).await {
                Err(e @ FrameError::Malformed { .. }) => {
                    assert!(e.connection_usable());
                    assert_eq!(e.to_string(), format!("a frame is not valid: {want}"));
                }
                other => panic!("{other:?} for {body:?}"),
            }
            let next = read_output(&mut r).await?.map(|c| c.data.0);
            assert_eq!(next.as_deref(), Some(&b"next"[..]));
            // The same body held in memory is refused with the same words.
            let whole = decode_binary(&body).err().map(|e| e.to_string());
            assert_eq!(whole, Some(format!("a frame is not valid: {want}")));
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_binary_frame_cut_short_is_truncated() {
        for cut in [5, 4 + OUTPUT_HEADER_LEN - 1, 4 + OUTPUT_HEADER_LEN + 2] {
            let mut bytes = framed(&output_body(1, b"0123456789"));
            bytes.truncate(cut);
            let mut r = reader_of(bytes);
            let got = read_output(&mut r).await;
            assert!(
                matches!(got, Err(FrameError::Truncated)),
                "cut {cut}: {got:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_binary_frame_where_json_is_expected_is_malformed() -> Result<(), FrameError> {
        let mut bytes = framed(&output_body(1, b"x"));
        bytes.extend_from_slice(&encode_frame(&Ping { n: 1 })?);
        let mut r = reader_of(bytes);
        let err = r.read::<Ping>().await.err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("a frame is not valid: a binary output frame came where it has no place")
        );
        assert_eq!(r.read::<Ping>().await?, Some(Ping { n: 1 }));
        // Read raw, then decoded as JSON: refused in words, not as bad JSON.
        let mut r = reader_of(framed(&output_body(1, b"x")));
        let body = r.read_raw().await?.map(<[u8]>::to_vec).unwrap_or_default();
        let err = decode_body::<Ping>(&body).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "a frame is not valid: a binary frame (kind 0x01) came where a JSON message was expected"
            )
        );
        Ok(())
    }

    #[tokio::test]
    async fn an_oversized_binary_frame_is_refused_before_its_body_is_read() {
        let data = vec![b'x'; MAX_FRAME_LEN];
        let frame = super::super::fast::output_frame(1, Stream::Stdout, Timestamp::now(), &data);
        let mut r = reader_of(frame);
        let err = read_output(&mut r).await.err();
        assert!(
            matches!(err, Some(FrameError::TooLarge { len, max: MAX_FRAME_LEN }) if len == MAX_FRAME_LEN + OUTPUT_HEADER_LEN),
            "{err:?}"
        );
        assert!(err.is_some_and(|e| !e.connection_usable()));
    }
}
