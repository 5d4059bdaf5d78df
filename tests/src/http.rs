//! A minimal HTTP/1.1 server layer for the project's test servers (`test-mcp-server`,
//! `fake-model-api`, and others to come): it reads requests, writes responses, keeps
//! connections alive between requests, and serves a listener with an async handler.
//!
//! It is hand-written on purpose, and that is acceptable here. A test server must sometimes do
//! what a conforming server library will not do, or makes hard: never answer a request and
//! hold the connection open, send a stream whose end is the connection closing, answer a
//! malformed request with a plain `400` that says what was wrong. What it needs of HTTP is
//! small: one request at a time per connection, `Content-Length` or chunked request bodies,
//! `Expect: 100-continue`, no TLS, no HTTP/2, and only local clients under test. That fits in
//! this one file with no new dependency, and every byte on the wire is in plain sight when a
//! test fails. `hyper` 1 (already built for `reqwest`) would be well kept, but its service and
//! body traits would make the holds and close-delimited streams more code, not less. This is
//! not a general server: use it only in tests.
//!
//! - Requests: [`read_request`] reads one; [`Request`] gives its method, target, [`path`],
//!   query and form pairs, headers (looked up without regard to case) and body.
//! - Responses: [`Response`] with [`Response::json`], [`Response::text`],
//!   [`Response::redirect`]; [`write_response`] adds `Content-Length` and `Connection`.
//! - Serving: [`listen`] binds `127.0.0.1`, [`serve`] accepts connections and calls the
//!   handler once per request, which answers with a [`Reply`]: a full response, a stream, or
//!   nothing at all.
//!
//! A connection is kept alive after a full response unless the client sends
//! `Connection: close` (or speaks HTTP/1.0 without asking for keep-alive). A `HEAD` request
//! gets the headers of the response, not its body.
//!
//! [`path`]: Request::path

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _};
use tokio::io::{AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The longest request line or header line accepted, in bytes.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;
/// The most headers a request may have.
pub const MAX_HEADERS: usize = 100;
/// The largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/// One parsed HTTP request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The request target as sent: the path and any query string (`/authorize?client_id=a`).
    pub target: String,
    /// Whether the request line said HTTP/1.0 (keep-alive is then off by default).
    pub http_1_0: bool,
    /// In the order sent, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, with any chunked transfer coding undone; empty if there was none.
    pub body: Vec<u8>,
}

impl Request {
    /// The target without its query string.
    pub fn path(&self) -> &str {
        self.target
            .split_once('?')
            .map_or(self.target.as_str(), |(path, _)| path)
    }

    /// The query string, without the `?`; empty if there is none.
    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, query)| query)
    }

    /// The query's `name=value` pairs, in order, percent-decoded.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        parse_form(self.query())
    }

    /// The value of the first query pair named `name`.
    pub fn query_param(&self, name: &str) -> Option<String> {
        first_value(self.query_pairs(), name)
    }

    /// The body's `name=value` pairs, in order, percent-decoded, as a form sends them
    /// (`application/x-www-form-urlencoded`; the `Content-Type` is not checked).
    pub fn form_pairs(&self) -> Vec<(String, String)> {
        parse_form(&String::from_utf8_lossy(&self.body))
    }

    /// The value of the first form pair named `name`.
    pub fn form_param(&self, name: &str) -> Option<String> {
        first_value(self.form_pairs(), name)
    }

    /// The value of the first header named `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_value(&self.headers, name)
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.body)
    }

    /// Whether the client wants the connection kept open after the response.
    pub fn keep_alive(&self) -> bool {
        let has = |token: &str| {
            self.header("connection").is_some_and(|value| {
                value
                    .split(',')
                    .any(|item| item.trim().eq_ignore_ascii_case(token))
            })
        };
        if self.http_1_0 {
            has("keep-alive")
        } else {
            !has("close")
        }
    }
}

fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(header, _)| header.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

