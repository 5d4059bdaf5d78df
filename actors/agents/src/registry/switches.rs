//! `bosun agent set KEY=VALUE …`: each switch parsed and checked into a [`Setting`] (an MCP
//! server or tool, the web, the browser, skills, built-in tools, roots and workspace,
//! approvals and verdicts, placement, budgets), then all applied, or none.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use bosun_mcp::record::ServerRecord;
use bosun_shared::Timestamp;
use bosun_shared::agents::{CliKind, WebFetch};
use bosun_shared::approvals::{ApprovalMode, ToolKey, Verdict};
use bosun_shared::placement::Placement;
use bosun_shared::settings::{KeyValue, KeyValueError};
use bosun_shared::usage::{AmountError, parse_count, parse_dollars};
use tracing::info;

use super::checks::check_record;
use super::{AgentDetail, AgentsContext, bad, detail, find, server_records};
use crate::AgentsError;
use crate::catalog;
use crate::record::{AgentRecord, ServerSwitch, ToolSelection};

/// One parsed `key=value`.
enum Setting {
    Server {
        server: ServerRecord,
        on: bool,
    },
    Tool {
        server: ServerRecord,
        tool: String,
        on: bool,
    },
    WebSearch(bool),
    WebFetch(WebFetch),
    Browser(bool),
    BrowserInsecureCerts(bool),
    Skills(bool),
    /// `approval=ask|read-only|skip`.
    ApprovalMode(ApprovalMode),
    /// `approval.wait=30s` (up to 24 h).
    ApprovalWait(u64),
    /// `approval.wait-for-person=on|off`.
    WaitForPerson(bool),
    /// `<tool key>=allow|ask|block`, or `=reset` (`None`) to forget the verdict.
    Verdict(ToolKey, Option<Verdict>),
    /// `placement=local|slurm|slurm:PARTITION`: where its runs go.
    Placement(Placement),
    /// `roots=DIR,…` (resolved), or `roots=none`.
    Roots(Vec<PathBuf>),
    /// `workspace=unrestricted|roots`.
    Unrestricted(bool),
    /// `read.deny=PATH,…`, or `read.deny=none`.
    ReadDeny(Vec<PathBuf>),
    /// `read.allow=PATH,…`, or `read.allow=none`.
    ReadAllow(Vec<PathBuf>),
    /// `fence.read=on|off`.
    FenceRead(bool),
    /// `fence.net=on|off`.
    FenceNet(bool),
    /// `fence.protect=on|off`.
    FenceProtect(bool),
    /// `builtin.NAME=on|off`: a built-in tool bosun's catalog does not know.
    Builtin(String, bool),
    /// `budget.usd=2` (in millionths of a dollar), or `=off`.
    BudgetUsd(Option<u64>),
    /// `budget.tokens=500000`, or `=off`.
    BudgetTokens(Option<u64>),
    /// `max-tool-calls=200`, or `=off`.
    MaxToolCalls(Option<u64>),
}

/// A cap of `budget.usd`, `budget.tokens` or `max-tool-calls`: `off` (or `none`) for none,
/// else an amount read by the parser cards' and projects' budgets use too, so that the same
/// value is refused for the same reason everywhere.
fn cap(
    key: &str,
    value: &str,
    parse: impl Fn(&str) -> Result<u64, AmountError>,
    example: &str,
) -> Result<Option<u64>, AgentsError> {
    let v = value.trim();
    if matches!(v, "off" | "none") {
        return Ok(None);
    }
    parse(v).map(Some).map_err(|reason| {
        bad(format!(
            "{reason}: {key} takes a positive amount, such as {key}={example}, or off"
        ))
    })
}

fn on_off(key: &str, value: &str) -> Result<bool, AgentsError> {
    bosun_shared::switch::parse(value)
        .ok_or_else(|| bad(format!("`{key}={}`: {key} takes on or off", value.trim())))
}

