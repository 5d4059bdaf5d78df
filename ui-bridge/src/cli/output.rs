//! How answers are printed: tables and key-value lines for people, JSON for programs.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use bosun_protocol::agents::AgentRunView;
use bosun_protocol::runs::DaemonStatusView;
use bosun_protocol::runs::McpCallsView;
use bosun_protocol::ui::RunView;
use bosun_shared::Timestamp;
use bosun_shared::placement::PlacedView;
use bosun_shared::text::visible;
use bosun_shared::time::format_duration;
use serde::Serialize;

pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// The state in words: `running`, `succeeded`, `failed (exited with status 2)`.
pub fn state_words(run: &RunView) -> String {
    match (&run.outcome, &run.exit) {
        (Some(o), Some(exit)) => format!("{o} ({})", exit.reason),
        (Some(o), None) => o.to_string(),
        (None, _) => match (&run.stop_reason, &run.paused) {
            (Some(why), _) => format!("{} ({why})", run.state),
            (None, Some(_)) => format!("{}, paused", run.state),
            (None, None) => run.state.clone(),
        },
    }
}

/// `bosun run --follow` ends with the run's own exit status.
pub fn exit_code_of(run: &RunView) -> ExitCode {
    let code = run.exit.as_ref().map(|e| e.shell_status()).unwrap_or(1);
    ExitCode::from(code.clamp(0, 255) as u8)
}

fn command_line(run: &RunView) -> String {
    std::iter::once(run.program.as_str())
        .chain(run.args.iter().map(String::as_str))
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn age(t: Timestamp) -> String {
    let secs = Timestamp::now().since(t).as_secs();
    format_duration(Duration::from_secs(secs)) + " ago"
}

/// A run's cost in `ps`: dollars, `~` before a figure bosun worked out, `?` for an agent's run
/// whose cost is not known, `-` for a run of a plain program.
fn cost_cell(r: &RunView) -> String {
    use bosun_shared::usage::{CostSource, Dollars};
    let Some(a) = &r.agent else {
        return "-".into();
    };
    match a.usage.as_ref().and_then(|u| u.cost.as_ref()) {
        Some(c) if c.source == CostSource::Reported => Dollars(c.micro_usd).to_string(),
        Some(c) => format!("~{}", Dollars(c.micro_usd)),
        None if a
            .cli
            .is_some_and(|c| c != bosun_shared::agents::CliKind::Command) =>
        {
            "?".into()
        }
        None => "-".into(),
    }
}

pub fn print_table(runs: &[RunView]) {
    if runs.is_empty() {
        outln!("no runs");
        return;
    }
    let rows: Vec<[String; 6]> = runs
        .iter()
        .map(|r| {
            [
                r.short_id.clone(),
                r.name.clone().unwrap_or_else(|| "-".into()),
                match (r.outcome, &r.paused, &r.placed) {
                    (Some(o), _, _) => o.to_string(),
                    (None, Some(_), _) => format!("{}, paused", r.state),
                    (None, None, Some(p)) => match &p.node {
                        Some(node) => format!("{} on {node}", r.state),
                        None => format!("{} ({})", r.state, p.placement),
                    },
                    (None, None, None) => r.state.clone(),
                },
                age(r.created_at),
                cost_cell(r),
                visible(&command_line(r)).into_owned(),
            ]
        })
        .collect();
    let headers = ["ID", "NAME", "STATE", "CREATED", "COST", "COMMAND"];
    let mut widths = headers.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s
    };
    outln!("{}", line(&headers));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        outln!("{}", line(&cells));
    }
}

pub fn print_run(run: &RunView) {
    let mut lines = process_lines(run);
    if let Some(a) = &run.agent {
        lines.extend(agent_lines(run, a));
    }
    if let Some(m) = &run.mcp_calls {
        lines.extend(mcp_call_lines(m));
    }
    // Each value is one line: whatever it quotes (a tool's error, a server's words, a program's
    // arguments) has its control characters written out.
    for (k, v) in lines {
        outln!("{k:<14}{}", visible(&v));
    }
}

