//! `bosun ui`: the web UI. Starts the bridge (`bosun ui --foreground`, detached in a session of
//! its own, its output in `ui.log`) or finds the one already running from `ui.json`, prints the
//! sign-in address and opens the browser; `--stop` ends it.

use std::fs::OpenOptions;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_shared::paths::StateDir;
use bosun_shared::process::{Pid, signal_process};
use bosun_ui::web::{self, Address};
use clap::Args;
use nix::sys::signal::Signal;

#[derive(Args, Debug)]
pub struct UiArgs {
    /// Stop the web UI of this state directory
    #[arg(long, conflicts_with_all = ["foreground", "port", "listen", "no_open"])]
    stop: bool,
    /// Serve in this process instead of in the background (for service managers)
    #[arg(long)]
    foreground: bool,
    /// The port to listen on (default: a free one)
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// Listen on this address instead of 127.0.0.1. Anyone who can reach it can try to sign
    /// in; only do this on a network you trust
    #[arg(long, value_name = "ADDR")]
    listen: Option<IpAddr>,
    /// Print the address only; do not open a browser
    #[arg(long)]
    no_open: bool,
    /// Print the address as JSON: url, login_url, pid, port
    #[arg(long)]
    json: bool,
}

/// How long a freshly started bridge has to write its address file.
const START_TIMEOUT: Duration = Duration::from_secs(15);

