//! A hostile MCP server (`hostile-mcp-server`) against a real Claude Code run and against
//! `bosun mcp …` at a terminal. Whatever the server does (a flood of tools after the person's
//! look, escape sequences in every string, a result of 50 MB, lines that are not JSON, a flood
//! of notifications, a call it never answers):
//! - the run goes on, or fails with words;
//! - every message between the runner and bosund fits, so the link never loops and bosund's
//!   log stays quiet;
//! - `bosun stop --wait` ends the run within its ladder;
//! - no escape byte of the server's reaches the terminal.
//!
//! And a stop ends a run whose runner cannot carry it out (stopped with SIGSTOP: its link
//! wedged on purpose).

use std::path::Path;
use std::time::{Duration, Instant};

use bosun_tests::{Bosun, FakeModel, bin_dir, wait_for};
use serde_json::Value;

/// The ESC byte: whatever reached a terminal must not hold one the server sent.
const ESC: u8 = 0x1b;

fn hostile_bin() -> String {
    bin_dir().join("hostile-mcp-server").display().to_string()
}

/// `bosun mcp add NAME -- hostile-mcp-server --mode MODE EXTRA…`.
fn add_hostile(b: &Bosun, name: &str, mode: &str, extra: &[&str]) -> anyhow::Result<()> {
    let bin = hostile_bin();
    let mut args = vec!["mcp", "add", name, "--", bin.as_str(), "--mode", mode];
    args.extend_from_slice(extra);
    b.ok(&args)?;
    Ok(())
}

/// A Claude Code agent `coder` on `fake`, with server `server` on, its tools found at once.
fn add_coder(b: &Bosun, fake: &FakeModel, server: &str) -> anyhow::Result<()> {
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    b.ok(&["agent", "set", "coder", &format!("mcp.{server}=on")])?;
    Ok(())
}

/// The lines the run's runner wrote to its own log (`runs/<id>/runner.log`).
fn runner_log(b: &Bosun, run: &str) -> String {
    std::fs::read_to_string(b.home.join("runs").join(run).join("runner.log")).unwrap_or_default()
}

/// What `bosun logs RUN` prints to stderr: the program's stderr and bosun's own lines (the
/// gateway's notes among them).
fn log_text(b: &Bosun, run: &str) -> anyhow::Result<String> {
    let out = b.output(&["logs", run])?;
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

fn bytes_of(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// `bosun stop RUN --wait`, which must end the run within its ladder (5 s + 5 s) and a little.
fn stop_and_wait(b: &Bosun, run: &str) -> anyhow::Result<Value> {
    let began = Instant::now();
    let out = b.output(&["stop", run, "--wait"])?;
    anyhow::ensure!(
        out.status.success(),
        "bosun stop --wait failed after {:?}: {}",
        began.elapsed(),
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = b.show(run)?;
    assert_eq!(shown["state"], "exited", "{shown:#}");
    Ok(shown)
}

#[test]
fn twenty_thousand_tools_after_a_look_do_not_wedge_the_run() -> anyhow::Result<()> {
    let b = Bosun::new("hostile_many_tools");
    let state = b.scratch().join("looked");
    add_hostile(
        &b,
        "flood",
        "many-tools",
        &["--state", &state.display().to_string()],
    )?;
    // The person's look sees three tools, and approves them as they are.
    let look = b.json(&["mcp", "tools", "flood"])?;
    assert_eq!(look["tools"].as_array().map(Vec::len), Some(3), "{look:#}");

    // The run's CLI is listed 20,003: the gateway holds 20,000 back, and tells bosund of a
    // bounded number of them.
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:flood/echo:{"message":"ping"};text:All done."#,
    )?;
    add_coder(&b, &fake, "flood")?;
    let daemon_log = b.home.join("bosund.log");
    let before = bytes_of(&daemon_log);
    let out = b.output(&["agent", "run", "coder", "call echo", "--follow"])?;
    let log = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{log}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = b.run_ids().last().cloned().unwrap_or_default();
    let shown = b.show(&run)?;
    assert_eq!(shown["outcome"], "succeeded", "{shown:#}");
    // The call went through the gateway and was answered.
    let turns = fake.turns();
    assert!(
        turns.iter().any(|t| t["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("Echo: ping"))),
        "{turns:#?}"
    );

    // The link never looped: the runner never lost bosund, and bosund's log stayed quiet.
    let runner = runner_log(&b, &run);
    assert!(!runner.contains("lost the daemon"), "{runner}");
    let grew = bytes_of(&daemon_log) - before;
    assert!(grew < 64 * 1024, "bosund.log grew {grew} bytes");

    // The run's log names a few of the tools held back one by one, and counts the rest.
    let logged = log_text(&b, &run)?;
    let one_by_one = logged.matches("is held back from this run").count();
    assert!(
        (1..=20).contains(&one_by_one),
        "{one_by_one} lines: {logged}"
    );
    assert!(
        logged.contains("more tools of flood are held back from this run"),
        "{logged}"
    );

    // The server's pending list has what the run told bosund: a bounded number of them.
    let inspect = b.json(&["mcp", "inspect", "flood"])?;
    let pending = inspect["pending_tools"]
        .as_array()
        .map(Vec::len)
        .unwrap_or_default();
    // (`inspect` looks at the server itself: a look keeps at most 5,000 tools.)
    assert!((1..=5000).contains(&pending), "{pending} pending");
    b.finish()
}

#[test]
fn a_call_the_server_never_answers_is_stopped_within_the_ladder() -> anyhow::Result<()> {
    let b = Bosun::new("hostile_never_answers");
    add_hostile(&b, "mute", "never-answers", &[])?;
    b.ok(&["mcp", "tools", "mute"])?;
    b.ok(&["mcp", "edit", "mute", "--call-deadline", "10m"])?;
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:mute/echo:{"message":"ping"};text:done"#,
    )?;
    add_coder(&b, &fake, "mute")?;
    let run = b.run_agent("coder", "call echo")?;
    // The call reaches the server, which never answers it.
    wait_for("the call to be allowed", Duration::from_secs(60), || {
        let allowed = b
            .decisions(&run)?
            .iter()
            .any(|d| d.to_string().contains("mcp__mute__echo"));
        Ok(allowed.then_some(()))
    })?;
    let shown = stop_and_wait(&b, &run)?;
    assert_eq!(shown["outcome"], "stopped", "{shown:#}");
    b.finish()
}

#[test]
fn a_stop_ends_a_run_whose_runner_is_wedged() -> anyhow::Result<()> {
    let b = Bosun::new("hostile_wedged_runner");
    let run = b.start(&["--stop-grace", "1s"], &["sleep", "1000"])?;
    let shown = b.wait_run(&run, "the run to start", Duration::from_secs(30), |v| {
        v["state"] == "running"
    })?;
    // The program is the runner's child.
    let program = shown["pid"]
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no pid in {shown:#}"))?;
    let status = std::fs::read_to_string(format!("/proc/{program}/status"))?;
    let runner: i64 = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .map(str::trim)
        .unwrap_or_default()
        .parse()?;
    // The runner can no longer do anything: its link is wedged, and so is its ladder.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(runner as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )?;
    let shown = stop_and_wait(&b, &run)?;
    assert_eq!(shown["outcome"], "stopped", "{shown:#}");
    let reason = shown["exit"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("bosund ended it"), "{shown:#}");
    b.finish()
}

/// Keeps `ESC` in mind for the terminal tests below.
#[allow(dead_code)]
fn has_escape(text: &[u8]) -> bool {
    text.contains(&ESC)
}
