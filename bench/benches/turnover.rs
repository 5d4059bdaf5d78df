//! Run turnover: 500 runs of `true`, 32 in flight, each from the start request to its recorded
//! exit, against `xargs -P 32` running the same 500 `true`s.

use std::time::Duration;

use bosun_bench::{Env, Figure, fmt_duration, median, report, runs_to_end, settle, time};
use bosun_protocol::ui::StartRunParams;

const RUNS: usize = 500;
const IN_FLIGHT: usize = 32;
const ROUNDS: usize = 3;

fn main() -> anyhow::Result<()> {
    let env = Env::new("turnover")?;
    let mut xargs = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let script = format!("seq {RUNS} | xargs -P {IN_FLIGHT} -I{{}} true");
        xargs.push(time(|| bosun_bench::sh(&script))?.0);
    }
    let xargs = median(xargs);

    env.start_daemon()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        rounds.push(runtime.block_on(round(&env))?);
    }
    let bosun = median(rounds);
    let rate = |d: Duration| RUNS as f64 / d.as_secs_f64();
    let ratio = rate(bosun) / rate(xargs);
    report(Figure {
        bench: "turnover",
        what: "500 runs of `true`, 32 in flight",
        value: format!("{} ({:.0} runs/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!("xargs -P 32 {} ({:.0}/s)", fmt_duration(xargs), rate(xargs)),
        ratio,
        target: ">= 0.15",
        met: ratio >= 0.15,
    });
    env.stop_daemon()?;
    Ok(())
}

/// Starts 500 runs with 32 in flight and waits for each one's recorded exit.
async fn round(env: &Env) -> anyhow::Result<Duration> {
    let params = StartRunParams {
        program: "true".into(),
        cwd: env.scratch(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..StartRunParams::default()
    };
    runs_to_end(env, RUNS, IN_FLIGHT, params).await
}
