//! The Agents actor: the one place agents are added, changed, switched and removed, and where a
//! run's findings (its servers' states, the tools it had) are kept on its agent, so two changes
//! never race. Reads go straight to the store.
//!
//! Every change is checked whole before anything is written (a refused `set` of five switches
//! changes none of them), secret values go to the keychain before the record that names them,
//! and a failure part-way puts back what was changed.
//!
//! This file holds the actor, the reads and the smaller changes (remove, what a run found, a
//! server's verdicts); [`add_edit`] adds and changes agents, [`switches`] parses and applies
//! `bosun agent set`, [`checks`] checks a record whole, and [`view`] shows an agent.

mod add_edit;
mod checks;
mod detail;
mod switches;

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_kit::edit::Edit;
use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_kit::offload::blocking;
use bosun_mcp::record::{ServerReads, ServerRecord};
use bosun_shared::agents::CliKind;
use bosun_shared::mcp::SecretLine;
use bosun_shared::time::TimeCap;
use bosun_shared::{AgentId, Timestamp};
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use self::add_edit::{add, delete_values, edit};
pub use self::detail::{AgentDetail, ServerSeen};
use self::detail::{detail_of, servers_seen};
use self::switches::set;
use crate::AgentsError;
use crate::record::{AgentReads, AgentRecord, LastRun};

/// What the Agents actor works with.
#[derive(Clone)]
pub struct AgentsContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub keychain: Keychain,
    /// Sign-ins: a run gets a fresh token for each signed-in server.
    pub auth: bosun_auth::AuthContext,
    /// The CLIs' sign-in checks that passed lately, shared by every launch.
    pub logins: super::login::LoginChecks,
}

/// How long a run's end, or an ask for a CLI's tools, waits for the agents actor to keep what it
/// found (milliseconds). The agents actor calls no run and no ask, so it cannot be waiting for
/// them; the limit only bounds a busy store.
pub const SAVE_LIMIT_MS: u64 = 5_000;

/// A change to an agent: what is `None` or [`Edit::Keep`] stays. Every field with rules is
/// checked where the request is read (a time cap over a week never gets here).
#[derive(Clone, Debug, Default)]
pub struct AgentEdit {
    /// Its name or the start of its id.
    pub agent: String,
    pub name: Option<String>,
    pub role: Option<String>,
    pub cli: Option<CliKind>,
    pub instructions: Option<String>,
    pub permission_mode: Edit<String>,
    pub allowed_commands: Option<Vec<String>>,
    pub time_cap: Edit<TimeCap>,
    /// The most bytes of output kept per run.
    pub max_output: Edit<NonZeroU64>,
    pub cwd: Option<PathBuf>,
    /// A command agent's program and its arguments.
    pub command: Option<Vec<String>>,
    pub set_env: Vec<(String, String)>,
    pub remove_env: Vec<String>,
    pub set_secret_env: Vec<SecretLine>,
    pub remove_secret_env: Vec<String>,
    pub model: Edit<String>,
    /// Replaces every `-c key=value` of a Codex agent.
    pub codex_config: Option<Vec<(String, String)>>,
    /// Paused: the board starts no run of it.
    pub paused: Option<bool>,
}

/// A new agent, as read where the request arrived: its time cap and output cap in their
/// ranges, an empty permission mode or model already left out.
#[derive(Clone, Debug)]
pub struct NewAgent {
    pub name: String,
    /// `worker` when absent.
    pub role: Option<String>,
    pub cli: CliKind,
    pub instructions: Option<String>,
    pub permission_mode: Option<String>,
    pub allowed_commands: Vec<String>,
    pub time_cap: Option<TimeCap>,
    /// The most bytes of output kept per run.
    pub max_output: Option<NonZeroU64>,
    /// The folder its runs work in; absolute.
    pub cwd: PathBuf,
    /// A command agent's program and its arguments.
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<SecretLine>,
    /// The CLI's own default when absent.
    pub model: Option<String>,
    /// Codex only: `-c key=value` settings.
    pub codex_config: Vec<(String, String)>,
}

