//! Answers about MCP servers: add, edit, rename, remove, list, show; look at one (its tools, an
//! inspection, a call); find and import servers from the coding CLIs' configurations.

use std::num::NonZeroU16;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_kit::edit::Edit;
use bosun_mcp::RegistryError;
use bosun_mcp::ledger::ToolChoice;
use bosun_mcp::registry::{self, Approve, GatewayChange, NewServer, RegistryMsg, ServerEdit};
use bosun_mcp::{adopt, look};
use bosun_protocol::WireError;
use bosun_protocol::frame::MAX_FRAME_LEN;
use bosun_protocol::mcp::ImportPick;
use bosun_protocol::mcp::{
    AddServerParams, CallView, EditServerParams, GatewayEdit, ImportCandidates, ImportParams,
    ImportScan, Imported, InspectView, McpApprove, McpCall, McpInspect, McpList, McpRemove,
    McpRename, McpShow, McpTools, ServerView, ToolListing,
};
use bosun_shared::gateway::{CallDeadline, ResultChars, RuleError, SamplingTokens};
use bosun_shared::hosts::NetHost;

use super::views::{View, candidate_view, removed_view};
use super::{Handle, starting_up};
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for AddServerParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        // An empty client id or a callback port of zero is none.
        let params = NewServer {
            name: self.name,
            kind: self.kind,
            command: self.command,
            args: self.args,
            url: self.url,
            allow_http: self.allow_http,
            env: self.env,
            headers: self.headers,
            client_id: self.client_id.filter(|c| !c.is_empty()),
            client_secret: self.client_secret,
            callback_port: self.callback_port.and_then(NonZeroU16::new),
            sign_in_by: self.sign_in_by.unwrap_or_default(),
            client_metadata_url: self.client_metadata_url,
        };
        let added = registry_call(ctx, |reply| RegistryMsg::Add { params, reply }).await?;
        let view = added.view();
        ctx.audit
            .record(&format!("mcp add {}", view.name), None, Some(&view));
        Ok(view)
    }
}

impl Handle for EditServerParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let params = Box::new(server_edit(self)?);
        let before = server_view(ctx, &params.server).await;
        let changed = registry_call(ctx, |reply| RegistryMsg::Edit { params, reply }).await?;
        let view = changed.view();
        ctx.audit.record(
            &format!("mcp edit {}", view.name),
            before.as_ref(),
            Some(&view),
        );
        Ok(view)
    }
}

/// The wire's edit of a server as the registry takes it: an empty client id, browser program
/// or client metadata address, or a callback port of zero, clears the field; a gateway rule's
/// value out of its range is refused here.
fn server_edit(p: EditServerParams) -> Result<ServerEdit, Failure> {
    let text = |given: Option<String>| Edit::read(given, |t| t.trim().is_empty());
    Ok(ServerEdit {
        server: p.server,
        command: p.command,
        args: p.args,
        url: p.url,
        allow_http: p.allow_http,
        kind: p.kind,
        set_env: p.set_env,
        remove_env: p.remove_env,
        set_headers: p.set_headers,
        remove_headers: p.remove_headers,
        browser_version: p.browser_version,
        browser_program: text(p.browser_program).map(|b| PathBuf::from(b.trim())),
        client_id: Edit::read(p.client_id, String::is_empty),
        client_secret: p.client_secret,
        callback_port: p.callback_port.map_or(Edit::Keep, |n| {
            NonZeroU16::new(n).map_or(Edit::Clear, Edit::Set)
        }),
        sign_in_by: p.sign_in_by,
        client_metadata_url: Edit::read(p.client_metadata_url, String::is_empty),
        gateway: gateway_change(p.gateway)?,
    })
}

/// The wire's change of a server's gateway rules, each number read into its range.
fn gateway_change(g: GatewayEdit) -> Result<GatewayChange, RuleError> {
    Ok(GatewayChange {
        trusted: g.trusted,
        // An empty list on the wire clears it (`--allow-tool ""`).
        allow_tools: Edit::read(g.allow_tools, Vec::is_empty),
        deny_tools: Edit::read(g.deny_tools, Vec::is_empty),
        allow_resources: Edit::read(g.allow_resources, Vec::is_empty),
        deny_resources: Edit::read(g.deny_resources, Vec::is_empty),
        allow_prompts: Edit::read(g.allow_prompts, Vec::is_empty),
        deny_prompts: Edit::read(g.deny_prompts, Vec::is_empty),
        deadline: g.deadline_ms.map(CallDeadline::from_millis).transpose()?,
        max_result_chars: g.max_result_chars.map(ResultChars::new).transpose()?,
        capabilities: g.capabilities,
        elicitation: g.elicitation,
        sampling: g.sampling,
        sampling_max_tokens: g.sampling_max_tokens.map(SamplingTokens::new).transpose()?,
        net: net_hosts(g.net)?,
    })
}

