//! Where each message of a connection goes: the CLI's on their way to the server (its
//! `initialize` rewritten, a subscription refused, a call admitted or held), the server's on
//! their way to the CLI (answers held to what the person approved, the server's own requests
//! answered by the gateway or passed on), and the gateway's own messages to the server.

use std::time::Duration;

use bosun_shared::gateway::{Reach, TOKEN_ID_PREFIX, TOKEN_METHOD};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;
use tokio::time::Instant;

use super::held::{hold_to_ceiling, offer_requests};
use super::{Conn, Lines, key};

impl Conn<'_> {
    pub(super) async fn tell_cli(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        line.push(b'\n');
        let _ = self.to_cli.write_all(&line).await;
    }

    async fn tell_cli_raw(&mut self, line: &[u8]) {
        let _ = self.to_cli.write_all(line).await;
        let _ = self.to_cli.write_all(b"\n").await;
    }

    /// A message of the CLI's, on its way to the server.
    pub(super) async fn on_cli(
        &mut self,
        line: &[u8],
        from_server: &mut Option<Lines<ChildStdout>>,
    ) {
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            self.tell_server(line, from_server).await;
            return;
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|i| !i.is_null());
        if self.held_back(&msg, method, id).await {
            return;
        }
        let mut rewritten = None;
        match (method, id) {
            (Some("initialize"), Some(id)) => {
                self.init_id = Some(key(id));
                let mut init = msg.clone();
                self.cli_samples = offer_requests(&mut init, self.rules());
                rewritten = serde_json::to_vec(&init).ok();
                self.init = Some(init);
            }
            (Some("notifications/initialized"), None) => self.initialized = true,
            (Some("tools/list"), Some(id)) => {
                self.lists.insert(key(id));
            }
            (Some("resources/subscribe"), Some(id)) => {
                let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32601,
                    "message": "bosun keeps resource subscriptions off for its runs",
                }});
                self.tell_cli(&reply).await;
                return;
            }
            (Some("tools/call"), Some(id)) => {
                let goes_on = self.admit_call(&msg, id, line).await;
                if !goes_on {
                    return;
                }
            }
            (Some(m @ ("resources/read" | "prompts/get")), Some(id)) => {
                if let Some(reply) = self.held_by_lists(m, &msg, id) {
                    self.tell_cli(&reply).await;
                    return;
                }
            }
            _ => {}
        }
        if let (Some(m), Some(id)) = (method, id)
            && m != "tools/call"
        {
            if m == "resources/read"
                && let Some(uri) = msg.pointer("/params/uri").and_then(Value::as_str)
            {
                // The run's timeline keeps what it read.
                self.gw.note(format!(
                    "mcp {}: reads the resource {}",
                    self.server.name,
                    super::cut(uri, 300)
                ));
            }
            let deadline = (m != "initialize")
                .then(|| Instant::now() + Duration::from_millis(self.rules().deadline_ms));
            self.asked.insert(
                key(id),
                super::Asked {
                    id: id.clone(),
                    method: m.to_string(),
                    deadline,
                },
            );
        }
        self.tell_server(rewritten.as_deref().unwrap_or(line), from_server)
            .await;
        // A call's deadline counts from when the server has it: starting a server that had
        // exited (bounded on its own) is not the server's time.
        if let (Some("tools/call"), Some(id)) = (method, id)
            && let Some(call) = self.calls.get_mut(&key(id))
        {
            call.deadline = Instant::now() + Duration::from_millis(self.server.rules.deadline_ms);
        }
    }

    /// A resource read or a prompt asked for that the server's lists hold back: the error the
    /// CLI gets, saying why and what the person can change (and a line in the run's log).
    fn held_by_lists(&self, method: &str, msg: &Value, id: &Value) -> Option<Value> {
        let (what, key) = match method {
            "resources/read" => ("resource", "/params/uri"),
            _ => ("prompt", "/params/name"),
        };
        let target = msg.pointer(key).and_then(Value::as_str).unwrap_or("");
        let rules = self.rules();
        let held = match method {
            "resources/read" => rules.judge_resource(target),
            _ => rules.judge_prompt(target),
        };
        let why = held.err()?.words();
        let name = &self.server.name;
        let target = super::cut(target, 300);
        self.gw.note(format!(
            "mcp {name}: the {what} {target} refused by bosun's gateway ({why})"
        ));
        Some(json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32602,
            "message": format!("bosun holds back the {what} `{target}` of the MCP server `{name}`: {why} (`bosun mcp edit {name}`)"),
        }}))
    }

    /// A listing of resources or prompts, without those the server's lists hold back.
    fn hold_back_listed(&self, method: &str, msg: &mut Value) {
        let rules = self.rules();
        let keep = |list: &str, key: &str, judge: &dyn Fn(&str) -> bool, msg: &mut Value| {
            if let Some(items) = msg
                .pointer_mut(&format!("/result/{list}"))
                .and_then(Value::as_array_mut)
            {
                items.retain(|i| judge(i.get(key).and_then(Value::as_str).unwrap_or("")));
            }
        };
        match method {
            "resources/list" => keep(
                "resources",
                "uri",
                &|uri| rules.judge_resource(uri).is_ok(),
                msg,
            ),
            "resources/templates/list" => keep(
                "resourceTemplates",
                "uriTemplate",
                &|uri| rules.judge_resource(uri).is_ok(),
                msg,
            ),
            "prompts/list" => keep(
                "prompts",
                "name",
                &|name| rules.judge_prompt(name).is_ok(),
                msg,
            ),
            _ => {}
        }
    }

    /// Deals, itself, with a message of the CLI's that goes no further: an answer to a request
    /// of bosun's own (dropped), the cancel of a call still being judged, a request of a
    /// capability the person has not approved (refused). True when the message was one of them.
    async fn held_back(&mut self, msg: &Value, method: Option<&str>, id: Option<&Value>) -> bool {
        // Only the gateway answers the bridge's asks for a token.
        if method.is_none()
            && id
                .and_then(Value::as_str)
                .is_some_and(|i| i.starts_with(TOKEN_ID_PREFIX))
        {
            self.gw.note(format!(
                "bosun's MCP gateway: {}: the CLI answered a request of bosun's own; dropped",
                self.server.name
            ));
            return true;
        }
        if method == Some("notifications/cancelled")
            && let Some(call) = msg.pointer("/params/requestId")
            && self.cancel_judging(call)
        {
            return true;
        }
        if let (Some(m), Some(id)) = (method, id)
            && let Some(c) = self.unapproved(m)
        {
            let name = &self.server.name;
            self.gw.note(format!(
                "mcp {name}: {m} refused by bosun's gateway (its {c} are not approved)"
            ));
            let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601,
                "message": format!("bosun holds back the {c} of the MCP server `{name}`: the person has not approved them (`bosun mcp approve {name} --capability {c}`)"),
            }});
            self.tell_cli(&reply).await;
            return true;
        }
        false
    }

    /// A message of the server's, on its way to the CLI.
    pub(super) async fn on_server(&mut self, line: &[u8]) {
        let Ok(mut msg) = serde_json::from_slice::<Value>(line) else {
            // Passed on as it is (the CLI's client decides), and said once in the run's log,
            // so that a server that answers garbage is seen to (the log's writer redacts it).
            self.odd_lines += 1;
            if self.odd_lines == 1 {
                let text = String::from_utf8_lossy(&line[..line.len().min(120)]);
                self.gw.note(format!(
                    "bosun's MCP gateway: {} wrote a line that is not JSON-RPC: `{}` (said once a connection)",
                    self.server.name,
                    text
                ));
            }
            self.tell_cli_raw(line).await;
            return;
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = msg.get("id").filter(|i| !i.is_null()).cloned();
        match (method.as_deref(), id) {
            (Some(m), Some(id)) => self.server_asks(m, id, msg.clone()).await,
            // A notification of a capability the person has not approved goes nowhere.
            (Some(m), None) if self.unapproved(m).is_some() => {}
            (Some(_), None) => self.tell_cli(&msg).await,
            (None, Some(id)) => {
                let k = key(&id);
                if id.as_str().is_some_and(|s| s.starts_with("bosun-gateway-")) {
                    return;
                }
                if self.expired.remove(&k) {
                    return;
                }
                let asked = self.asked.remove(&k);
                if self.init_id.as_deref() == Some(k.as_str()) {
                    self.ready = true;
                    hold_to_ceiling(&mut msg, &self.server.rules.capabilities);
                } else if self.lists.remove(&k) {
                    self.hold_back_tools(&mut msg);
                    self.hold_back_unseen(&mut msg);
                } else if let Some(call) = self.calls.remove(&k) {
                    self.shape_result(&call, &mut msg);
                } else if let Some(a) = asked {
                    self.hold_back_listed(&a.method, &mut msg);
                    self.shape_text(&a.method, &mut msg);
                }
                self.tell_cli(&msg).await;
            }
            (None, None) => self.tell_cli(&msg).await,
        }
    }

    /// A request of the server's: roots are the run's workspace, sampling and elicitation go
    /// by the server's policy ([`person`](super::person)), anything else (a ping) goes to the CLI.
    async fn server_asks(&mut self, method: &str, id: Value, msg: Value) {
        if method == TOKEN_METHOD
            && !matches!(self.server.reach, Reach::Stdio { .. })
            && id.as_str().is_some_and(|i| i.starts_with(TOKEN_ID_PREFIX))
        {
            self.ask_token(id, &msg);
            return;
        }
        let reply = match method {
            "roots/list" => {
                let roots: Vec<Value> = self
                    .server
                    .roots
                    .iter()
                    .map(|r| {
                        json!({
                            "uri": format!("file://{}", r.display()),
                            "name": r.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                        })
                    })
                    .collect();
                json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}})
            }
            "sampling/createMessage" | "elicitation/create" => {
                self.server_wants_person(method, id, msg).await;
                return;
            }
            _ => {
                self.tell_cli(&msg).await;
                return;
            }
        };
        self.send_own(&reply).await;
    }

    /// A message of the gateway's own to the server (an answer to its request, a
    /// cancellation), to a server that is there: none is started for it.
    pub(super) async fn send_own(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap_or_default();
        if let Some(run) = self.running.as_mut() {
            line.push(b'\n');
            let _ = run.stdin.write_all(&line).await;
        }
    }
}
