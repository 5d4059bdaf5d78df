//! `test-mcp-server`: a small, deliberately quirky MCP server for bosun's end-to-end tests.
//!
//! It speaks just enough MCP (JSON-RPC 2.0; protocol revisions 2025-11-25, 2025-06-18,
//! 2025-03-26 and 2024-11-05) to exercise bosun's MCP client ("List tools", "inspect", "call")
//! in the ways the reference `@modelcontextprotocol/server-everything` cannot: pagination, tools
//! without annotations, a server that hangs, one that exits at once, one that answers 401, and
//! one that is not an MCP server at all.
//!
//! ```text
//! test-mcp-server [--transport stdio|http|sse] [--port N] --mode MODE
//! ```
//!
//! Transports:
//! - `stdio` (default): newline-delimited JSON-RPC messages on stdin and stdout, one JSON
//!   object per line. Logs go to stderr only. The server exits when stdin closes.
//! - `http`: a minimal MCP "Streamable HTTP" server on `127.0.0.1:N` (`--port 0`, the
//!   default, picks a free port). Once listening it prints exactly one line,
//!   `listening http://127.0.0.1:<port>/mcp`, to stdout. `POST /mcp` takes one JSON-RPC
//!   message: a request is answered `200` with an `application/json` body (the `initialize`
//!   answer also carries an `Mcp-Session-Id` header), a notification or client response gets
//!   `202` and no body, unparsable JSON gets `400` with a JSON-RPC parse error. `GET /mcp`
//!   (the server-initiated SSE stream, which we do not offer) and other methods on `/mcp` get
//!   `405`, `DELETE /mcp` gets `200`, any other path `404`. Connections are kept alive unless
//!   the client sends `Connection: close` (or speaks HTTP/1.0 without asking for keep-alive).
//! - `sse`: the older HTTP+SSE transport (MCP 2024-11-05) on `127.0.0.1:N`; it prints
//!   `listening http://127.0.0.1:<port>/sse`. `GET /sse` opens a session's event stream, whose
//!   first event is `endpoint` with `/message?sessionId=<id>`; `POST /message?sessionId=<id>`
//!   takes one JSON-RPC message, answered `202`, its answer sent on that session's stream as a
//!   `message` event (an unknown session gets `404`). `POST /test/end-streams` ends every open
//!   stream (`204`), as a server that restarted.
//!
//! Every MCP-speaking mode answers `initialize` (echoing the client's protocol version when
//! supported, else `2025-11-25`), `ping`, `tools/list`, `tools/call`, `prompts/list` (`p1`,
//! `p2`) and `resources/list` (`test://r1`); unknown methods get `-32601`, unknown tools and bad
//! arguments `-32602`, malformed JSON `-32700` with a null id. Notifications get no answer.
//!
//! Modes (`--mode`):
//! - `paged`: `tools/list` comes in three pages chained by the cursors `page-2` and `page-3`:
//!   `tool-01` … `tool-12`, four a page, plus `echo` on the last page. Each numbered tool has a
//!   title, a description, all four annotation hints (varied from tool to tool) and an input
//!   schema whose properties are, in this order, `zeta`, `alpha`, `mid`: not alphabetical, to
//!   catch a client that sorts keys.
//! - `no-annotations`: one page: `bare` (no `annotations` field, no title), `partial` (only
//!   `readOnlyHint`) and `echo`.
//! - `hang`: reads requests but never answers any (over HTTP, the connection is held open with
//!   no response). Runs until killed, or until stdin closes over stdio.
//! - `exit`: writes `line 1 of stderr` … `line 30 of stderr` to stderr, then, if `TEST_SECRET`
//!   is set, `using token <TEST_SECRET>`, and exits with status 3 without reading anything.
//! - `unauthorized` (http only): every request to `/mcp` gets `401` with a
//!   `WWW-Authenticate: Bearer resource_metadata=…, error="invalid_token"` header.
//! - `not-mcp`: over HTTP every request gets `200` with a small HTML page; over stdio every
//!   input line is answered with the line `hello, I am not an MCP server`.
//! - `endless`: every `tools/list` returns one new tool (`endless-<N>`) and a fresh cursor
//!   (`c<N>`), forever, to test that a client bounds pagination.
//! - `repeat-cursor`: every `tools/list` returns the tool `looping` and the cursor `same`: a
//!   cursor loop.
//! - `echo-secrets`: a server that gives back every secret it was given, to test that bosun
//!   shows none: what it was "given" is `TEST_SECRET` from its environment and, over HTTP, the
//!   request's `Authorization` and `X-Api-Key` headers and its query string, joined with
//!   spaces (over `sse`, the query is that of the session's `GET /sse`). `initialize` puts it
//!   in `instructions`; `tools/list` offers `reveal` (read-only by
//!   its annotations; its description holds it) and `fail`; calling `reveal` answers it as text and as
//!   `structuredContent` `{"given": …}`; calling `fail` answers a JSON-RPC error whose message
//!   holds it; `reveal`'s input schema has it in the description of its property `why`. It
//!   also writes it to stderr at each request.
//! - `malformed`: one page with good and malformed tool definitions side by side: `echo`;
//!   `schema-ref`, whose input schema is JSON Schema 2020-12 with `$schema`, `$defs`, a `$ref`,
//!   a keyword no one knows (`x-vendor`) and numbers such as `1.50` (answered `called schema-ref`);
//!   `no-schema` (no `inputSchema`); a tool with no name; `bad-hints` (`readOnlyHint: "yes"`);
//!   and `array-schema` (an `inputSchema` that is an array). With `TEST_SECRET` set, a last
//!   tool, `leaky`, is malformed with that value as its `readOnlyHint` (what is wrong with it
//!   quotes it).
//! - `big`: one page, `big` and `echo`; calling `big` with `{"bytes": N}` answers a text of
//!   exactly N bytes (`x` repeated), in one message: a result as large as a test wants.
//!
//! Usage errors exit with status 2, other failures with status 1.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, bail};
use bosun_tests::http::{self, Request, Response};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

