//! Runs placed on other hosts through a real Slurm: munged, slurmctld and three slurmd, each node
//! in a network namespace of its own, so that every runner reaches bosund over TCP with mutual
//! TLS. Every test checks each log line by line, and that nothing of it is left running.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use bosun_tests::slurm::SlurmCluster;
use bosun_tests::{Bosun, bin_dir, free_port, lines, wait_for};
use serde_json::Value;

/// A state directory whose bosund places runs on `cluster`, with the shared folder under the
/// test's scratch folder (every node sees this machine's filesystem).
struct Placed {
    b: Bosun,
    shared: PathBuf,
    work: PathBuf,
    port: u16,
}

fn placed(test: &str, cluster: &SlurmCluster, away_secs: u64) -> anyhow::Result<Placed> {
    placed_with(test, cluster, away_secs, &bin_dir().join("bosun-runner"))
}

fn placed_with(
    test: &str,
    cluster: &SlurmCluster,
    away_secs: u64,
    runner: &Path,
) -> anyhow::Result<Placed> {
    let mut b = Bosun::new(test);
    for (k, v) in cluster.env() {
        b = b.with_env(&k, &v);
    }
    let shared = b.scratch().join("shared");
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&shared)?;
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&b.home)?;
    let port = free_port()?;
    let config = format!(
        "listen = \"{}:{port}\"\n\n[slurm]\nshared_dir = \"{}\"\nrunner = \"{}\"\ncheck_secs = 1\naway_secs = {away_secs}\n",
        cluster.host_addr(),
        shared.display(),
        runner.display(),
    );
    std::fs::write(b.home.join("placement.toml"), config)?;
    Ok(Placed {
        b,
        shared,
        work,
        port,
    })
}

impl Placed {
    /// What bosund and the runners said, for a failing test's message.
    fn story(&self, cluster: &SlurmCluster) -> String {
        let mut s = String::new();
        let log = std::fs::read_to_string(self.b.home.join("bosund.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        s.push_str("bosund.log (last lines, newest first):\n");
        for l in tail {
            s.push_str(l);
            s.push('\n');
        }
        for e in std::fs::read_dir(self.shared.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path().join("runner.log")).unwrap_or_default();
            s.push_str(&format!(
                "runner.log of {}:\n{text}\n",
                e.file_name().to_string_lossy()
            ));
        }
        s.push_str(&format!("cluster logs:\n{}\n", cluster.logs()));
        s
    }

    /// A script in the shared work folder that prints `n` numbered lines, `pause` seconds apart
    /// every `every` lines.
    fn counter(&self, name: &str, n: u64, every: u64, pause: &str) -> anyhow::Result<String> {
        let path = self.work.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\nhost=$(hostname 2>/dev/null || echo node)\ni=1\nwhile [ $i -le {n} ]; do\n  echo \"line $i of $host\"\n  if [ $((i % {every})) -eq 0 ]; then sleep {pause}; fi\n  i=$((i+1))\ndone\n"
            ),
        )?;
        let mut perms = std::fs::metadata(&path)?.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms)?;
        Ok(path.display().to_string())
    }

    fn start(&self, flags: &[&str], program: &[&str]) -> anyhow::Result<String> {
        let cwd = self.work.display().to_string();
        let mut all = vec!["--placement", "slurm", "--cwd", cwd.as_str()];
        all.extend_from_slice(flags);
        self.b.start(&all, program)
    }

    /// Every process of the test's runs and runners, wherever Slurm put them: runners started
    /// with a link file under the shared folder, and processes carrying a run's marker.
    fn leftovers(&self) -> Vec<(i32, String)> {
        let shared = self.shared.display().to_string();
        let runs: Vec<String> = std::fs::read_dir(self.shared.join("runs"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            let env = bosun_tests::environ_of(pid);
            let marked = env.iter().any(|e| {
                e.strip_prefix("BOSUN_RUN_ID=")
                    .is_some_and(|id| runs.iter().any(|r| r == id))
            });
            if cmd.contains(&shared) || marked {
                found.push((pid, cmd));
            }
        }
        found
    }

    /// Ends the test: nothing of it left running on any node, and bosund stopped as a person
    /// stops it.
    fn finish(self) -> anyhow::Result<()> {
        let left = wait_for(
            "every remote process to end",
            Duration::from_secs(30),
            || {
                let l = self.leftovers();
                Ok(l.is_empty().then_some(()))
            },
        );
        if left.is_err() {
            bail!(
                "processes of remote runs were left: {:#?}",
                self.leftovers()
            );
        }
        self.b.finish()
    }
}

