//! The UI protocol's part for agents: their setup, their switches, and starting a run of one.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::mcp::{LineView, SecretLine};
use bosun_shared::agents::{CliKind, WebFetch};
use bosun_shared::mcp::Risk;
use bosun_shared::placement::Placement;
use bosun_shared::{AgentId, CardId, RunId, ServerId, Timestamp};

/// A new agent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentParams {
    pub name: String,
    pub role: Option<String>,
    pub cli: CliKind,
    pub instructions: Option<String>,
    pub permission_mode: Option<String>,
    pub allowed_commands: Vec<String>,
    pub time_cap_ms: Option<u64>,
    /// The most bytes of output kept per run; no cap when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// The folder its runs work in; absolute.
    pub cwd: PathBuf,
    /// A `command` agent's program and arguments.
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<SecretLine>,
    /// The model, such as `sonnet`; the CLI's own default when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// Codex only: model and provider settings as `key=value` (TOML values), such as
    /// `model_provider="ollama"`.
    #[serde(default)]
    pub codex_config: Vec<(String, String)>,
}

/// Changes to an agent; what is absent stays.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EditAgentParams {
    pub agent: String,
    pub name: Option<String>,
    pub role: Option<String>,
    pub cli: Option<CliKind>,
    pub instructions: Option<String>,
    /// `Some("")` clears it.
    pub permission_mode: Option<String>,
    pub allowed_commands: Option<Vec<String>>,
    /// `Some(0)` clears it.
    pub time_cap_ms: Option<u64>,
    /// `Some(0)` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    pub cwd: Option<PathBuf>,
    pub command: Option<Vec<String>>,
    pub set_env: Vec<(String, String)>,
    pub remove_env: Vec<String>,
    pub set_secret_env: Vec<SecretLine>,
    pub remove_secret_env: Vec<String>,
    /// `Some("")` clears it.
    #[serde(default)]
    pub model: Option<String>,
    /// Replaces them when given.
    #[serde(default)]
    pub codex_config: Option<Vec<(String, String)>>,
    /// Pause (the board starts no run of it) or make it active again.
    #[serde(default)]
    pub paused: Option<bool>,
}

/// An agent as the UI shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    pub id: AgentId,
    pub name: String,
    pub role: String,
    pub cli: CliKind,
    pub instructions: String,
    pub permission_mode: Option<String>,
    pub allowed_commands: Vec<String>,
    pub time_cap_ms: Option<u64>,
    /// The most bytes of output kept per run; no cap when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Where its runs go; this machine when absent.
    #[serde(default, skip_serializing_if = "Placement::is_local")]
    pub placement: Placement,
    pub cwd: PathBuf,
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<LineView>,
    pub model: Option<String>,
    pub codex_config: Vec<(String, String)>,
    pub switches: SwitchesView,
    /// How its runs' tool calls are approved.
    #[serde(default)]
    pub approvals: ApprovalsView,
    /// Where its runs may write besides their own folder.
    #[serde(default)]
    pub workspace: WorkspaceView,
    pub last_run: Option<LastRunView>,
    /// What the form would warn about (an outside source with npm or npx allowed, …).
    pub warnings: Vec<String>,
    /// What the upgrade of the store carried over from its CLI permission mode, in words,
    /// until the person changes its approval settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_over: Option<String>,
    /// What each of its runs may use before its next tool call waits for the person.
    #[serde(default, skip_serializing_if = "bosun_shared::usage::Budget::is_empty")]
    pub budget: bosun_shared::usage::Budget,
    /// The board starts no run of a paused agent.
    #[serde(default)]
    pub paused: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// An agent's approval settings as shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApprovalsView {
    /// `ask`, `read-only` or `skip`.
    pub mode: String,
    /// Each saved verdict: (tool key, `allow` | `ask` | `block`).
    pub verdicts: Vec<(String, String)>,
    /// How long a call waits for the person before it is denied.
    pub wait_ms: u64,
    /// Runs the board or the lead started wait for the person too.
    pub wait_for_person: bool,
}