pub async fn ui(dirs: &StateDir, a: UiArgs) -> anyhow::Result<ExitCode> {
    dirs.ensure()?;
    if a.stop {
        return stop(dirs);
    }
    let listen = a.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    if !listen.is_loopback() {
        errln!(
            "bosun: warning: the web UI listens on {listen}, not only on this machine: anyone who can reach it can try to sign in, and its traffic is not encrypted"
        );
    }
    let running = Address::read(dirs).filter(Address::is_alive);
    if a.foreground {
        if let Some(r) = running {
            bail!(
                "the web UI of {} already runs (pid {}, port {}); `bosun ui --stop` ends it",
                dirs.root().display(),
                r.pid,
                r.port
            );
        }
        return foreground(dirs, listen, a.port.unwrap_or(0));
    }
    let (address, started) = match running {
        Some(r) => {
            if a.port.is_some_and(|p| p != r.port) || a.listen.is_some_and(|l| l != r.listen) {
                bail!(
                    "the web UI already runs on {}:{}; `bosun ui --stop` first to move it",
                    r.listen,
                    r.port
                );
            }
            (r, false)
        }
        None => (start(dirs, listen, a.port.unwrap_or(0)).await?, true),
    };
    let (url, login) = (format!("{}/", address.base_url()), address.login_url());
    if a.json {
        let v = serde_json::json!({
            "url": url, "login_url": login, "pid": address.pid, "port": address.port, "started": started,
        });
        outln!("{v}");
    } else {
        outln!("bosun web UI: {url}");
        outln!("sign in (the address works once): {login}");
    }
    if !a.no_open {
        match open_browser(&login).await {
            Ok(program) if !a.json => outln!("opened with {program}"),
            Ok(_) => {}
            Err(why) => {
                errln!("bosun: could not open a browser ({why}); open the sign-in address yourself")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves in this process. The server gets a runtime of its own with worker threads (the
/// command line's is single-threaded), on a thread of its own.
fn foreground(dirs: &StateDir, listen: IpAddr, port: u16) -> anyhow::Result<ExitCode> {
    let dirs = dirs.clone();
    let server = std::thread::Builder::new()
        .name("bosun-ui".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            runtime
                .block_on(web::serve(dirs, web::Options { listen, port }))
                .map_err(anyhow::Error::from)
        })
        .context("could not start the web UI's thread")?;
    match server.join() {
        Ok(result) => result.map(|()| ExitCode::SUCCESS),
        Err(_) => bail!("the web UI stopped on an internal error; see its log"),
    }
}

/// Starts `bosun ui --foreground` in a session of its own and waits for its address file.
async fn start(dirs: &StateDir, listen: IpAddr, port: u16) -> anyhow::Result<Address> {
    let exe = std::env::current_exe().context("could not find the bosun program")?;
    let log_path = dirs.root().join("ui.log");
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("could not open {}", log_path.display()))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args([
        "ui",
        "--foreground",
        "--port",
        &port.to_string(),
        "--listen",
        &listen.to_string(),
    ])
    .env("BOSUN_HOME", dirs.root())
    .stdin(Stdio::null())
    .stdout(log.try_clone()?)
    .stderr(log);
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("could not start {}", exe.display()))?;
    let started = Instant::now();
    loop {
        if let Some(a) = Address::read(dirs).filter(|a| a.pid == child.id() && a.is_alive()) {
            return Ok(a);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let why = log.lines().last().unwrap_or_default().trim();
            bail!(
                "the web UI exited at once ({status}){}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", why.trim_start_matches("bosun: "))
                }
            );
        }
        if started.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            bail!(
                "the web UI did not start within {}s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Ends the running bridge: SIGTERM, then SIGKILL if it is still there after 5 seconds.
fn stop(dirs: &StateDir) -> anyhow::Result<ExitCode> {
    let Some(address) = Address::read(dirs).filter(Address::is_alive) else {
        let _ = std::fs::remove_file(Address::path(dirs));
        outln!("the web UI is not running");
        return Ok(ExitCode::SUCCESS);
    };
    let pid = Pid::of_child(address.pid);
    signal_process(pid, Signal::SIGTERM)
        .with_context(|| format!("could not stop the web UI (pid {})", address.pid))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while address.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if address.is_alive() {
        let _ = signal_process(pid, Signal::SIGKILL);
        while address.is_alive() && Instant::now() < deadline + Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if Address::read(dirs).is_some_and(|a| a.pid == address.pid) {
        let _ = std::fs::remove_file(Address::path(dirs));
    }
    outln!("stopped the web UI (pid {})", address.pid);
    Ok(ExitCode::SUCCESS)
}

/// How long the browser opener has to say whether it opened the page.
const OPENER_LIMIT: Duration = Duration::from_secs(10);

/// Opens `url` with `$BROWSER` (a command, `%s` standing for the address if given), else
/// `xdg-open`; says which. Used by `bosun ui` and `bosun mcp sign-in`.
///
/// The opener starts the person's own browser, so unlike the helpers bosund starts it is never
/// killed: it gets a process group of its own (a Ctrl-C during the wait for a sign-in does not
/// reach a browser it started), and bosun waits at most [`OPENER_LIMIT`] for its answer. One
/// still running then (a browser that stays in the foreground) has opened the page.
pub(super) async fn open_browser(url: &str) -> Result<String, OpenError> {
    // bosund refuses a sign-in address that is not https:// (or http:// to this machine); this
    // opens nothing else whatever bosund answered (an opener runs `javascript:` and `file:`).
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("https" | "http")) {
        return Err(OpenError::NotWeb(url.into()));
    }
    let (program, args): (String, Vec<String>) = match std::env::var("BROWSER") {
        Ok(b) if !b.trim().is_empty() => {
            let mut parts = b.split_whitespace().map(str::to_string);
            let program = parts.next().unwrap_or_default();
            let mut args: Vec<String> = parts.collect();
            if args.iter().any(|a| a.contains("%s")) {
                args = args.into_iter().map(|a| a.replace("%s", url)).collect();
            } else {
                args.push(url.to_string());
            }
            (program, args)
        }
        Ok(_) | Err(_) => ("xdg-open".to_string(), vec![url.to_string()]),
    };
    let spawned = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut opener = match spawned {
        Ok(opener) => opener,
        Err(why) => return Err(OpenError::Run { program, why }),
    };
    match tokio::time::timeout(OPENER_LIMIT, opener.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(program),
        Ok(Ok(status)) => Err(OpenError::Failed { program, status }),
        Ok(Err(why)) => Err(OpenError::Run { program, why }),
        Err(_) => Ok(program),
    }
}

/// Why [`open_browser`] opened no page; the person opens the address themselves.
#[derive(Debug, thiserror::Error)]
pub(super) enum OpenError {
    /// Not an `http:` or `https:` address: never handed to an opener.
    #[error("`{0}` is not an http(s) address, so bosun does not open it")]
    NotWeb(String),
    /// The opener could not be started, or waited for.
    #[error("{program}: {why}")]
    Run {
        program: String,
        why: std::io::Error,
    },
    #[error("{program} exited with {status}")]
    Failed {
        program: String,
        status: std::process::ExitStatus,
    },
}
