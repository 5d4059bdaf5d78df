//! A run's gateway asks for a server's token anew: the server refused the run's token (401) or
//! asked for a wider scope (403 `insufficient_scope`). The server's refresher is asked in a
//! task of its own (a refresh may take a while; the run's output goes on meanwhile), and the
//! answer goes to the runner over its link: the token (never logged, never stored), or why
//! there is none.
//!
//! When only the person can help (a refused refresh, a wider scope, a server that moved to
//! another authorization server and refuses the refreshed token too), the ask waits in the
//! inbox as an approval of the class [`super::SIGN_IN_CLASS`], kept in the store like any other:
//! "server X needs a new sign-in — sign in to go on". It is settled once: by a sign-in to the
//! server ([`RunMsg::SignedIn`], from `bosun mcp sign-in` or the web UI; the call then goes on
//! with the new token), by the person allowing it once they signed in (`bosun approve`), by
//! the person dismissing it (`bosun deny`: the call fails, saying so), by its deadline
//! ([`SIGN_IN_WAIT`]), or by the run's end.
//!
//! The wait has its own allowance, longer than a call's deadline (60 s by default): that
//! deadline bounds the server's work, which has not begun, while a person has to notice the
//! item, open a browser and sign in.

use std::time::Duration;

use bosun_agents::secrets::TokenAnew;
use bosun_approvals::record::{ApprovalRecord, ApprovalState, changes_for};
use bosun_protocol::runner::{DaemonMsg, TokenAnswer, TokenAsk, ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use ractor::{ActorProcessingErr, ActorRef};
use tracing::{info, warn};

use super::asks::{PersonDecision, arm_deadline};
use super::{RunActorState, RunMsg, SIGN_IN_CLASS, ms};
use crate::RunsError;

/// How long a call waits for the person's new sign-in.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(15 * 60);

/// What came of a sign-in approval when a new sign-in may have been made.
enum GoesOn {
    /// The call went on with the new token; the approval as it is now.
    Went(Box<ApprovalRecord>),
    /// No token got since the call began to wait (why): it waits on.
    Waits(String),
}

/// The server a sign-in approval is for (kept in its input).
fn server_of(a: &ApprovalRecord) -> String {
    a.input
        .get("server")
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string()
}

impl RunActorState {
    /// The runner asks for a server's token anew: looked up in a task, answered by
    /// [`Self::on_token_got`]. Asked again (after a reconnect) while it waits for the person:
    /// it still waits; once the person dismissed it: the same refusal.
    pub(super) fn on_token_ask(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: TokenAsk,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(ToolAnswer::Deny { message }) = self.asks.decided.get(&ask.key) {
            let answer = TokenAnswer::Failed {
                message: message.clone(),
            };
            self.send(DaemonMsg::Token {
                key: ask.key,
                answer,
            });
            return Ok(());
        }
        if let Some(wait_ms) = self.left_to_wait(&ask.key) {
            let answer = TokenAnswer::Waiting {
                note: String::new(),
                wait_ms,
            };
            self.send(DaemonMsg::Token {
                key: ask.key,
                answer,
            });
            return Ok(());
        }
        if self.rec.state.is_final() {
            return Ok(());
        }
        info!(run_id = %self.rec.id, server = %ask.server, wider = ask.wider, "the run's gateway asks for a server's token anew");
        let (secrets, store, me) = (
            self.ctx.secrets.clone(),
            self.ctx.store.clone(),
            myself.clone(),
        );
        tokio::spawn(async move {
            let got = secrets
                .token_anew(
                    &store,
                    &ask.server,
                    ask.refused.clone(),
                    ask.wider,
                    ask.scope.clone(),
                    None,
                )
                .await;
            let _ = me.cast(RunMsg::TokenGot {
                ask,
                got: Box::new(got),
            });
        });
        Ok(())
    }

    /// What came of a token ask: the token or why there is none, to the runner; or, when only
    /// the person can help, a "needs a new sign-in" item in the inbox.
    pub(super) async fn on_token_got(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: TokenAsk,
        got: TokenAnew,
    ) -> Result<(), ActorProcessingErr> {
        let why = match got {
            TokenAnew::Token(token) => {
                self.send(DaemonMsg::Token {
                    key: ask.key,
                    answer: TokenAnswer::Token { token },
                });
                return Ok(());
            }
            TokenAnew::Failed(message) => {
                self.send(DaemonMsg::Token {
                    key: ask.key,
                    answer: TokenAnswer::Failed { message },
                });
                return Ok(());
            }
            TokenAnew::NeedsSignIn { why } => why,
        };
        if self.rec.state.is_final() || self.asks.waiting.contains_key(&ask.key) {
            return Ok(());
        }
        let server = ask.server.clone();
        let scope = ask
            .scope
            .as_deref()
            .map(|s| format!(" (scope {s})"))
            .unwrap_or_default();
        let shim = ToolAsk {
            key: ask.key.clone(),
            tool: format!("sign-in {server}"),
            input: serde_json::Value::Null,
            input_cut: false,
            cwd: None,
            at: Timestamp::now(),
            redacted: false,
        };
        let attended = self.rec.agent.as_ref().is_none_or(|r| !r.unattended);
        let approval = ApprovalRecord {
            class: SIGN_IN_CLASS.into(),
            why: format!("the MCP server `{server}` needs a new sign-in: {why}"),
            input: serde_json::json!({"server": server, "scope": ask.scope}),
            preview: format!(
                "server {server} needs a new sign-in{scope} — sign in to go on: bosun mcp sign-in {server}\n(the call waits; deny to dismiss it, and the call fails)"
            ),
            ..self.approval_of(&shim, ms(SIGN_IN_WAIT), attended)
        };
        info!(run_id = %self.rec.id, approval = %approval.id, server = %server, "a call waits for a new sign-in to its server");
        let note = format!(
            "the MCP server {server} needs a new sign-in{scope} ({why}); the call waits: sign in with `bosun mcp sign-in {server}`, or dismiss it with `bosun deny {}`",
            approval.id.short()
        );
        self.ctx.writer.commit(changes_for(&approval)).await?;
        self.asks.next_seq += 1;
        arm_deadline(myself, &approval);
        self.publish(&approval);
        self.send(DaemonMsg::Token {
            key: ask.key.clone(),
            answer: TokenAnswer::Waiting {
                note,
                wait_ms: ms(SIGN_IN_WAIT),
            },
        });
        self.asks.waiting.insert(ask.key, approval);
        Ok(())
    }

    /// A server was signed in to: each call of this run waiting for that sign-in goes on with
    /// the new token.
    pub(super) async fn on_signed_in(&mut self, server: String) -> Result<(), ActorProcessingErr> {
        let waiting: Vec<ApprovalRecord> = self
            .asks
            .waiting
            .values()
            .filter(|a| a.class == SIGN_IN_CLASS && server_of(a) == server)
            .cloned()
            .collect();
        for a in waiting {
            let id = a.id;
            match self.sign_in_goes_on(a, "the new sign-in").await {
                Ok(GoesOn::Went(_)) => {
                    info!(run_id = %self.rec.id, approval = %id, "signed in again: the call that waited goes on");
                }
                Ok(GoesOn::Waits(why)) => {
                    warn!(run_id = %self.rec.id, approval = %id, why = %why, "signed in, yet still no token; the call waits");
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The token after a new sign-in: the approval allowed (by `by`) and the token sent; or,
    /// when there is still none, why (the approval waits on).
    async fn sign_in_goes_on(
        &mut self,
        mut a: ApprovalRecord,
        by: &str,
    ) -> Result<GoesOn, RunsError> {
        let server = server_of(&a);
        let got = self
            .ctx
            .secrets
            .token_anew(
                &self.ctx.store,
                &server,
                None,
                false,
                None,
                Some(a.asked_at),
            )
            .await;
        let token = match got {
            TokenAnew::Token(t) => t,
            TokenAnew::NeedsSignIn { why } => return Ok(GoesOn::Waits(why)),
            TokenAnew::Failed(m) => return Ok(GoesOn::Waits(m)),
        };
        a.state = ApprovalState::Allowed {
            at: Timestamp::now(),
        };
        self.ctx
            .writer
            .commit(changes_for(&a))
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        info!(run_id = %self.rec.id, approval = %a.id, by = %by, "a sign-in approval is settled");
        self.asks.waiting.remove(&a.key);
        self.asks.decided.insert(a.key.clone(), ToolAnswer::Allow);
        self.publish(&a);
        self.send(DaemonMsg::Token {
            key: a.key.clone(),
            answer: TokenAnswer::Token { token },
        });
        Ok(GoesOn::Went(Box::new(a.clone())))
    }

    /// The person answers a "needs a new sign-in" item: allowing it once they signed in sends
    /// the call on (before, it is refused, saying to sign in first); denying dismisses it and
    /// the call fails.
    pub(super) async fn sign_in_decided(
        &mut self,
        mut a: ApprovalRecord,
        d: PersonDecision,
    ) -> Result<ApprovalRecord, RunsError> {
        let server = server_of(&a);
        if d.allows() {
            return match self.sign_in_goes_on(a.clone(), "the person").await? {
                GoesOn::Went(view) => Ok(*view),
                GoesOn::Waits(why) => Err(RunsError::conflict(format!(
                    "the MCP server `{server}` has no new sign-in yet ({why}); sign in with `bosun mcp sign-in {server}` (the call then goes on by itself), or dismiss it with `bosun deny {}`",
                    a.id.short()
                ))),
            };
        }
        let message = match d.message() {
            Some(m) if !m.trim().is_empty() => m,
            _ => format!(
                "the MCP server `{server}` needs a new sign-in and the person dismissed it; the call was not run"
            ),
        };
        a.state = ApprovalState::Denied {
            at: Timestamp::now(),
            by: "the person".into(),
            message: message.clone(),
        };
        self.settle_sign_in(a.clone(), message)
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        Ok(a.clone())
    }

    /// Nobody signed in within [`SIGN_IN_WAIT`]: the call fails, saying so.
    pub(super) async fn sign_in_expired(
        &mut self,
        mut a: ApprovalRecord,
    ) -> Result<(), ActorProcessingErr> {
        let server = server_of(&a);
        let message = format!(
            "nobody signed in to the MCP server `{server}` within {} minutes; the call was not run. Sign in with `bosun mcp sign-in {server}`, then call again",
            SIGN_IN_WAIT.as_secs() / 60
        );
        a.state = ApprovalState::Expired {
            at: Timestamp::now(),
            message: message.clone(),
        };
        self.settle_sign_in(a, message).await
    }

    /// A sign-in approval that ends without a token: committed, then the runner told.
    async fn settle_sign_in(
        &mut self,
        a: ApprovalRecord,
        message: String,
    ) -> Result<(), ActorProcessingErr> {
        self.ctx.writer.commit(changes_for(&a)).await?;
        self.asks.waiting.remove(&a.key);
        self.asks.decided.insert(
            a.key.clone(),
            ToolAnswer::Deny {
                message: message.clone(),
            },
        );
        self.publish(&a);
        self.send(DaemonMsg::Token {
            key: a.key.clone(),
            answer: TokenAnswer::Failed { message },
        });
        Ok(())
    }
}
