//! A waiting call in words for the person: one plain line of what it does ([`describe`]), and
//! what approving it would do, worked out from bosun as it is now ([`preview`]).

use bosun_shared::ChatId;
use serde_json::Value;

use super::attach::attachment;
use super::{
    AgentTool, Area, BoardTool, LeadTool, NoteTool, ProjectTool, RunTool, ToolCtx, arg, board,
    pretty, strings,
};
use bosun_board::BoardRequest;

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
                        c.record.id.short(),
                        c.record.title,
                        c.record
                            .worktree
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
                        p.record.name,
                        p.record.folder.display(),
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