const USAGE: &str = "usage: test-mcp-server [--transport stdio|http|sse] [--port N] --mode MODE
modes: paged, no-annotations, hang, exit, unauthorized (http only), not-mcp, endless, repeat-cursor,
echo-secrets, malformed, big";

const SERVER_NAME: &str = "bosun-test-mcp";
const SERVER_VERSION: &str = "1.0.0";
const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const MCP_PATH: &str = "/mcp";
const SSE_PATH: &str = "/sse";
const SSE_POST_PATH: &str = "/message";
const NOT_MCP_LINE: &str = "hello, I am not an MCP server";
const NOT_MCP_PAGE: &str = "<html><body>hello</body></html>";

/// Exit status of the `exit` mode.
const EXIT_MODE_STATUS: u8 = 3;
/// Exit status for a bad command line.
const USAGE_STATUS: u8 = 2;
/// How many lines the `exit` mode writes to stderr (before the optional secret line).
const EXIT_MODE_STDERR_LINES: usize = 30;

/// Tools per page in the `paged` mode, and how many pages there are.
const PAGE_SIZE: usize = 4;
const PAGE_COUNT: usize = 3;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("test-mcp-server: error: {err:#}");
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
            eprintln!("test-mcp-server: {err:#}\n{USAGE}");
            return Ok(ExitCode::from(USAGE_STATUS));
        }
    };
    if options.mode == Mode::Exit {
        return exit_at_once();
    }
    if options.mode == Mode::Unauthorized && options.transport != Transport::Http {
        eprintln!("test-mcp-server: the unauthorized mode needs --transport http\n{USAGE}");
        return Ok(ExitCode::from(USAGE_STATUS));
    }
    eprintln!(
        "test-mcp-server: mode {}, transport {}",
        options.mode.name(),
        options.transport.name()
    );
    let server = Arc::new(McpServer::new(options.mode));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    match options.transport {
        Transport::Stdio => runtime.block_on(serve_stdio(&server))?,
        Transport::Http => runtime.block_on(serve_http(server, options.port))?,
        Transport::Sse => runtime.block_on(serve_sse(server, options.port))?,
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
    Sse,
}

