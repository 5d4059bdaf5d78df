//! Relays the program's stdout and stderr into the outbox as sequence-numbered chunks.
//!
//! Both pipes are read by one task, so chunks get their seqs in the order output arrived. A
//! chunk holds whole lines, gathered for a few milliseconds so that a program writing one line
//! per write still makes few, large chunks (per-chunk costs, not bytes, are what limit
//! throughput). What follows the last newline waits for the rest of its line, but no longer
//! than [`PARTIAL_FLUSH`] (a prompt or a progress bar must show up live), and is sent in pieces
//! of [`MAX_LINE`] as soon as that much of it waits (memory stays bounded however long a line
//! is). A long line whose newline comes in the same read as the rest of it goes whole, so a chunk
//! holds at most the lines waiting, one read and a piece (under ~450 KiB). Bytes are kept as they
//! are; a split falls on a UTF-8 character boundary when there is one nearby.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_shared::Timestamp;
use bosun_shared::run::Stream;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::outbox::Outbox;
use crate::redact::Redactor;

/// How long a line without its newline waits before it is sent as it is.
const PARTIAL_FLUSH: Duration = Duration::from_millis(100);
/// How long the end of an unfinished line that could be the start of a secret value waits for
/// the rest (a value split between two reads) before it is sent as it is.
const SECRET_HOLD: Duration = Duration::from_secs(1);
/// How long whole lines wait for more before they are sent.
const BATCH_DELAY: Duration = Duration::from_millis(5);
/// Whole lines are sent at once when this many bytes of them are waiting.
const BATCH_BYTES: usize = 192 * 1024;
/// The longest piece of a single line sent as one chunk.
pub const MAX_LINE: usize = 64 * 1024;
const READ_BUF: usize = 256 * 1024;
/// How often a held outbox tries its spool again (acks try it too, at once).
const HOLD_RETRY: Duration = Duration::from_millis(200);

/// Where chunks go: the outbox, and a nudge to the link that there is something to send.
#[derive(Clone)]
pub struct Sink {
    pub outbox: Arc<Mutex<Outbox>>,
    pub wake: Arc<Notify>,
    pub cap: Arc<OutputCap>,
    /// A copy of the program's stdout for the control protocol's driver, when the program
    /// is a CLI driven through one.
    pub tap: Option<tokio::sync::mpsc::UnboundedSender<Vec<u8>>>,
    /// The run's secret values, replaced in its output.
    pub redactor: Arc<Redactor>,
    /// How the lines of stdout begin that are not kept (the plan's `drop_lines`).
    pub drop_lines: Arc<[Box<[u8]>]>,
}

/// The run's output cap (`--max-output`): how much of the program's output is kept.
#[derive(Debug, Default)]
pub struct OutputCap {
    max: Option<u64>,
    /// Bytes of the program's output kept so far.
    kept: Mutex<u64>,
}

impl OutputCap {
    pub fn new(max: Option<u64>) -> Self {
        Self {
            max,
            kept: Mutex::new(0),
        }
    }

    /// How many of `len` more bytes are kept, and whether these reach the cap.
    fn take(&self, len: usize) -> (usize, bool) {
        let Some(max) = self.max else {
            return (len, false);
        };
        let Ok(mut kept) = self.kept.lock() else {
            return (len, false);
        };
        let room = max.saturating_sub(*kept);
        if room == 0 {
            return (0, false);
        }
        let take = usize::try_from(room).map_or(len, |r| r.min(len));
        *kept += take as u64;
        (take, *kept >= max)
    }
}

impl Sink {
    /// bosun's own lines about the run, in its log before the program's output. Each is one
    /// line, whatever it quotes (a server's tool name, its error): its control characters are
    /// written out, since `bosun logs` prints notes as they are.
    pub fn notes(&self, notes: &[String]) {
        for n in notes {
            let line = bosun_shared::text::visible(n);
            self.emit(Stream::Note, format!("{line}\n").into_bytes());
        }
    }