/// The keys `bosun agent set` takes, for messages.
const KEYS: &str = "mcp.<server>, mcp.<server>.<tool>, web.search, web.fetch, browser, browser.insecure-certs, skills, builtin.<tool>, roots, workspace, read.deny, read.allow, fence.read, fence.net, fence.protect, approval, approval.wait, approval.wait-for-person, placement, budget.usd, budget.tokens, max-tool-calls, and a tool's verdict such as Bash(git *)=allow, mcp.<server>.<tool>=block, write_file=ask or Network(example.com:443)=allow";

/// The most an agent's calls may wait for the person.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// A verdict's value: allow, ask, block, or reset (forget it).
fn verdict_value(key: &str, value: &str) -> Result<Option<Verdict>, AgentsError> {
    if value.trim() == "reset" {
        return Ok(None);
    }
    value.parse::<Verdict>().map(Some).map_err(|e| {
        bad(format!(
            "`{key}={value}`: {e}, or reset to forget the verdict"
        ))
    })
}

fn parse_setting(
    kv: KeyValue<'_>,
    servers: &[ServerRecord],
    cli: CliKind,
) -> Result<Setting, AgentsError> {
    let KeyValue { text, key, value } = kv;
    match key {
        "approval" => value
            .parse::<ApprovalMode>()
            .map(Setting::ApprovalMode)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "approval.wait" => {
            let wait = bosun_shared::time::parse_duration(value).map_err(|e| {
                bad(format!(
                    "`{text}`: {e}; write a time such as 30s, 10m or 24h"
                ))
            })?;
            if wait.is_zero() || wait > MAX_WAIT {
                return Err(bad(format!(
                    "`{text}`: a call may wait for the person from 1s up to 24h"
                )));
            }
            Ok(Setting::ApprovalWait(
                u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            ))
        }
        "approval.wait-for-person" => Ok(Setting::WaitForPerson(on_off(key, value)?)),
        "budget.usd" => cap(key, value, parse_dollars, "2").map(Setting::BudgetUsd),
        "budget.tokens" => cap(key, value, parse_count, "500000").map(Setting::BudgetTokens),
        "max-tool-calls" => cap(key, value, parse_count, "200").map(Setting::MaxToolCalls),
        "placement" => value
            .parse::<Placement>()
            .map(Setting::Placement)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "roots" => parse_roots(value)
            .map(Setting::Roots)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "workspace" => match value.trim() {
            "unrestricted" => Ok(Setting::Unrestricted(true)),
            "roots" | "restricted" => Ok(Setting::Unrestricted(false)),
            other => Err(bad(format!(
                "`workspace={other}`: workspace takes roots (its runs write only in their folder and the agent's roots) or unrestricted (anywhere but git metadata)"
            ))),
        },
        "read.deny" => parse_read_paths(value)
            .map(Setting::ReadDeny)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "read.allow" => parse_read_paths(value)
            .map(Setting::ReadAllow)
            .map_err(|e| bad(format!("`{text}`: {e}"))),
        "fence.read" => Ok(Setting::FenceRead(on_off(key, value)?)),
        "fence.net" => Ok(Setting::FenceNet(on_off(key, value)?)),
        "fence.protect" => Ok(Setting::FenceProtect(on_off(key, value)?)),
        "web.search" => Ok(Setting::WebSearch(on_off(key, value)?)),
        "web.fetch" => WebFetch::parse(value).map(Setting::WebFetch).map_err(|e| {
            bad(format!(
                "{e}; web.fetch takes off, any, or a comma-separated list of domains"
            ))
        }),
        "browser" => Ok(Setting::Browser(on_off(key, value)?)),
        "browser.insecure-certs" => Ok(Setting::BrowserInsecureCerts(on_off(key, value)?)),
        "skills" => {
            let on = on_off(key, value)?;
            if on && !cli.has_skills_switch() {
                return Err(bad(format!(
                    "skills=on is refused for a {cli} agent: bosun has no checked per-run switch for its slash commands and skills (only Claude Code has one)"
                )));
            }
            Ok(Setting::Skills(on))
        }
        other if other.starts_with("builtin.") => builtin_setting(other, value, cli),
        other => {
            let is_verdict = is_verdict(value);
            if is_verdict || !other.starts_with("mcp.") {
                if !is_verdict {
                    return Err(bad(format!(
                        "`{other}` is not a switch; the keys are {KEYS}"
                    )));
                }
                return verdict_setting(other, value, servers);
            }
            mcp_setting(other, value, servers)
        }
    }
}

