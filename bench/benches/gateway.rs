//! What bosun's MCP gateway adds to a call: 1,000 `echo` calls to the test MCP server over
//! stdio, through a live run's gateway (`bosun-runner gateway --socket …`, the command a run's
//! CLI is given, to the run's runner, which relays to the server it started), against the same
//! calls on a direct connection to the same server, in the same run. The run's CLI is
//! `fake-claude`, held on a call that waits for the person so the run stays up.
//!
//! No control protocol brought these calls to bosund first, so the gateway asks bosund about
//! each one (every call is judged once; echo is read-only, which the policy lets run): this is
//! the gateway's dearest path. A call of a CLI's own, already allowed through its control
//! protocol, skips that round trip.
//!
//! Target (issue 27): under 1 ms added at the median and 3 ms at the 99th percentile.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, bin, report};
use serde_json::{Value, json};

const CALLS: usize = 1_000;

struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Conn {
    fn start(cmd: &mut Command) -> anyhow::Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut c = Self {
            child,
            stdin,
            stdout,
            next: 0,
        };
        c.ask(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        )?;
        writeln!(
            c.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        Ok(c)
    }

    fn ask(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next += 1;
        let id = self.next;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        self.stdin.flush()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("the connection ended before answering {method}");
            }
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == json!(id) {
                return Ok(v);
            }
        }
    }

    /// Each call's latency.
    fn calls(&mut self, n: usize) -> anyhow::Result<Vec<Duration>> {
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let t0 = Instant::now();
            let v = self.ask(
                "tools/call",
                json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
            )?;
            out.push(t0.elapsed());
            if !v.to_string().contains(&format!("Echo: m{i}")) {
                bail!("call {i} did not echo: {v}");
            }
        }
        Ok(out)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let server = bin("test-mcp-server")?;
    let env = Env::new("gateway")?;
    // The agent's key goes to a file-backed keychain of the benchmark's own.
    let keychain = env.scratch().join("keychain.json");
    if !env
        .bosun(&["ps"])?
        .env("BOSUN_FAKE_KEYCHAIN", &keychain)
        .stdout(Stdio::null())
        .status()?
        .success()
    {
        bail!("bosund did not start");
    }
    let server_s = server.display().to_string();
    env.ok(&[
        "mcp",
        "add",
        "t",
        "--",
        &server_s,
        "--mode",
        "no-annotations",
    ])?;
    // Looked at, so the policy knows echo only reads and lets it run.
    env.ok(&["mcp", "tools", "t"])?;
    // A run of fake-claude with the server on, held by a call that waits for the person.
    let fakebin = env.scratch().join("fakebin");
    std::fs::create_dir_all(&fakebin)?;
    std::os::unix::fs::symlink(bin("fake-claude")?, fakebin.join("claude"))?;
    let work = env.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    let script = json!([[{"tool": "Bash", "input": {"command": "rm -rf ./scratch"}}]]);
    let mut add = env.bosun(&[
        "agent",
        "add",
        "held",
        "--cli",
        "claude",
        "--cwd",
        &work.display().to_string(),
        "--env",
        &format!(
            "PATH={}:{}",
            fakebin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
        "--env",
        &format!("FAKE_CLAUDE_SCRIPT={script}"),
        "--secret-env",
        "ANTHROPIC_API_KEY",
    ])?;
    let mut child = add.stdin(Stdio::piped()).stdout(Stdio::null()).spawn()?;
    if let Some(mut s) = child.stdin.take() {
        s.write_all(b"sk-ant-bench-gateway")?;
    }
    if !child.wait()?.success() {
        bail!("agent add failed");
    }
    env.ok(&["agent", "set", "held", "mcp.t=on"])?;
    let out = env.ok(&["agent", "run", "held", "hold", "--json"])?;
    let run: Value = serde_json::from_str(&out)?;
    let id = run["id"].as_str().context("run id")?.to_string();
    let socket = env.home.join("runs").join(&id).join("gateway.sock");
    let t0 = Instant::now();
    while !socket.exists() {
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("the run's gateway never opened");
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let mut direct = Conn::start(Command::new(&server).args(["--mode", "no-annotations"]))?;
    let mut through = Conn::start(
        Command::new(bin("bosun-runner")?)
            .args(["gateway", "--socket"])
            .arg(&socket)
            .arg("t"),
    )?;
    // Warm both, then interleave rounds so neither gets the quieter moment.
    direct.calls(100)?;
    through.calls(100)?;
    let (mut d, mut g) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        d.extend(direct.calls(CALLS / 10)?);
        g.extend(through.calls(CALLS / 10)?);
    }
    let (d50, g50) = (pct(d.clone(), 0.5), pct(g.clone(), 0.5));
    let (d99, g99) = (pct(d, 0.99), pct(g, 0.99));
    let added50 = g50.saturating_sub(d50);
    let added99 = g99.saturating_sub(d99);
    let us = |x: Duration| format!("{:.0} µs", x.as_secs_f64() * 1e6);
    report(Figure {
        bench: "gateway",
        what: "added per MCP call, median (1,000 echo calls)",
        value: us(added50),
        baseline: format!("direct {} vs gateway {}", us(d50), us(g50)),
        ratio: g50.as_secs_f64() / d50.as_secs_f64(),
        target: "< 1 ms",
        met: added50 < Duration::from_millis(1),
    });
    report(Figure {
        bench: "gateway",
        what: "added per MCP call, p99 (1,000 echo calls)",
        value: us(added99),
        baseline: format!("direct {} vs gateway {}", us(d99), us(g99)),
        ratio: g99.as_secs_f64() / d99.as_secs_f64(),
        target: "< 3 ms",
        met: added99 < Duration::from_millis(3),
    });
    drop(through);
    drop(direct);
    let _ = env.ok(&["stop", &id]);
    env.stop_daemon()?;
    Ok(())
}
