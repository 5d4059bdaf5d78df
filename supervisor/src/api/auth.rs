//! Answers about signing in to an MCP server reached by address: start a sign-in, wait for it
//! to end or cancel it, sign a machine in with client credentials, sign out.

use std::sync::Arc;

use bosun_auth::client_credentials::{self, Machine};
use bosun_auth::signin;
use bosun_mcp::{look, registry};
use bosun_protocol::auth::{
    McpSignIn, McpSignInCancel, McpSignInFinish, McpSignInMachine, McpSignOut, SignInStarted,
};
use bosun_protocol::mcp::ServerView;

use super::Handle;
use super::views::View;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for McpSignIn {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<SignInStarted, Failure> {
        let rc = ctx.registry_context();
        let rec = registry::find(&ctx.store, &self.server).await?;
        // Made here, awaited by the sign-in only once its own checks have passed.
        let probe = look::sign_in_probe(&rc, &self.server);
        let started = signin::start(&rc.auth, &rec, probe, self.new_client).await?;
        Ok(SignInStarted {
            attempt: started.attempt,
            url: started.url,
            wait_secs: started.wait.as_secs(),
            reused_registration: started.reused_registration,
            warning: started.warning,
        })
    }
}

impl Handle for McpSignInFinish {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let server = signin::finish(&ctx.auth, self.attempt).await?;
        let detail = registry::show(&ctx.registry_context(), &server.to_string()).await?;
        // Runs' calls that wait for this sign-in go on.
        ctx.live.signed_in(&detail.record.name);
        let view = detail.view();
        ctx.audit
            .record(&format!("mcp sign-in {}", view.name), None, Some(&view));
        Ok(view)
    }
}

impl Handle for McpSignInCancel {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let server = signin::cancel(&ctx.auth, self.attempt)?;
        Ok(registry::show(&ctx.registry_context(), &server.to_string())
            .await?
            .view())
    }
}

impl Handle for McpSignInMachine {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let rc = ctx.registry_context();
        let rec = registry::find(&ctx.store, &self.server).await?;
        let machine = Machine::new(
            &rec.name,
            self.client_id,
            self.client_secret.map(|s| s.0),
            self.private_key.map(|k| k.0),
        )?;
        let probe = look::sign_in_probe(&rc, &self.server);
        let server = client_credentials::sign_in(&rc.auth, &rec, machine, probe).await?;
        let detail = registry::show(&rc, &server.to_string()).await?;
        ctx.live.signed_in(&detail.record.name);
        let view = detail.view();
        ctx.audit.record(
            &format!("mcp sign-in {} (as this machine)", view.name),
            None,
            Some(&view),
        );
        Ok(view)
    }
}

impl Handle for McpSignOut {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let detail = registry::sign_out(&ctx.registry_context(), &self.server).await?;
        super::agents::server_verdicts(ctx, detail.record.name.clone(), None).await?;
        let view = detail.view();
        ctx.audit.record(
            &format!(
                "mcp sign-out {} (every agent's verdicts on its tools forgotten)",
                view.name
            ),
            None,
            Some(&view),
        );
        Ok(view)
    }
}
