//! Talking to one MCP server for a moment: start it (or reach its address), `initialize`, list
//! or call, and stop it again — with a deadline on every step, the server's whole process group
//! ended on every path, and every failure told in plain words.
//!
//! The happy path is rmcp's. When something fails, the failure is diagnosed separately: a
//! stdio server's exit status and the last lines of its stderr, or, for an address, one plain
//! `initialize` POST that shows what the server really answers (401, TLS, refused, not MCP at
//! all). A server's own words are redacted (its [`Redactor`]) before they are cut short.

use crate::McpError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bosun_shared::mcp::ServerKind;
use bosun_shared::process::{Helper, HelperError};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ClientServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    ListToolsRequest, PaginatedRequestParams, ServerResult,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use super::redact::Redactor;
use super::revision::{self, Observed, Revision};
use super::sse::{SseError, SseTransport};
use super::tap::{Pages, Tap};
use super::tools::{self, Listed};

mod stdout;
pub use stdout::MESSAGE_MAX;
use stdout::{LineWatch, OddLines, Oversize, Sniff, ended_oversize, seen};

/// How a server is reached, with its secret values (only for the moment of the call).
pub struct Endpoint {
    pub server: String,
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    pub env: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    /// Replaces the secret values above (and the address's query) in what the server says.
    pub redactor: Redactor,
    /// The token in `headers` is DPoP-bound: every request carries a fresh proof.
    pub dpop: Option<super::dpop_http::Binding>,
    /// Runs let the server ask the person for input, or for a message of the model (its
    /// elicitation or sampling policy is `ask`): bosun says it can be asked too, so that the
    /// tools it sees are those runs are offered.
    pub offers_elicitation: bool,
    pub offers_sampling: bool,
}

impl Endpoint {
    /// Whether starting it may download a package first (an `npx` command).
    pub fn may_download(&self) -> bool {
        let is_npx = |s: &str| {
            std::path::Path::new(s)
                .file_name()
                .is_some_and(|n| n == "npx" || n == "pnpx" || n == "bunx" || n == "uvx")
        };
        self.command.as_deref().is_some_and(is_npx)
    }

    /// `text` with every secret value replaced by `[redacted]` and the address shown as
    /// bosun shows it.
    pub fn redact(&self, text: &str) -> String {
        self.redactor.text(text)
    }
}

/// Deadlines and bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// To start or reach the server and finish `initialize`.
    pub connect: Duration,
    /// For each request after that.
    pub request: Duration,
    pub max_pages: usize,
    pub max_tools: usize,
}

/// The most tools bosun keeps of one server: a look stops there, and so does the list of tools
/// runs held back.
pub const MOST_TOOLS: usize = 5000;

impl Limits {
    /// 30 s to connect, or 2 minutes for a server that may download its package first;
    /// `BOSUN_MCP_TIMEOUT` (such as `5s`) in bosund's environment sets both deadlines.
    pub fn for_endpoint(ep: &Endpoint) -> Self {
        let configured = std::env::var("BOSUN_MCP_TIMEOUT")
            .ok()
            .and_then(|t| bosun_shared::time::parse_duration(&t).ok());
        let connect = configured.unwrap_or(if ep.may_download() {
            Duration::from_secs(120)
        } else {
            Duration::from_secs(30)
        });
        Self {
            connect,
            request: configured.unwrap_or(Duration::from_secs(30)),
            max_pages: 100,
            max_tools: MOST_TOOLS,
        }
    }
}

/// A connection to a server, for one look.
pub struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    process: Option<ServerProcess>,
    /// A stdio server's messages past [`MESSAGE_MAX`], as [`LineWatch`] sees them; `None` over
    /// HTTP, where such an answer fails its request instead.
    oversize: Option<watch::Receiver<Option<Oversize>>>,
    limits: Limits,
    /// How long starting (or reaching) and `initialize` took.
    pub connect_time: Duration,
    /// The revision spoken, and why.
    pub revision: Revision,
    /// The `tools/list` results as the server sent them.
    pages: Pages,
    /// Arguments marked `x-mcp-header` travel as headers too (2026-07-28 over HTTP).
    param_headers: bool,
}

