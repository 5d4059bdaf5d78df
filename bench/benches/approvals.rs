//! Approvals at scale: 100 runs waiting on approvals at once. `bosun inbox --json` must answer
//! in under 100 ms, and `bosun approve --card CARD` must deliver a card's approvals to its run in
//! the order they were asked.
//!
//! **The CLI is a stand-in.** A hundred real Claude Code processes (node, ~100 MB each, and a
//! model API for each turn) do not fit the 2-core machine the benchmarks run on, so every run
//! here is `fake-claude` (`tests/src/bin/fake-claude.rs`) installed as `claude` on the agents'
//! `PATH`: a small binary that speaks Claude Code 2.1.332's control protocol as recorded (the
//! same JSON shapes and UUID request ids, every call through a `hook_callback` and a
//! `can_use_tool` that waits as long as it takes), with its tool calls taken from a script
//! rather than a model. Everything on bosun's side is real: bosund, a runner per run, the
//! board's automation, the policy, the store, the `bosun` commands.
//!
//! The setup, with every call set to ask (`approval=ask`) and to wait an hour for the person
//! (`approval.wait=1h`, `approval.wait-for-person=on`):
//! - 10 cards in the Auto column `To do`, assigned to agent `carded` (board limit 10). Each
//!   card's run makes 10 `Read` calls at once, as Claude Code makes the parallel tool calls of
//!   one model message: 10 approvals wait per card, asked in a known order.
//! - 90 runs of agent `solo` (`bosun agent run`), each waiting on one `Read`.
//!
//! So 100 runs and 190 approvals wait at once. Then:
//! - **inbox**: `bosun inbox --json`, the whole command, 30 times, alternating with
//!   `bosun ps --json` over the same 100 runs (the baseline); also `bosun inbox --json` with
//!   nothing waiting, measured before the runs start. Target: under 100 ms (p95).
//! - **order**: the order the inbox lists each card's approvals in, which is the order
//!   `approve --card` decides them in (both sort by the time asked), against the order asked.
//! - **approve --card**: for 5 of the cards, `bosun approve --card CARD` timed as a command and
//!   until the stand-in has received all 10 answers; the order the run received them (from the
//!   stand-in's record) must be the order it asked. Baseline, alternating with it on the other 5
//!   cards: `bosun approve ID` ten times, one by one in the order asked. A card whose
//!   `approve --card` fails is approved one by one in the order the inbox lists it, as
//!   `approve --card` would have, so that its run can end.
//! - **kept approvals**: bosun keeps every approval, decided or not; 10 more runs ask 20 times
//!   for 10 calls each, all allowed over one connection, and the inbox is timed before and after
//!   those 2,000 decided approvals are kept.
//!
//! At the end `bosun daemon stop` stops the 90 runs still waiting and bosund, and the benchmark
//! fails if any process of it is left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report};
use bosun_protocol::approvals::{Approvals, Decide};
use serde_json::{Value, json};

const CARDS: usize = 10;
/// Calls each card's run makes at once.
const CALLS: usize = 10;
const SOLO_RUNS: usize = 90;
/// Timed calls of each listing.
const LISTINGS: usize = 30;
/// Threads starting the solo runs.
const STARTERS: usize = 6;
/// Runs that pile up decided approvals, and the steps of 10 calls each makes.
const HISTORY_RUNS: usize = 10;
const HISTORY_STEPS: usize = 20;

fn main() -> anyhow::Result<()> {
    let env = Env::new("approvals")?;
    let result = bench(&env);
    let ended = env.end_everything();
    result.and(ended)
}

fn bench(env: &Env) -> anyhow::Result<()> {
    let s = Setup::new(env)?;
    s.add_agent("carded", &s.script(1, CALLS))?;
    s.add_agent("solo", &s.script(1, 1))?;
    let empty = inbox_times(env, 0)?;

    // 10 cards, each a run with 10 calls waiting; 90 runs with one each.
    let cards = s.add_cards()?;
    start_solo_runs(env)?;
    let t0 = Instant::now();
    let all = wait_all_waiting(env)?;
    println!(
        "approvals  {} runs and {} approvals waiting, {} after the last start",
        CARDS + SOLO_RUNS,
        all.len(),
        fmt_duration(t0.elapsed())
    );
    let by_card = check_layout(&all, &cards)?;

    inbox_figures(env, &empty)?;
    order_figure(&cards, &by_card);
    approve_figures(&s, &cards, &by_card)?;
    kept_figure(&s)?;
    Ok(())
}

