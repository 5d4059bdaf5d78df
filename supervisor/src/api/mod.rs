//! The daemon's answers to a UI's requests, one module per area (runs and the daemon, MCP
//! servers, their sign-in, agents, the board and notes, chats with the lead). Each request type
//! implements [`Handle`], whose handler returns that request's own reply, so it cannot answer
//! the wrong thing; [`crate::requests`] routes each request to its handler.

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod board;
pub mod lead;
pub mod mcp;
pub mod runs;
pub mod usage;
pub mod views;

use std::sync::Arc;

use bosun_kit::error::Starting;
use bosun_protocol::call::Call;

use crate::ctx::DaemonCtx;
use crate::wire::Failure;

/// A request the daemon answers, and how.
pub trait Handle: Call + Send + 'static {
    /// Whether answering may take long (starting or calling an MCP server, a sign-in, a coding
    /// CLI, an approval): the session then answers it from a task of its own, ended if the
    /// client goes, and answers the client's later requests meanwhile.
    const TASK: bool = false;

    fn handle(
        self,
        ctx: &Arc<DaemonCtx>,
    ) -> impl Future<Output = Result<Self::Reply, Failure>> + Send;
}

/// The answer to a request that came before the actor it needs is up.
fn starting_up() -> Failure {
    Starting.into()
}
