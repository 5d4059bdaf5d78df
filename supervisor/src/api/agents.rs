//! Answers about agents: add, edit, switch, show, list, remove; start a run of one; list its
//! CLI's own tools.

use std::num::NonZeroU64;
use std::sync::Arc;

use bosun_agents::AgentsError;
use bosun_agents::registry::{self as agents, AgentEdit, AgentsMsg, NewAgent};
use bosun_agents::{builtin, launch};
use bosun_board::BoardRequest;
use bosun_kit::edit::Edit;
use bosun_protocol::agents::{
    AgentList, AgentParams, AgentRemove, AgentRun, AgentSet, AgentShow, AgentTools, AgentView,
    BuiltinToolsView, EditAgentParams,
};
use bosun_protocol::ui::RunView;
use bosun_protocol::{ErrorCode, WireError};
use bosun_shared::time::TimeCap;

use super::views::View;
use super::{Handle, runs, starting_up};
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for AgentParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AgentView, Failure> {
        let params = new_agent(self)?;
        let what = format!("agent add {}", params.name);
        let view = agents_call(ctx, |reply| AgentsMsg::Add { params, reply })
            .await
            .map(|a| a.view())?;
        ctx.audit.record(&what, None, Some(&view));
        Ok(view)
    }
}

/// The wire's new agent as the agents area takes it: its time cap read into its range, an
/// output cap of zero, an empty permission mode and a blank model left out.
fn new_agent(p: AgentParams) -> Result<NewAgent, Failure> {
    Ok(NewAgent {
        name: p.name,
        role: p.role,
        cli: p.cli,
        instructions: p.instructions,
        permission_mode: p.permission_mode.filter(|m| !m.is_empty()),
        allowed_commands: p.allowed_commands,
        time_cap: p.time_cap_ms.map(TimeCap::from_millis).transpose()?,
        max_output: p.max_output.and_then(NonZeroU64::new),
        cwd: p.cwd,
        command: p.command,
        env: p.env,
        secret_env: p.secret_env,
        model: p.model.filter(|m| !m.trim().is_empty()),
        codex_config: p.codex_config,
    })
}

impl Handle for EditAgentParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AgentView, Failure> {
        let params = agent_edit(self)?;
        let before = agent_view(ctx, &params.agent).await;
        let view = agents_call(ctx, |reply| AgentsMsg::Edit { params, reply })
            .await
            .map(|a| a.view())?;
        ctx.audit.record(
            &format!("agent edit {}", view.name),
            before.as_ref(),
            Some(&view),
        );
        Ok(view)
    }
}

/// The wire's edit of an agent as the agents area takes it: an empty mode or model, or a zero
/// time cap or output cap, clears the field; a time cap is checked here.
fn agent_edit(p: EditAgentParams) -> Result<AgentEdit, Failure> {
    Ok(AgentEdit {
        agent: p.agent,
        name: p.name,
        role: p.role,
        cli: p.cli,
        instructions: p.instructions,
        permission_mode: Edit::read(p.permission_mode, |m| m.is_empty()),
        allowed_commands: p.allowed_commands,
        time_cap: Edit::read(p.time_cap_ms, |ms| *ms == 0).try_map(TimeCap::from_millis)?,
        max_output: p.max_output.map_or(Edit::Keep, |n| {
            NonZeroU64::new(n).map_or(Edit::Clear, Edit::Set)
        }),
        cwd: p.cwd,
        command: p.command,
        set_env: p.set_env,
        remove_env: p.remove_env,
        set_secret_env: p.set_secret_env,
        remove_secret_env: p.remove_secret_env,
        model: Edit::read(p.model, |m| m.trim().is_empty()),
        codex_config: p.codex_config,
        paused: p.paused,
    })
}

impl Handle for AgentSet {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AgentView, Failure> {
        let before = agent_view(ctx, &self.agent).await;
        let what = format!("agent set {} {}", self.agent, self.settings.join(" "));
        let view = agents_call(ctx, |reply| AgentsMsg::Set {
            agent: self.agent,
            settings: self.settings,
            reply,
        })
        .await
        .map(|a| a.view())?;
        ctx.audit.record(&what, before.as_ref(), Some(&view));
        Ok(view)
    }
}

/// How an agent shows now, for the audit log's "before" (none when it cannot be found).
async fn agent_view(ctx: &Arc<DaemonCtx>, agent: &str) -> Option<AgentView> {
    agents::show(&ctx.agents_context(), agent)
        .await
        .ok()
        .map(|a| a.view())
}

impl Handle for AgentShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AgentView, Failure> {
        Ok(agents::show(&ctx.agents_context(), &self.agent)
            .await?
            .view())
    }
}

impl Handle for AgentList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<AgentView>, Failure> {
        Ok(agents::list(&ctx.agents_context()).await?.view())
    }
}

impl Handle for AgentRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AgentView, Failure> {
        let view = agents_call(ctx, |reply| AgentsMsg::Remove {
            agent: self.agent,
            reply,
        })
        .await
        .map(|a| a.view())?;
        ctx.audit
            .record(&format!("agent remove {}", view.name), Some(&view), None);
        Ok(view)
    }
}

impl Handle for AgentRun {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<RunView, Failure> {
        let card = match &self.card {
            Some(key) => {
                let card = super::board::ask(ctx, |reply| BoardRequest::ShowCard {
                    card: key.clone(),
                    reply,
                })
                .await?;
                if let Some(project) = &card.project {
                    return Err(WireError::new(
                        ErrorCode::BadRequest,
                        format!(
                            "card {} belongs to project {project}: its runs work only in its worktree, where the board starts them (move it to an Auto column); start this run without --card, or for a card of no project",
                            card.record.id.short()
                        ),
                    )
                    .into());
                }
                Some(card.record.id)
            }
            None => None,
        };
        let mut spec = launch::prepare(&ctx.agents_context(), &self.agent, &self.prompt).await?;
        // Move 0: a run the person started for the card, not the board for one of its moves.
        spec.run.card = card.map(|c| (c, 0));
        runs::start(ctx, spec.into()).await
    }
}

impl Handle for AgentTools {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<BuiltinToolsView, Failure> {
        Ok(builtin::tools(
            &ctx.agents_context(),
            ctx.agents.get(),
            &self.agent,
            self.ask,
        )
        .await?
        .view())
    }
}

/// Every agent's verdicts on the tools of `server` forgotten (it was removed or signed out of),
/// or moved to its new name.
pub async fn server_verdicts(
    ctx: &Arc<DaemonCtx>,
    server: String,
    renamed_to: Option<String>,
) -> Result<(), Failure> {
    agents_call(ctx, |reply| AgentsMsg::ServerVerdicts {
        server,
        renamed_to,
        reply,
    })
    .await
}

/// Asks the Agents actor (every change to the agents goes through it, one at a time).
async fn agents_call<T: Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    msg: impl FnOnce(ractor::RpcReplyPort<Result<T, AgentsError>>) -> AgentsMsg,
) -> Result<T, Failure> {
    let agents = ctx.agents.get().ok_or_else(starting_up)?;
    Ok(agents
        .call(msg, None)
        .await
        .map_err(|e| WireError::internal(format!("bosund's agents did not answer: {e}")))?
        .success_or(WireError::internal("bosund's agents did not answer"))??)
}
