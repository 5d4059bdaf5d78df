//! The browser of a fenced run: the real `chrome-devtools-mcp` (pinned, through npx) with
//! Debian's Chromium, started by the runner's gateway in a network namespace of its own whose
//! only way out is its own proxy, with the run's `web.fetch` list. Told to open a host outside
//! the list, the browser is refused by that proxy (the host counts no connection, the page is
//! the proxy's refusal, the run's log names it); told to open the listed host, it loads it.
//!
//! Both hosts are on loopback (127.0.0.2 and 127.0.0.3), which Chromium would otherwise reach
//! without its proxy: the gateway starts the browser with the proxy named and loopback not
//! bypassed, so the proxy decides every address the browser opens. Without that, the host
//! outside the list is "refused to connect" inside the namespace with nothing in the log, and
//! the listed one does not load either. Without the short `TMPDIR` the gateway gives the
//! browser, Chromium does not start at all in a fenced run ("Socket path too long").
//!
//! The browser program is a two-line wrapper of `/usr/bin/chromium` that adds `--no-sandbox`
//! when the test runs as root, where Chromium refuses to start without it; it passes every
//! argument chrome-devtools-mcp gives, the proxy's among them.

use std::time::Duration;

use bosun_tests::{Bosun, CountingServer, FakeModel, wait_for};

const WAIT: Duration = Duration::from_secs(240);

/// The model's script: open `url`, then read the page.
fn open_and_read(url: &str) -> String {
    format!(
        r#"tool:chrome-devtools/navigate_page:{{"pageId":1,"type":"url","url":"{url}"}};tool:chrome-devtools/take_snapshot:{{"pageId":1}}"#
    )
}

#[test]
fn the_browser_is_refused_a_host_outside_the_list_and_loads_the_listed_one() -> anyhow::Result<()> {
    let b = Bosun::new("fence_browser");
    let outside = CountingServer::start("127.0.0.2")?;
    let listed = CountingServer::start("127.0.0.3")?;
    let outside_url = format!("http://127.0.0.2:{}/", outside.port);
    let listed_url = format!("http://127.0.0.3:{}/", listed.port);
    let script = format!(
        "{};{};text:done",
        open_and_read(&outside_url),
        open_and_read(&listed_url)
    );
    let fake = FakeModel::start("anthropic", &script)?;
    b.add_claude_agent("qa", fake.url(), &[])?;
    // Chromium will not start as root without `--no-sandbox` (see the module's doc).
    let browser = b.scratch().join("chromium");
    std::fs::write(
        &browser,
        "#!/bin/sh\n[ \"$(id -u)\" = 0 ] && set -- --no-sandbox \"$@\"\nexec /usr/bin/chromium \"$@\"\n",
    )?;
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    b.ok(&[
        "mcp",
        "edit",
        "chrome-devtools",
        "--browser",
        &browser.display().to_string(),
    ])?;
    b.ok(&[
        "agent",
        "set",
        "qa",
        "browser=on",
        "mcp.chrome-devtools.navigate_page=allow",
        "mcp.chrome-devtools.take_snapshot=allow",
        "approval.wait=10m",
        "web.fetch=127.0.0.3",
    ])?;

    let run = b.json(&["agent", "run", "qa", "open the two pages"])?;
    let run = run["id"].as_str().unwrap_or_default().to_string();
    // The browser's answers are outside content, so each call after the first asks the person
    // (the run's turn is escalated): the test approves them as the person would. What the
    // browser may reach is not asked: its proxy decides.
    let ended = wait_for("the run to end", WAIT, || {
        for ask in b.waiting_approvals()? {
            if ask["run"] == run.as_str()
                && let Some(id) = ask["id"].as_str()
            {
                b.ok(&["approve", id])?;
            }
        }
        let view = b.show(&run)?;
        Ok((view["state"] == "exited").then_some(view))
    })?;
    assert_eq!(ended["outcome"], "succeeded", "{ended:#}");
    let turns = fake.turns();
    let result = |n: usize| -> String {
        turns
            .get(n)
            .and_then(|t| t["tool_result"].as_str())
            .unwrap_or_default()
            .to_string()
    };

    // Outside the list: the proxy's refusal is the page, and nothing reached the host.
    let page = result(2);
    assert!(
        page.contains("bosun's fence refused 127.0.0.2"),
        "the page of the host outside the list: {page}\n(navigation: {})",
        result(1)
    );
    assert!(!page.contains("reached-ok!"), "{page}");
    assert_eq!(outside.count(), 0, "a host outside the list was reached");

    // The listed host loads, through the proxy.
    let page = result(4);
    assert!(
        page.contains("reached-ok!"),
        "the page of the listed host: {page}\n(navigation: {})",
        result(3)
    );
    assert!(listed.count() >= 1);

    // The browser's proxy put both in the run's log.
    let log = String::from_utf8_lossy(&b.output(&["logs", &run])?.stderr).into_owned();
    let outside_target = format!("127.0.0.2:{}", outside.port);
    assert!(
        log.contains(&format!(
            "bosun's proxy (server chrome-devtools): refused {outside_target}"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "bosun's proxy (server chrome-devtools): 127.0.0.3:{} (http)",
            listed.port
        )),
        "{log}"
    );
    b.finish()
}
