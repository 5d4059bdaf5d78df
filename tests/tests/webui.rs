//! The web UI end to end: the real `bosun ui` bridge against a real bosund. Its security (no
//! cookie: 401; a foreign Host: 403; writes from another origin or without the CSRF header:
//! 403; the one-time sign-in and its cookie), the generic call, the log stream's resume rule
//! (Last-Event-ID; a SIGKILL of bosund mid-run with no gap and no duplicate), SIGPIPE ignored by
//! the bridge, and, in Debian's chromium driven by `tests/node/webui/drive.mjs`, a log watched
//! live to its end, run output that tries to be markup shown as text, a finished log read
//! tail-first and then whole, in order, the Inbox approving the lead's pending action, a
//! run's tool call approved from the Inbox (the run goes on, the model sees the output, the
//! run's page lists the decision), another denied with a message and a file edit blocked
//! (markup in a command and in a diff shown as text), a run stopped from the Runs page; MCP
//! servers added, edited, renamed, imported and removed, an OAuth sign-in through the test
//! OAuth server, the agent form (a refused change changing nothing), projects and a card
//! edited, held and started with the Runs page's Card column, a chat message with files, its
//! answer streaming live and the lead's action discarded inline, two actions notified and
//! approved all from the chat — with a secret canary never reaching a page; and old uploads
//! swept.
//!
//! How fast the pages are is measured by a benchmark, not asserted here:
//! `./scripts/bench webui` (`bench/benches/webui.rs`).
//!
//! HTTP is spoken by hand (`bosun_tests::webui`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_tests::webui::{SseEvent, Ui};
use bosun_tests::{
    Bosun, FakeModel, OAuthServer, everything_bin, keychain_values, mode_of, session_of, wait_for,
};
use serde_json::Value;

/// Stops the bridge, then the test's daemon, and checks nothing is left.
fn finish(b: Bosun) -> anyhow::Result<()> {
    b.ok(&["ui", "--stop"])?;
    b.finish()
}

/// `node tests/node/webui/drive.mjs <scenario>`, signed in to `ui`; the JSON it prints.
fn drive(ui: &Ui, scenario: &str, env: &[(&str, &str)]) -> anyhow::Result<Value> {
    bosun_tests::browser_scenario(&ui.login, scenario, env)
}

