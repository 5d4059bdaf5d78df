//! `bosund`: the daemon. One per state directory; it owns the store, the actor tree and the
//! socket. People do not usually start it themselves: `bosun` starts it when it is not running.

mod api;
mod audit;
mod control;
mod ctx;
mod events;
#[cfg(test)]
mod invariants;
mod listener;
mod prune;
mod remote;
mod requests;
mod root;
mod session;
mod settings;
mod tables;
mod upgrade;
mod wire;

use std::fs;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bosun_kit::keychain::Keychain;
use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};
use ractor::Actor;
use tokio::signal::unix::{SignalKind, signal};
use tracing::{error, info};

use crate::events::{EventsHandle, EventsMsg};

use crate::control::RootMsg;
use crate::ctx::DaemonCtx;
use crate::listener::NOTIFIER_SESSION;
use crate::root::Root;
use crate::settings::DaemonSettings;

const HELP: &str = "\
bosund: the bosun daemon

Usage: bosund

It runs in the foreground, on the state directory named by BOSUN_HOME (else
$XDG_STATE_HOME/bosun, else ~/.local/state/bosun), and logs to bosund.log there.
`bosun` starts it by itself when it is not running. SIGINT or SIGTERM stops every
run by its ladder and exits; a second one kills every run at once.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => {}
        Some("-h" | "--help") => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("bosund {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("bosund: unknown argument `{other}`; bosund takes none (see bosund --help)");
            return ExitCode::from(2);
        }
    }
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bosund: {e:#}");
            error!("bosund stopped: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    // Everything bosund creates (store, log, run files) is private to its owner.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let dirs = StateDir::from_env()?;
    dirs.ensure()?;
    init_logging(&dirs)?;
    bosun_shared::process::raise_fd_limit();
    bosun_shared::process::tune_allocator();
    install_panic_hook();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    runtime.block_on(serve(dirs))
}

async fn serve(dirs: StateDir) -> anyhow::Result<ExitCode> {
    let mut store = open_store(&dirs).await?;
    fs::write(dirs.pid_file(), format!("{}\n", std::process::id()))
        .context("could not write the pid file")?;
    let keychain = tokio::task::spawn_blocking(Keychain::from_env).await?;
    info!(keychain = %keychain.describe(), "keychain");
    // Before the writer starts and before anyone is answered: an upgrade writes the store anew.
    let kc = keychain.clone();
    let (store, upgraded) = tokio::task::spawn_blocking(move || {
        let upgraded = crate::upgrade::run(&mut store, &kc);
        (store, upgraded)
    })
    .await?;
    let upgraded = upgraded.with_context(|| {
        format!(
            "could not upgrade the store {} (it is left as it was)",
            dirs.db().display()
        )
    })?;
    let settings = store
        .get::<DaemonSettings>(DaemonSettings::KEY)
        .context("could not read bosund's settings from the store")?
        .unwrap_or_default();
    // A price table of the person's that cannot be used is refused before anything starts:
    // costs reckoned with a bad price would be wrong, and so would the budgets held by them.
    let prices = bosun_shared::prices::Prices::load(&dirs.root().join("prices.toml"))
        .context("bosund did not start, since its price table cannot be used")?;
    // The budgets shared by a card's runs and a project's are kept from the first call on.
    let read = store.clone();
    let spend = tokio::task::spawn_blocking(move || {
        Ok::<_, bosun_store::StoreError>(bosun_runs::spend::Spend::load(
            read.all::<bosun_runs::spend::UsageRow>()?,
            read.all::<bosun_runs::spend::BudgetGrant>()?,
        ))
    })
    .await?
    .context("could not read the runs' usage from the store")?;
    let (writer, writer_thread) = StoreWriter::start(store.clone())?;
    let runner_bin = ctx::runner_binary()?;
    let remote = remote::setup(&dirs).await?;
    let ctx = Arc::new(
        DaemonCtx::new(
            dirs.clone(),
            store,
            writer,
            runner_bin,
            keychain,
            Timestamp::now(),
            remote,
        )
        .with_upgrade(upgraded.line)
        .with_settings(settings)
        .with_prices(prices)
        .with_spend(spend),
    );

    let (root, root_done) = Actor::spawn(Some("root".into()), Root, ctx.clone())
        .await
        .context("could not start the daemon's actors")?;
    info!(pid = std::process::id(), state_dir = %dirs.root().display(), "bosund is ready");

    let signals = tokio::spawn(forward_signals(root.clone()));
    let notifying = ctx.notifier.start(subscribe_to_events(ctx.events.clone()));
    let pruning = tokio::spawn(crate::prune::every_hour(ctx.clone()));
    let _ = root_done.await;
    signals.abort();
    notifying.abort();
    pruning.abort();
    ctx.stop_mcp_server().await;
    let failed = ctx.root_failure();

    drop(ctx);
    // The writer thread ends once every handle is dropped; wait so the last commit completes.
    let _ = tokio::task::spawn_blocking(move || writer_thread.join()).await;
    let _ = fs::remove_file(dirs.pid_file());
    match failed {
        Some(why) => {
            error!(%why, "bosund gave up");
            eprintln!("bosund: {why}");
            Ok(ExitCode::FAILURE)
        }
        None => {
            info!("bosund stopped");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The notifier's subscription to bosund's events, taken from the Events actor of the moment
/// (the notifier subscribes again when a restarted one has dropped it).
fn subscribe_to_events(events: EventsHandle) -> bosun_notify::Subscribe {
    Box::new(move || {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        events
            .get()?
            .cast(EventsMsg::Subscribe {
                session: NOTIFIER_SESSION,
                tx,
            })
            .ok()?;
        Some(rx)
    })
}

/// Opens the store, waiting a few seconds for a predecessor that is still dying (a SIGKILLed
/// daemon holds its lock until its last thread is gone, which can outlast its main thread), and
/// refusing at once when another live bosund holds it.
async fn open_store(dirs: &StateDir) -> anyhow::Result<Store> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match Store::open(&dirs.db(), &dirs.runs(), crate::tables::TABLES) {
            Ok(s) => return Ok(s),
            Err(StoreError::AlreadyOpen) => {
                let pid: Option<i32> = fs::read_to_string(dirs.pid_file())
                    .ok()
                    .and_then(|p| p.trim().parse().ok());
                let holder_alive = pid.is_some_and(|p| {
                    bosun_shared::process::stat(p).is_some_and(|s| s.state != 'Z')
                });
                if holder_alive || std::time::Instant::now() > deadline {
                    let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                    anyhow::bail!(
                        "another bosund{who} is already running on {}; stop it with `bosun daemon stop`, or set BOSUN_HOME to use another state directory",
                        dirs.root().display()
                    );
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            // These name the file and say what to do already.
            Err(e @ (StoreError::Damaged { .. } | StoreError::NoAccess { .. })) => {
                return Err(e.into());
            }
            Err(e) => {
                return Err(e).context(format!("could not open the store {}", dirs.db().display()));
            }
        }
    }
}

/// The first SIGINT or SIGTERM stops every run by its ladder; a second one kills them at once.
async fn forward_signals(root: ractor::ActorRef<RootMsg>) {
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        error!("could not listen for SIGINT and SIGTERM");
        return;
    };
    let mut immediate = false;
    loop {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        info!(immediate, "stop signal received");
        let _ = root.cast(RootMsg::Shutdown { immediate });
        immediate = true;
    }
}

fn init_logging(dirs: &StateDir) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dirs.log())
        .with_context(|| format!("could not open the log {}", dirs.log().display()))?;
    // rmcp logs what servers send (their instructions, notifications, messages it did not
    // expect), which bosun cannot redact; bosun reports rmcp's failures itself, redacted. Only
    // a BOSUN_LOG the person sets shows them.
    let filter = tracing_subscriber::EnvFilter::try_from_env("BOSUN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=off"));
    let to_terminal = std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(LogSink { file, to_terminal }))
        .init();
    Ok(())
}

/// The daemon's log goes to `bosund.log`, and to the terminal too when it runs in one.
struct LogSink {
    file: fs::File,
    to_terminal: bool,
}

/// A line that cannot be written (the state directory's disk is full) is dropped, never an
/// error: tracing reports a failed write with `eprintln!` to bosund's stderr, which is on the same
/// full disk, so that panics, and the panic hook logs through this very sink while it is locked,
/// which deadlocked the daemon. The daemon must outlive its own log.
impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.to_terminal {
            let _ = std::io::stderr().write_all(buf);
        }
        let _ = self.file.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.file.flush();
        Ok(())
    }
}

/// A panic inside an actor is caught by ractor and handled by supervision; this hook makes sure
/// it is also in the log, where someone will look for it.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        error!(panic = %info, "a panic was caught");
    }));
}
