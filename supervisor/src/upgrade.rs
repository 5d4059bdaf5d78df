//! The store's migrations: what bosund does to a store an older bosun wrote, once, at its start,
//! before it starts its actors or answers anyone. The store owns the mechanism (a copy of the
//! live rows, changed, put in place, and a backup: `store::rewrite`); this module owns what
//! changes, since it knows the domains.
//!
//! - **1 → 2.** Each agent's CLI permission mode is carried over as saved verdicts
//!   (`approvals::carry`), where the person has no verdict of their own on the tool; the agent
//!   keeps a note of it ([`CarriedOver`]). An address query an older bosun kept in a server's
//!   record goes to the keychain.
//! - **2 → 3.** Each run of a coding CLI gets its usage row (`runs::spend::UsageRow`), which
//!   `bosun usage` and the budgets of cards and projects read; from then on each is written
//!   with its run's record.
//! - **3 → 4.** Each run's decisions move out of its record into rows of their own
//!   (`runs::decisions`), so that deciding a call writes that call's row and nothing more.
//! - **Every start.** A query still in the store (the keychain could not take it before) goes to
//!   the keychain, and the store is written anew, so that no copy of it stays in a free page.
//!
//! Nothing here runs while anything else uses the store: the store is written anew in place.

use bosun_mcp::record::ServerReads;
use std::path::Path;

use bosun_shared::Timestamp;
use tracing::{info, warn};

use bosun_agents::record::Decision;
use bosun_agents::record::{AgentRecord, CarriedOver};
use bosun_approvals::carry;
use bosun_approvals::policy::Verdict;
use bosun_kit::keychain::Keychain;
use bosun_mcp::address;
use bosun_mcp::record::{ServerRecord, take_stored_query};
use bosun_runs::decisions::DecisionRow;
use bosun_runs::record::RunRecord;
use bosun_runs::spend::UsageRow;
use bosun_shared::RunId;
use bosun_store::{Record, decode_part};
use bosun_store::{Rewrite, SCHEMA_VERSION, Store, StoreError};

/// What an upgrade did, for `bosun daemon status`.
#[derive(Debug, Default)]
pub struct Upgraded {
    /// The line in words; `None` when the store needed nothing.
    pub line: Option<String>,
}

/// Upgrades the store if it is older than this build, and moves any address query left in it
/// to the keychain, writing the store anew when either happened. Blocks: call it from a blocking
/// thread, before the store's writer starts.
pub fn run(store: &mut Store, keychain: &Keychain) -> Result<Upgraded, StoreError> {
    let from = store.upgrade_from();
    let stored_query = store
        .servers()?
        .into_iter()
        .any(|mut s| take_stored_query(&mut s).is_some());
    if from.is_none() && !stored_query {
        return Ok(Upgraded::default());
    }
    let now = Timestamp::now();
    // The names moved are those the store's copy gives (the backup's copy moves the same ones
    // first, with the same values).
    let moved = std::cell::RefCell::new(Vec::new());
    let (carried, backup) = store.rewrite(
        |copy| {
            let names = move_queries(copy, keychain)?;
            moved.borrow_mut().extend(names);
            Ok(())
        },
        |copy| {
            let carried = match from {
                Some(1) => carry_permission_modes(copy, now)?,
                Some(_) | None => Vec::new(),
            };
            let rows = match from {
                Some(v) if v < 3 => usage_rows(copy)?,
                Some(_) | None => 0,
            };
            let decisions = match from {
                Some(v) if v < 4 => decision_rows(copy)?,
                Some(_) | None => 0,
            };
            Ok((carried, rows, decisions))
        },
    )?;
    let (carried, rows, decisions) = carried;
    let mut moved = moved.into_inner();
    moved.sort();
    moved.dedup();
    let Some(from) = from else {
        info!(
            servers = moved.len(),
            "moved address queries to the keychain and wrote the store anew"
        );
        return Ok(Upgraded::default());
    };
    info!(
        from,
        to = SCHEMA_VERSION,
        agents = carried.len(),
        runs = rows,
        decisions,
        "store upgraded"
    );
    Ok(Upgraded {
        line: Some(line(
            from,
            backup.as_deref(),
            &moved,
            &carried,
            rows,
            decisions,
        )),
    })
}

/// Writes the usage row of every run of a coding CLI, from its record. Returns how many.
fn usage_rows(copy: &Rewrite) -> Result<usize, StoreError> {
    let rows: Vec<UsageRow> = copy
        .all::<RunRecord>()?
        .iter()
        .filter_map(UsageRow::of)
        .collect();
    copy.put_all(&rows)?;
    Ok(rows.len())
}

/// How many decisions [`decision_rows`] holds in memory before writing them.
const DECISIONS_PER_COMMIT: usize = 10_000;

