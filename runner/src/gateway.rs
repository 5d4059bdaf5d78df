//! bosun's MCP gateway, in the runner: the run's CLI reaches each stdio MCP server through it.
//!
//! The CLI is given `bosun-runner gateway --socket SOCKET NAME` as the server's command ([`shim`]):
//! a small relay between its stdin/stdout and the runner's socket in the run's folder. For each
//! connection the runner starts the real server (its secrets, which the CLI never sees, in its
//! environment; a minimal safe environment besides; in the CLI's process group, so the stop
//! ladder ends it with the run; under the run's fence) and relays every message both ways,
//! holding the server to its [`Rules`]:
//! - a tool the rules hold back is not listed, and a call to it is refused without reaching the
//!   server;
//! - every call has a deadline: past it the CLI gets an error result and the server
//!   `notifications/cancelled`; its late answer is dropped, and no call is ever sent twice;
//! - a server that exits is started again at the next message (initialized again with the
//!   CLI's own `initialize`), and the CLI is told its tools may have changed;
//! - only the capabilities the person approved reach the CLI (tools and prompts unless they
//!   said more); requests of any other are refused, its notifications dropped, and resource
//!   subscriptions are always off;
//! - `roots/list` is answered with the run's workspace; sampling and elicitation requests are
//!   refused, or asked of the person in the inbox when the server's policy says `ask`
//!   ([`person`]);
//! - results of an untrusted server reach the model framed as untrusted, long text as head and
//!   tail, the whole result kept in the run's log.
//!
//! A server reached by address that refuses the run's sign-in (its token expired or revoked:
//! 401; a wider scope asked: 403 `insufficient_scope`) did not run the message: bosun's bridge
//! to it asks the gateway for the token anew ([`TOKEN_METHOD`]), which asks bosund over the
//! runner's link ([`crate::link::LinkState::ask_token`]). bosund refreshes it, or, when only
//! the person can help, puts "needs a new sign-in" in the inbox and answers once they signed in
//! or dismissed it. The call's deadline waits meanwhile (up to the inbox item's own allowance),
//! and starts again when the message is sent once more. bosund that does not answer within
//! [`TOKEN_FIRST_ANSWER`] fails the call, saying so.
//!
//! Every call is judged once by bosun's approval policy ([`judge`]): a call the CLI's own control
//! protocol already brought to bosund and had allowed goes on on that decision; any other is
//! asked of bosund by the gateway itself and waits for its answer. The run's record of calls
//! says the decision and who made it.
//!
//! Each call is said in the run's log (the runner's redactor hides secrets there).
//!
//! Its parts: [`route`] sends each message on its way, [`server`] starts, starts again and ends
//! the server's process, [`calls`] admits, times and shapes the calls, [`held`] holds back what
//! the rules deny and the person has not approved, [`token`] asks for a server's token anew,
//! and [`judge`] and [`person`] ask bosund.

mod browser;
mod calls;
mod held;
mod judge;
mod net;
mod route;
mod server;
mod token;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bosun_protocol::runner::{FencePlan, LaunchPlan, NetAllow};
use bosun_shared::gateway::{
    BRIDGE, CALLS_FILE, CallDecision, CallEntry, CallOutcome, GatewayServer, Hello, Rules,
    SAFE_ENV, SOCKET_FILE,
};
use bosun_shared::{RUN_MARKER_ENV, Timestamp};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use tokio::time::Instant;

mod person;

use self::held::Pending;
use crate::cleared::Cleared;
use crate::link::LinkState;
use crate::redact::Redactor;

/// The longest message (one line of JSON) either side may send.
const MAX_LINE: usize = 32 * 1024 * 1024;
/// How long bosund has to first answer an ask for a server's token anew (with the token, or
/// saying it waits for the person): past it, bosund is taken as unreachable and the call fails.
pub const TOKEN_FIRST_ANSWER: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// The CLI's end.

