//! The UI protocol's part for the board: columns (Auto or Manual), cards with their hold and
//! activity, the limit on card runs at once, and memory notes with their versions.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use bosun_shared::usage::{Budget, CapEdit};
use bosun_shared::{AgentId, CardId, ColumnId, RunId, Timestamp};

/// A new column.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AddColumnParams {
    pub name: String,
    /// Auto: its assigned cards are picked up by their agent without being asked.
    pub auto: bool,
    /// Where it goes (0 = first); at the end when absent.
    #[serde(default)]
    pub position: Option<u32>,
}

/// Changes to a column; what is absent stays.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SetColumnParams {
    pub column: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub auto: Option<bool>,
    #[serde(default)]
    pub position: Option<u32>,
}

/// A new card.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AddCardParams {
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub acceptance: String,
    /// The agent that takes it (name or id).
    #[serde(default)]
    pub assignee: Option<String>,
    /// The column (name or id); the first column when absent.
    #[serde(default)]
    pub column: Option<String>,
    /// The project it belongs to (name or id): its runs work in a worktree of the project's
    /// repository. Left out, the card's runs use their agent's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// Changes to a card; what is absent stays.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EditCardParams {
    pub card: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub acceptance: Option<String>,
    /// An agent's name or id; the empty string takes the assignee off.
    #[serde(default)]
    pub assignee: Option<String>,
    /// Move it to this column (name or id).
    #[serde(default)]
    pub column: Option<String>,
    /// Put it on hold (`needs_decision`) with this reason.
    #[serde(default)]
    pub hold: Option<String>,
    #[serde(default)]
    pub clear_hold: bool,
    /// A line for its activity log.
    #[serde(default)]
    pub comment: Option<String>,
    /// The project it belongs to (name or id); the empty string takes it out of its project.
    /// Only before its first run in a project: then it has a worktree there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// What all the card's runs together may cost, in millionths of a dollar, or off; refused
    /// unless a positive amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_micro_usd: Option<CapEdit>,
    /// What all the card's runs together may use in tokens (every kind), or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<CapEdit>,
    /// How many tool calls bosun may allow all the card's runs together, or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_calls: Option<CapEdit>,
}

/// A budget several runs share (a card's, a project's for a day) and how it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedBudgetView {
    pub caps: Budget,
    /// What the person allowed more when it was reached, all told.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub more: Budget,
    /// What the runs it counts spent so far (a cost only where known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_micro_usd: Option<u64>,
    pub spent_tokens: u64,
    /// The tool calls bosun allowed them.
    #[serde(default, skip_serializing_if = "bosun_shared::usage::is_zero")]
    pub spent_calls: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnView {
    pub id: ColumnId,
    pub name: String,
    pub auto: bool,
    pub position: u32,
}

/// Why a card waits: `needs_decision` and the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldView {
    pub kind: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityView {
    pub at: Timestamp,
    pub what: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CardView {
    pub id: CardId,
    pub short_id: String,
    pub title: String,
    pub description: String,
    pub acceptance: String,
    pub assignee: Option<String>,
    pub assignee_id: Option<AgentId>,
    pub column: String,
    pub column_id: ColumnId,
    pub hold: Option<HoldView>,
    /// The latest run of it, and its state (`starting` while it is being started).
    pub run: Option<RunId>,
    pub run_state: Option<String>,
    /// How many runs it has had.
    pub runs: u32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Only in `card_show`: the whole log; listings carry the last line.
    pub activity: Vec<ActivityView>,
    /// The project it belongs to, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its worktree, once its first run in a project made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeView>,
    /// Its latest QA verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qa: Option<QaView>,
    /// Its pull request, once it was found merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedView>,
    /// The budget all its runs share, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<SharedBudgetView>,
}

/// A card's pull request, merged: its number, address and when it was found merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedView {
    pub number: u64,
    pub url: String,
    pub at: Timestamp,
}

/// A QA run's verdict on a card: `qa_pass` or `qa_fail`, the run, and the head commit of the
/// card's worktree it tested.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QaView {
    pub verdict: String,
    pub run: RunId,
    pub head: String,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

/// A card's worktree: where its runs work, and on which branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeView {
    pub path: PathBuf,
    pub branch: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardView {
    pub columns: Vec<ColumnView>,
    pub cards: Vec<CardView>,
    /// The most card runs at once.
    pub limit: u32,
    /// Card runs going now.
    pub running: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteView {
    pub path: String,
    pub text: String,
    /// 1 for a new note, one more with each change; a write based on an older one fails.
    pub version: u64,
    pub updated_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteSummary {
    pub path: String,
    pub version: u64,
    pub bytes: u64,
    pub updated_at: Timestamp,
}

/// The board: its columns, its cards, the limit on card runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Board;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CardShow {
    pub card: String,
}

/// Removes a card that no run of is going, with its worktree (its branch stays). A worktree with
/// changes not committed is removed only with `force`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CardRemove {
    pub card: String,
    #[serde(default)]
    pub force: bool,
}

/// The most card runs going at once (1–64).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BoardLimit {
    pub limit: u32,
}

/// Every note, without its text.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoteList;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NoteShow {
    pub path: String,
}

/// Writes a note. `base_version`: the version the text was based on; the write fails when the
/// note has moved on since (absent: the note must not exist yet, or is overwritten when
/// `force`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NoteWrite {
    pub path: String,
    pub text: String,
    #[serde(default)]
    pub base_version: Option<u64>,
    #[serde(default)]
    pub force: bool,
}
