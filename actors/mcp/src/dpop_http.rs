//! The HTTP client under rmcp's Streamable HTTP transport: reqwest itself, or, for a server
//! whose tokens are DPoP-bound (RFC 9449), requests made here with a fresh proof each.
//!
//! rmcp's reqwest client takes a bearer token and fixed headers, and keeps an answer's headers
//! to itself; a DPoP-bound token needs a new proof on every request (POST, GET, DELETE) and the
//! `DPoP-Nonce` of every answer, including the `401` that asks for one. So, with a binding, the
//! request is sent here: `Authorization: DPoP <token>` (set with the endpoint's headers) and a
//! `DPoP` proof naming the method, the address and the token's hash, with the resource
//! server's nonce when it gave one. A `401` whose `DPoP` challenge says `use_dpop_nonce` is
//! answered once, with the nonce it carries; a nonce on any answer replaces the one kept. The
//! answer is then read as rmcp's own client reads it (JSON or an event stream, a session id,
//! `202`, challenges, a refused `server/discover`), within the same limits: a body no larger
//! than the transport's `max_json_response_size`, no event of a stream larger than its
//! `max_sse_event_size` (a server cannot make bosund hold an answer of any size). Without a
//! binding the limits go to rmcp's own client as they came.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

use bosun_auth::dpop::{self, Prover};

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_HEADER: &str = "last-event-id";
const ACCEPT_BOTH: &str = "text/event-stream, application/json";

/// A DPoP-bound access token and the prover of the server it is for.
#[derive(Clone)]
pub struct Binding {
    pub token: String,
    pub prover: Prover,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binding")
            .field("token", &"<secret>")
            .field("prover", &self.prover)
            .finish()
    }
}

/// reqwest, with DPoP proofs when the endpoint's token is bound.
#[derive(Clone)]
pub struct McpHttp {
    http: reqwest::Client,
    dpop: Option<Binding>,
}

type Failure = StreamableHttpError<reqwest::Error>;

impl McpHttp {
    pub fn new(http: reqwest::Client, dpop: Option<Binding>) -> Self {
        Self { http, dpop }
    }

    /// Sends `build()`'s request with a fresh proof; a `401` asking for a nonce is answered
    /// once, with the nonce it brought.
    async fn send(
        &self,
        binding: &Binding,
        method: reqwest::Method,
        uri: &str,
        headers: &HashMap<HeaderName, HeaderValue>,
        body: Option<&ClientJsonRpcMessage>,
    ) -> Result<reqwest::Response, Failure> {
        let mut retried = false;
        loop {
            let proof = binding
                .prover
                .proof(method.as_str(), uri, Some(&binding.token))
                .map_err(|e| Failure::Io(std::io::Error::other(e.to_string())))?;
            let mut request = self.http.request(method.clone(), uri);
            for (k, v) in headers {
                request = request.header(k, v);
            }
            request = request.header(dpop::PROOF_HEADER, proof);
            if let Some(message) = body {
                request = request.json(message);
            }
            let response = request.send().await?;
            let fresh = binding.prover.note_nonce(response.headers());
            let www = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok());
            if !retried && fresh && dpop::rs_wants_nonce(response.status().as_u16(), www) {
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }
}

/// The headers of every request: the endpoint's, the session's, `Accept`.
fn with_common(
    mut headers: HashMap<HeaderName, HeaderValue>,
    session: Option<&str>,
) -> HashMap<HeaderName, HeaderValue> {
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static(ACCEPT_BOTH),
    );
    if let Some(s) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        headers.insert(HeaderName::from_static(SESSION_HEADER), s);
    }
    headers
}