/// `bosun-runner gateway --socket SOCKET NAME`: relays stdin to the run's gateway and its
/// answers to stdout, for the server `NAME`.
pub fn shim(args: &[String]) -> ExitCode {
    let (socket, name) = match args {
        [flag, socket, name] if flag == "--socket" => (socket, name),
        _ => {
            say!(
                "bosun-runner gateway: give `--socket SOCKET NAME` (a run's CLI is given this command by bosun)"
            );
            return ExitCode::from(2);
        }
    };
    let mut stream = match std::os::unix::net::UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) => {
            say!(
                "bosun-runner gateway: could not reach the run's gateway at {socket}: {e}; the run's runner is gone"
            );
            return ExitCode::from(1);
        }
    };
    let hello = serde_json::to_string(&Hello {
        server: name.clone(),
    })
    .unwrap_or_default();
    if writeln!(stream, "{hello}").is_err() {
        return ExitCode::from(1);
    }
    let Ok(mut to_gateway) = stream.try_clone() else {
        return ExitCode::from(1);
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_gateway);
        let _ = to_gateway.shutdown(std::net::Shutdown::Write);
    });
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if out.write_all(&buf[..n]).and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
        }
    }
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// The runner's end.

/// Why the gateway could not be set up for the run.
#[derive(Debug, thiserror::Error)]
pub enum SetUpError {
    #[error("could not clear {}: {source}", path.display())]
    Clear {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not open bosun's MCP gateway at {}: {source}", path.display())]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not find bosun-runner's own program: {0}")]
    OwnProgram(std::io::Error),
}

/// The gateway's socket in the run's folder, bound before the CLI starts.
pub fn bind(run_dir: &Path) -> Result<(UnixListener, PathBuf), SetUpError> {
    let path = run_dir.join(SOCKET_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(SetUpError::Clear { path, source }),
    }
    match UnixListener::bind(&path) {
        Ok(listener) => Ok((listener, path)),
        Err(source) => Err(SetUpError::Bind { path, source }),
    }
}

/// What every connection of the run shares.
pub struct Gateway {
    servers: Vec<GatewayServer>,
    /// The safe part of the run's environment, and the run's marker.
    base_env: Vec<(String, String)>,
    cwd: PathBuf,
    /// The run's fence for its servers, without a network: each server's is made when it
    /// starts ([`net`]).
    fence: Option<FencePlan>,
    /// For a run whose network is fenced, its `web.fetch` list (which the built-in browser
    /// reaches); None when the run's network is not fenced, nor then the servers'.
    web_fetch: Option<Vec<NetAllow>>,
    /// The run's folder (where the fence's unreadable file is).
    run_dir: PathBuf,
    /// The CLI's process group, which the servers join.
    pgid: i32,
    notes: mpsc::UnboundedSender<String>,
    /// The run's secret values, written `[redacted]` in a live tool's definition before it is
    /// held to what the person saw (which bosun kept redacted).
    redactor: Arc<Redactor>,
    /// bosun's bridge to servers reached by address, beside the runner's own program.
    bridge: PathBuf,
    /// The run's record of calls ([`CALLS_FILE`] in its folder), opened at the first call.
    calls: std::sync::Mutex<CallsFile>,
    /// The runner's link to bosund, which a server's token is asked anew over.
    link: Arc<LinkState>,
    /// The number of the last ask for a token.
    token_asks: std::sync::atomic::AtomicU64,
    /// The number of the last request of a server's asked of the person.
    person_asks: std::sync::atomic::AtomicU64,
    /// The calls the CLI's control protocol had allowed, each let through once.
    cleared: Arc<std::sync::Mutex<Cleared>>,
    /// What redacts the gateway's own asks to bosund, as the control driver's are.
    ask_redactor: Redactor,
    /// The number of the last call the gateway asked bosund about.
    calls_asked: std::sync::atomic::AtomicU64,
}

/// The run's record of calls.
enum CallsFile {
    NotYet(PathBuf),
    Open(std::fs::File),
    /// It could not be opened (said once in the log): the calls are in the log only.
    Failed,
}

/// The caches the servers a gateway starts keep: the person's npm cache (the servers started
/// with npx come from it) and XDG cache (the browser's profile), in the run's `HOME`. The
/// servers may write them; the run's CLI and its commands have caches of their own and may not,
/// so no command of a run can plant a package a server later runs.
fn server_caches(env: &[(String, String)]) -> Vec<(&'static str, PathBuf)> {
    let Some(home) = env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .filter(|h| h.is_absolute())
    else {
        return Vec::new();
    };
    vec![
        ("npm_config_cache", home.join(".npm")),
        ("XDG_CACHE_HOME", home.join(".cache")),
    ]
}

impl Gateway {
    pub fn new(
        plan: &LaunchPlan,
        pgid: i32,
        notes: mpsc::UnboundedSender<String>,
        redactor: Arc<Redactor>,
        link: Arc<LinkState>,
        cleared: Arc<std::sync::Mutex<Cleared>>,
    ) -> Self {
        let mut base_env: Vec<(String, String)> = plan
            .env
            .iter()
            .filter(|(k, _)| SAFE_ENV.contains(&k.as_str()))
            .cloned()
            .collect();
        base_env.push((RUN_MARKER_ENV.into(), plan.run_id.to_string()));
        let caches = server_caches(&plan.env);
        // Made now, so that the fence can name them (a Landlock rule names an open folder).
        for (_, dir) in &caches {
            if !dir.is_dir() {
                let _ = bosun_shared::paths::create_private_dir(dir);
            }
        }
        base_env.extend(
            caches
                .iter()
                .map(|(k, v)| (k.to_string(), v.display().to_string())),
        );
        let calls = std::sync::Mutex::new(CallsFile::NotYet(plan.run_dir.join(CALLS_FILE)));
        Self {
            servers: plan.gateway.clone(),
            base_env,
            cwd: plan.cwd.clone(),
            // The servers' fence is the run's; the network of each is its own, made when it
            // starts with the hosts its transport needs ([`net`]).
            web_fetch: plan.fence.as_ref().and_then(|f| f.net.as_ref()).map(|n| {
                n.allow
                    .iter()
                    .filter(|a| a.is_web_fetch())
                    .cloned()
                    .collect()
            }),
            fence: plan.fence.clone().map(|f| {
                let dirs = caches.iter().map(|(_, d)| d.clone());
                FencePlan {
                    net: None,
                    writable: f.writable.iter().cloned().chain(dirs).collect(),
                    ..f
                }
            }),
            run_dir: plan.run_dir.clone(),
            pgid,
            notes,
            redactor,
            bridge: std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.join(BRIDGE)))
                .unwrap_or_else(|| PathBuf::from(BRIDGE)),
            calls,
            link,
            token_asks: std::sync::atomic::AtomicU64::new(0),
            person_asks: std::sync::atomic::AtomicU64::new(0),
            cleared,
            ask_redactor: crate::control::ask_redactor(&plan.redact, &plan.cwd),
            calls_asked: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn note(&self, line: String) {
        let _ = self.notes.send(line);
    }