/// The lines every run has: its state, its command, its times, its process and its output.
fn process_lines(run: &RunView) -> Vec<(&'static str, String)> {
    let mut lines = vec![
        ("id", run.id.to_string()),
        ("name", run.name.clone().unwrap_or_else(|| "-".into())),
        ("state", state_words(run)),
    ];
    if let Some(why) = &run.paused {
        lines.push(("paused", why.trim_start_matches("paused: ").to_string()));
    }
    if let Some(why) = &run.log_unflushed {
        lines.push(("log", why.clone()));
    }
    lines.extend([
        ("command", command_line(run)),
        ("cwd", run.cwd.display().to_string()),
        ("created", run.created_at.rfc3339()),
    ]);
    if let Some(t) = run.started_at {
        lines.push(("started", t.rfc3339()));
    }
    if let Some(t) = run.ended_at {
        lines.push(("ended", t.rfc3339()));
    }
    if let Some(p) = &run.placed {
        lines.extend(placement_lines(run, p));
    }
    if let (Some(pid), Some(pgid)) = (run.pid, run.pgid) {
        let host = if run.placed.is_some() {
            " on its host"
        } else {
            ""
        };
        lines.push(("pid", format!("{pid} (process group {pgid}){host}")));
    }
    if let Some(exit) = &run.exit {
        if let Some(code) = exit.code {
            lines.push(("exit status", code.to_string()));
        }
        if let Some(sig) = exit.signal {
            lines.push(("signal", bosun_shared::run::signal_name(sig)));
        }
    }
    if let Some(cap) = run.time_cap_ms {
        lines.push(("time cap", format_duration(Duration::from_millis(cap))));
    }
    lines.push(("output chunks", run.last_seq.to_string()));
    if let Some(p) = &run.log_pruned {
        let why = match p.why.as_str() {
            "size" => "past bosund's logs.max, among the oldest",
            _ => "after bosund's retention period",
        };
        lines.push((
            "log",
            format!(
                "pruned {} ({why}): its output and MCP call records are gone ({}), the run's summary is kept",
                p.at.rfc3339(),
                format_size(p.bytes)
            ),
        ));
    }
    lines
}

/// Where a placed run went, and how long it waited in its queue.
fn placement_lines(run: &RunView, p: &PlacedView) -> Vec<(&'static str, String)> {
    let node = match &p.node {
        Some(node) => format!(", on {node}"),
        None => String::new(),
    };
    let mut lines = vec![(
        "placement",
        format!("{} (job {}{node})", p.placement, p.job),
    )];
    let queue = match p.queued_ms {
        Some(ms) => format!(
            "waited {} in its queue",
            format_duration(Duration::from_secs(ms.saturating_add(500) / 1000))
        ),
        None if run.state == "queued" => "waiting in its queue".into(),
        None => String::new(),
    };
    if !queue.is_empty() {
        lines.push(("queue", queue));
    }
    lines
}

/// An agent's run: its agent, servers, tool calls, the policy's decisions, usage and verdict.
fn agent_lines(run: &RunView, a: &AgentRunView) -> Vec<(&'static str, String)> {
    let mut owned: Vec<(&str, String)> = vec![("agent", a.agent_name.clone())];
    if let Some(first) = a.task.lines().find(|l| !l.trim().is_empty()) {
        let more = if a.task.trim().lines().count() > 1 {
            " …"
        } else {
            ""
        };
        owned.push(("task", format!("{}{more}", first.trim())));
    }
    if let Some(m) = &a.model {
        owned.push(("model", m.clone()));
    }
    if let Some(w) = &a.workspace {
        owned.push(("workspace", workspace_words(&run.cwd, w)));
    }
    if let Some(f) = &a.fence {
        owned.push(("fence", f.clone()));
    }
    for (server, state) in &a.servers {
        owned.push(("mcp server", format!("{server}: {state}")));
    }
    if !a.tools.is_empty() {
        owned.push(("tools", format!("{} reported by the CLI", a.tools.len())));
    }
    for c in &a.calls {
        let how = match (c.ok, &c.error) {
            (Some(true), _) => "ok".to_string(),
            (Some(false), Some(e)) => format!("failed: {e}"),
            (Some(false), None) => "failed".to_string(),
            (None, _) => match &c.unanswered {
                Some(what) => format!("no result: {what}"),
                None => "running".to_string(),
            },
        };
        owned.push(("tool call", format!("{} ({how})", c.name)));
    }
    if a.decisions_pruned > 0 {
        owned.push((
            "decisions",
            format!(
                "{} pruned after bosund's retention period; the run's summary is kept",
                a.decisions_pruned
            ),
        ));
    }
    if a.decisions_not_shown > 0 {
        owned.push((
            "decisions",
            format!(
                "{} earlier not shown; the latest {} follow",
                a.decisions_not_shown,
                a.decisions.len()
            ),
        ));
    }
    for d in &a.decisions {
        let why = match &d.message {
            Some(m) => format!(" — told: {m}"),
            None => String::new(),
        };
        let approval = d
            .approval
            .map(|id| format!(" [approval {}]", id.short()))
            .unwrap_or_default();
        owned.push((
            "decision",
            format!("{} {} by {}{approval}{why}", d.decision, d.summary, d.by),
        ));
    }
    if let Some(u) = &a.usage {
        for m in &u.models {
            owned.push(("tokens", tokens_words(&m.model, &m.tokens)));
        }
        owned.push(("cost", cost_words(u.cost.as_ref())));
        owned.push(("tool calls", u.tool_calls.to_string()));
    }
    if let Some(r) = &a.result {
        let verdict = if r.is_error { "error" } else { "ok" };
        let reason = r
            .reason
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default();
        owned.push(("cli verdict", format!("{verdict}{reason}")));
    }
    owned
}

