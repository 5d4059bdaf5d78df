//! The approval policy: given an agent's approval settings and one tool call of its run, whether
//! the call runs, waits for the person, or is refused — and which step of the precedence said so.
//!
//! Pure: plain types and functions, no I/O, no actors, no store. A call meets it in four steps:
//!
//! 1. Its [`Class`]: [`classify_builtin`] for a CLI's own tools (a table kept beside
//!    [`catalog`](bosun_agents::catalog)), [`classify_mcp`] for an MCP server's tools (their
//!    annotations).
//! 2. The person's saved [`Verdict`] for it, if any: [`verdict_for`] looks the call's [`ToolKey`]
//!    up among the agent's verdicts (for a shell command, by its prefix too).
//! 3. [`decide`] walks the precedence and returns a [`Decision`] naming its [`Rule`].
//! 4. Once the call has run, [`escalates`] says whether the rest of the run's turn counts as
//!    escalated (it took in outside content).
//!
//! ```
//! use std::collections::BTreeMap;
//! use bosun_approvals::policy::*;
//! use bosun_shared::agents::CliKind;
//!
//! let class = classify_builtin(CliKind::Claude, "Bash", &serde_json::json!({"command": "git status"}));
//! let verdicts = BTreeMap::from([("Bash(git *)".to_string(), Verdict::AlwaysAllow)]);
//! let key: ToolKey = "Bash".parse().unwrap();
//! let verdict = verdict_for(&verdicts, &key, Some("git status"));
//! let input = PolicyInput { refused: None, mode: ApprovalMode::default(), class, verdict, escalated: false, attended: false, holds_secret: false };
//! assert_eq!(decide(&input), Decision::Allow { rule: Rule::AlwaysAllow });
//! ```
//!
//! `docs/approvals.md` tells the policy in words, with the reasons for each choice.
//!
//! # Caveats
//! - A verdict on a command prefix reads the command line as text. Allowing is strict (a line
//!   that chains, substitutes or writes a file through a redirect is not allowed by a prefix),
//!   blocking is generous (it looks wherever a command could start, quotes included), but a shell
//!   can always spell a command another way (a path, an alias, `sh -c` with pieces joined, a
//!   script). Blocking a prefix keeps the plain spellings out; blocking the shell keeps them all.
//! - A built-in tool's class is bosun's table, checked against the catalog by a test: a tool the
//!   catalog gains later is unknown here (it asks) until the table names it.

use std::collections::BTreeMap;
use std::fmt;

use bosun_shared::agents::CliKind;
use bosun_shared::mcp::Hints;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_agents::launch::BOSUN_SERVER;
use bosun_mcp::browser::NAME as BROWSER;
pub use bosun_shared::approvals::{
    ApprovalMode, CommandPattern, HostKey, KeyError, NET_TOOL, NotAChoice, SHELL, ToolKey, Verdict,
    shell_command,
};

use ToolClass::{Egress, Execute, IrreversibleWrite, Network, ReadOnly, ReversibleWrite, Unknown};

/// What a tool does, as far as the approval mode cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolClass {
    /// Reads, or changes nothing beyond the run's own session (its to-do list, its plan, what it
    /// started itself).
    ReadOnly,
    /// Changes something that can be put back: a worktree made, a sub-agent or a schedule
    /// started, an MCP tool that only adds.
    ReversibleWrite,
    /// Changes something that cannot be put back: a file written or edited, an MCP tool that may
    /// delete or overwrite.
    IrreversibleWrite,
    /// Runs a command on the person's machine.
    Execute,
    /// Reads from outside the machine: a web search, a page fetch, an MCP server's resources or
    /// read-only tool that reaches outside services. What comes back is outside content, and what
    /// goes out (a query, a URL) is a path secrets could leave by.
    Egress,
    /// Nothing says what it does: a tool the catalog does not know, an MCP tool without
    /// annotations.
    Unknown,
    /// A host the run's fence does not list, asked for by its proxy ([`NET_TOOL`]): a new way
    /// out of the run for whatever program asked, which no mode lets through unasked.
    Network,
}

impl ToolClass {
    pub const ALL: [ToolClass; 7] = [
        ToolClass::ReadOnly,
        ToolClass::ReversibleWrite,
        ToolClass::IrreversibleWrite,
        ToolClass::Execute,
        ToolClass::Egress,
        ToolClass::Unknown,
        ToolClass::Network,
    ];
}