    /// Keeps a line for a call in the run's record of calls, its secrets written `[redacted]`.
    fn record(&self, entry: &CallEntry) {
        let Ok(mut value) = serde_json::to_value(entry) else {
            return;
        };
        self.redactor.json(&mut value);
        let mut line = value.to_string();
        line.push('\n');
        let Ok(mut calls) = self.calls.lock() else {
            return;
        };
        if let CallsFile::NotYet(path) = &*calls {
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path);
            *calls = match opened {
                Ok(f) => CallsFile::Open(f),
                Err(e) => {
                    self.note(format!(
                        "bosun's MCP gateway: could not open {} ({e}); this run's calls are in its log only",
                        path.display()
                    ));
                    CallsFile::Failed
                }
            };
        }
        if let CallsFile::Open(f) = &mut *calls {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Serves the CLI's connections until the runner ends.
pub async fn serve(listener: UnixListener, gateway: Arc<Gateway>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(session(stream, gateway.clone()));
            }
            Err(e) => {
                say!("bosun-runner: the MCP gateway could not take a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Lines of a stream, at most [`MAX_LINE`] bytes each; safe to cancel between lines (what was
/// read of a line is kept for the next call).
struct Lines<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
}

impl<R: tokio::io::AsyncRead + Unpin> Lines<R> {
    fn new(r: R) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, r),
            line: Vec::new(),
        }
    }

    async fn next(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(std::mem::take(&mut self.line)));
            }
            match avail.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.line.extend_from_slice(&avail[..i]);
                    self.inner.consume(i + 1);
                    return Ok(Some(std::mem::take(&mut self.line)));
                }
                None => {
                    let n = avail.len();
                    self.line.extend_from_slice(avail);
                    self.inner.consume(n);
                    if self.line.len() > MAX_LINE {
                        return Err(std::io::Error::other(format!(
                            "a message over {} MiB",
                            MAX_LINE / (1024 * 1024)
                        )));
                    }
                }
            }
        }
    }
}

