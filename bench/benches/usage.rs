//! `bosun usage --by day` over 100,000 recorded runs of coding CLIs (target: under 200 ms), and
//! how much reading a CLI's usage lines costs the stream reader, against the same lines without
//! them (target: under 1 %).
//!
//! The runs are written into a stopped bosund's store as a RunActor writes them (each record
//! with its usage row; a few models, spread over 30 days), then bosund is started and asked:
//! the report reads the usage rows alone. The baseline of the first figure is the same request
//! over no runs, measured in the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bosun_agents::record::AgentRun;
use bosun_agents::stream::StreamParser;
use bosun_bench::{Env, Figure, fmt_duration, median, report};
use bosun_protocol::usage::{UsageBy, UsageReport};
use bosun_runs::record::RunRecord;
use bosun_runs::spend::UsageRow;
use bosun_shared::agents::CliKind;
use bosun_shared::prices::Prices;
use bosun_store::writer::{Change, StoreWriter};
use bosun_store::{Record, Store};
use bosun_ui::Client;
use serde_json::json;

const RUNS: usize = 100_000;
const DAY: u64 = 86_400_000;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let empty = Env::new("usage-empty")?;
    empty.start_daemon()?;
    let baseline = runtime.block_on(time_report(&empty))?;

    let env = Env::new("usage")?;
    env.start_daemon()?;
    env.ok(&["daemon", "stop"])?;
    runtime.block_on(fill(&env))?;
    env.start_daemon()?;
    let took = runtime.block_on(time_report(&env))?;
    report(Figure {
        bench: "usage",
        what: "usage --by day over 100,000 runs (median of 5)",
        value: fmt_duration(took),
        baseline: format!("over no runs {}", fmt_duration(baseline)),
        ratio: 0.2 / took.as_secs_f64().max(1e-9),
        target: "< 200 ms",
        met: took < Duration::from_millis(200),
    });

    let (with, without) = parse_cost();
    let ratio = with.as_secs_f64() / without.as_secs_f64().max(1e-9);
    report(Figure {
        bench: "usage",
        what: "reading a stream with usage lines (median of 9)",
        value: fmt_duration(with),
        baseline: format!("the same without them {}", fmt_duration(without)),
        ratio,
        target: "≤ 1.01",
        met: ratio <= 1.01,
    });
    Ok(())
}

/// The median of five `usage --by day` requests.
async fn time_report(env: &Env) -> anyhow::Result<Duration> {
    let mut client = Client::connect(&env.dirs()?, false).await?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let view = client
            .call(UsageReport {
                by: UsageBy::Day,
                since_ms: None,
            })
            .await?;
        times.push(start.elapsed());
        std::hint::black_box(view);
    }
    Ok(median(times))
}

/// Writes the runs into the stopped bosund's store, a thousand to a commit.
async fn fill(env: &Env) -> anyhow::Result<()> {
    let dirs = env.dirs()?;
    let store = Store::open(
        &dirs.db(),
        &dirs.runs(),
        &[RunRecord::TABLE, UsageRow::TABLE],
    )?;
    let (writer, thread) = StoreWriter::start(store)?;
    let now = bosun_shared::Timestamp::now().as_millis();
    let models = ["claude-opus-5-5", "gpt-5.4-mini", "gemini-3-flash-preview"];
    let mut batch = Vec::new();
    for i in 0..RUNS {
        let model = models[i % models.len()];
        let record: RunRecord = serde_json::from_value(json!({
            "id": bosun_shared::RunId::new(), "name": null, "program": "claude", "args": ["-p"],
            "cwd": "/w", "env_names": ["PATH"], "time_cap_ms": null,
            "ladder": {"int_grace_ms": 5000, "term_grace_ms": 5000},
            "state": {"exited": "succeeded"},
            "created_at": now - (i as u64 % 30) * DAY, "started_at": null, "ended_at": null,
            "runner": null, "process": null, "token_digest": "d", "stop": null, "exit": null,
            "last_seq": 40, "secret_files": [],
            "agent": {
                "agent_name": format!("agent-{}", i % 12), "cli": "claude", "servers": [],
                "tools": ["Read", "Bash"], "calls": [], "session": "s", "model": model,
                "result": {"is_error": false, "reason": "success", "text": "done"},
                "usage": {
                    "models": [{"model": model, "input": 1200 + i % 300, "output": 300,
                                "cache_read": 5000, "cache_write": 100, "micro_usd": 12_000}],
                    "cost": {"micro_usd": 12_000, "source": {"kind": "reported"}},
                    "tool_calls": 7
                }
            }
        }))?;
        // As a RunActor saves a run: its record and its usage row, in one commit.
        batch.push(Change::put(&record));
        batch.extend(UsageRow::of(&record).iter().map(Change::put));
        if batch.len() >= 2000 {
            writer.commit(std::mem::take(&mut batch)).await?;
        }
    }
    writer.commit(batch).await?;
    drop(writer);
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    Ok(())
}

/// A Codex app-server stream of 20,000 lines, one in twenty a usage line (as many as a turn
/// of a few commands has), read through the stream reader; the baseline is the same stream
/// with each usage line's method renamed, so the reader parses the same bytes and passes it by.
/// The difference is what reading usage costs.
fn parse_cost() -> (Duration, Duration) {
    let item = r#"{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"c1","status":"completed","exitCode":0}}}"#;
    let other = r#"{"method":"thread/status/changed","params":{"threadId":"t","status":{"type":"active","activeFlags":[]}}}"#;
    let usage = r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"t","turnId":"u","tokenUsage":{"total":{"totalTokens":45,"inputTokens":30,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":15,"reasoningOutputTokens":0},"last":{"totalTokens":15,"inputTokens":10,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":5,"reasoningOutputTokens":0},"modelContextWindow":475000}}}"#;
    let stream = |with: bool| {
        let mut s = String::new();
        for i in 0..20_000 {
            let line = match i % 20 {
                0 if with => usage.to_string(),
                0 => usage.replace("tokenUsage/updated", "tokenUsage/ignored"),
                10 => other.to_string(),
                _ => item.to_string(),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    };
    let prices = Arc::new(Prices::built_in());
    let time = |text: &str| {
        let mut times = Vec::new();
        for _ in 0..9 {
            let mut run = AgentRun {
                cli: Some(CliKind::Codex),
                model: Some("gpt-5.4-mini".into()),
                ..AgentRun::default()
            };
            let mut p = StreamParser::new(CliKind::Codex, prices.clone());
            let start = Instant::now();
            for chunk in text.as_bytes().chunks(64 * 1024) {
                p.feed(chunk, &mut run);
            }
            times.push(start.elapsed());
            std::hint::black_box(&run);
        }
        median(times)
    };
    (time(&stream(true)), time(&stream(false)))
}
