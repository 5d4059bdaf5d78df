//! `fake-claude`: a **stand-in** for Claude Code that speaks its control protocol exactly as
//! recorded from Claude Code 2.1.332 (`runner/src/control/transcripts/claude-2.1.332.txt`), with
//! no model behind it: the tool calls it makes come from a script.
//!
//! It exists for the approvals benchmark (`bench/benches/approvals.rs`), which needs 100 runs
//! waiting on approvals at once, and for the approvals chaos test
//! (`tests/tests/approvals_chaos.rs`), which runs dozens of them while bosund is killed. The real Claude Code is a node process of ~100 MB, and a
//! hundred of them (with a fake model API) do not fit the 2-core machine the benchmarks run on;
//! what bosun relies on is only the protocol on stdin and stdout, which this reproduces. It is
//! installed for a run by putting it on the agent's `PATH` under the name `claude`.
//!
//! ```text
//! claude -p --input-format=stream-json --output-format=stream-json --verbose \
//!        --permission-prompt-tool=stdio [any other flag, ignored]
//! claude auth status      # {"loggedIn": …}; fails unless ANTHROPIC_API_KEY is set
//! claude --version        # 2.1.332 (Claude Code)
//! ```
//!
//! # What it does, as the real one does
//!
//! - Answers the `initialize` control request with `control_response` success, keeping the
//!   PreToolUse hook callbacks it registers; writes `system`/`init` when the `user` message comes.
//! - For each step of the script, the step's calls are made *at once*, as Claude Code 2.1.332
//!   does for the parallel `tool_use` blocks of one model message (checked with three parallel
//!   `Read`s against the real CLI: three `assistant` lines and three `hook_callback`s, then three
//!   `can_use_tool` requests outstanding together, in block order): one `assistant` line per
//!   `tool_use`, a `hook_callback` per call (when a hook was registered) and, once every hook is
//!   answered, a `can_use_tool` per call the hooks sent on (`ask`; `allow` runs it, `deny`
//!   refuses it). Each answer gives a `user` line with the call's `tool_result` (or the denial),
//!   in the order answers come. After the last step: an `assistant` text and the `result` line.
//! - Request ids are random UUIDs, tool-use ids `toolu_…`, as recorded. It waits for an answer
//!   as long as it takes (no timeout of its own, as measured: 100 s and more). If stdin closes
//!   before an answer, each waiting call fails with the message Claude Code gives
//!   (`Tool permission request failed: AbortError: …`). It exits when stdin closes.
//!
//! # The script and the record
//!
//! `FAKE_CLAUDE_SCRIPT` is JSON: a list of steps, each a list of calls made at once, each call
//! `{"tool": NAME, "input": {…}}`; unset, the run makes no call. `FAKE_CLAUDE_SCRIPT_FILE` names a
//! file holding the same JSON instead, for a script longer than the 64 KiB an agent's
//! environment value may be. With `FAKE_CLAUDE_RECORD=FILE`,
//! every call appends a line to FILE when it is asked and when it is answered:
//! `{"event": "asked"|"answered"|"aborted", "run", "step", "call", "tool", "tool_use_id",
//! "request_id", "behavior", "message", "at_ns"}`, where `run` is `BOSUN_RUN_ID` and `at_ns` the
//! wall clock in nanoseconds. Each line is one `O_APPEND` write, so many processes can share
//! the file.
//!
//! # Caveats
//!
//! It runs no tool (an allowed `Read` returns a fixed text), has no model turns between steps,
//! and its `initialize` answer and `system`/`init` line carry only the fields bosun could use,
//! not Claude Code's whole catalogue. After an early close of stdin it ends with an error
//! `result` at once, where the real CLI would go back to the model first.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, Read, Write};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde_json::{Value, json};

