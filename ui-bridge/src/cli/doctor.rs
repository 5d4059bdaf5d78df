//! `bosun doctor`: is everything bosun needs here working? Each check is one line, ok / warning
//! / failing, with the one thing to do about it.
//!
//! A check fails only when what is configured needs it (an agent of a CLI that is missing, a
//! `[kubernetes]` placement whose kubeconfig does not parse, secrets kept where no keychain
//! answers, a state directory that cannot be written); the same thing missing where nothing
//! needs it is a warning. `doctor` exits 1 when
//! any check fails. It never starts bosund: what only the daemon knows (the agents and their
//! CLIs, the projects) is asked of a bosund already running, and left open otherwise.
//!
//! # Caveats
//! The CLIs are looked up on this command's `PATH` (or an agent's own `PATH`, when it sets
//! one); a bosund started elsewhere, by systemd say, may see another `PATH`.

mod system;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bosun_protocol::agents::AgentList;
use bosun_protocol::mcp::McpList;
use bosun_protocol::projects::ProjectList;
use bosun_protocol::runs::DaemonStatus;
use bosun_shared::agents::CliKind;
use bosun_shared::paths::StateDir;
use bosun_ui::{Client, ClientError};
use clap::Args;
use serde::Serialize;

use super::output;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warning,
    Failing,
}

/// One line of the report.
#[derive(Debug, Serialize)]
pub(crate) struct Check {
    /// What was checked: `state directory`, `disk`, `bosund`, `prices`, `keychain`, `landlock`, `claude`,
    /// `codex`, `gemini`, `git`, `gh`, `slurm`, `kubernetes`.
    pub name: &'static str,
    pub status: Status,
    /// What was found, in words.
    pub found: String,
    /// The one thing to do about it; absent when it is ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

impl Check {
    pub fn ok(name: &'static str, found: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Ok,
            found: found.into(),
            advice: None,
        }
    }

    pub fn warning(
        name: &'static str,
        found: impl Into<String>,
        advice: impl Into<String>,
    ) -> Self {
        Self {
            name,
            status: Status::Warning,
            found: found.into(),
            advice: Some(advice.into()),
        }
    }

    pub fn failing(
        name: &'static str,
        found: impl Into<String>,
        advice: impl Into<String>,
    ) -> Self {
        Self {
            name,
            status: Status::Failing,
            found: found.into(),
            advice: Some(advice.into()),
        }
    }

    /// A failure where `needed`, else a warning.
    pub fn missing(
        name: &'static str,
        needed: bool,
        found: impl Into<String>,
        advice: impl Into<String>,
    ) -> Self {
        if needed {
            Self::failing(name, found, advice)
        } else {
            Self::warning(name, found, advice)
        }
    }
}

/// What the running bosund says is configured; `None` when no bosund answered.
#[derive(Debug, Default)]
pub(crate) struct Configured {
    /// The agents of each CLI.
    pub agents: Option<HashMap<CliKind, Vec<AgentOf>>>,
    pub projects: Option<usize>,
    /// Whether something keeps secrets in the keychain: an agent's secret environment, or an
    /// MCP server of the person's (its secret lines, its query, its sign-in).
    pub secrets: Option<bool>,
}

/// An agent, as far as doctor needs it: its name and the `PATH` it sets for its runs, if it does.
#[derive(Clone, Debug)]
pub(crate) struct AgentOf {
    pub name: String,
    pub path: Option<String>,
}

/// How long a bosund that is there has to answer doctor's questions.
const DAEMON_LIMIT: Duration = Duration::from_secs(5);