/// The benchmark's bosun, the folder holding the stand-in as `claude`, its record file, and
/// the folder the runs work in.
struct Setup<'a> {
    env: &'a Env,
    path_dir: PathBuf,
    record: PathBuf,
    work: PathBuf,
}

impl<'a> Setup<'a> {
    /// Puts the stand-in on a folder of its own as `claude`, and starts bosund.
    fn new(env: &'a Env) -> anyhow::Result<Self> {
        let scratch = env.scratch();
        let s = Self {
            env,
            path_dir: scratch.join("bin"),
            // In the agents' folder: their runs write nowhere else (the runner's fence).
            record: scratch.join("work/record.jsonl"),
            work: scratch.join("work"),
        };
        std::fs::create_dir_all(&s.path_dir)?;
        std::fs::create_dir_all(&s.work)?;
        std::os::unix::fs::symlink(bin("fake-claude")?, s.path_dir.join("claude"))?;
        env.start_daemon()?;
        Ok(s)
    }

    /// The stand-in's script: `steps` steps of `calls` `Read`s made at once, the `j`th reading
    /// [`part`] `j`.
    fn script(&self, steps: usize, calls: usize) -> Value {
        let step: Vec<Value> = (0..calls)
            .map(|j| json!({"tool": "Read", "input": {"file_path": part(&self.work, j)}}))
            .collect();
        Value::Array(vec![Value::Array(step); steps])
    }

    /// The 10 cards in the Auto column `To do`, assigned to `carded`; their ids.
    fn add_cards(&self) -> anyhow::Result<Vec<String>> {
        self.env.ok(&["board", "limit", &CARDS.to_string()])?;
        let mut cards = Vec::new();
        for i in 0..CARDS {
            let card: Value = serde_json::from_str(&self.env.ok(&[
                "board",
                "card",
                "add",
                &format!("Read the notes, part {i}"),
                "--column",
                "To do",
                "--assignee",
                "carded",
                "--json",
            ])?)?;
            let id = card["id"].as_str().context("the card has no id")?;
            cards.push(id.to_string());
        }
        Ok(cards)
    }
}

/// (a) The inbox with 190 waiting, against `ps` over the same runs and against the inbox with
/// nothing waiting.
fn inbox_figures(env: &Env, empty: &[Duration]) -> anyhow::Result<()> {
    let waiting = CARDS * CALLS + SOLO_RUNS;
    let (mut inbox, mut ps) = (Vec::new(), Vec::new());
    for _ in 0..LISTINGS {
        inbox.extend(inbox_times_n(env, waiting, 1)?);
        let (took, runs) = timed_json(env, &["ps", "--json"])?;
        let n = runs.as_array().map_or(0, Vec::len);
        if n != CARDS + SOLO_RUNS {
            bail!("ps listed {n} live runs");
        }
        ps.push(took);
    }
    let met = p95(&inbox) < Duration::from_millis(100);
    for (what, baseline, base) in [
        (
            format!("`bosun inbox --json`, 100 runs, {waiting} waiting"),
            "`ps --json` same runs",
            &ps[..],
        ),
        (
            format!("`bosun inbox --json`, {waiting} waiting vs none"),
            "empty inbox",
            empty,
        ),
    ] {
        report(Figure {
            bench: "approvals",
            what: &what,
            value: spread(&inbox),
            baseline: format!("{baseline} {}", spread(base)),
            ratio: median(inbox.clone()).as_secs_f64() / median(base.to_vec()).as_secs_f64(),
            target: "< 100 ms",
            met,
        });
    }
    Ok(())
}

/// The order bosun keeps each card's approvals in: the inbox lists them in the order
/// `approve --card` decides them (both sort by the time asked).
fn order_figure(cards: &[String], by_card: &HashMap<String, Vec<Value>>) {
    let mut in_order = 0;
    for card in cards {
        let listed: Vec<usize> = by_card[card].iter().filter_map(part_of).collect();
        if listed.iter().copied().eq(0..CALLS) {
            in_order += 1;
            continue;
        }
        let first = by_card[card][0]["asked_at"].as_u64().unwrap_or(0);
        let at: Vec<u64> = by_card[card]
            .iter()
            .map(|a| a["asked_at"].as_u64().unwrap_or(0).saturating_sub(first))
            .collect();
        println!(
            "approvals  card {}: its run asked 0..9, bosun lists {listed:?}, asked at +{at:?} ms",
            &card[..8]
        );
    }
    report(Figure {
        bench: "approvals",
        what: "a card's 10 approvals listed in the order asked",
        value: format!("{in_order} of {CARDS} cards"),
        baseline: "the order the run asked".into(),
        ratio: in_order as f64 / CARDS as f64,
        target: "all",
        met: in_order == CARDS,
    });
}

