//! Stopping: the ladder SIGINT → SIGTERM → SIGKILL to the whole group, the time cap, and the
//! sweep that ends descendants which escaped into sessions of their own.

use std::time::{Duration, Instant};

use bosun_tests::{Bosun, alive, wait_for};

const T: Duration = Duration::from_secs(30);

fn started(b: &Bosun, id: &str) -> anyhow::Result<()> {
    b.wait_run(id, "the program's first line", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 1
    })?;
    Ok(())
}

#[test]
fn a_program_that_ignores_sigint_is_ended_by_sigterm() -> anyhow::Result<()> {
    let b = Bosun::new("stop_ignores_int");
    let id = b.start(
        &["--stop-grace", "1s"],
        &["sh", "-c", "trap '' INT; echo ready; sleep 60"],
    )?;
    started(&b, &id)?;
    let t0 = Instant::now();
    let stopping = b.json(&["stop", &id])?;
    assert_eq!(stopping["state"], "stopping");
    assert_eq!(stopping["stop_reason"], "stopped by the person");
    let run = b.wait_ended(&id, T)?;
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "SIGTERM came only after the grace"
    );
    assert_eq!(run["outcome"], "stopped");
    assert_eq!(run["exit"]["reason"], "stopped by the person");
    assert_eq!(run["exit"]["signal"], 15, "{run}");
    b.finish()
}

#[test]
fn a_program_that_ignores_sigint_and_sigterm_is_killed() -> anyhow::Result<()> {
    let b = Bosun::new("stop_ignores_term");
    let id = b.start(
        &["--stop-grace", "1s"],
        &["sh", "-c", "trap '' INT TERM; echo ready; sleep 60"],
    )?;
    started(&b, &id)?;
    let t0 = Instant::now();
    let out = b.ok(&["stop", "--wait", &id])?;
    assert!(out.contains("stopped (stopped by the person)"), "{out}");
    assert!(
        t0.elapsed() >= Duration::from_millis(1900),
        "SIGKILL came after both graces"
    );
    let run = b.show(&id)?;
    assert_eq!(run["exit"]["signal"], 9, "{run}");
    b.finish()
}

#[test]
fn a_program_that_handles_sigint_ends_cleanly_and_its_output_is_kept() -> anyhow::Result<()> {
    let b = Bosun::new("stop_clean");
    let id = b.start(
        &[],
        &[
            "sh",
            "-c",
            "trap 'echo got-int; exit 0' INT; echo ready; while :; do sleep 0.1; done",
        ],
    )?;
    started(&b, &id)?;
    b.ok(&["stop", &id])?;
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "stopped");
    assert_eq!(run["exit"]["code"], 0);
    assert_eq!(String::from_utf8(b.logs(&id)?)?, "ready\ngot-int\n");
    let err = b.fails(&["stop", &id])?;
    assert!(err.contains("has already ended (stopped)"), "{err}");
    b.finish()
}

#[test]
fn a_grandchild_that_escaped_into_its_own_session_is_ended_on_stop() -> anyhow::Result<()> {
    let b = Bosun::new("stop_escaped");
    let pidfile = b.scratch().join("escaped.pid");
    let script = format!(
        "setsid sh -c 'trap \"\" INT TERM HUP; echo $$ > {p}; exec sleep 300' & echo ready; sleep 300",
        p = pidfile.display()
    );
    let id = b.start(&["--stop-grace", "1s"], &["sh", "-c", &script])?;
    started(&b, &id)?;
    let escaped: i32 = wait_for("the escaped pid", T, || {
        Ok(std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok()))
    })?;
    let sid = bosun_shared::process::stat(escaped).map(|s| s.sid);
    assert_eq!(
        sid,
        Some(escaped),
        "the grandchild leads a session of its own"
    );
    b.ok(&["stop", "--wait", &id])?;
    assert!(
        !alive(escaped),
        "the escaped grandchild {escaped} survived the stop"
    );
    b.finish()
}

#[test]
fn what_a_program_leaves_running_is_ended_when_it_exits_by_itself() -> anyhow::Result<()> {
    let b = Bosun::new("exit_leftovers");
    let pidfile = b.scratch().join("daemonized.pid");
    // A double fork into a new session: the classic daemon, orphaned at once.
    let script = format!(
        "(setsid sh -c 'echo $$ > {p}; exec sleep 300' &) ; sleep 0.3; echo bye",
        p = pidfile.display()
    );
    let id = b.start(&[], &["sh", "-c", &script])?;
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "succeeded");
    let daemon: i32 = std::fs::read_to_string(&pidfile)?.trim().parse()?;
    wait_for("the leftover to be gone", Duration::from_secs(5), || {
        Ok((!alive(daemon)).then_some(()))
    })?;
    b.finish()
}

/// The runner ends what is left by its own tree (it is a child subreaper), not only by the run
/// marker: here a daemon in a session of its own keeps a child that cleared its environment, so
/// neither the run's group, nor its session, nor the marker names the child. It is the
/// runner's only once its parent is killed and it is handed to the runner.
#[test]
fn a_leftover_chain_without_the_marker_is_ended_when_the_program_exits() -> anyhow::Result<()> {
    let b = Bosun::new("exit_leftover_chain");
    let (parent_file, child_file) = (
        b.scratch().join("parent.pid"),
        b.scratch().join("child.pid"),
    );
    let env_file = b.scratch().join("child.env");
    let script = format!(
        "(setsid sh -c 'echo $$ > {p}; env -i sh -c \"env > {e}; echo \\$\\$ > {c}; exec sleep 300\" & exec sleep 300' &); \
         while [ ! -s {c} ]; do sleep 0.05; done; echo bye",
        p = parent_file.display(),
        c = child_file.display(),
        e = env_file.display()
    );
    let id = b.start(&[], &["sh", "-c", &script])?;
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "succeeded");
    let parent: i32 = std::fs::read_to_string(&parent_file)?.trim().parse()?;
    let child: i32 = std::fs::read_to_string(&child_file)?.trim().parse()?;
    let env = std::fs::read_to_string(&env_file)?;
    assert!(
        !env.contains(bosun_shared::RUN_MARKER_ENV),
        "the child was meant to run without the marker: {env}"
    );
    wait_for("both leftovers to be gone", Duration::from_secs(5), || {
        Ok((!alive(parent) && !alive(child)).then_some(()))
    })?;
    b.finish()
}

#[test]
fn the_time_cap_stops_the_run_by_its_ladder() -> anyhow::Result<()> {
    let b = Bosun::new("time_cap");
    let t0 = Instant::now();
    let id = b.start(
        &["--time-cap", "1s"],
        &["sh", "-c", "echo working; sleep 30"],
    )?;
    let run = b.wait_ended(&id, T)?;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_eq!(run["outcome"], "timed_out");
    assert_eq!(run["exit"]["reason"], "time cap 1s reached");
    assert_eq!(run["time_cap_ms"], 1000);
    b.finish()
}