/// A `401` or `403` with a challenge, as rmcp's own client reports it.
fn challenge(response: &reqwest::Response) -> Option<Failure> {
    let www = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()?
        .to_string();
    match response.status().as_u16() {
        401 => Some(Failure::AuthRequired(AuthRequiredError::new(www))),
        403 => {
            let scope = bosun_auth::challenge::Challenge::parse(&www).scope;
            Some(Failure::InsufficientScope(InsufficientScopeError::new(
                www, scope,
            )))
        }
        _ => None,
    }
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The answer's event stream, each event at most `max_event` bytes as it came (field names,
/// data lines and all): a larger one ends the stream with an error.
fn event_stream(response: reqwest::Response, max_event: usize) -> BoxedSseResponse {
    let mut limit = EventLimit::new(max_event);
    let bytes = response.bytes_stream().map(move |chunk| match chunk {
        Ok(b) if limit.observe(&b) => Ok(b),
        Ok(_) => Err(std::io::Error::other(format!(
            "the server sent an event larger than {max_event} bytes"
        ))),
        Err(e) => Err(std::io::Error::other(e)),
    });
    sse_stream::SseStream::from_bytes_stream(bytes).boxed()
}

/// Counts the bytes of the event being received: a blank line ends an event; a line of its own
/// (`\n`, `\r\n` or `\r`) counts with its end. Comments (`:` lines) count too.
struct EventLimit {
    max: usize,
    event: usize,
    line: usize,
    after_cr: bool,
    over: bool,
}

impl EventLimit {
    fn new(max: usize) -> Self {
        Self {
            max,
            event: 0,
            line: 0,
            after_cr: false,
            over: false,
        }
    }

    /// Whether the event so far is within the limit, after `bytes`; once over, always false.
    fn observe(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if self.over {
                break;
            }
            let after_cr = std::mem::replace(&mut self.after_cr, b == b'\r');
            match b {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.event = if self.line == 0 {
                        0
                    } else {
                        self.event.saturating_add(self.line + 1)
                    };
                    self.line = 0;
                }
                _ => self.line = self.line.saturating_add(1),
            }
            self.over = self.event.saturating_add(self.line) > self.max;
        }
        !self.over
    }
}

/// The answer's body, refused once it passes `max` bytes (by its `Content-Length` before
/// anything is read).
async fn bounded_body(response: reqwest::Response, max: usize) -> Result<Vec<u8>, Failure> {
    let too_large = || Failure::ResponseBodyTooLarge { max_size: max };
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match bosun_auth::http_body::read_capped(response, max).await? {
        (body, false) => Ok(body),
        (_, true) => Err(too_large()),
    }
}