#[test]
fn security_sign_in_host_origin_and_csrf() -> anyhow::Result<()> {
    let b = Bosun::new("webui_security");
    let ui = Ui::start(&b)?;
    // The address file holds the token: 0600. The bridge leads a session of its own.
    assert_eq!(mode_of(&b.home.join("ui.json")), Some(0o600));
    assert_eq!(session_of(ui.pid), Some(ui.pid));

    // Nothing without the cookie: a page gets a plain page, the API JSON.
    let r = ui.get("/", &[])?;
    assert_eq!(r.status, 401);
    assert!(r.body.contains("bosun ui"), "{}", r.body);
    let r = ui.get("/api/session", &[])?;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()?["error"]["code"], "unauthorized");
    let r = ui.get("/login?token=0000", &[])?;
    assert_eq!(r.status, 401);

    // Another Host (DNS rebinding) is refused before anything else, even the sign-in.
    let evil_host = format!("evil.example:{}", ui.port);
    let path = ui.login.trim_start_matches(&ui.origin()).to_string();
    let r = ui.get(&path, &[("Host", &evil_host)])?;
    assert_eq!(r.status, 403);

    // The sign-in: a cookie the page's scripts cannot read, kept to this site, then a clean
    // address. The token works once.
    let r = ui.get(&path, &[])?;
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/"));
    let set = r.header("set-cookie").context("no cookie")?;
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    let cookie = set.split(';').next().unwrap_or_default().to_string();
    assert_eq!(ui.get(&path, &[])?.status, 401);

    // Signed in: the page, with its headers; no CORS header anywhere.
    let r = ui.get("/", &[("Cookie", &cookie)])?;
    assert_eq!(r.status, 200);
    let csp = r.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    assert!(
        r.headers
            .iter()
            .all(|(k, _)| !k.starts_with("access-control-"))
    );
    assert_eq!(
        ui.get("/", &[("Cookie", &cookie), ("Host", &evil_host)])?
            .status,
        403
    );

    let csrf = ui.csrf(&cookie)?;
    let list = r#"{"method":"list_runs","params":{"all":true}}"#;
    // A write from another origin, or without an Origin, or without the CSRF header: 403.
    let post = |headers: &[(&str, &str)]| ui.send("POST", "/api/call", headers, Some(list));
    let r = post(&[
        ("Cookie", &cookie),
        ("Origin", "http://evil.example"),
        ("X-Bosun-Csrf", &csrf),
    ])?;
    assert_eq!(r.status, 403);
    assert_eq!(r.json()?["error"]["code"], "cross_origin");
    let r = post(&[("Cookie", &cookie), ("X-Bosun-Csrf", &csrf)])?;
    assert_eq!(r.status, 403);
    let r = post(&[("Cookie", &cookie), ("Origin", &ui.origin())])?;
    assert_eq!(r.status, 403);
    assert_eq!(r.json()?["error"]["code"], "csrf");
    let r = post(&[
        ("Cookie", &cookie),
        ("Origin", &ui.origin()),
        ("X-Bosun-Csrf", "nope"),
    ])?;
    assert_eq!(r.status, 403);
    let r = post(&[("Origin", &ui.origin()), ("X-Bosun-Csrf", &csrf)])?;
    assert_eq!(r.status, 401);

    // The generic call, and its refusals in plain words.
    let r = ui.call(&cookie, &csrf, list)?;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()?["answer"], "runs");
    let r = ui.call(&cookie, &csrf, r#"{"method":"daemon_stop"}"#)?;
    assert_eq!(r.status, 403);
    assert!(
        r.json()?["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("bosun daemon stop")
    );
    let r = ui.call(&cookie, &csrf, r#"{"method":"no_such_thing"}"#)?;
    assert_eq!(r.status, 400);
    let r = ui.call(
        &cookie,
        &csrf,
        r#"{"method":"get_run","params":{"run":"zzzz"}}"#,
    )?;
    assert_eq!(r.status, 404, "{}", r.body);

    // `bosun ui` again finds the same bridge, with a fresh token.
    let again = Ui::start(&b)?;
    assert_eq!(again.pid, ui.pid);
    assert_ne!(again.login, ui.login);
    assert_eq!(again.sign_in()?.len(), cookie.len());
    finish(b)
}

/// A run that prints `line 1` … `line n`, one every `pause` seconds.
fn numbered(b: &Bosun, n: u32, pause: &str) -> anyhow::Result<String> {
    let script =
        format!("i=1; while [ $i -le {n} ]; do echo \"line $i\"; i=$((i+1)); sleep {pause}; done");
    b.start(&[], &["sh", "-c", &script])
}

/// The text of the events' chunks, in order.
fn text_of(events: &[SseEvent]) -> String {
    events
        .iter()
        .filter(|e| e.event.is_empty())
        .map(|e| e.json()["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn log_stream_resumes_after_last_event_id_and_reads_chunks() -> anyhow::Result<()> {
    let b = Bosun::new("webui_resume");
    let run = numbered(&b, 40, "0.02")?;
    let last = b.wait_ended(&run, Duration::from_secs(30))?["last_seq"]
        .as_u64()
        .context("no last_seq")?;
    assert!(last >= 4, "too few chunks to test with: {last}");
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;

    let path = format!("/api/runs/{run}/log");
    let all = ui.log_events(&cookie, &path, &[], |_| Ok(()))?;
    let ids: Vec<u64> = all.iter().filter_map(|e| e.id).collect();
    assert_eq!(ids, (1..=last).collect::<Vec<_>>());
    let expected: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text_of(&all), expected);
    assert_eq!(all.last().map(|e| e.event.as_str()), Some("end"));

    // Last-Event-ID wins over ?from: exactly the seqs after it.
    let k = last / 2;
    let resumed = ui.log_events(
        &cookie,
        &format!("{path}?from=1"),
        &[("Last-Event-ID", &k.to_string())],
        |_| Ok(()),
    )?;
    let ids: Vec<u64> = resumed.iter().filter_map(|e| e.id).collect();
    assert_eq!(ids, (k + 1..=last).collect::<Vec<_>>());
    let from = ui.log_events(&cookie, &format!("{path}?from={last}"), &[], |_| Ok(()))?;
    assert_eq!(
        from.iter().filter_map(|e| e.id).collect::<Vec<_>>(),
        vec![last]
    );

    // Chunks, without following; and the download.
    let r = ui.get(
        &format!("/api/runs/{run}/chunks?from=2&limit=2"),
        &[("Cookie", &cookie)],
    )?;
    let seqs: Vec<u64> = r
        .json()?
        .as_array()
        .context("not an array")?
        .iter()
        .filter_map(|c| c["seq"].as_u64())
        .collect();
    assert_eq!(seqs, vec![2, 3]);
    let r = ui.get(&format!("/api/runs/{run}/log.txt"), &[("Cookie", &cookie)])?;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-disposition")
            .unwrap_or_default()
            .starts_with("attachment")
    );
    assert_eq!(r.body, expected);
    finish(b)
}

/// The bridge used to die of SIGPIPE when a browser left a page while a long answer was being
/// written (a big log's earlier output, read in the background; caught under gdb in hyper's
/// `writev`): `bosun` keeps SIGPIPE's default for the command line, and `writev`, unlike
/// `send`, has no flag to suppress the signal on a connection the browser closed. The race
/// that kills it is hard to make on purpose, so this checks the disposition itself.
#[test]
fn the_bridge_ignores_sigpipe_so_a_browser_leaving_mid_answer_cannot_stop_it() -> anyhow::Result<()>
{
    let b = Bosun::new("webui_sigpipe");
    let ui = Ui::start(&b)?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", ui.pid))?;
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .context("no SigIgn in /proc/PID/status")?;
    let sigpipe = nix::sys::signal::Signal::SIGPIPE as u64;
    assert_ne!(
        ignored & (1 << (sigpipe - 1)),
        0,
        "SIGPIPE is not ignored: {ignored:x}"
    );
    finish(b)
}

/// Opens the bridge's event stream, reads it to its `hello` (the bridge is subscribed to bosund
/// then), and closes it as a tab being closed does.
fn open_and_close_events(ui: &Ui, cookie: &str) -> anyhow::Result<()> {
    bosun_tests::read_to_event(
        ui.open("GET", "/api/events", &[("Cookie", cookie)], None)?,
        "hello",
    )
}

/// Issue 25: every `/api/call`, finished log stream and closed event stream left a connection to
/// bosund open, in the bridge and in bosund, for ever (the client's reader task kept the read
/// half after the client was dropped), until the bridge ran out of files and stopped answering.
/// A few hundred of each now leave both processes' open files where they were.
#[test]
fn the_bridge_closes_its_bosund_connections_so_requests_leave_open_files_flat() -> anyhow::Result<()>
{
    let b = Bosun::new("webui_connections");
    let run = b.start(&[], &["echo", "done"])?;
    b.wait_ended(&run, Duration::from_secs(30))?;
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;
    let csrf = ui.csrf(&cookie)?;
    let daemon = b.daemon_pid().context("no bosund pid")?;
    let list = r#"{"method":"list_runs","params":{"all":true}}"#;
    let log = format!("/api/runs/{run}/log");
    let work = |calls: usize, streams: usize| -> anyhow::Result<()> {
        for _ in 0..calls {
            let r = ui.call(&cookie, &csrf, list)?;
            assert_eq!(r.status, 200, "{}", r.body);
        }
        for _ in 0..streams {
            open_and_close_events(&ui, &cookie)?;
            let events = ui.log_events(&cookie, &log, &[], |_| Ok(()))?;
            assert_eq!(events.last().map(|e| e.event.as_str()), Some("end"));
        }
        Ok(())
    };
    // A little of everything first, so whatever either process opens once is open.
    work(5, 2)?;
    let settled = |pid: i32, at_most: usize| -> anyhow::Result<usize> {
        wait_for("the open files to settle", Duration::from_secs(40), || {
            let n = bosun_tests::open_files(pid);
            Ok((n <= at_most).then_some(n))
        })
    };
    let bridge_before = settled(ui.pid, bosun_tests::open_files(ui.pid))?;
    let daemon_before = settled(daemon, bosun_tests::open_files(daemon))?;

    work(300, 100)?;
    // A closed tab's stream is noticed by the bridge at its next write at the latest (a
    // keep-alive comes every 15 s), so the counts are waited for, within a small constant.
    let slack = 8;
    let bridge_after = settled(ui.pid, bridge_before + slack).with_context(|| {
        format!(
            "the bridge had {bridge_before} files open before, {} after",
            bosun_tests::open_files(ui.pid)
        )
    })?;
    let daemon_after = settled(daemon, daemon_before + slack).with_context(|| {
        format!(
            "bosund had {daemon_before} files open before, {} after",
            bosun_tests::open_files(daemon)
        )
    })?;
    eprintln!(
        "open files: bridge {bridge_before} → {bridge_after}, bosund {daemon_before} → {daemon_after}"
    );
    finish(b)
}

/// Issue 25: a 200-letter name of letters that take two bytes each (400 bytes, past the
/// filesystem's 255) failed with a 500 and left an empty folder under `uploads/`. It is refused
/// with a 4xx saying why, and nothing is left; a name of 200 bytes is kept whole.
#[test]
fn an_upload_name_too_long_in_bytes_is_refused_and_leaves_nothing() -> anyhow::Result<()> {
    let b = Bosun::new("webui_upload_name");
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;
    let csrf = ui.csrf(&cookie)?;
    let origin = ui.origin();
    let upload = |name: &str| {
        ui.send(
            "POST",
            &format!("/api/uploads?name={name}"),
            &[
                ("Cookie", &cookie),
                ("Origin", &origin),
                ("X-Bosun-Csrf", &csrf),
                ("Content-Type", "application/octet-stream"),
            ],
            Some("hello"),
        )
    };
    let folders = || std::fs::read_dir(b.home.join("uploads")).map_or(0, |d| d.count());

    let r = upload(&"%C3%A9".repeat(200))?;
    assert_eq!(r.status, 400, "{}", r.body);
    let message = r.json()?["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("400 bytes long (200 letters)"),
        "{message}"
    );
    assert!(message.contains("at most 255 bytes"), "{message}");
    assert_eq!(folders(), 0, "a refused upload left a folder");

    let r = upload(&"%C3%A9".repeat(100))?;
    assert_eq!(r.status, 200, "{}", r.body);
    let kept = r.json()?;
    assert_eq!(kept["name"].as_str(), Some("é".repeat(100).as_str()));
    let path = kept["path"].as_str().context("no path")?;
    assert_eq!(std::fs::read_to_string(path)?, "hello");
    assert_eq!(folders(), 1);
    finish(b)
}

#[test]
fn log_stream_survives_a_sigkill_of_bosund_with_no_gap() -> anyhow::Result<()> {
    let b = Bosun::new("webui_sigkill");
    let n = 150;
    let run = numbered(&b, n, "0.02")?;
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;
    let mut killed = false;
    let events = ui.log_events(&cookie, &format!("/api/runs/{run}/log"), &[], |e| {
        if !killed && e.id.is_some_and(|id| id >= 10) {
            killed = true;
            b.kill_daemon()?;
        }
        Ok(())
    })?;
    assert!(killed, "the run ended before bosund could be killed");
    assert!(
        events.iter().any(|e| e.event == "reconnecting"),
        "{events:?}"
    );
    let ids: Vec<u64> = events.iter().filter_map(|e| e.id).collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "a gap or a duplicate: {ids:?}"
    );
    assert_eq!(ids.first(), Some(&1));
    let expected: String = (1..=n).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text_of(&events), expected);
    finish(b)
}

