//! The data path of an allowed connection: bytes both ways between the client and the host,
//! each direction its own loop that reads into a buffer of its own and writes it on, counted
//! exactly as the receiving side accepts them.
//!
//! A direction's buffer starts at [`FIRST`] bytes and grows fourfold, up to [`MOST`], each time
//! a read fills it: a request, an answer or a keystroke moves through a small buffer, and a
//! download is read and written a mebibyte at a time. With the large buffer a 100 MB download
//! takes about a hundred reads and a hundred writes, so what a byte costs is the kernel's work,
//! not the runner's.
//!
//! When a direction's source ends, the other side's write half is shut down; the other
//! direction goes on until its own source ends. The first error ends both directions.
//!
//! # Why it copies rather than splices
//! Through a loopback proxy (bosun's download benchmark), `splice(2)` through 1 MiB pipes cost
//! more CPU in all than this copy, and was slower: the client's reads got dearer (from about 30
//! ms to about 60 ms of curl's CPU per 100 MB), which outweighed the two copies the proxy saves
//! (its own CPU about 15 ms against 28 ms). Measured on 2026-12-08, see
//! `docs/benchmarks-history.md`. On a real network a copying proxy moves a few GB/s per core,
//! more than the links it serves.
//!
//! # Caveats
//! - A connection that once moved a bulk transfer keeps its [`MOST`]-byte buffer in that
//!   direction until it closes.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};

use super::Connection;

/// The buffer a direction starts with.
const FIRST: usize = 16 * 1024;
/// The largest a direction's buffer grows to. (Through a loopback proxy, 1 MiB buffers moved a
/// download about a fifth faster than 64 KiB or 256 KiB ones.)
pub(super) const MOST: usize = 1 << 20;

/// Writes `first` to the host, then moves bytes both ways until both sides are done, counting
/// in `conn` the bytes each side was given; a failure is set in words.
pub(super) async fn pipe(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    first: &[&[u8]],
    conn: &mut Connection,
) {
    let Connection {
        bytes_up,
        bytes_down,
        failure,
        ..
    } = conn;
    for bytes in first {
        if let Err(e) = write_all(upstream, bytes, bytes_up).await {
            *failure = Some(format!("could not write to the host: {e}"));
            return;
        }
    }
    let (client_read, client_write) = client.split();
    let (upstream_read, upstream_write) = upstream.split();
    let up = direction(client_read, upstream_write, bytes_up);
    let down = direction(upstream_read, client_write, bytes_down);
    if let Err(e) = tokio::try_join!(up, down) {
        *failure = Some(format!("the connection broke: {e}"));
    }
}

/// Moves bytes from `from` to `to` until `from` ends, then shuts down `to`'s write half;
/// `count` grows by each byte `to` accepts.
async fn direction(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    count: &mut u64,
) -> io::Result<()> {
    let mut buffer = vec![0; FIRST];
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        write_all(&mut to, &buffer[..read], count).await?;
        if read == buffer.len() && buffer.len() < MOST {
            buffer = vec![0; (buffer.len() * 4).min(MOST)];
        }
    }
    to.shutdown().await
}

/// Writes all of `bytes`, counting each byte written even when a later write fails.
async fn write_all<W: AsyncWrite + Unpin>(
    to: &mut W,
    mut bytes: &[u8],
    count: &mut u64,
) -> io::Result<()> {
    while !bytes.is_empty() {
        let written = to.write(bytes).await?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        *count += written as u64;
        bytes = &bytes[written..];
    }
    Ok(())
}
