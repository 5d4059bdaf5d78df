//! Each CLI's own output stream turned into the run's events: which MCP servers connected,
//! failed or need sign-in, which tools the run really had, each tool call and how it went, and
//! how the CLI itself judged the run.
//!
//! - Claude Code: its `system/init` line (tools, `mcp_servers[{name,status}]`), `assistant`
//!   tool uses, `user` tool results, `system/permission_denied`, and the `result` line — judged
//!   by `is_error` and `terminal_reason`, never by `subtype` (a "Not logged in" result is
//!   `subtype:"success"` with `is_error:true`).
//! - Codex: `thread.started`, `item.started`/`item.completed` (an `mcp_tool_call`, a command),
//!   `turn.completed`, `turn.failed`.
//! - Gemini CLI: `init`, `tool_use`, `tool_result`, `result`.
//! - A Codex or Gemini run driven through its control protocol (`codex app-server`, `gemini
//!   --acp`) writes JSON-RPC messages instead, with no `type`: those are read in [`rpc`].
//!
//! Lines are parsed as whole JSON objects and dispatched on `type`; anything else (a CLI's
//! noise, a line bosun does not know) is left alone.

use bosun_shared::agents::CliKind;
use bosun_shared::mcp::full_tool_name;
use serde_json::Value;

use std::sync::Arc;

use super::record::{AgentRun, CliResult, ToolCall};
use bosun_shared::prices::Prices;

mod rpc;
mod usage;

/// How each line of Claude Code's pieces of a message begins (`--include-partial-messages`:
/// a content block's start, its deltas, its stop). The whole block follows in an `assistant`
/// line, so the runner drops these from the log, and the reader skips any left unread: a
/// secret value the model wrote would reach the log in pieces no redaction matches.
pub const CLAUDE_PIECE: &str = r#"{"type":"stream_event","event":{"type":"content_block_"#;

/// The longest line parsed; a longer one (a huge tool result) is skipped.
const MAX_LINE: usize = 4 * 1024 * 1024;
/// The most tool calls kept on a run.
const MAX_CALLS: usize = 500;
/// How much of a text (a result, an error) is kept.
const MAX_TEXT: usize = 600;

/// A short digest of a tool call's arguments, the same whatever order their keys come in.
pub fn input_digest(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canonical(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => v.clone(),
        }
    }
    let text = canonical(v).to_string();
    Sha256::digest(text.as_bytes())
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How much a line changed the run: something worth saving at once (the init line, the
/// result), or only worth showing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    None,
    Minor,
    Major,
}

impl AgentRun {
    /// Why the run failed although the CLI exited with 0, when the CLI itself says it did.
    pub fn reported_failure(&self) -> Option<String> {
        let r = self.result.as_ref().filter(|r| r.is_error)?;
        let cli = match self.cli {
            Some(CliKind::Claude) => "Claude Code",
            Some(CliKind::Codex) => "Codex",
            Some(CliKind::Gemini) => "Gemini CLI",
            Some(CliKind::Command) | None => "the program",
        };
        let mut why = format!("{cli} reported an error");
        if let Some(reason) = &r.reason {
            why.push_str(&format!(" ({reason})"));
        }
        if let Some(text) = &r.text {
            why.push_str(&format!(": {text}"));
        }
        Some(why)
    }

    /// The tools to keep on the agent as "seen in the last run": the init line's, or else the
    /// ones it called.
    pub fn tools_seen(&self) -> Vec<String> {
        if !self.tools.is_empty() {
            return self.tools.clone();
        }
        let mut names: Vec<String> = self.calls.iter().map(|c| c.name.clone()).collect();
        names.sort();
        names.dedup();
        names
    }

