//! Approvals for every run, on the real Gemini CLI (0.61) driven through its Agent Client
//! Protocol (`gemini --acp`) against the fake Gemini API: every call Gemini asks about reaches
//! bosun's policy; a call the policy allows runs, one that asks waits in `bosun inbox` until the
//! person decides, a denial reaches the model as a cancelled call, a block wins over an approval
//! given before it landed, the deadline denies, outside content turns an always-allowed write
//! into an ask, a command allowed by its prefix runs without asking while a blocked prefix is
//! refused, and a pending approval survives a SIGKILL of bosund with its id and deadline — the
//! command then runs exactly once.
//!
//! A shell command Gemini deems safe (`ls`, `git status`) reaches bosun's policy like any
//! other (Gemini's own heuristic would let it run). After its prompt ends Gemini
//! does not exit while its stdio MCP server is connected; the runner ends it 5 s after its work
//! is done, which every run here waits out.

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, short_id, wait_for};

/// A Gemini agent `coder` with server-everything on.
fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    b.add_everything("everything", "everything-token-6e3a1c")?;
    b.add_gemini_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;
    Ok(())
}

/// What Gemini tells the model of a call bosun denied, whatever the reason: ACP answers a
/// permission request with one of the options Gemini offered (allow or reject, once or always)
/// and has no field for a message, and a second `session/prompt` to add words would abort the
/// running one. So a denial's message, a block and a deadline all reach the model as this; the
/// person's words stay in the run's record.
const CANCELLED: &str = r#"Tool "run_shell_command" was canceled by the user."#;

#[test]
fn a_call_the_policy_allows_runs_and_one_that_asks_waits_for_the_person() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_gemini_ask");
    let fake = FakeModel::start(
        "gemini",
        r#"tool:echo:{"message":"ping"};call:run_shell_command:{"command":"touch approved.txt"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    let run = b.run_agent("coder", "echo, then run a command")?;

    // echo is read-only and local: the default mode lets it run. A command asks.
    let a = b.wait_approval()?;
    assert_eq!(a["tool"], "run_shell_command");
    assert_eq!(a["class"], "runs commands");
    assert_eq!(a["state"], "waiting");
    let work = b.scratch().join("coder/work");
    assert_eq!(
        a["preview"],
        format!("$ touch approved.txt\nin {}", work.display()),
        "{a:#}"
    );
    assert!(
        a["why"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{a:#}"
    );
    assert!(
        fake.result_at(1).contains("Echo: ping"),
        "echo ran at once: {}",
        fake.result_at(1)
    );
    assert!(!work.join("approved.txt").exists(), "the command waits");

    let text = b.ok(&["inbox"])?;
    assert!(
        text.contains("run_shell_command") && text.contains("left"),
        "{text}"
    );

    let id = short_id(&a);
    let decided = b.json(&["approve", &id])?;
    assert_eq!(decided[0]["state"], "allowed");
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert!(
        work.join("approved.txt").exists(),
        "the command ran after the approval: {}",
        fake.result_at(2)
    );

    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "mcp__everything__echo");
    assert_eq!(ds[0]["decision"], "allowed");
    assert!(
        ds[0]["by"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{ds:#?}"
    );
    assert_eq!(ds[1]["tool"], "run_shell_command");
    assert_eq!(ds[1]["by"], "the person");
    assert!(ds[1]["approval"].is_string());

    let again = b.fails(&["approve", &id])?;
    assert!(again.contains("already allowed"), "{again}");
    b.finish()
}

#[test]
fn a_denial_reaches_the_model_and_a_block_wins_over_an_approval() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_gemini_deny");
    let fake = FakeModel::start(
        "gemini",
        r#"call:run_shell_command:{"command":"rm -f build"};call:run_shell_command:{"command":"touch second.txt"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    let run = b.run_agent("coder", "clean up")?;

    let a = b.wait_approval()?;
    b.ok(&["deny", &short_id(&a), "--message", "use git clean instead"])?;
    let second = wait_for("the second ask", Duration::from_secs(60), || {
        Ok(b.waiting_approvals()?
            .into_iter()
            .find(|x| x["id"] != a["id"]))
    })?;
    // The model learns the call was refused; the message cannot go with it (see CANCELLED).
    assert_eq!(fake.result_at(1), CANCELLED);

    b.ok(&["agent", "set", "coder", "Bash=block"])?;
    let decided = b.json(&["approve", &short_id(&second)])?;
    assert_eq!(decided[0]["state"], "denied", "{decided:#}");
    assert_eq!(decided[0]["decided_by"], "the block");
    b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(fake.result_at(2), CANCELLED);
    assert!(
        !b.scratch().join("coder/work/second.txt").exists(),
        "the blocked command did not run"
    );
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["by"], "the person");
    assert_eq!(ds[0]["message"], "use git clean instead", "{ds:#?}");
    assert_eq!(ds[1]["decision"], "denied", "{ds:#?}");
    b.finish()
}

#[test]
fn the_deadline_denies_and_a_blocked_tool_never_asks() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_gemini_deadline");
    let fake = FakeModel::start(
        "gemini",
        r#"call:run_shell_command:{"command":"touch late.txt"};call:write_file:{"file_path":"x.txt","content":"x"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "approval.wait=2s",
        "write_file=block",
    ])?;
    let run = b.run_agent("coder", "do two things")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert_eq!(fake.result_at(1), CANCELLED);
    assert!(
        fake.result_at(2).contains("canceled"),
        "{}",
        fake.result_at(2)
    );
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "run_shell_command");
    assert_eq!(ds[0]["decision"], "denied");
    assert_eq!(ds[0]["by"], "the deadline", "{ds:#?}");
    assert_eq!(ds[1]["tool"], "write_file");
    assert_eq!(ds[1]["decision"], "denied");
    assert!(
        ds[1]["by"].as_str().is_some_and(|w| w.contains("blocked")),
        "{ds:#?}"
    );
    let work = b.scratch().join("coder/work");
    assert!(!work.join("late.txt").exists() && !work.join("x.txt").exists());
    let all = b.json(&["inbox", "--all"])?;
    let all = all.as_array().cloned().unwrap_or_default();
    assert_eq!(all.len(), 1, "only the command asked: {all:#?}");
    assert_eq!(all[0]["state"], "expired", "{all:#?}");
    b.finish()
}

