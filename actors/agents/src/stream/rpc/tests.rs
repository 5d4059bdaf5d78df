//! The control protocols' streams, fed from the transcripts the runner's contract tests replay
//! (Codex 0.171.0, Gemini CLI 0.61.0): only the lines the CLI wrote, as the run's stdout has
//! them.

use bosun_shared::agents::CliKind;

use super::super::StreamParser;
use super::*;

const CODEX: &str = include_str!("../../../../../runner/src/control/transcripts/codex-0.171.0.txt");
const GEMINI: &str =
    include_str!("../../../../../runner/src/control/transcripts/gemini-0.61.0.txt");

fn run_of(cli: CliKind, servers: &[&str]) -> AgentRun {
    AgentRun {
        cli: Some(cli),
        servers: servers
            .iter()
            .map(|s| (s.to_string(), "given".to_string()))
            .collect(),
        ..AgentRun::default()
    }
}

/// The CLI's stdout of a transcript.
fn stdout_of(transcript: &str) -> String {
    transcript
        .lines()
        .filter_map(|l| l.strip_prefix("<< "))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn outcomes(run: &AgentRun) -> Vec<(&str, Option<bool>, Option<&str>)> {
    run.calls
        .iter()
        .map(|c| (c.name.as_str(), c.ok, c.error.as_deref()))
        .collect()
}

#[test]
fn codex_app_server_thread_servers_calls_and_turn() {
    let mut run = run_of(CliKind::Codex, &["everything"]);
    let mut p = StreamParser::new(CliKind::Codex, Default::default());
    assert_eq!(p.feed(stdout_of(CODEX).as_bytes(), &mut run), Change::Major);
    assert_eq!(
        run.session.as_deref(),
        Some("01a23288-2239-79f1-aeba-1bdf3976ea99")
    );
    assert_eq!(run.model.as_deref(), Some("gpt-6.2-sol"));
    assert_eq!(
        run.servers,
        vec![("everything".to_string(), "connected".to_string())]
    );
    assert_eq!(
        outcomes(&run),
        vec![
            ("exec_command", Some(true), None),
            ("apply_patch", Some(true), None),
            ("mcp__everything__echo", Some(true), None),
            ("exec_command", Some(false), Some("declined")),
            (
                "mcp__everything__get-sum",
                Some(false),
                Some("user rejected MCP tool call")
            ),
        ]
    );
    assert!(run.reported_failure().is_none());
    assert_eq!(
        run.result.as_ref().and_then(|r| r.reason.as_deref()),
        Some("completed")
    );
}

#[test]
fn codex_app_server_failures() {
    let mut run = run_of(CliKind::Codex, &["broken"]);
    let mut p = StreamParser::new(CliKind::Codex, Default::default());
    let stream = concat!(
        r#"{"id":"bosun-thread","result":{"thread":{"id":"th1"},"model":"m"}}"#,
        "\n",
        r#"{"method":"mcpServer/startupStatus/updated","params":{"threadId":"th1","name":"broken","status":"starting","error":null}}"#,
        "\n",
        r#"{"method":"mcpServer/startupStatus/updated","params":{"threadId":"th1","name":"broken","status":"failed","error":"No such file or directory (os error 2)"}}"#,
        "\n",
        r#"{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"c1","command":"/bin/bash -lc false","status":"failed","exitCode":1}}}"#,
        "\n",
        r#"{"id":"bosun-steer-3","error":{"code":-32600,"message":"no active turn"}}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"threadId":"sub","turn":{"status":"completed"}}}"#,
        "\n",
        r#"{"method":"turn/completed","params":{"threadId":"th1","turn":{"status":"failed","error":{"message":"unexpected status 401 Unauthorized"}}}}"#,
        "\n",
    );
    p.feed(stream.as_bytes(), &mut run);
    assert_eq!(run.servers[0].1, "failed");
    assert_eq!(
        outcomes(&run),
        vec![("exec_command", Some(false), Some("exit code 1"))]
    );
    assert_eq!(
        run.reported_failure().unwrap_or_default(),
        "Codex reported an error (turn failed): unexpected status 401 Unauthorized"
    );

    // A thread that never started.
    let mut run = run_of(CliKind::Codex, &[]);
    let mut p = StreamParser::new(CliKind::Codex, Default::default());
    p.feed(
        br#"{"id":"bosun-thread","error":{"code":-32603,"message":"required MCP servers failed to initialize"}}
"#,
        &mut run,
    );
    assert!(
        run.reported_failure()
            .unwrap_or_default()
            .contains("required MCP servers failed")
    );
}

#[test]
fn gemini_acp_session_calls_and_stop_reason() {
    let mut run = run_of(CliKind::Gemini, &["everything"]);
    let mut p = StreamParser::new(CliKind::Gemini, Default::default());
    assert_eq!(
        p.feed(stdout_of(GEMINI).as_bytes(), &mut run),
        Change::Major
    );
    assert_eq!(
        run.session.as_deref(),
        Some("24caa9e3-da02-48c4-ba62-42f26608fbe1")
    );
    assert_eq!(run.model.as_deref(), Some("auto"));
    assert_eq!(run.servers[0].1, "connected");
    // The two calls bosun denied have no end in Gemini's stream.
    assert_eq!(
        outcomes(&run),
        vec![
            ("run_shell_command", Some(true), None),
            ("read_file", Some(true), None),
            ("mcp__everything__echo", Some(true), None),
            ("write_file", Some(true), None),
            ("run_shell_command", None, None),
            ("mcp__everything__get-sum", None, None),
            ("run_shell_command", Some(true), None),
        ]
    );
    assert!(run.reported_failure().is_none());
}

#[test]
fn gemini_acp_failures() {
    let mut run = run_of(CliKind::Gemini, &[]);
    let mut p = StreamParser::new(CliKind::Gemini, Default::default());
    let stream = concat!(
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"read_file__read_file_1_0","status":"in_progress","title":"missing.txt","kind":"read"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"read_file__read_file_1_0","status":"failed","content":[{"type":"content","content":{"type":"text","text":"File not found: /w/missing.txt"}}],"kind":"read"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":"bosun-prompt","error":{"code":401,"message":"API key not valid"}}"#,
        "\n",
    );
    p.feed(stream.as_bytes(), &mut run);
    assert_eq!(
        outcomes(&run),
        vec![(
            "read_file",
            Some(false),
            Some("File not found: /w/missing.txt")
        )]
    );
    assert_eq!(
        run.reported_failure().unwrap_or_default(),
        "Gemini CLI reported an error (error): API key not valid"
    );
}

#[test]
fn the_tool_is_read_from_a_gemini_call_id() {
    assert_eq!(
        tool_of_call("mcp_everything_get-sum__mcp_everything_get-sum_1796144189373_0"),
        "mcp_everything_get-sum"
    );
    assert_eq!(tool_of_call("write_file__from_the_api"), "write_file");
}
