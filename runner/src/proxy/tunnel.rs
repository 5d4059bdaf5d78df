//! The data path of an allowed connection: bytes both ways between the client and the host,
//! each direction its own loop, moved with splice(2) through a pipe of the direction's own so
//! they never enter the runner's memory, and counted exactly as the receiving side accepts
//! them.
//!
//! A direction fills its pipe from one socket only when the pipe is empty, and drains it into
//! the other socket until it is empty again. With `SPLICE_F_NONBLOCK`, EAGAIN does not say
//! which end would block; an empty pipe always has room and a non-empty one always has bytes,
//! so EAGAIN can only mean the socket, and clearing that socket's readiness (what `try_io` does
//! on `WouldBlock`) never waits on a pipe that no event will wake.
//!
//! When a direction's source ends, the pipe is drained and the other side's write half is
//! shut down; the other direction goes on until its own source ends. The first error ends
//! both directions.
//!
//! # Caveats
//! - A direction whose pipe cannot be made (out of descriptors) or whose splice is refused with
//!   EINVAL or ENOSYS (a kernel or a seccomp filter without it) copies through a buffer of
//!   [`BUFFER`] bytes instead; bytes already in its pipe are read out and delivered first.
//! - Each pipe asks for [`PIPE`] bytes of capacity. The kernel refuses more than
//!   `/proc/sys/fs/pipe-max-size` (1 MiB by default) and stops growing a user's pipes past
//!   `/proc/sys/fs/pipe-user-pages-soft` (64 MiB by default, shared by every process of the
//!   user), so past about thirty open connections new pipes keep the default 64 KiB and move
//!   less per call. That is slower, never wrong.

use std::io;

use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::net::tcp::{ReadHalf, WriteHalf};

use super::Connection;

/// The capacity asked of each direction's pipe: the most one splice call moves, so a 64 MiB
/// download takes about 130 calls rather than 2,000 with the default 64 KiB. (On a busy
/// two-core machine the speed of the two sizes differed within the noise.)
pub(super) const PIPE: usize = 1 << 20;
/// The buffer of a direction that copies instead (see the caveats).
const BUFFER: usize = 128 * 1024;

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
    if let Some(left) = splice_all(from.as_ref(), to.as_ref(), count).await? {
        write_all(&mut to, &left, count).await?;
        let mut buffer = vec![0; BUFFER];
        loop {
            let read = from.read(&mut buffer).await?;
            if read == 0 {
                break;
            }
            write_all(&mut to, &buffer[..read], count).await?;
        }
    }
    to.shutdown().await
}

/// Splices from `from` to `to` through a pipe until `from` ends (None), or until splice is
/// refused: then Some of the bytes left in the pipe, which the caller delivers before copying.
async fn splice_all(
    from: &TcpStream,
    to: &TcpStream,
    count: &mut u64,
) -> io::Result<Option<Vec<u8>>> {
    let Ok((pipe_out, pipe_in)) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC) else {
        return Ok(Some(Vec::new()));
    };
    // A refused size (over the limits in the caveats) leaves the default, which still works.
    let _ = fcntl(&pipe_in, FcntlArg::F_SETPIPE_SZ(PIPE as i32));
    loop {
        let filled = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || splice(from, &pipe_in, PIPE)) {
                Ok(filled) => break filled,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if refused(&e) => return Ok(Some(Vec::new())),
                Err(e) => return Err(e),
            }
        };
        if filled == 0 {
            return Ok(None);
        }
        let mut in_pipe = filled;
        while in_pipe > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || splice(&pipe_out, to, in_pipe)) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(moved) => {
                    in_pipe -= moved;
                    *count += moved as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if refused(&e) => {
                    // The pipe holds `in_pipe` bytes and is non-blocking, so each read gets
                    // some until they are all out.
                    let mut left = vec![0; in_pipe];
                    let mut at = 0;
                    while at < in_pipe {
                        match nix::unistd::read(&pipe_out, &mut left[at..])? {
                            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                            read => at += read,
                        }
                    }
                    return Ok(Some(left));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// One non-blocking splice of up to `len` bytes.
fn splice(
    from: impl std::os::fd::AsFd,
    to: impl std::os::fd::AsFd,
    len: usize,
) -> io::Result<usize> {
    #[cfg(test)]
    seam::call()?;
    let flags = SpliceFFlags::SPLICE_F_NONBLOCK | SpliceFFlags::SPLICE_F_MOVE;
    Ok(nix::fcntl::splice(from, None, to, None, len, flags)?)
}

/// Whether splice is refused outright here, rather than failing on this connection.
fn refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
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

/// A seam for the proxy's tests: splice calls are counted per thread, and can be refused.
#[cfg(test)]
pub(super) mod seam {
    use std::cell::Cell;
    use std::io;

    thread_local! {
        /// The splice calls made on this thread.
        static MADE: Cell<u64> = const { Cell::new(0) };
        /// The count of calls past which every call is refused with EINVAL; None never refuses.
        static REFUSE_PAST: Cell<Option<u64>> = const { Cell::new(None) };
    }

    /// Refuses every splice call on this thread after `calls` more succeed.
    pub(in super::super) fn refuse_after(calls: u64) {
        REFUSE_PAST.with(|past| past.set(Some(MADE.with(Cell::get) + calls)));
    }

    /// The splice calls made on this thread so far, refused ones not counted.
    pub(in super::super) fn made() -> u64 {
        MADE.with(Cell::get)
    }

    pub(super) fn call() -> io::Result<()> {
        let made = MADE.with(Cell::get);
        if REFUSE_PAST.with(Cell::get).is_some_and(|past| made >= past) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        MADE.with(|m| m.set(made + 1));
        Ok(())
    }
}
