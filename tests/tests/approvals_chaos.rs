//! Approvals under load and faults: 16 runs of an agent each asking about 8 tool calls
//! one after the other, decided by three people at once (approving and denying at random, racing
//! each other on the same approvals) while bosund is SIGKILLed at random moments. Checked item by
//! item at the end: every call was answered exactly once, with the decision that was committed
//! (the run's record and the CLI agree, in order); every decision a person was told had been
//! made is the one the CLI got; no approval was decided twice; nothing waits; nothing is left.
//!
//! The CLI is `fake-claude`, which speaks Claude Code's control protocol as recorded from
//! Claude Code 2.1.332 (see its header): twelve real Claude Code processes at once do not fit
//! this machine with the rest of the suite, and what bosun relies on is only that protocol.
//! `BOSUN_APPROVAL_CHAOS_RUNS` makes it bigger; `BOSUN_APPROVAL_CHAOS_SEED` replays a schedule.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bosun_tests::{Bosun, wait_for};
use serde_json::{Value, json};

const CALLS: usize = 8;

fn runs() -> usize {
    std::env::var("BOSUN_APPROVAL_CHAOS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

/// A small xorshift, seeded, so a failing schedule can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seed() -> u64 {
    std::env::var("BOSUN_APPROVAL_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 | 1)
                .unwrap_or(7)
        })
}

/// An agent `worker` whose CLI is `fake-claude` with this script; returns its record file.
fn add_worker(b: &Bosun, script: &[Value]) -> anyhow::Result<std::path::PathBuf> {
    let record = b.add_fake_claude_agent("worker", &Value::Array(script.to_vec()))?;
    b.ok(&["agent", "set", "worker", "approval.wait=1h"])?;
    Ok(record)
}

/// What a person was told: approval id → allowed.
type Told = Arc<Mutex<HashMap<String, bool>>>;

#[test]
fn decisions_are_made_once_and_delivered_once_under_concurrent_people_and_daemon_kills()
-> anyhow::Result<()> {
    let seed = seed();
    eprintln!("seed {seed} (BOSUN_APPROVAL_CHAOS_SEED={seed} replays it)");
    let b = Bosun::new("approvals_chaos");
    // One call per step: each run asks about its calls one after the other.
    let script: Vec<Value> = (0..CALLS)
        .map(|i| json!([{"tool": "Bash", "input": {"command": format!("echo call-{i}")}}]))
        .collect();
    let record = add_worker(&b, &script)?;

    let n = runs();
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            b.ok(&["agent", "run", "worker", &format!("task {i}")])?
                .trim()
                .to_string(),
        );
    }

    let done = Arc::new(AtomicBool::new(false));
    let told: Told = Arc::new(Mutex::new(HashMap::new()));
    let kills = std::thread::scope(|s| -> anyhow::Result<usize> {
        // Three people, deciding at random, sometimes the same approval at once.
        let mut people = Vec::new();
        for p in 0..3u64 {
            let (b, done, told) = (&b, done.clone(), told.clone());
            people.push(s.spawn(move || -> anyhow::Result<()> {
                let mut rng = Rng(seed ^ (p + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                while !done.load(Ordering::Relaxed) {
                    let Ok(list) = b.waiting_approvals() else {
                        continue; // bosund is being restarted
                    };
                    let waiting: Vec<String> = list
                        .iter()
                        .filter_map(|i| i["id"].as_str().map(str::to_string))
                        .collect();
                    if waiting.is_empty() {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    let id = &waiting[rng.below(waiting.len() as u64) as usize];
                    let allow = rng.below(10) < 7;
                    let out = if allow {
                        b.output(&["approve", id, "--json"])?
                    } else {
                        b.output(&["deny", id, "--message", "not now", "--json"])?
                    };
                    if out.status.success() {
                        let v: Value = serde_json::from_slice(&out.stdout)?;
                        let state = v[0]["state"].as_str().unwrap_or_default().to_string();
                        anyhow::ensure!(
                            state == if allow { "allowed" } else { "denied" },
                            "a person was told {state} for {id} (allow={allow})"
                        );
                        let mut told = told.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                        anyhow::ensure!(
                            told.insert(id.clone(), allow).is_none(),
                            "approval {id} was decided twice"
                        );
                    }
                }
                Ok(())
            }));
        }
        // bosund killed at random moments while the people decide.
        let chaos = {
            let (b, done) = (&b, done.clone());
            s.spawn(move || -> anyhow::Result<usize> {
                let mut rng = Rng(seed.rotate_left(17) | 1);
                let mut kills = 0;
                while !done.load(Ordering::Relaxed) && kills < 8 {
                    std::thread::sleep(Duration::from_millis(150 + rng.below(500)));
                    if b.daemon_pid().is_some() {
                        b.kill_daemon()?;
                        kills += 1;
                    }
                }
                Ok(kills)
            })
        };
        let started = Instant::now();
        let all_ended = wait_for("every run to end", Duration::from_secs(240), || {
            let runs = match b.json(&["ps", "--all"]) {
                Ok(r) => r,
                Err(_) => return Ok(None),
            };
            let ended = runs
                .as_array()
                .is_some_and(|r| r.len() == ids.len() && r.iter().all(|r| r["state"] == "exited"));
            Ok(ended.then_some(()))
        });
        done.store(true, Ordering::Relaxed);
        for p in people {
            p.join()
                .map_err(|_| anyhow::anyhow!("a person's thread panicked"))??;
        }
        let kills = chaos
            .join()
            .map_err(|_| anyhow::anyhow!("the chaos thread panicked"))??;
        all_ended?;
        eprintln!(
            "{n} runs × {CALLS} calls in {:?}, bosund killed {kills} times",
            started.elapsed()
        );
        Ok(kills)
    })?;
    assert!(kills > 0, "the daemon was killed at least once");

    // What the CLIs got: per run, each call answered exactly once, in order.
    let text = std::fs::read_to_string(&record)?;
    let mut answered: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line)?;
        if v["event"] != "answered" {
            assert_ne!(v["event"], "aborted", "a call was cut off: {v}");
            continue;
        }
        let run = v["run"].as_str().unwrap_or_default().to_string();
        let req = v["request_id"].as_str().unwrap_or_default().to_string();
        assert!(
            seen.insert((run.clone(), req.clone())),
            "answered twice: {v}"
        );
        let behavior = v["behavior"].as_str().unwrap_or_default().to_string();
        answered.entry(run).or_default().push((req, behavior));
    }
    let told = told
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    let mut by_person = 0;
    for id in &ids {
        let view = b.show(id)?;
        assert_eq!(view["outcome"], "succeeded", "{view:#}");
        let decisions = view["agent"]["decisions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let got = answered
            .get(view["id"].as_str().unwrap_or_default())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            decisions.len(),
            CALLS,
            "one decision per call: {decisions:#?}"
        );
        assert_eq!(got.len(), CALLS, "one answer per call: {got:?}");
        for (d, (_, behavior)) in decisions.iter().zip(&got) {
            let allowed = d["decision"] == "allowed";
            assert_eq!(
                behavior,
                if allowed { "allow" } else { "deny" },
                "the CLI got the committed decision: {d}"
            );
            if let Some(approval) = d["approval"].as_str()
                && let Some(&allow) = told.get(approval)
            {
                by_person += 1;
                assert_eq!(allow, allowed, "the person was told what was done: {d}");
                assert_eq!(d["by"], "the person");
            }
        }
    }
    assert_eq!(
        by_person,
        told.len(),
        "every decision a person was told of is in a record"
    );
    let all = b.json(&["inbox", "--all"])?;
    assert!(
        all.as_array()
            .is_some_and(|a| a.iter().all(|x| x["state"] != "waiting")),
        "nothing waits: {all:#}"
    );
    b.finish()
}

