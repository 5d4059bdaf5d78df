//! The board and the memory notes through the real bosund: the first columns, column and card
//! rules, holds, notes with versions, and the automation — a card moved into an Auto column
//! gets one run of its agent, never more than the limit at once, also across a SIGKILL of the
//! daemon.

use std::collections::HashMap;
use std::time::Duration;

use bosun_tests::{Bosun, wait_for};
use serde_json::Value;

/// A command agent whose run appends `start <prompt's first line>` and `end …` to `log`.
fn add_worker(b: &Bosun, log: &std::path::Path, secs: &str) -> anyhow::Result<()> {
    let script = format!(
        "first=$(printf '%s\\n' \"$BOSUN_PROMPT\" | head -n1); echo \"start $first\" >> {log}; sleep {secs}; echo \"end $first\" >> {log}",
        log = log.display()
    );
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
        &script,
    ])?;
    Ok(())
}

/// A card held because bosun cannot tell whether its run began (the kill came after its
/// runner was recorded, before it had the plan) is released, as the person would after checking.
fn release_if_unsure(b: &Bosun, card: &Value) -> anyhow::Result<()> {
    if card["hold"]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("may or may not have begun"))
    {
        let id = card["short_id"].as_str().unwrap_or_default();
        b.json(&["board", "card", "edit", id, "--clear-hold"])?;
    }
    Ok(())
}

#[test]
fn columns_cards_and_holds_follow_their_rules() -> anyhow::Result<()> {
    let b = Bosun::new("board_rules");
    let board = b.json(&["board"])?;
    let names: Vec<(&str, bool)> = board["columns"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| (c["name"].as_str().unwrap_or(""), c["auto"] == true))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        names,
        [
            ("Backlog", false),
            ("To do", true),
            ("In progress", true),
            ("Testing", true),
            ("Review", false),
            ("Done", false)
        ]
    );
    assert_eq!(board["limit"], 4);

    // Columns.
    let col = b.json(&["board", "column", "add", "Deploy", "--position", "5"])?;
    assert_eq!(
        (
            col["name"].as_str(),
            col["position"].as_u64(),
            col["auto"].as_bool()
        ),
        (Some("Deploy"), Some(5), Some(false))
    );
    let err = b.fails(&["board", "column", "add", "deploy"])?;
    assert!(err.contains("there is a column `deploy` already"), "{err}");
    let err = b.fails(&["board", "column", "add", "   "])?;
    assert!(
        err.contains("a column's name is 1 to 40 characters"),
        "{err}"
    );
    let err = b.fails(&["board", "column", "set", "Nowhere", "--auto"])?;
    assert!(
        err.contains("there is no column `Nowhere`; the columns are: Backlog, To do"),
        "{err}"
    );
    b.json(&[
        "board", "column", "set", "deploy", "--auto", "--name", "Ship",
    ])?;
    assert_eq!(b.json(&["board"])?["columns"][5]["name"], "Ship");

    // Cards.
    let err = b.fails(&["board", "card", "add", ""])?;
    assert!(
        err.contains("a card's title is 1 to 200 characters"),
        "{err}"
    );
    let err = b.fails(&["board", "card", "add", "x", "--assignee", "ghost"])?;
    assert!(err.contains("ghost"), "{err}");
    let err = b.fails(&["board", "card", "move", "zzzzzzzz", "Done"])?;
    assert!(
        err.contains("there is no card `zzzzzzzz`; `bosun board` shows the cards"),
        "{err}"
    );
    let log = b.scratch().join("runs.log");
    add_worker(&b, &log, "0")?;
    let c = b.json(&[
        "board",
        "card",
        "add",
        "Held work",
        "--assignee",
        "worker",
        "--acceptance",
        "it works",
    ])?;
    let id = c["short_id"].as_str().unwrap_or_default().to_string();
    assert_eq!(c["column"], "Backlog");
    b.json(&["board", "card", "edit", &id, "--hold", "needs a look first"])?;
    let err = b.fails(&["board", "card", "edit", &id, "--hold", "  "])?;
    assert!(err.contains("say why the card is on hold"), "{err}");

    // A held card in an Auto column is not started; off hold, it is, once.
    b.json(&["board", "card", "move", &id, "To do"])?;
    std::thread::sleep(Duration::from_millis(1500));
    let shown = b.json(&["board", "card", "show", &id])?;
    assert_eq!(shown["runs"], 0, "{shown:#}");
    assert_eq!(shown["hold"]["kind"], "needs_decision");
    b.json(&["board", "card", "edit", &id, "--clear-hold"])?;
    let done = wait_for("the card's run to end", Duration::from_secs(20), || {
        let c = b.json(&["board", "card", "show", &id])?;
        let logged = c["activity"].as_array().is_some_and(|a| {
            a.iter().any(|l| {
                l["what"]
                    .as_str()
                    .is_some_and(|w| w.ends_with(" succeeded"))
            })
        });
        Ok((c["runs"] == 1 && logged).then_some(c))
    })?;
    let lines: Vec<&str> = done["activity"]
        .as_array()
        .map(|a| a.iter().filter_map(|l| l["what"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(lines[0], "created in Backlog, assigned to worker");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("run ") && l.ends_with(" succeeded")),
        "{lines:?}"
    );
    // The run got the card as its prompt.
    let runs = b.json(&["ps", "--all"])?;
    assert_eq!(runs[0]["agent"]["card"], done["id"]);
    assert!(std::fs::read_to_string(&log)?.contains(&format!("start Card {id}: Held work")));
    // Staying in the column, it does not run again.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(b.json(&["board", "card", "show", &id])?["runs"], 1);

    let err = b.fails(&["board", "limit", "0"])?;
    assert!(
        err.contains("the limit on card runs at once is 1 to 64"),
        "{err}"
    );
    b.finish()
}

