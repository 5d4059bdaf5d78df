//! The bridge's side of a server reached by address, over either of MCP's HTTP transports.
//!
//! Streamable HTTP (MCP 2025-03-26 and later): each message of the CLI's is POSTed to the
//! server's address with its header lines and the session's `Mcp-Session-Id` and
//! `MCP-Protocol-Version`; the answer (a JSON body, or an event stream of messages) comes back
//! as lines, as a stdio server's would. A session the server has ended (404) is opened again
//! with the CLI's own `initialize`, and the message that found it gone is sent once more: it
//! never reached the server.
//!
//! The older HTTP+SSE transport (MCP 2024-11-05): at the first message the bridge GETs the
//! server's address as an event stream (with the header lines); its first `endpoint` event
//! names where to POST, which must be on the address's origin ([`post_address`]). Each message
//! is POSTed there (with the header lines again), and every message of the server's, answers
//! included, comes as a `message` event on the stream. The stream is the session: when it
//! ends the bridge ends ([`HttpSide::stream_ended`]), as a stdio server that exits, and the
//! gateway's rules for those apply (started again at the next message, a call on its way
//! answered with an error, never sent twice).
//!
//! A server that refuses bosun's sign-in (401, or 403 `insufficient_scope` asking for a wider
//! scope) did not run the message: the bridge asks the gateway for the server's token anew
//! ([`TOKEN_METHOD`], which the gateway asks bosund over the runner's link), and sends the
//! message once more with it. At most [`TOKEN_ROUNDS`] times per message: a refresh, then a
//! new sign-in by the person. A message the server answered in any other way is never sent
//! again.
//!
//! The address (its query a secret), the header lines and the tokens stay here: no error or
//! note names more than the server, and a token bosun got during the run is written
//! `[redacted]` wherever the server's messages hold it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_shared::gateway::{HttpTransport, TOKEN_ID_PREFIX, TOKEN_METHOD, fingerprint};
use reqwest::Url;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::sse::{Events, post_address};

/// The longest answer taken from a server.
const MAX_ANSWER: usize = 32 * 1024 * 1024;
/// How long a connection to the server may take to open.
const CONNECT: Duration = Duration::from_secs(30);
/// How many times a message the server refused for its sign-in is sent again with a token got
/// anew: once after a refresh, once more after a new sign-in.
const TOKEN_ROUNDS: u32 = 2;

pub struct HttpSide {
    client: reqwest::Client,
    name: String,
    url: String,
    transport: HttpTransport,
    /// HTTP+SSE: where to POST, once the event stream is open and its `endpoint` event said.
    /// Held while the stream is being opened, so that it is opened once.
    posts_to: tokio::sync::Mutex<Option<Url>>,
    /// HTTP+SSE: told when the event stream ended, and why it did.
    ended: Notify,
    why_ended: Mutex<Option<String>>,
    /// The header lines; `Authorization` replaced when a token is got anew.
    headers: Mutex<Vec<(String, String)>>,
    state: Mutex<State>,
    /// The bridge's asks for a token, by id: where the gateway's answers go.
    asked: Mutex<HashMap<String, oneshot::Sender<Result<String, NoToken>>>>,
    next_ask: AtomicU64,
    /// Tokens got during the run, hidden in the server's messages.
    fresh: Mutex<Vec<String>>,
    /// Requests the gateway cancelled (past their deadline): never sent once more.
    cancelled: Mutex<std::collections::HashSet<String>>,
    /// The server's messages, as lines, to the gateway's loop.
    tx: mpsc::UnboundedSender<Vec<u8>>,
    notes: mpsc::UnboundedSender<String>,
}

#[derive(Default)]
struct State {
    session: Option<String>,
    version: Option<String>,
    /// The CLI's `initialize`, to open an ended session again.
    init: Option<Vec<u8>>,
}

/// Why an exchange failed.
enum Fail {
    /// The server no longer knows the session (404).
    Expired,
    /// The server refused bosun's sign-in before it ran the message: 401, or (`wider`) 403
    /// `insufficient_scope` naming `scope`.
    Refused {
        status: u16,
        wider: bool,
        scope: Option<String>,
    },
    /// No token could be got anew: bosun's own words, said as they are.
    Token(NoToken),
    Other(String),
}

/// Why no token could be got anew ([`HttpSide::token_anew`]).
#[derive(Debug, thiserror::Error)]
enum NoToken {
    /// The gateway answered the ask with an error: its words, said as they are.
    #[error("{0}")]
    Refused(String),
    #[error("bosun's gateway did not answer the ask for a token")]
    Unanswered,
}

