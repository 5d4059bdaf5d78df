//! The Agents actor: the one place agents are added, changed, switched and removed, and where a
//! run's findings (its servers' states, the tools it had) are kept on its agent, so two changes
//! never race. Reads go straight to the store.
//!
//! Every change is checked whole before anything is written (a refused `set` of five switches
//! changes none of them), secret values go to the keychain before the record that names them,
//! and a failure part-way puts back what was changed.

use crate::record::AgentReads;
use bosun_mcp::record::ServerReads;
use std::collections::{BTreeSet, HashSet};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::AgentsError;
use bosun_shared::agents::{
    CliKind, MAX_INSTRUCTIONS, MAX_SECRET_VALUE, WebFetch, check_agent_name, check_allowed_command,
    secret_too_long,
};
use bosun_shared::approvals::{ApprovalMode, ToolKey, Verdict};
use bosun_shared::placement::Placement;
use bosun_shared::protocol::agents::{
    AgentParams, AgentView, ApprovalsView, LastRunView, ServerSwitchView, SwitchesView,
    ToolSwitchView, WorkspaceView,
};
use bosun_shared::protocol::mcp::{LineView, SecretLine};
use bosun_shared::time::TimeCap;
use bosun_shared::usage::Budget;
use bosun_shared::{AgentId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use super::catalog;
use super::record::{
    AgentRecord, ApprovalSettings, LastRun, ServerSwitch, Switches, ToolSelection,
    WorkspaceSettings,
};
use bosun_kit::edit::Edit;
use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_kit::offload::blocking;
use bosun_mcp::browser;
use bosun_mcp::record::ServerRecord;
use bosun_mcp::tools;
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};

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

pub enum AgentsMsg {
    Add {
        params: AgentParams,
        reply: RpcReplyPort<Result<AgentView, AgentsError>>,
    },
    Edit {
        params: AgentEdit,
        reply: RpcReplyPort<Result<AgentView, AgentsError>>,
    },
    /// Switches as `key=value`, all applied or none.
    Set {
        agent: String,
        settings: Vec<String>,
        reply: RpcReplyPort<Result<AgentView, AgentsError>>,
    },
    Remove {
        agent: String,
        reply: RpcReplyPort<Result<AgentView, AgentsError>>,
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

async fn servers(store: &Store) -> Result<Vec<ServerRecord>, AgentsError> {
    let store = store.clone();
    blocking(move || store.servers())
        .await?
        .map_err(AgentsError::from)
}

/// Every agent as the UI shows it.
pub async fn list(ctx: &AgentsContext) -> Result<Vec<AgentView>, AgentsError> {
    let store = ctx.store.clone();
    let agents = blocking(move || store.agents()).await??;
    let servers = servers(&ctx.store).await?;
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || {
        agents
            .iter()
            .map(|a| view_of(&keychain, &store, a, &servers))
            .collect()
    })
    .await?)
}

/// One agent as the UI shows it.
pub async fn show(ctx: &AgentsContext, agent: &str) -> Result<AgentView, AgentsError> {
    let rec = find(&ctx.store, agent).await?;
    view(ctx, rec).await
}

async fn view(ctx: &AgentsContext, rec: AgentRecord) -> Result<AgentView, AgentsError> {
    let servers = servers(&ctx.store).await?;
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&keychain, &store, &rec, &servers)).await?)
}

fn view_of(
    keychain: &Keychain,
    store: &Store,
    rec: &AgentRecord,
    servers: &[ServerRecord],
) -> AgentView {
    let mcp = server_switches(store, rec, servers);
    let browser_on = servers
        .iter()
        .find(|s| s.browser.is_some())
        .and_then(|s| rec.switches.mcp.get(&s.id))
        .is_some_and(|s| s.on);
    AgentView {
        id: rec.id,
        name: rec.name.clone(),
        role: rec.role.clone(),
        cli: rec.cli,
        instructions: rec.instructions.clone(),
        permission_mode: rec.permission_mode.clone(),
        allowed_commands: rec.allowed_commands.clone(),
        time_cap_ms: rec.time_cap_ms,
        max_output: rec.max_output,
        placement: rec.placement.clone(),
        cwd: rec.cwd.clone(),
        command: rec.command.clone(),
        env: rec.env.clone(),
        secret_env: rec
            .secret_env
            .iter()
            .map(|n| LineView {
                name: n.clone(),
                saved: keychain
                    .get(&agent_env_key(rec.id, n))
                    .ok()
                    .flatten()
                    .is_some(),
            })
            .collect(),
        model: rec.model.clone(),
        codex_config: rec.codex_config.clone(),
        switches: SwitchesView {
            mcp,
            web_search: rec.switches.web_search,
            web_fetch: rec.switches.web_fetch.clone(),
            browser: browser_on,
            browser_insecure_certs: rec.switches.browser_insecure_certs,
            skills: rec.switches.skills,
            builtins: rec.switches.builtins.iter().cloned().collect(),
        },
        workspace: WorkspaceView {
            roots: rec.workspace.roots.clone(),
            unrestricted: rec.workspace.unrestricted,
        },
        approvals: ApprovalsView {
            mode: rec.approvals.mode.to_string(),
            verdicts: rec
                .approvals
                .verdicts
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            wait_ms: rec.approvals.wait_ms.unwrap_or(DEFAULT_APPROVAL_WAIT_MS),
            wait_for_person: rec.approvals.wait_for_person,
        },
        last_run: rec.last_run.as_ref().map(|l| LastRunView {
            run: l.run,
            at: l.at,
            servers: l.servers.clone(),
            tools_seen: l.tools_seen.clone(),
        }),
        warnings: warnings(rec),
        carried_over: rec.carried_over.as_ref().map(|c| c.line()),
        budget: rec.budget,
        paused: rec.paused,
        created_at: rec.created_at,
        updated_at: rec.updated_at,
    }
}

