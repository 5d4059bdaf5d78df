//! What the person approved of a server, and what waits for them: the capability ledger and
//! the pinned tools.
//!
//! A run gets only the capabilities the person approved (`Rules::capabilities`: tools and
//! prompts unless they say more) and only the tools as the person approved them (their
//! description and input schema): a server that starts advertising more, or adds or changes a
//! tool, has it held back from runs by the gateway and listed here as pending until the person
//! approves it (`bosun mcp approve`). A changed tool is how a server turns on its users.

use bosun_shared::gateway::{Capability, Rules};
use bosun_shared::mcp::ToolChange;

use crate::RegistryError;
use crate::record::{ServerRecord, StoredTool};

/// A tool runs do not get until the person approves it as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingTool {
    pub name: String,
    pub change: ToolChange,
}

/// The tools of the record's last listing that runs do not get until the person approves them.
pub fn pending_of(rec: &ServerRecord) -> Vec<PendingTool> {
    match (&rec.listing, rec.approved()) {
        (Some(l), Some(approved)) => pending_tools(approved, &l.tools),
        _ => Vec::new(),
    }
}

/// The capabilities the record's last listing advertised that runs do not get until the person
/// approves them.
pub fn capabilities_pending_of(rec: &ServerRecord) -> Vec<Capability> {
    rec.listing
        .as_ref()
        .and_then(|l| l.capabilities.as_deref())
        .map(|advertised| pending_capabilities(advertised, &rec.rules).0)
        .unwrap_or_default()
}

/// The tools of `listed` that are not in `approved` as they are.
pub fn pending_tools(approved: &[StoredTool], listed: &[StoredTool]) -> Vec<PendingTool> {
    listed
        .iter()
        .filter_map(|t| {
            let change = match approved.iter().find(|a| a.name == t.name) {
                None => ToolChange::New,
                Some(a) if !same(a, t) => ToolChange::Changed,
                Some(_) => return None,
            };
            Some(PendingTool {
                name: t.name.clone(),
                change,
            })
        })
        .collect()
}

/// Whether a run would hold `now` back against `approved`: the gateway compares the
/// description and the input schema (a schema an older bosun did not keep is not compared).
fn same(approved: &StoredTool, now: &StoredTool) -> bool {
    approved.description == now.description
        && (approved.input_schema.is_none() || approved.input_schema == now.input_schema)
}

/// Of the capabilities a server advertised (by the names it sent): those runs do not get until
/// the person approves them, and those bosun's gateway cannot relay at all.
pub fn pending_capabilities(
    advertised: &[String],
    rules: &Rules,
) -> (Vec<Capability>, Vec<String>) {
    let mut pending = Vec::new();
    let mut never = Vec::new();
    for name in advertised {
        match Capability::parse(name) {
            Ok(c) if !rules.capabilities.contains(&c) => pending.push(c),
            Ok(_) => {}
            Err(_) => never.push(name.clone()),
        }
    }
    pending.sort();
    pending.dedup();
    (pending, never)
}

/// Which tools of a server's last listing the person approves as they are now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    None,
    Named(Vec<String>),
    All,
}

/// Approves the chosen tools of the record's last listing as they are now.
pub fn approve_tools(rec: &mut ServerRecord, tools: &ToolChoice) -> Result<(), RegistryError> {
    let tools = match tools {
        ToolChoice::None => return Ok(()),
        ToolChoice::All => None,
        ToolChoice::Named(names) => Some(names),
    };
    let Some(listing) = &rec.listing else {
        return Err(RegistryError::conflict(format!(
            "the tools of `{}` have not been listed yet: `bosun mcp tools {}` lists them (and approves what it finds the first time)",
            rec.name, rec.name
        )));
    };
    let mut approved = rec
        .approved()
        .map(<[StoredTool]>::to_vec)
        .unwrap_or_default();
    let chosen: Vec<&StoredTool> = if let Some(tools) = tools {
        let mut chosen = Vec::new();
        for name in tools {
            match listing.tools.iter().find(|t| &t.name == name) {
                Some(t) => chosen.push(t),
                None => {
                    return Err(RegistryError::invalid(format!(
                        "`{name}` is not among the tools `{}` listed last; `bosun mcp tools {}` lists them again",
                        rec.name, rec.name
                    )));
                }
            }
        }
        chosen
    } else {
        listing.tools.iter().collect()
    };
    for t in chosen {
        approved.retain(|a| a.name != t.name);
        approved.push(t.clone());
    }
    approved.sort_by(|a, b| a.name.cmp(&b.name));
    rec.approved_tools = Some(approved);
    Ok(())
}

