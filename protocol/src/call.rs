//! Typed calls: each request of the UI protocol names its reply.
//!
//! A request type (one per method, kept with its area: [`super::runs`], [`super::mcp`],
//! [`super::auth`], [`super::agents`], [`super::board`], [`super::lead`], [`super::projects`]) implements [`Call`]; its
//! reply implements [`Reply`], which puts it into (and takes it out of) the one [`Response`]
//! variant that carries it. So a client gets the right type back without checking, and the
//! daemon's handler of a request can only return that request's reply. None of this shows on the
//! wire: a request is still `{"method", "params"}` and a reply its tagged `Response`
//! (`wire_snapshot.rs` pins both byte for byte).

use super::agents::{AgentView, BuiltinToolsView};
use super::approvals::ApprovalView;
use super::audit::AuditView;
use super::auth::SignInStarted;
use super::board::{BoardView, CardView, ColumnView, NoteSummary, NoteView};
use super::lead::{AnswerStarted, ChatView, PendingView};
use super::mcp::{CallView, ImportCandidates, Imported, InspectView, ServerView, ToolListing};
use super::projects::ProjectView;
use super::runs::{DaemonStatusView, Following, RunList};
use super::ui::{Request, Response, RunView};
use super::usage::UsageView;

/// A request that names what the daemon answers it with.
pub trait Call: Into<Request> {
    type Reply: Reply;
}

/// What a request is answered with: it is carried by exactly one [`Response`] variant.
pub trait Reply: Sized {
    fn into_response(self) -> Response;
    /// The reply `r` carries; `None` when it carries something else.
    fn from_response(r: Response) -> Option<Self>;
}

/// Every request of the UI protocol, in the order the wire lists them, handed to the macro
/// `$then` in one form: for each, its variant of [`Request`], `[($ty)]` or `[]` (how the
/// variant is declared), `[(c)]` or `[]` (how a pattern binds its params), `[c]` or the unit
/// type (the request's value, in a pattern or an expression), its type, and its reply. The
/// binding `c` comes from this table, so a macro handed it uses the value given, never its own
/// `c`: the two would not be the same name to the compiler.
///
/// This table is the one routing line of a request: the protocol's [`Request`] enum and each
/// request's [`Call`] impl are made from it here, and bosund's router from it in
/// `supervisor/src/requests.rs`. A new request is its type (with its area's others), one line
/// here, and its handler in `supervisor/src/api`.
#[macro_export]
macro_rules! every_request {
    ($then:ident) => {
        $crate::every_request! { @table $then
            // Runs and the daemon: `super::runs`.
            StartRun(runs::StartRunParams) => RunView;
            ListRuns(runs::ListRuns) => RunList;
            GetRun(runs::GetRun) => RunView;
            StopRun(runs::StopRun) => RunView;
            FollowLog(runs::FollowParams) => Following;
            Unfollow(runs::Unfollow) => ();
            SubscribeRuns[runs::SubscribeRuns] => ();
            DaemonStatus[runs::DaemonStatus] => DaemonStatusView;
            DaemonStop[runs::DaemonStop] => ();
            // MCP servers: `super::mcp`, and their sign-in: `super::auth`.
            McpAdd(mcp::AddServerParams) => ServerView;
            McpEdit(mcp::EditServerParams) => ServerView;
            McpRename(mcp::McpRename) => ServerView;
            McpRemove(mcp::McpRemove) => ServerView;
            McpList[mcp::McpList] => Vec<ServerView>;
            McpShow(mcp::McpShow) => ServerView;
            McpTools(mcp::McpTools) => ToolListing;
            McpInspect(mcp::McpInspect) => InspectView;
            McpCall(mcp::McpCall) => CallView;
            McpImportScan(mcp::ImportScan) => ImportCandidates;
            McpImport(mcp::ImportParams) => Imported;
            McpSignIn(auth::McpSignIn) => SignInStarted;
            McpSignInFinish(auth::McpSignInFinish) => ServerView;
            McpSignOut(auth::McpSignOut) => ServerView;
            McpSignInMachine(auth::McpSignInMachine) => ServerView;
            // Agents: `super::agents`.
            AgentAdd(agents::AgentParams) => AgentView;
            AgentEdit(agents::EditAgentParams) => AgentView;
            AgentSet(agents::AgentSet) => AgentView;
            AgentShow(agents::AgentShow) => AgentView;
            AgentList[agents::AgentList] => Vec<AgentView>;
            AgentRemove(agents::AgentRemove) => AgentView;
            AgentRun(agents::AgentRun) => RunView;
            AgentTools(agents::AgentTools) => BuiltinToolsView;
            // The board and the notes: `super::board`.
            Board[board::Board] => BoardView;
            ColumnAdd(board::AddColumnParams) => ColumnView;
            ColumnSet(board::SetColumnParams) => ColumnView;
            CardAdd(board::AddCardParams) => CardView;
            CardEdit(board::EditCardParams) => CardView;
            CardShow(board::CardShow) => CardView;
            BoardLimit(board::BoardLimit) => BoardView;
            NoteList[board::NoteList] => Vec<NoteSummary>;
            NoteShow(board::NoteShow) => NoteView;
            NoteWrite(board::NoteWrite) => NoteView;
            // Chats with the lead and pending actions: `super::lead`.
            ChatNew(lead::ChatNew) => ChatView;
            ChatSend(lead::ChatSend) => AnswerStarted;
            ChatShow(lead::ChatShow) => ChatView;
            ChatList[lead::ChatList] => Vec<ChatView>;
            Inbox(lead::Inbox) => Vec<PendingView>;
            Approve(lead::Approve) => Vec<PendingView>;
            ApproveAll(lead::ApproveAll) => Vec<PendingView>;
            Discard(lead::Discard) => Vec<PendingView>;
            // Run approvals: `super::approvals`.
            Approvals(approvals::Approvals) => Vec<ApprovalView>;
            Decide(approvals::Decide) => ApprovalView;
            ApproveCard(approvals::ApproveCard) => Vec<ApprovalView>;
            // Projects: `super::projects`.
            ProjectAdd(projects::AddProjectParams) => ProjectView;
            ProjectEdit(projects::EditProjectParams) => ProjectView;
            ProjectSet(projects::ProjectSet) => ProjectView;
            ProjectShow(projects::ProjectShow) => ProjectView;
            ProjectList[projects::ProjectList] => Vec<ProjectView>;
            ProjectRemove(projects::ProjectRemove) => ProjectView;
            // Added later, each at the end so that the order above stays as it was: the
            // board's card remove, a sign-in's cancel, bosund's own settings, what runs used
            // (`super::usage`), approving what waits of a server, compacting the store.
            CardRemove(board::CardRemove) => CardView;
            McpSignInCancel(auth::McpSignInCancel) => ServerView;
            DaemonSet(runs::DaemonSet) => DaemonStatusView;
            Usage(usage::UsageReport) => UsageView;
            McpApprove(mcp::McpApprove) => ServerView;
            DaemonCompact[runs::DaemonCompact] => DaemonStatusView;
            Audit(audit::AuditList) => AuditView;
        }
    };
    (@table $then:ident $(
        $variant:ident
        $( ($m:ident :: $ty:ident) )?
        $( [$um:ident :: $unit:ident] )?
        => $reply:ty;
    )*) => {
        $then! { $(
            $variant
            $( [($crate::$m::$ty)] [(c)] [c] $crate::$m::$ty )?
            $( [] [] [$crate::$um::$unit] $crate::$um::$unit )?
            => $reply;
        )* }
    };
}

