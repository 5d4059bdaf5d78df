//! What the gateway holds back: tools the server's rules deny, tools the person has not seen
//! as they are now (new, or changed since they approved them), and capabilities the person has
//! not approved (in the server's answer to `initialize`, and in what the CLI's `initialize`
//! offers the server).

use std::collections::{BTreeSet, HashMap};

use bosun_protocol::runner::{HELD_BACK_BYTES, MOST_HELD_BACK};
use bosun_shared::gateway::{AskPolicy, Capability, Rules};
use bosun_shared::mcp::check_tool_name;
use serde_json::{Value, json};

use super::Conn;

/// Why a tool the server lists is held back until the person looks at the server again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pending {
    /// Not among the tools the person last saw.
    New,
    /// Its description or input schema is not what the person last saw.
    Changed,
}

impl Pending {
    pub(super) fn words(self) -> &'static str {
        match self {
            Pending::New => "it is new since the person approved the server's tools",
            Pending::Changed => {
                "its description or input schema changed since the person approved it"
            }
        }
    }
}

/// The server's answer to `initialize` with only the capabilities the person approved, and
/// resource subscriptions off.
/// The CLI's `initialize` as the server gets it: it may ask for the person's input only when
/// its policy is `ask` (the gateway answers those, not the CLI), and for a message of the model
/// only when its policy is `ask` and the CLI can write one. Whether the CLI declared it can.
pub(super) fn offer_requests(init: &mut Value, rules: &Rules) -> bool {
    let Some(params) = init.get_mut("params").and_then(Value::as_object_mut) else {
        return false;
    };
    let caps = params.entry("capabilities").or_insert_with(|| json!({}));
    let Some(caps) = caps.as_object_mut() else {
        return false;
    };
    let cli_samples = caps.contains_key("sampling");
    if rules.sampling == AskPolicy::Deny {
        caps.remove("sampling");
    }
    caps.remove("elicitation");
    if rules.elicitation == AskPolicy::Ask {
        caps.insert("elicitation".into(), json!({}));
    }
    cli_samples
}

pub(super) fn hold_to_ceiling(msg: &mut Value, approved: &BTreeSet<Capability>) {
    if let Some(caps) = msg
        .pointer_mut("/result/capabilities")
        .and_then(Value::as_object_mut)
    {
        caps.retain(|k, _| Capability::parse(k).is_ok_and(|c| approved.contains(&c)));
        if let Some(resources) = caps.get_mut("resources").and_then(Value::as_object_mut) {
            resources.remove("subscribe");
        }
    }
}

