//! Every MCP call of a run is judged once by bosun's approval policy, at the gateway: a call the
//! CLI's control protocol already brought to bosund goes on on that decision (see
//! `gateway.rs`, the model's call), and a call no decision covers is asked of bosund by the
//! gateway itself. End to end: the real Claude Code holding its turn against the fake model
//! API, the real `@modelcontextprotocol/server-everything` behind the gateway (wrapped so that
//! every message it receives is kept in a file: what the server heard, counted), and a second
//! client dialling the run's gateway the way the CLI does, whose calls no control protocol
//! covers. The policy allows a read at once; a tool the person wants to approve waits in the
//! inbox, its call waiting too; `bosun approve` lets it through once, across a SIGKILL of
//! bosund as well; `bosun deny` refuses it, and the server never hears of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_tests::gateway_client::{GatewayClient as Client, text_of};
use bosun_tests::{Bosun, FakeModel, everything_bin, short_id, wait_for};
use serde_json::{Value, json};

/// The policy's rule for a read-only tool under the default approval mode.
const COVERED: &str =
    "the agent's approval mode lets tools of this kind run without asking (step 6)";

/// server-everything as `everything`, every message it receives kept in the file returned;
/// its tools looked at (so the policy knows echo only reads). A Claude agent `coder` with it on.
fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<PathBuf> {
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    // In the run's workspace: the server runs inside the run's fence.
    let heard = b
        .scratch()
        .join("coder")
        .join("work")
        .join("everything-heard.jsonl");
    let command = format!(
        "tee -a '{}' | exec '{}' stdio",
        heard.display(),
        everything_bin().display()
    );
    b.ok(&["mcp", "add", "everything", "--", "/bin/sh", "-c", &command])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;
    Ok(heard)
}

/// A run of `coder` held on its turn (the fake model's `hold`), and a client of its gateway to
/// `everything`, initialized: its calls are covered by no control protocol.
fn held_run(b: &Bosun, fake: &FakeModel) -> anyhow::Result<(String, Client)> {
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "everything")?;
    c.initialize()?;
    Ok((id, c))
}

/// How many calls of echo with `message` the server received.
fn heard(file: &Path, message: &str) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| {
            m["method"] == "tools/call"
                && m["params"]["name"] == "echo"
                && m["params"]["arguments"]["message"] == message
        })
        .count()
}