impl fmt::Display for ToolClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolClass::ReadOnly => "read-only",
            ToolClass::ReversibleWrite => "reversible write",
            ToolClass::IrreversibleWrite => "irreversible write",
            ToolClass::Execute => "runs commands",
            ToolClass::Egress => "reads from outside",
            ToolClass::Unknown => "unknown",
            ToolClass::Network => "reaches a host outside the run's list",
        })
    }
}

/// A call's class: what it does, and whether what it returns is outside content (which trips the
/// escalation for the rest of the turn). Invariant: an [`Egress`](ToolClass::Egress) or
/// [`Unknown`](ToolClass::Unknown) call always takes in outside content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Class {
    pub kind: ToolClass,
    pub outside_content: bool,
}

impl Class {
    /// A class whose results come from the machine itself.
    const fn local(kind: ToolClass) -> Self {
        Class {
            kind,
            outside_content: false,
        }
    }

    const UNKNOWN: Class = Class {
        kind: ToolClass::Unknown,
        outside_content: true,
    };

    /// A host asked for by the run's proxy: whatever comes back from it is outside content.
    pub const NETWORK: Class = Class {
        kind: ToolClass::Network,
        outside_content: true,
    };
}

/// Whether the mode lets a call of this kind run without asking. A host outside the fence's list
/// asks in every mode: the list is what the person gave the run, and only the person (now, or
/// by a saved verdict) widens it.
pub fn covers(mode: ApprovalMode, kind: ToolClass) -> bool {
    match mode {
        ApprovalMode::AskEveryAction => false,
        ApprovalMode::ReadOnlyWithoutAsking => match kind {
            ReadOnly | Egress => true,
            ReversibleWrite | IrreversibleWrite | Execute | Unknown | Network => false,
        },
        // A command on the person's machine may destroy anything, and bosun does not read a
        // command for what it destroys: it asks, like an unknown tool.
        ApprovalMode::SkipApprovals => match kind {
            ReadOnly | Egress | ReversibleWrite => true,
            IrreversibleWrite | Execute | Unknown | Network => false,
        },
    }
}

/// Whether a call of this class, once it has run, trips the escalation for the rest of the turn.
pub fn escalates(class: Class) -> bool {
    class.outside_content
}

/// The class of a CLI's built-in tool; a name bosun's table does not know is unknown. The input
/// matters for Codex's `write_stdin`, which only reads a command's output when it says it types
/// nothing (`chars` empty); when the input does not say what it types, it is a command.
pub fn classify_builtin(cli: CliKind, tool: &str, input: &Value) -> Class {
    if cli == CliKind::Codex && tool == "write_stdin" {
        let types_nothing = input
            .get("chars")
            .and_then(Value::as_str)
            .is_some_and(str::is_empty);
        if types_nothing {
            return Class::local(ToolClass::ReadOnly);
        }
    }
    let Some(kind) = builtin_classes(cli)
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, kind)| *kind)
    else {
        return Class::UNKNOWN;
    };
    Class {
        kind,
        outside_content: matches!(kind, ToolClass::Egress),
    }
}

/// Each catalogued built-in tool of a CLI with its class (a test checks the two lists agree).
pub fn builtin_classes(cli: CliKind) -> &'static [(&'static str, ToolClass)] {
    match cli {
        CliKind::Claude => CLAUDE,
        CliKind::Codex => CODEX,
        CliKind::Gemini => GEMINI,
        CliKind::Command => &[],
    }
}

