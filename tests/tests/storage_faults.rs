//! Storage faults under the state directory.
//!
//! A full disk: the run is held, not lost, and nothing is dropped. The state directory is a small tmpfs mounted by the test (CI runs as root; the test says so
//! plainly where it cannot mount), filled up to a few megabytes. A run then writes far more than
//! fits: the daemon cannot store its output and stops acking, the runner keeps what it has in
//! memory, its spool fails too, and it stops reading the program's pipes, so the program blocks.
//! Then space is freed, and everything must go on by itself: the run succeeds, and its stored
//! log and a live follower's copy are exactly lines 1..N.
//!
//! A damaged log file: reading it stops at the last good record and says so, instead of ending
//! as if the log were whole.
//!
//! Changes that cannot be saved (redb cannot grow on the full disk): each is refused whole,
//! with the reason, bosund goes on answering, an attached UI hears the fault and its end, and
//! after space comes back the state is exactly what was saved. The same for an approval
//! decided on a full disk; a runner that spools while bosund is SIGKILLed on a full disk; a
//! run's log whose flush fails, named by `bosun show` as by `daemon status`; and a state
//! directory that turns read-only.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_tests::stress::{self, Follower, Gen};
use bosun_tests::{Bosun, EventWatcher, FakeModel, wait_for};

/// A tmpfs mounted on a directory of the test's own; the harness unmounts it when the test's
/// `Bosun` goes, once nothing of the test runs.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .context("could not run mount")?;
        if !out.status.success() {
            bail!(
                "this test mounts a small tmpfs for the state directory and needs root (CI runs as root): mount said {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(Self(dir.to_path_buf()))
    }

    fn free(&self) -> anyhow::Result<u64> {
        let st = nix::sys::statvfs::statvfs(&self.0)?;
        Ok(st.blocks_available() * st.fragment_size())
    }
}

/// Fills the disk under `dir` to the last byte; returns the filler, to remove to free it.
fn fill(dir: &Path) -> anyhow::Result<PathBuf> {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler)?;
    for size in [1 << 20, 4096, 512, 1] {
        let buf = vec![0u8; size];
        while f.write_all(&buf).is_ok() {}
    }
    Ok(filler)
}

/// Writes notes, each smaller than the last, until not even the smallest can be saved: redb
/// has no room left in its file and cannot grow. Returns the last refusal and the notes saved.
fn exhaust_the_store(b: &Bosun) -> anyhow::Result<(String, Vec<String>)> {
    let mut saved = Vec::new();
    let mut refusal = String::new();
    for (size, tries) in [(256 * 1024, 400), (16 * 1024, 400), (1024, 800), (64, 800)] {
        let text = "n".repeat(size);
        for i in 0..tries {
            let path = format!("fill/{size}/{i}.md");
            let out = b.output_with_stdin(&["note", "write", &path], &text)?;
            if !out.status.success() {
                refusal = String::from_utf8_lossy(&out.stderr).into_owned();
                break;
            }
            saved.push(path);
        }
    }
    if refusal.is_empty() {
        bail!("every note was saved on a full disk; the test proves nothing");
    }
    Ok((refusal, saved))
}

/// An attached UI (`SubscribeRuns`): the storage events it hears, in order.
struct Watcher(EventWatcher);

impl Watcher {
    fn start(b: &Bosun) -> anyhow::Result<Self> {
        EventWatcher::start(b).map(Self)
    }

    /// The storage events so far, as `fault: …` and `recovered: …`.
    fn said(&self) -> Vec<String> {
        self.0
            .of(&["storage_fault", "storage_recovered"])
            .iter()
            .map(|e| match e["event"].as_str() {
                Some("storage_fault") => format!("fault: {}", e["message"].as_str().unwrap_or("")),
                Some(_) | None => format!("recovered: {}", e["fault"].as_str().unwrap_or("")),
            })
            .collect()
    }

    fn wait(&self, what: &str, pred: impl Fn(&[String]) -> bool) -> anyhow::Result<Vec<String>> {
        wait_for(what, Duration::from_secs(30), || {
            let said = self.said();
            Ok(pred(&said).then_some(said))
        })
    }
}

