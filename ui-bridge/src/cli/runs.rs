//! `bosun run`, `ps`, `show`, `stop` and `daemon …`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bosun_protocol::runner::StopLadder;
use bosun_protocol::runs::{DaemonCompact, DaemonSet, DaemonStatus, DaemonStop, GetRun, StopRun};
use bosun_protocol::ui::StartRunParams;
use bosun_shared::paths::StateDir;
use bosun_shared::settings::KeyValueError;
use bosun_shared::time::{StopGrace, TimeCap};
use bosun_ui::{Client, ClientError};
use clap::Args;

use super::logs::{FollowOptions, print_log};
use super::output;
use super::{connect, current_dir};

/// The variables of the caller's environment a run gets, besides its own `--env` lines.
const ENV_ALLOW_LIST: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
];

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A name for the run, shown in listings
    #[arg(long)]
    name: Option<String>,
    /// The working directory (default: the current one)
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// An environment variable for the run, KEY=VALUE (repeatable)
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Stop the run by its ladder after this long, such as 90s, 10m or 1h30m
    #[arg(long, value_name = "DURATION")]
    time_cap: Option<String>,
    /// How long the program has after SIGINT before SIGTERM, and after SIGTERM before SIGKILL
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    stop_grace: String,
    /// Keep at most this much of the run's output, such as 1G or 500M; past it the program goes
    /// on and its output is dropped, with a note in the log
    #[arg(long, value_name = "SIZE")]
    max_output: Option<String>,
    /// Where the run goes: local (this machine, the default), slurm or slurm:PARTITION (a host
    /// Slurm picks; see docs/placement.md)
    #[arg(long, value_name = "WHERE")]
    placement: Option<String>,
    /// Stream the run's log until it ends, and exit with the run's exit status
    #[arg(long, short = 'f')]
    follow: bool,
    /// Print the run as JSON
    #[arg(long)]
    json: bool,
    /// The program and its arguments
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    command: Vec<String>,
}