// A sub-agent, a schedule or a worktree is work started that can be stopped or removed: a
// reversible write. A skill only loads instructions and acts through the other tools, each
// decided on its own: a read. Stopping or reading what the run started itself stays in its
// session: a read.
static CLAUDE: &[(&str, ToolClass)] = &[
    ("Read", ReadOnly),
    ("Glob", ReadOnly),
    ("Grep", ReadOnly),
    ("LS", ReadOnly),
    ("NotebookRead", ReadOnly),
    ("Edit", IrreversibleWrite),
    ("MultiEdit", IrreversibleWrite),
    ("Write", IrreversibleWrite),
    ("NotebookEdit", IrreversibleWrite),
    ("EnterWorktree", ReversibleWrite),
    // Leaving may remove the worktree with its changes.
    ("ExitWorktree", IrreversibleWrite),
    ("Bash", Execute),
    ("Monitor", Execute),
    ("BashOutput", ReadOnly),
    ("KillShell", ReadOnly),
    ("TaskStop", ReadOnly),
    ("Task", ReversibleWrite),
    ("Agent", ReversibleWrite),
    ("Workflow", ReversibleWrite),
    ("SendMessage", ReversibleWrite),
    ("ListAgents", ReadOnly),
    ("TodoWrite", ReadOnly),
    ("EnterPlanMode", ReadOnly),
    ("ExitPlanMode", ReadOnly),
    ("CronCreate", ReversibleWrite),
    ("CronDelete", ReversibleWrite),
    ("CronList", ReadOnly),
    ("ScheduleWakeup", ReversibleWrite),
    ("WebSearch", Egress),
    ("WebFetch", Egress),
    ("Skill", ReadOnly),
    ("SlashCommand", ReadOnly),
    ("ToolSearch", ReadOnly),
    ("ReportFindings", ReadOnly),
    // Uploads the person's files to claude.ai and changes their design projects there.
    ("DesignSync", IrreversibleWrite),
    ("AskUserQuestion", ReadOnly),
    ("ListMcpResourcesTool", Egress),
    ("ReadMcpResourceTool", Egress),
    ("ReadMcpResourceDirTool", Egress),
];

static CODEX: &[(&str, ToolClass)] = &[
    ("apply_patch", IrreversibleWrite),
    ("view_image", ReadOnly),
    ("exec_command", Execute),
    // Typing into a running command; `classify_builtin` makes a call that types nothing a read.
    ("write_stdin", Execute),
    ("shell_command", Execute),
    ("spawn_agent", ReversibleWrite),
    ("send_input", ReversibleWrite),
    ("wait_agent", ReadOnly),
    ("close_agent", ReadOnly),
    ("resume_agent", ReversibleWrite),
    ("update_plan", ReadOnly),
    ("get_goal", ReadOnly),
    ("create_goal", ReadOnly),
    ("update_goal", ReadOnly),
    ("web_search", Egress),
    // A new image in the conversation; nothing of the person's changes.
    ("image_generation", ReversibleWrite),
    ("tool_search", ReadOnly),
    ("request_user_input", ReadOnly),
    ("list_mcp_resources", Egress),
    ("list_mcp_resource_templates", Egress),
    ("read_mcp_resource", Egress),
];

static GEMINI: &[(&str, ToolClass)] = &[
    ("read_file", ReadOnly),
    ("read_many_files", ReadOnly),
    ("list_directory", ReadOnly),
    ("glob", ReadOnly),
    ("grep_search", ReadOnly),
    ("replace", IrreversibleWrite),
    ("write_file", IrreversibleWrite),
    ("run_shell_command", Execute),
    ("list_background_processes", ReadOnly),
    ("read_background_output", ReadOnly),
    ("invoke_agent", ReversibleWrite),
    ("write_todos", ReadOnly),
    ("enter_plan_mode", ReadOnly),
    ("exit_plan_mode", ReadOnly),
    ("tracker_create_task", ReversibleWrite),
    ("tracker_update_task", ReversibleWrite),
    ("tracker_get_task", ReadOnly),
    ("tracker_list_tasks", ReadOnly),
    ("tracker_add_dependency", ReversibleWrite),
    ("tracker_visualize", ReadOnly),
    ("google_web_search", Egress),
    ("web_fetch", Egress),
    ("activate_skill", ReadOnly),
    ("update_topic", ReadOnly),
    ("ask_user", ReadOnly),
    ("list_mcp_resources", Egress),
    ("read_mcp_resource", Egress),
];

/// The class of an MCP server's tool from its annotations, with the MCP spec's defaults for the
/// hints it left out (not read-only, may destroy, reaches outside). A tool with no hints at all is
/// unknown. The browser's pages are outside content whatever its hints say; bosun's own server is
/// not outside.
/// A tool of bosun's own MCP server, which no stored server describes: what a run may call there.
/// A QA run's verdict (`qa_pass`, `qa_fail`) is a note on its own card: a reversible write to
/// bosun's own board, with no outside content. Anything else is unknown.
pub fn classify_bosun_tool(tool: &str) -> Class {
    match tool {
        "qa_pass" | "qa_fail" => Class {
            kind: ReversibleWrite,
            outside_content: false,
        },
        _ => Class::UNKNOWN,
    }
}

