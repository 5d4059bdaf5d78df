//! The JSON-RPC streams of a CLI driven through its control protocol, turned into the run's
//! events: `codex app-server` and Gemini CLI's Agent Client Protocol (`gemini --acp`). Their
//! lines are JSON-RPC messages (a `method`, an `id`), never the `type` lines of `codex exec
//! --json` and `gemini -o stream-json`, so [`super::StreamParser`] tells them apart by shape.
//!
//! - Codex: the thread (the `thread/start` answer: session and model), each MCP server's
//!   start (`mcpServer/startupStatus/updated`), `item/started`/`item/completed` of commands
//!   (`exec_command`), patches (`apply_patch`), MCP calls, web searches and dynamic tools, and
//!   the runner's turn ending (`turn/completed`: completed, failed, interrupted).
//! - Gemini CLI: the session (`session/new`'s answer: session and model), each call asked about
//!   (`session/request_permission`) or run without asking (`session/update` `tool_call`), its
//!   end (`tool_call_update` completed or failed) and the prompt's answer (`stopReason`, or an
//!   error).
//!
//! # Caveats
//! A call bosun denied leaves no end in these streams (Gemini sends nothing more about it;
//! Codex marks a command or patch `declined`, an MCP call `failed`), so a Gemini call that was
//! denied stays without an outcome here: the run's decisions say what became of it.

use bosun_shared::mcp::full_tool_name;
use serde_json::Value;

use super::{Change, gemini_tool_name, str_of, text, usage};
use crate::record::{AgentRun, CliResult};

/// The runner's own requests to Codex are named `bosun-…`; the steers that carry a denial's
/// message (`bosun-steer-…`) may be refused once the turn is over, which ends nothing.
const RUNNER_IDS: &str = "bosun-";
const STEER_IDS: &str = "bosun-steer-";

pub(super) fn codex_app_server(v: &Value, run: &mut AgentRun) -> Change {
    let params = &v["params"];
    let Some(method) = v.get("method").and_then(Value::as_str) else {
        return codex_response(v, run);
    };
    match method {
        "thread/started" if run.session.is_none() => {
            run.session = params["thread"]["id"].as_str().map(str::to_string);
            Change::Major
        }
        "mcpServer/startupStatus/updated" => {
            let state = match params["status"].as_str() {
                Some("ready") => "connected",
                Some("failed") => "failed",
                Some(_) | None => return Change::None,
            };
            let Some(name) = params["name"].as_str() else {
                return Change::None;
            };
            run.set_server(name, state);
            Change::Major
        }
        "item/started" | "item/completed" => codex_item(method, &params["item"], run),
        "thread/tokenUsage/updated" => {
            if run.session.is_some() && params["threadId"].as_str() != run.session.as_deref() {
                // A sub-agent's thread: its own totals, not the run's.
                return Change::None;
            }
            usage::codex_totals(params, run);
            Change::Major
        }
        "turn/completed" => {
            if run.session.is_some() && params["threadId"].as_str() != run.session.as_deref() {
                // A sub-agent's turn.
                return Change::None;
            }
            let turn = &params["turn"];
            let status = turn["status"].as_str().unwrap_or("completed");
            run.result = Some(CliResult {
                is_error: status != "completed",
                reason: Some(match status {
                    "failed" => "turn failed".to_string(),
                    other => other.to_string(),
                }),
                text: turn["error"]["message"]
                    .as_str()
                    .and_then(|m| text(&m.into())),
            });
            Change::Major
        }
        _ => Change::None,
    }
}

/// An answer to one of the runner's requests.
fn codex_response(v: &Value, run: &mut AgentRun) -> Change {
    let id = v["id"].as_str().unwrap_or_default();
    if let Some(thread) = v["result"]["thread"]["id"].as_str() {
        run.session = Some(thread.to_string());
        run.model = str_of(&v["result"], "model");
        return Change::Major;
    }
    if let Some(error) = v.get("error")
        && id.starts_with(RUNNER_IDS)
        && !id.starts_with(STEER_IDS)
        && run.result.is_none()
    {
        run.result = Some(CliResult {
            is_error: true,
            reason: Some(format!("{id} refused")),
            text: error.get("message").and_then(text),
        });
        return Change::Major;
    }
    Change::None
}

