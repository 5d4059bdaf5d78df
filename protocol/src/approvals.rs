//! Run approvals: a run's tool call that waits for the person, and what bosun decided about
//! each call of a run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_shared::{ApprovalId, CardId, RunId, Timestamp};

/// A tool call of a run that waited, or waits, for the person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    pub id: ApprovalId,
    pub short_id: String,
    pub run: RunId,
    pub agent: Option<String>,
    pub card: Option<CardId>,
    /// The tool as the CLI names it (`Bash`, `mcp__github__create_issue`, `exec_command`).
    pub tool: String,
    /// The tool's class: read-only, reversible write, irreversible write, execute, egress,
    /// unknown.
    pub class: String,
    /// Why it asks: the rule of the policy that sent it to the person.
    pub why: String,
    /// What it would do, in a few plain lines (the command and folder, the file and its
    /// change, the server and arguments with secrets hidden, the address).
    pub preview: String,
    /// Its arguments, with values that look secret hidden.
    pub input: Value,
    pub asked_at: Timestamp,
    /// When it is denied if nobody decides.
    pub deadline: Timestamp,
    /// Whether a person started the run (or its agent waits for the person).
    pub attended: bool,
    /// `waiting`, `allowed`, `denied`, `expired` or `ended` (the run ended before a decision).
    pub state: String,
    /// Who or what decided: `the person`, `the deadline`, `the run's end`, `the block`.
    pub decided_by: Option<String>,
    pub decided_at: Option<Timestamp>,
    /// What the model was told with a denial.
    pub message: Option<String>,
    /// When the decision reached the CLI.
    pub delivered_at: Option<Timestamp>,
    /// A server's form the person filled in: their answer. (Not `answer`: the wire's replies
    /// are tagged with that name.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_answer: Option<Value>,
}

/// One decision on a tool call of a run, as `bosun show RUN` lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionView {
    pub tool: String,
    /// What it would do, in one line.
    pub summary: String,
    /// `allowed` or `denied`.
    pub decision: String,
    /// The policy's rule, or the person, the deadline, the run's end.
    pub by: String,
    /// The approval it waited as, when it waited for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub at: Timestamp,
}

/// The approvals that wait (with `all`, the decided ones too), of one run or of all.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Approvals {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// The person decides an approval (found by the start of its id).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Decide {
    pub approval: String,
    pub allow: bool,
    /// With `allow`: the tool is always allowed for this agent from now on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always: bool,
    /// With a denial: the tool is blocked for this agent from now on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block: bool,
    /// With a denial: what the model is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// With `allow`, for a server's form (class `elicitation`): the person's answer, a JSON
    /// object of the form's fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
}

/// Allows every waiting approval of a card's runs, in the order they were asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApproveCard {
    pub card: String,
}