/// Each request's [`Call`] impl and its way into a [`Request`] (a method without params goes
/// into its unit variant).
macro_rules! calls {
    ($(
        $variant:ident [$($decl:tt)*] [$($bind:tt)*] [$($value:tt)*] $ty:ty => $reply:ty;
    )*) => { $(
        impl From<$ty> for Request {
            fn from($($value)*: $ty) -> Self {
                Self::$variant $($bind)*
            }
        }
        impl Call for $ty {
            type Reply = $reply;
        }
    )* };
}

crate::every_request!(calls);

/// Each reply and the variant of [`Response`] that carries it: `boxed` (the variant holds a
/// `Box`), `plain` (the value itself), `field` (a struct variant of one field), `unit`.
macro_rules! replies {
    () => {};
    (boxed $ty:ty => $variant:ident; $($rest:tt)*) => {
        impl Reply for $ty {
            fn into_response(self) -> Response {
                Response::$variant(Box::new(self))
            }
            fn from_response(r: Response) -> Option<Self> {
                if let Response::$variant(v) = r { Some(*v) } else { None }
            }
        }
        replies!($($rest)*);
    };
    (plain $ty:ty => $variant:ident; $($rest:tt)*) => {
        impl Reply for $ty {
            fn into_response(self) -> Response {
                Response::$variant(self)
            }
            fn from_response(r: Response) -> Option<Self> {
                if let Response::$variant(v) = r { Some(v) } else { None }
            }
        }
        replies!($($rest)*);
    };
    (field $ty:ty => $variant:ident { $field:ident }; $($rest:tt)*) => {
        impl Reply for $ty {
            fn into_response(self) -> Response {
                Response::$variant { $field: self }
            }
            fn from_response(r: Response) -> Option<Self> {
                if let Response::$variant { $field } = r { Some($field) } else { None }
            }
        }
        replies!($($rest)*);
    };
    (unit $ty:ty => $variant:ident; $($rest:tt)*) => {
        impl Reply for $ty {
            fn into_response(self) -> Response {
                Response::$variant
            }
            fn from_response(r: Response) -> Option<Self> {
                matches!(r, Response::$variant).then_some(())
            }
        }
        replies!($($rest)*);
    };
}

replies! {
    boxed RunView => Run;
    plain RunList => Runs;
    plain Following => Following;
    unit () => Done;
    boxed DaemonStatusView => Status;
    boxed ServerView => Server;
    field Vec<ServerView> => Servers { servers };
    boxed ToolListing => Tools;
    boxed InspectView => Inspect;
    boxed CallView => Call;
    plain ImportCandidates => ImportCandidates;
    plain Imported => Imported;
    plain SignInStarted => SignInStarted;
    boxed AgentView => Agent;
    field Vec<AgentView> => Agents { agents };
    boxed BoardView => Board;
    plain ColumnView => Column;
    boxed CardView => Card;
    field Vec<NoteSummary> => Notes { notes };
    plain NoteView => Note;
    boxed ChatView => Chat;
    field Vec<ChatView> => Chats { chats };
    plain AnswerStarted => AnswerStarted;
    field Vec<PendingView> => Pending { actions };
    field Vec<ApprovalView> => Approvals { approvals };
    boxed ApprovalView => Approval;
    boxed BuiltinToolsView => BuiltinTools;
    boxed ProjectView => Project;
    field Vec<ProjectView> => Projects { projects };
    boxed UsageView => Usage;
    boxed AuditView => Audit;
}