/// A client error answering `server/discover` (a server of an older revision, or middleware in
/// front of one), as the JSON-RPC error the lifecycle classifies, with the request's id.
fn refused_discover(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: reqwest::StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session_was_attached || !status.is_client_error() {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(e)) => e.error,
        Ok(_) | Err(_) => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

impl StreamableHttpClient for McpHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let Some(binding) = &self.dpop else {
            return self
                .http
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
        };
        let headers = with_common(custom_headers, session_id.as_deref());
        let response = self
            .send(
                binding,
                reqwest::Method::POST,
                &uri,
                &headers,
                Some(&message),
            )
            .await?;
        if let Some(failure) = challenge(&response) {
            return Err(failure);
        }
        let status = response.status();
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(Failure::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let kind = content_type(&response);
        if kind.starts_with("text/event-stream") && status.is_success() {
            return Ok(StreamableHttpPostResponse::Sse(
                event_stream(response, limits.max_sse_event_size),
                session,
            ));
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = bounded_body(response, limits.max_json_response_size).await?;
        let body = String::from_utf8_lossy(&body);
        if !status.is_success() {
            if let Ok(e @ ServerJsonRpcMessage::Error(_)) =
                serde_json::from_str::<ServerJsonRpcMessage>(&body)
                && !matches!(
                    &message,
                    ClientJsonRpcMessage::Request(r)
                        if matches!(r.request, ClientRequest::DiscoverRequest(_))
                )
            {
                return Ok(StreamableHttpPostResponse::Json(e, session));
            }
            if let Some(answer) = refused_discover(&message, session_id.is_some(), status, &body) {
                return Ok(answer);
            }
            if status.as_u16() == 429 || status.is_server_error() {
                return Err(HttpStatusError::new(status.as_u16(), retry_after).into());
            }
            let preview: String = body.chars().take(256).collect();
            return Err(Failure::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {preview}"
            ))));
        }
        if body.trim().is_empty() && !matches!(message, ClientJsonRpcMessage::Request(_)) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if kind.starts_with("application/json") {
            let answer: ServerJsonRpcMessage = serde_json::from_str(&body)?;
            return Ok(StreamableHttpPostResponse::Json(answer, session));
        }
        Err(Failure::UnexpectedContentType(Some(kind)))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let Some(binding) = &self.dpop else {
            return self
                .http
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await;
        };
        let headers = with_common(custom_headers, Some(&session_id));
        let response = self
            .send(binding, reqwest::Method::DELETE, &uri, &headers, None)
            .await?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response.error_for_status()?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, Failure> {
        let max = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, Failure> {
        let Some(binding) = &self.dpop else {
            return self
                .http
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await;
        };
        let mut headers = with_common(custom_headers, session_id.as_deref());
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
            headers.insert(HeaderName::from_static(LAST_EVENT_HEADER), id);
        }
        let response = self
            .send(binding, reqwest::Method::GET, &uri, &headers, None)
            .await?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(Failure::ServerDoesNotSupportSse);
        }
        if let Some(failure) = challenge(&response) {
            return Err(failure);
        }
        let response = response.error_for_status()?;
        let kind = content_type(&response);
        if !kind.starts_with("text/event-stream") && !kind.starts_with("application/json") {
            return Err(Failure::UnexpectedContentType(Some(kind)));
        }
        Ok(event_stream(response, max_sse_event_size))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[test]
    fn an_event_counts_its_lines_until_a_blank_line_whatever_the_line_ends() {
        // 10 + 1 bytes of one line, then a blank line: the next event starts from nothing.
        let mut l = EventLimit::new(12);
        assert!(l.observe(b"data: 1234\n\n"));
        assert!(l.observe(b"data: 1234\r\n\r\n"));
        assert!(l.observe(b"data: 1234\r\r"));
        // Split anywhere, CRLF included.
        assert!(l.observe(b"data: 12"));
        assert!(l.observe(b"34\r"));
        assert!(l.observe(b"\n\r\n"));
        // Two lines of one event add up: 11 + 11 > 12.
        assert!(!l.observe(b"data: 1234\ndata: 1234\n"));
        // Once over, the stream stays refused.
        assert!(!l.observe(b"\n\n"));
        // A single line past the limit, before its end comes.
        let mut l = EventLimit::new(12);
        assert!(!l.observe(b"data: 1234567890"));
    }

    /// Serves `answer` once on 127.0.0.1 and gives its address.
    async fn serve_once(answer: Vec<u8>) -> String {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("{e}"),
        };
        let addr = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        tokio::spawn(async move {
            if let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(&answer).await;
                let _ = s.shutdown().await;
            }
        });
        format!("http://{addr}/")
    }

    async fn get(answer: Vec<u8>) -> reqwest::Response {
        let url = serve_once(answer).await;
        match reqwest::Client::new().get(url).send().await {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_refused_with_or_without_its_length() {
        let big = vec![b'x'; 5000];
        let mut with_length =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                .to_vec();
        with_length.extend_from_slice(&big);
        let r = bounded_body(get(with_length.clone()).await, 4096).await;
        assert!(matches!(
            r,
            Err(Failure::ResponseBodyTooLarge { max_size: 4096 })
        ));
        let mut chunked = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in big.chunks(1000) {
            chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            chunked.extend_from_slice(part);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let r = bounded_body(get(chunked).await, 4096).await;
        assert!(matches!(
            r,
            Err(Failure::ResponseBodyTooLarge { max_size: 4096 })
        ));
        // Within the limit, the body whole.
        match bounded_body(get(with_length).await, 5000).await {
            Ok(b) => assert_eq!(b, big),
            Err(e) => panic!("{e}"),
        }
    }

    #[tokio::test]
    async fn an_event_stream_ends_with_an_error_at_an_event_past_the_limit() {
        let mut answer =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"a\":1}\n\n"
                .to_vec();
        answer.extend_from_slice(b"data: ");
        answer.extend_from_slice(&vec![b'x'; 3000]);
        answer.extend_from_slice(b"\n\n");
        // The bytes are checked as they come, before they are parsed: the small event may or
        // may not come first (here they come in one read), the large one never does.
        let items: Vec<_> = event_stream(get(answer).await, 1024).collect().await;
        for sse in items.iter().flatten() {
            assert!(sse.data.as_ref().is_none_or(|d| d.len() <= 1024), "{sse:?}");
        }
        assert!(
            items.iter().any(
                |i| matches!(i, Err(e) if format!("{e:?}").contains("larger than 1024 bytes"))
            ),
            "the large event was not refused: {items:?}"
        );
    }
}