pub async fn doctor(dirs: &StateDir, a: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut checks = Vec::new();
    checks.extend(system::state_dir(dirs));
    let (daemon, configured) = daemon(dirs).await;
    checks.push(daemon);
    checks.push(system::prices(dirs));
    checks.push(system::keychain(&configured).await);
    checks.push(system::landlock());
    checks.push(system::namespaces());
    checks.extend(tools::clis(&configured).await);
    checks.push(tools::git(&configured).await);
    checks.push(tools::gh().await);
    checks.extend(tools::placement(dirs).await);
    let failing = checks.iter().any(|c| c.status == Status::Failing);
    if a.json {
        output::print_json(&serde_json::json!({ "ok": !failing, "checks": checks }))?;
    } else {
        for c in &checks {
            let status = match c.status {
                Status::Ok => "ok",
                Status::Warning => "warning",
                Status::Failing => "FAILING",
            };
            outln!("{status:<8} {:<16} {}", c.name, c.found);
            if let Some(advice) = &c.advice {
                outln!("{:<8} {:<16} → {advice}", "", "");
            }
        }
    }
    Ok(if failing {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Whether bosund runs and answers (it is not started), and what it says is configured.
async fn daemon(dirs: &StateDir) -> (Check, Configured) {
    let asked = tokio::time::timeout(DAEMON_LIMIT, async {
        let mut client = Client::connect(dirs, false).await?;
        let status = client.call(DaemonStatus).await?;
        let agents = client.call(AgentList).await?;
        let projects = client.call(ProjectList).await?;
        let servers = client.call(McpList).await?;
        Ok::<_, ClientError>((status, agents, projects, servers))
    })
    .await;
    match asked {
        Ok(Ok((status, agents, projects, servers))) => {
            // The built-in browser keeps nothing in the keychain.
            let secrets = servers.iter().any(|s| !s.builtin)
                || agents.iter().any(|a| !a.secret_env.is_empty());
            let mut by_cli: HashMap<CliKind, Vec<AgentOf>> = HashMap::new();
            for a in agents {
                let path = a
                    .env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.clone());
                by_cli
                    .entry(a.cli)
                    .or_default()
                    .push(AgentOf { name: a.name, path });
            }
            let configured = Configured {
                agents: Some(by_cli),
                projects: Some(projects.len()),
                secrets: Some(secrets),
            };
            let found = format!(
                "running (pid {}, version {}), {} live run(s)",
                status.pid, status.version, status.live_runs
            );
            let check = if let Some(fault) = status.storage_fault {
                Check::failing(
                    "bosund",
                    format!("{found}; output cannot be written: {fault}"),
                    format!(
                        "free space on the disk of {} (runs wait and go on by themselves)",
                        dirs.root().display()
                    ),
                )
            } else if status.version != env!("CARGO_PKG_VERSION") {
                Check::warning(
                    "bosund",
                    found,
                    format!(
                        "it is another version than this bosun ({}): restart it with `bosun daemon stop` (runs go on)",
                        env!("CARGO_PKG_VERSION")
                    ),
                )
            } else {
                Check::ok("bosund", found)
            };
            (check, configured)
        }
        Ok(Err(ClientError::NotRunning(_))) => (
            Check::ok(
                "bosund",
                "not running; any bosun command starts it (doctor does not, so what agents and projects need is not known)",
            ),
            Configured::default(),
        ),
        Ok(Err(e)) => (
            Check::failing(
                "bosund",
                format!("does not answer: {e}"),
                format!(
                    "see {}; if it hangs, end the process in {} and run any bosun command",
                    dirs.log().display(),
                    dirs.pid_file().display()
                ),
            ),
            Configured::default(),
        ),
        Err(_) => (
            Check::failing(
                "bosund",
                format!(
                    "its socket {} does not answer within {} s",
                    dirs.socket().display(),
                    DAEMON_LIMIT.as_secs()
                ),
                format!(
                    "see {}; if it hangs, end the process in {} and run any bosun command",
                    dirs.log().display(),
                    dirs.pid_file().display()
                ),
            ),
            Configured::default(),
        ),
    }
}

/// Where `program` is on `path` (a `PATH` value), if anywhere.
pub(crate) fn find_on(path: &std::ffi::OsStr, program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|d| d.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Where `program` is on this command's `PATH`.
pub(crate) fn find(program: &str) -> Option<PathBuf> {
    find_on(&std::env::var_os("PATH").unwrap_or_default(), program)
}
