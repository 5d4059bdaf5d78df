//! Agents on the real Claude Code (2.1.332, from npm) pointed at the project's fake Anthropic
//! API, with `@modelcontextprotocol/server-everything` as an MCP server: the tool that is on is
//! called and answers, the one that is off is not offered and is refused, the init line and the
//! calls are in the run's record, a stop mid-turn ends Claude Code and its MCP server, and the
//! per-run MCP config is 0600 while it exists and gone afterwards.

use std::path::Path;
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, mode_of, node_bin, session_members, session_of, wait_for};
use serde_json::Value;

const API_KEY: &str = "sk-ant-test-4f9c2a7e1b";
const SERVER_SECRET: &str = "everything-token-83b1d6";

/// A Claude agent pointed at the fake API, with server-everything on but for get-sum.
fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    b.add_everything("everything", SERVER_SECRET)?;
    let scratch = b.scratch();
    for d in ["work", "home", "claude"] {
        std::fs::create_dir_all(scratch.join(d))?;
    }
    let path = format!(
        "{}:{}",
        node_bin("claude")
            .parent()
            .map(Path::display)
            .map(|d| d.to_string())
            .unwrap_or_default(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = b.output_with_stdin(
        &[
            "agent",
            "add",
            "coder",
            "--cli",
            "claude",
            "--cwd",
            &scratch.join("work").display().to_string(),
            "--instructions",
            "You fix things.",
            "--env",
            &format!("ANTHROPIC_BASE_URL={}", fake.url()),
            "--env",
            &format!("HOME={}", scratch.join("home").display()),
            "--env",
            &format!("CLAUDE_CONFIG_DIR={}", scratch.join("claude").display()),
            "--env",
            &format!("PATH={path}"),
            "--secret-env",
            "ANTHROPIC_API_KEY",
        ],
        API_KEY,
    )?;
    anyhow::ensure!(
        out.status.success(),
        "agent add failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    b.ok(&[
        "agent",
        "set",
        "coder",
        "mcp.everything=on",
        "mcp.everything.get-sum=off",
    ])?;
    Ok(())
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_tool_that_is_on_answers_and_the_one_that_is_off_is_refused() -> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_tools");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:echo:{"message":"ping"};tool:get-sum:{"a":1,"b":2};text:All done."#,
    )?;
    setup(&b, &fake)?;

    let out = b.output(&[
        "agent",
        "run",
        "coder",
        "echo ping, then add 1 and 2",
        "--follow",
    ])?;
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the run failed: {log}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What the model was offered, and what came back.
    let turns = fake.turns();
    assert_eq!(turns.len(), 3, "three turns: {turns:#?}");
    let offered = names(&turns[0]["tools"]);
    assert!(
        offered.contains(&"mcp__everything__echo".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"mcp__everything__get-sum".to_string()),
        "the tool that is off is not offered: {offered:?}"
    );
    assert!(
        turns[1]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("Echo: ping")),
        "the echo result came back: {}",
        turns[1]
    );
    assert!(
        turns[2]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("No such tool available: mcp__everything__get-sum")),
        "the call of the tool that is off was refused: {}",
        turns[2]
    );

    // The run's record: the init line and the calls.
    let runs = b.json(&["ps", "--all"])?;
    let run = &runs[0];
    assert_eq!(run["outcome"], "succeeded");
    let agent = &run["agent"];
    assert_eq!(agent["agent_name"], "coder");
    assert_eq!(
        agent["servers"],
        serde_json::json!([["everything", "connected"]])
    );
    let tools = names(&agent["tools"]);
    assert!(
        tools.contains(&"mcp__everything__echo".to_string()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"mcp__everything__get-sum".to_string()),
        "{tools:?}"
    );
    let calls = agent["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["name"], "mcp__everything__echo");
    assert_eq!(calls[0]["ok"], true);
    assert_eq!(calls[1]["name"], "mcp__everything__get-sum");
    assert_eq!(calls[1]["ok"], false);
    assert_eq!(agent["result"]["is_error"], false);
    assert_eq!(agent["result"]["reason"], "completed");

    // The command line was the spec's, the config file is gone.
    let args = names(&run["args"]);
    assert_eq!(args[0], "-p");
    assert!(args.contains(&"--strict-mcp-config".to_string()));
    assert!(args.contains(&"--setting-sources=user".to_string()));
    assert!(args.contains(&r#"--settings={"disableAllHooks":true}"#.to_string()));
    assert!(args.contains(&"--disable-slash-commands".to_string()));
    assert!(
        args.iter()
            .any(|a| a.starts_with("--disallowedTools=") && a.contains("mcp__everything__get-sum")),
        "{args:?}"
    );
    let run_dir = b
        .home
        .join("runs")
        .join(run["id"].as_str().unwrap_or_default());
    assert!(
        !run_dir.join("mcp.json").exists(),
        "the per-run config is deleted"
    );

    // The agent keeps what its last run found.
    let shown = b.json(&["agent", "show", "coder"])?;
    assert_eq!(
        shown["last_run"]["servers"],
        serde_json::json!([["everything", "connected"]])
    );
    let everything = shown["switches"]["mcp"]
        .as_array()
        .and_then(|m| m.iter().find(|s| s["server"] == "everything"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(everything["last_run_state"], "connected");
    let tool = |n: &str| {
        everything["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == n))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(tool("echo")["on"], true);
    assert_eq!(tool("echo")["seen_in_last_run"], true);
    assert_eq!(tool("get-sum")["on"], false);
    assert_eq!(tool("get-sum")["seen_in_last_run"], false);

    b.assert_secret_nowhere(API_KEY)?;
    b.assert_secret_nowhere(SERVER_SECRET)?;
    b.finish()
}

#[test]
fn a_stop_mid_turn_ends_claude_code_and_its_mcp_server() -> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_stop");
    let fake = FakeModel::start("anthropic", "hold")?;
    setup(&b, &fake)?;

    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let view = b.show(&id)?;
    assert_eq!(view["state"], "running");
    // While the run lives: its MCP config is there, 0600, and names bosun's gateway, never
    // the server itself nor its secret.
    let config = b.home.join("runs").join(&id).join("mcp.json");
    assert_eq!(mode_of(&config), Some(0o600), "{}", config.display());
    let text = std::fs::read_to_string(&config)?;
    assert!(
        !text.contains(SERVER_SECRET) && !text.contains("mcp-server-everything"),
        "the CLI's config holds neither the server nor its secret: {text}"
    );
    assert!(
        text.contains("bosun-runner") && text.contains("gateway.sock"),
        "the CLI is given bosun's gateway: {text}"
    );
    let pid = view["pid"].as_i64().unwrap_or_default() as i32;
    let environ = |p: i32| std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&environ(pid)).contains(SERVER_SECRET),
        "the CLI's environment holds no secret of the server"
    );
    let sid = session_of(pid).unwrap_or_default();
    let members = session_members(sid);
    let server = members
        .iter()
        .find(|(_, c)| c.contains("mcp-server-everything"))
        .map(|(p, _)| *p);
    assert!(
        server.is_some(),
        "the MCP server runs in the run's session: {members:#?}"
    );
    // The server has its line, and a minimal environment besides.
    let server_env = String::from_utf8_lossy(&environ(server.unwrap_or_default())).into_owned();
    assert!(
        server_env.contains(&format!("EVERYTHING_TOKEN={SERVER_SECRET}")),
        "the server gets its secret from the runner"
    );
    assert!(
        !server_env.contains("ANTHROPIC_BASE_URL") && !server_env.contains("CLAUDE_CONFIG_DIR"),
        "the server gets a minimal environment, not the CLI's: {server_env:?}"
    );

    b.ok(&["stop", &id])?;
    let ended = b.wait_ended(&id, Duration::from_secs(30))?;
    assert_eq!(ended["outcome"], "stopped");
    // Claude Code's clean answer to SIGINT is in the record, and does not make it a failure.
    assert_eq!(ended["agent"]["result"]["is_error"], true);
    assert_eq!(ended["agent"]["result"]["reason"], "aborted_streaming");
    wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    assert!(!config.exists(), "the per-run config is deleted");
    b.assert_secret_not_in_files(SERVER_SECRET)?;
    b.assert_secret_nowhere(API_KEY)?;
    b.finish()
}

#[test]
fn a_server_that_cannot_be_used_is_left_out_and_the_log_says_why() -> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_left_out");
    let fake = FakeModel::start("anthropic", "text:Nothing to do.")?;
    setup(&b, &fake)?;
    // The server's value goes missing from the keychain.
    let keychain = b.keychain_file();
    let mut entries: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&keychain)?)?;
    entries.retain(|k, _| !k.contains("/env/EVERYTHING_TOKEN"));
    std::fs::write(&keychain, serde_json::to_string(&entries)?)?;
    // And a server that is given to the run but cannot start.
    b.ok(&["mcp", "add", "broken", "--", "/bin/false"])?;
    b.ok(&["agent", "set", "coder", "mcp.broken=on"])?;

    let out = b.output(&["agent", "run", "coder", "hello", "--follow"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "bosun: Left out everything: a value is missing from the keychain (EVERYTHING_TOKEN). Set it with `bosun mcp edit everything`."
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("bosun: MCP server broken failed to connect in this run"),
        "{stderr}"
    );
    let run = &b.json(&["ps", "--all"])?[0];
    assert_eq!(
        run["agent"]["servers"],
        serde_json::json!([
            ["broken", "failed"],
            [
                "everything",
                "left out: a value is missing from the keychain (EVERYTHING_TOKEN)"
            ]
        ])
    );
    let shown = b.ok(&["show", run["id"].as_str().unwrap_or_default()])?;
    assert!(shown.contains("mcp server    broken: failed"), "{shown}");
    assert!(
        !names(&run["agent"]["tools"])
            .iter()
            .any(|t| t.starts_with("mcp__everything")),
        "the run had none of its tools"
    );
    // The note is part of the log, before the program's output.
    let json_log = b.ok(&["logs", run["id"].as_str().unwrap_or_default(), "--json"])?;
    let first: Value = serde_json::from_str(json_log.lines().next().unwrap_or_default())?;
    assert_eq!(first["stream"], "note");
    b.finish()
}

#[test]
fn not_signed_in_is_said_plainly_before_any_run() -> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_login");
    let scratch = b.scratch();
    for d in ["home", "claude"] {
        std::fs::create_dir_all(scratch.join(d))?;
    }
    let claude_dir = node_bin("claude")
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    b.ok(&[
        "agent",
        "add",
        "nokey",
        "--cli",
        "claude",
        "--cwd",
        &scratch.display().to_string(),
        "--env",
        &format!("HOME={}", scratch.join("home").display()),
        "--env",
        &format!("CLAUDE_CONFIG_DIR={}", scratch.join("claude").display()),
        "--env",
        &format!("PATH={claude_dir}:/usr/bin:/bin"),
    ])?;
    let err = b.fails(&["agent", "run", "nokey", "hello"])?;
    assert!(
        err.contains("Claude Code is not signed in for this agent (`claude auth status` says so)"),
        "{err}"
    );
    assert!(err.contains("--secret-env ANTHROPIC_API_KEY"), "{err}");
    assert_eq!(
        b.json(&["ps", "--all"])?,
        serde_json::json!([]),
        "no run was made"
    );
    b.finish()
}

