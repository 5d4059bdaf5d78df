//! `bosun mcp tools` on server-everything over stdio, in the same run against two baselines:
//! the official MCP Inspector's CLI mode (`mcp-inspector --cli … --method tools/list`), wall
//! time of the whole command, each starting the server, listing, and stopping it; and the
//! server's own start, `initialize` and `tools/list`, spoken here over its stdin and stdout with
//! nothing in between (the least any client can take).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::bail;
use bosun_bench::{Env, Figure, fmt_duration, median, report};

const ROUNDS: usize = 7;

fn main() -> anyhow::Result<()> {
    let everything = bosun_tests::everything_bin();
    let inspector = bosun_tests::node_bin("mcp-inspector");
    let env = Env::new("mcp")?;
    env.start_daemon()?;
    let fake = env.scratch().join("keychain.json");
    let everything_s = everything.to_str().unwrap_or_default();
    let out = env
        .bosun(&["mcp", "add", "everything", "--", everything_s, "stdio"])?
        .env("BOSUN_FAKE_KEYCHAIN", &fake)
        .output()?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let time_it = |cmd: &mut Command| -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        let out = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).output()?;
        let took = t0.elapsed();
        if !out.status.success() || !String::from_utf8_lossy(&out.stdout).contains("echo") {
            bail!("{cmd:?} did not list the tools");
        }
        Ok(took)
    };
    let (mut bosun, mut insp, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        direct.push(server_alone(everything_s)?);
        bosun.push(time_it(&mut env.bosun(&[
            "mcp",
            "tools",
            "everything",
            "--json",
        ])?)?);
        insp.push(time_it(Command::new(&inspector).args([
            "--cli",
            everything_s,
            "stdio",
            "--method",
            "tools/list",
        ]))?);
    }
    let (bosun, insp, direct) = (median(bosun), median(insp), median(direct));
    let alone = bosun.as_secs_f64() / direct.as_secs_f64();
    report(Figure {
        bench: "mcp",
        what: "list tools of server-everything (stdio), against the server alone",
        value: fmt_duration(bosun),
        baseline: format!(
            "its own start + initialize + tools/list {}",
            fmt_duration(direct)
        ),
        ratio: alone,
        target: "<= 1.5",
        met: alone <= 1.5,
    });
    let ratio = bosun.as_secs_f64() / insp.as_secs_f64();
    report(Figure {
        bench: "mcp",
        what: "list tools of server-everything (stdio)",
        value: fmt_duration(bosun),
        baseline: format!("MCP Inspector CLI {}", fmt_duration(insp)),
        ratio,
        target: "<= 0.5",
        met: ratio <= 0.5,
    });
    env.stop_daemon()?;
    Ok(())
}

/// From starting the server to its answer to `tools/list`, spoken over its stdin and stdout
/// directly; the server is killed after.
fn server_alone(everything: &str) -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    let mut server = Command::new(everything)
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let (Some(mut stdin), Some(stdout)) = (server.stdin.take(), server.stdout.take()) else {
        bail!("no pipes to the server");
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut answer_to = |id: u64| -> anyhow::Result<()> {
        for line in lines.by_ref() {
            let msg: serde_json::Value = serde_json::from_str(&line?)?;
            if msg["id"] == id {
                return Ok(());
            }
        }
        bail!("the server ended before answering request {id}")
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    writeln!(stdin, "{init}")?;
    answer_to(1)?;
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )?;
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#)?;
    answer_to(2)?;
    let took = t0.elapsed();
    let _ = server.kill();
    let _ = server.wait();
    Ok(took)
}