#[test]
fn browser_watches_a_log_live_to_its_end_and_shows_markup_as_text() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_log");
    let ui = Ui::start(&b)?;
    let n = 3000;
    let script = format!(
        concat!(
            "printf '%s\\n' '<script>alert(1)</script>' '<img src=x onerror=alert(1)>' ; ",
            "printf '\\033[31mred\\033[0m \\033]0;title\\007\\033[2Jcleared\\n'; ",
            "printf 'to stderr\\n' >&2; sleep 1; ",
            "i=1; while [ $i -le {n} ]; do echo \"line $i\"; i=$((i+1)); ",
            "[ $((i % 500)) -eq 0 ] && sleep 0.3; done"
        ),
        n = n
    );
    let run = b.start(&[], &["sh", "-c", &script])?;
    let seen = drive(&ui, "log", &[("BOSUN_UI_RUN", &run)])?;
    let lines: Vec<String> = seen["lines"]
        .as_array()
        .context("no lines")?
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    let numbered: Vec<&String> = lines.iter().filter(|l| l.starts_with("line ")).collect();
    let expected: Vec<String> = (1..=n).map(|i| format!("line {i}")).collect();
    assert_eq!(numbered, expected.iter().collect::<Vec<_>>());
    // Markup from the run is text; terminal escapes are gone, their text kept.
    assert!(
        lines.contains(&"<script>alert(1)</script>".to_string()),
        "{:?}",
        &lines[..5]
    );
    assert!(lines.contains(&"<img src=x onerror=alert(1)>".to_string()));
    assert!(
        lines.contains(&"red cleared".to_string()),
        "{:?}",
        &lines[..5]
    );
    assert!(lines.contains(&"to stderr".to_string()));
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    assert_eq!(seen["foreign"], 0);
    // Only the visible rows are in the DOM.
    assert!(
        seen["rows"].as_u64().unwrap_or(u64::MAX) < 200,
        "{}",
        seen["rows"]
    );
    finish(b)
}

#[test]
fn browser_reads_a_finished_log_tail_first_then_the_rest_in_order() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_tail");
    // A line written in two pieces (each its own chunk, the first flushed unfinished), then a
    // line per chunk: far more chunks than the page's first read of the tail.
    let n = 400;
    let script = format!(
        concat!(
            "printf 'partial-'; sleep 0.3; printf 'joined\\n'; ",
            "i=1; while [ $i -le {n} ]; do echo \"line $i\"; i=$((i+1)); sleep 0.01; done"
        ),
        n = n
    );
    let run = b.start(&[], &["sh", "-c", &script])?;
    let last = b.wait_ended(&run, Duration::from_secs(60))?["last_seq"]
        .as_u64()
        .unwrap_or(0);
    assert!(last > 100, "too few chunks to test with: {last}");
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "log", &[("BOSUN_UI_RUN", &run)])?;
    let lines: Vec<&str> = seen["lines"]
        .as_array()
        .context("no lines")?
        .iter()
        .map(text)
        .filter(|l| l.starts_with("line ") || l.starts_with("partial"))
        .collect();
    let mut expected = vec!["partial-joined".to_string()];
    expected.extend((1..=n).map(|i| format!("line {i}")));
    assert_eq!(lines, expected);
    finish(b)
}

/// A run stopped from the Runs page, and again with the answer to the stop held back until the
/// page shows the run's end, on the Runs page and on the run's own page. The answer ("stopping")
/// and the event of the end come on connections of their own, so on a busy machine the answer
/// can come second; a page that took it in as it came showed the ended run as stopping again,
/// with nothing left to correct it (CI saw it once).
#[test]
fn browser_stops_a_run_from_its_pages_and_an_answer_after_its_end_leaves_it_ended()
-> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_stop");
    for (from, late) in [("runs", "0"), ("runs", "1"), ("run", "1")] {
        // A sign-in address is good once: `bosun ui` gives a new one for the running bridge.
        let ui = Ui::start(&b)?;
        let run = b.start(&[], &["sleep", "300"])?;
        let seen = drive(
            &ui,
            "stop",
            &[
                ("BOSUN_UI_RUN", &run),
                ("BOSUN_UI_LATE_ANSWER", late),
                ("BOSUN_UI_STOP_FROM", from),
            ],
        )?;
        if from == "runs" {
            assert_eq!(seen["state"], "exited", "{from} {late}: {seen}");
            let exit = seen["exit"].as_str().unwrap_or_default();
            assert!(exit.contains("stopped"), "{from} {late}: {seen}");
        } else {
            assert_eq!(seen["state"], "stopped", "{from} {late}: {seen}");
        }
        let v = b.wait_ended(&run, Duration::from_secs(30))?;
        assert_eq!(v["outcome"], "stopped");
    }
    finish(b)
}

/// The Runs page reads a history larger than one answer of bosund (about 1 MiB of runs) page by
/// page, and lists every run, the oldest last.
#[test]
fn browser_lists_a_history_larger_than_one_answer_page_by_page() -> anyhow::Result<()> {
    let b = Bosun::new("webui_runs_pages");
    let big = "x".repeat(100_000);
    let mut ids = Vec::new();
    for i in 0..24 {
        ids.push(b.start(&[], &["true", &format!("{i}:{big}")])?);
    }
    for id in &ids {
        b.wait_ended(id, Duration::from_secs(30))?;
    }
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "runsPages", &[])?;
    assert!(
        seen["asked"].as_u64().unwrap_or_default() >= 2,
        "2.4 MB of runs came in one answer: {seen}"
    );
    assert_eq!(seen["count"], "24 of 24", "{seen}");
    assert_eq!(
        seen["last"],
        ids[0].as_str(),
        "the oldest run is last: {seen}"
    );
    finish(b)
}