/// Checks a log holds `line 1 …` to `line n …`, each once, in order; returns the node named.
fn complete(log: &[u8], n: u64) -> anyhow::Result<String> {
    let lines = lines(log);
    let mut node = String::new();
    let mut want = 1u64;
    for l in &lines {
        let Some(rest) = l.strip_prefix("line ") else {
            continue;
        };
        let (num, host) = rest.split_once(" of ").context("a line without its host")?;
        let num: u64 = num.parse()?;
        if num != want {
            bail!("expected line {want}, found line {num} (lines around it: {lines:?})");
        }
        node = host.to_string();
        want += 1;
    }
    if want != n + 1 {
        bail!("the log ends at line {} of {n}", want - 1);
    }
    Ok(node)
}

fn placed_node(v: &Value) -> Option<String> {
    v["placed"]["node"].as_str().map(str::to_string)
}

#[test]
fn thirty_runs_spread_across_three_nodes_each_log_complete() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("thirty_remote", &cluster, 60)?;
    let script = p.counter("count.sh", 2_000, 500, "0.2")?;
    let mut runs = Vec::new();
    for _ in 0..30 {
        runs.push(p.start(&[], &[&script])?);
    }
    let mut nodes = std::collections::BTreeSet::new();
    for run in &runs {
        let v = p.b.wait_ended(run, Duration::from_secs(240))?;
        assert_eq!(v["outcome"], "succeeded", "{v:#}");
        let log = p.b.logs(run)?;
        let host = complete(&log, 2_000).with_context(|| format!("run {run}"))?;
        let node = placed_node(&v).context("a placed run names its node")?;
        assert!(
            cluster.node_names().contains(&node),
            "{node} is not a node of the cluster"
        );
        nodes.insert(node);
        assert!(!host.is_empty());
    }
    assert!(nodes.len() >= 2, "30 runs all went to one node: {nodes:?}");
    // The link files were read and deleted by the runners; the run folders hold no key.
    for run in &runs {
        assert!(
            !p.shared.join("runs").join(run).join("link.json").exists(),
            "run {run}'s link file is left"
        );
    }
    let status = p.b.ok(&["daemon", "status"])?;
    assert!(
        status.contains(&format!(":{} (mutual TLS)", p.port)),
        "daemon status names the runner listener: {status}"
    );
    p.finish()
}

#[test]
fn a_sigkilled_bosund_loses_no_line_of_remote_runs() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_sigkill", &cluster, 60)?;
    // About ten seconds of output each (a tenth of a second's pause every 300 lines).
    let script = p.counter("slow.sh", 30_000, 300, "0.1")?;
    let runs: Vec<String> = (0..3)
        .map(|_| p.start(&[], &[&script]))
        .collect::<Result<_, _>>()?;
    for run in &runs {
        p.b.wait_run(run, "the run to write", Duration::from_secs(60), |v| {
            v["last_seq"].as_u64().unwrap_or(0) > 2
        })?;
    }
    for kill in 0..2 {
        let shown: Vec<Value> = runs
            .iter()
            .map(|r| p.b.show(r))
            .collect::<anyhow::Result<_>>()?;
        if kill == 0 {
            // The first kill comes while every run writes.
            for v in &shown {
                assert_eq!(v["state"], "running", "{v:#}");
            }
        }
        let before: Vec<u64> = shown
            .iter()
            .map(|v| v["last_seq"].as_u64().unwrap_or(0))
            .collect();
        p.b.kill_daemon()?;
        // The next command starts bosund again; the runners dial back over TLS and go on
        // (each run's output grows past where it was, or it has ended).
        p.b.ok(&["ps"])?;
        for (run, seq) in runs.iter().zip(before) {
            p.b.wait_run(
                run,
                "the runner to come back",
                Duration::from_secs(60),
                |v| v["state"] == "exited" || v["last_seq"].as_u64().unwrap_or(0) > seq,
            )?;
        }
    }
    for run in &runs {
        let v = p.b.wait_ended(run, Duration::from_secs(180))?;
        assert_eq!(v["outcome"], "succeeded", "{v:#}");
        complete(&p.b.logs(run)?, 30_000).with_context(|| format!("run {run}"))?;
    }
    p.finish()
}

