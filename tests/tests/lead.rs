//! The lead, end to end: the real Claude Code answering in a chat against the project's fake
//! Anthropic API, which scripts the lead's tool calls; bosun's own MCP server; server-everything
//! (stdio) as the outside tool. An answer that only read runs its privileged calls; one that
//! used an outside tool first gets them kept as pending actions, and its cards in Auto columns
//! held; the person approves (once), discards, approves all in order; a newer note write
//! replaces an older one, the same call is kept once, and a call the lead then makes itself
//! takes its waiting twin away. Crash tests kill the daemon at named points of a pending
//! action's life.

use std::time::Duration;

use anyhow::Context;
use bosun_tests::{Bosun, FakeModel, everything_bin, post_initialize, wait_for};
use serde_json::Value;

/// A lead (Claude Code) pointed at `fake`, with server-everything on, and a command agent
/// `worker` whose runs append to `worker.log`.
fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let log = b.scratch().join("worker.log");
    b.ok(&[
        "agent",
        "add",
        "worker",
        "--cli",
        "command",
        "--cwd",
        &b.scratch().display().to_string(),
        "--",
        "sh",
        "-c",
        &format!("echo \"$BOSUN_PROMPT\" >> {}", log.display()),
    ])?;
    Ok(())
}

fn new_chat(b: &Bosun) -> anyhow::Result<String> {
    Ok(b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn send(b: &Bosun, chat: &str, message: &str) -> anyhow::Result<String> {
    b.ok(&["chat", "send", chat, message])
}

fn inbox(b: &Bosun) -> anyhow::Result<Vec<Value>> {
    Ok(b.json(&["inbox"])?.as_array().cloned().unwrap_or_default())
}

fn notes_of(b: &Bosun, chat: &str) -> anyhow::Result<Vec<String>> {
    Ok(b.json(&["chat", "show", chat])?["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["kind"] == "note")
                .filter_map(|m| m["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

fn worker_runs(b: &Bosun) -> anyhow::Result<usize> {
    Ok(b.json(&["ps", "--all"])?
        .as_array()
        .map(|r| r.iter().filter(|r| r["name"] == "worker").count())
        .unwrap_or(0))
}

#[test]
fn an_answer_that_only_read_runs_its_privileged_calls() -> anyhow::Result<()> {
    let b = Bosun::new("lead_direct");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:bosun/list_tasks:{};tool:bosun/memory_write:{"path":"plan.md","text":"one\n"};tool:bosun/add_column:{"name":"Deploy"};text:Done."#,
    )?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    let out = send(&b, &chat, "plan it")?;
    assert!(out.contains("Done."), "{out}");
    assert_eq!(b.ok(&["note", "show", "plan.md"])?, "one\n");
    let board = b.json(&["board"])?;
    assert!(
        board["columns"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["name"] == "Deploy"))
    );
    assert!(inbox(&b)?.is_empty());
    // The lead was offered bosun's tools and only the read-only built-ins.
    let turns = fake.turns();
    let offered: Vec<&str> = turns[0]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(offered.contains(&"mcp__bosun__memory_write"), "{offered:?}");
    assert!(
        offered.contains(&"Read") && !offered.contains(&"Bash") && !offered.contains(&"Write"),
        "{offered:?}"
    );
    let shown = b.json(&["chat", "show", &chat])?;
    assert_eq!(shown["messages"][1]["kind"], "lead");
    assert_eq!(shown["messages"][1]["text"], "Done.");
    b.finish()
}

#[test]
fn after_an_outside_tool_calls_wait_for_the_person_and_auto_cards_are_held() -> anyhow::Result<()> {
    let b = Bosun::new("lead_gate");
    let fake = FakeModel::start(
        "anthropic",
        concat!(
            r#"tool:everything/echo:{"message":"hi"};"#,
            r#"tool:bosun/memory_write:{"path":"plan.md","text":"step one\n"};"#,
            r#"tool:bosun/start_agent_run:{"agent":"worker","prompt":"do it"};"#,
            r#"tool:bosun/create_task:{"title":"Ship it","column":"To do","assignee":"worker"};"#,
            r#"tool:bosun/memory_read:{"path":"plan.md"};"#,
            "text:Asked.;",
            "text:Thanks."
        ),
    )?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    // An attached UI: every action kept or decided reaches it as it happens.
    let mut watcher = b
        .cmd(&["inbox", "-f", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    // Its lines as they come, so that the test waits for the last before it stops it.
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let heard = heard.clone();
        let out = watcher.stdout.take().context("the watcher's stdout")?;
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                heard.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let out = send(&b, &chat, "echo, then save the plan and start the worker")?;
    assert!(out.contains("Waiting for your OK:"), "{out}");

    // Kept, in the order tried, and the lead was told so in the spec's words.
    let waiting = inbox(&b)?;
    let tools: Vec<&str> = waiting.iter().filter_map(|a| a["tool"].as_str()).collect();
    assert_eq!(tools, ["memory_write", "start_agent_run"]);
    assert!(
        waiting
            .iter()
            .all(|a| a["cause"] == "mcp__everything__echo")
    );
    assert_eq!(waiting[0]["line"], "Write the note plan.md");
    assert!(
        waiting[0]["preview"]
            .as_str()
            .unwrap_or_default()
            .contains("step one")
    );
    let results: Vec<String> = fake
        .turns()
        .iter()
        .filter_map(|t| t["tool_result"].as_str().map(str::to_string))
        .collect();
    assert!(
        results.iter().any(|r| r.contains(
            "memory_write wasn't run: this answer used mcp__everything__echo, a tool from outside bosun. bosun keeps the call for the person to approve with one click. Tell them in a sentence what it does."
        )),
        "{results:#?}"
    );
    // Reading still works after the outside tool.
    assert!(
        results
            .iter()
            .any(|r| r.contains("there is no note `plan.md`")),
        "{results:#?}"
    );
    let err = b.fails(&["note", "show", "plan.md"])?;
    assert!(err.contains("there is no note"), "{err}");
    assert_eq!(worker_runs(&b)?, 0);

    // The card went into the Auto column on hold, and no agent starts it.
    let board = b.json(&["board"])?;
    let card = board["cards"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["title"] == "Ship it"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(card["column"], "To do");
    assert_eq!(card["hold"]["kind"], "needs_decision");
    assert!(card["hold"]["reason"].as_str().unwrap_or_default().contains(
        "Waiting for your OK: the lead put this card here after using mcp__everything__echo, a tool from outside bosun."
    ));
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(worker_runs(&b)?, 0, "a held card is not started");

    // Approve runs exactly that call, once.
    let write = waiting[0]["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let run = waiting[1]["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let approved = b.json(&["approve", &write])?;
    assert_eq!(approved[0]["state"], "approved");
    assert_eq!(b.ok(&["note", "show", "plan.md"])?, "step one\n");
    let err = b.fails(&["approve", &write])?;
    assert!(
        err.contains("was approved already; each runs once at most"),
        "{err}"
    );
    // Discard runs nothing.
    let discarded = b.json(&["discard", &run])?;
    assert_eq!(discarded[0]["state"], "discarded");
    let err = b.fails(&["approve", &run])?;
    assert!(err.contains("was discarded already"), "{err}");
    assert_eq!(worker_runs(&b)?, 0);
    wait_for(
        "the watcher hears the discard",
        Duration::from_secs(20),
        || {
            let heard = heard.lock().unwrap_or_else(|e| e.into_inner());
            Ok(heard
                .iter()
                .any(|l| l.contains("\"discarded\""))
                .then_some(()))
        },
    )?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(watcher.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )?;
    watcher.wait()?;
    let _ = reader.join();
    let heard = heard.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let events: Vec<(String, String)> = heard
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["tool"].as_str().unwrap_or("").to_string(),
                v["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("memory_write", "waiting"),
        ("start_agent_run", "waiting"),
        ("memory_write", "approving"),
        ("memory_write", "approved"),
        ("start_agent_run", "discarded"),
    ]
    .iter()
    .map(|(t, s)| (t.to_string(), s.to_string()))
    .collect();
    assert_eq!(events, want);
    let notes = notes_of(&b, &chat)?;
    assert_eq!(
        notes,
        [
            "Approved: Write the note plan.md. Saved plan.md (version 1).",
            "Discarded: Start a run of agent worker.",
            "Nothing else waits for your OK. The lead's answer above is done: send a message to go on."
        ]
    );

    // The next answer starts with what the person decided, and starts clean.
    send(&b, &chat, "thanks")?;
    let runs = b.json(&["ps", "--all"])?;
    let last = runs
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["args"][1].as_str().is_some_and(|p| p.ends_with("thanks")))
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        last["args"][1],
        "[Approved: Write the note plan.md. Discarded: Start a run of agent worker.]\n\nthanks"
    );
    assert!(
        last["args"].as_array().is_some_and(|a| a
            .iter()
            .any(|x| x.as_str().is_some_and(|x| x.starts_with("--resume=")))),
        "{last:#}"
    );
    b.finish()
}

#[test]
fn approve_all_in_order_with_replacement_dedupe_and_the_lead_doing_it_itself() -> anyhow::Result<()>
{
    let b = Bosun::new("lead_all");
    let fake = FakeModel::start(
        "anthropic",
        concat!(
            r#"tool:everything/echo:{"message":"hi"};"#,
            r#"tool:bosun/memory_write:{"path":"plan.md","text":"first\n"};"#,
            r#"tool:bosun/add_column:{"name":"QA","auto":true};"#,
            r#"tool:bosun/add_column:{"name":"QA","auto":true};"#,
            r#"tool:bosun/memory_append:{"path":"plan.md","heading":"Later","text":"second"};"#,
            r#"tool:bosun/add_column:{"name":"Ops"};"#,
            "text:Asked.;",
            // The next answer, with no outside tool: the lead makes one call itself.
            r#"tool:bosun/add_column:{"name":"Ops"};"#,
            "text:Made it."
        ),
    )?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    send(&b, &chat, "set things up")?;
    let waiting = inbox(&b)?;
    let lines: Vec<&str> = waiting.iter().filter_map(|a| a["line"].as_str()).collect();
    // The append replaced the write of the same note; the same add_column is kept once.
    assert_eq!(
        lines,
        [
            "Add the column QA (Auto)",
            "Add the section “Later” to the note plan.md",
            "Add the column Ops (Manual)"
        ]
    );

    // The lead makes one of them itself: the waiting one goes, with a note.
    send(&b, &chat, "go ahead with Ops yourself")?;
    let lines: Vec<String> = inbox(&b)?
        .iter()
        .filter_map(|a| a["line"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        lines,
        [
            "Add the column QA (Auto)",
            "Add the section “Later” to the note plan.md"
        ]
    );
    assert!(notes_of(&b, &chat)?.iter().any(|n| n
        == "The lead made this call itself, so the one waiting for your OK is gone: Add the column Ops (Manual)."));

    // Approve all: one after the other, in the order tried.
    let done = b.json(&["approve", "--all", &chat])?;
    let states: Vec<&str> = done
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["state"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(states, ["approved", "approved"]);
    assert_eq!(b.ok(&["note", "show", "plan.md"])?, "## Later\n\nsecond\n");
    let columns: Vec<String> = b.json(&["board"])?["columns"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(columns.iter().filter(|c| *c == "QA").count(), 1);
    assert_eq!(columns.iter().filter(|c| *c == "Ops").count(), 1);
    let err = b.fails(&["approve", "--all", &chat])?;
    assert!(
        err.contains("nothing in this chat waits for your OK"),
        "{err}"
    );
    // Nothing of bosun's tools lists or decides pending actions.
    let offered: Vec<String> = fake.turns()[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !offered.iter().any(|t| t.contains("approve")
            || t.contains("pending")
            || t.contains("discard")
            || t.contains("inbox")),
        "{offered:?}"
    );
    b.finish()
}

/// A chat whose first answer used an outside tool and then asked to write `plan.md`; the
/// daemon that answers it is started with `crash` (if any) as its crash point.
fn answer_with_crash(b: &Bosun, chat: &str, crash: Option<&str>) -> anyhow::Result<()> {
    b.ok(&["daemon", "stop"])?;
    let mut cmd = b.cmd(&["chat", "send", chat, "save the plan"]);
    if let Some(point) = crash {
        cmd.env("BOSUN_CRASH_AT", point);
    }
    let out = cmd.output()?;
    if let Some(point) = crash {
        // The daemon that answered died at the point (its CLI lost it mid-answer).
        assert!(
            !out.status.success(),
            "{point}: the daemon was to die mid-answer"
        );
        wait_for("the daemon to be gone", Duration::from_secs(10), || {
            Ok(b.daemon_pid().is_none().then_some(()))
        })?;
    }
    Ok(())
}

#[test]
fn pending_actions_survive_crashes_and_none_runs_twice() -> anyhow::Result<()> {
    let script = concat!(
        r#"tool:everything/echo:{"message":"hi"};"#,
        r#"tool:bosun/memory_write:{"path":"plan.md","text":"kept\n"};"#,
        "text:Asked."
    );

    // Killed before the pending action is committed: the lead was never told it was kept, and
    // nothing waits.
    let b = Bosun::new("lead_crash_before");
    let fake = FakeModel::start("anthropic", script)?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    answer_with_crash(&b, &chat, Some("pending-before-commit"))?;
    wait_for("the answer to end", Duration::from_secs(60), || {
        Ok(b.json(&["chat", "show", &chat])?["answering"]
            .is_null()
            .then_some(()))
    })?;
    assert!(inbox(&b)?.is_empty());
    assert!(b.fails(&["note", "show", "plan.md"]).is_ok());
    b.finish()?;

    // Killed right after the commit: it waits after the restart.
    let b = Bosun::new("lead_crash_after");
    let fake = FakeModel::start("anthropic", script)?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    answer_with_crash(&b, &chat, Some("pending-after-commit"))?;
    let waiting = wait_for(
        "the kept call after the restart",
        Duration::from_secs(60),
        || {
            let w = inbox(&b)?;
            Ok((!w.is_empty()).then_some(w))
        },
    )?;
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0]["tool"], "memory_write");
    b.finish()?;

    // Killed during an approval, between the decision and the call: recorded failed ("may or
    // may not have happened"), never run, never run again.
    for (point, ran) in [
        ("approve-after-decision", false),
        ("approve-after-execution", true),
    ] {
        let b = Bosun::new("lead_crash_approve");
        let fake = FakeModel::start("anthropic", script)?;
        setup(&b, &fake)?;
        let chat = new_chat(&b)?;
        answer_with_crash(&b, &chat, None)?;
        let id = inbox(&b)?[0]["short_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        b.ok(&["daemon", "stop"])?;
        let out = b
            .cmd(&["approve", &id])
            .env("BOSUN_CRASH_AT", point)
            .output()?;
        assert!(!out.status.success(), "{point}: the daemon was to die");
        wait_for("the daemon to be gone", Duration::from_secs(10), || {
            Ok(b.daemon_pid().is_none().then_some(()))
        })?;
        let shown = b.json(&["inbox"])?;
        assert_eq!(shown, serde_json::json!([]), "{point}: nothing waits");
        let err = b.fails(&["approve", &id])?;
        assert!(
            err.contains("was failed already; each runs once at most"),
            "{point}: {err}"
        );
        let notes = notes_of(&b, &chat)?;
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("It failed: Write the note plan.md:")
                    && n.contains("may or may not have happened")),
            "{point}: {notes:?}"
        );
        match ran {
            true => assert_eq!(
                b.json(&["note", "show", "plan.md"])?["version"],
                1,
                "{point}: once"
            ),
            false => assert!(
                b.fails(&["note", "show", "plan.md"]).is_ok(),
                "{point}: never run"
            ),
        }
        b.finish()?;
    }
    Ok(())
}

#[test]
fn only_a_live_answer_s_token_reaches_bosun_s_mcp_server() -> anyhow::Result<()> {
    let b = Bosun::new("lead_token");
    let fake = FakeModel::start("anthropic", "hold")?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    let mut sending = b.cmd(&["chat", "send", &chat, "hi"]).spawn()?;
    // While the answer lives, its 0600 config holds its token.
    let (url, token) = b.answer_mcp_server(&chat)?;
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_eq!(post_initialize(&url, Some(&token))?, 200);
    assert_eq!(post_initialize(&url, None)?, 401);
    assert_eq!(post_initialize(&url, Some("not-a-token"))?, 401);
    // The answer ends: its token is refused from then on.
    let run = b.json(&["chat", "show", &chat])?["answering"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&["stop", &run])?;
    let _ = sending.wait()?;
    wait_for("the answer to be over", Duration::from_secs(30), || {
        Ok(b.json(&["chat", "show", &chat])?["answering"]
            .is_null()
            .then_some(()))
    })?;
    assert_eq!(post_initialize(&url, Some(&token))?, 401);
    b.assert_secret_nowhere(&token)?;

    let err = b.fails(&["chat", "new", "--agent", "worker"])?;
    assert!(
        err.contains("the lead answers through Claude Code, and `worker` is a command agent"),
        "{err}"
    );
    let err = b.fails(&["chat", "send", "zzzzzzzz", "hi"])?;
    assert!(
        err.contains("there is no chat `zzzzzzzz`; `bosun chat list` shows them"),
        "{err}"
    );
    b.finish()
}

#[test]
fn attach_file_pause_and_continue_keep_their_rules() -> anyhow::Result<()> {
    let b = Bosun::new("lead_more");
    let card = b.json(&["board", "card", "add", "Docs"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let file = b.scratch().join("spec.txt");
    std::fs::write(&file, "the spec\n")?;
    let other = b.scratch().join("secret.txt");
    std::fs::write(&other, "not named\n")?;
    let script = format!(
        concat!(
            r#"tool:bosun/attach_file:{{"path":"{file}","card":"{card}"}};"#,
            r#"tool:bosun/attach_file:{{"path":"{other}","card":"{card}"}};"#,
            r#"tool:bosun/set_agent_status:{{"agent":"worker","status":"paused"}};"#,
            r#"tool:bosun/continue_agent_run:{{"run":"{run}","prompt":"go on"}};"#,
            "text:Done."
        ),
        file = file.display(),
        other = other.display(),
        card = card,
        run = "00000000",
    );
    let fake = FakeModel::start("anthropic", &script)?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    send(
        &b,
        &chat,
        &format!(
            "attach {} to the Docs card, and pause the worker",
            file.display()
        ),
    )?;

    // Only the file the person named is attached (copied under the state directory).
    let copied = b.home.join("attachments").join(&card).join("spec.txt");
    assert_eq!(std::fs::read_to_string(&copied)?, "the spec\n");
    assert!(
        !b.home
            .join("attachments")
            .join(&card)
            .join("secret.txt")
            .exists()
    );
    let results: Vec<String> = fake
        .turns()
        .iter()
        .filter_map(|t| t["tool_result"].as_str().map(str::to_string))
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r.contains("is not a file the person named or added in this chat")),
        "{results:#?}"
    );
    assert!(
        results
            .iter()
            .any(|r| r.contains("there is no run `00000000`")),
        "{results:#?}"
    );
    let shown = b.json(&["board", "card", "show", &card[..8]])?;
    assert!(
        shown["activity"]
            .as_array()
            .is_some_and(|a| a.iter().any(|l| l["what"]
                .as_str()
                .is_some_and(|w| w.contains("attached") && w.contains("spec.txt"))))
    );

    // A paused agent's cards wait; made active, they start.
    assert_eq!(b.json(&["agent", "show", "worker"])?["paused"], true);
    let c = b.json(&[
        "board",
        "card",
        "add",
        "Work",
        "--assignee",
        "worker",
        "--column",
        "To do",
    ])?;
    let id = c["short_id"].as_str().unwrap_or_default().to_string();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(b.json(&["board", "card", "show", &id])?["runs"], 0);
    b.json(&["agent", "edit", "worker", "--unpause"])?;
    wait_for("the card's run", Duration::from_secs(20), || {
        Ok((b.json(&["board", "card", "show", &id])?["runs"] == 1).then_some(()))
    })?;
    b.finish()
}

#[test]
fn after_an_outside_tool_changed_auto_cards_wait_and_clear_hold_waits_for_the_person()
-> anyhow::Result<()> {
    let b = Bosun::new("lead_cards");
    let id_of = |v: Value| v["id"].as_str().unwrap_or_default().to_string();
    let auto = id_of(b.json(&["board", "card", "add", "Auto card", "--column", "To do"])?);
    let held = id_of(b.json(&["board", "card", "add", "Held card", "--column", "To do"])?);
    b.json(&[
        "board",
        "card",
        "edit",
        &held[..8],
        "--hold",
        "the person's own hold",
    ])?;
    let manual = id_of(b.json(&["board", "card", "add", "Backlog card"])?);
    let script = format!(
        concat!(
            r#"tool:everything/echo:{{"message":"hi"}};"#,
            r#"tool:bosun/update_task:{{"card":"{auto}","description":"changed"}};"#,
            r#"tool:bosun/update_task:{{"card":"{held}","clear_hold":true}};"#,
            r#"tool:bosun/update_task:{{"card":"{manual}","description":"changed too"}};"#,
            "text:Done."
        ),
        auto = auto,
        held = held,
        manual = manual,
    );
    let fake = FakeModel::start("anthropic", &script)?;
    setup(&b, &fake)?;
    let chat = new_chat(&b)?;
    send(&b, &chat, "tidy the board")?;

    let card = |id: &str| b.json(&["board", "card", "show", &id[..8]]);
    // Changed in an Auto column after the outside tool: saved, and on hold for the person.
    let a = card(&auto)?;
    assert_eq!(a["description"], "changed");
    assert!(
        a["hold"]["reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Waiting for your OK"),
        "{a:#}"
    );
    // Taking a card in an Auto column off hold waits for the person, and changes nothing.
    let h = card(&held)?;
    assert_eq!(h["hold"]["reason"], "the person's own hold");
    let waiting = inbox(&b)?;
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0]["line"], format!("Take card {held} off hold"));
    // A Manual column's card is changed as usual.
    let m = card(&manual)?;
    assert_eq!(m["description"], "changed too");
    assert!(m["hold"].is_null());
    // Approved, the hold comes off.
    b.json(&[
        "approve",
        waiting[0]["short_id"].as_str().unwrap_or_default(),
    ])?;
    assert!(card(&held)?["hold"].is_null());
    b.finish()
}
