//! The policy's first step, before any mode or verdict is looked at: what the agent's switches let
//! a call use at all. A tool whose switch is off is refused in every mode, with the switch named
//! and how to turn it on — the flags bosun writes on the CLI's command line only keep the model
//! from being offered what it cannot use; this is the guard.
//!
//! Pure: the agent's switches, the servers bosun knows, and the call, in; a refusal or nothing
//! out. The workspace's half of the first step (where a file tool writes) is in
//! [`workspace`](super::workspace), since it has to look at the file system.
//!
//! Which switch governs a built-in tool is the catalog's [`Governed`]: web search, web fetch (its
//! domain list matched against the address's host), slash commands and skills. A built-in the
//! catalog does not know is off until the person switches it on by name (`builtin.NAME=on`); on,
//! it is still an unknown tool, which asks in every mode. An MCP tool needs its server's switch and
//! its own; bosun's own server (the lead's tools, a QA run's verdict) is given by bosun alone and
//! needs none.

use bosun_shared::agents::{CliKind, WebFetch};
use serde_json::Value;

use bosun_agents::catalog::{self, Governed};
use bosun_agents::launch::BOSUN_SERVER;
use bosun_agents::record::Switches;
use bosun_mcp::record::ServerRecord;

use super::policy::Refusal;

/// The agent, as its switches see it.
#[derive(Clone, Copy, Debug)]
pub struct Agent<'a> {
    pub name: &'a str,
    pub cli: CliKind,
    pub switches: &'a Switches,
    /// Every server bosun knows (the browser among them), for their switches by id.
    pub servers: &'a [ServerRecord],
}

/// A call, as the CLI named it.
#[derive(Clone, Copy, Debug)]
pub enum Call<'a> {
    Builtin { name: &'a str, input: &'a Value },
    Mcp { server: &'a str, tool: &'a str },
}

/// The switch that keeps `call` from running, if any, in words that say how to turn it on.
pub fn switches(agent: Agent<'_>, call: Call<'_>) -> Option<Refusal> {
    match call {
        Call::Builtin { name, input } => builtin(agent, name, input),
        Call::Mcp { server, tool } => mcp(agent, server, tool),
    }
    .map(Refusal::switched_off)
}

fn builtin(agent: Agent<'_>, tool: &str, input: &Value) -> Option<String> {
    let name = agent.name;
    let Some(entry) = catalog::find(agent.cli, tool) else {
        if agent.switches.builtins.contains(tool) {
            return None;
        }
        return Some(format!(
            "`{tool}` is a tool bosun's catalog does not know, and such tools are off until the person switches one on: `bosun agent set {name} builtin.{tool}=on` (it then asks before each use)"
        ));
    };
    match entry.governed {
        Governed::WebSearch if agent.switches.web_search => None,
        Governed::WebSearch => Some(format!(
            "web search is off for this agent; the person turns it on with `bosun agent set {name} web.search=on`"
        )),
        Governed::WebFetch => fetch(agent, tool, input),
        Governed::Skills if agent.switches.skills && agent.cli.has_skills_switch() => None,
        Governed::Skills => Some(format!(
            "slash commands and skills are off for this agent; the person turns them on with `bosun agent set {name} skills=on`"
        )),
        Governed::AlwaysOn
        | Governed::PermissionMode
        | Governed::AllowedCommands
        | Governed::Off(_) => None,
    }
}

fn fetch(agent: Agent<'_>, tool: &str, input: &Value) -> Option<String> {
    let name = agent.name;
    let list = &agent.switches.web_fetch;
    let domains = match list {
        WebFetch::Any => return None,
        WebFetch::Off => {
            return Some(format!(
                "fetching pages is off for this agent; the person turns it on with `bosun agent set {name} web.fetch=any`, or for some sites only with a list such as `web.fetch=docs.rs,*.example.com`"
            ));
        }
        WebFetch::Domains(domains) => domains.join(","),
    };
    if agent.cli == CliKind::Gemini {
        return Some(format!(
            "Gemini CLI cannot keep its page fetch to a list of domains, so `{tool}` is off while web.fetch lists some ({domains}); `bosun agent set {name} web.fetch=any` lets it fetch any page"
        ));
    }
    let addresses = addresses(input);
    if addresses.is_empty() {
        return Some(format!(
            "bosun could not find the address `{tool}` asks for, so it cannot check it against the domains this agent may fetch ({domains})"
        ));
    }
    for address in addresses {
        let host = url::Url::parse(address)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()));
        let Some(host) = host else {
            return Some(format!(
                "`{address}` is not an address bosun can read, so it cannot check it against the domains this agent may fetch ({domains})"
            ));
        };
        if !list.allows_host(&host) {
            return Some(format!(
                "`{host}` is not among the domains this agent may fetch ({domains}); the person adds it with `bosun agent set {name} web.fetch={domains},{host}` (a redirect to another host is a fetch of its own, checked the same way)"
            ));
        }
    }
    None
}

/// The web addresses a fetch asks for: its `url`, else every `http(s)://` word in its strings
/// (Gemini's `web_fetch` takes a prompt with the addresses in it).
fn addresses(input: &Value) -> Vec<&str> {
    if let Some(url) = input.get("url").and_then(Value::as_str) {
        return vec![url.trim()];
    }
    let mut out = Vec::new();
    strings(input, &mut |s| {
        out.extend(
            s.split(|c: char| c.is_whitespace() || "<>\"'()[]{}".contains(c))
                .filter(|w| w.starts_with("http://") || w.starts_with("https://")),
        );
    });
    out
}

fn strings<'a>(value: &'a Value, each: &mut impl FnMut(&'a str)) {
    match value {
        Value::String(s) => each(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, each)),
        Value::Object(map) => map.values().for_each(|v| strings(v, each)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn mcp(agent: Agent<'_>, server: &str, tool: &str) -> Option<String> {
    let name = agent.name;
    let Some(record) = agent.servers.iter().find(|s| s.name == server) else {
        if server == BOSUN_SERVER {
            // bosun's own server is never the person's to switch: bosun gives it (to the lead's
            // answers and QA runs) and its tools are decided like any other.
            return None;
        }
        return Some(format!(
            "`{server}` is not an MCP server bosun gave this run: runs get only the servers of `bosun mcp list` that their agent has switched on"
        ));
    };
    let switch = agent.switches.mcp.get(&record.id);
    let browser = record.browser.is_some();
    match switch {
        Some(s) if s.tool_on(tool) => None,
        Some(s) if s.on => Some(format!(
            "`{tool}` of `{server}` is off for this agent; the person turns it on with `bosun agent set {name} mcp.{server}.{tool}=on`"
        )),
        Some(_) | None if browser => Some(format!(
            "the browser is off for this agent; the person turns it on with `bosun agent set {name} browser=on`"
        )),
        Some(_) | None => Some(format!(
            "the MCP server `{server}` is off for this agent; the person turns it on with `bosun agent set {name} mcp.{server}=on`"
        )),
    }
}

#[cfg(test)]
mod tests;
