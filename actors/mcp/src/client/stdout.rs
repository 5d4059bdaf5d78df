//! What a stdio server writes on stdout, read on its way to rmcp's transport: the first few KiB
//! kept ([`Sniff`], to tell afterwards whether it spoke MCP at all), and each line counted
//! ([`LineWatch`]), because the transport drops a message past [`MESSAGE_MAX`] without a word
//! and the request it answered would wait for its deadline.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

use crate::redact::Redactor;

/// The most bytes of one message bosun reads from a stdio server: rmcp's own default, set here
/// so that the transport and [`LineWatch`] agree on it (and the same as rmcp's limit of one
/// event over HTTP).
pub const MESSAGE_MAX: usize = 16 * 1024 * 1024;

/// A message of the server's past [`MESSAGE_MAX`], which rmcp's transport drops without a word:
/// which line of its stdout it is (from 0), how many bytes of it were seen, and whether it
/// ended (its newline came).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Oversize {
    pub(super) line: u64,
    pub(super) bytes: u64,
    pub(super) ended: bool,
}

/// The message past [`MESSAGE_MAX`] seen since the request began (when `before` was the
/// last), if any.
pub(super) fn seen(
    oversize: Option<&watch::Receiver<Option<Oversize>>>,
    before: Option<Oversize>,
) -> Option<Oversize> {
    oversize
        .and_then(|o| *o.borrow())
        .filter(|now| Some(*now) != before)
}

/// Waits until a message past [`MESSAGE_MAX`] has come whole; never, over HTTP or once the
/// server's stdout is closed.
pub(super) async fn ended_oversize(
    oversize: Option<&mut watch::Receiver<Option<Oversize>>>,
) -> Oversize {
    if let Some(o) = oversize {
        while o.changed().await.is_ok() {
            if let Some(whole) = o.borrow_and_update().filter(|x| x.ended) {
                return whole;
            }
        }
    }
    std::future::pending().await
}

/// Counts the bytes of each line (each JSON-RPC message) a stdio server writes, and tells of
/// one past [`MESSAGE_MAX`]: as soon as no newline could make it fit, and again, with its size,
/// when it ends. rmcp's transport, which reads through this, drops such a line and waits for
/// the next.
pub(super) struct LineWatch<R> {
    inner: R,
    /// Lines ended so far: the current line's number.
    lines: u64,
    /// Bytes of the current line so far, its newline not counted.
    line: u64,
    oversize: watch::Sender<Option<Oversize>>,
}

impl<R> LineWatch<R> {
    /// Reads `inner`, telling `oversize` of each line past [`MESSAGE_MAX`].
    pub(super) fn new(inner: R, oversize: watch::Sender<Option<Oversize>>) -> Self {
        Self {
            inner,
            lines: 0,
            line: 0,
            oversize,
        }
    }

    fn saw(&mut self, bytes: &[u8]) {
        let max = MESSAGE_MAX as u64;
        let mut rest = bytes;
        loop {
            let newline = rest.iter().position(|b| *b == b'\n');
            let take = newline.unwrap_or(rest.len());
            let before = self.line;
            self.line += take as u64;
            // As rmcp counts: a line is too long when it and its newline are over the limit.
            let over = |len: u64| len + 1 > max;
            let ended = newline.is_some();
            // Told when it goes past the limit, and again when it ends.
            if over(self.line) && (ended || !over(before)) {
                self.oversize.send_replace(Some(Oversize {
                    line: self.lines,
                    bytes: self.line,
                    ended,
                }));
            }
            match newline {
                Some(i) => {
                    self.lines += 1;
                    self.line = 0;
                    rest = &rest[i + 1..];
                }
                None => return,
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineWatch<R> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        this.saw(&buf.filled()[before..]);
        poll
    }
}

/// The lines a stdio server wrote on stdout that cannot be JSON-RPC (they do not start with
/// `{`), counted, with the first one kept cut: rmcp passes over them, so a server that writes
/// only such lines would seem silent, and its request time out for no reason anyone could see.
pub(super) struct OddLines {
    /// The server's secret values, written `[redacted]` in what is kept.
    pub(super) redactor: Redactor,
    /// In the middle of a line (a line of JSON can come in many reads).
    pub(super) mid_line: bool,
    pub(super) count: u64,
    pub(super) first: String,
}

impl OddLines {
    fn read(&mut self, bytes: &[u8]) {
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                self.mid_line = false;
            } else if !self.mid_line && !b.is_ascii_whitespace() {
                self.mid_line = true;
                if b != b'{' {
                    self.count += 1;
                    if self.first.is_empty() {
                        let rest = &bytes[i..];
                        let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
                        let line = String::from_utf8_lossy(&rest[..end]);
                        self.first = super::cut(&self.redactor.text(&line), 80);
                    }
                }
            }
        }
    }

    /// What a request that timed out should say of them, if there were any.
    pub(super) fn hint(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        format!(
            " (but it wrote {} line{} on stdout that {} not JSON-RPC, the first `{}`: its answer may be among them)",
            self.count,
            if self.count == 1 { "" } else { "s" },
            if self.count == 1 { "is" } else { "are" },
            bosun_shared::text::visible(&self.first)
        )
    }
}

/// Keeps the first few KiB a server writes on stdout, to tell afterwards whether it was MCP.
pub(super) struct Sniff<R> {
    pub(super) inner: R,
    pub(super) seen: Arc<Mutex<Vec<u8>>>,
    pub(super) odd: Arc<Mutex<OddLines>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Sniff<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Ok(mut odd) = self.odd.lock() {
            odd.read(&buf.filled()[before..]);
        }
        if let Ok(mut seen) = self.seen.lock()
            && seen.len() < 4096
        {
            let new = &buf.filled()[before..];
            let room = 4096 - seen.len();
            seen.extend_from_slice(&new[..new.len().min(room)]);
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44: a stdio server's answer past [`MESSAGE_MAX`] was dropped by rmcp without a
    /// word, and the call waited for its deadline. The watch under the transport tells of it
    /// as rmcp counts it (a line and its newline over the limit), however it is cut into reads:
    /// when it goes past, and with its size when it ends.
    #[test]
    fn a_line_past_the_limit_is_told_when_it_goes_past_and_when_it_ends() {
        let (tx, rx) = watch::channel(None);
        let mut w = LineWatch::new((), tx);
        // At the limit with its newline: read by rmcp, nothing to tell.
        let fits = vec![b'x'; MESSAGE_MAX - 1];
        w.saw(b"{\"a\":1}\n");
        w.saw(&fits[..1000]);
        w.saw(&fits[1000..]);
        w.saw(b"\n");
        assert_eq!(*rx.borrow(), None);
        // One byte more, cut anywhere: told as soon as no newline could make it fit, then
        // whole.
        w.saw(&fits);
        assert_eq!(*rx.borrow(), None);
        w.saw(b"x");
        let past = Some(Oversize {
            line: 2,
            bytes: MESSAGE_MAX as u64,
            ended: false,
        });
        assert_eq!(*rx.borrow(), past);
        w.saw(b"yz");
        assert_eq!(*rx.borrow(), past, "told once while it goes on");
        w.saw(b"\n{\"b\":2}\n");
        assert_eq!(
            *rx.borrow(),
            Some(Oversize {
                line: 2,
                bytes: MESSAGE_MAX as u64 + 2,
                ended: true
            })
        );
        assert_eq!((w.lines, w.line), (4, 0));
    }
}