    fn emit(&self, stream: Stream, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let mut bytes = self.redactor.apply(bytes);
        if stream != Stream::Note {
            let (keep, reached) = self.cap.take(bytes.len());
            bytes.truncate(keep);
            if reached {
                self.push(stream, bytes);
                let max = self.cap.max.unwrap_or_default();
                self.push(
                    Stream::Note,
                    format!("the output cap of {max} bytes is reached (--max-output): the program goes on, and what it writes from here is not kept\n").into_bytes(),
                );
                return;
            }
        }
        self.push(stream, bytes);
    }

    fn push(&self, stream: Stream, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let at = Timestamp::now();
        if let Ok(mut outbox) = self.outbox.lock() {
            outbox.push_output(stream, at, bytes);
        }
        self.wake.notify_one();
    }

    /// Why output must wait now (the spool cannot be written), if it must.
    fn hold(&self) -> Option<(String, &'static str)> {
        let outbox = self.outbox.lock().ok()?;
        outbox.held().then(|| {
            let why = outbox.fault().map(|e| e.to_string()).unwrap_or_default();
            (why, outbox.held_where())
        })
    }

    /// Waits while the outbox is held, trying the spool again now and then, so that the
    /// program's output stays in its pipe (and the program waits) rather than being dropped.
    /// Returns true when `finish` fired meanwhile.
    async fn wait_for_room(&self, finish: &mut oneshot::Receiver<()>) -> bool {
        let Some((why, what)) = self.hold() else {
            return false;
        };
        say!("bosun-runner: output is held, {what} could not be written: {why}");
        self.emit(
            Stream::Note,
            format!("output is held: {what} could not be written ({why}); the program waits until there is room\n").into_bytes(),
        );
        loop {
            tokio::select! {
                _ = tokio::time::sleep(HOLD_RETRY) => {}
                _ = &mut *finish => return true,
            }
            if let Ok(mut outbox) = self.outbox.lock() {
                outbox.retry();
            }
            self.wake.notify_one();
            if self.hold().is_none() {
                break;
            }
        }
        say!("bosun-runner: output flows again");
        self.emit(Stream::Note, b"output flows again\n".to_vec());
        false
    }
}

/// What one stream has read and not sent yet: complete lines first, then the start of a line
/// whose newline has not come.
struct Pending {
    stream: Stream,
    buf: Vec<u8>,
    /// `buf[..complete]` ends with a newline.
    complete: usize,
    /// When complete lines started waiting in `buf`.
    lines_since: Option<Instant>,
    /// When an unfinished line started waiting.
    partial_since: Option<Instant>,
    /// Since when the end of the unfinished line is held back, as it could be the start of a
    /// secret value; after [`SECRET_HOLD`] it goes as it is.
    held_back: Option<Instant>,
}

