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

/// Declares request types: `Type => Variant: Reply;` goes into `Request::Variant(Type)` and is
/// answered with `Reply`; `unit Type => Variant: Reply;` goes into the unit variant (a method
/// without params on the wire).
macro_rules! calls {
    () => {};
    (unit $ty:ty => $variant:ident: $reply:ty; $($rest:tt)*) => {
        impl From<$ty> for $crate::protocol::ui::Request {
            fn from(_: $ty) -> Self {
                Self::$variant
            }
        }
        impl $crate::protocol::call::Call for $ty {
            type Reply = $reply;
        }
        $crate::protocol::call::calls!($($rest)*);
    };
    ($ty:ty => $variant:ident: $reply:ty; $($rest:tt)*) => {
        impl From<$ty> for $crate::protocol::ui::Request {
            fn from(c: $ty) -> Self {
                Self::$variant(c)
            }
        }
        impl $crate::protocol::call::Call for $ty {
            type Reply = $reply;
        }
        $crate::protocol::call::calls!($($rest)*);
    };
}
use calls;

// Every request of the protocol, by area: each area's types in a scope of their own, so that
// the list reads as the areas write their names.

mod runs_calls {
    use crate::protocol::runs::*;

    calls! {
        StartRunParams => StartRun: RunView;
        ListRuns => ListRuns: RunList;
        GetRun => GetRun: RunView;
        StopRun => StopRun: RunView;
        FollowParams => FollowLog: Following;
        Unfollow => Unfollow: ();
        unit SubscribeRuns => SubscribeRuns: ();
        unit DaemonStatus => DaemonStatus: DaemonStatusView;
        unit DaemonStop => DaemonStop: ();
        DaemonSet => DaemonSet: DaemonStatusView;
    }
}

mod mcp_calls {
    use crate::protocol::mcp::*;

    calls! {
        AddServerParams => McpAdd: ServerView;
        EditServerParams => McpEdit: ServerView;
        McpRename => McpRename: ServerView;
        McpRemove => McpRemove: ServerView;
        unit McpList => McpList: Vec<ServerView>;
        McpShow => McpShow: ServerView;
        McpTools => McpTools: ToolListing;
        McpInspect => McpInspect: InspectView;
        McpCall => McpCall: CallView;
        McpApprove => McpApprove: ServerView;
        ImportScan => McpImportScan: ImportCandidates;
        ImportParams => McpImport: Imported;
    }
}

mod usage_calls {
    use crate::protocol::usage::*;

    calls! {
        UsageReport => Usage: UsageView;
    }
}

mod auth_calls {
    use crate::protocol::auth::*;
    use crate::protocol::mcp::ServerView;

    calls! {
        McpSignIn => McpSignIn: SignInStarted;
        McpSignInMachine => McpSignInMachine: ServerView;
        McpSignInFinish => McpSignInFinish: ServerView;
        McpSignInCancel => McpSignInCancel: ServerView;
        McpSignOut => McpSignOut: ServerView;
    }
}

mod agents_calls {
    use crate::protocol::agents::*;

    calls! {
        AgentParams => AgentAdd: AgentView;
        EditAgentParams => AgentEdit: AgentView;
        AgentSet => AgentSet: AgentView;
        AgentShow => AgentShow: AgentView;
        unit AgentList => AgentList: Vec<AgentView>;
        AgentRemove => AgentRemove: AgentView;
        AgentRun => AgentRun: crate::protocol::ui::RunView;
        AgentTools => AgentTools: BuiltinToolsView;
    }
}

mod board_calls {
    use crate::protocol::board::*;

    calls! {
        unit Board => Board: BoardView;
        AddColumnParams => ColumnAdd: ColumnView;
        SetColumnParams => ColumnSet: ColumnView;
        AddCardParams => CardAdd: CardView;
        EditCardParams => CardEdit: CardView;
        CardShow => CardShow: CardView;
        CardRemove => CardRemove: CardView;
        BoardLimit => BoardLimit: BoardView;
        unit NoteList => NoteList: Vec<NoteSummary>;
        NoteShow => NoteShow: NoteView;
        NoteWrite => NoteWrite: NoteView;
    }
}

mod lead_calls {
    use crate::protocol::lead::*;

    calls! {
        ChatNew => ChatNew: ChatView;
        ChatSend => ChatSend: AnswerStarted;
        ChatShow => ChatShow: ChatView;
        unit ChatList => ChatList: Vec<ChatView>;
        Inbox => Inbox: Vec<PendingView>;
        Approve => Approve: Vec<PendingView>;
        ApproveAll => ApproveAll: Vec<PendingView>;
        Discard => Discard: Vec<PendingView>;
    }
}

mod projects_calls {
    use crate::protocol::projects::*;

    calls! {
        AddProjectParams => ProjectAdd: ProjectView;
        EditProjectParams => ProjectEdit: ProjectView;
        ProjectSet => ProjectSet: ProjectView;
        ProjectShow => ProjectShow: ProjectView;
        unit ProjectList => ProjectList: Vec<ProjectView>;
        ProjectRemove => ProjectRemove: ProjectView;
    }
}

mod approvals_calls {
    use crate::protocol::approvals::*;

    calls! {
        Approvals => Approvals: Vec<ApprovalView>;
        Decide => Decide: ApprovalView;
        ApproveCard => ApproveCard: Vec<ApprovalView>;
    }
}

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
}