/// Where an agent's runs may write, as shown: their own folder (a card's worktree), these
/// roots, or anywhere but git metadata when unrestricted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceView {
    pub roots: Vec<PathBuf>,
    pub unrestricted: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_deny: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_allow: Vec<PathBuf>,
    /// `fence.read=off`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_open: bool,
    /// `fence.net=off`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net_open: bool,
    /// `fence.protect=off`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protect_open: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchesView {
    /// Every MCP server, with this agent's switch for it and its tools.
    pub mcp: Vec<ServerSwitchView>,
    pub web_search: bool,
    pub web_fetch: WebFetch,
    pub browser: bool,
    pub browser_insecure_certs: bool,
    pub skills: bool,
    /// Built-in tools bosun's catalog does not know that the person switched on by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builtins: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSwitchView {
    pub server: String,
    pub server_id: ServerId,
    pub on: bool,
    /// Its tools from the last listing, each with its switch and risk.
    pub tools: Vec<ToolSwitchView>,
    /// Whether the tools are known (listed) at all.
    pub listed: bool,
    /// For a server reached by address, its sign-in: signed in, needs sign-in, not signed in,
    /// Claude Code signs in.
    #[serde(default)]
    pub sign_in: Option<String>,
    /// The server's state in the agent's last run: connected, failed, needs-auth, left out …
    pub last_run_state: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSwitchView {
    pub name: String,
    pub on: bool,
    pub risk: Risk,
    /// Whether the CLI reported it in the last run.
    pub seen_in_last_run: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LastRunView {
    pub run: Option<RunId>,
    pub at: Option<Timestamp>,
    pub servers: Vec<(String, String)>,
    pub tools_seen: Vec<String>,
}

/// The CLI's own tools, by group, merged with what it reported in the agent's last run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuiltinToolsView {
    pub agent: String,
    pub cli: CliKind,
    /// Where the list comes from, in words.
    pub source: String,
    pub tools: Vec<BuiltinToolView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuiltinToolView {
    pub name: String,
    /// Files, Commands, Agents, Planning, Web, Other.
    pub group: String,
    pub what: String,
    /// `None`: a tool the catalog does not know.
    pub risk: Option<Risk>,
    /// always on, set elsewhere (…), off, a switch (on/off) …
    pub state: String,
    pub seen_in_last_run: bool,
}

/// The most decisions a run's view holds: the latest ones. At a few hundred bytes each, a view
/// stays far below the 4 MiB a message may be, however long the run.
pub const DECISIONS_SHOWN: usize = 1_000;

/// What bosun knows about a run of an agent, from the CLI's own stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentRunView {
    pub agent: Option<AgentId>,
    pub agent_name: String,
    /// What the run was asked to do (its start; absent on runs from before it was kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task: String,
    pub cli: Option<CliKind>,
    /// Each MCP server and its state in the run: given, connected, failed, needs-auth, or
    /// left out (why).
    pub servers: Vec<(String, String)>,
    /// The servers whose sign-in Claude Code holds itself, not bosun.
    #[serde(default)]
    pub claude_signs_in: Vec<String>,
    /// The board's card this run was started for.
    #[serde(default)]
    pub card: Option<CardId>,
    /// The tools the CLI reported it had.
    pub tools: Vec<String>,
    pub calls: Vec<ToolCallView>,
    pub session: Option<String>,
    pub model: Option<String>,
    pub result: Option<CliResultView>,
    /// What bosun decided about each tool call, for a run whose calls go through its policy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<super::approvals::DecisionView>,
    /// Where the run may write: its folder and these roots, or anywhere when unrestricted
    /// (absent for a run started before workspaces existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceView>,
    /// The fence its runner put its programs under, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<String>,
    /// What the run used, as its CLI reported it: tokens per model, its cost and where that
    /// figure comes from, its tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<bosun_shared::usage::Usage>,
    /// How many of its decisions' details were pruned after bosund's retention period.
    #[serde(default, skip_serializing_if = "bosun_shared::usage::is_zero")]
    pub decisions_pruned: u64,
    /// How many of its earliest decisions this view leaves out: it holds the latest
    /// [`DECISIONS_SHOWN`], so that a run of many thousands of calls is still one message.
    #[serde(default, skip_serializing_if = "bosun_shared::usage::is_zero")]
    pub decisions_not_shown: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallView {
    pub name: String,
    /// `None` while it runs, and for a call that never got its result.
    pub ok: Option<bool>,
    pub error: Option<String>,
    /// For a call of a run that is over and that never got its result, what happened to it
    /// instead, in words ("the run was stopped first"); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered: Option<String>,
}

/// How the CLI itself judged the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CliResultView {
    pub is_error: bool,
    pub reason: Option<String>,
    pub text: Option<String>,
}

/// Switches as `key=value` (`mcp.<server>`, `mcp.<server>.<tool>`, `web.search`, `web.fetch`,
/// `browser`, `browser.insecure-certs`, `skills`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentSet {
    pub agent: String,
    pub settings: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentShow {
    pub agent: String,
}

/// Every agent.
#[derive(Clone, Copy, Debug, Default)]
pub struct AgentList;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentRemove {
    pub agent: String,
}

/// Starts a run of the agent with this prompt.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentRun {
    pub agent: String,
    pub prompt: String,
    /// A card (by its id or the start of it) the run is for: it counts toward the card's
    /// budget and usage, and works in the agent's own folder. Refused for a card of a
    /// project, whose runs work only in its worktree, where the board starts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
}

/// The CLI's own tools; with `ask`, asks the installed Claude Code for its list.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AgentTools {
    pub agent: String,
    pub ask: bool,
}
