//! The end-to-end test harness: real `bosun`, `bosund` and `bosun-runner` binaries in a state
//! directory of the test's own, and a leak check when the test is done.
//!
//! Each test makes a [`Bosun`] named after itself, drives the real command line (or the real
//! socket), and ends with [`Bosun::finish`], which stops the daemon and fails the test if any
//! process of it is still alive: the daemon, a runner, or anything a run started (found by the
//! run marker in its environment). Waiting is always on a condition with a deadline
//! ([`wait_for`]), never a bare sleep.
//!
//! [`http`] is the small HTTP/1.1 server layer the test-server binaries share; [`stress`] holds
//! the numbered-line generator and copy checker of the log stress and chaos tests.

pub mod desktop;
pub mod dpop;
pub mod gateway_client;
pub mod github;
pub mod http;
pub mod https;
pub mod kube_api;
pub mod oauth_cc;
pub mod slurm;
pub mod stress;
pub mod webui;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

/// The directory holding the workspace's built binaries: `target/debug` for `cargo test`,
/// `target/release` for `cargo bench`.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BOSUN_BIN_DIR") {
        return PathBuf::from(dir);
    }
    // A test binary lives in target/<profile>/deps/.
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the binaries first (`cargo build --workspace --bins`), or run ./scripts/test",
        path.display()
    );
    path
}

/// Polls `check` until it returns `Some`, or fails after `timeout` with `what`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> anyhow::Result<Option<T>>,
) -> anyhow::Result<T> {
    let start = Instant::now();
    let mut delay = Duration::from_millis(5);
    loop {
        if let Some(v) = check()? {
            return Ok(v);
        }
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(100));
    }
}

/// One test's bosun: a state directory of its own and the real binaries.
pub struct Bosun {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    finished: bool,
    /// Extra environment for every command (and so for the daemon it starts).
    env: Vec<(String, String)>,
    /// Everything the commands printed, to search for secrets that must not be there.
    printed: std::sync::Mutex<Vec<u8>>,
}

impl Bosun {
    /// A fresh state directory named after the test.
    pub fn new(test: &str) -> Self {
        // Short, because the socket path must fit in 108 bytes.
        let short: String = test
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(24)
            .collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("bt-{short}-"))
            .tempdir_in("/tmp")
            .unwrap_or_else(|e| panic!("could not make a state directory: {e}"));
        let home = dir.path().join("state");
        let keychain = dir.path().join("keychain.json");
        // The temporary files of the test's daemon and everything it starts (the coding CLIs
        // keep theirs there) go with the test's directory.
        let tmp = dir.path().join("tmp");
        let no_bus = dir.path().join("no-session-bus");
        if let Err(e) = std::fs::create_dir(&tmp) {
            panic!("could not make {}: {e}", tmp.display());
        }
        Self {
            _dir: dir,
            home,
            finished: false,
            env: vec![
                ("BOSUN_FAKE_KEYCHAIN".into(), keychain.display().to_string()),
                ("TMPDIR".into(), tmp.display().to_string()),
                // No desktop of the person running the tests hears of a test's runs: bosund's
                // notifications go to a bus that is not there, unless a test gives it one.
                (
                    "DBUS_SESSION_BUS_ADDRESS".into(),
                    format!("unix:path={}", no_bus.display()),
                ),
            ],
            printed: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Adds (or replaces) an environment variable for every command and the daemon.
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
        self
    }

    /// Leaves the keychain to the environment (no fake file): the Secret Service if one is
    /// reachable, else none.
    pub fn without_fake_keychain(mut self) -> Self {
        self.env.retain(|(k, _)| k != "BOSUN_FAKE_KEYCHAIN");
        self
    }

    /// The fake keychain's file.
    pub fn keychain_file(&self) -> PathBuf {
        self.home
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join("keychain.json")
    }

    /// Runs `bosun` with `input` on its stdin; returns its output, whatever its status.
    pub fn output_with_stdin(&self, args: &[&str], input: &str) -> anyhow::Result<Output> {
        use std::io::Write;
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        self.remember(&out);
        Ok(out)
    }

    fn remember(&self, out: &Output) {
        if let Ok(mut p) = self.printed.lock() {
            p.extend_from_slice(&out.stdout);
            p.extend_from_slice(&out.stderr);
        }
    }

    /// Fails if `secret` is anywhere bosun could have written it: what any command printed, and
    /// every file in the state directory (the store, the logs, the runs' files).
    pub fn assert_secret_nowhere(&self, secret: &str) -> anyhow::Result<()> {
        let needle = secret.as_bytes();
        let contains = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        if self.printed.lock().map(|p| contains(&p)).unwrap_or(true) {
            bail!("the secret appeared in a command's output");
        }
        self.assert_secret_not_in_files(secret)
    }

