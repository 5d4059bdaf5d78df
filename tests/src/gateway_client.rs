//! A client of a run's MCP gateway, dialled the way the run's CLI does
//! (`bosun-runner gateway --socket S NAME`), for the tests that hold the gateway to account
//! where it is enforced.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bin_dir;

/// A client of the run's gateway, as the CLI is: `bosun-runner gateway --socket S NAME`.
pub struct GatewayClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next: u64,
}

impl GatewayClient {
    pub fn dial(socket: &Path, server: &str) -> anyhow::Result<Self> {
        let mut child = Command::new(bin_dir().join("bosun-runner"))
            .args(["gateway", "--socket"])
            .arg(socket)
            .arg(server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
            next: 0,
        })
    }

    pub fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        writeln!(self.stdin, "{msg}")?;
        Ok(self.stdin.flush()?)
    }

    /// Sends a request; the answer to it (other messages are kept in `seen`).
    pub fn ask(&mut self, method: &str, params: Value, wait: Duration) -> anyhow::Result<Value> {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.answer(id, wait)
    }

    /// Opens the session as a CLI does, asking for no capability of its own: `initialize`, then
    /// `notifications/initialized`. The answer to `initialize`.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let init = self.ask(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "probe", "version": "1"},
                   "capabilities": {}}),
            Duration::from_secs(30),
        )?;
        anyhow::ensure!(init.get("result").is_some(), "not initialized: {init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(init)
    }

    pub fn answer(&mut self, id: u64, wait: Duration) -> anyhow::Result<Value> {
        let until = Instant::now() + wait;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let msg = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow::anyhow!("no answer to request {id} within {wait:?}"))?;
            if msg["id"] == json!(id) {
                return Ok(msg);
            }
        }
    }

    /// Everything that arrives within `wait`.
    pub fn drain(&mut self, wait: Duration) -> Vec<Value> {
        let until = Instant::now() + wait;
        let mut out = Vec::new();
        while let Ok(m) = self
            .lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            out.push(m);
        }
        out
    }

    pub fn call(&mut self, tool: &str, args: Value, wait: Duration) -> anyhow::Result<Value> {
        self.ask("tools/call", json!({"name": tool, "arguments": args}), wait)
    }
}

impl Drop for GatewayClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn text_of(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|i| i["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