/// (b) and (c): half the cards by `approve --card`, half by `approve ID` one by one in the
/// order asked, alternating. A card whose `approve --card` fails is then approved one by one in
/// the order bosun lists it, as `approve --card` would have, so that its run can end.
fn approve_figures(
    s: &Setup<'_>,
    cards: &[String],
    by_card: &HashMap<String, Vec<Value>>,
) -> anyhow::Result<()> {
    let halves = CARDS / 2;
    let (mut with_card, mut one_by_one) = (Vec::new(), Vec::new());
    let (mut card_in_order, mut one_in_order) = (0, 0);
    let mut failures = Vec::new();
    for (i, card) in cards.iter().enumerate() {
        let approvals: Vec<&Value> = by_card[card].iter().collect();
        let run = approvals[0]["run"].as_str().unwrap_or_default().to_string();
        if i % 2 == 1 {
            let mut ordered = approvals;
            ordered.sort_by_key(|a| part_of(a));
            one_by_one.push(s.approve_one_by_one(&ordered, &run)?);
            one_in_order += usize::from(s.in_order(card, &run)?);
            continue;
        }
        match s.approve_card(card, &run) {
            Ok(t) => {
                with_card.push(t);
                card_in_order += usize::from(s.in_order(card, &run)?);
            }
            Err(e) => {
                failures.push(e.to_string());
                s.approve_one_by_one(&approvals, &run)?;
            }
        }
    }
    if let Some(first) = failures.first() {
        println!(
            "approvals  `approve --card` FAILED on {} of {halves} cards: {first}",
            failures.len()
        );
    }
    report(Figure {
        bench: "approvals",
        what: "approve --card, 10 waiting: delivered in order",
        value: format!("{card_in_order} of {halves} cards"),
        baseline: format!("approve ID in order: {one_in_order} of {halves}"),
        ratio: card_in_order as f64 / halves as f64,
        target: "all",
        met: card_in_order == halves,
    });
    let command = |v: &[(Duration, Duration)]| median(v.iter().map(|p| p.0).collect());
    let received = |v: &[(Duration, Duration)]| median(v.iter().map(|p| p.1).collect());
    let ratio = received(&with_card).as_secs_f64() / received(&one_by_one).as_secs_f64();
    report(Figure {
        bench: "approvals",
        what: &format!("approve --card, {CALLS} calls: until all received"),
        value: if with_card.is_empty() {
            "failed".into()
        } else {
            format!(
                "{} (command {})",
                fmt_duration(received(&with_card)),
                fmt_duration(command(&with_card))
            )
        },
        baseline: format!(
            "{CALLS} x approve ID {} (commands {})",
            fmt_duration(received(&one_by_one)),
            fmt_duration(command(&one_by_one))
        ),
        ratio,
        target: "<= 1.0",
        met: !with_card.is_empty() && ratio <= 1.0,
    });
    Ok(())
}

/// The inbox as decided approvals pile up: bosun keeps every approval, decided or not, and
/// each listing reads them all.
fn kept_figure(s: &Setup<'_>) -> anyhow::Result<()> {
    let kept_before = CARDS * CALLS;
    let before = inbox_times(s.env, SOLO_RUNS)?;
    pile_up_history(s)?;
    let after = inbox_times(s.env, SOLO_RUNS)?;
    let kept_after = kept_before + HISTORY_RUNS * HISTORY_STEPS * CALLS;
    let (before_p50, after_p50) = (median(before.clone()), median(after.clone()));
    let per_kept =
        (after_p50.as_secs_f64() - before_p50.as_secs_f64()) / (kept_after - kept_before) as f64;
    if per_kept > 0.0 {
        println!(
            "approvals  each decided approval kept adds {:.1} us to `bosun inbox`: 100 ms at about {:.0} kept",
            per_kept * 1e6,
            (0.1 - before_p50.as_secs_f64()) / per_kept + kept_before as f64
        );
    }
    report(Figure {
        bench: "approvals",
        what: &format!("`bosun inbox --json`, {SOLO_RUNS} waiting, {kept_after} decided"),
        value: spread(&after),
        baseline: format!("{kept_before} decided {}", spread(&before)),
        ratio: after_p50.as_secs_f64() / before_p50.as_secs_f64(),
        target: "< 100 ms",
        met: p95(&after) < Duration::from_millis(100),
    });
    Ok(())
}

/// `bosun inbox --json`, timed `LISTINGS` times; each must list `waiting` items.
fn inbox_times(env: &Env, waiting: usize) -> anyhow::Result<Vec<Duration>> {
    inbox_times_n(env, waiting, LISTINGS)
}

