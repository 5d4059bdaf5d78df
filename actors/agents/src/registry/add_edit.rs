//! Adding an agent and changing one: the record checked whole before anything is written, its
//! secret values saved in the keychain before the record that names them, the values of lines
//! it no longer names deleted after.

use std::num::NonZeroU64;

use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_kit::offload::blocking;
use bosun_shared::agents::CliKind;
use bosun_shared::mcp::SecretLine;
use bosun_shared::placement::Placement;
use bosun_shared::time::TimeCap;
use bosun_shared::usage::Budget;
use bosun_shared::{AgentId, Timestamp};
use tracing::{info, warn};

use super::checks::{check_env_line, check_record};
use super::{AgentDetail, AgentEdit, AgentsContext, NewAgent, bad, detail, find};
use crate::AgentsError;
use crate::record::{AgentReads, AgentRecord, ApprovalSettings, Switches, WorkspaceSettings};

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

pub(super) async fn delete_values(
    keychain: &Keychain,
    keys: Vec<String>,
) -> Result<(), AgentsError> {
    let keychain = keychain.clone();
    blocking(move || keychain.delete_many(&keys).map_err(AgentsError::from)).await?
}

pub(super) async fn add(ctx: &AgentsContext, p: NewAgent) -> Result<AgentDetail, AgentsError> {
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
        permission_mode: p.permission_mode,
        allowed_commands: p.allowed_commands,
        time_cap_ms: p.time_cap.map(TimeCap::as_millis),
        max_output: p.max_output.map(NonZeroU64::get),
        cwd: p.cwd,
        command: p.command,
        env: p.env,
        secret_env: p.secret_env.iter().map(|l| l.name.clone()).collect(),
        model: p.model,
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
    detail(ctx, rec).await
}

pub(super) async fn edit(
    ctx: &AgentsContext,
    mut p: AgentEdit,
) -> Result<AgentDetail, AgentsError> {
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
    detail(ctx, rec).await
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
