//! The UI protocol's part for projects: a git checkout with its main branch and host, whose
//! cards' runs each work in a worktree of their own.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::board::SharedBudgetView;
use bosun_shared::projects::Host;
use bosun_shared::usage::CapEdit;
use bosun_shared::{ProjectId, Timestamp};

/// A new project.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AddProjectParams {
    pub name: String,
    /// The repository's folder: a git checkout (its top folder is taken).
    pub folder: PathBuf,
    /// Its main branch; when absent, what `origin/HEAD` says, else the checkout's branch.
    #[serde(default)]
    pub main_branch: Option<String>,
    /// GitHub `owner/name`, when the `origin` remote does not say it.
    #[serde(default)]
    pub github: Option<String>,
    /// Whether its cards are tested (QA) before review; on when absent.
    #[serde(default)]
    pub testing: Option<bool>,
}

/// Changes to a project; what is absent stays. The switch "the lead may merge" is not here: only
/// [`ProjectSet`] sets it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EditProjectParams {
    pub project: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub folder: Option<PathBuf>,
    #[serde(default)]
    pub main_branch: Option<String>,
    /// GitHub `owner/name`; the empty string reads the host from the `origin` remote again.
    #[serde(default)]
    pub github: Option<String>,
    /// What the runs of its cards created on one day (UTC) may cost together, in millionths
    /// of a dollar, or off; refused unless a positive amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget_micro_usd: Option<CapEdit>,
    /// The same in tokens (every kind), or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget_tokens: Option<CapEdit>,
    /// The same in tool calls bosun allowed, or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget_calls: Option<CapEdit>,
}

/// The person's switches of a project, as `key=value`: `testing=on|off`,
/// `lead-may-merge=on|off`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectSet {
    pub project: String,
    pub settings: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectShow {
    pub project: String,
}

/// Removes a project that no card belongs to any more.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProjectRemove {
    pub project: String,
}

/// Every project.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProjectList;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectView {
    pub id: ProjectId,
    pub name: String,
    pub folder: PathBuf,
    pub main_branch: String,
    pub host: Host,
    pub testing: bool,
    /// Whether the lead may merge its cards' pull requests: off unless the person set it.
    pub lead_may_merge: bool,
    /// How many cards belong to it.
    pub cards: u32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Its daily budget, when it has one, as it stands today (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget: Option<SharedBudgetView>,
}