#[test]
fn browser_inbox_approves_the_leads_pending_action() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_inbox");
    let fake = FakeModel::start(
        "anthropic",
        concat!(
            r#"tool:everything/echo:{"message":"hi"};"#,
            r#"tool:bosun/memory_write:{"path":"plan.md","text":"from the web\n"};"#,
            "text:Asked.;",
            "text:Thanks."
        ),
    )?;
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let out = b.ok(&["chat", "send", &chat, "echo, then save the plan"])?;
    assert!(out.contains("Waiting for your OK:"), "{out}");

    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "inbox", &[])?;
    assert!(
        seen["shown"]
            .as_str()
            .unwrap_or_default()
            .contains("memory_write"),
        "{seen}"
    );
    assert!(
        seen["title"]
            .as_str()
            .unwrap_or_default()
            .starts_with("(1)"),
        "{seen}"
    );
    assert!(
        seen["history"]
            .as_str()
            .unwrap_or_default()
            .contains("approved"),
        "{seen}"
    );
    wait_for("the approved note", Duration::from_secs(30), || {
        Ok(b.output(&["note", "show", "plan.md"])?
            .status
            .success()
            .then_some(()))
    })?;
    assert_eq!(b.ok(&["note", "show", "plan.md"])?, "from the web\n");
    let started = Instant::now();
    finish(b)?;
    assert!(started.elapsed() < Duration::from_secs(60));
    Ok(())
}

/// A Claude agent `coder` on the fake Anthropic API whose asks wait ten minutes (the default
/// 30 s is too short for a browser on a loaded machine), and a run of it.
fn coder_run(b: &Bosun, fake: &FakeModel, prompt: &str) -> anyhow::Result<String> {
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "approval.wait=10m"])?;
    Ok(b.ok(&["agent", "run", "coder", prompt])?.trim().to_string())
}

/// The text of the tool results the model saw at turn `n` (0-based).
fn result_at(fake: &FakeModel, n: usize) -> String {
    fake.turns()
        .get(n)
        .and_then(|t| t["tool_result"].as_str().map(str::to_string))
        .unwrap_or_default()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[test]
fn browser_inbox_approves_a_runs_tool_call_and_the_run_goes_on() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_approve");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo approved-from-the-web"};text:All done."#,
    )?;
    let run = coder_run(&b, &fake, "run a command")?;
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "approve", &[("BOSUN_UI_RUN", &run)])?;

    // The page showed the waiting call: its tool, why it asks, the command and the folder, a
    // countdown that counts, and the count in the tab's title.
    let shown = text(&seen["shown"]);
    for part in ["Bash", "runs commands", "coder", "asks because", "left"] {
        assert!(
            shown.to_lowercase().contains(&part.to_lowercase()),
            "{part}: {seen:#}"
        );
    }
    assert!(
        text(&seen["preview"]).starts_with("$ echo approved-from-the-web\nin "),
        "{seen:#}"
    );
    assert_ne!(
        seen["left"][0], seen["left"][1],
        "the time left counts down"
    );
    assert!(text(&seen["title"]).starts_with("(1)"), "{seen:#}");
    assert!(text(&seen["said"]).contains("allowed"), "{seen:#}");
    assert!(
        text(&seen["history"]).contains("allowed by the person"),
        "{seen:#}"
    );

    // The run went on: the command ran and the model saw its output.
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert!(
        result_at(&fake, 1).contains("approved-from-the-web"),
        "the model saw the command's output: {}",
        result_at(&fake, 1)
    );
    // The run's page listed the decision, with who made it.
    let rows: Vec<&str> = seen["decisions"]
        .as_array()
        .context("no decisions")?
        .iter()
        .map(text)
        .collect();
    assert!(
        rows.iter()
            .any(|r| r.contains("Bash") && r.contains("allowed") && r.contains("the person")),
        "{rows:?}"
    );
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn browser_inbox_denies_with_a_message_blocks_and_shows_markup_as_text() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_deny");
    let work = b.scratch().join("coder/work");
    std::fs::create_dir_all(&work)?;
    let page = work.join("page.html");
    std::fs::write(&page, "<h1>title</h1>\n<b>old</b>\n")?;
    let page_s = page.display().to_string();
    // A command and a file edit whose text tries to be markup; the edit needs a read first
    // (Claude Code refuses to edit a file it has not read), and reads run without asking.
    let script = format!(
        concat!(
            r#"tool:Bash:{{"command":"echo '<img src=x onerror=alert(1)>'"}};"#,
            r#"tool:Read:{{"file_path":"{page}"}};"#,
            r#"tool:Edit:{{"file_path":"{page}","old_string":"<b>old</b>","new_string":"<img src=x onerror=alert(2)>"}};"#,
            "text:All done."
        ),
        page = page_s
    );
    let fake = FakeModel::start("anthropic", &script)?;
    let run = coder_run(&b, &fake, "print, then edit the page")?;
    let ui = Ui::start(&b)?;
    let message = "do not print markup; use printf with a plain word";
    let seen = drive(
        &ui,
        "deny",
        &[("BOSUN_UI_RUN", &run), ("BOSUN_UI_MESSAGE", message)],
    )?;

    // Markup in a command and in a file's change is text: shown as written, never an element.
    assert!(
        text(&seen["one"]["preview"]).contains("$ echo '<img src=x onerror=alert(1)>'"),
        "{seen:#}"
    );
    assert_eq!(seen["one"]["foreign"], 0, "{seen:#}");
    assert_eq!(seen["two"]["tool"], "Edit", "{seen:#}");
    assert!(text(&seen["two"]["file"]).contains("page.html"), "{seen:#}");
    assert_eq!(seen["two"]["before"], serde_json::json!(["<b>old</b>"]));
    assert_eq!(
        seen["two"]["after"],
        serde_json::json!(["<img src=x onerror=alert(2)>"])
    );
    assert_eq!(seen["two"]["foreign"], 0, "{seen:#}");
    assert_eq!(seen["foreign"], 0, "{seen:#}");
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    let history = text(&seen["history"]);
    assert!(history.contains(message), "{seen:#}");
    assert_eq!(
        history.matches("denied by the person").count(),
        2,
        "{seen:#}"
    );

    // The model was told the person's message; the block stands for the agent from now on,
    // and the file was not touched.
    b.wait_ended(&run, Duration::from_secs(60))?;
    assert!(
        result_at(&fake, 1).contains(message),
        "the model was told: {}",
        result_at(&fake, 1)
    );
    let agent = b.json(&["agent", "show", "coder"])?;
    let verdicts = &agent["approvals"]["verdicts"];
    assert!(
        verdicts
            .as_array()
            .is_some_and(|v| v.contains(&serde_json::json!(["Edit", "block"]))),
        "{verdicts:#}"
    );
    assert_eq!(
        std::fs::read_to_string(&page)?,
        "<h1>title</h1>\n<b>old</b>\n"
    );
    finish(b)
}

