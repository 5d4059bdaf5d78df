//! The pruning soak: 1,000,000 decided tool calls over 60 simulated days, then the retention's
//! pruning, and another 30 days on top: the store's size, the inbox's speed, and one round of
//! pruning (its time and bosund's memory), before and after.
//!
//! **How the calls are made.** Two months of tool calls cannot be made through real runs on a
//! 2-core machine, so they are written into a stopped bosund's store as a RunActor writes them:
//! each call an [`ApprovalRecord`] decided by the person (with its place among those waiting
//! deleted in the same commit, [`changes_for`]), and each run's [`RunRecord`] with a
//! [`Decision`] per call, its tool calls and its usage row; the real record types, through the
//! real [`StoreWriter`], ten runs (5,000 calls) to a commit. A call's input is a shell command
//! of a few hundred bytes, as Claude Code sends it. The calls are spread evenly over the 60
//! days before now, 500 to a run (2,000 runs), each run ending 30 s after its last call.
//!
//! **What waits.** Five real runs (the `fake-claude` stand-in of the approvals benchmark, each
//! waiting an hour on one `Read`) are started once bosund is up: their approvals wait through
//! the round and must still wait after it.
//!
//! **The clock.** bosund prunes what was decided before now minus the retention. The first
//! round is `bosun daemon set retention=30d`: it prunes the older 30 of the 60 days. The next
//! 30 days cannot be waited for, so they are written after the first 60 (dated from an hour
//! after the first fill's end to 30 days after it), and the second round's retention is the
//! time since the first fill's end: what was 30 days old at the start of those 30 days is what
//! goes, exactly as a `retention=30d` round at their end would prune.
//!
//! **The figures.** The inbox is the request `bosun inbox` sends (the lead's pending actions,
//! then the runs' calls that wait), the median of 21 over one connection; its baseline is the
//! same over an empty store. The round's time is bosund's own (`daemon status`, last pruned),
//! and the time from the `daemon set` until `daemon status` shows the round ended. The store's
//! size is `bosun.redb`'s on disk; its live data is what the records weigh as JSON.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_agents::record::{AgentRun, Decision, ToolCall};
use bosun_approvals::record::{ApprovalRecord, ApprovalState, WaitingApproval, changes_for};
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report, rss_kib};
use bosun_protocol::approvals::Approvals;
use bosun_protocol::lead::Inbox;
use bosun_protocol::runs::{DaemonCompact, DaemonSet, DaemonStatus, DaemonStatusView};
use bosun_runs::decisions::DecisionRow;
use bosun_runs::record::RunRecord;
use bosun_runs::spend::UsageRow;
use bosun_shared::{ApprovalId, RunId, Timestamp};
use bosun_store::writer::{Change, StoreWriter};
use bosun_store::{Record, Store};
use bosun_ui::Client;
use serde_json::json;

const DAY: u64 = 86_400_000;
/// The first fill: calls, runs, days.
const CALLS: u64 = 1_000_000;
const RUNS: u64 = 2_000;
const DAYS: u64 = 60;
/// The next 30 days.
const MORE_CALLS: u64 = 500_000;
const MORE_RUNS: u64 = 1_000;
const MORE_DAYS: u64 = 30;
/// Every run of both fills makes as many calls.
const CALLS_PER_RUN: u64 = CALLS / RUNS;
/// Runs to a commit.
const RUNS_PER_COMMIT: u64 = 10;
/// Real runs waiting on a call through each round.
const WAITING: usize = 5;
/// Inbox requests timed, for a median.
const INBOX_TIMES: usize = 21;
/// The longest a round, a start or the waiting runs are waited for.
const PATIENCE: Duration = Duration::from_secs(600);

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let env = Env::new("soak")?;
    let result = runtime.block_on(bench(&env));
    let ended = env.end_everything();
    result.and(ended)
}