/// A stdio server's process: its group is ended when this is dropped, whatever happened.
struct ServerProcess {
    helper: Helper,
    stderr: Arc<Mutex<StderrTail>>,
    /// Reads stderr until it closes.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    /// The lines it wrote on stdout that cannot be JSON-RPC.
    odd: Arc<Mutex<OddLines>>,
}

/// The last lines a server wrote on stderr.
#[derive(Default)]
struct StderrTail {
    lines: VecDeque<String>,
}

const STDERR_LINES: usize = 12;

impl StderrTail {
    fn push(&mut self, line: String) {
        if self.lines.len() == STDERR_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

/// bosun as a client: no capabilities (no roots; elicitation and sampling only when runs offer
/// them, see [`Endpoint::offers_elicitation`]), and the handshake revision for a server that has
/// a handshake (the stateless one is asked for by [`revision::lifecycle`]).
fn client_info(ep: &Endpoint) -> ClientConfig {
    let mut caps = ClientCapabilities::default();
    if ep.offers_elicitation {
        caps.elicitation = Some(rmcp::model::ElicitationCapability::new());
    }
    if ep.offers_sampling {
        caps.sampling = Some(rmcp::model::SamplingCapability::default());
    }
    let mut info = ClientConfig::new(
        caps,
        Implementation::new("bosun", env!("CARGO_PKG_VERSION")),
    );
    info.protocol_version = revision::legacy();
    info
}

/// The revision a service settled on, and why.
fn settled(
    service: &RunningService<RoleClient, ClientConfig>,
    heard: &revision::Listener,
) -> Revision {
    let version = service
        .peer_info()
        .map(|p| p.protocol_version.clone())
        .unwrap_or_else(revision::legacy);
    heard.revision(&version)
}

/// Starts or reaches the server and initializes a session with it.
pub async fn connect(ep: &Endpoint, limits: Limits) -> Result<Connection, McpError> {
    let started = Instant::now();
    match ep.kind {
        ServerKind::Stdio => connect_stdio(ep, limits, started).await,
        ServerKind::Http | ServerKind::Sse => connect_http(ep, limits, started).await,
    }
}

async fn connect_stdio(
    ep: &Endpoint,
    limits: Limits,
    started: Instant,
) -> Result<Connection, McpError> {
    let command = ep
        .command
        .clone()
        .ok_or_else(|| McpError::BadConfig("the server has no command".into()))?;
    let mut helper = spawn_server(ep, &command)?;
    let (stderr, stderr_reader) = tail_stderr(&mut helper);
    let child = helper.child();
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(McpError::CannotStart {
            command,
            reason: "its stdin and stdout could not be connected".into(),
        });
    };
    let sniffed = Arc::new(Mutex::new(Vec::new()));
    let odd = Arc::new(Mutex::new(OddLines {
        redactor: ep.redactor.clone(),
        mid_line: false,
        count: 0,
        first: String::new(),
    }));
    let (oversize_tx, oversize) = watch::channel(None);
    let stdout = Sniff {
        inner: LineWatch::new(stdout, oversize_tx),
        seen: sniffed.clone(),
        odd: odd.clone(),
    };
    let mut process = ServerProcess {
        helper,
        stderr,
        stderr_reader,
        odd,
    };
    let pages = Pages::default();
    let transport = AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MESSAGE_MAX);
    let (transport, heard) = Observed::new(transport, pages.clone());
    let served = tokio::time::timeout(
        limits.connect,
        client_info(ep).serve_with_lifecycle(transport, revision::lifecycle()),
    )
    .await;
    let failure = match served {
        Ok(Ok(service)) => {
            return Ok(Connection {
                revision: settled(&service, &heard),
                service,
                process: Some(process),
                oversize: Some(oversize),
                limits,
                connect_time: started.elapsed(),
                pages,
                param_headers: false,
            });
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => {
            // Timed out. (Its stdin is closed now, so whether it exits next says nothing.)
            if let Some(not_mcp) = wrote_not_mcp(ep, &command, &sniffed) {
                return Err(not_mcp);
            }
            return Err(McpError::TimedOut {
                secs: limits.connect.as_secs(),
                hint: if ep.may_download() {
                    " (a first run of an npx server downloads its package; if it is very large, list the tools again)".into()
                } else {
                    process.stderr_text(ep)
                },
            });
        }
    };
    Err(why_failed(ep, &command, &sniffed, &mut process, failure).await)
}

/// Starts the server's command with its stdin, stdout and stderr piped, in an environment of
/// the base variables and its own only.
fn spawn_server(ep: &Endpoint, command: &str) -> Result<Helper, McpError> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&ep.args)
        .env_clear()
        .envs(base_env())
        .envs(ep.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Helper::spawn(&mut cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            McpError::CommandNotFound {
                command: command.to_string(),
            }
        } else {
            McpError::CannotStart {
                command: command.to_string(),
                reason: e.to_string(),
            }
        }
    })
}

