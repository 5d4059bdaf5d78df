//! bosun-actors: the actors of `bosund` and the domain logic they own, and the store.
//!
//! - [`store`]: the redb file and its one group-committing writer.
//! - [`runs`]: Runs, the supervisor of one RunActor per live run; log hubs and followers.
//! - [`events`]: the fan-out of run changes to subscribed UIs.
//! - [`mcp`]: the MCP server registry, List tools, inspect, call and import.
//! - [`keychain`]: where secret values live (Secret Service, or a 0600 file for tests).
//! - [`agents`]: agents, their switches, the CLI adapters, and their runs' streams.
//! - [`supervision`]: the restart budget every supervisor uses; [`handle`]: "the current"
//!   actor of a kind, across restarts.
//! - [`upgrade`]: the store's migrations, run once at bosund's start.

pub mod agents;
pub mod approvals;
pub mod auth;
pub mod board;
pub mod crash;
pub mod error;
pub mod events;
pub mod git;
pub mod handle;
pub mod http_body;
pub mod keychain;
pub mod lead;
pub mod mcp;
pub mod offload;
pub mod placement;
pub mod prefix;
pub mod runs;
pub mod store;
pub mod supervision;
pub mod upgrade;
pub mod web_address;

use store::Record;

/// Every table of the store, each owned by its domain's record (and the store's own `meta`,
/// which also holds the board's settings). `Store::open` creates them all.
pub const TABLES: &[&str] = &[
    runs::record::RunRecord::TABLE,
    mcp::record::ServerRecord::TABLE,
    agents::record::AgentRecord::TABLE,
    auth::record::SignInRecord::TABLE,
    auth::registrations::RegistrationRecord::TABLE,
    board::record::ColumnRecord::TABLE,
    board::record::CardRecord::TABLE,
    board::record::NoteRecord::TABLE,
    board::record::ProjectRecord::TABLE,
    lead::record::ChatRecord::TABLE,
    lead::record::MessageRecord::TABLE,
    lead::record::PendingRecord::TABLE,
    approvals::record::ApprovalRecord::TABLE,
    approvals::record::WaitingApproval::TABLE,
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `.rs` file under `dir`, with its text.
    fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path.display().to_string(), text));
            }
        }
    }

    /// The process invariant (ARCHITECTURE.md): what bosund starts for a moment is started by
    /// `bosun_shared::process`'s helpers, which give it a group of its own, a deadline and a
    /// guard. The runner alone is started otherwise: it leaves for a session of its own and is
    /// recorded before it gets its plan.
    #[test]
    fn every_process_started_for_a_moment_goes_through_the_helpers() {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut wrong = Vec::new();
        // This file names what it looks for.
        files.retain(|(path, _)| !path.ends_with("src/lib.rs"));
        for (path, text) in &files {
            let starts = text.contains("Command::new(");
            let helped = text.contains("Helper::spawn(") || text.contains("output_blocking(");
            let is_runner = path.ends_with("runs/spawn.rs");
            let own_group = text.contains(".process_group(") || text.contains(".kill_on_drop(");
            if starts && !helped && !is_runner || own_group {
                wrong.push(path.clone());
            }
        }
        assert!(wrong.is_empty(), "started without the helpers: {wrong:?}");
    }
}
