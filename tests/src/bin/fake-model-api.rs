//! `fake-model-api`: a scripted stand-in for a model API, so that the real coding CLIs (Claude
//! Code, Codex CLI, Gemini CLI) can run a whole agent turn in bosun's end-to-end tests with no
//! network and no credentials: the model asks for an MCP tool, the CLI calls it, and the model
//! answers once the tool result comes back.
//!
//! ```text
//! fake-model-api --api anthropic|openai|gemini --script SCRIPT [--port N] [--log FILE]
//! ```
//!
//! It listens on `127.0.0.1:N` (`--port 0`, the default, picks a free port) and, once
//! listening, prints exactly one line to stdout: `listening http://127.0.0.1:<port>`. Point
//! the CLI at it with `ANTHROPIC_BASE_URL=http://127.0.0.1:<port>`, a Codex model provider
//! whose `base_url` is `http://127.0.0.1:<port>/v1`, or `GOOGLE_GEMINI_BASE_URL=...`.
//!
//! # Turns and the script
//!
//! A *turn* is one streamed model request carrying the conversation: `POST /v1/messages` with
//! `"stream": true` (Anthropic Messages), `POST .../responses` (OpenAI Responses), or
//! `POST ...:streamGenerateContent` (Gemini). Everything else is auxiliary and gets a fixed
//! answer: Claude's `HEAD /api/hello`, `count_tokens` and non-streaming requests, model lists,
//! Gemini's `:generateContent` router and classifier calls and `:countTokens`.
//!
//! `SCRIPT` is a `;`-separated list of steps, one consumed per turn:
//! - `text:<words>`: answer with that text (it runs to the next `;`).
//! - `tool:<tool>:<json-args>` (or `tool:<server>/<tool>:<json-args>`; the arguments default
//!   to `{}`): ask to call an MCP tool. A bare `<tool>` is matched against the offered tools
//!   (`mcp__<server>__<tool>` for Claude and Codex, `mcp_<server>_<tool>` for Gemini); if none
//!   is offered, the server name is taken from any other offered MCP tool (with none offered,
//!   the bare `<tool>` is asked for), and the call is made anyway, so a test can see the CLI
//!   refuse it. `<server>/<tool>` names the tool
//!   exactly. For Codex, whose "code mode" only offers a JavaScript `exec` tool, the call is an
//!   `exec` custom tool call running `await tools.mcp__<server>__<tool>(args)` (a plain
//!   `function_call` if the request offers no `exec`). For Claude, the `tool_use` block comes
//!   after a text block `Calling <name>.`, as the reference fake did.
//! - `call:<name>:<json>` (the arguments default to `{}`): ask for the tool named exactly
//!   `<name>`, with no MCP name resolution, so a test can ask for a built-in tool (`Bash`,
//!   `exec_command`, `apply_patch`, `run_shell_command`, `write_file`) whether or not the
//!   request offered it. The arguments are any JSON value; Claude and Gemini want an object.
//!   For Codex in code mode the call is made from `exec` as `await tools.<name>(<json>)` (a
//!   string, as the freeform `apply_patch` takes, is passed as a JavaScript string), unless
//!   `<name>` is `exec` itself; otherwise it is a `function_call` with the object as its
//!   arguments, or a `custom_tool_call` whose input is the string.
//! - `hold`: never answer; the connection stays open until the client closes it.
//! - `error:<status>`: answer with that HTTP status (e.g. 401) in the API's error format, with
//!   `x-should-retry: false` (without it Claude Code retries a 401 ten times, for minutes).
//! - `gate:<path>` before a step: that step's stream is held (its headers sent, no event yet)
//!   until a file exists at `<path>`, so a test decides when the CLI goes on — say after it has
//!   restarted the daemon the CLI's tools talk to. It is not a turn of its own.
//!
//! When the script runs out, every further turn answers `text:done`. A request carrying
//! exactly the same conversation as the previous turn is a client's *retry* of it (Codex
//! retries a 401 five times, for instance): it gets the same step again and does not consume
//! a new one.
//!
//! # The log
//!
//! With `--log FILE`, every turn appends one JSON object as a line to FILE:
//! `{"api", "path", "turn", "retry", "tools", "has_tool_result", "tool_result", "step", "call"}`.
//! `tools` lists the names of the tools offered in the request, in order: for Claude, the
//! request's `tools` followed by the *deferred* tools it names in its system text (Claude Code
//! defers MCP tools behind `ToolSearch`); for Codex, the tools of the request and of its
//! `additional_tools` items, the nested tools declared in the `exec` description, and the
//! *deferred namespaces* (e.g. `mcp__everything`: Codex does not list deferred MCP tools one by
//! one); for Gemini, the function declarations. `tool_result` is the text of the newest tool
//! results (those in the newest user message; for Codex, the last run of tool outputs), joined
//! with newlines, or `null`. `call` is the tool call the step asked for
//! (`{"name", "offered", "arguments"}`; `offered` is true for a tool in an offered deferred
//! namespace too), or `null`. `retry` marks a retried turn (see above).
//!
//! Claude Code defers MCP tools (as above) unless `ENABLE_TOOL_SEARCH=false` is set, which puts
//! them in the request's `tools`.
//!
//! # Caveats
//!
//! Request bodies must be plain JSON (`Content-Length` or chunked); a compressed body is
//! answered `400`. Streams close the connection when done; other answers keep it alive.
//! The fake serves one CLI run: its script position and retry detection are global, not per
//! session. Claude Code gives up on a held request after its API timeout (10 minutes) and
//! retries it; a retry of a `hold` turn is held again.
//!
//! Usage errors exit with status 2, other failures with status 1.

