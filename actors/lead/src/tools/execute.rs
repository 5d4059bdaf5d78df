//! How a call is carried out, one function per part of bosun it works on, and the words the
//! lead gets back.

use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
use std::path::PathBuf;

use bosun_shared::ChatId;
use bosun_shared::agents::CliKind;
use serde_json::{Value, json};

use super::attach::attach;
use super::shown::Answer;
use super::{
    AgentTool, Area, BoardTool, LeadTool, NoteTool, ProjectTool, RunTool, ToolCtx, agents, arg,
    board, need, only_commands, opt, pretty, strings,
};
use crate::ToolError;
use bosun_agents::launch;
use bosun_agents::registry::{AgentEdit, AgentsMsg, NewAgent};
use bosun_board::record::NoteRecord;
use bosun_board::{BoardRequest, Card, CardEdit, ColumnChange, NewCard, NewColumn};
use bosun_kit::edit::Edit;
use bosun_kit::offload::blocking;

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
            .map(|b| ctx.shows.tagged(Answer::Board(&b))),
        BoardTool::GetTask => {
            let card = need(args, "card")?.to_string();
            board(ctx, |reply| BoardRequest::ShowCard { card, reply })
                .await
                .map(|c| ctx.shows.tagged(Answer::Card(&c)))
        }
        BoardTool::CreateTask => {
            let params = NewCard {
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
            .map(|c| held_words(ctx, &c))
        }
        BoardTool::UpdateTask => {
            let clear_hold = args.get("clear_hold").and_then(Value::as_bool) == Some(true);
            // An empty assignee or project takes it off, as on the wire.
            let emptied = |key| Edit::read(opt(args, key), |v: &String| v.trim().is_empty());
            let params = CardEdit {
                card: need(args, "card")?.to_string(),
                title: opt(args, "title"),
                description: opt(args, "description"),
                acceptance: opt(args, "acceptance"),
                assignee: emptied("assignee"),
                column: opt(args, "column"),
                hold: if clear_hold { Edit::Clear } else { Edit::Keep },
                comment: opt(args, "comment"),
                project: emptied("project"),
                // A card's budget is the person's alone to set: the lead's runs count toward it.
                budget_micro_usd: None,
                budget_tokens: None,
                budget_calls: None,
            };
            let params = Box::new(params);
            board(ctx, |reply| BoardRequest::EditCard {
                params,
                taint,
                reply,
            })
            .await
            .map(|c| held_words(ctx, &c))
        }
        BoardTool::AddColumn => {
            let params = NewColumn {
                name: need(args, "name")?.to_string(),
                auto: args.get("auto").and_then(Value::as_bool).unwrap_or(false),
                position: None,
            };
            board(ctx, |reply| BoardRequest::AddColumn { params, reply })
                .await
                .map(|c| ctx.shows.tagged(Answer::Column(&c)))
        }
        BoardTool::SetColumn => {
            let params = ColumnChange {
                column: need(args, "column")?.to_string(),
                name: opt(args, "name"),
                auto: args.get("auto").and_then(Value::as_bool),
                position: None,
            };
            board(ctx, |reply| BoardRequest::SetColumn { params, reply })
                .await
                .map(|c| ctx.shows.tagged(Answer::Column(&c)))
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
        ProjectTool::ListProjects => board(ctx, BoardRequest::Projects)
            .await
            .map(|projects| ctx.shows.tagged(Answer::Projects(&projects))),
        ProjectTool::GetProject => {
            let project = need(args, "project")?.to_string();
            board(ctx, |reply| BoardRequest::ShowProject { project, reply })
                .await
                .map(|p| ctx.shows.tagged(Answer::Project(&p)))
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
            ctx.audit.lead_did(
                &format!("agent edit {}", view.record.name),
                json!({"paused": view.record.paused}),
            );
            Ok(format!(
                "Agent {} is {}.",
                view.record.name,
                if view.record.paused {
                    "paused"
                } else {
                    "active"
                }
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
            let agent = bosun_agents::registry::show(&ctx.agents_ctx, need(args, "agent")?).await?;
            Ok(ctx.shows.plain(Answer::Agent(&agent)))
        }
        AgentTool::CreateAgent => {
            let cli: CliKind = need(args, "cli")?.parse().map_err(ToolError::UnknownCli)?;
            let allowed = strings(args, "allowed_commands")?.unwrap_or_default();
            only_commands(&allowed)?;
            let params = NewAgent {
                name: need(args, "name")?.to_string(),
                role: opt(args, "role"),
                cli,
                instructions: opt(args, "instructions"),
                permission_mode: None,
                allowed_commands: allowed,
                time_cap: None,
                max_output: None,
                cwd: PathBuf::from(need(args, "cwd")?),
                command: Vec::new(),
                env: Vec::new(),
                secret_env: Vec::new(),
                model: opt(args, "model").filter(|m| !m.trim().is_empty()),
                codex_config: Vec::new(),
            };
            let view = agents(ctx, |reply| AgentsMsg::Add { params, reply }).await?;
            ctx.audit.lead_did(
                &format!("agent add {}", view.record.name),
                json!({"cli": view.record.cli.to_string(), "allowed_commands": view.record.allowed_commands}),
            );
            Ok(format!(
                "Created agent {} ({}); its tools are off until the person switches them on.",
                view.record.name, view.record.cli
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
            ctx.audit.lead_did(
                &format!("agent edit {}", view.record.name),
                json!({"allowed_commands": view.record.allowed_commands, "model": view.record.model}),
            );
            Ok(format!("Changed agent {}.", view.record.name))
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
                Some(launch::Resume {
                    session,
                    run: Some(earlier.id),
                }),
            )
            .await?;
            spec.run.unattended = true;
            let run = bosun_runs::start(&ctx.runs, spec).await?;
            Ok(format!(
                "Started run {}, continuing run {}.",
                run.record.id.short(),
                earlier.id.short()
            ))
        }
        RunTool::StartAgentRun => {
            let agent = need(args, "agent")?;
            let prompt = need(args, "prompt")?;
            let mut spec = launch::prepare(&ctx.agents_ctx, agent, prompt).await?;
            spec.run.unattended = true;
            let run = bosun_runs::start(&ctx.runs, spec).await?;
            Ok(format!(
                "Started run {} of agent {agent}.",
                run.record.id.short()
            ))
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
                    .map(|n| ctx.shows.tagged(Answer::Note(&n)))
            }
            None => board(ctx, BoardRequest::Notes)
                .await
                .map(|notes| ctx.shows.tagged(Answer::Notes(&notes))),
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

/// What was done to a note, in words.
fn note_words(n: &NoteRecord, verb: &str) -> String {
    format!("{verb} {} (version {}).", n.path, n.version)
}

/// A card's answer, saying so first when it waits on hold.
fn held_words(ctx: &ToolCtx, c: &Card) -> String {
    let shown = ctx.shows.plain(Answer::Card(c));
    match &c.record.hold {
        Some(h) => format!(
            "The card {} is saved on hold ({}): {} No agent starts it until the person takes it off hold; tell them.\n{shown}",
            c.record.id.short(),
            h.kind,
            h.reason,
        ),
        None => shown,
    }
}