impl Transport {
    fn parse(value: &str) -> anyhow::Result<Self> {
        match value {
            "stdio" => Ok(Self::Stdio),
            "http" => Ok(Self::Http),
            "sse" => Ok(Self::Sse),
            other => bail!("unknown transport {other:?} (expected stdio, http or sse)"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
        }
    }
}

/// How the server misbehaves; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Paged,
    NoAnnotations,
    Hang,
    Exit,
    Unauthorized,
    NotMcp,
    Endless,
    RepeatCursor,
    EchoSecrets,
    Malformed,
    Big,
}

impl Mode {
    const ALL: [Self; 11] = [
        Self::Paged,
        Self::NoAnnotations,
        Self::Hang,
        Self::Exit,
        Self::Unauthorized,
        Self::NotMcp,
        Self::Endless,
        Self::RepeatCursor,
        Self::EchoSecrets,
        Self::Malformed,
        Self::Big,
    ];

    fn parse(value: &str) -> anyhow::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.name() == value)
            .with_context(|| format!("unknown mode {value:?}"))
    }

    fn name(self) -> &'static str {
        match self {
            Self::Paged => "paged",
            Self::NoAnnotations => "no-annotations",
            Self::Hang => "hang",
            Self::Exit => "exit",
            Self::Unauthorized => "unauthorized",
            Self::NotMcp => "not-mcp",
            Self::Endless => "endless",
            Self::RepeatCursor => "repeat-cursor",
            Self::EchoSecrets => "echo-secrets",
            Self::Malformed => "malformed",
            Self::Big => "big",
        }
    }
}

#[derive(Debug)]
struct Options {
    transport: Transport,
    port: u16,
    mode: Mode,
}

#[derive(Debug)]
enum Command {
    Run(Options),
    Help,
}

/// Parses `--transport`, `--port` and `--mode`, each as `--flag value` or `--flag=value`.
fn parse_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<Command> {
    let mut transport = Transport::Stdio;
    let mut port = 0;
    let mut mode = None;
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
            "--transport" => transport = Transport::parse(&value)?,
            "--port" => {
                port = value
                    .parse()
                    .with_context(|| format!("bad port {value:?}"))?;
            }
            "--mode" => mode = Some(Mode::parse(&value)?),
            other => bail!("unknown argument {other:?}"),
        }
    }
    let mode = mode.context("--mode is required")?;
    Ok(Command::Run(Options {
        transport,
        port,
        mode,
    }))
}

// ---------------------------------------------------------------------------------------------
// The `exit` mode
// ---------------------------------------------------------------------------------------------

/// Writes the stderr lines of the `exit` mode and returns its exit status, reading nothing.
fn exit_at_once() -> anyhow::Result<ExitCode> {
    let mut stderr = std::io::stderr().lock();
    for n in 1..=EXIT_MODE_STDERR_LINES {
        writeln!(stderr, "line {n} of stderr")?;
    }
    if let Some(secret) = std::env::var_os("TEST_SECRET") {
        writeln!(stderr, "using token {}", secret.to_string_lossy())?;
    }
    stderr.flush()?;
    Ok(ExitCode::from(EXIT_MODE_STATUS))
}

// ---------------------------------------------------------------------------------------------
// The MCP protocol, independent of the transport
// ---------------------------------------------------------------------------------------------

/// What to send back for one incoming message.
#[derive(Debug)]
enum Reply {
    /// The response to a request.
    Response(Value),
    /// The response to a successful `initialize`: over HTTP, it starts a session.
    SessionStart(Value),
    /// The message could not be parsed or is not a JSON-RPC message: this error response.
    Rejected(Value),
    /// A notification, or a response from the client: nothing to send.
    Silent,
}

impl Reply {
    fn into_message(self) -> Option<Value> {
        match self {
            Self::Response(message) | Self::SessionStart(message) | Self::Rejected(message) => {
                Some(message)
            }
            Self::Silent => None,
        }
    }
}

/// A JSON-RPC error to answer a request with.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }
}

/// The server's state: its mode and a few counters.
struct McpServer {
    mode: Mode,
    /// How many pages the `endless` mode has handed out.
    endless_pages: AtomicU64,
    /// How many HTTP sessions have been started.
    sessions: AtomicU64,
    /// What the `echo-secrets` mode was given with the request being handled.
    given: std::sync::Mutex<String>,
}