/// Keeps the last lines the server writes on stderr, read by a task of their own until it
/// closes.
fn tail_stderr(
    helper: &mut Helper,
) -> (Arc<Mutex<StderrTail>>, Option<tokio::task::JoinHandle<()>>) {
    let stderr = Arc::new(Mutex::new(StderrTail::default()));
    let mut stderr_reader = None;
    if let Some(err) = helper.child().stderr.take() {
        let tail = stderr.clone();
        stderr_reader = Some(tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut t) = tail.lock() {
                    t.push(line);
                }
            }
        }));
    }
    (stderr, stderr_reader)
}

/// The error for a server that wrote what is not JSON-RPC on stdout (`sniffed`), if it did.
fn wrote_not_mcp(ep: &Endpoint, command: &str, sniffed: &Mutex<Vec<u8>>) -> Option<McpError> {
    let seen = sniffed.lock().map(|s| s.clone()).unwrap_or_default();
    not_json_rpc(&seen).map(|garbage| McpError::NotMcp {
        target: format!("`{command}`"),
        detail: format!("it wrote `{}` on stdout", cut(&ep.redact(&garbage), 120)),
    })
}

/// Why a server whose session failed before the deadline (`failure`) failed: it printed
/// something that is not MCP, or it exited (with what it wrote on stderr), or else `failure`.
async fn why_failed(
    ep: &Endpoint,
    command: &str,
    sniffed: &Mutex<Vec<u8>>,
    process: &mut ServerProcess,
    failure: String,
) -> McpError {
    // It failed before the deadline: did it exit, or print something that is not MCP?
    let exited = process.helper.wait(Duration::from_millis(500)).await.ok();
    if let Some(not_mcp) = wrote_not_mcp(ep, command, sniffed) {
        return not_mcp;
    }
    if let Some(status) = exited {
        // Let the reader take in what the server wrote before it exited.
        if let Some(reader) = process.stderr_reader.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
        return McpError::Exited {
            status: describe_status(status),
            stderr: process.stderr_text(ep),
        };
    }
    McpError::Protocol(ep.redact(&failure))
}

async fn connect_http(
    ep: &Endpoint,
    limits: Limits,
    started: Instant,
) -> Result<Connection, McpError> {
    let url = ep
        .url
        .clone()
        .ok_or_else(|| McpError::BadConfig("the server has no address".into()))?;
    let headers = header_map(&ep.headers)?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(limits.connect)
        .build()
        .map_err(|e| McpError::BadConfig(format!("could not set up HTTP: {e}")))?;
    let pages = Pages::default();
    let (served, heard) = match ep.kind {
        ServerKind::Sse => {
            // The older HTTP+SSE transport (2024-11-05) has only the handshake.
            let transport =
                match SseTransport::connect(http.clone(), &url, headers.clone(), limits.connect)
                    .await
                {
                    Ok(t) => t,
                    Err(e) => return Err(sse_error(&url, e)),
                };
            let (transport, heard) = Observed::new(transport, pages.clone());
            let lifecycle = rmcp::ClientLifecycleMode::Initialize;
            let serve = client_info(ep).serve_with_lifecycle(transport, lifecycle);
            (tokio::time::timeout(limits.connect, serve).await, heard)
        }
        ServerKind::Http | ServerKind::Stdio => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                .custom_headers(headers.clone());
            let tap = Tap {
                inner: super::dpop_http::McpHttp::new(http.clone(), ep.dpop.clone()),
                pages: pages.clone(),
            };
            let transport = StreamableHttpClientTransport::with_client(tap, config);
            let (transport, heard) = Observed::new(transport, pages.clone());
            let serve = client_info(ep).serve_with_lifecycle(transport, revision::lifecycle());
            (tokio::time::timeout(limits.connect, serve).await, heard)
        }
    };
    match served {
        Ok(Ok(service)) => {
            let revision = settled(&service, &heard);
            Ok(Connection {
                param_headers: revision.stateless && ep.kind == ServerKind::Http,
                revision,
                service,
                process: None,
                oversize: None,
                limits,
                connect_time: started.elapsed(),
                pages,
            })
        }
        Ok(Err(e)) => match e.auth_challenge() {
            // A 401 or 403 with a challenge, on whichever request of the opening it came.
            Some(header) => Err(auth_error(header)),
            None => {
                Err(diagnose_http(&http, &url, &headers, ep, Some(e.to_string()), limits).await)
            }
        },
        Err(_) => Err(diagnose_http(&http, &url, &headers, ep, None, limits).await),
    }
}