#[test]
fn a_lost_node_makes_its_run_lost_with_the_node_named() -> anyhow::Result<()> {
    let mut cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_node_lost", &cluster, 120)?;
    let run = p.start(&[], &["sleep", "600"])?;
    let v = p.b.wait_run(
        &run,
        "the run to start on a node",
        Duration::from_secs(60),
        |v| v["state"] == "running" && placed_node(v).is_some(),
    )?;
    let node = placed_node(&v).context("node")?;
    let index = cluster
        .node_names()
        .iter()
        .position(|n| *n == node)
        .context("the node is one of the cluster's")?;
    let t0 = std::time::Instant::now();
    cluster.kill_node(index)?;
    let v = p.b.wait_ended(&run, Duration::from_secs(150))?;
    let took = t0.elapsed();
    assert_eq!(v["outcome"], "lost", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&node),
        "the reason names the node: {reason}"
    );
    eprintln!("node {node} lost: run recorded lost after {took:?}: {reason}");
    p.finish()
}

#[test]
fn scancel_from_outside_is_recorded_as_a_stop_from_outside() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_scancel", &cluster, 60)?;
    let run = p.start(&[], &["sleep", "600"])?;
    let v =
        p.b.wait_run(&run, "the run to start", Duration::from_secs(60), |v| {
            v["state"] == "running"
        })?;
    let job = v["placed"]["job"].as_str().context("job id")?.to_string();
    let out = std::process::Command::new("scancel")
        .envs(cluster.env())
        .arg(&job)
        .output()?;
    assert!(out.status.success(), "scancel: {out:?}");
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "stopped", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("outside"), "{reason}");
    p.finish()
}

#[test]
fn stop_and_time_cap_go_through_the_ladder_on_the_node() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_stop", &cluster, 60)?;
    // A program that takes SIGINT, says so, and exits: the ladder's first rung reached it.
    let trap = p.work.join("trap.sh");
    std::fs::write(
        &trap,
        "#!/bin/sh\ntrap 'echo got INT; exit 3' INT\necho ready\nwhile true; do sleep 0.1; done\n",
    )?;
    let mut perms = std::fs::metadata(&trap)?.permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&trap, perms)?;
    let trap = trap.display().to_string();

    let stopped = p.start(&[], &[&trap])?;
    let capped = p.start(&["--time-cap", "3s"], &[&trap])?;
    p.b.wait_run(
        &stopped,
        "the run to say ready",
        Duration::from_secs(60),
        |v| v["last_seq"].as_u64().unwrap_or(0) >= 1,
    )?;
    p.b.ok(&["stop", &stopped])?;
    for (run, outcome) in [(&stopped, "stopped"), (&capped, "timed_out")] {
        let v =
            p.b.wait_ended(run, Duration::from_secs(90))
                .with_context(|| p.story(&cluster))?;
        assert_eq!(v["outcome"], outcome, "{v:#}");
        let log = String::from_utf8_lossy(&p.b.logs(run)?).to_string();
        assert!(
            log.contains("got INT"),
            "the ladder's SIGINT reached it: {log}"
        );
    }
    p.finish()
}

#[test]
fn a_secret_never_reaches_slurm_nor_stays_on_a_node() -> anyhow::Result<()> {
    const CANARY: &str = "canary-7f3e91c0d2b8a645";
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_secret", &cluster, 60)?;
    let work = p.work.display().to_string();
    p.b.add_agent(
        "far",
        &[
            "--cli",
            "command",
            "--cwd",
            &work,
            "--secret-env",
            "TOKEN",
            "--",
            "sh",
            "-c",
            "test -n \"$TOKEN\" && echo \"token has ${#TOKEN} chars\"; echo \"$TOKEN\"",
        ],
        CANARY,
    )?;
    p.b.ok(&["agent", "set", "far", "placement=slurm"])?;
    let v =
        p.b.json(&["agent", "run", "far", "show the token's length"])?;
    let run = v["id"].as_str().context("run id")?.to_string();
    let v = p.b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    let job = v["placed"]["job"].as_str().context("job")?.to_string();
    let log = String::from_utf8_lossy(&p.b.logs(&run)?).to_string();
    assert!(
        log.contains(&format!("token has {} chars", CANARY.len())),
        "{log}"
    );
    assert!(
        !log.contains(CANARY),
        "the runner redacts the secret: {log}"
    );

    assert_secret_nowhere_on_the_cluster(&p, &cluster, &[job], CANARY)?;
    p.finish()
}

