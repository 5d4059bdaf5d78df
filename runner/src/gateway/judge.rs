//! Every call at the gateway is judged once by bosun's approval policy.
//!
//! A call the CLI's control protocol already brought to bosund, and had allowed, goes on on
//! that decision ([`Gateway::take_cleared`], see [`crate::cleared`]). Any other call (a CLI
//! without the control protocol, a call made without asking, arguments that do not match) is
//! asked of bosund by the gateway itself, as a [`ToolAsk`] of its own over the runner's link
//! (key `gateway-<server>-<n>`), so the same switches, verdicts, policy, budgets and inbox
//! judge it. The call waits meanwhile, its deadline not running, and is not sent to the server
//! unless allowed; a denied call reaches the CLI as an error result saying why.
//!
//! The link says the ask again after each reconnect until it is decided, and bosund answers an
//! ask it decided with the decision it committed: across a SIGKILL of bosund, the call gets
//! that decision, never a second one.
//!
//! # Caveats
//! - bosund must first answer within [`FIRST_ANSWER`](crate::link::FIRST_ANSWER) (a decision, or that the call waits for
//!   the person): past it, bosund is taken as unreachable and the call is refused, saying so
//!   (it never runs unjudged). Once it waits for the person, it waits as long as bosund's
//!   approval does (bosund's deadline ends it).

use std::sync::atomic::Ordering;
use std::time::Duration;

