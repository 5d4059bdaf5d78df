//! A host a fenced run's list does not have is asked for through the inbox, as a call of
//! bosun's own tool `Network`, instead of refused at once: the program's connection waits;
//! the ask survives a SIGKILL of bosund; the person's answer reaches the proxy once (the host
//! counts exactly one connection); `approve --always` saves a verdict for the host, so the
//! agent's next run reaches it without asking; a denied host gets 403 with the person's words
//! and is never reached.

use std::path::PathBuf;
use std::time::Duration;

use bosun_tests::{Bosun, CountingServer, wait_for};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

/// A command agent `name` whose run fetches the counter's page with curl (through the run's
/// proxy, which the fence points it at), printing the body and `code=NNN`.
fn add_agent(b: &Bosun, name: &str, port: u16) -> anyhow::Result<()> {
    let work: PathBuf = b.scratch().join(name);
    std::fs::create_dir_all(&work)?;
    let script = format!("curl -s -m 120 http://127.0.0.2:{port}/ -w ' code=%{{http_code}}'");
    b.ok(&[
        "agent",
        "add",
        name,
        "--cli",
        "command",
        "--cwd",
        &work.display().to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ])?;
    // Long enough to outlast a restart of bosund, and the time a slow machine takes.
    b.ok(&["agent", "set", name, "approval.wait=10m"])?;
    Ok(())
}

/// The approval of `run` for a host, once it waits.
fn ask_of(b: &Bosun, run: &str) -> anyhow::Result<Value> {
    wait_for("the run's ask for the host", WAIT, || {
        let waiting = b.waiting_approvals().unwrap_or_default();
        Ok(waiting.into_iter().find(|a| a["run"] == run))
    })
}

/// The run's log as `bosun logs` prints it: the program's output, then bosun's own lines (which
/// it prints on stderr).
fn log_of(b: &Bosun, run: &str) -> anyhow::Result<String> {
    let out = b.output(&["logs", run])?;
    anyhow::ensure!(out.status.success(), "bosun logs failed");
    Ok(format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

#[test]
fn a_refused_host_is_asked_for_survives_a_daemon_kill_and_is_reached_once() -> anyhow::Result<()> {
    let b = Bosun::new("fence_ask_host");
    let host = CountingServer::start("127.0.0.2")?;
    add_agent(&b, "fetcher", host.port)?;
    let target = format!("127.0.0.2:{}", host.port);

    // The first run's curl waits on the ask; the inbox says what it is.
    let run = b.run_agent("fetcher", "go")?;
    let ask = ask_of(&b, &run)?;
    assert_eq!(ask["tool"], "Network", "{ask:#}");
    assert_eq!(ask["input"]["host"], "127.0.0.2", "{ask:#}");
    assert_eq!(ask["input"]["port"], host.port, "{ask:#}");
    assert_eq!(ask["agent"], "fetcher", "{ask:#}");
    let id = ask["id"].as_str().unwrap_or_default().to_string();
    let inbox = b.ok(&["inbox"])?;
    assert!(
        inbox.contains(&format!("connect to {target} (plain HTTP)")),
        "{inbox}"
    );
    assert!(inbox.contains("not in the run's list of hosts"), "{inbox}");
    assert!(inbox.contains("agent fetcher"), "{inbox}");
    assert_eq!(
        host.count(),
        0,
        "the host was reached before anyone allowed it"
    );

    // bosund dies while the ask waits, and the next one has it still waiting.
    b.kill_daemon()?;
    let again = ask_of(&b, &run)?;
    assert_eq!(again["id"], id.as_str(), "the ask changed across the kill");
    assert_eq!(host.count(), 0);
    b.ok(&["approve", &id])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let log = log_of(&b, &run)?;
    assert!(log.contains("reached-ok!"), "{log}");
    assert!(log.contains("code=200"), "{log}");
    assert!(
        log.contains(&format!("bosun's proxy: {target} (http)"))
            && log.contains("allowed by an ask"),
        "{log}"
    );
    assert_eq!(host.count(), 1, "the host was reached other than once");
    assert!(b.waiting_approvals()?.is_empty(), "an ask is left waiting");

    // Allowed with --always, the verdict is the host's and port's, and the next run asks
    // nobody.
    let second = b.run_agent("fetcher", "again")?;
    let ask = ask_of(&b, &second)?;
    b.ok(&[
        "approve",
        ask["id"].as_str().unwrap_or_default(),
        "--always",
    ])?;
    assert_eq!(b.wait_ended(&second, WAIT)?["outcome"], "succeeded");
    assert_eq!(host.count(), 2);
    let shown = b.ok(&["agent", "show", "fetcher"])?;
    assert!(shown.contains(&format!("Network({target})")), "{shown}");
    let third = b.run_agent("fetcher", "once more")?;
    let view = b.wait_ended(&third, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert!(log_of(&b, &third)?.contains("code=200"));
    assert_eq!(host.count(), 3);
    let asked: Vec<Value> = b
        .all_approvals()?
        .into_iter()
        .filter(|a| a["run"] == third.as_str())
        .collect();
    assert!(asked.is_empty(), "the third run asked: {asked:#?}");

    // A verdict key names one host: a wildcard is refused with how to write it.
    let err = b.fails(&["agent", "set", "fetcher", "Network(*.example.com)=allow"])?;
    assert!(err.contains("does not name one host"), "{err}");
    b.ok(&["agent", "set", "fetcher", "Network(example.com)=block"])?;
    b.finish()
}

#[test]
fn a_denied_host_is_403_with_the_person_s_words_and_never_reached() -> anyhow::Result<()> {
    let b = Bosun::new("fence_ask_host_denied");
    let host = CountingServer::start("127.0.0.2")?;
    add_agent(&b, "fetcher", host.port)?;
    let run = b.run_agent("fetcher", "go")?;
    let ask = ask_of(&b, &run)?;
    let id = ask["id"].as_str().unwrap_or_default();
    b.ok(&["deny", id, "--message", "not this host"])?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let log = log_of(&b, &run)?;
    assert!(log.contains("code=403"), "{log}");
    assert!(log.contains("not this host"), "{log}");
    assert!(
        log.contains(&format!(
            "bosun's proxy: refused 127.0.0.2:{} (http)",
            host.port
        )),
        "{log}"
    );
    assert_eq!(host.count(), 0, "a denied host was reached");
    b.finish()
}