impl McpServer {
    fn new(mode: Mode) -> Self {
        Self {
            mode,
            endless_pages: AtomicU64::new(0),
            sessions: AtomicU64::new(0),
            given: std::sync::Mutex::new(given_from(&[])),
        }
    }

    /// What the `echo-secrets` mode gives back.
    fn given(&self) -> String {
        self.given.lock().map(|g| g.clone()).unwrap_or_default()
    }

    fn new_session_id(&self) -> String {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        format!("bosun-test-{}-{n}", std::process::id())
    }

    /// Handles one serialized JSON-RPC message.
    fn handle_text(&self, text: &str) -> Reply {
        match serde_json::from_str(text) {
            Ok(message) => self.handle_message(message),
            Err(err) => {
                eprintln!("test-mcp-server: malformed JSON: {err}");
                Reply::Rejected(error_response(Value::Null, PARSE_ERROR, "Parse error"))
            }
        }
    }

    fn handle_message(&self, message: Value) -> Reply {
        let Value::Object(mut fields) = message else {
            return invalid_request();
        };
        let method = match fields.get("method") {
            None => None,
            Some(Value::String(method)) => Some(method.clone()),
            Some(_) => return invalid_request(),
        };
        match (fields.remove("id"), method) {
            (Some(id), Some(method)) => self.handle_request(id, &method, fields.get("params")),
            (None, Some(method)) => {
                eprintln!("test-mcp-server: notification {method}");
                Reply::Silent
            }
            // A response to a request of ours; we never send any, so there is nothing to do.
            (Some(_), None) => Reply::Silent,
            (None, None) => invalid_request(),
        }
    }

    fn handle_request(&self, id: Value, method: &str, params: Option<&Value>) -> Reply {
        eprintln!("test-mcp-server: request {method} (id {id})");
        match self.dispatch(method, params) {
            Ok(result) => {
                let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
                if method == "initialize" {
                    Reply::SessionStart(response)
                } else {
                    Reply::Response(response)
                }
            }
            Err(err) => Reply::Response(error_response(id, err.code, &err.message)),
        }
    }

    fn dispatch(&self, method: &str, params: Option<&Value>) -> Result<Value, RpcError> {
        if self.mode == Mode::EchoSecrets {
            eprintln!("test-mcp-server: given {}", self.given());
        }
        match method {
            "initialize" if self.mode == Mode::EchoSecrets => {
                let mut result = initialize_result(params);
                result["instructions"] = json!(format!("I was given: {}", self.given()));
                Ok(result)
            }
            "initialize" => Ok(initialize_result(params)),
            "ping" => Ok(json!({})),
            "tools/list" => self.list_tools(cursor(params)?),
            "tools/call" => self.call_tool(params),
            "prompts/list" => Ok(json!({"prompts": [{"name": "p1"}, {"name": "p2"}]})),
            "resources/list" => Ok(json!({"resources": [{"uri": "test://r1", "name": "r1"}]})),
            _ => Err(RpcError {
                code: METHOD_NOT_FOUND,
                message: "Method not found".to_owned(),
            }),
        }
    }

    fn list_tools(&self, cursor: Option<&str>) -> Result<Value, RpcError> {
        match self.mode {
            Mode::Paged => paged_tools(cursor),
            Mode::NoAnnotations => Ok(json!({"tools": [bare_tool(), partial_tool(), echo_tool()]})),
            Mode::Endless => {
                let n = self.endless_pages.fetch_add(1, Ordering::Relaxed) + 1;
                Ok(json!({
                    "tools": [plain_tool(&format!("endless-{n}"))],
                    "nextCursor": format!("c{n}"),
                }))
            }
            Mode::RepeatCursor => Ok(json!({
                "tools": [plain_tool("looping")],
                "nextCursor": "same",
            })),
            Mode::EchoSecrets => {
                let mut reveal = plain_tool("reveal");
                reveal["description"] = json!(format!("Tells what it was given: {}", self.given()));
                reveal["annotations"] = json!({
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false,
                });
                reveal["inputSchema"]["properties"] = json!({
                    "why": {"type": "string", "description": format!("given: {}", self.given())},
                });
                Ok(json!({"tools": [reveal, plain_tool("fail")]}))
            }
            Mode::Malformed => Ok(malformed_tools()),
            Mode::Big => {
                let mut big = plain_tool("big");
                big["inputSchema"]["properties"] = json!({"bytes": {"type": "integer"}});
                Ok(json!({"tools": [big, echo_tool()]}))
            }
            // These modes never get as far as answering a request.
            Mode::Hang | Mode::Exit | Mode::Unauthorized | Mode::NotMcp => Ok(json!({"tools": []})),
        }
    }