/// Neither what Slurm keeps or shows of `jobs` (`scontrol show job`, the job script), nor any
/// file the cluster and the runs left (the shared folder, the cluster's own state and spool
/// folders, bosun's state directory and its store, where plans are kept sealed) holds `secret`.
fn assert_secret_nowhere_on_the_cluster(
    p: &Placed,
    cluster: &SlurmCluster,
    jobs: &[String],
    secret: &str,
) -> anyhow::Result<()> {
    for job in jobs {
        for args in [
            vec!["show", "job", job.as_str()],
            vec!["write", "batch_script", job.as_str(), "-"],
        ] {
            let out = std::process::Command::new("scontrol")
                .envs(cluster.env())
                .args(&args)
                .output()?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!text.contains(secret), "scontrol {args:?} shows the secret");
        }
    }
    for dir in [
        p.shared.clone(),
        cluster.dir().to_path_buf(),
        p.b.home.clone(),
    ] {
        if let Some(f) = file_containing(&dir, secret.as_bytes()) {
            bail!("the secret is on disk in {}", f.display());
        }
    }
    p.b.assert_secret_nowhere(secret)
}

fn file_containing(dir: &Path, needle: &[u8]) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if let Some(f) = file_containing(&path, needle) {
                return Some(f);
            }
        } else if meta.is_file()
            && let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            return Some(path);
        }
    }
    None
}

#[test]
fn a_node_without_bosun_runner_is_said_plainly() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(1)?;
    let p = placed_with(
        "remote_no_runner",
        &cluster,
        60,
        Path::new("/opt/nowhere/bosun-runner"),
    )?;
    let run = p.start(&[], &["true"])?;
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "lost", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("bosun-runner is not installed on") && reason.contains("/opt/nowhere"),
        "{reason}"
    );
    p.finish()
}

#[test]
fn without_placement_toml_nothing_listens_on_the_network_and_slurm_is_refused() -> anyhow::Result<()>
{
    let b = Bosun::new("no_placement");
    let err = b.fails(&["run", "--placement", "slurm", "--", "true"])?;
    assert!(
        err.contains("places runs on this machine only") && err.contains("placement.toml"),
        "{err}"
    );
    let err = b.fails(&["run", "--placement", "kubernetes:-x", "--", "true"])?;
    assert!(err.contains("--placement"), "{err}");
    let status = b.ok(&["daemon", "status"])?;
    assert!(!status.contains("remote runners"), "{status}");
    // bosund listens on no address beyond loopback.
    let pid = b.daemon_pid().context("bosund runs")?;
    let sockets = std::fs::read_dir(format!("/proc/{pid}/fd"))?
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|l| l.to_string_lossy().starts_with("socket:"))
        .count();
    let listening = std::fs::read_to_string("/proc/net/tcp")?
        + &std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))?
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            l.to_string_lossy()
                .strip_prefix("socket:[")
                .map(|s| s.trim_end_matches(']').to_string())
        })
        .collect();
    let open_tcp: Vec<&str> = listening
        .lines()
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // state 0A = LISTEN; column 9 the inode.
            cols.get(3) == Some(&"0A") && cols.get(9).is_some_and(|i| inodes.iter().any(|x| x == i))
        })
        .collect();
    assert!(sockets > 0, "bosund has its unix socket");
    // bosun's own MCP server listens on 127.0.0.1 for the lead: that one only, never another.
    for l in &open_tcp {
        let local = l.split_whitespace().nth(1).unwrap_or_default();
        assert!(
            local.starts_with("0100007F:")
                || local.starts_with("00000000000000000000000001000000:"),
            "bosund listens beyond loopback: {l}"
        );
    }
    b.finish()
}

