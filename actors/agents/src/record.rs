//! An agent as stored in redb (`agents[agent id]`): its setup, its switches, and what its last
//! run found; and the agent part of a run's record ([`AgentRun`], kept in `runs[run id]`, read
//! from the CLI's stream by `stream`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bosun_protocol::runner::ToolAnswer;
use bosun_shared::agents::{CliKind, WebFetch};
use bosun_shared::approvals::{ApprovalMode, Verdict};
use bosun_shared::placement::Placement;
use bosun_shared::time::TimeCap;
use bosun_shared::usage::{Budget, Usage};
use bosun_shared::{
    AgentId, AnswerId, ApprovalId, CardId, ChatId, ProjectId, RunId, ServerId, Timestamp,
};
use serde::{Deserialize, Serialize};

use bosun_store::{Record, Store, StoreError};

use crate::AgentsError;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: AgentId,
    pub name: String,
    /// `worker`, or `lead` for the agent the person chats with.
    pub role: String,
    pub cli: CliKind,
    pub instructions: String,
    pub permission_mode: Option<String>,
    /// Commands the agent may run without asking, such as `Bash(git *)`.
    pub allowed_commands: Vec<String>,
    pub time_cap_ms: Option<u64>,
    /// The most bytes of output kept per run (`--max-output`); no cap when absent. Left out of
    /// the record when unset, so that an agent without one is stored as before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// The folder its runs work in.
    pub cwd: PathBuf,
    /// A `command` agent's program and arguments.
    pub command: Vec<String>,
    /// Plain environment lines for its runs.
    pub env: Vec<(String, String)>,
    /// Names of secret environment lines; each value is in the keychain under
    /// `agent/<id>/env/<name>`.
    pub secret_env: Vec<String>,
    /// The model; the CLI's own default when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// Codex only: model and provider settings (`-c key=value`).
    #[serde(default)]
    pub codex_config: Vec<(String, String)>,
    pub switches: Switches,
    /// How its runs' tool calls are approved; left out of the record while it is the default,
    /// so that an agent without settings of its own is stored as before they existed.
    #[serde(default, skip_serializing_if = "ApprovalSettings::is_default")]
    pub approvals: ApprovalSettings,
    /// Where its runs may write besides their own folder.
    #[serde(default, skip_serializing_if = "WorkspaceSettings::is_default")]
    pub workspace: WorkspaceSettings,
    /// What each of its runs may use before its next tool call waits for the person; left out
    /// of the record while it has no cap.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
    /// Paused: the board starts no run of it (a person's own `agent run` still does).
    #[serde(default)]
    pub paused: bool,
    /// Where its runs go (`agent set NAME placement=slurm:PARTITION`); left out of the record
    /// while local, so that an agent is stored as before placement existed.
    #[serde(default, skip_serializing_if = "Placement::is_local")]
    pub placement: Placement,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub last_run: Option<LastRun>,
    /// What the upgrade of its store carried over from its CLI permission mode, shown with the
    /// agent until the person changes its approval settings; left out of the record otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_over: Option<CarriedOver>,
}

/// The verdicts an upgrade saved for an agent from its CLI permission mode
/// (`approvals::carry`), so that what it could do without asking before, it still can.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedOver {
    pub permission_mode: String,
    /// The tool keys saved as `allow`.
    pub allowed: Vec<String>,
    /// The person's own verdicts on tools the mode would have allowed, kept as they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<(String, Verdict)>,
    pub at: Timestamp,
}

impl CarriedOver {
    /// In words, for `agent show`, the agent's page and `daemon status`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "carried over from its permission mode {} when bosun was upgraded: {} = allow",
            self.permission_mode,
            self.allowed.join(", ")
        );
        if !self.kept.is_empty() {
            let kept: Vec<String> = self.kept.iter().map(|(k, v)| format!("{k}={v}")).collect();
            line.push_str(&format!(" (kept as you had them: {})", kept.join(", ")));
        }
        line
    }
}

/// How an agent's tool calls are approved: its mode, the person's saved verdicts per tool, and
/// how long a call waits for the person.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalSettings {
    #[serde(default)]
    pub mode: ApprovalMode,
    /// By tool key (`Bash(git *)`, `mcp.github.delete_repo`, `write_file`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, Verdict>,
    /// How long a call waits for the person before it is denied; 30 s when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Its runs count as watched even when the board or the lead started them: their asks
    /// wait for the person instead of being denied at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_for_person: bool,
}