/// The agent's switch of each server and its tools, with what the last run saw of them.
fn server_switches(
    store: &Store,
    rec: &AgentRecord,
    servers: &[ServerRecord],
) -> Vec<ServerSwitchView> {
    let last = rec.last_run.clone().unwrap_or_default();
    let seen: HashSet<&str> = last.tools_seen.iter().map(String::as_str).collect();
    let mut mcp: Vec<ServerSwitchView> = servers
        .iter()
        .map(|s| {
            let switch = rec
                .switches
                .mcp
                .get(&s.id)
                .cloned()
                .unwrap_or_else(ServerSwitch::off);
            let tools = s
                .listing
                .as_ref()
                .map(|l| {
                    l.tools
                        .iter()
                        .map(|t| ToolSwitchView {
                            name: t.name.clone(),
                            on: switch.tool_on(&t.name),
                            risk: tools::view(&s.name, t).assessment.risk,
                            seen_in_last_run: seen.contains(
                                bosun_shared::mcp::full_tool_name(&s.name, &t.name).as_str(),
                            ),
                        })
                        .collect()
                })
                .unwrap_or_default();
            ServerSwitchView {
                server: s.name.clone(),
                server_id: s.id,
                on: switch.on,
                tools,
                listed: s.listing.is_some(),
                sign_in: bosun_mcp::registry::sign_in_view(store, s).map(|v| v.state),
                last_run_state: last
                    .servers
                    .iter()
                    .find(|(name, _)| *name == s.name)
                    .map(|(_, state)| state.clone()),
            }
        })
        .collect();
    // The built-in browser first, as in the person's list of servers.
    mcp.sort_by_key(|s| (s.server != browser::NAME, s.server.clone()));
    mcp
}

/// What the form warns about: npm or npx with an outside source, and switches the agent's CLI
/// cannot keep to.
fn warnings(rec: &AgentRecord) -> Vec<String> {
    let mut out = rec.warnings();
    match (rec.cli, &rec.switches.web_fetch) {
        (CliKind::Gemini, WebFetch::Domains(_)) => out.push(
            "Gemini cannot keep to a list of domains when fetching pages: its runs go without fetching pages".into(),
        ),
        (CliKind::Codex, WebFetch::Any | WebFetch::Domains(_)) => out.push(
            "Codex has no switch of its own for fetching pages: its runs go without it".into(),
        ),
        (CliKind::Command, WebFetch::Any | WebFetch::Domains(_)) => out.push(
            "a command agent's program is not a coding CLI: the web switches do not reach it"
                .into(),
        ),
        (CliKind::Claude | CliKind::Gemini | CliKind::Codex | CliKind::Command, _) => {}
    }
    if rec.cli == CliKind::Gemini && !rec.switches.web_search {
        out.push("Gemini searches the web in every run: its instructions always say that what comes from outside is data".into());
    }
    if rec.cli == CliKind::Command && rec.switches.mcp.values().any(|s| s.on) {
        out.push(
            "a command agent's program is not a coding CLI: its MCP switches do not reach it"
                .into(),
        );
    }
    out
}

fn bad(m: impl std::fmt::Display) -> AgentsError {
    AgentsError::invalid(m)
}

