//! A server's requests that only the person can answer: an elicitation form
//! (`elicitation/create`) and a message of the model (`sampling/createMessage`). Each is
//! refused unless the server's policy for it is `ask`; then it is asked of the person through
//! bosund ([`LinkState::ask_person`]), where it waits in the inbox, kept in the store, across
//! restarts of bosund, and is answered once.
//!
//! A form is parsed here, at the edge ([`Form::parse`]): one that is malformed, or that asks
//! for a password, a token, a key or payment data, is refused at once, and the person never
//! sees it. What the person fills in is checked against the form by bosund before it is sent.
//! A sampling request the person allows is handed to the run's CLI, which writes the message,
//! and only when the CLI said it can (its `initialize` declared `sampling`).
//!
//! While a request waits, the connection's calls wait with it: their deadlines are held (up
//! to the inbox's own allowance) and count again once the person answered.

use std::time::Duration;

use bosun_protocol::runner::{ServerAnswer, ServerAsk, ServerAskKind};
use bosun_shared::elicitation::{Form, FormRefused};
use bosun_shared::gateway::AskPolicy;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{AskEvent, Conn, TOKEN_FIRST_ANSWER, cut};

/// How much of what a server sends the model the person sees in the inbox.
const SAMPLING_SHOWN: usize = 2_000;

/// The kind of request in words: what the server asked.
fn asked(sampling: bool) -> &'static str {
    if sampling {
        "asked for a message of the model (sampling)"
    } else {
        "asked the person for input (elicitation)"
    }
}

impl Conn<'_> {
    /// The server's `elicitation/create` or `sampling/createMessage` (`id`, `msg`): refused,
    /// or asked of the person, by the server's policy.
    pub(super) async fn server_wants_person(&mut self, method: &str, id: Value, msg: Value) {
        let sampling = method.starts_with("sampling");
        let what = match self.what_to_ask(sampling, &msg) {
            Ok(Some(what)) => what,
            Ok(None) => {
                self.gw.note(format!(
                    "bosun's MCP gateway: {} {}; allowed by its policy: the run's CLI writes it",
                    self.server.name,
                    asked(sampling)
                ));
                self.tell_cli(&msg).await;
                return;
            }
            Err(why) => {
                let name = &self.server.name;
                self.gw.note(format!(
                    "bosun's MCP gateway: {name} {}; refused: {why}",
                    asked(sampling)
                ));
                let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32600,
                    "message": format!("bosun refuses this request of `{name}`: {why}"),
                }});
                self.send_own(&reply).await;
                return;
            }
        };
        let name = self.server.name.clone();
        let n = self
            .gw
            .person_asks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let ask = ServerAsk {
            key: format!("gateway-ask-{name}-{n}"),
            server: name.clone(),
            what,
        };
        self.gw.note(format!(
            "bosun's MCP gateway: {name} {}; asking the person through bosund",
            asked(sampling)
        ));
        let (link, notes, events) = (
            self.gw.link.clone(),
            self.gw.notes.clone(),
            self.ask_events.clone(),
        );
        tokio::spawn(async move {
            let key = ask.key.clone();
            let answer = wait_for_person(link.ask_person(ask), &notes, &events).await;
            link.gateway_done(&key);
            let _ = events.send(AskEvent::ResumeAll);
            let said = |line: String| {
                let _ = notes.send(format!("bosun's MCP gateway: {name}: {line}"));
            };
            let reply = match (answer, sampling) {
                (Answer::Accept { .. }, true) => {
                    said(
                        "the person allowed its request for a message; the run's CLI writes it"
                            .into(),
                    );
                    let _ = events.send(AskEvent::ToCli(msg));
                    return;
                }
                (Answer::Accept { content }, false) => {
                    said("the person filled in its form".into());
                    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": content}})
                }
                (Answer::Decline(message) | Answer::Cancel(message), true) => {
                    said(message.clone());
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32600, "message": message}})
                }
                (Answer::Decline(message), false) => {
                    said(message);
                    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}})
                }
                (Answer::Cancel(message), false) => {
                    said(message);
                    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "cancel"}})
                }
            };
            let _ = events.send(AskEvent::Answer(reply));
        });
    }

    /// What the person is to be asked (`None`: nothing, the policy allows it), or why the
    /// request is refused (its policy is `deny`, a CLI that writes no messages, more tokens than
    /// the policy allows, a form bosun does not take).
    fn what_to_ask(&self, sampling: bool, msg: &Value) -> Result<Option<ServerAskKind>, Refusal> {
        let name = &self.server.name;
        let (policy, flag) = if sampling {
            (self.rules().sampling, "sampling")
        } else {
            (self.rules().elicitation, "elicitation")
        };
        if policy == AskPolicy::Deny {
            return Err(Refusal::Denied {
                flag,
                server: name.clone(),
            });
        }
        let mut params = msg.get("params").cloned().unwrap_or(Value::Null);
        self.gw.redactor.json(&mut params);
        if !sampling {
            return form_of(&params).map(|form| Some(ServerAskKind::Elicitation { form }));
        }
        if !self.cli_samples {
            return Err(Refusal::CliCannotSample);
        }
        let max_tokens = params.get("maxTokens").and_then(Value::as_u64).unwrap_or(0);
        if policy == AskPolicy::Allow {
            let most = self.rules().sampling_max_tokens;
            if max_tokens > most {
                return Err(Refusal::TooManyTokens {
                    asked: max_tokens,
                    most,
                    server: name.clone(),
                });
            }
            return Ok(None);
        }
        Ok(Some(ServerAskKind::Sampling {
            preview: sampling_preview(&params),
            max_tokens,
        }))
    }
}

