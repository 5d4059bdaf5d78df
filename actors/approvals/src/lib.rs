//! Approvals for every run: the policy that decides each tool call of an agent's run
//! ([`policy`], pure), the approvals that wait for the person ([`record`]), and what joins them
//! to the store: [`evaluate`] reads the agent's settings and the tool's class as they are now and
//! asks the policy. [`carry`] says which verdicts an agent's CLI permission mode becomes when an
//! older store is upgraded.
//!
//! The RunActor of each run is the one place its calls are decided (`runs::run_actor::asks`).

use bosun_mcp::record::ServerReads;
pub mod carry;
pub mod gate;
pub mod policy;
pub mod record;
pub mod workspace;

use std::collections::BTreeMap;
use std::path::Path;

use bosun_protocol::runner::ToolAsk;
use bosun_shared::agents::CliKind;
use serde_json::Value;

use bosun_agents::record::{AgentRecord, AgentRun, WorkspaceSettings};
use bosun_agents::registry::{AgentsHandle, AgentsMsg};
use bosun_mcp::record::ServerRecord;
use bosun_store::{Store, StoreError};
use policy::Refusal;
use policy::{Class, Decision, PolicyInput, ToolKey, Verdict};
use record::ApprovalRecord;
use workspace::Workspace;

use bosun_agents::registry::DEFAULT_APPROVAL_WAIT_MS as DEFAULT_WAIT_MS;

/// What the policy made of one ask.
#[derive(Debug)]
pub enum Outcome {
    Allow { rule: String },
    Deny { rule: String, message: String },
    Ask { why: String },
}

/// One ask, judged.
#[derive(Debug)]
pub struct Evaluation {
    pub outcome: Outcome,
    /// The tool's class in words.
    pub class: String,
    /// Allowed, it takes in outside content.
    pub escalates: bool,
    /// What it would do, in one line.
    pub summary: String,
    /// What it would do, in a few lines.
    pub preview: String,
    /// Its arguments with secret-looking values hidden.
    pub input: Value,
    pub wait_ms: u64,
    pub attended: bool,
    /// What `--always` or `--block` saves a verdict under: the tool's key, or for a shell
    /// command that exact command; `None` when the line is not one plain command.
    pub verdict_key: Option<String>,
}

/// A tool as the CLI named it: a built-in, or an MCP server's tool.
enum Named<'a> {
    Builtin(&'a str),
    Mcp { server: String, tool: String },
}

/// Splits an MCP tool's name as the CLI writes it (`mcp__<server>__<tool>`; Gemini's
/// `mcp_<server>_<tool>` is matched against the servers known).
fn named<'a>(cli: CliKind, tool: &'a str, servers: &[ServerRecord]) -> Named<'a> {
    if let Some(rest) = tool.strip_prefix("mcp__")
        && let Some((server, t)) = rest.split_once("__")
    {
        return Named::Mcp {
            server: server.to_string(),
            tool: t.to_string(),
        };
    }
    if cli == CliKind::Gemini
        && let Some(rest) = tool.strip_prefix("mcp_")
        && let Some(s) = servers
            .iter()
            .filter(|s| rest.starts_with(&format!("{}_", s.name)))
            .max_by_key(|s| s.name.len())
    {
        return Named::Mcp {
            server: s.name.clone(),
            tool: rest[s.name.len() + 1..].to_string(),
        };
    }
    Named::Builtin(tool)
}