#[test]
fn outside_content_turns_an_always_allowed_write_into_an_ask() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_gemini_escalation");
    // gzip-file-as-resource is marked open-world: what it returns is outside content.
    let fake = FakeModel::start(
        "gemini",
        r#"tool:gzip-file-as-resource:{"name":"a.txt.gz","data":"data:text/plain;base64,aGk="};call:write_file:{"file_path":"out.txt","content":"x"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    b.ok(&["agent", "set", "coder", "write_file=allow"])?;
    let run = b.run_agent("coder", "fetch, then write")?;
    let a = b.wait_approval()?;
    assert_eq!(a["tool"], "write_file");
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
    let b = Bosun::new("approvals_gemini_crash");
    let marker = b.scratch().join("coder/work/ran.txt");
    let fake = FakeModel::start(
        "gemini",
        &format!(
            r#"call:run_shell_command:{{"command":"echo once >> {}"}};text:All done."#,
            marker.display()
        ),
    )?;
    setup(&b, &fake)?;
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
    let b = Bosun::new("approvals_gemini_prefix");
    let fake = FakeModel::start(
        "gemini",
        r#"call:run_shell_command:{"command":"touch allowed.txt"};call:run_shell_command:{"command":"rm -f allowed.txt"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    // A wait of 2 s, so that a command that wrongly asks fails the test at once.
    b.ok(&[
        "agent",
        "set",
        "coder",
        "Bash(touch *)=allow",
        "Bash(rm *)=block",
        "approval.wait=2s",
    ])?;
    let run = b.run_agent("coder", "make a file, then remove it")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["summary"], "run_shell_command: touch allowed.txt");
    assert_eq!(ds[0]["decision"], "allowed", "{ds:#?}");
    assert_eq!(
        ds[0]["by"], "the person always allows this tool (step 4)",
        "{ds:#?}"
    );
    assert_eq!(ds[1]["decision"], "denied", "{ds:#?}");
    assert!(
        ds[1]["by"].as_str().is_some_and(|w| w.contains("blocked")),
        "{ds:#?}"
    );
    assert!(b.scratch().join("coder/work/allowed.txt").exists());
    let all = b.json(&["inbox", "--all"])?;
    assert_eq!(all, serde_json::json!([]), "nothing asked");
    b.finish()
}

#[test]
fn a_command_gemini_deems_safe_still_comes_to_bosun() -> anyhow::Result<()> {
    let b = Bosun::new("approvals_gemini_safe");
    let fake = FakeModel::start(
        "gemini",
        r#"call:run_shell_command:{"command":"ls"};call:run_shell_command:{"command":"git status"};text:All done."#,
    )?;
    setup(&b, &fake)?;
    let run = b.run_agent("coder", "look around")?;
    // Each waits for the person: bosun's policy asks about commands in the default mode.
    for want in ["$ ls", "$ git status"] {
        let a = b.wait_approval()?;
        assert_eq!(a["tool"], "run_shell_command");
        assert!(
            a["preview"].as_str().is_some_and(|p| p.starts_with(want)),
            "{want}: {a:#}"
        );
        b.json(&["approve", &short_id(&a)])?;
    }
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let ds = b.decisions(&run)?;
    assert_eq!(ds.len(), 2, "both commands were decided by bosun: {ds:#?}");
    assert!(ds.iter().all(|d| d["by"] == "the person"), "{ds:#?}");
    b.finish()
}
