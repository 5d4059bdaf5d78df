//! A run's budget, kept by bosun at each tool call with the real Claude Code against the fake
//! model API: once a run has reached its cap, its next call waits for the person as an approval
//! that says what was reached; allowing gives it as much again and the call goes on (across a
//! SIGKILL of bosund while it waits), denying stops the run by its ladder, and so does nobody
//! answering in time. Bad caps are refused with the reason.

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, short_id};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);
const TWO_READS: &str =
    r#"call:Read:{"file_path":"a.txt"};call:Read:{"file_path":"b.txt"};text:done"#;

/// A Claude Code agent `name` whose runs may make one tool call before asking for more.
fn capped(b: &Bosun, name: &str, fake: &FakeModel, more: &[&str]) -> anyhow::Result<()> {
    b.add_claude_agent(name, fake.url(), &[])?;
    let mut args = vec!["agent", "set", name, "max-tool-calls=1"];
    args.extend_from_slice(more);
    b.ok(&args)?;
    Ok(())
}

/// The budget's approval of the run that waits.
fn budget_wait(b: &Bosun) -> anyhow::Result<Value> {
    let a = b.wait_approval()?;
    assert_eq!(a["class"], "budget", "{a:#}");
    assert_eq!(a["why"], "tool call cap reached: 1 of 1 calls", "{a:#}");
    let preview = a["preview"].as_str().unwrap_or_default();
    assert!(
        preview.starts_with("allow 1 tool calls more for this run")
            && preview.contains("the call waiting: Read"),
        "{preview}"
    );
    Ok(a)
}

#[test]
fn allowing_more_lets_the_waiting_call_go_on_even_after_a_sigkill_of_bosund() -> anyhow::Result<()>
{
    let b = Bosun::new("budget_allow");
    let fake = FakeModel::start("anthropic", TWO_READS)?;
    capped(&b, "coder", &fake, &[])?;
    let shown = b.ok(&["agent", "show", "coder"])?;
    assert!(shown.contains("budget: 1 tool calls a run"), "{shown}");
    let run = b.run_agent("coder", "read both")?;
    let a = budget_wait(&b)?;
    assert_eq!(
        fake.turns().len(),
        2,
        "the model asked for the second Read and waits"
    );
    b.kill_daemon()?;
    let said = b.ok(&["approve", &short_id(&a)])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(
        view["outcome"],
        "succeeded",
        "{said}\n{view:#}\n{}",
        b.daemon_log()
    );
    let ds = b.decisions(&run)?;
    let got: Vec<(&str, &str)> = ds
        .iter()
        .map(|d| {
            (
                d["tool"].as_str().unwrap_or_default(),
                d["decision"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(got, [("Read", "allowed"), ("Read", "allowed")], "{ds:#?}");
    let all = b.all_approvals()?;
    let budget: Vec<&Value> = all.iter().filter(|i| i["class"] == "budget").collect();
    assert_eq!(budget.len(), 1, "asked once: {all:#?}");
    assert_eq!(budget[0]["state"], "allowed");
    b.finish()
}

#[test]
fn denying_or_nobody_answering_stops_the_run_by_its_ladder_saying_budget() -> anyhow::Result<()> {
    let b = Bosun::new("budget_stop");
    let fake = FakeModel::start("anthropic", TWO_READS)?;
    capped(&b, "coder", &fake, &[])?;
    let run = b.run_agent("coder", "read both")?;
    let a = budget_wait(&b)?;
    b.ok(&["deny", &short_id(&a)])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "stopped", "{view:#}");
    assert_eq!(
        view["exit"]["reason"],
        "budget: tool call cap reached: 1 of 1 calls; the person stopped it",
        "{view:#}"
    );

    let slow = FakeModel::start("anthropic", TWO_READS)?;
    capped(&b, "unwatched", &slow, &["approval.wait=2s"])?;
    let run = b.run_agent("unwatched", "read both")?;
    budget_wait(&b)?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "stopped", "{view:#}");
    assert_eq!(
        view["exit"]["reason"],
        "budget: tool call cap reached: 1 of 1 calls; nobody allowed more in time",
        "{view:#}"
    );
    let ps = b.ok(&["ps", "--all"])?;
    assert!(ps.contains("stopped"), "{ps}");
    b.finish()
}

#[test]
fn caps_that_are_not_positive_amounts_are_refused_and_off_removes_one() -> anyhow::Result<()> {
    let b = Bosun::new("budget_bad");
    let fake = FakeModel::start("anthropic", "text:done")?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    for (setting, words) in [
        (
            "budget.usd=0",
            "`budget.usd=0`: budget.usd takes a positive amount, such as budget.usd=2, or off",
        ),
        (
            "budget.usd=-1",
            "`budget.usd=-1`: budget.usd takes a positive amount",
        ),
        (
            "budget.tokens=lots",
            "`budget.tokens=lots`: budget.tokens takes a positive amount, such as budget.tokens=500000, or off",
        ),
        (
            "max-tool-calls=0",
            "`max-tool-calls=0`: max-tool-calls takes a positive amount, such as max-tool-calls=200, or off",
        ),
    ] {
        let e = b.fails(&["agent", "set", "coder", "max-tool-calls=5", setting])?;
        assert!(e.contains(words), "{setting}: {e}");
    }
    // Nothing of a refused set was kept.
    let v = b.json(&["agent", "show", "coder"])?;
    assert_eq!(v["budget"], Value::Null, "{v:#}");
    b.ok(&[
        "agent",
        "set",
        "coder",
        "budget.usd=2.5",
        "budget.tokens=500000",
    ])?;
    let v = b.json(&["agent", "show", "coder"])?;
    assert_eq!(
        v["budget"],
        serde_json::json!({"micro_usd": 2_500_000, "tokens": 500_000}),
        "{v:#}"
    );
    b.ok(&["agent", "set", "coder", "budget.usd=off"])?;
    let v = b.json(&["agent", "show", "coder"])?;
    assert_eq!(v["budget"], serde_json::json!({"tokens": 500_000}), "{v:#}");
    b.finish()
}

#[test]
fn a_token_budget_is_held_at_most_one_call_past_its_cap_with_codex() -> anyhow::Result<()> {
    let b = Bosun::new("budget_tokens");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"echo one"};call:exec_command:{"cmd":"echo two"};call:exec_command:{"cmd":"echo three"};text:All done."#,
    )?;
    b.add_codex_agent("coder", fake.url(), &["--allow", "Bash(echo *)"])?;
    // The fake's first answer alone is 15 tokens.
    b.ok(&["agent", "set", "coder", "budget.tokens=10"])?;
    let run = b.run_agent("coder", "echo three times")?;
    let a = b.wait_approval()?;
    assert_eq!(a["class"], "budget", "{a:#}");
    let why = a["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("budget reached: ") && why.ends_with(" of 10 tokens"),
        "{why}"
    );
    let ran = b
        .decisions(&run)?
        .iter()
        .filter(|d| d["decision"] == "allowed")
        .count();
    assert!(ran <= 1, "at most one call past the cap: {ran}");
    b.ok(&["deny", &short_id(&a)])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "stopped", "{view:#}");
    let usage = &view["agent"]["usage"];
    assert!(
        usage["models"][0]["input"].as_u64().unwrap_or_default() >= 10,
        "{usage:#}"
    );
    b.finish()
}
