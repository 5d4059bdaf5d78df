//! Issue 50: the audit log. A scripted series of changes and answers, from the command line, the
//! web UI and a run's approval, is each one entry of `bosun audit`, saying who and what, with no
//! secret value in it; `bosun audit verify` finds the log intact, then finds an entry edited by
//! hand and one taken out.

use bosun_tests::webui::Ui;
use bosun_tests::{Bosun, FakeModel, short_id};
use serde_json::Value;

const CANARY: &str = "canary-audit-0f3b9d2c-secret";

fn entries(b: &Bosun) -> anyhow::Result<Vec<Value>> {
    Ok(b.json(&["audit"])?.as_array().cloned().unwrap_or_default())
}

#[test]
fn every_change_and_answer_is_on_record_and_an_edit_of_the_record_is_found() -> anyhow::Result<()> {
    let b = Bosun::new("audit_log");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo audited"};text:All done."#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "web.search=on", "budget.usd=5"])?;
    b.output_with_stdin(
        &[
            "mcp",
            "add",
            "local",
            "--env-from-stdin",
            "--",
            bosun_tests::test_server_bin().to_str().unwrap_or_default(),
            "--mode",
            "echo-secrets",
        ],
        &format!("TEST_SECRET={CANARY}\n"),
    )?;
    b.ok(&["mcp", "edit", "local", "--deny-tool", "delete_*"])?;
    b.ok(&["daemon", "set", "retention=60d"])?;

    // From the web UI: the same request, on record as the web UI's.
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;
    let csrf = ui.csrf(&cookie)?;
    let r = ui.call(
        &cookie,
        &csrf,
        r#"{"method":"agent_set","params":{"agent":"coder","settings":["web.search=off"]}}"#,
    )?;
    assert_eq!(r.status, 200, "{}", r.body);

    // An answer to a run's approval.
    let run = b.run_agent("coder", "run a command")?;
    let a = b.wait_approval()?;
    b.ok(&["approve", &short_id(&a)])?;
    b.wait_ended(&run, std::time::Duration::from_secs(90))?;
    b.ok(&["mcp", "remove", "local"])?;

    let got = entries(&b)?;
    let said: Vec<(String, String)> = got
        .iter()
        .map(|e| {
            (
                e["who"].as_str().unwrap_or_default().to_string(),
                e["what"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want: Vec<(&str, &str)> = vec![
        ("cli", "agent add coder"),
        ("cli", "agent set coder web.search=on budget.usd=5"),
        ("cli", "mcp add local"),
        ("cli", "mcp edit local"),
        ("cli", "daemon set retention=60d"),
        ("web", "agent set coder web.search=off"),
        ("cli", "allowed approval"),
        (
            "cli",
            "mcp remove local (every agent's verdicts on its tools forgotten)",
        ),
    ];
    assert_eq!(said.len(), want.len(), "{said:#?}");
    for ((who, what), (w_who, w_what)) in said.iter().zip(&want) {
        assert_eq!(who, w_who, "{said:#?}");
        assert!(what.starts_with(w_what), "{what} / {w_what}");
    }
    // The answer names the approval, its run and its tool; a change says how it stood.
    assert!(
        said[6].1.contains(&short_id(&a)) && said[6].1.contains("Bash"),
        "{}",
        said[6].1
    );
    let set = &got[1];
    assert!(
        set["before"].is_object() && set["after"].is_object(),
        "{set:#}"
    );
    assert_ne!(set["before"], set["after"]);
    let numbers: Vec<u64> = got.iter().filter_map(|e| e["n"].as_u64()).collect();
    assert_eq!(numbers, (1..=want.len() as u64).collect::<Vec<_>>());
    // No secret value in the record (nor anywhere else bosun keeps).
    b.assert_secret_nowhere(CANARY)?;

    let ok = b.ok(&["audit", "verify"])?;
    assert!(
        ok.contains(&format!("intact: {} entries", want.len())),
        "{ok}"
    );
    let text = b.ok(&["audit"])?;
    assert!(
        text.contains("web") && text.contains("agent set coder"),
        "{text}"
    );
    // The web UI's Audit page, in Chromium: the same entries, newest first, and the check.
    // (A sign-in address is good once: `bosun ui` gives a new one.)
    let again = Ui::start(&b)?;
    assert_eq!(again.pid, ui.pid, "the same bridge");
    let seen = bosun_tests::browser_scenario(&again.login, "audit", &[])?;
    let rows = seen["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), want.len(), "{seen:#}");
    assert_eq!(rows[0]["n"], want.len() as u64, "{seen:#}");
    assert_eq!(rows[2]["who"], "web", "{seen:#}");
    assert!(
        seen["check"]
            .as_str()
            .is_some_and(|c| c.contains(&format!("intact: {} entries", want.len()))),
        "{seen:#}"
    );
    b.ok(&["ui", "--stop"])?;

    // Edited by hand: found, by line.
    let path = b.home.join("audit.jsonl");
    let written = std::fs::read_to_string(&path)?;
    std::fs::write(&path, written.replacen("retention=60d", "retention=9d", 1))?;
    let err = b.fails(&["audit", "verify"])?;
    assert!(err.contains("line 5: it is not as it was written"), "{err}");
    // An entry taken out: found where the chain breaks.
    let lines: Vec<&str> = written.lines().collect();
    let without: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&path, without)?;
    let err = b.fails(&["audit", "verify"])?;
    assert!(err.contains("line 3: entry 4 follows entry 2"), "{err}");
    std::fs::write(&path, &written)?;
    b.ok(&["audit", "verify"])?;
    b.finish()
}