/// A command agent `name` on the cluster whose program says how long its secret `TOKEN` is and
/// then runs `then`.
fn secret_agent(p: &Placed, name: &str, secret: &str, then: &str) -> anyhow::Result<()> {
    let work = p.work.display().to_string();
    let program = format!("echo \"token has ${{#TOKEN}} chars\"; {then}");
    p.b.add_agent(
        name,
        &[
            "--cli",
            "command",
            "--cwd",
            &work,
            "--secret-env",
            "TOKEN",
            "--",
            "sh",
            "-c",
            &program,
        ],
        secret,
    )?;
    p.b.ok(&["agent", "set", name, "placement=slurm"])?;
    Ok(())
}

fn agent_run(p: &Placed, agent: &str) -> anyhow::Result<String> {
    let v = p.b.json(&["agent", "run", agent, "go"])?;
    Ok(v["id"].as_str().context("run id")?.to_string())
}

/// Waits until every run has its job in Slurm (a kill before that is a crash in placement).
fn wait_placed(p: &Placed, runs: &[String]) -> anyhow::Result<()> {
    for run in runs {
        p.b.wait_run(run, "the run to be placed", Duration::from_secs(30), |v| {
            v["placed"]["job"].is_string()
        })?;
    }
    Ok(())
}

/// SIGKILLs bosund; the next command starts it again.
fn restart(p: &Placed) -> anyhow::Result<()> {
    p.b.kill_daemon()?;
    p.b.ok(&["ps"])?;
    Ok(())
}

#[test]
fn twelve_queued_runs_survive_three_sigkills_of_bosund_with_their_secret_sealed()
-> anyhow::Result<()> {
    const CANARY: &str = "canary-91d0c4e7a35b2f68";
    const LINES: u64 = 3_000;
    // Three nodes of one CPU each: three runs at a time, nine in Slurm's queue.
    let cluster = SlurmCluster::try_start_with_cpus(3, 1)?;
    let p = placed("remote_queue", &cluster, 60)?;
    // About three seconds of output each.
    let script = p.counter("queued.sh", LINES, 300, "0.3")?;
    secret_agent(&p, "far", CANARY, &format!("exec {script}"))?;
    let runs: Vec<String> = (0..12)
        .map(|_| agent_run(&p, "far"))
        .collect::<Result<_, _>>()?;
    wait_placed(&p, &runs)?;
    let ended = |p: &Placed| -> anyhow::Result<usize> {
        let mut n = 0;
        for run in &runs {
            if p.b.show(run)?["state"] == "exited" {
                n += 1;
            }
        }
        Ok(n)
    };
    // Killed while nine wait, and twice more as the queue drains.
    restart(&p)?;
    for at_least in [3, 6] {
        wait_for(
            "runs to end as the queue drains",
            Duration::from_secs(60),
            || Ok((ended(&p)? >= at_least).then_some(())),
        )
        .with_context(|| p.story(&cluster))?;
        restart(&p)?;
    }
    let mut queue_times = Vec::new();
    for run in &runs {
        let v =
            p.b.wait_ended(run, Duration::from_secs(120))
                .with_context(|| p.story(&cluster))?;
        assert_eq!(v["outcome"], "succeeded", "{v:#}");
        let log = p.b.logs(run)?;
        complete(&log, LINES).with_context(|| format!("run {run}"))?;
        let text = String::from_utf8_lossy(&log);
        assert!(
            text.contains(&format!("token has {} chars", CANARY.len())),
            "run {run} got its secret: {text}"
        );
        let queued = v["placed"]["queued_ms"]
            .as_u64()
            .with_context(|| format!("run {run} says how long it waited in the queue: {v:#}"))?;
        queue_times.push(queued);
    }
    eprintln!("time each run waited in Slurm's queue (ms): {queue_times:?}");
    // Nine of them waited behind the first three, each of which ran for three seconds.
    queue_times.sort_unstable();
    assert!(
        queue_times[3] >= queue_times[2] + 2_000,
        "nine runs say they waited for the first three: {queue_times:?}"
    );
    let show = p.b.ok(&["show", &runs[11]])?;
    assert!(
        show.contains("waited") && show.contains("in its queue"),
        "{show}"
    );

    // Nothing Slurm keeps or shows of the jobs, nor any file left, holds the secret.
    let mut jobs = Vec::new();
    for run in &runs {
        jobs.push(
            p.b.show(run)?["placed"]["job"]
                .as_str()
                .context("job")?
                .to_string(),
        );
    }
    assert_secret_nowhere_on_the_cluster(&p, &cluster, &jobs, CANARY)?;
    p.finish()
}

