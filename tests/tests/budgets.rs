//! Budgets, kept by bosun at each tool call with the real CLIs against the fake model API. A
//! run's own (Claude Code): once a run has reached its cap, its next call waits for the person
//! as an approval that says what was reached; allowing gives it as much again and the call goes
//! on (across a SIGKILL of bosund while it waits), denying stops the run by its ladder, and so
//! does nobody answering in time. A card's (five Codex runs of one card at once): not overrun
//! by more than one call per run, the waits survive a SIGKILL, one allow lets them all go on,
//! taking the budget off lets them finish. A project's for the day (two cards' board runs):
//! its runs wait. Bad caps are refused with the reason, nothing applied.

use std::path::PathBuf;
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, short_id, wait_for};
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

/// Issue 44: a run stopped for its budget showed its last call, which never got its result, as
/// "(running)" — in `bosun show`, in its JSON and on the web UI's run page — long after the run
/// had ended. (Gemini CLI, stopped while its call waits, writes no result for it; Claude Code
/// and Codex write the denial as one.) A call of a run that is over and has no result says
/// what happened to it.
#[test]
fn a_call_left_without_its_result_by_a_budget_stop_says_so_rather_than_running()
-> anyhow::Result<()> {
    let b = Bosun::new("budget_cut_call");
    let fake = FakeModel::start(
        "gemini",
        r#"call:run_shell_command:{"command":"echo one"};call:run_shell_command:{"command":"echo two"};text:done"#,
    )?;
    b.add_gemini_agent("coder", fake.url(), &["--allow", "Bash(echo *)"])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "max-tool-calls=1",
        "approval.wait=2s",
    ])?;
    let run = b.run_agent("coder", "echo twice")?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "stopped", "{view:#}");
    let calls = view["agent"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let open: Vec<&Value> = calls.iter().filter(|c| c["ok"].is_null()).collect();
    assert_eq!(
        open.len(),
        1,
        "the call the budget held has no result: {calls:#?}"
    );
    assert_eq!(
        open[0]["unanswered"], "the run was stopped first",
        "{calls:#?}"
    );
    assert!(
        calls
            .iter()
            .filter(|c| c["ok"] == true)
            .all(|c| c.get("unanswered").is_none()),
        "a call with its result says nothing more: {calls:#?}"
    );
    let text = b.ok(&["show", &run])?;
    assert!(!text.contains("(running)"), "{text}");
    assert!(
        text.contains("run_shell_command (no result: the run was stopped first)"),
        "{text}"
    );
    let ui = bosun_tests::webui::Ui::start(&b)?;
    let page = bosun_tests::browser_scenario(&ui.login, "toolcalls", &[("BOSUN_UI_RUN", &run)])?;
    let chips = page["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(chips.len(), 2, "{page:#}");
    assert_eq!(chips[0]["class"], "chip ok", "{page:#}");
    assert_eq!(
        chips[1]["text"], "run_shell_command (no result)",
        "{page:#}"
    );
    assert_eq!(
        chips[1]["title"], "no result: the run was stopped first",
        "{page:#}"
    );
    assert_ne!(
        chips[1]["class"], "chip bad",
        "not shown as failed: {page:#}"
    );
    b.ok(&["ui", "--stop"])?;
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
            "`0` is not a positive amount: budget.usd takes a positive amount, such as budget.usd=2, or off",
        ),
        (
            "budget.usd=-1",
            "`-1` is not a positive amount: budget.usd takes a positive amount",
        ),
        (
            "budget.tokens=lots",
            "`lots` is not a positive amount: budget.tokens takes a positive amount, such as budget.tokens=500000, or off",
        ),
        (
            "max-tool-calls=0",
            "`0` is not a positive amount: max-tool-calls takes a positive amount, such as max-tool-calls=200, or off",
        ),
    ] {
        let e = b.fails(&["agent", "set", "coder", "web.search=on", setting])?;
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

/// Issue 47: a Claude Code run's dollar cap holds within one prompt. Each message of the fake's
/// is 12 tokens in and, at its end (`message_delta`), 20 out; a Sonnet is priced by bosun's
/// table at $3 and $15 a million: $0.000051 as a message begins (its output a placeholder),
/// $0.000336 once it ends. With a cap of $0.0002, the first Read may go (its message's end may
/// not be read yet when it is asked: at most one call past the cap), and a later call waits
/// in the inbox. Before, Claude Code's usage was read only from its `result` line, at the end of
/// the prompt: every call went and nothing waited. The wait survives a SIGKILL of bosund, which
/// reads the messages again without counting any twice; allowing gives as much again each
/// time, and denying stops the run.
#[test]
fn a_dollar_budget_holds_within_one_prompt_of_claude_code() -> anyhow::Result<()> {
    let b = Bosun::new("budget_claude_usd");
    let fake = FakeModel::start("anthropic", TWO_READS)?;
    b.add_claude_agent("coder", fake.url(), &["--model", "claude-sonnet-4-5"])?;
    b.ok(&["agent", "set", "coder", "budget.usd=0.0002"])?;
    std::fs::write(b.scratch().join("coder/work/a.txt"), "a")?;
    std::fs::write(b.scratch().join("coder/work/b.txt"), "b")?;
    let run = b.run_agent("coder", "read both")?;
    let a = b.wait_approval()?;
    assert_eq!(a["class"], "budget", "{a:#}");
    let why = a["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("budget reached: $0.000") && why.ends_with(" of $0.0002"),
        "{why}"
    );
    assert!(
        allowed(&b, &run)? <= 1,
        "at most one call past the cap: {:#?}",
        b.decisions(&run)?
    );
    // Every message read so far counted once: 12 tokens in each, before and after bosund is
    // killed and reads the log again from where its record says.
    let input = |b: &Bosun| -> anyhow::Result<u64> {
        Ok(b.show(&run)?["agent"]["usage"]["models"][0]["input"]
            .as_u64()
            .unwrap_or_default())
    };
    let before = input(&b)?;
    let messages = fake.turns().len() as u64;
    assert_eq!(before, 12 * messages, "{:#}", b.show(&run)?);
    let cost = &b.show(&run)?["agent"]["usage"]["cost"];
    assert_eq!(cost["source"]["kind"], "computed", "{cost:#}");
    // The cost so far shows while the run goes, worked out (`~`).
    let ps = b.ok(&["ps"])?;
    let line = ps
        .lines()
        .find(|l| l.contains(&run[..8]))
        .unwrap_or_default();
    assert!(line.contains("running") && line.contains("~$0.000"), "{ps}");
    b.kill_daemon()?;
    assert_eq!(
        input(&b)?,
        before,
        "read again after a SIGKILL, counted once"
    );

    // Allowed: the call goes on; each later wait is allowed too, until the run ends.
    b.ok(&["approve", &short_id(&a)])?;
    let mut asked = 1;
    let view = wait_for("the run's end, allowing more each time", WAIT, || {
        for w in budget_waits(&b)? {
            b.ok(&["approve", &short_id(&w)])?;
            asked += 1;
        }
        let view = b.show(&run)?;
        Ok((view["state"] == "exited").then_some(view))
    })?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert_eq!(
        b.decisions(&run)?
            .iter()
            .filter(|d| d["decision"] == "allowed")
            .count(),
        2,
        "both Reads ran"
    );
    assert!(asked >= 1, "asked {asked} times");
    // The prompt's end: Claude Code's own total and cost replace bosun's count.
    let usage = &view["agent"]["usage"];
    assert_eq!(usage["cost"]["source"]["kind"], "reported", "{usage:#}");
    // The log keeps each message's start and end, not the pieces of it that its whole lines
    // repeat (a secret value could reach the log cut into pieces).
    let log = String::from_utf8_lossy(&b.logs(&run)?).into_owned();
    assert!(log.contains(r#""type":"message_delta""#), "{log}");
    assert!(!log.contains(r#""type":"content_block_delta""#), "{log}");

    // Denied: the run is stopped, saying why.
    let fake2 = FakeModel::start("anthropic", TWO_READS)?;
    b.add_claude_agent("other", fake2.url(), &["--model", "claude-sonnet-4-5"])?;
    b.ok(&["agent", "set", "other", "budget.usd=0.0002"])?;
    let run = b.run_agent("other", "read both")?;
    let a = b.wait_approval()?;
    assert_eq!(a["class"], "budget", "{a:#}");
    b.ok(&["deny", &short_id(&a)])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "stopped", "{view:#}");
    let reason = view["exit"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("budget: budget reached: $")
            && reason.ends_with("the person stopped it"),
        "{reason}"
    );
    b.finish()
}

/// Eight `echo` calls, then done: 9 model requests a run, 15 tokens each (10 in, 5 out).
const EIGHT_ECHOES: &str = r#"call:exec_command:{"cmd":"echo 1"};call:exec_command:{"cmd":"echo 2"};call:exec_command:{"cmd":"echo 3"};call:exec_command:{"cmd":"echo 4"};call:exec_command:{"cmd":"echo 5"};call:exec_command:{"cmd":"echo 6"};call:exec_command:{"cmd":"echo 7"};call:exec_command:{"cmd":"echo 8"};text:All done."#;
/// The tokens of one request of the fake's.
const REQUEST: u64 = 15;

/// A Codex agent `name` with a fake model API of its own (the fake's script is one for all
/// the runs it answers), whose echoes are allowed and whose calls may wait for the person 10
/// minutes.
fn echoer(b: &Bosun, name: &str) -> anyhow::Result<FakeModel> {
    let fake = FakeModel::start("openai", EIGHT_ECHOES)?;
    b.add_codex_agent(name, fake.url(), &["--allow", "Bash(echo *)"])?;
    b.ok(&[
        "agent",
        "set",
        name,
        "approval.wait=10m",
        "approval.wait-for-person=on",
    ])?;
    Ok(fake)
}

/// Starts a run of each agent of `names` for `card`, echoing eight times; their ids.
fn card_runs(b: &Bosun, names: &[&str], card: &str) -> anyhow::Result<Vec<String>> {
    names
        .iter()
        .map(|name| {
            let v = b.json(&["agent", "run", name, "echo eight times", "--card", card])?;
            Ok(v["id"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// Each of `waits` says it waits because a budget was reached: `starts` … `ends`.
fn each_says(waits: &[Value], starts: &str, ends: &str) {
    for a in waits {
        let why = a["why"].as_str().unwrap_or_default();
        assert!(why.starts_with(starts) && why.ends_with(ends), "{why}");
    }
}

/// The budget approvals waiting, by run.
fn budget_waits(b: &Bosun) -> anyhow::Result<Vec<Value>> {
    Ok(b.waiting_approvals()?
        .into_iter()
        .filter(|a| a["class"] == "budget")
        .collect())
}

/// Waits until each of `runs` has a budget approval waiting.
fn all_wait(b: &Bosun, runs: &[String]) -> anyhow::Result<Vec<Value>> {
    wait_for(
        "every run's budget approval",
        Duration::from_secs(240),
        || {
            let waits = budget_waits(b)?;
            let every = runs
                .iter()
                .all(|r| waits.iter().any(|a| a["run"].as_str() == Some(r.as_str())));
            Ok(every.then_some(waits))
        },
    )
}

/// The calls of `run` bosun allowed.
fn allowed(b: &Bosun, run: &str) -> anyhow::Result<usize> {
    Ok(b.decisions(run)?
        .iter()
        .filter(|d| d["decision"] == "allowed")
        .count())
}

/// Every kind of token a run used, as its record has it.
fn tokens_of(b: &Bosun, run: &str) -> anyhow::Result<u64> {
    let usage = &b.show(run)?["agent"]["usage"];
    Ok(usage["models"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    ["input", "output", "cache_read", "cache_write"]
                        .iter()
                        .map(|k| m[*k].as_u64().unwrap_or_default())
                        .sum::<u64>()
                })
                .sum()
        })
        .unwrap_or_default())
}

#[test]
fn five_runs_of_one_card_share_its_budget_wait_across_a_sigkill_and_go_on_when_more_is_allowed()
-> anyhow::Result<()> {
    let b = Bosun::new("budget_card");
    let names: Vec<String> = (0..5).map(|i| format!("coder{i}")).collect();
    let _fakes: Vec<FakeModel> = names
        .iter()
        .map(|n| echoer(&b, n))
        .collect::<anyhow::Result<_>>()?;
    let card = b.json(&["board", "card", "add", "Share the budget"])?;
    let card = card["short_id"].as_str().unwrap_or_default().to_string();
    for (bad, words) in [
        (
            "0",
            "`0` is not a positive amount: a card's budget in tokens takes a positive amount, such as 500000, or off to take it off",
        ),
        ("-5", "`-5` is not a positive amount"),
        ("lots", "`lots` is not a positive amount"),
    ] {
        let e = b.fails(&[
            "board",
            "card",
            "edit",
            &card,
            "--title",
            "Renamed",
            "--budget-tokens",
            bad,
        ])?;
        assert!(e.contains(words), "{bad}: {e}");
    }
    let e = b.fails(&["board", "card", "edit", &card, "--budget-usd", "0"])?;
    assert!(
        e.contains("a card's budget in dollars takes a positive amount, such as 5 or 2.50"),
        "{e}"
    );
    let v = b.json(&["board", "card", "show", &card])?;
    assert_eq!(
        (v["title"].as_str(), &v["budget"]),
        (Some("Share the budget"), &Value::Null),
        "nothing of a refused edit was kept: {v:#}"
    );
    // Reached early, after 10 of the 45 requests the scripts need; an allow gives as much
    // again, more than the five runs can have spent past it, so every one of them goes on.
    let cap = 10 * REQUEST;
    b.ok(&[
        "board",
        "card",
        "edit",
        &card,
        "--budget-tokens",
        &cap.to_string(),
    ])?;
    let shown = b.ok(&["board", "card", "show", &card])?;
    assert!(
        shown.contains("budget      150 tokens for all its runs; spent 0 tokens"),
        "{shown}"
    );

    // Five runs of the card at once: each may go one call past the cap (its tokens possibly
    // reported a request late, as for a run's own budget), no further.
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let runs = card_runs(&b, &names, &card)?;
    let waits = all_wait(&b, &runs)?;
    assert_eq!(waits.len(), 5, "one wait a run: {waits:#?}");
    each_says(
        &waits,
        "budget reached: card 'Share the budget' ",
        " of 150 tokens",
    );
    for a in &waits {
        let preview = a["preview"].as_str().unwrap_or_default();
        assert!(
            preview.starts_with(
                "allow 150 tokens more for card 'Share the budget' (every run it counts)"
            ),
            "{preview}"
        );
    }
    let spent: u64 = runs
        .iter()
        .map(|r| tokens_of(&b, r))
        .sum::<anyhow::Result<u64>>()?;
    let view = b.json(&["board", "card", "show", &card])?;
    assert_eq!(view["budget"]["spent_tokens"], spent, "{view:#}");
    assert!(
        spent >= cap && spent < cap + 5 * 2 * REQUEST,
        "the card's runs spent {spent} tokens of {cap}: more than one call past it per run"
    );
    let before: Vec<usize> = runs
        .iter()
        .map(|r| allowed(&b, r))
        .collect::<anyhow::Result<_>>()?;
    assert!(
        before.iter().sum::<usize>() < 40,
        "the runs were held before their scripts ended: {before:?}"
    );

    // The waits survive a SIGKILL of bosund, the same ones.
    b.kill_daemon()?;
    let after_kill = budget_waits(&b)?;
    let ids = |w: &[Value]| {
        let mut ids: Vec<String> = w
            .iter()
            .filter_map(|a| a["id"].as_str().map(str::to_string))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&after_kill), ids(&waits));

    // One allow gives the card as much again, and every run goes on.
    b.ok(&["approve", &short_id(&waits[0])])?;
    wait_for("every run to go on", Duration::from_secs(240), || {
        let now: Vec<usize> = runs
            .iter()
            .map(|r| allowed(&b, r))
            .collect::<anyhow::Result<_>>()?;
        Ok(now.iter().zip(&before).all(|(n, b)| n > b).then_some(()))
    })?;
    let view = b.json(&["board", "card", "show", &card])?;
    assert_eq!(
        view["budget"]["more"]["tokens"], cap,
        "given once: {view:#}"
    );
    let all = b.all_approvals()?;
    let first: Vec<&Value> = all
        .iter()
        .filter(|a| ids(&waits).contains(&a["id"].as_str().unwrap_or_default().to_string()))
        .collect();
    assert!(
        first.iter().all(|a| a["state"] == "allowed"),
        "every run's first wait was settled by the one allow: {first:#?}"
    );

    // Their scripts need more than that: they wait again at twice the cap. Set anew, the
    // budget is what was set (what was allowed more of the old one is forgotten), and raised
    // past what the scripts need, it lets them finish.
    let again = wait_for("a wait at the new cap", Duration::from_secs(240), || {
        Ok(budget_waits(&b)?.into_iter().next())
    })?;
    assert!(
        again["why"]
            .as_str()
            .is_some_and(|w| w.ends_with(" of 300 tokens")),
        "{again:#}"
    );
    b.ok(&["board", "card", "edit", &card, "--budget-tokens", "1000"])?;
    let v = b.json(&["board", "card", "show", &card])?;
    assert_eq!(
        (&v["budget"]["caps"]["tokens"], &v["budget"]["more"]),
        (&serde_json::json!(1000), &Value::Null),
        "{v:#}"
    );
    for run in &runs {
        let view = b.wait_ended(run, WAIT)?;
        assert_eq!(view["outcome"], "succeeded", "{view:#}");
        assert_eq!(allowed(&b, run)?, 8, "{run}");
    }
    let by_card = b.json(&["usage", "--by", "card"])?;
    assert_eq!(
        by_card["total"]["runs"], 5,
        "the five runs are the card's: {by_card:#}"
    );
    let total: u64 = runs
        .iter()
        .map(|r| tokens_of(&b, r))
        .sum::<anyhow::Result<u64>>()?;
    assert_eq!(total, 5 * 9 * REQUEST);
    b.ok(&["board", "card", "edit", &card, "--budget-tokens", "off"])?;
    let v = b.json(&["board", "card", "show", &card])?;
    assert_eq!(v["budget"], Value::Null, "{v:#}");
    b.finish()
}

/// A repository on `main` with one commit.
fn repo(b: &Bosun) -> anyhow::Result<PathBuf> {
    let dir = b.scratch().join("web");
    bosun_tests::repo_with_one_commit(&dir)?;
    Ok(dir)
}

/// Issue 47: a card's budget of tool calls counts the calls bosun allowed all its runs, and two
/// runs of the card going at once reach it together. Each run may be one call past it (both
/// may be judged at the same moment), no further; allowing gives as much again, for both.
#[test]
fn a_cards_budget_of_tool_calls_is_reached_by_two_runs_at_once() -> anyhow::Result<()> {
    let b = Bosun::new("budget_card_calls");
    let _fakes = [echoer(&b, "one")?, echoer(&b, "two")?];
    let card = b.json(&["board", "card", "add", "Count the calls"])?;
    let card = card["short_id"].as_str().unwrap_or_default().to_string();
    let e = b.fails(&["board", "card", "edit", &card, "--budget-calls", "0"])?;
    assert!(
        e.contains("a card's budget in tool calls takes a positive amount"),
        "{e}"
    );
    b.ok(&["board", "card", "edit", &card, "--budget-calls", "4"])?;
    let runs = card_runs(&b, &["one", "two"], &card)?;
    let waits = all_wait(&b, &runs)?;
    each_says(
        &waits,
        "budget reached: card 'Count the calls' ",
        " of 4 tool calls",
    );
    let made: Vec<usize> = runs
        .iter()
        .map(|r| allowed(&b, r))
        .collect::<anyhow::Result<_>>()?;
    let all: usize = made.iter().sum();
    assert!(
        (4..=6).contains(&all) && made.iter().all(|&n| n >= 1),
        "4 calls allowed between the two, one past at most each: {made:?}"
    );
    let shown = b.ok(&["board", "card", "show", &card])?;
    let line = shown
        .lines()
        .find(|l| l.starts_with("budget"))
        .unwrap_or_default();
    assert!(
        line.contains("4 tool calls for all its runs; spent ")
            && line.ends_with(&format!(" tokens, {all} tool calls")),
        "{shown}"
    );
    // One allow gives the card 4 more, and both runs go on.
    b.ok(&["approve", &short_id(&waits[0])])?;
    wait_for("both runs to go past the cap", WAIT, || {
        let past = runs
            .iter()
            .map(|r| allowed(&b, r))
            .collect::<anyhow::Result<Vec<_>>>()?
            .iter()
            .sum::<usize>();
        Ok((past > all).then_some(()))
    })?;
    for r in &runs {
        b.ok(&["stop", r])?;
    }
    b.finish()
}

#[test]
fn a_projects_daily_budget_reached_holds_the_runs_of_its_cards() -> anyhow::Result<()> {
    let b = Bosun::new("budget_project");
    let _fakes = [echoer(&b, "header")?, echoer(&b, "footer")?];
    let repo = repo(&b)?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    let e = b.fails(&["project", "edit", "web", "--daily-budget-usd", "-2"])?;
    assert!(
        e.contains(
            "`-2` is not a positive amount: a project's daily budget in dollars takes a positive amount, such as 5 or 2.50, or off to take it off"
        ),
        "{e}"
    );
    assert_eq!(
        b.json(&["project", "show", "web"])?["daily_budget"],
        Value::Null
    );
    let cap = 4 * REQUEST;
    b.ok(&[
        "project",
        "edit",
        "web",
        "--daily-budget-tokens",
        &cap.to_string(),
    ])?;
    let shown = b.ok(&["project", "show", "web"])?;
    assert!(
        shown.contains(
            "daily budget    60 tokens a day for all its cards' runs; today; spent 0 tokens"
        ),
        "{shown}"
    );
    // Two cards of the project, started by the board: each run counts toward the day.
    let mut cards = Vec::new();
    for (title, agent) in [("Fix the header", "header"), ("Fix the footer", "footer")] {
        let c = b.json(&[
            "board",
            "card",
            "add",
            title,
            "--project",
            "web",
            "--assignee",
            agent,
        ])?;
        cards.push(c["short_id"].as_str().unwrap_or_default().to_string());
    }
    for c in &cards {
        b.json(&["board", "card", "move", c, "To do"])?;
    }
    let runs: Vec<String> = cards
        .iter()
        .map(|c| {
            wait_for("the card's run", Duration::from_secs(60), || {
                let v = b.json(&["board", "card", "show", c])?;
                Ok(v["run"].as_str().map(str::to_string))
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let waits = all_wait(&b, &runs)?;
    each_says(
        &waits,
        "daily budget reached: project 'web' on ",
        " of 60 tokens",
    );
    let p = b.json(&["project", "show", "web"])?;
    let spent = p["daily_budget"]["spent_tokens"]
        .as_u64()
        .unwrap_or_default();
    assert!(
        spent >= cap && spent < cap + 2 * 2 * REQUEST,
        "the project's runs spent {spent} tokens of {cap} today: {p:#}"
    );
    // Taken off, the runs go on and finish.
    b.ok(&["project", "edit", "web", "--daily-budget-tokens", "off"])?;
    for run in &runs {
        let view = b.wait_ended(run, WAIT)?;
        assert_eq!(view["outcome"], "succeeded", "{view:#}");
    }
    b.finish()
}

/// Issue 44: `agent set x budget.usd=0.0000001` was kept as a budget of $0 (the amount rounded
/// to no millionths of a dollar, the unit kept), while `budget.usd=0` was refused; a card's
/// budget of the same amount was refused as "`0` is not a positive amount", a value the person
/// never wrote. Now an agent's, a card's and a project's budget refuse it for the same reason,
/// saying the smallest amount there is, and the smallest amount itself is kept and shown.
#[test]
fn a_dollar_budget_below_a_millionth_is_refused_as_too_small_by_agents_cards_and_projects()
-> anyhow::Result<()> {
    let b = Bosun::new("budget_too_small");
    let cwd = b.scratch().display().to_string();
    b.ok(&["agent", "add", "coder", "--cli", "claude", "--cwd", &cwd])?;
    let card = b.json(&["board", "card", "add", "Tiny budget"])?;
    let card = card["short_id"].as_str().unwrap_or_default().to_string();
    b.json(&["project", "add", "web", &repo(&b)?.display().to_string()])?;
    let reason = "`0.0000001` is less than $0.000001, the smallest amount bosun keeps (it counts dollars in millionths)";
    let refusals = [
        b.fails(&["agent", "set", "coder", "budget.usd=0.0000001"])?,
        b.fails(&["board", "card", "edit", &card, "--budget-usd", "0.0000001"])?,
        b.fails(&["project", "edit", "web", "--daily-budget-usd", "0.0000001"])?,
    ];
    for e in &refusals {
        assert!(e.contains(reason), "{e}");
        assert!(!e.contains("`0` is not"), "{e}");
    }
    assert_eq!(b.json(&["agent", "show", "coder"])?["budget"], Value::Null);
    assert_eq!(
        b.json(&["board", "card", "show", &card])?["budget"],
        Value::Null
    );
    // The smallest amount is kept as it is, and shown as it was written.
    b.ok(&["agent", "set", "coder", "budget.usd=0.000001"])?;
    assert_eq!(
        b.json(&["agent", "show", "coder"])?["budget"],
        serde_json::json!({"micro_usd": 1})
    );
    let shown = b.ok(&["agent", "show", "coder"])?;
    assert!(shown.contains("budget: $0.000001 a run"), "{shown}");
    b.finish()
}