/// Judges one ask of a run working in `folder`, from the agent's settings and the servers as
/// they are now.
pub fn evaluate(
    store: &Store,
    run: &AgentRun,
    folder: &Path,
    escalated: bool,
    ask: &ToolAsk,
) -> Result<Evaluation, StoreError> {
    let agent = match run.agent {
        Some(id) => store.get::<AgentRecord>(&id)?,
        None => None,
    };
    let cli = run.cli.unwrap_or(CliKind::Command);
    let servers = store.servers()?;
    let settings = agent
        .as_ref()
        .map(|a| a.approvals.clone())
        .unwrap_or_default();
    let verdicts = verdicts_of(agent.as_ref());
    let (class, key) = class_and_key(cli, &ask.tool, &ask.input, &servers);
    let command = policy::shell_command(cli, &ask.tool, &ask.input);
    let verdict = policy::verdict_for(&verdicts, &key, command);
    let attended = !run.unattended || settings.wait_for_person;
    let refused = agent
        .as_ref()
        .and_then(|a| first_step(a, run.workspace.as_ref(), cli, &servers, folder, ask));
    let decision = policy::decide(&PolicyInput {
        refused,
        mode: settings.mode,
        class,
        verdict,
        escalated,
        attended,
        holds_secret: ask.redacted,
    });
    let input = redact(&ask.input);
    let (summary, preview) = describe(cli, &ask.tool, &key, &input, ask.cwd.as_deref());
    let verdict_key = match (command, &key) {
        (Some(line), _) => policy::exact_command(line).map(|k| k.to_string()),
        // The proxy's ask names one host and port; one that does not read saves nothing,
        // never a verdict for every host.
        (None, ToolKey::Builtin(name)) if name == policy::NET_TOOL => None,
        (None, _) => Some(key.to_string()),
    };
    // The run's record keeps the rule in words with the spec's step ("… (step 4)").
    let by = |rule: &policy::Rule| format!("{rule} (step {})", rule.step());
    let outcome = match &decision {
        Decision::Allow { rule } => Outcome::Allow { rule: by(rule) },
        Decision::Deny { rule, reason } => Outcome::Deny {
            rule: by(rule),
            message: reason.clone(),
        },
        Decision::Ask { rule } => Outcome::Ask {
            why: rule.to_string(),
        },
    };
    Ok(Evaluation {
        outcome,
        class: class.kind.to_string(),
        escalates: policy::escalates(class),
        summary,
        preview,
        input,
        wait_ms: settings.wait_ms.unwrap_or(DEFAULT_WAIT_MS),
        attended,
        verdict_key,
    })
}

/// The policy's first step for a call of the agent's run: its switches, then, for a file tool,
/// where it writes.
fn first_step(
    agent: &AgentRecord,
    run_workspace: Option<&WorkspaceSettings>,
    cli: CliKind,
    servers: &[ServerRecord],
    folder: &Path,
    ask: &ToolAsk,
) -> Option<Refusal> {
    // A host the fence's proxy asks for has no switch: the list the run started with is
    // `web.fetch`'s, and what is beyond it is the person's to allow or not.
    if ask.tool == policy::NET_TOOL {
        return None;
    }
    let named = named(cli, &ask.tool, servers);
    let call = match &named {
        Named::Builtin(name) => gate::Call::Builtin {
            name,
            input: &ask.input,
        },
        Named::Mcp { server, tool } => gate::Call::Mcp { server, tool },
    };
    let who = gate::Agent {
        name: &agent.name,
        cli,
        switches: &agent.switches,
        servers,
    };
    if let Some(refusal) = gate::switches(who, call) {
        return Some(refusal);
    }
    let targets = workspace::written_paths(cli, &ask.tool, &ask.input)?;
    let settings = run_workspace.unwrap_or(&agent.workspace);
    let space = Workspace::new(folder, &settings.roots, settings.unrestricted);
    if targets.is_empty() {
        return Some(Refusal {
            rule: policy::Rule::OutsideWorkspace,
            reason: format!(
                "bosun could not tell which file `{}` writes, so it cannot check it against the run's workspace",
                ask.tool
            ),
        });
    }
    let cwd = ask.cwd.as_deref().unwrap_or(folder);
    targets
        .iter()
        .find_map(|t| space.refuse_write(&agent.name, cwd, t))
}

/// The agent's saved verdicts, with its allowed commands (`Bash(git *)`) as "always allow"
/// where no verdict of its own says otherwise.
fn verdicts_of(agent: Option<&AgentRecord>) -> BTreeMap<String, Verdict> {
    let Some(agent) = agent else {
        return BTreeMap::new();
    };
    let mut verdicts = agent.approvals.verdicts.clone();
    for rule in &agent.allowed_commands {
        if let Ok(key) = rule.parse::<ToolKey>() {
            verdicts
                .entry(key.to_string())
                .or_insert(Verdict::AlwaysAllow);
        }
    }
    verdicts
}

fn class_and_key(
    cli: CliKind,
    tool: &str,
    input: &Value,
    servers: &[ServerRecord],
) -> (Class, ToolKey) {
    if tool == policy::NET_TOOL {
        let key = net_target(input)
            .and_then(|(host, port)| policy::HostKey::exact(host, port))
            .map_or_else(|| ToolKey::Builtin(tool.to_string()), ToolKey::Host);
        return (Class::NETWORK, key);
    }
    match named(cli, tool, servers) {
        Named::Builtin(name) => (
            policy::classify_builtin(cli, name, input),
            ToolKey::Builtin(name.to_string()),
        ),
        Named::Mcp { server, tool }
            if server == bosun_agents::launch::BOSUN_SERVER
                && !servers.iter().any(|s| s.name == server) =>
        {
            (
                policy::classify_bosun_tool(&tool),
                ToolKey::Mcp { server, tool },
            )
        }
        Named::Mcp { server, tool } => {
            let hints = servers
                .iter()
                .find(|s| s.name == server)
                .and_then(|s| s.listing.as_ref())
                .and_then(|l| l.tools.iter().find(|t| t.name == tool))
                .map(|t| t.hints)
                .unwrap_or_default();
            (
                policy::classify_mcp(&server, &hints),
                ToolKey::Mcp { server, tool },
            )
        }
    }
}