pub fn classify_mcp(server: &str, hints: &Hints) -> Class {
    let mut class = if *hints == Hints::default() {
        Class::UNKNOWN
    } else {
        let open_world = hints.open_world.unwrap_or(true);
        let kind = match (hints.read_only, hints.destructive) {
            (Some(true), _) if open_world => ToolClass::Egress,
            (Some(true), _) => ToolClass::ReadOnly,
            (Some(false) | None, Some(false)) => ToolClass::ReversibleWrite,
            (Some(false) | None, Some(true) | None) => ToolClass::IrreversibleWrite,
        };
        Class {
            kind,
            outside_content: open_world,
        }
    };
    if server == BROWSER {
        class.outside_content = true;
    } else if server == BOSUN_SERVER && class.kind != ToolClass::Unknown {
        // bosun's board and notes are its own, as the lead's gate counts them.
        class.kind = match class.kind {
            ToolClass::Egress => ToolClass::ReadOnly,
            other @ (ToolClass::ReadOnly
            | ToolClass::ReversibleWrite
            | ToolClass::IrreversibleWrite
            | ToolClass::Execute
            | ToolClass::Unknown
            | ToolClass::Network) => other,
        };
        class.outside_content = false;
    }
    class
}

/// The key for exactly this one command, as `--always` or `--block` on an approval saves it.
/// `None` when the line is not one plain command (several commands, a hidden one, output
/// written to a file: an exact key would never match it) or holds a `*`, `(` or `)`, which a
/// key cannot: `Bash(rm -rf *)` would read back as every `rm -rf`.
pub fn exact_command(line: &str) -> Option<ToolKey> {
    let [command] = simple_commands(line)?[..] else {
        return None;
    };
    if command.contains(['*', '(', ')']) {
        return None;
    }
    let words = command.split_whitespace().map(str::to_string).collect();
    Some(ToolKey::Command(CommandPattern::Exact(words)))
}

/// The saved verdict that applies to a call of `key` (with its command line, for a shell tool).
///
/// A `Blocked` that applies anywhere wins: on the tool, on `Bash`, or on a prefix of any command
/// in the line. Otherwise the most specific verdict holds: for a shell command the longest
/// matching pattern, then the tool's own name, then `Bash`. A line of several commands (`a && b`,
/// `a | b`) takes the strictest of its commands' verdicts, and is allowed by patterns only when
/// each of its commands is. A line that hides a command (`$(…)`, backticks) or writes a file
/// through a redirect gets no verdict from a pattern, only from the tool. Saved keys that do not
/// read as keys match nothing.
pub fn verdict_for(
    verdicts: &BTreeMap<String, Verdict>,
    key: &ToolKey,
    shell_command: Option<&str>,
) -> Option<Verdict> {
    let saved: Vec<(ToolKey, Verdict)> = verdicts
        .iter()
        .filter_map(|(k, v)| k.parse::<ToolKey>().ok().map(|k| (k, *v)))
        .collect();
    let on = |wanted: &ToolKey| {
        saved
            .iter()
            .filter(|(k, _)| k == wanted)
            .map(|(_, v)| *v)
            .max_by_key(|v| v.strictness())
    };
    if let ToolKey::Host(call) = key {
        return host_verdict(&saved, call);
    }
    let own = on(key);
    if !key.is_shell_tool() {
        return own;
    }
    let shell = on(&ToolKey::Builtin(SHELL.to_string()));
    if own == Some(Verdict::Blocked) || shell == Some(Verdict::Blocked) {
        return Some(Verdict::Blocked);
    }
    let tool = own.or(shell);
    let Some(line) = shell_command else {
        return tool;
    };
    let patterns: Vec<(&CommandPattern, Verdict)> = saved
        .iter()
        .filter_map(|(k, v)| match k {
            ToolKey::Command(p) => Some((p, *v)),
            ToolKey::Builtin(_) | ToolKey::Mcp { .. } | ToolKey::Host(_) => None,
        })
        .collect();
    let commands: Option<Vec<Vec<&str>>> = simple_commands(line).map(|commands| {
        commands
            .iter()
            .map(|c| c.split_whitespace().collect())
            .collect()
    });
    // Strictly read commands too, so that a block on an exact command with quotes in it holds.
    let blocked = patterns.iter().any(|(p, v)| {
        *v == Verdict::Blocked
            && (loose_commands(line).any(|words| p.matches(&words))
                || commands.iter().flatten().any(|words| p.matches(words)))
    });
    if blocked {
        return Some(Verdict::Blocked);
    }
    let Some(commands) = commands.filter(|c| !c.is_empty()) else {
        return tool;
    };
    commands
        .iter()
        .map(|words| {
            patterns
                .iter()
                .filter(|(p, _)| p.matches(words))
                .max_by_key(|(p, v)| (p.specificity(), v.strictness()))
                .map(|(_, v)| *v)
                .or(tool)
        })
        .max_by_key(|v| match v {
            Some(Verdict::AlwaysAllow) => 0,
            None => 1,
            Some(Verdict::NeedsApproval) => 2,
            Some(Verdict::Blocked) => 3,
        })
        .flatten()
}

