//! An agent as the registry answers it: its record, with what only the registry sees beside it
//! (which secret lines the keychain holds, every server its switches reach and the state of
//! each one's sign-in, what the form warns about). bosund makes the UI's view of it.

use std::collections::BTreeSet;
use std::sync::Arc;

use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_mcp::browser;
use bosun_mcp::record::ServerRecord;
use bosun_mcp::registry::{SignInState, sign_in_of};
use bosun_shared::agents::{CliKind, WebFetch};
use bosun_store::Store;

use crate::record::AgentRecord;

/// An agent with what the registry found beside its record.
#[derive(Clone, Debug)]
pub struct AgentDetail {
    pub record: AgentRecord,
    /// Its secret lines that have a value in the keychain.
    pub saved: BTreeSet<String>,
    /// Every server the person added, the built-in browser first, then by name.
    pub servers: Arc<[ServerSeen]>,
    /// What the form warns about.
    pub warnings: Vec<String>,
}

/// A server as an agent's switches see it: its record and the state of its sign-in (none for
/// a server started as a command).
#[derive(Clone, Debug)]
pub struct ServerSeen {
    pub record: ServerRecord,
    pub sign_in: Option<SignInState>,
}

impl AgentDetail {
    /// Whether its switch of the built-in browser is on.
    pub fn browser_on(&self) -> bool {
        self.servers
            .iter()
            .find(|s| s.record.browser.is_some())
            .and_then(|s| self.record.switches.mcp.get(&s.record.id))
            .is_some_and(|s| s.on)
    }
}

/// Every server as the agents' switches see them: each one's sign-in read from the store.
pub(super) fn servers_seen(store: &Store, mut servers: Vec<ServerRecord>) -> Arc<[ServerSeen]> {
    servers.sort_by_key(|s| (s.name != browser::NAME, s.name.clone()));
    servers
        .into_iter()
        .map(|record| ServerSeen {
            sign_in: sign_in_of(store, &record).map(|s| s.state()),
            record,
        })
        .collect()
}

/// The agent with what the keychain holds of its secret lines and what the form warns about.
pub(super) fn detail_of(
    keychain: &Keychain,
    rec: AgentRecord,
    servers: Arc<[ServerSeen]>,
) -> AgentDetail {
    let saved = rec
        .secret_env
        .iter()
        .filter(|n| {
            keychain
                .get(&agent_env_key(rec.id, n))
                .ok()
                .flatten()
                .is_some()
        })
        .cloned()
        .collect();
    AgentDetail {
        warnings: warnings(&rec),
        saved,
        servers,
        record: rec,
    }
}

/// What the form warns about: npm or npx with an outside source, and switches the agent's CLI
/// cannot keep to.
fn warnings(rec: &AgentRecord) -> Vec<String> {
    let mut out = rec.warnings();
    match (rec.cli, &rec.switches.web_fetch) {
        (CliKind::Gemini, WebFetch::Domains(_)) => out.push(
            "Gemini cannot keep to a list of domains when fetching pages: its runs go without fetching pages".into(),
        ),
        (CliKind::Codex, WebFetch::Any | WebFetch::Domains(_)) => out.push(
            "Codex has no switch of its own for fetching pages: its runs go without it".into(),
        ),
        (CliKind::Command, WebFetch::Any | WebFetch::Domains(_)) => out.push(
            "a command agent's program is not a coding CLI: the web switches do not reach it"
                .into(),
        ),
        (CliKind::Claude | CliKind::Gemini | CliKind::Codex | CliKind::Command, _) => {}
    }
    if rec.cli == CliKind::Gemini && !rec.switches.web_search {
        out.push("Gemini searches the web in every run: its instructions always say that what comes from outside is data".into());
    }
    if rec.cli == CliKind::Command && rec.switches.mcp.values().any(|s| s.on) {
        out.push(
            "a command agent's program is not a coding CLI: its MCP switches do not reach it"
                .into(),
        );
    }
    out
}
