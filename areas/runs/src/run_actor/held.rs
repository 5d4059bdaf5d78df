//! Tools a run's gateway held back: new on the server, or changed since the person last
//! approved its tools. The runner says which as soon as it holds them back
//! ([`RunnerMsg::HeldBack`](bosun_shared::protocol::runner::RunnerMsg::HeldBack)); they go on
//! to the MCP registry, which adds them to the server's pending list, so that `bosun mcp
//! inspect` shows them without waiting for the next `bosun mcp tools`.

use bosun_mcp::registry::RegistryMsg;
use tracing::info;

use super::RunActorState;

/// The most tools one message may bring: a server lists more only to flood bosun.
const MOST_TOOLS: usize = 500;

impl RunActorState {
    /// The runner held `tools` of `server` back from this run: the registry hears of them.
    /// (Said again after each reconnect of the runner: the registry takes a tool it already
    /// has as it is.)
    pub(super) fn on_held_back(&self, server: String, mut tools: Vec<serde_json::Value>) {
        tools.truncate(MOST_TOOLS);
        info!(run_id = %self.rec.id, server = %server, tools = tools.len(), "the run's gateway held tools back");
        self.ctx
            .registry
            .cast(RegistryMsg::HeldBack { server, tools });
    }
}