/// The verdict for a host the proxy asks for: a block on the host (any port, or this one) or on
/// every host (`Network`) wins; otherwise the host with this port, then the host, then every
/// host. Two spellings of one key with different verdicts: the stricter.
fn host_verdict(saved: &[(ToolKey, Verdict)], call: &HostKey) -> Option<Verdict> {
    let strictest = |keep: &dyn Fn(&ToolKey) -> bool| {
        saved
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(_, v)| *v)
            .max_by_key(|v| v.strictness())
    };
    let host = |exact: bool| move |k: &ToolKey| matches!(k, ToolKey::Host(h) if h.covers(call) && h.specificity() == exact);
    let every = |k: &ToolKey| matches!(k, ToolKey::Builtin(name) if name == NET_TOOL);
    let (exact, any_port, all) = (
        strictest(&host(true)),
        strictest(&host(false)),
        strictest(&every),
    );
    if [exact, any_port, all].contains(&Some(Verdict::Blocked)) {
        return Some(Verdict::Blocked);
    }
    exact.or(any_port).or(all)
}

/// The commands of a line that a pattern may allow or ask for: the pieces between `;`, `&&`,
/// `||`, `|`, `&` and new lines, outside quotes. `None` when the line does what a pattern cannot
/// vouch for: runs a command inside `$(…)`, backticks, `<(…)` or `>(…)`, writes to a file through
/// a redirect (only `/dev/null` and other descriptors, as in `2>&1`, are let through), or leaves
/// a quote open.
fn simple_commands(line: &str) -> Option<Vec<&str>> {
    let bytes = line.as_bytes();
    let at = |i: usize| bytes.get(i).copied();
    let mut commands = Vec::new();
    let mut start = 0;
    let mut quote = None;
    let mut i = 0;
    while let Some(b) = at(i) {
        match (quote, b) {
            (Some(b'\''), b'\'') | (Some(b'"'), b'"') => quote = None,
            (Some(b'\''), _) => {}
            (Some(_) | None, b'\\') => i += 1,
            (Some(_) | None, b'`') => return None,
            (Some(_) | None, b'$') if at(i + 1) == Some(b'(') => return None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(b),
            (None, b'<' | b'>') if at(i + 1) == Some(b'(') => return None,
            (None, b'>') => {
                i = past_redirect(line, i)?;
                continue;
            }
            (None, b'&') if at(i + 1) == Some(b'>') => {
                i = past_redirect(line, i + 1)?;
                continue;
            }
            (None, b';' | b'\n' | b'|' | b'&') => {
                commands.push(&line[start..i]);
                if matches!(
                    (b, at(i + 1)),
                    (b'&', Some(b'&')) | (b'|', Some(b'|' | b'&'))
                ) {
                    i += 1;
                }
                start = i + 1;
            }
            (None, _) => {}
        }
        i += 1;
    }
    if quote.is_some() {
        return None;
    }
    commands.push(&line[start..]);
    Some(
        commands
            .into_iter()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect(),
    )
}

/// Past the redirect whose `>` is at `i`, when it writes to a descriptor (`>&2`, `>&-`) or to
/// `/dev/null`; `None` when it writes to a file.
fn past_redirect(line: &str, i: usize) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut j = i + 1;
    if matches!(bytes.get(j), Some(b'>' | b'|')) {
        j += 1;
    }
    if bytes.get(j) == Some(&b'&') {
        let digits = bytes[j + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'-')
            .count();
        return (digits > 0).then_some(j + 1 + digits);
    }
    while matches!(bytes.get(j), Some(b' ' | b'\t')) {
        j += 1;
    }
    let target_end = bytes[j..]
        .iter()
        .position(|b| b.is_ascii_whitespace() || b";&|<>()".contains(b))
        .map_or(bytes.len(), |n| j + n);
    (&line[j..target_end] == "/dev/null").then_some(target_end)
}

