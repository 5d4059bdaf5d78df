//! The way out of a fenced run's network namespace: an HTTP proxy in the runner, serving a
//! listener bound to 127.0.0.1 inside the namespace, that reaches (from outside it) only the
//! hosts in the run's [`NetRules`], and reports every connection as a [`Connection`].
//!
//! It serves `CONNECT host:port` (a tunnel, used for HTTPS) and absolute-form plain HTTP
//! (`GET http://host/path`), and [`forward`] pipes a fixed address for programs that ignore
//! proxy variables. Names are resolved outside the namespace, where the runner runs.
//!
//! A target the rules refuse is asked for when the run has someone to ask ([`asking`]): the
//! client's connection is held, nothing read past its request head, until the answer; allowed,
//! it goes on as for a listed host, denied, it is refused with the reason.
//!
//! **Invariant:** no byte reaches a host before its decision is `Allowed`; a refused target is
//! never connected to. Every connection runs in a task of its own, so a slow or hostile client
//! holds only itself; the tasks end with the accept loop's task.
//! Once allowed, bytes are copied both ways through a buffer per direction that grows for a
//! bulk transfer (see `tunnel`), counted exactly.
//!
//! # Caveats
//! - Plain HTTP takes one upstream per client connection: the forwarded head says
//!   `Connection: close` (the client's `Connection` header is kept only for an `Upgrade`), so a
//!   server closes after its answer (a streamed answer, like server-sent events, still streams)
//!   and the client opens a new connection for its next request. A client that sends a second
//!   request anyway reaches the first request's host.
//! - A name is judged, not the addresses it resolves to: an allowed name whose DNS answers with
//!   a loopback or private address is connected to.
//! - Connections still open when the run ends are reported with their counts so far; a request
//!   that names no host (a bad request, a head too large, a client that never sends one) is
//!   answered and not reported.

pub mod asking;
mod rules;
pub mod served;
mod tunnel;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, lookup_host};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio::time::timeout;

use asking::Asking;
pub use rules::{Decision, NetRules, ServerList};
use rules::{Host, Target};

/// The largest request head read; a larger one is refused with 431.
const MAX_HEAD: usize = 64 * 1024;
/// How long a client has to send a complete request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting to a host may take together.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// After a refusal, how long the client's unread bytes are drained: closing a socket with
/// unread bytes sends a reset, which can destroy the answer before the client reads it.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause after a failed accept (out of descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
const ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";
const NOT_A_PROXY_REQUEST: &str = "this is bosun's proxy for the run: it serves only CONNECT host:port and absolute-form HTTP requests (GET http://host/path)";

/// How a connection went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// `CONNECT host:port`, then bytes both ways.
    Tunnel,
    /// An absolute-form plain-HTTP request, forwarded in origin form.
    Forward,
    /// A fixed forward (see [`forward`]).
    Direct,
}

/// One connection, reported once: a refused one when it is refused, an allowed one when it
/// closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// A lowercased name or an address (IPv6 in brackets).
    pub host: String,
    pub port: u16,
    pub how: How,
    pub decision: Decision,
    /// Bytes delivered to the host (for `Forward`, the rewritten head included).
    pub bytes_up: u64,
    /// Bytes delivered from the host to the client (the proxy's own answers not included).
    pub bytes_down: u64,
    /// What ended it other than a close by either end, in words.
    pub failure: Option<String>,
}

