//! What the first step of the approval policy and the runner's fence cost.
//!
//! - **policy**: 1,000 calls of a Claude Code run (writes inside the workspace, outside it,
//!   through a link, into `.git`, deep in a worktree; reads, commands, fetches and MCP calls),
//!   each judged as bosund judges it now — the switches (`gate::switches`), for a file tool its
//!   target resolved and checked against the roots and git (`Workspace::refuse_write`), then the
//!   rest of the precedence — against the policy as it was before the first step (class, saved
//!   verdict, `decide`), in the same run, alternating call by call. Target: a decided call under
//!   1 ms at the median.
//! - **start**: 30 runs of a `command` agent running `true`, fenced (the default) and
//!   unrestricted (no fence), alternating; each figure is the median of the time from the run's
//!   record being made to its program started (`started_at - created_at`, as bosund records it).
//!   Target: the fence adds under 5 ms. Since issue 45 the same runs go three ways: with the
//!   whole fence (namespaces and proxy), with Landlock alone (`fence.net=off fence.read=off
//!   fence.protect=off`, the fence before), and unfenced. Target: the namespaces and the proxy
//!   add under 20 ms to Landlock alone.
//! - **download**: 5 downloads of 100 MB from 127.0.0.1 by `curl` in a command agent's run whose
//!   network is fenced (through the runner's proxy), against the same with `fence.net=off`,
//!   alternating; curl's own speed, median. Target: at least 0.9x direct.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use bosun_agents::record::Switches;
use bosun_approvals::gate::{self, Agent, Call};
use bosun_approvals::policy::{
    self, ApprovalMode, PolicyInput, ToolKey, Verdict, classify_builtin,
};
use bosun_approvals::workspace::{Workspace, written_paths};
use bosun_bench::{Env, Figure, median, report};
use bosun_shared::agents::{CliKind, WebFetch};
use serde_json::{Value, json};

const CALLS: usize = 1000;
const RUNS: usize = 30;

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn main() -> anyhow::Result<()> {
    policy_cost()?;
    start_cost()?;
    download()
}

/// The calls of the policy figure, in a worktree-like tree under `base`.
fn calls(base: &Path) -> anyhow::Result<Vec<(String, Value)>> {
    let work = base.join("work");
    std::fs::create_dir_all(work.join("src/deep/er/still/deeper"))?;
    std::fs::create_dir_all(work.join(".git/hooks"))?;
    std::fs::create_dir_all(base.join("outside"))?;
    let link = work.join("out");
    if !link.exists() {
        std::os::unix::fs::symlink(base.join("outside"), &link)?;
    }
    let p = |rel: &str| work.join(rel).display().to_string();
    let shapes: Vec<(String, Value)> = vec![
        (
            "Write".into(),
            json!({"file_path": p("src/main.rs"), "content": "x"}),
        ),
        (
            "Edit".into(),
            json!({"file_path": p("src/deep/er/still/deeper/a.rs"), "old_string": "a", "new_string": "b"}),
        ),
        (
            "Write".into(),
            json!({"file_path": base.join("outside/x").display().to_string(), "content": "x"}),
        ),
        (
            "Write".into(),
            json!({"file_path": p("out/x"), "content": "x"}),
        ),
        (
            "Edit".into(),
            json!({"file_path": p(".git/config"), "old_string": "a", "new_string": "b"}),
        ),
        ("Read".into(), json!({"file_path": p("src/main.rs")})),
        ("Bash".into(), json!({"command": "git status"})),
        (
            "WebFetch".into(),
            json!({"url": "https://docs.rs/tokio", "prompt": "read"}),
        ),
        ("mcp__github__list_issues".into(), json!({"repo": "a/b"})),
        ("Grep".into(), json!({"pattern": "fn main"})),
    ];
    Ok((0..CALLS)
        .map(|i| shapes[i % shapes.len()].clone())
        .collect())
}

