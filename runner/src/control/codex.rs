//! Codex's control protocol: `codex app-server`, JSON-RPC 2.0 over stdio, one JSON object a line
//! (Codex leaves out the `"jsonrpc"` member, and so does the runner).
//!
//! The runner says `initialize`, then `initialized`, starts a thread (`thread/start` with the
//! plan's settings, always with `approvalPolicy: "untrusted"`) and one turn holding the task.
//! Measured with Codex 0.171.0: under `untrusted` every command asks
//! (`item/commandExecution/requestApproval`, reads such as `ls` and `cat` too) and every patch
//! asks (`item/fileChange/requestApproval`), whatever the sandbox; an MCP tool call asks only
//! when its server has `default_tools_approval_mode = "prompt"` (the adapter sets it), and then
//! comes as an `mcpServer/elicitation/request` whose `_meta.codex_approval_kind` is
//! `mcp_tool_call`. Each of these is one [`Step::Ask`] keyed by the request's JSON-RPC id.
//! When the turn completes (`turn/completed` for the runner's thread) stdin is closed and
//! `codex app-server` exits at once.
//!
//! # Caveats
//! - A decision carries no message: Codex tells the model only that the user rejected the call.
//!   So a denial with a message is followed by `turn/steer`, which adds the message to the
//!   running turn as a user message the model reads with the failed call's output. Should the
//!   turn have ended in between, Codex refuses the steer and the message is lost.
//! - Codex may withdraw a request itself (a turn interrupted): `serverRequest/resolved` then
//!   comes for a request the runner never answered, and a later decision writes nothing.
//! - Any other request (`item/tool/requestUserInput`, `item/permissions/requestApproval`,
//!   `item/tool/call`, sign-in, the v1 approvals) gets a JSON-RPC error, and an elicitation that
//!   is not a tool approval is declined: Codex never waits on the runner for those.

use std::collections::HashMap;
use std::path::PathBuf;