/// The server calls the gateway saw, the last ones when there were more.
fn mcp_call_lines(m: &McpCallsView) -> Vec<(&'static str, String)> {
    let mut owned: Vec<(&str, String)> = Vec::new();
    if m.total > m.calls.len() as u64 {
        owned.push((
            "mcp calls",
            format!("{} (the last {} below)", m.total, m.calls.len()),
        ));
    }
    for c in &m.calls {
        owned.push(("mcp call", mcp_call_words(c)));
    }
    owned
}

/// One MCP call through the gateway: `12:00:01 everything/echo {"message":"hi"}: answered in
/// 4 ms, 10 characters; allowed by the person (asked at the gateway)`.
fn mcp_call_words(c: &bosun_shared::gateway::CallEntry) -> String {
    let mut words = format!(
        "{} {}/{} {}: {}",
        c.at.rfc3339(),
        c.server,
        c.tool,
        c.args,
        c.outcome.words()
    );
    if let Some(ms) = c.ms {
        words.push_str(&format!(" after {ms} ms"));
    }
    match (c.chars, c.model_got) {
        (Some(n), Some(got)) => words.push_str(&format!(
            ", {n} characters (the model got {got}: head and tail; the whole is in the log)"
        )),
        (Some(n), None) => words.push_str(&format!(", {n} characters")),
        _ => {}
    }
    if let Some(d) = &c.decision {
        words.push_str(&format!("; {}", d.words()));
    }
    words
}

/// One model's tokens: `claude-opus-5-5: 36 in, 60 out, 7 from cache, 3 to cache`.
fn tokens_words(model: &str, t: &bosun_shared::usage::Tokens) -> String {
    let mut words = format!("{model}: {} in, {} out", t.input, t.output);
    if t.cache_read > 0 || t.cache_write > 0 {
        words.push_str(&format!(
            ", {} from cache, {} to cache",
            t.cache_read, t.cache_write
        ));
    }
    words
}

/// A run's cost and where the figure comes from.
pub fn cost_words(cost: Option<&bosun_shared::usage::Cost>) -> String {
    use bosun_shared::usage::{CostSource, Dollars};
    match cost {
        Some(c) => match &c.source {
            CostSource::Reported => format!("{} (as the CLI reported it)", Dollars(c.micro_usd)),
            CostSource::Computed { date } => {
                format!("{} (worked out from the prices of {date})", Dollars(c.micro_usd))
            }
        },
        None => "unknown (the CLI said none, and no price is known for its model; add one in prices.toml)".to_string(),
    }
}

/// A budget several runs share, in a line: `$5.00 for all its runs; spent $1.2345, 40000
/// tokens, 12 tool calls; allowed more: $5.00`.
pub fn shared_budget(b: &bosun_protocol::board::SharedBudgetView, what: &str) -> String {
    use bosun_shared::usage::Dollars;
    let mut line = format!(
        "{} {what}; spent {}{} tokens",
        b.caps.caps_words().unwrap_or_else(|| "none".into()),
        b.spent_micro_usd
            .map(|c| format!("{}, ", Dollars(c)))
            .unwrap_or_default(),
        b.spent_tokens
    );
    if b.spent_calls > 0 || b.caps.tool_calls.is_some() {
        line.push_str(&format!(", {} tool calls", b.spent_calls));
    }
    if let Some(more) = b.more.caps_words() {
        line.push_str(&format!("; allowed more: {more}"));
    }
    line
}

/// What an agent's run should tell the person at its end: the MCP servers the CLI could not
/// use.
pub fn server_problems(run: &RunView) -> Vec<String> {
    let Some(a) = &run.agent else {
        return Vec::new();
    };
    a.servers
        .iter()
        .filter_map(|(server, state)| match state.as_str() {
            "failed" => Some(format!("MCP server {server} failed to connect in this run")),
            "needs-auth" if a.claude_signs_in.contains(server) => Some(format!(
                "MCP server {server} needs Claude Code to sign in, and this run went without it: \
                 start `claude` once with this agent's HOME and CLAUDE_CONFIG_DIR, type `/mcp`, \
                 choose {server} and sign in; later runs use that sign-in"
            )),
            "needs-auth" => Some(format!(
                "MCP server {server} refused this run for want of a sign-in, and the run went \
                 without it; sign in with `bosun mcp sign-in {server}`"
            )),
            _ => None,
        })
        .collect()
}

