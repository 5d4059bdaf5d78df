//! Every table of the store, each owned by its area's record (and the store's own `meta`, which
//! also holds the board's settings): bosund, the one crate that knows every area, names them all
//! to `Store::open`. Its tests pin the on-disk layout of every area byte for byte.

use bosun_store::Record;

/// Every table of the store; `Store::open` creates them all.
pub const TABLES: &[&str] = &[
    bosun_runs::record::RunRecord::TABLE,
    bosun_runs::decisions::DecisionRow::TABLE,
    bosun_runs::sealed::SealedPlan::TABLE,
    bosun_runs::spend::UsageRow::TABLE,
    bosun_runs::spend::BudgetGrant::TABLE,
    bosun_mcp::record::ServerRecord::TABLE,
    bosun_agents::record::AgentRecord::TABLE,
    bosun_auth::record::SignInRecord::TABLE,
    bosun_auth::registrations::RegistrationRecord::TABLE,
    bosun_board::record::ColumnRecord::TABLE,
    bosun_board::record::CardRecord::TABLE,
    bosun_board::record::NoteRecord::TABLE,
    bosun_board::record::ProjectRecord::TABLE,
    bosun_lead::record::ChatRecord::TABLE,
    bosun_lead::record::MessageRecord::TABLE,
    bosun_lead::record::PendingRecord::TABLE,
    bosun_approvals::record::ApprovalRecord::TABLE,
    bosun_approvals::record::WaitingApproval::TABLE,
];

#[cfg(test)]
mod tests;