/// The wire's list of a server's hosts, each read as the fence's proxy reads it; an empty list
/// clears it.
fn net_hosts(given: Option<Vec<String>>) -> Result<Edit<Vec<NetHost>>, RuleError> {
    let Some(list) = given else {
        return Ok(Edit::Keep);
    };
    if list.is_empty() {
        return Ok(Edit::Clear);
    }
    list.iter()
        .map(|h| {
            NetHost::parse(h).map_err(|why| RuleError::NetHost {
                host: bosun_shared::text::visible(h).into_owned(),
                why,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Edit::Set)
}

/// How a server shows now, for the audit log's "before" (none when it cannot be found).
async fn server_view(ctx: &Arc<DaemonCtx>, server: &str) -> Option<ServerView> {
    registry::show(&ctx.registry_context(), server)
        .await
        .ok()
        .map(|d| d.view())
}

impl Handle for McpApprove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        // Every tool wins over tools by name.
        let tools = match (self.all_tools, self.tools.is_empty()) {
            (true, _) => ToolChoice::All,
            (false, true) => ToolChoice::None,
            (false, false) => ToolChoice::Named(self.tools),
        };
        let before = server_view(ctx, &self.server).await;
        let params = Approve {
            server: self.server,
            tools,
            capabilities: self.capabilities,
        };
        let approved = registry_call(ctx, |reply| RegistryMsg::Approve { params, reply }).await?;
        let view = approved.view();
        ctx.audit.record(
            &format!("mcp approve {}", view.name),
            before.as_ref(),
            Some(&view),
        );
        Ok(view)
    }
}

impl Handle for McpRename {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let old = registry::find(&ctx.store, &self.server).await?.name;
        let renamed = registry_call(ctx, |reply| RegistryMsg::Rename {
            server: self.server,
            new_name: self.new_name,
            reply,
        })
        .await?;
        super::agents::server_verdicts(ctx, old.clone(), Some(renamed.record.name.clone())).await?;
        let view = renamed.view();
        ctx.audit.record(
            &format!("mcp rename {old} {}", view.name),
            None,
            Some(&view),
        );
        Ok(view)
    }
}

impl Handle for McpRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        let removed = registry_call(ctx, |reply| RegistryMsg::Remove {
            server: self.server,
            reply,
        })
        .await?;
        super::agents::server_verdicts(ctx, removed.name.clone(), None).await?;
        let view = removed_view(&removed);
        ctx.audit.record(
            &format!(
                "mcp remove {} (every agent's verdicts on its tools forgotten)",
                view.name
            ),
            Some(&view),
            None,
        );
        Ok(view)
    }
}

impl Handle for McpList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ServerView>, Failure> {
        Ok(registry::list(&ctx.registry_context()).await?.view())
    }
}

impl Handle for McpShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ServerView, Failure> {
        Ok(registry::show(&ctx.registry_context(), &self.server)
            .await?
            .view())
    }
}

impl Handle for McpTools {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ToolListing, Failure> {
        if self.cached {
            let listed = look::last_listing(&ctx.registry_context(), &self.server).await?;
            return Ok(listed.view());
        }
        let registry = ctx.registry().ok_or_else(starting_up)?;
        let listed = look::list_tools(&ctx.registry_context(), &registry, &self.server).await?;
        Ok(listed.view())
    }
}

impl Handle for McpInspect {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<InspectView, Failure> {
        Ok(look::inspect(&ctx.registry_context(), &self.server)
            .await?
            .view())
    }
}

/// The most bytes a tool's result may take in bosund's answer: a frame, less room for the
/// response around it (its id, its tags).
const CALL_ROOM: usize = MAX_FRAME_LEN - 1024;

impl Handle for McpCall {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CallView, Failure> {
        let answer =
            look::call(&ctx.registry_context(), &self.server, &self.tool, self.args).await?;
        let view = answer.view();
        // The result goes back in one frame. One that cannot fit is refused here, saying what
        // it is and what to do, rather than as an answer the session could not send.
        let len = serde_json::to_vec(&view).map_or(0, |v| v.len());
        if len > CALL_ROOM {
            return Err(WireError::bad_request(format!(
                "could not call `{}` on `{}`: its result is {len} bytes, more than the {} MiB one answer of bosund can carry, so it is not shown; ask for less (a tool's arguments may narrow or page what it returns)",
                self.tool,
                self.server,
                MAX_FRAME_LEN / (1024 * 1024)
            ))
            .into());
        }
        Ok(view)
    }
}

impl Handle for ImportScan {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ImportCandidates, Failure> {
        let scan = scan(self);
        let found = tokio::task::spawn_blocking(move || adopt::find(&scan))
            .await
            .map_err(|e| WireError::internal(e.to_string()))??;
        let existing = registry::records(&ctx.store).await?;
        Ok(ImportCandidates {
            candidates: found
                .candidates
                .iter()
                .map(|c| candidate_view(c, adopt::status(c, &c.name, &existing)))
                .collect(),
            problems: found.problems,
        })
    }
}

impl Handle for ImportParams {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Imported, Failure> {
        let registry = ctx.registry().ok_or_else(starting_up)?;
        let params = adopt::Import {
            scan: scan(self.scan),
            all: self.all,
            picks: self.picks.into_iter().map(pick).collect(),
        };
        let added = adopt::import(&ctx.registry_context(), &registry, params).await?;
        Ok(Imported {
            servers: added.view(),
        })
    }
}

/// Where the wire says to look for servers to import.
fn scan(s: ImportScan) -> adopt::Scan {
    adopt::Scan {
        extra_files: s.extra_files,
        env: s.env,
    }
}

fn pick(p: ImportPick) -> adopt::Pick {
    adopt::Pick {
        name: p.name,
        rename_to: p.rename_to,
        account: p.account,
    }
}

/// Asks the Registry actor (every change to the MCP servers goes through it, one at a time).
async fn registry_call<T: Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    msg: impl FnOnce(ractor::RpcReplyPort<Result<T, RegistryError>>) -> RegistryMsg,
) -> Result<T, Failure> {
    let registry = ctx.registry().ok_or_else(starting_up)?;
    Ok(registry
        .call(msg, None)
        .await
        .map_err(|e| WireError::internal(format!("the MCP registry did not answer: {e}")))?
        .success_or(WireError::internal("the MCP registry did not answer"))??)
}