/// Checks an environment line's name and value.
fn check_env_line(name: &str, value: &str) -> Result<(), AgentsError> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(bad(format!(
            "`{name}` is not an environment variable name; use letters, digits and _, not starting with a digit"
        )));
    }
    if name.starts_with("BOSUN_") {
        return Err(bad(format!(
            "{name} starts with BOSUN_, which bosun keeps for itself; choose another name"
        )));
    }
    if value.contains('\0') {
        return Err(bad(format!(
            "the value of {name} has a NUL byte, which no environment can hold"
        )));
    }
    if value.len() > MAX_SECRET_VALUE {
        return Err(bad(secret_too_long(name)));
    }
    Ok(())
}

/// Checks a whole agent record (after a change), saying what is wrong and what to do.
fn check_record(rec: &AgentRecord) -> Result<(), AgentsError> {
    check_agent_name(&rec.name).map_err(bad)?;
    let role = rec.role.trim();
    if role.is_empty() || role.chars().count() > 40 || role.chars().any(char::is_control) {
        return Err(bad(
            "a role is 1 to 40 characters, such as worker, lead, QA or Frontend",
        ));
    }
    if rec.instructions.len() > MAX_INSTRUCTIONS {
        return Err(bad(format!(
            "the instructions are {} KiB; keep them under {}",
            rec.instructions.len() / 1024,
            bosun_shared::size::format_size(MAX_INSTRUCTIONS as u64)
        )));
    }
    if let Some(mode) = &rec.permission_mode {
        rec.cli.check_permission_mode(mode).map_err(bad)?;
    }
    for rule in &rec.allowed_commands {
        check_allowed_command(rule).map_err(bad)?;
    }
    if let Some(ms) = rec.time_cap_ms {
        TimeCap::from_millis(ms).map_err(bad)?;
    }
    check_cwd(&rec.cwd)?;
    match rec.cli {
        CliKind::Command => {
            if rec.command.first().is_none_or(|c| c.trim().is_empty()) {
                return Err(bad(
                    "a command agent needs its program; write it after `--`, such as: bosun agent add NAME --cli command -- ./review.sh",
                ));
            }
        }
        CliKind::Claude | CliKind::Codex | CliKind::Gemini => {
            if !rec.command.is_empty() {
                return Err(bad(format!(
                    "a {} agent runs {}, so it takes no command of its own; use --cli command to run a program of yours",
                    rec.cli, rec.cli
                )));
            }
        }
    }
    if let Some(m) = &rec.model
        && (m.chars().count() > 100 || m.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(bad(format!(
            "`{m}` is not a model name; give one such as sonnet, gpt-5 or gemini-2.5-pro"
        )));
    }
    if !rec.codex_config.is_empty() && rec.cli != CliKind::Codex {
        return Err(bad(format!(
            "Codex settings (--codex-config) are for a codex agent; `{}` runs {}",
            rec.name, rec.cli
        )));
    }
    for (k, v) in &rec.codex_config {
        check_codex_config(k, v)?;
    }
    if rec.switches.skills && !rec.cli.has_skills_switch() {
        return Err(bad(format!(
            "bosun has no checked per-run switch for the slash commands and skills of {}; switch skills off first (`bosun agent set {} skills=off`)",
            rec.cli, rec.name
        )));
    }
    let mut seen = HashSet::new();
    for (k, v) in &rec.env {
        check_env_line(k, v)?;
        if !seen.insert(k.as_str()) {
            return Err(bad(format!("the environment line {k} is given twice")));
        }
    }
    for k in &rec.secret_env {
        check_env_line(k, "")?;
        if !seen.insert(k.as_str()) {
            return Err(bad(format!(
                "{k} is given twice (as a plain and a secret line, or twice); give it once"
            )));
        }
    }
    Ok(())
}

/// The Codex settings an agent may carry: its model and its provider. Everything else (MCP
/// servers, web search, the sandbox, approvals) is bosun's to set from the switches.
const CODEX_KEYS: [&str; 7] = [
    "model",
    "model_provider",
    "model_providers.",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "service_tier",
];