impl ApprovalSettings {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Everything an agent may use besides its folder. All off by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    /// MCP servers by id (they keep their switches when renamed), the built-in browser among
    /// them.
    pub mcp: BTreeMap<ServerId, ServerSwitch>,
    pub web_search: bool,
    pub web_fetch: WebFetch,
    /// `--acceptInsecureCerts` for the built-in browser (whose switch is its entry in `mcp`).
    pub browser_insecure_certs: bool,
    /// Claude Code's slash commands and skills.
    pub skills: bool,
    /// Built-in tools bosun's catalog does not know, switched on by name (`builtin.NAME=on`);
    /// every other such tool is refused. Left out of the record while empty.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub builtins: BTreeSet<String>,
}

/// Where an agent's runs may write besides their own folder (a card's worktree): the roots the
/// person added, or anywhere (`workspace=unrestricted`). Left out of the record while it is the
/// default, so that an agent is stored as before workspaces existed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSettings {
    /// Absolute, existing folders, resolved (every link followed) when they were set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<PathBuf>,
    /// File tools may write anywhere but git metadata, and the runner puts up no fence.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unrestricted: bool,
    /// Paths the run's programs may not read, besides bosun's own list (`read.deny=…`):
    /// absolute, `..`-free, not `/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_deny: Vec<PathBuf>,
    /// Paths of bosun's list the run's programs may read after all (`read.allow=…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_allow: Vec<PathBuf>,
    /// `fence.read=off`: the run's programs may read wherever its user may.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_open: bool,
    /// `fence.net=off`: the run's programs reach any host, as its user does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net_open: bool,
    /// `fence.protect=off`: what runs code or redirects git inside the roots is as writable as
    /// the rest of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protect_open: bool,
}

impl WorkspaceSettings {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn view(&self) -> bosun_protocol::agents::WorkspaceView {
        bosun_protocol::agents::WorkspaceView {
            roots: self.roots.clone(),
            unrestricted: self.unrestricted,
            read_deny: self.read_deny.clone(),
            read_allow: self.read_allow.clone(),
            reads_open: self.reads_open,
            net_open: self.net_open,
            protect_open: self.protect_open,
        }
    }
}

/// One server's switch and its tools'.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSwitch {
    pub on: bool,
    pub tools: ToolSelection,
}

/// Which of a server's tools are on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "tools")]
pub enum ToolSelection {
    /// Every tool but these.
    AllExcept(BTreeSet<String>),
    /// Only these.
    Only(BTreeSet<String>),
}

impl ServerSwitch {
    pub fn all_on() -> Self {
        Self {
            on: true,
            tools: ToolSelection::AllExcept(BTreeSet::new()),
        }
    }

    pub fn off() -> Self {
        Self {
            on: false,
            tools: ToolSelection::AllExcept(BTreeSet::new()),
        }
    }

    /// Whether a tool of the server is on.
    pub fn tool_on(&self, tool: &str) -> bool {
        self.on
            && match &self.tools {
                ToolSelection::AllExcept(off) => !off.contains(tool),
                ToolSelection::Only(on) => on.contains(tool),
            }
    }

    /// Switches one tool: on turns the server on too (with only that tool when it was off).
    pub fn set_tool(&mut self, tool: &str, on: bool) {
        if on && !self.on {
            self.on = true;
            self.tools = ToolSelection::Only(BTreeSet::from([tool.to_string()]));
            return;
        }
        match (&mut self.tools, on) {
            (ToolSelection::AllExcept(off), true) => {
                off.remove(tool);
            }
            (ToolSelection::AllExcept(off), false) => {
                off.insert(tool.to_string());
            }
            (ToolSelection::Only(set), true) => {
                set.insert(tool.to_string());
            }
            (ToolSelection::Only(set), false) => {
                set.remove(tool);
            }
        }
    }
}

/// What the agent's last run found out about its tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    pub run: Option<RunId>,
    pub at: Option<Timestamp>,
    /// Each MCP server's state in that run: connected, failed, needs-auth, left out (why).
    pub servers: Vec<(String, String)>,
    /// The tools the CLI reported it had.
    pub tools_seen: Vec<String>,
}

impl Record for AgentRecord {
    const TABLE: &'static str = "agents";
    const WHAT: &'static str = "agent";
    type Key = AgentId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// The agents' reads of the store.
pub trait AgentReads {
    /// Every agent, in name order.
    fn agents(&self) -> Result<Vec<AgentRecord>, StoreError>;