/// A 401 or 403 challenge as the error it is.
fn auth_error(www_authenticate: &str) -> McpError {
    // A DPoP-bound token refused for its proof (RFC 9449 §7.1): another sign-in or refresh
    // would not change the proof, so this is said plainly and not retried.
    if let Some(error) = bosun_auth::dpop::challenge_error(www_authenticate)
        .filter(|e| e == "invalid_dpop_proof" || e == "use_dpop_nonce")
    {
        let said = bosun_auth::challenge::scheme_params(www_authenticate, "dpop")
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let what = if error == "use_dpop_nonce" {
            "asked again for a new DPoP nonce after bosun had sent the one it gave"
        } else {
            "refused bosun's DPoP proof"
        };
        return McpError::Http {
            status: 401,
            detail: format!(
                ": it {what} ({error}{said}); bosun does not try again. If it goes on, sign in afresh with `bosun mcp sign-out` and `bosun mcp sign-in`, or tell the server's operator"
            ),
        };
    }
    let challenge = bosun_auth::challenge::Challenge::parse(www_authenticate);
    if challenge.is_insufficient_scope() {
        McpError::InsufficientScope {
            www_authenticate: www_authenticate.to_string(),
        }
    } else {
        McpError::NeedsSignIn {
            www_authenticate: www_authenticate.to_string(),
        }
    }
}

/// The most of a diagnosis answer that is read: an `initialize` result is far smaller.
const DIAGNOSIS_BODY: usize = 256 * 1024;

/// Finds out why an address did not work, with one plain `initialize` POST (with a DPoP proof
/// when the endpoint's token is bound, so the answer is about the server, not the proof).
async fn diagnose_http(
    http: &reqwest::Client,
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
    ep: &Endpoint,
    failure: Option<String>,
    limits: Limits,
) -> McpError {
    let request = initialize_request(http, url, headers, ep, limits);
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => return reqwest_error(url, &e, limits),
    };
    let status = response.status();
    let www = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if status.as_u16() == 401 {
        return McpError::NeedsSignIn {
            www_authenticate: www.unwrap_or_else(|| "none".into()),
        };
    }
    if status.as_u16() == 403
        && let Some(w) = www.as_deref()
    {
        return auth_error(w);
    }
    let (body, _) = bosun_auth::http_body::read_capped(response, DIAGNOSIS_BODY)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body).into_owned();
    let snippet = cut(&ep.redact(&text), 160);
    if !status.is_success() {
        return McpError::Http {
            status: status.as_u16(),
            detail: if snippet.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", snippet.trim())
            },
        };
    }
    if let Some(not_mcp) = not_mcp_answer(url, content_type, &text, &snippet) {
        return not_mcp;
    }
    match failure {
        Some(e) => McpError::Protocol(ep.redact(&e)),
        None => McpError::TimedOut {
            secs: limits.connect.as_secs(),
            hint: String::new(),
        },
    }
}

/// The plain `initialize` POST of a diagnosis, with a DPoP proof when the endpoint's token is
/// bound.
fn initialize_request(
    http: &reqwest::Client,
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
    ep: &Endpoint,
    limits: Limits,
) -> reqwest::RequestBuilder {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bosun", "version": env!("CARGO_PKG_VERSION")}}
    });
    let mut request = http
        .post(url)
        .headers(headers.clone().into_iter().collect())
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .timeout(limits.request)
        .json(&body);
    if let Some(binding) = &ep.dpop
        && let Ok(proof) = binding.prover.proof("POST", url, Some(&binding.token))
    {
        request = request.header(bosun_auth::dpop::PROOF_HEADER, proof);
    }
    request
}

