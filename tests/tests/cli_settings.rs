//! Lists of `KEY=VALUE` on the command line — `bosun daemon set`, `bosun agent set`, `bosun
//! project set`, and the `--env` of a run and of an agent — are read by one reader, which
//! refuses a key given twice, naming it, before anything is changed or started.

use bosun_tests::Bosun;

/// Issue 44: `bosun daemon set retention=7d retention=8d` kept 8d without a word, and so did
/// every other setter with a key given twice (the last one won).
#[test]
fn a_key_given_twice_in_one_set_is_refused_naming_it_and_nothing_changes() -> anyhow::Result<()> {
    let b = Bosun::new("cli_settings_twice");
    b.ok(&["ps"])?;
    let retention = |b: &Bosun| -> anyhow::Result<serde_json::Value> {
        Ok(b.json(&["daemon", "status"])?["retention_ms"].clone())
    };
    let before = retention(&b)?;
    let e = b.fails(&["daemon", "set", "retention=7d", "retention=8d"])?;
    assert!(
        e.contains(
            "`retention` is given twice (`retention=7d` and `retention=8d`), so nothing was changed; give each key once"
        ),
        "{e}"
    );
    let e = b.fails(&["daemon", "set", "notify=off", "retention=7d", "notify=on"])?;
    assert!(e.contains("`notify` is given twice"), "{e}");
    assert_eq!(retention(&b)?, before, "nothing was set");
    assert_eq!(b.json(&["daemon", "status"])?["notify"]["on"], true);

    let cwd = b.scratch().display().to_string();
    b.ok(&["agent", "add", "coder", "--cli", "claude", "--cwd", &cwd])?;
    let agent_before = b.json(&["agent", "show", "coder"])?;
    let e = b.fails(&["agent", "set", "coder", "web.search=on", "web.search=off"])?;
    assert!(
        e.contains("`web.search` is given twice (`web.search=on` and `web.search=off`)"),
        "{e}"
    );
    let e = b.fails(&[
        "agent",
        "set",
        "coder",
        "max-tool-calls=5",
        "Bash(git *)=allow",
        "Bash(git *)=block",
    ])?;
    assert!(e.contains("`Bash(git *)` is given twice"), "{e}");
    assert_eq!(
        b.json(&["agent", "show", "coder"])?,
        agent_before,
        "nothing was set"
    );
    // One key, two settings: a tool's switch and its verdict.
    let server = bosun_tests::test_server_bin();
    b.ok(&[
        "mcp",
        "add",
        "srv",
        "--",
        server.to_str().unwrap_or_default(),
        "--mode",
        "no-annotations",
    ])?;
    b.ok(&["mcp", "tools", "srv"])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "mcp.srv=on",
        "mcp.srv.echo=on",
        "mcp.srv.echo=allow",
    ])?;
    let e = b.fails(&[
        "agent",
        "set",
        "coder",
        "mcp.srv.echo=off",
        "mcp.srv.echo=on",
    ])?;
    assert!(e.contains("`mcp.srv.echo` is given twice"), "{e}");

    let repo = b.scratch().join("web");
    bosun_tests::repo_with_one_commit(&repo)?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    let project_before = b.json(&["project", "show", "web"])?;
    let e = b.fails(&["project", "set", "web", "testing=on", "testing=off"])?;
    assert!(e.contains("`testing` is given twice"), "{e}");
    assert_eq!(b.json(&["project", "show", "web"])?, project_before);

    // The command line's own lists: a run's environment and an agent's.
    let e = b.fails(&["run", "--env", "A=1", "--env", "A=2", "--", "true"])?;
    assert!(e.contains("--env `A` is given twice"), "{e}");
    assert!(b.run_ids().is_empty(), "no run was started");
    let e = b.fails(&[
        "agent", "add", "other", "--cli", "claude", "--cwd", &cwd, "--env", "A=1", "--env", "A=2",
    ])?;
    assert!(e.contains("--env `A` is given twice"), "{e}");
    b.fails(&["agent", "show", "other"])?;
    b.finish()
}