#[test]
fn browser_opens_every_page_without_an_error() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_pages");
    // Issue 48: an agent's, a server's and a run's page (with a decision) printed "null" where
    // an optional part was left out.
    let fake = bosun_tests::FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo hi"};text:All done."#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "Bash(echo *)=allow"])?;
    let bin = bosun_tests::test_server_bin();
    b.ok(&[
        "mcp",
        "add",
        "local",
        "--",
        bin.to_str().unwrap_or_default(),
    ])?;
    let run = b.run_agent("coder", "say hi")?;
    b.wait_ended(&run, std::time::Duration::from_secs(90))?;
    let ui = Ui::start(&b)?;
    let more = format!("agents/coder,mcp/local,run/{run}");
    let seen = drive(&ui, "pages", &[("BOSUN_UI_MORE", &more)])?;
    assert!(
        seen["shown"]["daemon"]
            .as_str()
            .unwrap_or_default()
            .contains("State directory"),
        "{seen}"
    );
    assert!(
        seen["shown"]["usage"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Usage"),
        "{seen}"
    );
    assert!(
        seen["shown"][format!("run/{run}")]
            .as_str()
            .unwrap_or_default()
            .contains("succeeded"),
        "{seen}"
    );
    finish(b)
}

/// Saves PNGs of the Runs, Run and Inbox pages (with a run's file edit waiting for the person
/// beside a pending action of the lead), and of that run's page with its decisions, into
/// `docs/screenshots/`:
/// `cargo nextest run -p bosun-tests --test webui --run-ignored only screenshots`.
#[test]
#[ignore = "writes docs/screenshots/; run it on purpose"]
fn screenshots() -> anyhow::Result<()> {
    let b = Bosun::new("webui_screenshots");
    let written = b.output_with_stdin(
        &["note", "write", "plan.md"],
        "1. Fix the flaky test\n2. Write the docs\n",
    )?;
    assert!(written.status.success(), "{written:?}");
    let version = b.json(&["note", "show", "plan.md"])?["version"]
        .as_u64()
        .unwrap_or_default();
    let fake = FakeModel::start(
        "anthropic",
        &format!(
            concat!(
                r#"tool:everything/echo:{{"message":"hi"}};"#,
                r#"tool:bosun/memory_write:{{"path":"plan.md","text":"1. Fix the flaky test\n2. Make the retry back off\n3. Write the docs\n","base_version":{v}}};"#,
                "text:I asked to update the plan: it waits for your OK.;",
            ),
            v = version
        ),
    )?;
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&["chat", "send", &chat, "add the retry to the plan"])?;
    for title in [
        "Fix the flaky test",
        "Write the docs",
        "Make the retry back off",
    ] {
        b.ok(&["board", "card", "add", title])?;
    }
    // A run's file edit waiting for the person, shown as a diff side by side.
    let work = b.scratch().join("coder/work");
    std::fs::create_dir_all(&work)?;
    let notes = work.join("retry.rs");
    std::fs::write(
        &notes,
        "fn retry() {\n    for _ in 0..3 {\n        if fetch().is_ok() { return; }\n    }\n}\n",
    )?;
    let notes_s = notes.display().to_string();
    let coder = FakeModel::start(
        "anthropic",
        &format!(
            concat!(
                r#"tool:Read:{{"file_path":"{f}"}};"#,
                r#"tool:Edit:{{"file_path":"{f}","old_string":"    for _ in 0..3 {{\n        if fetch().is_ok() {{ return; }}\n    }}","new_string":"    for attempt in 0..5 {{\n        if fetch().is_ok() {{ return; }}\n        sleep(backoff(attempt));\n    }}"}};"#,
                "text:Done."
            ),
            f = notes_s
        ),
    )?;
    let coder_run = coder_run(&b, &coder, "make the retry back off")?;
    b.start(
        &["--name", "build"],
        &["sh", "-c", "echo compiling; sleep 120"],
    )?;
    let failed = b.start(
        &["--name", "tests"],
        &[
            "sh",
            "-c",
            "echo 'running 3 tests'; echo 'test a ... ok'; echo 'test b ... FAILED' >&2; exit 1",
        ],
    )?;
    b.wait_ended(&failed, Duration::from_secs(30))?;
    let script = concat!(
        "printf '\\033[1mCompiling\\033[0m bosun v0.1.0\\n'; ",
        "for i in $(seq 1 60); do printf '\\033[32m ok \\033[0m step %s of 60\\n' $i; done; ",
        "echo 'warning: unused import' >&2; echo done"
    );
    let run = b.start(&["--name", "demo"], &["sh", "-c", script])?;
    b.wait_ended(&run, Duration::from_secs(30))?;
    let ui = Ui::start(&b)?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    std::fs::create_dir_all(&dir)?;
    let dir = dir.display().to_string();
    drive(
        &ui,
        "screens",
        &[
            ("BOSUN_UI_RUN", &run),
            ("BOSUN_UI_AGENT_RUN", &coder_run),
            ("BOSUN_UI_CHAT", &chat),
            ("BOSUN_SHOTS", &dir),
        ],
    )?;
    finish(b)
}

/// A secret the browser tests type into password fields: it must reach the keychain, and
/// never a page, an answer, the store or a log.
const CANARY: &str = "canary-webui-7d1f0a";

/// The fake keychain's values that hold `secret`.
fn keychain_has(b: &Bosun, secret: &str) -> bool {
    keychain_values(b)
        .values()
        .any(|v| v.as_str().is_some_and(|s| s.contains(secret)))
}