/// The run's call entries (`bosun show RUN --json`).
fn entries(b: &Bosun, run: &str) -> anyhow::Result<Vec<Value>> {
    Ok(b.show(run)?["mcp_calls"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The approvals of the run, waiting or decided.
fn approvals_of(b: &Bosun, run: &str) -> anyhow::Result<Vec<Value>> {
    Ok(b.all_approvals()?
        .into_iter()
        .filter(|a| a["run"] == run)
        .collect())
}

/// The approval waiting for `run`'s call of echo with `message` (its preview says it).
fn wait_approval_for(b: &Bosun, message: &str) -> anyhow::Result<Value> {
    wait_for(
        "the call's approval in the inbox",
        Duration::from_secs(60),
        || {
            Ok(b.waiting_approvals()?
                .into_iter()
                .find(|a| a["tool"] == "mcp__everything__echo" && a.to_string().contains(message)))
        },
    )
}

#[test]
fn a_call_no_decision_covers_is_judged_at_the_gateway_and_waits_for_the_person()
-> anyhow::Result<()> {
    let b = Bosun::new("gateway_judge_asks");
    let fake = FakeModel::start("anthropic", "hold")?;
    let heard_file = setup(&b, &fake)?;
    let (id, mut c) = held_run(&b, &fake)?;

    // A read the policy lets run: asked of bosund by the gateway, allowed at once.
    let one = c.call("echo", json!({"message": "one"}), Duration::from_secs(30))?;
    assert!(text_of(&one).contains("Echo: one"), "{one}");
    assert_eq!(heard(&heard_file, "one"), 1);
    let ds = b.decisions(&id)?;
    assert_eq!(ds.len(), 1, "one decision, the gateway's: {ds:#?}");
    assert_eq!(ds[0]["tool"], "mcp__everything__echo");
    assert_eq!(ds[0]["by"], COVERED);

    // The person wants to approve each use of echo: the call waits in the inbox, and so does
    // the client; the server has not heard of it.
    b.ok(&["agent", "set", "coder", "mcp.everything.echo=ask"])?;
    let (two, c) = std::thread::scope(|s| -> anyhow::Result<(Value, Client)> {
        let waiting = s.spawn(move || {
            let answer = c.call("echo", json!({"message": "two"}), Duration::from_secs(90));
            (answer, c)
        });
        let a = wait_approval_for(&b, "two")?;
        assert_eq!(
            a["why"], "the person wants to approve each use of this tool",
            "{a:#}"
        );
        assert!(!waiting.is_finished(), "the call waits for the person");
        assert_eq!(
            heard(&heard_file, "two"),
            0,
            "the server has not heard of it"
        );
        b.ok(&["approve", &short_id(&a)])?;
        let (answer, c) = waiting
            .join()
            .map_err(|_| anyhow::anyhow!("the client's thread panicked"))?;
        Ok((answer?, c))
    })?;
    let mut c = c;
    assert!(text_of(&two).contains("Echo: two"), "{two}");
    assert_eq!(heard(&heard_file, "two"), 1, "let through once");

    // bosund SIGKILLed while a call waits: the runner asks again once bosund is back and the
    // call still waits under the same approval; allowed, it runs once.
    let (three, c) = std::thread::scope(|s| -> anyhow::Result<(Value, Client)> {
        let waiting = s.spawn(move || {
            let answer = c.call(
                "echo",
                json!({"message": "three"}),
                Duration::from_secs(120),
            );
            (answer, c)
        });
        let a = wait_approval_for(&b, "three")?;
        b.kill_daemon()?;
        let again = wait_approval_for(&b, "three")?;
        assert_eq!(again["id"], a["id"], "the same approval, not a second one");
        assert_eq!(heard(&heard_file, "three"), 0);
        b.ok(&["approve", &short_id(&a)])?;
        let (answer, c) = waiting
            .join()
            .map_err(|_| anyhow::anyhow!("the client's thread panicked"))?;
        Ok((answer?, c))
    })?;
    let mut c = c;
    assert!(text_of(&three).contains("Echo: three"), "{three}");

    // Denied: the client gets an error result saying why, and the server never hears of it.
    let (four, c) = std::thread::scope(|s| -> anyhow::Result<(Value, Client)> {
        let waiting = s.spawn(move || {
            let answer = c.call("echo", json!({"message": "four"}), Duration::from_secs(90));
            (answer, c)
        });
        let a = wait_approval_for(&b, "four")?;
        b.ok(&["deny", &short_id(&a)])?;
        let (answer, c) = waiting
            .join()
            .map_err(|_| anyhow::anyhow!("the client's thread panicked"))?;
        Ok((answer?, c))
    })?;
    assert_eq!(four["result"]["isError"], true, "{four}");
    let said = text_of(&four);
    assert!(
        said.contains("bosun denied this call")
            && said.contains("denied by the person")
            && said.contains("the person denied this call"),
        "{four}"
    );
    // Nothing more comes: each call answered once.
    let mut c = c;
    let extra = c.drain(Duration::from_secs(1));
    assert!(
        !extra.iter().any(|m| m.get("id").is_some()),
        "no answer twice: {extra:#?}"
    );
    drop(c);

    // What the server heard: each allowed call once, the denied one never.
    for (message, times) in [("one", 1), ("two", 1), ("three", 1), ("four", 0)] {
        assert_eq!(heard(&heard_file, message), times, "{message}");
    }
    // One decision per call, however often the runner asked; one approval per call asked.
    let ds = b.decisions(&id)?;
    let by: Vec<(String, String)> = ds
        .iter()
        .map(|d| {
            (
                d["decision"].as_str().unwrap_or_default().to_string(),
                d["by"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = |d: &str, by: &str| (d.to_string(), by.to_string());
    assert_eq!(
        by,
        [
            want("allowed", COVERED),
            want("allowed", "the person"),
            want("allowed", "the person"),
            want("denied", "the person"),
        ],
        "{ds:#?}"
    );
    let approvals = approvals_of(&b, &id)?;
    assert_eq!(approvals.len(), 3, "{approvals:#?}");

    // Each call's entry says the decision and who made it.
    let calls = entries(&b, &id)?;
    let seen: Vec<(String, String, String, String)> = calls
        .iter()
        .map(|c| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                s(&c["outcome"]["kind"]),
                s(&c["decision"]["verdict"]),
                s(&c["decision"]["by"]),
                s(&c["decision"]["asked"]),
            )
        })
        .collect();
    let e = |k: &str, v: &str, by: &str| (k.into(), v.into(), by.into(), "gateway".into());
    assert_eq!(
        seen,
        [
            e("answered", "allowed", COVERED),
            e("answered", "allowed", "the person"),
            e("answered", "allowed", "the person"),
            e("refused", "denied", "the person"),
        ],
        "{calls:#?}"
    );
    let text = b.ok(&["show", &id])?;
    assert!(
        text.contains(r#"everything/echo {"message":"four"}: refused by bosun's gateway (the person: the person denied this call); denied by the person (asked at the gateway)"#),
        "{text}"
    );
    assert!(
        text.contains(&format!("allowed by {COVERED} (asked at the gateway)")),
        "{text}"
    );
    // And on the run's page.
    let ui = bosun_tests::webui::Ui::start(&b)?;
    let page = bosun_tests::browser_scenario(&ui.login, "mcpcalls", &[("BOSUN_UI_RUN", &id)])?;
    let rows = page["calls"].as_array().cloned().unwrap_or_default();
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        verdicts,
        ["allowed", "allowed", "allowed", "denied"],
        "{page:#}"
    );
    assert!(
        rows[3]["text"]
            .as_str()
            .is_some_and(|t| t.contains("denied by the person (asked at the gateway)")),
        "{page:#}"
    );
    b.ok(&["ui", "--stop"])?;
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

#[test]
fn with_bosund_down_a_call_no_decision_covers_is_refused_and_never_runs() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_judge_no_bosund");
    let fake = FakeModel::start("anthropic", "hold")?;
    let heard_file = setup(&b, &fake)?;
    let (id, mut c) = held_run(&b, &fake)?;
    b.kill_daemon()?;
    let started = std::time::Instant::now();
    let answer = c.call(
        "echo",
        json!({"message": "unjudged"}),
        Duration::from_secs(60),
    )?;
    assert!(started.elapsed() >= Duration::from_secs(14), "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        text_of(&answer).contains("bosund did not answer within 15 s"),
        "{answer}"
    );
    assert_eq!(heard(&heard_file, "unjudged"), 0, "never ran unjudged");
    // bosund back: the run went on, and the call given up was not decided after all.
    b.ok(&["ps"])?;
    wait_for("the run still running", Duration::from_secs(10), || {
        Ok((b.show(&id)?["state"] == "running").then_some(()))
    })?;
    let calls = entries(&b, &id)?;
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(
        calls[0]["decision"]["by"], "bosun's gateway: bosund could not be reached",
        "{calls:#?}"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    assert_eq!(heard(&heard_file, "unjudged"), 0);
    b.finish()
}

/// A call the policy lets run is told to the runner while its decision is being saved, so the
/// call does not wait for the disk. bosund SIGKILLed after telling it and before saving it: the
/// call goes on all the same, and the runner tells the decision back to the next bosund, which
/// saves it as it was told, once, never judging the call again.
#[test]
fn a_decision_told_before_it_was_saved_is_saved_once_when_bosund_is_back() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_judge_unsaved");
    let fake = FakeModel::start("anthropic", "hold")?;
    let heard_file = setup(&b, &fake)?;
    b.kill_daemon()?;
    let b = b.with_env("BOSUN_CRASH_AT", "decision-told-unsaved");
    let (id, mut c) = held_run(&b, &fake)?;

    let one = c.call("echo", json!({"message": "one"}), Duration::from_secs(30))?;
    // The call was decided (and told) before it ran, so before this.
    let answered_ms = bosun_shared::Timestamp::now().as_millis();
    assert!(text_of(&one).contains("Echo: one"), "{one}");
    assert_eq!(heard(&heard_file, "one"), 1);
    // bosund dies without saving it.
    wait_for("bosund at its crash point", Duration::from_secs(30), || {
        let log = std::fs::read_to_string(b.home.join("bosund.stderr")).unwrap_or_default();
        Ok(log
            .contains("BOSUN_CRASH_AT=decision-told-unsaved")
            .then_some(()))
    })?;

    // The next bosund hears it back from the runner and saves it.
    let b = b.with_env("BOSUN_CRASH_AT", "none");
    let ds = wait_for("the decision saved", Duration::from_secs(60), || {
        let ds = b.decisions(&id)?;
        Ok((!ds.is_empty()).then_some(ds))
    })?;
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "mcp__everything__echo");
    assert_eq!(ds[0]["decision"], "allowed");
    assert_eq!(ds[0]["by"], COVERED);
    assert!(
        ds[0]["summary"].as_str().is_some_and(|s| s.contains("one")),
        "{ds:#?}"
    );
    // Dated when it was made (the runner says when it was told), not when the next bosund
    // saved it, which was after the call had its answer.
    assert!(
        ds[0]["at"].as_u64().is_some_and(|at| at <= answered_ms),
        "decided at {} (the call answered at {answered_ms})",
        ds[0]["at"]
    );
    let log = b.daemon_log();
    assert!(
        log.contains("saved a decision told before bosund went away"),
        "{log}"
    );

    // And the run goes on: the next call is judged and saved as usual, after it.
    let two = c.call("echo", json!({"message": "two"}), Duration::from_secs(30))?;
    assert!(text_of(&two).contains("Echo: two"), "{two}");
    let ds = wait_for("both decisions", Duration::from_secs(30), || {
        let ds = b.decisions(&id)?;
        Ok((ds.len() >= 2).then_some(ds))
    })?;
    let summaries: Vec<&str> = ds
        .iter()
        .map(|d| d["summary"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert!(
        summaries[0].contains("one") && summaries[1].contains("two"),
        "{summaries:?}"
    );
    assert_eq!(
        (heard(&heard_file, "one"), heard(&heard_file, "two")),
        (1, 1)
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.finish()
}