fn check_codex_config(key: &str, value: &str) -> Result<(), AgentsError> {
    let allowed = CODEX_KEYS.iter().any(|k| {
        if k.ends_with('.') {
            key.starts_with(k) && key.len() > k.len()
        } else {
            key == *k
        }
    });
    if !allowed {
        return Err(bad(format!(
            "`{key}` is not a Codex setting an agent may carry; only the model and provider ones (model, model_provider, model_providers.<id>.<key>, model_reasoning_effort, model_reasoning_summary, model_verbosity, service_tier): MCP servers, web search and the sandbox come from the agent's switches"
        )));
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
    {
        return Err(bad(format!("`{key}` is not a Codex setting name")));
    }
    if value.trim().is_empty() || value.contains('\0') || value.contains('\n') {
        return Err(bad(format!(
            "the value of {key} is empty or has a line break; give a TOML value such as \"ollama\""
        )));
    }
    Ok(())
}

fn check_cwd(cwd: &Path) -> Result<(), AgentsError> {
    if !cwd.is_absolute() {
        return Err(bad(format!(
            "the working folder {} is not an absolute path",
            cwd.display()
        )));
    }
    if let Some(why) = bosun_shared::paths::not_a_folder(cwd) {
        return Err(bad(format!(
            "the working folder {} {why}; give a folder with --cwd",
            cwd.display()
        )));
    }
    Ok(())
}

/// Checks the name is free among the agents.
async fn check_name_free(
    ctx: &AgentsContext,
    name: &str,
    except: Option<AgentId>,
) -> Result<(), AgentsError> {
    let store = ctx.store.clone();
    let agents = blocking(move || store.agents()).await??;
    if agents
        .iter()
        .any(|a| a.name == name && Some(a.id) != except)
    {
        return Err(AgentsError::conflict(format!(
            "there is already an agent named `{name}`; choose another name, or change that one with `bosun agent edit {name}`"
        )));
    }
    Ok(())
}

/// Saves secret values in the keychain, all or none.
async fn save_values(
    keychain: &Keychain,
    id: AgentId,
    lines: Vec<SecretLine>,
) -> Result<(), AgentsError> {
    let keychain = keychain.clone();
    let pairs: Vec<(String, String)> = lines
        .into_iter()
        .map(|l| (agent_env_key(id, &l.name), l.value))
        .collect();
    blocking(move || keychain.set_many(&pairs).map_err(AgentsError::from)).await?
}

async fn delete_values(keychain: &Keychain, keys: Vec<String>) -> Result<(), AgentsError> {
    let keychain = keychain.clone();
    blocking(move || keychain.delete_many(&keys).map_err(AgentsError::from)).await?
}

async fn add(ctx: &AgentsContext, p: AgentParams) -> Result<AgentView, AgentsError> {
    let now = Timestamp::now();
    let rec = AgentRecord {
        id: AgentId::new(),
        name: p.name,
        role: p
            .role
            .map(|r| r.trim().to_string())
            .unwrap_or_else(|| "worker".into()),
        cli: p.cli,
        instructions: p.instructions.unwrap_or_default(),
        permission_mode: p.permission_mode.filter(|m| !m.is_empty()),
        allowed_commands: p.allowed_commands,
        time_cap_ms: p.time_cap_ms,
        max_output: p.max_output.filter(|m| *m > 0),
        cwd: p.cwd,
        command: p.command,
        env: p.env,
        secret_env: p.secret_env.iter().map(|l| l.name.clone()).collect(),
        model: p.model.filter(|m| !m.trim().is_empty()),
        codex_config: p.codex_config,
        switches: Switches::default(),
        approvals: ApprovalSettings::default(),
        workspace: WorkspaceSettings::default(),
        budget: Budget::default(),
        paused: false,
        placement: Placement::Local,
        created_at: now,
        updated_at: now,
        last_run: None,
        carried_over: None,
    };
    check_record(&rec)?;
    for l in &p.secret_env {
        check_env_line(&l.name, &l.value)?;
    }
    check_name_free(ctx, &rec.name, None).await?;
    let keys: Vec<String> = rec
        .secret_env
        .iter()
        .map(|n| agent_env_key(rec.id, n))
        .collect();
    save_values(&ctx.keychain, rec.id, p.secret_env).await?;
    if let Err(e) = ctx.writer.put(&rec).await {
        let _ = delete_values(&ctx.keychain, keys).await;
        return Err(AgentsError::from(e));
    }
    info!(agent = %rec.name, id = %rec.id, cli = %rec.cli, "agent added");
    view(ctx, rec).await
}

async fn edit(ctx: &AgentsContext, mut p: AgentEdit) -> Result<AgentView, AgentsError> {
    let mut rec = find(&ctx.store, &p.agent).await?;
    apply_settings(&mut rec, &mut p);
    let stale = edit_env(&mut rec, &p)?;
    check_record(&rec)?;
    check_name_free(ctx, &rec.name, Some(rec.id)).await?;
    rec.updated_at = Timestamp::now();
    save_values(&ctx.keychain, rec.id, p.set_secret_env).await?;
    ctx.writer.put(&rec).await?;
    if let Err(e) = delete_values(&ctx.keychain, stale).await {
        warn!(agent = %rec.name, error = %e, "could not delete the values of removed lines");
    }
    info!(agent = %rec.name, "agent changed");
    view(ctx, rec).await
}

/// Sets what the edit gives of the agent's own settings (all but its environment).
fn apply_settings(rec: &mut AgentRecord, p: &mut AgentEdit) {
    if let Some(n) = p.name.take() {
        rec.name = n;
    }
    if let Some(r) = p.role.take() {
        rec.role = r.trim().to_string();
    }
    if let Some(c) = p.cli
        && c != rec.cli
    {
        rec.cli = c;
        // A mode of the old CLI means nothing to the new one.
        if rec
            .permission_mode
            .as_deref()
            .is_some_and(|m| c.check_permission_mode(m).is_err())
        {
            rec.permission_mode = None;
        }
        if !c.has_skills_switch() {
            rec.switches.skills = false;
        }
        if c != CliKind::Command {
            rec.command.clear();
        }
    }
    if let Some(i) = p.instructions.take() {
        rec.instructions = i;
    }
    std::mem::take(&mut p.permission_mode).apply(&mut rec.permission_mode);
    if let Some(a) = p.allowed_commands.take() {
        rec.allowed_commands = a;
    }
    std::mem::take(&mut p.time_cap)
        .map(TimeCap::as_millis)
        .apply(&mut rec.time_cap_ms);
    std::mem::take(&mut p.max_output)
        .map(NonZeroU64::get)
        .apply(&mut rec.max_output);
    if let Some(c) = p.cwd.take() {
        rec.cwd = c;
    }
    if let Some(c) = p.command.take() {
        rec.command = c;
    }
    std::mem::take(&mut p.model).apply(&mut rec.model);
    if let Some(c) = p.codex_config.take() {
        rec.codex_config = c;
    }
    if let Some(paused) = p.paused {
        rec.paused = paused;
    }
}

/// Removes and sets the agent's environment lines; returns the keychain keys whose values go.
fn edit_env(rec: &mut AgentRecord, p: &AgentEdit) -> Result<Vec<String>, AgentsError> {
    for name in p.remove_env.iter().chain(p.remove_secret_env.iter()) {
        let known = rec.env.iter().any(|(k, _)| k == name) || rec.secret_env.contains(name);
        if !known {
            return Err(bad(format!(
                "`{}` has no environment line {name} to remove",
                rec.name
            )));
        }
    }
    let mut stale = Vec::new();
    for name in &p.remove_env {
        rec.env.retain(|(k, _)| k != name);
    }
    for name in &p.remove_secret_env {
        rec.secret_env.retain(|n| n != name);
        stale.push(agent_env_key(rec.id, name));
    }
    for (k, v) in &p.set_env {
        // A plain line replaces a secret one of the same name (and the other way round).
        if rec.secret_env.contains(k) {
            rec.secret_env.retain(|n| n != k);
            stale.push(agent_env_key(rec.id, k));
        }
        match rec.env.iter_mut().find(|(name, _)| name == k) {
            Some(line) => line.1 = v.clone(),
            None => rec.env.push((k.clone(), v.clone())),
        }
    }
    for l in &p.set_secret_env {
        check_env_line(&l.name, &l.value)?;
        rec.env.retain(|(k, _)| *k != l.name);
        stale.retain(|key| *key != agent_env_key(rec.id, &l.name));
        if !rec.secret_env.contains(&l.name) {
            rec.secret_env.push(l.name.clone());
        }
    }
    Ok(stale)
}

/// One parsed `key=value`.
enum Setting {
    Server {
        server: ServerRecord,
        on: bool,
    },
    Tool {
        server: ServerRecord,
        tool: String,
        on: bool,
    },
    WebSearch(bool),
    WebFetch(WebFetch),
    Browser(bool),
    BrowserInsecureCerts(bool),
    Skills(bool),
    /// `approval=ask|read-only|skip`.
    ApprovalMode(ApprovalMode),
    /// `approval.wait=30s` (up to 24 h).
    ApprovalWait(u64),
    /// `approval.wait-for-person=on|off`.
    WaitForPerson(bool),
    /// `<tool key>=allow|ask|block`, or `=reset` (`None`) to forget the verdict.
    Verdict(ToolKey, Option<Verdict>),
    /// `placement=local|slurm|slurm:PARTITION`: where its runs go.
    Placement(Placement),
    /// `roots=DIR,…` (resolved), or `roots=none`.
    Roots(Vec<PathBuf>),
    /// `workspace=unrestricted|roots`.
    Unrestricted(bool),
    /// `builtin.NAME=on|off`: a built-in tool bosun's catalog does not know.
    Builtin(String, bool),
    /// `budget.usd=2` (in millionths of a dollar), or `=off`.
    BudgetUsd(Option<u64>),
    /// `budget.tokens=500000`, or `=off`.
    BudgetTokens(Option<u64>),
    /// `max-tool-calls=200`, or `=off`.
    MaxToolCalls(Option<u64>),
}

/// A cap of `budget.usd`, `budget.tokens` or `max-tool-calls`: `off` (or `none`) for none.
fn cap(
    key: &str,
    value: &str,
    parse: impl Fn(&str) -> Option<u64>,
    example: &str,
) -> Result<Option<u64>, AgentsError> {
    let v = value.trim();
    if matches!(v, "off" | "none") {
        return Ok(None);
    }
    parse(v).map(Some).ok_or_else(|| {
        bad(format!(
            "`{key}={v}`: {key} takes a positive amount, such as {key}={example}, or off"
        ))
    })
}

/// A whole number above 0.
fn positive(v: &str) -> Option<u64> {
    v.parse::<u64>().ok().filter(|n| *n > 0)
}

fn on_off(key: &str, value: &str) -> Result<bool, AgentsError> {
    bosun_shared::switch::parse(value)
        .ok_or_else(|| bad(format!("`{key}={}`: {key} takes on or off", value.trim())))
}

/// The keys `bosun agent set` takes, for messages.
const KEYS: &str = "mcp.<server>, mcp.<server>.<tool>, web.search, web.fetch, browser, browser.insecure-certs, skills, builtin.<tool>, roots, workspace, approval, approval.wait, approval.wait-for-person, placement, budget.usd, budget.tokens, max-tool-calls, and a tool's verdict such as Bash(git *)=allow, mcp.<server>.<tool>=block or write_file=ask";

/// How long a call waits for the person when the agent does not say (then it is denied).
pub const DEFAULT_APPROVAL_WAIT_MS: u64 = 30_000;

/// The most an agent's calls may wait for the person.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// A verdict's value: allow, ask, block, or reset (forget it).
fn verdict_value(key: &str, value: &str) -> Result<Option<Verdict>, AgentsError> {
    if value.trim() == "reset" {
        return Ok(None);
    }
    value.parse::<Verdict>().map(Some).map_err(|e| {
        bad(format!(
            "`{key}={value}`: {e}, or reset to forget the verdict"
        ))
    })
}

fn parse_setting(
    text: &str,
    servers: &[ServerRecord],
    cli: CliKind,
) -> Result<Setting, AgentsError> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(bad(format!(
            "`{text}` is not a setting; write KEY=VALUE, such as mcp.github=on or web.fetch=docs.rs (keys: {KEYS})"
        )));
    };
    let key = key.trim();
    match key {
        "approval" => value
            .parse::<ApprovalMode>()
            .map(Setting::ApprovalMode)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "approval.wait" => {
            let wait = bosun_shared::time::parse_duration(value).map_err(|e| {
                bad(format!(
                    "`{text}`: {e}; write a time such as 30s, 10m or 24h"
                ))
            })?;
            if wait.is_zero() || wait > MAX_WAIT {
                return Err(bad(format!(
                    "`{text}`: a call may wait for the person from 1s up to 24h"
                )));
            }
            Ok(Setting::ApprovalWait(
                u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            ))
        }
        "approval.wait-for-person" => Ok(Setting::WaitForPerson(on_off(key, value)?)),
        "budget.usd" => {
            cap(key, value, bosun_shared::usage::parse_dollars, "2").map(Setting::BudgetUsd)
        }
        "budget.tokens" => cap(key, value, positive, "500000").map(Setting::BudgetTokens),
        "max-tool-calls" => cap(key, value, positive, "200").map(Setting::MaxToolCalls),
        "placement" => value
            .parse::<Placement>()
            .map(Setting::Placement)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "roots" => parse_roots(value)
            .map(Setting::Roots)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "workspace" => match value.trim() {
            "unrestricted" => Ok(Setting::Unrestricted(true)),
            "roots" | "restricted" => Ok(Setting::Unrestricted(false)),
            other => Err(bad(format!(
                "`workspace={other}`: workspace takes roots (its runs write only in their folder and the agent's roots) or unrestricted (anywhere but git metadata)"
            ))),
        },
        "web.search" => Ok(Setting::WebSearch(on_off(key, value)?)),
        "web.fetch" => WebFetch::parse(value).map(Setting::WebFetch).map_err(|e| {
            bad(format!(
                "{e}; web.fetch takes off, any, or a comma-separated list of domains"
            ))
        }),
        "browser" => Ok(Setting::Browser(on_off(key, value)?)),
        "browser.insecure-certs" => Ok(Setting::BrowserInsecureCerts(on_off(key, value)?)),
        "skills" => {
            let on = on_off(key, value)?;
            if on && !cli.has_skills_switch() {
                return Err(bad(format!(
                    "skills=on is refused for a {cli} agent: bosun has no checked per-run switch for its slash commands and skills (only Claude Code has one)"
                )));
            }
            Ok(Setting::Skills(on))
        }
        other if other.starts_with("builtin.") => builtin_setting(other, value, cli),
        other => {
            let is_verdict = matches!(
                value.trim(),
                "allow" | "ask" | "block" | "reset" | "always-allow" | "needs-approval" | "blocked"
            );
            if is_verdict || !other.starts_with("mcp.") {
                if !is_verdict {
                    return Err(bad(format!(
                        "`{other}` is not a switch; the keys are {KEYS}"
                    )));
                }
                return verdict_setting(other, value, servers);
            }
            mcp_setting(other, value, servers)
        }
    }
}