pub async fn run(dirs: &StateDir, a: RunArgs) -> anyhow::Result<ExitCode> {
    let Some((program, args)) = a.command.split_first() else {
        anyhow::bail!("no program given; write it after `--`, such as: bosun run -- make test");
    };
    let mut env: Vec<(String, String)> = ENV_ALLOW_LIST
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .chain(std::env::vars().filter(|(k, _)| k.starts_with("LC_")))
        .collect();
    // A name given twice in --env is refused (which one was meant cannot be known); a name of
    // this command's own environment is replaced by the line given for it.
    let lines = bosun_shared::settings::parse(&a.env).map_err(|e| match e {
        KeyValueError::NotKeyValue(line) => anyhow::anyhow!(
            "`{line}` is not KEY=VALUE; write an environment line such as --env RUST_LOG=debug"
        ),
        e @ (KeyValueError::NoKey(_) | KeyValueError::Twice { .. }) => {
            anyhow::anyhow!("--env {e}")
        }
    })?;
    for line in lines {
        env.retain(|(key, _)| key != line.key);
        env.push((line.key.to_string(), line.value.to_string()));
    }
    let time_cap_ms = a
        .time_cap
        .as_deref()
        .map(TimeCap::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--time-cap: {e}"))?
        .map(TimeCap::as_millis);
    let grace =
        StopGrace::parse(&a.stop_grace).map_err(|e| anyhow::anyhow!("--stop-grace: {e}"))?;
    let max_output = a
        .max_output
        .as_deref()
        .map(bosun_shared::size::parse_size)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--max-output: {e}"))?;
    let grace_ms = grace.as_millis();
    let placement = match a.placement.as_deref() {
        Some(p) => p
            .parse::<bosun_shared::placement::Placement>()
            .map_err(|e| anyhow::anyhow!("--placement: {e}"))?,
        None => bosun_shared::placement::Placement::Local,
    };
    let cwd = match a.cwd {
        Some(d) if d.is_absolute() => d,
        Some(d) => current_dir()?.join(d),
        None => current_dir()?,
    };
    let params = StartRunParams {
        name: a.name,
        program: program.clone(),
        args: args.to_vec(),
        cwd,
        env,
        time_cap_ms,
        ladder: Some(StopLadder {
            int_grace_ms: grace_ms,
            term_grace_ms: grace_ms,
        }),
        umask: Some(current_umask()),
        max_output,
        placement,
    };
    let mut client = connect(dirs).await?;
    let run = client.call(params).await?;
    if !a.follow {
        if a.json {
            output::print_json(&run)?;
        } else {
            outln!("{}", run.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if a.json {
        output::print_json(&run)?;
    } else if output::stderr_is_terminal() {
        errln!(
            "bosun: run {} started; Ctrl-C stops following, not the run",
            run.short_id
        );
    }
    let opts = FollowOptions {
        from_seq: 1,
        follow: true,
        stream: None,
        timestamps: false,
        json: a.json,
    };
    let end = print_log(dirs, &mut client, &run.id.to_string(), opts).await?;
    Ok(output::exit_code_of(&end))
}

#[derive(Args, Debug)]
pub struct PsArgs {
    /// Finished runs too
    #[arg(long, short = 'a')]
    all: bool,
    #[arg(long)]
    json: bool,
}

pub async fn ps(dirs: &StateDir, a: PsArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let runs = client.runs(a.all).await?;
    if a.json {
        output::print_json(&runs)?;
    } else {
        output::print_table(&runs);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The run's id, or a unique start of it
    #[arg(add = super::complete::runs())]
    run: String,
    #[arg(long)]
    json: bool,
}

pub async fn show(dirs: &StateDir, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let run = client.call(GetRun { run: a.run }).await?;
    if a.json {
        output::print_json(&run)?;
    } else {
        output::print_run(&run);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct StopArgs {
    /// The run's id, or a unique start of it
    #[arg(add = super::complete::runs())]
    run: String,
    /// Wait until the run has ended
    #[arg(long, short = 'w')]
    wait: bool,
    #[arg(long)]
    json: bool,
}

pub async fn stop(dirs: &StateDir, a: StopArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let mut run = client.call(StopRun { run: a.run }).await?;
    if a.wait {
        let opts = FollowOptions {
            from_seq: u64::MAX,
            follow: true,
            stream: None,
            timestamps: false,
            json: false,
        };
        run = print_log(dirs, &mut client, &run.id.to_string(), opts).await?;
    }
    if a.json {
        output::print_json(&run)?;
    } else if a.wait {
        outln!("{} {}", run.short_id, output::state_words(&run));
    } else {
        outln!("{} stopping", run.short_id);
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn daemon_status(dirs: &StateDir, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match Client::connect(dirs, false).await {
        Ok(c) => c,
        Err(ClientError::NotRunning(dir)) => {
            // Why the last one stopped or would not start (a damaged store), if it said.
            let last = bosun_ui::daemon::last_words(dirs);
            if json {
                output::print_json(&serde_json::json!({
                    "running": false,
                    "state_dir": dir,
                    "last_words": last,
                }))?;
            } else {
                outln!("bosund is not running (state directory {dir})");
                if let Some(why) = last {
                    outln!("It last stopped, or would not start, saying: {why}");
                }
            }
            return Ok(ExitCode::from(3));
        }
        Err(e) => return Err(e.into()),
    };
    let status = client.call(DaemonStatus).await?;
    let started_by = super::service::StartedBy::of(status.pid);
    if json {
        let mut v = serde_json::to_value(&status)?;
        v["running"] = serde_json::Value::Bool(true);
        v["started_by"] = serde_json::to_value(&started_by)?;
        output::print_json(&v)?;
    } else {
        output::print_status(&status);
        outln!("{:<14}{}", "started", started_by.words());
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun daemon set KEY=VALUE…`: starts bosund if need be (the settings are its own, kept in
/// its store), and prints the status as it is after the change.
pub async fn daemon_set(
    dirs: &StateDir,
    settings: Vec<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let status = client.call(DaemonSet { settings }).await?;
    if json {
        output::print_json(&status)?;
    } else if let Some(notify) = &status.notify {
        outln!("{:<14}{}", "notify", output::notify_words(notify));
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun daemon compact`: starts bosund if need be, compacts its store and says what the file
/// weighed before and after.
pub async fn daemon_compact(dirs: &StateDir, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let status = client.call(DaemonCompact).await?;
    if json {
        output::print_json(&status)?;
    } else if let Some(c) = &status.last_compact {
        outln!(
            "compacted bosun.redb: {} → {}, in {}",
            output::format_size(c.before),
            output::format_size(c.after),
            bosun_shared::time::format_duration(Duration::from_millis(c.took_ms))
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn daemon_stop(dirs: &StateDir, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = match Client::connect(dirs, false).await {
        Ok(c) => c,
        Err(ClientError::NotRunning(dir)) => {
            if json {
                output::print_json(&serde_json::json!({ "stopped": false, "was_running": false }))?;
            } else {
                outln!("bosund is not running (state directory {dir})");
            }
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    let pid = client.welcome.daemon_pid;
    let alive = || bosun_shared::process::stat(pid as i32).is_some_and(|s| s.state != 'Z');
    // A daemon with nothing to stop may close the connection before its answer is out (or
    // another `daemon stop` got there first): a closed connection is its exit, once its process
    // is gone.
    let answered = match client.call(DaemonStop).await {
        Ok(()) => true,
        Err(ClientError::Connection(_)) => false,
        Err(e) => return Err(e.into()),
    };
    if answered {
        if !json && output::stderr_is_terminal() {
            errln!("bosun: stopping every run, then bosund (pid {pid})…");
        }
        // The daemon closes every connection as it exits.
        client.closed().await;
    }
    // The process may take a moment more to be gone after closing its sockets.
    for _ in 0..250 {
        if !alive() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if !answered && alive() {
        anyhow::bail!(
            "bosund (pid {pid}) closed the connection without stopping; run `bosun daemon stop` again"
        );
    }
    if json {
        output::print_json(
            &serde_json::json!({ "stopped": true, "was_running": true, "pid": pid }),
        )?;
    } else {
        outln!("bosund stopped");
    }
    Ok(ExitCode::SUCCESS)
}

/// This process's file mode creation mask (reading it means setting it, so it is set back).
fn current_umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
}
