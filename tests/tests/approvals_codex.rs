//! Approvals for every run, on the real Codex CLI (0.171) driven through `codex app-server`
//! against the fake Responses API: every command, patch and MCP call reaches bosun's policy; a
//! call the policy allows runs, one that asks waits in `bosun inbox` until the person decides,
//! a denial's message reaches the model, a block wins over an approval given before it landed,
//! the deadline denies, outside content turns an always-allowed patch into an ask, and a pending
//! approval survives a SIGKILL of bosund with its id and deadline — the command then runs
//! exactly once.
//!
//! The fake model runs Codex's tools in its "code mode": each call is JavaScript run by Codex's
//! `exec` tool (`await tools.exec_command({"cmd": …})`), which makes the same approval requests
//! as a direct call.
//!
//! Codex gives an optional MCP server about 1 s to start before a turn goes without its tools;
//! bosun's Codex runs set `mcp_optional_startup_grace_ms` to 30 s, and where an MCP call comes
//! first in a story the run also starts with a command the person lets go once the server is
//! connected ([`approve_once_connected`]).

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, short_id, wait_for};
use serde_json::Value;

/// A Codex agent `coder` with server-everything on, and `extra` flags of `bosun agent add`.
fn setup(b: &Bosun, fake: &FakeModel, extra: &[&str]) -> anyhow::Result<()> {
    b.add_everything("everything", "everything-token-c0d3xa")?;
    b.add_codex_agent("coder", fake.url(), extra)?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;
    Ok(())
}

/// Waits for the run's first approval and for Codex to report server-everything ready, then
/// approves it; returns the approval.
fn approve_once_connected(b: &Bosun, run: &str) -> anyhow::Result<Value> {
    let a = b.wait_approval()?;
    b.wait_run(
        run,
        "the MCP server to be ready",
        Duration::from_secs(60),
        |v| v["agent"]["servers"] == serde_json::json!([["everything", "connected"]]),
    )?;
    b.ok(&["approve", &short_id(&a)])?;
    Ok(a)
}

/// Waits until a model turn of the run has been sent a user message holding `text`.
///
/// Codex tells the model only that the user rejected a call, so the runner adds a denial's
/// message to the running turn (`turn/steer`) as a user message, which the fake's log does not
/// show (it logs tool results). Codex's own record of the thread does: its rollout file (named
/// in `thread/start`'s answer, in the run's log) holds each item of the conversation with its
/// `history_sequence`, and each item the model answered with the `sampled_through_sequence` of
/// the request it answered — the last item that request carried.
fn wait_model_told(b: &Bosun, run: &str, text: &str) -> anyhow::Result<()> {
    wait_for(
        &format!("a model turn to carry {text:?}"),
        Duration::from_secs(60),
        || {
            let log = String::from_utf8_lossy(&b.logs(run)?).into_owned();
            let Some(rollout) = log
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v["id"] == "bosun-thread")
                .and_then(|v| v["result"]["thread"]["path"].as_str().map(str::to_string))
            else {
                return Ok(None);
            };
            let items: Vec<Value> = std::fs::read_to_string(rollout)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["type"] == "response_item")
                .collect();
            let said = items.iter().find_map(|i| {
                let p = &i["payload"];
                let holds = p["content"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|t| t["text"].as_str().is_some_and(|t| t.contains(text)))
                });
                (p["type"] == "message" && p["role"] == "user" && holds)
                    .then(|| i["metadata"]["history_sequence"].as_u64())
                    .flatten()
            });
            let Some(said) = said else {
                return Ok(None);
            };
            let answered = items.iter().any(|i| {
                let p = &i["payload"];
                let by_model = matches!(
                    p["type"].as_str(),
                    Some("custom_tool_call" | "function_call")
                ) || (p["type"] == "message" && p["role"] == "assistant");
                by_model
                    && i["metadata"]["sampled_through_sequence"]
                        .as_u64()
                        .is_some_and(|s| s >= said)
            });
            Ok(answered.then_some(()))
        },
    )
}

