//! The router: which handler ([`crate::api`]) answers each request of a UI, and how the session
//! runs it. One line per request; the handler's typed reply becomes the [`Response`] here.

use std::pin::Pin;
use std::sync::Arc;

use bosun_shared::protocol::agents::AgentList;
use bosun_shared::protocol::board::{Board, NoteList};
use bosun_shared::protocol::call::Reply;
use bosun_shared::protocol::lead::ChatList;
use bosun_shared::protocol::mcp::McpList;
use bosun_shared::protocol::projects::ProjectList;
use bosun_shared::protocol::runs::{DaemonStatus, DaemonStop, Unfollow};
use bosun_shared::protocol::ui::{FollowParams, Request, Response};

use crate::api::Handle;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

/// A request's answer, on its way.
pub type Answer = Pin<Box<dyn Future<Output = Result<Response, Failure>> + Send>>;

/// What the session is to do with a request.
pub enum Routed {
    /// Await the answer before reading the client's next request.
    Now(Answer),
    /// Answer from a task of the session's ([`Handle::TASK`]): it may take minutes.
    Task(Answer),
    /// The session's own: open a log subscription, end one, subscribe to run events.
    Follow(FollowParams),
    Unfollow(Unfollow),
    SubscribeRuns,
}

pub fn route(ctx: &Arc<DaemonCtx>, request: Request) -> Routed {
    match request {
        Request::StartRun(c) => to(ctx, c),
        Request::ListRuns(c) => to(ctx, c),
        Request::GetRun(c) => to(ctx, c),
        Request::StopRun(c) => to(ctx, c),
        Request::FollowLog(c) => Routed::Follow(c),
        Request::Unfollow(c) => Routed::Unfollow(c),
        Request::SubscribeRuns => Routed::SubscribeRuns,
        Request::DaemonStatus => to(ctx, DaemonStatus),
        Request::DaemonStop => to(ctx, DaemonStop),
        Request::McpAdd(c) => to(ctx, c),
        Request::McpEdit(c) => to(ctx, c),
        Request::McpRename(c) => to(ctx, c),
        Request::McpRemove(c) => to(ctx, c),
        Request::McpList => to(ctx, McpList),
        Request::McpShow(c) => to(ctx, c),
        Request::McpTools(c) => to(ctx, c),
        Request::McpInspect(c) => to(ctx, c),
        Request::McpApprove(c) => to(ctx, c),
        Request::McpCall(c) => to(ctx, c),
        Request::McpImportScan(c) => to(ctx, c),
        Request::McpImport(c) => to(ctx, c),
        Request::McpSignIn(c) => to(ctx, c),
        Request::McpSignInFinish(c) => to(ctx, c),
        Request::McpSignOut(c) => to(ctx, c),
        Request::McpSignInMachine(c) => to(ctx, c),
        Request::AgentAdd(c) => to(ctx, c),
        Request::AgentEdit(c) => to(ctx, c),
        Request::AgentSet(c) => to(ctx, c),
        Request::AgentShow(c) => to(ctx, c),
        Request::AgentList => to(ctx, AgentList),
        Request::AgentRemove(c) => to(ctx, c),
        Request::AgentRun(c) => to(ctx, c),
        Request::AgentTools(c) => to(ctx, c),
        Request::Board => to(ctx, Board),
        Request::ColumnAdd(c) => to(ctx, c),
        Request::ColumnSet(c) => to(ctx, c),
        Request::CardAdd(c) => to(ctx, c),
        Request::CardEdit(c) => to(ctx, c),
        Request::CardShow(c) => to(ctx, c),
        Request::BoardLimit(c) => to(ctx, c),
        Request::NoteList => to(ctx, NoteList),
        Request::NoteShow(c) => to(ctx, c),
        Request::NoteWrite(c) => to(ctx, c),
        Request::ChatNew(c) => to(ctx, c),
        Request::ChatSend(c) => to(ctx, c),
        Request::ChatShow(c) => to(ctx, c),
        Request::ChatList => to(ctx, ChatList),
        Request::Inbox(c) => to(ctx, c),
        Request::Approve(c) => to(ctx, c),
        Request::ApproveAll(c) => to(ctx, c),
        Request::Discard(c) => to(ctx, c),
        Request::Approvals(c) => to(ctx, c),
        Request::Decide(c) => to(ctx, c),
        Request::ApproveCard(c) => to(ctx, c),
        Request::ProjectAdd(c) => to(ctx, c),
        Request::ProjectEdit(c) => to(ctx, c),
        Request::ProjectSet(c) => to(ctx, c),
        Request::ProjectShow(c) => to(ctx, c),
        Request::ProjectList => to(ctx, ProjectList),
        Request::ProjectRemove(c) => to(ctx, c),
        Request::CardRemove(c) => to(ctx, c),
        Request::McpSignInCancel(c) => to(ctx, c),
        Request::DaemonSet(c) => to(ctx, c),
        Request::Usage(c) => to(ctx, c),
    }
}

/// The call's handler, its reply wrapped into the [`Response`] that carries it.
fn to<C: Handle>(ctx: &Arc<DaemonCtx>, call: C) -> Routed {
    let ctx = ctx.clone();
    let answer: Answer = Box::pin(async move { call.handle(&ctx).await.map(Reply::into_response) });
    if C::TASK {
        Routed::Task(answer)
    } else {
        Routed::Now(answer)
    }
}