/// `bosun inbox --json`, timed `n` times; each must list `waiting` items.
fn inbox_times_n(env: &Env, waiting: usize, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::new();
    for _ in 0..n {
        let (took, items) = timed_json(env, &["inbox", "--json"])?;
        let n = items.as_array().map_or(0, Vec::len);
        if n != waiting {
            bail!("the inbox listed {n} items, not {waiting}");
        }
        times.push(took);
    }
    Ok(times)
}

/// Runs of agent `history`, each asking `HISTORY_STEPS` times for 10 calls at once, every call
/// allowed over one connection as it comes, until all have ended: 2,000 decided approvals.
fn pile_up_history(s: &Setup<'_>) -> anyhow::Result<()> {
    s.add_agent("history", &s.script(HISTORY_STEPS, CALLS))?;
    for i in 0..HISTORY_RUNS {
        s.env
            .ok(&["agent", "run", "history", &format!("Read it all, run {i}")])?;
    }
    let want = HISTORY_RUNS * HISTORY_STEPS * CALLS;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut client = s.env.client().await?;
        let (t0, mut decided) = (Instant::now(), 0);
        while decided < want {
            let waiting = client
                .call(Approvals {
                    run: None,
                    all: false,
                })
                .await?;
            let mine: Vec<_> = waiting
                .iter()
                .filter(|a| a.agent.as_deref() == Some("history"))
                .collect();
            for a in &mine {
                client
                    .call(Decide {
                        approval: a.id.to_string(),
                        allow: true,
                        ..Decide::default()
                    })
                    .await?;
            }
            decided += mine.len();
            if t0.elapsed() > Duration::from_secs(600) {
                bail!("only {decided} of {want} history approvals decided in 600 s");
            }
            if mine.is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        // Until the history runs have ended, so that nothing else goes on while timing.
        loop {
            let live = client.runs(false).await?;
            if live.len() <= SOLO_RUNS {
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(600) {
                bail!("the history runs did not end");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// The file the `j`th call of a run reads: its number tells the order asked.
fn part(work: &Path, j: usize) -> String {
    work.join(format!("notes/part-{j:02}.md"))
        .display()
        .to_string()
}

/// The number in a call's file, from an approval's input.
fn part_of(approval: &Value) -> Option<usize> {
    let path = approval["input"]["file_path"].as_str()?;
    let name = path.rsplit('/').next()?;
    name.strip_prefix("part-")?
        .strip_suffix(".md")?
        .parse()
        .ok()
}

impl Setup<'_> {
    /// A Claude Code agent whose `claude` is the stand-in, running `script`, every call asking
    /// and waiting an hour for the person.
    fn add_agent(&self, name: &str, script: &Value) -> anyhow::Result<()> {
        let work = self.work.display().to_string();
        self.env.ok(&[
            "agent",
            "add",
            name,
            "--cli",
            "claude",
            "--cwd",
            &work,
            "--env",
            &format!("PATH={}:/usr/bin:/bin", self.path_dir.display()),
            "--env",
            "ANTHROPIC_API_KEY=sk-ant-stand-in-not-a-key",
            "--env",
            &format!("FAKE_CLAUDE_SCRIPT={script}"),
            "--env",
            &format!("FAKE_CLAUDE_RECORD={}", self.record.display()),
        ])?;
        self.env.ok(&[
            "agent",
            "set",
            name,
            "approval=ask",
            "approval.wait=1h",
            "approval.wait-for-person=on",
        ])?;
        Ok(())
    }

    /// `bosun approve --card CARD`: the command's time, and the time until the run has every
    /// answer.
    fn approve_card(&self, card: &str, run: &str) -> anyhow::Result<(Duration, Duration)> {
        let t0 = Instant::now();
        let out = self.env.ok(&["approve", "--card", card, "--json"])?;
        let command = t0.elapsed();
        let decided: Value = serde_json::from_str(&out)?;
        let n = decided.as_array().map_or(0, Vec::len);
        if n != CALLS {
            bail!("approve --card decided {n} approvals, not {CALLS}");
        }
        let delivered = self.wait_answered(run, t0)?;
        Ok((command, delivered))
    }

    /// `bosun approve ID` for each of `approvals`, in that order: the commands' time, and the
    /// time until the run has every answer.
    fn approve_one_by_one(
        &self,
        approvals: &[&Value],
        run: &str,
    ) -> anyhow::Result<(Duration, Duration)> {
        let t0 = Instant::now();
        for a in approvals {
            self.env
                .ok(&["approve", a["id"].as_str().unwrap_or_default(), "--json"])?;
        }
        let command = t0.elapsed();
        let delivered = self.wait_answered(run, t0)?;
        Ok((command, delivered))
    }

    /// Whether the run received its answers in the order it asked; says so when not.
    fn in_order(&self, card: &str, run: &str) -> anyhow::Result<bool> {
        let received = answered_order(&self.record, run)?;
        let ok = received.iter().copied().eq(0..CALLS);
        if !ok {
            println!(
                "approvals  card {}: its run asked 0..9, received {received:?}",
                &card[..8]
            );
        }
        Ok(ok)
    }

    /// Waits until the stand-in of `run` has recorded every answer; the time since `t0`.
    fn wait_answered(&self, run: &str, t0: Instant) -> anyhow::Result<Duration> {
        loop {
            if answered_order(&self.record, run)?.len() >= CALLS {
                return Ok(t0.elapsed());
            }
            if t0.elapsed() > Duration::from_secs(60) {
                bail!("run {run} did not receive its {CALLS} answers within 60 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The calls of `run` in the order the stand-in received their answers.
fn answered_order(record: &Path, run: &str) -> anyhow::Result<Vec<usize>> {
    let text = std::fs::read_to_string(record).unwrap_or_default();
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["run"] == run && v["event"] != "asked")
        .map(|v| v["call"].as_u64().unwrap_or(u64::MAX) as usize)
        .collect())
}

/// Starts the 90 runs of `solo`, a few at a time.
fn start_solo_runs(env: &Env) -> anyhow::Result<()> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..STARTERS)
            .map(|w| {
                scope.spawn(move || -> anyhow::Result<()> {
                    for i in (w..SOLO_RUNS).step_by(STARTERS) {
                        env.ok(&["agent", "run", "solo", &format!("Read the notes, run {i}")])?;
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a starter thread panicked"))??;
        }
        Ok(())
    })
}

/// Waits until every approval is waiting (as the inbox lists them), and returns them.
fn wait_all_waiting(env: &Env) -> anyhow::Result<Vec<Value>> {
    let want = CARDS * CALLS + SOLO_RUNS;
    let t0 = Instant::now();
    loop {
        let items: Value = serde_json::from_str(&env.ok(&["inbox", "--json"])?)?;
        let approvals: Vec<Value> = items
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["kind"] == "approval" && i["state"] == "waiting")
            .cloned()
            .collect();
        if approvals.len() >= want {
            return Ok(approvals);
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!(
                "only {} of {want} approvals wait after 300 s",
                approvals.len()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Checks that each card has one run with its 10 approvals waiting and each solo run one, and
/// returns the approvals by card.
fn check_layout(all: &[Value], cards: &[String]) -> anyhow::Result<HashMap<String, Vec<Value>>> {
    let mut by_card: HashMap<String, Vec<Value>> = HashMap::new();
    let mut solo: HashMap<String, usize> = HashMap::new();
    for a in all {
        match a["card"].as_str() {
            Some(card) => by_card.entry(card.to_string()).or_default().push(a.clone()),
            None => {
                let run = a["run"].as_str().unwrap_or_default().to_string();
                *solo.entry(run).or_default() += 1;
            }
        }
    }
    for card in cards {
        let list = by_card.get(card).map_or(&[][..], Vec::as_slice);
        let runs: std::collections::HashSet<&str> =
            list.iter().filter_map(|a| a["run"].as_str()).collect();
        if list.len() != CALLS || runs.len() != 1 {
            bail!(
                "card {card}: {} approvals waiting in {} runs",
                list.len(),
                runs.len()
            );
        }
    }
    if solo.len() != SOLO_RUNS || solo.values().any(|n| *n != 1) {
        bail!("the solo runs' approvals: {solo:?}");
    }
    Ok(by_card)
}

/// Runs `bosun ARGS` and parses its output; the command's wall time.
fn timed_json(env: &Env, args: &[&str]) -> anyhow::Result<(Duration, Value)> {
    let mut cmd = env.bosun(args)?;
    let t0 = Instant::now();
    let out = cmd.output()?;
    let took = t0.elapsed();
    if !out.status.success() {
        bail!("bosun {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok((took, serde_json::from_slice(&out.stdout)?))
}

/// The 95th percentile.
fn p95(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    let i = (v.len() * 95).div_ceil(100).saturating_sub(1);
    v.get(i).copied().unwrap_or_default()
}

/// `5.0 ms (p95 9.7 ms)`.
fn spread(v: &[Duration]) -> String {
    format!(
        "{} (p95 {})",
        fmt_duration(median(v.to_vec())),
        fmt_duration(p95(v))
    )
}
