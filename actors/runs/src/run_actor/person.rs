//! A server's requests for the person, from the run's gateway (the server's policy is `ask`):
//! a form to fill in ([`ELICITATION_CLASS`]) or a message of the model to allow
//! ([`SAMPLING_CLASS`]). Each waits in the inbox as an approval, kept in the store like any
//! other, and is settled once: by the person (a form's answer is checked against the form
//! before anything is sent; nothing is sent when it does not fit), by its deadline
//! ([`SERVER_ASK_WAIT`]) or by the run's end. Its decision is committed on the run's record
//! with the approval before the runner hears it, so an ask that comes again (after a
//! reconnect, or a restart of bosund) gets the same answer, never a second one.

use std::time::Duration;

use bosun_approvals::record::{ApprovalRecord, ApprovalState, changes_for};
use bosun_kit::offload::blocking;
use bosun_protocol::runner::{DaemonMsg, ServerAnswer, ServerAsk, ServerAskKind, ToolAsk};
use bosun_shared::Timestamp;
use bosun_shared::elicitation::Form;
use ractor::{ActorProcessingErr, ActorRef};
use serde_json::{Value, json};
use tracing::info;

use super::asks::{PersonDecision, arm_deadline};
use super::{ELICITATION_CLASS, RunActorState, RunMsg, SAMPLING_CLASS, ms};
use crate::RunsError;

/// How long a server's request waits for the person.
pub const SERVER_ASK_WAIT: Duration = Duration::from_secs(10 * 60);

/// The form an elicitation approval holds (kept in its input).
fn form_of(a: &ApprovalRecord) -> Result<Form, RunsError> {
    a.input
        .get("form")
        .cloned()
        .and_then(|f| serde_json::from_value(f).ok())
        .ok_or_else(|| RunsError::internal("the approval's form went missing"))
}

