//! Desktop notifications, checked on a real notification service (dunst on a private session
//! bus and an X server with no screen): a run that fails and a tool call that starts waiting
//! for the person each reach the desktop once, in the inbox's words and with the command that
//! answers; `bosun daemon set notify=off` silences them and holds across a restart of bosund;
//! a bad setting is refused with the keys there are; without a notification service, `daemon
//! status` and the web UI's Daemon page say why nothing was shown, and the page's switch turns
//! them off.

use std::time::Duration;

use bosun_tests::desktop::Desktop;
use bosun_tests::{Bosun, wait_for};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// Starts a run named `name` that fails, and waits for its end.
fn failing_run(b: &Bosun, name: &str) -> anyhow::Result<String> {
    let run = b.start(&["--name", name], &["sh", "-c", "exit 3"])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "failed", "{view:#}");
    Ok(view["short_id"].as_str().unwrap_or_default().to_string())
}

/// Gives the notifier a moment to show what it would (for checks that nothing is shown).
fn a_moment() {
    std::thread::sleep(Duration::from_millis(1500));
}

#[test]
fn what_waits_for_the_person_and_failed_runs_reach_the_desktop_once_each_until_turned_off()
-> anyhow::Result<()> {
    let desk = Desktop::start()?;
    let b = Bosun::new("notify").with_env("DBUS_SESSION_BUS_ADDRESS", &desk.address);

    // A run that fails.
    let short = failing_run(&b, "flaky")?;
    let shown = desk.wait_shown(1, WAIT)?;
    assert_eq!(shown[0].app, "bosun");
    assert_eq!(shown[0].summary, "Run flaky failed");
    assert_eq!(
        shown[0].body,
        format!("exited with status 3\nbosun show {short} · bosun logs {short}")
    );

    // A tool call that waits for the person, answered as the notification says.
    b.add_fake_claude_agent(
        "coder",
        &json!([[{"tool": "Bash", "input": {"command": "echo hi > hi.txt"}}]]),
    )?;
    let run = b.run_agent("coder", "go")?;
    let approval = b.wait_approval()?;
    let id = approval["short_id"].as_str().unwrap_or_default();
    let shown = desk.wait_shown(2, WAIT)?;
    assert_eq!(shown[1].summary, "coder asks to use Bash");
    let body = &shown[1].body;
    assert!(
        body.ends_with(&format!("bosun approve {id} · bosun deny {id}")),
        "{body}"
    );
    // The command as the inbox shows it, its `>` sent as text rather than markup.
    assert!(body.contains("echo hi &gt; hi.txt"), "{body}");
    b.ok(&["approve", id])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    a_moment();
    assert_eq!(
        desk.shown()?.len(),
        2,
        "the decision and a run that succeeded are no alerts, and nothing is told twice"
    );
    let status = b.json(&["daemon", "status"])?;
    assert_eq!(
        status["notify"],
        json!({"on": true, "shown": 2}),
        "{status:#}"
    );

    // Turned off, kept across a restart of bosund, and on again.
    let said = b.ok(&["daemon", "set", "notify=off"])?;
    assert!(said.contains("off (bosun daemon set notify=on)"), "{said}");
    failing_run(&b, "quiet")?;
    b.ok(&["daemon", "stop"])?;
    b.ok(&["ps"])?;
    assert_eq!(b.json(&["daemon", "status"])?["notify"]["on"], false);
    failing_run(&b, "still-quiet")?;
    a_moment();
    assert_eq!(desk.shown()?.len(), 2, "nothing is shown while off");
    b.ok(&["daemon", "set", "notify=on"])?;
    failing_run(&b, "heard")?;
    let shown = desk.wait_shown(3, WAIT)?;
    assert_eq!(shown[2].summary, "Run heard failed");

    // A bad setting changes nothing and says what there is.
    let e = b.fails(&["daemon", "set", "retention=7d", "notify=maybe"])?;
    assert!(e.contains("`notify=maybe`: notify takes on or off"), "{e}");
    let e = b.fails(&["daemon", "set", "colour=blue"])?;
    assert!(
        e.contains("`colour` is not a setting of bosund; its settings are notify=on|off"),
        "{e}"
    );
    assert_eq!(b.json(&["daemon", "status"])?["notify"]["on"], true);
    b.finish()
}

#[test]
fn without_a_notification_service_daemon_status_says_why_nothing_was_shown() -> anyhow::Result<()> {
    // The harness's default: a session bus that is not there.
    let b = Bosun::new("notify_nobus");
    failing_run(&b, "unheard")?;
    let notify = wait_for("the notifier's try", WAIT, || {
        let n = b.json(&["daemon", "status"])?["notify"].clone();
        Ok(n["problem"].is_string().then_some(n))
    })?;
    assert_eq!(notify["on"], true);
    assert_eq!(notify["shown"], 0);
    let problem = notify["problem"].as_str().unwrap_or_default();
    // In the person's words, not the bus's (issue 48: the Daemon page showed a raw D-Bus
    // error).
    assert_eq!(
        problem,
        "desktop notifications could not be shown: bosund has no desktop session bus to reach (it was started outside the desktop session): start bosun from the desktop, or turn notifications off; the inbox still has everything"
    );
    let words = b.ok(&["daemon", "status"])?;
    assert!(
        words.contains("notify        on, 0 shown since bosund started; the last could not be: desktop notifications could not be shown: bosund has no desktop session bus"),
        "{words}"
    );
    // The web UI's Daemon page says the same, and its switch turns them off.
    let ui = b.json(&["ui", "--no-open"])?;
    let seen =
        bosun_tests::browser_scenario(ui["login_url"].as_str().unwrap_or_default(), "notify", &[])?;
    b.ok(&["ui", "--stop"])?;
    let before = seen["before"].as_str().unwrap_or_default();
    assert!(
        before.starts_with("on, 0 shown since bosund started; the last could not be: desktop notifications could not be shown: bosund has no desktop session bus"),
        "{seen:#}"
    );
    assert!(
        seen["after"]
            .as_str()
            .unwrap_or_default()
            .starts_with("off"),
        "{seen:#}"
    );
    assert_eq!(b.json(&["daemon", "status"])?["notify"]["on"], false);
    b.finish()
}
