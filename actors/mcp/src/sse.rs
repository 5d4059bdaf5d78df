//! The older HTTP+SSE transport (MCP 2024-11-05), which rmcp 3 no longer has.
//!
//! The client opens `GET <url>` as a server-sent event stream. The server's first event,
//! `endpoint`, names where to POST; every JSON-RPC message from the server then arrives on the
//! stream as a `message` event, and each POST is answered only with `202 Accepted`.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What can go wrong with the SSE transport.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {status} to {what}")]
    Status {
        status: u16,
        what: &'static str,
        www_authenticate: Option<String>,
    },
    #[error("the server's event stream is {0}, not text/event-stream")]
    NotEventStream(String),
    #[error("the server did not say where to send messages (no `endpoint` event) within {0}s")]
    NoEndpoint(u64),
    #[error("the server's `endpoint` event is not a usable address: {0}")]
    BadEndpoint(String),
    #[error("the event stream closed")]
    Closed,
}

pub struct SseTransport {
    http: reqwest::Client,
    post_url: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event.
    pub async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: HashMap<HeaderName, HeaderValue>,
        wait: Duration,
    ) -> Result<Self, SseError> {
        let base = reqwest::Url::parse(url).map_err(|e| SseError::BadEndpoint(e.to_string()))?;
        let headers: HeaderMap = headers.into_iter().collect();
        let response = http
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            let www_authenticate = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            return Err(SseError::Status {
                status: status.as_u16(),
                what: "opening the event stream",
                www_authenticate,
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !content_type.starts_with("text/event-stream") {
            return Err(SseError::NotEventStream(if content_type.is_empty() {
                "untyped".into()
            } else {
                content_type
            }));
        }
        let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
        let (tx, incoming) = mpsc::channel(256);
        let reader = tokio::spawn(read_events(response, endpoint_tx, tx));
        let endpoint = match tokio::time::timeout(wait, endpoint_rx).await {
            Ok(Ok(e)) => e,
            Ok(Err(_)) => return Err(SseError::Closed),
            Err(_) => {
                reader.abort();
                return Err(SseError::NoEndpoint(wait.as_secs()));
            }
        };
        // Its words name no address past its origin: the event's query is the session's.
        let post_url = base
            .join(endpoint.trim())
            .map_err(|e| SseError::BadEndpoint(format!("not an address ({e})")))?;
        if post_url.origin() != base.origin() {
            reader.abort();
            return Err(SseError::BadEndpoint(format!(
                "it is on {}, not on the server's own origin {}",
                post_url.origin().ascii_serialization(),
                base.origin().ascii_serialization()
            )));
        }
        Ok(Self {
            http,
            post_url,
            headers,
            incoming,
            reader,
        })
    }
}

/// Reads the event stream: the first `endpoint` event goes to `endpoint`, every `message` event
/// is a JSON-RPC message for the client.
async fn read_events(
    response: reqwest::Response,
    endpoint: tokio::sync::oneshot::Sender<String>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
) {
    let mut endpoint = Some(endpoint);
    let mut stream = response.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut event = String::new();
    let mut data = String::new();
    while let Some(Ok(bytes)) = stream.next().await {
        buf.extend_from_slice(&bytes);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                // An event is complete.
                let name = if event.is_empty() {
                    "message"
                } else {
                    event.as_str()
                };
                match name {
                    "endpoint" => {
                        if let Some(e) = endpoint.take() {
                            let _ = e.send(data.clone());
                        }
                    }
                    "message" if !data.trim().is_empty() => {
                        if let Ok(msg) = serde_json::from_str::<ServerJsonRpcMessage>(&data)
                            && tx.send(msg).await.is_err()
                        {
                            return;
                        }
                    }
                    _ => {}
                }
                event.clear();
                data.clear();
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let (http, url, headers) = (
            self.http.clone(),
            self.post_url.clone(),
            self.headers.clone(),
        );
        async move {
            let response = http.post(url).headers(headers).json(&item).send().await?;
            let status = response.status();
            if !status.is_success() {
                return Err(SseError::Status {
                    status: status.as_u16(),
                    what: "a message",
                    www_authenticate: None,
                });
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.reader.abort();
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