/// Waits until the run's log has not grown for 2 s on the full disk (and `also` holds).
fn stops_growing(log: &Path, also: impl Fn() -> anyhow::Result<bool>) -> anyhow::Result<()> {
    let mut last = (0, Instant::now());
    wait_for(
        "the run's log to stop growing on the full disk",
        Duration::from_secs(60),
        || {
            let len = file_len(log);
            if len != last.0 {
                last = (len, Instant::now());
                return Ok(None);
            }
            Ok((also()? && last.1.elapsed() > Duration::from_secs(2)).then_some(()))
        },
    )
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_full_disk_holds_the_run_and_when_space_returns_nothing_is_lost() -> anyhow::Result<()> {
    let b = Bosun::new("storage_full_disk");
    let disk = Tmpfs::mount(&b.home, "160m")?;
    b.ok(&["ps"])?; // the daemon starts on the small disk
    let scratch = b.scratch();
    let script = stress::generator(&b)?;

    // About 100 MB of numbered lines: more than the daemon (32 MiB waiting for the store) and
    // the runner (32 MiB in memory) hold together, so the program itself must wait.
    // The run starts while there is room (below the free-space floor a new run is refused)
    // and waits after its first thousand lines until the disk is nearly full.
    let go = scratch.join("go");
    let mut g = Gen::flood("full", 1_000_000, 90);
    g.batch = 1000;
    g.hold_at = 1000;
    g.hold_file = Some(go.clone());
    let cmd = g.command(&script);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let run = b.start(&[], &cmd)?;
    let mut follower = Follower::logs_f(&b, &run, &scratch, "follower")?;
    let log = b.home.join("runs").join(&run).join("log");
    wait_for("the first lines", Duration::from_secs(30), || {
        Ok((follower.copied() > 0).then_some(()))
    })?;

    let filler = b.home.join("filler");
    let keep_free = 4 * 1024 * 1024;
    let fill = disk.free()?.saturating_sub(keep_free);
    std::fs::write(&filler, vec![0u8; usize::try_from(fill)?])?;
    // Below the floor, a new run is refused, and says why.
    let err = b.fails(&["run", "--", "true"])?;
    assert!(
        err.contains("MB free, below the 64 MB bosun keeps for run logs"),
        "a run was not refused on a nearly full disk: {err}"
    );
    std::fs::write(&go, b"")?;

    // The disk fills up, and the output stops: held, not lost.
    stops_growing(&log, || Ok(disk.free()? < 1024 * 1024))?;
    let held_at = file_len(&log);
    assert!(
        held_at < g.total_bytes(),
        "the whole output fit before the disk filled; the test proves nothing"
    );
    // Held steady: the follower, having heard nothing, says why (an event, not a clock), and
    // meanwhile the run is running (its runner alive), bosund answers, and nothing moved.
    wait_for(
        "the follower to say the run is paused",
        Duration::from_secs(30),
        || Ok(follower.stderr().contains("is paused: ").then_some(())),
    )?;
    let v = b.show(&run)?;
    assert_eq!(
        v["state"], "running",
        "a run on a full disk must be held, not ended: {v}"
    );
    assert!(
        stress::runner_of(&b, &run).is_some(),
        "the runner died of the full disk"
    );
    assert_eq!(file_len(&log), held_at, "the log grew on a full disk");
    // Said plainly where the person looks: the run is paused, and why; the daemon has a fault.
    let paused = v["paused"].as_str().unwrap_or_default().to_string();
    assert!(
        paused.contains("the state directory's disk is full; free some space"),
        "bosun show does not say why the run is paused: {v}"
    );
    let ps = b.ok(&["ps"])?;
    assert!(ps.contains("running, paused"), "bosun ps: {ps}");
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status.contains("cannot write: the state directory's disk is full"),
        "bosun daemon status: {status}"
    );
    let runner_log = std::fs::read_to_string(b.home.join("runs").join(&run).join("runner.log"))
        .unwrap_or_default();
    assert!(
        !runner_log.contains("panicked"),
        "the runner panicked: {runner_log}"
    );

    // Space comes back: everything goes on by itself.
    std::fs::remove_file(&filler)?;
    let v = b.wait_ended(&run, Duration::from_secs(180))?;
    assert_eq!(
        v["outcome"], "succeeded",
        "the run did not succeed after space came back: {v}"
    );
    assert!(v.get("paused").is_none(), "still paused: {v}");
    let stored = scratch.join("stored");
    stress::stored_log_to(&b, &run, &stored)?;
    stress::check_file(&stored, g.checker("the stored log"))?
        .whole()
        .map_err(anyhow::Error::msg)?;
    wait_for(
        "the follower to end with the run",
        Duration::from_secs(60),
        || Ok(follower.poll()),
    )?;
    stress::check_file(&follower.out, g.checker("the follower's copy"))?
        .whole()
        .map_err(anyhow::Error::msg)?;
    let said = follower.stderr();
    assert!(
        said.contains("is paused: the state directory's disk is full") && said.contains("goes on"),
        "the follower did not tell the person: {said}"
    );
    // The program really was held by its runner (not only buffered): the run's log says when
    // output stopped and when it went on (as bosun's notes, beside the program's output).
    let raw = std::fs::read(&log)?;
    for said in [
        &b"output is held: the run's log could not be written"[..],
        b"output flows again",
    ] {
        assert!(
            raw.windows(said.len()).any(|w| w == said),
            "the run's log does not say `{}`",
            String::from_utf8_lossy(said)
        );
    }
    b.finish()
}

