//! Runs placed on Kubernetes, against a fake API server (no cluster can be installed here):
//! bosund's kube-rs client creates one Job per run on it, and the test plays the kubelet —
//! when a Job appears it starts the Job's own command (`bosun-runner --remote <dir>/link.json`)
//! on this machine as the "pod", which dials bosund over mutual TLS as on a real node, and it
//! reports the pod's status to the fake API. So a run really completes, its log checked line
//! by line, and a Job deleted from outside or a pod that fails is recorded with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use bosun_tests::kube_api::{self, FakeKube};
use bosun_tests::{Bosun, bin_dir, free_port, lines, wait_for};
use serde_json::Value;

const NS: &str = "agents";
const NODE: &str = "kube-node-1";
const IMAGE: &str = "registry.example/bosun-node:1";

/// What the fake kubelet does with a new Job.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Starts the Job's command as the pod, and reports it running, then how it ended.
    Run,
    /// The image cannot be pulled: the pod waits in ImagePullBackOff.
    NoImage,
    /// No node has room: new Jobs stay pending (no pod) until the mode changes.
    Hold,
}

/// The test's kubelet: one thread that looks at the fake API's Jobs every 50 ms.
struct Kubelet {
    stop: Arc<AtomicBool>,
    mode: Arc<Mutex<Mode>>,
    /// Job name → the runner started for it.
    pods: Arc<Mutex<BTreeMap<String, Child>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Kubelet {
    fn start(kube: Arc<FakeKube>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mode = Arc::new(Mutex::new(Mode::Run));
        let pods: Arc<Mutex<BTreeMap<String, Child>>> = Arc::new(Mutex::new(BTreeMap::new()));
        let (s, m, p) = (stop.clone(), mode.clone(), pods.clone());
        let thread = std::thread::spawn(move || {
            let mut seen = BTreeSet::new();
            let mut ended = BTreeSet::new();
            while !s.load(Ordering::Relaxed) {
                for (ns, name, job) in kube.jobs() {
                    let deleting = job["metadata"].get("deletionTimestamp").is_some();
                    let mode = *m.lock().unwrap_or_else(|e| e.into_inner());
                    if mode != Mode::Hold && !deleting && seen.insert(name.clone()) {
                        match mode {
                            Mode::Run => match start_pod(&job) {
                                Ok(child) => {
                                    p.lock()
                                        .unwrap_or_else(|e| e.into_inner())
                                        .insert(name.clone(), child);
                                    kube.set_pod(&ns, &name, Some(NODE), kube_api::pod_running());
                                }
                                Err(e) => {
                                    eprintln!("kubelet: could not start the pod of {name}: {e:#}")
                                }
                            },
                            Mode::NoImage => kube.set_pod(
                                &ns,
                                &name,
                                Some(NODE),
                                kube_api::pod_image_pull_backoff(IMAGE),
                            ),
                            Mode::Hold => {}
                        }
                    }
                    let mut pods = p.lock().unwrap_or_else(|e| e.into_inner());
                    if deleting {
                        // The pod gets SIGTERM; once its runner is gone, the Job is.
                        match pods.get_mut(&name) {
                            Some(child) => {
                                if matches!(child.try_wait(), Ok(Some(_))) {
                                    pods.remove(&name);
                                    kube.finish_delete(&ns, &name);
                                } else if !ended.contains(&name) {
                                    ended.insert(name.clone());
                                    let _ = nix::sys::signal::kill(
                                        nix::unistd::Pid::from_raw(child.id() as i32),
                                        nix::sys::signal::Signal::SIGTERM,
                                    );
                                }
                            }
                            None => kube.finish_delete(&ns, &name),
                        }
                    } else if let Some(child) = pods.get_mut(&name)
                        && let Ok(Some(status)) = child.try_wait()
                        && ended.insert(name.clone())
                    {
                        kube.set_pod(
                            &ns,
                            &name,
                            Some(NODE),
                            kube_api::pod_ended(status.code().unwrap_or(137)),
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Self {
            stop,
            mode,
            pods,
            thread: Some(thread),
        }
    }

    fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// Kills the pod of `job` and everything of its run, as a node's eviction does.
    fn kill_pod(&self, job: &str, run: &str) {
        // Taken from the kubelet's pods: the test reports how this one ended.
        let taken = self
            .pods
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(job);
        if let Some(mut child) = taken {
            let _ = child.kill();
            let _ = child.wait();
        }
        kill_run_processes(run);
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for (_, mut child) in
            std::mem::take(&mut *self.pods.lock().unwrap_or_else(|e| e.into_inner()))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every process of a run (its marker in the environment) gets SIGKILL.
fn kill_run_processes(run: &str) {
    let marker = format!("BOSUN_RUN_ID={run}");
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if bosun_tests::environ_of(pid).contains(&marker) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Starts the Job's container command on this machine, in its working directory, with the
/// environment an image gives (PATH only), its output in `runner.log` of the run's folder.
fn start_pod(job: &Value) -> anyhow::Result<Child> {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = c["command"]
        .as_array()
        .context("the container has a command")?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let (program, args) = command.split_first().context("an empty command")?;
    let dir = PathBuf::from(c["workingDir"].as_str().context("a working directory")?);
    let log = std::fs::File::create(dir.join("runner.log"))?;
    let child = Command::new(program)
        .args(args)
        .current_dir(&dir)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    Ok(child)
}

struct Placed {
    b: Bosun,
    kube: Arc<FakeKube>,
    kubelet: Kubelet,
    shared: PathBuf,
    work: PathBuf,
}

fn placed(test: &str) -> anyhow::Result<Placed> {
    let b = Bosun::new(test);
    let kube = Arc::new(FakeKube::start()?);
    let volume = b.scratch().join("volume");
    let shared = volume.join("bosun");
    let work = volume.join("work");
    std::fs::create_dir_all(&shared)?;
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&b.home)?;
    let port = free_port()?;
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\n\n[kubernetes]\nkubeconfig = \"{}\"\nimage = \"{IMAGE}\"\nrunner = \"{}\"\nshared_dir = \"{}\"\nmount = \"{}\"\nhost_path = \"{}\"\ncheck_secs = 1\naway_secs = 30\n",
        kube.kubeconfig().display(),
        bin_dir().join("bosun-runner").display(),
        shared.display(),
        volume.display(),
        volume.display(),
    );
    std::fs::write(b.home.join("placement.toml"), config)?;
    let kubelet = Kubelet::start(kube.clone());
    Ok(Placed {
        b,
        kube,
        kubelet,
        shared,
        work,
    })
}

impl Placed {
    fn counter(&self, name: &str, n: u64, every: u64, pause: &str) -> anyhow::Result<String> {
        let path = self.work.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\ni=1\nwhile [ $i -le {n} ]; do\n  echo \"line $i\"\n  if [ $((i % {every})) -eq 0 ]; then sleep {pause}; fi\n  i=$((i+1))\ndone\n"
            ),
        )?;
        let mut perms = std::fs::metadata(&path)?.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms)?;
        Ok(path.display().to_string())
    }

    fn start(&self, flags: &[&str], program: &[&str]) -> anyhow::Result<String> {
        let cwd = self.work.display().to_string();
        let placement = format!("kubernetes:{NS}");
        let mut all = vec!["--placement", placement.as_str(), "--cwd", cwd.as_str()];
        all.extend_from_slice(flags);
        self.b.start(&all, program)
    }

    fn job_name(run: &str) -> String {
        format!("bosun-{}", run.to_ascii_lowercase())
    }

    /// The DELETE requests bosund sent for `job`, with their bodies.
    fn deletes_of(&self, job: &str) -> Vec<String> {
        self.kube
            .requests()
            .into_iter()
            .filter(|(m, t, _)| m == "DELETE" && t.contains(job))
            .map(|(_, _, body)| body)
            .collect()
    }

    fn finish(self) -> anyhow::Result<()> {
        // Every pod's runner has ended (the kubelet kills the rest when dropped).
        let pods = self.kubelet.pods.clone();
        let left = wait_for("every pod's runner to end", Duration::from_secs(30), || {
            let mut pods = pods.lock().unwrap_or_else(|e| e.into_inner());
            Ok(pods
                .values_mut()
                .all(|c| matches!(c.try_wait(), Ok(Some(_))))
                .then_some(()))
        });
        drop(self.kubelet);
        left?;
        self.b.finish()
    }
}

/// Checks a log holds `line 1` to `line n`, each once, in order.
fn complete(log: &[u8], n: u64) -> anyhow::Result<()> {
    let mut want = 1u64;
    for l in lines(log) {
        let Some(num) = l.strip_prefix("line ") else {
            continue;
        };
        let num: u64 = num.trim().parse()?;
        if num != want {
            bail!("expected line {want}, found line {num}");
        }
        want += 1;
    }
    if want != n + 1 {
        bail!("the log ends at line {} of {n}", want - 1);
    }
    Ok(())
}

#[test]
fn runs_complete_through_kubernetes_jobs_each_log_complete() -> anyhow::Result<()> {
    let p = placed("kube_complete")?;
    let script = p.counter("count.sh", 3_000, 500, "0.1")?;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(p.start(&["--time-cap", "10m"], &[&script])?);
    }
    for run in &runs {
        let v = p.b.wait_ended(run, Duration::from_secs(120))?;
        assert_eq!(v["outcome"], "succeeded", "{v:#}");
        complete(&p.b.logs(run)?, 3_000).with_context(|| format!("run {run}"))?;
        let job = Placed::job_name(run);
        assert_eq!(v["placed"]["job"], job.as_str(), "{v:#}");
        assert_eq!(v["placed"]["node"], NODE, "{v:#}");
        assert_eq!(v["placed"]["placement"]["backend"], "kubernetes", "{v:#}");
        assert!(
            !p.shared.join("runs").join(run).join("link.json").exists(),
            "run {run}'s link file is left"
        );
        // The Job as the API server was given it.
        let j = p.kube.job(NS, &job).context("the Job is kept")?;
        assert_eq!(kube_api::run_of(&j)?, *run);
        let spec = &j["spec"];
        assert_eq!(spec["backoffLimit"], 0);
        assert_eq!(spec["ttlSecondsAfterFinished"], 600);
        // Ten minutes, the default ladder (rounded up to seconds) and a minute.
        let deadline = spec["activeDeadlineSeconds"].as_i64().unwrap_or(0);
        assert!((660..=700).contains(&deadline), "{deadline}");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(
            pod["containers"][0]["command"][2],
            p.shared
                .join("runs")
                .join(run)
                .join("link.json")
                .display()
                .to_string()
        );
        assert_eq!(pod["containers"][0]["image"], IMAGE);
        assert_eq!(
            pod["volumes"][0]["hostPath"]["path"],
            p.shared
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        );
    }
    let show = p.b.ok(&["show", &runs[0]])?;
    assert!(
        show.contains(&format!(
            "kubernetes:agents (job {}",
            Placed::job_name(&runs[0])
        )),
        "show names the Job: {show}"
    );
    // No run was deleted: each ended through its link.
    for run in &runs {
        assert!(p.deletes_of(&Placed::job_name(run)).is_empty());
    }
    p.finish()
}

#[test]
fn a_secret_never_reaches_the_kubernetes_api() -> anyhow::Result<()> {
    const CANARY: &str = "canary-2b9d4e71a0c35f86";
    let p = placed("kube_secret")?;
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
    p.b.ok(&["agent", "set", "far", &format!("placement=kubernetes:{NS}")])?;
    let v =
        p.b.json(&["agent", "run", "far", "show the token's length"])?;
    let run = v["id"].as_str().context("run id")?.to_string();
    let v = p.b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    let log = String::from_utf8_lossy(&p.b.logs(&run)?).to_string();
    assert!(
        log.contains(&format!("token has {} chars", CANARY.len())),
        "{log}"
    );
    assert!(
        !log.contains(CANARY),
        "the runner redacts the secret: {log}"
    );
    // Nothing bosund sent the API server holds it, nor any Job it keeps.
    let requests = p.kube.requests();
    assert!(
        requests.iter().any(|(m, _, _)| m == "POST"),
        "a Job was created"
    );
    for (m, t, body) in &requests {
        assert!(
            !t.contains(CANARY) && !body.contains(CANARY),
            "{m} {t} carries the secret"
        );
    }
    for (_, _, job) in p.kube.jobs() {
        assert!(
            !job.to_string().contains(CANARY),
            "a Job holds the secret: {job}"
        );
    }
    p.b.assert_secret_nowhere(CANARY)?;
    p.finish()
}

#[test]
fn a_job_deleted_from_outside_is_recorded_as_a_stop_from_outside() -> anyhow::Result<()> {
    let p = placed("kube_deleted")?;
    let run = p.start(&[], &["sleep", "600"])?;
    p.b.wait_run(&run, "the run to start", Duration::from_secs(60), |v| {
        v["state"] == "running"
    })?;
    let ps = p.b.ok(&["ps"])?;
    assert!(
        ps.contains(&format!("running on {NODE}")),
        "ps shows the node: {ps}"
    );
    // kubectl delete job --cascade=foreground: the pod gets SIGTERM.
    let job = Placed::job_name(&run);
    p.kube.delete_from_outside(NS, &job);
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "stopped", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("outside"), "{reason}");
    wait_for("the Job to be gone", Duration::from_secs(10), || {
        Ok(p.kube.job(NS, &job).is_none().then_some(()))
    })?;
    p.finish()
}

#[test]
fn an_evicted_pod_makes_its_run_lost_with_the_reason_and_the_job_deleted() -> anyhow::Result<()> {
    let p = placed("kube_evicted")?;
    let run = p.start(&[], &["sleep", "600"])?;
    p.b.wait_run(&run, "the run to start", Duration::from_secs(60), |v| {
        v["state"] == "running"
    })?;
    let job = Placed::job_name(&run);
    // The kubelet evicts the pod: everything of it is killed, the link drops.
    p.kubelet.kill_pod(&job, &run);
    p.kube
        .set_pod(NS, &job, Some(NODE), kube_api::pod_evicted());
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "lost", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    for says in ["evicted", "low on resource: memory", NODE] {
        assert!(reason.contains(says), "{reason:?} does not say {says:?}");
    }
    // bosund deleted what was left of the Job, its pod first.
    let deletes = p.deletes_of(&job);
    assert!(
        deletes
            .iter()
            .any(|b| b.contains("\"propagationPolicy\":\"Foreground\"")),
        "{deletes:?}"
    );
    p.finish()
}

#[test]
fn an_image_that_cannot_be_pulled_is_said_plainly() -> anyhow::Result<()> {
    let p = placed("kube_no_image")?;
    p.kubelet.set_mode(Mode::NoImage);
    let run = p.start(&[], &["true"])?;
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "lost", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    for says in [
        "could not pull its image (ImagePullBackOff)",
        IMAGE,
        "kubernetes.image",
    ] {
        assert!(reason.contains(says), "{reason:?} does not say {says:?}");
    }
    assert!(
        !p.deletes_of(&Placed::job_name(&run)).is_empty(),
        "the Job was deleted"
    );
    p.finish()
}

#[test]
fn a_namespace_bosun_may_not_use_fails_the_run_with_kubernetes_words() -> anyhow::Result<()> {
    let p = placed("kube_forbidden")?;
    p.kube.forbid("locked");
    let cwd = p.work.display().to_string();
    let run = p.b.start(
        &["--placement", "kubernetes:locked", "--cwd", &cwd],
        &["true"],
    )?;
    let v = p.b.wait_ended(&run, Duration::from_secs(30))?;
    assert_eq!(v["outcome"], "failed", "{v:#}");
    let reason = v["exit"]["reason"].as_str().unwrap_or_default();
    for says in [
        "kubernetes:locked",
        "forbidden",
        "403 Forbidden",
        "create, get, list and delete on jobs",
    ] {
        assert!(reason.contains(says), "{reason:?} does not say {says:?}");
    }
    // A namespace that is no DNS label is refused before anything is sent.
    let out =
        p.b.output(&["run", "--placement", "kubernetes:Bad_NS", "--", "true"])?;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a Kubernetes namespace name"),
        "{out:?}"
    );
    p.finish()
}

#[test]
fn after_a_restart_the_job_of_a_run_that_is_over_is_deleted() -> anyhow::Result<()> {
    let p = placed("kube_orphan")?;
    let run = p.start(&[], &["true"])?;
    let v = p.b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    let job = Placed::job_name(&run);
    // The pod's end reaches the Job a moment after the run's (the test's kubelet sees the
    // runner exit after bosund acked it): wait for it, so it cannot overwrite what follows.
    wait_for("the Job to be complete", Duration::from_secs(30), || {
        Ok(p.kube
            .job(NS, &job)
            .filter(|j| j["status"]["succeeded"] == 1)
            .map(|_| ()))
    })?;
    // As if its Job had not finished (a crash between the run's end and the pod's).
    p.kube.set_job_status(
        NS,
        &job,
        serde_json::json!({"active": 1, "ready": 1, "terminating": 0, "uncountedTerminatedPods": {}}),
    );
    p.b.ok(&["daemon", "stop"])?;
    p.b.ok(&["ps"])?;
    wait_for(
        "the orphan Job to be deleted",
        Duration::from_secs(30),
        || Ok((!p.deletes_of(&job).is_empty()).then_some(())),
    )
    .with_context(|| {
        format!(
            "bosund.log:\n{}\nrequests: {:?}",
            std::fs::read_to_string(p.b.home.join("bosund.log")).unwrap_or_default(),
            p.kube.requests()
        )
    })?;
    // Found by its label, in all namespaces.
    assert!(
        p.kube.requests().iter().any(|(m, t, _)| m == "GET"
            && t.starts_with("/apis/batch/v1/jobs?")
            && t.contains("labelSelector=bosun.dev")),
        "{:?}",
        p.kube.requests()
    );
    p.finish()
}

#[test]
fn a_job_still_pending_when_bosund_restarts_gets_its_plan_after_the_restart() -> anyhow::Result<()>
{
    const CANARY: &str = "canary-5e0a9c13b7d2f468";
    let p = placed("kube_pending_restart")?;
    let script = p.counter("count.sh", 2_000, 500, "0.1")?;
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
            &format!("echo \"token has ${{#TOKEN}} chars\"; exec {script}"),
        ],
        CANARY,
    )?;
    p.b.ok(&["agent", "set", "far", &format!("placement=kubernetes:{NS}")])?;
    // No node has room: the Job is made and stays pending.
    p.kubelet.set_mode(Mode::Hold);
    let v = p.b.json(&["agent", "run", "far", "count"])?;
    let run = v["id"].as_str().context("run id")?.to_string();
    let job = Placed::job_name(&run);
    p.b.wait_run(&run, "the Job to be made", Duration::from_secs(30), |v| {
        v["placed"]["job"] == job.as_str()
    })?;
    let seen_waiting = std::time::Instant::now();
    // bosund is killed twice while the Job waits (`show` starts it again).
    for _ in 0..2 {
        p.b.kill_daemon()?;
        let v = p.b.show(&run)?;
        assert_eq!(v["state"], "queued", "the run waits: {v:#}");
    }
    // The last bosund asks Kubernetes about the waiting Job before it is let run.
    let asked_before = p.kube.requests().len();
    wait_for(
        "the restarted bosund to ask about the Job",
        Duration::from_secs(30),
        || {
            let asked = p.kube.requests()[asked_before..]
                .iter()
                .any(|(m, t, _)| m == "GET" && t.contains(job.as_str()));
            Ok(asked.then_some(()))
        },
    )?;
    let waited_at_least = seen_waiting.elapsed().as_millis() as u64;
    p.kubelet.set_mode(Mode::Run);
    let v = p.b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(v["outcome"], "succeeded", "{v:#}");
    let log = String::from_utf8_lossy(&p.b.logs(&run)?).to_string();
    assert!(
        log.contains(&format!("token has {} chars", CANARY.len())),
        "the secret was read again for the plan: {log}"
    );
    complete(&p.b.logs(&run)?, 2_000)?;
    let queued = v["placed"]["queued_ms"]
        .as_u64()
        .context("the run says it waited")?;
    assert!(
        queued >= waited_at_least,
        "it waited at least the {waited_at_least} ms the test saw it wait: {v:#}"
    );
    let show = p.b.ok(&["show", &run])?;
    assert!(show.contains("in its queue"), "{show}");
    for (m, t, body) in &p.kube.requests() {
        assert!(
            !t.contains(CANARY) && !body.contains(CANARY),
            "{m} {t} carries the secret"
        );
    }
    p.b.assert_secret_nowhere(CANARY)?;
    p.finish()
}
