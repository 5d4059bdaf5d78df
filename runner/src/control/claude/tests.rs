//! Claude Code's protocol against a transcript recorded with Claude Code 2.1.332 and a fake
//! model that asked for `mcp__everything__echo` (allowed) and `Bash` (denied): `<<` lines are
//! what Claude wrote, `>>` lines what the supervisor answered.

use bosun_protocol::runner::{ControlPlan, ControlProtocol, ToolAnswer};
use serde_json::Value;

use super::*;

const TRANSCRIPT: &str = include_str!("../transcripts/claude-2.1.332.txt");

fn plan() -> ControlPlan {
    ControlPlan {
        protocol: ControlProtocol::ClaudeStreamJson,
        prompt: "do it".into(),
        settings: Value::Null,
    }
}

fn json_of(step: &Step) -> Value {
    match step {
        Step::Write(bytes) => serde_json::from_slice(bytes).expect("a JSON line"),
        Step::Ask(_) | Step::Finish | Step::Withdraw(_) => panic!("not a write: {step:?}"),
    }
}

#[test]
fn start_registers_the_hook_and_sends_the_task() {
    let mut c = Claude::new(&plan());
    let steps = c.start();
    assert_eq!(steps.len(), 2);
    let init = json_of(&steps[0]);
    assert_eq!(init["request"]["subtype"], "initialize");
    assert_eq!(
        init["request"]["hooks"]["PreToolUse"][0]["matcher"], ".*",
        "every tool"
    );
    let user = json_of(&steps[1]);
    assert_eq!(user["type"], "user");
    assert_eq!(user["message"]["content"], "do it");
}

#[test]
fn the_recorded_transcript_is_answered_as_claude_expects() {
    let mut c = Claude::new(&plan());
    c.start();
    let mut asks = Vec::new();
    let mut finished = false;
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
    for (i, (from_claude, msg)) in recorded.iter().enumerate() {
        if !from_claude {
            continue;
        }
        let steps = c.on_line(&serde_json::to_vec(msg).expect("json"));
        let subtype = msg["request"]["subtype"].as_str();
        match (msg["type"].as_str(), subtype) {
            (Some("control_request"), Some("hook_callback")) => {
                // Answered at once with `ask`, as recorded.
                assert_eq!(steps.len(), 1);
                let answer = json_of(&steps[0]);
                let (_, recorded_answer) = &recorded[i + 1];
                assert_eq!(answer["response"]["request_id"], msg["request_id"]);
                assert_eq!(
                    answer["response"]["response"]["hookSpecificOutput"]["permissionDecision"],
                    recorded_answer["response"]["response"]["hookSpecificOutput"]["permissionDecision"]
                );
            }
            (Some("control_request"), Some("can_use_tool")) => {
                let [Step::Ask(ask)] = steps.as_slice() else {
                    panic!("an ask: {steps:?}");
                };
                assert_eq!(ask.key, msg["request_id"].as_str().expect("id"));
                assert_eq!(
                    ask.tool,
                    msg["request"]["tool_name"].as_str().expect("tool")
                );
                assert_eq!(ask.input, msg["request"]["input"]);
                // Answer as the supervisor did, and compare with what it wrote.
                let (_, recorded_answer) = &recorded[i + 1];
                let r = &recorded_answer["response"]["response"];
                let answer = match r["behavior"].as_str() {
                    Some("allow") => ToolAnswer::Allow,
                    _ => ToolAnswer::Deny {
                        message: r["message"].as_str().expect("message").to_string(),
                    },
                };
                let out = c.answer(&ask.key, &answer);
                assert_eq!(out.len(), 1);
                assert_eq!(json_of(&out[0]), *recorded_answer);
                // A second decision for the same call writes nothing.
                assert!(c.answer(&ask.key, &answer).is_empty());
                asks.push(ask.tool.clone());
            }
            (Some("result"), _) => {
                assert_eq!(steps, vec![Step::Finish]);
                finished = true;
            }
            _ => assert!(steps.is_empty(), "line {i} wants {steps:?}"),
        }
    }
    assert_eq!(asks, ["mcp__everything__echo", "Bash"]);
    assert!(finished);
}

#[test]
fn an_unknown_control_request_is_refused_not_left_waiting() {
    let mut c = Claude::new(&plan());
    let steps = c.on_line(br#"{"type":"control_request","request_id":"r9","request":{"subtype":"mcp_message","server_name":"x"}}"#);
    let answer = json_of(&steps[0]);
    assert_eq!(answer["response"]["subtype"], "error");
    assert_eq!(answer["response"]["request_id"], "r9");
}

#[test]
fn lines_that_are_not_json_are_left_alone() {
    let mut c = Claude::new(&plan());
    assert!(c.on_line(b"not json").is_empty());
    assert!(c.on_line(b"").is_empty());
}

#[test]
fn a_call_claude_cancels_is_withdrawn_once_and_then_answers_nothing() {
    let mut c = Claude::new(&plan());
    let steps = c.on_line(br#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#);
    assert!(matches!(steps.as_slice(), [Step::Ask(_)]));
    let steps = c.on_line(br#"{"type":"control_cancel_request","request_id":"r1"}"#);
    assert_eq!(steps, vec![Step::Withdraw("r1".into())]);
    assert!(
        c.on_line(br#"{"type":"control_cancel_request","request_id":"r1"}"#)
            .is_empty()
    );
    assert!(c.answer("r1", &ToolAnswer::Allow).is_empty());
}
