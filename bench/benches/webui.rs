//! The web UI in a real browser: Debian's chromium, headless, driven through playwright-core by
//! `tests/node/webui/bench.mjs`, against the release binaries and a bridge started by
//! `bosun ui`. Times are read in the page, from the start of its navigation.
//!
//! - **1,000 runs in the list**: 1,000 runs of `true` (started 32 at a time through the socket,
//!   each followed to its recorded end), then the Runs page loaded afresh five times: the time
//!   until the list holds the 1,000 runs and the rows in view are drawn (the list draws only
//!   those). Baseline, the same page with no run, measured first in the same bridge. Target:
//!   under 300 ms.
//! - **A finished run of 1,000,000 lines** (`gen-lines`, 100 bytes each): its page loaded afresh
//!   five times, the time until its last line is on screen. Baseline, a run of 1,000 lines.
//!   Target: under 1 s. Then, once the page has read the whole log, the elements in the DOM and
//!   the JS heap at the end, after scrolling to the middle and back (bounded: the DOM holds a
//!   screenful of rows whatever the log's size, and scrolling adds nothing to the heap), and
//!   the frames while scrolling there and back, a step a frame for 120 frames each way (target:
//!   95% of frames within 33 ms; the worst one is printed too).
//! - **Following a run that writes 1,000,000 lines as fast as it can**: the page opened on the
//!   run before it writes (it waits for a file), then the frames the page renders per second
//!   until the log has ended in the page, and every line checked there in order. Baseline, the
//!   same page idle just before. Target: at least 10 frames a second.
//!
//! `BOSUN_BENCH_WEBUI_LINES` and `BOSUN_BENCH_WEBUI_RUNS` make it smaller, for a quick smoke run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, report, runs_to_end, settle};
use bosun_protocol::ui::StartRunParams;
use serde_json::Value;

const ROUNDS: usize = 5;
const IN_FLIGHT: usize = 32;

fn count(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let runs = count("BOSUN_BENCH_WEBUI_RUNS", 1000);
    let lines = count("BOSUN_BENCH_WEBUI_LINES", 1_000_000);
    let env = Env::new("webui")?;
    env.start_daemon()?;
    env.ok(&["ui", "--no-open", "--json"])?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    // (a) The Runs page: empty, then with the runs.
    settle();
    let empty = browser(&env, "runs", &[("BOSUN_UI_EXPECT", "0")])?;
    runtime.block_on(start_runs(&env, runs as usize))?;
    settle();
    let full = browser(&env, "runs", &[("BOSUN_UI_EXPECT", &runs.to_string())])?;
    let (empty_ms, full_ms) = (median_of(&empty["ms"]), median_of(&full["ms"]));
    report(Figure {
        bench: "webui",
        what: &format!("Runs page usable, {runs} runs listed"),
        value: format!(
            "{full_ms:.0} ms ({} rows drawn)",
            full["rows"].as_u64().unwrap_or(0)
        ),
        baseline: format!(
            "no run {empty_ms:.0} ms; list_runs alone {:.0} ms",
            full["api_ms"].as_f64().unwrap_or(0.0)
        ),
        ratio: full_ms / 300.0,
        target: "< 300 ms",
        met: full_ms < 300.0,
    });

    // (b) A finished run's page, tail-first.
    let generator = bin("gen-lines")?.display().to_string();
    let small = finished_run(&env, &[&generator, "1000"])?;
    let big = finished_run(&env, &[&generator, &lines.to_string()])?;
    settle();
    let small_seen = browser(
        &env,
        "log",
        &[
            ("BOSUN_UI_RUN", &small),
            ("BOSUN_UI_LAST", &last_line(1000)),
        ],
    )?;
    settle();
    let big_seen = browser(
        &env,
        "log",
        &[("BOSUN_UI_RUN", &big), ("BOSUN_UI_LAST", &last_line(lines))],
    )?;
    let (small_ms, big_ms) = (median_of(&small_seen["ms"]), median_of(&big_seen["ms"]));
    report(Figure {
        bench: "webui",
        what: &format!("finished run of {lines} lines: last screen"),
        value: format!("{big_ms:.0} ms"),
        baseline: format!("run of 1000 lines {small_ms:.0} ms"),
        ratio: big_ms / 1000.0,
        target: "< 1 s",
        met: big_ms < 1000.0,
    });
    let mem = &big_seen["mem"];
    let kept = big_seen["lines"].as_u64().unwrap_or(0);
    let rows_bounded = ["end", "middle", "back"]
        .iter()
        .all(|at| mem[at]["rows"].as_u64().is_some_and(|r| r < 100));
    let heap = |at: &str| mem[at]["heap_mb"].as_f64().unwrap_or(0.0);
    let elements = |at: &str| mem[at]["elements"].as_u64().unwrap_or(0);
    report(Figure {
        bench: "webui",
        what: "same, whole log read in: DOM and heap, end/middle/end",
        value: format!(
            "{}/{}/{} elements, {:.0}/{:.0}/{:.0} MB",
            elements("end"),
            elements("middle"),
            elements("back"),
            heap("end"),
            heap("middle"),
            heap("back")
        ),
        baseline: format!(
            "{kept} lines kept, read in {:.1} s; 1000-line run {} elements, {:.0} MB",
            big_seen["whole_ms"].as_f64().unwrap_or(0.0) / 1000.0,
            small_seen["mem"]["end"]["elements"].as_u64().unwrap_or(0),
            small_seen["mem"]["end"]["heap_mb"].as_f64().unwrap_or(0.0)
        ),
        ratio: heap("back") / heap("end").max(1.0),
        target: "bounded",
        met: rows_bounded && kept >= lines && heap("back") < heap("end") * 1.2,
    });
    let frame = |seen: &Value, what: &str| {
        let down = seen["scroll"]["down"][what].as_f64().unwrap_or(0.0);
        down.max(seen["scroll"]["back"][what].as_f64().unwrap_or(0.0))
    };
    let p95 = frame(&big_seen, "p95_ms");
    report(Figure {
        bench: "webui",
        what: "same, scrolling to the middle and back: p95 frame",
        value: format!("{p95:.0} ms (worst {:.0} ms)", frame(&big_seen, "worst_ms")),
        baseline: format!(
            "1000-line run p95 {:.0} ms (worst {:.0} ms)",
            frame(&small_seen, "p95_ms"),
            frame(&small_seen, "worst_ms")
        ),
        ratio: p95 / 33.0,
        target: "< 33 ms",
        met: p95 < 33.0,
    });

    // (c) Following a run that writes as fast as it can.
    let go = env.scratch().join("go");
    let script = format!(
        "while [ ! -e {go} ]; do sleep 0.05; done; exec {generator} {lines}",
        go = go.display()
    );
    let waiting = start(&env, &["sh", "-c", &script])?;
    settle();
    let go_s = go.display().to_string();
    let followed = browser(
        &env,
        "follow",
        &[("BOSUN_UI_RUN", &waiting), ("BOSUN_UI_GO", &go_s)],
    )?;
    let fps = followed["fps"].as_f64().unwrap_or(0.0);
    let worst_second = followed["worst_second_frames"].as_u64().unwrap_or(0);
    report(Figure {
        bench: "webui",
        what: &format!("following a run of {lines} lines: frames/s"),
        value: format!("{fps:.0}/s (worst second {worst_second})"),
        baseline: format!(
            "idle page {:.0}/s; longest frame gap {:.0} ms; {:.1} s to stream",
            followed["idle_fps"].as_f64().unwrap_or(0.0),
            followed["longest_gap_ms"].as_f64().unwrap_or(0.0),
            followed["stream_s"].as_f64().unwrap_or(0.0)
        ),
        ratio: worst_second as f64 / 10.0,
        target: ">= 10/s",
        met: worst_second >= 10,
    });
    let numbered = followed["numbered"].as_u64().unwrap_or(0);
    let whole = numbered == lines
        && followed["inOrder"] == Value::Bool(true)
        && followed["first"] == 0
        && followed["last"].as_u64() == Some(lines - 1);
    report(Figure {
        bench: "webui",
        what: "same, every line in the page at the end",
        value: format!("{numbered} lines, in order: {}", followed["inOrder"]),
        baseline: format!(
            "written {lines}; heap {:.0} MB, {} elements",
            followed["mem"]["heap_mb"].as_f64().unwrap_or(0.0),
            followed["mem"]["elements"].as_u64().unwrap_or(0)
        ),
        ratio: numbered as f64 / lines as f64,
        target: "all",
        met: whole,
    });

    env.ok(&["ui", "--stop"])?;
    env.stop_daemon()?;
    Ok(())
}

