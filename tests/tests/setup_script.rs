//! `scripts/setup`, the set-up part of the README's test command, run with `--check` (it says
//! what it would install and installs nothing) against a `PATH` with one thing taken away at a
//! time: a Debian package's program, a Node.js too old. A fresh Debian machine cannot be made
//! here; these pin the decisions the script takes on one, and that a machine with everything
//! (this one, after `./scripts/test` ran the set-up) needs nothing.

use bosun_tests::path_without;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::Context;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `scripts/setup --check` with `PATH` set to `path` and an empty tools directory (the script
/// puts its `bin/` and `~/.cargo/bin` first, as it does when installing).
fn check(path: &Path, tools: &Path) -> anyhow::Result<Output> {
    Command::new("bash")
        .arg(repo().join("scripts/setup"))
        .arg("--check")
        .env("PATH", path)
        .env("BOSUN_TEST_TOOLS", tools)
        .output()
        .context("could not run scripts/setup")
}

#[test]
fn setup_check_names_the_missing_debian_packages_and_installs_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bin = dir.path().join("bin");
    path_without(&bin, &["gh", "chromium"], &[])?;
    let out = check(&bin, &dir.path().join("tools"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("would install: Debian packages chromium gh\n"),
        "{stdout}"
    );
    // Only what is missing is named.
    assert!(!stdout.contains("dbus"), "{stdout}");
    assert!(!stdout.contains("Node.js"), "{stdout}");
    Ok(())
}

#[test]
fn setup_check_fetches_a_node_of_its_own_when_the_one_found_is_too_old() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bin = dir.path().join("bin");
    path_without(&bin, &[], &[("node", "#!/bin/sh\necho v20.19.2\n")])?;
    let tools = dir.path().join("tools");
    let out = check(&bin, &tools)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "would install: Node.js 24.19.0 under {} (found Node.js 20; the npm peers ask for >= 22)",
            tools.display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("Debian packages"), "{stdout}");
    // --check installs nothing.
    assert!(!tools.join("bin").exists());
    Ok(())
}

#[test]
fn setup_check_passes_where_everything_is_installed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bin = dir.path().join("bin");
    path_without(&bin, &[], &[])?;
    let out = check(&bin, &dir.path().join("tools"))?;
    assert!(
        out.status.success(),
        "./scripts/test installs these first: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