#[test]
fn notes_keep_versions_and_refuse_a_write_on_an_old_one() -> anyhow::Result<()> {
    let b = Bosun::new("board_notes");
    let write = |path: &str, text: &str, extra: &[&str]| {
        let mut args = vec!["note", "write", path, "--json"];
        args.extend_from_slice(extra);
        b.output_with_stdin(&args, text)
    };
    let out = write("decisions/api.md", "use REST\n", &[])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v1: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(v1["version"], 1);

    // Writing over it needs the version the text was based on.
    let out = write("decisions/api.md", "use gRPC\n", &[])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("exists (version 1); say which version"),
        "{err}"
    );
    let out = write("decisions/api.md", "use gRPC\n", &["--base-version", "1"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = write("decisions/api.md", "use SOAP\n", &["--base-version", "1"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("has changed since version 1: it is at version 2"),
        "{err}"
    );
    assert_eq!(b.ok(&["note", "show", "decisions/api.md"])?, "use gRPC\n");
    let out = write("decisions/api.md", "use SOAP\n", &["--force"])?;
    assert!(out.status.success());
    assert_eq!(b.json(&["note", "show", "decisions/api.md"])?["version"], 3);

    for bad in ["../etc/passwd", "/abs", "a//b", "sp ace"] {
        let out = write(bad, "x", &[])?;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("is not a note's path"),
            "{bad}: {err}"
        );
    }
    let err = b.fails(&["note", "show", "nothing/here"])?;
    assert!(
        err.contains("there is no note `nothing/here`; `bosun note list` shows them"),
        "{err}"
    );
    let list = b.json(&["note", "list"])?;
    assert_eq!(list[0]["path"], "decisions/api.md");
    assert_eq!(list[0]["version"], 3);
    b.finish()
}

/// The most runs that were going at once, from the `start`/`end` lines.
fn most_at_once(log: &str) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for line in log.lines() {
        if line.starts_with("start ") {
            now += 1;
            most = most.max(now);
        } else if line.starts_with("end ") {
            now = now.saturating_sub(1);
        }
    }
    most
}

#[test]
fn fifty_cards_in_an_auto_column_each_run_once_never_more_than_the_limit() -> anyhow::Result<()> {
    let b = Bosun::new("board_fifty");
    let log = b.scratch().join("runs.log");
    add_worker(&b, &log, "0.8")?;
    b.json(&["board", "limit", "8"])?;
    let mut ids = Vec::new();
    for i in 0..50 {
        let c = b.json(&[
            "board",
            "card",
            "add",
            &format!("task {i:02}"),
            "--assignee",
            "worker",
        ])?;
        ids.push(c["short_id"].as_str().unwrap_or_default().to_string());
    }
    for (i, id) in ids.iter().enumerate() {
        b.json(&["board", "card", "move", id, "To do"])?;
        if i == 20 {
            // The daemon dies in the middle; the next command starts it again.
            b.kill_daemon()?;
        }
    }
    // The kill may come between a card's run being recorded and its runner getting the plan:
    // that run never starts its program, and the card gets another (or, when bosun cannot
    // tell, waits for the person, who is stood in for here). The program itself runs once.
    let board = wait_for("every card's run to end", Duration::from_secs(120), || {
        let board = b.json(&["board"])?;
        let cards = board["cards"].as_array().cloned().unwrap_or_default();
        for c in &cards {
            release_if_unsure(&b, c)?;
        }
        let done = cards.iter().all(|c| c["run_state"] == "succeeded");
        Ok(done.then_some(board))
    })
    .map_err(|e| {
        // Which cards were not done, and how they stood.
        let left: Vec<String> = b
            .json(&["board"])
            .ok()
            .and_then(|board| board["cards"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|c| c["run_state"] != "succeeded")
            .map(|c| format!("{} runs={} state={}", c["title"], c["runs"], c["run_state"]))
            .collect();
        e.context(format!("cards not done: {left:?}"))
    })?;
    // Once more after a while: nothing starts again.
    std::thread::sleep(Duration::from_millis(1500));
    let text = std::fs::read_to_string(&log)?;
    let mut starts: HashMap<String, usize> = HashMap::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("start ") {
            *starts.entry(title.to_string()).or_default() += 1;
        }
    }
    assert_eq!(starts.len(), 50, "{text}");
    assert!(starts.values().all(|n| *n == 1), "{starts:?}");
    assert!(
        most_at_once(&text) <= 8,
        "{} at once:\n{text}",
        most_at_once(&text)
    );
    assert!(most_at_once(&text) >= 2, "the runs did overlap");
    // Every run is a card's, and a card with more than one says why: its earlier run never
    // started its program.
    let cards = board["cards"].as_array().cloned().unwrap_or_default();
    let runs: u64 = cards.iter().filter_map(|c| c["runs"].as_u64()).sum();
    assert_eq!(
        b.json(&["ps", "--all"])?.as_array().map(|r| r.len() as u64),
        Some(runs)
    );
    for c in cards.iter().filter(|c| c["runs"].as_u64() != Some(1)) {
        let id = c["short_id"].as_str().unwrap_or_default();
        let shown = b.json(&["board", "card", "show", id])?;
        let said = shown["activity"].as_array().is_some_and(|a| {
            a.iter().any(|l| {
                l["what"].as_str().is_some_and(|w| {
                    w.contains("never started") || w.contains("so it may or may not have begun")
                })
            })
        });
        assert!(
            said,
            "a card ran more than once without a reason: {shown:#}"
        );
    }
    b.finish()
}