/// Whether `value` is a verdict (or `reset`), not a switch: `mcp.<server>.<tool>=block` sets
/// the tool's verdict where `=off` switches it off.
fn is_verdict(value: &str) -> bool {
    matches!(
        value.trim(),
        "allow" | "ask" | "block" | "reset" | "always-allow" | "needs-approval" | "blocked"
    )
}

/// What a line sets, to find a setting given twice: its key, and for an MCP key, which names
/// a server's or a tool's switch and its verdict alike, whether it is the verdict.
fn slot<'a>(kv: &KeyValue<'a>) -> (&'a str, bool) {
    (kv.key, kv.key.starts_with("mcp.") && is_verdict(kv.value))
}

/// `builtin.NAME=on|off`: a built-in tool of the agent's CLI that bosun's catalog does not know.
fn builtin_setting(key: &str, value: &str, cli: CliKind) -> Result<Setting, AgentsError> {
    let tool = key.trim_start_matches("builtin.");
    if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad(format!(
            "`{key}`: write builtin.NAME with the tool's name as its CLI reports it, such as builtin.FancyTool"
        )));
    }
    if cli == CliKind::Command {
        return Err(bad(
            "a command agent has no built-in tools to switch".to_string()
        ));
    }
    if catalog::find(cli, tool).is_some() {
        return Err(bad(format!(
            "`{tool}` is in bosun's catalog of {cli}'s tools, where its own setting governs it (`bosun agent tools NAME` says which); builtin.NAME switches only tools the catalog does not know"
        )));
    }
    Ok(Setting::Builtin(tool.to_string(), on_off(key, value)?))
}

/// A tool's verdict, such as `Bash(git *)=allow` or `mcp.<server>.<tool>=block`.
fn verdict_setting(
    key: &str,
    value: &str,
    servers: &[ServerRecord],
) -> Result<Setting, AgentsError> {
    let tool = key.parse::<ToolKey>().map_err(|e| bad(e.to_string()))?;
    if let ToolKey::Mcp { server, .. } = &tool
        && !servers.iter().any(|s| s.name == *server)
    {
        return Err(AgentsError::not_found(format!(
            "there is no MCP server `{server}`; `bosun mcp list` shows them"
        )));
    }
    Ok(Setting::Verdict(tool, verdict_value(key, value)?))
}

/// `mcp.<server>=on|off` or `mcp.<server>.<tool>=on|off`: a server's switch, or one of its
/// listed tools'.
fn mcp_setting(key: &str, value: &str, servers: &[ServerRecord]) -> Result<Setting, AgentsError> {
    let Some(rest) = key.strip_prefix("mcp.") else {
        return Err(bad(format!("`{key}` is not a switch; the keys are {KEYS}")));
    };
    // Server names have no dots; a tool's name may.
    let (server_name, tool) = match rest.split_once('.') {
        Some((s, t)) => (s, Some(t)),
        None => (rest, None),
    };
    let Some(server) = servers.iter().find(|s| s.name == server_name) else {
        return Err(AgentsError::not_found(format!(
            "there is no MCP server `{server_name}`; add it with `bosun mcp add {server_name} …` first (`bosun mcp list` shows them)"
        )));
    };
    let on = on_off(key, value)?;
    match tool {
        None => Ok(Setting::Server {
            server: server.clone(),
            on,
        }),
        Some(tool) => {
            let Some(listing) = &server.listing else {
                return Err(bad(format!(
                    "the tools of `{server_name}` have not been listed; list them first with `bosun mcp tools {server_name}`, then switch one"
                )));
            };
            if !listing.tools.iter().any(|t| t.name == tool) {
                return Err(AgentsError::not_found(format!(
                    "`{server_name}` has no tool `{tool}` in its last listing; `bosun mcp tools {server_name}` lists them again"
                )));
            }
            Ok(Setting::Tool {
                server: server.clone(),
                tool: tool.to_string(),
                on,
            })
        }
    }
}