impl Pending {
    fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            complete: 0,
            lines_since: None,
            partial_since: None,
            held_back: None,
        }
    }

    /// Takes in freshly read bytes. Whole lines wait a moment (up to [`BATCH_DELAY`] or
    /// [`BATCH_BYTES`]) so that a program writing line by line still makes few, large chunks.
    fn feed(&mut self, data: &[u8], sink: &Sink) {
        let now = Instant::now();
        let old_len = self.buf.len();
        self.held_back = None;
        self.buf.extend_from_slice(data);
        if let Some(pos) = data.iter().rposition(|&b| b == b'\n') {
            let judged = self.complete;
            self.complete = old_len + pos + 1;
            if self.stream == Stream::Stdout {
                self.drop_lines(judged, &sink.drop_lines);
            }
            self.lines_since.get_or_insert(now);
        }
        if self.complete >= BATCH_BYTES {
            self.send_lines(sink);
        }
        while self.buf.len() - self.complete >= MAX_LINE {
            // A line too long to wait for: send what is before it, then a piece of it.
            self.send_lines(sink);
            let cut = char_boundary_at_most(&self.buf, MAX_LINE);
            // Never inside what may be a secret value: the rest waits for the next piece.
            let cut = sink.redactor.safe_cut(&self.buf, cut).max(cut / 2);
            let rest = self.buf.split_off(cut);
            sink.emit(self.stream, std::mem::replace(&mut self.buf, rest));
        }
        self.partial_since = if self.buf.len() > self.complete {
            self.partial_since.or(Some(now))
        } else {
            None
        };
    }

    /// Takes out of the complete lines from `from` (a line's start) those that begin with one
    /// of `drop`.
    fn drop_lines(&mut self, from: usize, drop: &[Box<[u8]>]) {
        if drop.is_empty() {
            return;
        }
        let (mut kept, mut at) = (from, from);
        while at < self.complete {
            let end = self.buf[at..self.complete]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(self.complete, |i| at + i + 1);
            if !drop.iter().any(|d| self.buf[at..end].starts_with(d)) {
                self.buf.copy_within(at..end, kept);
                kept += end - at;
            }
            at = end;
        }
        self.buf.drain(kept..self.complete);
        self.complete = kept;
    }

    /// Sends the complete lines waiting, if any.
    fn send_lines(&mut self, sink: &Sink) {
        if self.complete > 0 {
            let rest = self.buf.split_off(self.complete);
            sink.emit(self.stream, std::mem::replace(&mut self.buf, rest));
            self.complete = 0;
        }
        self.lines_since = None;
    }

    /// Sends everything waiting, an unfinished line included.
    fn send_all(&mut self, sink: &Sink) {
        self.complete = 0;
        self.lines_since = None;
        self.partial_since = None;
        sink.emit(self.stream, std::mem::take(&mut self.buf));
    }

    fn deadline(&self) -> Option<Instant> {
        let lines = self.lines_since.map(|t| t + BATCH_DELAY);
        let partial = self.partial_since.map(|t| t + PARTIAL_FLUSH);
        lines.into_iter().chain(partial).min()
    }

    /// Sends what is due at `now`.
    fn on_timer(&mut self, now: Instant, sink: &Sink) {
        if self.partial_since.is_some_and(|t| t + PARTIAL_FLUSH <= now) {
            self.send_lines(sink);
            let len = self.buf.len();
            let cut = if self.held_back.is_some_and(|t| t + SECRET_HOLD <= now) {
                len
            } else {
                sink.redactor.safe_cut(&self.buf, len)
            };
            if cut < len {
                // The end may be the start of a secret value: it waits one more while.
                let rest = self.buf.split_off(cut);
                sink.emit(self.stream, std::mem::replace(&mut self.buf, rest));
                self.partial_since = Some(now);
                self.held_back = self.held_back.or(Some(now));
            } else {
                self.send_all(sink);
                self.held_back = None;
            }
        } else if self.lines_since.is_some_and(|t| t + BATCH_DELAY <= now) {
            self.send_lines(sink);
        }
    }
}

/// The largest cut at or below `max` that does not split a UTF-8 character, or `max` itself
/// when the bytes there are not UTF-8.
fn char_boundary_at_most(buf: &[u8], max: usize) -> usize {
    (max.saturating_sub(3)..=max)
        .rev()
        .find(|&i| i < buf.len() && (buf[i] & 0xC0) != 0x80)
        .unwrap_or(max)
}

