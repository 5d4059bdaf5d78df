//! `bosun doctor` against a machine where one thing at a time is broken: no keychain (the
//! session bus pointed nowhere), a coding CLI missing from `PATH`, a bad kubeconfig, a nearly
//! full disk (a small tmpfs, as root). Each time the right line fails with the right advice and
//! doctor exits 1 — or only warns, when nothing configured needs what is broken. And doctor
//! never starts bosund.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{Context, bail};
use bosun_tests::{Bosun, SecretService, node_path, path_without};
use serde_json::Value;

/// A Bosun whose doctor sees none of the person's own setup: a home of the test's own (no
/// ~/.kube/config) and no KUBECONFIG.
fn bosun(test: &str) -> Bosun {
    let b = Bosun::new(test).with_env("KUBECONFIG", "");
    let home = b.scratch().join("home");
    let _ = std::fs::create_dir_all(&home);
    b.with_env("HOME", &home.display().to_string())
}

/// `bosun doctor --json` (with `path` as its PATH when given): its exit code and report.
fn doctor(b: &Bosun, path: Option<&str>) -> anyhow::Result<(Option<i32>, Value)> {
    let mut cmd = b.cmd(&["doctor", "--json"]);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().context("could not run bosun doctor")?;
    let report: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "doctor --json printed no JSON: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    Ok((out.status.code(), report))
}

/// The check named `name` of a report.
fn line<'a>(report: &'a Value, name: &str) -> anyhow::Result<&'a Value> {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .with_context(|| format!("no check named {name} in {report:#}"))
}

/// The names of the checks that fail.
fn failing(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|c| c["status"] == "failing")
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn private_dir(p: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p)?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

#[test]
fn doctor_reports_every_check_in_json_and_does_not_start_bosund() -> anyhow::Result<()> {
    let b = bosun("doctor_json");
    let (code, report) = doctor(&b, None)?;
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
    let names: Vec<&str> = report["checks"]
        .as_array()
        .context("checks")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "state directory",
            "disk",
            "bosund",
            "prices",
            "keychain",
            "landlock",
            "namespaces",
            "claude",
            "codex",
            "gemini",
            "git",
            "gh",
            "slurm",
            "kubernetes"
        ]
    );
    for c in report["checks"].as_array().context("checks")? {
        let keys: Vec<&String> = c.as_object().context("a check")?.keys().collect();
        match c["status"].as_str() {
            // Ok says what was found and nothing to do; the others say the one thing to do.
            Some("ok") => assert_eq!(keys, ["name", "status", "found"], "{c}"),
            Some("warning" | "failing") => {
                assert_eq!(keys, ["name", "status", "found", "advice"], "{c}")
            }
            other => bail!("unknown status {other:?} in {c}"),
        }
    }
    assert!(
        line(&report, "bosund")?["found"]
            .as_str()
            .is_some_and(|f| f.starts_with("not running")),
        "{report:#}"
    );
    assert!(b.daemon_pid().is_none(), "doctor started bosund");
    assert!(
        !b.home.join("bosund.sock").exists(),
        "doctor started bosund"
    );
    assert!(
        line(&report, "keychain")?["found"]
            .as_str()
            .is_some_and(|f| f.contains("(BOSUN_FAKE_KEYCHAIN)")),
        "{report:#}"
    );

    // With bosund running, doctor asks it (and says so), and the words for people have a line
    // per check.
    b.ok(&["ps"])?;
    let (code, report) = doctor(&b, None)?;
    assert_eq!(code, Some(0), "{report:#}");
    assert!(
        line(&report, "bosund")?["found"]
            .as_str()
            .is_some_and(|f| f.starts_with("running (pid ")),
        "{report:#}"
    );
    let text = b.ok(&["doctor"])?;
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok       bosund           running")),
        "{text}"
    );
    b.finish()
}

#[test]
fn doctor_without_a_keychain_fails_the_keychain_line_once_secrets_need_it() -> anyhow::Result<()> {
    let b = bosun("doctor_keychain").without_fake_keychain().with_env(
        "DBUS_SESSION_BUS_ADDRESS",
        "unix:path=/nonexistent/bosun-test-bus",
    );
    // Nothing keeps secrets yet: a warning, and doctor passes.
    b.ok(&["ps"])?;
    let (code, report) = doctor(&b, None)?;
    let keychain = line(&report, "keychain")?;
    assert_eq!(keychain["status"], "warning", "{report:#}");
    assert!(
        keychain["found"]
            .as_str()
            .is_some_and(|f| f.contains("cannot be reached (nothing keeps secrets yet)")),
        "{report:#}"
    );
    assert_eq!(code, Some(0), "{report:#}");

    // An MCP server keeps its lines (and any sign-in) in the keychain: now it fails, alone.
    b.ok(&["mcp", "add", "files", "--", "true"])?;
    let (code, report) = doctor(&b, None)?;
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(failing(&report), ["keychain"], "{report:#}");
    let keychain = line(&report, "keychain")?;
    assert!(
        keychain["advice"]
            .as_str()
            .is_some_and(|a| a.starts_with("start a Secret Service in your session")
                && a.contains("BOSUN_FAKE_KEYCHAIN")),
        "{report:#}"
    );
    b.finish()?;

    // A real Secret Service (gnome-keyring on a bus of the test's own) answers.
    let ss = SecretService::start()?;
    let b = bosun("doctor_keychain_ok")
        .without_fake_keychain()
        .with_env("DBUS_SESSION_BUS_ADDRESS", &ss.address);
    let (_, report) = doctor(&b, None)?;
    let keychain = line(&report, "keychain")?;
    assert_eq!(keychain["status"], "ok", "{report:#}");
    assert_eq!(keychain["found"], "the Secret Service answers");
    b.finish()
}