const VERSION: &str = "2.1.332";
/// What Claude Code says when stdin closes while a permission request waits.
const ABORTED: &str = "Tool permission request failed: AbortError: Tool permission stream closed before response received";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fake-claude: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["--version" | "-v"] => {
            println!("{VERSION} (Claude Code)");
            return Ok(ExitCode::SUCCESS);
        }
        ["auth", "status", ..] => return Ok(auth_status()),
        _ => {}
    }
    for needed in [
        "-p",
        "--input-format=stream-json",
        "--output-format=stream-json",
        "--permission-prompt-tool=stdio",
    ] {
        if !words.contains(&needed) {
            bail!(
                "this stand-in only speaks Claude Code's stream-json control protocol; `{needed}` is missing"
            );
        }
    }
    let script = match (
        std::env::var("FAKE_CLAUDE_SCRIPT"),
        std::env::var_os("FAKE_CLAUDE_SCRIPT_FILE"),
    ) {
        (Ok(text), _) => parse_script(&text)?,
        (Err(_), Some(file)) => parse_script(
            &std::fs::read_to_string(&file)
                .with_context(|| format!("reading FAKE_CLAUDE_SCRIPT_FILE {}", file.display()))?,
        )?,
        (Err(_), None) => Vec::new(),
    };
    let mut claude = Claude::new()?;
    let stdin = std::io::stdin();
    let mut input = stdin.lock().lines();
    // Before the task: the initialize request, then the `user` message.
    loop {
        let Some(msg) = next_message(&mut input)? else {
            return Ok(ExitCode::SUCCESS);
        };
        match msg["type"].as_str() {
            Some("control_request") => claude.control_request(&msg)?,
            Some("user") => break,
            _ => {}
        }
    }
    claude.system_init()?;
    for (i, step) in script.iter().enumerate() {
        if !claude.step(i, step, &mut input)? {
            claude.result(true)?;
            return Ok(ExitCode::FAILURE);
        }
    }
    claude.result(false)?;
    while next_message(&mut input)?.is_some() {}
    Ok(ExitCode::SUCCESS)
}

/// `claude auth status`, as 2.1.332 prints it for a key in the environment (or for nothing).
fn auth_status() -> ExitCode {
    let key = std::env::var("ANTHROPIC_API_KEY").is_ok_and(|k| !k.is_empty());
    let config = std::env::var("CLAUDE_CONFIG_DIR")
        .unwrap_or_else(|_| format!("{}/.claude", std::env::var("HOME").unwrap_or_default()));
    let mut status = json!({
        "loggedIn": key,
        "authMethod": if key { "api_key" } else { "none" },
        "apiProvider": "firstParty",
        "analyticsDisabled": false,
        "projectsDirectory": format!("{config}/projects"),
        "configDirectory": config,
        "loginExpiresAt": null,
        "consoleProfileSignInOffered": true,
    });
    if key {
        status["apiKeySource"] = json!("ANTHROPIC_API_KEY");
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&status).unwrap_or_default()
    );
    if key {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One tool call of the script.
struct Call {
    tool: String,
    input: Value,
}

/// `[[{"tool": NAME, "input": {…}}, …], …]`: the steps, each a list of calls made at once.
fn parse_script(text: &str) -> anyhow::Result<Vec<Vec<Call>>> {
    let bad = || {
        anyhow::anyhow!(
            "FAKE_CLAUDE_SCRIPT is not a list of steps, each a list of {{\"tool\", \"input\"}}"
        )
    };
    let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let steps = v.as_array().ok_or_else(bad)?;
    steps
        .iter()
        .map(|step| {
            step.as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|c| {
                    Ok(Call {
                        tool: c["tool"].as_str().ok_or_else(bad)?.to_string(),
                        input: Some(&c["input"])
                            .filter(|i| !i.is_null())
                            .cloned()
                            .unwrap_or_else(|| json!({})),
                    })
                })
                .collect()
        })
        .collect()
}