    fn set_server(&mut self, name: &str, state: &str) {
        match self.servers.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = state.to_string(),
            None => self.servers.push((name.to_string(), state.to_string())),
        }
    }

    fn call_started(&mut self, id: Option<String>, name: String, input: Option<String>) {
        if let Some(id) = &id
            && self.calls.iter().any(|c| c.id.as_deref() == Some(id))
        {
            return;
        }
        self.usage.tool_calls += 1;
        if self.calls.len() < MAX_CALLS {
            self.calls.push(ToolCall {
                id,
                name,
                ok: None,
                error: None,
                input,
            });
        }
    }

    fn call_ended(
        &mut self,
        id: Option<&str>,
        name: Option<String>,
        ok: bool,
        error: Option<String>,
    ) {
        let found = self
            .calls
            .iter_mut()
            .rev()
            .find(|c| id.is_some() && c.id.as_deref() == id);
        match found {
            Some(c) => {
                c.ok = Some(ok);
                c.error = error;
            }
            None => {
                if name.is_some() {
                    self.usage.tool_calls += 1;
                }
                if let Some(name) = name
                    && self.calls.len() < MAX_CALLS
                {
                    self.calls.push(ToolCall {
                        id: id.map(str::to_string),
                        name,
                        ok: Some(ok),
                        error,
                        input: None,
                    });
                }
            }
        }
    }
}

/// Reads one CLI's stdout, line by line.
pub struct StreamParser {
    cli: CliKind,
    partial: Vec<u8>,
    skipping: bool,
    /// What a run costs when its CLI does not say.
    prices: Arc<Prices>,
}

impl StreamParser {
    pub fn new(cli: CliKind, prices: Arc<Prices>) -> Self {
        Self {
            cli,
            partial: Vec::new(),
            skipping: false,
            prices,
        }
    }

    /// Whether every line fed so far was read whole (no line waits for its end).
    pub fn at_line_start(&self) -> bool {
        self.partial.is_empty() && !self.skipping
    }

    /// Feeds a chunk of stdout; returns how much the run changed.
    pub fn feed(&mut self, data: &[u8], run: &mut AgentRun) -> Change {
        let mut change = Change::None;
        let mut rest = data;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            let (line, after) = rest.split_at(i);
            rest = &after[1..];
            if self.skipping {
                self.skipping = false;
                self.partial.clear();
                continue;
            }
            let c = if self.partial.is_empty() {
                self.line(line, run)
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, run)
            };
            change = change.max(c);
        }
        if !rest.is_empty() && !self.skipping {
            if self.partial.len() + rest.len() > MAX_LINE {
                self.partial.clear();
                self.skipping = true;
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
        change
    }

    fn line(&self, line: &[u8], run: &mut AgentRun) -> Change {
        let trimmed = line.trim_ascii();
        if !trimmed.starts_with(b"{") || trimmed.starts_with(CLAUDE_PIECE.as_bytes()) {
            return Change::None;
        }
        let Ok(v) = serde_json::from_slice::<Value>(trimmed) else {
            return Change::None;
        };
        let tokens = |run: &AgentRun| (run.usage.models.len(), run.usage.total());
        let before = tokens(run);
        let change = match self.cli {
            CliKind::Claude => claude(&v, run),
            CliKind::Codex => codex(&v, run),
            CliKind::Gemini => gemini(&v, run),
            CliKind::Command => Change::None,
        };
        // Priced again only when the tokens changed (a message's lines, or fewer).
        if tokens(run) == before {
            return change;
        }
        usage::price(&self.prices, run);
        change.max(Change::Minor)
    }
}

