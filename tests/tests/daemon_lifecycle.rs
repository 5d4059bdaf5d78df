//! The daemon itself: one per state directory, private files, started by `bosun` when needed,
//! and its shutdown by `bosun daemon stop` or by signals.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use bosun_tests::{Bosun, alive, bin_dir, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const T: Duration = Duration::from_secs(30);

#[test]
fn a_second_daemon_on_the_same_directory_is_refused_clearly() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_second");
    b.ok(&["ps"])?;
    let first = b.daemon_pid().expect("bosun started bosund");
    let out = Command::new(bin_dir().join("bosund"))
        .env("BOSUN_HOME", &b.home)
        .env("BOSUN_RUNNER_BIN", bin_dir().join("bosun-runner"))
        .output()?;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "another bosund (pid {first}) is already running on {}",
            b.home.display()
        )),
        "{err}"
    );
    assert!(err.contains("bosun daemon stop"), "{err}");
    // The first one goes on serving.
    assert_eq!(b.daemon_pid(), Some(first));
    b.ok(&["ps"])?;
    b.finish()
}

#[test]
fn the_state_directory_and_socket_are_private() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_private");
    let created = b.scratch().join("made-by-the-program");
    let script = format!("echo out; touch {}", created.display());
    let id = b.start(&[], &["sh", "-c", &script])?;
    b.wait_ended(&id, T)?;
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&b.home)?, 0o700);
    assert_eq!(mode(&b.home.join("bosun.redb"))?, 0o600);
    assert_eq!(mode(&b.home.join("runs").join(&id).join("log"))?, 0o600);
    // The program itself creates files with the mask of whoever started the run, not bosund's.
    let caller_mask = {
        use nix::sys::stat::{Mode, umask};
        let old = umask(Mode::from_bits_truncate(0o022));
        umask(old);
        old.bits()
    };
    assert_eq!(mode(&created)?, 0o666 & !caller_mask);
    assert_eq!(mode(&b.home.join("bosund.sock"))?, 0o600);
    assert_eq!(mode(&b.home.join("runs").join(&id))?, 0o700);
    assert_eq!(mode(&b.home.join("bosund.log"))?, 0o600);
    assert!(b.home.join("bosun.redb").is_file());
    b.finish()
}

#[test]
fn status_says_whether_the_daemon_runs() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_status");
    let out = b.output(&["daemon", "status"])?;
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bosund is not running"));
    assert!(b.daemon_pid().is_none(), "status does not start the daemon");
    let id = b.start(&[], &["sleep", "30"])?;
    let status = b.json(&["daemon", "status"])?;
    assert_eq!(status["running"], true);
    assert_eq!(status["live_runs"], 1);
    assert_eq!(status["pid"].as_i64().map(|p| p as i32), b.daemon_pid());
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, T)?;
    b.finish()
}

#[test]
fn daemon_stop_stops_every_run_by_its_ladder_first() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_stop");
    let a = b.start(
        &["--stop-grace", "1s"],
        &["sh", "-c", "trap '' INT; echo a; sleep 60"],
    )?;
    let c = b.start(&[], &["sh", "-c", "echo c; sleep 60"])?;
    for id in [&a, &c] {
        b.wait_run(id, "output", T, |v| {
            v["last_seq"].as_u64().unwrap_or(0) >= 1
        })?;
    }
    let pid = b.daemon_pid().expect("running");
    assert_eq!(b.ok(&["daemon", "stop"])?.trim(), "bosund stopped");
    assert!(!alive(pid));
    assert!(
        b.processes().is_empty(),
        "nothing is left: {:?}",
        b.processes()
    );
    // The runs are recorded as stopped, with why.
    for (id, signal) in [(&a, 15), (&c, 2)] {
        let run = b.show(id)?;
        assert_eq!(run["outcome"], "stopped", "{run}");
        assert_eq!(run["exit"]["reason"], "bosund was shut down");
        assert_eq!(run["exit"]["signal"], signal, "{run}");
    }
    b.finish()
}

#[test]
fn sigterm_stops_runs_by_the_ladder_and_a_second_one_kills_them_at_once() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_signals");
    // This program would take 60 s to end by its ladder.
    let id = b.start(
        &["--stop-grace", "30s"],
        &["sh", "-c", "trap '' INT TERM; echo stubborn; sleep 120"],
    )?;
    b.wait_run(&id, "output", T, |v| {
        v["last_seq"].as_u64().unwrap_or(0) >= 1
    })?;
    let pid = b.daemon_pid().expect("running");
    let t0 = Instant::now();
    kill(Pid::from_raw(pid), Signal::SIGTERM)?;
    wait_for("the stop to be recorded", T, || {
        Ok((b.processes().iter().any(|(p, _)| *p == pid)).then_some(()))
    })?;
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid), "bosund waits for the ladder after one SIGTERM");
    kill(Pid::from_raw(pid), Signal::SIGTERM)?;
    wait_for("bosund to exit", Duration::from_secs(10), || {
        Ok((!alive(pid)).then_some(()))
    })?;
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "the second signal did not wait for the ladder"
    );
    wait_for("every process to end", Duration::from_secs(5), || {
        Ok(b.processes().is_empty().then_some(()))
    })?;
    let run = b.show(&id)?;
    assert_eq!(run["outcome"], "stopped", "{run}");
    assert_eq!(run["exit"]["signal"], 9, "{run}");
    b.finish()
}

/// Issue 25: every client of bosund's socket closes its connection when it is done with it. A
/// long sequence of command-line calls, log reads and runs (each run's runner holds a connection
/// while the run lives) leaves bosund's open files where they were, within a small constant.
#[test]
fn the_command_line_and_runners_leave_bosunds_open_files_flat() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_open_files");
    let open_files = |pid: i32| -> anyhow::Result<usize> {
        Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
    };
    let work = |n: usize| -> anyhow::Result<()> {
        for i in 0..n {
            let run = b.start(&[], &["echo", "hello"])?;
            b.wait_ended(&run, T)?;
            b.logs(&run)?;
            b.show(&run)?;
            if i % 4 == 0 {
                b.ok(&["daemon", "status"])?;
            }
        }
        Ok(())
    };
    work(3)?;
    let daemon = b.daemon_pid().expect("bosun started bosund");
    let before = open_files(daemon)?;
    work(60)?;
    let after = wait_for("bosund's open files to settle", T, || {
        let n = open_files(daemon)?;
        Ok((n <= before + 8).then_some(n))
    })?;
    eprintln!("bosund's open files: {before} → {after}");
    b.finish()
}
