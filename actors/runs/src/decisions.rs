//! A run's decisions in the store: one row each in the `decisions` table, keyed by the run and
//! the decision's place in it (`<run id>/<n>`, `n` from 0, written out to ten digits so that key
//! order is the order they were made).
//!
//! A decision is committed as its own row, so deciding a call writes what that call adds and
//! nothing more (the run's record used to carry every decision so far, and was written whole at
//! each one). In memory the run's record holds them all (`AgentRun::decisions`), read back by
//! [`RunReads`](crate::record::RunReads) whenever the record is.

use std::fmt;
use std::sync::Arc;

use bosun_agents::record::Decision;
use bosun_shared::RunId;
use bosun_store::{Reader, Record, StoreError};
use serde::{Deserialize, Serialize};

/// Where a decision is kept: its run, and its place among the run's decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecisionKey {
    pub run: RunId,
    pub n: u64,
}

impl fmt::Display for DecisionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{:010}", self.run, self.n)
    }
}

/// One decision of a run, as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRow {
    pub run: RunId,
    pub n: u64,
    pub decision: Decision,
}

impl Record for DecisionRow {
    const TABLE: &'static str = "decisions";
    const WHAT: &'static str = "decision";
    type Key = DecisionKey;

    fn key(&self) -> String {
        DecisionKey {
            run: self.run,
            n: self.n,
        }
        .to_string()
    }
}

/// The range of keys that holds `run`'s decisions (`/` is followed by `0` in key order).
fn range_of(run: RunId) -> (String, String) {
    (format!("{run}/"), format!("{run}0"))
}

/// `run`'s decisions, in the order they were made.
pub fn of_run(read: &Reader, run: RunId) -> Result<Vec<Arc<Decision>>, StoreError> {
    let (from, to) = range_of(run);
    Ok(read
        .range::<DecisionRow>(&from, &to)?
        .into_iter()
        .map(|r| Arc::new(r.decision))
        .collect())
}

/// The keys of `run`'s decisions, in order.
pub fn keys_of(read: &Reader, run: RunId) -> Result<Vec<DecisionKey>, StoreError> {
    let (from, to) = range_of(run);
    Ok(read
        .range::<DecisionRow>(&from, &to)?
        .into_iter()
        .map(|r| DecisionKey { run, n: r.n })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_the_order_decisions_were_made_and_stay_within_their_run() {
        let run = RunId::new();
        let keys: Vec<String> = [0u64, 9, 10, 99, 100, 12_345]
            .iter()
            .map(|&n| DecisionKey { run, n }.to_string())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, keys);
        let (from, to) = range_of(run);
        assert!(keys.iter().all(|k| *k >= from && *k < to));
        let other = RunId::new();
        let theirs = DecisionKey { run: other, n: 0 }.to_string();
        assert!(!(theirs >= from && theirs < to));
    }
}