    fn call_tool(&self, params: Option<&Value>) -> Result<Value, RpcError> {
        let name = params
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("tools/call needs a string `name`"))?;
        if !self.knows_tool(name) {
            return Err(RpcError::invalid_params(format!("unknown tool {name}")));
        }
        if name == "echo" {
            let message = params
                .and_then(|params| params.get("arguments"))
                .and_then(|arguments| arguments.get("message"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    RpcError::invalid_params("echo needs a string argument `message`")
                })?;
            return Ok(text_content(&format!("Echo: {message}")));
        }
        if name == "reveal" {
            let given = self.given();
            let mut result = text_content(&format!("I was given: {given}"));
            result["structuredContent"] = json!({ "given": given });
            return Ok(result);
        }
        if name == "big" {
            let bytes = params
                .and_then(|params| params.get("arguments"))
                .and_then(|arguments| arguments.get("bytes"))
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| RpcError::invalid_params("big needs a number argument `bytes`"))?;
            return Ok(text_content(&"x".repeat(bytes)));
        }
        if name == "fail" {
            return Err(RpcError {
                code: INVALID_PARAMS,
                message: format!("failed on purpose, holding {}", self.given()),
            });
        }
        Ok(text_content(&format!("called {name}")))
    }

    /// Whether `name` is a tool this mode lists.
    fn knows_tool(&self, name: &str) -> bool {
        match self.mode {
            Mode::Paged => {
                name == "echo" || (1..=PAGE_SIZE * PAGE_COUNT).any(|n| paged_tool_name(n) == name)
            }
            Mode::NoAnnotations => matches!(name, "bare" | "partial" | "echo"),
            Mode::Endless => {
                let listed = self.endless_pages.load(Ordering::Relaxed);
                name.strip_prefix("endless-")
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| (1..=listed).contains(&n))
            }
            Mode::RepeatCursor => name == "looping",
            Mode::EchoSecrets => matches!(name, "reveal" | "fail"),
            Mode::Malformed => matches!(name, "echo" | "schema-ref"),
            Mode::Big => matches!(name, "big" | "echo"),
            Mode::Hang | Mode::Exit | Mode::Unauthorized | Mode::NotMcp => false,
        }
    }
}

/// What the `echo-secrets` mode was given: `TEST_SECRET`, then `extra` (a request's headers and
/// query), the non-empty ones joined with spaces.
fn given_from(extra: &[&str]) -> String {
    let env = std::env::var("TEST_SECRET").unwrap_or_default();
    std::iter::once(env.as_str())
        .chain(extra.iter().copied())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn invalid_request() -> Reply {
    Reply::Rejected(error_response(
        Value::Null,
        INVALID_REQUEST,
        "Invalid Request",
    ))
}

fn initialize_result(params: Option<&Value>) -> Value {
    let requested = params
        .and_then(|params| params.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = requested
        .filter(|version| SUPPORTED_PROTOCOL_VERSIONS.contains(version))
        .unwrap_or(LATEST_PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}, "prompts": {}, "resources": {}},
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
    })
}

/// The `cursor` of a `tools/list` request, if any (`null` counts as none).
fn cursor(params: Option<&Value>) -> Result<Option<&str>, RpcError> {
    match params.and_then(|params| params.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => Ok(Some(cursor)),
        Some(_) => Err(RpcError::invalid_params("cursor must be a string")),
    }
}