fn first_value(pairs: Vec<(String, String)>, name: &str) -> Option<String> {
    pairs
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// The `name=value` pairs of a query string or form body, in order, percent-decoded (`+` is a
/// space). Empty pieces are skipped; a piece without `=` has an empty value.
pub fn parse_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
            (percent_decode(name), percent_decode(value))
        })
        .collect()
}

/// Undoes `%XX` escapes and turns `+` into a space; bytes that are not UTF-8 become U+FFFD. A
/// `%` not followed by two hex digits stays as it is.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let escaped = match (byte, bytes.get(at + 1..at + 3)) {
            (b'%', Some(&[high, low])) => hex_digit(high).zip(hex_digit(low)),
            _ => None,
        };
        match escaped {
            Some((high, low)) => {
                decoded.push(high << 4 | low);
                at += 3;
            }
            None => {
                decoded.push(if byte == b'+' { b' ' } else { byte });
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn hex_digit(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|digit| u8::try_from(digit).ok())
}

/// Joins `name=value` pairs into a query string or form body, percent-encoding all but
/// letters, digits and `-._~`: the inverse of [`parse_form`].
pub fn encode_form<N: AsRef<str>, V: AsRef<str>>(pairs: &[(N, V)]) -> String {
    let mut text = String::new();
    for (name, value) in pairs {
        if !text.is_empty() {
            text.push('&');
        }
        percent_encode_into(&mut text, name.as_ref());
        text.push('=');
        percent_encode_into(&mut text, value.as_ref());
    }
    text
}

fn percent_encode_into(text: &mut String, raw: &str) {
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            text.push(char::from(byte));
        } else {
            let _ = write!(text, "%{byte:02X}");
        }
    }
}

/// Reads one request; `None` if the client closed the connection between requests. Answers
/// `Expect: 100-continue` on `writer` before reading the body.
pub async fn read_request<R, W>(reader: &mut R, writer: &mut W) -> anyhow::Result<Option<Request>>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(request_line) = read_request_line(reader).await? else {
        return Ok(None);
    };
    let (method, target, http_1_0) = parse_request_line(&request_line)?;
    let headers = read_headers(reader).await?;
    let chunked = header_value(&headers, "transfer-encoding")
        .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"));
    let length = match header_value(&headers, "content-length") {
        Some(value) => value
            .parse::<usize>()
            .with_context(|| format!("bad Content-Length {value:?}"))?,
        None => 0,
    };
    if length > MAX_BODY_BYTES {
        bail!("body of {length} bytes is too large");
    }
    let expects_continue = header_value(&headers, "expect")
        .is_some_and(|value| value.eq_ignore_ascii_case("100-continue"));
    if expects_continue && (length > 0 || chunked) {
        writer
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .context("writing 100 Continue")?;
        writer.flush().await.context("writing 100 Continue")?;
    }
    let body = if chunked {
        read_chunked_body(reader).await?
    } else {
        let mut body = vec![0; length];
        reader
            .read_exact(&mut body)
            .await
            .context("reading the body")?;
        body
    };
    Ok(Some(Request {
        method,
        target,
        http_1_0,
        headers,
        body,
    }))
}

/// A `Transfer-Encoding: chunked` body, trailers dropped.
async fn read_chunked_body<R: AsyncBufRead + Unpin>(reader: &mut R) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)
            .await?
            .context("connection closed in a chunked body")?;
        let size_text = line.split_once(';').map_or(line.as_str(), |(size, _)| size);
        let size = usize::from_str_radix(size_text.trim(), 16)
            .with_context(|| format!("bad chunk size {line:?}"))?;
        if size == 0 {
            while !read_line(reader)
                .await?
                .context("connection closed in the trailers")?
                .is_empty()
            {}
            return Ok(body);
        }
        let start = body.len();
        if start.saturating_add(size) > MAX_BODY_BYTES {
            bail!("chunked body is too large");
        }
        body.resize(start + size, 0);
        let chunk = body.get_mut(start..).context("sizing a chunk")?;
        reader.read_exact(chunk).await.context("reading a chunk")?;
        let end = read_line(reader)
            .await?
            .context("connection closed after a chunk")?;
        ensure!(end.is_empty(), "chunk not followed by CRLF");
    }
}

