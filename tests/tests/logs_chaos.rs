//! Chaos for live logs: many runs writing numbered lines, followed live, while at random moments
//! bosund is SIGKILLed, a runner is SIGKILLed, and followers are SIGSTOPped and SIGCONTed. At the
//! end every run is over with the right outcome (lost when its runner was killed, else
//! succeeded), every stored log of a run whose runner lived is exactly its lines 1..N, every
//! follower's copy is lines 1, 2, 3, … with no repeat and no jump (whole, unless the run was
//! lost), and no process of the test is left.
//!
//! `BOSUN_CHAOS_SECS` sets how long the chaos lasts (default 45 s; the runs then get up to
//! three minutes to end), `BOSUN_CHAOS_SEED` the seed of its choices (default: from the clock;
//! it is printed at the start and in any failure, and repeats the same choices, though not the
//! same timing).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bosun_tests::stress::{self, Follower, Gen, Rng};
use bosun_tests::{Bosun, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Runs writing at once, at most.
const MAX_LIVE: usize = 4;
/// How long the followers of a run that is over have to end.
const FOLLOWER_GRACE: Duration = Duration::from_secs(30);

struct ChaosRun {
    name: String,
    id: String,
    g: Gen,
    started: Instant,
    /// Its last batch may go (the end file exists).
    released: bool,
    /// Its runner was SIGKILLed while the program was alive: the run must end lost.
    runner_killed: bool,
    /// Indexes into the followers.
    followers: Vec<usize>,
    /// When `bosun show` first said it was over (in the drain).
    seen_over: Option<Instant>,
    /// Checked, and its copies deleted.
    done: bool,
}

struct ChaosFollower {
    f: Follower,
    /// `bosun run --follow` (exits with the run's status) rather than `bosun logs -f`.
    starter: bool,
    /// SIGSTOPped until then.
    stopped_until: Option<Instant>,
}

#[derive(Default, Debug)]
struct Counts {
    runs: usize,
    lost: usize,
    followers: usize,
    daemon_kills: usize,
    daemon_kills_skipped: usize,
    runner_kills: usize,
    follower_stops: usize,
    lines_stored: u64,
    bytes_stored: u64,
    restarts_said: usize,
}

struct Chaos {
    b: Bosun,
    script: PathBuf,
    dir: PathBuf,
    seed: u64,
    rng: Rng,
    began: Instant,
    runs: Vec<ChaosRun>,
    followers: Vec<ChaosFollower>,
    counts: Counts,
    failures: Vec<String>,
    /// What it did, with the time since the start.
    actions: Vec<String>,
}

impl Chaos {
    fn note(&mut self, what: String) {
        let line = format!("{:7.2}s {what}", self.began.elapsed().as_secs_f64());
        self.actions.push(line);
    }

    fn fail(&mut self, what: String) {
        self.note(format!("FAULT {what}"));
        self.failures.push(what);
    }

    fn live(&self) -> usize {
        self.runs.iter().filter(|r| !r.done).count()
    }

    /// Starts a run (by `bosun run`, or now and then by `bosun run --follow`, which is then its
    /// first follower) and a follower or two.
    fn start_run(&mut self) -> anyhow::Result<()> {
        let k = self.runs.len();
        let tag = format!("c{k}");
        let n = self.rng.range(5_000, 80_000);
        let width = self.rng.range(10, 50) as usize;
        let (batch, pause) = if self.rng.chance(25) {
            // A flood: four calls of seq, as fast as the pipe takes them.
            (n.div_ceil(4), "0".to_string())
        } else {
            let pause = ["0.01", "0.02", "0.05"][self.rng.range(0, 2) as usize];
            (self.rng.range(300, 2000), pause.to_string())
        };
        let g = Gen {
            batch,
            pause,
            end_file: Some(self.dir.join(format!("{tag}.end"))),
            ..Gen::flood(&tag, n, width)
        };
        let name = format!("chaos-{k}");
        let cmd = g.command(&self.script);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let by_follow = self.rng.chance(20);
        let mut first = None;
        let id = if by_follow {
            let mut args = vec!["run", "--follow", "--name", &name, "--"];
            args.extend_from_slice(&cmd);
            let mut f = Follower::spawn(&self.b, &args, &self.dir, &format!("{tag}-run-follow"))?;
            let b = &self.b;
            let found = wait_for("the run to be listed", Duration::from_secs(30), || {
                if let Some(id) = stress::run_named(b, &name)? {
                    return Ok(Some(id));
                }
                if f.poll().is_some() {
                    anyhow::bail!("{}", f.describe());
                }
                Ok(None)
            });
            match found {
                Ok(id) => {
                    first = Some(f);
                    id
                }
                Err(e) => {
                    self.fail(format!("run {tag}: `bosun run --follow` made no run: {e}"));
                    return Ok(());
                }
            }
        } else {
            let mut args = vec!["run", "--json", "--name", &name, "--"];
            args.extend_from_slice(&cmd);
            let out = self.b.output(&args)?;
            let id = serde_json::from_slice::<serde_json::Value>(&out.stdout)
                .ok()
                .and_then(|v| v["id"].as_str().map(str::to_string));
            match id {
                Some(id) if out.status.success() => id,
                _ => {
                    self.fail(format!(
                        "run {tag}: `bosun run` failed ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                    return Ok(());
                }
            }
        };
        self.note(format!(
            "start {tag} ({id}): {n} lines of {} bytes, {batch} a batch, pause {}{}",
            g.total_bytes() / n,
            g.pause,
            if by_follow {
                ", by bosun run --follow"
            } else {
                ""
            }
        ));
        self.counts.runs += 1;
        self.runs.push(ChaosRun {
            name,
            id,
            g,
            started: Instant::now(),
            released: false,
            runner_killed: false,
            followers: Vec::new(),
            seen_over: None,
            done: false,
        });
        if let Some(f) = first {
            self.push_follower(k, f, true);
        }
        self.add_follower(k)?;
        if self.rng.chance(40) {
            self.add_follower(k)?;
        }
        Ok(())
    }

    fn push_follower(&mut self, run: usize, f: Follower, starter: bool) {
        self.followers.push(ChaosFollower {
            f,
            starter,
            stopped_until: None,
        });
        let i = self.followers.len() - 1;
        self.runs[run].followers.push(i);
        self.counts.followers += 1;
    }

    fn add_follower(&mut self, run: usize) -> anyhow::Result<()> {
        let r = &self.runs[run];
        let name = format!("{}-logs-f-{}", r.g.tag, r.followers.len());
        let f = Follower::logs_f(&self.b, &r.id, &self.dir, &name)?;
        self.note(format!("follow {} (pid {})", r.g.tag, f.pid()));
        self.push_follower(run, f, false);
        Ok(())
    }

    fn kill_daemon(&mut self) -> anyhow::Result<()> {
        match self.b.daemon_pid() {
            Some(pid) => {
                self.b.kill_daemon()?;
                self.counts.daemon_kills += 1;
                self.note(format!("SIGKILL bosund (pid {pid})"));
            }
            None => {
                self.counts.daemon_kills_skipped += 1;
                self.note("no bosund to kill".into());
            }
        }
        Ok(())
    }

    /// Runs whose program is surely alive: started, not released, runner not killed.
    fn held(&self) -> Vec<usize> {
        (0..self.runs.len())
            .filter(|&i| {
                let r = &self.runs[i];
                !r.done && !r.released && !r.runner_killed
            })
            .collect()
    }

    fn kill_runner(&mut self) {
        let held: Vec<usize> = self
            .held()
            .into_iter()
            .filter(|&i| self.runs[i].started.elapsed() > Duration::from_millis(300))
            .collect();
        let Some(&i) = self.rng.pick(&held) else {
            return;
        };
        let Some(pid) = stress::runner_of(&self.b, &self.runs[i].id) else {
            let tag = self.runs[i].g.tag.clone();
            self.note(format!("no runner found for {tag}"));
            return;
        };
        if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
            self.runs[i].runner_killed = true;
            self.counts.runner_kills += 1;
            let tag = self.runs[i].g.tag.clone();
            self.note(format!("SIGKILL the runner of {tag} (pid {pid})"));
        }
    }

    fn stop_follower(&mut self) {
        let running: Vec<usize> = (0..self.followers.len())
            .filter(|&i| {
                let f = &mut self.followers[i];
                f.stopped_until.is_none() && f.f.poll().is_none()
            })
            .collect();
        let Some(&i) = self.rng.pick(&running) else {
            return;
        };
        let ms = self.rng.range(300, 3000);
        let f = &mut self.followers[i];
        f.f.signal(Signal::SIGSTOP);
        f.stopped_until = Some(Instant::now() + Duration::from_millis(ms));
        let what = format!("SIGSTOP {} for {ms} ms", f.f.what);
        self.counts.follower_stops += 1;
        self.note(what);
    }

    /// SIGCONT the followers whose time is up (all of them with `all`).
    fn wake_followers(&mut self, all: bool) {
        let now = Instant::now();
        for f in &mut self.followers {
            if f.stopped_until.is_some_and(|t| all || t <= now) {
                f.f.signal(Signal::SIGCONT);
                f.stopped_until = None;
            }
        }
    }

    fn release(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(end) = &self.runs[i].g.end_file {
            std::fs::write(end, "")?;
        }
        self.runs[i].released = true;
        let tag = self.runs[i].g.tag.clone();
        self.note(format!("release {tag}"));
        Ok(())
    }

    /// Checks every run that is over, if its followers are done (or, with `drain`, have had
    /// their grace): its outcome, its stored log, each follower's copy. Deletes the copies.
    fn check_finished(&mut self, drain: bool) -> anyhow::Result<()> {
        for i in 0..self.runs.len() {
            let r = &self.runs[i];
            if r.done || !(drain || r.released || r.runner_killed) {
                continue;
            }
            let followers_done = r
                .followers
                .clone()
                .into_iter()
                .all(|fi| self.followers[fi].f.poll().is_some());
            if !followers_done && !drain {
                continue;
            }
            let id = self.runs[i].id.clone();
            let v = match self.b.show(&id) {
                Ok(v) => v,
                Err(e) => {
                    self.note(format!("bosun show {id} failed: {e}"));
                    continue;
                }
            };
            if v["state"] != "exited" {
                continue;
            }
            let over = *self.runs[i].seen_over.get_or_insert_with(Instant::now);
            if !followers_done && over.elapsed() < FOLLOWER_GRACE {
                continue;
            }
            self.check_run(i, &v)?;
        }
        Ok(())
    }

    fn check_run(&mut self, i: usize, v: &serde_json::Value) -> anyhow::Result<()> {
        self.runs[i].done = true;
        let (id, g, lost) = {
            let r = &self.runs[i];
            (r.id.clone(), r.g.clone(), r.runner_killed)
        };
        let tag = g.tag.clone();
        let want = if lost { "lost" } else { "succeeded" };
        if v["outcome"] != want {
            self.fail(format!(
                "run {tag} ({id}) ended {} ({}), but should be {want}",
                v["outcome"], v["exit"]["reason"]
            ));
        }
        if lost {
            self.counts.lost += 1;
        }
        // The stored log.
        let path = self.dir.join(format!("{tag}.stored"));
        let what = format!("the stored log of {tag} ({id})");
        let checked = stress::stored_log_to(&self.b, &id, &path)
            .and_then(|()| stress::check_file(&path, g.checker(&what)));
        let _ = std::fs::remove_file(&path);
        match checked.map(|c| if lost { c.prefix() } else { c.whole() }) {
            Ok(Ok(lines)) => {
                self.counts.lines_stored += lines;
                self.counts.bytes_stored += Gen::flood(&tag, lines, g.width).total_bytes();
            }
            Ok(Err(e)) => self.fail(e),
            Err(e) => self.fail(format!("{what}: {e}")),
        }
        // Each follower's copy.
        for fi in self.runs[i].followers.clone() {
            let cf = &mut self.followers[fi];
            let mut faults = Vec::new();
            match cf.f.poll() {
                None => {
                    faults.push(format!(
                        "{} of run {tag} did not end within {FOLLOWER_GRACE:?} of the run's end ({} bytes copied)",
                        cf.f.what,
                        cf.f.copied()
                    ));
                    cf.f.signal(Signal::SIGKILL);
                }
                Some(st) => {
                    // `bosun logs -f` succeeds whatever the run's outcome; `bosun run --follow`
                    // exits with the run's own status (0 when it succeeded).
                    let fine = st.success() || (cf.starter && lost);
                    if !fine {
                        faults.push(cf.f.describe());
                    }
                }
            }
            self.counts.restarts_said += cf.f.restarts_seen();
            let what = format!("{} of run {tag}", cf.f.what);
            match stress::check_file(&cf.f.out, g.checker(&what)) {
                Ok(c) => faults.extend(if lost { c.prefix() } else { c.whole() }.err()),
                Err(e) => faults.push(format!("{what}: {e}")),
            }
            let _ = std::fs::remove_file(&cf.f.out);
            for f in faults {
                self.fail(f);
            }
        }
        let tag_note = format!("checked {tag} ({want})");
        self.note(tag_note);
        Ok(())
    }

    /// One random thing.
    fn step(&mut self) -> anyhow::Result<()> {
        let live = self.live();
        if live < 2 || (live < MAX_LIVE && self.rng.chance(30)) {
            return self.start_run();
        }
        match self.rng.range(0, 99) {
            0..=11 => self.kill_daemon()?,
            12..=19 => self.kill_runner(),
            20..=39 => self.stop_follower(),
            40..=54 => {
                let live: Vec<usize> = (0..self.runs.len())
                    .filter(|&i| !self.runs[i].done)
                    .collect();
                if let Some(&i) = self.rng.pick(&live) {
                    self.add_follower(i)?;
                }
            }
            55..=79 => {
                let held = self.held();
                if let Some(&i) = self.rng.pick(&held) {
                    self.release(i)?;
                }
            }
            _ => {}
        }
        // No run is held for long.
        for i in self.held() {
            if self.runs[i].started.elapsed() > Duration::from_secs(10) {
                self.release(i)?;
            }
        }
        Ok(())
    }

    fn report(&self) -> String {
        let c = &self.counts;
        format!(
            "seed {}: {:.1} s; {} runs ({} lost), {} lines ({:.1} MB) stored; {} followers; \
             bosund SIGKILLed {} times ({} times there was none); {} runners SIGKILLed; \
             followers SIGSTOPped {} times; \"bosund restarted\" said {} times",
            self.seed,
            self.began.elapsed().as_secs_f64(),
            c.runs,
            c.lost,
            c.lines_stored,
            c.bytes_stored as f64 / 1e6,
            c.followers,
            c.daemon_kills,
            c.daemon_kills_skipped,
            c.runner_kills,
            c.follower_stops,
            c.restarts_said
        )
    }
}

fn seed() -> u64 {
    std::env::var("BOSUN_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

fn chaos_secs() -> u64 {
    std::env::var("BOSUN_CHAOS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(45)
}

/// Every run `ps --all` lists is over and is one of ours.
fn check_listing(b: &Bosun, runs: &[ChaosRun]) -> Vec<String> {
    let listed = match b.json(&["ps", "--all"]) {
        Ok(v) => v,
        Err(e) => return vec![format!("bosun ps --all: {e}")],
    };
    let listed = listed.as_array().cloned().unwrap_or_default();
    let mut failures = Vec::new();
    for v in &listed {
        let name = v["name"].as_str().unwrap_or_default();
        if !runs
            .iter()
            .any(|r| r.name == name && v["id"] == r.id.as_str())
        {
            failures.push(format!(
                "bosun ps --all lists a run the test did not start: {v}"
            ));
        }
        if v["state"] != "exited" {
            failures.push(format!(
                "run {name} ({}) is still {} at the end",
                v["id"], v["state"]
            ));
        }
    }
    if listed.len() != runs.len() {
        failures.push(format!(
            "bosun ps --all lists {} runs; the test started {}",
            listed.len(),
            runs.len()
        ));
    }
    failures
}

fn scratch_dir(b: &Bosun) -> anyhow::Result<PathBuf> {
    let dir = b.scratch().join("copies");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn run_chaos(c: &mut Chaos, secs: u64) -> anyhow::Result<()> {
    c.b.ok(&["ps"])?;
    let until = c.began + Duration::from_secs(secs);
    while Instant::now() < until {
        c.wake_followers(false);
        c.check_finished(false)?;
        c.step()?;
        let ms = c.rng.range(100, 500);
        std::thread::sleep(Duration::from_millis(ms));
    }
    // The end of the chaos: every follower goes on, every run may finish.
    c.note("the chaos ends; every run is released".into());
    c.wake_followers(true);
    for i in c.held() {
        c.release(i)?;
    }
    let drain = wait_for(
        "every run to end and be checked",
        Duration::from_secs(180),
        || {
            c.check_finished(true)?;
            Ok(c.runs.iter().all(|r| r.done).then_some(()))
        },
    );
    if let Err(e) = drain {
        let left: Vec<String> = c
            .runs
            .iter()
            .filter(|r| !r.done)
            .map(|r| format!("{} ({})", r.g.tag, r.id))
            .collect();
        c.fail(format!("{e}: runs not over: {}", left.join(", ")));
    }
    let listing = check_listing(&c.b, &c.runs);
    for f in listing {
        c.fail(f);
    }
    Ok(())
}

#[test]
fn logs_stay_whole_through_daemon_kills_runner_kills_and_stopped_followers() -> anyhow::Result<()> {
    let seed = seed();
    let secs = chaos_secs();
    eprintln!(
        "logs_chaos: seed {seed} (BOSUN_CHAOS_SEED={seed} repeats these choices), {secs} s of chaos"
    );
    let b = Bosun::new("logs_chaos");
    let script = stress::generator(&b)?;
    let dir = scratch_dir(&b)?;
    let mut c = Chaos {
        b,
        script,
        dir,
        seed,
        rng: Rng::new(seed),
        began: Instant::now(),
        runs: Vec::new(),
        followers: Vec::new(),
        counts: Counts::default(),
        failures: Vec::new(),
        actions: Vec::new(),
    };
    let outcome = run_chaos(&mut c, secs);
    eprintln!("logs_chaos: what it did:\n{}", c.actions.join("\n"));
    eprintln!("logs_chaos: {}", c.report());
    if let Err(e) = outcome {
        anyhow::bail!("logs_chaos (seed {seed}) stopped: {e}\n{}", c.report());
    }
    if !c.failures.is_empty() {
        let shown: Vec<&str> = c.failures.iter().take(30).map(String::as_str).collect();
        anyhow::bail!(
            "logs_chaos (seed {seed}, BOSUN_CHAOS_SEED={seed} to repeat): {} faults:\n  {}\n{}",
            c.failures.len(),
            shown.join("\n  "),
            c.report()
        );
    }
    c.followers.clear();
    c.b.finish()
}