#[test]
fn claude_code_is_asked_for_its_tools_without_a_key() -> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_ask");
    let claude_dir = node_bin("claude")
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    b.ok(&[
        "agent",
        "add",
        "asker",
        "--cli",
        "claude",
        "--cwd",
        &b.scratch().display().to_string(),
        "--env",
        &format!("PATH={claude_dir}:/usr/bin:/bin"),
        "--allow",
        "Bash(git *)",
    ])?;
    let before = b.json(&["agent", "tools", "asker"])?;
    assert!(
        before["source"]
            .as_str()
            .unwrap_or_default()
            .starts_with("From bosun's catalog"),
        "{before}"
    );
    let asked = b.json(&["agent", "tools", "asker", "--ask"])?;
    let tools = asked["tools"].as_array().cloned().unwrap_or_default();
    let get = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(get("Read")["seen_in_last_run"], true, "{asked:#}");
    assert_eq!(get("Read")["state"], "always on");
    assert_eq!(get("Bash")["seen_in_last_run"], true);
    assert!(
        get("Bash")["state"]
            .as_str()
            .unwrap_or_default()
            .contains("Bash(git *)"),
        "{}",
        get("Bash")
    );
    assert_eq!(get("Skill")["seen_in_last_run"], false, "skills are off");
    // What Claude Code reported is kept on the agent.
    let shown = b.json(&["agent", "show", "asker"])?;
    assert!(names(&shown["last_run"]["tools_seen"]).contains(&"Read".to_string()));
    b.finish()
}

#[test]
fn after_a_crash_of_daemon_and_runner_the_runs_secret_file_and_processes_are_gone()
-> anyhow::Result<()> {
    let b = Bosun::new("claude_agent_crash");
    let fake = FakeModel::start("anthropic", "hold")?;
    setup(&b, &fake)?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let config = b.home.join("runs").join(&id).join("mcp.json");
    assert!(config.exists());
    let pid = b.show(&id)?["pid"].as_i64().unwrap_or_default() as i32;
    let sid = session_of(pid).unwrap_or_default();

    // Both bosun processes die at once: nobody deletes the file or ends the run.
    b.kill_daemon()?;
    // (The CLI's ends of the gateway, `bosun-runner gateway …`, may exit on their own as the
    // runner dies: a process already gone is fine.)
    for (p, cmd) in b.processes() {
        if cmd.contains("bosun-runner") {
            match nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            ) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    // The next daemon finds the run lost, ends what it left, and deletes its secret file.
    let ended = b.wait_ended(&id, Duration::from_secs(60))?;
    assert_eq!(ended["outcome"], "lost");
    assert!(!config.exists(), "the secret file is swept");
    wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    b.assert_secret_not_in_files(SERVER_SECRET)?;
    b.finish()
}
