//! Shell completions. `bosun completions bash|zsh|fish` prints a short script that registers
//! bosun with the shell; at each Tab the shell runs bosun itself with `BOSUN_COMPLETE` set to
//! its name (clap_complete's dynamic completer), and bosun answers from its clap definition —
//! subcommands, flags, their values — and, for the names of agents, MCP servers, cards, runs,
//! chats and projects, from a bosund that is already running. So the script never goes stale
//! when bosun changes, and the same code serves the three shells.
//!
//! **Completing never starts bosund.** A name is asked of a running daemon, with a short
//! deadline; when none answers there is simply no name to offer.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use bosun_protocol::agents::AgentList;
use bosun_protocol::board::Board;
use bosun_protocol::lead::ChatList;
use bosun_protocol::mcp::McpList;
use bosun_protocol::projects::ProjectList;
use bosun_shared::paths::StateDir;
use bosun_ui::{Client, ClientError};
use clap::{CommandFactory, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::{Bash, CompleteEnv, EnvCompleter, Fish, Zsh};

/// The variable that tells bosun a shell asks it to complete (and which shell).
const VAR: &str = "BOSUN_COMPLETE";

/// How long a completion waits for bosund's names: a Tab must not hang.
const NAMES_LIMIT: Duration = Duration::from_millis(1500);

/// The shells bosun writes a registration for.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Answers the shell and exits when `BOSUN_COMPLETE` is set; returns at once otherwise. Called
/// first thing in `main`, before any runtime exists.
pub fn answer_if_asked() {
    CompleteEnv::with_factory(super::Args::command)
        .var(VAR)
        .complete();
}

/// Prints the registration script of `shell`.
pub fn completions(shell: Shell) -> anyhow::Result<ExitCode> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
    };
    // The script runs bosun as it was run now: by name when found on PATH, else by its path,
    // made absolute so the script works from any folder.
    let argv0 = std::env::args_os().next().unwrap_or_else(|| "bosun".into());
    let argv0 = std::path::PathBuf::from(argv0);
    let program = if argv0.components().count() > 1 {
        std::path::absolute(&argv0)?
    } else {
        argv0
    };
    let mut script = Vec::new();
    completer.write_registration(
        VAR,
        "bosun",
        "bosun",
        &program.to_string_lossy(),
        &mut script,
    )?;
    std::io::stdout().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// The names a running bosund knows, of one kind.
#[derive(Clone, Copy, Debug)]
enum Names {
    Agents,
    Servers,
    Cards,
    Runs,
    Chats,
    Projects,
}

pub fn agents() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Agents))
}

pub fn servers() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Servers))
}

pub fn cards() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Cards))
}

pub fn runs() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Runs))
}

pub fn chats() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Chats))
}

pub fn projects() -> ArgValueCandidates {
    ArgValueCandidates::new(|| names(Names::Projects))
}

/// Asks a running bosund (never starting one) for the names of `kind`; none when it is not
/// running, does not answer in time, or fails.
fn names(kind: Names) -> Vec<CompletionCandidate> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    runtime
        .block_on(async {
            tokio::time::timeout(NAMES_LIMIT, ask(kind))
                .await
                .ok()
                .and_then(Result::ok)
        })
        .unwrap_or_default()
}

async fn ask(kind: Names) -> Result<Vec<CompletionCandidate>, ClientError> {
    let dirs = StateDir::from_env().map_err(|e| ClientError::NotRunning(e.to_string()))?;
    let mut client = Client::connect(&dirs, false).await?;
    let named =
        |value: String, help: String| CompletionCandidate::new(value).help(Some(help.into()));
    Ok(match kind {
        Names::Agents => client
            .call(AgentList)
            .await?
            .into_iter()
            .map(|a| named(a.name, a.cli.to_string()))
            .collect(),
        Names::Servers => client
            .call(McpList)
            .await?
            .into_iter()
            .map(|s| CompletionCandidate::new(s.name))
            .collect(),
        Names::Cards => client
            .call(Board)
            .await?
            .cards
            .into_iter()
            .map(|c| named(c.short_id, c.title))
            .collect(),
        Names::Runs => client
            .runs(true)
            .await?
            .into_iter()
            .map(|r| {
                let what = r.name.unwrap_or(r.program);
                named(r.short_id, format!("{what} ({})", r.state))
            })
            .collect(),
        Names::Chats => client
            .call(ChatList)
            .await?
            .into_iter()
            .map(|c| named(c.short_id, c.agent))
            .collect(),
        Names::Projects => client
            .call(ProjectList)
            .await?
            .into_iter()
            .map(|p| CompletionCandidate::new(p.name))
            .collect(),
    })
}