use std::collections::hash_map::DefaultHasher;
use std::fs::{File, OpenOptions};
use std::hash::{Hash as _, Hasher as _};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use bosun_tests::http::{self, Reply, Request, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const USAGE: &str =
    "usage: fake-model-api --api anthropic|openai|gemini --script SCRIPT [--port N] [--log FILE]
SCRIPT: steps separated by `;`, one per model turn:
  text:<words> | tool:[<server>/]<tool>[:<json-args>] | call:<name>[:<json>] | hold
  | error:<status>; each may follow `gate:<path>;`, which holds its stream until <path> exists";

/// Exit status for a bad command line.
const USAGE_STATUS: u8 = 2;

/// What every turn answers once the script has run out.
const DONE_TEXT: &str = "done";

/// The pause between two events of a stream, so that clients really see a stream.
const EVENT_GAP: Duration = Duration::from_millis(20);

/// How often a held stream looks for its gate's file.
const GATE_POLL: Duration = Duration::from_millis(50);

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("fake-model-api: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(err) => {
            eprintln!("fake-model-api: {err:#}\n{USAGE}");
            return Ok(ExitCode::from(USAGE_STATUS));
        }
    };
    let log = match &options.log {
        Some(path) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the log {}", path.display()))?,
        ),
        None => None,
    };
    eprintln!(
        "fake-model-api: api {}, {} script steps",
        options.api.name(),
        options.script.len()
    );
    let fake = Arc::new(Fake {
        api: options.api,
        script: options.script,
        log: log.map(Mutex::new),
        state: Mutex::new(State::default()),
        ids: AtomicU64::new(0),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(serve(fake, options.port))?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// Command line and script
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
    Gemini,
}

impl Api {
    fn parse(value: &str) -> anyhow::Result<Self> {
        match value {
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::OpenAi),
            "gemini" => Ok(Self::Gemini),
            other => bail!("unknown api {other:?} (expected anthropic, openai or gemini)"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::Gemini => "gemini",
        }
    }
}

#[derive(Debug)]
struct Options {
    api: Api,
    script: Vec<Scripted>,
    port: u16,
    log: Option<PathBuf>,
}

#[derive(Debug)]
enum Command {
    Run(Options),
    Help,
}

/// Parses `--api`, `--script`, `--port` and `--log`, each as `--flag value` or `--flag=value`.
fn parse_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<Command> {
    let mut api = None;
    let mut script = None;
    let mut port = 0;
    let mut log = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            Some(_) | None => (arg, None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(Command::Help);
        }
        let value = match inline_value {
            Some(value) => value,
            None => args
                .next()
                .with_context(|| format!("{flag} needs a value"))?,
        };
        match flag.as_str() {
            "--api" => api = Some(Api::parse(&value)?),
            "--script" => script = Some(parse_script(&value)?),
            "--port" => {
                port = value
                    .parse()
                    .with_context(|| format!("bad port {value:?}"))?;
            }
            "--log" => log = Some(PathBuf::from(value)),
            other => bail!("unknown argument {other:?}"),
        }
    }
    Ok(Command::Run(Options {
        api: api.context("--api is required")?,
        script: script.context("--script is required")?,
        port,
        log,
    }))
}

/// One step of the script, and the file its stream waits for, if any (`gate:`).
#[derive(Clone, Debug, PartialEq)]
struct Scripted {
    gate: Option<PathBuf>,
    step: Step,
}

/// What the fake model does in one turn.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// Answer with this text.
    Text(String),
    /// Ask to call a tool.
    Tool(ToolStep),
    /// Never answer.
    Hold,
    /// Answer with this HTTP status, in the API's error format.
    Error(u16),
}

impl Step {
    fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Tool(_) => "tool",
            Self::Hold => "hold",
            Self::Error(_) => "error",
        }
    }
}

/// A `tool:` step: the MCP tool's short name, its server if the step named one, and the
/// arguments (always a JSON object); or a `call:` step (`exact`): the tool's whole name and
/// any JSON value.
#[derive(Clone, Debug, PartialEq)]
struct ToolStep {
    server: Option<String>,
    tool: String,
    args: Value,
    exact: bool,
}