#[test]
fn a_call_that_asks_waits_for_the_person_and_one_the_policy_allows_runs() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_codex_ask");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"echo approved-ran"};tool:echo:{"message":"ping"};text:All done."#,
    )?;
    setup(&b, &fake, &[])?;
    let run = b.run_agent("coder", "run a command, then echo")?;

    // A command asks: bosun's default mode runs no command without the person.
    let a = b.wait_approval()?;
    assert_eq!(a["tool"], "exec_command");
    assert_eq!(a["class"], "runs commands");
    assert_eq!(a["state"], "waiting");
    let work = b.scratch().join("coder/work").display().to_string();
    assert!(
        a["preview"]
            .as_str()
            .is_some_and(|p| p.contains("echo approved-ran") && p.contains(&work)),
        "the command and its folder: {a:#}"
    );
    assert!(
        a["why"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{a:#}"
    );
    assert_eq!(fake.turns().len(), 1, "the run waits for the person");

    // Shown for people too, with the time left.
    let text = b.ok(&["inbox"])?;
    assert!(
        text.contains("exec_command") && text.contains("left"),
        "{text}"
    );

    let approved = approve_once_connected(&b, &run)?;
    assert_eq!(approved["id"], a["id"]);
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert!(
        fake.result_at(1).contains("approved-ran"),
        "the command ran after the approval: {}",
        fake.result_at(1)
    );
    // echo is read-only and local: the default mode lets it run without asking.
    assert!(
        fake.result_at(2).contains("Echo: ping"),
        "echo ran at once: {}",
        fake.result_at(2)
    );

    // Every decision is in the run's record, with who made it.
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "exec_command");
    assert_eq!(ds[0]["decision"], "allowed");
    assert_eq!(ds[0]["by"], "the person");
    assert!(ds[0]["approval"].is_string());
    assert_eq!(ds[1]["tool"], "mcp__everything__echo");
    assert_eq!(ds[1]["decision"], "allowed");
    assert!(
        ds[1]["by"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{ds:#?}"
    );

    let again = b.fails(&["approve", &short_id(&a)])?;
    assert!(again.contains("already allowed"), "{again}");
    b.finish()
}

#[test]
fn a_denial_tells_the_model_and_a_block_wins_over_an_approval() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_codex_deny");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"rm -rf build"};call:exec_command:{"cmd":"echo second"};text:All done."#,
    )?;
    setup(&b, &fake, &[])?;
    let run = b.run_agent("coder", "clean up")?;

    let a = b.wait_approval()?;
    b.ok(&["deny", &short_id(&a), "--message", "use git clean instead"])?;
    let second = wait_for("the second ask", Duration::from_secs(60), || {
        Ok(b.waiting_approvals()?
            .into_iter()
            .find(|x| x["id"] != a["id"]))
    })?;
    wait_model_told(&b, &run, "use git clean instead")?;

    // The person blocks the shell while the second call waits; approving it then is denied.
    b.ok(&["agent", "set", "coder", "Bash=block"])?;
    let decided = b.json(&["approve", &short_id(&second)])?;
    assert_eq!(decided[0]["state"], "denied", "{decided:#}");
    assert_eq!(decided[0]["decided_by"], "the block");
    b.wait_ended(&run, Duration::from_secs(60))?;
    // The model is told the tool is blocked, the same way as a denial's message.
    wait_model_told(&b, &run, "blocked")?;
    assert!(
        !fake.result_at(2).contains(r#""output":"second"#),
        "the blocked command did not run: {}",
        fake.result_at(2)
    );
    let ds = b.decisions(&run)?;
    assert_eq!(ds[0]["message"], "use git clean instead", "{ds:#?}");
    assert_eq!(ds[1]["decision"], "denied", "{ds:#?}");
    b.finish()
}

#[test]
fn the_deadline_denies_and_a_blocked_tool_never_asks() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_codex_deadline");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"echo late"};call:apply_patch:"*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch\n";text:All done."#,
    )?;
    setup(&b, &fake, &[])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "approval.wait=2s",
        "apply_patch=block",
    ])?;
    let run = b.run_agent("coder", "do two things")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    wait_model_told(&b, &run, "no answer within 2s")?;
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "exec_command");
    assert_eq!(ds[0]["decision"], "denied");
    assert_eq!(ds[0]["by"], "the deadline", "{ds:#?}");
    assert_eq!(ds[1]["tool"], "apply_patch");
    assert_eq!(ds[1]["decision"], "denied");
    assert!(
        ds[1]["by"].as_str().is_some_and(|w| w.contains("blocked")),
        "{ds:#?}"
    );
    assert!(
        !b.scratch().join("coder/work/x.txt").exists(),
        "the blocked patch was not applied"
    );
    let all = b.json(&["inbox", "--all"])?;
    let all = all.as_array().cloned().unwrap_or_default();
    assert_eq!(all.len(), 1, "only the command asked: {all:#?}");
    assert_eq!(all[0]["state"], "expired", "{all:#?}");
    b.finish()
}