/// `builtin.NAME=on|off`: a built-in tool of the agent's CLI that bosun's catalog does not know.
fn builtin_setting(key: &str, value: &str, cli: CliKind) -> Result<Setting, AgentsError> {
    let tool = key.trim_start_matches("builtin.");
    if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad(format!(
            "`{key}`: write builtin.NAME with the tool's name as its CLI reports it, such as builtin.FancyTool"
        )));
    }
    if cli == CliKind::Command {
        return Err(bad(
            "a command agent has no built-in tools to switch".to_string()
        ));
    }
    if catalog::find(cli, tool).is_some() {
        return Err(bad(format!(
            "`{tool}` is in bosun's catalog of {cli}'s tools, where its own setting governs it (`bosun agent tools NAME` says which); builtin.NAME switches only tools the catalog does not know"
        )));
    }
    Ok(Setting::Builtin(tool.to_string(), on_off(key, value)?))
}

/// A tool's verdict, such as `Bash(git *)=allow` or `mcp.<server>.<tool>=block`.
fn verdict_setting(
    key: &str,
    value: &str,
    servers: &[ServerRecord],
) -> Result<Setting, AgentsError> {
    let tool = key.parse::<ToolKey>().map_err(|e| bad(e.to_string()))?;
    if let ToolKey::Mcp { server, .. } = &tool
        && !servers.iter().any(|s| s.name == *server)
    {
        return Err(AgentsError::not_found(format!(
            "there is no MCP server `{server}`; `bosun mcp list` shows them"
        )));
    }
    Ok(Setting::Verdict(tool, verdict_value(key, value)?))
}