/// Why an ended session could not be opened again ([`HttpSide::reopen`]).
#[derive(Debug, thiserror::Error)]
enum ReopenError {
    /// The CLI sent no `initialize` to open one with.
    #[error("its session ended before it was initialized")]
    NotInitialized,
    #[error("it would not open a session")]
    NoSession,
    #[error("it refused bosun's sign-in (HTTP {0})")]
    SignIn(u16),
    #[error(transparent)]
    Token(NoToken),
    #[error("{0}")]
    Other(String),
}

impl From<Fail> for ReopenError {
    fn from(fail: Fail) -> Self {
        match fail {
            Fail::Expired => ReopenError::NoSession,
            Fail::Refused { status, .. } => ReopenError::SignIn(status),
            Fail::Token(why) => ReopenError::Token(why),
            Fail::Other(why) => ReopenError::Other(why),
        }
    }
}

impl HttpSide {
    pub fn new(
        name: &str,
        url: &str,
        headers: &[(String, String)],
        transport: HttpTransport,
        notes: mpsc::UnboundedSender<String>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        let side = Self {
            client,
            name: name.to_string(),
            url: url.to_string(),
            transport,
            posts_to: tokio::sync::Mutex::new(None),
            ended: Notify::new(),
            why_ended: Mutex::new(None),
            headers: Mutex::new(headers.to_vec()),
            state: Mutex::new(State::default()),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(0),
            fresh: Mutex::new(Vec::new()),
            cancelled: Mutex::new(std::collections::HashSet::new()),
            tx,
            notes,
        };
        (Arc::new(side), rx)
    }

    /// Sends a message of the CLI's (or the gateway's) on its way, without waiting for it.
    pub fn post(self: &Arc<Self>, line: Vec<u8>) {
        let me = self.clone();
        tokio::spawn(async move { me.send(line).await });
    }