/// The error for a successful answer to `initialize` that is not MCP's (neither JSON nor an
/// event stream, or JSON without an MCP result), if it is not.
fn not_mcp_answer(url: &str, content_type: String, text: &str, snippet: &str) -> Option<McpError> {
    let is_json = content_type.starts_with("application/json");
    let is_sse = content_type.starts_with("text/event-stream");
    if !is_json && !is_sse {
        return Some(McpError::NotMcp {
            target: url.to_string(),
            detail: format!(
                "it answered with {}",
                if content_type.is_empty() {
                    "no content type".into()
                } else {
                    content_type
                }
            ),
        });
    }
    if is_json
        && serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("result")?.get("protocolVersion").cloned())
            .is_none()
    {
        return Some(McpError::NotMcp {
            target: url.to_string(),
            detail: format!(
                "its answer to initialize is not an MCP result: {}",
                snippet.trim()
            ),
        });
    }
    None
}

fn reqwest_error(url: &str, e: &reqwest::Error, limits: Limits) -> McpError {
    let chain = error_chain(e);
    let lower = chain.to_ascii_lowercase();
    if e.is_timeout() {
        return McpError::TimedOut {
            secs: limits.request.as_secs(),
            hint: String::new(),
        };
    }
    if lower.contains("connection refused") {
        return McpError::Refused {
            url: url.to_string(),
        };
    }
    let tcp_trouble = ["dns", "resolve", "unreachable", "reset", "timed out"]
        .iter()
        .any(|w| lower.contains(w));
    let tls_words = [
        "certificate",
        "tls",
        "handshake",
        "corrupt message",
        "alert",
    ]
    .iter()
    .any(|w| lower.contains(w));
    // Reached over TCP but not through the handshake: the secure layer is what failed.
    if tls_words || (url.starts_with("https:") && e.is_connect() && !tcp_trouble) {
        return McpError::Tls {
            url: url.to_string(),
            detail: chain,
        };
    }
    McpError::Unreachable {
        url: url.to_string(),
        detail: chain,
    }
}

fn sse_error(url: &str, e: SseError) -> McpError {
    match e {
        SseError::Http(e) => reqwest_error(
            url,
            &e,
            Limits {
                connect: Duration::from_secs(30),
                request: Duration::from_secs(30),
                max_pages: 0,
                max_tools: 0,
            },
        ),
        SseError::Status {
            status: 401,
            www_authenticate,
            ..
        } => McpError::NeedsSignIn {
            www_authenticate: www_authenticate.unwrap_or_else(|| "none".into()),
        },
        SseError::Status { status, what, .. } => McpError::Http {
            status,
            detail: format!(" to {what}"),
        },
        SseError::NotEventStream(ct) => McpError::NotMcp {
            target: url.to_string(),
            detail: format!(
                "its event stream is {ct}, not text/event-stream (is it a Streamable HTTP server? use --transport http)"
            ),
        },
        e @ (SseError::NoEndpoint(_) | SseError::BadEndpoint(_) | SseError::Closed) => {
            McpError::Protocol(e.to_string())
        }
    }
}

/// The error and its sources, joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

fn header_map(lines: &[(String, String)]) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
    let mut map = HashMap::new();
    for (k, v) in lines {
        let name = HeaderName::try_from(k.as_str())
            .map_err(|_| McpError::BadConfig(format!("`{k}` is not a valid header name")))?;
        let value = HeaderValue::try_from(v.as_str()).map_err(|_| {
            McpError::BadConfig(format!(
                "the value of header `{k}` is not valid in a header"
            ))
        })?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The environment a stdio server starts with, besides its own lines: enough to find programs
/// and a home (npx needs both), nothing else of the daemon's. `BOSUN_HOME` marks it as started
/// by this bosund (a leak check can find it).
fn base_env() -> Vec<(String, String)> {
    [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "TZ",
        "BOSUN_HOME",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("status {c}"),
        (None, Some(s)) => format!("signal {}", bosun_shared::run::signal_name(s)),
        (None, None) => "an unknown status".into(),
    }
}

/// The first line a server wrote on stdout, when it is not JSON-RPC (whole: it is redacted
/// before it is cut short).
fn not_json_rpc(seen: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(seen);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .is_some_and(|v| v.get("jsonrpc").is_some())
    {
        return None;
    }
    Some(first.to_string())
}

/// The first `chars` characters of `text`.
fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

impl ServerProcess {
    async fn exits_within(&mut self, limit: Duration) -> bool {
        !matches!(self.helper.wait(limit).await, Err(HelperError::TimedOut(_)))
    }

    fn stderr_text(&self, ep: &Endpoint) -> String {
        let lines: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.lines.iter().cloned().collect())
            .unwrap_or_default();
        if lines.is_empty() {
            return String::new();
        }
        let body: Vec<String> = lines
            .iter()
            .map(|l| format!("  {}", ep.redact(l)))
            .collect();
        format!("; the last lines it wrote on stderr:\n{}", body.join("\n"))
    }
}