fn parse_script(script: &str) -> anyhow::Result<Vec<Scripted>> {
    let mut steps = Vec::new();
    let mut gate = None;
    let mut rest = script.trim_start();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(';') {
            rest = after.trim_start();
            continue;
        }
        if let Some(body) = rest.strip_prefix("gate:") {
            let (path, after) = up_to_semicolon(body);
            ensure!(!path.trim().is_empty(), "a gate needs a file's path");
            gate = Some(PathBuf::from(path.trim()));
            rest = after.trim_start();
            continue;
        }
        let (step, after) = parse_step(rest)?;
        steps.push(Scripted {
            gate: gate.take(),
            step,
        });
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(';') {
            rest = after.trim_start();
        } else if !rest.is_empty() {
            bail!("expected `;` before {rest:?}");
        }
    }
    ensure!(gate.is_none(), "a gate comes before the step it holds");
    Ok(steps)
}

/// Splits `text` before its first `;` (or at its end).
fn up_to_semicolon(text: &str) -> (&str, &str) {
    text.find(';').map_or((text, ""), |at| text.split_at(at))
}

/// Parses the step at the start of `text`; returns it and the text after it.
fn parse_step(text: &str) -> anyhow::Result<(Step, &str)> {
    if let Some(body) = text.strip_prefix("text:") {
        let (words, rest) = up_to_semicolon(body);
        return Ok((Step::Text(words.trim().to_owned()), rest));
    }
    let tool_body = text
        .strip_prefix("tool:")
        .map(|body| (body, false))
        .or_else(|| text.strip_prefix("call:").map(|body| (body, true)));
    if let Some((body, exact)) = tool_body {
        let name_end = body.find([':', ';']).unwrap_or(body.len());
        let (name, rest) = body.split_at(name_end);
        let name = name.trim();
        let (args, rest) = match rest.strip_prefix(':') {
            Some(json_text) => {
                let mut values = serde_json::Deserializer::from_str(json_text).into_iter::<Value>();
                let args = values
                    .next()
                    .with_context(|| format!("tool step {name:?} has no JSON arguments"))?
                    .with_context(|| format!("bad JSON arguments in tool step {name:?}"))?;
                (args, json_text.get(values.byte_offset()..).unwrap_or(""))
            }
            None => (json!({}), rest),
        };
        ensure!(
            exact || args.is_object(),
            "the arguments of tool step {name:?} must be a JSON object"
        );
        let (server, tool) = match name.split_once('/') {
            Some((server, tool)) if !exact => (Some(server.to_owned()), tool),
            Some(_) | None => (None, name),
        };
        ensure!(!tool.is_empty(), "a tool step needs a tool name");
        let step = ToolStep {
            server,
            tool: tool.to_owned(),
            args,
            exact,
        };
        return Ok((Step::Tool(step), rest));
    }
    let (word, rest) = up_to_semicolon(text);
    let word = word.trim();
    if word == "hold" {
        return Ok((Step::Hold, rest));
    }
    if let Some(status) = word.strip_prefix("error:") {
        let status: u16 = status
            .trim()
            .parse()
            .with_context(|| format!("bad status in {word:?}"))?;
        ensure!(
            (400..=599).contains(&status),
            "error status {status} is not 4xx or 5xx"
        );
        return Ok((Step::Error(status), rest));
    }
    bail!("unknown script step {word:?}")
}

// ---------------------------------------------------------------------------------------------
// The fake model: turns, tool calls and the log
// ---------------------------------------------------------------------------------------------

struct Fake {
    api: Api,
    script: Vec<Scripted>,
    log: Option<Mutex<File>>,
    state: Mutex<State>,
    /// Makes ids (messages, tool calls, responses) unique within a run.
    ids: AtomicU64,
}

#[derive(Default)]
struct State {
    /// How many turns have been answered (retries not counted).
    turns: u64,
    /// The index of the next script step.
    next_step: usize,
    /// The latest turn, so that a retry of it gets the same step.
    last: Option<LastTurn>,
}

struct LastTurn {
    fingerprint: u64,
    turn: u64,
    step: Step,
    gate: Option<PathBuf>,
}

/// A turn as the fake has decided it.
struct Turn {
    number: u64,
    step: Step,
    retry: bool,
    /// Its stream waits for this file.
    gate: Option<PathBuf>,
}

/// What one turn request offered and carried.
struct Seen {
    /// Names of the offered tools, in order, without duplicates.
    tools: Vec<String>,
    /// The texts of the newest tool results.
    tool_results: Vec<String>,
}

/// The tool call a step asks for, named as the CLI calls it.
struct Call {
    name: String,
    /// Whether the request offered this tool (or a deferred namespace holding it).
    offered: bool,
    args: Value,
}

