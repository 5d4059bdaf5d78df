//! The checks of a whole agent record after a change, each refusal saying what is wrong and
//! what to do: its name, role and instructions, its CLI's settings, its working folder, and its
//! environment lines.

use std::collections::HashSet;
use std::path::Path;

use bosun_shared::agents::{
    CliKind, MAX_INSTRUCTIONS, MAX_SECRET_VALUE, check_agent_name, check_allowed_command,
    secret_too_long,
};
use bosun_shared::time::TimeCap;

use super::bad;
use crate::AgentsError;
use crate::record::AgentRecord;

/// Checks an environment line's name and value.
pub(super) fn check_env_line(name: &str, value: &str) -> Result<(), AgentsError> {
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
pub(super) fn check_record(rec: &AgentRecord) -> Result<(), AgentsError> {
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
