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
//! `202`, challenges, a refused `server/discover`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse,
};

use crate::auth::dpop::{self, Prover};

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
            let scope = crate::auth::challenge::Challenge::parse(&www).scope;
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

fn event_stream(response: reqwest::Response) -> BoxedSseResponse {
    sse_stream::SseStream::from_bytes_stream(response.bytes_stream()).boxed()
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
        let Some(binding) = &self.dpop else {
            return self
                .http
                .post_message(uri, message, session_id, auth_header, custom_headers)
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
                event_stream(response),
                session,
            ));
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.text().await?;
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
        let Some(binding) = &self.dpop else {
            return self
                .http
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
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
        Ok(event_stream(response))
    }
}
