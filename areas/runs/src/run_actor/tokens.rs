//! A run's gateway asks for a server's token anew: the server refused the run's token (401) or
//! asked for a wider scope (403 `insufficient_scope`). The server's refresher is asked in a
//! task of its own (a refresh may take a while; the run's output goes on meanwhile), and the
//! answer goes to the runner over its link: the token (never logged, never stored), or why
//! there is none.
//!
//! Nothing is committed: a token is read afresh each time it is asked for, and an ask that
//! comes again after a reconnect is simply answered again.
//!
//! # Caveats
//! - When only the person can help (a refused refresh, a wider scope, a server that moved to
//!   another authorization server), the call fails with what to do (`bosun mcp sign-in`); it
//!   does not wait in the inbox for the sign-in.

use bosun_agents::secrets::TokenAnew;
use bosun_shared::protocol::runner::{DaemonMsg, TokenAnswer, TokenAsk};
use ractor::{ActorProcessingErr, ActorRef};
use tracing::info;

use super::{RunActorState, RunMsg};

impl RunActorState {
    /// The runner asks for a server's token anew: looked up in a task, answered by
    /// [`Self::on_token_got`].
    pub(super) fn on_token_ask(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: TokenAsk,
    ) -> Result<(), ActorProcessingErr> {
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
                )
                .await;
            let answer = match got {
                TokenAnew::Token(token) => TokenAnswer::Token { token },
                TokenAnew::NeedsSignIn { why } => TokenAnswer::Failed {
                    message: format!(
                        "the MCP server `{name}` needs a new sign-in ({why}); the call was not run. Sign in with `bosun mcp sign-in {name}`, then call again",
                        name = ask.server
                    ),
                },
                TokenAnew::Failed(message) => TokenAnswer::Failed { message },
            };
            let _ = me.cast(RunMsg::TokenGot {
                key: ask.key,
                answer,
            });
        });
        Ok(())
    }

    /// The answer to a token ask, to the runner.
    pub(super) fn on_token_got(&mut self, key: String, answer: TokenAnswer) {
        self.send(DaemonMsg::Token { key, answer });
    }
}
