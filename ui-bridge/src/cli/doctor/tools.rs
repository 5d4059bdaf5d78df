//! The programs' part of `bosun doctor`: the coding CLIs, git and gh, and the cluster engines
//! `placement.toml` turns on (Slurm's commands, a kubeconfig with a context).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bosun_shared::agents::CliKind;
use bosun_shared::paths::StateDir;
use serde::Deserialize;

use super::{Check, Configured, find, find_on};

/// How long a program has to say its version (the coding CLIs are Node programs).
const VERSION_LIMIT: Duration = Duration::from_secs(10);

/// The first line `program args` prints (stdout, else stderr), with a deadline; `Err` says
/// why there is none.
async fn first_line(program: PathBuf, args: &'static [&'static str]) -> Result<String, NoLine> {
    let out = tokio::task::spawn_blocking(move || {
        bosun_shared::process::output_blocking(Command::new(&program).args(args), VERSION_LIMIT)
    })
    .await??;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    let line = String::from_utf8_lossy(&text)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string();
    if out.status.success() {
        Ok(line)
    } else {
        Err(NoLine::Failed {
            status: out.status,
            line,
        })
    }
}

/// Why [`first_line`] has no line to show.
#[derive(Debug, thiserror::Error)]
enum NoLine {
    #[error("{0}")]
    Join(#[from] tokio::task::JoinError),
    /// It could not be started, or ran past its deadline.
    #[error("{0}")]
    Run(#[from] bosun_shared::process::HelperError),
    /// It exited unsuccessfully, with this first line.
    #[error("{status} ({line})")]
    Failed {
        status: std::process::ExitStatus,
        line: String,
    },
}

/// Claude Code, Codex and Gemini CLI: found, and their versions. Missing fails when an agent of
/// it would not find it either.
pub(crate) async fn clis(configured: &Configured) -> Vec<Check> {
    let mut checks = Vec::new();
    for (kind, name, package) in [
        (CliKind::Claude, "claude", "@anthropic-ai/claude-code"),
        (CliKind::Codex, "codex", "@openai/codex"),
        (CliKind::Gemini, "gemini", "@google/gemini-cli"),
    ] {
        let agents = configured
            .agents
            .as_ref()
            .and_then(|a| a.get(&kind))
            .cloned()
            .unwrap_or_default();
        let install = format!("install it (`npm install -g {package}`) or put it on PATH");
        let Some(path) = find(name) else {
            // The agents that would not find it either: those without a PATH of their own, and
            // those whose PATH lacks it too.
            let stranded: Vec<&str> = agents
                .iter()
                .filter(|a| {
                    a.path
                        .as_ref()
                        .is_none_or(|p| find_on(std::ffi::OsStr::new(p), name).is_none())
                })
                .map(|a| a.name.as_str())
                .collect();
            checks.push(if stranded.is_empty() {
                let why = match &configured.agents {
                    Some(_) if agents.is_empty() => "no agent uses it",
                    Some(_) => "its agents set a PATH that has it",
                    None => "bosund is not running to say whether an agent uses it",
                };
                Check::warning(name, format!("not found on PATH ({why})"), install)
            } else {
                Check::failing(
                    name,
                    format!(
                        "not found on PATH, and agent {} runs it",
                        stranded.join(", ")
                    ),
                    install,
                )
            });
            continue;
        };
        checks.push(match first_line(path.clone(), &["--version"]).await {
            Ok(v) => Check::ok(name, format!("{v} ({})", path.display())),
            Err(e) => Check::missing(
                name,
                !agents.is_empty(),
                format!("{} does not run: {e}", path.display()),
                format!("reinstall it (`npm install -g {package}`)"),
            ),
        });
    }
    checks
}

/// git, which projects' cards work with (worktrees, branches).
pub(crate) async fn git(configured: &Configured) -> Check {
    let needed = configured.projects.is_some_and(|n| n > 0);
    let Some(path) = find("git") else {
        return Check::missing(
            "git",
            needed,
            if needed {
                "not found on PATH, and projects need it".to_string()
            } else {
                "not found on PATH".to_string()
            },
            "install git (Debian: apt install git)",
        );
    };
    match first_line(path, &["--version"]).await {
        Ok(v) => Check::ok("git", v),
        Err(e) => Check::missing("git", needed, format!("does not run: {e}"), "reinstall git"),
    }
}

/// gh, which opens a card's pull request and merges it on GitHub; never more than a warning.
pub(crate) async fn gh() -> Check {
    let Some(path) = find("gh") else {
        return Check::warning(
            "gh",
            "not found on PATH; cards of GitHub projects cannot open pull requests",
            "install the GitHub CLI (Debian: apt install gh)",
        );
    };
    let version = match first_line(path.clone(), &["--version"]).await {
        Ok(v) => v,
        Err(e) => return Check::warning("gh", format!("does not run: {e}"), "reinstall gh"),
    };
    match first_line(path, &["auth", "status"]).await {
        Ok(_) => Check::ok("gh", format!("{version}, signed in")),
        Err(e) => Check::warning(
            "gh",
            format!("{version}, not signed in: {e}"),
            "sign in with `gh auth login` (pull requests and merges need it)",
        ),
    }
}

/// What `placement.toml` turns on; the rest of the file is bosund's to check.
#[derive(Debug, Default, Deserialize)]
struct Placement {
    slurm: Option<toml::Table>,
    kubernetes: Option<KubernetesSection>,
}

#[derive(Debug, Default, Deserialize)]
struct KubernetesSection {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
}

/// The two parts of a kubeconfig that say which cluster is meant.
#[derive(Debug, Deserialize)]
struct KubeConfig {
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Vec<Named>,
}

#[derive(Debug, Deserialize)]
struct Named {
    name: String,
}

/// Slurm and Kubernetes: checked in earnest when `placement.toml` turns them on; otherwise
/// said to be off (a kubeconfig found anyway is still read, a bad one only warned of).
pub(crate) async fn placement(dirs: &StateDir) -> Vec<Check> {
    let file = dirs.root().join("placement.toml");
    let placement = match std::fs::read_to_string(&file) {
        Ok(text) => match toml::from_str::<Placement>(&text) {
            Ok(p) => p,
            Err(e) => {
                return vec![Check::failing(
                    "placement",
                    format!("{} does not parse: {}", file.display(), e.message()),
                    format!("correct {} (see docs/placement.md)", file.display()),
                )];
            }
        },
        Err(_) => Placement::default(),
    };
    vec![
        slurm(placement.slurm.is_some(), &file),
        kubernetes(placement.kubernetes, &file),
    ]
}

fn slurm(configured: bool, file: &Path) -> Check {
    let missing: Vec<&str> = ["sbatch", "squeue"]
        .into_iter()
        .filter(|p| find(p).is_none())
        .collect();
    match (configured, missing.is_empty()) {
        (true, true) => Check::ok(
            "slurm",
            format!("on ({}), sbatch and squeue found", file.display()),
        ),
        (true, false) => Check::failing(
            "slurm",
            format!(
                "on ({}), but {} not found on PATH",
                file.display(),
                missing.join(" and ")
            ),
            "install Slurm's client commands (Debian: apt install slurm-client), or remove [slurm] from placement.toml",
        ),
        (false, true) => Check::ok(
            "slurm",
            "off (no [slurm] in placement.toml); sbatch and squeue found",
        ),
        (false, false) => Check::ok("slurm", "off (no [slurm] in placement.toml)"),
    }
}

fn kubernetes(section: Option<KubernetesSection>, file: &Path) -> Check {
    let configured = section.is_some();
    let section = section.unwrap_or_default();
    // As kube finds it: the file placement.toml names, else the first of $KUBECONFIG, else
    // ~/.kube/config.
    let path = section.kubeconfig.clone().or_else(|| {
        std::env::var_os("KUBECONFIG")
            .filter(|v| !v.is_empty())
            .and_then(|v| std::env::split_paths(&v).next())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube/config")))
    });
    let on = if configured {
        format!("on ({})", file.display())
    } else {
        "off (no [kubernetes] in placement.toml)".to_string()
    };
    let Some(path) = path.filter(|p| configured || p.exists()) else {
        return Check::ok("kubernetes", on);
    };
    let fix = format!(
        "fix {} (`kubectl config use-context NAME` sets its current context), or name another file with kubeconfig = \"…\" in placement.toml",
        path.display()
    );
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            return Check::missing(
                "kubernetes",
                configured,
                format!(
                    "{on}, but the kubeconfig {} cannot be read: {e}",
                    path.display()
                ),
                fix,
            );
        }
    };
    let config = match serde_saphyr::from_str::<KubeConfig>(&text) {
        Ok(c) => c,
        Err(e) => {
            let e = e.to_string();
            let e = e.lines().next().unwrap_or_default();
            return Check::missing(
                "kubernetes",
                configured,
                format!(
                    "{on}, but the kubeconfig {} is not valid YAML: {e}",
                    path.display()
                ),
                fix,
            );
        }
    };
    let context = section
        .context
        .or(config.current_context)
        .filter(|c| !c.is_empty());
    match context {
        None => Check::missing(
            "kubernetes",
            configured,
            format!(
                "{on}, but the kubeconfig {} has no current context",
                path.display()
            ),
            fix,
        ),
        Some(c) if !config.contexts.iter().any(|n| n.name == c) => Check::missing(
            "kubernetes",
            configured,
            format!(
                "{on}, but the kubeconfig {} has no context named {c}",
                path.display()
            ),
            fix,
        ),
        Some(c) => Check::ok(
            "kubernetes",
            format!("{on}, kubeconfig {} (context {c})", path.display()),
        ),
    }
}