/// `mcp.<server>=on|off` or `mcp.<server>.<tool>=on|off`: a server's switch, or one of its
/// listed tools'.
fn mcp_setting(key: &str, value: &str, servers: &[ServerRecord]) -> Result<Setting, AgentsError> {
    let Some(rest) = key.strip_prefix("mcp.") else {
        return Err(bad(format!("`{key}` is not a switch; the keys are {KEYS}")));
    };
    // Server names have no dots; a tool's name may.
    let (server_name, tool) = match rest.split_once('.') {
        Some((s, t)) => (s, Some(t)),
        None => (rest, None),
    };
    let Some(server) = servers.iter().find(|s| s.name == server_name) else {
        return Err(AgentsError::not_found(format!(
            "there is no MCP server `{server_name}`; add it with `bosun mcp add {server_name} …` first (`bosun mcp list` shows them)"
        )));
    };
    let on = on_off(key, value)?;
    match tool {
        None => Ok(Setting::Server {
            server: server.clone(),
            on,
        }),
        Some(tool) => {
            let Some(listing) = &server.listing else {
                return Err(bad(format!(
                    "the tools of `{server_name}` have not been listed; list them first with `bosun mcp tools {server_name}`, then switch one"
                )));
            };
            if !listing.tools.iter().any(|t| t.name == tool) {
                return Err(AgentsError::not_found(format!(
                    "`{server_name}` has no tool `{tool}` in its last listing; `bosun mcp tools {server_name}` lists them again"
                )));
            }
            Ok(Setting::Tool {
                server: server.clone(),
                tool: tool.to_string(),
                on,
            })
        }
    }
}