fn policy_cost() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    let calls = calls(&base)?;
    let folder = base.join("work");
    let switches = Switches {
        web_fetch: WebFetch::parse("docs.rs")
            .map_err(|e| anyhow::anyhow!(e))
            .context("domains")?,
        ..Switches::default()
    };
    let verdicts: BTreeMap<String, Verdict> =
        BTreeMap::from([("Write".to_string(), Verdict::AlwaysAllow)]);
    let roots: Vec<PathBuf> = Vec::new();
    let (mut before, mut now) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
    let mut refused = 0;
    for (tool, input) in &calls {
        // The policy before the first step.
        let t0 = Instant::now();
        let d = old_policy(tool, input, &verdicts);
        before.push(t0.elapsed());
        std::hint::black_box(d);
        // Today's: the first step, then the same.
        let t0 = Instant::now();
        let agent = Agent {
            name: "coder",
            cli: CliKind::Claude,
            switches: &switches,
            servers: &[],
        };
        let call = match tool.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
            Some((server, t)) => Call::Mcp { server, tool: t },
            None => Call::Builtin { name: tool, input },
        };
        let mut refusal = gate::switches(agent, call);
        if refusal.is_none()
            && let Some(targets) = written_paths(CliKind::Claude, tool, input)
        {
            let space = Workspace::new(&folder, &roots, false);
            refusal = targets
                .iter()
                .find_map(|t| space.refuse_write("coder", &folder, t));
        }
        refused += usize::from(refusal.is_some());
        let class = classify_builtin(CliKind::Claude, tool, input);
        let key: ToolKey = tool.parse().unwrap_or(ToolKey::Builtin(tool.clone()));
        let command = policy::shell_command(CliKind::Claude, tool, input);
        let d = policy::decide(&PolicyInput {
            refused: refusal,
            mode: ApprovalMode::SkipApprovals,
            class,
            verdict: policy::verdict_for(&verdicts, &key, command),
            escalated: false,
            attended: true,
            holds_secret: false,
        });
        now.push(t0.elapsed());
        std::hint::black_box(d);
    }
    anyhow::ensure!(
        refused > 0,
        "no call was refused: the tree is not what it should be"
    );
    let (b, n) = (median(before), median(now));
    report(Figure {
        bench: "fence",
        what: "policy: a decided call, median of 1,000",
        value: us(n),
        baseline: format!("{} without the first step", us(b)),
        ratio: n.as_secs_f64() / 1e-3,
        target: "< 1 ms",
        met: n < Duration::from_millis(1),
    });
    Ok(())
}

fn old_policy(tool: &str, input: &Value, verdicts: &BTreeMap<String, Verdict>) -> policy::Decision {
    let class = classify_builtin(CliKind::Claude, tool, input);
    let key: ToolKey = tool.parse().unwrap_or(ToolKey::Builtin(tool.to_string()));
    let command = policy::shell_command(CliKind::Claude, tool, input);
    policy::decide(&PolicyInput {
        refused: None,
        mode: ApprovalMode::SkipApprovals,
        class,
        verdict: policy::verdict_for(verdicts, &key, command),
        escalated: false,
        attended: true,
        holds_secret: false,
    })
}