#[test]
fn a_damaged_log_file_is_read_up_to_its_last_good_record_and_said_to_be_damaged()
-> anyhow::Result<()> {
    let b = Bosun::new("storage_damaged_log");
    let script = stress::generator(&b)?;
    let g = Gen::flood("dmg", 50_000, 40);
    let cmd = g.command(&script);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let run = b.start(&[], &cmd)?;
    let v = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    let chunks = v["last_seq"].as_u64().context("no last_seq")?;
    assert!(chunks > 4, "the run wrote only {chunks} chunks");

    // A byte flipped in the middle of the file, as by a bad disk.
    let log = b.home.join("runs").join(&run).join("log");
    let mut bytes = std::fs::read(&log)?;
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&log, &bytes)?;

    let out = b.output(&["logs", &run])?;
    assert!(
        !out.status.success(),
        "bosun logs ended as if the log were whole"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("the log file of run {run} ends after chunk"))
            && err.contains(&format!("but the run wrote {chunks}")),
        "bosun logs did not say where the log is damaged: {err}"
    );
    // What it printed is the log up to the damage: whole lines 1..k, nothing after.
    let mut check = g.checker("the log up to the damage");
    check.feed(&out.stdout);
    let k = check.prefix().map_err(anyhow::Error::msg)?;
    assert!(k > 0 && k < g.n, "printed lines 1..={k} of {}", g.n);

    // The file deleted: the same, from the start.
    std::fs::remove_file(&log)?;
    let err = b.fails(&["logs", &run])?;
    assert!(
        err.contains("ends after chunk 0"),
        "a deleted log was not said to be damaged: {err}"
    );
    b.finish()
}

#[test]
fn a_daemon_that_starts_on_a_full_disk_answers_and_keeps_its_runs() -> anyhow::Result<()> {
    let b = Bosun::new("storage_full_start");
    let disk = Tmpfs::mount(&b.home, "96m")?;
    let run = b.start(&[], &["sleep", "600"])?;
    b.wait_run(
        &run,
        "the run to be running",
        Duration::from_secs(30),
        |v| v["state"] == "running",
    )?;
    // Not a byte left, and bosund SIGKILLed: the next one starts on a disk where redb cannot
    // grow and no log line can be written.
    let filler = b.home.join("filler");
    let fill = disk.free()?;
    std::fs::write(&filler, vec![0u8; usize::try_from(fill)?]).ok();
    assert!(disk.free()? < 64 * 1024, "the disk is not full");
    b.kill_daemon()?;
    b.ok(&["ps"])?; // starts the next bosund
    let status = b.ok(&["daemon", "status"])?;
    assert!(status.contains("bosund is running"), "{status}");
    let v = b.wait_run(
        &run,
        "the run to be back under the new daemon",
        Duration::from_secs(30),
        |v| v["state"] == "running",
    )?;
    assert_eq!(v["state"], "running", "{v}");
    // It still answers everything it can, and what it cannot do it refuses at once.
    b.ok(&["ps", "--all"])?;
    let err = b.fails(&["run", "--", "true"])?;
    assert!(err.contains("MB free"), "{err}");

    // Space comes back: the run is stopped as usual, and recorded.
    std::fs::remove_file(&filler)?;
    b.ok(&["stop", &run, "--wait"])?;
    let v = b.show(&run)?;
    assert_eq!(v["state"], "exited", "{v}");
    assert_eq!(v["outcome"], "stopped", "{v}");
    b.finish()
}