async fn bench(env: &Env) -> anyhow::Result<()> {
    let s = Setup::new(env)?;
    let empty_inbox = inbox_median(env, 0).await?;
    let empty_size = db_size(env)?;
    // The baseline of bosund's memory: its RSS on the empty store, after the same start.
    let empty_rss = env
        .daemon_pid()
        .and_then(rss_kib)
        .context("bosund is not running")?;
    env.stop_daemon()?;
    wait_stopped(env)?;

    let k = scale()?;
    let (calls, runs, more_calls, more_runs) = (CALLS / k, RUNS / k, MORE_CALLS / k, MORE_RUNS / k);

    // 60 days of decided calls, ending now.
    let end1 = Timestamp::now().as_millis();
    let fill1 = fill(env, calls, runs, end1 - DAYS * DAY, end1).await?;
    let size_filled = db_size(env)?;
    println!(
        "soak       wrote {calls} decided calls of {runs} runs ({} of records as JSON) in {}; bosun.redb {}",
        mib(fill1.bytes),
        fmt_duration(fill1.took),
        mib(size_filled)
    );
    let round1 = s.round(Retention::Days30, calls, &fill1, false).await?;
    env.stop_daemon()?;
    wait_stopped(env)?;
    let kept1 = count(env)?;
    println!("soak       after the first round the store holds: {kept1}");
    // The waiting runs' calls ended with bosund: decided now, and kept.
    kept1.check(
        runs + WAITING as u64,
        calls - round1.pruned.approvals + WAITING as u64,
    )?;

    // 30 days more, after the first 60 (the clock moved on by the retention, see the top).
    let from2 = end1 + 3_600_000;
    let fill2 = fill(env, more_calls, more_runs, from2, end1 + MORE_DAYS * DAY).await?;
    let size_filled2 = db_size(env)?;
    println!(
        "soak       wrote {more_calls} decided calls of {more_runs} runs more in {}; bosun.redb {}",
        fmt_duration(fill2.took),
        mib(size_filled2)
    );
    let round2 = s
        .round(
            Retention::SinceFirstFill(end1),
            calls - round1.pruned.approvals + WAITING as u64 + more_calls,
            &fill2,
            true,
        )
        .await?;
    env.stop_daemon()?;
    wait_stopped(env)?;
    let kept2 = count(env)?;
    println!("soak       after the second round the store holds: {kept2}");
    let gone = round1.pruned.approvals + round2.pruned.approvals;
    kept2.check(
        runs + more_runs + 2 * WAITING as u64,
        calls + more_calls + 2 * WAITING as u64 - gone,
    )?;
    if kept2.summaries_whole != runs + more_runs {
        bail!(
            "{} of {} runs' summaries are whole after both rounds",
            kept2.summaries_whole,
            runs + more_runs
        );
    }

    figures(
        &[round1, round2],
        empty_inbox,
        empty_size,
        empty_rss,
        &kept2,
    );
    Ok(())
}

/// The retention a round is made with.
enum Retention {
    Days30,
    /// The time since the first fill's end: 30 days as of the end of the next 30.
    SinceFirstFill(u64),
}

impl Retention {
    fn setting(&self) -> String {
        match self {
            Retention::Days30 => "retention=30d".into(),
            Retention::SinceFirstFill(end) => format!(
                "retention={}s",
                Timestamp::now()
                    .as_millis()
                    .saturating_sub(*end)
                    .div_ceil(1000)
            ),
        }
    }
}

/// `BOSUN_BENCH_SOAK_SCALE=100` writes a hundredth of the calls and runs, for a quick smoke
/// run (each run still makes 500 calls over the same days).
fn scale() -> anyhow::Result<u64> {
    match std::env::var("BOSUN_BENCH_SOAK_SCALE") {
        Ok(v) => match v.parse::<u64>() {
            Ok(k) if (1..=RUNS / 2).contains(&k) => Ok(k),
            _ => bail!(
                "BOSUN_BENCH_SOAK_SCALE={v}: give a whole number from 1 to {}",
                RUNS / 2
            ),
        },
        Err(_) => Ok(1),
    }
}