/// A call on its way: what its line in the log says, and when it runs out of time.
struct Call {
    id: Value,
    tool: String,
    args: String,
    at: Timestamp,
    started: Instant,
    deadline: Instant,
    decision: CallDecision,
}

impl Call {
    /// Its entry in the run's record of calls.
    fn entry(&self, server: &str, outcome: CallOutcome) -> CallEntry {
        CallEntry {
            at: self.at,
            server: server.to_string(),
            tool: self.tool.clone(),
            args: self.args.clone(),
            outcome,
            ms: Some(self.started.elapsed().as_millis() as u64),
            chars: None,
            model_got: None,
            decision: Some(self.decision.clone()),
        }
    }
}

/// A request of the CLI's other than a call (a resource read, a prompt, a list) on its way.
struct Asked {
    id: Value,
    method: String,
    /// When it runs out of time, as a call does; none for `initialize` (the CLI bounds the
    /// start of its servers itself).
    deadline: Option<Instant>,
}

/// The running server of a connection.
struct Running {
    child: Child,
    stdin: ChildStdin,
    /// The server's own proxy in a fenced run, which stops with it.
    _net: Option<crate::proxy::served::NetServed>,
    /// The built-in browser's short link to the run's temporary folder, removed with it.
    _tmp: Option<browser::ShortTmp>,
}

/// What becomes of a connection whose server ended.
#[derive(Debug, PartialEq, Eq)]
enum Gone {
    /// It goes on: the server starts again at the next message.
    Open,
    /// It is closed: the server never started as an MCP server.
    Close,
}

/// One connection of the CLI: one server.
struct Conn<'a> {
    gw: &'a Gateway,
    server: &'a GatewayServer,
    to_cli: OwnedWriteHalf,
    /// The server's process (for a server reached by address, bosun's bridge to it), while
    /// it runs.
    running: Option<Running>,
    /// The CLI's `initialize`, given again to a server that is started again.
    init: Option<Value>,
    initialized: bool,
    init_id: Option<String>,
    /// The CLI's `initialize` declared it writes messages for servers (`sampling`).
    cli_samples: bool,
    /// The server answered `initialize` once: it is an MCP server that started.
    ready: bool,
    /// The CLI's other requests on their way (not calls): answered with an error when the
    /// server ends before it answers them, or when their deadline passes first.
    asked: HashMap<String, Asked>,
    lists: HashSet<String>,
    /// Tools held back as new or changed (said in the log once each).
    pending: HashMap<String, Pending>,
    calls: HashMap<String, Call>,
    /// Calls that ran out of time: their late answers are dropped.
    expired: HashSet<String>,
    /// Ids of the gateway's own requests to the server.
    own: u64,
    starts: u32,
    /// What the asks for a token anew say back to the connection's loop.
    ask_events: mpsc::UnboundedSender<AskEvent>,
    /// Calls waiting for bosund's decision, by id: not sent to the server yet.
    judging: HashMap<String, judge::Judging>,
    /// What the gateway's asks to bosund say back to the connection's loop.
    judge_events: mpsc::UnboundedSender<judge::Judged>,
    /// Lines of the server's that are not JSON (the first is said in the run's log).
    odd_lines: u64,
}

/// What an ask of bosund's (a server's token anew, a server's request for the person; each in
/// a task of its own) says back to the connection.
enum AskEvent {
    /// The call `call` waits for the person's sign-in: its deadline is `until` meanwhile.
    Hold { call: Value, until: Instant },
    /// The call `call` is sent once more: its deadline counts again from now.
    Resume { call: Value },
    /// The answer to the server's (or the bridge's) ask, for its stdin.
    Answer(Value),
    /// A request of the server's waits for the person: every call's deadline is `until`
    /// meanwhile.
    HoldAll { until: Instant },
    /// The person answered: the calls' deadlines count again from now.
    ResumeAll,
    /// A request of the server's the person allowed, for the CLI to answer.
    ToCli(Value),
}