/// The next JSON message on stdin, skipping lines that are not JSON; `None` when stdin closed.
fn next_message(
    input: &mut impl Iterator<Item = std::io::Result<String>>,
) -> anyhow::Result<Option<Value>> {
    for line in input {
        let line = line.context("reading stdin")?;
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// How bosun answered one call.
enum Answer {
    Allow(Value),
    Deny(String),
    /// stdin closed first.
    Aborted,
}

struct Claude {
    random: File,
    session: String,
    run: String,
    cwd: String,
    /// The PreToolUse callback ids registered at `initialize`.
    hooks: Vec<String>,
    record: Option<File>,
    /// stdin has closed.
    closed: bool,
    denials: Vec<Value>,
    turns: u64,
    started: std::time::Instant,
}

impl Claude {
    fn new() -> anyhow::Result<Self> {
        let mut random = File::open("/dev/urandom").context("opening /dev/urandom")?;
        let session = uuid(&mut random)?;
        let record = match std::env::var_os("FAKE_CLAUDE_RECORD") {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("opening {}", path.to_string_lossy()))?,
            ),
            None => None,
        };
        Ok(Self {
            random,
            session,
            run: std::env::var("BOSUN_RUN_ID").unwrap_or_default(),
            cwd: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            hooks: Vec::new(),
            record,
            closed: false,
            denials: Vec::new(),
            turns: 1,
            started: std::time::Instant::now(),
        })
    }

    fn uuid(&mut self) -> anyhow::Result<String> {
        uuid(&mut self.random)
    }

    fn write(&self, v: &Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(v)?;
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        out.write_all(&line)?;
        out.flush()?;
        Ok(())
    }

    fn note(&mut self, mut line: Value) -> anyhow::Result<()> {
        let Some(file) = self.record.as_mut() else {
            return Ok(());
        };
        line["run"] = json!(self.run);
        line["at_ns"] = json!(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        );
        let mut bytes = serde_json::to_vec(&line)?;
        bytes.push(b'\n');
        file.write_all(&bytes)?;
        Ok(())
    }

    /// A control request from bosun: `initialize` is answered; anything else is refused, as this
    /// stand-in implements nothing else.
    fn control_request(&mut self, msg: &Value) -> anyhow::Result<()> {
        let id = msg["request_id"].as_str().unwrap_or_default();
        let request = &msg["request"];
        if request["subtype"] != "initialize" {
            return self.write(&json!({
                "type": "control_response",
                "response": {"subtype": "error", "request_id": id,
                    "error": format!("the stand-in does not handle {}", request["subtype"])},
            }));
        }
        for matcher in request["hooks"]["PreToolUse"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for cb in matcher["hookCallbackIds"].as_array().into_iter().flatten() {
                if let Some(cb) = cb.as_str() {
                    self.hooks.push(cb.to_string());
                }
            }
        }
        self.write(&json!({
            "type": "control_response",
            "response": {"subtype": "success", "request_id": id, "response": {
                "commands": [], "agents": [], "output_style": "default",
                "available_output_styles": ["default"], "models": [],
                "account": {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY",
                    "apiProvider": "firstParty"},
                "pid": std::process::id(), "claude_code_version": VERSION,
                "current_permission_mode": "default", "hooks_applied": !self.hooks.is_empty(),
                "pending_permission_requests": [], "pending_user_dialog_requests": [],
            }},
        }))
    }

    fn system_init(&mut self) -> anyhow::Result<()> {
        let uuid = self.uuid()?;
        self.write(&json!({
            "type": "system", "subtype": "init", "cwd": self.cwd, "session_id": self.session,
            "tools": ["Bash", "Edit", "Glob", "Grep", "Read", "WebFetch", "WebSearch", "Write"],
            "mcp_servers": [], "model": "claude-opus-5-5", "permissionMode": "default",
            "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": VERSION,
            "output_style": "default", "uuid": uuid,
        }))
    }

    /// An `assistant` line holding one content block, as Claude Code streams them.
    fn assistant(&mut self, message_id: &str, block: Value) -> anyhow::Result<()> {
        let uuid = self.uuid()?;
        self.write(&json!({
            "type": "assistant",
            "message": {"id": message_id, "type": "message", "role": "assistant",
                "model": "claude-opus-5-5", "content": [block], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 1},
                "context_management": null},
            "parent_tool_use_id": null, "session_id": self.session, "uuid": uuid,
            "timestamp": bosun_shared::Timestamp::now().rfc3339(),
        }))
    }

    /// One step: its calls made at once. False if stdin closed before every call was answered.
    fn step(
        &mut self,
        step: usize,
        calls: &[Call],
        input: &mut impl Iterator<Item = std::io::Result<String>>,
    ) -> anyhow::Result<bool> {
        self.turns += 1;
        let message_id = format!("msg_{}", self.token(24)?);
        let (uses, hooks_pending) = self.announce(&message_id, calls)?;
        let Some(decisions) = self.hook_decisions(step, calls, &uses, input, hooks_pending)? else {
            return Ok(false);
        };
        let pending = self.ask_permissions(step, calls, &uses, &decisions)?;
        self.permission_answers(step, calls, &uses, input, pending)
    }

    /// Each call's `tool_use` line, followed by its `hook_callback` when a hook is registered.
    /// Gives the calls' tool-use ids and the hook requests made (request id → call).
    fn announce(
        &mut self,
        message_id: &str,
        calls: &[Call],
    ) -> anyhow::Result<(Vec<String>, HashMap<String, usize>)> {
        let hook = self.hooks.first().cloned();
        let mut uses = Vec::new();
        let mut pending = HashMap::new();
        for (i, call) in calls.iter().enumerate() {
            let use_id = format!("toolu_{}", self.token(24)?);
            self.assistant(
                message_id,
                json!({"type": "tool_use", "id": use_id, "name": call.tool, "input": call.input}),
            )?;
            if let Some(hook) = &hook {
                let id = self.hook_callback(hook, call, &use_id)?;
                pending.insert(id, i);
            }
            uses.push(use_id);
        }
        Ok((uses, pending))
    }

    /// Writes the PreToolUse `hook_callback` request of one call; gives its request id.
    fn hook_callback(&mut self, hook: &str, call: &Call, use_id: &str) -> anyhow::Result<String> {
        let id = self.uuid()?;
        let prompt_id = self.uuid()?;
        self.write(&json!({
            "type": "control_request", "request_id": id,
            "request": {"subtype": "hook_callback", "callback_id": hook, "input": {
                "session_id": self.session,
                "transcript_path": format!("{}/.claude/projects/{}.jsonl", self.cwd, self.session),
                "cwd": self.cwd, "prompt_id": prompt_id, "permission_mode": "default",
                "effort": {"level": "medium"}, "hook_event_name": "PreToolUse",
                "tool_name": call.tool, "tool_input": call.input, "tool_use_id": use_id,
            }, "tool_use_id": use_id},
        }))?;
        Ok(id)
    }

    /// Waits for every hook request `pending` to be answered (before any permission request is
    /// made); gives each call's decision: `allow`, `deny` or `ask`. `None` if stdin closed
    /// first, once every call of the step has been finished as aborted.
    fn hook_decisions(
        &mut self,
        step: usize,
        calls: &[Call],
        uses: &[String],
        input: &mut impl Iterator<Item = std::io::Result<String>>,
        mut pending: HashMap<String, usize>,
    ) -> anyhow::Result<Option<Vec<String>>> {
        let mut decisions: Vec<String> = vec!["ask".into(); calls.len()];
        while let Some((_, i, response)) = self.next_answer(input, &mut pending)? {
            let Some(r) = response else {
                for (i, call) in calls.iter().enumerate() {
                    self.finish_call(step, i, call, &uses[i], "", Answer::Aborted)?;
                }
                return Ok(None);
            };
            let d = &r["response"]["hookSpecificOutput"]["permissionDecision"];
            decisions[i] = d.as_str().unwrap_or("ask").to_string();
        }
        Ok(Some(decisions))
    }

    /// The permission requests of the calls the hooks sent on, all outstanding together; a call
    /// a hook allowed or denied is finished at once. Gives the requests made (request id → call).
    fn ask_permissions(
        &mut self,
        step: usize,
        calls: &[Call],
        uses: &[String],
        decisions: &[String],
    ) -> anyhow::Result<HashMap<String, usize>> {
        let mut pending = HashMap::new();
        for (i, call) in calls.iter().enumerate() {
            match decisions[i].as_str() {
                "allow" => {
                    let answer = Answer::Allow(call.input.clone());
                    self.finish_call(step, i, call, &uses[i], "", answer)?;
                    continue;
                }
                "deny" => {
                    let message = "denied by the PreToolUse hook".to_string();
                    self.finish_call(step, i, call, &uses[i], "", Answer::Deny(message))?;
                    continue;
                }
                _ => {}
            }
            let id = self.uuid()?;
            let request = can_use_tool(call, &uses[i]);
            self.write(&json!({"type": "control_request", "request_id": id, "request": request}))?;
            self.note(
                json!({"event": "asked", "step": step, "call": i, "tool": call.tool,
                "tool_use_id": uses[i], "request_id": id}),
            )?;
            pending.insert(id, i);
        }
        Ok(pending)
    }

    /// Finishes each call as the answer to its permission request comes. False if stdin closed
    /// before every one was answered.
    fn permission_answers(
        &mut self,
        step: usize,
        calls: &[Call],
        uses: &[String],
        input: &mut impl Iterator<Item = std::io::Result<String>>,
        mut pending: HashMap<String, usize>,
    ) -> anyhow::Result<bool> {
        let mut all_answered = true;
        while let Some((id, i, response)) = self.next_answer(input, &mut pending)? {
            let answer = permission_answer(response, &calls[i]);
            all_answered &= !matches!(answer, Answer::Aborted);
            self.finish_call(step, i, &calls[i], &uses[i], &id, answer)?;
        }
        Ok(all_answered)
    }

    /// The next answer to one of the `pending` requests, read from stdin, as it comes; `None`
    /// once none is pending. When stdin closes, each request left comes back with no answer, in
    /// the order made. Other control requests met meanwhile are answered (or refused).
    fn next_answer(
        &mut self,
        input: &mut impl Iterator<Item = std::io::Result<String>>,
        pending: &mut HashMap<String, usize>,
    ) -> anyhow::Result<Option<(String, usize, Option<Value>)>> {
        if pending.is_empty() {
            return Ok(None);
        }
        if self.closed {
            let first = pending
                .iter()
                .min_by_key(|(_, i)| **i)
                .map(|(id, i)| (id.clone(), *i));
            return Ok(first.map(|(id, i)| {
                pending.remove(&id);
                (id, i, None)
            }));
        }
        loop {
            let Some(msg) = next_message(input)? else {
                self.closed = true;
                return self.next_answer(input, pending);
            };
            match msg["type"].as_str() {
                Some("control_response") => {
                    let r = &msg["response"];
                    let id = r["request_id"].as_str().unwrap_or_default().to_string();
                    if let Some(i) = pending.remove(&id) {
                        return Ok(Some((id, i, Some(r.clone()))));
                    }
                }
                Some("control_request") => self.control_request(&msg)?,
                _ => {}
            }
        }
    }

    /// Records the answer and writes the call's `tool_result`, as Claude Code does when the call
    /// ran, was denied, or its permission request failed.
    fn finish_call(
        &mut self,
        step: usize,
        i: usize,
        call: &Call,
        use_id: &str,
        request_id: &str,
        answer: Answer,
    ) -> anyhow::Result<()> {
        let (event, behavior, message) = match &answer {
            Answer::Allow(_) => ("answered", "allow", None),
            Answer::Deny(m) => ("answered", "deny", Some(m.clone())),
            Answer::Aborted => ("aborted", "none", Some(ABORTED.to_string())),
        };
        self.note(
            json!({"event": event, "step": step, "call": i, "tool": call.tool,
            "tool_use_id": use_id, "request_id": request_id, "behavior": behavior,
            "message": message}),
        )?;
        let uuid = self.uuid()?;
        let (block, result, meta) = match answer {
            Answer::Allow(input) => {
                // The call would run with the input bosun gave back (`updatedInput`).
                let text = format!("(the stand-in ran no {} of {input})", call.tool);
                (
                    json!({"tool_use_id": use_id, "type": "tool_result",
                        "content": [{"type": "text", "text": text}]}),
                    json!([{"type": "text", "text": text}]),
                    json!({"id": use_id, "permission_decision":
                        {"decision": "accept", "source": "user_temporary"}}),
                )
            }
            Answer::Deny(m) => {
                self.denials
                    .push(json!({"tool_name": call.tool, "tool_use_id": use_id,
                    "tool_input": call.input}));
                (
                    json!({"type": "tool_result", "content": m, "is_error": true,
                        "tool_use_id": use_id}),
                    json!(format!("Error: {m}")),
                    json!({"id": use_id, "non_execution_kind": "permission-rule",
                        "permission_decision": {"decision": "reject", "source": "user_reject"}}),
                )
            }
            Answer::Aborted => (
                json!({"type": "tool_result", "content": ABORTED, "is_error": true,
                    "tool_use_id": use_id}),
                json!(format!("Error: {ABORTED}")),
                json!({"id": use_id}),
            ),
        };
        self.write(&json!({
            "type": "user", "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": null, "session_id": self.session, "uuid": uuid,
            "timestamp": bosun_shared::Timestamp::now().rfc3339(),
            "tool_use_result": result, "tool_result_meta": [meta],
        }))
    }

    /// The closing `assistant` text and `result` line.
    fn result(&mut self, failed: bool) -> anyhow::Result<()> {
        let message_id = format!("msg_{}", self.token(24)?);
        let text = if failed {
            "stopped: the permission stream closed"
        } else {
            "done"
        };
        self.assistant(&message_id, json!({"type": "text", "text": text}))?;
        let uuid = self.uuid()?;
        self.write(&json!({
            "type": "result", "subtype": "success", "is_error": failed,
            "duration_ms": self.started.elapsed().as_millis() as u64, "duration_api_ms": 0,
            "num_turns": self.turns, "result": text, "stop_reason": "end_turn",
            "session_id": self.session, "total_cost_usd": 0.0,
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "permission_denials": self.denials,
            "terminal_reason": if failed { "aborted_tools" } else { "completed" },
            "uuid": uuid,
        }))
    }

    /// `len` random letters and digits.
    fn token(&mut self, len: usize) -> anyhow::Result<String> {
        const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789";
        let mut bytes = vec![0u8; len];
        self.random.read_exact(&mut bytes)?;
        Ok(bytes
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect())
    }
}

