//! A real Slurm (22.05) in network namespaces, and bosun's Slurm client against it: jobs land
//! on every node and really run in that node's namespace, reach the test over TCP, are listed,
//! signalled and cancelled; a lost node ends its job; the submitter's environment never reaches
//! Slurm; and nothing of the cluster is left once it is dropped. Needs root.

use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bosun_placement::slurm::{
    JOB_NAME_PREFIX, JobExit, JobId, JobInfo, JobRequest, JobState, Slurm, SlurmError, job_name,
};
use bosun_shared::RunId;
use bosun_tests::slurm::{SlurmCluster, leftovers_of};
use bosun_tests::wait_for;
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(60);

fn rt() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// A job of the test's own, its files under the cluster's `jobs/`.
fn request(cluster: &SlurmCluster, tag: &str, script: &str) -> anyhow::Result<JobRequest> {
    let dir = cluster.dir().join("jobs");
    std::fs::create_dir_all(&dir)?;
    Ok(JobRequest {
        name: job_name(RunId::new()),
        script: script.to_string(),
        partition: None,
        time_limit: None,
        chdir: dir.clone(),
        stdout: dir.join(format!("{tag}.out")),
        stderr: dir.join(format!("{tag}.err")),
        env: Vec::new(),
    })
}

fn job(slurm: &Slurm, rt: &tokio::runtime::Runtime, id: JobId) -> anyhow::Result<Option<JobInfo>> {
    let jobs = rt.block_on(slurm.jobs(JOB_NAME_PREFIX))?;
    Ok(jobs.into_iter().find(|j| j.id == id))
}