/// The roots of `roots=DIR,…`: each absolute, an existing folder, not `/`, resolved now (every
/// link followed), so a link changed later changes nothing. `none` (or nothing) clears them.
fn parse_roots(value: &str) -> Result<Vec<PathBuf>, String> {
    let value = value.trim();
    if value.is_empty() || value == "none" {
        return Ok(Vec::new());
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(part);
        if !path.is_absolute() {
            return Err(format!(
                "{part} is not an absolute path; give each root from / (such as /home/me/notes)"
            ));
        }
        let resolved = std::fs::canonicalize(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("{part} does not exist; create it first")
            } else {
                format!("{part} cannot be read: {e}")
            }
        })?;
        if !resolved.is_dir() {
            return Err(format!(
                "{part} is a file, not a folder; a root is a folder"
            ));
        }
        if resolved.parent().is_none() {
            return Err(format!(
                "{part} is the root of the file system, which would let runs write anywhere; to lift the limit say so with workspace=unrestricted"
            ));
        }
        if !roots.contains(&resolved) {
            roots.push(resolved);
        }
    }
    Ok(roots)
}

/// Makes one parsed setting on `rec` (a copy, kept only when every setting is made).
fn apply(rec: &mut AgentRecord, setting: Setting, browser_id: Option<bosun_shared::ServerId>) {
    let AgentRecord {
        switches,
        approvals,
        placement,
        workspace,
        budget,
        ..
    } = rec;
    match setting {
        Setting::BudgetUsd(cap) => budget.micro_usd = cap,
        Setting::BudgetTokens(cap) => budget.tokens = cap,
        Setting::MaxToolCalls(cap) => budget.tool_calls = cap,
        Setting::Roots(roots) => workspace.roots = roots,
        Setting::Unrestricted(on) => workspace.unrestricted = on,
        Setting::Builtin(tool, true) => {
            switches.builtins.insert(tool);
        }
        Setting::Builtin(tool, false) => {
            switches.builtins.remove(&tool);
        }
        Setting::Placement(p) => *placement = p,
        Setting::ApprovalMode(mode) => approvals.mode = mode,
        Setting::ApprovalWait(ms) => approvals.wait_ms = Some(ms),
        Setting::WaitForPerson(on) => approvals.wait_for_person = on,
        Setting::Verdict(tool, Some(verdict)) => {
            approvals.verdicts.insert(tool.to_string(), verdict);
        }
        Setting::Verdict(tool, None) => {
            approvals.verdicts.remove(&tool.to_string());
        }
        Setting::Server { server, on } => {
            let entry = switches
                .mcp
                .entry(server.id)
                .or_insert_with(ServerSwitch::off);
            entry.on = on;
            if on && matches!(&entry.tools, ToolSelection::Only(set) if set.is_empty()) {
                entry.tools = ToolSelection::AllExcept(BTreeSet::new());
            }
        }
        Setting::Tool { server, tool, on } => {
            switches
                .mcp
                .entry(server.id)
                .or_insert_with(ServerSwitch::off)
                .set_tool(&tool, on);
        }
        Setting::WebSearch(on) => switches.web_search = on,
        Setting::WebFetch(f) => switches.web_fetch = f,
        Setting::Browser(on) => {
            if let Some(id) = browser_id {
                switches.mcp.entry(id).or_insert_with(ServerSwitch::off).on = on;
            }
        }
        Setting::BrowserInsecureCerts(on) => switches.browser_insecure_certs = on,
        Setting::Skills(on) => switches.skills = on,
    }
}