fn text(v: &Value) -> Option<String> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => return None,
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str).map(str::to_string))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Bool(_) | Value::Number(_) | Value::Object(_) => v.to_string(),
    };
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    Some(if s.chars().count() > MAX_TEXT {
        let cut: String = s.chars().take(MAX_TEXT).collect();
        format!("{cut}…")
    } else {
        s.to_string()
    })
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn claude(v: &Value, run: &mut AgentRun) -> Change {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    let subtype = v.get("subtype").and_then(Value::as_str).unwrap_or_default();
    match (kind, subtype) {
        ("system", "init") => {
            run.session = str_of(v, "session_id");
            run.model = str_of(v, "model");
            if let Some(tools) = v.get("tools").and_then(Value::as_array) {
                run.tools = tools
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
            }
            if let Some(servers) = v.get("mcp_servers").and_then(Value::as_array) {
                for s in servers {
                    if let (Some(name), Some(status)) = (
                        s.get("name").and_then(Value::as_str),
                        s.get("status").and_then(Value::as_str),
                    ) {
                        run.set_server(name, status);
                    }
                }
            }
            Change::Major
        }
        ("system", "permission_denied") => {
            let name = str_of(v, "tool_name").unwrap_or_else(|| "a tool".into());
            run.call_ended(
                v.get("tool_use_id").and_then(Value::as_str),
                Some(name),
                false,
                str_of(v, "message"),
            );
            Change::Minor
        }
        ("assistant", _) => {
            let message = v.get("message").unwrap_or(&Value::Null);
            if let Some(u) = message.get("usage").filter(|u| u.is_object())
                && message.get("model").and_then(Value::as_str) != Some("<synthetic>")
            {
                usage::claude_message(
                    message.get("id").and_then(Value::as_str),
                    message.get("model").and_then(Value::as_str),
                    u,
                    run,
                );
            }
            let mut change = Change::None;
            for block in content(v) {
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let name = str_of(block, "name").unwrap_or_default();
                    let input = block.get("input").map(input_digest);
                    run.call_started(str_of(block, "id"), name, input);
                    change = Change::Minor;
                }
            }
            change
        }
        ("user", _) => {
            let mut change = Change::None;
            for block in content(v) {
                if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                    let is_error = block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let error = if is_error {
                        block.get("content").and_then(text)
                    } else {
                        None
                    };
                    run.call_ended(
                        block.get("tool_use_id").and_then(Value::as_str),
                        None,
                        !is_error,
                        error,
                    );
                    change = Change::Minor;
                }
            }
            change
        }
        ("stream_event", _) => {
            // `--include-partial-messages`: only a message's start and its end are read (its
            // pieces are the runner's to drop; see `CLAUDE_PIECE`).
            let event = v.get("event").unwrap_or(&Value::Null);
            let id = v.get("api_message_id").and_then(Value::as_str);
            match event.get("type").and_then(Value::as_str) {
                Some("message_start") => {
                    let message = event.get("message").unwrap_or(&Value::Null);
                    if let Some(u) = message.get("usage") {
                        usage::claude_message(
                            message.get("id").and_then(Value::as_str).or(id),
                            message.get("model").and_then(Value::as_str),
                            u,
                            run,
                        );
                    }
                }
                Some("message_delta") => {
                    if let Some(u) = event.get("usage") {
                        usage::claude_message(id, None, u, run);
                    }
                }
                _ => {}
            }
            Change::None
        }
        ("result", _) => {
            usage::claude_result(v, run);
            run.result = Some(CliResult {
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                reason: str_of(v, "terminal_reason").or_else(|| str_of(v, "subtype")),
                text: v.get("result").and_then(text),
            });
            Change::Major
        }
        _ => Change::None,
    }
}