fn start_cost() -> anyhow::Result<()> {
    let env = Env::new("fence")?;
    env.start_daemon()?;
    let work = env.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    let cwd = work.display().to_string();
    for name in ["fenced", "landlock", "open"] {
        env.ok(&[
            "agent", "add", name, "--cli", "command", "--cwd", &cwd, "--", "true",
        ])?;
    }
    // The fence as it was before its namespaces: Landlock alone.
    env.ok(&[
        "agent",
        "set",
        "landlock",
        "fence.net=off",
        "fence.read=off",
        "fence.protect=off",
    ])?;
    env.ok(&["agent", "set", "open", "workspace=unrestricted"])?;
    let (mut fenced, mut landlock, mut open) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        for (agent, into) in [
            ("fenced", &mut fenced),
            ("landlock", &mut landlock),
            ("open", &mut open),
        ] {
            env.ok(&["agent", "run", agent, "go", "--follow"])?;
            let runs: Value = serde_json::from_str(&env.ok(&["ps", "--all", "--json"])?)?;
            let last = runs
                .as_array()
                .and_then(|r| {
                    r.iter()
                        .filter(|v| v["name"] == agent)
                        .max_by_key(|v| v["created_at"].as_u64())
                })
                .context("the run")?;
            let took = last["started_at"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(last["created_at"].as_u64().unwrap_or(0));
            into.push(Duration::from_millis(took));
        }
    }
    env.stop_daemon()?;
    let (f, l, o) = (median(fenced), median(landlock), median(open));
    let added = f.saturating_sub(l);
    report(Figure {
        bench: "fence",
        what: "start with namespaces and proxy: record made to program started, median of 30",
        value: format!("{} fenced", bosun_bench::fmt_duration(f)),
        baseline: format!("{} with Landlock alone", bosun_bench::fmt_duration(l)),
        ratio: added.as_secs_f64() / 20e-3,
        target: "< 20 ms added",
        met: added < Duration::from_millis(20),
    });
    let added = l.saturating_sub(o);
    report(Figure {
        bench: "fence",
        what: "start with Landlock: record made to program started, median of 30",
        value: format!("{} with Landlock", bosun_bench::fmt_duration(l)),
        baseline: format!("{} unfenced", bosun_bench::fmt_duration(o)),
        ratio: added.as_secs_f64() / 5e-3,
        target: "< 5 ms added",
        met: added < Duration::from_millis(5),
    });
    Ok(())
}

/// The size of the download through the proxy.
const DOWNLOAD: usize = 100 * 1000 * 1000;
/// How many downloads of each kind.
const DOWNLOADS: usize = 5;

/// A server on 127.0.0.1 that answers every connection with [`DOWNLOAD`] bytes over HTTP.
fn download_server() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        let block = std::sync::Arc::new(vec![b'x'; 1 << 20]);
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let block = block.clone();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut head = [0u8; 4096];
                let _ = s.read(&mut head);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {DOWNLOAD}\r\nConnection: close\r\n\r\n"
                );
                let mut left = DOWNLOAD;
                while left > 0 {
                    let n = left.min(block.len());
                    if s.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    Ok(port)
}

/// A 100 MB download from 127.0.0.1 by `curl` in a run whose network is fenced (through the
/// runner's proxy) against the same in a run whose network is not (`fence.net=off`),
/// alternating; each figure is the median of curl's own speed.
fn download() -> anyhow::Result<()> {
    let env = Env::new("fence-download")?;
    env.start_daemon()?;
    let port = download_server()?;
    let work = env.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    let cwd = work.display().to_string();
    let script =
        format!("curl -s -o /dev/null -w '%{{speed_download}}\\n' http://127.0.0.1:{port}/blob");
    for name in ["proxied", "direct"] {
        env.ok(&[
            "agent", "add", name, "--cli", "command", "--cwd", &cwd, "--", "sh", "-c", &script,
        ])?;
    }
    env.ok(&["agent", "set", "proxied", "web.fetch=127.0.0.1"])?;
    env.ok(&["agent", "set", "direct", "fence.net=off"])?;
    let (mut proxied, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..DOWNLOADS {
        for (agent, into) in [("proxied", &mut proxied), ("direct", &mut direct)] {
            let out = env.ok(&["agent", "run", agent, "go", "--follow"])?;
            let speed: f64 = out
                .lines()
                .rev()
                .find_map(|l| l.trim().parse().ok())
                .with_context(|| format!("curl's speed in {out:?}"))?;
            into.push(speed);
        }
    }
    env.stop_daemon()?;
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (p, d) = (mid(proxied), mid(direct));
    let ratio = p / d;
    report(Figure {
        bench: "fence",
        what: "a 100 MB download from 127.0.0.1 through the run's proxy, median of 5",
        value: format!("{:.0} MB/s proxied", p / 1e6),
        baseline: format!("{:.0} MB/s direct (fence.net=off)", d / 1e6),
        ratio,
        target: ">= 0.9x direct",
        met: ratio >= 0.9,
    });
    Ok(())
}
