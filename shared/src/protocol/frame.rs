//! The one frame codec: a big-endian `u32` length, then that many bytes of JSON.
//!
//! A frame longer than [`MAX_FRAME_LEN`] is refused before its body is read: the reader reports
//! [`FrameError::TooLarge`] and the connection must be closed, because skipping gigabytes to find
//! the next frame is not worth it. A frame of the right length whose JSON is not of the expected
//! shape is consumed whole and reported as [`FrameError::Malformed`]; the connection stays in
//! step and can go on.

use std::io;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

/// The longest frame either side accepts: 4 MiB.
pub const MAX_FRAME_LEN: usize = 4 * 1024 * 1024;

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
    /// The frame was read whole but is not JSON of the expected shape. The connection is still
    /// in step.
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

/// Decodes a frame body read by [`FrameReader::read_raw`].
pub fn decode_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Malformed {
        detail: e.to_string(),
    })
}

/// Reads frames from a byte stream.
pub struct FrameReader<R> {
    inner: BufReader<R>,
    max: usize,
    /// The body of the last frame, reused so a stream of frames costs no allocation each.
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

    /// The next frame's body, or `None` when the peer closed the connection between frames.
    /// The body is valid until the next read.
    pub async fn read_raw(&mut self) -> Result<Option<&[u8]>, FrameError> {
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
        self.body.clear();
        self.body.reserve(len);
        // Read straight into spare capacity: no zero-filling of every frame's buffer.
        match (&mut self.inner)
            .take(len as u64)
            .read_to_end(&mut self.body)
            .await
        {
            Ok(n) if n == len => Ok(Some(&self.body)),
            Ok(_) => Err(FrameError::Truncated),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(FrameError::Truncated),
            Err(e) => Err(FrameError::Io(e)),
        }
    }

    /// The next frame decoded as `T`, or `None` at a clean end of the connection.
    pub async fn read<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        match self.read_raw().await? {
            Some(body) => decode_body(body).map(Some),
            None => Ok(None),
        }
    }
}

/// Writes frames to a byte stream, buffered: call [`FrameWriter::flush`] when a burst is done.
pub struct FrameWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner: BufWriter::with_capacity(64 * 1024, inner),
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
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Ping {
        n: u32,
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
}