/// What a look at a server found.
pub struct Listing {
    pub tools: Vec<Listed>,
    /// The tools whose definitions are malformed, with what is wrong with each.
    pub malformed: Vec<super::record::StoredMalformedTool>,
    pub pages: usize,
    pub truncated: Option<String>,
}

impl Connection {
    /// The server's identity, protocol and capabilities from `initialize`.
    pub fn peer(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.service.peer_info()
    }

    /// One `tools/list` page, read tool by tool from the result as the server sent it.
    async fn tools_page(
        &self,
        cursor: Option<String>,
        seen: &mut HashSet<String>,
    ) -> Result<tools::Page, McpError> {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListToolsRequest(ListToolsRequest {
            method: Default::default(),
            params: Some(params),
            extensions: Default::default(),
        });
        let answer = self.request(self.service.send_request(request)).await?;
        // What the server sent, before rmcp dropped any of it; else rmcp's reading of it.
        let raw = match self.pages.take_latest() {
            Some(v) => v,
            None => {
                if let ServerResult::CustomResult(c) = &answer {
                    c.0.clone()
                } else {
                    serde_json::to_value(&answer).unwrap_or_default()
                }
            }
        };
        tools::read_page(&raw, self.param_headers, seen)
            .map_err(|e| McpError::Protocol(e.to_string()))
    }

    /// Every tool, following `nextCursor` within the bounds; a malformed tool set aside with
    /// what is wrong, the others kept.
    pub async fn list_tools(&self) -> Result<Listing, McpError> {
        let mut tools = Vec::new();
        let mut malformed = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let mut names = HashSet::new();
        let mut pages = 0;
        let mut truncated = None;
        loop {
            pages += 1;
            let page = self.tools_page(cursor.clone(), &mut names).await?;
            tools.extend(page.tools);
            malformed.extend(page.malformed);
            if tools.len() >= self.limits.max_tools {
                tools.truncate(self.limits.max_tools);
                truncated = Some(format!("stopped at {} tools", self.limits.max_tools));
                break;
            }
            let Some(next) = page.next_cursor else { break };
            if !seen.insert(next.clone()) {
                truncated = Some(format!(
                    "the server sent the cursor `{next}` twice; stopped after {pages} pages"
                ));
                break;
            }
            if pages >= self.limits.max_pages {
                truncated = Some(format!(
                    "stopped after {pages} pages; the server kept sending more"
                ));
                break;
            }
            cursor = Some(next);
        }
        Ok(Listing {
            tools,
            malformed,
            pages,
            truncated,
        })
    }

    /// How many prompts the server offers (`None` when it has no prompts capability).
    pub async fn count_prompts(&self) -> Result<Option<usize>, McpError> {
        let has = self
            .peer()
            .is_some_and(|p| p.capabilities.prompts.is_some());
        if !has {
            return Ok(None);
        }
        let page = self.request(self.service.list_prompts(None)).await?;
        Ok(Some(page.prompts.len()))
    }

    /// How many resources the server offers (`None` when it has no resources capability).
    pub async fn count_resources(&self) -> Result<Option<usize>, McpError> {
        let has = self
            .peer()
            .is_some_and(|p| p.capabilities.resources.is_some());
        if !has {
            return Ok(None);
        }
        let page = self.request(self.service.list_resources(None)).await?;
        Ok(Some(page.resources.len()))
    }