    /// The agent with this name, or whose id starts with this (when only one does).
    fn find_agent(&self, name_or_id: &str) -> Result<Option<AgentRecord>, StoreError>;
}

impl AgentReads for Store {
    fn agents(&self) -> Result<Vec<AgentRecord>, StoreError> {
        let mut out = self.all::<AgentRecord>()?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn find_agent(&self, name_or_id: &str) -> Result<Option<AgentRecord>, StoreError> {
        let agents = self.agents()?;
        if let Some(a) = agents.iter().find(|a| a.name == name_or_id) {
            return Ok(Some(a.clone()));
        }
        let lower = name_or_id.to_ascii_lowercase();
        let mut by_id = agents
            .into_iter()
            .filter(|a| a.id.to_string().starts_with(&lower));
        match (by_id.next(), by_id.next()) {
            (Some(a), None) if lower.len() >= 4 => Ok(Some(a)),
            (Some(_), _) | (None, _) => Ok(None),
        }
    }
}

impl AgentRecord {
    /// The time cap of the agent's runs, read from its record (checked when it was saved; a
    /// record an older bosun saved is checked again here).
    pub fn time_cap(&self) -> Result<Option<TimeCap>, AgentsError> {
        self.time_cap_ms
            .map(TimeCap::from_millis)
            .transpose()
            .map_err(|e| AgentsError::invalid(format!("agent {}: {e}", self.name)))
    }

    /// Whether anything from outside (an outside MCP server, the web, the browser) is on: then
    /// its runs are told that what those return is data, never instructions.
    pub fn has_outside_sources(&self) -> bool {
        self.switches.mcp.values().any(|s| s.on)
            || self.switches.web_search
            || self.switches.web_fetch != WebFetch::Off
            || self.cli == CliKind::Gemini
    }

    /// The warnings the form would show: an outside source together with npm or npx allowed.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let npm = self
            .allowed_commands
            .iter()
            .find(|c| c.starts_with("Bash(npm") || c.starts_with("Bash(npx"));
        if let Some(rule) = npm
            && self.has_outside_sources()
        {
            out.push(format!(
                "{rule} is allowed while an outside source (an MCP server, the web or the browser) is on: a server's answer or a web page could try to make the agent run code"
            ));
        }
        out
    }
}

/// What bosun knows about an agent's run, kept on the run's record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    pub agent: Option<AgentId>,
    pub agent_name: String,
    /// What the run was asked to do (its first 2,000 characters, secret values redacted);
    /// empty on runs from before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task: String,
    pub cli: Option<CliKind>,
    /// Each MCP server of the agent's and its state in this run: `given` until the CLI says
    /// more (connected, failed, needs-auth), or `left out: why`.
    pub servers: Vec<(String, String)>,
    /// The servers given whose sign-in Claude Code holds itself, not bosun.
    #[serde(default)]
    pub claude_signs_in: Vec<String>,
    /// The card (and its move) the board started this run for; move 0 for a run the person
    /// started for the card (`bosun agent run --card`), which is no move's.
    #[serde(default)]
    pub card: Option<(CardId, u64)>,
    /// The project of that card, when it belongs to one: the run counts toward the project's
    /// daily budget. Left out of the record otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectId>,
    /// The chat and the answer of the lead this run is.
    #[serde(default)]
    pub answer: Option<(ChatId, AnswerId)>,
    /// Started by the board or the lead, not by a person: nobody is watching, so the asks the
    /// policy cannot leave waiting are denied at once (unless the agent waits for the person).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattended: bool,
    /// The tools the CLI reported it had (Claude Code's init line).
    pub tools: Vec<String>,
    pub calls: Vec<ToolCall>,
    pub session: Option<String>,
    pub model: Option<String>,
    pub result: Option<CliResult>,
    /// What bosun decided about each tool call, in the order asked (a run whose calls go
    /// through the approval policy). Not part of the record's bytes: each is a row of its own
    /// in the store (the runs area's `decisions` table), read back with the record. Shared, so
    /// that a copy of a record with many is cheap.
    #[serde(skip)]
    pub decisions: Vec<Arc<Decision>>,
    /// Where the run may write besides its folder, as its agent said when it started: its file
    /// tools are judged by it and its runner fences its programs in by it. Absent on runs
    /// started before workspaces existed (their calls are judged by the agent's settings now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceSettings>,
    /// The hosts the run's programs may reach through its runner's proxy, when its network is
    /// fenced; absent when it is not (an unrestricted workspace, `fence.net=off`, a run from
    /// before the network was fenced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<Vec<bosun_protocol::runner::NetAllow>>,
    /// What fence the runner applied, in words (from its start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<String>,
    /// What the run used, as the CLI reported it (left out while it reported nothing).
    #[serde(default, skip_serializing_if = "usage_is_empty")]
    pub usage: Usage,
    /// How far the CLI's stdout was read into this record, in whole lines: saved with what
    /// they said, so that a bosund killed before saving reads the rest again and nothing is
    /// counted twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_to: Option<ParsedTo>,
    /// The model messages counted as they streamed (Claude Code's, between its `result`
    /// lines): saved with `parsed_to`, so a message read again after a restart adds nothing.
    #[serde(default, skip_serializing_if = "Streamed::is_empty")]
    pub streamed: Streamed,
    /// What the run may use before its next tool call waits for the person: its agent's
    /// budget when it started ...
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
    /// ... and what the person allowed more since.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget_more: Budget,
    /// How many decisions' details were pruned once the run was older than bosund's
    /// retention (`bosun daemon set retention=…`); the run's summary stays.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decisions_pruned: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl AgentRun {
    /// The cap the run has reached, if any: its budget with what was allowed more, against
    /// what it used and the tool calls it was allowed.
    pub fn budget_reached(&self) -> Option<bosun_shared::usage::Reached> {
        let allowed = self.decisions.iter().filter(|d| d.allowed).count() as u64;
        self.budget
            .extended(&self.budget_more)
            .reached(&self.usage, allowed)
    }

