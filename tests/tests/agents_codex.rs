//! Agents on the real Codex CLI (0.171, from npm) pointed at the project's fake Responses API
//! through a model provider of the agent's own, with server-everything as an MCP server given
//! by `-c mcp_servers.…`. Every run is driven through `codex app-server`, so each tool call is
//! decided by bosun's approval policy: the tool that is on answers (server-everything's `echo`
//! is read-only and local, which the default mode runs without asking), the one in
//! `disabled_tools` is not there, the run's record has the thread, the calls and the decisions,
//! and a stop mid-turn ends Codex and its MCP server (which sits in a process group of its own).

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, environ_of, node_path, session_members, session_of, wait_for};
use serde_json::Value;

const SERVER_SECRET: &str = "everything-token-c0d3x9";

fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    b.add_everything("everything", SERVER_SECRET)?;
    let scratch = b.scratch();
    for d in ["work", "home", "codex"] {
        std::fs::create_dir_all(scratch.join(d))?;
    }
    b.add_agent(
        "coder",
        &[
            "--cli",
            "codex",
            "--cwd",
            &scratch.join("work").display().to_string(),
            "--permission-mode",
            "read-only",
            "--allow",
            "Bash(git *)",
            "--env",
            &format!("HOME={}", scratch.join("home").display()),
            "--env",
            &format!("CODEX_HOME={}", scratch.join("codex").display()),
            "--env",
            &format!("PATH={}", node_path()),
            "--codex-config",
            r#"model_provider="mock""#,
            "--codex-config",
            r#"model_providers.mock.name="Mock""#,
            "--codex-config",
            &format!(r#"model_providers.mock.base_url="{}/v1""#, fake.url()),
            "--codex-config",
            r#"model_providers.mock.wire_api="responses""#,
        ],
        "",
    )?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "mcp.everything=on",
        "mcp.everything.get-sum=off",
    ])?;
    Ok(())
}

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
fn the_tool_that_is_on_answers_and_the_disabled_one_is_not_there() -> anyhow::Result<()> {
    let b = Bosun::new("codex_agent_tools");
    let fake = FakeModel::start(
        "openai",
        r#"call:exec_command:{"cmd":"ls"};tool:echo:{"message":"ping"};tool:get-sum:{"a":1,"b":2};text:All done."#,
    )?;
    setup(&b, &fake)?;

    let id = b
        .ok(&[
            "agent",
            "run",
            "coder",
            "list the folder, echo ping, then add 1 and 2",
        ])?
        .trim()
        .to_string();
    // Every command reaches bosun's policy, which asks before any (`ls` too). The person lets it
    // go once Codex reports the MCP server ready: Codex gives an optional server about 1 s to
    // start and then samples without its tools, and bosun's runner starts the turn without
    // waiting for the servers, so under load an MCP call in the first model turn finds no tool.
    let ask = wait_for("the command to ask", Duration::from_secs(60), || {
        Ok(b.json(&["inbox"])?
            .as_array()
            .and_then(|a| a.iter().find(|i| i["kind"] == "approval").cloned()))
    })?;
    assert_eq!(ask["tool"], "exec_command", "{ask:#}");
    b.wait_run(
        &id,
        "the MCP server to be ready",
        Duration::from_secs(60),
        |v| v["agent"]["servers"] == serde_json::json!([["everything", "connected"]]),
    )?;
    b.ok(&["approve", ask["short_id"].as_str().unwrap_or_default()])?;
    let ended = b.wait_ended(&id, Duration::from_secs(60))?;
    assert_eq!(ended["outcome"], "succeeded", "{ended:#}");
    // The allowed commands are no longer left out: under the app server every command reaches
    // bosun's policy, which holds them as "always allow" verdicts.
    let log = b.output(&["logs", &id])?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&log.stdout),
        String::from_utf8_lossy(&log.stderr)
    );
    assert!(
        !log.contains("Codex has no list of allowed commands"),
        "{log}"
    );

    // Judged once: the gateway let echo through on the decision Codex's app server brought to
    // bosund, without asking again.
    let entries = b.show(&id)?["mcp_calls"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let echo = entries
        .iter()
        .find(|e| e["tool"] == "echo")
        .cloned()
        .unwrap_or_default();
    assert_eq!(echo["decision"]["verdict"], "allowed", "{entries:#?}");
    assert_eq!(echo["decision"]["asked"], "cli", "{entries:#?}");
    let echoes = b
        .decisions(&id)?
        .into_iter()
        .filter(|d| d["tool"] == "mcp__everything__echo")
        .count();
    assert_eq!(echoes, 1, "one decision for the call");

    let turns = fake.turns();
    assert_eq!(turns.len(), 4, "{turns:#?}");
    assert!(
        turns[2]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("Echo: ping")),
        "the echo result came back: {}",
        turns[2]
    );
    assert!(
        turns[3]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("tools.mcp__everything__get_sum is not a function")),
        "the disabled tool is not there: {}",
        turns[3]
    );

    let run = &b.json(&["ps", "--all"])?[0];
    assert_eq!(run["outcome"], "succeeded");
    let agent = &run["agent"];
    assert!(
        agent["session"].as_str().is_some_and(|s| !s.is_empty()),
        "thread.started: {agent}"
    );
    let calls = agent["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        calls.len(),
        2,
        "only the calls that reached a tool: {calls:#?}"
    );
    assert_eq!(calls[0]["name"], "exec_command");
    assert_eq!(calls[0]["ok"], true);
    assert_eq!(calls[1]["name"], "mcp__everything__echo");
    assert_eq!(calls[1]["ok"], true);
    assert_eq!(
        agent["servers"],
        serde_json::json!([["everything", "connected"]])
    );
    assert_eq!(agent["result"]["reason"], "completed");
    // Each call was decided by bosun's policy before it ran (echo through Codex's MCP
    // elicitation); the disabled tool never reached Codex's MCP client, so nothing asked.
    let decisions = agent["decisions"].as_array().cloned().unwrap_or_default();
    assert_eq!(decisions.len(), 2, "{decisions:#?}");
    assert_eq!(decisions[0]["tool"], "exec_command");
    assert_eq!(decisions[0]["by"], "the person");
    assert_eq!(decisions[1]["tool"], "mcp__everything__echo");
    assert_eq!(decisions[1]["decision"], "allowed");
    assert!(
        decisions[1]["by"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{decisions:#?}"
    );

    // `codex app-server`, which has no `--ignore-user-config` (the agent's own CODEX_HOME keeps
    // the person's config out here) and takes the task over its protocol, not as an argument.
    let args = strings(&run["args"]);
    assert_eq!(
        args.first().map(String::as_str),
        Some("app-server"),
        "{args:#?}"
    );
    for want in [
        r#"mcp_servers.everything.disabled_tools=["get-sum"]"#,
        r#"mcp_servers.everything.args=["gateway","--socket","#,
        // Without it Codex would run MCP calls without asking bosun.
        r#"mcp_servers.everything.default_tools_approval_mode="prompt""#,
        r#"web_search="disabled""#,
    ] {
        assert!(
            args.iter().any(|a| a.starts_with(want)),
            "{want} in {args:#?}"
        );
    }
    assert!(
        !args.iter().any(|a| a.contains("list the folder")),
        "the prompt is not on the command line: {args:#?}"
    );
    assert!(
        !args
            .iter()
            .any(|a| a.contains(SERVER_SECRET) || a.contains("env_vars")),
        "no secret on Codex's command line, nor one handed to it by name: {args:#?}"
    );
    assert!(
        args.iter()
            .any(|a| a.starts_with("mcp_servers.everything.command=")
                && a.contains("${BOSUN_RUNNER_EXE}")),
        "Codex is given bosun's gateway, not the server: {args:#?}"
    );
    let shown = b.json(&["agent", "show", "coder"])?;
    assert_eq!(
        strings(&shown["last_run"]["tools_seen"]),
        vec!["exec_command", "mcp__everything__echo"]
    );
    b.assert_secret_nowhere(SERVER_SECRET)?;
    b.finish()
}

#[test]
fn a_stop_mid_turn_ends_codex_and_its_mcp_server() -> anyhow::Result<()> {
    let b = Bosun::new("codex_agent_stop");
    let fake = FakeModel::start("openai", "hold")?;
    setup(&b, &fake)?;

    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let view = b.show(&id)?;
    let pid = view["pid"].as_i64().unwrap_or_default() as i32;
    let sid = session_of(pid).unwrap_or_default();
    // The server is started at once by the run's gateway, in Codex's process group (so the
    // stop ladder ends it with Codex), with its value, which Codex never holds.
    let server = wait_for("the MCP server to start", Duration::from_secs(30), || {
        Ok(session_members(sid)
            .into_iter()
            .find(|(_, c)| c.contains("mcp-server-everything stdio")))
    })?;
    let pgid = bosun_shared::process::stat(server.0).map(|s| s.pgid);
    assert_eq!(
        pgid,
        Some(pid),
        "the gateway starts the server in the CLI's group"
    );
    assert!(
        environ_of(server.0).contains(&format!("EVERYTHING_TOKEN={SERVER_SECRET}")),
        "the server got its value from the runner"
    );
    assert!(
        !environ_of(pid).iter().any(|l| l.contains(SERVER_SECRET)),
        "Codex's environment holds no secret of the server"
    );
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(SERVER_SECRET),
        "no secret on the command line"
    );

    b.ok(&["stop", &id])?;
    let ended = b.wait_ended(&id, Duration::from_secs(30))?;
    assert_eq!(ended["outcome"], "stopped");
    wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    b.assert_secret_not_in_files(SERVER_SECRET)?;
    b.finish()
}
