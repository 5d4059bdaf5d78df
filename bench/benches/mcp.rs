//! `bosun mcp tools` on server-everything over stdio, against the official MCP Inspector's CLI
//! mode (`mcp-inspector --cli … --method tools/list`) on the same server, in the same run: wall
//! time of the whole command, each starting the server, listing, and stopping it.

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
    let (mut bosun, mut insp) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
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
    let (bosun, insp) = (median(bosun), median(insp));
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