fn text_content(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/// One page of the `paged` mode: no cursor is page 1, `page-2` and `page-3` the others.
fn paged_tools(cursor: Option<&str>) -> Result<Value, RpcError> {
    let page = match cursor {
        None => 1,
        Some(cursor) => cursor
            .strip_prefix("page-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (2..=PAGE_COUNT).contains(n))
            .ok_or_else(|| RpcError::invalid_params(format!("invalid cursor {cursor}")))?,
    };
    let first = (page - 1) * PAGE_SIZE + 1;
    let mut tools: Vec<Value> = (first..first + PAGE_SIZE)
        .map(|n| paged_tool(n, page))
        .collect();
    if page == PAGE_COUNT {
        tools.push(echo_tool());
        Ok(json!({"tools": tools}))
    } else {
        Ok(json!({"tools": tools, "nextCursor": format!("page-{}", page + 1)}))
    }
}

fn paged_tool_name(n: usize) -> String {
    format!("tool-{n:02}")
}

/// Tool `n` of the `paged` mode. The schema's properties are deliberately not in alphabetical
/// order, and the annotation hints vary with `n` (tool-01 read-only, tool-02 destructive, …).
fn paged_tool(n: usize, page: usize) -> Value {
    json!({
        "name": paged_tool_name(n),
        "title": format!("Tool {n:02}"),
        "description": format!("Paged test tool number {n}, on page {page}"),
        "inputSchema": {
            "type": "object",
            "properties": {
                "zeta": {"type": "string", "description": "last letter"},
                "alpha": {"type": "integer", "description": "first letter"},
                "mid": {"type": "boolean"},
            },
            "required": ["zeta"],
        },
        "annotations": {
            "readOnlyHint": n % 3 == 1,
            "destructiveHint": n % 3 == 2,
            "idempotentHint": n.is_multiple_of(2),
            "openWorldHint": n.is_multiple_of(4),
        },
    })
}

/// `echo`: returns `Echo: <message>`; it has all four annotation hints. With `TEST_TOOL_NOTE`
/// set, its description ends with the note in brackets (a tool that changed).
fn echo_tool() -> Value {
    let description = match std::env::var("TEST_TOOL_NOTE") {
        Ok(note) => format!("Echoes the message back ({note})"),
        Err(_) => "Echoes the message back".to_string(),
    };
    json!({
        "name": "echo",
        "title": "Echo",
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "the text to echo back"},
            },
            "required": ["message"],
        },
        "annotations": {
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        },
    })
}

/// The input schema of `schema-ref`, as a text: sent as it is written, numbers and all.
const SCHEMA_REF: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"point":{"type":"object","properties":{"x":{"type":"number","minimum":1.50},"y":{"type":"number"}},"required":["x","y"]}},"properties":{"at":{"$ref":"#/$defs/point"},"label":{"type":["string","null"],"x-vendor":{"keep":[1,2,3]}}},"required":["at"],"additionalProperties":false}"##;

/// The one page of the `malformed` mode.
fn malformed_tools() -> Value {
    let schema: Value = serde_json::from_str(SCHEMA_REF).unwrap_or(Value::Null);
    let mut page = json!({"tools": [
        echo_tool(),
        {"name": "schema-ref", "description": "Takes a point", "inputSchema": schema},
        {"name": "no-schema", "description": "Has no inputSchema"},
        {"description": "Has no name", "inputSchema": {"type": "object"}},
        {"name": "bad-hints", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "yes"}},
        {"name": "array-schema", "inputSchema": [1, 2]},
    ]});
    if let Ok(secret) = std::env::var("TEST_SECRET")
        && let Some(tools) = page["tools"].as_array_mut()
    {
        tools.push(json!({
            "name": "leaky",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": secret},
        }));
    }
    page
}

/// A tool with no `annotations` field and no title.
fn bare_tool() -> Value {
    json!({
        "name": "bare",
        "description": "A tool without annotations or title",
        "inputSchema": {"type": "object", "properties": {}},
    })
}

/// A tool whose annotations have only `readOnlyHint`.
fn partial_tool() -> Value {
    json!({
        "name": "partial",
        "title": "Partial",
        "description": "A tool with only some annotations",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": true},
    })
}

/// A minimal tool for the `endless` and `repeat-cursor` modes.
fn plain_tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("The tool {name}"),
        "inputSchema": {"type": "object", "properties": {}},
    })
}

