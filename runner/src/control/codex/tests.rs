//! Codex's protocol against a transcript recorded with Codex 0.171.0 (`codex app-server`) and
//! the fake OpenAI API asking for `exec_command` `ls` (allowed), an `apply_patch` adding a file
//! (allowed), `mcp__everything__echo` (allowed), `exec_command` `rm -rf build` (denied with a
//! message) and `mcp__everything__get-sum` (denied with a message): `<<` lines are what Codex
//! wrote, `>>` lines what the supervisor wrote.

use bosun_protocol::runner::{ControlPlan, ControlProtocol, ToolAnswer};
use serde_json::{Value, json};

use super::*;

const TRANSCRIPT: &str = include_str!("../transcripts/codex-0.171.0.txt");

fn plan() -> ControlPlan {
    ControlPlan {
        protocol: ControlProtocol::CodexAppServer,
        prompt: "do it".into(),
        settings: json!({"threadStart": {"sandbox": "read-only"}}),
    }
}

fn json_of(step: &Step) -> Value {
    match step {
        Step::Write(bytes) => serde_json::from_slice(bytes).expect("a JSON line"),
        Step::Ask(_) | Step::Finish | Step::Withdraw(_) => panic!("not a write: {step:?}"),
    }
}

fn recorded() -> Vec<(bool, Value)> {
    TRANSCRIPT
        .lines()
        .map(|l| {
            let (dir, body) = l.split_at(3);
            (
                dir == "<< ",
                serde_json::from_str(body).expect("recorded JSON"),
            )
        })
        .collect()
}

/// bosun's answer as the recorded supervisor gave it: the answer line, and the steer after a
/// denial.
fn answer_of(written: &[Value]) -> ToolAnswer {
    let result = &written[0]["result"];
    let verdict = result["decision"].as_str().or(result["action"].as_str());
    match verdict {
        Some("accept") => ToolAnswer::Allow,
        _ => {
            let text = written[1]["params"]["input"][0]["text"]
                .as_str()
                .expect("a steer");
            let (_, message) = text.split_once(" call: ").expect("the steer's form");
            ToolAnswer::Deny {
                message: message.to_string(),
            }
        }
    }
}

#[test]
fn the_recorded_transcript_is_answered_as_codex_expects() {
    let recorded = recorded();
    let mut c = Codex::new(&plan());
    // What the supervisor wrote after each line of Codex (or at the start), in order.
    let mut expected: Vec<Vec<Value>> = vec![Vec::new()];
    for (from_codex, msg) in &recorded {
        if *from_codex {
            expected.push(Vec::new());
        } else if let Some(last) = expected.last_mut() {
            last.push(msg.clone());
        }
    }
    let start: Vec<Value> = c.start().iter().map(json_of).collect();
    assert_eq!(start, expected[0]);

    let mut asks = Vec::new();
    let mut finished = 0;
    let codex_lines = recorded.iter().filter(|(from, _)| *from).map(|(_, m)| m);
    for (i, msg) in codex_lines.enumerate() {
        let want = &expected[i + 1];
        let mut written = Vec::new();
        for step in c.on_line(&serde_json::to_vec(msg).expect("json")) {
            match step {
                Step::Write(_) => written.push(json_of(&step)),
                Step::Ask(ask) => {
                    assert_eq!(ask.key, msg["id"].to_string());
                    let answer = answer_of(want);
                    let out = c.answer(&ask.key, &answer);
                    written.extend(out.iter().map(json_of));
                    // A second decision for the same call writes nothing.
                    assert!(c.answer(&ask.key, &answer).is_empty());
                    asks.push((ask.tool, ask.input, answer));
                }
                Step::Finish => {
                    assert_eq!(msg["method"], "turn/completed");
                    finished += 1;
                }
                Step::Withdraw(key) => panic!("the recorded run withdrew nothing: {key}"),
            }
        }
        assert_eq!(&written, want, "after Codex's line {i}: {msg}");
    }
    assert_eq!(finished, 1);
    let tools: Vec<&str> = asks.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(
        tools,
        [
            "exec_command",
            "apply_patch",
            "mcp__everything__echo",
            "exec_command",
            "mcp__everything__get-sum"
        ]
    );
    // The command as the model wrote it, not Codex's `bash -lc` around it.
    assert_eq!(asks[0].1["command"], "ls");
    assert_eq!(asks[3].1["command"], "rm -rf build");
    assert_eq!(asks[0].1["cwd"], "/root/cxexp/work");
    // The patch's changes, from the file change's `item/started`.
    assert_eq!(
        asks[1].1["changes"][0]["path"],
        "/root/cxexp/work/notes.txt"
    );
    assert_eq!(asks[1].1["changes"][0]["kind"]["type"], "add");
    assert_eq!(asks[2].1, json!({"message": "hi"}));
    assert_eq!(asks[4].1, json!({"a": 1, "b": 2}));
}

