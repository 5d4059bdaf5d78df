//! What the runs area tells as it happens, in its own words: a run changed (its record, saved
//! first), or a tool call of a run started waiting for the person or was decided. bosund
//! hands the area a [`Tell`](bosun_kit::tell::Tell) of these and turns each into what every
//! UI reads.

use bosun_approvals::record::ApprovalRecord;

use crate::record::RunSnapshot;

/// Something that happened to a run, already saved.
#[derive(Clone, Debug)]
pub enum RunsEvent {
    /// A run changed: as it stands now.
    Run(Box<RunSnapshot>),
    /// A run's tool call (or its MCP server's question) started waiting for the person, or was
    /// decided: its record says which.
    Approval(Box<ApprovalRecord>),
}