/// Why a workspace root cannot be one.
#[derive(Debug, thiserror::Error)]
enum BadRoot {
    #[error("{0} is not an absolute path; give each root from / (such as /home/me/notes)")]
    Relative(String),
    #[error("{0} does not exist; create it first")]
    Missing(String),
    #[error("{0} cannot be read: {1}")]
    Unreadable(String, std::io::Error),
    #[error("{0} is a file, not a folder; a root is a folder")]
    NotAFolder(String),
    #[error(
        "{0} is the root of the file system, which would let runs write anywhere; to lift the limit say so with workspace=unrestricted"
    )]
    Everything(String),
}

/// The roots of `roots=DIR,…`: each absolute, an existing folder, not `/`, resolved now (every
/// link followed), so a link changed later changes nothing. `none` (or nothing) clears them.
fn parse_roots(value: &str) -> Result<Vec<PathBuf>, BadRoot> {
    let value = value.trim();
    if value.is_empty() || value == "none" {
        return Ok(Vec::new());
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(part);
        if !path.is_absolute() {
            return Err(BadRoot::Relative(part.to_string()));
        }
        let resolved = std::fs::canonicalize(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                BadRoot::Missing(part.to_string())
            } else {
                BadRoot::Unreadable(part.to_string(), e)
            }
        })?;
        if !resolved.is_dir() {
            return Err(BadRoot::NotAFolder(part.to_string()));
        }
        if resolved.parent().is_none() {
            return Err(BadRoot::Everything(part.to_string()));
        }
        if !roots.contains(&resolved) {
            roots.push(resolved);
        }
    }
    Ok(roots)
}

/// Why a path of `read.deny=` or `read.allow=` cannot be one.
#[derive(Debug, thiserror::Error)]
enum BadReadPath {
    #[error("{0} is not an absolute path; give each path from / or from ~/ (such as ~/.secrets)")]
    Relative(String),
    #[error("{0} names `..`; give the path itself")]
    Climbs(String),
    #[error(
        "{0} is the root of the file system; to let runs read nothing, that is not a fence bosun can put up"
    )]
    Everything(String),
    #[error("{0} starts with ~/, but bosund has no HOME to read it from; give the path from /")]
    NoHome(String),
}

/// The paths of `read.deny=…` or `read.allow=…`: each absolute (or from `~/`, bosund's home),
/// without `..`, not `/`. They need not exist yet. `none` (or nothing) clears them.
fn parse_read_paths(value: &str) -> Result<Vec<PathBuf>, BadReadPath> {
    let value = value.trim();
    if value.is_empty() || value == "none" {
        return Ok(Vec::new());
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let path = match part.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(rest))
                .ok_or_else(|| BadReadPath::NoHome(part.to_string()))?,
            None => PathBuf::from(part),
        };
        if !path.is_absolute() {
            return Err(BadReadPath::Relative(part.to_string()));
        }
        if path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
        {
            return Err(BadReadPath::Climbs(part.to_string()));
        }
        if path.parent().is_none() {
            return Err(BadReadPath::Everything(part.to_string()));
        }
        let path: PathBuf = path.components().collect();
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    Ok(paths)
}

