//! The local socket every bosun connection runs over: a Unix socket file in the state directory,
//! through `interprocess`. A connection is split into a read half and a write half that can live
//! in different tasks.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ToFsName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Connects to the socket file at `path`.
pub async fn connect(path: &Path) -> io::Result<Stream> {
    let name = path.to_fs_name::<GenericFilePath>()?;
    Stream::connect(name).await
}

/// The effective uid of the process at the other end.
pub fn peer_uid(stream: &Stream) -> io::Result<u32> {
    let creds = stream.peer_creds()?;
    creds
        .euid()
        .ok_or_else(|| io::Error::other("the peer's credentials are not available"))
}

/// The pid of the process at the other end, when the kernel tells it.
pub fn peer_pid(stream: &Stream) -> Option<u32> {
    stream
        .peer_creds()
        .ok()
        .and_then(|c| c.pid())
        .map(|p| p as u32)
}

/// Splits a connection into halves that share it.
pub fn split(stream: Stream) -> (ReadHalf, WriteHalf) {
    let shared = Arc::new(stream);
    (
        ReadHalf(ReadInner::Local(shared.clone())),
        WriteHalf(WriteInner::Local(shared)),
    )
}

/// Splits any other connection (the runner link over TLS) into the same halves, so that one
/// session and one link serve both kinds.
pub fn split_any<S>(stream: S) -> (ReadHalf, WriteHalf)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (r, w) = tokio::io::split(stream);
    (
        ReadHalf(ReadInner::Other(Box::pin(r))),
        WriteHalf(WriteInner::Other(Box::pin(w))),
    )
}

/// The reading half of a connection.
pub struct ReadHalf(ReadInner);

/// The writing half of a connection.
pub struct WriteHalf(WriteInner);

enum ReadInner {
    Local(Arc<Stream>),
    Other(Pin<Box<dyn AsyncRead + Send>>),
}

enum WriteInner {
    Local(Arc<Stream>),
    Other(Pin<Box<dyn AsyncWrite + Send>>),
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.0 {
            ReadInner::Local(shared) => {
                let mut s: &Stream = shared;
                Pin::new(&mut s).poll_read(cx, buf)
            }
            ReadInner::Other(r) => r.as_mut().poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.0 {
            WriteInner::Local(shared) => {
                let mut s: &Stream = shared;
                Pin::new(&mut s).poll_write(cx, buf)
            }
            WriteInner::Other(w) => w.as_mut().poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.0 {
            WriteInner::Local(shared) => {
                let mut s: &Stream = shared;
                Pin::new(&mut s).poll_flush(cx)
            }
            WriteInner::Other(w) => w.as_mut().poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.0 {
            WriteInner::Local(shared) => {
                let mut s: &Stream = shared;
                Pin::new(&mut s).poll_shutdown(cx)
            }
            WriteInner::Other(w) => w.as_mut().poll_shutdown(cx),
        }
    }
}
