//! Answers to a UI's requests, and the lookups they share (a run named by an id prefix, the
//! freshest view of a run).

use std::sync::Arc;

use bosun_actors::agents::AgentsError;
use bosun_actors::agents::registry::{self as agents, AgentsMsg};
use bosun_actors::agents::{builtin, launch};
use bosun_actors::auth::signin;
use bosun_actors::board::BoardRequest;
use bosun_actors::error::Starting;
use bosun_actors::lead::ChatsError;
use bosun_actors::lead::chats::ChatsMsg;
use bosun_actors::mcp::RegistryError;
use bosun_actors::mcp::registry::{self, RegistryMsg};
use bosun_actors::mcp::{adopt, look};
use bosun_actors::runs::follow::blocking;
use bosun_actors::runs::run_actor::RunMsg;
use bosun_actors::runs::{RunSpec, RunsMsg};
use bosun_actors::store::StoreError;
use bosun_shared::RunId;
use bosun_shared::protocol::runner::StopOrder;
use bosun_shared::protocol::ui::{DaemonStatus, Request, Response, RunView};
use bosun_shared::protocol::{ErrorCode, PROTOCOL_VERSION, WireError};
use tracing::error;

use crate::control::RootMsg;
use crate::ctx::DaemonCtx;
use crate::wire::{self, Failure};