use bosun_protocol::runner::{ControlPlan, ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use bosun_shared::mcp::full_tool_name;
use serde_json::{Map, Value, json};

use super::{Protocol, Step};

/// The ids of the runner's own requests.
const INIT_ID: &str = "bosun-initialize";
const THREAD_ID: &str = "bosun-thread";
const TURN_ID: &str = "bosun-turn";
/// A steer's id is this followed by the key of the call it explains.
const STEER_PREFIX: &str = "bosun-steer-";

/// Streamed deltas the runner does not need: the finished items carry the same text, and the
/// run's log stays readable.
const OPT_OUT: &[&str] = &[
    "item/agentMessage/delta",
    "item/plan/delta",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/summaryPartAdded",
    "item/reasoning/textDelta",
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "command/exec/outputDelta",
];

/// The JSON-RPC error code for a method the runner does not handle.
const METHOD_NOT_FOUND: i64 = -32601;

pub struct Codex {
    prompt: String,
    /// `thread/start`'s params, from the plan.
    thread_params: Map<String, Value>,
    /// The runner's thread, once started.
    thread: Option<String>,
    /// The changes of each file-change item, by item id, from its `item/started`: the approval
    /// request names only the item.
    changes: HashMap<String, Value>,
    /// The requests waiting for bosund, by key.
    waiting: HashMap<String, Waiting>,
}

/// A request Codex waits on.
struct Waiting {
    /// Its JSON-RPC id as Codex sent it (a number), for the answer.
    id: Value,
    answer: AnswerShape,
    tool: String,
    thread: Option<String>,
    turn: Option<String>,
}

/// How a request is answered.
#[derive(Clone, Copy)]
enum AnswerShape {
    /// `{"decision": "accept" | "decline"}` (commands, file changes).
    Decision,
    /// `{"action": "accept" | "decline"}` (an MCP tool call's elicitation).
    Action,
}

impl Codex {
    pub fn new(plan: &ControlPlan) -> Self {
        let mut thread_params = plan
            .settings
            .get("threadStart")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Every command and patch asks, whatever the plan says.
        thread_params.insert("approvalPolicy".into(), json!("untrusted"));
        Self {
            prompt: plan.prompt.clone(),
            thread_params,
            thread: None,
            changes: HashMap::new(),
            waiting: HashMap::new(),
        }
    }

    fn on_response(&mut self, id: &str, msg: &Value) -> Vec<Step> {
        if let Some(error) = msg.get("error") {
            if id.starts_with(STEER_PREFIX) {
                // The turn ended before the steer: nothing is waiting for it any more.
                return Vec::new();
            }
            say!("bosun-runner: Codex refused {id}: {error}");
            return vec![Step::Finish];
        }
        match id {
            INIT_ID => vec![
                line(&json!({"method": "initialized"})),
                line(&json!({
                    "id": THREAD_ID,
                    "method": "thread/start",
                    "params": self.thread_params,
                })),
            ],
            THREAD_ID => {
                let Some(thread) = msg["result"]["thread"]["id"].as_str() else {
                    say!("bosun-runner: Codex started no thread");
                    return vec![Step::Finish];
                };
                self.thread = Some(thread.to_string());
                vec![line(&json!({
                    "id": TURN_ID,
                    "method": "turn/start",
                    "params": {
                        "threadId": thread,
                        "input": [{"type": "text", "text": self.prompt, "text_elements": []}],
                    },
                }))]
            }
            _ => Vec::new(),
        }
    }

    fn on_notification(&mut self, method: &str, params: &Value) -> Vec<Step> {
        match method {
            "item/started" => {
                let item = &params["item"];
                if item["type"] == "fileChange"
                    && let Some(id) = item["id"].as_str()
                {
                    self.changes.insert(id.to_string(), item["changes"].clone());
                }
                Vec::new()
            }
            "item/completed" => {
                if let Some(id) = params["item"]["id"].as_str() {
                    self.changes.remove(id);
                }
                Vec::new()
            }
            "serverRequest/resolved" => {
                // After bosun's answer the request is already gone; still here, Codex
                // withdrew it.
                let key = key_of(&params["requestId"]);
                match self.waiting.remove(&key) {
                    Some(_) => vec![Step::Withdraw(key)],
                    None => Vec::new(),
                }
            }
            "turn/completed" => {
                if params["threadId"].as_str() == self.thread.as_deref() {
                    vec![Step::Finish]
                } else {
                    // A sub-agent's turn; the runner's own is still going.
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    fn on_request(&mut self, id: &Value, method: &str, params: &Value) -> Vec<Step> {
        let (tool, input, cwd, answer) = match method {
            "item/commandExecution/requestApproval" => {
                let tool = if params["kind"] == "writeStdin" {
                    "write_stdin"
                } else {
                    "exec_command"
                };
                let command = params["command"].as_str().map(unwrap_shell);
                let mut input = json!({"command": command, "cwd": params["cwd"]});
                if let Some(reason) = params["reason"].as_str() {
                    input["reason"] = json!(reason);
                }
                let cwd = params["cwd"].as_str().map(PathBuf::from);
                (tool.to_string(), input, cwd, AnswerShape::Decision)
            }
            "item/fileChange/requestApproval" => {
                let changes = params["itemId"]
                    .as_str()
                    .and_then(|item| self.changes.get(item))
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                // The files it writes, kept apart so that they survive when a large patch's
                // changes are cut down for the ask.
                let paths: Vec<Value> = changes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|c| [&c["path"], &c["move_path"], &c["kind"]["move_path"]])
                    .filter(|p| p.is_string())
                    .cloned()
                    .collect();
                let mut input = json!({"changes": changes, "paths": paths});
                for key in ["reason", "grantRoot"] {
                    if let Some(v) = params[key].as_str() {
                        input[key] = json!(v);
                    }
                }
                (
                    "apply_patch".to_string(),
                    input,
                    None,
                    AnswerShape::Decision,
                )
            }
            "mcpServer/elicitation/request"
                if params["_meta"]["codex_approval_kind"] == "mcp_tool_call" =>
            {
                let server = params["serverName"].as_str().unwrap_or_default();
                let name = params["_meta"]["tool_name"].as_str().unwrap_or_default();
                let input = match &params["_meta"]["tool_params"] {
                    Value::Null => json!({}),
                    v @ (Value::Bool(_)
                    | Value::Number(_)
                    | Value::String(_)
                    | Value::Array(_)
                    | Value::Object(_)) => v.clone(),
                };
                (
                    full_tool_name(server, name),
                    input,
                    None,
                    AnswerShape::Action,
                )
            }
            "mcpServer/elicitation/request" => {
                // An MCP server asks the person for input: nobody is there to give it.
                return vec![line(&json!({"id": id, "result": {"action": "decline"}}))];
            }
            other => {
                return vec![line(&json!({
                    "id": id,
                    "error": {
                        "code": METHOD_NOT_FOUND,
                        "message": format!("bosun does not handle {other}"),
                    },
                }))];
            }
        };
        let key = key_of(id);
        self.waiting.insert(
            key.clone(),
            Waiting {
                id: id.clone(),
                answer,
                tool: tool.clone(),
                thread: params["threadId"].as_str().map(str::to_string),
                turn: params["turnId"].as_str().map(str::to_string),
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
}

fn line(v: &Value) -> Step {
    Step::Write(serde_json::to_vec(v).unwrap_or_default())
}

/// The key of a request: its JSON-RPC id as text (Codex numbers them from 0).
fn key_of(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => {
            id.to_string()
        }
    }
}

/// The command the model wrote, out of Codex's `/bin/bash -lc '<command>'`; any other command
/// line as it is.
fn unwrap_shell(command: &str) -> String {
    if let Some(words) = shell_words(command)
        && let [shell, flag, script] = words.as_slice()
        && matches!(
            shell.rsplit('/').next(),
            Some("bash" | "sh" | "zsh" | "dash")
        )
        && matches!(flag.as_str(), "-c" | "-lc")
    {
        return script.clone();
    }
    command.to_string()
}

/// Splits a command line as a POSIX shell would split plain words: blanks between words,
/// single quotes, double quotes (with `\` before `"`, `\`, `$` and a backquote), `\` outside
/// quotes. `None` for an unterminated quote.
fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

impl Protocol for Codex {
    fn start(&mut self) -> Vec<Step> {
        vec![line(&json!({
            "id": INIT_ID,
            "method": "initialize",
            "params": {
                "clientInfo": {"name": "bosun", "version": env!("CARGO_PKG_VERSION")},
                "capabilities": {"optOutNotificationMethods": OPT_OUT},
            },
        }))]
    }

    fn on_line(&mut self, text: &[u8]) -> Vec<Step> {
        let Ok(msg) = serde_json::from_slice::<Value>(text) else {
            return Vec::new();
        };
        let method = msg["method"].as_str();
        match (method, msg.get("id")) {
            (Some(method), Some(id)) => self.on_request(id, method, &msg["params"]),
            (Some(method), None) => self.on_notification(method, &msg["params"]),
            (None, Some(Value::String(id))) => {
                let id = id.clone();
                self.on_response(&id, &msg)
            }
            (None, Some(_) | None) => Vec::new(),
        }
    }

    fn answer(&mut self, key: &str, answer: &ToolAnswer) -> Vec<Step> {
        let Some(w) = self.waiting.remove(key) else {
            return Vec::new();
        };
        let verdict = match answer {
            ToolAnswer::Allow => "accept",
            ToolAnswer::Deny { .. } => "decline",
        };
        let result = match w.answer {
            AnswerShape::Decision => json!({"decision": verdict}),
            AnswerShape::Action => json!({"action": verdict}),
        };
        let mut steps = vec![line(&json!({"id": w.id, "result": result}))];
        if let ToolAnswer::Deny { message } = answer
            && !message.trim().is_empty()
            && let (Some(thread), Some(turn)) = (w.thread, w.turn)
        {
            steps.push(line(&json!({
                "id": format!("{STEER_PREFIX}{key}"),
                "method": "turn/steer",
                "params": {
                    "threadId": thread,
                    "expectedTurnId": turn,
                    "input": [{
                        "type": "text",
                        "text": format!("bosun denied the {} call: {message}", w.tool),
                        "text_elements": [],
                    }],
                },
            })));
        }
        steps
    }
}

#[cfg(test)]
mod tests;
