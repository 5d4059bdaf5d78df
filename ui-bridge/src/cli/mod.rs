//! The subcommands: raw arguments (clap) turned into requests, and answers printed for people
//! or, with `--json`, for programs.

mod agents;
mod audit;
mod board;
mod chat;
pub mod complete;
mod doctor;
mod inbox;
mod logs;
mod mcp;
mod output;
mod projects;
mod runs;
mod service;
mod ui;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bosun_shared::paths::StateDir;
use bosun_ui::Client;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "bosun",
    version,
    about = "Supervise coding-agent runs: start them, follow their logs live, stop them",
    after_help = "The daemon bosund starts by itself when needed. The state directory is BOSUN_HOME, else $XDG_STATE_HOME/bosun, else ~/.local/state/bosun."
)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start a supervised run of a program and print its id
    Run(runs::RunArgs),
    /// List live runs (with --all, finished ones too)
    Ps(runs::PsArgs),
    /// Show one run
    Show(runs::ShowArgs),
    /// What the runs of coding CLIs used and cost, summed by agent, card, project, model or day
    Usage(usage::UsageArgs),
    /// Who changed what agents may do, and who answered what (`audit verify` checks the record)
    Audit(audit::AuditArgs),
    /// Print a run's output exactly as the program wrote it
    Logs(logs::LogsArgs),
    /// Stop a run by its ladder (SIGINT, then SIGTERM, then SIGKILL)
    Stop(runs::StopArgs),
    /// Look after the daemon
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// MCP servers: one list for all agents, secrets in the keychain
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Agents: saved setups of Claude Code, Codex, Gemini CLI or a program of yours, with the
    /// tools each may use
    #[command(subcommand)]
    Agent(agents::AgentCommand),
    /// The board: columns (Auto columns start their cards' agents), cards, holds
    Board(board::BoardArgs),
    /// Projects: git checkouts whose cards each work in a worktree and branch of their own
    #[command(subcommand)]
    Project(projects::ProjectCommand),
    /// Memory notes (path → text, with a version)
    #[command(subcommand)]
    Note(board::NoteCommand),
    /// Chats with the lead
    #[command(subcommand)]
    Chat(chat::ChatCommand),
    /// What waits for your OK: runs' tool calls and the lead's pending actions
    Inbox(inbox::InboxArgs),
    /// Let a run's tool call go on (--always: from now on), or run a pending action of the
    /// lead (exactly that call, once); --all CHAT or --card CARD in order
    Approve(inbox::ApproveArgs),
    /// Refuse a run's tool call (--block: from now on; --message: what the model is told), or
    /// drop a pending action of the lead
    Deny(inbox::DenyArgs),
    /// Drop a pending action of the lead (nothing runs)
    Discard(inbox::DiscardArgs),
    /// The web UI: start it (or find it), print its address and open the browser
    Ui(ui::UiArgs),
    /// Check that everything bosun needs here works: each check ok, warning or failing, with
    /// what to do (exits 1 when something configured needs what fails; never starts bosund)
    Doctor(doctor::DoctorArgs),
    /// Print the script that completes bosun's subcommands, flags and names (agents, servers,
    /// cards, runs, chats, projects from a running bosund) in bash, zsh or fish
    Completions { shell: complete::Shell },
}

#[derive(Subcommand, Debug)]
enum DaemonCommand {
    /// Whether bosund is running, and how it is
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Stop every run by its ladder and stop bosund
    Stop {
        #[arg(long)]
        json: bool,
    },
    /// Change bosund's own settings, kept across restarts: notify=on|off (desktop
    /// notifications of what waits for you and of failed runs); retention=DURATION (how long
    /// decided approvals and finished runs' decisions, logs and MCP call records are kept, 30d
    /// unless set; a run's summary stays); logs.max=SIZE|off (the most the finished runs' logs
    /// take together, such as 20G, the oldest pruned first; off unless set). Nothing of a run
    /// still going, or of a call still waiting, is ever pruned
    Set {
        /// Each KEY=VALUE
        #[arg(required = true, value_name = "KEY=VALUE")]
        settings: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Compact bosund's store now, so that its file gives back the space pruning freed (bosund
    /// also does it by itself after a round of pruning when no run goes). Runs' changes wait
    /// while it works
    Compact {
        #[arg(long)]
        json: bool,
    },
    /// Install bosund as a systemd user service (~/.config/systemd/user/bosund.service):
    /// started at login, restarted after a crash, its runs outliving it
    Install {
        /// A user service (the only kind bosun installs; bosund runs as you)
        #[arg(long)]
        user: bool,
        #[arg(long)]
        json: bool,
    },
    /// Disable and remove the systemd user service (stopping it stops its runs)
    Uninstall {
        #[arg(long)]
        user: bool,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dirs = StateDir::from_env()?;
    match args.command {
        Command::Run(a) => runs::run(&dirs, a).await,
        Command::Ps(a) => runs::ps(&dirs, a).await,
        Command::Usage(a) => usage::usage(&dirs, a).await,
        Command::Audit(a) => audit::audit(&dirs, a).await,
        Command::Show(a) => runs::show(&dirs, a).await,
        Command::Logs(a) => logs::logs(&dirs, a).await,
        Command::Stop(a) => runs::stop(&dirs, a).await,
        Command::Daemon(DaemonCommand::Status { json }) => runs::daemon_status(&dirs, json).await,
        Command::Daemon(DaemonCommand::Stop { json }) => runs::daemon_stop(&dirs, json).await,
        Command::Daemon(DaemonCommand::Set { settings, json }) => {
            runs::daemon_set(&dirs, settings, json).await
        }
        Command::Daemon(DaemonCommand::Compact { json }) => runs::daemon_compact(&dirs, json).await,
        Command::Daemon(DaemonCommand::Install { user: _, json }) => {
            service::install(&dirs, json).await
        }
        Command::Daemon(DaemonCommand::Uninstall { user: _, json }) => service::uninstall(json),
        Command::Mcp(c) => mcp::run(&dirs, c).await,
        Command::Agent(c) => agents::run(&dirs, c).await,
        Command::Board(a) => board::board(&dirs, a).await,
        Command::Project(c) => projects::run(&dirs, c).await,
        Command::Note(c) => board::note(&dirs, c).await,
        Command::Chat(c) => chat::chat(&dirs, c).await,
        Command::Inbox(a) => inbox::inbox(&dirs, a).await,
        Command::Approve(a) => inbox::approve(&dirs, a).await,
        Command::Deny(a) => inbox::deny(&dirs, a).await,
        Command::Discard(a) => inbox::discard(&dirs, a).await,
        Command::Ui(a) => ui::ui(&dirs, a).await,
        Command::Doctor(a) => doctor::doctor(&dirs, a).await,
        Command::Completions { shell } => complete::completions(shell),
    }
}

/// Connects to the daemon, starting it when it is not running.
pub(crate) async fn connect(dirs: &StateDir) -> anyhow::Result<Client> {
    Client::connect(dirs, true)
        .await
        .map_err(anyhow::Error::from)
}

/// The current directory, for a run given no `--cwd`.
pub(crate) fn current_dir() -> anyhow::Result<PathBuf> {
    std::env::current_dir().context("could not read the current directory")
}
