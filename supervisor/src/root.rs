//! Root: the top of bosund's actor tree. It starts Events, Runs, the MCP Registry, Agents, Auth
//! (the token refreshers) and the IPC listener, restarts any of them that fails within its restart budget (and gives up,
//! recording why, past it), and carries out the daemon's shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::events::Events;
use bosun_agents::registry::Agents;
use bosun_auth::Auth;
use bosun_board::Board;
use bosun_kit::supervision::{RestartBudget, RestartPolicy, Verdict};
use bosun_lead::chats::Chats;
use bosun_mcp::registry::Registry;
use bosun_runs::{Runs, RunsMsg};
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::{error, info, warn};

use crate::control::RootMsg;
use crate::ctx::DaemonCtx;
use crate::listener::Listener;

/// How long an immediate shutdown waits for runners to report before bosund exits anyway.
const IMMEDIATE_SHUTDOWN_LIMIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Child {
    Events,
    Runs,
    Registry,
    Agents,
    Auth,
    Board,
    Chats,
    Listener,
}

pub struct Root;

pub struct RootState {
    ctx: Arc<DaemonCtx>,
    children: HashMap<ActorId, Child>,
    budgets: HashMap<Child, RestartBudget>,
    shutting_down: bool,
}

impl Actor for Root {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = Arc<DaemonCtx>;

    async fn pre_start(
        &self,
        myself: ActorRef<RootMsg>,
        ctx: Arc<DaemonCtx>,
    ) -> Result<RootState, ActorProcessingErr> {
        let mut state = RootState {
            ctx,
            children: HashMap::new(),
            budgets: HashMap::new(),
            shutting_down: false,
        };
        state.ctx.set_root(myself.clone());
        for child in [
            Child::Events,
            Child::Runs,
            Child::Registry,
            Child::Agents,
            Child::Auth,
            Child::Board,
            Child::Chats,
            Child::Listener,
        ] {
            state.start(&myself, child).await?;
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<RootMsg>,
        msg: RootMsg,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("root"), async move {
            match msg {
                RootMsg::Shutdown { immediate } => {
                    let first = !state.shutting_down;
                    state.shutting_down = true;
                    let Some(runs) = state.ctx.runs() else {
                        myself.stop(None);
                        return Ok(());
                    };
                    info!(immediate, "shutting down: stopping every run");
                    let me = myself.clone();
                    tokio::spawn(async move {
                        let _ = ractor::call!(runs, |reply| RunsMsg::Shutdown { immediate, reply });
                        let _ = me.cast(RootMsg::RunsStopped);
                    });
                    if immediate || !first {
                        let me = myself.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(IMMEDIATE_SHUTDOWN_LIMIT).await;
                            let _ = me.cast(RootMsg::RunsStopped);
                        });
                    }
                }
                RootMsg::RunsStopped => {
                    info!("every run has ended");
                    myself.stop(Some("shut down".into()));
                }
            }
            Ok(())
        })
        .await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RootMsg>,
        event: SupervisionEvent,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, err.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                (cell, reason.unwrap_or_else(|| "stopped".into()))
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {
                return Ok(());
            }
        };
        state.on_child_down(&myself, &cell, why).await
    }
}

impl RootState {
    async fn start(
        &mut self,
        myself: &ActorRef<RootMsg>,
        child: Child,
    ) -> Result<(), ActorProcessingErr> {
        let cell: ActorCell = match child {
            Child::Events => {
                let storage = Some(self.ctx.writer.health().watch());
                let (a, _) = Actor::spawn_linked(None, Events, storage, myself.get_cell()).await?;
                self.ctx.events.set(a.clone());
                a.get_cell()
            }
            Child::Runs => {
                let ctx = self.ctx.runs_context();
                let (a, _) = Actor::spawn_linked(None, Runs, ctx, myself.get_cell()).await?;
                self.ctx.set_runs(a.clone());
                a.get_cell()
            }
            Child::Registry => {
                let ctx = self.ctx.registry_context();
                let (a, _) = Actor::spawn_linked(None, Registry, ctx, myself.get_cell()).await?;
                self.ctx.set_registry(a.clone());
                a.get_cell()
            }
            Child::Agents => {
                let ctx = self.ctx.agents_context();
                let (a, _) = Actor::spawn_linked(None, Agents, ctx, myself.get_cell()).await?;
                self.ctx.agents.set(a.clone());
                a.get_cell()
            }
            Child::Auth => {
                let ctx = self.ctx.auth.clone();
                let (a, _) = Actor::spawn_linked(None, Auth, ctx, myself.get_cell()).await?;
                self.ctx.auth.auth.set(a.clone());
                a.get_cell()
            }
            Child::Board => {
                let ctx = self.ctx.board_context();
                let (a, _) = Actor::spawn_linked(None, Board, ctx, myself.get_cell()).await?;
                self.ctx.board.set(a.clone());
                a.get_cell()
            }
            Child::Chats => {
                if self.ctx.mcp_url.get().is_none() {
                    // bosun's own MCP server, once for the daemon's life.
                    let (url, task) = bosun_lead::server::serve(self.ctx.mcp_context()).await?;
                    let _ = self.ctx.mcp_url.set(url);
                    self.ctx.set_mcp_server(task);
                }
                let ctx = self.ctx.chats_context();
                let (a, _) = Actor::spawn_linked(None, Chats, ctx, myself.get_cell()).await?;
                self.ctx.chats.set(a.clone());
                a.get_cell()
            }
            Child::Listener => {
                let (a, _) =
                    Actor::spawn_linked(None, Listener, self.ctx.clone(), myself.get_cell())
                        .await?;
                a.get_cell()
            }
        };
        self.children.insert(cell.get_id(), child);
        Ok(())
    }

    async fn on_child_down(
        &mut self,
        myself: &ActorRef<RootMsg>,
        cell: &ActorCell,
        why: String,
    ) -> Result<(), ActorProcessingErr> {
        let Some(child) = self.children.remove(&cell.get_id()) else {
            return Ok(());
        };
        if self.shutting_down {
            return Ok(());
        }
        warn!(?child, %why, "a part of bosund went down");
        let budget = self
            .budgets
            .entry(child)
            .or_insert_with(|| RestartBudget::new(RestartPolicy::DEFAULT));
        match budget.on_failure(Instant::now()) {
            Verdict::Restart { n } => {
                info!(?child, restart = n, "restarting");
                if let Err(e) = self.start(myself, child).await {
                    error!(?child, error = %e, "could not restart");
                    self.give_up(myself, format!("{child:?} could not be restarted: {e}"));
                }
            }
            Verdict::GiveUp => {
                let reason = format!("{child:?} {}", budget.give_up_reason(&why));
                self.give_up(myself, reason);
            }
        }
        Ok(())
    }

    /// A part of the daemon cannot be kept running: record why and exit. Runners keep their runs
    /// going and reconnect to the next bosund.
    fn give_up(&mut self, myself: &ActorRef<RootMsg>, reason: String) {
        error!(%reason, "bosund gives up");
        self.ctx.record_root_failure(reason);
        self.shutting_down = true;
        myself.stop(Some("gave up".into()));
    }
}