/// How a CLI names MCP tools: `mcp__<server>__<tool>` (Claude, Codex) or
/// `mcp_<server>_<tool>` (Gemini).
struct Naming {
    prefix: &'static str,
    separator: &'static str,
}

const DOUBLE_UNDERSCORE: Naming = Naming {
    prefix: "mcp__",
    separator: "__",
};
const SINGLE_UNDERSCORE: Naming = Naming {
    prefix: "mcp_",
    separator: "_",
};

impl Fake {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Decides the turn for a request carrying `conversation`, resolves its tool call, and logs
    /// it.
    fn turn(
        &self,
        request: &Request,
        conversation: &Value,
        seen: &Seen,
        naming: &Naming,
    ) -> (Turn, Option<Call>) {
        let turn = self.take_step(fingerprint(conversation));
        let call = match &turn.step {
            Step::Tool(step) => Some(resolve_call(step, &seen.tools, naming)),
            Step::Text(_) | Step::Hold | Step::Error(_) => None,
        };
        let tool_result = (!seen.tool_results.is_empty()).then(|| seen.tool_results.join("\n"));
        let entry = json!({
            "api": self.api.name(),
            "path": request.path(),
            "turn": turn.number,
            "retry": turn.retry,
            "tools": seen.tools,
            "has_tool_result": tool_result.is_some(),
            "tool_result": tool_result,
            "step": turn.step.kind(),
            "call": call.as_ref().map(|call| json!({
                "name": call.name,
                "offered": call.offered,
                "arguments": call.args,
            })),
        });
        eprintln!("fake-model-api: turn {entry}");
        self.write_log(&entry);
        (turn, call)
    }

    fn take_step(&self, fingerprint: u64) -> Turn {
        let mut state = lock(&self.state);
        if let Some(last) = &state.last
            && last.fingerprint == fingerprint
        {
            return Turn {
                number: last.turn,
                step: last.step.clone(),
                retry: true,
                gate: last.gate.clone(),
            };
        }
        state.turns += 1;
        let Scripted { gate, step } =
            self.script
                .get(state.next_step)
                .cloned()
                .unwrap_or_else(|| Scripted {
                    gate: None,
                    step: Step::Text(DONE_TEXT.to_owned()),
                });
        state.next_step = state.next_step.saturating_add(1);
        state.last = Some(LastTurn {
            fingerprint,
            turn: state.turns,
            step: step.clone(),
            gate: gate.clone(),
        });
        Turn {
            number: state.turns,
            step,
            retry: false,
            gate,
        }
    }

