//! A run of many tool calls stays one message: its view holds its latest decisions only
//! (`DECISIONS_SHOWN`, 1,000) and counts the earlier ones, so `bosun show`, `bosun ps` and the
//! web UI's run page still answer for a run of tens of thousands of calls, where the whole list
//! outgrew the 4 MiB a message of bosund's socket may hold. Every decision is still kept in the
//! store, and the count holds after bosund starts again and reads them from there.

use std::time::Duration;

use bosun_tests::Bosun;
use serde_json::{Value, json};

const CALLS: usize = 1_500;
const SHOWN: usize = 1_000;

#[test]
fn a_run_of_many_calls_shows_its_latest_decisions_and_counts_the_rest() -> anyhow::Result<()> {
    let b = Bosun::new("long_run");
    // One `Read` after another, each of its own file, each allowed by the approval mode.
    let steps: Vec<Value> = (0..CALLS)
        .map(|i| json!([{"tool": "Read", "input": {"file_path": format!("/notes/f{i}.md")}}]))
        .collect();
    b.add_fake_claude_agent("reader", &Value::Array(steps))?;
    let id = b.run_agent("reader", "read every note")?;
    assert_eq!(
        b.wait_ended(&id, Duration::from_secs(120))?["outcome"],
        "succeeded"
    );

    let check = |run: &Value, when: &str| {
        let a = &run["agent"];
        let shown = a["decisions"].as_array().cloned().unwrap_or_default();
        assert_eq!(shown.len(), SHOWN, "{when}: the latest {SHOWN} are shown");
        assert_eq!(
            a["decisions_not_shown"],
            json!(CALLS - SHOWN),
            "{when}: the earlier ones are counted"
        );
        // The latest, in the order they were made: the first shown is call 500, the last 1,499.
        for (k, d) in shown.iter().enumerate() {
            let file = format!("/notes/f{}.md", CALLS - SHOWN + k);
            let summary = d["summary"].as_str().unwrap_or_default();
            assert!(
                summary.ends_with(&file) && d["decision"] == "allowed",
                "{when}: decision {k} is of {file}: {d}"
            );
        }
    };
    check(&b.show(&id)?, "bosun show");
    let listed = b.json(&["ps", "--all"])?;
    let run = listed
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["id"] == json!(id)))
        .cloned()
        .unwrap_or_default();
    check(&run, "bosun ps --all");
    let text = b.ok(&["show", &id])?;
    assert!(
        text.contains("500 earlier not shown; the latest 1000 follow"),
        "{text}"
    );
    assert_eq!(text.matches("\ndecision ").count(), SHOWN, "{text}");

    // Read again from the store by a bosund started anew: every decision was kept.
    b.kill_daemon()?;
    check(&b.show(&id)?, "bosun show after bosund started again");
    // The web UI's run page: the count, the line that says so, the latest rows in order.
    let ui = bosun_tests::webui::Ui::start(&b)?;
    let page = bosun_tests::browser_scenario(&ui.login, "decisions", &[("BOSUN_UI_RUN", &id)])?;
    assert_eq!(page["heading"], format!("Decisions ({CALLS})"), "{page:#}");
    assert_eq!(
        page["notShown"], "500 earlier not shown; the latest 1000 follow",
        "{page:#}"
    );
    let rows = page["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), SHOWN, "{page:#}");
    assert_eq!(rows[0], "Read: /notes/f500.md");
    assert_eq!(rows[SHOWN - 1], "Read: /notes/f1499.md");
    b.ok(&["ui", "--stop"])?;
    b.finish()
}
