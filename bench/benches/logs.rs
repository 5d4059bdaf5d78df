//! Log throughput and replay.
//!
//! A program writes 1,000,000 lines of 100 bytes. Under bosun the run is followed live by a
//! subscriber (`bosun run --follow`), every chunk committed durably to the store and delivered.
//! The same program's output is captured by supervisord (from PyPI) into its log file, and
//! piped into `cat > file` (the limit on this machine). Then the finished run's log is replayed
//! to a new subscriber (`bosun logs`).
//!
//! Two more figures, about followers:
//! - **followers' cost**: the same program's run from the moment it starts writing to its
//!   recorded end, with three live `bosun logs -f` followers of which one is SIGSTOPped for the
//!   whole run, against the same run with no follower at all. A follower, however slow, must not
//!   slow the run: the target is within 10%.
//! - **ten at once**: ten such runs at once, each followed live by its `bosun run --follow`,
//!   until every follower has every chunk and every end is recorded, against supervisord
//!   running ten such programs at once until its ten log files are whole. Target: at most 1.5
//!   times supervisord's time.
//!
//! Each figure is the median of 5 rounds (the ten-at-once one of 3, since each of its rounds
//! writes 1 GB under bosun and 1 GB under supervisord). `BOSUN_BENCH_LOG_LINES` makes the runs smaller, for a quick smoke run.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report, settle, time};
use bosun_protocol::runs::Following;
use bosun_protocol::ui::{Event, FollowParams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const ROUNDS: usize = 5;
/// Rounds of the ten-at-once figure.
const MANY_ROUNDS: usize = 3;
/// Runs (and supervisord programs) at once.
const MANY: usize = 10;

/// Lines a run writes: 1,000,000, or `BOSUN_BENCH_LOG_LINES`.
fn lines() -> u64 {
    std::env::var("BOSUN_BENCH_LOG_LINES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000)
}

fn main() -> anyhow::Result<()> {
    let lines = lines();
    let bytes = lines * 100;
    let env = Env::new("logs")?;
    let gen_lines = bin("gen-lines")?;
    let generator = gen_lines.display().to_string();
    let scratch = env.scratch();

    // Baseline: the plain pipe.
    let pipe_out = scratch.join("pipe.out");
    let mut pipe = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let script = format!("{generator} {lines} | cat > {}", pipe_out.display());
        pipe.push(time(|| bosun_bench::sh(&script))?.0);
    }
    let pipe = median(pipe);

    // Baseline: supervisord.
    let supervisord = supervisord_time(&env, &generator, lines, 1, ROUNDS)?;

    // bosun, followed live.
    env.start_daemon()?;
    let mut runs = Vec::new();
    for _ in 0..ROUNDS {
        settle();
        let t0 = Instant::now();
        let status = env
            .bosun(&["run", "--follow", "--", &generator, &lines.to_string()])?
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

    let rate = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e6;
    let what = format!("{} lines x 100 B, followed live + committed", count(lines));
    let vs_sup = supervisord.as_secs_f64() / bosun.as_secs_f64();
    report(Figure {
        bench: "logs",
        what: &what,
        value: format!("{} ({:.0} MB/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!(
            "supervisord {} ({:.0} MB/s)",
            fmt_duration(supervisord),
            rate(supervisord)
        ),
        ratio: vs_sup,
        target: ">= 1.2",
        met: vs_sup >= 1.2,
    });
    let vs_pipe = pipe.as_secs_f64() / bosun.as_secs_f64();
    report(Figure {
        bench: "logs",
        what: &what,
        value: format!("{} ({:.0} MB/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!(
            "| cat > file {} ({:.0} MB/s)",
            fmt_duration(pipe),
            rate(pipe)
        ),
        ratio: vs_pipe,
        target: ">= 0.6",
        met: vs_pipe >= 0.6,
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
    let lines_per_s = lines as f64 / replay.as_secs_f64();
    let what = format!("replay of a finished {}-line run", count(lines));
    report(Figure {
        bench: "logs",
        what: &what,
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
    drop(env);

    followers_cost(&generator, lines)?;
    ten_at_once(&generator, lines)?;
    Ok(())
}

/// `1M`, `20k`, `500`.
fn count(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// The program of a gated run: it says `ready`, waits until `go` exists, then runs
/// `gen-lines LINES`. So followers can attach, and the disk settle, before the clock starts.
fn gated(generator: &str, lines: u64, go: &Path) -> String {
    format!(
        "printf 'ready\\n'; while [ ! -e {go} ]; do sleep 0.005; done; exec {generator} {lines}",
        go = go.display()
    )
}

/// Waits until every one of `count` live runs has written its `ready` line.
fn wait_ready(env: &Env, count: usize) -> anyhow::Result<()> {
    let t0 = Instant::now();
    loop {
        let live: serde_json::Value = serde_json::from_str(&env.ok(&["ps", "--json"])?)?;
        let ready = live
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|r| r["last_seq"].as_u64().unwrap_or(0) >= 1)
                    .count()
            })
            .unwrap_or(0);
        if ready >= count {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(60) {
            bail!("only {ready} of {count} runs said ready within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until each child has exited successfully, within `limit`.
fn wait_children(children: &mut [Child], limit: Duration) -> anyhow::Result<()> {
    let t0 = Instant::now();
    for c in children.iter_mut() {
        loop {
            if let Some(status) = c.try_wait()? {
                if !status.success() {
                    bail!("a follower failed: {status}");
                }
                break;
            }
            if t0.elapsed() > limit {
                bail!("a follower did not end within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    Ok(())
}

/// One gated run of `gen-lines`, with `followers` live `bosun logs -f` followers (the first of
/// them SIGSTOPped throughout): the time from `go` to the run's recorded end.
fn one_run(
    env: &Env,
    runtime: &tokio::runtime::Runtime,
    generator: &str,
    lines: u64,
    followers: usize,
    tag: &str,
) -> anyhow::Result<Duration> {
    let go = env.scratch().join(format!("go-{tag}"));
    let out = env.ok(&[
        "run",
        "--json",
        "--",
        "sh",
        "-c",
        &gated(generator, lines, &go),
    ])?;
    let id = serde_json::from_str::<serde_json::Value>(&out)?["id"]
        .as_str()
        .context("bosun run printed no id")?
        .to_string();
    wait_ready(env, 1)?;
    let mut children = Vec::new();
    for _ in 0..followers {
        children.push(
            env.bosun(&["logs", "-f", &id])?
                .stdout(Stdio::null())
                .spawn()?,
        );
    }
    // The followers attach (and read `ready`) while the disk settles.
    settle();
    if let Some(first) = children.first() {
        kill(Pid::from_raw(first.id() as i32), Signal::SIGSTOP)?;
    }
    let took = runtime.block_on(async {
        // A subscription past any output ends when the run's end is recorded, and costs the
        // run nothing.
        let mut client = env.client().await?;
        let Following { sub, .. } = client
            .call(FollowParams {
                run: id.clone(),
                from_seq: u64::MAX,
                follow: true,
                stream: None,
                direct: false,
            })
            .await?;
        std::fs::write(&go, "")?;
        let t0 = Instant::now();
        loop {
            match client.next_event().await? {
                Some(Event::LogEnd { sub: s, run, .. }) if s == sub => {
                    if run.outcome.map(|o| o.to_string()).as_deref() != Some("succeeded") {
                        bail!("the run did not succeed: {run:?}");
                    }
                    return Ok(t0.elapsed());
                }
                Some(_) => {}
                None => bail!("bosund closed the connection"),
            }
        }
    });
    if let Some(first) = children.first() {
        let _ = kill(Pid::from_raw(first.id() as i32), Signal::SIGCONT);
    }
    let took = took?;
    wait_children(&mut children, Duration::from_secs(300))?;
    Ok(took)
}

/// The run with three live followers, one SIGSTOPped for the whole run, against the run with
/// none: from the start of its output to its recorded end.
fn followers_cost(generator: &str, lines: u64) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (mut alone, mut followed) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // A state directory per round, so the logs of earlier rounds do not pile up.
        let env = Env::new("logs-followers")?;
        env.start_daemon()?;
        // Alternate which goes first.
        for variant in [round % 2, 1 - round % 2] {
            let tag = format!("{round}-{variant}");
            if variant == 0 {
                alone.push(one_run(&env, &runtime, generator, lines, 0, &tag)?);
            } else {
                followed.push(one_run(&env, &runtime, generator, lines, 3, &tag)?);
            }
        }
        env.stop_daemon()?;
    }
    let (alone, followed) = (median(alone), median(followed));
    let ratio = followed.as_secs_f64() / alone.as_secs_f64();
    let what = format!(
        "{} lines, 3 live followers (1 SIGSTOPped) vs none",
        count(lines)
    );
    report(Figure {
        bench: "logs",
        what: &what,
        value: fmt_duration(followed),
        baseline: format!("no follower {}", fmt_duration(alone)),
        ratio,
        target: "<= 1.10",
        met: ratio <= 1.10,
    });
    Ok(())
}

/// Ten runs at once, each followed live by its `bosun run --follow`, against supervisord
/// running ten programs at once.
fn ten_at_once(generator: &str, lines: u64) -> anyhow::Result<()> {
    let mut times = Vec::new();
    for _ in 0..MANY_ROUNDS {
        let env = Env::new("logs-ten")?;
        env.start_daemon()?;
        let go = env.scratch().join("go");
        let script = gated(generator, lines, &go);
        let mut children = Vec::new();
        for _ in 0..MANY {
            children.push(
                env.bosun(&["run", "--follow", "--", "sh", "-c", &script])?
                    .stdout(Stdio::null())
                    .spawn()?,
            );
        }
        wait_ready(&env, MANY)?;
        settle();
        std::fs::write(&go, "")?;
        let t0 = Instant::now();
        wait_children(&mut children, Duration::from_secs(600))?;
        times.push(t0.elapsed());
        env.stop_daemon()?;
    }
    let bosun = median(times);
    let sup_env = Env::new("logs-ten-sup")?;
    let supervisord = supervisord_time(&sup_env, generator, lines, MANY, MANY_ROUNDS)?;
    let ratio = bosun.as_secs_f64() / supervisord.as_secs_f64();
    let rate = |d: Duration| (MANY as u64 * lines * 100) as f64 / d.as_secs_f64() / 1e6;
    let what = format!(
        "{MANY} runs x {} lines x 100 B at once, each followed live",
        count(lines)
    );
    report(Figure {
        bench: "logs",
        what: &what,
        value: format!("{} ({:.0} MB/s)", fmt_duration(bosun), rate(bosun)),
        baseline: format!(
            "supervisord, {MANY} programs {} ({:.0} MB/s)",
            fmt_duration(supervisord),
            rate(supervisord)
        ),
        ratio,
        target: "<= 1.5",
        met: ratio <= 1.5,
    });
    Ok(())
}

/// supervisord capturing the stdout of `programs` copies of the same program, each to its log
/// file: from `supervisorctl start` until every file holds every byte. The median of `rounds`.
fn supervisord_time(
    env: &Env,
    generator: &str,
    lines: u64,
    programs: usize,
    rounds: usize,
) -> anyhow::Result<Duration> {
    let bytes = lines * 100;
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
    let names: Vec<String> = (0..programs).map(|i| format!("gen{i}")).collect();
    let logs: Vec<_> = names.iter().map(|n| dir.join(format!("{n}.out"))).collect();
    let conf = dir.join("supervisord.conf");
    let sock = dir.join("s.sock");
    let mut text = format!(
        "[unix_http_server]\nfile={sock}\n\n[supervisord]\nnodaemon=true\nlogfile={d}/supervisord.log\npidfile={d}/supervisord.pid\n\n\
         [rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n\
         [supervisorctl]\nserverurl=unix://{sock}\n",
        sock = sock.display(),
        d = dir.display(),
    );
    for (name, log) in names.iter().zip(&logs) {
        text.push_str(&format!(
            "\n[program:{name}]\ncommand={generator} {lines}\nautostart=false\nautorestart=false\nstartsecs=0\n\
             stdout_logfile={log}\nstdout_logfile_maxbytes=0\nstdout_logfile_backups=0\nstderr_logfile=NONE\n",
            log = log.display(),
        ));
    }
    std::fs::write(&conf, text)?;
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
    let mut start = vec!["start"];
    start.extend(names.iter().map(String::as_str));
    let mut times = Vec::new();
    for _ in 0..rounds {
        for log in &logs {
            let _ = std::fs::remove_file(log);
        }
        settle();
        let t0 = Instant::now();
        ctl(&start)?;
        loop {
            let sizes: Vec<u64> = logs
                .iter()
                .map(|l| std::fs::metadata(l).map(|m| m.len()).unwrap_or(0))
                .collect();
            if sizes.iter().all(|s| *s >= bytes) {
                break;
            }
            if t0.elapsed() > Duration::from_secs(300) {
                bail!("supervisord captured only {sizes:?} bytes of {bytes} each");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        times.push(t0.elapsed());
        ctl(&["stop", "all"])?;
    }
    for log in &logs {
        let _ = std::fs::remove_file(log);
    }
    ctl(&["shutdown"])?;
    let _ = daemon.wait();
    Ok(median(times))
}
