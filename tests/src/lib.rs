//! The end-to-end test harness: real `bosun`, `bosund` and `bosun-runner` binaries in a state
//! directory of the test's own, and a leak check when the test is done.
//!
//! Each test makes a [`Bosun`] named after itself, drives the real command line (or the real
//! socket), and ends with [`Bosun::finish`], which stops the daemon and fails the test if any
//! process of it is still alive: the daemon, a runner, or anything a run started (found by the
//! run marker in its environment). Waiting is always on a condition with a deadline
//! ([`wait_for`]), never a bare sleep.

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
        Self {
            _dir: dir,
            home,
            finished: false,
        }
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
            .stdin(Stdio::null());
        c
    }

    /// Runs `bosun` and returns its output, whatever its status.
    pub fn output(&self, args: &[&str]) -> anyhow::Result<Output> {
        self.cmd(args)
            .output()
            .with_context(|| format!("could not run bosun {args:?}"))
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
    /// A test that failed before `finish` still leaves nothing running.
    fn drop(&mut self) {
        if !self.finished {
            self.kill_everything();
        }
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
