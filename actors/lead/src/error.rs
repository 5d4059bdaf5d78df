//! Why a chat, an answer or a decision on a pending action failed, in the person's words.

use bosun_agents::AgentsError;
use bosun_board::BoardError;
use bosun_kit::offload::BlockingError;
use bosun_kit::prefix::PrefixError;
use bosun_runs::RunsError;
use bosun_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ChatsError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
    /// The Chats actor has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// What the person typed named no one chat or action.
    #[error(transparent)]
    Prefix(#[from] PrefixError),
    /// The lead agent could not be found or its answer's run prepared.
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// The answer's run could not start.
    #[error(transparent)]
    Runs(#[from] RunsError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

bosun_kit::message_constructors!(ChatsError);

/// A call names a tool bosun does not have: from `LeadTool::parse`, as the call comes in (or
/// as a kept call from a store written by another version is read). Retrying cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bosun has no tool `{0}`")]
pub struct UnknownTool(pub String);

/// Why a call of one of bosun's own tools failed, in the words the lead model (and the person,
/// for an approved call) reads: from `tools::execute` and the checks of an attachment.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The call names a tool bosun does not have: retrying cannot help.
    #[error(transparent)]
    Unknown(#[from] UnknownTool),
    /// A string argument the tool needs is missing: retrying with it helps.
    #[error("`{0}` is missing (a string)")]
    Missing(String),
    /// An argument that takes a list of strings is something else: retrying with a list helps.
    #[error("`{0}` is a list of strings")]
    NotStrings(String),
    /// `base_version` is not a whole number: retrying with one helps.
    #[error("`base_version` is a whole number")]
    BaseVersionNotWhole,
    /// `allowed_commands` names something that is not a command (a tool, web access, a skill):
    /// only the person switches those, so retrying as is cannot help.
    #[error(
        "`{0}` is not a command: allowed_commands takes only commands (Bash(…)); tools, web access and skills have switches that only the person sets"
    )]
    NotACommand(String),
    /// The `cli` named is not one bosun runs: from `create_agent`; the words are the shared
    /// crate's. Retrying with one it names helps.
    #[error("{0}")]
    UnknownCli(bosun_shared::agents::UnknownCli),
    /// A status other than active or paused: from `set_agent_status`. Retrying with one of them
    /// helps.
    #[error("`{0}` is not a status: say active or paused")]
    NotAStatus(String),
    /// No one run answers to the id given: from `continue_agent_run`. Retrying with a longer or
    /// another id may help.
    #[error("there is no run `{0}` (or the id is too short)")]
    NoSuchRun(String),
    /// The run named is not an agent's: from `continue_agent_run`. Retrying cannot help.
    #[error("that run is not an agent's: only an agent's run can be continued")]
    NotAnAgentRun,
    /// The run named never started its CLI, so it has no session: from `continue_agent_run`.
    /// Retrying cannot help.
    #[error("that run has no session to continue (it never started its CLI)")]
    NoSession,
    /// The run's agent has been removed: from `continue_agent_run`. Retrying cannot help.
    #[error("that run's agent is gone")]
    AgentGone,
    /// `attach_file` was called outside a chat with the lead: retrying cannot help.
    #[error("attach_file works in a chat with the lead")]
    NotInChat,
    /// The file is not one the person named or added in this chat: from `attach_file`.
    /// Retrying helps once the person names it.
    #[error(
        "{0} is not a file the person named or added in this chat; attach_file takes only those"
    )]
    NotThePersonsFile(String),
    /// The file to attach cannot be read: from `attach_file`. Retrying helps once it can.
    #[error("{file} cannot be read: {error}")]
    Unreadable { file: String, error: std::io::Error },
    /// The path to attach is not a file (a folder, say): from `attach_file`. Retrying cannot
    /// help.
    #[error("{0} is not a file")]
    NotAFile(String),
    /// The path to attach has no file name: from `attach_file`. Retrying cannot help.
    #[error("{0} has no file name")]
    NoFileName(String),
    /// The file could not be copied beside the card: from `attach_file`. Retrying may help
    /// once the cause (a full disk) is fixed.
    #[error("could not copy {file}: {error}")]
    CopyFailed { file: String, error: std::io::Error },
    /// `qa_pass` or `qa_fail` called by someone other than a QA run of a card: retrying
    /// cannot help.
    #[error("{0} is for a QA run of a card, to give its verdict; the lead gives no verdicts")]
    OnlyQa(String),
    /// An argument that takes true or false is something else: retrying with one helps.
    #[error("`{0}` is true or false")]
    NotABool(String),
    /// The Agents actor could not be asked: bosund's side; retrying may help.
    #[error("the agents did not answer: {0}")]
    AgentsUnreachable(String),
    /// The Agents actor did not answer the call: bosund's side; retrying may help.
    #[error("the agents did not answer")]
    AgentsNoAnswer,
    /// An actor the tool needs has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// The Board refused or failed the request: its words say whether a retry helps.
    #[error(transparent)]
    Board(#[from] BoardError),
    /// The agent could not be found, changed or its run prepared: its words say whether a
    /// retry helps.
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// The run could not start: its words say whether a retry helps.
    #[error(transparent)]
    Runs(#[from] RunsError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}