    fn write_log(&self, entry: &Value) {
        let Some(log) = &self.log else {
            return;
        };
        let line = format!("{entry}\n");
        // One write per line, so that a reader never sees half a line.
        if let Err(err) = lock(log).write_all(line.as_bytes()) {
            eprintln!("fake-model-api: writing the log: {err}");
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn fingerprint(conversation: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    conversation.to_string().hash(&mut hasher);
    hasher.finish()
}

/// Names the tool a step asks for the way the CLI calls it; see the module documentation.
fn resolve_call(step: &ToolStep, offered: &[String], naming: &Naming) -> Call {
    let Naming { prefix, separator } = naming;
    let tool = &step.tool;
    let name = match &step.server {
        _ if step.exact => tool.clone(),
        Some(server) => format!("{prefix}{server}{separator}{tool}"),
        None => {
            let suffix = format!("{separator}{tool}");
            offered
                .iter()
                .find(|name| *name == tool)
                .or_else(|| {
                    offered
                        .iter()
                        .find(|name| name.starts_with(prefix) && name.ends_with(&suffix))
                })
                .cloned()
                .or_else(|| {
                    offered_server(offered, naming)
                        .map(|server| format!("{prefix}{server}{separator}{tool}"))
                })
                .unwrap_or_else(|| tool.clone())
        }
    };
    // A deferred namespace (Codex's `mcp__everything`) offers every tool in it.
    let offered = offered.iter().any(|offered| {
        *offered == name
            || name
                .strip_prefix(offered.as_str())
                .is_some_and(|rest| rest.starts_with(separator))
    });
    Call {
        name,
        offered,
        args: step.args.clone(),
    }
}

/// The server of the first offered MCP tool (or deferred MCP namespace), if any.
fn offered_server<'a>(offered: &'a [String], naming: &Naming) -> Option<&'a str> {
    offered.iter().find_map(|name| {
        let rest = name.strip_prefix(naming.prefix)?;
        let server = rest
            .split_once(naming.separator)
            .map_or(rest, |(server, _)| server);
        (!server.is_empty()).then_some(server)
    })
}

fn push_unique(names: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !names.iter().any(|known| known == name) {
        names.push(name.to_owned());
    }
}

/// The `text` of a string or of a list of content blocks, joined with newlines.
fn content_text(content: &Value) -> String {
    if let Some(text) = content.as_str() {
        return text.to_owned();
    }
    content
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Splits a text in two halves (at a character boundary), to stream it in two deltas.
fn halves(text: &str) -> Vec<&str> {
    let middle = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(at, _)| at);
    let (first, second) = text.split_at(middle);
    [first, second]
        .into_iter()
        .filter(|half| !half.is_empty())
        .collect()
}

/// One server-sent event with an `event:` line, as Anthropic and OpenAI send them.
fn named_event(event: &Value) -> String {
    let name = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    format!("event: {name}\ndata: {event}\n\n")
}

fn route(fake: &Fake, request: &Request) -> Reply {
    match fake.api {
        Api::Anthropic => anthropic_route(fake, request),
        Api::OpenAi => openai_route(fake, request),
        Api::Gemini => gemini_route(fake, request),
    }
}

/// The JSON body of a turn request, or the `400` to answer instead.
fn json_body(request: &Request, api: Api) -> Result<Value, Reply> {
    serde_json::from_slice(&request.body).map_err(|err| {
        eprintln!(
            "fake-model-api: {} {}: the body is not JSON ({err}; content-encoding {:?})",
            request.method,
            request.target,
            request.header("content-encoding")
        );
        Reply::Full(error_response(api, 400))
    })
}

/// An error answer in the API's own format.
fn error_response(api: Api, status: u16) -> Response {
    let body = match api {
        Api::Anthropic => {
            let (kind, message) = match status {
                401 => ("authentication_error", "invalid x-api-key"),
                403 => ("permission_error", "Your API key does not have permission"),
                404 => ("not_found_error", "Not found"),
                429 => ("rate_limit_error", "Rate limited"),
                529 => ("overloaded_error", "Overloaded"),
                400..=499 => ("invalid_request_error", "Invalid request"),
                _ => ("api_error", "Internal server error"),
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::OpenAi => {
            let (kind, code, message) = match status {
                401 => (
                    "invalid_request_error",
                    "invalid_api_key",
                    "Incorrect API key provided: dummy.",
                ),
                404 => ("invalid_request_error", "not_found", "Not found"),
                429 => ("requests", "rate_limit_exceeded", "Rate limit reached"),
                400..=499 => (
                    "invalid_request_error",
                    "invalid_request",
                    "Invalid request",
                ),
                _ => ("server_error", "server_error", "The server had an error"),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Api::Gemini => {
            let (state, message) = match status {
                401 => (
                    "UNAUTHENTICATED",
                    "API key not valid. Please pass a valid API key.",
                ),
                403 => ("PERMISSION_DENIED", "Permission denied"),
                404 => ("NOT_FOUND", "Not found"),
                429 => ("RESOURCE_EXHAUSTED", "Resource exhausted"),
                400..=499 => ("INVALID_ARGUMENT", "Invalid argument"),
                503 => ("UNAVAILABLE", "The model is overloaded"),
                _ => ("INTERNAL", "Internal error"),
            };
            json!({"error": {"code": status, "message": message, "status": state}})
        }
    };
    Response::json(status, &body).with_header("x-should-retry", "false")
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages (Claude Code)
// ---------------------------------------------------------------------------------------------

fn anthropic_route(fake: &Fake, request: &Request) -> Reply {
    let path = request.path();
    match request.method.as_str() {
        "HEAD" => return Reply::Full(Response::new(200)),
        "GET" => return Reply::Full(Response::json(200, &json!({"data": [], "has_more": false}))),
        _ => {}
    }
    if request.method != "POST" || !path.starts_with("/v1/messages") {
        return Reply::Full(error_response(Api::Anthropic, 404));
    }
    if path.starts_with("/v1/messages/count_tokens") {
        return Reply::Full(Response::json(200, &json!({"input_tokens": 10})));
    }
    let body = match json_body(request, Api::Anthropic) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-mock");
    let id = format!("msg_fake{}", fake.next_id());
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        let message = json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "mock"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        });
        return Reply::Full(Response::json(200, &message));
    }
    let seen = Seen {
        tools: anthropic_tools(&body),
        tool_results: anthropic_tool_results(&body),
    };
    let messages = body.get("messages").unwrap_or(&Value::Null);
    let (turn, call) = fake.turn(request, messages, &seen, &DOUBLE_UNDERSCORE);
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }})];
    let stop_reason = match (&turn.step, call) {
        (Step::Tool(_), Some(call)) => {
            events.extend(anthropic_text_block(0, &format!("Calling {}.", call.name)));
            events.push(
                json!({"type": "content_block_start", "index": 1, "content_block": {
                    "type": "tool_use", "id": format!("toolu_fake{}", fake.next_id()),
                    "name": call.name, "input": {},
                }}),
            );
            let args = call.args.to_string();
            for part in halves(&args) {
                events.push(json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": part}}));
            }
            events.push(json!({"type": "content_block_stop", "index": 1}));
            "tool_use"
        }
        (Step::Text(text), _) => {
            events.extend(anthropic_text_block(0, text));
            "end_turn"
        }
        (Step::Hold, _) => return Reply::Hold,
        (Step::Error(status), _) => return Reply::Full(error_response(Api::Anthropic, *status)),
        // `turn` always resolves a call for a tool step.
        (Step::Tool(_), None) => return Reply::Full(error_response(Api::Anthropic, 500)),
    };
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 20}}));
    events.push(json!({"type": "message_stop"}));
    event_stream(events.iter().map(named_event).collect(), turn.gate)
}

