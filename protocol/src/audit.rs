//! The audit log: who changed what agents may do, and who answered what, kept by bosund in
//! the state directory with each entry chained to the one before (`bosun audit`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_shared::Timestamp;

/// The entries of the last `since_ms` (every one kept when absent), oldest first; with
/// `verify`, the whole chain is checked too. Answered with an [`AuditView`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuditList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditView {
    pub entries: Vec<AuditEntry>,
    /// How the chain stands, when it was asked to be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<AuditCheck>,
}

/// One change or answer, as the log holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Its number in the log, from 1, never reused.
    pub n: u64,
    pub at: Timestamp,
    /// Who: `cli` (this machine's command line), `web` (the local web UI), `lead`, or
    /// `bosund` (its own deadline or retention).
    pub who: String,
    /// What, in a line (`agent set coder`, `allowed approval 01ab… of run 01cd…: Bash`).
    pub what: String,
    /// What it was before and after, as bosun shows it (never a secret value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// The hash of the entry before (of the last one pruned, for the first kept).
    pub prev: String,
    /// The SHA-256 of this entry's line up to this field, and `prev` with it.
    pub hash: String,
}

/// The chain of the log, checked from its first entry kept to its last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AuditCheck {
    /// Every entry is as it was written, in order, none missing.
    Intact { entries: u64 },
    /// Entry `line` of the file (from 1) is not as it was written, or one is missing there.
    Broken { line: u64, why: String },
}