// ---------------------------------------------------------------------------------------------
// stdio transport
// ---------------------------------------------------------------------------------------------

/// Serves newline-delimited JSON-RPC on stdin and stdout until stdin closes.
async fn serve_stdio(server: &McpServer) -> anyhow::Result<()> {
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut stdout = tokio::io::stdout();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = stdin
            .read_until(b'\n', &mut line)
            .await
            .context("reading stdin")?;
        if read == 0 {
            eprintln!("test-mcp-server: stdin closed, exiting");
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        if let Some(reply) = stdio_reply(server, &text)? {
            stdout
                .write_all(reply.as_bytes())
                .await
                .context("writing stdout")?;
            stdout.write_all(b"\n").await.context("writing stdout")?;
            stdout.flush().await.context("writing stdout")?;
        }
    }
}

/// The line to answer one input line with, if any.
fn stdio_reply(server: &McpServer, text: &str) -> anyhow::Result<Option<String>> {
    match server.mode {
        Mode::Paged
        | Mode::NoAnnotations
        | Mode::Endless
        | Mode::RepeatCursor
        | Mode::EchoSecrets
        | Mode::Malformed
        | Mode::Big => server
            .handle_text(text)
            .into_message()
            .map(|message| serde_json::to_string(&message))
            .transpose()
            .context("serializing a response"),
        Mode::NotMcp => Ok(Some(NOT_MCP_LINE.to_owned())),
        // `exit` and `unauthorized` never get here; `hang` answers nothing.
        Mode::Hang | Mode::Exit | Mode::Unauthorized => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP transport
// ---------------------------------------------------------------------------------------------

/// Listens on `127.0.0.1:port`, announces the URL on stdout, and serves connections forever.
async fn serve_http(server: Arc<McpServer>, port: u16) -> anyhow::Result<()> {
    let (listener, port) = http::listen(port).await?;
    announce(port)?;
    http::serve(listener, "test-mcp-server", move |request| {
        let server = Arc::clone(&server);
        async move { http_reply(&server, &request, port) }
    })
    .await
}

/// Prints the one line tests wait for, `listening http://127.0.0.1:<port>/mcp`.
fn announce(port: u16) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://127.0.0.1:{port}{MCP_PATH}").context("writing stdout")?;
    stdout.flush().context("writing stdout")
}

/// The answer to one HTTP request: the response, or none at all in the `hang` mode.
fn http_reply(server: &McpServer, request: &Request, port: u16) -> http::Reply {
    match route(server, request, port) {
        Some(response) => http::Reply::Full(response),
        None => {
            eprintln!(
                "test-mcp-server: hanging on {} {}",
                request.method, request.target
            );
            http::Reply::Hold
        }
    }
}

/// Picks the response to a request; `None` means never answer (the `hang` mode).
fn route(server: &McpServer, request: &Request, port: u16) -> Option<Response> {
    let on_mcp = request.path() == MCP_PATH;
    if server.mode == Mode::EchoSecrets
        && let Ok(mut given) = server.given.lock()
    {
        // One request at a time (a current-thread runtime, and no await in between).
        *given = given_from(&[
            request.header("authorization").unwrap_or_default(),
            request.header("x-api-key").unwrap_or_default(),
            request.query(),
        ]);
    }
    match server.mode {
        Mode::NotMcp => Some(Response::new(200).with_body("text/html", NOT_MCP_PAGE)),
        Mode::Unauthorized if on_mcp => Some(unauthorized(port)),
        Mode::Hang if on_mcp && request.method == "POST" => None,
        Mode::Paged
        | Mode::NoAnnotations
        | Mode::Endless
        | Mode::RepeatCursor
        | Mode::EchoSecrets
        | Mode::Malformed
        | Mode::Big
        | Mode::Hang
        | Mode::Unauthorized
        | Mode::Exit => Some(mcp_endpoint(server, request, on_mcp)),
    }
}

/// The Streamable HTTP endpoint at `/mcp`.
fn mcp_endpoint(server: &McpServer, request: &Request, on_mcp: bool) -> Response {
    if !on_mcp {
        return Response::new(404);
    }
    match request.method.as_str() {
        "POST" => post_message(server, &request.body),
        "DELETE" => Response::new(200),
        // GET would open the server-initiated SSE stream, which we do not offer.
        _ => Response::new(405).with_header("Allow", "POST, DELETE"),
    }
}

/// Answers one JSON-RPC message POSTed to `/mcp`.
fn post_message(server: &McpServer, body: &[u8]) -> Response {
    match server.handle_text(&String::from_utf8_lossy(body)) {
        Reply::Response(message) => Response::json(200, &message),
        Reply::SessionStart(message) => {
            Response::json(200, &message).with_header("Mcp-Session-Id", server.new_session_id())
        }
        Reply::Rejected(message) => Response::json(400, &message),
        Reply::Silent => Response::new(202),
    }
}

fn unauthorized(port: u16) -> Response {
    let challenge = format!(
        "Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource\", error=\"invalid_token\""
    );
    Response::json(401, &json!({"error": "invalid_token"}))
        .with_header("WWW-Authenticate", challenge)
}

// ---------------------------------------------------------------------------------------------
// HTTP+SSE transport (MCP 2024-11-05)
// ---------------------------------------------------------------------------------------------

/// The open event streams, by session id: where its answers go, and the query of its `GET`.
type Streams = Arc<
    std::sync::Mutex<
        std::collections::HashMap<String, (tokio::sync::mpsc::Sender<Vec<u8>>, String)>,
    >,
>;

/// Listens on `127.0.0.1:port`, announces `listening http://127.0.0.1:<port>/sse`, and serves
/// the HTTP+SSE transport forever.
async fn serve_sse(server: Arc<McpServer>, port: u16) -> anyhow::Result<()> {
    let (listener, port) = http::listen(port).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening http://127.0.0.1:{port}{SSE_PATH}")
            .context("writing stdout")?;
        stdout.flush().context("writing stdout")?;
    }
    let streams: Streams = Arc::default();
    http::serve(listener, "test-mcp-server", move |request| {
        let server = Arc::clone(&server);
        let streams = Arc::clone(&streams);
        async move { sse_reply(&server, &streams, &request) }
    })
    .await
}