pub fn print_status(s: &DaemonStatusView) {
    outln!("bosund is running");
    outln!("{:<14}{}", "pid", s.pid);
    outln!("{:<14}{}", "version", s.version);
    outln!("{:<14}{}", "state dir", s.state_dir.display());
    outln!(
        "{:<14}{} ({})",
        "up since",
        s.started_at.rfc3339(),
        age(s.started_at)
    );
    outln!("{:<14}{}", "live runs", s.live_runs);
    outln!("{:<14}{} connected", "runners", s.attached_runners);
    if let Some(listener) = &s.runner_listener {
        outln!("{:<14}{listener}", "remote runners");
    }
    if s.shutting_down {
        outln!("{:<14}yes", "shutting down");
    }
    match (&s.storage_fault, &s.storage_last_fault) {
        (Some(fault), _) => outln!("{:<14}cannot write: {fault}", "storage"),
        (None, Some(last)) => outln!("{:<14}ok; {last}", "storage"),
        (None, None) => outln!("{:<14}ok", "storage"),
    }
    if let Some(line) = &s.upgrade {
        outln!("{:<14}{line}", "upgrade");
    }
    if let Some(notify) = &s.notify {
        outln!("{:<14}{}", "notify", notify_words(notify));
    }
    if let Some(ms) = s.retention_ms {
        outln!(
            "{:<14}decided approvals and finished runs' decision details, logs and MCP call records kept {} (bosun daemon set retention=…)",
            "retention",
            format_duration(Duration::from_millis(ms))
        );
        match s.logs_max {
            Some(max) => outln!(
                "{:<14}the finished runs' logs take {} at most, the oldest pruned first (bosun daemon set logs.max=…)",
                "logs.max",
                format_size(max)
            ),
            None => outln!(
                "{:<14}off: the finished runs' logs are bounded by the retention only (bosun daemon set logs.max=20G)",
                "logs.max"
            ),
        }
    }
    if let Some(p) = &s.last_prune {
        outln!(
            "{:<14}{}: {} decided approvals, the decision details of {} finished runs, the logs of {} ({}), in {}",
            "last pruned",
            age(p.ended_at),
            p.approvals,
            p.runs,
            p.logs,
            format_size(p.log_bytes),
            format_duration(Duration::from_millis(p.took_ms))
        );
    }
    if let Some(bytes) = s.store_bytes {
        outln!("{:<14}{}", "store", format_size(bytes));
    }
    if let Some(c) = &s.last_compact {
        outln!(
            "{:<14}{}: {} → {}, in {}",
            "compacted",
            age(c.ended_at),
            format_size(c.before),
            format_size(c.after),
            format_duration(Duration::from_millis(c.took_ms))
        );
    }
}

/// A size in words for people: whole units where they are whole, else one decimal of MiB or
/// GiB (`1.4 GiB`), else bytes.
pub fn format_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && !b.is_multiple_of(1 << 30) => {
            format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
        }
        b if b >= 1 << 20 && !b.is_multiple_of(1 << 20) => {
            format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
        }
        b => bosun_shared::size::format_size(b),
    }
}

/// Desktop notifications in words: on or off (and how to change it), how many were shown, and
/// why the last could not be.
pub fn notify_words(n: &bosun_protocol::runs::NotifyView) -> String {
    if !n.on {
        return "off (bosun daemon set notify=on)".to_string();
    }
    let mut words = format!("on, {} shown since bosund started", n.shown);
    if let Some(problem) = &n.problem {
        words.push_str(&format!("; the last could not be: {problem}"));
    }
    words
}

/// Where a run may write, in words: its folder and its agent's roots, or anywhere.
pub fn workspace_words(
    folder: &std::path::Path,
    w: &bosun_protocol::agents::WorkspaceView,
) -> String {
    if w.unrestricted {
        return "unrestricted: file tools may write anywhere but git metadata".to_string();
    }
    let mut words = std::iter::once(folder)
        .chain(w.roots.iter().map(std::path::PathBuf::as_path))
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let paths = |ps: &[std::path::PathBuf]| {
        ps.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if w.reads_open {
        words.push_str("; reads not fenced (fence.read=off)");
    } else {
        if !w.read_deny.is_empty() {
            words.push_str(&format!("; also unreadable: {}", paths(&w.read_deny)));
        }
        if !w.read_allow.is_empty() {
            words.push_str(&format!("; readable after all: {}", paths(&w.read_allow)));
        }
    }
    if w.net_open {
        words.push_str("; network not fenced (fence.net=off)");
    }
    if w.protect_open {
        words.push_str("; git hooks and settings in its roots writable (fence.protect=off)");
    }
    words
}