/// Programs that run the command after them: a block looks past them.
const WRAPPERS: [&str; 11] = [
    "sudo", "doas", "env", "command", "builtin", "exec", "nohup", "time", "timeout", "nice",
    "xargs",
];

/// Every place in a line where a command could start, as words, for blocks: split at every
/// operator, bracket and quote; leading variable assignments, wrappers (`sudo`, `env`, …), their
/// options and counts skipped; the program's path and a leading `\` dropped. Generous on purpose:
/// it may find a command in quoted text, which only makes a block stricter.
fn loose_commands(line: &str) -> impl Iterator<Item = Vec<&str>> {
    line.split(|c: char| ";&|\n()`'\"{}$<>".contains(c))
        .filter_map(|piece| {
            let mut words = piece.split_whitespace().skip_while(|w| {
                let assignment = w
                    .split_once('=')
                    .is_some_and(|(name, _)| !name.is_empty() && !name.starts_with('-'));
                assignment
                    || WRAPPERS.contains(w)
                    || w.starts_with('-')
                    || w.chars().all(|c| c.is_ascii_digit())
            });
            let program = words.next()?.trim_start_matches('\\');
            let program = program.rsplit('/').next().unwrap_or(program);
            Some(std::iter::once(program).chain(words).collect())
        })
}

/// The step of the precedence that decided a call. The numbers are the spec's steps; steps 2 and
/// 9 have no counterpart in bosun (`docs/approvals.md` says why). Step 0 is bosun's own, before
/// the spec's nine: the agent's switches and the run's workspace, which no mode or verdict
/// overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Step 0: the agent's switch for the tool (or its server, or its tool there) is off.
    SwitchedOff,
    /// Step 0: a file tool would write outside every root of the run's workspace.
    OutsideWorkspace,
    /// Step 0: a file tool would write git metadata.
    GitMetadata,
    /// Step 0 (it only ever asks): the call held a secret value of the run, which the runner
    /// wrote `[redacted]`; bosun cannot judge a call by what it cannot see (the value may hide
    /// a command, a path or a host), so a call that would run asks the person instead.
    HoldsSecret,
    /// Step 1: the person blocked the tool.
    Blocked,
    /// Step 3: the person always allows it, but the turn is escalated.
    AlwaysAllowEscalated,
    /// Step 4: the person always allows it.
    AlwaysAllow,
    /// Step 5: the person wants to be asked.
    NeedsApproval,
    /// Step 6: the mode covers the tool's class and the turn is not escalated.
    CoveredByMode,
    /// Step 7: the mode does not cover the tool's class.
    NotCoveredByMode,
    /// Step 8: the mode covers the tool's class, but the turn is escalated.
    Escalated,
}

impl Rule {
    pub const ALL: [Rule; 11] = [
        Rule::SwitchedOff,
        Rule::OutsideWorkspace,
        Rule::GitMetadata,
        Rule::HoldsSecret,
        Rule::Blocked,
        Rule::AlwaysAllowEscalated,
        Rule::AlwaysAllow,
        Rule::NeedsApproval,
        Rule::CoveredByMode,
        Rule::NotCoveredByMode,
        Rule::Escalated,
    ];

    /// The spec's step, for the run's record.
    pub fn step(self) -> u8 {
        match self {
            Rule::SwitchedOff | Rule::OutsideWorkspace | Rule::GitMetadata | Rule::HoldsSecret => 0,
            Rule::Blocked => 1,
            Rule::AlwaysAllowEscalated => 3,
            Rule::AlwaysAllow => 4,
            Rule::NeedsApproval => 5,
            Rule::CoveredByMode => 6,
            Rule::NotCoveredByMode => 7,
            Rule::Escalated => 8,
        }
    }
}

/// Why, in a sentence: `bosun inbox` shows it as why a call asks, and the run's record keeps it.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::SwitchedOff => "the agent's switch for this tool is off",
            Rule::OutsideWorkspace => {
                "a file tool may write only inside the run's workspace, and this file is outside it"
            }
            Rule::GitMetadata => "file tools never write git metadata",
            Rule::HoldsSecret => {
                "the call holds a secret value the run was given (shown as [redacted]), and bosun does not let a call it cannot see whole run without the person's OK"
            }
            Rule::Blocked => "the person blocked this tool",
            Rule::AlwaysAllowEscalated => {
                "the person always allows this tool, but the run took in outside content earlier in this turn, so it asks all the same"
            }
            Rule::AlwaysAllow => "the person always allows this tool",
            Rule::NeedsApproval => "the person wants to approve each use of this tool",
            Rule::CoveredByMode => {
                "the agent's approval mode lets tools of this kind run without asking"
            }
            Rule::NotCoveredByMode => "the agent's approval mode asks before tools of this kind",
            Rule::Escalated => {
                "the run took in outside content earlier in this turn (a web page, a search result, the browser or an MCP server's answer), so nothing runs without the person's OK"
            }
        })
    }
}