fn anthropic_text_block(index: u64, text: &str) -> Vec<Value> {
    let mut events = vec![json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}})];
    for part in halves(text) {
        events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": part}}));
    }
    events.push(json!({"type": "content_block_stop", "index": index}));
    events
}

/// The request's `tools`, then the deferred tools its system text names.
fn anthropic_tools(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            push_unique(&mut names, name);
        }
    }
    let mut texts = Vec::new();
    collect_texts(body.get("system"), &mut texts);
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        collect_texts(message.get("content"), &mut texts);
    }
    for text in texts {
        for name in deferred_tool_names(text) {
            push_unique(&mut names, name);
        }
    }
    names
}

/// The text of a string, or of the `text` blocks in a list of content blocks.
fn collect_texts<'a>(content: Option<&'a Value>, texts: &mut Vec<&'a str>) {
    let Some(content) = content else {
        return;
    };
    if let Some(text) = content.as_str() {
        texts.push(text);
    }
    for block in content.as_array().into_iter().flatten() {
        if block.get("type").and_then(Value::as_str) == Some("text")
            && let Some(text) = block.get("text").and_then(Value::as_str)
        {
            texts.push(text);
        }
    }
}

/// The names Claude Code lists, one a line, after a line like "The following deferred tools
/// are now available via ToolSearch. …:".
fn deferred_tool_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut in_list = false;
    for line in text.lines().map(str::trim) {
        if in_list && !line.is_empty() && !line.contains(char::is_whitespace) {
            names.push(line);
            continue;
        }
        let lower = line.to_ascii_lowercase();
        in_list = lower.contains("deferred tools")
            && lower.contains("available")
            && !lower.contains("no longer")
            && line.ends_with(':');
    }
    names
}

/// The tool results in the newest user message.
fn anthropic_tool_results(body: &Value) -> Vec<String> {
    let last_user = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|messages| {
            messages
                .iter()
                .rev()
                .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        });
    last_user
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|block| content_text(block.get("content").unwrap_or(&Value::Null)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses (Codex CLI)
// ---------------------------------------------------------------------------------------------

fn openai_route(fake: &Fake, request: &Request) -> Reply {
    let path = request.path();
    if request.method == "GET" && path.contains("models") {
        return Reply::Full(Response::json(200, &json!({"models": [], "data": []})));
    }
    if request.method != "POST" || !path.ends_with("/responses") {
        return Reply::Full(error_response(Api::OpenAi, 404));
    }
    let body = match json_body(request, Api::OpenAi) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let seen = Seen {
        tools: openai_tools(&body),
        tool_results: openai_tool_results(&body),
    };
    let input = body.get("input").unwrap_or(&Value::Null);
    let (turn, call) = fake.turn(request, input, &seen, &DOUBLE_UNDERSCORE);
    let n = fake.next_id();
    let response_id = format!("resp_fake{n}");
    let mut events = vec![json!({"type": "response.created", "response": {"id": response_id}})];
    match (&turn.step, call) {
        (Step::Tool(_), Some(call)) => {
            let item = if call.name != "exec" && seen.tools.iter().any(|tool| tool == "exec") {
                // Code mode: MCP tools are reached from JavaScript run by the `exec` tool.
                let input = format!(
                    "const r = await tools.{}({});\ntext(JSON.stringify(r));\n",
                    js_identifier(&call.name),
                    call.args
                );
                json!({"type": "custom_tool_call", "id": format!("ctc_fake{n}"),
                    "call_id": format!("call_fake{n}"), "name": "exec", "input": input})
            } else if let Some(input) = call.args.as_str() {
                json!({"type": "custom_tool_call", "id": format!("ctc_fake{n}"),
                    "call_id": format!("call_fake{n}"), "name": call.name, "input": input})
            } else {
                json!({"type": "function_call", "id": format!("fc_fake{n}"),
                    "call_id": format!("call_fake{n}"), "name": call.name,
                    "arguments": call.args.to_string()})
            };
            events.push(
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": item}),
            );
            events.push(
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": item}),
            );
        }
        (Step::Text(text), _) => {
            let item_id = format!("msg_fake{n}");
            events.push(
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "id": item_id, "content": []}}),
            );
            for part in halves(text) {
                events.push(
                    json!({"type": "response.output_text.delta", "item_id": item_id,
                    "output_index": 0, "content_index": 0, "delta": part}),
                );
            }
            events.push(
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "id": item_id,
                    "content": [{"type": "output_text", "text": text}]}}),
            );
        }
        (Step::Hold, _) => return Reply::Hold,
        (Step::Error(status), _) => return Reply::Full(error_response(Api::OpenAi, *status)),
        // `turn` always resolves a call for a tool step.
        (Step::Tool(_), None) => return Reply::Full(error_response(Api::OpenAi, 500)),
    }
    events.push(
        json!({"type": "response.completed", "response": {"id": response_id, "usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }}}),
    );
    event_stream(events.iter().map(named_event).collect(), turn.gate)
}

/// Codex exposes tool names to JavaScript as identifiers: anything else becomes `_`.
fn js_identifier(name: &str) -> String {
    let mut identifier: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if identifier.starts_with(|c: char| c.is_ascii_digit()) {
        identifier.insert(0, '_');
    }
    identifier
}

/// The request's tools and those of its `additional_tools` items (namespaces flattened), the
/// nested tools declared in the `exec` description, then the deferred namespaces.
fn openai_tools(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    let mut nested = Vec::new();
    collect_openai_tools(body.get("tools"), &mut names, &mut nested);
    let input = body.get("input").and_then(Value::as_array);
    for item in input.into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) == Some("additional_tools") {
            collect_openai_tools(item.get("tools"), &mut names, &mut nested);
        }
    }
    for name in nested {
        push_unique(&mut names, &name);
    }
    for item in input.into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        let mut texts = Vec::new();
        for block in item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                texts.push(text);
            }
        }
        for text in texts {
            for name in deferred_namespaces(text) {
                push_unique(&mut names, name);
            }
        }
    }
    names
}