/// Answers a request that needs no subscription.
pub async fn answer(ctx: &Arc<DaemonCtx>, request: Request) -> Result<Response, Failure> {
    match request {
        Request::StartRun(params) => start(ctx, RunSpec::plain(params)).await,
        Request::AgentAdd(params) => agents_call(ctx, |reply| AgentsMsg::Add { params, reply })
            .await
            .map(|v| Response::Agent(Box::new(v))),
        Request::AgentEdit(params) => agents_call(ctx, |reply| AgentsMsg::Edit { params, reply })
            .await
            .map(|v| Response::Agent(Box::new(v))),
        Request::AgentSet { agent, settings } => agents_call(ctx, |reply| AgentsMsg::Set {
            agent,
            settings,
            reply,
        })
        .await
        .map(|v| Response::Agent(Box::new(v))),
        Request::AgentRemove { agent } => {
            agents_call(ctx, |reply| AgentsMsg::Remove { agent, reply })
                .await
                .map(|v| Response::Agent(Box::new(v)))
        }
        Request::AgentShow { agent } => agents::show(&ctx.agents_context(), &agent)
            .await
            .map_err(Failure::from)
            .map(|v| Response::Agent(Box::new(v))),
        Request::AgentList => agents::list(&ctx.agents_context())
            .await
            .map_err(Failure::from)
            .map(|agents| Response::Agents { agents }),
        Request::AgentRun { agent, prompt } => {
            let spec = launch::prepare(&ctx.agents_context(), &agent, &prompt).await?;
            start(ctx, spec.into()).await
        }
        Request::Board => board(ctx, BoardRequest::Show).await,
        Request::ColumnAdd(p) => board(ctx, BoardRequest::AddColumn(p)).await,
        Request::ColumnSet(p) => board(ctx, BoardRequest::SetColumn(p)).await,
        Request::CardAdd(params) => {
            board(
                ctx,
                BoardRequest::AddCard {
                    params,
                    taint: None,
                },
            )
            .await
        }
        Request::CardEdit(params) => {
            board(
                ctx,
                BoardRequest::EditCard {
                    params,
                    taint: None,
                },
            )
            .await
        }
        Request::CardShow { card } => board(ctx, BoardRequest::ShowCard(card)).await,
        Request::BoardLimit { limit } => board(ctx, BoardRequest::SetLimit(limit)).await,
        Request::NoteList => board(ctx, BoardRequest::Notes).await,
        Request::NoteShow { path } => board(ctx, BoardRequest::Note(path)).await,
        Request::NoteWrite {
            path,
            text,
            base_version,
            force,
        } => {
            board(
                ctx,
                BoardRequest::WriteNote {
                    path,
                    text,
                    base_version,
                    force,
                },
            )
            .await
        }
        Request::ChatNew { agent } => chats_call(ctx, |reply| ChatsMsg::New { agent, reply })
            .await
            .map(|c| Response::Chat(Box::new(c))),
        Request::ChatSend {
            chat,
            message,
            files,
        } => chats_call(ctx, |reply| ChatsMsg::Send {
            chat,
            message,
            files,
            reply,
        })
        .await
        .map(|(chat, run)| Response::AnswerStarted {
            chat: Box::new(chat),
            run: Box::new(run),
        }),
        Request::ChatShow { chat } => chats_call(ctx, |reply| ChatsMsg::Show { chat, reply })
            .await
            .map(|c| Response::Chat(Box::new(c))),
        Request::ChatList => chats_call(ctx, |reply| ChatsMsg::List { reply })
            .await
            .map(|chats| Response::Chats { chats }),
        Request::Inbox { chat } => chats_call(ctx, |reply| ChatsMsg::Inbox { chat, reply })
            .await
            .map(|actions| Response::Pending { actions }),
        Request::Approve { action } => chats_call(ctx, |reply| ChatsMsg::Approve { action, reply })
            .await
            .map(|actions| Response::Pending { actions }),
        Request::ApproveAll { chat } => {
            chats_call(ctx, |reply| ChatsMsg::ApproveAll { chat, reply })
                .await
                .map(|actions| Response::Pending { actions })
        }
        Request::Discard { action } => chats_call(ctx, |reply| ChatsMsg::Discard { action, reply })
            .await
            .map(|actions| Response::Pending { actions }),
        Request::AgentTools { agent, ask } => {
            builtin::tools(&ctx.agents_context(), ctx.agents.get(), &agent, ask)
                .await
                .map_err(Failure::from)
                .map(|v| Response::BuiltinTools(Box::new(v)))
        }
        Request::ListRuns { all } => list_runs(ctx, all)
            .await
            .map_err(Failure::from)
            .map(|runs| Response::Runs { runs }),
        Request::GetRun { run } => {
            let id = resolve(ctx, &run).await?;
            Ok(Response::Run(Box::new(run_view(ctx, id).await?)))
        }
        Request::StopRun { run } => {
            let id = resolve(ctx, &run).await?;
            let Some(entry) = ctx.live.get(id) else {
                let view = run_view(ctx, id).await?;
                return Err(WireError::conflict(format!(
                    "run {} has already ended ({})",
                    view.short_id,
                    view.outcome.map(|o| o.to_string()).unwrap_or_default()
                ))
                .into());
            };
            let order = StopOrder {
                reason: "stopped by the person".into(),
                immediate: false,
            };
            ractor::call!(entry.actor, |reply| RunMsg::Stop {
                order,
                reply: Some(reply)
            })
            .map_err(|_| WireError::conflict(format!("run {} has just ended", id.short())))?
            .map(|v| Response::Run(Box::new(v)))
            .map_err(Failure::from)
        }
        Request::DaemonStatus => {
            let shutting_down = match ctx.runs() {
                Some(runs) => {
                    ractor::call!(runs, |reply| RunsMsg::ShuttingDown { reply }).unwrap_or(true)
                }
                None => false,
            };
            Ok(Response::Status(DaemonStatus {
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol_version: PROTOCOL_VERSION,
                state_dir: ctx.dirs.root().to_path_buf(),
                started_at: ctx.started_at,
                live_runs: ctx.live.len(),
                attached_runners: ctx.live.attached(),
                shutting_down,
            }))
        }
        Request::DaemonStop => {
            let (root, runs) = (ctx.root(), ctx.runs());
            let (Some(root), Some(runs)) = (root, runs) else {
                return Err(starting_up());
            };
            let immediate =
                ractor::call!(runs, |reply| RunsMsg::ShuttingDown { reply }).unwrap_or(false);
            let _ = root.cast(RootMsg::Shutdown { immediate });
            Ok(Response::Done)
        }
        Request::McpAdd(params) => registry_call(ctx, |reply| RegistryMsg::Add { params, reply })
            .await
            .map(|v| Response::Server(Box::new(v))),
        Request::McpEdit(params) => registry_call(ctx, |reply| RegistryMsg::Edit { params, reply })
            .await
            .map(|v| Response::Server(Box::new(v))),
        Request::McpRename { server, new_name } => {
            registry_call(ctx, |reply| RegistryMsg::Rename {
                server,
                new_name,
                reply,
            })
            .await
            .map(|v| Response::Server(Box::new(v)))
        }
        Request::McpRemove { server } => {
            registry_call(ctx, |reply| RegistryMsg::Remove { server, reply })
                .await
                .map(|v| Response::Server(Box::new(v)))
        }
        Request::McpList => registry::list(&ctx.registry_context())
            .await
            .map_err(Failure::from)
            .map(|servers| Response::Servers { servers }),
        Request::McpShow { server } => registry::show(&ctx.registry_context(), &server)
            .await
            .map_err(Failure::from)
            .map(|v| Response::Server(Box::new(v))),
        Request::McpTools {
            server,
            cached: true,
        } => look::last_listing(&ctx.registry_context(), &server)
            .await
            .map_err(Failure::from)
            .map(|l| Response::Tools(Box::new(l))),
        Request::McpTools {
            server,
            cached: false,
        } => {
            let registry = ctx.registry().ok_or_else(starting_up)?;
            look::list_tools(&ctx.registry_context(), &registry, &server)
                .await
                .map_err(Failure::from)
                .map(|l| Response::Tools(Box::new(l)))
        }
        Request::McpInspect { server } => look::inspect(&ctx.registry_context(), &server)
            .await
            .map_err(Failure::from)
            .map(|v| Response::Inspect(Box::new(v))),
        Request::McpCall { server, tool, args } => {
            look::call(&ctx.registry_context(), &server, &tool, args)
                .await
                .map_err(Failure::from)
                .map(|v| Response::Call(Box::new(v)))
        }
        Request::McpImportScan(scan) => {
            let found = tokio::task::spawn_blocking(move || adopt::find(&scan))
                .await
                .map_err(|e| WireError::internal(e.to_string()))??;
            let existing = registry::list(&ctx.registry_context()).await?;
            Ok(Response::ImportCandidates {
                candidates: found
                    .candidates
                    .iter()
                    .map(|c| adopt::view(c, &existing))
                    .collect(),
                problems: found.problems,
            })
        }
        Request::McpImport(params) => {
            let registry = ctx.registry().ok_or_else(starting_up)?;
            adopt::import(&ctx.registry_context(), &registry, params)
                .await
                .map_err(Failure::from)
                .map(|servers| Response::Imported { servers })
        }
        Request::McpSignIn { server } => {
            let rc = ctx.registry_context();
            let rec = registry::find(&ctx.store, &server).await?;
            let (_, headers) = registry::secret_lines(&ctx.keychain, &rec).await?;
            let started = signin::start(&rc.auth, &rec, headers).await?;
            Ok(Response::SignInStarted {
                attempt: started.attempt,
                url: started.url,
                wait_secs: started.wait.as_secs(),
            })
        }
        Request::McpSignInFinish { attempt } => {
            let server = signin::finish(&ctx.auth, attempt).await?;
            registry::show(&ctx.registry_context(), &server.to_string())
                .await
                .map_err(Failure::from)
                .map(|v| Response::Server(Box::new(v)))
        }
        Request::McpSignOut { server } => registry::sign_out(&ctx.registry_context(), &server)
            .await
            .map_err(Failure::from)
            .map(|v| Response::Server(Box::new(v))),
        Request::FollowLog(_) | Request::Unfollow { .. } | Request::SubscribeRuns => {
            Err(WireError::internal("this request is handled by the session").into())
        }
    }
}

