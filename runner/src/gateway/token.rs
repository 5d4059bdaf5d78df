//! A server reached by address that refuses the run's sign-in: its token is asked anew of
//! bosund over the runner's link, in a task of its own, while the call's deadline waits; and
//! what such asks (and the server's requests asked of the person) say back to the connection.

use std::time::Duration;

use bosun_protocol::runner::{TokenAnswer, TokenAsk};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{AskEvent, Conn, TOKEN_FIRST_ANSWER, key};

impl Conn<'_> {
    /// The bridge asks for the server's token anew: asked of bosund over the runner's link, in
    /// a task of its own (the connection goes on meanwhile).
    pub(super) fn ask_token(&self, id: Value, msg: &Value) {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let n = self
            .gw
            .token_asks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let name = self.server.name.clone();
        let ask = TokenAsk {
            key: format!("gateway-token-{name}-{n}"),
            server: name.clone(),
            refused: params
                .get("refused")
                .and_then(Value::as_str)
                .map(str::to_string),
            wider: params
                .get("wider")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            scope: params
                .get("scope")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        let call = params.get("call").cloned().unwrap_or(Value::Null);
        let why = if ask.wider {
            match &ask.scope {
                Some(s) => format!("asked for a wider scope ({s})"),
                None => "asked for a wider scope".to_string(),
            }
        } else {
            "refused the run's token".to_string()
        };
        self.gw.note(format!(
            "bosun's MCP gateway: {name} {why}; asking bosund for its token anew (the message did not run)"
        ));
        let link = self.gw.link.clone();
        let notes = self.gw.notes.clone();
        let events = self.ask_events.clone();
        tokio::spawn(async move {
            let key = ask.key.clone();
            let mut answers = link.ask_token(ask);
            let mut wait = TOKEN_FIRST_ANSWER;
            let mut waited_for_person = false;
            let got = loop {
                match tokio::time::timeout(wait, answers.recv()).await {
                    Err(_) if waited_for_person => {
                        break Err(format!(
                            "bosun could not go on with the MCP server `{name}`: nobody signed in again in time; the call was not run. Sign in with `bosun mcp sign-in {name}` and call again"
                        ));
                    }
                    Err(_) => {
                        break Err(format!(
                            "bosun could not renew the sign-in to the MCP server `{name}`: bosund did not answer within {} s (it is down or cannot be reached from this run); the call was not run: call again once bosund is back",
                            TOKEN_FIRST_ANSWER.as_secs()
                        ));
                    }
                    Ok(None) => {
                        break Err(format!(
                            "bosun could not renew the sign-in to the MCP server `{name}`: the run's link to bosund is gone; the call was not run"
                        ));
                    }
                    Ok(Some(TokenAnswer::Token { token })) => break Ok(token),
                    Ok(Some(TokenAnswer::Failed { message })) => break Err(message),
                    Ok(Some(TokenAnswer::Waiting { note, wait_ms })) => {
                        // Said once: an answer again after a reconnect has no note.
                        if !note.is_empty() {
                            let _ = notes.send(note);
                        }
                        // A little longer than bosund's own wait, which answers first.
                        wait = Duration::from_millis(wait_ms) + TOKEN_FIRST_ANSWER;
                        waited_for_person = true;
                        let _ = events.send(AskEvent::Hold {
                            call: call.clone(),
                            until: Instant::now() + wait,
                        });
                    }
                }
            };
            link.gateway_done(&key);
            let answer = match got {
                Ok(token) => {
                    let _ = notes.send(format!(
                        "bosun's MCP gateway: {name}: bosund gave the run its token anew; the message is sent once more"
                    ));
                    let _ = events.send(AskEvent::Resume { call });
                    json!({"jsonrpc": "2.0", "id": id, "result": {"token": token}})
                }
                Err(message) => {
                    let _ = notes.send(format!("bosun's MCP gateway: {message}"));
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": message}})
                }
            };
            let _ = events.send(AskEvent::Answer(answer));
        });
    }

    pub(super) async fn on_token_event(&mut self, event: AskEvent) {
        match event {
            AskEvent::Hold { call, until } => {
                if let Some(c) = self.calls.get_mut(&key(&call)) {
                    c.deadline = c.deadline.max(until);
                }
            }
            AskEvent::Resume { call } => {
                let ms = self.rules().deadline_ms;
                if let Some(c) = self.calls.get_mut(&key(&call)) {
                    c.deadline = Instant::now() + Duration::from_millis(ms);
                }
            }
            AskEvent::Answer(answer) => self.send_own(&answer).await,
            AskEvent::HoldAll { until } => {
                for c in self.deadlines() {
                    *c = (*c).max(until);
                }
            }
            AskEvent::ResumeAll => {
                let deadline = Instant::now() + Duration::from_millis(self.rules().deadline_ms);
                for c in self.deadlines() {
                    *c = deadline;
                }
            }
            AskEvent::ToCli(msg) => self.tell_cli(&msg).await,
        }
    }
}