/// The request line, skipping empty lines before it; `None` on end of stream.
async fn read_request_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> anyhow::Result<Option<String>> {
    loop {
        match read_line(reader).await? {
            None => return Ok(None),
            Some(line) if line.is_empty() => {}
            Some(line) => return Ok(Some(line)),
        }
    }
}

/// The method, the target and whether the version is HTTP/1.0.
fn parse_request_line(line: &str) -> anyhow::Result<(String, String, bool)> {
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("malformed request line {line:?}");
    };
    let http_1_0 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        other => bail!("unsupported HTTP version {other:?}"),
    };
    Ok((method.to_owned(), target.to_owned(), http_1_0))
}

async fn read_headers<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)
            .await?
            .context("connection closed in the middle of the headers")?;
        if line.is_empty() {
            return Ok(headers);
        }
        if headers.len() == MAX_HEADERS {
            bail!("more than {MAX_HEADERS} headers");
        }
        let (name, value) = line
            .split_once(':')
            .with_context(|| format!("malformed header line {line:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

/// One CRLF- (or LF-) terminated line without its terminator; `None` at end of stream.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> anyhow::Result<Option<String>> {
    let mut line = Vec::new();
    let read = (&mut *reader)
        .take(MAX_LINE_BYTES)
        .read_until(b'\n', &mut line)
        .await
        .context("reading the request")?;
    if read == 0 {
        return Ok(None);
    }
    if line.pop() != Some(b'\n') {
        bail!("request line or header too long, or cut short");
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .context("request line or header is not UTF-8")
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

/// An HTTP response to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Sent in this order. Leave out `Content-Length` and `Connection`: writing adds them.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A response with no headers and no body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body and adds its `Content-Type`.
    pub fn with_body(self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        let mut response = self.with_header("Content-Type", content_type);
        response.body = body.into();
        response
    }

    /// An `application/json` response.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(status).with_body("application/json", body.to_string())
    }

    /// A `text/plain` response.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self::new(status).with_body("text/plain; charset=utf-8", body.into())
    }

    /// A redirect (`302`, `303`, `307`, ...) to `location`, with no body.
    pub fn redirect(status: u16, location: impl Into<String>) -> Self {
        Self::new(status).with_header("Location", location)
    }

    /// The value of the first header named `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_value(&self.headers, name)
    }
}

/// The reason phrase of a status line; a status not listed gets a generic one of its class.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => match status / 100 {
            1 => "Informational",
            2 => "Success",
            3 => "Redirection",
            _ => "Error",
        },
    }
}

/// How the end of a response's body is told.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// By `Content-Length`; the connection stays open if `keep_alive`.
    Length { keep_alive: bool },
    /// By closing the connection.
    Close,
}

/// The status line and headers, with the framing headers added, and the blank line after them.
fn head(response: &Response, framing: Framing) -> anyhow::Result<String> {
    let status = response.status;
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    for (name, value) in &response.headers {
        write!(head, "{name}: {value}\r\n")?;
    }
    let connection = match framing {
        Framing::Length { keep_alive } => {
            write!(head, "Content-Length: {}\r\n", response.body.len())?;
            if keep_alive { "keep-alive" } else { "close" }
        }
        Framing::Close => "close",
    };
    write!(head, "Connection: {connection}\r\n\r\n")?;
    Ok(head)
}

/// Writes a complete response, with `Content-Length` and `Connection` headers.
pub async fn write_response<W: AsyncWrite + Unpin>(
    writer: &mut W,
    response: &Response,
    keep_alive: bool,
) -> anyhow::Result<()> {
    write_parts(writer, response, Framing::Length { keep_alive }, true).await
}

/// Writes the head of `response` and, if `with_body` (not for `HEAD`), its body; flushes.
async fn write_parts<W: AsyncWrite + Unpin>(
    writer: &mut W,
    response: &Response,
    framing: Framing,
    with_body: bool,
) -> anyhow::Result<()> {
    let head = head(response, framing)?;
    writer
        .write_all(head.as_bytes())
        .await
        .context("writing the response")?;
    if with_body {
        writer
            .write_all(&response.body)
            .await
            .context("writing the response")?;
    }
    writer.flush().await.context("writing the response")
}

