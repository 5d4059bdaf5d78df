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

use std::path::{Path, PathBuf};

use bosun_protocol::runner::{ControlPlan, ControlProtocol, ToolAnswer, ToolAsk};

use crate::redact::Redactor;

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

/// What redacts the run's asks: the run's secret values, but those its own folder's path holds
/// (a server's `HOME` or root folder line, say). bosund made that path and keeps it in the
/// run's record, so hiding them would hide nothing; it would only garble every path the
/// policy checks against the run's workspace.
pub fn ask_redactor(values: &[String], folder: &Path) -> Redactor {
    let folder = folder.to_string_lossy();
    let hidden: Vec<String> = values
        .iter()
        .filter(|v| !folder.contains(v.as_str()))
        .cloned()
        .collect();
    Redactor::new(&hidden)
}

/// An ask as the CLI made it (its whole input, as a protocol reads it), made into what goes to
/// bosund: its folder filled in when the CLI did not say (`cwd`), every secret value of the
/// run in its name, input and folder written `[redacted]`, then a very large input cut to a
/// summary. Redacted before the cut, so that a cut never leaves the start of a value.
///
/// The protocol keeps the CLI's own input: an allowed call gets it back as it was (bosund's
/// answer carries no input), never the redacted one.
pub fn for_bosund(mut ask: ToolAsk, cwd: &Path, redactor: &Redactor) -> ToolAsk {
    let mut redacted = redactor.json(&mut ask.input);
    if let Some(tool) = redactor.text(&ask.tool) {
        ask.tool = tool;
        redacted = true;
    }
    let folder = ask.cwd.take().unwrap_or_else(|| cwd.to_path_buf());
    ask.cwd = Some(match redactor.text(&folder.to_string_lossy()) {
        Some(text) => {
            redacted = true;
            PathBuf::from(text)
        }
        None => folder,
    });
    let (input, cut) = input_for_ask(&ask.input);
    ToolAsk {
        input,
        input_cut: ask.input_cut || cut,
        redacted: ask.redacted || redacted,
        ..ask
    }
}

/// The input as sent to bosund: whole, or cut to a summary when it is very large.
fn input_for_ask(input: &serde_json::Value) -> (serde_json::Value, bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &str = "s3cret-token-5d1c";

    fn ask(tool: &str, input: serde_json::Value, cwd: Option<&str>) -> ToolAsk {
        ToolAsk {
            key: "k".into(),
            tool: tool.into(),
            input,
            input_cut: false,
            cwd: cwd.map(PathBuf::from),
            at: bosun_shared::Timestamp::now(),
            redacted: false,
        }
    }

    #[test]
    fn an_ask_leaves_the_runner_with_the_runs_secrets_redacted_and_says_so() {
        let red = Redactor::new(&[SECRET.to_string()]);
        let run = Path::new("/w");
        let sent = for_bosund(
            ask("Bash", json!({"command": format!("echo {SECRET}")}), None),
            run,
            &red,
        );
        assert_eq!(sent.input, json!({"command": "echo [redacted]"}));
        assert_eq!(sent.cwd.as_deref(), Some(run), "the run's folder filled in");
        assert!(sent.redacted);
        // In the folder the CLI names, and in the tool's name.
        let sent = for_bosund(
            ask(
                &format!("mcp__x__{SECRET}"),
                json!({}),
                Some(&format!("/tmp/{SECRET}")),
            ),
            run,
            &red,
        );
        assert_eq!(sent.tool, "mcp__x__[redacted]");
        assert_eq!(sent.cwd, Some(PathBuf::from("/tmp/[redacted]")));
        assert!(sent.redacted);
        let sent = for_bosund(ask("Bash", json!({"command": "ls"}), Some("/a")), run, &red);
        assert!(!sent.redacted);
        assert_eq!(sent.input, json!({"command": "ls"}));
        assert_eq!(sent.cwd, Some(PathBuf::from("/a")));
    }

    #[test]
    fn a_value_the_runs_folder_holds_is_not_hidden_in_its_asks() {
        let red = ask_redactor(
            &["/home/alice-dev".to_string(), SECRET.to_string()],
            Path::new("/home/alice-dev/proj"),
        );
        let sent = for_bosund(
            ask(
                "Write",
                json!({"file_path": "/home/alice-dev/proj/a.txt", "content": SECRET}),
                None,
            ),
            Path::new("/home/alice-dev/proj"),
            &red,
        );
        assert_eq!(
            sent.input,
            json!({"file_path": "/home/alice-dev/proj/a.txt", "content": "[redacted]"})
        );
    }

    /// A very large input is cut to a summary, and each string to its first 4 KiB: a secret
    /// across that cut would leave its start in the summary, so the input is redacted first.
    #[test]
    fn a_large_input_is_redacted_before_it_is_cut() {
        let red = Redactor::new(&[SECRET.to_string()]);
        let mut content = "x".repeat(4090);
        content.push_str(SECRET);
        content.push_str(&"y".repeat(MAX_INPUT));
        let sent = for_bosund(
            ask(
                "Write",
                json!({"file_path": "a.txt", "content": content}),
                None,
            ),
            Path::new("/w"),
            &red,
        );
        assert!(sent.input_cut && sent.redacted);
        let text = sent.input["content"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!("{}[redac… (", "x".repeat(4090))),
            "cut inside the word, not the value"
        );
        assert!(!text.contains(&SECRET[..6]));
    }
}