fn codex_item(method: &str, item: &Value, run: &mut AgentRun) -> Change {
    let status = item["status"].as_str().unwrap_or_default();
    let (name, error) = match item["type"].as_str().unwrap_or_default() {
        "mcpToolCall" => {
            let server = item["server"].as_str().unwrap_or_default();
            let tool = item["tool"].as_str().unwrap_or_default();
            if status == "completed" {
                run.set_server(server, "connected");
            }
            let error = item["error"]
                .get("message")
                .and_then(text)
                .or_else(|| (status != "completed").then(|| status.to_string()));
            (full_tool_name(server, tool), error)
        }
        "commandExecution" => {
            let error = match (status, item["exitCode"].as_i64()) {
                ("completed", _) => None,
                (_, Some(code)) => Some(format!("exit code {code}")),
                (other, None) => Some(other.to_string()),
            };
            ("exec_command".to_string(), error)
        }
        "fileChange" => {
            let error = (status != "completed").then(|| status.to_string());
            ("apply_patch".to_string(), error)
        }
        "webSearch" => ("web_search".to_string(), None),
        "dynamicToolCall" => {
            let error = (item["success"] == false).then(|| "failed".to_string());
            (str_of(item, "tool").unwrap_or_default(), error)
        }
        _ => return Change::None,
    };
    let id = str_of(item, "id");
    if method == "item/started" {
        run.call_started(id, name, None);
    } else {
        run.call_ended(id.as_deref(), Some(name), error.is_none(), error);
    }
    Change::Minor
}

pub(super) fn gemini_acp(v: &Value, run: &mut AgentRun) -> Change {
    let params = &v["params"];
    match v.get("method").and_then(Value::as_str) {
        Some("session/request_permission") => {
            gemini_call_started(&params["toolCall"], run);
            Change::Minor
        }
        Some("session/update") => {
            let update = &params["update"];
            match update["sessionUpdate"].as_str() {
                Some("tool_call") => {
                    gemini_call_started(update, run);
                    Change::Minor
                }
                Some("tool_call_update") => gemini_call_updated(update, run),
                Some(_) | None => Change::None,
            }
        }
        Some(_) => Change::None,
        None => gemini_response(v, run),
    }
}

fn gemini_call_started(call: &Value, run: &mut AgentRun) {
    let id = call["toolCallId"].as_str().unwrap_or_default();
    let (name, _) = gemini_tool_name(tool_of_call(id), run);
    run.call_started(Some(id.to_string()), name, None);
}

fn gemini_call_updated(update: &Value, run: &mut AgentRun) -> Change {
    let id = update["toolCallId"].as_str();
    let ok = match update["status"].as_str() {
        Some("completed") => true,
        Some("failed") => false,
        Some(_) | None => return Change::None,
    };
    let error = if ok {
        None
    } else {
        let details: Vec<&str> = update["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["content"]["text"].as_str())
            .collect();
        text(&details.join("\n").into()).or_else(|| Some("failed".into()))
    };
    if ok
        && let Some(server) = run
            .calls
            .iter()
            .find(|c| id.is_some() && c.id.as_deref() == id)
            .and_then(|c| c.name.strip_prefix("mcp__"))
            .and_then(|r| r.split("__").next())
            .map(str::to_string)
    {
        run.set_server(&server, "connected");
    }
    let name = id.map(|id| gemini_tool_name(tool_of_call(id), run).0);
    run.call_ended(id, name, ok, error);
    Change::Minor
}

/// An answer to one of the runner's requests: the session, or the prompt's end.
fn gemini_response(v: &Value, run: &mut AgentRun) -> Change {
    let result = &v["result"];
    if let Some(session) = result["sessionId"].as_str() {
        run.session = Some(session.to_string());
        run.model = str_of(&result["models"], "currentModelId");
        return Change::Major;
    }
    if let Some(reason) = result["stopReason"].as_str() {
        usage::gemini_quota(result, run);
        run.result = Some(CliResult {
            is_error: reason != "end_turn",
            reason: Some(reason.to_string()),
            text: None,
        });
        return Change::Major;
    }
    if let Some(error) = v.get("error") {
        // Gemini answers only the runner's requests, and each of them is needed for the run.
        run.result = Some(CliResult {
            is_error: true,
            reason: Some("error".into()),
            text: error.get("message").and_then(text),
        });
        return Change::Major;
    }
    Change::None
}

/// The tool of a Gemini call id `<tool>__<id>` (its own ids are `<tool>_<ms>_<n>`); the same
/// reading as the runner's protocol.
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

#[cfg(test)]
mod tests;
