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
    (ReadHalf(shared.clone()), WriteHalf(shared))
}

/// The reading half of a connection.
pub struct ReadHalf(Arc<Stream>);

/// The writing half of a connection.
pub struct WriteHalf(Arc<Stream>);

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut s: &Stream = &self.0;
        Pin::new(&mut s).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut s: &Stream = &self.0;
        Pin::new(&mut s).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut s: &Stream = &self.0;
        Pin::new(&mut s).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut s: &Stream = &self.0;
        Pin::new(&mut s).poll_shutdown(cx)
    }
}