/// Asks the Chats actor (chats, answers, and every decision on a pending action).
async fn chats_call<T: Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    msg: impl FnOnce(ractor::RpcReplyPort<Result<T, ChatsError>>) -> ChatsMsg,
) -> Result<T, Failure> {
    let chats = ctx.chats.get().ok_or_else(starting_up)?;
    Ok(chats
        .call(msg, None)
        .await
        .map_err(|e| WireError::internal(format!("the chats did not answer: {e}")))?
        .success_or(WireError::internal("the chats did not answer"))??)
}

/// Asks the Board actor (every change to the board and the notes goes through it).
async fn board(ctx: &Arc<DaemonCtx>, req: BoardRequest) -> Result<Response, Failure> {
    let answer = bosun_actors::board::ask(&ctx.board, req).await?;
    Ok(wire::board_response(answer))
}

/// Starts a run the one way there is: [`bosun_actors::runs::start`].
async fn start(ctx: &Arc<DaemonCtx>, spec: RunSpec) -> Result<Response, Failure> {
    let run = bosun_actors::runs::start(ctx.runs_handle(), spec).await?;
    Ok(Response::Run(Box::new(run)))
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

fn starting_up() -> Failure {
    Starting.into()
}

fn store_error(e: StoreError) -> WireError {
    error!(error = %e, "a store read failed");
    WireError::internal(format!("bosund could not read its store: {e}"))
}

/// The run a person named by its id or a unique prefix of it.
pub async fn resolve(ctx: &Arc<DaemonCtx>, text: &str) -> Result<RunId, WireError> {
    let prefix = text.trim().to_ascii_lowercase();
    if prefix.is_empty() {
        return Err(WireError::bad_request(
            "no run given; name it by its id or the start of it",
        ));
    }
    if let Ok(id) = prefix.parse::<RunId>()
        && ctx.live.get(id).is_some()
    {
        return Ok(id);
    }
    let p = prefix.clone();
    let ids = blocking(&ctx.store, move |s| s.run_ids_with_prefix(&p, 3))
        .await
        .map_err(store_error)?;
    match ids.as_slice() {
        [] => Err(WireError::not_found(format!(
            "no run has an id starting with `{prefix}`; `bosun ps --all` lists every run"
        ))),
        [one] => Ok(*one),
        [a, b, ..] => Err(WireError::new(
            ErrorCode::Ambiguous,
            format!(
                "`{prefix}` is the start of more than one run's id ({}, {}{}); type more of it",
                a.short(),
                b.short(),
                if ids.len() > 2 { ", …" } else { "" }
            ),
        )),
    }
}

/// A run as it is now: from its live snapshot, or from the store once it is over.
pub async fn run_view(ctx: &Arc<DaemonCtx>, id: RunId) -> Result<RunView, WireError> {
    if let Some(e) = ctx.live.get(id) {
        return Ok(e.record.view(e.hub.state().received));
    }
    let rec = blocking(&ctx.store, move |s| s.run(id))
        .await
        .map_err(store_error)?;
    rec.map(|r| r.view(r.last_seq))
        .ok_or_else(|| WireError::not_found(format!("no run {id}")))
}

async fn list_runs(ctx: &Arc<DaemonCtx>, all: bool) -> Result<Vec<RunView>, WireError> {
    let mut views: Vec<RunView> = if all {
        let records = blocking(&ctx.store, |s| s.runs())
            .await
            .map_err(store_error)?;
        records
            .into_iter()
            .map(|r| match ctx.live.get(r.id) {
                Some(e) => e.record.view(e.hub.state().received),
                None => r.view(r.last_seq),
            })
            .collect()
    } else {
        ctx.live
            .entries()
            .into_iter()
            .map(|e| e.record.view(e.hub.state().received))
            .collect()
    };
    views.sort_by_key(|v| (v.created_at, v.id));
    Ok(views)
}
