//! Gemini CLI's control protocol: the Agent Client Protocol (`gemini --acp`), JSON-RPC 2.0
//! over stdio, one JSON object a line.
//!
//! The runner says `initialize` (no file-system or terminal capabilities, so Gemini uses its
//! own tools), opens a session (`session/new`: the folder the CLI runs in, and no MCP servers
//! of its own: the run's servers are in the `settings.json` of the run's home, whose secrets
//! stay in that 0600 file) and hands over the task with `session/prompt`. Each
//! `session/request_permission` is one [`Step::Ask`], keyed by the request's JSON-RPC id and
//! answered with the `allow_once` or `reject_once` option it offered. When the prompt's answer
//! comes (its `stopReason`, or an error) stdin is closed.
//!
//! A permission request does not name the tool nor carry its arguments: the tool is read from
//! the call's id (Gemini makes it `<tool>__<id>`, and its own ids `<tool>_<ms>_<n>`), an MCP
//! tool `mcp_<server>_<tool>` is told apart with the plan's server names, and the input is
//! rebuilt from what the request shows: the command (a shell call's title), the diff of an
//! edit, the JSON arguments of an MCP call.
//!
//! # Caveats
//! Measured with Gemini CLI 0.61.0:
//! - A rejection carries no message: the model is told `Tool "<name>" was canceled by the
//!   user.`, and ACP has no way to add bosun's words to a running prompt (a second
//!   `session/prompt` aborts the first).
//! - Only calls its policy engine leaves to the user ask. With `--approval-mode default` reads
//!   (`read_file`, `list_directory`, `glob`, `grep_search`) never ask; a user policy asking for
//!   every tool (the adapter writes one) makes them ask, but shell commands Gemini deems
//!   read-only (`ls`, `pwd`, `echo`, `git status`) still run without asking.
//! - An MCP call's arguments longer than 500 characters are not shown: the input is then
//!   Gemini's note `[Payload omitted due to length …]`.
//! - Gemini does not exit when its stdin closes while a stdio MCP server is connected: the
//!   runner has to end it after [`Step::Finish`].

use std::collections::HashMap;
use std::path::PathBuf;

use bosun_protocol::runner::{ControlPlan, ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use bosun_shared::mcp::full_tool_name;
use serde_json::{Map, Value, json};

use super::{Protocol, Step};

/// The ids of the runner's own requests.
const INIT_ID: &str = "bosun-initialize";
const SESSION_ID: &str = "bosun-session";
const PROMPT_ID: &str = "bosun-prompt";

/// The ACP version this runner speaks.
const PROTOCOL_VERSION: u64 = 1;

/// The JSON-RPC error code for a method the runner does not handle.
const METHOD_NOT_FOUND: i64 = -32601;

pub struct Gemini {
    prompt: String,
    /// `session/new`'s params, from the plan.
    session_params: Map<String, Value>,
    /// The run's MCP servers, longest name first, to tell `mcp_<server>_<tool>` apart.
    servers: Vec<String>,
    /// The permission requests waiting for bosund, by key.
    waiting: HashMap<String, Waiting>,
}

/// A permission request Gemini waits on.
struct Waiting {
    /// Its JSON-RPC id as Gemini sent it (a number), for the answer.
    id: Value,
    /// The ids of the options that allow once and reject once.
    allow: Option<String>,
    reject: Option<String>,
}

impl Gemini {
    pub fn new(plan: &ControlPlan) -> Self {
        let mut session_params = plan
            .settings
            .get("sessionNew")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Gemini resolves the folder against its own, which is the run's.
        session_params.entry("cwd").or_insert_with(|| json!("."));
        session_params
            .entry("mcpServers")
            .or_insert_with(|| json!([]));
        let mut servers: Vec<String> = plan
            .settings
            .get("servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        servers.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self {
            prompt: plan.prompt.clone(),
            session_params,
            servers,
            waiting: HashMap::new(),
        }
    }

    fn on_response(&mut self, id: &str, msg: &Value) -> Vec<Step> {
        if let Some(error) = msg.get("error") {
            say!("bosun-runner: Gemini CLI refused {id}: {error}");
            return vec![Step::Finish];
        }
        match id {
            INIT_ID => vec![request(
                SESSION_ID,
                "session/new",
                Value::Object(self.session_params.clone()),
            )],
            SESSION_ID => {
                let Some(session) = msg["result"]["sessionId"].as_str() else {
                    say!("bosun-runner: Gemini CLI opened no session");
                    return vec![Step::Finish];
                };
                vec![request(
                    PROMPT_ID,
                    "session/prompt",
                    json!({
                        "sessionId": session,
                        "prompt": [{"type": "text", "text": self.prompt}],
                    }),
                )]
            }
            PROMPT_ID => vec![Step::Finish],
            _ => Vec::new(),
        }
    }

    fn on_request(&mut self, id: &Value, method: &str, params: &Value) -> Vec<Step> {
        if method != "session/request_permission" {
            return vec![line(&json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": METHOD_NOT_FOUND,
                    "message": format!("bosun does not handle {method}"),
                },
            }))];
        }
        let call = &params["toolCall"];
        let raw = tool_of_call(call["toolCallId"].as_str().unwrap_or_default());
        let tool = self.bosun_name(raw);
        let (input, cwd) = input_of(call, tool.starts_with("mcp__"));
        let option = |kind: &str| {
            params["options"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|o| o["kind"] == kind)
                .and_then(|o| o["optionId"].as_str())
                .map(str::to_string)
        };
        let key = match id {
            Value::String(s) => s.clone(),
            Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::Array(_)
            | Value::Object(_) => id.to_string(),
        };
        self.waiting.insert(
            key.clone(),
            Waiting {
                id: id.clone(),
                allow: option("allow_once"),
                reject: option("reject_once"),
            },
        );
        vec![Step::Ask(ToolAsk {
            key,
            tool,
            input,
            input_cut: false,
            cwd,
            at: Timestamp::now(),
            redacted: false,
        })]
    }

    /// Gemini's `mcp_<server>_<tool>` as bosun's `mcp__<server>__<tool>`; other names as
    /// they are.
    fn bosun_name(&self, name: &str) -> String {
        if let Some(rest) = name.strip_prefix("mcp_") {
            for server in &self.servers {
                if let Some(tool) = rest
                    .strip_prefix(server.as_str())
                    .and_then(|r| r.strip_prefix('_'))
                {
                    return full_tool_name(server, tool);
                }
            }
        }
        name.to_string()
    }
}