/// An id as a map key (`1` and `"1"` are different ids).
fn key(id: &Value) -> String {
    id.to_string()
}

async fn session(stream: tokio::net::UnixStream, gw: Arc<Gateway>) {
    let (rd, to_cli) = stream.into_split();
    let mut from_cli = Lines::new(rd);
    let hello: Option<Hello> = match from_cli.next().await {
        Ok(Some(line)) => serde_json::from_slice(&line).ok(),
        _ => None,
    };
    let Some(server) = hello.and_then(|h| gw.servers.iter().find(|s| s.name == h.server)) else {
        gw.note("bosun's MCP gateway: a connection named no server of this run; closed".into());
        return;
    };
    let (token_tx, mut token_rx) = mpsc::unbounded_channel();
    let (judge_tx, mut judge_rx) = mpsc::unbounded_channel();
    let mut conn = Conn {
        gw: &gw,
        server,
        to_cli,
        running: None,
        init: None,
        initialized: false,
        init_id: None,
        cli_samples: false,
        ready: false,
        asked: HashMap::new(),
        lists: HashSet::new(),
        pending: HashMap::new(),
        calls: HashMap::new(),
        expired: HashSet::new(),
        own: 0,
        starts: 0,
        ask_events: token_tx,
        judging: HashMap::new(),
        judge_events: judge_tx,
        odd_lines: 0,
    };
    let mut from_server: Option<Lines<ChildStdout>> = None;
    loop {
        let next_deadline = conn
            .calls
            .values()
            .map(|c| c.deadline)
            .chain(conn.asked.values().filter_map(|a| a.deadline))
            .min();
        tokio::select! {
            line = from_cli.next() => match line {
                Ok(Some(line)) => conn.on_cli(&line, &mut from_server).await,
                Ok(None) => break,
                Err(e) => {
                    conn.gw.note(format!("bosun's MCP gateway: {}: the CLI sent {e}; the connection is closed", conn.server.name));
                    break;
                }
            },
            line = async {
                match from_server.as_mut() {
                    Some(r) => r.next().await,
                    None => std::future::pending().await,
                }
            } => match line {
                Ok(Some(line)) => conn.on_server(&line).await,
                Ok(None) => {
                    from_server = None;
                    if conn.server_gone(None).await == Gone::Close {
                        break;
                    }
                }
                Err(e) => {
                    from_server = None;
                    if conn.server_gone(Some(e.to_string())).await == Gone::Close {
                        break;
                    }
                }
            },
            () = async {
                match next_deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => conn.expire().await,
            Some(event) = token_rx.recv() => conn.on_token_event(event).await,
            Some(judged) = judge_rx.recv() => conn.on_judged(judged, &mut from_server).await,
        }
    }
    conn.withdraw_judging();
    conn.end().await;
}

impl Conn<'_> {
    fn rules(&self) -> &Rules {
        &self.server.rules
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// The plan's placeholders for the gateway ([`RUNNER_EXE`](bosun_shared::gateway::RUNNER_EXE),
/// [`SOCKET`](bosun_shared::gateway::SOCKET)) written in, wherever the CLI's configuration
/// names them: its arguments, environment and files.
pub fn fill_in(plan: &mut LaunchPlan, socket: &Path) -> Result<(), SetUpError> {
    let exe = std::env::current_exe().map_err(SetUpError::OwnProgram)?;
    let (exe, socket) = (exe.display().to_string(), socket.display().to_string());
    let fill = |s: &str| {
        s.replace(bosun_shared::gateway::RUNNER_EXE, &exe)
            .replace(bosun_shared::gateway::SOCKET, &socket)
    };
    for a in &mut plan.args {
        *a = fill(a);
    }
    for (_, v) in &mut plan.env {
        *v = fill(v);
    }
    for f in &mut plan.files {
        f.contents = fill(&f.contents);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_capped_and_whole() {
        let data: &[u8] = b"one\ntwo\nlast";
        let mut lines = Lines::new(data);
        assert_eq!(lines.next().await.unwrap().unwrap(), b"one");
        assert_eq!(lines.next().await.unwrap().unwrap(), b"two");
        assert_eq!(lines.next().await.unwrap().unwrap(), b"last");
        assert!(lines.next().await.unwrap().is_none());
    }
}