/// The body of a call's `can_use_tool` request; a `Bash` call's command is its description.
fn can_use_tool(call: &Call, use_id: &str) -> Value {
    let mut request = json!({
        "subtype": "can_use_tool", "tool_name": call.tool, "display_name": call.tool,
        "input": call.input, "decision_reason": "bosun decides every tool call",
        "decision_reason_type": "hook", "decision_reason_hook_event": "PreToolUse",
        "decision_reason_hook_source": "settings", "tool_use_id": use_id,
    });
    if let Some(command) = call.input["command"]
        .as_str()
        .filter(|_| call.tool == "Bash")
    {
        request["description"] = json!(command);
    }
    request
}

/// What a `control_response` to a call's permission request says (`None`: stdin closed first).
/// An allowed call runs with the input bosun gave back, or its own when none was given.
fn permission_answer(response: Option<Value>, call: &Call) -> Answer {
    match response {
        None => Answer::Aborted,
        Some(r) if r["subtype"] == "success" => {
            let r = &r["response"];
            if r["behavior"] == "allow" {
                let given = &r["updatedInput"];
                let input = if given.is_null() {
                    call.input.clone()
                } else {
                    given.clone()
                };
                Answer::Allow(input)
            } else {
                Answer::Deny(r["message"].as_str().unwrap_or("denied").to_string())
            }
        }
        Some(r) => Answer::Deny(format!(
            "Tool permission request failed: {}",
            r["error"].as_str().unwrap_or("error")
        )),
    }
}

/// A random (version 4) UUID, as Claude Code's request and session ids are.
fn uuid(random: &mut File) -> anyhow::Result<String> {
    let mut b = [0u8; 16];
    random.read_exact(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}
