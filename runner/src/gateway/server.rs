//! The server of a connection as a process: started on the first message and again after it
//! ended (a server reached by address through bosun's bridge), given the CLI's `initialize`
//! again when started again; what the CLI is told when it ends, and how it is ended when the
//! CLI is gone.

use std::process::Stdio;
use std::time::Duration;

use bosun_shared::gateway::{CallOutcome, HttpBridge, HttpTransport, Reach};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::process::ChildStdout;

use super::{Call, Conn, Gone, Lines, Running, key};
use crate::fence;
use crate::proxy::ServerList;
use crate::proxy::served::{Whose, serve_net};
use bosun_protocol::runner::{FencePlan, NetPlan};

/// How long a server has to exit once the CLI is gone and its stdin closed.
const END_GRACE: Duration = Duration::from_secs(2);

/// How long a server started again has to answer the `initialize` it is given.
const RESTART_INIT: Duration = Duration::from_secs(30);

/// Why a server could not be started (again).
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("no program `{0}` (looked in the run's PATH)")]
    NoProgram(String),
    #[error("{0}")]
    Spawn(std::io::Error),
    #[error("its pipes could not be opened")]
    NoPipes,
    #[error("bosun's fence: {0}")]
    Fence(#[from] fence::ns::NsError),
    #[error("bosun's bridge to it would not start ({0})")]
    Bridge(std::io::Error),
    #[error("it is gone")]
    Gone,
    #[error("it would not take `initialize` ({0})")]
    InitRefused(std::io::Error),
    #[error("it exited before it answered `initialize`")]
    ExitedBeforeInit,
    #[error("{0}")]
    Read(std::io::Error),
    #[error("it did not answer `initialize` within {} s", RESTART_INIT.as_secs())]
    InitTimedOut,
}

fn describe_exit(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("it exited with code {c}"),
        (None, Some(s)) => format!("it was killed by {}", bosun_shared::run::signal_name(s)),
        _ => "it exited".into(),
    }
}

