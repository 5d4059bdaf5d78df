//! The web UI's bridge as a test speaks to it: HTTP by hand (HTTP/1.0, so bodies and event
//! streams end with the connection and need no de-chunking), signed in the way a browser is,
//! with the session's CSRF value on writes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::Bosun;

/// The running bridge of a test.
pub struct Ui {
    pub port: u16,
    pub login: String,
    pub pid: i32,
}

impl Ui {
    pub fn start(b: &Bosun) -> anyhow::Result<Self> {
        let v = b.json(&["ui", "--no-open"])?;
        Ok(Self {
            port: v["port"].as_u64().context("no port")? as u16,
            login: v["login_url"].as_str().context("no login_url")?.to_string(),
            pid: v["pid"].as_i64().context("no pid")? as i32,
        })
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Signs in with the one-time address; returns the `Cookie` header value.
    pub fn sign_in(&self) -> anyhow::Result<String> {
        let path = self.login.trim_start_matches(&self.origin()).to_string();
        let r = self.get(&path, &[])?;
        if r.status != 303 {
            bail!("the sign-in answered {}: {}", r.status, r.body);
        }
        let cookie = r.header("set-cookie").context("no cookie")?;
        Ok(cookie.split(';').next().unwrap_or_default().to_string())
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> anyhow::Result<Reply> {
        self.send("GET", path, headers, None)
    }

    /// A write as the page makes it: same origin, with the session's CSRF value.
    pub fn call(&self, cookie: &str, csrf: &str, body: &str) -> anyhow::Result<Reply> {
        let origin = self.origin();
        self.send(
            "POST",
            "/api/call",
            &[
                ("Cookie", cookie),
                ("Origin", &origin),
                ("X-Bosun-Csrf", csrf),
                ("Content-Type", "application/json"),
            ],
            Some(body),
        )
    }

    pub fn csrf(&self, cookie: &str) -> anyhow::Result<String> {
        let r = self.get("/api/session", &[("Cookie", cookie)])?;
        Ok(r.json()?["csrf"].as_str().context("no csrf")?.to_string())
    }

    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> anyhow::Result<Reply> {
        let mut s = self.open(method, path, headers, body)?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        Reply::parse(&raw)
    }

    pub fn open(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> anyhow::Result<TcpStream> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut req = format!("{method} {path} HTTP/1.0\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.host()));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        req.push_str("\r\n");
        req.push_str(body.unwrap_or_default());
        s.write_all(req.as_bytes())?;
        Ok(s)
    }

    /// Opens a log stream and reads it until `end` (or `failed`), calling `during` after each
    /// event; returns the events.
    pub fn log_events(
        &self,
        cookie: &str,
        path: &str,
        extra: &[(&str, &str)],
        mut during: impl FnMut(&SseEvent) -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<SseEvent>> {
        let mut headers = vec![("Cookie", cookie)];
        headers.extend_from_slice(extra);
        let s = self.open("GET", path, &headers, None)?;
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line)?;
        if !line.contains(" 200 ") {
            bail!("the log stream answered {line}");
        }
        loop {
            line.clear();
            r.read_line(&mut line)?;
            if line.trim().is_empty() {
                break;
            }
        }
        let (mut events, mut cur) = (Vec::new(), SseEvent::default());
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                bail!("the log stream closed before its end: {events:?}");
            }
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                if cur.data.is_empty() && cur.event.is_empty() {
                    continue;
                }
                let e = std::mem::take(&mut cur);
                during(&e)?;
                let last = e.event == "end" || e.event == "failed";
                events.push(e);
                if last {
                    return Ok(events);
                }
            } else if let Some(v) = l.strip_prefix("id:") {
                cur.id = v.trim().parse().ok();
            } else if let Some(v) = l.strip_prefix("event:") {
                cur.event = v.trim().to_string();
            } else if let Some(v) = l.strip_prefix("data:") {
                cur.data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }
}

/// One event of an SSE stream.
#[derive(Debug, Default)]
pub struct SseEvent {
    pub id: Option<u64>,
    pub event: String,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

/// A reply of the bridge, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn parse(raw: &[u8]) -> anyhow::Result<Self> {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text.split_once("\r\n\r\n").context("no header end")?;
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .context("no status")?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Ok(Self {
            status,
            headers,
            body: body.to_string(),
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_str(&self.body).with_context(|| format!("not JSON: {}", self.body))
    }
}
