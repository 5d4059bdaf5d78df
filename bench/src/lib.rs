//! The benchmark harness: the real release binaries in a state directory of the benchmark's
//! own, timing helpers, and one way to report a figure with the baseline measured in the same
//! run. Results also go to `target/bench-results.jsonl`, for `docs/benchmarks.md`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_shared::paths::StateDir;
use bosun_ui::Client;

pub use bosun_tests::bin_dir;

pub fn bin(name: &str) -> anyhow::Result<PathBuf> {
    let p = bin_dir().join(name);
    if !p.is_file() {
        bail!(
            "{} is missing: run ./scripts/bench, which builds the release binaries first",
            p.display()
        );
    }
    Ok(p)
}

/// One benchmark's bosun: its own state directory and daemon.
pub struct Env {
    dir: tempfile::TempDir,
    pub home: PathBuf,
}

impl Env {
    pub fn new(name: &str) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("bb-{name}-"))
            .tempdir_in("/tmp")?;
        let home = dir.path().join("state");
        Ok(Self { dir, home })
    }

    pub fn scratch(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn dirs(&self) -> anyhow::Result<StateDir> {
        Ok(StateDir::at(&self.home)?)
    }

    pub fn bosun(&self, args: &[&str]) -> anyhow::Result<Command> {
        let mut c = Command::new(bin("bosun")?);
        c.args(args)
            .env("BOSUN_HOME", &self.home)
            .env("BOSUN_DAEMON_BIN", bin("bosund")?)
            .env("BOSUN_RUNNER_BIN", bin("bosun-runner")?)
            .stdin(Stdio::null());
        Ok(c)
    }

    /// Runs `bosun` and fails unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self.bosun(args)?.output()?;
        if !out.status.success() {
            bail!("bosun {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Starts the daemon (any command does).
    pub fn start_daemon(&self) -> anyhow::Result<()> {
        self.ok(&["ps"]).map(|_| ())
    }

    pub fn daemon_pid(&self) -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(self.home.join("bosund.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        bosun_shared::process::stat(pid)
            .is_some_and(|s| s.state != 'Z')
            .then_some(pid)
    }

    pub async fn client(&self) -> anyhow::Result<Client> {
        Ok(Client::connect(&self.dirs()?, true).await?)
    }

    pub fn stop_daemon(&self) -> anyhow::Result<()> {
        self.ok(&["daemon", "stop"]).map(|_| ())
    }

    /// Stops every run and bosund (`bosun daemon stop`), then fails if any process of the
    /// benchmark is still alive after 15 s (and kills it).
    pub fn end_everything(&self) -> anyhow::Result<()> {
        if self.daemon_pid().is_some() {
            self.stop_daemon()?;
        }
        let t0 = Instant::now();
        loop {
            let left = bosun_tests::processes_of(&self.home);
            if left.is_empty() {
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(15) {
                bosun_tests::kill_all_of(&self.home);
                bail!("processes of the benchmark were left behind: {left:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Env {
    /// Stops the daemon, and even when a benchmark failed half-way, ends every process it
    /// started (found by the state directory or a run marker in their environment).
    fn drop(&mut self) {
        if self.daemon_pid().is_some() {
            let _ = self.ok(&["daemon", "stop"]);
        }
        bosun_tests::kill_all_of(&self.home);
    }
}

/// Lets the disk catch up (`sync`, then a pause), so no measurement pays for the writeback of
/// the one before.
pub fn settle() {
    let _ = Command::new("sync").status();
    std::thread::sleep(Duration::from_millis(1500));
}

/// Times a closure.
pub fn time<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(Duration, T)> {
    let t0 = Instant::now();
    let v = f()?;
    Ok((t0.elapsed(), v))
}

/// The median of some durations.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Runs a shell command and fails unless it succeeds.
pub fn sh(script: &str) -> anyhow::Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .context("sh")?;
    if !status.success() {
        bail!("`{script}` failed: {status}");
    }
    Ok(())
}

/// Resident memory of a process in KiB.
pub fn rss_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// One figure, printed with its baseline and the ratio the target is stated in, and
/// appended to `target/bench-results.jsonl`.
pub struct Figure<'a> {
    pub bench: &'a str,
    pub what: &'a str,
    pub value: String,
    pub baseline: String,
    pub ratio: f64,
    /// The target, stated as a ratio ("≥ 1.0").
    pub target: &'a str,
    pub met: bool,
}

pub fn report(f: Figure<'_>) {
    println!(
        "{:<10} {:<44} {:>16}   baseline {:<34} ratio {:>7.3}   target {:<8} {}",
        f.bench,
        f.what,
        f.value,
        f.baseline,
        f.ratio,
        f.target,
        if f.met { "met" } else { "MISSED" }
    );
    let line = serde_json::json!({
        "bench": f.bench, "what": f.what, "value": f.value, "baseline": f.baseline,
        "ratio": f.ratio, "target": f.target, "met": f.met,
    });
    let path = bin_dir().join("../bench-results.jsonl");
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        use std::io::Write;
        let _ = writeln!(file, "{line}");
    }
}

/// `1.23 s`, `45.6 ms`.
pub fn fmt_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1000.0)
    }
}

/// Starts a run and follows it to its recorded end (subscribed past any output: the
/// subscription ends when the exit is recorded); fails unless it succeeded. The run as it
/// ended.
pub async fn run_to_end(
    client: &mut Client,
    params: bosun_protocol::ui::StartRunParams,
) -> anyhow::Result<bosun_protocol::ui::RunView> {
    use bosun_protocol::runs::Following;
    use bosun_protocol::ui::{Event, FollowParams};
    let run = client.call(params).await?;
    let follow = FollowParams {
        run: run.id.to_string(),
        from_seq: u64::MAX,
        follow: true,
        stream: None,
        direct: false,
    };
    let Following { sub, .. } = client.call(follow).await?;
    loop {
        match client.next_event().await? {
            Some(Event::LogEnd { sub: s, run, .. }) if s == sub => {
                if run.outcome.map(|o| o.to_string()).as_deref() != Some("succeeded") {
                    bail!("a run did not succeed: {run:?}");
                }
                return Ok(*run);
            }
            Some(_) => {}
            None => bail!("connection closed"),
        }
    }
}

/// Starts `n` runs of `params`, `in_flight` at a time (one connection each), each followed to
/// its recorded, successful end; the time all of it took.
pub async fn runs_to_end(
    env: &Env,
    n: usize,
    in_flight: usize,
    params: bosun_protocol::ui::StartRunParams,
) -> anyhow::Result<Duration> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let left = Arc::new(AtomicUsize::new(n));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..in_flight {
        let mut client = env.client().await?;
        let (left, params) = (left.clone(), params.clone());
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                run_to_end(&mut client, params.clone()).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(t0.elapsed())
}