/// Reads both pipes until both are closed, or until `finish` fires (the program is gone and
/// something outside the run still holds a pipe open): then what is pending is sent and the
/// relay ends.
pub async fn relay(
    mut stdout: impl AsyncRead + Unpin,
    mut stderr: impl AsyncRead + Unpin,
    sink: Sink,
    mut finish: oneshot::Receiver<()>,
) {
    let mut out = Pending::new(Stream::Stdout);
    let mut err = Pending::new(Stream::Stderr);
    let mut out_buf = vec![0u8; READ_BUF];
    let mut err_buf = vec![0u8; READ_BUF];
    let (mut out_open, mut err_open) = (true, true);
    let far = || Instant::now() + Duration::from_secs(3600);
    while out_open || err_open {
        if sink.wait_for_room(&mut finish).await {
            break;
        }
        let deadline = [out.deadline(), err.deadline()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or_else(far);
        // Biased: when both pipes are readable at once, which was written first cannot be
        // known; stdout goes first, so that a program's usual "print, then complain" reads in
        // order.
        tokio::select! {
            biased;
            r = stdout.read(&mut out_buf), if out_open => {
                match r {
                    Ok(n) if n > 0 => {
                        // Lines of the other stream that came first go first.
                        err.send_lines(&sink);
                        out.feed(&out_buf[..n], &sink);
                        if let Some(tap) = &sink.tap {
                            // A CLI driven through its control protocol: its lines go out now,
                            // before its driver reads them, so that bosund reads what a model
                            // message used (its budget) before any tool call the message asks.
                            out.send_lines(&sink);
                            let _ = tap.send(out_buf[..n].to_vec());
                        }
                    }
                    Ok(_) | Err(_) => { out.send_all(&sink); out_open = false; }
                }
                // Whatever stderr has now is read before stdout is looked at again, so a
                // program that never stops writing to stdout does not hold stderr back.
                if err_open {
                    match poll_once(stderr.read(&mut err_buf)) {
                        Some(Ok(n)) if n > 0 => {
                            out.send_lines(&sink);
                            err.feed(&err_buf[..n], &sink);
                        }
                        Some(_) => { err.send_all(&sink); err_open = false; }
                        None => {}
                    }
                }
            },
            r = stderr.read(&mut err_buf), if err_open => match r {
                Ok(n) if n > 0 => {
                    out.send_lines(&sink);
                    err.feed(&err_buf[..n], &sink);
                }
                Ok(_) | Err(_) => { err.send_all(&sink); err_open = false; }
            },
            _ = tokio::time::sleep_until(deadline) => {
                let now = Instant::now();
                out.on_timer(now, &sink);
                err.on_timer(now, &sink);
            },
            _ = &mut finish => break,
        }
    }
    out.send_all(&sink);
    err.send_all(&sink);
}

/// Polls a future once: its output if it is ready now, `None` if it would wait. Only for
/// cancel-safe futures (a pipe read is: nothing is read unless it completes).
fn poll_once<F: std::future::Future>(fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_cap_keeps_exactly_its_bytes_and_says_so_once() {
        let cap = OutputCap::new(Some(10));
        assert_eq!(cap.take(4), (4, false));
        assert_eq!(cap.take(4), (4, false));
        // The chunk that crosses the cap is cut at it, and reaches it.
        assert_eq!(cap.take(4), (2, true));
        // Past it, nothing is kept, and it is not reached again.
        assert_eq!(cap.take(4), (0, false));
        let none = OutputCap::new(None);
        assert_eq!(none.take(1 << 30), (1 << 30, false));
    }

    #[test]
    fn lines_to_drop_are_taken_out_whole_and_the_rest_kept_in_order() {
        let drop: [Box<[u8]>; 1] = [b"DROP".as_slice().into()];
        let mut p = Pending::new(Stream::Stdout);
        p.buf = b"keep 1\nDROP a\nkeep 2\nDROP b\nDROP c\nkeep 3\nDROP partial".to_vec();
        p.complete = p.buf.len() - "DROP partial".len();
        p.drop_lines(0, &drop);
        assert_eq!(p.buf, b"keep 1\nkeep 2\nkeep 3\nDROP partial");
        assert_eq!(p.complete, "keep 1\nkeep 2\nkeep 3\n".len());
        // Only lines from where it was judged last are looked at; an unfinished line waits.
        p.buf.extend_from_slice(b" ends\nkeep 4\n");
        let judged = p.complete;
        p.complete = p.buf.len();
        p.drop_lines(judged, &drop);
        assert_eq!(p.buf, b"keep 1\nkeep 2\nkeep 3\nkeep 4\n");
        assert_eq!(p.complete, p.buf.len());
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "aé".repeat(10);
        let bytes = text.as_bytes();
        for max in 1..bytes.len() {
            let cut = char_boundary_at_most(bytes, max);
            assert!(
                std::str::from_utf8(&bytes[..cut]).is_ok(),
                "max {max} cut {cut}"
            );
            assert!(cut + 3 >= max);
        }
        let binary = [0x80u8; 10];
        assert_eq!(char_boundary_at_most(&binary, 5), 5);
    }
}
