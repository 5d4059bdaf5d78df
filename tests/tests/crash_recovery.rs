//! Crashes: bosund SIGKILLed while runs are live (they go on, and every log is whole after the
//! restart), and runners SIGKILLed (their runs become lost and what they left is ended).

use std::time::Duration;

use bosun_tests::{Bosun, alive, lines, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const T: Duration = Duration::from_secs(30);

fn numbered(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("line {i}")).collect()
}

fn runner_pids(b: &Bosun) -> Vec<i32> {
    b.processes()
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("bosun-runner"))
        .map(|(pid, _)| pid)
        .collect()
}

#[test]
fn a_daemon_killed_mid_run_loses_no_line_and_duplicates_none() -> anyhow::Result<()> {
    let b = Bosun::new("crash_daemon");
    let writer = "i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo \"line $i\"; sleep 0.005; done";
    let id = b.start(&[], &["sh", "-c", writer])?;
    b.wait_run(&id, "output to start", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 3
    })?;
    b.kill_daemon()?;
    // The run goes on without the daemon.
    let program = b
        .processes()
        .into_iter()
        .find(|(_, c)| c.starts_with("sh -c"));
    assert!(
        program.is_some(),
        "the program kept running while bosund was down"
    );
    std::thread::sleep(Duration::from_millis(300));

    // Any command brings the daemon back; it reattaches the runner.
    let run = b.show(&id)?;
    assert!(
        run["state"] == "running" || run["state"] == "exited",
        "{run}"
    );
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "succeeded", "{run}");
    assert_eq!(lines(&b.logs(&id)?), numbered(600));
    b.finish()
}

#[test]
fn output_written_while_the_daemon_is_down_goes_into_the_log_and_is_delivered_whole()
-> anyhow::Result<()> {
    let b = Bosun::new("crash_spool");
    let go = b.scratch().join("go");
    // Waits for the test's signal, then writes 40 MB of numbered lines at once.
    let script = format!(
        "echo waiting; while [ ! -e {go} ]; do sleep 0.02; done; \
         awk 'BEGIN {{ for (i = 1; i <= 400000; i++) printf \"line %d %090d\\n\", i, 0 }}'; sleep 1",
        go = go.display()
    );
    let id = b.start(&[], &["sh", "-c", &script])?;
    b.wait_run(&id, "the first line", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 1
    })?;
    b.kill_daemon()?;
    std::fs::write(&go, "")?;
    // With bosund gone the runner goes on writing the run's log file itself: the program never
    // waits for the daemon.
    let log_file = b.home.join("runs").join(&id).join("log");
    wait_for("the runner to write the output into the log", T, || {
        Ok(std::fs::metadata(&log_file)
            .ok()
            .filter(|m| m.len() > 40_000_000)
            .map(|_| ()))
    })?;
    let run = b.wait_ended(&id, Duration::from_secs(60))?;
    assert_eq!(run["outcome"], "succeeded");
    let log = lines(&b.logs(&id)?);
    assert_eq!(log.len(), 400_001);
    assert_eq!(log[0], "waiting");
    for (i, line) in log[1..].iter().enumerate() {
        let want = format!("line {} {:090}", i + 1, 0);
        assert_eq!(line, &want, "line {} of the log", i + 2);
    }
    let spool = b.home.join("runs").join(&id).join("spool");
    assert!(
        !spool.exists(),
        "a runner on bosund's machine needs no spool"
    );
    b.finish()
}

#[test]
fn a_runner_killed_while_the_daemon_is_up_makes_its_run_lost_and_ends_its_program()
-> anyhow::Result<()> {
    let b = Bosun::new("crash_runner");
    let id = b.start(&[], &["sh", "-c", "echo up; sleep 60"])?;
    let run = b.wait_run(&id, "the program to run", T, |v| v["pid"].is_i64())?;
    let program = run["pid"].as_i64().unwrap_or(0) as i32;
    // The line is in the log before the runner dies (what a killed runner had not read yet is
    // lost with it, as the pipe is).
    wait_for("the first line in the log", T, || {
        Ok((lines(&b.logs(&id)?) == ["up"]).then_some(()))
    })?;
    let runners = runner_pids(&b);
    assert_eq!(runners.len(), 1, "{runners:?}");
    kill(Pid::from_raw(runners[0]), Signal::SIGKILL)?;
    let run = b.wait_run(&id, "the run to be lost", Duration::from_secs(5), |v| {
        v["state"] == "exited"
    })?;
    assert_eq!(run["outcome"], "lost");
    assert_eq!(run["exit"]["reason"], "the runner died (killed by SIGKILL)");
    assert!(!alive(program), "the program of a lost run is ended");
    assert_eq!(lines(&b.logs(&id)?), ["up"]);
    b.finish()
}

#[test]
fn a_runner_that_died_while_the_daemon_was_down_is_found_lost_at_restart() -> anyhow::Result<()> {
    let b = Bosun::new("crash_both");
    let pidfile = b.scratch().join("grandchild.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {p}; exec sleep 300' & echo up; sleep 300",
        p = pidfile.display()
    );
    let id = b.start(&[], &["sh", "-c", &script])?;
    let run = b.wait_run(&id, "the program to run", T, |v| v["pid"].is_i64())?;
    let program = run["pid"].as_i64().unwrap_or(0) as i32;
    let grandchild: i32 = wait_for("the grandchild's pid", T, || {
        Ok(std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok()))
    })?;
    b.kill_daemon()?;
    for r in runner_pids(&b) {
        kill(Pid::from_raw(r), Signal::SIGKILL)?;
    }
    let run = b.wait_ended(&id, T)?;
    assert_eq!(run["outcome"], "lost");
    assert_eq!(run["exit"]["reason"], "runner lost after daemon restart");
    assert!(!alive(program), "the program is ended");
    assert!(
        !alive(grandchild),
        "the escaped grandchild is ended too (found by the run marker)"
    );
    b.finish()
}

#[test]
fn a_runner_whose_state_directory_is_deleted_ends_its_program_and_exits() -> anyhow::Result<()> {
    let b = Bosun::new("crash_dir_gone");
    let id = b.start(&[], &["sh", "-c", "echo up; sleep 300"])?;
    let run = b.wait_run(&id, "the program to run", T, |v| v["pid"].is_i64())?;
    let program = run["pid"].as_i64().unwrap_or(0) as i32;
    let runners = runner_pids(&b);
    b.kill_daemon()?;
    std::fs::remove_dir_all(&b.home)?;
    wait_for("the program to be ended", T, || {
        Ok((!alive(program)).then_some(()))
    })?;
    for r in runners {
        wait_for("the runner to exit", T, || Ok((!alive(r)).then_some(())))?;
    }
    b.finish()
}