#[test]
fn browser_adds_edits_renames_imports_and_removes_mcp_servers() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_mcp");
    // A Claude Code config in a home of the test's own, for the import.
    let home = b.scratch().join("home");
    let claude = home.join(".claude");
    std::fs::create_dir_all(&claude)?;
    std::fs::write(
        claude.join(".claude.json"),
        serde_json::json!({
            "mcpServers": {
                "imported": {"type": "stdio", "command": "/bin/echo", "args": ["hi"], "env": {"IMPORTED_KEY": CANARY}}
            }
        })
        .to_string(),
    )?;
    let b = b
        .with_env("HOME", &home.display().to_string())
        .with_env("CLAUDE_CONFIG_DIR", &claude.display().to_string());
    let ui = Ui::start(&b)?;
    let everything = everything_bin().display().to_string();
    let seen = drive(
        &ui,
        "mcp",
        &[
            ("BOSUN_UI_CANARY", CANARY),
            ("BOSUN_UI_EVERYTHING", &everything),
            ("BOSUN_UI_IMPORT", "imported"),
        ],
    )?;
    assert!(text(&seen["refused"]).contains("ev"), "{seen:#}");
    assert!(
        text(&seen["remote"]).contains("http://127.0.0.1:9/mcp"),
        "{seen:#}"
    );
    assert_eq!(seen["lines"], serde_json::json!(["TOKEN: set"]), "{seen:#}");
    assert!(seen["tools"].as_u64().unwrap_or(0) > 3, "{seen:#}");
    assert!(
        seen["params"]
            .as_array()
            .is_some_and(|p| p.contains(&serde_json::json!("message"))),
        "{seen:#}"
    );
    assert!(text(&seen["inspected"]).contains("Protocol"), "{seen:#}");
    // The capabilities server-everything advertised beyond tools and prompts waited, and one
    // was approved from the page.
    assert!(
        text(&seen["inspected"]).contains("Runs get")
            && text(&seen["inspected"]).contains("resources"),
        "{seen:#}"
    );
    assert!(
        seen["pendingCapabilities"]
            .as_array()
            .is_some_and(|p| p.contains(&serde_json::json!("resources"))
                && p.contains(&serde_json::json!("logging"))),
        "{seen:#}"
    );
    assert_eq!(
        text(&seen["approvedCapabilities"]),
        "tools, prompts, resources"
    );
    assert_eq!(
        seen["edited"],
        serde_json::json!(["OTHER: set"]),
        "{seen:#}"
    );
    assert!(text(&seen["renamed"]).contains("ev2"), "{seen:#}");
    assert!(
        text(&seen["candidate"]).contains("IMPORTED_KEY"),
        "{seen:#}"
    );
    assert!(
        text(&seen["said"]).contains("Imported imported"),
        "{seen:#}"
    );
    let servers: Vec<&str> = seen["servers"]
        .as_array()
        .context("no servers")?
        .iter()
        .map(text)
        .collect();
    assert!(
        servers.contains(&"ev2") && servers.contains(&"imported") && !servers.contains(&"remote-h"),
        "{seen:#}"
    );
    assert_eq!(seen["dialogs"], serde_json::json!([]));

    // What the daemon holds: the lines by name, the values in the keychain only.
    let ev2 = b.json(&["mcp", "show", "ev2"])?;
    assert_eq!(
        ev2["env"],
        serde_json::json!([{"name": "OTHER", "saved": true}])
    );
    // The gateway's rules set from the page, and the page saying them.
    assert_eq!(
        ev2["rules"],
        serde_json::json!({"trusted": true, "deny_tools": ["get-*", "trigger-*"], "deadline_ms": 30000, "max_result_chars": 8192, "capabilities": ["tools", "prompts", "resources"], "elicitation": "ask"}),
        "{seen:#}"
    );
    assert!(
        text(&seen["gateway"]["trust"]).starts_with("trusted")
            && text(&seen["gateway"]["deny"]) == "get-*, trigger-*"
            && text(&seen["gateway"]["elicitation"]).starts_with("ask: each waits in the Inbox"),
        "{seen:#}"
    );
    assert!(b.fails(&["mcp", "show", "remote-h"])?.contains("remote-h"));
    // A server of the older SSE transport has rules like any other, set from its page.
    assert_eq!(text(&seen["sseGateway"]), "danger-*", "{seen:#}");
    assert_eq!(
        b.json(&["mcp", "show", "remote-s"])?["rules"]["deny_tools"],
        serde_json::json!(["danger-*"])
    );
    assert_eq!(
        b.json(&["mcp", "show", "imported"])?["env"][0]["name"],
        "IMPORTED_KEY"
    );
    assert!(keychain_has(&b, CANARY), "{:?}", keychain_values(&b));
    b.assert_secret_nowhere(CANARY)?;
    finish(b)
}