/// Moves each run's decisions out of its record into rows of their own, in the order they were
/// made, and writes the record again without them. Returns how many moved. A pass over the runs'
/// bytes, a batch at a time: a store may hold millions of decisions.
fn decision_rows(copy: &Rewrite) -> Result<usize, StoreError> {
    /// What schema 3 kept of a run's decisions in its record.
    #[derive(serde::Deserialize)]
    struct Inline {
        id: RunId,
        #[serde(default)]
        agent: Option<InlineAgent>,
    }
    #[derive(serde::Deserialize)]
    struct InlineAgent {
        #[serde(default)]
        decisions: Vec<Decision>,
    }
    let (mut rows, mut runs, mut moved) = (Vec::new(), Vec::new(), 0);
    let flush = |rows: &mut Vec<DecisionRow>, runs: &mut Vec<RunRecord>| {
        copy.put_all(&std::mem::take(rows))?;
        copy.put_all(&std::mem::take(runs))
    };
    copy.read()?.each_bytes::<RunRecord>(|bytes| {
        let inline = decode_part::<RunRecord, Inline>(bytes)?;
        let Some(agent) = inline.agent.filter(|a| !a.decisions.is_empty()) else {
            return Ok(());
        };
        moved += agent.decisions.len();
        rows.extend(
            agent
                .decisions
                .into_iter()
                .zip(0..)
                .map(|(decision, n)| DecisionRow {
                    run: inline.id,
                    n,
                    decision,
                }),
        );
        // Written again, its decisions are left out.
        runs.push(RunRecord::decode(bytes)?);
        if rows.len() >= DECISIONS_PER_COMMIT {
            flush(&mut rows, &mut runs)?;
        }
        Ok(())
    })?;
    flush(&mut rows, &mut runs)?;
    Ok(moved)
}

/// The line `daemon status` shows after an upgrade.
fn line(
    from: u64,
    backup: Option<&Path>,
    moved: &[String],
    carried: &[(String, String)],
    rows: usize,
    decisions: usize,
) -> String {
    let mut line = format!("the store was upgraded from schema {from} to {SCHEMA_VERSION}");
    if let Some(b) = backup {
        line.push_str(&format!("; the store as it was is kept in {}", b.display()));
    }
    if !moved.is_empty() {
        line.push_str(&format!(
            "; the address query of {} moved to the keychain",
            moved.join(", ")
        ));
    }
    if from < 3 {
        line.push_str(&format!(
            "; what {rows} run{} of coding CLIs used is kept apart for `bosun usage` and budgets",
            if rows == 1 { "" } else { "s" }
        ));
    }
    if from < 4 && decisions > 0 {
        line.push_str(&format!(
            "; the runs' decisions on tool calls ({decisions}) are now kept a row each"
        ));
    }
    // Permission modes were carried over, and workspaces came, with the upgrade to schema 2.
    if from >= 2 {
        return line;
    }
    if carried.is_empty() {
        line.push_str("; no agent's permission mode needed carrying over");
    } else {
        let each: Vec<String> = carried
            .iter()
            .map(|(name, keys)| format!("{name}: {keys}"))
            .collect();
        line.push_str(&format!(
            "; permission modes carried over as verdicts (allow), see `bosun agent show NAME`: {}",
            each.join("; ")
        ));
    }
    // Schema 2 came with workspaces: a run of any agent now writes only in its own folder.
    line.push_str("; agents' runs now write only in their own folder (a card's worktree) and the roots you give them (`bosun agent set NAME roots=DIR,…`, or `workspace=unrestricted`)");
    line
}

/// Moves each address query kept in the store to the keychain: the keychain first, then the
/// record without it. One the keychain cannot take stays (and works) until the next start.
/// Returns the servers' names.
fn move_queries(copy: &Rewrite, keychain: &Keychain) -> Result<Vec<String>, StoreError> {
    let mut moved = Vec::new();
    for mut rec in copy.all::<ServerRecord>()? {
        let Some(query) = take_stored_query(&mut rec) else {
            continue;
        };
        match keychain.set(&address::query_key(rec.id), &query) {
            Ok(()) => {
                copy.put(&rec)?;
                moved.push(rec.name.clone());
            }
            Err(e) => {
                warn!(server = %rec.name, error = %e, "could not move the query of its address to the keychain; it stays in the store until the next start");
            }
        }
    }
    Ok(moved)
}

/// Saves the verdicts each agent's permission mode stands for (where the person has none of
/// their own on the tool), with a note on the agent. Returns (agent, keys) of the agents
/// changed.
fn carry_permission_modes(
    copy: &Rewrite,
    now: Timestamp,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut carried = Vec::new();
    for mut rec in copy.all::<AgentRecord>()? {
        let Some(mode) = rec.permission_mode.clone() else {
            continue;
        };
        let mut allowed = Vec::new();
        let mut kept = Vec::new();
        for key in carry::allowed_by_mode(rec.cli, &mode) {
            match rec.approvals.verdicts.get(key) {
                Some(own) => kept.push((key.to_string(), *own)),
                None => {
                    rec.approvals
                        .verdicts
                        .insert(key.to_string(), Verdict::AlwaysAllow);
                    allowed.push(key.to_string());
                }
            }
        }
        if allowed.is_empty() {
            continue;
        }
        carried.push((
            rec.name.clone(),
            format!("{} from {mode}", allowed.join(", ")),
        ));
        rec.carried_over = Some(CarriedOver {
            permission_mode: mode,
            allowed,
            kept,
            at: now,
        });
        copy.put(&rec)?;
    }
    Ok(carried)
}

#[cfg(test)]
mod tests;
