//! The network of an MCP server the gateway starts for a fenced run: a namespace of its own,
//! whose only way out is a proxy of its own with the server's own list. A stdio server whose
//! tool reaches a host on 127.0.0.2 is refused (403, nothing reaches the host, the run's log
//! names the server and says how to add the host); `bosun mcp edit NAME --net HOST:PORT` adds
//! it, and the next run's call reaches the host exactly once, through the proxy.

use bosun_tests::{Bosun, CountingServer, FakeModel, bin_dir};

/// A run of `coder` against a new fake model that calls the server's tool once; the tool's
/// result as the model got it, and the run's id.
fn run_reach(b: &Bosun) -> anyhow::Result<(String, String)> {
    let before = b.run_ids();
    let fake = FakeModel::start("anthropic", "tool:net/reach:{};text:done")?;
    b.point_claude_at("coder", &fake)?;
    let out = b.output(&["agent", "run", "coder", "reach the host", "--follow"])?;
    anyhow::ensure!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = b
        .run_ids()
        .into_iter()
        .find(|r| !before.contains(r))
        .ok_or_else(|| anyhow::anyhow!("no new run"))?;
    let turns = fake.turns();
    let result = turns
        .get(1)
        .and_then(|t| t["tool_result"].as_str())
        .unwrap_or_default()
        .to_string();
    Ok((result, run))
}

/// bosun's own lines of a run's log (`bosun logs` prints them on stderr).
fn log_text(b: &Bosun, run: &str) -> anyhow::Result<String> {
    let out = b.output(&["logs", run])?;
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The `network` line of `bosun mcp show`, when it has one.
fn network_line(shown: &str) -> Option<&str> {
    shown.lines().find(|l| l.starts_with("network"))
}

#[test]
fn a_servers_host_is_refused_until_mcp_edit_adds_it_then_reached_once() -> anyhow::Result<()> {
    let b = Bosun::new("fence_mcp_net");
    let host = CountingServer::start("127.0.0.2")?;
    let target = format!("127.0.0.2:{}", host.port);
    let server = bin_dir().join("net-mcp-server").display().to_string();
    b.ok(&["mcp", "add", "net", "--", &server, "--to", &target])?;
    b.ok(&["mcp", "tools", "net"])?;
    let fake = FakeModel::start("anthropic", "text:unused")?;
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    b.ok(&["agent", "set", "coder", "mcp.net=on"])?;

    // Its list has nothing for the host: refused, never reached, and the log says the fix.
    let (result, run) = run_reach(&b)?;
    let fix = format!("bosun mcp edit net --net {target}");
    assert!(
        result.contains("direct: failed"),
        "the server reached the host around its proxy: {result}"
    );
    assert!(
        result.contains("403 Forbidden") && result.contains(&fix),
        "{result}"
    );
    assert_eq!(host.count(), 0, "a refused host was reached");
    let log = log_text(&b, &run)?;
    assert!(
        log.contains(&format!("bosun's proxy (server net): refused {target}"))
            && log.contains(&fix),
        "{log}"
    );
    assert!(
        b.waiting_approvals().unwrap_or_default().is_empty(),
        "a server's host was asked for"
    );

    // A bad host is refused with the reason; a good one is kept and shown.
    let bad = b.fails(&["mcp", "edit", "net", "--net", "exa mple.com"])?;
    assert!(bad.contains("cannot be in a host"), "{bad}");
    b.ok(&["mcp", "edit", "net", "--net", &target])?;
    let shown = b.ok(&["mcp", "show", "net"])?;
    assert!(
        network_line(&shown).is_some_and(|l| l.contains(&target)),
        "{shown}"
    );

    // The next run's call reaches it, once, through the server's proxy.
    let (result, run) = run_reach(&b)?;
    assert!(result.contains("reached-ok!"), "{result}");
    assert_eq!(host.count(), 1, "reached other than once");
    let log = log_text(&b, &run)?;
    assert!(
        log.contains(&format!("bosun's proxy (server net): {target} (tunnel)"))
            && log.contains("allowed by the server's list"),
        "{log}"
    );

    // `--net none` clears the list.
    b.ok(&["mcp", "edit", "net", "--net", "none"])?;
    let shown = b.ok(&["mcp", "show", "net"])?;
    assert!(network_line(&shown).is_none(), "{shown}");
    b.finish()
}