    async fn send(self: &Arc<Self>, line: Vec<u8>) {
        let msg: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        let request = msg.get("method").is_some() && msg.get("id").is_some_and(|i| !i.is_null());
        let init = msg.get("method").and_then(Value::as_str) == Some("initialize");
        if msg.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
            && let Some(id) = msg.pointer("/params/requestId")
        {
            lock(&self.cancelled).insert(id.to_string());
        }
        if init {
            let mut s = lock(&self.state);
            s.init = Some(line.clone());
            s.session = None;
            s.version = None;
        }
        let mut sent = self.exchange(&line, true).await;
        if matches!(sent, Err(Fail::Expired)) && !init {
            sent = match self.reopen().await {
                Ok(()) => self.exchange(&line, true).await,
                Err(why) => Err(Fail::Other(why.to_string())),
            };
        }
        // Refused for its sign-in: it did not run, so it is sent again with a token got anew.
        let mut rounds = 0;
        while let Err(Fail::Refused { wider, scope, .. }) = &sent
            && rounds < TOKEN_ROUNDS
            && self.bearer().is_some()
        {
            rounds += 1;
            let (wider, scope) = (*wider, scope.clone());
            sent = match self.token_anew(wider, scope, msg.get("id")).await {
                // A call the gateway gave up on meanwhile is not sent: the CLI was told it
                // did not run.
                Ok(())
                    if msg
                        .get("id")
                        .is_some_and(|i| lock(&self.cancelled).contains(&i.to_string())) =>
                {
                    return;
                }
                Ok(()) => self.exchange(&line, true).await,
                Err(why) => Err(Fail::Token(why)),
            };
        }
        let why = match sent {
            Ok(()) => return,
            Err(Fail::Expired) => "it ended the session again".to_string(),
            Err(Fail::Refused { status, wider, .. }) => {
                let what = if wider {
                    "asked for a wider scope"
                } else {
                    "refused bosun's sign-in"
                };
                let again = if rounds > 0 {
                    " again, with the token bosun got anew"
                } else {
                    ""
                };
                format!(
                    "it {what}{again} (HTTP {status}); sign in again with `bosun mcp sign-in {}`",
                    self.name
                )
            }
            Err(Fail::Token(why)) => {
                if request {
                    let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "error": {
                        "code": -32001,
                        "message": why.to_string(),
                    }});
                    let _ = self.tx.send(serde_json::to_vec(&reply).unwrap_or_default());
                } else {
                    let _ = self.notes.send(format!(
                        "bosun's MCP gateway: a message to {} was not delivered: {why}",
                        self.name
                    ));
                }
                return;
            }
            Err(Fail::Other(why)) => why,
        };
        if request {
            let reply = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32000,
                "message": format!("the MCP server `{}` could not be reached: {why}", self.name),
            }});
            let _ = self.tx.send(serde_json::to_vec(&reply).unwrap_or_default());
        } else {
            let _ = self.notes.send(format!(
                "bosun's MCP gateway: a message to {} was not delivered: {why}",
                self.name
            ));
        }
    }

    /// Opens an ended session again with the CLI's `initialize` (its answer kept from the
    /// CLI, which has had one).
    async fn reopen(self: &Arc<Self>) -> Result<(), ReopenError> {
        let init = {
            let mut s = lock(&self.state);
            s.session = None;
            s.init.clone()
        };
        let Some(init) = init else {
            return Err(ReopenError::NotInitialized);
        };
        self.exchange(&init, false).await?;
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.exchange(initialized, false).await?;
        let _ = self.notes.send(format!(
            "bosun's MCP gateway: {} had ended its session; a new one was opened",
            self.name
        ));
        Ok(())
    }

    /// One message sent; the messages of its answer go to the gateway's loop when `deliver`
    /// (over HTTP+SSE they come on the event stream, and always go).
    async fn exchange(self: &Arc<Self>, body: &[u8], deliver: bool) -> Result<(), Fail> {
        match self.transport {
            HttpTransport::Streamable => self.exchange_streamable(body, deliver).await,
            HttpTransport::Sse => self.exchange_sse(body).await,
        }
    }

    /// One POST of Streamable HTTP.
    async fn exchange_streamable(&self, body: &[u8], deliver: bool) -> Result<(), Fail> {
        let (session, version) = {
            let s = lock(&self.state);
            (s.session.clone(), s.version.clone())
        };
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in lock(&self.headers).iter() {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(s) = &session {
            req = req.header("mcp-session-id", s.as_str());
        }
        if let Some(v) = &version {
            req = req.header("mcp-protocol-version", v.as_str());
        }
        let mut resp = req
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| Fail::Other(format!("could not reach it ({})", e.without_url())))?;
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            lock(&self.state).session = Some(s.to_string());
        }
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
            return Err(Fail::Expired);
        }
        self.signed_in(&resp)?;
        if !status.is_success() {
            return Err(Fail::Other(format!("it answered HTTP {}", status.as_u16())));
        }
        let stream = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if stream {
            let mut events = Events::default();
            loop {
                match resp.chunk().await {
                    Ok(Some(chunk)) => {
                        for event in events.feed(&chunk) {
                            self.deliver(event.data, deliver);
                        }
                        if events.pending() > MAX_ANSWER {
                            return Err(Fail::Other("it sent an event over 32 MiB".into()));
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        return Err(Fail::Other(format!(
                            "its event stream broke ({})",
                            e.without_url()
                        )));
                    }
                }
            }
            return Ok(());
        }
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() > MAX_ANSWER {
                        return Err(Fail::Other("its answer is over 32 MiB".into()));
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Fail::Other(format!(
                        "its answer broke off ({})",
                        e.without_url()
                    )));
                }
            }
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Array(items)) => {
                for item in items {
                    self.deliver(serde_json::to_vec(&item).unwrap_or_default(), deliver);
                }
            }
            Ok(_) => self.deliver(body, deliver),
            Err(_) => return Err(Fail::Other("its answer is not JSON".into())),
        }
        Ok(())
    }

    /// Whether the server took bosun's sign-in: a 401, or a 403 asking for a wider scope, is
    /// a refusal the message did not run past (so it may be sent again with a token got anew).
    fn signed_in(&self, resp: &reqwest::Response) -> Result<(), Fail> {
        let status = resp.status();
        if status != reqwest::StatusCode::UNAUTHORIZED && status != reqwest::StatusCode::FORBIDDEN {
            return Ok(());
        }
        let challenge = resp
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let wider = param(challenge, "error").as_deref() == Some("insufficient_scope");
        if status == reqwest::StatusCode::UNAUTHORIZED || wider {
            return Err(Fail::Refused {
                status: status.as_u16(),
                wider,
                scope: param(challenge, "scope").filter(|s| !s.trim().is_empty()),
            });
        }
        Err(Fail::Other(format!(
            "it refused bosun's sign-in (HTTP {}); sign in again with `bosun mcp sign-in {}`",
            status.as_u16(),
            self.name
        )))
    }

    /// One POST of HTTP+SSE, to where the event stream's `endpoint` event said (the stream
    /// opened first if it is not yet); its answer comes on the stream.
    async fn exchange_sse(self: &Arc<Self>, body: &[u8]) -> Result<(), Fail> {
        let to = self.open_stream().await?;
        let mut req = self
            .client
            .post(to)
            .header("content-type", "application/json");
        for (k, v) in lock(&self.headers).iter() {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| Fail::Other(format!("could not reach it ({})", e.without_url())))?;
        self.signed_in(&resp)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(Fail::Other(format!("it answered HTTP {}", status.as_u16())));
        }
        Ok(())
    }

    /// Where to POST over HTTP+SSE: the event stream is opened (GET, with the header lines)
    /// when it is not yet, and read until its `endpoint` event; from then on its `message`
    /// events go to the gateway's loop, and its end ends the bridge.
    async fn open_stream(self: &Arc<Self>) -> Result<Url, Fail> {
        let mut posts_to = self.posts_to.lock().await;
        if let Some(url) = posts_to.as_ref() {
            return Ok(url.clone());
        }
        let base =
            Url::parse(&self.url).map_err(|_| Fail::Other("its address is not a URL".into()))?;
        let mut req = self
            .client
            .get(base.clone())
            .header("accept", "text/event-stream");
        for (k, v) in lock(&self.headers).iter() {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = req.send().await.map_err(|e| {
            Fail::Other(format!(
                "could not open its event stream ({})",
                e.without_url()
            ))
        })?;
        self.signed_in(&resp)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(Fail::Other(format!(
                "it answered HTTP {} to the GET of its event stream",
                status.as_u16()
            )));
        }
        let kind = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !kind.starts_with("text/event-stream") {
            return Err(Fail::Other(format!(
                "its address answered `{}`, not an event stream: the HTTP+SSE transport's address is the one that gives the stream (often ending in `/sse`); a server of Streamable HTTP is added with `--transport http`",
                if kind.is_empty() {
                    "no content type"
                } else {
                    kind.as_str()
                }
                .escape_debug()
            )));
        }
        let mut events = Events::default();
        let said = tokio::time::timeout(CONNECT, async {
            loop {
                let chunk = match resp.chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => {
                        return Err(Fail::Other(
                            "its event stream ended before it said where to send messages (no `endpoint` event)".into(),
                        ));
                    }
                    Err(e) => {
                        return Err(Fail::Other(format!(
                            "its event stream broke ({})",
                            e.without_url()
                        )));
                    }
                };
                let mut to = None;
                for event in events.feed(&chunk) {
                    match event.name.as_str() {
                        "endpoint" if to.is_none() => {
                            to = Some(
                                post_address(&base, &event.data)
                                    .map_err(|e| Fail::Other(e.to_string()))?,
                            );
                        }
                        "message" => self.deliver(event.data, true),
                        _ => {}
                    }
                }
                if let Some(to) = to {
                    return Ok(to);
                }
                if events.pending() > MAX_ANSWER {
                    return Err(Fail::Other("it sent an event over 32 MiB".into()));
                }
            }
        })
        .await
        .unwrap_or_else(|_| {
            Err(Fail::Other(format!(
                "its event stream did not say where to send messages (no `endpoint` event) within {} s",
                CONNECT.as_secs()
            )))
        })?;
        let me = self.clone();
        tokio::spawn(async move { me.read_stream(resp, events).await });
        *posts_to = Some(said.clone());
        Ok(said)
    }

    /// Reads the open event stream to its end: each `message` event to the gateway's loop.
    async fn read_stream(&self, mut resp: reqwest::Response, mut events: Events) {
        let why = loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    for event in events.feed(&chunk) {
                        if event.name == "message" {
                            self.deliver(event.data, true);
                        }
                    }
                    if events.pending() > MAX_ANSWER {
                        break "it sent an event over 32 MiB".to_string();
                    }
                }
                Ok(None) => break "the server closed it".to_string(),
                Err(e) => break format!("it broke ({})", e.without_url()),
            }
        };
        *lock(&self.why_ended) = Some(why);
        self.ended.notify_one();
    }

    /// Over HTTP+SSE, when the event stream has ended: the session is over, and the bridge
    /// with it. Why it ended, in words. (Never, over Streamable HTTP.)
    pub async fn stream_ended(&self) -> String {
        self.ended.notified().await;
        lock(&self.why_ended)
            .clone()
            .unwrap_or_else(|| "it ended".into())
    }

    /// A message of the server's: the protocol version an `initialize` answer names is kept
    /// for the session's later requests.
    fn deliver(&self, line: Vec<u8>, deliver: bool) {
        if let Ok(v) = serde_json::from_slice::<Value>(&line) {
            if let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
                && v.pointer("/result/capabilities").is_some()
            {
                lock(&self.state).version = Some(version.to_string());
            }
            // Only the bridge asks the gateway for a token.
            if v.get("method").and_then(Value::as_str) == Some(TOKEN_METHOD) {
                let _ = self.notes.send(format!(
                    "bosun's MCP gateway: {} sent a message of bosun's own method {TOKEN_METHOD}; dropped",
                    self.name
                ));
                return;
            }
        }
        if deliver {
            let _ = self.tx.send(self.hide_fresh(line));
        }
    }

    /// A line with every token got during the run written `[redacted]` (the first token is
    /// among the run's secrets, which the runner hides itself).
    fn hide_fresh(&self, line: Vec<u8>) -> Vec<u8> {
        let fresh = lock(&self.fresh);
        if fresh.is_empty() {
            return line;
        }
        let Ok(mut text) = String::from_utf8(line) else {
            return Vec::new();
        };
        for t in fresh.iter() {
            if text.contains(t.as_str()) {
                text = text.replace(t.as_str(), bosun_shared::redact::REDACTED);
            }
        }
        text.into_bytes()
    }

    /// The bearer token the bridge sends, if bosun signs in to the server.
    fn bearer(&self) -> Option<String> {
        lock(&self.headers)
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .and_then(|(_, v)| v.strip_prefix("Bearer "))
            .map(str::to_string)
    }

    /// Asks the gateway for the server's token anew (it asks bosund, which refreshes it, or
    /// waits for the person's new sign-in), and sends it from now on.
    async fn token_anew(
        &self,
        wider: bool,
        scope: Option<String>,
        call: Option<&Value>,
    ) -> Result<(), NoToken> {
        let refused = self.bearer().map(|t| fingerprint(&t));
        let n = self.next_ask.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{TOKEN_ID_PREFIX}{n}");
        let (tx, rx) = oneshot::channel();
        lock(&self.asked).insert(id.clone(), tx);
        let ask = json!({"jsonrpc": "2.0", "id": id, "method": TOKEN_METHOD, "params": {
            "refused": refused, "wider": wider, "scope": scope, "call": call,
        }});
        let _ = self.tx.send(serde_json::to_vec(&ask).unwrap_or_default());
        let token = rx.await.map_err(|_| NoToken::Unanswered)??;
        {
            let mut headers = lock(&self.headers);
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        let mut fresh = lock(&self.fresh);
        if !fresh.contains(&token) {
            fresh.push(token);
        }
        Ok(())
    }

    /// A line of the gateway's that answers one of the bridge's asks for a token: taken here
    /// (`true`), never sent to the server.
    pub fn answered(&self, line: &str) -> bool {
        if !line.contains(TOKEN_ID_PREFIX) {
            return false;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return false;
        };
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            return false;
        };
        if v.get("method").is_some() || !id.starts_with(TOKEN_ID_PREFIX) {
            return false;
        }
        let Some(tx) = lock(&self.asked).remove(id) else {
            return true;
        };
        let answer = match v.pointer("/result/token").and_then(Value::as_str) {
            Some(t) => Ok(t.to_string()),
            None => Err(NoToken::Refused(
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("bosun's gateway got no token")
                    .to_string(),
            )),
        };
        let _ = tx.send(answer);
        true
    }

    /// The CLI is gone: the session is ended at the server, as the transport asks.
    pub async fn end(&self) {
        if self.transport == HttpTransport::Sse {
            // The stream is the session: it ends with the bridge.
            return;
        }
        let session = lock(&self.state).session.clone();
        let Some(session) = session else {
            return;
        };
        let mut req = self.client.delete(&self.url);
        for (k, v) in lock(&self.headers).iter() {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.header("mcp-session-id", session.as_str());
        let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
    }
}

/// The value of the parameter `name` of a `WWW-Authenticate` challenge (`name=value` or
/// `name="quoted \" value"`), the first one named so.
fn param(header: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = header[from..].find(name) {
        let at = from + i;
        from = at + name.len();
        let before = header[..at].chars().next_back();
        if !matches!(before, None | Some(' ' | ',' | '\t')) {
            continue;
        }
        let Some(rest) = header[from..].trim_start().strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => return Some(out),
                    c => out.push(c),
                }
            }
            return Some(out);
        }
        return Some(rest.split([',', ' ']).next().unwrap_or("").to_string());
    }
    None
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_s_parameters_are_read() {
        let h = r#"Bearer error="insufficient_scope", error_description="needs \"b\"", scope="a b", resource_metadata="x""#;
        assert_eq!(param(h, "error").as_deref(), Some("insufficient_scope"));
        assert_eq!(param(h, "scope").as_deref(), Some("a b"));
        assert_eq!(
            param("Bearer error=invalid_token", "error").as_deref(),
            Some("invalid_token")
        );
        assert_eq!(param("Bearer realm=\"x\"", "scope"), None);
    }
}
