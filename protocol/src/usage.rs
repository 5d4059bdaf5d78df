//! What runs used, summed: `bosun usage`, and the web UI's usage page.

use serde::{Deserialize, Serialize};

use bosun_shared::Timestamp;
use bosun_shared::usage::Tokens;

/// What the runs of coding CLIs created in the last `since_ms` (every run when absent) used,
/// summed by `by`. Answered with a [`UsageView`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UsageReport {
    pub by: UsageBy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
}

/// What usage is summed by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageBy {
    #[default]
    Agent,
    Card,
    Project,
    Model,
    /// The day (UTC) each run was created.
    Day,
}

impl UsageBy {
    pub const ALL: [UsageBy; 5] = [
        UsageBy::Agent,
        UsageBy::Card,
        UsageBy::Project,
        UsageBy::Model,
        UsageBy::Day,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UsageBy::Agent => "agent",
            UsageBy::Card => "card",
            UsageBy::Project => "project",
            UsageBy::Model => "model",
            UsageBy::Day => "day",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageView {
    pub by: UsageBy,
    /// The runs counted were created from then on (every run when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    /// One row per agent, card, project, model or day: the costliest first (days in order).
    pub rows: Vec<UsageRow>,
    /// Every run counted.
    pub total: UsageRow,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRow {
    /// The agent's, card's (its short id and title), project's or model's name, or the day
    /// (`2026-12-03`); `-` for runs of no card or project.
    pub key: String,
    pub runs: u64,
    #[serde(flatten)]
    pub tokens: Tokens,
    /// What they cost, as far as it is known.
    pub micro_usd: u64,
    /// How many of the runs have no known cost (no figure from the CLI, no price for a model),
    /// so that `micro_usd` is less than they cost.
    pub unpriced: u64,
    pub tool_calls: u64,
}