#[test]
fn an_output_cap_keeps_exactly_that_much_and_the_program_goes_on() -> anyhow::Result<()> {
    let b = Bosun::new("storage_output_cap");
    let run = b.start(
        &["--max-output", "10k"],
        &["sh", "-c", "seq 1 100000; echo after-the-cap >&2; exit 3"],
    )?;
    let v = b.wait_ended(&run, Duration::from_secs(60))?;
    // The program was not held: it wrote everything and its own exit status is kept.
    assert_eq!(v["outcome"], "failed", "{v}");
    assert_eq!(v["exit"]["code"], 3, "{v}");
    let out = b.output(&["logs", &run])?;
    assert!(out.status.success());
    let mut want = Vec::new();
    for i in 1..=100_000 {
        want.extend_from_slice(format!("{i}\n").as_bytes());
    }
    want.truncate(10 * 1024);
    assert_eq!(out.stdout, want, "the log is not exactly the first 10 KiB");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the output cap of 10240 bytes is reached (--max-output)"),
        "the log does not say the cap was reached: {err}"
    );
    assert!(
        !err.contains("after-the-cap"),
        "output past the cap was kept"
    );

    // An agent's setting caps each of its runs the same way.
    let dir = b.scratch();
    let dir = dir.to_string_lossy();
    b.ok(&[
        "agent",
        "add",
        "capped",
        "--cli",
        "command",
        "--cwd",
        &dir,
        "--max-output",
        "1k",
        "--",
        "seq",
        "1",
        "100000",
    ])?;
    let shown = b.ok(&["agent", "show", "capped"])?;
    assert!(
        shown.contains("output cap") && shown.contains("1024 bytes"),
        "{shown}"
    );
    let v = b.json(&["agent", "run", "capped", "count"])?;
    let id = v["id"].as_str().context("no run id")?.to_string();
    let v = b.wait_ended(&id, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    let agent_out = b.output(&["logs", &id, "--stdout"])?;
    assert_eq!(
        agent_out.stdout.len(),
        1024,
        "the agent's run kept {} bytes",
        agent_out.stdout.len()
    );
    b.ok(&["agent", "edit", "capped", "--max-output", "none"])?;
    let shown = b.ok(&["agent", "show", "capped"])?;
    assert!(!shown.contains("output cap"), "{shown}");

    let e = b.fails(&["run", "--max-output", "0", "--", "true"])?;
    assert!(
        e.contains("an output cap must be more than zero bytes"),
        "{e}"
    );
    let e = b.fails(&["run", "--max-output", "1.5G", "--", "true"])?;
    assert!(
        e.contains("--max-output: `1.5G` is not a whole number"),
        "{e}"
    );
    b.finish()
}

#[test]
fn a_change_that_cannot_be_saved_is_refused_whole_and_bosund_goes_on() -> anyhow::Result<()> {
    let b = Bosun::new("storage_commit_full");
    Tmpfs::mount(&b.home, "96m")?;
    b.ok(&["ps"])?;
    let ui = Watcher::start(&b)?;
    let out = b.output_with_stdin(&["note", "write", "before.md"], "saved before\n")?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Not a byte left on the disk, and redb's file full too.
    let filler = fill(&b.home)?;
    let (refusal, saved) = exhaust_the_store(&b)?;
    assert!(
        refusal.contains("the state directory's disk is full")
            && refusal.contains("nothing of this change was made: free some space and try again"),
        "the refusal does not say why plainly: {refusal}"
    );
    // bosund goes on answering, says what is wrong, and the attached UI heard it.
    b.ok(&["ps", "--all"])?;
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status
            .contains("cannot write: changes cannot be saved: the state directory's disk is full"),
        "{status}"
    );
    // Filling the store refuses some notes and saves smaller ones after, so storage may have
    // become faulty and recovered several times: the UI's last word is the fault that holds now.
    let faulty = ui.wait("the fault to reach the UI", |s| {
        s.last()
            .is_some_and(|e| e.starts_with("fault: changes cannot be saved"))
    })?;
    // Nothing half-made: what was refused is not there, what was saved is.
    let err = b.fails(&["note", "show", "fill/64/9999.md"])?;
    assert!(!err.is_empty());
    for path in &saved {
        b.ok(&["note", "show", path])?;
    }
    assert!(
        b.ok(&["note", "show", "before.md"])?
            .contains("saved before")
    );

    // Space comes back: the fault ends by itself, the UI hears it, and changes are saved.
    std::fs::remove_file(&filler)?;
    let said = ui.wait("the recovery to reach the UI", |s| s.len() > faulty.len())?;
    assert!(
        said.first().is_some_and(|e| e.starts_with("fault: "))
            && said[faulty.len()..]
                .first()
                .is_some_and(|e| e.starts_with("recovered: changes cannot be saved")),
        "the events came out of order: {said:?}"
    );
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status.contains("storage") && status.contains("ok; the last storage fault ended at"),
        "{status}"
    );
    let out = b.output_with_stdin(&["note", "write", "after.md"], "saved after\n")?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = b.ok(&["note", "list"])?;
    assert_eq!(
        listed.matches(".md").count(),
        saved.len() + 2,
        "the notes are not exactly the ones saved: {listed}"
    );

    // And bosund starts again on that store, with everything saved.
    b.kill_daemon()?;
    assert!(b.ok(&["note", "show", "after.md"])?.contains("saved after"));
    assert_eq!(b.ok(&["note", "list"])?, listed);
    b.finish()
}

