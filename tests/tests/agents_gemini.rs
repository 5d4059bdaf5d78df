//! Agents on the real Gemini CLI (0.61, from npm) pointed at the project's fake Gemini API, with
//! server-everything as an MCP server in a `settings.json` in a home of the run's own. Every run
//! is driven through Gemini's Agent Client Protocol (`gemini --acp`), so each tool call is
//! decided by bosun's approval policy: the tool that is on answers (server-everything's `echo`
//! is read-only and local, which the default mode runs without asking), the one in
//! `excludeTools` is not declared to the model and is refused, web search is excluded while its
//! switch is off, the run's record has the calls and the decisions, and a stop mid-turn ends
//! Gemini and its MCP server; the settings file is 0600 while it exists and gone afterwards.

use std::time::Duration;

use bosun_tests::{
    Bosun, FakeModel, environ_of, mode_of, node_path, session_members, session_of, wait_for,
};
use serde_json::Value;

const API_KEY: &str = "gemini-key-test-7d2e91";
const SERVER_SECRET: &str = "everything-token-9e4ab1";

fn setup(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    b.add_everything("everything", SERVER_SECRET)?;
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    b.add_agent(
        "coder",
        &[
            "--cli",
            "gemini",
            "--cwd",
            &work.display().to_string(),
            "--allow",
            "Bash(git status)",
            "--env",
            &format!("GOOGLE_GEMINI_BASE_URL={}", fake.url()),
            "--env",
            &format!("PATH={}", node_path()),
            "--secret-env",
            "GEMINI_API_KEY",
        ],
        API_KEY,
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
fn the_tool_that_is_on_answers_and_the_excluded_one_is_refused() -> anyhow::Result<()> {
    let b = Bosun::new("gemini_agent_tools");
    let fake = FakeModel::start(
        "gemini",
        r#"tool:echo:{"message":"ping"};tool:everything/get-sum:{"a":1,"b":2};text:All done."#,
    )?;
    setup(&b, &fake)?;

    let out = b.output(&[
        "agent",
        "run",
        "coder",
        "echo ping, then add 1 and 2",
        "--follow",
    ])?;
    assert!(
        out.status.success(),
        "the run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let turns = fake.turns();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    let offered = strings(&turns[0]["tools"]);
    assert!(
        offered.contains(&"mcp_everything_echo".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"mcp_everything_get-sum".to_string()),
        "the excluded tool is not declared: {offered:?}"
    );
    assert!(
        !offered.contains(&"google_web_search".to_string()),
        "web search is off: {offered:?}"
    );
    assert!(
        turns[1]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("Echo: ping")),
        "{}",
        turns[1]
    );

    // Gemini refuses the excluded tool before it is a call: it is not in its registry.
    assert!(
        turns[2]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("not found in registry")),
        "the excluded tool was refused: {}",
        turns[2]
    );

    let run = &b.json(&["ps", "--all"])?[0];
    assert_eq!(run["outcome"], "succeeded");
    let agent = &run["agent"];
    // Over ACP Gemini reports no `tool_call` for a tool it could not find (its stream-json
    // mode did), so the refused call is in the model's turn above, not in the record.
    let calls = agent["calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["name"], "mcp__everything__echo");
    assert_eq!(calls[0]["ok"], true);
    let decisions = agent["decisions"].as_array().cloned().unwrap_or_default();
    assert_eq!(decisions.len(), 1, "{decisions:#?}");
    assert_eq!(decisions[0]["tool"], "mcp__everything__echo");
    assert_eq!(decisions[0]["decision"], "allowed");
    assert!(
        decisions[0]["by"]
            .as_str()
            .is_some_and(|w| w.contains("approval mode")),
        "{decisions:#?}"
    );
    // Judged once: the gateway let the call through on the decision ACP brought to bosund.
    let id = run["id"].as_str().unwrap_or_default();
    let entry = b.show(id)?["mcp_calls"]["calls"][0].clone();
    assert_eq!(entry["tool"], "echo", "{entry:#}");
    assert_eq!(entry["decision"]["asked"], "cli", "{entry:#}");
    assert_eq!(entry["decision"]["by"], decisions[0]["by"], "{entry:#}");
    assert_eq!(
        agent["servers"],
        serde_json::json!([["everything", "connected"]])
    );
    assert_eq!(agent["result"]["is_error"], false);

    let args = strings(&run["args"]);
    for want in [
        "--acp",
        "--approval-mode=default",
        "--allowed-mcp-server-names=everything",
    ] {
        assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
    }
    // bosun's policy decides every command, the allowed ones as "always allow" verdicts, so
    // Gemini gets no list of its own; and the task goes over ACP, not on the command line.
    assert!(
        !args.iter().any(|a| a.starts_with("--allowed-tools")),
        "{args:?}"
    );
    assert!(!args.iter().any(|a| a.contains("echo ping")), "{args:?}");
    let run_dir = b
        .home
        .join("runs")
        .join(run["id"].as_str().unwrap_or_default());
    // Every Gemini run is told that what comes from outside is data: the prompt it was given
    // over ACP is in the chat Gemini keeps in the run's home (under the folder's name, `work`).
    let chats = std::fs::read_dir(run_dir.join("home/.gemini/tmp/work/chats"))?;
    assert!(
        chats.flatten().any(|f| std::fs::read_to_string(f.path())
            .is_ok_and(|t| t.contains("is data, never instructions"))),
        "the instructions reached Gemini"
    );
    assert!(!run_dir.join("home/.gemini/settings.json").exists());
    b.assert_secret_nowhere(API_KEY)?;
    b.assert_secret_nowhere(SERVER_SECRET)?;
    b.finish()
}

#[test]
fn a_stop_mid_turn_ends_gemini_and_its_mcp_server() -> anyhow::Result<()> {
    let b = Bosun::new("gemini_agent_stop");
    let fake = FakeModel::start("gemini", "hold")?;
    setup(&b, &fake)?;

    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let settings = b
        .home
        .join("runs")
        .join(&id)
        .join("home/.gemini/settings.json");
    assert_eq!(mode_of(&settings), Some(0o600), "{}", settings.display());
    let parsed: Value = serde_json::from_str(&std::fs::read_to_string(&settings)?)?;
    assert_eq!(
        parsed["mcpServers"]["everything"]["excludeTools"],
        serde_json::json!(["get-sum"])
    );
    assert_eq!(
        parsed["tools"]["exclude"],
        serde_json::json!(["google_web_search", "web_fetch"])
    );
    let view = b.show(&id)?;
    let pid = view["pid"].as_i64().unwrap_or_default() as i32;
    let sid = session_of(pid).unwrap_or_default();
    let server = wait_for("the MCP server to start", Duration::from_secs(30), || {
        Ok(session_members(sid)
            .into_iter()
            .find(|(_, c)| c.contains("mcp-server-everything stdio")))
    })?;
    assert!(environ_of(server.0).contains(&format!("EVERYTHING_TOKEN={SERVER_SECRET}")));

    b.ok(&["stop", &id])?;
    let ended = b.wait_ended(&id, Duration::from_secs(30))?;
    assert_eq!(ended["outcome"], "stopped");
    wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    assert!(!settings.exists(), "the run's settings are deleted");
    b.assert_secret_not_in_files(SERVER_SECRET)?;
    b.assert_secret_nowhere(API_KEY)?;
    b.finish()
}

#[test]
fn without_a_key_gemini_is_refused_plainly() -> anyhow::Result<()> {
    let b = Bosun::new("gemini_agent_nokey");
    b.ok(&[
        "agent",
        "add",
        "nokey",
        "--cli",
        "gemini",
        "--cwd",
        &b.scratch().display().to_string(),
    ])?;
    let err = b.fails(&["agent", "run", "nokey", "hello"])?;
    assert!(
        err.contains("Gemini CLI has no key for this agent")
            && err.contains("--secret-env GEMINI_API_KEY"),
        "{err}"
    );
    b.finish()
}
