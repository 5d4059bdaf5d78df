//! An agent and its CLI's built-in tools as the wire shows them.

use std::collections::HashSet;

use bosun_agents::builtin::BuiltinTools;
use bosun_agents::catalog::BuiltinTool;
use bosun_agents::record::{AgentRecord, ServerSwitch};
use bosun_agents::registry::{AgentDetail, DEFAULT_APPROVAL_WAIT_MS, ServerSeen};
use bosun_protocol::agents::{
    AgentView, ApprovalsView, BuiltinToolView, BuiltinToolsView, LastRunView, ServerSwitchView,
    SwitchesView, ToolSwitchView,
};
use bosun_protocol::mcp::LineView;

use super::View;

impl View for AgentDetail {
    type Wire = AgentView;
    fn view(&self) -> AgentView {
        let rec = &self.record;
        let seen: HashSet<&str> = rec
            .last_run
            .as_ref()
            .map(|l| l.tools_seen.iter().map(String::as_str).collect())
            .unwrap_or_default();
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
                    saved: self.saved.contains(n),
                })
                .collect(),
            model: rec.model.clone(),
            codex_config: rec.codex_config.clone(),
            switches: SwitchesView {
                mcp: self
                    .servers
                    .iter()
                    .map(|s| server_switch(rec, &seen, s))
                    .collect(),
                web_search: rec.switches.web_search,
                web_fetch: rec.switches.web_fetch.clone(),
                browser: self.browser_on(),
                browser_insecure_certs: rec.switches.browser_insecure_certs,
                skills: rec.switches.skills,
                builtins: rec.switches.builtins.iter().cloned().collect(),
            },
            workspace: rec.workspace.view(),
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
            warnings: self.warnings.clone(),
            carried_over: rec.carried_over.as_ref().map(|c| c.line()),
            budget: rec.budget,
            paused: rec.paused,
            created_at: rec.created_at,
            updated_at: rec.updated_at,
        }
    }
}

/// The agent's switch of one server and its tools, with what the last run saw of them (`seen`:
/// the tools it reported).
fn server_switch(rec: &AgentRecord, seen: &HashSet<&str>, s: &ServerSeen) -> ServerSwitchView {
    let server = &s.record;
    let switch = rec
        .switches
        .mcp
        .get(&server.id)
        .cloned()
        .unwrap_or_else(ServerSwitch::off);
    let last = rec.last_run.as_ref();
    let tools = server
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
                        bosun_shared::mcp::full_tool_name(&server.name, &t.name).as_str(),
                    ),
                })
                .collect()
        })
        .unwrap_or_default();
    ServerSwitchView {
        server: server.name.clone(),
        server_id: server.id,
        on: switch.on,
        tools,
        listed: server.listing.is_some(),
        sign_in: s.sign_in.map(|state| state.to_string()),
        last_run_state: last.and_then(|l| {
            l.servers
                .iter()
                .find(|(name, _)| *name == server.name)
                .map(|(_, state)| state.clone())
        }),
    }
}

impl View for BuiltinTools {
    type Wire = BuiltinToolsView;
    fn view(&self) -> BuiltinToolsView {
        BuiltinToolsView {
            agent: self.agent.clone(),
            cli: self.cli,
            source: self.source.clone(),
            tools: self.tools.view(),
        }
    }
}

impl View for BuiltinTool {
    type Wire = BuiltinToolView;
    fn view(&self) -> BuiltinToolView {
        BuiltinToolView {
            name: self.name.clone(),
            group: self.group.to_string(),
            what: self.what.to_string(),
            risk: self.risk,
            state: self.state.clone(),
            seen_in_last_run: self.seen_in_last_run,
        }
    }
}
