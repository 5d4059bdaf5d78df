//! The browser: the built-in `chrome-devtools` server, with Debian's chromium and the pinned
//! `chrome-devtools-mcp` from npm. List tools works; the command line a run gets is the pinned,
//! hidden, private one; forbidden options are refused wherever a command line starts
//! chrome-devtools-mcp; only the version and the browser program change; what is missing is
//! said plainly.

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, node_bin, node_path, session_members, session_of, wait_for};
use serde_json::Value;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_built_in_browser_lists_its_tools_with_chromium() -> anyhow::Result<()> {
    let b = Bosun::new("browser_tools");
    let shown = b.json(&["mcp", "show", "chrome-devtools"])?;
    assert_eq!(shown["builtin"], true);
    assert_eq!(shown["browser"]["version"], "1.10.1");
    assert_eq!(
        shown["browser"]["program_found"], "/usr/bin/chromium",
        "{shown:#}"
    );
    assert!(
        shown["browser"]["node"]
            .as_str()
            .is_some_and(|v| v.starts_with('v'))
    );
    assert_eq!(shown["browser"]["missing"], serde_json::json!([]));
    assert_eq!(
        strings(&shown["args"]),
        [
            "-y",
            "chrome-devtools-mcp@1.10.1",
            "--headless",
            "--isolated",
            "--no-usage-statistics",
            "--no-performance-crux",
            "--executablePath=/usr/bin/chromium"
        ]
    );

    let listing = b.json(&["mcp", "tools", "chrome-devtools"])?;
    let names: Vec<String> = listing["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for want in ["navigate_page", "take_screenshot", "list_pages", "click"] {
        assert!(names.contains(&want.to_string()), "{want} in {names:?}");
    }
    // Listed, so each of its tools has a switch per agent.
    b.ok(&[
        "agent",
        "add",
        "qa",
        "--cli",
        "claude",
        "--cwd",
        &b.scratch().display().to_string(),
    ])?;
    let shown = b.json(&[
        "agent",
        "set",
        "qa",
        "browser=on",
        "mcp.chrome-devtools.evaluate_script=off",
    ])?;
    assert_eq!(shown["switches"]["browser"], true);
    let browser = &shown["switches"]["mcp"][0];
    assert_eq!(
        browser["server"], "chrome-devtools",
        "the browser comes first"
    );
    let evaluate = browser["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "evaluate_script"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(evaluate["on"], false);
    b.finish()
}

#[test]
fn a_run_gets_the_pinned_hidden_command_line_and_ends_it() -> anyhow::Result<()> {
    let b = Bosun::new("browser_run");
    let fake = FakeModel::start("anthropic", "hold")?;
    let scratch = b.scratch();
    for d in ["home", "claude"] {
        std::fs::create_dir_all(scratch.join(d))?;
    }
    b.add_agent(
        "qa",
        &[
            "--cli",
            "claude",
            "--cwd",
            &scratch.display().to_string(),
            "--allow",
            "Bash(npx:*)",
            "--env",
            &format!("ANTHROPIC_BASE_URL={}", fake.url()),
            "--env",
            &format!("HOME={}", scratch.join("home").display()),
            "--env",
            &format!("CLAUDE_CONFIG_DIR={}", scratch.join("claude").display()),
            "--env",
            &format!("PATH={}", node_path()),
            "--secret-env",
            "ANTHROPIC_API_KEY",
        ],
        "sk-ant-browser-test",
    )?;
    let out = b.output(&[
        "agent",
        "set",
        "qa",
        "browser=on",
        "browser.insecure-certs=on",
    ])?;
    assert!(out.status.success());
    // The form warns: the browser is on while npx is allowed.
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Bash(npx:*) is allowed while an outside source"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let run = b.json(&["agent", "run", "qa", "open the test page"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(120))?;
    // The CLI is given bosun's gateway; the runner starts the browser's server with the pinned
    // command line.
    let config: Value = serde_json::from_str(&std::fs::read_to_string(
        b.home.join("runs").join(&id).join("mcp.json"),
    )?)?;
    let given = &config["mcpServers"]["chrome-devtools"];
    assert!(
        given["command"]
            .as_str()
            .is_some_and(|c| c.ends_with("bosun-runner")),
        "{given}"
    );
    let pid = b.show(&id)?["pid"].as_i64().unwrap_or_default() as i32;
    let sid = session_of(pid).unwrap_or_default();
    let server = wait_for(
        "the browser's server to start",
        Duration::from_secs(60),
        || {
            Ok(session_members(sid)
                .into_iter()
                .find(|(_, c)| c.contains("chrome-devtools-mcp@1.10.1")))
        },
    )?;
    assert!(
        server.1.contains(
            "chrome-devtools-mcp@1.10.1 --headless --isolated --no-usage-statistics --no-performance-crux --executablePath=/usr/bin/chromium --acceptInsecureCerts"
        ),
        "{}",
        server.1
    );
    let env = bosun_tests::environ_of(server.0);
    for line in [
        "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1",
        "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS=1",
    ] {
        assert!(env.iter().any(|l| l == line), "{line} in {env:?}");
    }
    let view = b.show(&id)?;
    assert!(
        strings(&view["args"])
            .iter()
            .any(|a| a.starts_with("--allowedTools=") && a.contains("mcp__chrome-devtools")),
        "{view:#}"
    );
    assert!(
        !strings(&view["args"]).iter().any(|a| a == "--chrome"),
        "never Claude in Chrome"
    );
    assert_eq!(
        view["agent"]["servers"],
        serde_json::json!([["chrome-devtools", "connected"]])
    );
    let sid = session_of(view["pid"].as_i64().unwrap_or_default() as i32).unwrap_or_default();
    assert!(
        session_members(sid)
            .iter()
            .any(|(_, c)| c.contains("chrome-devtools-mcp")),
        "the server runs in the run's session"
    );

    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    b.finish()
}

#[test]
fn forbidden_options_and_other_changes_are_refused() -> anyhow::Result<()> {
    let b = Bosun::new("browser_refusals");
    for bad in [
        "--browserUrl=http://127.0.0.1:9222",
        "--wsEndpoint=ws://127.0.0.1:9222/devtools/browser/x",
        "--autoConnect",
        "--userDataDir=/root/.config/chromium",
        "--channel=beta",
        "--chromeArg=--remote-debugging-port=9222",
        "--no-headless",
    ] {
        let err = b.fails(&[
            "mcp",
            "add",
            "cdt",
            "--",
            "npx",
            "-y",
            "chrome-devtools-mcp@1.10.1",
            bad,
        ])?;
        assert!(
            err.contains("is not allowed for chrome-devtools-mcp"),
            "{bad}: {err}"
        );
    }
    // A server of one's own that starts it the safe way is fine; changing it to a forbidden
    // command line is refused and changes nothing.
    b.ok(&[
        "mcp",
        "add",
        "cdt",
        "--",
        "npx",
        "-y",
        "chrome-devtools-mcp@1.10.1",
        "--headless",
    ])?;
    let err = b.fails(&[
        "mcp",
        "edit",
        "cdt",
        "--",
        "npx",
        "chrome-devtools-mcp",
        "-u",
        "http://127.0.0.1:9222",
    ])?;
    assert!(err.contains("is not allowed"), "{err}");
    assert_eq!(
        strings(&b.json(&["mcp", "show", "cdt"])?["args"]),
        ["-y", "chrome-devtools-mcp@1.10.1", "--headless"]
    );

    // The built-in one changes only its version and program.
    let err = b.fails(&["mcp", "edit", "chrome-devtools", "--version", "latest"])?;
    assert!(err.contains("never latest"), "{err}");
    let brave = b.scratch().join("brave-browser");
    std::fs::write(&brave, "#!/bin/sh\n")?;
    let err = b.fails(&[
        "mcp",
        "edit",
        "chrome-devtools",
        "--browser",
        &brave.display().to_string(),
    ])?;
    assert!(err.contains("is Brave"), "{err}");
    let err = b.fails(&[
        "mcp",
        "edit",
        "chrome-devtools",
        "--",
        "npx",
        "something-else",
    ])?;
    assert!(err.contains("is built in"), "{err}");
    let err = b.fails(&["mcp", "remove", "chrome-devtools"])?;
    assert!(err.contains("is built in and cannot be removed"), "{err}");
    let shown = b.json(&["mcp", "edit", "chrome-devtools", "--version", "1.10.2"])?;
    assert_eq!(shown["browser"]["version"], "1.10.2");
    assert!(strings(&shown["args"]).contains(&"chrome-devtools-mcp@1.10.2".to_string()));
    b.finish()
}

#[test]
fn a_browser_that_cannot_start_is_left_out_and_the_run_says_why() -> anyhow::Result<()> {
    let b = Bosun::new("browser_no_node");
    let fake = FakeModel::start("anthropic", "text:Nothing to do.")?;
    let scratch = b.scratch();
    for d in ["home", "claude"] {
        std::fs::create_dir_all(scratch.join(d))?;
    }
    // Only the CLIs' own folder on PATH: Claude Code runs (it is a native program), Node does
    // not.
    let only_clis = node_bin("claude")
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    b.add_agent(
        "qa",
        &[
            "--cli",
            "claude",
            "--cwd",
            &scratch.display().to_string(),
            "--env",
            &format!("ANTHROPIC_BASE_URL={}", fake.url()),
            "--env",
            &format!("HOME={}", scratch.join("home").display()),
            "--env",
            &format!("CLAUDE_CONFIG_DIR={}", scratch.join("claude").display()),
            "--env",
            &format!("PATH={only_clis}"),
            "--secret-env",
            "ANTHROPIC_API_KEY",
        ],
        "sk-ant-browser-test",
    )?;
    b.ok(&["agent", "set", "qa", "browser=on"])?;
    let out = b.output(&["agent", "run", "qa", "hello", "--follow"])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("bosun: Left out chrome-devtools: the browser cannot start: Node.js was not found on the PATH"),
        "{stderr}"
    );
    assert!(stderr.contains("install Node 20.19 or newer"), "{stderr}");
    b.finish()
}
