//! bosund as a systemd user service: `bosun daemon install` writes a unit that systemd accepts
//! (`systemd-analyze verify`, where it is installed) and that keeps runners alive across a
//! restart of bosund (`KillMode=process`); without a user manager it says what to run, and it
//! always says how runs outlive the session. `bosun daemon uninstall` removes it. `bosun daemon
//! status` says how bosund was started: on demand by bosun, by systemd, or by hand.
//!
//! No test here talks to a real user manager: bosun runs with a PATH that has no systemctl, so
//! a developer's own systemd is never touched, and this machine (a container) has none running.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use bosun_tests::{Bosun, bin_dir, path_without, wait_for};

#[test]
fn daemon_install_writes_a_unit_systemd_accepts_and_uninstall_removes_it() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_install");
    let config = b.scratch().join("config");
    let path = path_without(&b.scratch().join("bin"), &["systemctl", "loginctl"], &[])?;
    let b = b
        .with_env("XDG_CONFIG_HOME", &config.display().to_string())
        .with_env("PATH", &path);
    let said = b.ok(&["daemon", "install", "--user"])?;
    let unit_path = config.join("systemd/user/bosund.service");
    assert!(
        said.starts_with(&format!("wrote {} (bosund: ", unit_path.display())),
        "{said}"
    );
    // No user manager: what to run instead, and how runs outlive the session.
    assert!(
        said.contains(
            "  systemctl --user daemon-reload\n  systemctl --user enable --now bosund.service\n"
        ),
        "{said}"
    );
    assert!(said.contains("loginctl enable-linger "), "{said}");

    let unit = std::fs::read_to_string(&unit_path)?;
    let lines: Vec<&str> = unit.lines().collect();
    for want in [
        format!("ExecStart={}", bin_dir().join("bosund").display()),
        format!("Environment=\"BOSUN_HOME={}\"", b.home.display()),
        format!("Environment=\"PATH={path}\""),
        "Restart=on-failure".to_string(),
        // Runners must outlive a restart of bosund: systemd signals bosund alone.
        "KillMode=process".to_string(),
        "WantedBy=default.target".to_string(),
    ] {
        assert!(lines.contains(&want.as_str()), "{want} in\n{unit}");
    }
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("KillMode=") && *l != "KillMode=process"),
        "{unit}"
    );
    // systemd's own check, where systemd is installed (its system mode: a container has no
    // user manager for --user; the unit's keys are the same).
    if Path::new("/usr/bin/systemd-analyze").exists() {
        let out = Command::new("systemd-analyze")
            .arg("verify")
            .arg(&unit_path)
            .output()?;
        assert!(
            out.status.success(),
            "systemd-analyze verify: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // --json says the same for programs.
    let v = b.json(&["daemon", "install"])?;
    assert_eq!(v["unit"], unit_path.display().to_string());
    assert_eq!(v["ran"], serde_json::json!([]));
    assert_eq!(
        v["to_run"],
        serde_json::json!([
            "systemctl --user daemon-reload",
            "systemctl --user enable --now bosund.service"
        ])
    );

    let said = b.ok(&["daemon", "uninstall"])?;
    assert!(
        said.starts_with(&format!("removed {}", unit_path.display())),
        "{said}"
    );
    assert!(!unit_path.exists());
    let err = b.fails(&["daemon", "uninstall"])?;
    assert!(
        err.contains("bosund is not installed as a service for this user"),
        "{err}"
    );
    b.finish()
}

/// Starts `bosund` by itself (not through bosun), with `extra` in its environment, and waits
/// until it answers.
fn start_bosund(b: &Bosun, extra: &[(&str, &str)]) -> anyhow::Result<std::process::Child> {
    let child = Command::new(bin_dir().join("bosund"))
        .env("BOSUN_HOME", &b.home)
        .env("BOSUN_RUNNER_BIN", bin_dir().join("bosun-runner"))
        .env("BOSUN_FAKE_KEYCHAIN", b.keychain_file())
        .env_remove("INVOCATION_ID")
        .envs(extra.iter().copied())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("could not start bosund")?;
    wait_for("bosund to answer", Duration::from_secs(15), || {
        Ok(b.output(&["daemon", "status"])?
            .status
            .success()
            .then_some(()))
    })?;
    Ok(child)
}

/// Stops the daemon and reaps the child that was it.
fn stop(b: &Bosun, mut child: std::process::Child) -> anyhow::Result<()> {
    b.ok(&["daemon", "stop"])?;
    child.wait()?;
    Ok(())
}

#[test]
fn daemon_status_says_how_bosund_was_started() -> anyhow::Result<()> {
    let b = Bosun::new("daemon_started_by");

    // On demand: any bosun command starts it.
    b.ok(&["ps"])?;
    let v = b.json(&["daemon", "status"])?;
    assert_eq!(v["started_by"], serde_json::json!({"by": "bosun"}));
    let said = b.ok(&["daemon", "status"])?;
    assert!(
        said.contains("\nstarted       on demand by bosun\n"),
        "{said}"
    );
    b.ok(&["daemon", "stop"])?;
    wait_for("bosund to stop", Duration::from_secs(15), || {
        Ok(b.daemon_pid().is_none().then_some(()))
    })?;

    // By systemd, which gives every service an INVOCATION_ID.
    let child = start_bosund(&b, &[("INVOCATION_ID", "0123456789abcdef0123456789abcdef")])?;
    let v = b.json(&["daemon", "status"])?;
    assert_eq!(v["started_by"]["by"], "systemd", "{v:#}");
    assert!(
        b.ok(&["daemon", "status"])?
            .contains("\nstarted       by systemd"),
        "{v:#}"
    );
    stop(&b, child)?;

    // By hand.
    let child = start_bosund(&b, &[])?;
    let v = b.json(&["daemon", "status"])?;
    assert_eq!(v["started_by"], serde_json::json!({"by": "other"}));
    stop(&b, child)?;
    b.finish()
}