fn line(v: &Value) -> Step {
    Step::Write(serde_json::to_vec(v).unwrap_or_default())
}

fn request(id: &str, method: &str, params: Value) -> Step {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// The tool of a call id `<tool>__<id>`. When Gemini made the id itself (`<tool>_<ms>_<n>`)
/// the tool is found exactly even if its name holds `__`; otherwise it is what comes before
/// the first `__`.
fn tool_of_call(id: &str) -> &str {
    let mut first = None;
    for (at, _) in id.match_indices("__") {
        let (tool, rest) = (&id[..at], &id[at + 2..]);
        first.get_or_insert(tool);
        if let Some(own) = rest.strip_prefix(tool).and_then(|r| r.strip_prefix('_'))
            && own
                .split('_')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return tool;
        }
    }
    first.unwrap_or(id)
}

/// The texts of a call's `content` blocks.
fn texts(call: &Value) -> Vec<&str> {
    call["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect()
}

/// The input bosun sees for a call, and the folder it acts in when the request says.
fn input_of(call: &Value, mcp: bool) -> (Value, Option<PathBuf>) {
    let title = call["title"].as_str().unwrap_or_default();
    let diffs: Vec<&Value> = call["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "diff")
        .collect();
    if mcp {
        // Gemini shows an MCP call's arguments as their JSON.
        let text = texts(call).join("\n");
        let input = match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) | Err(_) => json!({"arguments": text}),
        };
        return (input, None);
    }
    if call["kind"] == "execute" {
        // The details read `[current working directory /w]` or `[in dir]`, then maybe
        // `(description)`.
        let details = texts(call).join(" ");
        let cwd = details
            .strip_prefix("[current working directory ")
            .or_else(|| details.strip_prefix("[in "))
            .and_then(|r| r.split_once(']'))
            .map(|(dir, _)| dir.to_string());
        let mut input = json!({"command": title});
        if let Some(dir) = &cwd {
            input["cwd"] = json!(dir);
        }
        let cwd = cwd.map(PathBuf::from).filter(|p| p.is_absolute());
        return (input, cwd);
    }
    if let [diff] = diffs.as_slice() {
        return (
            json!({
                "file_path": diff["path"],
                "old_text": diff["oldText"],
                "new_text": diff["newText"],
            }),
            None,
        );
    }
    let mut input = json!({"title": title});
    if !diffs.is_empty() {
        input["changes"] = json!(diffs);
    }
    let paths: Vec<&Value> = call["locations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| &l["path"])
        .collect();
    if !paths.is_empty() {
        input["paths"] = json!(paths);
    }
    let details = texts(call);
    if !details.is_empty() {
        input["details"] = json!(details.join("\n"));
    }
    (input, None)
}

impl Protocol for Gemini {
    fn start(&mut self) -> Vec<Step> {
        vec![request(
            INIT_ID,
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": false, "writeTextFile": false},
                    "terminal": false,
                },
                "clientInfo": {"name": "bosun", "version": env!("CARGO_PKG_VERSION")},
            }),
        )]
    }

    fn on_line(&mut self, text: &[u8]) -> Vec<Step> {
        let Ok(msg) = serde_json::from_slice::<Value>(text) else {
            return Vec::new();
        };
        match (msg["method"].as_str(), msg.get("id")) {
            (Some(method), Some(id)) => self.on_request(id, method, &msg["params"]),
            (None, Some(Value::String(id))) => {
                let id = id.clone();
                self.on_response(&id, &msg)
            }
            (Some(_), None) | (None, Some(_) | None) => Vec::new(),
        }
    }

    fn answer(&mut self, key: &str, answer: &ToolAnswer) -> Vec<Step> {
        let Some(w) = self.waiting.remove(key) else {
            return Vec::new();
        };
        let option = match answer {
            ToolAnswer::Allow => Some(w.allow.unwrap_or_else(|| "proceed_once".into())),
            // Without a reject option, cancelling the request rejects the call too.
            ToolAnswer::Deny { .. } => w.reject,
        };
        let outcome = match option {
            Some(id) => json!({"outcome": "selected", "optionId": id}),
            None => json!({"outcome": "cancelled"}),
        };
        vec![line(&json!({
            "jsonrpc": "2.0",
            "id": w.id,
            "result": {"outcome": outcome},
        }))]
    }
}

#[cfg(test)]
mod tests;
