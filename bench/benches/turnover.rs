//! Run turnover: 500 runs of `true`, 32 in flight, each from the start request to its recorded
//! exit, against `xargs -P 32` running the same 500 `true`s.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use bosun_bench::{Env, Figure, fmt_duration, median, report, settle, time};
use bosun_shared::protocol::runs::Following;
use bosun_shared::protocol::ui::{Event, FollowParams, StartRunParams};

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
    let left = Arc::new(AtomicUsize::new(RUNS));
    let cwd = env.scratch();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..IN_FLIGHT {
        let mut client = env.client().await?;
        let left = left.clone();
        let cwd = cwd.clone();
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let params = StartRunParams {
                    program: "true".into(),
                    cwd: cwd.clone(),
                    env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                    ..StartRunParams::default()
                };
                let run = client.call(params).await?;
                // Subscribe past any output: the subscription ends when the exit is recorded.
                let follow = FollowParams {
                    run: run.id.to_string(),
                    from_seq: u64::MAX,
                    follow: true,
                    stream: None,
                };
                let Following { sub, .. } = client.call(follow).await?;
                loop {
                    match client.next_event().await? {
                        Some(Event::LogEnd { sub: s, run, .. }) if s == sub => {
                            if run.outcome.map(|o| o.to_string()).as_deref() != Some("succeeded") {
                                bail!("a run did not succeed: {run:?}");
                            }
                            break;
                        }
                        Some(_) => {}
                        None => bail!("connection closed"),
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(t0.elapsed())
}