fn collect_openai_tools(tools: Option<&Value>, names: &mut Vec<String>, nested: &mut Vec<String>) {
    for tool in tools.and_then(Value::as_array).into_iter().flatten() {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind == "namespace" {
            collect_openai_tools(tool.get("tools"), names, nested);
            continue;
        }
        let name = tool.get("name").and_then(Value::as_str).unwrap_or(kind);
        push_unique(names, name);
        if name == "exec"
            && let Some(description) = tool.get("description").and_then(Value::as_str)
        {
            nested.extend(exec_declared_tools(description).map(str::to_owned));
        }
    }
}

/// The tools the `exec` description declares as `declare const tools: { name(…`.
fn exec_declared_tools(description: &str) -> impl Iterator<Item = &str> {
    const MARK: &str = "declare const tools: {";
    description.split(MARK).skip(1).filter_map(|after| {
        let after = after.trim_start();
        let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))?;
        let name = after.get(..end)?;
        (!name.is_empty() && after.get(end..)?.starts_with('(')).then_some(name)
    })
}

/// The namespaces Codex lists after "Deferred tool namespaces:" as `- name: description`.
fn deferred_namespaces(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut in_list = false;
    for line in text.lines().map(str::trim) {
        if in_list && let Some(entry) = line.strip_prefix("- ") {
            let name = entry.split_once(':').map_or(entry, |(name, _)| name).trim();
            names.push(name);
            continue;
        }
        in_list = line.eq_ignore_ascii_case("Deferred tool namespaces:");
    }
    names
}

