//! Scale and recovery with 1,000 concurrent live runs of `sleep`: the daemon's and each
//! runner's memory, `bosun ps` answering while they run, and how long a restarted daemon takes
//! to reattach all of them after a SIGKILL.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report, rss_kib};
use bosun_protocol::runs::DaemonStatus;
use bosun_protocol::ui::StartRunParams;
use bosun_ui::Client;

const RUNS: usize = 1000;
const IN_FLIGHT: usize = 32;

fn main() -> anyhow::Result<()> {
    let env = Env::new("scale")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    env.start_daemon()?;
    let daemon = env.daemon_pid().context("no daemon")?;
    let idle_rss = rss_kib(daemon).unwrap_or(0);

    runtime.block_on(start_all(&env))?;
    runtime.block_on(wait_running(&env))?;

    // Memory.
    let daemon_rss = rss_kib(daemon).unwrap_or(0);
    let runners = runner_pids(&env);
    if runners.len() != RUNS {
        bail!("expected {RUNS} runners, found {}", runners.len());
    }
    let rss: Vec<u64> = runners.iter().filter_map(|p| rss_kib(*p)).collect();
    let max_runner = rss.iter().copied().max().unwrap_or(0);
    let mean_runner = rss.iter().sum::<u64>() as f64 / rss.len().max(1) as f64;
    let sleep_rss = sleep_pid(&env).and_then(rss_kib).unwrap_or(0);
    report(Figure {
        bench: "scale",
        what: "daemon memory, 1000 live runs",
        value: format!("{:.1} MB", daemon_rss as f64 / 1024.0),
        baseline: format!("idle daemon {:.1} MB", idle_rss as f64 / 1024.0),
        ratio: 150.0 * 1024.0 / daemon_rss.max(1) as f64,
        target: "150 MB",
        met: daemon_rss < 150 * 1024,
    });
    report(Figure {
        bench: "scale",
        what: "runner memory (largest of 1000)",
        value: format!(
            "{:.2} MB (mean {:.2})",
            max_runner as f64 / 1024.0,
            mean_runner / 1024.0
        ),
        baseline: format!("the sleep it runs {:.2} MB", sleep_rss as f64 / 1024.0),
        ratio: 5.0 * 1024.0 / max_runner.max(1) as f64,
        target: "5 MB",
        met: max_runner < 5 * 1024,
    });

    // `bosun ps` while they run.
    let mut ps = Vec::new();
    let mut sys_ps = Vec::new();
    for _ in 0..7 {
        let t0 = Instant::now();
        let out = env.bosun(&["ps"])?.stdout(Stdio::piped()).output()?;
        ps.push(t0.elapsed());
        if out.stdout.split(|b| *b == b'\n').count() < RUNS {
            bail!("bosun ps listed too few runs");
        }
        let t0 = Instant::now();
        Command::new("ps")
            .arg("-e")
            .stdout(Stdio::null())
            .status()?;
        sys_ps.push(t0.elapsed());
    }
    let (ps, sys_ps) = (median(ps), median(sys_ps));
    report(Figure {
        bench: "scale",
        what: "`bosun ps` with 1000 live runs",
        value: fmt_duration(ps),
        baseline: format!("`ps -e` {}", fmt_duration(sys_ps)),
        ratio: 0.1 / ps.as_secs_f64(),
        target: "100 ms",
        met: ps < Duration::from_millis(100),
    });

    // Recovery: SIGKILL the daemon, start a new one, time until every runner is back.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon),
        nix::sys::signal::Signal::SIGKILL,
    )?;
    while env.daemon_pid().is_some() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let t0 = Instant::now();
    let stderr = std::fs::File::create(env.scratch().join("bosund.stderr"))?;
    let mut bosund = Command::new(bin("bosund")?)
        .env("BOSUN_HOME", &env.home)
        .env("BOSUN_RUNNER_BIN", bin("bosun-runner")?)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()?;
    let (first_answer, all_back) = match runtime.block_on(wait_reattached(&env)) {
        Ok(t) => t,
        Err(e) => {
            let why =
                std::fs::read_to_string(env.scratch().join("bosund.stderr")).unwrap_or_default();
            bail!("{e}; bosund said: {why}");
        }
    };
    let recovery = all_back.duration_since(t0);
    report(Figure {
        bench: "scale",
        what: "reattach 1000 runs after SIGKILL of bosund",
        value: fmt_duration(recovery),
        baseline: format!(
            "first answer {}",
            fmt_duration(first_answer.duration_since(t0))
        ),
        ratio: 3.0 / recovery.as_secs_f64(),
        target: "3 s",
        met: recovery <= Duration::from_secs(3),
    });
    env.stop_daemon()?;
    let _ = bosund.wait();
    Ok(())
}

async fn start_all(env: &Env) -> anyhow::Result<()> {
    let left = Arc::new(AtomicUsize::new(RUNS));
    let mut tasks = Vec::new();
    for _ in 0..IN_FLIGHT {
        let mut client = env.client().await?;
        let left = left.clone();
        let cwd = env.scratch();
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let params = StartRunParams {
                    program: "sleep".into(),
                    args: vec!["600".into()],
                    cwd: cwd.clone(),
                    env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                    ..StartRunParams::default()
                };
                client.call(params).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

async fn wait_running(env: &Env) -> anyhow::Result<()> {
    let mut client = env.client().await?;
    let t0 = Instant::now();
    loop {
        let runs = client.runs(false).await?;
        if runs.len() == RUNS && runs.iter().all(|r| r.state == "running") {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(120) {
            bail!(
                "only {} of {RUNS} runs are running",
                runs.iter().filter(|r| r.state == "running").count()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits for the restarted daemon's first answer, then until every runner has reattached.
async fn wait_reattached(env: &Env) -> anyhow::Result<(Instant, Instant)> {
    let dirs = env.dirs()?;
    let t0 = Instant::now();
    let mut client = loop {
        match Client::connect(&dirs, false).await {
            Ok(c) => break c,
            Err(_) if t0.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => return Err(e.into()),
        }
    };
    let first = Instant::now();
    loop {
        let s = client.call(DaemonStatus).await?;
        if s.attached_runners >= RUNS {
            return Ok((first, Instant::now()));
        }
        if t0.elapsed() > Duration::from_secs(60) {
            bail!("only {} of {RUNS} runners reattached", s.attached_runners);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn runner_pids(env: &Env) -> Vec<i32> {
    bosun_tests::processes_of(&env.home)
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("bosun-runner"))
        .map(|(p, _)| p)
        .collect()
}

fn sleep_pid(env: &Env) -> Option<i32> {
    let runner = *runner_pids(env).first()?;
    bosun_shared::process::all_processes()
        .into_iter()
        .find(|p| p.ppid == runner)
        .map(|p| p.pid)
}
