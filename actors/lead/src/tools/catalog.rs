//! The catalog of bosun's tools as the lead is offered them: each tool's description, input
//! schema and whether it only reads.

use serde_json::{Value, json};

use super::LeadTool;

pub struct ToolSpec {
    pub tool: LeadTool,
    pub description: &'static str,
    pub schema: Value,
    /// Reads only.
    pub read_only: bool,
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": props, "required": required })
}

fn s(d: &str) -> Value {
    json!({ "type": "string", "description": d })
}

/// Every tool the lead is offered, with its description, input schema and whether it only
/// reads. Long on purpose: it is a table, one entry per tool, read top to bottom; a split would
/// only scatter it.
pub fn catalog() -> Vec<ToolSpec> {
    let card_fields = || {
        json!({
            "title": s("A short title"),
            "description": s("What the task is"),
            "acceptance": s("What must be true when it is done"),
            "assignee": s("The agent that takes it (its name); an Auto column starts it"),
            "column": s("The column's name"),
            "project": s("The project it belongs to (its name): its runs work in a worktree of the project's repository, on a branch of the card's own"),
        })
    };
    vec![
        ToolSpec {
            tool: LeadTool::ListTasks,
            description: "The board: its columns (Auto columns start their assigned cards' agents) and every card with its column, assignee, hold and last run.",
            schema: obj(json!({}), &[]),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::GetTask,
            description: "One card with its whole activity log.",
            schema: obj(
                json!({ "card": s("The card's id (or its first 8 characters)") }),
                &["card"],
            ),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::CreateTask,
            description: "Creates a card (in the first column unless `column` is given).",
            schema: obj(card_fields(), &["title"]),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::UpdateTask,
            description: "Changes a card: its fields, its column (a move), a comment for its activity log, or `clear_hold` to take it off hold.",
            schema: obj(
                {
                    let mut f = card_fields();
                    f["card"] = s("The card's id");
                    f["comment"] = s("A line for the card's activity log");
                    f["clear_hold"] =
                        json!({ "type": "boolean", "description": "Take the card off hold" });
                    f
                },
                &["card"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::AddColumn,
            description: "Adds a column to the board; `auto: true` makes its assigned cards start by themselves.",
            schema: obj(
                json!({ "name": s("The column's name"), "auto": { "type": "boolean" } }),
                &["name"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::SetColumn,
            description: "Renames a column or makes it Auto or Manual.",
            schema: obj(
                json!({ "column": s("The column's name"), "name": s("A new name"), "auto": { "type": "boolean" } }),
                &["column"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::ListAgents,
            description: "The agents: name, role, CLI, model.",
            schema: obj(json!({}), &[]),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::GetAgent,
            description: "One agent: its setup and its switches (which MCP servers, web tools, browser and skills it may use — only the person changes those).",
            schema: obj(json!({ "agent": s("The agent's name") }), &["agent"]),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::CreateAgent,
            description: "Creates an agent. Its tools stay off until the person switches them on.",
            schema: obj(
                json!({
                    "name": s("Its name"),
                    "cli": s("claude, codex or gemini"),
                    "cwd": s("The absolute folder its runs work in"),
                    "instructions": s("What it is told before each task"),
                    "role": s("worker or a role such as QA"),
                    "model": s("The model, such as sonnet"),
                    "allowed_commands": { "type": "array", "items": { "type": "string" }, "description": "Commands only, such as Bash(git *)" },
                }),
                &["name", "cli", "cwd"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::UpdateAgent,
            description: "Changes an agent's instructions, role, model or allowed commands (never its tool switches).",
            schema: obj(
                json!({
                    "agent": s("The agent's name"),
                    "instructions": s("New instructions"),
                    "role": s("A new role"),
                    "model": s("A new model"),
                    "allowed_commands": { "type": "array", "items": { "type": "string" } },
                }),
                &["agent"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::StartAgentRun,
            description: "Starts a run of an agent with a prompt.",
            schema: obj(
                json!({ "agent": s("The agent's name"), "prompt": s("What it should do") }),
                &["agent", "prompt"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::ContinueAgentRun,
            description: "Continues an earlier run of a Claude Code agent (its session) with a new prompt.",
            schema: obj(
                json!({ "run": s("The earlier run's id"), "prompt": s("What it should do now") }),
                &["run", "prompt"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::SetAgentStatus,
            description: "Pauses an agent (the board starts no run of it) or makes it active again.",
            schema: obj(
                json!({ "agent": s("The agent's name"), "status": { "type": "string", "enum": ["active", "paused"] } }),
                &["agent", "status"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::AttachFile,
            description: "Attaches a file to a card: only a file the person named or added in this chat.",
            schema: obj(
                json!({ "path": s("The file's absolute path"), "card": s("The card's id") }),
                &["path", "card"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::MemoryRead,
            description: "Reads a memory note (its text and version); without `path`, lists the notes.",
            schema: obj(
                json!({ "path": s("The note's path, such as decisions/api.md") }),
                &[],
            ),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::MemoryWrite,
            description: "Writes a note. Changing an existing note needs `base_version`, the version you read; a note changed since fails.",
            schema: obj(
                json!({ "path": s("The note's path"), "text": s("Its whole new text"), "base_version": { "type": "integer" } }),
                &["path", "text"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::MemoryAppend,
            description: "Adds a section (a heading and its text) at the end of a note.",
            schema: obj(
                json!({ "path": s("The note's path"), "heading": s("The section's heading"), "text": s("The section's text") }),
                &["path", "heading", "text"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::MemoryMove,
            description: "Moves a note to another path.",
            schema: obj(
                json!({ "from": s("Its path now"), "to": s("Its new path") }),
                &["from", "to"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::ListProjects,
            description: "The projects: each a git checkout (its folder, main branch and host), whether it is tested, whether the person lets the lead merge its pull requests, and how many cards it has.",
            schema: obj(json!({}), &[]),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::GetProject,
            description: "One project. Only the person changes projects.",
            schema: obj(json!({ "project": s("The project's name") }), &["project"]),
            read_only: true,
        },
        ToolSpec {
            tool: LeadTool::MergePullRequest,
            description: "Merges a card's own pull request (a merge commit, only while its head is the commit QA passed), only when every rule holds: the project lets the lead merge; the card is in Review with testing on, not on hold, no agent working on it; its latest QA verdict passed exactly the pull request's head commit; the pull request is open, not a draft, from the card's branch into the main branch, and mergeable; every check passed; no release is under way; GitHub only. Otherwise it refuses with the rule and changes nothing; never work around a refusal.",
            schema: obj(json!({ "card": s("The card's id") }), &["card"]),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::UpdateCheckout,
            description: "Brings a project's checkout up to date with origin's main branch (fast-forward only; the checkout must be on its main branch). With changes not committed it refuses unless `stash` is true, which puts them aside first (`git stash`).",
            schema: obj(
                json!({ "project": s("The project's name"), "stash": { "type": "boolean", "description": "Put the checkout's changes aside first" } }),
                &["project"],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::QaPass,
            description: "Your verdict as QA on this card: it passed. bosun records it with the head commit of the card's worktree as it is now, so commit what you tested first.",
            schema: obj(
                json!({ "summary": s("What you checked, in a sentence or two") }),
                &[],
            ),
            read_only: false,
        },
        ToolSpec {
            tool: LeadTool::QaFail,
            description: "Your verdict as QA on this card: it failed. Say what is wrong.",
            schema: obj(json!({ "summary": s("What is wrong") }), &["summary"]),
            read_only: false,
        },
    ]
}