/// What a round was measured as.
struct Round {
    size_before: u64,
    size_after: u64,
    inbox_before: Duration,
    inbox_after: Duration,
    start: Duration,
    /// bosund's RSS once it answers, before anything is asked of it.
    rss_started: u64,
    /// After the waiting runs started and the inbox was asked.
    rss_before: u64,
    /// After the round and `ps --all`, which read every run.
    rss_listed: u64,
    rss_peak: u64,
    rss_after: u64,
    /// bosund's own time, and the time from the `daemon set` until `daemon status` said so.
    took: Duration,
    seen: Duration,
    pruned: Pruned,
    runs_list: String,
    /// `bosun daemon compact` after the round (the last one only): its time, and the file's
    /// size after it.
    compacted: Option<(Duration, u64)>,
}

#[derive(Clone, Copy, Debug)]
struct Pruned {
    approvals: u64,
    runs: u64,
}

fn figures(
    rounds: &[Round; 2],
    empty_inbox: Duration,
    empty_size: u64,
    empty_rss: u64,
    kept: &Kept,
) {
    let [r1, r2] = rounds;
    for (n, r) in [(1, r1), (2, r2)] {
        report(Figure {
            bench: "soak",
            what: &format!("bosund's RSS right after start, round {n}"),
            value: mib(r.rss_started * 1024),
            baseline: format!("empty store {}", mib(empty_rss * 1024)),
            ratio: r.rss_started as f64 / empty_rss.max(1) as f64,
            target: "< 150 MB",
            met: r.rss_started * 1024 < 150_000_000,
        });
        if let Some((took, size)) = r.compacted {
            report(Figure {
                bench: "soak",
                what: &format!("`bosun daemon compact` after round {n}"),
                value: format!("{} → {}", mib(r.size_after), mib(size)),
                baseline: format!("took {}", fmt_duration(took)),
                ratio: size as f64 / r.size_after.max(1) as f64,
                target: "< 1.0",
                met: size < r.size_after,
            });
        }
    }
    report(Figure {
        bench: "soak",
        what: "bosun.redb, 1M calls (60 days) → pruned to 30",
        value: format!("{} → {}", mib(r1.size_before), mib(r1.size_after)),
        baseline: format!("empty store {}", mib(empty_size)),
        ratio: r1.size_after as f64 / r1.size_before.max(1) as f64,
        target: "≤ 1.0",
        met: r1.size_after <= r1.size_before,
    });
    report(Figure {
        bench: "soak",
        what: "bosun.redb, +30 days (500k calls), pruned",
        value: format!("{} → {}", mib(r2.size_before), mib(r2.size_after)),
        baseline: format!("first peak {}", mib(r1.size_before)),
        ratio: r2.size_after.max(r2.size_before) as f64 / r1.size_before.max(1) as f64,
        target: "≤ 1.1",
        met: (r2.size_after.max(r2.size_before) as f64) <= 1.1 * r1.size_before as f64,
    });
    report(Figure {
        bench: "soak",
        what: "live records (JSON) after both rounds",
        value: mib(kept.bytes),
        baseline: format!("bosun.redb {}", mib(r2.size_after)),
        ratio: kept.bytes as f64 / r2.size_after.max(1) as f64,
        target: "info",
        met: true,
    });
    for (n, r) in [(1, r1), (2, r2)] {
        let ratio = r.inbox_before.as_secs_f64() / r.inbox_after.as_secs_f64().max(1e-9);
        report(Figure {
            bench: "soak",
            what: &format!("`bosun inbox`, round {n}: before → after (median of {INBOX_TIMES})"),
            value: format!(
                "{} → {}",
                fmt_duration(r.inbox_before),
                fmt_duration(r.inbox_after)
            ),
            baseline: format!("empty store {}", fmt_duration(empty_inbox)),
            ratio,
            target: "info",
            met: true,
        });
        report(Figure {
            bench: "soak",
            what: &format!(
                "round {n}: {} calls, {} runs' decisions pruned",
                r.pruned.approvals, r.pruned.runs
            ),
            value: fmt_duration(r.took),
            baseline: format!("seen in `daemon status` after {}", fmt_duration(r.seen)),
            ratio: r.took.as_secs_f64() / r.seen.as_secs_f64().max(1e-9),
            target: "info",
            met: true,
        });
        report(Figure {
            bench: "soak",
            what: &format!(
                "round {n}: bosund's RSS started / runs waiting / round's peak / after it / after `ps --all`"
            ),
            value: format!(
                "{} / {} / {} / {} / {}",
                mib(r.rss_started * 1024),
                mib(r.rss_before * 1024),
                mib(r.rss_peak * 1024),
                mib(r.rss_after * 1024),
                mib(r.rss_listed * 1024)
            ),
            baseline: format!("bosund started in {}", fmt_duration(r.start)),
            ratio: r.rss_peak as f64 / r.rss_before.max(1) as f64,
            target: "info",
            met: true,
        });
        println!("soak       round {n}: `ps --all` {}", r.runs_list);
    }
}

