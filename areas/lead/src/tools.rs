//! The tools of bosun's own MCP server: what each takes, which are privileged (they change
//! what runs, the agents, the columns or the notes, and so wait for the person after an
//! outside tool), how each is carried out, and how a waiting call is put in words for the
//! person.

use crate::record::ChatReads;
use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
use std::path::PathBuf;

use bosun_shared::ChatId;
use bosun_shared::agents::CliKind;
use bosun_shared::protocol::agents::AgentParams;
use bosun_shared::protocol::board::{
    AddCardParams, AddColumnParams, BoardView, CardView, ColumnView, EditCardParams, NoteSummary,
    NoteView, SetColumnParams,
};
use bosun_shared::protocol::projects::ProjectView;
use serde_json::{Value, json};

use crate::{ToolError, UnknownTool};
use bosun_agents::launch;
use bosun_agents::registry::{AgentEdit, AgentsContext, AgentsHandle, AgentsMsg};
use bosun_board::{BoardHandle, BoardRequest, Reply};
use bosun_kit::edit::Edit;
use bosun_kit::handle::ActorHandle;
use bosun_kit::offload::blocking;
use bosun_runs::RunsMsg;
use bosun_store::Store;

/// What the tools work with.
#[derive(Clone)]
pub struct ToolCtx {
    pub store: Store,
    pub board: BoardHandle,
    pub agents: AgentsHandle,
    pub agents_ctx: AgentsContext,
    pub runs: ActorHandle<RunsMsg>,
    /// Where attached files go: `<attachments>/<card id>/<file name>`.
    pub attachments: PathBuf,
}

pub struct ToolSpec {
    pub tool: LeadTool,
    pub description: &'static str,
    pub schema: Value,
    /// Reads only.
    pub read_only: bool,
}

/// bosun's own tools. A call names its tool; the name is parsed once, where the call comes in,
/// and everything after it matches on this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadTool {
    ListTasks,
    GetTask,
    CreateTask,
    UpdateTask,
    AddColumn,
    SetColumn,
    ListAgents,
    GetAgent,
    CreateAgent,
    UpdateAgent,
    StartAgentRun,
    ContinueAgentRun,
    SetAgentStatus,
    AttachFile,
    MemoryRead,
    MemoryWrite,
    MemoryAppend,
    MemoryMove,
    ListProjects,
    GetProject,
    MergePullRequest,
    UpdateCheckout,
    QaPass,
    QaFail,
}

impl LeadTool {
    /// Every tool, in the order the lead is offered them.
    pub const ALL: [LeadTool; 24] = [
        LeadTool::ListTasks,
        LeadTool::GetTask,
        LeadTool::CreateTask,
        LeadTool::UpdateTask,
        LeadTool::AddColumn,
        LeadTool::SetColumn,
        LeadTool::ListAgents,
        LeadTool::GetAgent,
        LeadTool::CreateAgent,
        LeadTool::UpdateAgent,
        LeadTool::StartAgentRun,
        LeadTool::ContinueAgentRun,
        LeadTool::SetAgentStatus,
        LeadTool::AttachFile,
        LeadTool::MemoryRead,
        LeadTool::MemoryWrite,
        LeadTool::MemoryAppend,
        LeadTool::MemoryMove,
        LeadTool::ListProjects,
        LeadTool::GetProject,
        LeadTool::MergePullRequest,
        LeadTool::UpdateCheckout,
        LeadTool::QaPass,
        LeadTool::QaFail,
    ];

    /// The name the lead calls it by.
    pub fn name(self) -> &'static str {
        match self {
            LeadTool::ListTasks => "list_tasks",
            LeadTool::GetTask => "get_task",
            LeadTool::CreateTask => "create_task",
            LeadTool::UpdateTask => "update_task",
            LeadTool::AddColumn => "add_column",
            LeadTool::SetColumn => "set_column",
            LeadTool::ListAgents => "list_agents",
            LeadTool::GetAgent => "get_agent",
            LeadTool::CreateAgent => "create_agent",
            LeadTool::UpdateAgent => "update_agent",
            LeadTool::StartAgentRun => "start_agent_run",
            LeadTool::ContinueAgentRun => "continue_agent_run",
            LeadTool::SetAgentStatus => "set_agent_status",
            LeadTool::AttachFile => "attach_file",
            LeadTool::MemoryRead => "memory_read",
            LeadTool::MemoryWrite => "memory_write",
            LeadTool::MemoryAppend => "memory_append",
            LeadTool::MemoryMove => "memory_move",
            LeadTool::ListProjects => "list_projects",
            LeadTool::GetProject => "get_project",
            LeadTool::MergePullRequest => "merge_pull_request",
            LeadTool::UpdateCheckout => "update_checkout",
            LeadTool::QaPass => "qa_pass",
            LeadTool::QaFail => "qa_fail",
        }
    }

    /// The tool of that name; a name bosun has no tool of is refused in these words.
    pub fn parse(name: &str) -> Result<Self, UnknownTool> {
        Self::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| UnknownTool(name.to_string()))
    }

    /// Whether a call of it waits for the person after an outside tool: it changes what runs,
    /// the agents, the columns or the notes. (`update_task` waits only with `clear_hold` on a
    /// card in an Auto column, which the gate checks.)
    pub fn privileged(self) -> bool {
        match self {
            LeadTool::StartAgentRun
            | LeadTool::ContinueAgentRun
            | LeadTool::CreateAgent
            | LeadTool::UpdateAgent
            | LeadTool::SetAgentStatus
            | LeadTool::AttachFile
            | LeadTool::AddColumn
            | LeadTool::SetColumn
            | LeadTool::MemoryWrite
            | LeadTool::MemoryAppend
            | LeadTool::MemoryMove
            | LeadTool::MergePullRequest
            | LeadTool::UpdateCheckout => true,
            LeadTool::QaPass
            | LeadTool::QaFail
            | LeadTool::ListTasks
            | LeadTool::GetTask
            | LeadTool::CreateTask
            | LeadTool::UpdateTask
            | LeadTool::ListAgents
            | LeadTool::GetAgent
            | LeadTool::MemoryRead
            | LeadTool::ListProjects
            | LeadTool::GetProject => false,
        }
    }
}