/// What the model is told when it calls a blocked tool.
pub const BLOCKED: &str =
    "this tool is blocked by the person; do not try it again or work around it";

/// Why an ask is denied at once on a run nobody watches.
pub const UNATTENDED: &str = "nobody is watching this run (no person started it, and its agent does not wait for one) and it took in outside content earlier in this turn, so a call that would ask is denied at once";

/// Why a call may not run at all: the rule, and what the model and the person are told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub rule: Rule,
    pub reason: String,
}

impl Refusal {
    pub fn switched_off(reason: String) -> Self {
        Refusal {
            rule: Rule::SwitchedOff,
            reason,
        }
    }
}

/// One call, as the policy sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyInput {
    /// The first step's answer: a switch that is off, or a write outside the workspace or into
    /// git metadata ([`gate`](super::gate), [`workspace`](super::workspace)). Refused in every
    /// mode, whatever the verdicts say.
    pub refused: Option<Refusal>,
    pub mode: ApprovalMode,
    pub class: Class,
    /// The person's saved verdict for the call ([`verdict_for`]).
    pub verdict: Option<Verdict>,
    /// The run took in outside content earlier in this turn ([`escalates`]).
    pub escalated: bool,
    /// Someone can answer: a person started the run, or its agent waits for the person.
    pub attended: bool,
    /// The call held a secret value of the run, seen here as `[redacted]`
    /// ([`ToolAsk::redacted`](bosun_protocol::runner::ToolAsk::redacted)).
    pub holds_secret: bool,
}

/// The policy's answer for one call, with the step that gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum Decision {
    Allow {
        rule: Rule,
    },
    /// Waits for the person until the agent's approval wait runs out (then it is denied).
    Ask {
        rule: Rule,
    },
    /// `reason` is for the model and the run's record.
    Deny {
        rule: Rule,
        reason: String,
    },
}

impl Decision {
    pub fn rule(&self) -> Rule {
        match self {
            Decision::Allow { rule } | Decision::Ask { rule } | Decision::Deny { rule, .. } => {
                *rule
            }
        }
    }
}

/// Walks the precedence for one call: the first step (switches and workspace), then the spec's.
/// On a run nobody watches, the two asks the escalation causes (steps 3 and 8) are denied at
/// once; the other asks wait like any other. A call that holds a secret of the run is judged
/// as it is seen, redacted; where that would let it run, it asks instead.
pub fn decide(input: &PolicyInput) -> Decision {
    if let Some(refusal) = &input.refused {
        return Decision::Deny {
            rule: refusal.rule,
            reason: refusal.reason.clone(),
        };
    }
    let allow = |rule| {
        if input.holds_secret {
            Decision::Ask {
                rule: Rule::HoldsSecret,
            }
        } else {
            Decision::Allow { rule }
        }
    };
    let escalated_ask = |rule| {
        if input.attended {
            Decision::Ask { rule }
        } else {
            Decision::Deny {
                rule,
                reason: UNATTENDED.to_string(),
            }
        }
    };
    match input.verdict {
        Some(Verdict::Blocked) => Decision::Deny {
            rule: Rule::Blocked,
            reason: BLOCKED.to_string(),
        },
        Some(Verdict::AlwaysAllow) if input.escalated => escalated_ask(Rule::AlwaysAllowEscalated),
        Some(Verdict::AlwaysAllow) => allow(Rule::AlwaysAllow),
        Some(Verdict::NeedsApproval) => Decision::Ask {
            rule: Rule::NeedsApproval,
        },
        None if !covers(input.mode, input.class.kind) => Decision::Ask {
            rule: Rule::NotCoveredByMode,
        },
        None if input.escalated => escalated_ask(Rule::Escalated),
        None => allow(Rule::CoveredByMode),
    }
}

#[cfg(test)]
mod tests;