/// The newest tool outputs: the last run of consecutive output items in the input (Codex adds
/// no user message between tool calls, so outputs of earlier calls in the turn come before
/// the newest call).
fn openai_tool_results(body: &Value) -> Vec<String> {
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        return Vec::new();
    };
    let is_output = |item: &Value| {
        matches!(
            item.get("type").and_then(Value::as_str),
            Some("function_call_output" | "custom_tool_call_output")
        )
    };
    let Some(last) = input.iter().rposition(is_output) else {
        return Vec::new();
    };
    let before = input.get(..=last).unwrap_or_default();
    let first = before
        .iter()
        .rposition(|item| !is_output(item))
        .map_or(0, |at| at + 1);
    before
        .get(first..)
        .unwrap_or_default()
        .iter()
        .map(|item| content_text(item.get("output").unwrap_or(&Value::Null)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Gemini (Gemini CLI)
// ---------------------------------------------------------------------------------------------

fn gemini_route(fake: &Fake, request: &Request) -> Reply {
    let path = request.path();
    let usage = json!({"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17});
    if request.method != "POST" {
        return Reply::Full(error_response(Api::Gemini, 404));
    }
    if path.contains(":countTokens") {
        return Reply::Full(Response::json(200, &json!({"totalTokens": 12})));
    }
    if path.contains(":generateContent") {
        // The router, classifier and next-speaker checks: they want JSON in the text.
        let text = json!({
            "reasoning": "mock", "model_choice": "flash", "complexity_reasoning": "mock",
            "complexity_score": 10, "next_speaker": "user",
        });
        let answer = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text.to_string()}]},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, "modelVersion": "mock",
        });
        return Reply::Full(Response::json(200, &answer));
    }
    if !path.contains(":streamGenerateContent") {
        return Reply::Full(error_response(Api::Gemini, 404));
    }
    let body = match json_body(request, Api::Gemini) {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let seen = Seen {
        tools: gemini_tools(&body),
        tool_results: gemini_tool_results(&body),
    };
    let contents = body.get("contents").unwrap_or(&Value::Null);
    let (turn, call) = fake.turn(request, contents, &seen, &SINGLE_UNDERSCORE);
    let candidate = |parts: Value, last: bool| {
        let mut chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "modelVersion": "mock",
        });
        if last {
            chunk["candidates"][0]["finishReason"] = json!("STOP");
            chunk["usageMetadata"] = usage.clone();
        }
        chunk
    };
    let chunks = match (&turn.step, call) {
        (Step::Tool(_), Some(call)) => vec![candidate(
            json!([{"functionCall": {"name": call.name, "args": call.args}}]),
            true,
        )],
        (Step::Text(text), _) => {
            let parts = halves(text);
            let count = parts.len();
            parts
                .into_iter()
                .enumerate()
                .map(|(at, part)| candidate(json!([{"text": part}]), at + 1 == count))
                .collect()
        }
        (Step::Hold, _) => return Reply::Hold,
        (Step::Error(status), _) => return Reply::Full(error_response(Api::Gemini, *status)),
        // `turn` always resolves a call for a tool step.
        (Step::Tool(_), None) => return Reply::Full(error_response(Api::Gemini, 500)),
    };
    event_stream(
        chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\r\n\r\n"))
            .collect(),
        turn.gate,
    )
}

fn gemini_tools(body: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let declarations = tool.get("functionDeclarations").and_then(Value::as_array);
        for declaration in declarations.into_iter().flatten() {
            if let Some(name) = declaration.get("name").and_then(Value::as_str) {
                push_unique(&mut names, name);
            }
        }
    }
    names
}

/// The function responses in the newest user content.
fn gemini_tool_results(body: &Value) -> Vec<String> {
    let last_user = body
        .get("contents")
        .and_then(Value::as_array)
        .and_then(|contents| {
            contents
                .iter()
                .rev()
                .find(|content| content.get("role").and_then(Value::as_str) == Some("user"))
        });
    last_user
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("functionResponse"))
        .map(|function_response| {
            let response = function_response.get("response").unwrap_or(&Value::Null);
            ["output", "error"]
                .into_iter()
                .find_map(|key| response.get(key).and_then(Value::as_str))
                .map_or_else(|| response.to_string(), str::to_owned)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------

/// Listens on `127.0.0.1:port`, announces the URL on stdout, and serves connections forever.
async fn serve(fake: Arc<Fake>, port: u16) -> anyhow::Result<()> {
    let (listener, port) = http::listen(port).await?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://127.0.0.1:{port}").context("writing stdout")?;
    stdout.flush().context("writing stdout")?;
    drop(stdout);
    http::serve(listener, "fake-model-api", move |request| {
        let fake = Arc::clone(&fake);
        async move { answer(&fake, &request) }
    })
    .await
}

/// Logs one request and routes it.
fn answer(fake: &Fake, request: &Request) -> Reply {
    eprintln!(
        "fake-model-api: {} {} ({} bytes)",
        request.method,
        request.target,
        request.body.len()
    );
    let reply = route(fake, request);
    if let Reply::Hold = reply {
        eprintln!("fake-model-api: holding {}", request.target);
    }
    reply
}

/// A `200` event stream of these frames, one every [`EVENT_GAP`] (the first once a file exists at
/// `gate`, if any); the connection closes after the last.
fn event_stream(frames: Vec<String>, gate: Option<PathBuf>) -> Reply {
    let (sender, receiver) = mpsc::channel(1);
    tokio::spawn(async move {
        if let Some(gate) = gate {
            eprintln!("fake-model-api: the stream waits for {}", gate.display());
            while !gate.exists() {
                if sender.is_closed() {
                    return;
                }
                tokio::time::sleep(GATE_POLL).await;
            }
        }
        for frame in frames {
            if sender.send(frame.into_bytes()).await.is_err() {
                // The client is gone.
                return;
            }
            tokio::time::sleep(EVENT_GAP).await;
        }
    });
    let head = Response::new(200)
        .with_header("Content-Type", "text/event-stream")
        .with_header("Cache-Control", "no-cache");
    Reply::Stream(head, receiver)
}
