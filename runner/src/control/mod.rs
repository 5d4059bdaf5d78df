//! The control protocols of the coding CLIs: how the runner hands the task to a CLI, learns of
//! each tool call it wants to make, and gives it bosun's answer.
//!
//! Each protocol is a [`Protocol`]: a state machine with no I/O of its own (so it is tested on
//! recorded transcripts), fed the CLI's stdout line by line and the daemon's decisions, and
//! answering with [`Step`]s for the [`driver`] to carry out. The driver owns the CLI's stdin and
//! keeps it open for as long as an ask waits: closing it would fail the call.

pub mod claude;
pub mod codex;
pub mod driver;
pub mod gemini;

use bosun_shared::protocol::runner::{ControlPlan, ControlProtocol, ToolAnswer, ToolAsk};

/// What a protocol wants done.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Write this line (a newline is added) to the CLI's stdin.
    Write(Vec<u8>),
    /// Hand this tool call to bosund and wait for its decision.
    Ask(ToolAsk),
    /// The CLI's work is done: close its stdin so that it exits.
    Finish,
    /// The CLI withdrew this ask itself (its turn was interrupted): bosund stops waiting for
    /// the person on it.
    Withdraw(String),
}

/// One CLI's control protocol.
pub trait Protocol: Send {
    /// What is written to the CLI as soon as it starts: its setup and the task.
    fn start(&mut self) -> Vec<Step>;
    /// One line the CLI wrote on stdout (without its newline).
    fn on_line(&mut self, line: &[u8]) -> Vec<Step>;
    /// bosund decided the ask `key`.
    fn answer(&mut self, key: &str, answer: &ToolAnswer) -> Vec<Step>;
}

/// The protocol a plan asks for.
pub fn protocol(plan: &ControlPlan) -> Box<dyn Protocol> {
    match plan.protocol {
        ControlProtocol::ClaudeStreamJson => Box::new(claude::Claude::new(plan)),
        ControlProtocol::CodexAppServer => Box::new(codex::Codex::new(plan)),
        ControlProtocol::GeminiAcp => Box::new(gemini::Gemini::new(plan)),
    }
}

/// The most bytes of a tool's input sent to bosund as they are; past it, a summary goes (the
/// CLI still gets its own input back when the call is allowed).
pub const MAX_INPUT: usize = 256 * 1024;

/// The input as sent to bosund: whole, or cut to a summary when it is very large.
pub fn input_for_ask(input: &serde_json::Value) -> (serde_json::Value, bool) {
    let len = serde_json::to_vec(input).map(|v| v.len()).unwrap_or(0);
    if len <= MAX_INPUT {
        return (input.clone(), false);
    }
    let mut summary = serde_json::Map::new();
    if let Some(obj) = input.as_object() {
        for (k, v) in obj {
            let short = match v {
                // The files a change writes: bosun's policy judges the call by them.
                serde_json::Value::Array(items)
                    if k == "paths"
                        && items.len() <= 256
                        && items
                            .iter()
                            .all(|p| p.as_str().is_some_and(|p| p.len() <= 4096)) =>
                {
                    v.clone()
                }
                serde_json::Value::String(s) if s.len() > 4096 => {
                    let mut cut = 4096;
                    while !s.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    serde_json::Value::String(format!("{}… ({} bytes)", &s[..cut], s.len()))
                }
                serde_json::Value::String(_)
                | serde_json::Value::Null
                | serde_json::Value::Bool(_)
                | serde_json::Value::Number(_) => v.clone(),
                serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                    serde_json::Value::String(format!(
                        "({} bytes)",
                        serde_json::to_vec(v).map(|b| b.len()).unwrap_or(0)
                    ))
                }
            };
            summary.insert(k.clone(), short);
        }
    }
    (serde_json::Value::Object(summary), true)
}