/// The benchmark's bosun with the stand-in as `claude`, and the agent whose runs wait.
struct Setup<'a> {
    env: &'a Env,
}

impl<'a> Setup<'a> {
    /// Puts the stand-in on a folder of its own as `claude`, starts bosund, and adds the agent
    /// `waiter`: its runs make one `Read` that waits an hour for the person.
    fn new(env: &'a Env) -> anyhow::Result<Self> {
        let scratch = env.scratch();
        let (path_dir, work) = (scratch.join("bin"), scratch.join("work"));
        std::fs::create_dir_all(&path_dir)?;
        std::fs::create_dir_all(&work)?;
        std::os::unix::fs::symlink(bin("fake-claude")?, path_dir.join("claude"))?;
        env.start_daemon()?;
        let script = json!([[{"tool": "Read", "input": {"file_path": work.join("notes.md")}}]]);
        env.ok(&[
            "agent",
            "add",
            "waiter",
            "--cli",
            "claude",
            "--cwd",
            &work.display().to_string(),
            "--env",
            &format!("PATH={}:/usr/bin:/bin", path_dir.display()),
            "--env",
            "ANTHROPIC_API_KEY=sk-ant-stand-in-not-a-key",
            "--env",
            &format!("FAKE_CLAUDE_SCRIPT={script}"),
            "--env",
            &format!("FAKE_CLAUDE_RECORD={}", work.join("record.jsonl").display()),
        ])?;
        env.ok(&[
            "agent",
            "set",
            "waiter",
            "approval=ask",
            "approval.wait=1h",
            "approval.wait-for-person=on",
        ])?;
        Ok(Self { env })
    }