    /// Calls one tool. Where arguments marked `x-mcp-header` travel as headers too, the tools
    /// are listed first (rmcp mirrors them from the schemas it has seen), and a tool whose
    /// definition is malformed is not called. A server that answers `input_required` is
    /// answered and asked again by rmcp, with its `requestState` echoed unchanged and a new
    /// request id; bosun declares no capabilities, so what it can answer is little.
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<rmcp::model::CallToolResult, McpError> {
        // A name outside MCP's rules is one a look sets aside as malformed: not called either.
        if let Err(why) = bosun_shared::mcp::check_tool_name(tool) {
            return Err(McpError::MalformedTool {
                tool: bosun_shared::text::visible(tool).into_owned(),
                problem: why.to_string(),
            });
        }
        if self.param_headers {
            let listing = self.list_tools().await?;
            if let Some(bad) = listing
                .malformed
                .iter()
                .find(|m| m.name.as_deref() == Some(tool))
            {
                return Err(McpError::MalformedTool {
                    tool: tool.to_string(),
                    problem: bad.problem.clone(),
                });
            }
        }
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        self.request(self.service.call_tool(params)).await
    }

    /// Waits for the answer to one request, within the request deadline. An answer past
    /// [`MESSAGE_MAX`] is dropped by rmcp's transport without a word, so it would look like no
    /// answer at all until the deadline: a message that big, seen whole while the request
    /// waits, is reported at once as too large instead.
    async fn request<T>(
        &self,
        fut: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, McpError> {
        let mut oversize = self.oversize.clone();
        // What came before this request is not its answer.
        let before = oversize.as_mut().and_then(|o| *o.borrow_and_update());
        let too_large = |o: Oversize| McpError::TooLarge {
            seen: Some(o.bytes),
            ended: o.ended,
            limit: MESSAGE_MAX,
        };
        tokio::select! {
            answer = fut => match answer {
                Ok(v) => Ok(v),
                Err(e) => Err(match (e.auth_challenge(), seen(oversize.as_ref(), before)) {
                    (Some(header), _) => auth_error(header),
                    // The server went away in the middle of a message too large to read.
                    (None, Some(o)) => too_large(o),
                    (None, None) => match http_body_limit(&e) {
                        Some(limit) => McpError::TooLarge {
                            seen: None,
                            ended: false,
                            limit,
                        },
                        None => McpError::Protocol(e.to_string()),
                    },
                }),
            },
            o = ended_oversize(oversize.as_mut()) => Err(too_large(o)),
            () = tokio::time::sleep(self.limits.request) => Err(McpError::TimedOut {
                secs: self.limits.request.as_secs(),
                hint: self
                    .process
                    .as_ref()
                    .and_then(|p| p.odd.lock().ok().map(|o| o.hint()))
                    .unwrap_or_default(),
            }),
        }
    }

    /// Ends the session and the server as [`Connection::close`] does, on a task of its own: for
    /// a look that has what it came for, so that the person's answer does not wait for the
    /// server to go (a stdio server takes a while to exit, an HTTP session to be deleted).
    pub fn close_in_background(self) {
        tokio::spawn(self.close());
    }

    /// Ends the session and the server: closes its stdin, gives it a moment, then its process
    /// group gets SIGTERM and, if need be, SIGKILL.
    pub async fn close(self) {
        let Connection {
            service, process, ..
        } = self;
        let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        let Some(mut p) = process else { return };
        if p.exits_within(Duration::from_secs(1)).await {
            return;
        }
        p.helper.signal(nix::sys::signal::Signal::SIGTERM);
        if !p.exits_within(Duration::from_secs(2)).await {
            p.helper.signal(nix::sys::signal::Signal::SIGKILL);
            let _ = p.exits_within(Duration::from_secs(2)).await;
        }
        // Dropping `p` SIGKILLs whatever is left of its group (npx's node, say).
    }
}

/// The limit an HTTP answer's body went past, when that is why a request failed: rmcp's
/// Streamable HTTP client reads at most 16 MiB of a response's body, and says so in a typed
/// error under its transport's.
fn http_body_limit(e: &rmcp::ServiceError) -> Option<usize> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let rmcp::ServiceError::TransportSend(t) = e else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(t.error.as_ref());
    while let Some(current) = source {
        if let Some(StreamableHttpError::ResponseBodyTooLarge { max_size }) =
            current.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(*max_size);
        }
        source = current.source();
    }
    None
}