#[test]
fn an_approval_decided_on_a_full_disk_is_refused_whole_then_decided_after() -> anyhow::Result<()> {
    let b = Bosun::new("storage_approval_full");
    Tmpfs::mount(&b.home, "128m")?;
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:Bash:{"command":"echo approved-ran"};text:All done."#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    let run = b.run_agent("coder", "run a command")?;
    let a = b.wait_approval()?;
    let id = bosun_tests::short_id(&a);

    let filler = fill(&b.home)?;
    exhaust_the_store(&b)?;
    let out = b.output(&["approve", &id])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("the state directory's disk is full"),
        "approving on a full disk: {err} {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Kept whole: still waiting, the run still running, the command not run.
    let waiting = b.waiting_approvals()?;
    assert!(
        waiting
            .iter()
            .any(|w| w["short_id"] == a["short_id"] && w["state"] == "waiting"),
        "the approval is not waiting any more: {waiting:?}"
    );
    assert_eq!(b.show(&run)?["state"], "running");
    assert!(!fake.result_at(1).contains("approved-ran"));

    std::fs::remove_file(&filler)?;
    wait_for("changes to be saved again", Duration::from_secs(30), || {
        let status = b.ok(&["daemon", "status"])?;
        Ok((!status.contains("cannot write")).then_some(()))
    })?;
    let decided = b.json(&["approve", &id])?;
    assert_eq!(decided[0]["state"], "allowed", "{decided}");
    let v = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    assert!(fake.result_at(1).contains("approved-ran"));
    let ran = b.decisions(&run)?;
    assert_eq!(ran.len(), 1, "one decision, made once: {ran:?}");
    b.finish()
}

#[test]
fn a_runner_held_by_a_full_disk_while_bosund_is_down_loses_nothing() -> anyhow::Result<()> {
    let b = Bosun::new("storage_spool_restart");
    Tmpfs::mount(&b.home, "160m")?;
    b.ok(&["ps"])?;
    let scratch = b.scratch();
    let script = stress::generator(&b)?;
    let go = scratch.join("go");
    // About 100 MB: far more than the disk has room for once it is filled.
    let mut g = Gen::flood("spool", 1_000_000, 90);
    g.batch = 1000;
    g.hold_at = 1000;
    g.hold_file = Some(go.clone());
    let cmd = g.command(&script);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let run = b.start(&[], &cmd)?;
    wait_for("the first lines", Duration::from_secs(30), || {
        Ok((b.show(&run)?["last_seq"].as_u64().unwrap_or(0) > 0).then_some(()))
    })?;

    // The disk full, bosund SIGKILLed, and the program told to write: its runner must keep
    // everything (the run's log file cannot take it) and hold the program.
    let filler = fill(&b.home)?;
    b.kill_daemon()?;
    std::fs::write(&go, b"")?;
    let log = b.home.join("runs").join(&run).join("log");
    stops_growing(&log, || Ok(true))?;
    assert!(
        stress::runner_of(&b, &run).is_some(),
        "the runner died of the full disk while bosund was away"
    );

    // Space back, bosund back: the run reattaches and its log is whole.
    std::fs::remove_file(&filler)?;
    b.ok(&["ps"])?;
    let v = b.wait_ended(&run, Duration::from_secs(180))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    let stored = scratch.join("stored");
    stress::stored_log_to(&b, &run, &stored)?;
    stress::check_file(&stored, g.checker("the stored log"))?
        .whole()
        .map_err(anyhow::Error::msg)?;
    // The runner did hold the program (the log file could not take its output), and said so.
    let raw = std::fs::read(&log)?;
    let said = b"output is held: the run's log could not be written";
    assert!(
        raw.windows(said.len()).any(|w| w == said),
        "the runner never had to hold the program; the test proves nothing"
    );
    b.finish()
}

