//! Log throughput and replay.
//!
//! A program writes 1,000,000 lines of 100 bytes. Under bosun the run is followed live by a
//! subscriber (`bosun run --follow`), every chunk committed durably to the store and delivered.
//! The same program's output is captured by supervisord (from PyPI) into its log file, and
//! piped into `cat > file` (the limit on this machine). Then the finished run's log is replayed
//! to a new subscriber (`bosun logs`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report, settle, time};

const LINES: u64 = 1_000_000;
const BYTES: u64 = LINES * 100;
const ROUNDS: usize = 3;

fn main() -> anyhow::Result<()> {
    let env = Env::new("logs")?;
    let gen_lines = bin("gen-lines")?;
    let generator = gen_lines.display().to_string();
    let scratch = env.scratch();

    // Baseline: the plain pipe.
    let pipe_out = scratch.join("pipe.out");
    let mut pipe = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let script = format!("{generator} {LINES} | cat > {}", pipe_out.display());
        pipe.push(time(|| bosun_bench::sh(&script))?.0);
    }
    let pipe = median(pipe);

    // Baseline: supervisord.
    let supervisord = supervisord_time(&env, &generator)?;

    // bosun, followed live.
    env.start_daemon()?;
    let mut runs = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let t0 = Instant::now();
        let status = env
            .bosun(&["run", "--follow", "--", &generator, &LINES.to_string()])?
            .stdout(Stdio::null())
            .status()?;
        runs.push(t0.elapsed());
        if !status.success() {
            bail!("the run failed: {status}");
        }
    }
    let listed: serde_json::Value = serde_json::from_str(&env.ok(&["ps", "--all", "--json"])?)?;
    let last_id = listed
        .as_array()
        .and_then(|a| a.last())
        .and_then(|r| r["id"].as_str())
        .context("no run listed")?
        .to_string();
    if listed[0]["last_seq"].as_u64().unwrap_or(0) == 0 {
        bail!("the run recorded no output");
    }
    let bosun = median(runs);

    let rate = |d: Duration| BYTES as f64 / d.as_secs_f64() / 1e6;
    let vs_sup = supervisord.as_secs_f64() / bosun.as_secs_f64();
    report(Figure {
        bench: "logs",
        what: "1M lines x 100 B, followed live + committed",
        value: format!("{} ({:.0} MB/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!(
            "supervisord {} ({:.0} MB/s)",
            fmt_duration(supervisord),
            rate(supervisord)
        ),
        ratio: vs_sup,
        target: ">= 1.0",
        met: vs_sup >= 1.0,
    });
    let vs_pipe = pipe.as_secs_f64() / bosun.as_secs_f64();
    report(Figure {
        bench: "logs",
        what: "1M lines x 100 B, followed live + committed",
        value: format!("{} ({:.0} MB/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!(
            "| cat > file {} ({:.0} MB/s)",
            fmt_duration(pipe),
            rate(pipe)
        ),
        ratio: vs_pipe,
        target: ">= 0.5",
        met: vs_pipe >= 0.5,
    });

    // Replay of the finished run to a new subscriber.
    let replay_out = scratch.join("replay.out");
    let mut replays = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let file = std::fs::File::create(&replay_out)?;
        let t0 = Instant::now();
        let status = env.bosun(&["logs", &last_id])?.stdout(file).status()?;
        replays.push(t0.elapsed());
        if !status.success() {
            bail!("bosun logs failed");
        }
    }
    let same = Command::new("cmp")
        .arg(&pipe_out)
        .arg(&replay_out)
        .status()?
        .success();
    if !same {
        bail!("the replayed log differs from what the program wrote");
    }
    let replay = median(replays);
    let lines_per_s = LINES as f64 / replay.as_secs_f64();
    report(Figure {
        bench: "logs",
        what: "replay of a finished 1M-line run",
        value: format!(
            "{} ({:.2} M lines/s)",
            fmt_duration(replay),
            lines_per_s / 1e6
        ),
        baseline: "target 1.00 M lines/s".into(),
        ratio: lines_per_s / 1e6,
        target: ">= 1.0",
        met: lines_per_s >= 1e6,
    });
    env.stop_daemon()?;
    Ok(())
}

/// supervisord capturing the same program's stdout to its log file: from `supervisorctl start`
/// until the file holds every byte.
fn supervisord_time(env: &Env, generator: &str) -> anyhow::Result<Duration> {
    let which = |name: &str| -> anyhow::Result<String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()?;
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if p.is_empty() {
            bail!("{name} is not installed: ./scripts/bench installs it from PyPI");
        }
        Ok(p)
    };
    let (supervisord, supervisorctl) = (which("supervisord")?, which("supervisorctl")?);
    let dir = env.scratch().join("supervisor");
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("gen.out");
    let conf = dir.join("supervisord.conf");
    let sock = dir.join("s.sock");
    std::fs::write(
        &conf,
        format!(
            "[unix_http_server]\nfile={sock}\n\n[supervisord]\nnodaemon=true\nlogfile={d}/supervisord.log\npidfile={d}/supervisord.pid\n\n\
             [rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n\
             [supervisorctl]\nserverurl=unix://{sock}\n\n\
             [program:gen]\ncommand={generator} {LINES}\nautostart=false\nautorestart=false\nstartsecs=0\n\
             stdout_logfile={log}\nstdout_logfile_maxbytes=0\nstdout_logfile_backups=0\nstderr_logfile=NONE\n",
            sock = sock.display(),
            d = dir.display(),
            log = log.display(),
        ),
    )?;
    let mut daemon = Command::new(&supervisord)
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let ctl = |args: &[&str]| -> anyhow::Result<bool> {
        Ok(Command::new(&supervisorctl)
            .arg("-c")
            .arg(&conf)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?
            .success())
    };
    let t0 = Instant::now();
    while !ctl(&["pid"]).unwrap_or(false) {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = daemon.kill();
            bail!("supervisord did not start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let _ = std::fs::remove_file(&log);
        settle();
        let t0 = Instant::now();
        ctl(&["start", "gen"])?;
        loop {
            let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
            if size >= BYTES {
                break;
            }
            if t0.elapsed() > Duration::from_secs(300) {
                bail!("supervisord captured only {size} bytes");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        times.push(t0.elapsed());
        ctl(&["stop", "gen"])?;
    }
    ctl(&["shutdown"])?;
    let _ = daemon.wait();
    Ok(median(times))
}