    /// Starts bosund on the filled store, starts the waiting runs, measures, sets `setting`
    /// (a retention, which prunes at once), waits for that round to end, and measures again.
    /// `approvals` is how many decided approvals the store holds.
    async fn round(
        &self,
        retention: Retention,
        approvals: u64,
        fill: &Filled,
        compact_after: bool,
    ) -> anyhow::Result<Round> {
        let env = self.env;
        let size_before = db_size(env)?;
        let t0 = Instant::now();
        env.start_daemon()?;
        let start = t0.elapsed();
        let pid = env.daemon_pid().context("bosund is not running")?;
        let rss_started = rss_kib(pid).unwrap_or_default();
        for i in 0..WAITING {
            env.ok(&["agent", "run", "waiter", &format!("Read the notes, {i}")])?;
        }
        wait_waiting(env).await?;
        let inbox_before = inbox_median(env, WAITING).await?;
        let rss_before = rss_kib(pid).unwrap_or_default();

        let mut client = env.client().await?;
        let status = client.call(DaemonStatus).await?;
        if status.last_prune.is_some_and(|p| p.approvals > 0) {
            bail!(
                "bosund pruned on its own before the benchmark's round (its first hourly round came early: {:?})",
                status.last_prune
            );
        }
        let setting = retention.setting();
        let set_at = Timestamp::now();
        let t0 = Instant::now();
        client
            .call(DaemonSet {
                settings: vec![setting.to_string()],
            })
            .await?;
        let mut rss_peak = rss_before;
        let done = loop {
            rss_peak = rss_peak.max(rss_kib(pid).unwrap_or_default());
            let s: DaemonStatusView = client.call(DaemonStatus).await?;
            if let Some(p) = s.last_prune.filter(|p| p.ended_at >= set_at) {
                break p;
            }
            if t0.elapsed() > PATIENCE {
                bail!("no round of pruning ended within {PATIENCE:?} of `daemon set {setting}`");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let seen = t0.elapsed();
        let rss_after = rss_kib(pid).unwrap_or_default();
        let size_after = db_size(env)?;
        let inbox_after = inbox_median(env, WAITING).await?;
        // `ps --all` after the round: over this history it takes longer than the minute before
        // bosund's first round of its own, which would then prune before the benchmark's.
        let runs_list = runs_list(env).await?;
        let rss_listed = rss_kib(pid).unwrap_or_default();
        let waiting = client
            .call(Approvals {
                run: None,
                all: false,
            })
            .await?;
        if waiting.len() != WAITING || waiting.iter().any(|a| a.state != "waiting") {
            bail!(
                "after the round {} approvals wait, not {WAITING}",
                waiting.len()
            );
        }
        // Compacted after the last round only: a compacted file grows again by redb's steps
        // (doubling, under 4 GiB), so compacting between the rounds would change what the
        // second round's size says (the freed pages reused).
        let compacted = if compact_after {
            let t0 = Instant::now();
            let status = client.call(DaemonCompact).await?;
            let took = t0.elapsed();
            let size = db_size(env)?;
            println!(
                "soak       compacted: bosun.redb {} → {} in {}",
                mib(size_after),
                mib(size),
                fmt_duration(took),
            );
            if status.store_bytes != Some(size) {
                bail!(
                    "after compacting, bosund says its store is {:?} bytes, and the file is {size}",
                    status.store_bytes
                );
            }
            Some((took, size))
        } else {
            None
        };
        if done.approvals == 0 || done.approvals > approvals {
            bail!(
                "the round pruned {} of {approvals} approvals",
                done.approvals
            );
        }
        println!(
            "soak       {setting}: bosund up in {}, round {} ({} approvals, {} runs' decisions; seen after {}), bosun.redb {} → {}, of {} calls written from {} to {}",
            fmt_duration(start),
            fmt_duration(Duration::from_millis(done.took_ms)),
            done.approvals,
            done.runs,
            fmt_duration(seen),
            mib(size_before),
            mib(size_after),
            fill.calls,
            day(fill.from),
            day(fill.to),
        );
        Ok(Round {
            size_before,
            size_after,
            inbox_before,
            inbox_after,
            start,
            rss_started,
            rss_before,
            rss_listed,
            rss_peak,
            rss_after,
            took: Duration::from_millis(done.took_ms),
            seen,
            pruned: Pruned {
                approvals: done.approvals,
                runs: done.runs,
            },
            runs_list,
            compacted,
        })
    }
}

/// The median time of the requests `bosun inbox` sends, over one connection; fails unless
/// `waiting` approvals wait.
async fn inbox_median(env: &Env, waiting: usize) -> anyhow::Result<Duration> {
    let mut client = Client::connect(&env.dirs()?, false).await?;
    let mut times = Vec::new();
    for _ in 0..INBOX_TIMES {
        let t0 = Instant::now();
        let actions = client.call(Inbox { chat: None }).await?;
        let approvals = client
            .call(Approvals {
                run: None,
                all: false,
            })
            .await?;
        times.push(t0.elapsed());
        if approvals.len() != waiting {
            bail!(
                "the inbox lists {} approvals, not {waiting}",
                approvals.len()
            );
        }
        std::hint::black_box(actions);
    }
    Ok(median(times))
}

/// `bosun ps --all`'s request, once: its time, or why it failed.
async fn runs_list(env: &Env) -> anyhow::Result<String> {
    let mut client = Client::connect(&env.dirs()?, false).await?;
    let t0 = Instant::now();
    Ok(match client.runs(true).await {
        Ok(runs) => format!(
            "listed {} runs in {}",
            runs.len(),
            fmt_duration(t0.elapsed())
        ),
        Err(e) => format!("failed after {}: {e}", fmt_duration(t0.elapsed())),
    })
}

/// Waits until every waiting run's call waits.
async fn wait_waiting(env: &Env) -> anyhow::Result<()> {
    let mut client = Client::connect(&env.dirs()?, false).await?;
    let t0 = Instant::now();
    loop {
        let approvals = client
            .call(Approvals {
                run: None,
                all: false,
            })
            .await?;
        if approvals.len() >= WAITING {
            return Ok(());
        }
        if t0.elapsed() > PATIENCE {
            bail!("only {} of {WAITING} calls wait", approvals.len());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn wait_stopped(env: &Env) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while env.daemon_pid().is_some() {
        if t0.elapsed() > PATIENCE {
            bail!("bosund did not stop");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn db_size(env: &Env) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(env.dirs()?.db())?.len())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A time as days from the first fill's end ("-60 d").
fn day(ms: u64) -> String {
    let now = Timestamp::now().as_millis() as i128;
    format!("{:+.1} d", (ms as i128 - now) as f64 / DAY as f64)
}

/// What a fill wrote.
struct Filled {
    calls: u64,
    from: u64,
    to: u64,
    took: Duration,
    /// The records' JSON.
    bytes: u64,
}

/// Writes `calls` decided calls of `runs` finished runs into the stopped bosund's store, spread
/// evenly from `from` to `to` (ms), as a RunActor keeps them.
async fn fill(env: &Env, calls: u64, runs: u64, from: u64, to: u64) -> anyhow::Result<Filled> {
    let dirs = env.dirs()?;
    let store = Store::open(
        &dirs.db(),
        &dirs.runs(),
        &[
            RunRecord::TABLE,
            DecisionRow::TABLE,
            UsageRow::TABLE,
            ApprovalRecord::TABLE,
            WaitingApproval::TABLE,
        ],
    )?;
    let (writer, thread) = StoreWriter::start(store)?;
    let per_run = calls / runs;
    debug_assert_eq!(per_run, CALLS_PER_RUN);
    let step = (to - from) / calls;
    let t0 = Instant::now();
    let mut bytes = 0u64;
    let mut batch = Vec::new();
    for r in 0..runs {
        let first = from + r * per_run * step;
        let mut rec = run_record(first)?;
        let agent = rec.agent.as_mut().context("no agent")?;
        for c in 0..per_run {
            let at = first + c * step;
            let a = approval(rec.id, r, c, at);
            let row = DecisionRow {
                run: rec.id,
                n: c,
                decision: Decision {
                    key: a.key.clone(),
                    tool: a.tool.clone(),
                    summary: a.preview.clone(),
                    allowed: matches!(a.state, ApprovalState::Allowed { .. }),
                    by: "the person".into(),
                    approval: Some(a.id),
                    message: if let ApprovalState::Denied { message, .. } = &a.state {
                        Some(message.clone())
                    } else {
                        None
                    },
                    escalates: false,
                    at: Timestamp::from_millis(at),
                },
            };
            bytes += row.encode().len() as u64;
            batch.push(Change::put(&row));
            if agent.calls.len() < 500 {
                agent.calls.push(ToolCall {
                    id: Some(a.key.clone()),
                    name: a.tool.clone(),
                    ok: Some(true),
                    error: None,
                    input: Some(format!("{:064x}", r * per_run + c)),
                });
            }
            let changes = changes_for(&a);
            bytes += a.encode().len() as u64;
            batch.extend(changes);
        }
        let last = first + (per_run - 1) * step;
        rec.ended_at = Some(Timestamp::from_millis(last + 30_000));
        bytes += rec.encode().len() as u64;
        batch.push(Change::put(&rec));
        batch.extend(UsageRow::of(&rec).iter().map(Change::put));
        if (r + 1) % RUNS_PER_COMMIT == 0 {
            writer.commit(std::mem::take(&mut batch)).await?;
        }
    }
    writer.commit(batch).await?;
    drop(writer);
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    Ok(Filled {
        calls,
        from,
        to,
        took: t0.elapsed(),
        bytes,
    })
}

/// A finished run of a coding agent, started a minute before `first`.
fn run_record(first: u64) -> anyhow::Result<RunRecord> {
    let start = first - 60_000;
    let mut rec: RunRecord = serde_json::from_value(json!({
        "id": RunId::new(), "name": null, "program": "claude",
        "args": ["-p", "--output-format", "stream-json", "--verbose"],
        "cwd": "/home/dev/src/shop", "env_names": ["PATH", "HOME", "ANTHROPIC_API_KEY"],
        "time_cap_ms": null, "ladder": {"int_grace_ms": 5000, "term_grace_ms": 5000},
        "state": {"exited": "succeeded"},
        "created_at": start, "started_at": start, "ended_at": null,
        "runner": null, "process": null, "token_digest": "d", "stop": null, "exit": null,
        "last_seq": 4000, "secret_files": [],
        "agent": {
            "agent_name": "coder", "cli": "claude", "servers": [],
            "tools": ["Bash", "Read", "Edit", "Write", "Grep", "Glob"], "calls": [],
            "session": "0b7e9a52-3c1f-4d7e-9a51-7f1e2c3d4b5a", "model": "claude-opus-5-5",
            "result": {"is_error": false, "reason": "success", "text": "All tests pass."},
            "usage": {
                "models": [{"model": "claude-opus-5-5", "input": 120_000, "output": 30_000,
                            "cache_read": 5_000_000, "cache_write": 100_000,
                            "micro_usd": 12_000_000}],
                "cost": {"micro_usd": 12_000_000, "source": {"kind": "reported"}},
                "tool_calls": 500
            }
        }
    }))?;
    rec.agent.get_or_insert_with(AgentRun::default).decisions = Vec::new();
    Ok(rec)
}

/// Call `c` of run `r`, decided at `at` (asked 20 s before): a shell command of a few hundred
/// bytes, as Claude Code's `Bash` tool sends it; one in twenty denied.
fn approval(run: RunId, r: u64, c: u64, at: u64) -> ApprovalRecord {
    let commands = [
        "cd /home/dev/src/shop && cargo test -p shop-orders --test checkout -- --nocapture 2>&1 | tail -n 80",
        "git -C /home/dev/src/shop diff --stat origin/main...HEAD && git -C /home/dev/src/shop log --oneline -n 20",
        "rg -n --hidden --glob '!target' 'fn apply_discount' /home/dev/src/shop/crates | head -n 40",
        "npm --prefix /home/dev/src/shop/web run lint -- --max-warnings 0 && npm --prefix /home/dev/src/shop/web test -- --run",
    ];
    let command = commands[(c % 4) as usize];
    let asked = at - 20_000;
    let state = if c % 20 == 19 {
        ApprovalState::Denied {
            at: Timestamp::from_millis(at),
            by: "the person".into(),
            message: "not now: run the unit tests only".into(),
        }
    } else {
        ApprovalState::Allowed {
            at: Timestamp::from_millis(at),
        }
    };
    ApprovalRecord {
        id: ApprovalId::new(),
        run,
        key: format!("toolu_01{r:08}{c:014}"),
        agent: None,
        agent_name: "coder".into(),
        card: None,
        tool: "Bash".into(),
        class: "runs a command".into(),
        escalates: false,
        why: "approval=ask: every call waits for the person".into(),
        input: json!({
            "command": command,
            "description": "Run the checkout tests and show the last lines of their output",
            "timeout": 120_000,
        }),
        preview: format!("$ {command}"),
        cwd: Some("/home/dev/src/shop".into()),
        asked_at: Timestamp::from_millis(asked),
        seq: c,
        deadline: Timestamp::from_millis(asked + 3_600_000),
        attended: true,
        state,
        delivered_at: Some(Timestamp::from_millis(at + 5)),
        verdict_key: Some(format!(
            "Bash({})",
            command.split(' ').next().unwrap_or("cd")
        )),
        budget: None,
        budget_scope: None,
        answer: None,
    }
}

/// What the store holds, read with bosund stopped.
#[derive(Debug)]
struct Kept {
    runs: u64,
    /// Filled runs whose decisions, kept and pruned, add up to their calls, with their outcome.
    summaries_whole: u64,
    decided: u64,
    waiting_table: u64,
    /// The records' JSON.
    bytes: u64,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs ({} filled runs' summaries whole), {} decided approvals, {} in the waiting table, {} of records as JSON",
            self.runs,
            self.summaries_whole,
            self.decided,
            self.waiting_table,
            mib(self.bytes)
        )
    }
}

impl Kept {
    /// Fails unless every run is there, the decided approvals are those not pruned, and
    /// nothing waits (bosund stopped: the waiting runs' calls ended with them).
    fn check(&self, runs: u64, decided: u64) -> anyhow::Result<()> {
        if self.runs != runs {
            bail!("the store holds {} runs, not {runs}", self.runs);
        }
        if self.decided != decided {
            bail!(
                "the store holds {} decided approvals, not the {decided} written and not pruned",
                self.decided
            );
        }
        if self.waiting_table != 0 {
            bail!(
                "{} approvals still wait with bosund stopped",
                self.waiting_table
            );
        }
        Ok(())
    }
}

fn count(env: &Env) -> anyhow::Result<Kept> {
    let dirs = env.dirs()?;
    let store = Store::open(&dirs.db(), &dirs.runs(), &[])?;
    let read = store.read()?;
    let mut kept = Kept {
        runs: 0,
        summaries_whole: 0,
        decided: 0,
        waiting_table: 0,
        bytes: 0,
    };
    // Each run's decisions are rows of their own: counted per run, in one pass.
    let mut decisions: HashMap<RunId, u64> = HashMap::new();
    read.each::<DecisionRow>(|row| {
        kept.bytes += row.encode().len() as u64;
        *decisions.entry(row.run).or_default() += 1;
        Ok(())
    })?;
    read.each::<RunRecord>(|r| {
        kept.runs += 1;
        kept.bytes += r.encode().len() as u64;
        let kept_rows = decisions.get(&r.id).copied().unwrap_or_default();
        if let Some(a) = &r.agent
            && a.agent_name == "coder"
            && r.state.outcome().map(|o| o.to_string()).as_deref() == Some("succeeded")
            && kept_rows + a.decisions_pruned == CALLS_PER_RUN
            && a.usage.tool_calls == 500
        {
            kept.summaries_whole += 1;
        }
        Ok(())
    })?;
    read.each::<ApprovalRecord>(|a| {
        kept.bytes += a.encode().len() as u64;
        if a.state != ApprovalState::Waiting {
            kept.decided += 1;
        }
        Ok(())
    })?;
    read.each::<WaitingApproval>(|_| {
        kept.waiting_table += 1;
        Ok(())
    })?;
    Ok(kept)
}