#[test]
fn a_daemon_killed_while_starting_a_card_starts_it_exactly_once() -> anyhow::Result<()> {
    for point in ["board-after-mark", "board-after-run-started"] {
        let b = Bosun::new("board_crash");
        let log = b.scratch().join("runs.log");
        add_worker(&b, &log, "0")?;
        let c = b.json(&["board", "card", "add", "crashy", "--assignee", "worker"])?;
        let id = c["short_id"].as_str().unwrap_or_default().to_string();
        b.ok(&["daemon", "stop"])?;
        // The daemon this move starts dies at the point. The move is kept before it is
        // answered, but the answer is written by the session's own task, which a busy machine
        // may not have run before the kill: then the command saw the connection go, and the
        // card's run below proves the move was kept.
        let out = b
            .cmd(&["board", "card", "move", &id, "To do"])
            .env("BOSUN_CRASH_AT", point)
            .output()?;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || said.contains("lost the connection to bosund"),
            "{point}: {said}"
        );
        wait_for(
            "the daemon to die at the point",
            Duration::from_secs(20),
            || Ok(b.daemon_pid().is_none().then_some(())),
        )?;
        let ended = wait_for("the card's run to end", Duration::from_secs(20), || {
            let c = b.json(&["board", "card", "show", &id])?;
            // A run whose runner got no plan before the crash may or may not have begun, as
            // far as bosun can tell: the card waits for the person, who lets it run again.
            release_if_unsure(&b, &c)?;
            Ok((c["run_state"] == "succeeded").then_some(c))
        });
        if let Err(e) = ended {
            let log = std::fs::read_to_string(b.home.join("bosund.log")).unwrap_or_default();
            anyhow::bail!(
                "{point}: {e}\n{:#}\n{:#}\n{log}",
                b.json(&["board", "card", "show", &id])?,
                b.json(&["ps", "--all"])?
            );
        }
        std::thread::sleep(Duration::from_millis(1200));
        // One run of the program. A run made just before the crash whose runner was never
        // started is lost without having run, and the card gets another, said so on it.
        let runs = b.json(&["ps", "--all"])?;
        let runs = runs.as_array().cloned().unwrap_or_default();
        let shown = b.json(&["board", "card", "show", &id])?;
        assert_eq!(
            shown["runs"].as_u64(),
            Some(runs.len() as u64),
            "{point}: {shown:#}"
        );
        let ran = runs.iter().filter(|r| r["outcome"] == "succeeded").count();
        assert_eq!(ran, 1, "{point}: {runs:#?}");
        for r in runs.iter().filter(|r| r["outcome"] != "succeeded") {
            assert_eq!(r["outcome"], "lost", "{point}: {r:#}");
            assert!(r["pid"].is_null(), "{point}: it never ran: {r:#}");
        }
        if runs.len() >= 2 {
            let said = shown["activity"].as_array().is_some_and(|a| {
                a.iter().any(|l| {
                    // Never started (no runner recorded): started again. Runner recorded but
                    // no plan handed: held for the person, whom the loop above stood in for.
                    l["what"].as_str().is_some_and(|w| {
                        (w.contains("never started") && w.ends_with("starting another"))
                            || w.contains("so it may or may not have begun")
                    })
                })
            });
            assert!(said, "{point}: {shown:#}");
        }
        let text = std::fs::read_to_string(&log)?;
        assert_eq!(
            text.lines().filter(|l| l.starts_with("start ")).count(),
            1,
            "{point}: {text}"
        );
        b.finish()?;
    }
    Ok(())
}
