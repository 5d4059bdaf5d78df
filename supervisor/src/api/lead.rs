//! Answers about chats with the lead and the pending actions that wait for the person's OK:
//! every one is a question to the Chats actor.

use std::sync::Arc;

use bosun_lead::ChatsError;
use bosun_lead::chats::ChatsMsg;
use bosun_protocol::WireError;
use bosun_protocol::lead::{
    AnswerStarted, Approve, ApproveAll, ChatList, ChatNew, ChatSend, ChatShow, ChatView, Discard,
    Inbox, PendingView,
};

use super::views::View;
use super::{Handle, starting_up};
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for ChatNew {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ChatView, Failure> {
        chats_call(ctx, |reply| ChatsMsg::New {
            agent: self.agent,
            reply,
        })
        .await
    }
}

impl Handle for ChatSend {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AnswerStarted, Failure> {
        let (chat, run) = chats_call(ctx, |reply| ChatsMsg::Send {
            chat: self.chat,
            message: self.message,
            files: self.files,
            reply,
        })
        .await?;
        Ok(AnswerStarted {
            chat: Box::new(chat),
            run: Box::new(run),
        })
    }
}

impl Handle for ChatShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ChatView, Failure> {
        chats_call(ctx, |reply| ChatsMsg::Show {
            chat: self.chat,
            reply,
        })
        .await
    }
}

impl Handle for ChatList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ChatView>, Failure> {
        chats_call(ctx, |reply| ChatsMsg::List { reply }).await
    }
}

impl Handle for Inbox {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<PendingView>, Failure> {
        chats_call(ctx, |reply| ChatsMsg::Inbox {
            chat: self.chat,
            reply,
        })
        .await
    }
}

impl Handle for Approve {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<PendingView>, Failure> {
        let what = format!("approved the lead's pending action {}", self.action);
        let left = chats_call(ctx, |reply| ChatsMsg::Approve {
            action: self.action,
            reply,
        })
        .await?;
        ctx.audit.record::<()>(&what, None, None);
        Ok(left)
    }
}

impl Handle for ApproveAll {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<PendingView>, Failure> {
        let what = format!(
            "approved every pending action of the lead's chat {}",
            self.chat
        );
        let left = chats_call(ctx, |reply| ChatsMsg::ApproveAll {
            chat: self.chat,
            reply,
        })
        .await?;
        ctx.audit.record::<()>(&what, None, None);
        Ok(left)
    }
}

impl Handle for Discard {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<PendingView>, Failure> {
        let what = format!("discarded the lead's pending action {}", self.action);
        let left = chats_call(ctx, |reply| ChatsMsg::Discard {
            action: self.action,
            reply,
        })
        .await?;
        ctx.audit.record::<()>(&what, None, None);
        Ok(left)
    }
}

/// Asks the Chats actor (chats, answers, and every decision on a pending action), and answers
/// with what it said as the wire shows it.
async fn chats_call<T: View + Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    msg: impl FnOnce(ractor::RpcReplyPort<Result<T, ChatsError>>) -> ChatsMsg,
) -> Result<T::Wire, Failure> {
    let chats = ctx.chats.get().ok_or_else(starting_up)?;
    let said = chats
        .call(msg, None)
        .await
        .map_err(|e| WireError::internal(format!("the chats did not answer: {e}")))?
        .success_or(WireError::internal("the chats did not answer"))??;
    Ok(said.view())
}
