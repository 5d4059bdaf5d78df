//! `bosun mcp import`: the servers Claude Code, Codex and Gemini CLI know, shown when none is
//! picked, and imported by name or all at once.

use std::path::PathBuf;
use std::process::ExitCode;

use bosun_protocol::mcp::{
    ImportCandidateView, ImportCandidates, ImportParams, ImportPick, ImportScan, ImportStatus,
    Imported, ServerKind,
};
use bosun_shared::paths::StateDir;
use bosun_shared::settings::KeyValueError;
use clap::Args;

use super::print::describe_target;
use super::{connect, output};

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Server names to import (see them first by running without names)
    names: Vec<String>,
    /// Import every server found that is not in the list yet
    #[arg(long)]
    all: bool,
    /// Import a server under another name: NAME=NEW (repeatable)
    #[arg(long = "as", value_name = "NAME=NEW")]
    rename: Vec<String>,
    /// Also read this file: another account's .claude.json, a Codex config.toml, a Gemini
    /// settings.json (repeatable)
    #[arg(long = "file", value_name = "PATH")]
    files: Vec<PathBuf>,
    /// When a name is found in several files, the one to take
    #[arg(long, value_name = "PATH")]
    from_file: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub(super) async fn import(dirs: &StateDir, a: ImportArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let scan = ImportScan {
        extra_files: a
            .files
            .iter()
            .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone()))
            .collect(),
        env: ["HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"]
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect(),
    };
    if !a.all && a.names.is_empty() {
        let ImportCandidates {
            candidates,
            problems,
        } = client.call(scan).await?;
        if a.json {
            output::print_json(
                &serde_json::json!({ "candidates": candidates, "problems": problems }),
            )?;
        } else {
            for p in &problems {
                errln!("bosun: {p}");
            }
            print_candidates(&candidates);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // A server renamed twice is refused: which of the two names was meant cannot be known.
    let renames: std::collections::HashMap<String, String> =
        bosun_shared::settings::parse(&a.rename)
            .map_err(|e| match e {
                KeyValueError::NotKeyValue(_) | KeyValueError::NoKey(_) => {
                    anyhow::anyhow!("--as takes NAME=NEW, such as --as github=github-work")
                }
                e @ KeyValueError::Twice { .. } => anyhow::anyhow!("--as {e}"),
            })?
            .iter()
            .map(|p| (p.key.to_string(), p.value.to_string()))
            .collect();
    let picks = a
        .names
        .iter()
        .map(|n| ImportPick {
            name: n.clone(),
            rename_to: renames.get(n).cloned(),
            account: a
                .from_file
                .as_ref()
                .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone())),
        })
        .collect();
    let params = ImportParams {
        scan,
        all: a.all,
        picks,
    };
    let Imported { servers } = client.call(params).await?;
    if a.json {
        output::print_json(&servers)?;
    } else if servers.is_empty() {
        outln!("nothing to import: every server found is already in the list");
    } else {
        for s in &servers {
            outln!("imported {} ({})", s.name, describe_target(s));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_candidates(cands: &[ImportCandidateView]) {
    if cands.is_empty() {
        outln!("no MCP servers found in Claude Code, Codex or Gemini CLI configuration");
        return;
    }
    for c in cands {
        let status = match c.status {
            ImportStatus::New => "new",
            ImportStatus::AlreadyInList => "already in the list",
            ImportStatus::NameTaken => "name taken: import with --as NAME=NEW",
            ImportStatus::BadName => "name not allowed in bosun: import with --as NAME=NEW",
        };
        let target = match c.kind {
            ServerKind::Stdio => {
                let mut parts = vec![c.command.clone().unwrap_or_default()];
                parts.extend(c.args.iter().cloned());
                parts.join(" ")
            }
            ServerKind::Http | ServerKind::Sse => c.url.clone().unwrap_or_default(),
        };
        outln!(
            "{:<20} {} ({}), {} scope, {}: {target}",
            c.name,
            c.source,
            c.account.display(),
            c.scope,
            c.kind
        );
        if !c.env_names.is_empty() {
            outln!("{:<20} env: {}", "", c.env_names.join(", "));
        }
        if !c.header_names.is_empty() {
            outln!("{:<20} headers: {}", "", c.header_names.join(", "));
        }
        outln!("{:<20} {status}", "");
    }
    outln!("\nimport with: bosun mcp import NAME… (or --all)");
}