    /// What allowing more gives when `reached`: as much again as the agent's own cap.
    pub fn budget_grant(&self, reached: bosun_shared::usage::Reached) -> Budget {
        use bosun_shared::usage::Reached;
        match reached {
            Reached::Cost { .. } => Budget {
                micro_usd: self.budget.micro_usd,
                ..Budget::default()
            },
            Reached::Tokens { .. } => Budget {
                tokens: self.budget.tokens,
                ..Budget::default()
            },
            Reached::ToolCalls { .. } => Budget {
                tool_calls: self.budget.tool_calls,
                ..Budget::default()
            },
        }
    }
}

fn usage_is_empty(u: &Usage) -> bool {
    *u == Usage::default()
}

/// What was counted of the model's messages as they streamed, before the CLI's own total.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streamed {
    /// The last messages seen (at most [`Streamed::KEPT`], newest last): each one's id, model
    /// and the tokens counted of it so far. A message is counted once whatever number of lines
    /// repeat its usage; a later line adds only what grew.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<StreamedMessage>,
    /// The run's usage as the CLI's last total gave it (its cost the CLI's own): what came
    /// since is priced on top of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Usage>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamedMessage {
    pub id: String,
    pub model: String,
    #[serde(flatten)]
    pub tokens: bosun_shared::usage::Tokens,
}

impl Streamed {
    /// The most messages remembered: a message's lines come together, and sub-agents' few
    /// at a time, so an id older than this never comes back.
    pub const KEPT: usize = 16;

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.settled.is_none()
    }
}

/// A place in a run's log just after a line's end: byte `offset` of chunk `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedTo {
    pub seq: u64,
    pub offset: u32,
}

/// What bosun decided about one tool call of a run: committed before the runner hears it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The CLI's id of the request.
    pub key: String,
    pub tool: String,
    /// What it would do, in one line.
    pub summary: String,
    pub allowed: bool,
    /// The policy's rule, or the person, the deadline, the run's end, in words.
    pub by: String,
    /// Set when it waited for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalId>,
    /// What the model was told with a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Allowed, it took in outside content: the rest of the turn is escalated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escalates: bool,
    pub at: Timestamp,
}

impl Decision {
    /// What the CLI is told.
    pub fn answer(&self) -> ToolAnswer {
        if self.allowed {
            ToolAnswer::Allow
        } else {
            ToolAnswer::Deny {
                message: self.message.clone().unwrap_or_default(),
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: Option<String>,
    /// The tool's name as bosun writes it (`mcp__<server>__<tool>` for an MCP tool).
    pub name: String,
    /// `None` while it runs.
    pub ok: Option<bool>,
    pub error: Option<String>,
    /// A digest of its arguments (Claude Code's `tool_use` input), to match the call when it
    /// reaches bosun's own MCP server.
    #[serde(default)]
    pub input: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CliResult {
    pub is_error: bool,
    /// Claude Code's `terminal_reason`, Gemini's `status`, Codex's turn end.
    pub reason: Option<String>,
    pub text: Option<String>,
}