fn wait_state(
    slurm: &Slurm,
    rt: &tokio::runtime::Runtime,
    id: JobId,
    what: &str,
    timeout: Duration,
    want: impl Fn(&JobState) -> bool,
) -> anyhow::Result<JobInfo> {
    wait_for(&format!("job {id} to be {what}"), timeout, || {
        Ok(job(slurm, rt, id)?.filter(|j| want(&j.state)))
    })
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_job_lands_on_each_node_runs_in_its_namespace_and_reaches_the_host() -> anyhow::Result<()> {
    let cluster = SlurmCluster::start(3);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    let listener = TcpListener::bind((cluster.host_addr(), 0))?;
    let port = listener.local_addr()?.port();
    let go = cluster.dir().join("go");
    // Each job says where it is, dials the test, and waits until all three run, so that the
    // scheduler (least loaded node first) puts one on each node.
    let script = format!(
        "#!/bin/bash\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\necho \"node=$SLURMD_NODENAME\"\nip -4 -o addr show dev eth0\nexec 3<>/dev/tcp/{host}/{port}\necho \"hello from $SLURMD_NODENAME\" >&3\nexec 3>&-\nwhile [ ! -e {go} ]; do sleep 0.1; done\n",
        host = cluster.host_addr(),
        go = go.display()
    );
    let mut ids = Vec::new();
    for i in 0..3 {
        let req = request(&cluster, &format!("where{i}"), &script)?;
        ids.push((rt.block_on(slurm.submit(&req))?, req.stdout.clone()));
    }
    // Every node dials the host, each from its own address.
    listener.set_nonblocking(true)?;
    let mut peers = Vec::new();
    for _ in 0..3 {
        let (conn, peer) = wait_for("a job to dial the host", T, || match listener.accept() {
            Ok(c) => Ok(Some(c)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e.into()),
        })?;
        conn.set_nonblocking(false)?;
        conn.set_read_timeout(Some(T))?;
        let mut line = String::new();
        BufReader::new(conn).read_line(&mut line)?;
        peers.push((line.trim().to_string(), peer.ip().to_string()));
    }
    peers.sort();
    let mut want: Vec<(String, String)> = cluster
        .nodes()
        .iter()
        .map(|n| (format!("hello from {}", n.name), n.addr.to_string()))
        .collect();
    want.sort();
    assert_eq!(peers, want, "each node dials from its own address");
    std::fs::write(&go, "")?;
    let mut seen = Vec::new();
    for (id, out) in &ids {
        let info = wait_state(&slurm, &rt, *id, "completed", T, |s| {
            *s == JobState::Completed
        })?;
        assert_eq!(info.exit, Some(JobExit::Code(0)));
        let text = read(out);
        let node = info.nodes.clone();
        assert!(text.contains(&format!("node={node}")), "{text}");
        // The job's only address is its node's namespace address.
        let addr = cluster.addr_of(&node);
        assert!(text.contains(&format!("inet {addr}/24")), "{node}: {text}");
        seen.push(node);
    }
    seen.sort();
    assert_eq!(seen, cluster.node_names(), "one job on each node");
    Ok(())
}

#[test]
fn the_submitters_environment_never_reaches_slurm() -> anyhow::Result<()> {
    let canary = format!("canary-{}", RunId::new());
    // SAFETY: nextest runs this test alone in its process, and no other thread has started.
    unsafe { std::env::set_var("BOSUN_TEST_CANARY", &canary) };
    let cluster = SlurmCluster::start(1);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    let mut req = request(
        &cluster,
        "env",
        "#!/bin/sh\n/usr/bin/env | /usr/bin/sort\n/bin/sleep 300\n",
    )?;
    req.env = vec![("BOSUN_GIVEN".into(), "given, with a comma".into())];
    let id = rt.block_on(slurm.submit(&req))?;
    wait_state(&slurm, &rt, id, "running", T, |s| *s == JobState::Running)?;
    let out = wait_for("the job's environment", T, || {
        let t = read(&req.stdout);
        Ok(t.contains("SLURM_JOB_ID=").then_some(t))
    })?;
    assert!(out.contains("BOSUN_GIVEN=given, with a comma\n"), "{out}");
    let show = cluster.run("scontrol", &["show", "job", "-dd", &id.to_string()])?;
    let script = cluster.run("scontrol", &["write", "batch_script", &id.to_string(), "-"])?;
    assert!(script.contains("/usr/bin/env"), "{script}");
    for (what, text) in [
        ("the job's environment", &out),
        ("scontrol show job", &show),
        ("the stored batch script", &script),
    ] {
        assert!(
            !text.contains(&canary),
            "{what} holds the submitter's canary:\n{text}"
        );
        assert!(!text.contains("BOSUN_TEST_CANARY"), "{what}:\n{text}");
    }
    // Nor bosund's PATH, HOME or working directory: the job gets only what was given.
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(!out.lines().any(|l| l == format!("PATH={path}")), "{out}");
    assert!(!out.contains("HOME="), "{out}");
    assert!(
        out.contains(&format!("SLURM_SUBMIT_DIR={}\n", req.chdir.display())),
        "{out}"
    );
    rt.block_on(slurm.cancel(id))?;
    Ok(())
}

#[test]
fn scancel_from_outside_is_seen_as_cancelled_and_refusals_are_in_words() -> anyhow::Result<()> {
    let cluster = SlurmCluster::start(1);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    let req = request(
        &cluster,
        "outside",
        "#!/bin/sh\necho ready\n/bin/sleep 300\n",
    )?;
    let id = rt.block_on(slurm.submit(&req))?;
    let running = wait_state(&slurm, &rt, id, "running", T, |s| *s == JobState::Running)?;
    wait_for("the job to start", T, || {
        Ok(read(&req.stdout).contains("ready").then_some(()))
    })?;
    assert_eq!(running.nodes, "node1");
    assert_eq!(running.exit, None);
    assert_eq!(running.run.map(job_name), Some(req.name.clone()));
    let t0 = Instant::now();
    cluster.run("scancel", &[&id.to_string()])?;
    let ended = wait_state(&slurm, &rt, id, "over", T, JobState::is_finished)?;
    eprintln!(
        "scancel from outside: seen as {} (reason {:?}, exit {:?}) after {:?}",
        ended.state,
        ended.reason,
        ended.exit,
        t0.elapsed()
    );
    assert_eq!(ended.state, JobState::Cancelled);
    // slurmd sends SIGTERM to every process of the job: the batch shell dies of it (signal 15),
    // or, when its `sleep` died of it first, the shell exits with 128 + 15 before it takes its
    // own (seen once under load). Both are the SIGTERM of the cancel.
    assert!(
        matches!(ended.exit, Some(JobExit::Signal(15) | JobExit::Code(143))),
        "{:?}",
        ended.exit
    );

    // What the scheduler refuses comes back in its words.
    let mut bad = request(&cluster, "bad", "#!/bin/sh\ntrue\n")?;
    bad.partition = Some("nope".into());
    let e = rt.block_on(slurm.submit(&bad)).unwrap_err();
    assert!(
        matches!(
            e,
            SlurmError::Refused {
                command: "sbatch",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("Batch job submission failed: Invalid partition name specified"),
        "{e}"
    );
    // 22.05's plain `scancel` says nothing and exits 0 for a job that is over or unknown, so
    // a cancel is safe to repeat; a signal to such a job is an error in Slurm's words.
    rt.block_on(slurm.cancel(id))?;
    rt.block_on(slurm.cancel(JobId(999_999)))?;
    let e = rt
        .block_on(slurm.signal(JobId(999_999), Signal::SIGTERM))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scancel failed: Kill job error on job id 999999: Invalid job id specified"
    );
    Ok(())
}

#[test]
fn signal_reaches_the_batch_shell_and_cancel_ends_a_job() -> anyhow::Result<()> {
    let cluster = SlurmCluster::start(1);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    let req = request(
        &cluster,
        "trap",
        // `ready` once the background sleep exists: a TERM that came before it was started
        // would reach the shell alone, and the sleep started after would outlive the job.
        "#!/bin/sh\ntrap 'echo got TERM; exit 7' TERM\n/bin/sleep 300 &\necho ready\nwait\n",
    )?;
    let id = rt.block_on(slurm.submit(&req))?;
    wait_for("the job to trap TERM", T, || {
        Ok(read(&req.stdout).contains("ready").then_some(()))
    })?;
    rt.block_on(slurm.signal(id, Signal::SIGTERM))?;
    let ended = wait_state(&slurm, &rt, id, "over", T, JobState::is_finished)?;
    assert!(
        read(&req.stdout).contains("got TERM"),
        "{}",
        read(&req.stdout)
    );
    eprintln!(
        "scancel --signal=TERM --full, script exits 7: {} {:?} {:?}",
        ended.state, ended.reason, ended.exit
    );
    assert_eq!(ended.state, JobState::Failed);
    assert_eq!(ended.exit, Some(JobExit::Code(7)));

    let req = request(
        &cluster,
        "cancel",
        "#!/bin/sh\necho ready\n/bin/sleep 300\n",
    )?;
    let id = rt.block_on(slurm.submit(&req))?;
    wait_state(&slurm, &rt, id, "running", T, |s| *s == JobState::Running)?;
    rt.block_on(slurm.cancel(id))?;
    let ended = wait_state(&slurm, &rt, id, "over", T, JobState::is_finished)?;
    assert_eq!(ended.state, JobState::Cancelled);
    // Nothing of either job is left on the node.
    wait_for("the node's jobs to be gone", T, || {
        let pids = cluster.pids_in("node1");
        let left: Vec<String> = pids
            .iter()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
            .filter(|c| c.contains("sleep"))
            .collect();
        Ok(left.is_empty().then_some(()))
    })?;
    Ok(())
}

#[test]
fn a_lost_node_ends_its_job_as_node_fail() -> anyhow::Result<()> {
    let mut cluster = SlurmCluster::start(2);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    let req = request(&cluster, "lost", "#!/bin/sh\necho ready\n/bin/sleep 300\n")?;
    let id = rt.block_on(slurm.submit(&req))?;
    let running = wait_state(&slurm, &rt, id, "running", T, |s| *s == JobState::Running)?;
    wait_for("the job to start", T, || {
        Ok(read(&req.stdout).contains("ready").then_some(()))
    })?;
    let node = running.nodes.clone();
    let index = cluster
        .node_names()
        .iter()
        .position(|n| *n == node)
        .unwrap();
    let t0 = Instant::now();
    cluster.kill_node(index)?;
    assert!(cluster.pids_in(&node).is_empty());
    let ended = wait_state(
        &slurm,
        &rt,
        id,
        "over",
        Duration::from_secs(120),
        JobState::is_finished,
    )?;
    let noticed = t0.elapsed();
    let state = cluster.node_state(&node)?;
    eprintln!(
        "node {node} killed: job seen as {} (reason {:?}, exit {:?}) after {noticed:?}; sinfo says {state}",
        ended.state, ended.reason, ended.exit
    );
    assert_eq!(ended.state, JobState::NodeFail);
    assert_eq!(ended.nodes, node);
    assert!(state.starts_with("down"), "{state}");
    // The other node still takes work.
    let other = cluster
        .node_names()
        .into_iter()
        .find(|n| *n != node)
        .unwrap();
    let req = request(&cluster, "after", "#!/bin/sh\necho fine\n")?;
    let id = rt.block_on(slurm.submit(&req))?;
    let done = wait_state(&slurm, &rt, id, "completed", T, |s| {
        *s == JobState::Completed
    })?;
    assert_eq!(done.nodes, other);
    Ok(())
}

#[test]
fn nothing_of_the_cluster_is_left_after_drop() -> anyhow::Result<()> {
    let cluster = SlurmCluster::start(2);
    let rt = rt()?;
    let slurm = Slurm::new(cluster.env());
    // A job that leaves a process behind in a session of its own.
    let req = request(
        &cluster,
        "escape",
        "#!/bin/sh\n/usr/bin/setsid /bin/sleep 1000 </dev/null >/dev/null 2>&1 &\necho ready\n/bin/sleep 300\n",
    )?;
    let id = rt.block_on(slurm.submit(&req))?;
    wait_state(&slurm, &rt, id, "running", T, |s| *s == JobState::Running)?;
    wait_for("the job to start", T, || {
        Ok(read(&req.stdout).contains("ready").then_some(()))
    })?;
    let dir: PathBuf = cluster.dir().to_path_buf();
    let mut pids: Vec<i32> = Vec::new();
    for n in cluster.node_names() {
        pids.extend(cluster.pids_in(&n));
    }
    assert!(pids.len() >= 3, "slurmd on each node and the job: {pids:?}");
    let namespaces: Vec<String> = cluster
        .node_names()
        .iter()
        .map(|n| cluster.ns_of(n).to_string())
        .collect();
    let slot = cluster.slot();
    drop(cluster);
    let alive: Vec<i32> = pids
        .into_iter()
        .filter(|p| {
            // A zombie waits only for its parent's wait; it runs nothing.
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false)
        })
        .collect();
    assert!(alive.is_empty(), "still running after drop: {alive:?}");
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()?;
    let netns = String::from_utf8_lossy(&netns.stdout);
    for ns in namespaces {
        assert!(!netns.contains(&ns), "{ns} is left: {netns}");
    }
    let left = leftovers_of(slot, &dir);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!dir.exists(), "the cluster's directory is left");
    Ok(())
}
