//! Tools a run's gateway held back: new on the server, or changed since the person last
//! approved its tools. The runner says which as soon as it holds them back
//! ([`RunnerMsg::HeldBack`](bosun_protocol::runner::RunnerMsg::HeldBack)); they go on
//! to the MCP registry, which adds them to the server's pending list, so that `bosun mcp
//! inspect` shows them without waiting for the next `bosun mcp tools`.

use bosun_mcp::registry::RegistryMsg;
use bosun_protocol::runner::MOST_HELD_BACK;
use tracing::info;

use super::RunActorState;

impl RunActorState {
    /// The runner held `tools` of `server` back from this run: the registry hears of them.
    /// (Said again after each reconnect of the runner: the registry takes a tool it already
    /// has as it is.)
    /// (`left_out` more were held back than the runner tells; at most [`MOST_HELD_BACK`] come
    /// in one message, which an older runner did not hold to.)
    pub(super) fn on_held_back(
        &self,
        server: String,
        mut tools: Vec<serde_json::Value>,
        left_out: u64,
    ) {
        let left_out = left_out + tools.len().saturating_sub(MOST_HELD_BACK) as u64;
        tools.truncate(MOST_HELD_BACK);
        info!(run_id = %self.rec.id, server = %server, tools = tools.len(), left_out, "the run's gateway held tools back");
        self.ctx
            .registry
            .cast(RegistryMsg::HeldBack { server, tools });
    }
}