pub enum AgentsMsg {
    Add {
        params: NewAgent,
        reply: RpcReplyPort<Result<AgentDetail, AgentsError>>,
    },
    Edit {
        params: AgentEdit,
        reply: RpcReplyPort<Result<AgentDetail, AgentsError>>,
    },
    /// Switches as `key=value`, all applied or none.
    Set {
        agent: String,
        settings: Vec<String>,
        reply: RpcReplyPort<Result<AgentDetail, AgentsError>>,
    },
    Remove {
        agent: String,
        reply: RpcReplyPort<Result<AgentDetail, AgentsError>>,
    },
    /// A run of the agent ended: keep what it found, and answer once it is saved (the run
    /// records its end only then, so whoever sees the run ended finds it on the agent).
    RunEnded {
        agent: AgentId,
        last: LastRun,
        saved: RpcReplyPort<()>,
    },
    /// The CLI was asked for its tools: keep them as the ones seen, and answer once they are
    /// saved (the answer to the ask waits for it, so `agent show` right after finds them).
    ToolsSeen {
        agent: AgentId,
        tools: Vec<String>,
        saved: RpcReplyPort<()>,
    },
    /// A server was removed or signed out of (`renamed_to` none): every agent forgets the
    /// verdicts saved for its tools, so no old "always allow" outlives it. Renamed: the
    /// verdicts follow the new name.
    ServerVerdicts {
        server: String,
        renamed_to: Option<String>,
        reply: RpcReplyPort<Result<(), AgentsError>>,
    },
}

pub struct Agents;

/// Where runs report to: the current Agents actor.
pub type AgentsHandle = bosun_kit::handle::ActorHandle<AgentsMsg>;

impl Actor for Agents {
    type Msg = AgentsMsg;
    type State = AgentsContext;
    type Arguments = AgentsContext;

    async fn pre_start(
        &self,
        _myself: ActorRef<AgentsMsg>,
        ctx: AgentsContext,
    ) -> Result<AgentsContext, ActorProcessingErr> {
        Ok(ctx)
    }

    async fn handle(
        &self,
        _myself: ActorRef<AgentsMsg>,
        msg: AgentsMsg,
        ctx: &mut AgentsContext,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("agents"), async move {
        match msg {
            AgentsMsg::Add { params, reply } => {
                let _ = reply.send(add(ctx, params).await);
            }
            AgentsMsg::Edit { params, reply } => {
                let _ = reply.send(edit(ctx, params).await);
            }
            AgentsMsg::Set {
                agent,
                settings,
                reply,
            } => {
                let _ = reply.send(set(ctx, &agent, &settings).await);
            }
            AgentsMsg::Remove { agent, reply } => {
                let _ = reply.send(remove(ctx, &agent).await);
            }
            AgentsMsg::RunEnded { agent, last, saved } => {
                if let Err(e) = keep_last_run(ctx, agent, |l| *l = last).await {
                    warn!(agent = %agent, error = %e, "could not keep what a run found on its agent");
                }
                let _ = saved.send(());
            }
            AgentsMsg::ToolsSeen {
                agent,
                tools,
                saved,
            } => {
                if let Err(e) = keep_last_run(ctx, agent, |l| l.tools_seen = tools).await {
                    warn!(agent = %agent, error = %e, "could not keep the tools seen on an agent");
                }
                let _ = saved.send(());
            }
            AgentsMsg::ServerVerdicts {
                server,
                renamed_to,
                reply,
            } => {
                let _ = reply.send(server_verdicts(ctx, &server, renamed_to.as_deref()).await);
            }
        }
        Ok(())
        })
        .await
    }
}

/// The agent named (by name, or id), or a plain not-found.
pub async fn find(store: &Store, agent: &str) -> Result<AgentRecord, AgentsError> {
    let (store, key) = (store.clone(), agent.to_string());
    blocking(move || store.find_agent(&key))
        .await??
        .ok_or_else(|| {
            AgentsError::not_found(format!(
                "there is no agent `{agent}`; `bosun agent list` shows them"
            ))
        })
}

async fn server_records(store: &Store) -> Result<Vec<ServerRecord>, AgentsError> {
    let store = store.clone();
    blocking(move || store.servers())
        .await?
        .map_err(AgentsError::from)
}