fn sse_reply(server: &McpServer, streams: &Streams, request: &Request) -> http::Reply {
    let Ok(mut open) = streams.lock() else {
        return http::Reply::Full(Response::new(500));
    };
    match (request.method.as_str(), request.path()) {
        ("GET", SSE_PATH) => {
            let (tx, rx) = tokio::sync::mpsc::channel(64);
            let id = server.new_session_id();
            let first = format!("event: endpoint\ndata: {SSE_POST_PATH}?sessionId={id}\n\n");
            let _ = tx.try_send(first.into_bytes());
            open.insert(id, (tx, request.query().to_string()));
            let head = Response::new(200)
                .with_header("Content-Type", "text/event-stream")
                .with_header("Cache-Control", "no-cache");
            http::Reply::Stream(head, rx)
        }
        ("POST", SSE_POST_PATH) => {
            let id = request.query_param("sessionId").unwrap_or_default();
            let Some((tx, query)) = open.get(&id).cloned() else {
                return http::Reply::Full(Response::text(404, "no such session"));
            };
            if server.mode == Mode::EchoSecrets
                && let Ok(mut given) = server.given.lock()
            {
                *given = given_from(&[
                    request.header("authorization").unwrap_or_default(),
                    request.header("x-api-key").unwrap_or_default(),
                    &query,
                ]);
            }
            if server.mode == Mode::Hang {
                return http::Reply::Full(Response::new(202));
            }
            let reply = server.handle_text(&String::from_utf8_lossy(&request.body));
            if let Some(message) = reply.into_message() {
                let event = format!("event: message\ndata: {message}\n\n");
                if tx.try_send(event.into_bytes()).is_err() {
                    open.remove(&id);
                    return http::Reply::Full(Response::text(404, "the session's stream is gone"));
                }
            }
            http::Reply::Full(Response::new(202))
        }
        ("POST", "/test/end-streams") => {
            open.clear();
            http::Reply::Full(Response::new(204))
        }
        _ => http::Reply::Full(Response::new(404)),
    }
}