impl Conn<'_> {
    /// The capability `method` belongs to, when the person has not approved it.
    pub(super) fn unapproved(&self, method: &str) -> Option<Capability> {
        Capability::of_method(method).filter(|c| !self.rules().capabilities.contains(c))
    }

    /// A listing without the tools the rules hold back, nor those whose names break MCP's
    /// rules (said in the run's log, counted).
    pub(super) fn hold_back_tools(&self, msg: &mut Value) {
        let Some(tools) = msg
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        let rules = &self.server.rules;
        let mut malformed = 0usize;
        tools.retain(|t| {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                malformed += 1;
                return false;
            };
            if check_tool_name(name).is_err() {
                malformed += 1;
                return false;
            }
            rules.judge(name).is_ok()
        });
        if malformed > 0 {
            self.gw.note(format!(
                "bosun's MCP gateway: {malformed} tools of {} are not offered to this run: their names break MCP's rules for tool names (`bosun mcp tools {}` says what is wrong with each)",
                self.server.name, self.server.name
            ));
        }
    }

    /// Why a call to `tool` is held back: it is not among the tools the person saw, or this
    /// connection's listing found it changed.
    pub(super) fn unseen(&self, tool: &str) -> Option<Pending> {
        if let Some(p) = self.pending.get(tool) {
            return Some(*p);
        }
        let pinned = self.server.pinned.as_ref()?;
        (!pinned.iter().any(|p| p.name == tool)).then_some(Pending::New)
    }

    /// A listing without the tools the person has not seen as they are now: new ones, and
    /// ones whose description or schema changed (how a server turns on its users). Each is
    /// said in the run's log once, with how to let it through.
    pub(super) fn hold_back_unseen(&mut self, msg: &mut Value) {
        let Some(pinned) = &self.server.pinned else {
            return;
        };
        let Some(tools) = msg
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        let redactor = &self.gw.redactor;
        let mut held = Vec::new();
        let mut definitions = HashMap::new();
        tools.retain(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("");
            let state = match pinned.iter().find(|p| p.name == name) {
                None => Some(Pending::New),
                Some(p) => {
                    let mut live = t.clone();
                    redactor.json(&mut live);
                    let description = live.get("description").and_then(Value::as_str);
                    let schema_differs = p
                        .input_schema
                        .as_ref()
                        .is_some_and(|s| live.get("inputSchema") != Some(s));
                    (description != p.description.as_deref() || schema_differs)
                        .then_some(Pending::Changed)
                }
            };
            if let Some(state) = state {
                held.push((name.to_string(), state));
                let mut live = t.clone();
                redactor.json(&mut live);
                definitions.insert(name.to_string(), live);
            }
            state.is_none()
        });
        let server = self.server.name.clone();
        let mut told = Told::default();
        for (name, state) in held {
            if self.pending.insert(name.clone(), state) != Some(state) {
                if told.noted < MOST_NOTES {
                    self.gw.note(format!(
                        "bosun's MCP gateway: {server}/{name} is held back from this run: {}; `bosun mcp inspect {server}` lists it as pending, and `bosun mcp approve {server} {name}` lets it through from the next run on",
                        state.words()
                    ));
                    told.noted += 1;
                } else {
                    told.unnoted += 1;
                }
                if let Some(definition) = definitions.remove(&name) {
                    told.add(definition);
                }
            }
        }
        if told.unnoted > 0 {
            self.gw.note(format!(
                "bosun's MCP gateway: {} more tools of {server} are held back from this run (new, or changed since the person approved them); `bosun mcp inspect {server}` lists what waits",
                told.unnoted
            ));
        }
        // bosund hears of them now, so that the server's pending list shows them at once.
        if !told.news.is_empty() {
            let said = match self.gw.link.asks.lock() {
                Ok(mut asks) => asks.held_back(server.clone(), told.news, told.left_out),
                Err(_) => Ok(()),
            };
            match said {
                Ok(()) => self.gw.link.wake.notify_one(),
                Err(e) => self.gw.note(format!(
                    "bosun's MCP gateway: the tools of {server} held back from this run are not told to bosund: {e}"
                )),
            }
        }
    }
}

/// The most held-back tools one listing says in the run's log one by one; the rest are counted
/// in one line.
const MOST_NOTES: usize = 20;

/// What one listing tells of the tools it held back: lines in the run's log, and definitions for
/// bosund, bounded however many tools the server lists.
#[derive(Default)]
struct Told {
    noted: usize,
    unnoted: usize,
    news: Vec<Value>,
    bytes: usize,
    left_out: u64,
}

impl Told {
    /// Keeps `definition` for bosund while the message stays within its bounds; counts it as
    /// left out otherwise.
    fn add(&mut self, definition: Value) {
        let len = serde_json::to_string(&definition).map_or(usize::MAX, |t| t.len());
        if self.news.len() < MOST_HELD_BACK && self.bytes.saturating_add(len) <= HELD_BACK_BYTES {
            self.bytes += len;
            self.news.push(definition);
        } else {
            self.left_out += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_keeps_what_the_person_approved_only() {
        let advertised = json!({"id": 0, "result": {"capabilities": {
            "tools": {"listChanged": true}, "prompts": {}, "resources": {"subscribe": true, "listChanged": true},
            "logging": {}, "completions": {}, "experimental": {"x": {}},
        }}});
        let mut msg = advertised.clone();
        hold_to_ceiling(&mut msg, &Rules::default().capabilities);
        assert_eq!(
            msg["result"]["capabilities"],
            json!({"tools": {"listChanged": true}, "prompts": {}})
        );
        let mut msg = advertised;
        let more = [Capability::Tools, Capability::Resources]
            .into_iter()
            .collect();
        hold_to_ceiling(&mut msg, &more);
        assert_eq!(
            msg["result"]["capabilities"],
            json!({"tools": {"listChanged": true}, "resources": {"listChanged": true}})
        );
    }
}