// ---------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------

/// What a handler answers one request with.
#[derive(Debug)]
pub enum Reply {
    /// A complete response; the connection stays open if the client wants it.
    Full(Response),
    /// The status and headers of this response (and its body, if any), then each piece sent
    /// on the channel as it comes; dropping the sender ends the body, and the connection is
    /// closed to tell the client so. For server-sent events and other streams.
    Stream(Response, mpsc::Receiver<Vec<u8>>),
    /// No answer at all: whatever the client sends next is read and dropped, until it closes
    /// the connection.
    Hold,
}

/// Listens on `127.0.0.1:port` (`0` picks a free port); returns the listener and its port.
pub async fn listen(port: u16) -> anyhow::Result<(TcpListener, u16)> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
    let port = listener
        .local_addr()
        .context("reading the bound address")?
        .port();
    Ok((listener, port))
}

/// Accepts connections forever, each served by [`serve_connection`] in a task of its own.
/// `name` starts the lines logged to stderr (a failed connection, a held request ended).
pub async fn serve<H, F>(listener: TcpListener, name: &'static str, handler: H) -> !
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let handler = Arc::new(handler);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                eprintln!("{name}: accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            if let Err(err) = serve_connection(stream, name, &*handler).await {
                eprintln!("{name}: connection from {peer}: {err:#}");
            }
        });
    }
}

/// Serves the requests of one connection, in order, until either side closes it. A request
/// that cannot be read is answered `400` with the reason, and the connection closed.
pub async fn serve_connection<S, H, F>(stream: S, name: &str, handler: &H) -> anyhow::Result<()>
where
    S: AsyncRead + AsyncWrite,
    H: Fn(Request) -> F,
    F: Future<Output = Reply>,
{
    let (read_half, mut writer) = tokio::io::split(stream);
    let mut reader = BufReader::new(read_half);
    loop {
        let request = match read_request(&mut reader, &mut writer).await {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(err) => {
                let response = Response::text(400, format!("{err:#}\n"));
                // The request was unreadable; answering is best-effort before closing.
                if let Err(write_err) = write_response(&mut writer, &response, false).await {
                    eprintln!("{name}: writing a 400: {write_err:#}");
                }
                return Err(err);
            }
        };
        let keep_alive = request.keep_alive();
        let with_body = request.method != "HEAD";
        match handler(request).await {
            Reply::Full(response) => {
                let framing = Framing::Length { keep_alive };
                write_parts(&mut writer, &response, framing, with_body).await?;
                if !keep_alive {
                    writer.shutdown().await.context("closing the connection")?;
                    return Ok(());
                }
            }
            Reply::Stream(response, mut pieces) => {
                write_parts(&mut writer, &response, Framing::Close, with_body).await?;
                // The body goes on with each piece as it comes, until the sender is dropped.
                if with_body {
                    while let Some(piece) = pieces.recv().await {
                        writer
                            .write_all(&piece)
                            .await
                            .context("writing the stream")?;
                        writer.flush().await.context("writing the stream")?;
                    }
                }
                writer.shutdown().await.context("closing the connection")?;
                return Ok(());
            }
            Reply::Hold => {
                wait_for_close(&mut reader).await;
                eprintln!("{name}: the client closed a held request");
                return Ok(());
            }
        }
    }
}

/// Reads and drops whatever the client sends until it closes the connection.
async fn wait_for_close<R: AsyncRead + Unpin>(reader: &mut R) {
    let mut buffer = [0; 4096];
    while let Ok(read) = reader.read(&mut buffer).await {
        if read == 0 {
            return;
        }
    }
}

/// A certificate authority of a test's own and a server certificate it signed for `localhost`
/// and `127.0.0.1`: what an HTTPS fake serves, and the CA its clients are told to trust.
pub struct TestTls {
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    pub config: Arc<rustls::ServerConfig>,
}