async fn set(
    ctx: &AgentsContext,
    agent: &str,
    settings: &[String],
) -> Result<AgentView, AgentsError> {
    if settings.is_empty() {
        return Err(bad(format!(
            "no switch given; write KEY=VALUE, such as: bosun agent set {agent} mcp.github=on web.search=on (keys: {KEYS})"
        )));
    }
    let rec = find(&ctx.store, agent).await?;
    let servers = servers(&ctx.store).await?;
    let browser_id = servers.iter().find(|s| s.browser.is_some()).map(|s| s.id);
    // Every setting is parsed and checked before any is applied: all or nothing.
    let parsed = settings
        .iter()
        .map(|s| parse_setting(s, &servers, rec.cli))
        .collect::<Result<Vec<_>, _>>()?;
    let mut next = rec.clone();
    for p in parsed {
        apply(&mut next, p, browser_id);
    }
    if next.approvals != rec.approvals {
        // The person has decided the agent's approvals: what the upgrade carried over is theirs.
        next.carried_over = None;
    }
    let mut rec = next;
    // Switches of servers that are gone go too.
    rec.switches
        .mcp
        .retain(|id, _| servers.iter().any(|s| s.id == *id));
    check_record(&rec)?;
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(agent = %rec.name, "agent switches changed");
    view(ctx, rec).await
}

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

async fn remove(ctx: &AgentsContext, agent: &str) -> Result<AgentView, AgentsError> {
    let rec = find(&ctx.store, agent).await?;
    let keys: Vec<String> = rec
        .secret_env
        .iter()
        .map(|n| agent_env_key(rec.id, n))
        .collect();
    let shown = view(ctx, rec.clone()).await?;
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