#[test]
fn every_command_asks_whatever_the_plan_says() {
    let mut c = Codex::new(&ControlPlan {
        settings: json!({"threadStart": {"approvalPolicy": "never", "model": "m"}}),
        ..plan()
    });
    c.start();
    let steps = c.on_line(br#"{"id":"bosun-initialize","result":{}}"#);
    assert_eq!(json_of(&steps[0]), json!({"method": "initialized"}));
    let start = json_of(&steps[1]);
    assert_eq!(start["method"], "thread/start");
    assert_eq!(
        start["params"],
        json!({"approvalPolicy": "untrusted", "model": "m"})
    );
}

#[test]
fn a_refused_start_ends_the_run() {
    let mut c = Codex::new(&plan());
    c.start();
    c.on_line(br#"{"id":"bosun-initialize","result":{}}"#);
    let steps = c.on_line(
        br#"{"id":"bosun-thread","error":{"code":-32603,"message":"required MCP servers failed to initialize"}}"#,
    );
    assert_eq!(steps, vec![Step::Finish]);
}

#[test]
fn a_refused_steer_is_left_alone() {
    let mut c = Codex::new(&plan());
    let steps =
        c.on_line(br#"{"id":"bosun-steer-3","error":{"code":-32600,"message":"no active turn"}}"#);
    assert!(steps.is_empty());
}

#[test]
fn requests_bosun_does_not_handle_get_an_error_or_a_decline() {
    let mut c = Codex::new(&plan());
    let steps = c.on_line(
        br#"{"method":"item/tool/requestUserInput","id":7,"params":{"threadId":"t","turnId":"u","itemId":"i","questions":[]}}"#,
    );
    let answer = json_of(&steps[0]);
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32601);
    // An MCP server asking the person for input, not a tool approval.
    let steps = c.on_line(
        br#"{"method":"mcpServer/elicitation/request","id":8,"params":{"threadId":"t","turnId":"u","serverName":"s","mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{}}}}"#,
    );
    assert_eq!(
        json_of(&steps[0]),
        json!({"id": 8, "result": {"action": "decline"}})
    );
}

#[test]
fn a_request_codex_withdrew_is_not_answered() {
    let mut c = Codex::new(&plan());
    let steps = c.on_line(
        br#"{"method":"item/commandExecution/requestApproval","id":5,"params":{"kind":"command","threadId":"t","turnId":"u","itemId":"i","command":"/bin/bash -lc 'git push'","cwd":"/w"}}"#,
    );
    let [Step::Ask(ask)] = steps.as_slice() else {
        panic!("an ask: {steps:?}");
    };
    assert_eq!(ask.key, "5");
    assert_eq!(ask.input, json!({"command": "git push", "cwd": "/w"}));
    assert_eq!(ask.cwd.as_deref(), Some(std::path::Path::new("/w")));
    c.on_line(br#"{"method":"serverRequest/resolved","params":{"threadId":"t","requestId":5}}"#);
    assert!(c.answer("5", &ToolAnswer::Allow).is_empty());
}

#[test]
fn a_denial_without_a_message_is_not_steered() {
    let mut c = Codex::new(&plan());
    c.on_line(
        br#"{"method":"item/fileChange/requestApproval","id":2,"params":{"threadId":"t","turnId":"u","itemId":"unknown","reason":"write outside the workspace"}}"#,
    );
    let out = c.answer(
        "2",
        &ToolAnswer::Deny {
            message: " ".into(),
        },
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        json_of(&out[0]),
        json!({"id": 2, "result": {"decision": "decline"}})
    );
}

#[test]
fn only_the_runners_own_turn_finishes_the_run() {
    let mut c = Codex::new(&plan());
    c.on_line(br#"{"id":"bosun-thread","result":{"thread":{"id":"main"}}}"#);
    assert!(
        c.on_line(br#"{"method":"turn/completed","params":{"threadId":"sub","turn":{}}}"#)
            .is_empty()
    );
    assert_eq!(
        c.on_line(br#"{"method":"turn/completed","params":{"threadId":"main","turn":{}}}"#),
        vec![Step::Finish]
    );
}

#[test]
fn shell_wrappers_are_taken_off() {
    for (line, command) in [
        ("/bin/bash -lc ls", "ls"),
        ("/bin/bash -lc 'echo hi > out.txt'", "echo hi > out.txt"),
        (r#"/bin/bash -lc 'echo '"'"'a b'"'"''"#, "echo 'a b'"),
        (r#"/usr/bin/zsh -c "say \"hi\"""#, r#"say "hi""#),
        ("git status", "git status"),
        ("/bin/bash -lc 'unterminated", "/bin/bash -lc 'unterminated"),
    ] {
        assert_eq!(unwrap_shell(line), command, "{line}");
    }
}

#[test]
fn lines_that_are_not_json_are_left_alone() {
    let mut c = Codex::new(&plan());
    assert!(c.on_line(b"WARNING: proceeding").is_empty());
    assert!(c.on_line(b"").is_empty());
}

#[test]
fn a_request_codex_resolves_itself_is_withdrawn_and_then_answers_nothing() {
    let mut c = Codex::new(&plan());
    c.start();
    let steps = c.on_line(br#"{"id":7,"method":"item/commandExecution/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"i","command":"/bin/bash -lc 'ls'","cwd":"/w"}}"#);
    assert!(matches!(steps.as_slice(), [Step::Ask(_)]), "{steps:?}");
    let steps = c
        .on_line(br#"{"method":"serverRequest/resolved","params":{"threadId":"t","requestId":7}}"#);
    assert_eq!(steps, vec![Step::Withdraw("7".into())]);
    assert!(c.answer("7", &ToolAnswer::Allow).is_empty());
}