/// The host and port of the proxy's ask ([`policy::NET_TOOL`]).
fn net_target(input: &Value) -> Option<(&str, u16)> {
    let host = input.get("host").and_then(Value::as_str)?;
    let port = input.get("port").and_then(Value::as_u64)?;
    Some((host, u16::try_from(port).ok()?))
}

/// Whether the tool of an approval is blocked now (the message for the model when it is).
pub fn blocked(
    store: &Store,
    run: &AgentRun,
    tool: &str,
    input: &Value,
) -> Result<Option<String>, StoreError> {
    let Some(agent) = run
        .agent
        .map(|id| store.get::<AgentRecord>(&id))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let cli = run.cli.unwrap_or(CliKind::Command);
    let servers = store.servers()?;
    let (_, key) = class_and_key(cli, tool, input, &servers);
    let command = policy::shell_command(cli, tool, input);
    let verdicts = verdicts_of(Some(&agent));
    Ok(
        (policy::verdict_for(&verdicts, &key, command) == Some(Verdict::Blocked))
            .then(|| blocked_message(tool)),
    )
}

/// What the model is told when a tool is blocked.
pub fn blocked_message(tool: &str) -> String {
    format!("`{tool}`: {}", policy::BLOCKED)
}

/// `--always` or `--block` on an approval: the verdict saved for the agent.
#[derive(Clone, Copy, Debug)]
pub enum AlwaysOrBlock {
    Always,
    Block,
}

/// Saves the person's verdict for the tool of an approval (through the Agents actor, checked
/// and committed like any `bosun agent set`): for a shell command, that exact command.
pub async fn set_verdict(
    agents: &AgentsHandle,
    a: &ApprovalRecord,
    which: AlwaysOrBlock,
) -> Result<(), VerdictError> {
    let Some(agent) = a.agent else {
        return Err(VerdictError::NoAgent);
    };
    let Some(key) = &a.verdict_key else {
        return Err(VerdictError::NotOneCommand {
            preview: cut(a.preview.lines().next().unwrap_or_default(), 120),
            agent: a.agent_name.clone(),
        });
    };
    let value = match which {
        AlwaysOrBlock::Always => Verdict::AlwaysAllow,
        AlwaysOrBlock::Block => Verdict::Blocked,
    };
    let setting = format!("{key}={value}");
    let agents = agents.get().ok_or(VerdictError::Starting)?;
    ractor::call!(agents, |reply| AgentsMsg::Set {
        agent: agent.to_string(),
        settings: vec![setting.clone()],
        reply
    })
    .map_err(|e| VerdictError::Unanswered(e.to_string()))?
    .map(|_| ())
    .map_err(|why| VerdictError::Refused { setting, why })
}

/// Why [`set_verdict`] saved no verdict.
#[derive(Debug, thiserror::Error)]
pub enum VerdictError {
    #[error("the run has no agent to save a verdict on")]
    NoAgent,
    /// The call is not one plain command: `preview` is its first line, cut, and `agent` the
    /// agent's name, for the pattern the person may save instead.
    #[error(
        "`{preview}` is not one plain command, so it cannot be saved as a verdict of its own; decide it once, and save a pattern with `bosun agent set {agent} 'Bash(…)=allow'` if you want one"
    )]
    NotOneCommand { preview: String, agent: String },
    /// The Agents actor has not started: retrying in a moment helps.
    #[error("the agents are starting; try again")]
    Starting,
    /// The Agents actor did not answer (what ractor said).
    #[error("could not save the verdict: {0}")]
    Unanswered(String),
    /// The Agents actor refused the setting (`key=verdict`).
    #[error("could not save the verdict {setting}: {why}")]
    Refused {
        setting: String,
        why: bosun_agents::AgentsError,
    },
}

/// Argument names whose values are hidden wherever an approval is shown.
const SECRET_WORDS: [&str; 9] = [
    "token",
    "secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "private_key",
];