/// Tools a run's gateway held back (as the server listed them to the run), taken into the
/// record's last listing so that its pending list shows them now: a new one is added, a changed
/// one stands for the one listed. Whether the record changed. A record never listed, or whose
/// tools were never approved, holds nothing back and takes nothing.
pub fn take_held_back(rec: &mut ServerRecord, held: Vec<StoredTool>) -> bool {
    let Some(approved) = rec.approved().map(<[StoredTool]>::to_vec) else {
        return false;
    };
    let Some(listing) = rec.listing.as_mut() else {
        return false;
    };
    let mut changed = false;
    for tool in held {
        // Only what a run would hold back: an approved tool as it is is not news.
        if approved
            .iter()
            .any(|a| a.name == tool.name && same(a, &tool))
        {
            continue;
        }
        let full = listing.tools.len() >= crate::client::MOST_TOOLS;
        match listing.tools.iter_mut().find(|t| t.name == tool.name) {
            Some(t) if *t == tool => {}
            Some(t) => {
                *t = tool;
                changed = true;
            }
            // Bounded as a look is: a server that lists more only floods bosun.
            None if full => {}
            None => {
                listing.tools.push(tool);
                changed = true;
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::mcp::Hints;

    fn tool(name: &str, description: &str) -> StoredTool {
        StoredTool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            params: Vec::new(),
            hints: Hints::default(),
            input_schema: Some(serde_json::json!({"type": "object"})),
        }
    }

    #[test]
    fn new_and_changed_tools_are_pending() {
        let approved = vec![tool("echo", "Echoes"), tool("add", "Adds")];
        let listed = vec![
            tool("echo", "Echoes"),
            tool("add", "Adds, and sends your files away"),
            tool("delete", "Deletes"),
        ];
        let pending = pending_tools(&approved, &listed);
        assert_eq!(
            pending,
            vec![
                PendingTool {
                    name: "add".into(),
                    change: ToolChange::Changed
                },
                PendingTool {
                    name: "delete".into(),
                    change: ToolChange::New
                },
            ]
        );
        let mut schema = tool("echo", "Echoes");
        schema.input_schema = Some(serde_json::json!({"type": "object", "required": ["x"]}));
        assert_eq!(
            pending_tools(&approved, &[schema])[0].change,
            ToolChange::Changed
        );
        let mut old = tool("echo", "Echoes");
        old.input_schema = None;
        assert!(pending_tools(&[old], &[tool("echo", "Echoes")]).is_empty());
    }

    /// A record as an older bosun kept it: a listing, and nothing said about approval.
    fn older_record(tools: &[StoredTool]) -> ServerRecord {
        serde_json::from_value(serde_json::json!({
            "id": bosun_shared::ServerId::new(),
            "name": "s",
            "kind": "stdio",
            "command": "x",
            "args": [],
            "url": null,
            "env_names": [],
            "header_names": [],
            "created_at": bosun_shared::Timestamp::from_millis(0),
            "updated_at": bosun_shared::Timestamp::from_millis(0),
            "listing": {"at": bosun_shared::Timestamp::from_millis(0), "tools": tools, "pages": 1, "truncated": null},
            "last_error": null,
        }))
        .unwrap()
    }

    fn listing(tools: Vec<StoredTool>) -> crate::record::StoredListing {
        crate::record::StoredListing {
            at: bosun_shared::Timestamp::from_millis(1),
            tools,
            pages: 1,
            truncated: None,
            malformed: Vec::new(),
            capabilities: None,
        }
    }

    #[test]
    fn an_older_records_listing_stands_for_what_was_approved() {
        let mut rec = older_record(&[tool("echo", "Echoes")]);
        assert_eq!(rec.approved().map(<[StoredTool]>::len), Some(1));
        assert!(pending_of(&rec).is_empty());
        // The next look keeps the old listing as the approval: what changed waits.
        rec.take_listing(listing(vec![tool("echo", "Echoes"), tool("rm", "Removes")]));
        assert_eq!(
            pending_of(&rec),
            vec![PendingTool {
                name: "rm".into(),
                change: ToolChange::New
            }]
        );
        approve_tools(&mut rec, &ToolChoice::Named(vec!["rm".to_string()])).unwrap();
        assert!(pending_of(&rec).is_empty());
        let err =
            approve_tools(&mut rec, &ToolChoice::Named(vec!["nope".to_string()])).unwrap_err();
        assert!(
            err.to_string().contains("`nope` is not among the tools"),
            "{err}"
        );
    }

    #[test]
    fn the_first_listing_approves_what_it_finds() {
        let mut rec = older_record(&[]);
        rec.listing = None;
        assert!(rec.approved().is_none());
        rec.take_listing(listing(vec![tool("echo", "Echoes")]));
        assert!(pending_of(&rec).is_empty());
        rec.take_listing(listing(vec![tool("echo", "Echoes, and more")]));
        assert_eq!(pending_of(&rec)[0].change, ToolChange::Changed);
    }

    #[test]
    fn tools_a_run_held_back_are_pending_at_once_and_taken_once() {
        let mut rec = older_record(&[tool("echo", "Echoes")]);
        rec.take_listing(listing(vec![tool("echo", "Echoes")]));
        let held = vec![
            tool("echo", "Echoes, and sends your files away"),
            tool("rm", "Removes"),
        ];
        assert!(take_held_back(&mut rec, held.clone()));
        assert_eq!(
            pending_of(&rec),
            vec![
                PendingTool {
                    name: "echo".into(),
                    change: ToolChange::Changed
                },
                PendingTool {
                    name: "rm".into(),
                    change: ToolChange::New
                },
            ]
        );
        assert!(!take_held_back(&mut rec, held), "said again: nothing new");
        assert!(
            !take_held_back(&mut rec, vec![tool("echo", "Echoes")]),
            "an approved tool as it is is not held back"
        );
        let mut never = older_record(&[]);
        never.listing = None;
        assert!(!take_held_back(&mut never, vec![tool("rm", "Removes")]));
    }

    #[test]
    fn advertised_capabilities_beyond_the_approved_ones_are_pending() {
        let advertised: Vec<String> = ["tools", "resources", "logging", "experimental"]
            .map(String::from)
            .to_vec();
        let (pending, never) = pending_capabilities(&advertised, &Rules::default());
        assert_eq!(pending, vec![Capability::Resources, Capability::Logging]);
        assert_eq!(never, vec!["experimental".to_string()]);
    }
}
