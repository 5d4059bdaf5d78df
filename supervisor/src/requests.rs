//! The router: which handler ([`crate::api`]) answers each request of a UI, and how the session
//! runs it. The requests are the protocol's one table of them; each is routed by its type, and
//! the handler's typed reply becomes the [`Response`] here.

use std::pin::Pin;
use std::sync::Arc;

use bosun_protocol::call::Reply;
use bosun_protocol::runs::{SubscribeRuns, Unfollow};
use bosun_protocol::ui::{FollowParams, Request, Response};

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

/// Routes each request of the table of every request ([`bosun_protocol::every_request`]) by
/// its type's [`Route`].
macro_rules! route_every {
    ($(
        $variant:ident [$($decl:tt)*] [$($bind:tt)*] [$($value:tt)*] $ty:ty => $reply:ty;
    )*) => {
        pub fn route(ctx: &Arc<DaemonCtx>, request: Request) -> Routed {
            match request {
                $( Request::$variant $($bind)* => Route::route($($value)*, ctx), )*
            }
        }
    };
}

bosun_protocol::every_request!(route_every);

/// How a request is routed: a request with a handler ([`Handle`]) to it; the session's own
/// (following a log, ending that, subscribing to run events) to the session.
trait Route {
    fn route(self, ctx: &Arc<DaemonCtx>) -> Routed;
}

impl<C: Handle> Route for C {
    fn route(self, ctx: &Arc<DaemonCtx>) -> Routed {
        to(ctx, self)
    }
}

impl Route for FollowParams {
    fn route(self, _: &Arc<DaemonCtx>) -> Routed {
        Routed::Follow(self)
    }
}

impl Route for Unfollow {
    fn route(self, _: &Arc<DaemonCtx>) -> Routed {
        Routed::Unfollow(self)
    }
}

impl Route for SubscribeRuns {
    fn route(self, _: &Arc<DaemonCtx>) -> Routed {
        Routed::SubscribeRuns
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