#[test]
fn a_secret_set_again_or_gone_while_its_run_waits_in_the_queue() -> anyhow::Result<()> {
    const FIRST: &str = "first-secret-4f1a";
    const SECOND: &str = "second-secret-value-9c2e7d";
    const GONE: &str = "gone-secret-b83a61";
    // One node of one CPU, kept busy: the agents' runs wait behind it.
    let cluster = SlurmCluster::try_start_with_cpus(1, 1)?;
    let p = placed("remote_secret_again", &cluster, 60)?;
    secret_agent(&p, "again", FIRST, "true")?;
    secret_agent(&p, "gone", GONE, "true")?;
    let busy = p.start(&[], &["sleep", "6"])?;
    p.b.wait_run(&busy, "the node to be busy", Duration::from_secs(30), |v| {
        v["state"] == "running"
    })?;
    let again = agent_run(&p, "again")?;
    let gone = agent_run(&p, "gone")?;
    wait_placed(&p, &[again.clone(), gone.clone()])?;
    restart(&p)?;
    // Set again through bosun; taken from the keychain behind bosun's back.
    let out =
        p.b.output_with_stdin(&["agent", "edit", "again", "--secret-env", "TOKEN"], SECOND)?;
    assert!(out.status.success(), "{out:?}");
    let file = p.b.keychain_file();
    let mut keys: serde_json::Map<String, Value> = serde_json::from_slice(&std::fs::read(&file)?)?;
    keys.retain(|_, v| *v != GONE);
    std::fs::write(&file, serde_json::to_vec(&keys)?)?;
    restart(&p)?;
    for run in [&again, &gone] {
        assert_eq!(p.b.show(run)?["state"], "queued");
    }

    let v = p.b.wait_ended(&again, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    let log = String::from_utf8_lossy(&p.b.logs(&again)?).to_string();
    assert!(
        log.contains(&format!("token has {} chars", SECOND.len())),
        "the run got the secret as it is now: {log}"
    );
    let v = p.b.wait_ended(&gone, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "failed", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("secret TOKEN")
            && reason.contains("bosun agent edit gone --secret-env TOKEN"),
        "the reason says which secret and how to set it again: {reason}"
    );
    let v = p.b.wait_ended(&busy, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    for secret in [FIRST, SECOND, GONE] {
        p.b.assert_secret_nowhere(secret)?;
    }
    p.finish()
}

#[test]
fn a_run_on_a_node_is_fenced_by_its_runner_there() -> anyhow::Result<()> {
    let cluster = SlurmCluster::try_start(3)?;
    let p = placed("remote_fence", &cluster, 60)?;
    let secret = p.b.scratch().join("secret");
    std::fs::create_dir_all(&secret)?;
    std::fs::write(secret.join("key"), "NODE-CANARY-4b1d")?;
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&p.work)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()?;
    assert!(git.success());
    let script = format!(
        "cat {key} 2>&1; echo read=$?; echo x > .git/hooks/post-commit 2>&1; echo hook=$?; \
         echo ok > inside.txt; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
        key = secret.join("key").display()
    );
    let work = p.work.display().to_string();
    p.b.ok(&[
        "agent", "add", "far", "--cli", "command", "--cwd", &work, "--", "sh", "-c", &script,
    ])?;
    p.b.ok(&[
        "agent",
        "set",
        "far",
        "placement=slurm",
        &format!("read.deny={}", secret.display()),
    ])?;
    let run = agent_run(&p, "far")?;
    let v = p.b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}\n{}", p.story(&cluster));
    assert!(v["placed"]["job"].is_string(), "{v:#}");
    let log = String::from_utf8_lossy(&p.b.logs(&run)?).to_string();
    assert!(!log.contains("NODE-CANARY"), "{log}");
    assert!(
        log.contains("Permission denied") && log.contains("read=1"),
        "{log}"
    );
    assert!(
        log.contains("Read-only file system") && log.contains("hook="),
        "{log}"
    );
    assert!(!p.work.join(".git/hooks/post-commit").exists());
    assert_eq!(std::fs::read_to_string(p.work.join("inside.txt"))?, "ok\n");
    // Its network is loopback alone on the node too.
    let devices: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains('=') && !l.contains(' ') && !l.is_empty())
        .collect();
    assert_eq!(devices, ["lo"], "{log}");
    p.finish()
}