/// The person's answer to a server's request, as the gateway passes it on.
enum Answer {
    Accept { content: Map<String, Value> },
    Decline(String),
    Cancel(String),
}

/// Waits for bosund's answer to a request asked of the person: it says first that the
/// request waits (the calls of the connection are held meanwhile), then how it was settled.
/// bosund that does not answer at all cancels it.
async fn wait_for_person(
    mut answers: mpsc::UnboundedReceiver<ServerAnswer>,
    notes: &mpsc::UnboundedSender<String>,
    events: &mpsc::UnboundedSender<AskEvent>,
) -> Answer {
    let mut wait = TOKEN_FIRST_ANSWER;
    loop {
        match tokio::time::timeout(wait, answers.recv()).await {
            Err(_) | Ok(None) => {
                return Answer::Cancel(format!(
                    "bosund did not answer within {} s (it is down or cannot be reached from this run)",
                    wait.as_secs()
                ));
            }
            Ok(Some(ServerAnswer::Waiting { note, wait_ms })) => {
                // Said once: an answer again after a reconnect has no note.
                if !note.is_empty() {
                    let _ = notes.send(note);
                }
                // A little longer than bosund's own wait, which answers first.
                wait = Duration::from_millis(wait_ms) + TOKEN_FIRST_ANSWER;
                let _ = events.send(AskEvent::HoldAll {
                    until: Instant::now() + wait,
                });
            }
            Ok(Some(ServerAnswer::Accept { content })) => {
                return Answer::Accept {
                    content: content.unwrap_or_default(),
                };
            }
            Ok(Some(ServerAnswer::Decline { message })) => return Answer::Decline(message),
            Ok(Some(ServerAnswer::Cancel { message })) => return Answer::Cancel(message),
        }
    }
}

/// Why a server's request for the person is refused at the gateway.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error(
        "its {flag} policy is deny (`bosun mcp edit {server} --{flag} ask` lets the person answer)"
    )]
    Denied { flag: &'static str, server: String },
    #[error("the run's CLI writes no messages for a server (it declared no sampling)")]
    CliCannotSample,
    #[error(
        "it asks for up to {asked} tokens, more than the {most} its policy allows (`bosun mcp edit {server} --sampling-max-tokens N`)"
    )]
    TooManyTokens {
        asked: u64,
        most: u64,
        server: String,
    },
    #[error(
        "it asks in the `{0}` mode; bosun answers forms only, and opens no address for a server"
    )]
    NotAForm(String),
    #[error("its form is refused: {0}")]
    Form(#[from] FormRefused),
}

/// The form of an `elicitation/create`, or why bosun refuses it.
fn form_of(params: &Value) -> Result<Form, Refusal> {
    if let Some(mode) = params.get("mode").and_then(Value::as_str)
        && mode != "form"
    {
        return Err(Refusal::NotAForm(mode.to_string()));
    }
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
    Ok(Form::parse(message, schema)?)
}

/// What a sampling request sends the model, in words: its system prompt and each message's
/// text, cut for the inbox.
fn sampling_preview(params: &Value) -> String {
    let mut lines = Vec::new();
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        lines.push(format!("system: {system}"));
    }
    for m in params
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = match m.get("content") {
            Some(Value::Array(parts)) => parts.iter().map(part_text).collect::<Vec<_>>().join(" "),
            Some(part) => part_text(part),
            None => String::new(),
        };
        lines.push(format!("{role}: {text}"));
    }
    cut(&lines.join("\n"), SAMPLING_SHOWN)
}

fn part_text(part: &Value) -> String {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => part
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_form_and_a_secret_form_are_refused() {
        let url = json!({"mode": "url", "message": "m", "url": "https://x"});
        assert!(
            form_of(&url)
                .unwrap_err()
                .to_string()
                .contains("`url` mode")
        );
        let secret = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"password": {"type": "string"}}}});
        assert!(
            form_of(&secret)
                .unwrap_err()
                .to_string()
                .contains("a password")
        );
    }

    #[test]
    fn the_sampling_preview_shows_each_message() {
        let p = json!({"systemPrompt": "be brief", "maxTokens": 10, "messages": [
            {"role": "user", "content": {"type": "text", "text": "hello"}},
            {"role": "user", "content": [{"type": "image", "data": "AAAA"}]},
        ]});
        assert_eq!(
            sampling_preview(&p),
            "system: be brief\nuser: hello\nuser: [image]"
        );
    }
}