impl std::fmt::Display for Connection {
    /// One line of the run's log: what was reached (or refused), how, with its bytes and rule.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.how {
            How::Tunnel => "tunnel",
            How::Forward => "http",
            How::Direct => "loopback forward",
        };
        match &self.decision {
            Decision::Refused { reason } => {
                write!(f, "refused {}:{} ({how}): {reason}", self.host, self.port)
            }
            Decision::Allowed { rule } => {
                write!(
                    f,
                    "{}:{} ({how}), {} bytes out, {} bytes in, allowed by {rule}",
                    self.host, self.port, self.bytes_up, self.bytes_down
                )?;
                match &self.failure {
                    Some(why) => write!(f, "; {why}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Serves the run's proxy on `listener` until the task is aborted, one task per connection; a
/// target the rules refuse is asked for through `asking` when there is one.
pub async fn serve(
    listener: TcpListener,
    rules: Arc<NetRules>,
    asking: Option<Arc<Asking>>,
    report: UnboundedSender<Connection>,
) {
    accept_forever(listener, move |client| {
        handle(client, Arc::clone(&rules), asking.clone(), report.clone())
    })
    .await;
}

/// Pipes every connection accepted on `listener` to `to`, reported as `Direct` and allowed by
/// `rule`, until the task is aborted.
pub async fn forward(
    listener: TcpListener,
    to: SocketAddr,
    rule: String,
    report: UnboundedSender<Connection>,
) {
    let target = Target {
        host: Host::Ip(to.ip()),
        port: to.port(),
    };
    accept_forever(listener, move |client| {
        let decision = Decision::Allowed { rule: rule.clone() };
        let conn = record(&target, How::Direct, decision);
        forward_one(
            client,
            target.clone(),
            Open {
                conn,
                report: report.clone(),
            },
        )
    })
    .await;
}

async fn forward_one(mut client: TcpStream, target: Target, mut open: Open) {
    match dial(&target).await {
        Ok(mut upstream) => tunnel::pipe(&mut client, &mut upstream, &[], &mut open.conn).await,
        Err(words) => open.conn.failure = Some(words),
    }
}

/// Accepts forever, running `each` on every connection in a task that ends with this one.
async fn accept_forever<F, Fut>(listener: TcpListener, mut each: F)
where
    F: FnMut(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut open = JoinSet::new();
    loop {
        while open.try_join_next().is_some() {}
        match listener.accept().await {
            Ok((client, _)) => {
                let _ = client.set_nodelay(true);
                open.spawn(each(client));
            }
            Err(e) => {
                say!("proxy: could not accept a connection: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// An answer of the proxy's own: its status line and a plain-text body.
type Answer = (&'static str, String);

async fn handle(
    mut client: TcpStream,
    rules: Arc<NetRules>,
    asking: Option<Arc<Asking>>,
    report: UnboundedSender<Connection>,
) {
    if let Err((status, body)) = proxy_one(&mut client, &rules, asking.as_deref(), report).await {
        refuse(&mut client, status, &body).await;
    }
}

/// Why a target the rules refused is asked for, in words for the person.
const NOT_LISTED: &str =
    "it is not in the run's list of hosts (its CLI's model API, web.fetch, its MCP servers)";

/// Reads one request, decides (asking, when the rules refuse and there is someone to ask), and
/// if allowed connects and pipes; Err is the proxy's answer.
async fn proxy_one(
    client: &mut TcpStream,
    rules: &NetRules,
    asking: Option<&Asking>,
    report: UnboundedSender<Connection>,
) -> Result<(), Answer> {
    let (head, early) = match timeout(HEAD_TIMEOUT, read_head(client)).await {
        Ok(Ok(Some(read))) => read,
        Ok(Ok(None) | Err(_)) => return Ok(()),
        Err(_) => {
            return Err((
                "408 Request Timeout",
                "bosun's proxy got no complete request head in 30 s".into(),
            ));
        }
    };
    let (how, target, first) = parse_request(&head)?;
    let decision = match (rules.decide_target(&target), asking) {
        (Decision::Refused { .. }, Some(asking)) if !rules.is_quiet(&target) => {
            asking.decide(&target, how, NOT_LISTED).await
        }
        (decision, _) => decision,
    };
    if let Decision::Refused { reason } = &decision {
        let _ = report.send(record(&target, how, decision.clone()));
        return Err((
            "403 Forbidden",
            format!("bosun's fence refused {target}: {reason}"),
        ));
    }
    let mut open = Open {
        conn: record(&target, how, decision),
        report,
    };
    let mut upstream = match dial(&target).await {
        Ok(upstream) => upstream,
        Err(words) => {
            open.conn.failure = Some(words.clone());
            return Err(("502 Bad Gateway", words));
        }
    };
    if how == How::Tunnel && client.write_all(ESTABLISHED).await.is_err() {
        return Ok(());
    }
    tunnel::pipe(client, &mut upstream, &[&first, &early], &mut open.conn).await;
    Ok(())
}

/// A connection being served; reported when dropped (closed, failed, or its task aborted).
struct Open {
    conn: Connection,
    report: UnboundedSender<Connection>,
}

/// The record of a connection to `target`, before any byte moved.
fn record(target: &Target, how: How, decision: Decision) -> Connection {
    Connection {
        host: target.host.to_string(),
        port: target.port,
        how,
        decision,
        bytes_up: 0,
        bytes_down: 0,
        failure: None,
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let _ = self.report.send(self.conn.clone());
    }
}

/// Resolves (outside the namespace) and connects to the first address that answers, within
/// [`CONNECT_TIMEOUT`]; Err says why not, in words.
async fn dial(target: &Target) -> Result<TcpStream, String> {
    let connect = async {
        let addresses: Vec<SocketAddr> = match &target.host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
            Host::Name(name) => lookup_host((name.as_str(), target.port)).await?.collect(),
        };
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
        for address in addresses {
            match TcpStream::connect(address).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = e,
            }
        }
        Err(last)
    };
    match timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(stream)) => {
            let _ = stream.set_nodelay(true);
            Ok(stream)
        }
        Ok(Err(e)) => Err(format!("bosun's proxy could not connect to {target}: {e}")),
        Err(_) => Err(format!("bosun's proxy got no answer from {target} in 30 s")),
    }
}

/// Answers `status` with a plain-text `body` (and a line break), then drains what the client
/// still sends for a moment, so the answer is read rather than lost to a reset.
async fn refuse(client: &mut TcpStream, status: &str, body: &str) {
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    let _ = timeout(DRAIN_TIMEOUT, async {
        client.write_all(answer.as_bytes()).await?;
        client.shutdown().await?;
        let mut sink = [0u8; 4096];
        while client.read(&mut sink).await? > 0 {}
        Ok::<(), io::Error>(())
    })
    .await;
}

/// Reads up to the end of the request head (or a little past [`MAX_HEAD`]): the bytes up to the
/// end of the head (or all read, if too large) and those read after it; None if the client
/// closed first.
async fn read_head(client: &mut TcpStream) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut head = Vec::with_capacity(4096);
    loop {
        let searched = head.len().saturating_sub(3);
        head.reserve(8192);
        if client.read_buf(&mut head).await? == 0 {
            return Ok(None);
        }
        if let Some(at) = head[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
            let early = head.split_off(searched + at + 4);
            return Ok(Some((head, early)));
        }
        if head.len() > MAX_HEAD {
            return Ok(Some((head, Vec::new())));
        }
    }
}

/// A 400 answer: what the proxy serves, and what was wrong.
fn bad(why: &str) -> Answer {
    ("400 Bad Request", format!("{NOT_A_PROXY_REQUEST}; {why}"))
}

/// Reads a request head: how it goes, where, and for `Forward` the head rewritten for the host.
fn parse_request(head: &[u8]) -> Result<(How, Target, Vec<u8>), Answer> {
    let Some(head) = head
        .strip_suffix(b"\r\n\r\n")
        .filter(|h| h.len() + 4 <= MAX_HEAD)
    else {
        let why = "bosun's proxy reads request heads of at most 64 KiB";
        return Err(("431 Request Header Fields Too Large", why.into()));
    };
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let first = lines
        .next()
        .and_then(|line| std::str::from_utf8(line).ok())
        .ok_or_else(|| bad("the request line is not text"))?;
    let parts: Vec<&str> = first.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    }
    let headers: Vec<&[u8]> = lines.collect();
    if headers
        .iter()
        .any(|h| h.first().is_none_or(|b| b.is_ascii_whitespace()) || !h.contains(&b':'))
    {
        return Err(bad("a header line is not Name: value"));
    }
    if method == "CONNECT" {
        let target = Target::parse(target, None);
        let target = target.map_err(|e| bad(&format!("the target is not host:port: {e}")))?;
        return Ok((How::Tunnel, target, Vec::new()));
    }
    let Some(rest) = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
    else {
        return Err(bad("the target is not an absolute http:// address"));
    };
    let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(bad(
            "the address carries a user name, which bosun's proxy does not forward",
        ));
    }
    let target = Target::parse(authority, Some(80));
    let target = target.map_err(|e| bad(&format!("the address's host is not readable: {e}")))?;
    let slash = if path.starts_with('/') { "" } else { "/" };
    let mut out = format!("{method} {slash}{path} {version}\r\n").into_bytes();
    let name_is = |line: &[u8], name: &str| {
        line.split(|&b| b == b':')
            .next()
            .is_some_and(|n| n.trim_ascii().eq_ignore_ascii_case(name.as_bytes()))
    };
    let upgrade = headers.iter().any(|h| name_is(h, "upgrade"));
    for line in &headers {
        if name_is(line, "proxy-connection")
            || name_is(line, "proxy-authorization")
            || (!upgrade && name_is(line, "connection"))
        {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    if !headers.iter().any(|h| name_is(h, "host")) {
        out.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    }
    if !upgrade {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok((How::Forward, target, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rules::HostRule;
    use tokio::io::{AsyncRead, AsyncWrite};
    use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
    use tokio::task::JoinHandle;

    const WAIT: Duration = Duration::from_secs(20);

    /// A proxy on 127.0.0.1 allowing `allow`, its reports, and its task.
    async fn start(allow: &[&str]) -> (SocketAddr, UnboundedReceiver<Connection>, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let rules = NetRules {
            allow: allow
                .iter()
                .map(|r| HostRule::parse(r, "test").unwrap())
                .collect(),
            quiet: Vec::new(),
            server: None,
        };
        let (report, reports) = unbounded_channel();
        (
            address,
            reports,
            tokio::spawn(serve(listener, Arc::new(rules), None, report)),
        )
    }

    async fn next(reports: &mut UnboundedReceiver<Connection>) -> Connection {
        timeout(WAIT, reports.recv())
            .await
            .expect("a report in time")
            .expect("the proxy is running")
    }

    /// Sends `request` on a new connection and reads the answer until the proxy closes.
    async fn ask(proxy: SocketAddr, request: &[u8]) -> String {
        let mut client = TcpStream::connect(proxy).await.unwrap();
        client.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        timeout(WAIT, client.read_to_end(&mut answer))
            .await
            .expect("an answer in time")
            .unwrap();
        String::from_utf8(answer).unwrap()
    }

    /// A record for 127.0.0.1 that moved nothing; tests fill in the port and the counts.
    fn record(how: How, decision: Decision) -> Connection {
        let target = Target {
            host: Host::Ip([127, 0, 0, 1].into()),
            port: 0,
        };
        super::record(&target, how, decision)
    }

    fn numbered(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// Numbered bytes (`i % 251` at offset `i`) from `from` up to `to`, sent in pieces, then
    /// the write half shut down.
    async fn send_numbered(mut out: impl AsyncWrite + Unpin, from: usize, to: usize) {
        const PIECE: usize = 64 * 1024;
        let pattern = numbered(251 + PIECE);
        for at in (from..to).step_by(PIECE) {
            let len = PIECE.min(to - at);
            out.write_all(&pattern[at % 251..][..len]).await.unwrap();
        }
        out.shutdown().await.unwrap();
    }

    /// Reads to the end, checking that byte `i` is `i % 251`; the count read.
    async fn expect_numbered(mut input: impl AsyncRead + Unpin) -> usize {
        let pattern = numbered(251 + 64 * 1024);
        let mut buffer = vec![0; 64 * 1024];
        let mut at = 0;
        loop {
            let read = timeout(WAIT, input.read(&mut buffer))
                .await
                .expect("bytes in time")
                .unwrap();
            if read == 0 {
                return at;
            }
            assert!(
                buffer[..read] == pattern[at % 251..][..read],
                "the bytes from {at} arrived changed"
            );
            at += read;
        }
    }

    /// Tunnels `up` numbered bytes to a host while it sends `down` back, both at once, each
    /// side closing its write half when done; checks every byte and returns the report.
    async fn tunnel_both_ways(up: usize, down: usize) -> Connection {
        let host = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = host.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut stream, _) = host.accept().await.unwrap();
            let (read, write) = stream.split();
            tokio::join!(expect_numbered(read), send_numbered(write, 0, down)).0
        });
        let (proxy, mut reports, _serve) = start(&["127.0.0.1"]).await;
        let mut client = TcpStream::connect(proxy).await.unwrap();
        // The first bytes of the tunnel come in the same write as the head.
        let mut first =
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes();
        first.extend_from_slice(&numbered(1000));
        client.write_all(&first).await.unwrap();
        let mut answer = vec![0; ESTABLISHED.len()];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(answer, ESTABLISHED);
        let (read, write) = client.split();
        let (got, ()) = tokio::join!(expect_numbered(read), send_numbered(write, 1000, up));
        assert_eq!(got, down, "the download ended early");
        assert_eq!(server.await.unwrap(), up, "the upload ended early");
        drop(client);
        let rule = "test (127.0.0.1)".to_string();
        let (bytes_up, bytes_down) = (up as u64, down as u64);
        let conn = Connection {
            port,
            bytes_up,
            bytes_down,
            ..record(How::Tunnel, Decision::Allowed { rule })
        };
        let report = next(&mut reports).await;
        assert_eq!(report, conn);
        report
    }

    #[tokio::test]
    async fn tunnel_moves_tens_of_megabytes_both_ways_at_once_with_exact_counts() {
        // Past the largest buffer many times over, in both directions at once.
        const UP: usize = 16 << 20;
        const DOWN: usize = 64 << 20;
        const { assert!(UP > 8 * tunnel::MOST) };
        tunnel_both_ways(UP, DOWN).await;
    }

    #[tokio::test]
    async fn tunnel_passes_each_small_write_on_at_once() {
        // An echo host: each byte must come back before the next is sent, so a byte that waited
        // for a buffer to fill would stop the exchange.
        let host = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = host.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut stream, _) = host.accept().await.unwrap();
            let (mut read, mut write) = stream.split();
            tokio::io::copy(&mut read, &mut write).await.unwrap();
        });
        let (proxy, _reports, _serve) = start(&["127.0.0.1"]).await;
        let mut client = TcpStream::connect(proxy).await.unwrap();
        let head = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
        client.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0; ESTABLISHED.len()];
        client.read_exact(&mut answer).await.unwrap();
        for byte in 0..=255u8 {
            client.write_all(&[byte]).await.unwrap();
            let mut echoed = [0];
            timeout(WAIT, client.read_exact(&mut echoed))
                .await
                .expect("the byte came back in time")
                .unwrap();
            assert_eq!(echoed[0], byte);
        }
    }

    #[tokio::test]
    async fn refused_connect_is_403_with_the_reason_reported_once_and_never_dialed() {
        let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        host.set_nonblocking(true).unwrap();
        let port = host.local_addr().unwrap().port();
        let (proxy, mut reports, serving) = start(&["api.example.com"]).await;
        let answer = ask(
            proxy,
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        assert!(answer.contains(&format!("bosun's fence refused 127.0.0.1:{port}: 127.0.0.1:{port} is not in this run's list of hosts")), "{answer}");
        let reason = format!(
            "127.0.0.1:{port} is not in this run's list of hosts; allow it for the run's agent with `bosun agent set NAME web.fetch=127.0.0.1` (its list, comma-separated)"
        );
        let conn = Connection {
            port,
            ..record(How::Tunnel, Decision::Refused { reason })
        };
        assert_eq!(next(&mut reports).await, conn);
        assert_eq!(
            host.accept().map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::WouldBlock),
            "the host was dialed"
        );
        serving.abort();
        let _ = serving.await;
        assert!(
            timeout(WAIT, reports.recv()).await.unwrap().is_none(),
            "reported twice"
        );
    }

    #[tokio::test]
    async fn allowed_host_that_does_not_answer_is_502_and_reported() {
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (proxy, mut reports, _serve) = start(&["127.0.0.1"]).await;
        let answer = ask(
            proxy,
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n"),
            "{answer}"
        );
        assert!(
            answer.contains(&format!("could not connect to 127.0.0.1:{port}")),
            "{answer}"
        );
        assert!(
            next(&mut reports)
                .await
                .failure
                .is_some_and(|f| f.contains("could not connect"))
        );
    }

    #[tokio::test]
    async fn absolute_form_get_reaches_the_host_in_origin_form() {
        const ANSWER: &[u8] =
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
        let host = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = host.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut stream, _) = host.accept().await.unwrap();
            let mut seen = Vec::new();
            while !seen.ends_with(b"\r\n\r\n") {
                assert!(
                    stream.read_buf(&mut seen).await.unwrap() > 0,
                    "the head ended early"
                );
            }
            stream.write_all(ANSWER).await.unwrap();
            String::from_utf8(seen).unwrap()
        });
        let (proxy, mut reports, _serve) = start(&["127.0.0.1"]).await;
        let request = format!(
            "GET http://127.0.0.1:{port}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
        );
        let answer = ask(proxy, request.as_bytes()).await;
        assert_eq!(answer.as_bytes(), ANSWER);
        let seen = server.await.unwrap();
        assert_eq!(
            seen,
            format!(
                "GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            )
        );
        let (bytes_up, bytes_down) = (seen.len() as u64, ANSWER.len() as u64);
        let rule = "test (127.0.0.1)".to_string();
        let conn = Connection {
            port,
            bytes_up,
            bytes_down,
            ..record(How::Forward, Decision::Allowed { rule })
        };
        assert_eq!(next(&mut reports).await, conn);
    }

    #[tokio::test]
    async fn bad_requests_are_400_even_while_a_silent_client_waits() {
        let (proxy, _reports, _serve) = start(&["127.0.0.1"]).await;
        let _silent = TcpStream::connect(proxy).await.unwrap();
        for request in [
            &b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"hello\r\n\r\n",
            b"CONNECT bad host:443 HTTP/1.1\r\n\r\n",
            b"GET https://x/ HTTP/1.1\r\n\r\n",
        ] {
            let answer = ask(proxy, request).await;
            assert!(
                answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
                "{answer}"
            );
            assert!(
                answer.contains("this is bosun's proxy for the run: it serves only CONNECT"),
                "{answer}"
            );
        }
    }

    #[tokio::test]
    async fn head_over_64_kib_is_431() {
        let (proxy, _reports, _serve) = start(&["127.0.0.1"]).await;
        let mut request = b"GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: ".to_vec();
        request.resize(70 * 1024, b'a');
        let answer = ask(proxy, &request).await;
        assert!(
            answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn forward_pipes_to_its_address_and_reports_direct() {
        let host = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let to = host.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = host.accept().await.unwrap();
            let (mut read, mut write) = stream.split();
            tokio::io::copy(&mut read, &mut write).await.unwrap();
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let entry = listener.local_addr().unwrap();
        let (report, mut reports) = unbounded_channel();
        let _forward = tokio::spawn(forward(listener, to, "loopback".into(), report));
        let mut client = TcpStream::connect(entry).await.unwrap();
        let sent = numbered(100_000);
        client.write_all(&sent).await.unwrap();
        client.shutdown().await.unwrap();
        let mut echoed = Vec::new();
        timeout(WAIT, client.read_to_end(&mut echoed))
            .await
            .unwrap()
            .unwrap();
        assert!(echoed == sent, "the echo arrived changed");
        drop(client);
        let (port, bytes_up, bytes_down) = (to.port(), 100_000, 100_000);
        let rule = "loopback".to_string();
        let conn = Connection {
            port,
            bytes_up,
            bytes_down,
            ..record(How::Direct, Decision::Allowed { rule })
        };
        assert_eq!(next(&mut reports).await, conn);
    }
}