#[test]
fn browser_signs_in_to_a_server_through_the_test_oauth_server() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_oauth");
    let oauth = OAuthServer::start(&[])?;
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "oauth", &[("BOSUN_UI_OAUTH_URL", &oauth.mcp_url())])?;
    assert!(
        text(&seen["said"]).contains("Signed in to remote: the sign-in is over."),
        "{seen:#}"
    );
    // The window is left on bosund's answer: the page says it is done.
    assert!(
        text(&seen["said"]).contains("is done: close it"),
        "{seen:#}"
    );
    assert_eq!(seen["popups"], 3, "{seen:#}");
    assert!(
        text(&seen["answered"]).contains("You can close this page"),
        "{seen:#}"
    );
    // The provider's page was opened by the browser itself, and sent it back to bosund; the
    // second time as a new client, registered after the service forgot the first.
    assert_eq!(oauth.requests_to("/authorize").len(), 2);
    assert_eq!(oauth.requests_to("/token").len(), 2);
    assert_eq!(oauth.requests_to("/register").len(), 2);
    assert!(
        text(&seen["renewed"]).contains("Signed in to remote: the sign-in is over."),
        "{seen:#}"
    );
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "not signed in", "{shown:#}");
    assert_eq!(oauth.requests_to("/revoke").len(), 2);
    // The third sign-in, cancelled while the provider's page was held: bosund's loopback
    // address no longer answers, nothing reached the provider, nothing was saved.
    assert!(
        text(&seen["cancelled"])
            .contains("Not signed in: the sign-in to `remote` was cancelled; nothing was saved."),
        "{seen:#}"
    );
    assert_eq!(seen["callbackClosed"], true, "{seen:#}");
    assert_eq!(seen["afterCancel"], "not signed in", "{seen:#}");
    assert_eq!(oauth.requests_to("/authorize").len(), 2);
    assert_eq!(oauth.requests_to("/token").len(), 2);
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn browser_offers_a_new_sign_in_when_the_server_moved_and_lists_its_tools_after_it()
-> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_resignin").with_test_browser();
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2"])?;
    oauth.add_to(&b)?;
    b.json(&["mcp", "sign-in", "remote"])?;
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "resignin", &[("BOSUN_UI_OAUTH_URL", &oauth.mcp_url())])?;
    assert!(text(&seen["asked"]).contains("sign in"), "{seen:#}");
    assert_eq!(
        text(&seen["issuer"]),
        format!("{}/t2", oauth.base()),
        "{seen:#}"
    );
    assert_eq!(
        oauth.requests_to("/t2/authorize").len(),
        1,
        "one sign-in there"
    );
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn browser_creates_and_edits_an_agent_and_a_refused_change_changes_nothing() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_agent");
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    let cwd = b.scratch().join("helper");
    std::fs::create_dir_all(&cwd)?;
    let ui = Ui::start(&b)?;
    let seen = drive(
        &ui,
        "agent",
        &[
            ("BOSUN_UI_CANARY", CANARY),
            ("BOSUN_UI_CWD", &cwd.display().to_string()),
        ],
    )?;
    assert!(text(&seen["secretShown"]).contains("set"), "{seen:#}");
    assert!(
        text(&seen["refused"]).contains("none of them changed")
            && text(&seen["refused"]).contains("approval.wait=0s"),
        "{seen:#}"
    );
    assert_eq!(seen["model"], "opus");
    assert_eq!(seen["maxOutput"], "64M", "{seen:#}");
    // Issue 25: the page's time cap is read by the one parser, with its bound.
    assert!(
        text(&seen["capRefused"]).contains("a time cap can be a week at most"),
        "{seen:#}"
    );
    assert_eq!(seen["timeCap"], "2h00m", "{seen:#}");
    // Created, its switches refused, then only the switches sent again.
    assert!(
        text(&seen["createdRefused"]).contains("coder2 was created")
            && text(&seen["createdRefused"]).contains("approval.wait=0s"),
        "{seen:#}"
    );
    assert_eq!(seen["hashAfterRefusal"], "#/agents/coder2", "{seen:#}");
    assert_eq!(
        seen["codexConfig"], r#"model_provider="ollama""#,
        "{seen:#}"
    );
    let c = b.json(&["agent", "show", "coder2"])?;
    assert_eq!(c["cli"], "codex", "{c:#}");
    assert_eq!(
        c["codex_config"],
        serde_json::json!([["model_provider", "\"ollama\""]]),
        "{c:#}"
    );
    assert_eq!(c["approvals"]["wait_ms"], 300_000, "{c:#}");

    let a = b.json(&["agent", "show", "helper"])?;
    assert_eq!(a["max_output"], 64 << 20, "{a:#}");
    assert_eq!(a["cli"], "claude");
    assert_eq!(a["model"], "opus");
    assert_eq!(a["instructions"], "Be brief.");
    assert_eq!(a["env"], serde_json::json!([["PLAIN", "1"]]));
    assert_eq!(
        a["secret_env"],
        serde_json::json!([{"name": "API_KEY", "saved": true}])
    );
    // The refused change left web search off; the right one set the wait.
    assert_eq!(a["switches"]["web_search"], false, "{a:#}");
    assert_eq!(a["approvals"]["wait_ms"], 600_000, "{a:#}");
    assert_eq!(a["approvals"]["mode"], "read-only", "{a:#}");
    assert!(
        a["approvals"]["verdicts"]
            .as_array()
            .is_some_and(|v| v.contains(&serde_json::json!(["Bash(git *)", "allow"]))),
        "{a:#}"
    );
    let server = a["switches"]["mcp"]
        .as_array()
        .and_then(|m| m.iter().find(|s| s["server"] == "everything"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(server["on"], true, "{a:#}");
    let echo = server["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "echo"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(echo["on"], false, "{a:#}");
    assert!(keychain_has(&b, CANARY));
    b.assert_secret_nowhere(CANARY)?;
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

/// A git repository on `main` with one commit, in the scratch folder.
fn repo(b: &Bosun, name: &str) -> anyhow::Result<String> {
    let dir = b.scratch().join(name);
    std::fs::create_dir_all(&dir)?;
    let git = |args: &[&str]| -> anyhow::Result<()> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()?;
        if !out.status.success() {
            bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    };
    git(&["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("README"), "hello\n")?;
    git(&["add", "."])?;
    git(&["commit", "-qm", "first"])?;
    Ok(dir.display().to_string())
}

#[test]
fn browser_manages_projects_edits_holds_and_starts_a_card_and_links_its_run() -> anyhow::Result<()>
{
    let b = Bosun::new("webui_browser_cards");
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
        "echo working",
    ])?;
    let card = b.json(&["board", "card", "add", "Docs"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (web, other) = (repo(&b, "web")?, repo(&b, "other")?);
    let ui = Ui::start(&b)?;
    let seen = drive(
        &ui,
        "cards",
        &[
            ("BOSUN_UI_CARD", &card),
            ("BOSUN_UI_REPO", &web),
            ("BOSUN_UI_REPO2", &other),
        ],
    )?;
    assert!(text(&seen["refused"]).contains("web"), "{seen:#}");
    assert_eq!(seen["projects"], serde_json::json!(["web"]), "{seen:#}");
    assert!(text(&seen["project"]).contains("acme/site"), "{seen:#}");
    let p = b.json(&["project", "show", "web"])?;
    assert_eq!(p["lead_may_merge"], true, "{p:#}");
    assert!(
        text(&seen["held"]).contains("waiting for the spec"),
        "{seen:#}"
    );
    assert!(text(&seen["cardCell"]).contains("Docs v2"), "{seen:#}");
    let c = b.json(&["board", "card", "show", &card])?;
    assert_eq!(c["title"], "Docs v2");
    assert_eq!(c["description"], "Write the docs");
    assert_eq!(c["project"], "web");
    assert_eq!(c["assignee"], "worker");
    assert_eq!(c["hold"], Value::Null);
    assert!(c["runs"].as_u64().unwrap_or(0) >= 1, "{c:#}");
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn browser_board_shows_each_cards_agent_project_branch_and_state_and_links_its_asks()
-> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_board");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo from-the-board"};text:All done."#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "approval.wait=10m"])?;
    let web = repo(&b, "web")?;
    b.ok(&["project", "add", "web", &web])?;
    let card = b.json(&[
        "board",
        "card",
        "add",
        "Docs",
        "--project",
        "web",
        "--assignee",
        "coder",
    ])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ui = Ui::start(&b)?;
    // Moved to the Auto column, the card's run starts and its Bash call waits for the person.
    b.ok(&["board", "card", "move", &card, "To do"])?;
    let seen = drive(&ui, "board", &[("BOSUN_UI_CARD", &card)])?;

    let shown = b.json(&["board", "card", "show", &card])?;
    let branch = shown["worktree"]["branch"].as_str().unwrap_or_default();
    assert!(!branch.is_empty(), "{shown:#}");
    let waiting = text(&seen["waiting"]);
    for part in [
        "Docs",
        "→ coder",
        "web",
        branch,
        "waiting for you",
        "1 call to answer",
    ] {
        assert!(waiting.contains(part), "{part}: {seen:#}");
    }
    assert_eq!(seen["hash"], format!("#/inbox/card/{card}"), "{seen:#}");
    assert!(
        text(&seen["asked"]).contains("echo from-the-board"),
        "{seen:#}"
    );
    // Approved, the card went on to its end, and the board said so as it happened.
    let after: Vec<&str> = seen["after"]
        .as_array()
        .context("no states")?
        .iter()
        .map(text)
        .collect();
    assert!(
        after.last().is_some_and(|s| s.contains("done")),
        "{after:?}"
    );
    assert!(!text(&seen["done"]).contains("waiting for you"), "{seen:#}");
    assert_eq!(
        b.json(&["board", "card", "show", &card])?["run_state"],
        "succeeded"
    );
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn browser_chat_streams_the_answer_sends_files_and_discards_the_leads_action_inline()
-> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_chat");
    let card = b.json(&["board", "card", "add", "Docs"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let file = b.scratch().join("spec.txt");
    std::fs::write(&file, "the spec\n")?;
    let written = b.output_with_stdin(&["note", "write", "plan.md"], "old plan\nkeep\n")?;
    assert!(written.status.success(), "{written:?}");
    let version = b.json(&["note", "show", "plan.md"])?["version"]
        .as_u64()
        .unwrap_or_default();
    let fake = FakeModel::start(
        "anthropic",
        &format!(
            concat!(
                r#"tool:bosun/attach_file:{{"path":"{file}","card":"{card}"}};"#,
                r#"tool:everything/echo:{{"message":"hi"}};"#,
                r#"tool:bosun/memory_write:{{"path":"plan.md","text":"keep\n<b>new</b> plan\n","base_version":{version}}};"#,
                "text:Asked.;",
                "text:Thanks."
            ),
            file = file.display(),
            card = card,
            version = version
        ),
    )?;
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ui = Ui::start(&b)?;
    let seen = drive(
        &ui,
        "chat",
        &[
            ("BOSUN_UI_CHAT", &chat),
            ("BOSUN_UI_FILE", &file.display().to_string()),
        ],
    )?;
    assert!(text(&seen["said"]).contains("2 files"), "{seen:#}");
    // The answer streamed live: its tool calls, their results, its text.
    let live = &seen["live"];
    let calls = live["calls"].to_string();
    for tool in ["attach_file", "echo", "memory_write"] {
        assert!(calls.contains(tool), "{seen:#}");
    }
    assert!(live["results"].to_string().contains("hi"), "{seen:#}");
    assert!(live["texts"].to_string().contains("Asked."), "{seen:#}");
    // The pending action inline, its preview side by side (markup as text), discarded there.
    assert!(text(&seen["shown"]).contains("memory_write"), "{seen:#}");
    assert_eq!(seen["before"], serde_json::json!(["old plan"]), "{seen:#}");
    assert_eq!(
        seen["after"],
        serde_json::json!(["<b>new</b> plan"]),
        "{seen:#}"
    );
    assert!(
        text(&seen["saidDiscarded"]).contains("discarded"),
        "{seen:#}"
    );
    assert!(text(&seen["history"]).contains("discarded"), "{seen:#}");
    assert_eq!(seen["waiting"], 0, "{seen:#}");
    // The file named by its path was attached by the lead; the picked one was kept for bosun.
    let copied = b.home.join("attachments").join(&card).join("spec.txt");
    assert_eq!(std::fs::read_to_string(&copied)?, "the spec\n");
    let uploads: Vec<String> = std::fs::read_dir(b.home.join("uploads"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("notes.txt")).ok())
        .collect();
    assert_eq!(uploads, vec!["picked in the browser\n".to_string()]);
    // Discarded: the note is as it was.
    assert_eq!(b.ok(&["note", "show", "plan.md"])?, "old plan\nkeep\n");
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

/// Sets a file's or a folder's modification time.
fn age(path: &Path, when: std::time::SystemTime) -> anyhow::Result<()> {
    std::fs::File::open(path)?.set_modified(when)?;
    Ok(())
}

#[test]
fn the_bridge_removes_uploads_older_than_a_day_unless_a_waiting_action_names_them()
-> anyhow::Result<()> {
    let b = Bosun::new("webui_upload_sweep");
    let card = b.json(&["board", "card", "add", "Docs"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let uploads = b.home.join("uploads");
    let mut files = Vec::new();
    for name in ["keep", "gone", "fresh"] {
        std::fs::create_dir_all(uploads.join(name))?;
        let file = uploads.join(name).join("picked.txt");
        std::fs::write(&file, name)?;
        files.push(file);
    }
    let keep = files[0].display().to_string();
    // The lead asks to attach the kept one after an outside tool: that waits for the person.
    let fake = FakeModel::start(
        "anthropic",
        &format!(
            concat!(
                r#"tool:everything/echo:{{"message":"hi"}};"#,
                r#"tool:bosun/attach_file:{{"path":"{keep}","card":"{card}"}};"#,
                "text:Asked."
            ),
            keep = keep,
            card = card
        ),
    )?;
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let out = b.ok(&["chat", "send", &chat, "attach it", "--file", &keep])?;
    assert!(out.contains("Waiting for your OK:"), "{out}");
    // Two days old: the kept one and the gone one; the fresh one stays as it is.
    let then = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    for name in ["keep", "gone"] {
        age(&uploads.join(name).join("picked.txt"), then)?;
        age(&uploads.join(name), then)?;
    }

    let _ui = Ui::start(&b)?;
    wait_for("the old upload removed", Duration::from_secs(30), || {
        Ok((!uploads.join("gone").exists()).then_some(()))
    })?;
    assert_eq!(
        std::fs::read_to_string(&files[0])?,
        "keep",
        "named by a waiting action"
    );
    assert_eq!(
        std::fs::read_to_string(&files[2])?,
        "fresh",
        "less than a day old"
    );
    finish(b)
}

#[test]
fn browser_chat_notifies_and_approves_all_the_leads_actions_inline() -> anyhow::Result<()> {
    let b = Bosun::new("webui_browser_approve_all");
    let fake = FakeModel::start(
        "anthropic",
        concat!(
            r#"tool:everything/echo:{"message":"hi"};"#,
            r#"tool:bosun/memory_write:{"path":"a.md","text":"first\n"};"#,
            r#"tool:bosun/memory_write:{"path":"b.md","text":"second\n"};"#,
            "text:Asked."
        ),
    )?;
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ui = Ui::start(&b)?;
    let seen = drive(&ui, "approveall", &[("BOSUN_UI_CHAT", &chat)])?;
    assert!(text(&seen["title"]).starts_with("(2)"), "{seen:#}");
    let notified = seen["notified"].as_array().cloned().unwrap_or_default();
    assert_eq!(notified.len(), 2, "{seen:#}");
    assert!(
        notified
            .iter()
            .all(|n| text(&n["title"]).contains("waiting for your OK")),
        "{seen:#}"
    );
    assert!(text(&seen["said"]).contains("Approved all"), "{seen:#}");
    for (note, body) in [("a.md", "first\n"), ("b.md", "second\n")] {
        wait_for("the approved note", Duration::from_secs(30), || {
            Ok(b.output(&["note", "show", note])?
                .status
                .success()
                .then_some(()))
        })?;
        assert_eq!(b.ok(&["note", "show", note])?, body);
    }
    assert_eq!(seen["dialogs"], serde_json::json!([]));
    finish(b)
}

#[test]
fn the_bridge_reaps_a_bosund_it_started_when_it_dies() -> anyhow::Result<()> {
    let b = Bosun::new("webui_reap");
    let ui = Ui::start(&b)?;
    let cookie = ui.sign_in()?;
    let csrf = ui.csrf(&cookie)?;
    b.ok(&["daemon", "stop"])?;
    // The bridge starts bosund again for its next request: bosund is then the bridge's child.
    let r = ui.call(&cookie, &csrf, r#"{"method":"daemon_status"}"#)?;
    assert_eq!(r.status, 200, "{}", r.body);
    let daemon = b.daemon_pid().context("no bosund")?;
    let parent = bosun_shared::process::stat(daemon).map(|s| s.ppid);
    assert_eq!(parent, Some(ui.pid), "the bridge started it");
    b.kill_daemon()?;
    // No defunct bosund stays under the bridge.
    wait_for(
        "the killed bosund to be reaped",
        Duration::from_secs(10),
        || {
            Ok(bosun_shared::process::stat(daemon)
                .is_none_or(|s| s.ppid != ui.pid)
                .then_some(()))
        },
    )?;
    finish(b)
}

/// Issue 48: waiting is a state. A Claude Code run whose command waits for the person: the app
/// opened with no page named goes to the Inbox, whose group is headed by the run's task and
/// agent; the Runs page shows the run "waiting for you", and the Agents page its agent; `bosun
/// show` says the task.
#[test]
fn browser_shows_a_run_whose_call_waits_as_waiting_everywhere() -> anyhow::Result<()> {
    let b = Bosun::new("webui_waiting");
    let fake = bosun_tests::FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo waited"};text:All done."#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    let run = b.run_agent("coder", "Tidy the release notes\nand then say done")?;
    let a = b.wait_approval()?;
    let shown = b.ok(&["show", &run])?;
    assert!(shown.contains("Tidy the release notes …"), "{shown}");
    let ui = Ui::start(&b)?;
    let seen = drive(
        &ui,
        "waiting",
        &[("BOSUN_UI_RUN", &run), ("BOSUN_UI_AGENT", "coder")],
    )?;
    assert_eq!(
        seen["heading"], "Tidy the release notes · coder",
        "{seen:#}"
    );
    assert_eq!(seen["runState"], "waiting for you (1 call)", "{seen:#}");
    assert_eq!(seen["agent"], "waiting for you (1 call)", "{seen:#}");
    b.ok(&["deny", &bosun_tests::short_id(&a)])?;
    b.wait_ended(&run, Duration::from_secs(90))?;
    finish(b)
}