impl Conn<'_> {
    /// Sends a line to the server, starting it (again) first when it is not running. A line
    /// the server's pipe would not take is sent once more to a server started again: it never
    /// reached the one that is gone.
    pub(super) async fn tell_server(
        &mut self,
        line: &[u8],
        from_server: &mut Option<Lines<ChildStdout>>,
    ) {
        for _ in 0..2 {
            if self.running.is_none() {
                match self.start(from_server).await {
                    Ok(()) => {}
                    Err(why) => {
                        self.fail_start(line, &why.to_string()).await;
                        return;
                    }
                }
            }
            let Some(run) = self.running.as_mut() else {
                return;
            };
            let wrote = async {
                run.stdin.write_all(line).await?;
                run.stdin.write_all(b"\n").await?;
                run.stdin.flush().await
            }
            .await;
            if wrote.is_ok() {
                return;
            }
            *from_server = None;
            self.stop_running().await;
        }
    }

    /// The server could not be started: a request gets an error, and the log says why.
    async fn fail_start(&mut self, line: &[u8], why: &str) {
        let name = self.server.name.clone();
        self.gw.note(format!(
            "bosun's MCP gateway: {name} could not start: {why}"
        ));
        let Ok(msg) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if let Some(id) = msg.get("id").filter(|i| !i.is_null()) {
            self.calls.remove(&key(id));
            let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32000,
                "message": format!("the MCP server `{name}` could not start: {why}"),
            }});
            self.tell_cli(&reply).await;
        }
    }

    /// Starts the server; one started again is given the CLI's `initialize` first.
    async fn start(
        &mut self,
        from_server: &mut Option<Lines<ChildStdout>>,
    ) -> Result<(), StartError> {
        // A server reached by address is reached through bosun's bridge, a stdio server of
        // bosun's own that takes where and how on its stdin (never in its arguments or
        // environment): the runner itself stays small.
        let (program, args, env, first) = match &self.server.reach {
            Reach::Stdio { command, args, env } => {
                (command.clone(), args.clone(), env.clone(), None)
            }
            Reach::Http { url, headers } | Reach::Sse { url, headers } => {
                let bridge = HttpBridge {
                    name: self.server.name.clone(),
                    url: url.clone(),
                    headers: headers.clone(),
                    transport: if matches!(self.server.reach, Reach::Sse { .. }) {
                        HttpTransport::Sse
                    } else {
                        HttpTransport::Streamable
                    },
                };
                let mut line = serde_json::to_vec(&bridge).unwrap_or_default();
                line.push(b'\n');
                (
                    self.gw.bridge.display().to_string(),
                    Vec::new(),
                    Vec::new(),
                    Some(line),
                )
            }
        };
        let command = program.as_str();
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(&args)
            .env_clear()
            .envs(self.gw.base_env.iter().map(|(k, v)| (k, v)))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.gw.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if first.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .process_group(self.gw.pgid)
            .kill_on_drop(true);
        let (spaces, net) = match &self.gw.fence {
            Some(f) => {
                let empty = fence::unreadable_file(&self.gw.run_dir).map_err(StartError::Spawn)?;
                // In a run whose network is fenced, the server's network is a namespace of its
                // own whose only way out is its own proxy ([`super::net`]).
                let plan = match &self.gw.web_fetch {
                    Some(web_fetch) => {
                        let env: Vec<(String, String)> =
                            self.gw.base_env.iter().chain(env.iter()).cloned().collect();
                        let allow = super::net::hosts(self.server, &env, web_fetch);
                        FencePlan {
                            net: Some(NetPlan {
                                allow,
                                quiet: Vec::new(),
                            }),
                            ..f.clone()
                        }
                    }
                    None => f.clone(),
                };
                fence::Fence::build(&plan, &empty).and_then(|fence| fence.install(&mut cmd))?
            }
            None => (None, None),
        };
        // The built-in browser in a fenced run: its proxy named outright, and a short path to
        // the run's temporary folder ([`super::browser`]).
        let mut short_tmp = None;
        if self.server.browser && self.gw.fence.is_some() {
            if let Some(net) = &net {
                cmd.args(super::browser::proxy_args(net.proxy_port));
            }
            let tmp = self
                .gw
                .base_env
                .iter()
                .chain(env.iter())
                .rev()
                .find(|(k, _)| k == "TMPDIR");
            if let Some((_, tmp)) = tmp {
                let link = super::browser::ShortTmp::to(std::path::Path::new(tmp))
                    .map_err(StartError::Spawn)?;
                cmd.env("TMPDIR", &link.link);
                short_tmp = Some(link);
            }
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                if let Some(why) = spaces.and_then(fence::ns::Started::failure) {
                    return Err(why.into());
                }
                return Err(if e.kind() == std::io::ErrorKind::NotFound {
                    StartError::NoProgram(command.to_string())
                } else {
                    StartError::Spawn(e)
                });
            }
        };
        let net = match (spaces, net) {
            (Some(spaces), Some(net)) => match spaces.listeners() {
                Ok(listeners) => {
                    let notes = self.gw.notes.clone();
                    let list = ServerList {
                        name: self.server.name.clone(),
                        added: self
                            .server
                            .rules
                            .net
                            .iter()
                            .map(|h| h.to_string())
                            .collect(),
                    };
                    Some(serve_net(
                        &net,
                        listeners,
                        Whose::Server(list),
                        move |line| {
                            let _ = notes.send(line);
                        },
                    ))
                }
                Err(e) => {
                    // Its namespace has no way out: it is ended rather than left without one.
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    return Err(e.into());
                }
            },
            _ => None,
        };
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(StartError::NoPipes);
        };
        if let Some(first) = first {
            stdin.write_all(&first).await.map_err(StartError::Bridge)?;
            // What the bridge says (a session opened again, a message it could not deliver)
            // goes to the run's log.
            if let Some(err) = child.stderr.take() {
                let notes = self.gw.notes.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(err).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let _ = notes.send(line);
                    }
                });
            }
        }
        self.running = Some(Running {
            child,
            stdin,
            _net: net,
            _tmp: short_tmp,
        });
        let mut lines = Lines::new(stdout);
        self.starts += 1;
        if self.starts > 1
            && let Some(init) = self.init.clone()
        {
            self.initialize_again(init, &mut lines).await?;
        }
        *from_server = Some(lines);
        Ok(())
    }

    /// Gives a server started again the CLI's `initialize` (under an id of the gateway's own)
    /// and waits for its answer, then tells the CLI its tools may have changed.
    async fn initialize_again(
        &mut self,
        mut init: Value,
        lines: &mut Lines<ChildStdout>,
    ) -> Result<(), StartError> {
        self.own += 1;
        let id = format!("bosun-gateway-{}", self.own);
        init["id"] = json!(id);
        let Some(run) = self.running.as_mut() else {
            return Err(StartError::Gone);
        };
        let mut line = serde_json::to_vec(&init).unwrap_or_default();
        line.push(b'\n');
        run.stdin
            .write_all(&line)
            .await
            .map_err(StartError::InitRefused)?;
        let answered = tokio::time::timeout(RESTART_INIT, async {
            loop {
                match lines.next().await {
                    Ok(Some(l)) => {
                        let v: Value = serde_json::from_slice(&l).unwrap_or(Value::Null);
                        if v.get("id").and_then(Value::as_str) == Some(id.as_str()) {
                            return Ok(());
                        }
                    }
                    Ok(None) => return Err(StartError::ExitedBeforeInit),
                    Err(e) => return Err(StartError::Read(e)),
                }
            }
        })
        .await
        .unwrap_or(Err(StartError::InitTimedOut));
        answered?;
        if self.initialized
            && let Some(run) = self.running.as_mut()
        {
            let _ = run
                .stdin
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
                .await;
        }
        self.gw.note(format!(
            "bosun's MCP gateway: {} was started again and initialized",
            self.server.name
        ));
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        self.tell_cli(&changed).await;
        Ok(())
    }

    /// The server's output ended: it exited (or closed it). Calls on their way end in an
    /// error; the next message starts it again.
    pub(super) async fn server_gone(&mut self, error: Option<String>) -> Gone {
        let status = match self.running.as_mut() {
            Some(run) => tokio::time::timeout(Duration::from_millis(500), run.child.wait())
                .await
                .ok()
                .and_then(Result::ok),
            None => None,
        };
        self.running = None;
        let name = self.server.name.clone();
        let how = match (status, error) {
            (_, Some(e)) => format!("its output could not be read ({e})"),
            (Some(st), None) => describe_exit(st),
            (None, None) => "it closed its output".into(),
        };
        if !self.ready {
            // It never started as an MCP server: the CLI sees it end, as it would without the
            // gateway.
            self.gw.note(format!(
                "bosun's MCP gateway: {name} ended before it answered `initialize`: {how}"
            ));
            return Gone::Close;
        }
        self.gw.note(format!(
            "bosun's MCP gateway: {name} ended: {how}; it is started again at the next call"
        ));
        let asked: Vec<Value> = self.asked.drain().map(|(_, a)| a.id).collect();
        for id in asked {
            let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32000,
                "message": format!("the MCP server `{name}` ended before it answered ({how})"),
            }});
            self.tell_cli(&reply).await;
        }
        let calls: Vec<Call> = self.calls.drain().map(|(_, c)| c).collect();
        for call in calls {
            let text = format!(
                "the MCP server `{name}` ended during this call ({how}); bosun does not send a call twice: call again if it should run"
            );
            self.gw
                .note(format!("mcp {name}/{} {}: {text}", call.tool, call.args));
            self.gw
                .record(&call.entry(&name, CallOutcome::ServerEnded { how: how.clone() }));
            let reply = json!({"jsonrpc": "2.0", "id": call.id, "result": {
                "content": [{"type": "text", "text": text}],
                "isError": true,
            }});
            self.tell_cli(&reply).await;
        }
        Gone::Open
    }

    async fn stop_running(&mut self) {
        if let Some(mut run) = self.running.take() {
            let _ = run.child.start_kill();
            let _ = run.child.wait().await;
        }
    }

    /// The CLI closed the connection: the server's stdin is closed, and it is ended if it does
    /// not exit by itself.
    pub(super) async fn end(mut self) {
        if let Some(Running {
            mut child, stdin, ..
        }) = self.running.take()
        {
            drop(stdin);
            if tokio::time::timeout(END_GRACE, child.wait()).await.is_err() {
                if let Some(pid) = child.id() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGTERM,
                    );
                }
                if tokio::time::timeout(END_GRACE, child.wait()).await.is_err() {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
        }
    }
}