    /// Fails if `secret` is in any file of the state directory (the store, the logs, the runs'
    /// files). The CLIs' own session transcripts in a run's folder are left out: they hold what
    /// the model was given, tool results included, as they did in the person's own folder
    /// before each run kept its CLI's state in its own.
    pub fn assert_secret_not_in_files(&self, secret: &str) -> anyhow::Result<()> {
        let needle = secret.as_bytes();
        let contains = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        let runs = self.home.join("runs");
        // `runs/<run>/claude/projects`, `runs/<run>/codex/sessions`.
        let transcripts = |p: &Path| {
            p.strip_prefix(&runs).is_ok_and(|rest| {
                rest.components().count() == 3
                    && (rest.ends_with("claude/projects") || rest.ends_with("codex/sessions"))
            })
        };
        let mut stack = vec![self.home.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
                let path = entry.path();
                if path.is_dir() {
                    if !transcripts(&path) {
                        stack.push(path);
                    }
                } else if path.is_file()
                    && let Ok(bytes) = std::fs::read(&path)
                    && contains(&bytes)
                {
                    bail!("the secret appeared in {}", path.display());
                }
            }
        }
        Ok(())
    }

    /// A scratch directory of the test, beside the state directory.
    pub fn scratch(&self) -> PathBuf {
        let p = self
            .home
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join("scratch");
        let _ = std::fs::create_dir_all(&p);
        p
    }

    /// `bosun` with this test's state directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin("bosun"));
        c.args(args)
            .env("BOSUN_HOME", &self.home)
            .env("BOSUN_DAEMON_BIN", bin("bosund"))
            .env("BOSUN_RUNNER_BIN", bin("bosun-runner"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    /// Runs `bosun` at a terminal, as a person would (util-linux `script` gives it a pseudo
    /// terminal for stdin, stdout and stderr): its status and everything it wrote.
    pub fn at_terminal(&self, args: &[&str]) -> anyhow::Result<(bool, String)> {
        let inner = self.cmd(args);
        let quote =
            |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
        let mut line = quote(inner.get_program());
        for a in inner.get_args() {
            line.push(' ');
            line.push_str(&quote(a));
        }
        let mut c = Command::new("script");
        c.args(["-qefc", &line, "/dev/null"]).stdin(Stdio::null());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let out = c
            .output()
            .with_context(|| format!("could not run bosun {args:?} under script"))?;
        self.remember(&out);
        Ok((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
        ))
    }

    /// Runs `bosun` and returns its output, whatever its status.
    pub fn output(&self, args: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .cmd(args)
            .output()
            .with_context(|| format!("could not run bosun {args:?}"))?;
        self.remember(&out);
        Ok(out)
    }

    /// Runs `bosun`, fails unless it succeeds, and returns its stdout.
    pub fn ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.output(args)?;
        if !out.status.success() {
            bail!(
                "bosun {args:?} failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `bosun`, fails unless it fails, and returns its stderr.
    pub fn fails(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.output(args)?;
        if out.status.success() {
            bail!(
                "bosun {args:?} succeeded but should have failed: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Runs `bosun … --json` and parses its output.
    pub fn json(&self, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all)?;
        serde_json::from_str(&out).with_context(|| format!("bosun {args:?} printed no JSON: {out}"))
    }

    /// Starts a run (`bosun run --json [flags] -- program…`) and returns its id.
    pub fn start(&self, flags: &[&str], program: &[&str]) -> anyhow::Result<String> {
        let mut args = vec!["run", "--json"];
        args.extend_from_slice(flags);
        args.push("--");
        args.extend_from_slice(program);
        let v: Value = serde_json::from_str(&self.ok(&args)?)?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .context("bosun run --json printed no id")
    }

    /// `bosun show RUN --json`.
    pub fn show(&self, run: &str) -> anyhow::Result<Value> {
        self.json(&["show", run])
    }

    /// Waits until `show RUN` satisfies `pred`, and returns it.
    pub fn wait_run(
        &self,
        run: &str,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        wait_for(what, timeout, || {
            let v = self.show(run)?;
            Ok(pred(&v).then_some(v))
        })
    }

    /// Waits until the run has ended and returns it.
    pub fn wait_ended(&self, run: &str, timeout: Duration) -> anyhow::Result<Value> {
        self.wait_run(run, "the run to end", timeout, |v| v["state"] == "exited")
    }

    /// The whole log of a run, as `bosun logs` prints it.
    pub fn logs(&self, run: &str) -> anyhow::Result<Vec<u8>> {
        let out = self.output(&["logs", run])?;
        if !out.status.success() {
            bail!(
                "bosun logs failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out.stdout)
    }

    /// What the daemons of this state directory have logged so far (`bosund.log`, appended to
    /// by each one).
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.home.join("bosund.log")).unwrap_or_default()
    }

    /// The daemon's pid, from its pid file, if it is alive.
    pub fn daemon_pid(&self) -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(self.home.join("bosund.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        alive(pid).then_some(pid)
    }

    /// SIGKILLs the daemon and waits until it is gone.
    pub fn kill_daemon(&self) -> anyhow::Result<()> {
        let pid = self.daemon_pid().context("bosund is not running")?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )?;
        wait_for("bosund to die", Duration::from_secs(10), || {
            Ok((!alive(pid)).then_some(()))
        })
    }

    /// The ids of every run this test created (from the run directories).
    pub fn run_ids(&self) -> Vec<String> {
        std::fs::read_dir(self.home.join("runs"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every live process that belongs to this test (see [`processes_of`]).
    pub fn processes(&self) -> Vec<(i32, String)> {
        processes_of(&self.home)
    }

    /// Ends the test: stops the daemon the way a person would, then fails if any process of
    /// the test survived, or if a run's secret files are left.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.finished = true;
        if self.daemon_pid().is_some() {
            self.ok(&["daemon", "stop"])?;
        }
        // Runners exit right after the daemon acks their end; give them a moment.
        let leftover = wait_for(
            "every process of the test to end",
            Duration::from_secs(10),
            || {
                let p = self.processes();
                Ok(p.is_empty().then_some(()))
            },
        );
        if leftover.is_err() {
            let procs = self.processes();
            self.kill_everything();
            bail!("processes of the test were left behind: {procs:#?}");
        }
        Ok(())
    }

    fn kill_everything(&self) {
        kill_all_of(&self.home);
    }
}

impl Drop for Bosun {
    /// A test that failed before `finish` still leaves nothing running; and whatever a test
    /// mounted in its directory (a small tmpfs for the state directory, a read-only bind) is
    /// unmounted once nothing runs there, so the directory can be removed whole.
    fn drop(&mut self) {
        if !self.finished {
            self.kill_everything();
        }
        unmount_under(self._dir.path());
    }
}

/// Unmounts every mount at or under `dir`, deepest first (lazily, so a file still open cannot
/// keep it). Without this, removing a test's directory stops at the mount point and leaves the
/// rest behind.
fn unmount_under(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    // The fifth field is the mount point, with space, tab, newline and backslash as octal
    // escapes.
    let unescape = |s: &str| {
        s.replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\")
    };
    let mut points: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in points {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&p)
            .stderr(Stdio::null())
            .status();
    }
}

/// Every live process that belongs to the state directory `home`: the daemon and runners (their
/// environment names it) and everything its runs started (the run marker, for every run
/// directory under it). With the command line of each.
pub fn processes_of(home: &Path) -> Vec<(i32, String)> {
    let home_var = format!("BOSUN_HOME={}", home.display());
    let markers: HashSet<String> = std::fs::read_dir(home.join("runs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .map(|id| format!("BOSUN_RUN_ID={id}"))
                .collect()
        })
        .unwrap_or_default();
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for p in bosun_shared::process::all_processes() {
        if p.pid == me || p.state == 'Z' {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{}/environ", p.pid)) else {
            continue;
        };
        let ours = env.split(|b| *b == 0).any(|e| {
            let e = String::from_utf8_lossy(e);
            e == home_var || markers.contains(e.as_ref())
        });
        if ours {
            let cmd = std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            found.push((p.pid, cmd.trim().to_string()));
        }
    }
    found
}

/// SIGKILLs every process of the state directory `home`.
pub fn kill_all_of(home: &Path) {
    for (pid, _) in processes_of(home) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Whether a process is alive (a zombie is not).
pub fn alive(pid: i32) -> bool {
    bosun_shared::process::stat(pid).is_some_and(|s| s.state != 'Z')
}

/// Lines of a log as text.
pub fn lines(log: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(log)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A test's own server process (an MCP server reached by address), in a process group of its
/// own that is killed when this is dropped.
pub struct Peer {
    child: std::process::Child,
    pub url: String,
}

impl Peer {
    /// Starts `cmd` and waits until its stdout or stderr shows `ready` (a line containing it).
    /// `url` is the address it serves.
    pub fn start(mut cmd: Command, ready: &str, url: impl Into<String>) -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader};
        use std::os::unix::process::CommandExt;
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("could not start a test server")?;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let mut peer = Self {
            child,
            url: url.into(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(ready) => {
                    if let Some(u) = line.strip_prefix("listening ") {
                        peer.url = u.trim().to_string();
                    }
                    return Ok(peer);
                }
                Ok(_) => {}
                Err(_) => bail!("the test server did not say `{ready}` within 30 s"),
            }
        }
    }

    /// `test-mcp-server --transport http --mode MODE`, on a free port.
    pub fn test_server(mode: &str) -> anyhow::Result<Self> {
        Self::test_server_over("http", mode)
    }

    /// `test-mcp-server --transport TRANSPORT --mode MODE` (`http` or `sse`), on a free port;
    /// its `url` the address to add it by.
    pub fn test_server_over(transport: &str, mode: &str) -> anyhow::Result<Self> {
        let mut cmd = Command::new(bin("test-mcp-server"));
        cmd.args(["--transport", transport, "--mode", mode]);
        Self::start(cmd, "listening", "")
    }

    /// `@modelcontextprotocol/server-everything` over `streamableHttp` or `sse`.
    pub fn everything(transport: &str) -> anyhow::Result<Self> {
        let port = free_port()?;
        let mut cmd = Command::new(everything_bin());
        cmd.arg(transport).env("PORT", port.to_string());
        let (ready, path) = match transport {
            "sse" => ("Server is running on port", "sse"),
            _ => ("listening on port", "mcp"),
        };
        Self::start(cmd, ready, format!("http://127.0.0.1:{port}/{path}"))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The test server binary of this workspace.
pub fn test_server_bin() -> PathBuf {
    bin("test-mcp-server")
}

/// `mcp-server-everything` from `tests/node` (installed by `npm install --prefix tests/node`).
pub fn everything_bin() -> PathBuf {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("node/node_modules/.bin/mcp-server-everything");
    assert!(
        p.exists(),
        "{} is missing: install the test peers with `npm install --prefix tests/node` (./scripts/test does)",
        p.display()
    );
    p
}

/// `node tests/node/webui/drive.mjs <scenario>` in Debian's chromium, signed in to the web UI
/// at `login`, with `env` for the scenario; the JSON it prints.
pub fn browser_scenario(
    login: &str,
    scenario: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("node/webui/drive.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(scenario)
        .env("BOSUN_UI_LOGIN", login)
        .envs(env.iter().copied())
        .output()
        .context("could not run node")?;
    if !out.status.success() {
        bail!(
            "the browser scenario {scenario} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).with_context(|| format!("drive.mjs printed {text}"))
}

/// A private D-Bus session bus for a test, its socket in a directory of its own; killed and
/// removed when dropped (the session default would leave a socket in /tmp).
pub struct SessionBus {
    _dir: tempfile::TempDir,
    child: std::process::Child,
    /// `DBUS_SESSION_BUS_ADDRESS` for whatever the test starts on it.
    pub address: String,
}

impl SessionBus {
    /// Starts `dbus-daemon --session` with `env` added to its environment (and so to whatever
    /// it activates).
    pub fn start(env: &[(&str, &str)]) -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader};
        use std::os::unix::process::CommandExt;
        let dir = tempfile::Builder::new()
            .prefix("bt-bus-")
            .tempdir_in("/tmp")?;
        let bus = format!("--address=unix:path={}", dir.path().join("bus").display());
        let mut child = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1", &bus])
            .envs(env.iter().copied())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("could not start dbus-daemon (install the Debian package dbus)")?;
        let mut address = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out).read_line(&mut address)?;
        }
        let address = address.trim().to_string();
        let bus = Self {
            _dir: dir,
            child,
            address,
        };
        if bus.address.is_empty() {
            bail!("dbus-daemon printed no address");
        }
        Ok(bus)
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real Secret Service for a test: a private D-Bus session bus and gnome-keyring, unlocked,
/// with its keyrings in a scratch home. Both are ended when this is dropped.
pub struct SecretService {
    dir: tempfile::TempDir,
    _bus: SessionBus,
    /// `DBUS_SESSION_BUS_ADDRESS` for the test's bosun.
    pub address: String,
}

impl SecretService {
    pub fn start() -> anyhow::Result<Self> {
        use std::io::Write;
        let dir = tempfile::Builder::new()
            .prefix("bt-ss-")
            .tempdir_in("/tmp")?;
        let marker = format!("BOSUN_TEST_SS={}", dir.path().display());
        let (mkey, mval) = marker.split_once('=').unwrap_or_default();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&home)?;
        crate_private_dir(&runtime)?;
        let bus = SessionBus::start(&[(mkey, mval)])?;
        let address = bus.address.clone();
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .env(mkey, mval)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context(
                "could not start gnome-keyring-daemon (install the Debian package gnome-keyring)",
            )?;
        if let Some(mut stdin) = keyring.stdin.take() {
            stdin.write_all(b"test-keyring-password")?;
        }
        let status = keyring.wait()?;
        let ss = Self {
            dir,
            _bus: bus,
            address,
        };
        if !status.success() {
            bail!("gnome-keyring-daemon --unlock failed: {status}");
        }
        Ok(ss)
    }
}

fn crate_private_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p)?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700))
}

impl Drop for SecretService {
    fn drop(&mut self) {
        let marker = format!("BOSUN_TEST_SS={}", self.dir.path().display());
        for p in bosun_shared::process::all_processes() {
            if let Ok(env) = std::fs::read(format!("/proc/{}/environ", p.pid))
                && env.split(|b| *b == 0).any(|e| e == marker.as_bytes())
            {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p.pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        // The bus goes after this (a field of it), and its socket with it.
    }
}

/// A program from `tests/node/node_modules/.bin` (the coding CLIs, the MCP Inspector).
pub fn node_bin(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node/node_modules/.bin")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: install the test peers with `npm install --prefix tests/node` (./scripts/test does)",
        p.display()
    );
    p
}

/// `fake-model-api`: a scripted model API on 127.0.0.1 for the real coding CLIs (see the
/// binary's own documentation for the script and the log), killed when this is dropped.
pub struct FakeModel {
    _dir: tempfile::TempDir,
    peer: Peer,
    log: PathBuf,
}

impl FakeModel {
    /// `api`: `anthropic`, `openai` or `gemini`.
    pub fn start(api: &str, script: &str) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("bt-fake-")
            .tempdir_in("/tmp")?;
        let log = dir.path().join("turns.jsonl");
        let mut cmd = Command::new(bin("fake-model-api"));
        cmd.args(["--api", api, "--script", script, "--log"])
            .arg(&log);
        let peer = Peer::start(cmd, "listening", "")?;
        Ok(Self {
            _dir: dir,
            peer,
            log,
        })
    }

    /// A fake model API of `api` (`anthropic`, `openai` or `gemini`) that has its CLI run
    /// `command` once with its shell tool (Claude Code's `Bash`, Codex's `exec_command`, Gemini
    /// CLI's `run_shell_command`), then ends the turn.
    pub fn running(api: &str, command: &str) -> anyhow::Result<Self> {
        let command = serde_json::to_string(command)?;
        let script = match api {
            "anthropic" => format!(r#"call:Bash:{{"command":{command}}};text:done"#),
            "openai" => format!(r#"call:exec_command:{{"cmd":{command}}};text:All done."#),
            "gemini" => {
                format!(r#"call:run_shell_command:{{"command":{command}}};text:All done."#)
            }
            other => anyhow::bail!("no shell tool known for the fake {other} API"),
        };
        Self::start(api, &script)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.peer.url
    }

    /// Every turn logged so far, retries left out.
    pub fn turns(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|t| t["retry"] != Value::Bool(true))
            .collect()
    }

    /// Waits until at least `n` turns have come.
    pub fn wait_turns(&self, n: usize, timeout: Duration) -> anyhow::Result<Vec<Value>> {
        wait_for(&format!("{n} model turns"), timeout, || {
            let t = self.turns();
            Ok((t.len() >= n).then_some(t))
        })
    }
}

/// The session a live process is in.
pub fn session_of(pid: i32) -> Option<i32> {
    bosun_shared::process::stat(pid).map(|s| s.sid)
}

/// Every live process of session `sid`, with its command line.
pub fn session_members(sid: i32) -> Vec<(i32, String)> {
    bosun_shared::process::all_processes()
        .into_iter()
        .filter(|p| p.sid == sid && p.state != 'Z')
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            (p.pid, cmd.trim().to_string())
        })
        .collect()
}

/// A file's permission bits.
pub fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o777)
}

/// `PATH` with `tests/node/node_modules/.bin` (the coding CLIs) first.
pub fn node_path() -> String {
    let dir = node_bin("claude")
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

impl Bosun {
    /// Adds server-everything (stdio) as `name` with a secret environment line
    /// `EVERYTHING_TOKEN`, and lists its tools.
    pub fn add_everything(&self, name: &str, secret: &str) -> anyhow::Result<()> {
        self.add_everything_unlisted(name, secret)?;
        self.ok(&["mcp", "tools", name])?;
        Ok(())
    }

    /// server-everything (stdio) as `name`, with `EVERYTHING_TOKEN=secret`, its tools not
    /// listed yet (so nothing is pinned: rules set now shape what the person's look sees).
    pub fn add_everything_unlisted(&self, name: &str, secret: &str) -> anyhow::Result<()> {
        let everything = everything_bin().display().to_string();
        self.ok(&[
            "mcp",
            "add",
            name,
            "--env",
            &format!("EVERYTHING_TOKEN={secret}"),
            "--",
            &everything,
            "stdio",
        ])?;
        Ok(())
    }

    /// A Claude Code agent `name` pointed at the fake model API `fake_url`, with a HOME, a
    /// CLAUDE_CONFIG_DIR and a working folder of its own under the scratch folder, and
    /// `extra` flags of `bosun agent add`.
    pub fn add_claude_agent(
        &self,
        name: &str,
        fake_url: &str,
        extra: &[&str],
    ) -> anyhow::Result<()> {
        let dir = self.scratch().join(name);
        for d in ["work", "home", "claude"] {
            std::fs::create_dir_all(dir.join(d))?;
        }
        let mut args = vec![
            "--cli".to_string(),
            "claude".into(),
            "--cwd".into(),
            dir.join("work").display().to_string(),
            "--env".into(),
            format!("ANTHROPIC_BASE_URL={fake_url}"),
            "--env".into(),
            format!("HOME={}", dir.join("home").display()),
            "--env".into(),
            format!("CLAUDE_CONFIG_DIR={}", dir.join("claude").display()),
            "--env".into(),
            format!("PATH={}", node_path()),
            "--secret-env".into(),
            "ANTHROPIC_API_KEY".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.add_agent(name, &args, "sk-ant-test-77c1e0d9a4")
    }

    /// The Claude Code agent `agent` talks to the fake model API `fake` from its next run on.
    pub fn point_claude_at(&self, agent: &str, fake: &FakeModel) -> anyhow::Result<()> {
        self.ok(&[
            "agent",
            "edit",
            agent,
            "--env",
            &format!("ANTHROPIC_BASE_URL={}", fake.url()),
        ])?;
        Ok(())
    }

    /// bosun's MCP server as the lead's answer in `chat` has it: the address and the answer's
    /// token, read from the answer's 0600 config the way the lead's CLI reads it. Waited for
    /// until the file is whole (the runner writes it just before it starts the CLI, and a file
    /// that exists may not be written yet).
    pub fn answer_mcp_server(&self, chat: &str) -> anyhow::Result<(String, String)> {
        wait_for("the answer's MCP config", Duration::from_secs(60), || {
            let Some(run) = self.json(&["chat", "show", chat])?["answering"]
                .as_str()
                .map(str::to_string)
            else {
                return Ok(None);
            };
            Ok(self.run_mcp_server(&run))
        })
    }

    /// bosun's MCP server as run `run` has it (an answer of the lead, a QA run): the address
    /// and the run's token, read from its 0600 config the way its CLI reads it; none until the
    /// file is there and whole.
    pub fn run_mcp_server(&self, run: &str) -> Option<(String, String)> {
        let config = self.home.join("runs").join(run).join("mcp.json");
        let text = std::fs::read_to_string(&config).ok()?;
        let v = serde_json::from_str::<Value>(&text).ok()?;
        let server = &v["mcpServers"]["bosun"];
        let url = server["url"].as_str().unwrap_or_default().to_string();
        let token = server["headers"]["Authorization"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("Bearer ")
            .to_string();
        (!url.is_empty() && !token.is_empty()).then_some((url, token))
    }

    /// A Claude Code agent `name` whose `claude` is `fake-claude` (a CLI that speaks Claude
    /// Code's control protocol as recorded and ignores its flags), working in `<scratch>/work`
    /// with `script` (written to `<work>/NAME.script.json`, named by `FAKE_CLAUDE_SCRIPT_FILE`,
    /// since a long script is over the 64 KiB an agent's environment value may be). Returns
    /// the record file it appends each call to, in its folder (its runs write nowhere else).
    pub fn add_fake_claude_agent(&self, name: &str, script: &Value) -> anyhow::Result<PathBuf> {
        let fakebin = self.scratch().join("fakebin");
        std::fs::create_dir_all(&fakebin)?;
        let claude = fakebin.join("claude");
        if !claude.exists() {
            std::os::unix::fs::symlink(bin_dir().join("fake-claude"), &claude)?;
        }
        let work = self.scratch().join("work");
        std::fs::create_dir_all(&work)?;
        let record = work.join(format!("{name}.calls.jsonl"));
        let script_file = work.join(format!("{name}.script.json"));
        std::fs::write(&script_file, script.to_string())?;
        self.add_agent(
            name,
            &[
                "--cli",
                "claude",
                "--cwd",
                &work.display().to_string(),
                "--env",
                &format!("PATH={}:{}", fakebin.display(), node_path()),
                "--env",
                &format!("FAKE_CLAUDE_SCRIPT_FILE={}", script_file.display()),
                "--env",
                &format!("FAKE_CLAUDE_RECORD={}", record.display()),
                "--secret-env",
                "ANTHROPIC_API_KEY",
            ],
            "sk-ant-fake-claude-3c9e1f",
        )?;
        Ok(record)
    }

    /// `bosun agent add NAME ARGS…` with `secret` on stdin (for `--secret-env`).
    pub fn add_agent(&self, name: &str, args: &[&str], secret: &str) -> anyhow::Result<()> {
        let mut all = vec!["agent", "add", name];
        all.extend_from_slice(args);
        let out = self.output_with_stdin(&all, secret)?;
        if !out.status.success() {
            bail!(
                "bosun agent add failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

/// POSTs a JSON-RPC `initialize` to bosun's MCP server at `url` with `token` as its bearer
/// token, if any; the HTTP status (401 for a token the server does not know).
pub fn post_initialize(url: &str, token: Option<&str>) -> anyhow::Result<u16> {
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0))
}

/// The environment of a live process, as `KEY=VALUE` strings.
pub fn environ_of(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|e| {
            e.split(|b| *b == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `oauth-server`: an OAuth authorization server and a protected MCP server on 127.0.0.1 (see
/// the binary's documentation for its flags and log), killed when this is dropped.
pub struct OAuthServer {
    _dir: tempfile::TempDir,
    peer: Peer,
    log: PathBuf,
}

impl OAuthServer {
    pub fn start(flags: &[&str]) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("bt-oauth-")
            .tempdir_in("/tmp")?;
        let log = dir.path().join("requests.jsonl");
        let mut cmd = Command::new(bin("oauth-server"));
        cmd.args(flags).arg("--log").arg(&log);
        let peer = Peer::start(cmd, "listening", "")?;
        Ok(Self {
            _dir: dir,
            peer,
            log,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> &str {
        &self.peer.url
    }

    /// The MCP server's address.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.peer.url)
    }

    /// `bosun mcp add remote --transport http <this server's MCP address>`.
    pub fn add_to(&self, b: &Bosun) -> anyhow::Result<()> {
        b.ok(&[
            "mcp",
            "add",
            "remote",
            "--transport",
            "http",
            &self.mcp_url(),
        ])?;
        Ok(())
    }

    /// Every request logged so far.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// The requests to one path.
    pub fn requests_to(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with(path)))
            .collect()
    }

    /// How many refresh requests reached the token endpoint.
    pub fn refreshes(&self) -> usize {
        self.requests()
            .iter()
            .filter(|r| r["grant_type"] == "refresh_token")
            .count()
    }

    /// Adds this server to `b` as `name` (by address) and signs `b` in to it.
    pub fn add_signed_in(&self, b: &Bosun, name: &str) -> anyhow::Result<()> {
        b.ok(&["mcp", "add", name, "--transport", "http", &self.mcp_url()])?;
        b.ok(&["mcp", "sign-in", name])?;
        Ok(())
    }

    /// Makes every access token issued so far expire now.
    pub fn expire_tokens(&self) -> anyhow::Result<()> {
        self.control("expire")
    }

    /// Forgets every client registered through `/register`, as a service that expires clients
    /// (or one that restarted) does.
    pub fn forget_clients(&self) -> anyhow::Result<()> {
        self.control("forget-clients")
    }

    /// `POST /test/<what>`, one of the server's test controls.
    pub fn control(&self, what: &str) -> anyhow::Result<()> {
        use std::io::{Read, Write};
        let addr = self.peer.url.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(addr)?;
        write!(
            stream,
            "POST /test/{what} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        if !answer.starts_with("HTTP/1.1 200") {
            bail!("the test control {what} answered: {answer}");
        }
        Ok(())
    }
}

/// `test-browser`, which stands in for the person's browser (`BROWSER=…`).
pub fn test_browser_bin() -> PathBuf {
    bin("test-browser")
}

impl Bosun {
    /// This bosun with `test-browser` as the person's browser.
    pub fn with_test_browser(self) -> Self {
        self.with_env("BROWSER", &test_browser_bin().display().to_string())
    }
}

/// The values kept in the fake keychain file, by key.
pub fn keychain_values(b: &Bosun) -> serde_json::Map<String, Value> {
    std::fs::read_to_string(b.keychain_file())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// `Value` array of strings as a `Vec<String>`.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Bosun {
    /// A Codex agent `name` pointed at the fake Responses API `fake_url` through a model
    /// provider of its own, with a HOME, a CODEX_HOME and a working folder of its own under the
    /// scratch folder, and `extra` flags of `bosun agent add`.
    pub fn add_codex_agent(
        &self,
        name: &str,
        fake_url: &str,
        extra: &[&str],
    ) -> anyhow::Result<()> {
        let dir = self.scratch().join(name);
        for d in ["work", "home", "codex"] {
            std::fs::create_dir_all(dir.join(d))?;
        }
        let mut args = vec![
            "--cli".to_string(),
            "codex".into(),
            "--cwd".into(),
            dir.join("work").display().to_string(),
            "--env".into(),
            format!("HOME={}", dir.join("home").display()),
            "--env".into(),
            format!("CODEX_HOME={}", dir.join("codex").display()),
            "--env".into(),
            format!("PATH={}", node_path()),
            "--codex-config".into(),
            r#"model_provider="mock""#.into(),
            "--codex-config".into(),
            r#"model_providers.mock.name="Mock""#.into(),
            "--codex-config".into(),
            format!(r#"model_providers.mock.base_url="{fake_url}/v1""#),
            "--codex-config".into(),
            r#"model_providers.mock.wire_api="responses""#.into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.add_agent(name, &args, "")
    }

    /// A Gemini CLI agent `name` pointed at the fake Gemini API `fake_url`, with a working folder
    /// of its own (`<scratch>/<name>/work`; Gemini gets a home of the run's own from bosun), a
    /// test key, and `extra` flags of `bosun agent add`.
    pub fn add_gemini_agent(
        &self,
        name: &str,
        fake_url: &str,
        extra: &[&str],
    ) -> anyhow::Result<()> {
        let work = self.scratch().join(name).join("work");
        std::fs::create_dir_all(&work)?;
        let mut args = vec![
            "--cli".to_string(),
            "gemini".into(),
            "--cwd".into(),
            work.display().to_string(),
            "--env".into(),
            format!("GOOGLE_GEMINI_BASE_URL={fake_url}"),
            "--env".into(),
            format!("PATH={}", node_path()),
            "--secret-env".into(),
            "GEMINI_API_KEY".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.add_agent(name, &args, "gemini-key-test-3f8a02")
    }
}

/// Run approvals, as the tests of every CLI look at them.
impl Bosun {
    /// `bosun agent run AGENT PROMPT`: the new run's id.
    pub fn run_agent(&self, agent: &str, prompt: &str) -> anyhow::Result<String> {
        Ok(self
            .ok(&["agent", "run", agent, prompt])?
            .trim()
            .to_string())
    }

    /// The approvals waiting, as `bosun inbox --json` lists them.
    pub fn waiting_approvals(&self) -> anyhow::Result<Vec<Value>> {
        self.approvals_in(&["inbox"])
    }

    /// Every approval bosun keeps, decided or waiting (`bosun inbox --all --json`).
    pub fn all_approvals(&self) -> anyhow::Result<Vec<Value>> {
        self.approvals_in(&["inbox", "--all"])
    }

    /// The approvals among what `args` (an inbox command) lists.
    fn approvals_in(&self, args: &[&str]) -> anyhow::Result<Vec<Value>> {
        Ok(self
            .json(args)?
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|i| i["kind"] == "approval")
            .collect())
    }

    /// The first approval to wait (within a minute).
    pub fn wait_approval(&self) -> anyhow::Result<Value> {
        wait_for("an approval in the inbox", Duration::from_secs(60), || {
            Ok(self.waiting_approvals()?.into_iter().next())
        })
    }

    /// What bosun decided about each tool call of a run (`bosun show RUN`).
    pub fn decisions(&self, run: &str) -> anyhow::Result<Vec<Value>> {
        Ok(self.show(run)?["agent"]["decisions"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }
}

/// An approval's (or any view's) short id.
pub fn short_id(v: &Value) -> String {
    v["short_id"].as_str().unwrap_or_default().to_string()
}

impl FakeModel {
    /// The text of the tool results the model saw at turn `n` (0-based).
    pub fn result_at(&self, n: usize) -> String {
        self.turns()
            .get(n)
            .and_then(|t| t["tool_result"].as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// An attached UI (`SubscribeRuns` on the daemon's socket, in a thread of its own): every event
/// it hears, as the JSON the protocol sends (`{"event": "run_changed", …}`), in order.
pub struct EventWatcher {
    heard: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl EventWatcher {
    /// Subscribes to the running daemon of `b`; returns once the subscription is answered.
    pub fn start(b: &Bosun) -> anyhow::Result<Self> {
        use bosun_protocol::socket;
        use bosun_protocol::ui::{ClientFrame, Request, ServerFrame};
        use bosun_protocol::{FrameReader, FrameWriter, Hello, HelloReply, PROTOCOL_VERSION, Role};
        let sock = b.home.join("bosund.sock");
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = heard.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let Ok(stream) = socket::connect(&sock).await else {
                    return;
                };
                let (r, w) = socket::split(stream);
                let (mut r, mut w) = (FrameReader::new(r), FrameWriter::new(w));
                let hello = Hello {
                    protocol_version: PROTOCOL_VERSION,
                    role: Role::Ui,
                    binary_log: false,
                    client: Default::default(),
                };
                if w.send_now(&hello).await.is_err() {
                    return;
                }
                let Ok(Some(HelloReply::Welcome(_))) = r.read::<HelloReply>().await else {
                    return;
                };
                let sub = ClientFrame::Request {
                    id: 1,
                    body: Request::SubscribeRuns,
                };
                if w.send_now(&sub).await.is_err() {
                    return;
                }
                while let Ok(Some(frame)) = r.read::<ServerFrame>().await {
                    match frame {
                        ServerFrame::Response { id: 1, .. } => {
                            let _ = ready_tx.send(());
                        }
                        ServerFrame::Event(e) => {
                            if let (Ok(mut v), Ok(json)) = (seen.lock(), serde_json::to_value(&e)) {
                                v.push(json);
                            }
                        }
                        ServerFrame::Response { .. } | ServerFrame::Error(_) => {}
                    }
                }
            });
        });
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .context("the watcher could not subscribe")?;
        Ok(Self { heard })
    }

    /// The events of one kind heard so far (`notification`, `storage_fault`, …), in order.
    pub fn of(&self, kinds: &[&str]) -> Vec<Value> {
        self.heard
            .lock()
            .map(|v| {
                v.iter()
                    .filter(|e| kinds.iter().any(|k| e["event"] == *k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Reads an event stream (an HTTP answer of `text/event-stream`) until the event `name` has come;
/// an error when the stream closes first.
pub fn read_to_event(stream: impl std::io::Read, name: &str) -> anyhow::Result<()> {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(stream);
    let mut line = String::new();
    let want = format!("event: {name}");
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            bail!("the event stream closed before its {name}");
        }
        if line.trim_end() == want {
            return Ok(());
        }
    }
}

/// How many files a process has open (0 once it is gone).
pub fn open_files(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// A folder `dir` of links to every program on this `PATH` (the first of each name) but those
/// named in `without`, and of `extra` scripts of its own (name, body): a `PATH` on which a
/// program the machine has is missing, or is a stand-in. Returns it as a `PATH` value.
pub fn path_without(
    dir: &Path,
    without: &[&str],
    extra: &[(&str, &str)],
) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let mut seen: std::collections::HashSet<std::ffi::OsString> =
        without.iter().map(Into::into).collect();
    for (name, body) in extra {
        let p = dir.join(name);
        std::fs::write(&p, body)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
        seen.insert(name.into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            if seen.insert(e.file_name()) {
                std::os::unix::fs::symlink(e.path(), dir.join(e.file_name()))?;
            }
        }
    }
    Ok(dir.display().to_string())
}

/// A git repository at `dir` on branch `main` with one commit (a README), for a project.
pub fn repo_with_one_commit(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    git(dir, &["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("README"), "hello\n")?;
    git(dir, &["add", "."])?;
    git(dir, &["commit", "-qm", "first"])?;
    Ok(())
}

/// `git -C dir args…` as the tests use it: no system or global config of the machine's, a fixed
/// author; its trimmed stdout, or what it said when it failed.
pub fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .context("could not run git")?;
    if !out.status.success() {
        bail!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A TCP listener that counts the connections it accepts and answers each with a small HTTP
/// response (`reached-ok!`): a host a fenced run must or must not reach.
pub struct CountingServer {
    pub port: u16,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl CountingServer {
    /// Listens on `ip` (a loopback address: 127.0.0.2 is not in any run's list by default).
    pub fn start(ip: &str) -> anyhow::Result<CountingServer> {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind((ip, 0))?;
        let port = listener.local_addr()?.port();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nreached-ok!\n",
                );
            }
        });
        Ok(CountingServer { port, count })
    }

    /// The connections accepted so far.
    pub fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}
