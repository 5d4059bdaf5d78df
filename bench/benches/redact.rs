//! What redacting a run's secrets costs its log throughput.
//!
//! Two `command` agents run the same program, `gen-lines` writing 1,000,000 lines of 100 bytes,
//! each followed live (`bosun agent run --follow`) until its end is recorded: one is given four
//! secret values (so its runner scans every chunk for them), the other none (its runner skips
//! the scan). Rounds alternate between the two; each figure is the median of 9. Target: the
//! redacting run within 5% of the other. A third figure: the same with the secret in every
//! line (each replaced), for the record. `BOSUN_BENCH_LOG_LINES` makes the runs smaller.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::bail;
use bosun_bench::{Env, Figure, bin, fmt_duration, median, report, settle};

const ROUNDS: usize = 9;

fn lines() -> u64 {
    std::env::var("BOSUN_BENCH_LOG_LINES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000)
}

/// `bosun agent add NAME --cli command [--secret-env …] -- PROGRAM…`, the secrets on stdin.
fn add_agent(env: &Env, name: &str, secrets: &[&str], program: &[&str]) -> anyhow::Result<()> {
    let mut args = vec!["agent", "add", name, "--cli", "command"];
    let names: Vec<String> = (0..secrets.len()).map(|i| format!("SECRET_{i}")).collect();
    for n in &names {
        args.extend(["--secret-env", n.as_str()]);
    }
    args.push("--");
    args.extend_from_slice(program);
    let mut child = env.bosun(&args)?.stdin(Stdio::piped()).spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        for (n, s) in names.iter().zip(secrets) {
            writeln!(stdin, "{n}={s}")?;
        }
    }
    if !child.wait()?.success() {
        bail!("bosun agent add {name} failed");
    }
    Ok(())
}

fn run(env: &Env, agent: &str) -> anyhow::Result<Duration> {
    settle();
    let t0 = Instant::now();
    let status = env
        .bosun(&["agent", "run", agent, "go", "--follow"])?
        .stdout(Stdio::null())
        .status()?;
    let took = t0.elapsed();
    if !status.success() {
        bail!("the run of {agent} failed: {status}");
    }
    Ok(took)
}

fn main() -> anyhow::Result<()> {
    let lines = lines();
    let env = Env::new("redact")?;
    let generator = bin("gen-lines")?.display().to_string();
    let n = lines.to_string();
    // The secrets go to a file-backed keychain of the benchmark's own: bosund started here
    // with it keeps them there.
    let keychain = env.scratch().join("keychain.json");
    let started = env
        .bosun(&["ps"])?
        .env("BOSUN_FAKE_KEYCHAIN", &keychain)
        .stdout(Stdio::null())
        .status()?;
    if !started.success() {
        bail!("bosund did not start");
    }
    let secrets = [
        "sk-bench-4f9c2a7e1b6d",
        "ghp_bench0123456789abcdef",
        "xoxb-bench-77c1e0d9a4",
        "token-bench-5e1a9b",
    ];
    add_agent(&env, "plain", &[], &[&generator, &n])?;
    add_agent(&env, "redacting", &secrets, &[&generator, &n])?;
    // Every line carries a secret: `sed` puts one at the start of each.
    let with_secret = format!("{generator} {n} | sed 's/^/{} /'", secrets[0]);
    add_agent(
        &env,
        "every-line",
        &secrets,
        &["/bin/sh", "-c", &with_secret],
    )?;
    let plain_sed = format!(
        "{generator} {n} | sed 's/^/{} /'",
        "x".repeat(secrets[0].len())
    );
    add_agent(
        &env,
        "every-line-plain",
        &[],
        &["/bin/sh", "-c", &plain_sed],
    )?;

    let (mut plain, mut redacting, mut every, mut every_plain) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        plain.push(run(&env, "plain")?);
        redacting.push(run(&env, "redacting")?);
        every_plain.push(run(&env, "every-line-plain")?);
        every.push(run(&env, "every-line")?);
    }
    let (plain, redacting) = (median(plain), median(redacting));
    let (every, every_plain) = (median(every), median(every_plain));
    let what = format!("{lines} lines x 100 B, 4 secrets given");
    let ratio = redacting.as_secs_f64() / plain.as_secs_f64();
    report(Figure {
        bench: "redact",
        what: &what,
        value: fmt_duration(redacting),
        baseline: format!("no secrets {}", fmt_duration(plain)),
        ratio,
        target: "<= 1.05",
        met: ratio <= 1.05,
    });
    let ratio = every.as_secs_f64() / every_plain.as_secs_f64();
    report(Figure {
        bench: "redact",
        what: &format!("{lines} lines, a secret in every line"),
        value: fmt_duration(every),
        baseline: format!("same lines, no secrets {}", fmt_duration(every_plain)),
        ratio,
        target: "(record)",
        met: true,
    });
    // The redacted run's log has no secret.
    let listed: serde_json::Value = serde_json::from_str(&env.ok(&["ps", "--all", "--json"])?)?;
    let last = listed
        .as_array()
        .and_then(|a| a.iter().max_by_key(|r| r["created_at"].as_u64()))
        .and_then(|r| r["id"].as_str())
        .unwrap_or_default()
        .to_string();
    let out = env.bosun(&["logs", &last])?.output()?;
    if out
        .stdout
        .windows(secrets[0].len())
        .any(|w| w == secrets[0].as_bytes())
    {
        bail!("a secret is in the log of run {last}");
    }
    env.stop_daemon()?;
    Ok(())
}
