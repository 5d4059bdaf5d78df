//! Claude Code's control protocol: `claude -p --input-format stream-json --output-format
//! stream-json --verbose --permission-prompt-tool stdio`.
//!
//! The runner registers a PreToolUse hook at `initialize` that matches every tool and answers
//! each `hook_callback` with `ask`: Claude then sends a `can_use_tool` control request for every
//! call, even one its flags allow and even a read (measured with Claude Code 2.1.332: without the
//! hook, reads and allowed tools never reach the supervisor). `can_use_tool` waits as long as it
//! takes (100 s and more measured), so it is where bosund's decision is awaited; a hook callback
//! is answered at once. The task goes in as a stream-json `user` message; when the `result` line
//! comes, stdin is closed and Claude exits.

use std::collections::HashMap;

use bosun_protocol::runner::{ControlPlan, ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use serde_json::{Value, json};

use super::{Protocol, Step};

/// The id of the hook bosun registers.
const HOOK_ID: &str = "bosun";
/// The id of bosun's own `initialize` request.
const INIT_ID: &str = "bosun-init";

pub struct Claude {
    prompt: String,
    /// The input of each call waiting for bosund, by request id: an allowed call gets its own
    /// input back (`updatedInput` is required), never the redacted one bosund saw.
    waiting: HashMap<String, Value>,
}

impl Claude {
    pub fn new(plan: &ControlPlan) -> Self {
        Self {
            prompt: plan.prompt.clone(),
            waiting: HashMap::new(),
        }
    }
}

fn line(v: &Value) -> Step {
    Step::Write(serde_json::to_vec(v).unwrap_or_default())
}

fn success(request_id: &str, response: Value) -> Step {
    line(&json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }))
}

impl Protocol for Claude {
    fn start(&mut self) -> Vec<Step> {
        vec![
            line(&json!({
                "type": "control_request",
                "request_id": INIT_ID,
                "request": {
                    "subtype": "initialize",
                    "hooks": {"PreToolUse": [{"matcher": ".*", "hookCallbackIds": [HOOK_ID]}]},
                },
            })),
            line(&json!({
                "type": "user",
                "message": {"role": "user", "content": self.prompt},
            })),
        ]
    }

    fn on_line(&mut self, text: &[u8]) -> Vec<Step> {
        let Ok(msg) = serde_json::from_slice::<Value>(text) else {
            return Vec::new();
        };
        match msg["type"].as_str() {
            Some("control_request") => {
                let Some(id) = msg["request_id"].as_str() else {
                    return Vec::new();
                };
                let request = &msg["request"];
                match request["subtype"].as_str() {
                    Some("hook_callback") => vec![success(
                        id,
                        json!({"hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "permissionDecision": "ask",
                            "permissionDecisionReason": "bosun decides every tool call",
                        }}),
                    )],
                    Some("can_use_tool") => {
                        // Kept as the CLI gave it, for the answer: what bosund gets is
                        // redacted and may be cut (`control::for_bosund`).
                        let input = request["input"].clone();
                        self.waiting.insert(id.to_string(), input.clone());
                        vec![Step::Ask(ToolAsk {
                            key: id.to_string(),
                            tool: request["tool_name"].as_str().unwrap_or("").to_string(),
                            input,
                            input_cut: false,
                            cwd: None,
                            at: Timestamp::now(),
                            redacted: false,
                        })]
                    }
                    other => {
                        // Nothing else is registered (no SDK MCP servers): say so rather than
                        // leave Claude waiting for an answer that never comes.
                        vec![line(&json!({
                            "type": "control_response",
                            "response": {
                                "subtype": "error",
                                "request_id": id,
                                "error": format!("bosun does not handle {}", other.unwrap_or("this request")),
                            },
                        }))]
                    }
                }
            }
            Some("control_response") => {
                let r = &msg["response"];
                if r["request_id"] == INIT_ID && r["subtype"] == "error" {
                    say!(
                        "bosun-runner: Claude Code refused bosun's initialize: {}",
                        r["error"]
                    );
                }
                Vec::new()
            }
            Some("control_cancel_request") => match msg["request_id"].as_str() {
                Some(id) if self.waiting.remove(id).is_some() => {
                    vec![Step::Withdraw(id.to_string())]
                }
                Some(_) | None => Vec::new(),
            },
            Some("result") => vec![Step::Finish],
            _ => Vec::new(),
        }
    }

    fn answer(&mut self, key: &str, answer: &ToolAnswer) -> Vec<Step> {
        let Some(input) = self.waiting.remove(key) else {
            return Vec::new();
        };
        let response = match answer {
            ToolAnswer::Allow => json!({"behavior": "allow", "updatedInput": input}),
            ToolAnswer::Deny { message } => {
                json!({"behavior": "deny", "message": message, "interrupt": false})
            }
        };
        vec![success(key, response)]
    }
}

#[cfg(test)]
mod tests;