fn server_of(a: &ApprovalRecord) -> &str {
    a.input
        .get("server")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What the approval of a server's request says of it.
struct AskText {
    class: &'static str,
    tool: String,
    why: String,
    input: Value,
    preview: String,
}

/// What the approval of a server's request says of it: its class, its tool's name, why it
/// waits, what it holds (the form, or the messages), and its preview for the person.
fn ask_text(ask: &ServerAsk) -> AskText {
    let server = &ask.server;
    let (class, tool, why, input, preview) = match &ask.what {
        ServerAskKind::Elicitation { form } => {
            let mut preview = format!(
                "server {server} asks you to fill in a form: {}\n",
                form.message
            );
            for line in form.lines() {
                preview.push_str(&format!("  {line}\n"));
            }
            (
                ELICITATION_CLASS,
                format!("{server} form"),
                format!(
                    "the MCP server `{server}` asks the person for input (its elicitation policy is ask)"
                ),
                json!({"server": server, "form": form}),
                preview,
            )
        }
        ServerAskKind::Sampling {
            preview: text,
            max_tokens,
        } => (
            SAMPLING_CLASS,
            format!("{server} sampling"),
            format!(
                "the MCP server `{server}` asks for a message of the model (its sampling policy is ask)"
            ),
            json!({"server": server, "messages": text, "max_tokens": max_tokens}),
            format!(
                "server {server} asks the run's model for a message (at most {max_tokens} tokens):\n{text}\n"
            ),
        ),
    };
    AskText {
        class,
        tool,
        why,
        input,
        preview,
    }
}

/// What the runner's person is told of a server's request that waits in the inbox as
/// `approval`: how to answer it.
fn waiting_note(ask: &ServerAsk, approval: &ApprovalRecord) -> String {
    let server = &ask.server;
    let short = approval.id.short();
    if approval.class == ELICITATION_CLASS {
        let example = match &ask.what {
            ServerAskKind::Elicitation { form } => form.example(),
            ServerAskKind::Sampling { .. } => String::new(),
        };
        format!(
            "the MCP server {server} asks the person to fill in a form; it waits in the inbox: `bosun approve {short} --answer '{example}'`, or decline with `bosun deny {short}`"
        )
    } else {
        format!(
            "the MCP server {server} asks for a message of the model; it waits in the inbox: `bosun approve {short}` lets the run's CLI write it, `bosun deny {short}` refuses it"
        )
    }
}

impl RunActorState {
    /// A server's request for the person, from the run's gateway: kept in the inbox, or, when
    /// asked again, where it stands.
    pub(super) async fn on_server_ask(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: ServerAsk,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(answer) = self.settled_server_ask(&ask.key).await? {
            self.send(DaemonMsg::ServerAnswer {
                key: ask.key,
                answer,
            });
            return Ok(());
        }
        if let Some(wait_ms) = self.left_to_wait(&ask.key) {
            let answer = ServerAnswer::Waiting {
                note: String::new(),
                wait_ms,
            };
            self.send(DaemonMsg::ServerAnswer {
                key: ask.key,
                answer,
            });
            return Ok(());
        }
        if self.rec.state.is_final() {
            return Ok(());
        }
        let server = ask.server.clone();
        let AskText {
            class,
            tool,
            why,
            input,
            preview,
        } = ask_text(&ask);
        let shim = ToolAsk {
            key: ask.key.clone(),
            tool,
            input: Value::Null,
            input_cut: false,
            cwd: None,
            at: Timestamp::now(),
            redacted: false,
        };
        let attended = self.rec.agent.as_ref().is_none_or(|r| !r.unattended);
        let approval = ApprovalRecord {
            class: class.into(),
            why,
            input,
            preview,
            ..self.approval_of(&shim, ms(SERVER_ASK_WAIT), attended)
        };
        let note = waiting_note(&ask, &approval);
        info!(run_id = %self.rec.id, approval = %approval.id, server = %server, class, "a server's request waits for the person");
        self.ctx.writer.commit(changes_for(&approval)).await?;
        self.asks.next_seq += 1;
        arm_deadline(myself, &approval);
        self.publish(&approval);
        self.send(DaemonMsg::ServerAnswer {
            key: ask.key.clone(),
            answer: ServerAnswer::Waiting {
                note,
                wait_ms: ms(SERVER_ASK_WAIT),
            },
        });
        self.asks.waiting.insert(ask.key, approval);
        Ok(())
    }

    /// The answer a settled request of a server's got (found by its decision on the run's
    /// record), or `None` when it was never settled.
    async fn settled_server_ask(
        &self,
        key: &str,
    ) -> Result<Option<ServerAnswer>, ActorProcessingErr> {
        let id = self
            .rec
            .agent
            .as_ref()
            .and_then(|r| r.decisions.iter().rev().find(|d| d.key == key))
            .and_then(|d| d.approval);
        let Some(id) = id else {
            return Ok(None);
        };
        let store = self.ctx.store.clone();
        let a = blocking(move || store.get::<ApprovalRecord>(&id)).await??;
        Ok(a.and_then(|a| a.server_answer()))
    }

    /// The person answers a server's request: a form's answer is checked against the form
    /// (nothing is sent when it does not fit); a denial declines it.
    pub(super) async fn server_ask_decided(
        &mut self,
        mut a: ApprovalRecord,
        d: PersonDecision,
    ) -> Result<ApprovalRecord, RunsError> {
        let short = a.id.short();
        if a.deadline <= Timestamp::now() {
            self.server_ask_expired(a)
                .await
                .map_err(|e| RunsError::internal(e.to_string()))?;
            return Err(RunsError::conflict(format!(
                "approval {short} ran out of time; the server was told nobody answered"
            )));
        }
        let server = server_of(&a).to_string();
        if matches!(
            d,
            PersonDecision::AllowAlways | PersonDecision::Block { .. }
        ) {
            return Err(RunsError::invalid(format!(
                "approval {short} is a request of the MCP server `{server}`, answered each time: --always and --block are for tool calls (its policy is set with `bosun mcp edit {server} --{} deny`)",
                a.class
            )));
        }
        if let PersonDecision::Allow { answer } = d {
            if a.class == ELICITATION_CLASS {
                let form = form_of(&a)?;
                let Some(answer) = answer else {
                    return Err(RunsError::invalid(format!(
                        "approval {short} is a form of the MCP server `{server}`: answer it with `bosun approve {short} --answer '{}'`, or decline it with `bosun deny {short}`",
                        form.example()
                    )));
                };
                let content = form.check(&answer).map_err(|e| {
                    RunsError::invalid(format!(
                        "the answer to approval {short} does not fit the form: {e}; nothing was sent"
                    ))
                })?;
                a.answer = Some(Value::Object(content));
            } else if answer.is_some() {
                return Err(RunsError::invalid(format!(
                    "approval {short} asks to let the run's CLI write a message for `{server}`; it takes no --answer"
                )));
            }
            a.state = ApprovalState::Allowed {
                at: Timestamp::now(),
            };
            self.settle_server_ask(&a, true, None)
                .await
                .map_err(|e| RunsError::internal(e.to_string()))?;
            return Ok(a.clone());
        }
        let message = match d.message() {
            Some(m) if !m.trim().is_empty() => m,
            _ => format!("the person declined the request of the MCP server `{server}`"),
        };
        a.state = ApprovalState::Denied {
            at: Timestamp::now(),
            by: "the person".into(),
            message: message.clone(),
        };
        self.settle_server_ask(&a, false, Some(message))
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        Ok(a.clone())
    }

    /// Nobody answered a server's request in time: the server is told it was cancelled.
    pub(super) async fn server_ask_expired(
        &mut self,
        mut a: ApprovalRecord,
    ) -> Result<(), ActorProcessingErr> {
        let message = format!(
            "nobody answered the request of the MCP server `{}` within {} minutes",
            server_of(&a),
            SERVER_ASK_WAIT.as_secs() / 60
        );
        a.state = ApprovalState::Expired {
            at: Timestamp::now(),
            message: message.clone(),
        };
        self.settle_server_ask(&a, false, Some(message)).await
    }

    /// Commits a server's request settled (its decision on the run's record, with the
    /// approval), then tells the runner.
    async fn settle_server_ask(
        &mut self,
        a: &ApprovalRecord,
        allowed: bool,
        message: Option<String>,
    ) -> Result<(), ActorProcessingErr> {
        let by = if matches!(a.state, ApprovalState::Expired { .. }) {
            "the deadline"
        } else {
            "the person"
        };
        self.record_settled(a, allowed, by.into(), message).await?;
        info!(run_id = %self.rec.id, approval = %a.id, allowed, "a server's request is settled");
        if let Some(answer) = a.server_answer() {
            self.send(DaemonMsg::ServerAnswer {
                key: a.key.clone(),
                answer,
            });
        }
        Ok(())
    }
}