/// Issue 28: a run whose log could not be flushed to disk is named by `bosun show RUN` (and its
/// `--json`) as `bosun daemon status` names it: what, since when, what to do; once a flush works
/// again neither says it, and the log is whole.
///
/// The flush fails on a real disk: the runs' folder is an ext4 file system on a loop device
/// whose backing file lies on a small tmpfs that is full, so ext4 takes every write (it has
/// room) and the flush fails (no space) when the blocks reach the backing file, as on a
/// thin-provisioned disk that ran out. Freeing the tmpfs lets the next flush work.
#[test]
fn a_log_that_could_not_be_flushed_is_named_by_show_as_by_daemon_status() -> anyhow::Result<()> {
    let b = Bosun::new("storage_unflushed");
    let backing = b.scratch().join("backing");
    let disk = Tmpfs::mount(&backing, "16m")?;
    let image = backing.join("runs.img");
    std::fs::File::create(&image)?.set_len(256 * 1024 * 1024)?;
    let runs = b.home.join("runs");
    std::fs::create_dir_all(&runs)?;
    let sh = |cmd: &mut Command| -> anyhow::Result<()> {
        let out = cmd
            .output()
            .with_context(|| format!("could not run {cmd:?}"))?;
        if !out.status.success() {
            bail!(
                "this test mounts an ext4 image through a loop device and needs root (CI runs as root): {cmd:?} said {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    };
    sh(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-O", "^has_journal"])
        .arg(&image))?;
    // Without the background zeroing of inode tables, which would write to the full backing.
    sh(Command::new("mount")
        .args(["-o", "loop,errors=continue,noinit_itable"])
        .arg(&image)
        .arg(&runs))?;
    std::fs::remove_dir(runs.join("lost+found"))?;
    for dir in [&b.home, &runs] {
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    }
    let filler = fill(&backing)?;
    assert!(disk.free()? < 64 * 1024, "the backing is not full");

    let go = b.scratch().join("go");
    let script = format!(
        "seq 1 2000; while [ ! -e {} ]; do sleep 0.1; done; echo end",
        go.display()
    );
    let run = b.start(&[], &["sh", "-c", &script])?;
    let short = b.show(&run)?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let named = format!("the log of run {short} could not be flushed to disk (");
    let status = wait_for(
        "daemon status to name the run's log",
        Duration::from_secs(30),
        || {
            let s = b.ok(&["daemon", "status"])?;
            Ok(s.contains(&named).then_some(s))
        },
    )?;
    let v = b.show(&run)?;
    let said = v["log_unflushed"].as_str().unwrap_or_default().to_string();
    assert!(said.starts_with(&named), "bosun show --json: {v:#}");
    assert!(
        said.contains("is not safe until that works: free some space on the state directory's disk and it is flushed again by itself"),
        "what, and what to do: {said}"
    );
    assert!(
        status.contains(&said),
        "in the words of daemon status:\n{status}\n{said}"
    );
    let text = b.ok(&["show", &run])?;
    assert!(
        text.lines()
            .any(|l| l.starts_with("log ") && l.ends_with(&said)),
        "bosun show: {text}"
    );

    // Room again: the next flush works, and neither says it any more.
    std::fs::remove_file(&filler)?;
    b.wait_run(
        &run,
        "the log to be flushed again",
        Duration::from_secs(30),
        |v| v.get("log_unflushed").is_none(),
    )?;
    assert!(!b.ok(&["show", &run])?.contains("could not be flushed"));
    let status = b.ok(&["daemon", "status"])?;
    assert!(
        status.contains("ok; the last storage fault ended at"),
        "{status}"
    );
    std::fs::write(&go, b"")?;
    let v = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    let want: String = (1..=2000).map(|i| format!("{i}\n")).collect::<String>() + "end\n";
    assert_eq!(String::from_utf8_lossy(&b.logs(&run)?), want);
    b.finish()
}

/// The state directory bind-mounted on itself and made read-only, as a file system that turns
/// read-only under bosund.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn make(dir: &Path) -> anyhow::Result<Self> {
        let mount = |args: &[&str]| -> anyhow::Result<Result<(), String>> {
            let out = Command::new("mount").args(args).arg(dir).output()?;
            Ok(if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
            })
        };
        let d = dir.display().to_string();
        // One command, so nothing can open a file for writing through the new mount between the
        // bind and the read-only remount (util-linux does both at once for `--bind -o ro`).
        if mount(&["--bind", "-o", "ro", &d])?.is_ok() {
            return Ok(Self(dir.to_path_buf()));
        }
        if let Err(e) = mount(&["--bind", &d])? {
            bail!(
                "this test makes the state directory read-only with a bind mount and needs root (CI runs as root): mount --bind said {e}"
            );
        }
        let ro = Self(dir.to_path_buf());
        // The bind mount is busy while a file is being opened for writing through it; a moment
        // later it is not.
        let mut last = String::new();
        for _ in 0..50 {
            match mount(&["-o", "remount,bind,ro"])? {
                Ok(()) => return Ok(ro),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("could not make the state directory read-only: mount -o remount,bind,ro said {last}")
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_state_directory_that_turns_read_only_refuses_new_runs_up_front_and_goes_on_after()
-> anyhow::Result<()> {
    let b = Bosun::new("storage_read_only");
    // The state directory is a mount of its own, so that it alone turns read-only.
    Tmpfs::mount(&b.home, "160m")?;
    // A run that writes on until it is told to end (the file is outside the state directory).
    let end = b.scratch().join("end");
    let script = format!(
        "i=0; while [ ! -e {} ]; do i=$((i+1)); echo line $i; sleep 0.05; done; echo last",
        end.display()
    );
    let before = b.start(&[], &["sh", "-c", &script])?;
    b.wait_run(
        &before,
        "the run to be running",
        Duration::from_secs(30),
        |v| v["state"] == "running",
    )?;
    let ro = ReadOnly::make(&b.home)?;

    // bosund answers; a new run, which needs files of its own, is refused up front with the
    // reason, and nothing of it is recorded; the run that was going on goes on (its files are
    // open).
    let ids = || -> anyhow::Result<Vec<String>> {
        Ok(b.json(&["ps", "--all"])?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["id"].as_str().map(str::to_string))
            .collect())
    };
    let runs_before = ids()?;
    let e = b.fails(&["run", "--", "echo", "hi"])?;
    assert!(
        e.contains("is on a read-only file system, where bosun cannot keep a new run's folder and log; the run was not started"),
        "{e}"
    );
    assert_eq!(ids()?, runs_before, "nothing was recorded");
    assert_eq!(b.show(&before)?["state"], "running");
    b.ok(&["daemon", "status"])?;

    // Writable again: the run that was going on has all of its output, and new runs work.
    drop(ro);
    std::fs::write(&end, b"")?;
    let v = b.wait_ended(&before, Duration::from_secs(60))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    let log = String::from_utf8_lossy(&b.logs(&before)?).into_owned();
    let n = log.lines().count().saturating_sub(1);
    let want: String = (1..=n).map(|i| format!("line {i}\n")).collect::<String>() + "last\n";
    assert!(n >= 1, "{log}");
    assert_eq!(log, want);
    let after = b.start(&[], &["echo", "after"])?;
    let v = b.wait_ended(&after, Duration::from_secs(30))?;
    assert_eq!(v["outcome"], "succeeded", "{v}");
    b.finish()
}

/// What a store refused as damaged must look like to the person, from `bosun` (which started
/// bosund) and from `bosun daemon status`: damaged, where, and what to do; never a bare exit
/// status; and bosund is not left running.
fn assert_refused_as_damaged(b: &Bosun, before: &[u8]) -> anyhow::Result<()> {
    let db = b.home.join("bosun.redb");
    let err = b.fails(&["ps"])?;
    let path = db.display().to_string();
    for want in [
        format!("bosun's store {path} is damaged ("),
        "bosund does not start on it, and has left it untouched".to_string(),
        "Restore it from a backup, or move it aside to start afresh".to_string(),
        format!("mv {path} {path}.damaged"),
    ] {
        assert!(err.contains(&want), "missing {want:?} in: {err}");
    }
    assert!(!err.contains("exit status"), "{err}");
    assert!(b.daemon_pid().is_none(), "bosund did not start");
    assert_eq!(std::fs::read(&db)?, before, "the store was left untouched");
    let out = b.output(&["daemon", "status"])?;
    assert_eq!(out.status.code(), Some(3));
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("bosund is not running"), "{status}");
    assert!(
        status.contains(&format!("bosun's store {path} is damaged")),
        "{status}"
    );
    assert!(status.contains("move it aside to start afresh"), "{status}");
    let log = std::fs::read_to_string(b.home.join("bosund.log")).unwrap_or_default();
    assert!(
        !log.contains("a panic was caught"),
        "bosund panicked: {log}"
    );
    Ok(())
}

/// A store with something in it, bosund stopped; its bytes.
fn a_store_with_records(b: &Bosun) -> anyhow::Result<Vec<u8>> {
    let cwd = b.scratch().display().to_string();
    for i in 0..20 {
        b.ok(&[
            "agent",
            "add",
            &format!("agent-{i}"),
            "--cli",
            "claude",
            "--cwd",
            &cwd,
        ])?;
    }
    let run = b.start(&[], &["echo", "hello"])?;
    b.wait_ended(&run, Duration::from_secs(30))?;
    b.ok(&["daemon", "stop"])?;
    Ok(std::fs::read(b.home.join("bosun.redb"))?)
}

/// Issue 25: a 0-byte `bosun.redb` became an empty store without a word, and bosund wrote over
/// it (every agent, server, card and run gone).
#[test]
fn an_empty_store_file_is_refused_as_damaged_and_left_as_it_is() -> anyhow::Result<()> {
    let b = Bosun::new("store_empty");
    std::fs::create_dir_all(&b.home)?;
    std::fs::set_permissions(&b.home, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    std::fs::write(b.home.join("bosun.redb"), b"")?;
    assert_refused_as_damaged(&b, b"")?;
    let err = b.fails(&["ps"])?;
    assert!(err.contains("it is empty: 0 bytes"), "{err}");
    // Moved aside, bosund starts afresh.
    std::fs::rename(b.home.join("bosun.redb"), b.home.join("bosun.redb.damaged"))?;
    b.ok(&["ps"])?;
    b.finish()
}

/// Issue 25: a damaged page made bosund panic at start (redb's "entered unreachable code"), and
/// the person saw only `bosund exited at once (exit status: 101)`. A store cut short the same.
#[test]
fn a_damaged_or_cut_store_file_is_refused_without_a_panic_and_left_as_it_is() -> anyhow::Result<()>
{
    let b = Bosun::new("store_damaged");
    let whole = a_store_with_records(&b)?;
    let db = b.home.join("bosun.redb");
    // Pages in the middle of the file overwritten (a disk that failed, a bad copy).
    let mut damaged = whole.clone();
    let middle = damaged.len() / 2;
    let end = (middle + 64 * 1024).min(damaged.len());
    for (i, byte) in damaged[middle..end].iter_mut().enumerate() {
        *byte = (i as u8).wrapping_mul(37) ^ 0xa5;
    }
    std::fs::write(&db, &damaged)?;
    assert_refused_as_damaged(&b, &damaged)?;
    // Cut short.
    let cut = &whole[..whole.len() / 3];
    std::fs::write(&db, cut)?;
    assert_refused_as_damaged(&b, cut)?;
    // The whole file back: everything is there.
    std::fs::write(&db, &whole)?;
    let agents = b.json(&["agent", "list"])?;
    assert_eq!(agents.as_array().map(Vec::len), Some(20), "{agents}");
    b.finish()
}

/// `bosun` run as `nobody` (uid 65534) on this test's state directory, given to that user: as
/// root, which the tests run as, a file's mode stops no one, so the person without rights must
/// be another user. Its output, whatever its status.
fn as_nobody(b: &Bosun, args: &[&str]) -> anyhow::Result<std::process::Output> {
    let inner = b.cmd(args);
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(inner.get_program())
        .args(inner.get_args())
        .env("HOME", b.scratch())
        .stdin(std::process::Stdio::null());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    Ok(c.output()?)
}

/// Gives every file of `dir` to `uid`.
fn chown_all(dir: &Path, uid: u32) -> anyhow::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(uid))?;
        if p.is_dir() {
            stack.extend(
                std::fs::read_dir(&p)?
                    .filter_map(|e| e.ok())
                    .map(|e| e.path()),
            );
        }
    }
    Ok(())
}