impl LeadTool {
    /// The tools of a QA run of a card (its verdict), offered to nobody else.
    pub fn for_qa(self) -> bool {
        match self {
            LeadTool::QaPass | LeadTool::QaFail => true,
            LeadTool::ListTasks
            | LeadTool::GetTask
            | LeadTool::CreateTask
            | LeadTool::UpdateTask
            | LeadTool::AddColumn
            | LeadTool::SetColumn
            | LeadTool::ListAgents
            | LeadTool::GetAgent
            | LeadTool::CreateAgent
            | LeadTool::UpdateAgent
            | LeadTool::StartAgentRun
            | LeadTool::ContinueAgentRun
            | LeadTool::SetAgentStatus
            | LeadTool::AttachFile
            | LeadTool::MemoryRead
            | LeadTool::MemoryWrite
            | LeadTool::MemoryAppend
            | LeadTool::MemoryMove
            | LeadTool::ListProjects
            | LeadTool::GetProject
            | LeadTool::MergePullRequest
            | LeadTool::UpdateCheckout => false,
        }
    }
}

impl std::fmt::Display for LeadTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn need<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    arg(args, key).ok_or_else(|| ToolError::Missing(key.to_string()))
}

fn opt(args: &Value, key: &str) -> Option<String> {
    arg(args, key).map(str::to_string)
}

fn strings(args: &Value, key: &str) -> Result<Option<Vec<String>>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| ToolError::NotStrings(key.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ToolError::NotStrings(key.to_string())),
    }
}

/// Allowed commands take only commands: tools have switches that only the person sets.
fn only_commands(list: &[String]) -> Result<(), ToolError> {
    match list
        .iter()
        .find(|r| !(r.as_str() == "Bash" || r.starts_with("Bash(")))
    {
        Some(r) => Err(ToolError::NotACommand(r.clone())),
        None => Ok(()),
    }
}

/// Asks the Board the request `make` builds around its reply port; the reply is the request's
/// own type.
async fn board<T: Send + 'static>(
    ctx: &ToolCtx,
    make: impl FnOnce(Reply<T>) -> BoardRequest,
) -> Result<T, ToolError> {
    Ok(bosun_board::ask(&ctx.board, make).await?)
}