use bosun_protocol::runner::{ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use bosun_shared::gateway::{AskedAt, CallDecision, CallEntry, CallOutcome, CallVerdict};
use bosun_shared::mcp::full_tool_name;
use serde_json::{Value, json};
use tokio::process::ChildStdout;
use tokio::time::Instant;

use super::{Call, Conn, Gateway, Lines, key};
use crate::link::{FIRST_ANSWER, Verdict};

/// Who refused a call when bosund could not be reached to judge it.
const UNREACHABLE: &str = "bosun's gateway: bosund could not be reached";

/// A call waiting for bosund's decision.
pub(super) struct Judging {
    id: Value,
    tool: String,
    /// Its arguments as its line in the log shows them.
    args: String,
    at: Timestamp,
    /// The CLI's message, sent to the server as it is once allowed.
    line: Vec<u8>,
    /// The key of the ask.
    ask: String,
}

/// What came of the gateway's ask about the call `call` (its id as a key).
pub(super) struct Judged {
    call: String,
    decision: CallDecision,
    /// For a denial: what the model is told.
    message: String,
}

impl Gateway {
    /// Who allowed this call of `server`'s `tool` with `arguments` through the CLI's control
    /// protocol, when a decision of it covers the call (spent on it).
    pub(super) fn take_cleared(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Option<String> {
        let full = full_tool_name(server, tool);
        self.cleared.lock().ok()?.take(&full, arguments)
    }
}

impl Conn<'_> {
    /// Asks bosund about a call no decision of the CLI's covers, in a task of its own (the
    /// connection goes on meanwhile); the call waits in `judging` until [`Self::on_judged`].
    pub(super) fn judge(
        &mut self,
        id: Value,
        tool: String,
        args: String,
        arguments: Value,
        line: Vec<u8>,
    ) {
        let name = self.server.name.clone();
        let n = self.gw.calls_asked.fetch_add(1, Ordering::Relaxed) + 1;
        let ask_key = format!("gateway-{name}-{n}");
        let ask = ToolAsk {
            key: ask_key.clone(),
            tool: full_tool_name(&name, &tool),
            input: if arguments.is_null() {
                json!({})
            } else {
                arguments
            },
            input_cut: false,
            cwd: None,
            at: Timestamp::now(),
            redacted: false,
        };
        let ask = crate::control::for_bosund(ask, &self.gw.cwd, &self.gw.ask_redactor);
        let call = key(&id);
        self.judging.insert(
            call.clone(),
            Judging {
                id,
                tool,
                args,
                at: Timestamp::now(),
                line,
                ask: ask_key.clone(),
            },
        );
        let link = self.gw.link.clone();
        let events = self.judge_events.clone();
        tokio::spawn(async move {
            let (decision, message) = match link.judged(ask).await {
                Verdict::Decided { answer, by } => match answer {
                    ToolAnswer::Allow => (allowed(by), String::new()),
                    ToolAnswer::Deny { message } => (denied(by), message),
                },
                Verdict::Unreachable => (
                    denied(UNREACHABLE.into()),
                    format!(
                        "bosund did not answer within {} s (it is down or cannot be reached from this run), so nobody could judge this call; call again once bosund is back",
                        FIRST_ANSWER.as_secs()
                    ),
                ),
                // The call was withdrawn (the CLI cancelled it, or went away).
                Verdict::Withdrawn => return,
            };
            let _ = events.send(Judged {
                call,
                decision,
                message,
            });
        });
    }

    /// bosund decided a call that waited: allowed, it goes to the server (its deadline counts
    /// from now); denied, the CLI gets an error result saying why, and the server never sees it.
    pub(super) async fn on_judged(
        &mut self,
        judged: Judged,
        from_server: &mut Option<Lines<ChildStdout>>,
    ) {
        let Some(j) = self.judging.remove(&judged.call) else {
            return;
        };
        let name = self.server.name.clone();
        if judged.decision.verdict == CallVerdict::Denied {
            let by = &judged.decision.by;
            let why = if judged.message.is_empty() {
                by.clone()
            } else {
                format!("{by}: {}", judged.message)
            };
            self.gw
                .note(format!("mcp {name}/{} {}: denied by {why}", j.tool, j.args));
            self.gw.record(&CallEntry {
                at: j.at,
                server: name.clone(),
                tool: j.tool.clone(),
                args: j.args.clone(),
                outcome: CallOutcome::Refused {
                    reason: why.clone(),
                },
                ms: None,
                chars: None,
                model_got: None,
                decision: Some(judged.decision),
            });
            // What to do: bosund's own message says it when bosund could not be reached.
            let next = if why.starts_with(UNREACHABLE) {
                ""
            } else {
                " Do not work around it; if it is needed, say so, and the person can allow it when it is asked again."
            };
            let text = format!(
                "bosun denied this call: the tool `{}` of the MCP server `{name}` did not run (denied by {why}).{next}",
                j.tool
            );
            let reply = json!({"jsonrpc": "2.0", "id": j.id, "result": {
                "content": [{"type": "text", "text": text}],
                "isError": true,
            }});
            self.tell_cli(&reply).await;
            return;
        }
        let deadline = Duration::from_millis(self.rules().deadline_ms);
        let now = Instant::now();
        self.calls.insert(
            judged.call.clone(),
            Call {
                id: j.id,
                tool: j.tool,
                args: j.args,
                at: j.at,
                started: now,
                deadline: now + deadline,
                decision: judged.decision,
            },
        );
        self.tell_server(&j.line, from_server).await;
        // Counted from when the server has it, as for any call.
        if let Some(call) = self.calls.get_mut(&judged.call) {
            call.deadline = Instant::now() + deadline;
        }
    }

    /// The CLI cancelled a call that waits for bosund (`call` its id): bosund stops waiting
    /// for the person on it, and the server never hears of it. Whether it was such a call.
    pub(super) fn cancel_judging(&mut self, call: &Value) -> bool {
        let Some(j) = self.judging.remove(&key(call)) else {
            return false;
        };
        self.gw.note(format!(
            "mcp {}/{} {}: the CLI cancelled it while bosun judged it; it did not run",
            self.server.name, j.tool, j.args
        ));
        self.gw.link.tool_done(&j.ask, false);
        true
    }

    /// The connection is closing: the calls still waiting for bosund are withdrawn.
    pub(super) fn withdraw_judging(&mut self) {
        for (_, j) in self.judging.drain() {
            self.gw.link.tool_done(&j.ask, false);
        }
    }
}

fn allowed(by: String) -> CallDecision {
    CallDecision {
        verdict: CallVerdict::Allowed,
        by,
        asked: AskedAt::Gateway,
    }
}

fn denied(by: String) -> CallDecision {
    CallDecision {
        verdict: CallVerdict::Denied,
        by,
        asked: AskedAt::Gateway,
    }
}