#[test]
fn doctor_fails_a_missing_cli_that_an_agent_runs() -> anyhow::Result<()> {
    let b = bosun("doctor_cli");
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    b.ok(&[
        "agent",
        "add",
        "coder",
        "--cli",
        "claude",
        "--cwd",
        &work.display().to_string(),
    ])?;

    // With the pinned Claude Code on PATH: found, with its version.
    let (code, report) = doctor(&b, Some(&node_path()))?;
    let claude = line(&report, "claude")?;
    assert_eq!(claude["status"], "ok", "{report:#}");
    assert!(
        claude["found"]
            .as_str()
            .is_some_and(|f| f.starts_with("2.1.332 (Claude Code)")),
        "{report:#}"
    );
    assert_eq!(code, Some(0), "{report:#}");

    // Without it: the claude line fails, naming the agent, and says how to install it; codex
    // and gemini, which no agent runs, only warn.
    let without = path_without(
        &b.scratch().join("bin"),
        &["claude", "codex", "gemini"],
        &[],
    )?;
    let (code, report) = doctor(&b, Some(&without))?;
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(failing(&report), ["claude"], "{report:#}");
    let claude = line(&report, "claude")?;
    assert_eq!(
        claude["found"], "not found on PATH, and agent coder runs it",
        "{report:#}"
    );
    assert_eq!(
        claude["advice"],
        "install it (`npm install -g @anthropic-ai/claude-code`) or put it on PATH"
    );
    assert_eq!(line(&report, "codex")?["status"], "warning");
    assert_eq!(
        line(&report, "codex")?["found"],
        "not found on PATH (no agent uses it)"
    );
    b.finish()
}

#[test]
fn doctor_fails_a_bad_kubeconfig_only_when_placement_uses_kubernetes() -> anyhow::Result<()> {
    let b = bosun("doctor_kube");
    private_dir(&b.home)?;
    let kubeconfig = b.scratch().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nclusters: [\n  - name: x\n")?;
    // Not turned on: the broken file found through KUBECONFIG is a warning.
    let b = b.with_env("KUBECONFIG", &kubeconfig.display().to_string());
    let (code, report) = doctor(&b, None)?;
    let kube = line(&report, "kubernetes")?;
    assert_eq!(kube["status"], "warning", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");

    // Turned on in placement.toml: it fails, and says which file to fix and how.
    std::fs::write(
        b.home.join("placement.toml"),
        format!(
            "listen = \"127.0.0.1:7443\"\n[kubernetes]\nkubeconfig = \"{}\"\nimage = \"x\"\nshared_dir = \"/tmp\"\n",
            kubeconfig.display()
        ),
    )?;
    let (code, report) = doctor(&b, None)?;
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(failing(&report), ["kubernetes"], "{report:#}");
    let kube = line(&report, "kubernetes")?;
    assert!(
        kube["found"]
            .as_str()
            .is_some_and(|f| f.contains("is not valid YAML")),
        "{report:#}"
    );
    assert!(
        kube["advice"]
            .as_str()
            .is_some_and(|a| a.starts_with(&format!(
                "fix {} (`kubectl config use-context NAME` sets its current context)",
                kubeconfig.display()
            ))),
        "{report:#}"
    );

    // Valid YAML without a current context fails too; with one it is ok.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncontexts:\n- name: lab\n  context: {cluster: x, user: y}\n",
    )?;
    let (_, report) = doctor(&b, None)?;
    assert!(
        line(&report, "kubernetes")?["found"]
            .as_str()
            .is_some_and(|f| f.ends_with("has no current context")),
        "{report:#}"
    );
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\ncontexts:\n- name: lab\n  context: {cluster: x, user: y}\n",
    )?;
    let (code, report) = doctor(&b, None)?;
    assert_eq!(line(&report, "kubernetes")?["status"], "ok", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    b.finish()
}

/// A small tmpfs at a folder, unmounted when dropped (needs root, as CI runs).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let out: Output = Command::new("mount")
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
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn doctor_fails_a_nearly_full_disk_and_warns_of_a_low_one() -> anyhow::Result<()> {
    let b = bosun("doctor_disk");
    {
        let _disk = Tmpfs::mount(&b.home, "50m")?;
        let (code, report) = doctor(&b, None)?;
        assert_eq!(code, Some(1), "{report:#}");
        assert_eq!(failing(&report), ["disk"], "{report:#}");
        let disk = line(&report, "disk")?;
        assert!(
            disk["found"]
                .as_str()
                .is_some_and(|f| f.ends_with(&format!("MB free at {}", b.home.display()))),
            "{report:#}"
        );
        assert!(
            disk["advice"].as_str().is_some_and(
                |a| a.starts_with(&format!("free space on the disk of {}", b.home.display()))
            ),
            "{report:#}"
        );
    }
    let _disk = Tmpfs::mount(&b.home, "500m")?;
    let (code, report) = doctor(&b, None)?;
    assert_eq!(line(&report, "disk")?["status"], "warning", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    drop(_disk);
    b.finish()
}