impl TestTls {
    /// A new CA (named `ca_name`) and server certificate.
    pub fn new(ca_name: &str) -> anyhow::Result<Self> {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate()?)?;
        let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
        leaf.subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse()?));
        let leaf_key = rcgen::KeyPair::generate()?;
        let cert = leaf.signed_by(&leaf_key, &ca)?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )?;
        Ok(Self {
            ca_pem: ca.pem(),
            config: Arc::new(config),
        })
    }
}

/// Serves HTTPS with `tls` on a free loopback port, from a thread of its own, every request
/// answered by `answer` (`name` goes in its errors). Returns the port.
pub fn serve_https(
    tls: &TestTls,
    name: &'static str,
    answer: impl Fn(&Request) -> Response + Clone + Send + Sync + 'static,
) -> anyhow::Result<u16> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    std_listener.set_nonblocking(true)?;
    let port = std_listener.local_addr()?.port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                return;
            };
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, answer) = (acceptor.clone(), answer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let handler = move |req: Request| {
                        let reply = Reply::Full(answer(&req));
                        async move { reply }
                    };
                    let _ = serve_connection(tls, name, &handler).await;
                });
            }
        });
    });
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{DuplexStream, duplex};

    async fn read_one(input: &[u8]) -> (anyhow::Result<Option<Request>>, Vec<u8>) {
        let mut reader = BufReader::new(input);
        let mut written = Vec::new();
        let request = read_request(&mut reader, &mut written).await;
        (request, written)
    }

    /// Serves `handler` on one end of a pipe; returns the other end and the serving task.
    fn connect<H, F>(handler: H) -> (DuplexStream, tokio::task::JoinHandle<anyhow::Result<()>>)
    where
        H: Fn(Request) -> F + Send + Sync + 'static,
        F: Future<Output = Reply> + Send,
    {
        let (client, server) = duplex(64 * 1024);
        let task = tokio::spawn(async move { serve_connection(server, "test", &handler).await });
        (client, task)
    }

    async fn read_to_close(client: &mut DuplexStream) -> String {
        let mut text = String::new();
        client.read_to_string(&mut text).await.unwrap();
        text
    }

    #[tokio::test]
    async fn a_request_with_a_query_headers_and_a_body_is_parsed() {
        let (request, written) = read_one(
            b"\r\nPOST /token?a=1&b=x%20y HTTP/1.1\r\nHost: here\r\nContent-Type: \
              application/x-www-form-urlencoded\r\nContent-Length: 38\r\n\r\n\
              grant_type=authorization_code&code=a+b",
        )
        .await;
        let request = request.unwrap().unwrap();
        assert!(written.is_empty());
        assert_eq!(request.method, "POST");
        assert_eq!(request.path(), "/token");
        assert_eq!(request.query(), "a=1&b=x%20y");
        assert_eq!(request.query_param("b").as_deref(), Some("x y"));
        assert_eq!(request.query_param("c"), None);
        assert_eq!(
            request.header("CONTENT-TYPE"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(
            request.form_pairs(),
            [
                ("grant_type".to_owned(), "authorization_code".to_owned()),
                ("code".to_owned(), "a b".to_owned()),
            ]
        );
        assert!(request.keep_alive());
    }

    #[tokio::test]
    async fn a_chunked_body_is_joined_after_a_100_continue() {
        let (request, written) = read_one(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n\
              4;ext=1\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nTrailer: x\r\n\r\n",
        )
        .await;
        assert_eq!(request.unwrap().unwrap().json().unwrap(), json!({"a": 1}));
        assert_eq!(written, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[tokio::test]
    async fn the_end_of_the_stream_between_requests_is_no_request() {
        let (request, _) = read_one(b"").await;
        assert_eq!(request.unwrap(), None);
    }

    #[tokio::test]
    async fn malformed_requests_are_errors() {
        for input in [
            &b"GET / HTTP/2\r\n\r\n"[..],
            b"GET /\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort",
        ] {
            let (request, _) = read_one(input).await;
            assert!(request.is_err(), "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn http_1_0_keeps_the_connection_only_when_asked() {
        let mut request = Request {
            method: "GET".to_owned(),
            target: "/".to_owned(),
            http_1_0: true,
            headers: Vec::new(),
            body: Vec::new(),
        };
        assert!(!request.keep_alive());
        request.headers = vec![("connection".to_owned(), "Keep-Alive".to_owned())];
        assert!(request.keep_alive());
        request.http_1_0 = false;
        request.headers = vec![("connection".to_owned(), "foo, close".to_owned())];
        assert!(!request.keep_alive());
    }

    #[test]
    fn forms_are_encoded_and_decoded_back() {
        let pairs = [
            ("redirect_uri", "http://127.0.0.1:1/cb?x=1"),
            ("state", "é ~+%"),
        ];
        let text = encode_form(&pairs);
        assert_eq!(
            text,
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb%3Fx%3D1&state=%C3%A9%20~%2B%25"
        );
        let decoded = parse_form(&text);
        let expected: Vec<(String, String)> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        assert_eq!(decoded, expected);
        assert_eq!(percent_decode("100%+%zz%4"), "100% %zz%4");
        assert_eq!(
            parse_form("&a&b=&=c"),
            [
                ("a".to_owned(), String::new()),
                ("b".to_owned(), String::new()),
                (String::new(), "c".to_owned()),
            ]
        );
    }

    #[test]
    fn response_helpers_set_type_and_location() {
        let json = Response::json(201, &json!({"ok": true}));
        assert_eq!(json.header("content-type"), Some("application/json"));
        assert_eq!(json.body, br#"{"ok":true}"#);
        let text = Response::text(404, "nope");
        assert_eq!(
            text.header("Content-Type"),
            Some("text/plain; charset=utf-8")
        );
        let redirect = Response::redirect(302, "http://x/cb?code=1");
        assert_eq!(redirect.header("location"), Some("http://x/cb?code=1"));
        assert!(redirect.body.is_empty());
        assert_eq!(reason_phrase(418), "Error");
        assert_eq!(reason_phrase(299), "Success");
    }

    #[tokio::test]
    async fn connections_are_kept_alive_until_the_client_says_close() {
        let (mut client, task) =
            connect(
                |request: Request| async move { Reply::Full(Response::text(200, request.target)) },
            );
        client
            .write_all(b"GET /one HTTP/1.1\r\n\r\nHEAD /two HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        client
            .write_all(b"GET /three HTTP/1.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let text = read_to_close(&mut client).await;
        let head = |length, connection| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Content-Length: {length}\r\nConnection: {connection}\r\n\r\n"
            )
        };
        let expected = format!(
            "{}/one{}{}/three",
            head(4, "keep-alive"),
            head(4, "keep-alive"),
            head(6, "close")
        );
        assert_eq!(text, expected);
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_stream_sends_its_pieces_and_closes() {
        let (mut client, task) = connect(|_| async {
            let (sender, receiver) = mpsc::channel(1);
            tokio::spawn(async move {
                for piece in ["data: 1\n\n", "data: 2\n\n"] {
                    sender.send(piece.as_bytes().to_vec()).await.unwrap();
                }
            });
            let head = Response::new(200).with_header("Content-Type", "text/event-stream");
            Reply::Stream(head, receiver)
        });
        client.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        assert_eq!(
            read_to_close(&mut client).await,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
             data: 1\n\ndata: 2\n\n"
        );
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_held_request_ends_when_the_client_closes() {
        let (mut client, task) = connect(|_| async { Reply::Hold });
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        client
            .write_all(b"GET /next HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!task.is_finished());
        drop(client);
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_unreadable_request_gets_a_400_with_the_reason() {
        let (mut client, task) = connect(|_| async { Reply::Hold });
        client.write_all(b"GET / HTTP/9\r\n\r\n").await.unwrap();
        let text = read_to_close(&mut client).await;
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(
            text.ends_with("unsupported HTTP version \"HTTP/9\"\n"),
            "{text}"
        );
        assert!(task.await.unwrap().is_err());
    }
}
