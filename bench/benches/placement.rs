//! Runs placed on other hosts through a real Slurm (three nodes, each in a network namespace of
//! its own; needs root and Debian's slurmctld, slurmd, slurm-client and munge), against the same
//! work on the local backend, measured in the same run:
//!
//! - **turnover**: 300 runs of `true`, 32 in flight, each from the start request to its
//!   recorded exit, placed on Slurm vs started locally.
//! - **log throughput**: one run writing 1,000,000 lines of 100 bytes (`gen-lines`), from the
//!   program's start to its recorded exit with every chunk committed (the engine's time to
//!   start the job is left out: the turnover figure has it), its runner on a node (output over
//!   the TLS link) vs on this machine (the local socket).
//!
//! There is no target in the issue for these figures: they say what placement costs and what
//! limits it (see docs/benchmarks.md). `BOSUN_BENCH_PLACEMENT_RUNS` and
//! `BOSUN_BENCH_LOG_LINES` make it smaller for a quick smoke run.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use bosun_bench::{
    Env, Figure, bin, fmt_duration, median, report, run_to_end, runs_to_end, settle,
};
use bosun_protocol::ui::StartRunParams;
use bosun_shared::placement::Placement;
use bosun_tests::slurm::SlurmCluster;

const IN_FLIGHT: usize = 32;
const ROUNDS: usize = 3;

fn number(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let runs = number("BOSUN_BENCH_PLACEMENT_RUNS", 300);
    let lines = number("BOSUN_BENCH_LOG_LINES", 1_000_000);
    let cluster = SlurmCluster::try_start(3)?;
    let env = Env::new("placement")?;
    let shared = env.scratch().join("shared");
    let work = env.scratch().join("work");
    std::fs::create_dir_all(&shared)?;
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&env.home)?;
    let port = bosun_tests::free_port()?;
    std::fs::write(
        env.home.join("placement.toml"),
        format!(
            "listen = \"{}:{port}\"\n\n[slurm]\nshared_dir = \"{}\"\nrunner = \"{}\"\ncheck_secs = 1\n",
            cluster.host_addr(),
            shared.display(),
            bin("bosun-runner")?.display()
        ),
    )?;
    // The daemon started by this command keeps SLURM_CONF for sbatch, squeue and scancel.
    let out = env.bosun(&["ps"])?.envs(cluster.env()).output()?;
    if !out.status.success() {
        bail!(
            "bosund did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let slurm = Placement::Slurm { partition: None };

    // Turnover.
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        local.push(runtime.block_on(turnover(&env, &work, runs, Placement::Local))?);
        settle();
        remote.push(runtime.block_on(turnover(&env, &work, runs, slurm.clone()))?);
    }
    let (local, remote) = (median(local), median(remote));
    let rate = |d: Duration| runs as f64 / d.as_secs_f64();
    report(Figure {
        bench: "placement",
        what: "300 runs of `true` on 3 Slurm nodes",
        value: format!("{} ({:.1} runs/s)", fmt_duration(remote), rate(remote)),
        baseline: format!("local {} ({:.0}/s)", fmt_duration(local), rate(local)),
        ratio: rate(remote) / rate(local),
        target: "none",
        met: true,
    });

    // One run's log throughput.
    let generator = bin("gen-lines")?.display().to_string();
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        local.push(runtime.block_on(one_run(&env, &work, &generator, lines, Placement::Local))?);
        settle();
        remote.push(runtime.block_on(one_run(&env, &work, &generator, lines, slurm.clone()))?);
    }
    let (local, remote) = (median(local), median(remote));
    let mb = (lines * 100) as f64 / 1e6;
    report(Figure {
        bench: "placement",
        what: "one run's 100 MB log over the TLS link",
        value: format!(
            "{} ({:.0} MB/s)",
            fmt_duration(remote),
            mb / remote.as_secs_f64()
        ),
        baseline: format!(
            "local socket {} ({:.0} MB/s)",
            fmt_duration(local),
            mb / local.as_secs_f64()
        ),
        ratio: local.as_secs_f64() / remote.as_secs_f64(),
        target: "none",
        met: true,
    });
    env.stop_daemon()?;
    drop(cluster);
    Ok(())
}

/// Starts `runs` runs of `true` with 32 in flight and waits for each one's recorded exit.
async fn turnover(
    env: &Env,
    cwd: &Path,
    runs: usize,
    placement: Placement,
) -> anyhow::Result<Duration> {
    let params = StartRunParams {
        program: "true".into(),
        cwd: cwd.to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        placement,
        ..StartRunParams::default()
    };
    runs_to_end(env, runs, IN_FLIGHT, params).await
}

/// One run of `gen-lines LINES`, from the request to its recorded exit.
async fn one_run(
    env: &Env,
    cwd: &Path,
    generator: &str,
    lines: usize,
    placement: Placement,
) -> anyhow::Result<Duration> {
    let mut client = env.client().await?;
    let params = StartRunParams {
        program: generator.to_string(),
        args: vec![lines.to_string()],
        cwd: cwd.to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        placement,
        ..StartRunParams::default()
    };
    let last = run_to_end(&mut client, params).await?;
    if last.last_seq < 1 {
        bail!("the run wrote nothing");
    }
    // From the program's start to its recorded exit: the log's way, without the time the
    // engine takes to start the job.
    match (last.started_at, last.ended_at) {
        (Some(start), Some(end)) => Ok(Duration::from_millis(
            end.as_millis().saturating_sub(start.as_millis()),
        )),
        _ => bail!("the run has no start or end time"),
    }
}