#[test]
fn approve_card_lets_a_cards_parallel_calls_go_in_the_order_asked() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_card_order");
    // One step of six calls made at once, as Claude Code makes a message's parallel tool calls.
    let step: Vec<Value> = (0..6)
        .map(|i| json!({"tool": "Bash", "input": {"command": format!("echo part-{i}")}}))
        .collect();
    let record = add_worker(&b, &[Value::Array(step)])?;
    b.ok(&["agent", "set", "worker", "approval.wait-for-person=on"])?;
    let c = b.json(&[
        "board",
        "card",
        "add",
        "Six at once",
        "--assignee",
        "worker",
    ])?;
    let card = c["short_id"].as_str().unwrap_or_default().to_string();
    b.json(&["board", "card", "move", &card, "To do"])?;
    let waiting = wait_for("six calls waiting", Duration::from_secs(60), || {
        let w = b.waiting_approvals()?;
        Ok((w.len() == 6).then_some(w))
    })?;
    // Listed in the order asked.
    let listed: Vec<String> = waiting
        .iter()
        .map(|a| {
            a["preview"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let want: Vec<String> = (0..6).map(|i| format!("$ echo part-{i}")).collect();
    assert_eq!(listed, want);
    let done = b.json(&["approve", "--card", &card])?;
    assert_eq!(done.as_array().map(Vec::len), Some(6), "{done:#}");
    let run = wait_for("the card's run", Duration::from_secs(60), || {
        let c = b.json(&["board", "card", "show", &card])?;
        Ok(c["run"].as_str().map(str::to_string))
    })?;
    b.wait_ended(&run, Duration::from_secs(60))?;
    // Delivered in that order too.
    let asked: Vec<String> = std::fs::read_to_string(&record)?
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "answered")
        .map(|v| v["call"].to_string())
        .collect();
    assert_eq!(
        asked,
        ["0", "1", "2", "3", "4", "5"],
        "answered in the order asked"
    );
    b.finish()
}
