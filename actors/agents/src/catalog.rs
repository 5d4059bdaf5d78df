//! Each coding CLI's own built-in tools, by group, with what each allows, its risk and what
//! governs it — and that catalog merged with the tools the CLI reported in the agent's last run.
//!
//! Where the names come from:
//! - Claude Code 2.1.332: its `system/init` line (`claude -p … --output-format stream-json
//!   --verbose`) reports 23 tools by default; `--tools Read,Glob,Grep` adds Glob and Grep; an MCP
//!   server adds the three MCP resource tools. Older names (LS, MultiEdit, NotebookRead,
//!   BashOutput, KillShell, SlashCommand, TodoWrite) stay so a run of an older version is known.
//! - Codex 0.171: the native binary's tool handlers and specs, and `codex features list`
//!   (`unified_exec` on, so commands run through `exec_command`/`write_stdin`).
//! - Gemini CLI 0.61: the bundle's `*_TOOL_NAME` constants, `Config.createToolRegistry` (what it
//!   registers) and `bundle/policies/*.toml` (what a headless run may use without asking: the
//!   read-only tools; `replace`, `write_file`, `run_shell_command`, `web_fetch` and
//!   `activate_skill` are refused headless unless `--allowed-tools` or the approval mode allow
//!   them; `ask_user` is left out headless).
//!
//! Codex and Gemini have no command that lists their tools without a model call, so for them the
//! list is this catalog; `seen` holds the tools their runs called. MCP tools
//! (`mcp__<server>__<tool>`) are not part of it: they show with their servers.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;

use bosun_shared::agents::CliKind;
use bosun_shared::mcp::Risk;

/// The groups the form lists built-in tools by, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Files,
    Commands,
    Agents,
    Planning,
    Web,
    Other,
}

impl Group {
    pub const ALL: [Group; 6] = [
        Group::Files,
        Group::Commands,
        Group::Agents,
        Group::Planning,
        Group::Web,
        Group::Other,
    ];

    fn rank(self) -> u8 {
        match self {
            Group::Files => 0,
            Group::Commands => 1,
            Group::Agents => 2,
            Group::Planning => 3,
            Group::Web => 4,
            Group::Other => 5,
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Group::Files => "Files",
            Group::Commands => "Commands",
            Group::Agents => "Agents",
            Group::Planning => "Planning",
            Group::Web => "Web",
            Group::Other => "Other",
        })
    }
}

/// How a catalogued tool is governed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governed {
    /// The CLI uses it without asking whenever it offers it.
    AlwaysOn,
    /// The agent's permission mode decides (Claude's `--permission-mode`, Codex's `--sandbox`,
    /// Gemini's `--approval-mode`).
    PermissionMode,
    /// The agent's allowed commands decide (`Bash(git *)`); with none it asks, which a headless
    /// run cannot, so it is refused.
    AllowedCommands,
    /// The agent's web search switch.
    WebSearch,
    /// The agent's web fetch switch (off, any page, or listed domains).
    WebFetch,
    /// The agent's skills switch (Claude Code's slash commands and skills).
    Skills,
    /// Off, and why.
    Off(&'static str),
}

/// One built-in tool of a CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogTool {
    /// The name as the CLI reports it and as permission rules write it.
    pub name: &'static str,
    pub group: Group,
    /// What it allows, in one line.
    pub what: &'static str,
    pub risk: Risk,
    pub governed: Governed,
}

/// The agent's settings that decide the state of the tools they govern.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchStates {
    pub web_search: bool,
    /// `off`, `any`, or a comma-separated list of domains (as `WebFetch` displays).
    pub web_fetch: String,
    pub skills: bool,
    /// `None`: the CLI's own default.
    pub permission_mode: Option<String>,
    /// Such as `Bash(git *)`.
    pub allowed_commands: Vec<String>,
}

const ASKS_IN_RESULT: &str = "bosun keeps it off; the agent asks in its result instead";

const fn tool(
    name: &'static str,
    group: Group,
    what: &'static str,
    risk: Risk,
    governed: Governed,
) -> CatalogTool {
    CatalogTool {
        name,
        group,
        what,
        risk,
        governed,
    }
}