/// Every server, as the agents' switches see them.
async fn seen_servers(store: &Store) -> Result<Arc<[ServerSeen]>, AgentsError> {
    let store = store.clone();
    blocking(move || Ok(servers_seen(&store, store.servers()?))).await?
}

/// Every agent, with what the registry sees beside each.
pub async fn list(ctx: &AgentsContext) -> Result<Vec<AgentDetail>, AgentsError> {
    let store = ctx.store.clone();
    let agents = blocking(move || store.agents()).await??;
    let servers = seen_servers(&ctx.store).await?;
    let keychain = ctx.keychain.clone();
    Ok(blocking(move || {
        agents
            .into_iter()
            .map(|a| detail_of(&keychain, a, servers.clone()))
            .collect()
    })
    .await?)
}

/// One agent, with what the registry sees beside it.
pub async fn show(ctx: &AgentsContext, agent: &str) -> Result<AgentDetail, AgentsError> {
    let rec = find(&ctx.store, agent).await?;
    detail(ctx, rec).await
}

async fn detail(ctx: &AgentsContext, rec: AgentRecord) -> Result<AgentDetail, AgentsError> {
    let servers = seen_servers(&ctx.store).await?;
    let keychain = ctx.keychain.clone();
    Ok(blocking(move || detail_of(&keychain, rec, servers)).await?)
}

fn bad(m: impl std::fmt::Display) -> AgentsError {
    AgentsError::invalid(m)
}

/// How long a call waits for the person when the agent does not say (then it is denied).
pub const DEFAULT_APPROVAL_WAIT_MS: u64 = 30_000;

/// Every agent's verdicts on the tools of `server`: forgotten, or moved to its new name. All
/// the agents changed are committed together.
async fn server_verdicts(
    ctx: &AgentsContext,
    server: &str,
    renamed_to: Option<&str>,
) -> Result<(), AgentsError> {
    let store = ctx.store.clone();
    let agents = blocking(move || store.agents()).await??;
    let prefix = format!("mcp.{server}.");
    let mut changes = Vec::new();
    for mut rec in agents {
        let keys: Vec<String> = rec
            .approvals
            .verdicts
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        if keys.is_empty() {
            continue;
        }
        for key in keys {
            if let Some(verdict) = rec.approvals.verdicts.remove(&key)
                && let Some(to) = renamed_to
            {
                let tool = &key[prefix.len()..];
                rec.approvals
                    .verdicts
                    .insert(format!("mcp.{to}.{tool}"), verdict);
            }
        }
        rec.updated_at = Timestamp::now();
        changes.push(bosun_store::writer::Change::put(&rec));
    }
    if !changes.is_empty() {
        let n = changes.len();
        ctx.writer.commit(changes).await?;
        info!(
            server,
            agents = n,
            renamed = renamed_to.is_some(),
            "verdicts on a server's tools changed with it"
        );
    }
    Ok(())
}

async fn remove(ctx: &AgentsContext, agent: &str) -> Result<AgentDetail, AgentsError> {
    let rec = find(&ctx.store, agent).await?;
    let keys: Vec<String> = rec
        .secret_env
        .iter()
        .map(|n| agent_env_key(rec.id, n))
        .collect();
    let shown = detail(ctx, rec.clone()).await?;
    // Secrets first: an agent is never removed while its secrets stay behind unnoticed.
    delete_values(&ctx.keychain, keys)
        .await
        .map_err(|e| AgentsError::NothingRemoved(Box::new(e)))?;
    ctx.writer.delete::<AgentRecord>(&rec.id).await?;
    info!(agent = %rec.name, "agent removed");
    Ok(shown)
}

async fn keep_last_run(
    ctx: &AgentsContext,
    id: AgentId,
    change: impl FnOnce(&mut LastRun),
) -> Result<(), StoreError> {
    let store = ctx.store.clone();
    let key = id.to_string();
    let current = tokio::task::spawn_blocking(move || store.find_agent(&key))
        .await
        .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    let Some(mut rec) = current else {
        return Ok(());
    };
    change(rec.last_run.get_or_insert_with(LastRun::default));
    ctx.writer.put(&rec).await
}