fn content(v: &Value) -> impl Iterator<Item = &Value> {
    v.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn codex(v: &Value, run: &mut AgentRun) -> Change {
    let Some(kind) = v.get("type").and_then(Value::as_str) else {
        return rpc::codex_app_server(v, run);
    };
    match kind {
        "thread.started" => {
            run.session = str_of(v, "thread_id");
            Change::Major
        }
        "item.started" | "item.completed" => {
            let Some(item) = v.get("item") else {
                return Change::None;
            };
            let item_type = item.get("type").and_then(Value::as_str).unwrap_or_default();
            let id = str_of(item, "id");
            let name = match item_type {
                "mcp_tool_call" => {
                    let server = item
                        .get("server")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let tool = item.get("tool").and_then(Value::as_str).unwrap_or_default();
                    full_tool_name(server, tool)
                }
                "command_execution" | "file_change" | "web_search" => item_type.to_string(),
                _ => return Change::None,
            };
            if kind == "item.started" {
                run.call_started(id, name, None);
            } else {
                let status = item
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let error = item.get("error").filter(|e| !e.is_null());
                let ok = error.is_none() && status != "failed";
                if item_type == "mcp_tool_call"
                    && ok
                    && let Some(server) = item.get("server").and_then(Value::as_str)
                {
                    run.set_server(server, "connected");
                }
                let error = error.and_then(|e| e.get("message").and_then(text).or_else(|| text(e)));
                run.call_ended(id.as_deref(), Some(name), ok, error);
            }
            Change::Minor
        }
        "turn.completed" => {
            usage::codex_turn(v, run);
            run.result = Some(CliResult {
                is_error: false,
                reason: Some("completed".into()),
                text: None,
            });
            Change::Major
        }
        "turn.failed" => {
            run.result = Some(CliResult {
                is_error: true,
                reason: Some("turn failed".into()),
                text: v.get("error").and_then(|e| e.get("message")).and_then(text),
            });
            Change::Major
        }
        _ => Change::None,
    }
}

/// Gemini names an MCP tool `mcp_<server>_<tool>`; bosun writes `mcp__<server>__<tool>`.
fn gemini_tool_name(name: &str, run: &AgentRun) -> (String, Option<String>) {
    if let Some(rest) = name.strip_prefix("mcp_") {
        for (server, _) in &run.servers {
            if let Some(tool) = rest.strip_prefix(&format!("{server}_")) {
                return (full_tool_name(server, tool), Some(server.clone()));
            }
        }
    }
    (name.to_string(), None)
}

fn gemini(v: &Value, run: &mut AgentRun) -> Change {
    let Some(kind) = v.get("type").and_then(Value::as_str) else {
        return rpc::gemini_acp(v, run);
    };
    match kind {
        "init" => {
            run.session = str_of(v, "session_id");
            run.model = str_of(v, "model");
            Change::Major
        }
        "tool_use" => {
            let raw = str_of(v, "tool_name").unwrap_or_default();
            let (name, _) = gemini_tool_name(&raw, run);
            run.call_started(str_of(v, "tool_id"), name, None);
            Change::Minor
        }
        "tool_result" => {
            let ok = v.get("status").and_then(Value::as_str) == Some("success");
            let id = str_of(v, "tool_id");
            let error = if ok {
                None
            } else {
                v.get("error")
                    .and_then(|e| e.get("message").and_then(text).or_else(|| text(e)))
                    .or_else(|| v.get("output").and_then(text))
            };
            if ok
                && let Some(call) = run.calls.iter().find(|c| id.is_some() && c.id == id)
                && let Some(server) = call
                    .name
                    .strip_prefix("mcp__")
                    .and_then(|r| r.split("__").next())
                    .map(str::to_string)
            {
                run.set_server(&server, "connected");
            }
            run.call_ended(id.as_deref(), None, ok, error);
            Change::Minor
        }
        "result" => {
            usage::gemini_stats(v, run);
            let status = str_of(v, "status");
            run.result = Some(CliResult {
                is_error: status.as_deref() != Some("success"),
                reason: status,
                text: v.get("error").and_then(|e| e.get("message")).and_then(text),
            });
            Change::Major
        }
        _ => Change::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(cli: CliKind, servers: &[&str]) -> AgentRun {
        AgentRun {
            cli: Some(cli),
            servers: servers
                .iter()
                .map(|s| (s.to_string(), "given".to_string()))
                .collect(),
            ..AgentRun::default()
        }
    }

    #[test]
    fn claude_init_tools_calls_and_a_not_logged_in_result() {
        let mut run = run_of(CliKind::Claude, &["everything", "broken"]);
        let mut p = StreamParser::new(CliKind::Claude, Default::default());
        let init = r#"{"type":"system","subtype":"init","session_id":"s1","tools":["Bash","mcp__everything__echo"],"mcp_servers":[{"name":"everything","status":"connected","source":"dynamic"},{"name":"broken","status":"failed","source":"dynamic"}],"model":"m"}"#;
        // Split across chunks, as output may be.
        let (a, b) = init.split_at(40);
        assert_eq!(p.feed(a.as_bytes(), &mut run), Change::None);
        assert_eq!(p.feed(format!("{b}\n").as_bytes(), &mut run), Change::Major);
        assert_eq!(run.tools, vec!["Bash", "mcp__everything__echo"]);
        assert_eq!(
            run.servers,
            vec![
                ("everything".to_string(), "connected".to_string()),
                ("broken".to_string(), "failed".to_string())
            ]
        );
        let lines = [
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__everything__echo","input":{}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Echo: ping"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"mcp__everything__get-sum","input":{}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"<tool_use_error>Error: No such tool available: mcp__everything__get-sum</tool_use_error>"}]}}"#,
            r#"{"duration_api_ms":0,"terminal_reason":"api_error","is_error":true,"subtype":"success","result":"Not logged in · Please run /login","type":"result"}"#,
        ];
        for l in lines {
            p.feed(format!("{l}\n").as_bytes(), &mut run);
        }
        assert_eq!(run.calls.len(), 2);
        assert_eq!(run.calls[0].ok, Some(true));
        assert_eq!(run.calls[1].ok, Some(false));
        assert!(
            run.calls[1]
                .error
                .as_deref()
                .unwrap_or_default()
                .contains("No such tool")
        );
        let why = run.reported_failure().unwrap_or_default();
        assert_eq!(
            why,
            "Claude Code reported an error (api_error): Not logged in · Please run /login"
        );
    }

    #[test]
    fn codex_items_and_turns() {
        let mut run = run_of(CliKind::Codex, &["everything"]);
        let mut p = StreamParser::new(CliKind::Codex, Default::default());
        let stream = concat!(
            r#"{"type":"thread.started","thread_id":"th1"}"#,
            "\n",
            r#"{"type":"turn.started"}"#,
            "\n",
            r#"{"type":"item.started","item":{"id":"item_0","type":"mcp_tool_call","server":"everything","tool":"echo","arguments":{},"result":null,"error":null,"status":"in_progress"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"everything","tool":"echo","arguments":{},"result":{"content":[]},"error":null,"status":"completed"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}"#,
            "\n",
            r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}"#,
            "\n",
        );
        p.feed(stream.as_bytes(), &mut run);
        assert_eq!(run.session.as_deref(), Some("th1"));
        assert_eq!(run.calls.len(), 1);
        assert_eq!(run.calls[0].name, "mcp__everything__echo");
        assert_eq!(run.calls[0].ok, Some(true));
        assert_eq!(run.servers[0].1, "connected");
        assert!(run.reported_failure().unwrap_or_default().contains("401"));
        assert_eq!(run.tools_seen(), vec!["mcp__everything__echo"]);
    }

    #[test]
    fn gemini_tool_use_and_result() {
        let mut run = run_of(CliKind::Gemini, &["everything"]);
        let mut p = StreamParser::new(CliKind::Gemini, Default::default());
        let stream = concat!(
            "Warning: 256-color support not detected\n",
            r#"{"type":"init","timestamp":"t","session_id":"g1","model":"auto"}"#,
            "\n",
            r#"{"type":"tool_use","tool_name":"mcp_everything_echo","tool_id":"x1","parameters":{}}"#,
            "\n",
            r#"{"type":"tool_result","tool_id":"x1","status":"success","output":"Echo: ping"}"#,
            "\n",
            r#"{"type":"tool_use","tool_name":"echo","tool_id":"x2","parameters":{}}"#,
            "\n",
            r#"{"type":"tool_result","tool_id":"x2","status":"error","error":{"type":"tool_not_registered","message":"Tool \"echo\" not found"}}"#,
            "\n",
            r#"{"type":"result","status":"success","stats":{}}"#,
            "\n",
        );
        p.feed(stream.as_bytes(), &mut run);
        assert_eq!(run.calls[0].name, "mcp__everything__echo");
        assert_eq!(run.calls[0].ok, Some(true));
        assert_eq!(run.calls[1].ok, Some(false));
        assert!(
            run.calls[1]
                .error
                .as_deref()
                .unwrap_or_default()
                .contains("not found")
        );
        assert_eq!(run.servers[0].1, "connected");
        assert!(run.reported_failure().is_none());
    }
}