use Governed::{AllowedCommands, AlwaysOn, Off, PermissionMode, Skills};
use Group::{Agents, Commands, Files, Other, Planning, Web};
use Risk::{High, Low, Medium};

static CLAUDE: &[CatalogTool] = &[
    // Files
    tool(
        "Read",
        Files,
        "Read a file: text, images, PDFs and notebooks",
        Low,
        AlwaysOn,
    ),
    tool(
        "Glob",
        Files,
        "Find files by a name pattern such as **/*.rs",
        Low,
        AlwaysOn,
    ),
    tool(
        "Grep",
        Files,
        "Search the contents of files with a regular expression",
        Low,
        AlwaysOn,
    ),
    tool(
        "LS",
        Files,
        "List a folder's entries (older versions)",
        Low,
        AlwaysOn,
    ),
    tool(
        "NotebookRead",
        Files,
        "Read a Jupyter notebook's cells and outputs (older versions)",
        Low,
        AlwaysOn,
    ),
    tool(
        "Edit",
        Files,
        "Change part of a file by replacing exact text",
        Medium,
        PermissionMode,
    ),
    tool(
        "MultiEdit",
        Files,
        "Make several replacements in one file at once (older versions)",
        Medium,
        PermissionMode,
    ),
    tool(
        "Write",
        Files,
        "Create a file or overwrite one whole",
        Medium,
        PermissionMode,
    ),
    tool(
        "NotebookEdit",
        Files,
        "Change, add or delete cells of a Jupyter notebook",
        Medium,
        PermissionMode,
    ),
    tool(
        "EnterWorktree",
        Files,
        "Create an isolated git worktree and switch the session into it",
        Medium,
        AlwaysOn,
    ),
    tool(
        "ExitWorktree",
        Files,
        "Leave the worktree and go back to the first folder, keeping or removing the worktree",
        Medium,
        AlwaysOn,
    ),
    // Commands
    tool(
        "Bash",
        Commands,
        "Run shell commands in the agent's folder",
        High,
        AllowedCommands,
    ),
    tool(
        "Monitor",
        Commands,
        "Run a command in the background and react to each line it prints (Bash's rules apply)",
        High,
        AllowedCommands,
    ),
    tool(
        "BashOutput",
        Commands,
        "Read the output of a command running in the background (older versions)",
        Low,
        AlwaysOn,
    ),
    tool(
        "KillShell",
        Commands,
        "Stop a command running in the background (older versions)",
        Low,
        AlwaysOn,
    ),
    tool(
        "TaskStop",
        Commands,
        "Stop a background command, monitor or sub-agent it started",
        Low,
        AlwaysOn,
    ),
    // Agents
    tool(
        "Task",
        Agents,
        "Start a sub-agent with its own context for part of the task; it has the agent's permissions",
        Medium,
        AlwaysOn,
    ),
    tool(
        "Agent",
        Agents,
        "Start a sub-agent with its own context for part of the task (the newer name of Task)",
        Medium,
        AlwaysOn,
    ),
    tool(
        "Workflow",
        Agents,
        "Run a workflow script that starts and coordinates several sub-agents",
        Medium,
        AlwaysOn,
    ),
    tool(
        "SendMessage",
        Agents,
        "Send a message to a sub-agent, a teammate or another Claude session it can reach",
        Medium,
        AlwaysOn,
    ),
    tool(
        "ListAgents",
        Agents,
        "List the sub-agents, teammates and Claude sessions it can send messages to",
        Low,
        AlwaysOn,
    ),
    // Planning
    tool(
        "TodoWrite",
        Planning,
        "Keep a to-do list of the task's steps",
        Low,
        AlwaysOn,
    ),
    tool(
        "EnterPlanMode",
        Planning,
        "Switch to plan mode: look around and plan before changing anything",
        Low,
        AlwaysOn,
    ),
    tool(
        "ExitPlanMode",
        Planning,
        "Present its plan and leave plan mode (in the plan permission mode)",
        Low,
        PermissionMode,
    ),
    tool(
        "CronCreate",
        Planning,
        "Schedule a prompt to run again later, once or on a cron schedule, while the session lasts",
        Low,
        AlwaysOn,
    ),
    tool(
        "CronDelete",
        Planning,
        "Cancel a scheduled prompt",
        Low,
        AlwaysOn,
    ),
    tool(
        "CronList",
        Planning,
        "List the scheduled prompts",
        Low,
        AlwaysOn,
    ),
    tool(
        "ScheduleWakeup",
        Planning,
        "Wake itself up after a delay to go on with a /loop",
        Low,
        AlwaysOn,
    ),
    // Web
    tool(
        "WebSearch",
        Web,
        "Search the web and read the results' titles and links",
        Medium,
        Governed::WebSearch,
    ),
    tool(
        "WebFetch",
        Web,
        "Fetch a web page and read it (only the listed domains when the switch lists them)",
        High,
        Governed::WebFetch,
    ),
    // Other
    tool(
        "Skill",
        Other,
        "Run a skill: instructions and scripts from .claude/skills or plugins",
        Medium,
        Skills,
    ),
    tool(
        "SlashCommand",
        Other,
        "Run a custom slash command (older versions; Skill does it now)",
        Medium,
        Skills,
    ),
    tool(
        "ToolSearch",
        Other,
        "Load the full definitions of tools kept back until needed",
        Low,
        AlwaysOn,
    ),
    tool(
        "ReportFindings",
        Other,
        "Report a code review's verified findings (file, line, what is wrong)",
        Low,
        AlwaysOn,
    ),
    tool(
        "DesignSync",
        Other,
        "Read and update the user's claude.ai/design projects, uploading local files (needs a claude.ai login)",
        High,
        PermissionMode,
    ),
    tool(
        "AskUserQuestion",
        Other,
        "Ask the person multiple-choice questions and wait for the answers",
        Low,
        Off(ASKS_IN_RESULT),
    ),
    tool(
        "ListMcpResourcesTool",
        Other,
        "List the resources the connected MCP servers offer; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
    tool(
        "ReadMcpResourceTool",
        Other,
        "Read a resource of a connected MCP server; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
    tool(
        "ReadMcpResourceDirTool",
        Other,
        "Read a folder of resources of a connected MCP server; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
];

static CODEX: &[CatalogTool] = &[
    // Files
    tool(
        "apply_patch",
        Files,
        "Create, change or delete files by applying a patch, where the sandbox lets it write",
        Medium,
        PermissionMode,
    ),
    tool(
        "view_image",
        Files,
        "Look at an image file from the disk",
        Low,
        AlwaysOn,
    ),
    // Commands
    tool(
        "exec_command",
        Commands,
        "Run a shell command, which may stay open, inside the sandbox the permission mode sets",
        High,
        PermissionMode,
    ),
    tool(
        "write_stdin",
        Commands,
        "Type into a command exec_command left running, or read its new output",
        High,
        PermissionMode,
    ),
    tool(
        "shell_command",
        Commands,
        "Run a shell command to completion inside the sandbox (when Codex's unified exec is off)",
        High,
        PermissionMode,
    ),
    // Agents
    tool(
        "spawn_agent",
        Agents,
        "Start a sub-agent, in the same sandbox, for part of the task",
        Medium,
        AlwaysOn,
    ),
    tool(
        "send_input",
        Agents,
        "Send a message to a sub-agent it started",
        Low,
        AlwaysOn,
    ),
    tool(
        "wait_agent",
        Agents,
        "Wait for a sub-agent's result",
        Low,
        AlwaysOn,
    ),
    tool(
        "close_agent",
        Agents,
        "Close a sub-agent it started",
        Low,
        AlwaysOn,
    ),
    tool(
        "resume_agent",
        Agents,
        "Reopen a sub-agent it closed",
        Low,
        AlwaysOn,
    ),
    // Planning
    tool(
        "update_plan",
        Planning,
        "Keep a plan of the task's steps and their progress",
        Low,
        AlwaysOn,
    ),
    tool(
        "get_goal",
        Planning,
        "Read the thread's goal and its budget",
        Low,
        AlwaysOn,
    ),
    tool(
        "create_goal",
        Planning,
        "Set a goal for the thread when none is set",
        Low,
        AlwaysOn,
    ),
    tool(
        "update_goal",
        Planning,
        "Mark the thread's goal achieved",
        Low,
        AlwaysOn,
    ),
    // Web
    tool(
        "web_search",
        Web,
        "Search the web with OpenAI's hosted search",
        Medium,
        Governed::WebSearch,
    ),
    // Other
    tool(
        "image_generation",
        Other,
        "Create an image with OpenAI's hosted image generator",
        Low,
        AlwaysOn,
    ),
    tool(
        "tool_search",
        Other,
        "Find and load MCP or app tools kept back until needed",
        Low,
        AlwaysOn,
    ),
    tool(
        "request_user_input",
        Other,
        "Ask the person questions and wait for the answers (codex exec does not support it)",
        Low,
        Off(ASKS_IN_RESULT),
    ),
    tool(
        "list_mcp_resources",
        Other,
        "List the resources the MCP servers offer; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
    tool(
        "list_mcp_resource_templates",
        Other,
        "List the resource templates the MCP servers offer; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
    tool(
        "read_mcp_resource",
        Other,
        "Read a resource of an MCP server; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
];

const TRACKER_OFF: &str =
    "Gemini's task tracker is off unless its settings turn it on, and bosun does not";

static GEMINI: &[CatalogTool] = &[
    // Files
    tool(
        "read_file",
        Files,
        "Read a file: text, images and PDFs",
        Low,
        AlwaysOn,
    ),
    tool(
        "read_many_files",
        Files,
        "Read several files at once",
        Low,
        Off(
            "Gemini CLI uses it only to read the files a prompt names with @; the model is not offered it",
        ),
    ),
    tool(
        "list_directory",
        Files,
        "List a folder's entries",
        Low,
        AlwaysOn,
    ),
    tool(
        "glob",
        Files,
        "Find files by a name pattern such as **/*.ts",
        Low,
        AlwaysOn,
    ),
    tool(
        "grep_search",
        Files,
        "Search the contents of files with a regular expression",
        Low,
        AlwaysOn,
    ),
    tool(
        "replace",
        Files,
        "Change part of a file by replacing exact text",
        Medium,
        PermissionMode,
    ),
    tool(
        "write_file",
        Files,
        "Create a file or overwrite one whole",
        Medium,
        PermissionMode,
    ),
    // Commands
    tool(
        "run_shell_command",
        Commands,
        "Run shell commands in the agent's folder (allowed commands become run_shell_command(<prefix>))",
        High,
        AllowedCommands,
    ),
    tool(
        "list_background_processes",
        Commands,
        "List the shell commands it started in the background",
        Low,
        PermissionMode,
    ),
    tool(
        "read_background_output",
        Commands,
        "Read the output of a command running in the background",
        Low,
        PermissionMode,
    ),
    // Agents
    tool(
        "invoke_agent",
        Agents,
        "Hand part of the task to one of Gemini's sub-agents, such as codebase_investigator",
        Medium,
        AlwaysOn,
    ),
    // Planning
    tool(
        "write_todos",
        Planning,
        "Keep a to-do list of the task's steps",
        Low,
        PermissionMode,
    ),
    tool(
        "enter_plan_mode",
        Planning,
        "Switch to plan mode: read and plan, change nothing",
        Low,
        AlwaysOn,
    ),
    tool(
        "exit_plan_mode",
        Planning,
        "Present its plan and leave plan mode",
        Low,
        AlwaysOn,
    ),
    tool(
        "tracker_create_task",
        Planning,
        "Add a task to Gemini's task tracker",
        Low,
        Off(TRACKER_OFF),
    ),
    tool(
        "tracker_update_task",
        Planning,
        "Change a task in Gemini's task tracker",
        Low,
        Off(TRACKER_OFF),
    ),
    tool(
        "tracker_get_task",
        Planning,
        "Read a task of Gemini's task tracker",
        Low,
        Off(TRACKER_OFF),
    ),
    tool(
        "tracker_list_tasks",
        Planning,
        "List the tasks of Gemini's task tracker",
        Low,
        Off(TRACKER_OFF),
    ),
    tool(
        "tracker_add_dependency",
        Planning,
        "Make one tracked task wait for another",
        Low,
        Off(TRACKER_OFF),
    ),
    tool(
        "tracker_visualize",
        Planning,
        "Draw the tracked tasks and how they depend on each other",
        Low,
        Off(TRACKER_OFF),
    ),
    // Web
    tool(
        "google_web_search",
        Web,
        "Search the web with Google Search (off: bosun excludes it in the run's settings)",
        Medium,
        Governed::WebSearch,
    ),
    tool(
        "web_fetch",
        Web,
        "Fetch the web pages a prompt names and read them",
        High,
        Governed::WebFetch,
    ),
    // Other
    tool(
        "activate_skill",
        Other,
        "Load an agent skill's instructions and files",
        Medium,
        PermissionMode,
    ),
    tool(
        "update_topic",
        Other,
        "Name the topic it is working on, for Gemini's display",
        Low,
        AlwaysOn,
    ),
    tool(
        "ask_user",
        Other,
        "Ask the person questions and wait for the answers (Gemini leaves it out headless)",
        Low,
        Off(ASKS_IN_RESULT),
    ),
    tool(
        "list_mcp_resources",
        Other,
        "List the resources the MCP servers offer; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
    tool(
        "read_mcp_resource",
        Other,
        "Read a resource of an MCP server; comes with MCP servers",
        Low,
        AlwaysOn,
    ),
];

/// The built-in tools bosun knows for a CLI; none for a `command` agent.
pub fn catalog(cli: CliKind) -> &'static [CatalogTool] {
    match cli {
        CliKind::Claude => CLAUDE,
        CliKind::Codex => CODEX,
        CliKind::Gemini => GEMINI,
        CliKind::Command => &[],
    }
}

/// A catalogued tool by its name.
pub fn find(cli: CliKind, name: &str) -> Option<&'static CatalogTool> {
    catalog(cli).iter().find(|t| t.name == name)
}

/// Where the list comes from, in words, for [`BuiltinTools::source`].
///
/// [`BuiltinTools::source`]: crate::builtin::BuiltinTools
pub fn source(cli: CliKind, seen: &[String]) -> &'static str {
    match cli {
        CliKind::Claude if seen.is_empty() => {
            "From bosun's catalog; Claude Code reports its own list when the agent runs"
        }
        CliKind::Claude => {
            "Bosun's catalog merged with the tools Claude Code reported in the agent's last run"
        }
        CliKind::Codex | CliKind::Gemini => "From bosun's catalog",
        CliKind::Command => "A command agent has no built-in tools bosun knows",
    }
}

/// Whether a reported name belongs elsewhere: an MCP server's tool (shown with its server).
fn is_mcp_tool(cli: CliKind, name: &str) -> bool {
    name.starts_with("mcp__") || (cli == CliKind::Gemini && name.starts_with("mcp_"))
}

/// The catalog name for a reported one: Codex's stream names the kind of item a run did, not
/// the tool (`command_execution` is `exec_command` with unified exec on, as in 0.171).
fn catalog_name(cli: CliKind, reported: &str) -> &str {
    match cli {
        CliKind::Codex => match reported {
            "command_execution" => "exec_command",
            "file_change" => "apply_patch",
            other => other,
        },
        CliKind::Claude | CliKind::Gemini | CliKind::Command => reported,
    }
}

/// A built-in tool of an agent's CLI as the form lists it: what it allows, its risk (none for
/// a tool the catalog does not know), its state in words, and whether the last run saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinTool {
    pub name: String,
    pub group: Group,
    pub what: &'static str,
    pub risk: Option<Risk>,
    pub state: String,
    pub seen_in_last_run: bool,
}

/// The catalog merged with the tools the CLI reported in the agent's last run: every
/// catalogued tool, marked when seen, and each reported tool the catalog does not know under
/// Other, risk unknown, off. MCP tools are left out. Sorted by group, then name.
pub fn merged(cli: CliKind, seen: &[String], switches: &SwitchStates) -> Vec<BuiltinTool> {
    if cli == CliKind::Command {
        return Vec::new();
    }
    let seen: BTreeSet<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|n| !n.is_empty() && !is_mcp_tool(cli, n))
        .map(|n| catalog_name(cli, n))
        .collect();
    let tools = catalog(cli);
    let mut out: Vec<BuiltinTool> = tools
        .iter()
        .map(|t| BuiltinTool {
            name: t.name.to_string(),
            group: t.group,
            what: t.what,
            risk: Some(t.risk),
            state: state(cli, t, switches),
            seen_in_last_run: seen.contains(t.name),
        })
        .collect();
    out.extend(
        seen.iter()
            .filter(|n| !tools.iter().any(|t| t.name == **n))
            .map(|n| BuiltinTool {
                name: (*n).to_string(),
                group: Group::Other,
                what: "A tool the CLI reported that bosun's catalog does not know",
                risk: None,
                state: "off (a tool bosun's catalog does not know)".to_string(),
                seen_in_last_run: true,
            }),
    );
    out.sort_by(order);
    out
}

fn order(a: &BuiltinTool, b: &BuiltinTool) -> Ordering {
    a.group
        .rank()
        .cmp(&b.group.rank())
        .then_with(|| {
            a.name
                .to_ascii_lowercase()
                .cmp(&b.name.to_ascii_lowercase())
        })
        .then_with(|| a.name.cmp(&b.name))
}

/// The tool's state in plain words.
fn state(cli: CliKind, t: &CatalogTool, s: &SwitchStates) -> String {
    let on_off = |on: bool| if on { "on" } else { "off" };
    match t.governed {
        Governed::AlwaysOn => "always on".to_string(),
        Governed::PermissionMode => match permission_mode(cli, s) {
            Some(mode) => format!("set by the permission mode ({mode})"),
            None => "set by the permission mode".to_string(),
        },
        Governed::AllowedCommands => {
            if cli == CliKind::Claude && s.permission_mode.as_deref() == Some("bypassPermissions") {
                return "set by the permission mode (bypassPermissions: any command)".to_string();
            }
            let rules: Vec<&str> = s
                .allowed_commands
                .iter()
                .map(String::as_str)
                .filter(|r| {
                    let tool = r.split('(').next().unwrap_or_default();
                    tool == "Bash" || tool == t.name
                })
                .collect();
            if rules.is_empty() {
                "set by allowed commands (none: asks, so refused headless)".to_string()
            } else {
                format!("set by allowed commands ({})", rules.join(", "))
            }
        }
        Governed::WebSearch => format!("{} (web search switch)", on_off(s.web_search)),
        Governed::WebFetch => match s.web_fetch.trim() {
            "" | "off" => "off (web fetch switch)".to_string(),
            "any" | "on" => "on (web fetch switch: any page)".to_string(),
            list if cli == CliKind::Gemini => format!(
                "off (web fetch switch lists {list}; Gemini cannot keep to a list of domains)"
            ),
            list => format!("on (web fetch switch: only {list})"),
        },
        Governed::Skills => format!("{} (skills switch)", on_off(s.skills)),
        Governed::Off(why) => format!("off: {why}"),
    }
}

/// The permission mode in force: the agent's, or else the CLI's default.
fn permission_mode(cli: CliKind, s: &SwitchStates) -> Option<String> {
    s.permission_mode
        .clone()
        .or_else(|| cli.permission_modes().first().map(|m| (*m).to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code 2.1.332's default init `tools`, as measured.
    const CLAUDE_DEFAULT: [&str; 23] = [
        "Task",
        "Bash",
        "CronCreate",
        "CronDelete",
        "CronList",
        "DesignSync",
        "Edit",
        "EnterWorktree",
        "ExitWorktree",
        "ListAgents",
        "Monitor",
        "NotebookEdit",
        "Read",
        "ReportFindings",
        "ScheduleWakeup",
        "SendMessage",
        "Skill",
        "TaskStop",
        "ToolSearch",
        "WebFetch",
        "WebSearch",
        "Workflow",
        "Write",
    ];

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_string()).collect()
    }

    fn by_name<'a>(views: &'a [BuiltinTool], name: &str) -> &'a BuiltinTool {
        views
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{name} is not in the list"))
    }

    #[test]
    fn claude_default_init_tools_and_the_mcp_ones_are_all_known() {
        for name in CLAUDE_DEFAULT
            .iter()
            .chain(&[
                "Glob",
                "Grep",
                "ListMcpResourcesTool",
                "ReadMcpResourceTool",
            ])
            .chain(&["ReadMcpResourceDirTool", "TodoWrite", "AskUserQuestion"])
        {
            assert!(
                find(CliKind::Claude, name).is_some(),
                "{name} is not catalogued"
            );
        }
        let views = merged(
            CliKind::Claude,
            &strings(&CLAUDE_DEFAULT),
            &SwitchStates::default(),
        );
        assert!(
            views.iter().all(|v| v.risk.is_some()),
            "an unknown tool slipped in"
        );
        assert_eq!(views.iter().filter(|v| v.seen_in_last_run).count(), 23);
        assert!(!by_name(&views, "Glob").seen_in_last_run);
    }

    #[test]
    fn an_unknown_reported_tool_is_other_unknown_risk_and_off_and_mcp_tools_are_left_out() {
        let seen = strings(&[
            "Read",
            "FancyNewTool",
            "FancyNewTool",
            "mcp__everything__echo",
            "ListMcpResourcesTool",
        ]);
        let views = merged(CliKind::Claude, &seen, &SwitchStates::default());
        let fancy: Vec<_> = views.iter().filter(|v| v.name == "FancyNewTool").collect();
        assert_eq!(fancy.len(), 1);
        assert_eq!(fancy[0].group, Group::Other);
        assert_eq!(fancy[0].risk, None);
        assert_eq!(fancy[0].state, "off (a tool bosun's catalog does not know)");
        assert!(fancy[0].seen_in_last_run);
        assert!(views.iter().all(|v| !v.name.starts_with("mcp__")));
        let res = by_name(&views, "ListMcpResourcesTool");
        assert_eq!((res.group, res.state.as_str()), (Group::Other, "always on"));
        assert!(res.what.contains("comes with MCP servers"));
        assert_eq!(by_name(&views, "Read").state, "always on");
        assert_eq!(views.len(), catalog(CliKind::Claude).len() + 1);
    }

    #[test]
    fn states_read_in_plain_words() {
        let off = SwitchStates::default();
        let views = merged(CliKind::Claude, &[], &off);
        assert_eq!(
            by_name(&views, "Edit").state,
            "set by the permission mode (default)"
        );
        assert_eq!(
            by_name(&views, "Bash").state,
            "set by allowed commands (none: asks, so refused headless)"
        );
        assert_eq!(
            by_name(&views, "WebSearch").state,
            "off (web search switch)"
        );
        assert_eq!(by_name(&views, "WebFetch").state, "off (web fetch switch)");
        assert_eq!(by_name(&views, "Skill").state, "off (skills switch)");
        assert_eq!(
            by_name(&views, "AskUserQuestion").state,
            "off: bosun keeps it off; the agent asks in its result instead"
        );

        let on = SwitchStates {
            web_search: true,
            web_fetch: "docs.rs,*.laravel.com".into(),
            skills: true,
            permission_mode: Some("acceptEdits".into()),
            allowed_commands: strings(&[
                "Bash(git *)",
                "WebFetch(domain:docs.rs)",
                "Bash(npm test)",
            ]),
        };
        let views = merged(CliKind::Claude, &[], &on);
        assert_eq!(
            by_name(&views, "Write").state,
            "set by the permission mode (acceptEdits)"
        );
        assert_eq!(
            by_name(&views, "Bash").state,
            "set by allowed commands (Bash(git *), Bash(npm test))"
        );
        assert_eq!(by_name(&views, "WebSearch").state, "on (web search switch)");
        assert_eq!(
            by_name(&views, "WebFetch").state,
            "on (web fetch switch: only docs.rs,*.laravel.com)"
        );
        assert_eq!(by_name(&views, "SlashCommand").state, "on (skills switch)");

        let bypass = SwitchStates {
            permission_mode: Some("bypassPermissions".into()),
            ..SwitchStates::default()
        };
        let views = merged(CliKind::Claude, &[], &bypass);
        assert!(by_name(&views, "Bash").state.contains("bypassPermissions"));

        // Gemini cannot keep to a list of domains, so the adapter leaves web_fetch out.
        let views = merged(CliKind::Gemini, &[], &on);
        assert!(by_name(&views, "web_fetch").state.starts_with("off"));
        let any = SwitchStates {
            web_fetch: "any".into(),
            ..SwitchStates::default()
        };
        let views = merged(CliKind::Gemini, &[], &any);
        assert_eq!(
            by_name(&views, "web_fetch").state,
            "on (web fetch switch: any page)"
        );
        assert!(
            by_name(&views, "run_shell_command")
                .state
                .starts_with("set by allowed commands"),
            "{}",
            by_name(&views, "run_shell_command").state
        );
        let views = merged(CliKind::Codex, &[], &SwitchStates::default());
        assert_eq!(
            by_name(&views, "exec_command").state,
            "set by the permission mode (read-only)"
        );
    }

    #[test]
    fn sorted_by_group_then_name() {
        for cli in [CliKind::Claude, CliKind::Codex, CliKind::Gemini] {
            let views = merged(cli, &strings(&["Zzz", "aaa"]), &SwitchStates::default());
            let keys: Vec<(u8, String)> = views
                .iter()
                .map(|v| (v.group.rank(), v.name.to_ascii_lowercase()))
                .collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "{cli}");
            assert_eq!(views.last().map(|v| v.name.as_str()), Some("Zzz"), "{cli}");
        }
        assert_eq!(
            Group::ALL.map(|g| g.to_string()),
            ["Files", "Commands", "Agents", "Planning", "Web", "Other"]
        );
    }

    #[test]
    fn codex_and_gemini_have_catalogs_and_command_has_none() {
        for cli in [CliKind::Claude, CliKind::Codex, CliKind::Gemini] {
            let tools = catalog(cli);
            assert!(!tools.is_empty(), "{cli}");
            let names: BTreeSet<&str> = tools.iter().map(|t| t.name).collect();
            assert_eq!(names.len(), tools.len(), "{cli} has a name twice");
            assert!(tools.iter().all(|t| !t.what.is_empty()), "{cli}");
        }
        for name in [
            "exec_command",
            "apply_patch",
            "update_plan",
            "web_search",
            "view_image",
        ] {
            assert!(find(CliKind::Codex, name).is_some(), "{name}");
        }
        for name in [
            "read_file",
            "run_shell_command",
            "google_web_search",
            "web_fetch",
            "write_todos",
            "glob",
            "grep_search",
            "list_directory",
            "replace",
            "write_file",
            "activate_skill",
        ] {
            assert!(find(CliKind::Gemini, name).is_some(), "{name}");
        }
        assert!(catalog(CliKind::Command).is_empty());
        assert!(merged(CliKind::Command, &strings(&["x"]), &SwitchStates::default()).is_empty());
        assert_eq!(source(CliKind::Codex, &[]), "From bosun's catalog");
        assert_eq!(source(CliKind::Gemini, &[]), "From bosun's catalog");
    }

    #[test]
    fn codex_item_kinds_mark_their_tools_and_gemini_mcp_names_are_left_out() {
        let seen = strings(&[
            "command_execution",
            "file_change",
            "web_search",
            "mcp__s__t",
        ]);
        let views = merged(CliKind::Codex, &seen, &SwitchStates::default());
        for name in ["exec_command", "apply_patch", "web_search"] {
            assert!(by_name(&views, name).seen_in_last_run, "{name}");
        }
        assert!(views.iter().all(|v| v.risk.is_some()));

        let seen = strings(&["read_file", "mcp_github_list_issues"]);
        let views = merged(CliKind::Gemini, &seen, &SwitchStates::default());
        assert!(by_name(&views, "read_file").seen_in_last_run);
        assert!(views.iter().all(|v| v.risk.is_some()));
    }
}
