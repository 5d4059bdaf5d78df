//! The tools of bosun's own MCP server: what each takes, which are privileged (they change
//! what runs, the agents, the columns or the notes, and so wait for the person after an
//! outside tool), how each is carried out, and how a waiting call is put in words for the
//! person.
//!
//! This file holds the tools themselves ([`LeadTool`]), the parts of bosun they work on and the
//! helpers that read a call's arguments; the catalog the lead is offered is in [`catalog`], how
//! a call is carried out in [`execute`] (attaching a file in [`attach`]), how the Board's replies
//! are written for the model by the [`Shows`] bosund hands it, and a waiting call in words in [`preview`].

mod attach;
mod catalog;
mod execute;
mod preview;
mod shown;
pub use catalog::{ToolSpec, catalog};
pub use execute::execute;
pub use preview::{describe, preview};
pub use shown::{Answer, Shows};

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::{ToolError, UnknownTool};
use bosun_agents::registry::{AgentDetail, AgentsContext, AgentsHandle, AgentsMsg};
use bosun_board::{BoardHandle, BoardRequest, Reply};
use bosun_kit::handle::ActorHandle;
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
    /// Writes bosun's answers for the model.
    pub shows: Arc<dyn Shows>,
    /// Where the lead's changes to what agents may do are put on record.
    pub audit: Arc<dyn LeadAudit>,
}

/// Where the lead's changes to what agents may do are put on record (bosund's audit log), as
/// the lead's: what, and how it stands after (never a secret value).
pub trait LeadAudit: Send + Sync {
    fn lead_did(&self, what: &str, after: serde_json::Value);
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
    msg: impl FnOnce(ractor::RpcReplyPort<Result<AgentDetail, bosun_agents::AgentsError>>) -> AgentsMsg,
) -> Result<AgentDetail, ToolError> {
    let a = ctx.agents.get().ok_or(bosun_kit::error::Starting)?;
    Ok(a.call(msg, None)
        .await
        .map_err(|e| ToolError::AgentsUnreachable(e.to_string()))?
        .success_or(ToolError::AgentsNoAnswer)??)
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
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