#[test]
fn outside_content_turns_an_always_allowed_patch_into_an_ask() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_codex_escalation");
    // gzip-file-as-resource is marked open-world: what it returns is outside content.
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"ls"};tool:gzip-file-as-resource:{"name":"a.txt.gz","data":"data:text/plain;base64,aGk="};call:apply_patch:"*** Begin Patch\n*** Add File: out.txt\n+x\n*** End Patch\n";text:All done."#,
    )?;
    setup(&b, &fake, &[])?;
    b.ok(&["agent", "set", "coder", "apply_patch=allow"])?;
    let run = b.run_agent("coder", "look, fetch, then write")?;
    let first = approve_once_connected(&b, &run)?;
    let a = wait_for("the patch to ask", Duration::from_secs(60), || {
        Ok(b.waiting_approvals()?
            .into_iter()
            .find(|x| x["id"] != first["id"]))
    })?;
    assert_eq!(a["tool"], "apply_patch");
    assert!(
        a["why"]
            .as_str()
            .is_some_and(|w| w.contains("outside content")),
        "{a:#}"
    );
    b.ok(&["deny", &short_id(&a)])?;
    b.wait_ended(&run, Duration::from_secs(60))?;
    assert!(!b.scratch().join("coder/work/out.txt").exists());
    b.finish()
}

#[test]
fn a_pending_approval_survives_a_sigkill_of_bosund_and_the_command_runs_once() -> anyhow::Result<()>
{
    let b = Bosun::new("approvals_codex_crash");
    // Inside the working folder, which Codex's sandbox lets a command write.
    let marker = b.scratch().join("coder/work/ran.txt");
    let fake = FakeModel::start(
        "openai",
        &format!(
            r#"call:exec_command:{{"cmd":"echo once >> {}"}};text:All done."#,
            marker.display()
        ),
    )?;
    setup(&b, &fake, &["--permission-mode", "workspace-write"])?;
    let run = b.run_agent("coder", "append a line")?;
    let before = b.wait_approval()?;

    b.kill_daemon()?;
    // The next command starts a new daemon; the runner reconnects and asks again.
    let after = b.wait_approval()?;
    assert_eq!(after["id"], before["id"], "the same approval");
    assert_eq!(after["deadline"], before["deadline"], "the same deadline");

    b.ok(&["approve", &short_id(&after)])?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let ran = std::fs::read_to_string(&marker)?;
    assert_eq!(ran, "once\n", "the command ran exactly once");
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 1, "one decision: {ds:#?}");
    assert_eq!(ds[0]["by"], "the person");
    b.finish()
}

#[test]
fn an_allowed_command_runs_without_asking_and_a_blocked_prefix_is_refused() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_codex_prefixes");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"touch allowed.txt"};call:exec_command:{"cmd":"rm -f allowed.txt"};text:All done."#,
    )?;
    setup(
        &b,
        &fake,
        &[
            "--permission-mode",
            "workspace-write",
            "--allow",
            "Bash(touch *)",
        ],
    )?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "Bash(rm *)=block",
        "approval.wait=2s",
    ])?;
    let run = b.run_agent("coder", "touch, then remove")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["decision"], "allowed", "{ds:#?}");
    assert_eq!(ds[0]["summary"], "exec_command: touch allowed.txt");
    assert_eq!(ds[1]["decision"], "denied", "{ds:#?}");
    assert!(
        ds[1]["by"].as_str().is_some_and(|w| w.contains("blocked")),
        "{ds:#?}"
    );
    assert!(
        b.scratch().join("coder/work/allowed.txt").exists(),
        "the allowed command ran and the blocked one did not"
    );
    assert_eq!(b.json(&["inbox", "--all"])?, serde_json::json!([]));
    b.finish()
}