async fn agents(
    ctx: &ToolCtx,
    msg: impl FnOnce(
        ractor::RpcReplyPort<
            Result<bosun_shared::protocol::agents::AgentView, bosun_agents::AgentsError>,
        >,
    ) -> AgentsMsg,
) -> Result<bosun_shared::protocol::agents::AgentView, ToolError> {
    let a = ctx.agents.get().ok_or(bosun_kit::error::Starting)?;
    Ok(a.call(msg, None)
        .await
        .map_err(|e| ToolError::AgentsUnreachable(e.to_string()))?
        .success_or(ToolError::AgentsNoAnswer)??)
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A Board's reply as the lead is shown it: JSON tagged `answer` with what the reply is about,
/// as the lead's tools have always shown it (the model reads these words, so they stay as
/// they are). Serialized only, borrowing the reply.
#[derive(serde::Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
enum Shown<'a> {
    Board(&'a BoardView),
    Column(&'a ColumnView),
    Card(&'a CardView),
    Notes { notes: &'a [NoteSummary] },
    Note(&'a NoteView),
    Project(&'a ProjectView),
    Projects { projects: &'a [ProjectView] },
}

impl Shown<'_> {
    fn text(&self) -> String {
        pretty(self)
    }
}

/// The part of bosun a tool works on. Carrying out a call and previewing it go by this, one
/// function per part, so that each part's tools read together.
#[derive(Clone, Copy)]
enum Area {
    Board(BoardTool),
    Projects(ProjectTool),
    Agents(AgentTool),
    Runs(RunTool),
    Notes(NoteTool),
    Attach,
    Qa,
}

/// The tools of the board's cards and columns.
#[derive(Clone, Copy)]
enum BoardTool {
    ListTasks,
    GetTask,
    CreateTask,
    UpdateTask,
    AddColumn,
    SetColumn,
}

/// The tools of the projects, their checkouts and their cards' pull requests.
#[derive(Clone, Copy)]
enum ProjectTool {
    ListProjects,
    GetProject,
    MergePullRequest,
    UpdateCheckout,
}

/// The tools of the agents themselves.
#[derive(Clone, Copy)]
enum AgentTool {
    ListAgents,
    GetAgent,
    CreateAgent,
    UpdateAgent,
    SetAgentStatus,
}

/// The tools that start an agent's run.
#[derive(Clone, Copy)]
enum RunTool {
    StartAgentRun,
    ContinueAgentRun,
}

/// The tools of the notes.
#[derive(Clone, Copy)]
enum NoteTool {
    Read,
    Write,
    Append,
    Move,
}

impl LeadTool {
    /// The part of bosun it works on.
    fn area(self) -> Area {
        match self {
            LeadTool::ListTasks => Area::Board(BoardTool::ListTasks),
            LeadTool::GetTask => Area::Board(BoardTool::GetTask),
            LeadTool::CreateTask => Area::Board(BoardTool::CreateTask),
            LeadTool::UpdateTask => Area::Board(BoardTool::UpdateTask),
            LeadTool::AddColumn => Area::Board(BoardTool::AddColumn),
            LeadTool::SetColumn => Area::Board(BoardTool::SetColumn),
            LeadTool::ListProjects => Area::Projects(ProjectTool::ListProjects),
            LeadTool::GetProject => Area::Projects(ProjectTool::GetProject),
            LeadTool::MergePullRequest => Area::Projects(ProjectTool::MergePullRequest),
            LeadTool::UpdateCheckout => Area::Projects(ProjectTool::UpdateCheckout),
            LeadTool::ListAgents => Area::Agents(AgentTool::ListAgents),
            LeadTool::GetAgent => Area::Agents(AgentTool::GetAgent),
            LeadTool::CreateAgent => Area::Agents(AgentTool::CreateAgent),
            LeadTool::UpdateAgent => Area::Agents(AgentTool::UpdateAgent),
            LeadTool::SetAgentStatus => Area::Agents(AgentTool::SetAgentStatus),
            LeadTool::StartAgentRun => Area::Runs(RunTool::StartAgentRun),
            LeadTool::ContinueAgentRun => Area::Runs(RunTool::ContinueAgentRun),
            LeadTool::MemoryRead => Area::Notes(NoteTool::Read),
            LeadTool::MemoryWrite => Area::Notes(NoteTool::Write),
            LeadTool::MemoryAppend => Area::Notes(NoteTool::Append),
            LeadTool::MemoryMove => Area::Notes(NoteTool::Move),
            LeadTool::AttachFile => Area::Attach,
            LeadTool::QaPass | LeadTool::QaFail => Area::Qa,
        }
    }
}

/// Carries out a call. `taint`: the outside tool the answer used before it (cards the call
/// puts in or changes in an Auto column wait on hold).
pub async fn execute(
    ctx: &ToolCtx,
    tool: LeadTool,
    args: &Value,
    taint: Option<String>,
    chat: Option<ChatId>,
) -> Result<String, ToolError> {
    match tool.area() {
        Area::Board(t) => execute_board(ctx, t, args, taint).await,
        Area::Projects(t) => execute_projects(ctx, t, args).await,
        Area::Agents(t) => execute_agents(ctx, t, args).await,
        Area::Runs(t) => execute_runs(ctx, t, args).await,
        Area::Notes(t) => execute_notes(ctx, t, args).await,
        Area::Attach => attach(ctx, args, chat).await,
        Area::Qa => Err(ToolError::OnlyQa(tool.to_string())),
    }
}

/// Carries out a call of a tool of the board's cards and columns.
async fn execute_board(
    ctx: &ToolCtx,
    tool: BoardTool,
    args: &Value,
    taint: Option<String>,
) -> Result<String, ToolError> {
    match tool {
        BoardTool::ListTasks => board(ctx, BoardRequest::Show)
            .await
            .map(|b| Shown::Board(&b).text()),
        BoardTool::GetTask => {
            let card = need(args, "card")?.to_string();
            board(ctx, |reply| BoardRequest::ShowCard { card, reply })
                .await
                .map(|c| Shown::Card(&c).text())
        }
        BoardTool::CreateTask => {
            let params = AddCardParams {
                title: need(args, "title")?.to_string(),
                description: opt(args, "description").unwrap_or_default(),
                acceptance: opt(args, "acceptance").unwrap_or_default(),
                assignee: opt(args, "assignee"),
                column: opt(args, "column"),
                project: opt(args, "project"),
            };
            board(ctx, |reply| BoardRequest::AddCard {
                params,
                taint,
                reply,
            })
            .await
            .map(|c| held_words(&c))
        }
        BoardTool::UpdateTask => {
            let params = EditCardParams {
                card: need(args, "card")?.to_string(),
                title: opt(args, "title"),
                description: opt(args, "description"),
                acceptance: opt(args, "acceptance"),
                assignee: opt(args, "assignee"),
                column: opt(args, "column"),
                hold: None,
                clear_hold: args
                    .get("clear_hold")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                comment: opt(args, "comment"),
                project: opt(args, "project"),
                // A card's budget is the person's alone to set: the lead's runs count toward it.
                budget_micro_usd: None,
                budget_tokens: None,
            };
            let params = Box::new(params);
            board(ctx, |reply| BoardRequest::EditCard {
                params,
                taint,
                reply,
            })
            .await
            .map(|c| held_words(&c))
        }
        BoardTool::AddColumn => {
            let params = AddColumnParams {
                name: need(args, "name")?.to_string(),
                auto: args.get("auto").and_then(Value::as_bool).unwrap_or(false),
                position: None,
            };
            board(ctx, |reply| BoardRequest::AddColumn { params, reply })
                .await
                .map(|c| Shown::Column(&c).text())
        }
        BoardTool::SetColumn => {
            let params = SetColumnParams {
                column: need(args, "column")?.to_string(),
                name: opt(args, "name"),
                auto: args.get("auto").and_then(Value::as_bool),
                position: None,
            };
            board(ctx, |reply| BoardRequest::SetColumn { params, reply })
                .await
                .map(|c| Shown::Column(&c).text())
        }
    }
}

/// Carries out a call of a tool of the projects, their checkouts and pull requests.
async fn execute_projects(
    ctx: &ToolCtx,
    tool: ProjectTool,
    args: &Value,
) -> Result<String, ToolError> {
    match tool {
        ProjectTool::MergePullRequest => {
            let card = need(args, "card")?.to_string();
            board(ctx, |reply| BoardRequest::MergePr { card, reply }).await
        }
        ProjectTool::UpdateCheckout => {
            let stash = match args.get("stash") {
                None | Some(Value::Null) => false,
                Some(v) => v
                    .as_bool()
                    .ok_or_else(|| ToolError::NotABool("stash".into()))?,
            };
            let project = need(args, "project")?.to_string();
            board(ctx, |reply| BoardRequest::UpdateCheckout {
                project,
                stash,
                reply,
            })
            .await
        }
        ProjectTool::ListProjects => board(ctx, BoardRequest::Projects).await.map(|projects| {
            Shown::Projects {
                projects: &projects,
            }
            .text()
        }),
        ProjectTool::GetProject => {
            let project = need(args, "project")?.to_string();
            board(ctx, |reply| BoardRequest::ShowProject { project, reply })
                .await
                .map(|p| Shown::Project(&p).text())
        }
    }
}

/// Carries out a call of a tool of the agents themselves.
async fn execute_agents(ctx: &ToolCtx, tool: AgentTool, args: &Value) -> Result<String, ToolError> {
    match tool {
        AgentTool::SetAgentStatus => {
            let paused = match need(args, "status")? {
                "paused" => true,
                "active" => false,
                other => return Err(ToolError::NotAStatus(other.to_string())),
            };
            let params = AgentEdit {
                agent: need(args, "agent")?.to_string(),
                paused: Some(paused),
                ..AgentEdit::default()
            };
            let view = agents(ctx, |reply| AgentsMsg::Edit { params, reply }).await?;
            Ok(format!(
                "Agent {} is {}.",
                view.name,
                if view.paused { "paused" } else { "active" }
            ))
        }
        AgentTool::ListAgents => {
            let store = ctx.store.clone();
            let list = blocking(move || store.agents()).await??;
            Ok(pretty(
                &list
                    .iter()
                    .map(|a| json!({ "name": a.name, "role": a.role, "cli": a.cli.to_string(), "model": a.model }))
                    .collect::<Vec<_>>(),
            ))
        }
        AgentTool::GetAgent => {
            let view = bosun_agents::registry::show(&ctx.agents_ctx, need(args, "agent")?).await?;
            Ok(pretty(&view))
        }
        AgentTool::CreateAgent => {
            let cli: CliKind = need(args, "cli")?.parse().map_err(ToolError::UnknownCli)?;
            let allowed = strings(args, "allowed_commands")?.unwrap_or_default();
            only_commands(&allowed)?;
            let params = AgentParams {
                name: need(args, "name")?.to_string(),
                role: opt(args, "role"),
                cli,
                instructions: opt(args, "instructions"),
                permission_mode: None,
                allowed_commands: allowed,
                time_cap_ms: None,
                max_output: None,
                cwd: PathBuf::from(need(args, "cwd")?),
                command: Vec::new(),
                env: Vec::new(),
                secret_env: Vec::new(),
                model: opt(args, "model"),
                codex_config: Vec::new(),
            };
            let view = agents(ctx, |reply| AgentsMsg::Add { params, reply }).await?;
            Ok(format!(
                "Created agent {} ({}); its tools are off until the person switches them on.",
                view.name, view.cli
            ))
        }
        AgentTool::UpdateAgent => {
            let allowed = strings(args, "allowed_commands")?;
            if let Some(a) = &allowed {
                only_commands(a)?;
            }
            let params = AgentEdit {
                agent: need(args, "agent")?.to_string(),
                role: opt(args, "role"),
                instructions: opt(args, "instructions"),
                // An empty model goes back to the CLI's own.
                model: Edit::read(opt(args, "model"), |m| m.trim().is_empty()),
                allowed_commands: allowed,
                ..AgentEdit::default()
            };
            let view = agents(ctx, |reply| AgentsMsg::Edit { params, reply }).await?;
            Ok(format!("Changed agent {}.", view.name))
        }
    }
}

/// Carries out a call that starts an agent's run, new or continuing an earlier one.
async fn execute_runs(ctx: &ToolCtx, tool: RunTool, args: &Value) -> Result<String, ToolError> {
    match tool {
        RunTool::ContinueAgentRun => {
            let key = need(args, "run")?.to_ascii_lowercase();
            let prompt = need(args, "prompt")?;
            let store = ctx.store.clone();
            let earlier = blocking(move || {
                let ids = store.run_ids_with_prefix(&key, 2)?;
                match ids.as_slice() {
                    [one] => store.run(*one),
                    [] | [_, _, ..] => Ok(None),
                }
            })
            .await??
            .ok_or_else(|| ToolError::NoSuchRun(need(args, "run").unwrap_or("?").to_string()))?;
            let agent_run = earlier.agent.ok_or(ToolError::NotAnAgentRun)?;
            let session = agent_run.session.ok_or(ToolError::NoSession)?;
            let agent = agent_run.agent.ok_or(ToolError::AgentGone)?;
            let mut spec = launch::prepare_with(
                &ctx.agents_ctx,
                &agent.to_string(),
                prompt,
                None,
                Some(session),
            )
            .await?;
            spec.run.unattended = true;
            let run = bosun_runs::start(&ctx.runs, spec).await?;
            Ok(format!(
                "Started run {}, continuing run {}.",
                run.short_id,
                earlier.id.short()
            ))
        }
        RunTool::StartAgentRun => {
            let agent = need(args, "agent")?;
            let prompt = need(args, "prompt")?;
            let mut spec = launch::prepare(&ctx.agents_ctx, agent, prompt).await?;
            spec.run.unattended = true;
            let run = bosun_runs::start(&ctx.runs, spec).await?;
            Ok(format!("Started run {} of agent {agent}.", run.short_id))
        }
    }
}

/// Carries out a call of a tool of the notes.
async fn execute_notes(ctx: &ToolCtx, tool: NoteTool, args: &Value) -> Result<String, ToolError> {
    match tool {
        NoteTool::Read => match arg(args, "path") {
            Some(path) => {
                let path = path.to_string();
                board(ctx, |reply| BoardRequest::Note { path, reply })
                    .await
                    .map(|n| Shown::Note(&n).text())
            }
            None => board(ctx, BoardRequest::Notes)
                .await
                .map(|notes| Shown::Notes { notes: &notes }.text()),
        },
        NoteTool::Write => {
            let base_version = match args.get("base_version") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or(ToolError::BaseVersionNotWhole)?),
            };
            let path = need(args, "path")?.to_string();
            let text = need(args, "text")?.to_string();
            board(ctx, |reply| BoardRequest::WriteNote {
                path,
                text,
                base_version,
                force: false,
                reply,
            })
            .await
            .map(|n| note_words(&n, "Saved"))
        }
        NoteTool::Append => {
            let path = need(args, "path")?.to_string();
            let heading = need(args, "heading")?.to_string();
            let text = need(args, "text")?.to_string();
            board(ctx, |reply| BoardRequest::AppendNote {
                path,
                heading,
                text,
                reply,
            })
            .await
            .map(|n| note_words(&n, "Appended to"))
        }
        NoteTool::Move => {
            let from = need(args, "from")?.to_string();
            let to = need(args, "to")?.to_string();
            board(ctx, |reply| BoardRequest::MoveNote { from, to, reply })
                .await
                .map(|n| note_words(&n, "Moved to"))
        }
    }
}

/// The files the person named (in a message) or added in a chat.
async fn person_files(
    ctx: &ToolCtx,
    chat: ChatId,
) -> Result<(Vec<String>, Vec<String>), ToolError> {
    let store = ctx.store.clone();
    Ok(blocking(
        move || -> Result<(Vec<String>, Vec<String>), bosun_store::StoreError> {
            let (chats, _) = store.chats()?;
            let added = chats
                .into_iter()
                .find(|c| c.id == chat)
                .map(|c| c.files)
                .unwrap_or_default();
            let said = store
                .messages(chat)?
                .into_iter()
                .filter(|m| m.kind == crate::record::MessageKind::Person)
                .map(|m| m.text)
                .collect();
            Ok((added, said))
        },
    )
    .await??)
}

/// Checks an attachment: the file, its size, and where it would go.
async fn attachment(
    ctx: &ToolCtx,
    args: &Value,
    chat: Option<ChatId>,
) -> Result<(PathBuf, u64, PathBuf, String), ToolError> {
    let path = PathBuf::from(need(args, "path")?);
    let chat = chat.ok_or(ToolError::NotInChat)?;
    let (added, said) = person_files(ctx, chat).await?;
    let shown = path.display().to_string();
    if !(added.contains(&shown) || said.iter().any(|m| m.contains(&shown))) {
        return Err(ToolError::NotThePersonsFile(shown));
    }
    let meta = std::fs::metadata(&path).map_err(|error| ToolError::Unreadable {
        file: shown.clone(),
        error,
    })?;
    if !meta.is_file() {
        return Err(ToolError::NotAFile(shown));
    }
    let key = need(args, "card")?.to_string();
    let card = board(ctx, |reply| BoardRequest::ShowCard { card: key, reply }).await?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or(ToolError::NoFileName(shown))?;
    let dest = ctx.attachments.join(card.id.to_string()).join(&name);
    Ok((path, meta.len(), dest, card.id.to_string()))
}

async fn attach(ctx: &ToolCtx, args: &Value, chat: Option<ChatId>) -> Result<String, ToolError> {
    let (path, size, dest, card) = attachment(ctx, args, chat).await?;
    let (from, to) = (path.clone(), dest.clone());
    blocking(move || -> std::io::Result<()> {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(&from, &to).map(|_| ())
    })
    .await?
    .map_err(|error| ToolError::CopyFailed {
        file: path.display().to_string(),
        error,
    })?;
    let params = EditCardParams {
        card,
        comment: Some(format!(
            "attached {} ({size} bytes) as {}",
            path.display(),
            dest.display()
        )),
        ..EditCardParams::default()
    };
    board(ctx, |reply| BoardRequest::EditCard {
        params: Box::new(params),
        taint: None,
        reply,
    })
    .await?;
    Ok(format!(
        "Attached {} ({size} bytes) to the card.",
        path.display()
    ))
}

/// What was done to a note, in words.
fn note_words(n: &NoteView, verb: &str) -> String {
    format!("{verb} {} (version {}).", n.path, n.version)
}

/// A card's answer, saying so first when it waits on hold.
fn held_words(c: &CardView) -> String {
    match &c.hold {
        Some(h) => format!(
            "The card {} is saved on hold ({}): {} No agent starts it until the person takes it off hold; tell them.\n{}",
            c.short_id,
            h.kind,
            h.reason,
            pretty(c)
        ),
        None => pretty(c),
    }
}

/// One plain line of what a call does.
pub fn describe(tool: LeadTool, args: &Value) -> String {
    let a = |k: &str| arg(args, k).unwrap_or("?");
    match tool {
        LeadTool::MemoryWrite => format!("Write the note {}", a("path")),
        LeadTool::MemoryAppend => format!(
            "Add the section “{}” to the note {}",
            a("heading"),
            a("path")
        ),
        LeadTool::MemoryMove => format!("Move the note {} to {}", a("from"), a("to")),
        LeadTool::StartAgentRun => format!("Start a run of agent {}", a("agent")),
        LeadTool::ContinueAgentRun => format!("Continue run {}", a("run")),
        LeadTool::SetAgentStatus => format!("Make agent {} {}", a("agent"), a("status")),
        LeadTool::AttachFile => format!("Attach {} to card {}", a("path"), a("card")),
        LeadTool::CreateAgent => format!("Create agent {} ({})", a("name"), a("cli")),
        LeadTool::UpdateAgent => format!("Change agent {}", a("agent")),
        LeadTool::AddColumn => format!(
            "Add the column {} ({})",
            a("name"),
            if args.get("auto").and_then(Value::as_bool) == Some(true) {
                "Auto"
            } else {
                "Manual"
            }
        ),
        LeadTool::SetColumn => format!("Change the column {}", a("column")),
        LeadTool::UpdateTask => format!("Take card {} off hold", a("card")),
        LeadTool::MergePullRequest => format!("Merge the pull request of card {}", a("card")),
        LeadTool::UpdateCheckout => format!(
            "Bring project {}'s checkout up to date{}",
            a("project"),
            if args.get("stash").and_then(Value::as_bool) == Some(true) {
                ", stashing its changes first"
            } else {
                ""
            }
        ),
        LeadTool::QaPass
        | LeadTool::QaFail
        | LeadTool::ListTasks
        | LeadTool::GetTask
        | LeadTool::CreateTask
        | LeadTool::ListAgents
        | LeadTool::GetAgent
        | LeadTool::MemoryRead
        | LeadTool::ListProjects
        | LeadTool::GetProject => format!("Call {tool}"),
    }
}

/// A line-by-line diff, `-` for a line that goes and `+` for one that comes.
fn diff(old: &str, new: &str) -> String {
    let mut out = String::new();
    for change in similar::TextDiff::from_lines(old, new).iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "-",
            similar::ChangeTag::Insert => "+",
            similar::ChangeTag::Equal => " ",
        };
        out.push_str(sign);
        out.push_str(change.value());
        if !change.value().ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// What approving would do, worked out from the board and the notes as they are now, and why
/// it would fail, when bosun can tell.
pub async fn preview(
    ctx: &ToolCtx,
    tool: LeadTool,
    args: &Value,
    chat: Option<ChatId>,
) -> (String, Option<String>) {
    let a = |k: &str| arg(args, k).unwrap_or("").to_string();
    match tool.area() {
        Area::Notes(t) => preview_notes(ctx, tool, t, args).await,
        Area::Runs(t) => preview_runs(ctx, t, args).await,
        Area::Agents(t) => preview_agents(ctx, tool, t, args).await,
        Area::Attach => match attachment(ctx, args, chat).await {
            Ok((path, size, dest, _)) => (
                format!("{} ({size} bytes) → {}", path.display(), dest.display()),
                None,
            ),
            Err(why) => (
                format!("{} → card {}", a("path"), a("card")),
                Some(why.to_string()),
            ),
        },
        Area::Projects(t) => preview_projects(ctx, tool, t, args).await,
        Area::Board(t) => preview_board(tool, t, args),
        Area::Qa => (format!("{tool} {}", pretty(args)), None),
    }
}

/// The preview of a call of a tool of the notes: a write as a diff against the note as it is.
async fn preview_notes(
    ctx: &ToolCtx,
    tool: LeadTool,
    notes: NoteTool,
    args: &Value,
) -> (String, Option<String>) {
    let a = |k: &str| arg(args, k).unwrap_or("").to_string();
    let note = |path: String| async move {
        board(ctx, |reply| BoardRequest::Note { path, reply })
            .await
            .ok()
    };
    match notes {
        NoteTool::Write => {
            let (path, text) = (a("path"), a("text"));
            match note(path.clone()).await {
                Some(n) => {
                    let base = args.get("base_version").and_then(Value::as_u64);
                    let fail = match base {
                        Some(b) if b == n.version => None,
                        Some(b) => Some(format!(
                            "the note changed since version {b} (it is at version {})",
                            n.version
                        )),
                        None => Some(format!(
                            "the note exists (version {}) and the call says no version it was based on",
                            n.version
                        )),
                    };
                    (
                        format!("{path} (version {}):\n{}", n.version, diff(&n.text, &text)),
                        fail,
                    )
                }
                None => (format!("{path} (new):\n{text}"), None),
            }
        }
        NoteTool::Append => (
            format!("{}:\n## {}\n\n{}", a("path"), a("heading"), a("text")),
            None,
        ),
        NoteTool::Move => {
            let fail = match note(a("from")).await {
                None => Some(format!("there is no note {} any more", a("from"))),
                Some(_) if note(a("to")).await.is_some() => {
                    Some(format!("there is a note {} already", a("to")))
                }
                Some(_) => None,
            };
            (format!("{} → {}", a("from"), a("to")), fail)
        }
        NoteTool::Read => (format!("{tool} {}", pretty(args)), None),
    }
}

/// The preview of a call that starts an agent's run.
async fn preview_runs(ctx: &ToolCtx, runs: RunTool, args: &Value) -> (String, Option<String>) {
    let a = |k: &str| arg(args, k).unwrap_or("").to_string();
    match runs {
        RunTool::StartAgentRun => {
            let fail = bosun_agents::registry::find(&ctx.store, &a("agent"))
                .await
                .err()
                .map(|e| e.to_string());
            (
                format!("agent: {}\nprompt: {}", a("agent"), a("prompt")),
                fail,
            )
        }
        RunTool::ContinueAgentRun => (format!("run: {}\nprompt: {}", a("run"), a("prompt")), None),
    }
}

/// The preview of a call of a tool of the agents: a change as each setting's before and after.
async fn preview_agents(
    ctx: &ToolCtx,
    tool: LeadTool,
    agents: AgentTool,
    args: &Value,
) -> (String, Option<String>) {
    let a = |k: &str| arg(args, k).unwrap_or("").to_string();
    match agents {
        AgentTool::UpdateAgent => {
            match bosun_agents::registry::find(&ctx.store, &a("agent")).await {
                Ok(rec) => {
                    let mut lines = Vec::new();
                    if let Some(i) = arg(args, "instructions") {
                        lines.push(format!("instructions:\n{}", diff(&rec.instructions, i)));
                    }
                    if let Some(r) = arg(args, "role") {
                        lines.push(format!("role: {} → {r}", rec.role));
                    }
                    if let Some(m) = arg(args, "model") {
                        lines.push(format!(
                            "model: {} → {m}",
                            rec.model.as_deref().unwrap_or("(default)")
                        ));
                    }
                    if let Ok(Some(c)) = strings(args, "allowed_commands") {
                        lines.push(format!(
                            "allowed commands: {} → {}",
                            rec.allowed_commands.join(", "),
                            c.join(", ")
                        ));
                    }
                    (lines.join("\n"), None)
                }
                Err(e) => (String::new(), Some(e.to_string())),
            }
        }
        AgentTool::CreateAgent | AgentTool::SetAgentStatus => (pretty(args), None),
        AgentTool::ListAgents | AgentTool::GetAgent => (format!("{tool} {}", pretty(args)), None),
    }
}

/// The preview of a call of a tool of the projects: the card or project as it is now.
async fn preview_projects(
    ctx: &ToolCtx,
    tool: LeadTool,
    projects: ProjectTool,
    args: &Value,
) -> (String, Option<String>) {
    let a = |k: &str| arg(args, k).unwrap_or("").to_string();
    match projects {
        ProjectTool::MergePullRequest => {
            let card = a("card");
            match board(ctx, |reply| BoardRequest::ShowCard { card, reply }).await {
                Ok(c) => (
                    format!(
                        "card {}: {}\npull request: the one of branch {}, found and checked against every rule when approved",
                        c.short_id,
                        c.title,
                        c.worktree
                            .as_ref()
                            .map_or("(none yet)", |w| w.branch.as_str())
                    ),
                    None,
                ),
                Err(e) => (format!("card {}", a("card")), Some(e.to_string())),
            }
        }
        ProjectTool::UpdateCheckout => {
            let stash = args.get("stash").and_then(Value::as_bool) == Some(true);
            let project = a("project");
            match board(ctx, |reply| BoardRequest::ShowProject { project, reply }).await {
                Ok(p) => (
                    format!(
                        "project: {}\nfolder: {}\nstash first: {}",
                        p.name,
                        p.folder.display(),
                        if stash { "yes" } else { "no" }
                    ),
                    None,
                ),
                Err(e) => (format!("project {}", a("project")), Some(e.to_string())),
            }
        }
        ProjectTool::ListProjects | ProjectTool::GetProject => {
            (format!("{tool} {}", pretty(args)), None)
        }
    }
}

/// The preview of a call of a tool of the board's cards and columns: its arguments.
fn preview_board(tool: LeadTool, board: BoardTool, args: &Value) -> (String, Option<String>) {
    match board {
        BoardTool::AddColumn | BoardTool::SetColumn | BoardTool::UpdateTask => (pretty(args), None),
        BoardTool::ListTasks | BoardTool::GetTask | BoardTool::CreateTask => {
            (format!("{tool} {}", pretty(args)), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_offered_once_in_order_and_found_by_its_name() {
        let offered: Vec<LeadTool> = catalog().into_iter().map(|t| t.tool).collect();
        assert_eq!(offered, LeadTool::ALL);
        for tool in LeadTool::ALL {
            assert_eq!(LeadTool::parse(tool.name()), Ok(tool));
        }
    }

    #[test]
    fn a_name_bosun_has_no_tool_of_is_refused() {
        let err = LeadTool::parse("rm_rf").unwrap_err();
        assert_eq!(err, UnknownTool("rm_rf".to_string()));
        assert_eq!(err.to_string(), "bosun has no tool `rm_rf`");
    }

    #[test]
    fn the_calls_that_wait_for_the_person_are_those_that_change_runs_agents_columns_or_notes() {
        let privileged: Vec<&str> = LeadTool::ALL
            .into_iter()
            .filter(|t| t.privileged())
            .map(LeadTool::name)
            .collect();
        expect_test::expect![[r#"
            [
                "add_column",
                "set_column",
                "create_agent",
                "update_agent",
                "start_agent_run",
                "continue_agent_run",
                "set_agent_status",
                "attach_file",
                "memory_write",
                "memory_append",
                "memory_move",
                "merge_pull_request",
                "update_checkout",
            ]
        "#]]
        .assert_debug_eq(&privileged);
    }
}

/// The JSON the lead is shown of the Board's replies, pinned byte for byte: the model has
/// always read these shapes (tagged `answer`), so a change to the types behind them must not
/// change them.
#[cfg(test)]
mod shown_tests {
    use super::*;
    use bosun_shared::Timestamp;

    fn column() -> ColumnView {
        ColumnView {
            id: "2wsews00nev1322zbxr4fzry82".parse().expect("an id"),
            name: "To do".to_string(),
            auto: true,
            position: 1,
        }
    }

    #[test]
    fn the_boards_replies_are_shown_to_the_lead_tagged_as_they_always_were() {
        let at = Timestamp::from_millis(1_700_000_000_000);
        let board = BoardView {
            columns: vec![column()],
            cards: Vec::new(),
            limit: 2,
            running: 0,
        };
        expect_test::expect![[r#"
            {
              "answer": "board",
              "columns": [
                {
                  "id": "2wsews00nev1322zbxr4fzry82",
                  "name": "To do",
                  "auto": true,
                  "position": 1
                }
              ],
              "cards": [],
              "limit": 2,
              "running": 0
            }"#]]
        .assert_eq(&Shown::Board(&board).text());
        expect_test::expect![[r#"
            {
              "answer": "column",
              "id": "2wsews00nev1322zbxr4fzry82",
              "name": "To do",
              "auto": true,
              "position": 1
            }"#]]
        .assert_eq(&Shown::Column(&column()).text());
        let notes = vec![NoteSummary {
            path: "a/b.md".to_string(),
            version: 3,
            bytes: 12,
            updated_at: at,
        }];
        expect_test::expect![[r#"
            {
              "answer": "notes",
              "notes": [
                {
                  "path": "a/b.md",
                  "version": 3,
                  "bytes": 12,
                  "updated_at": 1700000000000
                }
              ]
            }"#]]
        .assert_eq(&Shown::Notes { notes: &notes }.text());
        let note = NoteView {
            path: "a/b.md".to_string(),
            text: "hello\n".to_string(),
            version: 3,
            updated_at: at,
        };
        expect_test::expect![[r#"
            {
              "answer": "note",
              "path": "a/b.md",
              "text": "hello\n",
              "version": 3,
              "updated_at": 1700000000000
            }"#]]
        .assert_eq(&Shown::Note(&note).text());
        expect_test::expect![[r#"
            {
              "answer": "projects",
              "projects": []
            }"#]]
        .assert_eq(&Shown::Projects { projects: &[] }.text());
    }
}