/// The arguments with the values of secret-looking names hidden. A number under a name of
/// tokens in the plural (`maxTokens`, `max_tokens`) is a count of a model's tokens, shown.
pub fn redact(input: &Value) -> Value {
    match input {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase().replace('-', "_");
                    let a_count = v.is_number() && lower.contains("tokens");
                    if !a_count && SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                        (k.clone(), Value::String("(hidden)".into()))
                    } else {
                        (k.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => input.clone(),
    }
}

/// A string field of the input.
fn field<'a>(input: &'a Value, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .find_map(|n| input.get(n).and_then(Value::as_str))
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// What a call would do: one line, and a preview of a few lines (the command and its folder; the
/// file and its new text or the change; the address; an MCP server's tool and its arguments,
/// secrets hidden).
/// (`input` already redacted.)
pub fn describe(
    cli: CliKind,
    tool: &str,
    key: &ToolKey,
    input: &Value,
    cwd: Option<&std::path::Path>,
) -> (String, String) {
    let folder = cwd
        .map(|c| format!("\nin {}", c.display()))
        .unwrap_or_default();
    if tool == policy::NET_TOOL {
        let target = match key {
            ToolKey::Host(host) => host.to_string(),
            ToolKey::Builtin(_) | ToolKey::Mcp { .. } | ToolKey::Command(_) => {
                "a host bosun cannot read".to_string()
            }
        };
        let how = match field(input, &["how"]) {
            Some("tunnel") => " (a tunnel: HTTPS or another protocol inside)",
            Some("http") => " (plain HTTP)",
            Some(_) | None => "",
        };
        let why = field(input, &["why"]).unwrap_or("it is not in the run's list of hosts");
        return (
            format!("{tool}: {target}"),
            format!(
                "connect to {target}{how}\nthe run's fence refused it: {}\nallowed, it stays open to the run until its end; --always allows it for the agent",
                cut(why, 300)
            ),
        );
    }
    if let Some(cmd) = policy::shell_command(cli, tool, input) {
        return (
            format!("{tool}: {}", cut(cmd, 200)),
            format!("$ {}{folder}", cut(cmd, 4000)),
        );
    }
    if let Some(url) = field(input, &["url", "uri"]) {
        return (
            format!("{tool}: {}", cut(url, 200)),
            format!("fetch {}", cut(url, 2000)),
        );
    }
    if let Some(query) = field(input, &["query"]) {
        return (
            format!("{tool}: {}", cut(query, 200)),
            format!("search: {}", cut(query, 2000)),
        );
    }
    if let Some(path) = field(
        input,
        &["file_path", "path", "absolute_path", "notebook_path"],
    ) {
        let mut preview = format!("file {path}");
        if let (Some(old), Some(new)) = (
            field(input, &["old_string", "old_str"]),
            field(input, &["new_string", "new_str"]),
        ) {
            for l in old.lines().take(40) {
                preview.push_str(&format!("\n- {l}"));
            }
            for l in new.lines().take(40) {
                preview.push_str(&format!("\n+ {l}"));
            }
        } else if let Some(text) = field(input, &["content", "contents", "text"]) {
            for l in text.lines().take(40) {
                preview.push_str(&format!("\n+ {l}"));
            }
            if text.lines().count() > 40 {
                preview.push_str(&format!("\n… {} lines in all", text.lines().count()));
            }
        }
        return (format!("{tool}: {}", cut(path, 200)), preview);
    }
    let args = serde_json::to_string(input).unwrap_or_default();
    let line = match key {
        ToolKey::Mcp { server, tool } => format!("{server} · {tool} {}", cut(&args, 160)),
        ToolKey::Builtin(_) | ToolKey::Command(_) | ToolKey::Host(_) => {
            format!("{tool} {}", cut(&args, 160))
        }
    };
    let preview = serde_json::to_string_pretty(input).unwrap_or_default();
    (line, cut(&preview, 4000))
}

#[cfg(test)]
mod tests {
    use super::redact;
    use serde_json::json;

    #[test]
    fn secrets_are_hidden_and_counts_of_tokens_are_not() {
        let shown = redact(&json!({
            "prompt": "say hello",
            "maxTokens": 20,
            "api_token": "canary-1",
            "nested": [{"Password": "canary-2", "max_tokens": 5}],
            "tokens": "canary-3",
        }));
        assert_eq!(
            shown,
            json!({
                "prompt": "say hello",
                "maxTokens": 20,
                "api_token": "(hidden)",
                "nested": [{"Password": "(hidden)", "max_tokens": 5}],
                "tokens": "(hidden)",
            })
        );
    }
}
