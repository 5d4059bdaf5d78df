//! The live runs: for each run not over yet, its actor, its log hub and the latest persisted
//! snapshot of its record.
//!
//! Runs inserts and removes entries; each RunActor replaces its snapshot after every persisted
//! transition. Readers (`bosun ps`, a follower looking for a hub, a runner attaching) read it
//! without sending a message to anyone, so listing a thousand live runs costs one lock.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use bosun_shared::RunId;
use ractor::ActorRef;

use super::log_hub::LogHub;
use super::record::RunRecord;
use super::run_actor::RunMsg;

#[derive(Clone)]
pub struct LiveEntry {
    pub actor: ActorRef<RunMsg>,
    pub hub: Arc<LogHub>,
    pub record: Arc<RunRecord>,
    /// Whether the run's runner is connected now.
    pub attached: bool,
}

#[derive(Clone, Default)]
pub struct LiveRuns {
    inner: Arc<RwLock<HashMap<RunId, LiveEntry>>>,
}

impl LiveRuns {
    /// A run's actor has started: its entry, not attached to a runner yet.
    pub fn insert_new(&self, actor: ActorRef<RunMsg>, hub: Arc<LogHub>, record: &RunRecord) {
        self.insert(LiveEntry {
            actor,
            hub,
            record: Arc::new(record.clone()),
            attached: false,
        });
    }

    pub fn insert(&self, entry: LiveEntry) {
        if let Ok(mut map) = self.inner.write() {
            map.insert(entry.record.id, entry);
        }
    }

    pub fn update(&self, record: &RunRecord) {
        if let Ok(mut map) = self.inner.write()
            && let Some(e) = map.get_mut(&record.id)
        {
            e.record = Arc::new(record.clone());
        }
    }

    pub fn remove(&self, id: RunId) {
        if let Ok(mut map) = self.inner.write() {
            map.remove(&id);
        }
    }

    pub fn set_attached(&self, id: RunId, attached: bool) {
        if let Ok(mut map) = self.inner.write()
            && let Some(e) = map.get_mut(&id)
        {
            e.attached = attached;
        }
    }

    /// How many live runs have their runner connected.
    pub fn attached(&self) -> usize {
        self.inner
            .read()
            .map(|m| m.values().filter(|e| e.attached).count())
            .unwrap_or(0)
    }

    pub fn clear(&self) {
        if let Ok(mut map) = self.inner.write() {
            map.clear();
        }
    }

    pub fn get(&self, id: RunId) -> Option<LiveEntry> {
        self.inner.read().ok()?.get(&id).cloned()
    }

    pub fn entries(&self) -> Vec<LiveEntry> {
        self.inner
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The person changed a card's or a project's budget: every live run of a card looks again
    /// at the calls it holds for a shared budget (those no longer reached go on).
    pub fn budgets_changed(&self) {
        for e in self.entries() {
            if e.record.agent.as_ref().is_some_and(|a| a.card.is_some()) {
                let _ = e.actor.cast(RunMsg::BudgetMore);
            }
        }
    }

    /// The server `server` was signed in to: every live run's calls that wait for that
    /// sign-in go on.
    pub fn signed_in(&self, server: &str) {
        for e in self.entries() {
            let _ = e.actor.cast(RunMsg::SignedIn {
                server: server.to_string(),
            });
        }
    }

    pub fn len(&self) -> usize {
        self.inner.read().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