/// `line 0000000999 ` as gen-lines writes it: the start of line `n`'s text (0-based, so the
/// last of `n` lines is `n - 1`).
fn last_line(n: u64) -> String {
    format!("line {:010} ", n.saturating_sub(1))
}

/// The median of a JSON array of numbers.
fn median_of(v: &Value) -> f64 {
    let mut xs: Vec<f64> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `node tests/node/webui/bench.mjs FIGURE` with a fresh sign-in address; what it printed.
fn browser(env: &Env, figure: &str, vars: &[(&str, &str)]) -> anyhow::Result<Value> {
    let ui: Value = serde_json::from_str(&env.ok(&["ui", "--no-open", "--json"])?)?;
    let login = ui["login_url"].as_str().context("no login_url")?;
    let script: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/webui/bench.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(figure)
        .env("BOSUN_UI_LOGIN", login)
        .env("BOSUN_UI_ROUNDS", ROUNDS.to_string())
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .output()
        .context("could not run node")?;
    if !out.status.success() {
        bail!(
            "bench.mjs {figure} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).with_context(|| format!("bench.mjs printed {text}"))
}

/// Starts a run (`bosun run --json -- program…`); its id.
fn start(env: &Env, program: &[&str]) -> anyhow::Result<String> {
    let mut args = vec!["run", "--json", "--"];
    args.extend_from_slice(program);
    let v: Value = serde_json::from_str(&env.ok(&args)?)?;
    Ok(v["id"].as_str().context("no run id")?.to_string())
}

/// Starts a run and waits for its recorded end.
fn finished_run(env: &Env, program: &[&str]) -> anyhow::Result<String> {
    let id = start(env, program)?;
    let t0 = Instant::now();
    loop {
        let v: Value = serde_json::from_str(&env.ok(&["show", &id, "--json"])?)?;
        if v["state"] == "exited" {
            if v["outcome"] != "succeeded" {
                bail!("the run {id} did not succeed: {v}");
            }
            return Ok(id);
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!("the run {id} did not end within 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `n` runs of `true`, `IN_FLIGHT` at a time, each followed to its recorded end.
async fn start_runs(env: &Env, n: usize) -> anyhow::Result<()> {
    let params = StartRunParams {
        program: "true".into(),
        cwd: env.scratch(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        ..StartRunParams::default()
    };
    runs_to_end(env, n, IN_FLIGHT, params).await.map(|_| ())
}
