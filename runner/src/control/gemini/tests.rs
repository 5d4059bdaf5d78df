//! Gemini CLI's protocol against a transcript recorded with Gemini CLI 0.61.0 (`gemini --acp
//! --approval-mode=default`, a user policy asking for every tool) and the fake Gemini API
//! asking for `run_shell_command` (allowed), `read_file` (allowed), `mcp_everything_echo`
//! (allowed), `write_file` (allowed), `run_shell_command` `rm -rf build` (rejected),
//! `mcp_everything_get-sum` (rejected) and `run_shell_command` `ls` (which did not ask): `<<`
//! lines are what Gemini wrote, `>>` lines what the supervisor wrote.

use bosun_protocol::runner::{ControlPlan, ControlProtocol, ToolAnswer};
use serde_json::{Value, json};

use super::*;

const TRANSCRIPT: &str = include_str!("../transcripts/gemini-0.61.0.txt");

fn plan() -> ControlPlan {
    ControlPlan {
        protocol: ControlProtocol::GeminiAcp,
        prompt: "do it".into(),
        settings: json!({"sessionNew": {"mcpServers": []}, "servers": ["every", "everything"]}),
    }
}

fn json_of(step: &Step) -> Value {
    match step {
        Step::Write(bytes) => serde_json::from_slice(bytes).expect("a JSON line"),
        Step::Ask(_) | Step::Finish | Step::Withdraw(_) => panic!("not a write: {step:?}"),
    }
}

#[test]
fn the_recorded_transcript_is_answered_as_gemini_expects() {
    let recorded: Vec<(bool, Value)> = TRANSCRIPT
        .lines()
        .map(|l| {
            let (dir, body) = l.split_at(3);
            (
                dir == "<< ",
                serde_json::from_str(body).expect("recorded JSON"),
            )
        })
        .collect();
    // What the supervisor wrote after each line of Gemini (or at the start), in order.
    let mut expected: Vec<Vec<Value>> = vec![Vec::new()];
    for (from_gemini, msg) in &recorded {
        if *from_gemini {
            expected.push(Vec::new());
        } else if let Some(last) = expected.last_mut() {
            last.push(msg.clone());
        }
    }
    let mut g = Gemini::new(&plan());
    let start: Vec<Value> = g.start().iter().map(json_of).collect();
    assert_eq!(start, expected[0]);

    let mut asks = Vec::new();
    let mut finished = 0;
    let gemini_lines = recorded.iter().filter(|(from, _)| *from).map(|(_, m)| m);
    for (i, msg) in gemini_lines.enumerate() {
        let want = &expected[i + 1];
        let mut written = Vec::new();
        for step in g.on_line(&serde_json::to_vec(msg).expect("json")) {
            match step {
                Step::Write(_) => written.push(json_of(&step)),
                Step::Ask(ask) => {
                    assert_eq!(ask.key, msg["id"].to_string());
                    let answer = match want[0]["result"]["outcome"]["optionId"].as_str() {
                        Some("proceed_once") => ToolAnswer::Allow,
                        _ => ToolAnswer::Deny {
                            message: "the person said no".into(),
                        },
                    };
                    written.extend(g.answer(&ask.key, &answer).iter().map(json_of));
                    // A second decision for the same call writes nothing.
                    assert!(g.answer(&ask.key, &answer).is_empty());
                    asks.push(ask);
                }
                Step::Finish => {
                    assert_eq!(msg["id"], "bosun-prompt");
                    finished += 1;
                }
                Step::Withdraw(key) => panic!("the recorded run withdrew nothing: {key}"),
            }
        }
        assert_eq!(&written, want, "after Gemini's line {i}: {msg}");
    }
    assert_eq!(finished, 1);
    let tools: Vec<&str> = asks.iter().map(|a| a.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "run_shell_command",
            "read_file",
            "mcp__everything__echo",
            "write_file",
            "run_shell_command",
            "mcp__everything__get-sum"
        ]
    );
    assert_eq!(
        asks[0].input,
        json!({"command": "echo hi > out.txt", "cwd": "/root/gmexp/work"})
    );
    assert_eq!(
        asks[0].cwd.as_deref(),
        Some(std::path::Path::new("/root/gmexp/work"))
    );
    assert_eq!(
        asks[1].input,
        json!({"title": "a.txt", "paths": ["/root/gmexp/work/a.txt"]})
    );
    assert_eq!(asks[2].input, json!({"message": "hi"}));
    assert_eq!(
        asks[3].input,
        json!({"file_path": "/root/gmexp/work/notes.txt", "old_text": "", "new_text": "hello\n"})
    );
    assert_eq!(asks[4].input["command"], "rm -rf build");
    assert_eq!(asks[5].input, json!({"a": 1, "b": 2}));
}

#[test]
fn the_session_opens_in_the_clis_own_folder() {
    let mut g = Gemini::new(&ControlPlan {
        settings: Value::Null,
        ..plan()
    });
    let steps = g.on_line(br#"{"jsonrpc":"2.0","id":"bosun-initialize","result":{}}"#);
    assert_eq!(
        json_of(&steps[0])["params"],
        json!({"cwd": ".", "mcpServers": []})
    );
}

#[test]
fn a_refused_prompt_ends_the_run() {
    let mut g = Gemini::new(&plan());
    let steps = g.on_line(
        br#"{"jsonrpc":"2.0","id":"bosun-prompt","error":{"code":401,"message":"API key not valid"}}"#,
    );
    assert_eq!(steps, vec![Step::Finish]);
}

#[test]
fn requests_bosun_does_not_handle_get_an_error() {
    let mut g = Gemini::new(&plan());
    let steps = g.on_line(
        br#"{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/etc/passwd"}}"#,
    );
    let answer = json_of(&steps[0]);
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32601);
}

#[test]
fn a_request_without_a_reject_option_is_cancelled_on_a_denial() {
    let mut g = Gemini::new(&plan());
    g.on_line(
        br#"{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":{"toolCallId":"x__1","title":"t","kind":"other"}}}"#,
    );
    let out = g.answer(
        "3",
        &ToolAnswer::Deny {
            message: "no".into(),
        },
    );
    assert_eq!(
        json_of(&out[0]),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"outcome": {"outcome": "cancelled"}}})
    );
}

#[test]
fn the_tool_is_read_from_the_call_id() {
    for (id, tool) in [
        (
            "run_shell_command__run_shell_command_1796144188913_0",
            "run_shell_command",
        ),
        ("my__tool__my__tool_17_0", "my__tool"),
        ("write_file__call_from_the_api", "write_file"),
        ("no_separator", "no_separator"),
    ] {
        assert_eq!(tool_of_call(id), tool, "{id}");
    }
}

#[test]
fn lines_that_are_not_json_are_left_alone() {
    let mut g = Gemini::new(&plan());
    assert!(
        g.on_line(b"Warning: 256-color support not detected")
            .is_empty()
    );
    assert!(g.on_line(b"").is_empty());
}
