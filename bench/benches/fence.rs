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
//!   Target: the fence adds under 5 ms.

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
    start_cost()
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
    for name in ["fenced", "open"] {
        env.ok(&[
            "agent", "add", name, "--cli", "command", "--cwd", &cwd, "--", "true",
        ])?;
    }
    env.ok(&["agent", "set", "open", "workspace=unrestricted"])?;
    let (mut fenced, mut open) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        for (agent, into) in [("fenced", &mut fenced), ("open", &mut open)] {
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
    let (f, o) = (median(fenced), median(open));
    let added = f.saturating_sub(o);
    report(Figure {
        bench: "fence",
        what: "start: record made to program started, median of 30",
        value: format!("{} fenced", bosun_bench::fmt_duration(f)),
        baseline: format!("{} unfenced", bosun_bench::fmt_duration(o)),
        ratio: added.as_secs_f64() / 5e-3,
        target: "< 5 ms added",
        met: added < Duration::from_millis(5),
    });
    Ok(())
}
