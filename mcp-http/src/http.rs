//! The bridge's side of a server reached by Streamable HTTP (MCP 2025-03-26 and later): each
//! message of the CLI's is POSTed to the server's address with its header lines and the
//! session's `Mcp-Session-Id` and `MCP-Protocol-Version`; the answer (a JSON body, or an event
//! stream of messages) comes back as lines, as a stdio server's would. A session the server
//! has ended (404) is opened again with the CLI's own `initialize`, and the message that found
//! it gone is sent once more: it never reached the server.
//!
//! The address (its query a secret), the header lines and the token stay here: no error or
//! note names more than the server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

/// The longest answer taken from a server.
const MAX_ANSWER: usize = 32 * 1024 * 1024;
/// How long a connection to the server may take to open.
const CONNECT: Duration = Duration::from_secs(30);

pub struct HttpSide {
    client: reqwest::Client,
    name: String,
    url: String,
    headers: Vec<(String, String)>,
    state: Mutex<State>,
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
    Other(String),
}

impl HttpSide {
    pub fn new(
        name: &str,
        url: &str,
        headers: &[(String, String)],
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
            headers: headers.to_vec(),
            state: Mutex::new(State::default()),
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

    async fn send(&self, line: Vec<u8>) {
        let msg: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        let request = msg.get("method").is_some() && msg.get("id").is_some_and(|i| !i.is_null());
        let init = msg.get("method").and_then(Value::as_str) == Some("initialize");
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
                Err(why) => Err(Fail::Other(why)),
            };
        }
        let why = match sent {
            Ok(()) => return,
            Err(Fail::Expired) => "it ended the session again".to_string(),
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
    async fn reopen(&self) -> Result<(), String> {
        let init = {
            let mut s = lock(&self.state);
            s.session = None;
            s.init.clone()
        };
        let Some(init) = init else {
            return Err("its session ended before it was initialized".into());
        };
        match self.exchange(&init, false).await {
            Ok(()) => {}
            Err(Fail::Expired) => return Err("it would not open a session".into()),
            Err(Fail::Other(why)) => return Err(why),
        }
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        match self.exchange(initialized, false).await {
            Ok(()) => {}
            Err(Fail::Expired) => return Err("it would not open a session".into()),
            Err(Fail::Other(why)) => return Err(why),
        }
        let _ = self.notes.send(format!(
            "bosun's MCP gateway: {} had ended its session; a new one was opened",
            self.name
        ));
        Ok(())
    }

    /// One POST; the messages of its answer go to the gateway's loop when `deliver`.
    async fn exchange(&self, body: &[u8], deliver: bool) -> Result<(), Fail> {
        let (session, version) = {
            let s = lock(&self.state);
            (s.session.clone(), s.version.clone())
        };
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &self.headers {
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
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(Fail::Other(format!(
                "it refused bosun's sign-in (HTTP {}); sign in again with `bosun mcp sign-in {}`",
                status.as_u16(),
                self.name
            )));
        }
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
                        for data in events.feed(&chunk) {
                            self.deliver(data, deliver);
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

    /// A message of the server's: the protocol version an `initialize` answer names is kept
    /// for the session's later requests.
    fn deliver(&self, line: Vec<u8>, deliver: bool) {
        if let Ok(v) = serde_json::from_slice::<Value>(&line)
            && let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
            && v.pointer("/result/capabilities").is_some()
        {
            lock(&self.state).version = Some(version.to_string());
        }
        if deliver {
            let _ = self.tx.send(line);
        }
    }

    /// The CLI is gone: the session is ended at the server, as the transport asks.
    pub async fn end(&self) {
        let session = lock(&self.state).session.clone();
        let Some(session) = session else {
            return;
        };
        let mut req = self.client.delete(&self.url);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.header("mcp-session-id", session.as_str());
        let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Server-sent events, fed as bytes come: the data of each whole event.
#[derive(Default)]
struct Events {
    buf: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
}

impl Events {
    fn feed(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=i).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                if self.has_data {
                    out.push(std::mem::take(&mut self.data));
                    self.has_data = false;
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix(b"data:") {
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(rest);
                self.has_data = true;
            }
        }
        out
    }

    fn pending(&self) -> usize {
        self.buf.len() + self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_whole_across_chunks() {
        let mut e = Events::default();
        assert!(e.feed(b"event: message\r\ndata: {\"a\"").is_empty());
        let got = e.feed(b":1}\r\n\r\nid: 2\ndata: x\ndata: y\n\n");
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"x\ny".to_vec()]);
        assert_eq!(e.pending(), 0);
    }
}
