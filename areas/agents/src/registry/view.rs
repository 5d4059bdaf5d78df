//! An agent as the UI shows it: its settings, each secret line marked saved or missing in the
//! keychain, its switch of each server and tool with what its last run saw, and what the form
//! warns about.

use std::collections::HashSet;

use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_mcp::browser;
use bosun_mcp::record::ServerRecord;
use bosun_shared::agents::{CliKind, WebFetch};
use bosun_shared::protocol::agents::{
    AgentView, ApprovalsView, LastRunView, ServerSwitchView, SwitchesView, ToolSwitchView,
    WorkspaceView,
};
use bosun_shared::protocol::mcp::LineView;
use bosun_store::Store;

use super::DEFAULT_APPROVAL_WAIT_MS;
use crate::record::{AgentRecord, ServerSwitch};

pub(super) fn view_of(
    keychain: &Keychain,
    store: &Store,
    rec: &AgentRecord,
    servers: &[ServerRecord],
) -> AgentView {
    let mcp = server_switches(store, rec, servers);
    let browser_on = servers
        .iter()
        .find(|s| s.browser.is_some())
        .and_then(|s| rec.switches.mcp.get(&s.id))
        .is_some_and(|s| s.on);
    AgentView {
        id: rec.id,
        name: rec.name.clone(),
        role: rec.role.clone(),
        cli: rec.cli,
        instructions: rec.instructions.clone(),
        permission_mode: rec.permission_mode.clone(),
        allowed_commands: rec.allowed_commands.clone(),
        time_cap_ms: rec.time_cap_ms,
        max_output: rec.max_output,
        placement: rec.placement.clone(),
        cwd: rec.cwd.clone(),
        command: rec.command.clone(),
        env: rec.env.clone(),
        secret_env: rec
            .secret_env
            .iter()
            .map(|n| LineView {
                name: n.clone(),
                saved: keychain
                    .get(&agent_env_key(rec.id, n))
                    .ok()
                    .flatten()
                    .is_some(),
            })
            .collect(),
        model: rec.model.clone(),
        codex_config: rec.codex_config.clone(),
        switches: SwitchesView {
            mcp,
            web_search: rec.switches.web_search,
            web_fetch: rec.switches.web_fetch.clone(),
            browser: browser_on,
            browser_insecure_certs: rec.switches.browser_insecure_certs,
            skills: rec.switches.skills,
            builtins: rec.switches.builtins.iter().cloned().collect(),
        },
        workspace: WorkspaceView {
            roots: rec.workspace.roots.clone(),
            unrestricted: rec.workspace.unrestricted,
        },
        approvals: ApprovalsView {
            mode: rec.approvals.mode.to_string(),
            verdicts: rec
                .approvals
                .verdicts
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            wait_ms: rec.approvals.wait_ms.unwrap_or(DEFAULT_APPROVAL_WAIT_MS),
            wait_for_person: rec.approvals.wait_for_person,
        },
        last_run: rec.last_run.as_ref().map(|l| LastRunView {
            run: l.run,
            at: l.at,
            servers: l.servers.clone(),
            tools_seen: l.tools_seen.clone(),
        }),
        warnings: warnings(rec),
        carried_over: rec.carried_over.as_ref().map(|c| c.line()),
        budget: rec.budget,
        paused: rec.paused,
        created_at: rec.created_at,
        updated_at: rec.updated_at,
    }
}

/// The agent's switch of each server and its tools, with what the last run saw of them.
fn server_switches(
    store: &Store,
    rec: &AgentRecord,
    servers: &[ServerRecord],
) -> Vec<ServerSwitchView> {
    let last = rec.last_run.clone().unwrap_or_default();
    let seen: HashSet<&str> = last.tools_seen.iter().map(String::as_str).collect();
    let mut mcp: Vec<ServerSwitchView> = servers
        .iter()
        .map(|s| {
            let switch = rec
                .switches
                .mcp
                .get(&s.id)
                .cloned()
                .unwrap_or_else(ServerSwitch::off);
            let tools = s
                .listing
                .as_ref()
                .map(|l| {
                    l.tools
                        .iter()
                        .map(|t| ToolSwitchView {
                            name: t.name.clone(),
                            on: switch.tool_on(&t.name),
                            risk: t.hints.assess().risk,
                            seen_in_last_run: seen.contains(
                                bosun_shared::mcp::full_tool_name(&s.name, &t.name).as_str(),
                            ),
                        })
                        .collect()
                })
                .unwrap_or_default();
            ServerSwitchView {
                server: s.name.clone(),
                server_id: s.id,
                on: switch.on,
                tools,
                listed: s.listing.is_some(),
                sign_in: bosun_mcp::registry::sign_in_of(store, s).map(|v| v.state().to_string()),
                last_run_state: last
                    .servers
                    .iter()
                    .find(|(name, _)| *name == s.name)
                    .map(|(_, state)| state.clone()),
            }
        })
        .collect();
    // The built-in browser first, as in the person's list of servers.
    mcp.sort_by_key(|s| (s.server != browser::NAME, s.server.clone()));
    mcp
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