/// Issue 44: a store made read-only, or another user's, was refused with "I/O error: Permission
/// denied (os error 13)", said twice in one line, without the file or what to do. Now it is
/// said once, with the file, its owner and mode, and what to do.
#[test]
fn a_read_only_or_foreign_store_is_refused_once_with_its_owner_and_what_to_do() -> anyhow::Result<()>
{
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::getuid().is_root() {
        // Without root there is no other user to be, nor a file to give away.
        return Ok(());
    }
    let b = Bosun::new("store_no_access");
    b.ok(&["ps"])?;
    b.ok(&["daemon", "stop"])?;
    let db = b.home.join("bosun.redb");
    let path = db.display().to_string();
    let root = b.home.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
    chown_all(&b.home, 65534)?;
    chown_all(&b.scratch(), 65534)?;

    // Its own file, made read-only.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o400))?;
    let out = as_nobody(&b, &["ps"])?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{err}");
    let want = format!(
        "bosun's store {path} is not writable by you (owner uid 65534, mode 0400), and bosund must read and write it; give it back with `chmod u+rw {path}`, or use another state directory (set BOSUN_HOME)"
    );
    assert!(err.contains(&want), "{err}");
    assert_eq!(
        err.matches("is not writable by you").count(),
        1,
        "said once: {err}"
    );
    assert!(!err.contains("os error 13"), "{err}");

    // Another user's file.
    std::os::unix::fs::lchown(&db, Some(0), Some(0))?;
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600))?;
    let out = as_nobody(&b, &["ps"])?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{err}");
    let want = format!(
        "bosun's store {path} belongs to another user (owner uid 0, mode 0600; you are uid 65534), and bosund must read and write it; run bosun as its owner, give it to yourself (such as `sudo chown 65534 {path}`), or use another state directory (set BOSUN_HOME)"
    );
    assert!(err.contains(&want), "{err}");
    assert_eq!(
        err.matches("belongs to another user").count(),
        1,
        "said once: {err}"
    );
    let status = String::from_utf8_lossy(&as_nobody(&b, &["daemon", "status"])?.stdout).to_string();
    assert!(status.contains("belongs to another user"), "{status}");

    // Given back, bosund starts on it.
    chown_all(&b.home, 0)?;
    chown_all(&b.scratch(), 0)?;
    b.ok(&["ps"])?;
    b.finish()
}