/// Makes one parsed setting on `rec` (a copy, kept only when every setting is made).
fn apply(rec: &mut AgentRecord, setting: Setting, browser_id: Option<bosun_shared::ServerId>) {
    let AgentRecord {
        switches,
        approvals,
        placement,
        workspace,
        budget,
        ..
    } = rec;
    match setting {
        Setting::BudgetUsd(cap) => budget.micro_usd = cap,
        Setting::BudgetTokens(cap) => budget.tokens = cap,
        Setting::MaxToolCalls(cap) => budget.tool_calls = cap,
        Setting::Roots(roots) => workspace.roots = roots,
        Setting::Unrestricted(on) => workspace.unrestricted = on,
        Setting::ReadDeny(paths) => workspace.read_deny = paths,
        Setting::ReadAllow(paths) => workspace.read_allow = paths,
        Setting::FenceRead(on) => workspace.reads_open = !on,
        Setting::FenceNet(on) => workspace.net_open = !on,
        Setting::FenceProtect(on) => workspace.protect_open = !on,
        Setting::Builtin(tool, true) => {
            switches.builtins.insert(tool);
        }
        Setting::Builtin(tool, false) => {
            switches.builtins.remove(&tool);
        }
        Setting::Placement(p) => *placement = p,
        Setting::ApprovalMode(mode) => approvals.mode = mode,
        Setting::ApprovalWait(ms) => approvals.wait_ms = Some(ms),
        Setting::WaitForPerson(on) => approvals.wait_for_person = on,
        Setting::Verdict(tool, Some(verdict)) => {
            approvals.verdicts.insert(tool.to_string(), verdict);
        }
        Setting::Verdict(tool, None) => {
            approvals.verdicts.remove(&tool.to_string());
        }
        Setting::Server { server, on } => {
            let entry = switches
                .mcp
                .entry(server.id)
                .or_insert_with(ServerSwitch::off);
            entry.on = on;
            if on && matches!(&entry.tools, ToolSelection::Only(set) if set.is_empty()) {
                entry.tools = ToolSelection::AllExcept(BTreeSet::new());
            }
        }
        Setting::Tool { server, tool, on } => {
            switches
                .mcp
                .entry(server.id)
                .or_insert_with(ServerSwitch::off)
                .set_tool(&tool, on);
        }
        Setting::WebSearch(on) => switches.web_search = on,
        Setting::WebFetch(f) => switches.web_fetch = f,
        Setting::Browser(on) => {
            if let Some(id) = browser_id {
                switches.mcp.entry(id).or_insert_with(ServerSwitch::off).on = on;
            }
        }
        Setting::BrowserInsecureCerts(on) => switches.browser_insecure_certs = on,
        Setting::Skills(on) => switches.skills = on,
    }
}

pub(super) async fn set(
    ctx: &AgentsContext,
    agent: &str,
    settings: &[String],
) -> Result<AgentDetail, AgentsError> {
    if settings.is_empty() {
        return Err(bad(format!(
            "no switch given; write KEY=VALUE, such as: bosun agent set {agent} mcp.github=on web.search=on (keys: {KEYS})"
        )));
    }
    let rec = find(&ctx.store, agent).await?;
    let servers = server_records(&ctx.store).await?;
    let browser_id = servers.iter().find(|s| s.browser.is_some()).map(|s| s.id);
    // Every setting is parsed and checked before any is applied: all or nothing. A key given
    // twice is refused too, since which of the two the person meant cannot be known.
    let pairs = bosun_shared::settings::parse_by(settings, slot).map_err(|e| match e {
        KeyValueError::NotKeyValue(text) => bad(format!(
            "`{text}` is not a setting; write KEY=VALUE, such as mcp.github=on or web.fetch=docs.rs (keys: {KEYS})"
        )),
        e @ (KeyValueError::NoKey(_) | KeyValueError::Twice { .. }) => bad(e.to_string()),
    })?;
    let parsed = pairs
        .into_iter()
        .map(|kv| parse_setting(kv, &servers, rec.cli))
        .collect::<Result<Vec<_>, _>>()?;
    let mut next = rec.clone();
    for p in parsed {
        apply(&mut next, p, browser_id);
    }
    if next.approvals != rec.approvals {
        // The person has decided the agent's approvals: what the upgrade carried over is theirs.
        next.carried_over = None;
    }
    let mut rec = next;
    // Switches of servers that are gone go too.
    rec.switches
        .mcp
        .retain(|id, _| servers.iter().any(|s| s.id == *id));
    check_record(&rec)?;
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(agent = %rec.name, "agent switches changed");
    detail(ctx, rec).await
}
