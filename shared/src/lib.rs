//! bosun-shared: the domain values several bosun crates use.
//!
//! This crate owns the typed ids, the domain types of a run, MCP's names and hints, prices,
//! durations and sizes as people write them, the state-directory layout and the process-group
//! helpers. It must not hold the wire (that is `bosun-protocol`, which carries these values) nor
//! anything that needs the store. It depends on nothing else of bosun's, and it stays small:
//! `bosun-runner` links it, and a runner must stay a few megabytes.

pub mod agents;
pub mod approvals;
pub mod elicitation;
pub mod gateway;
pub mod hosts;
pub mod ids;
pub mod logfile;
pub mod mcp;
pub mod notice;
pub mod paths;
pub mod placement;
pub mod prices;
pub mod process;
pub mod projects;
pub mod redact;
pub mod run;
pub mod settings;
pub mod size;
pub mod switch;
pub mod text;
pub mod time;
pub mod usage;

pub use ids::{
    ActionId, AgentId, AnswerId, ApprovalId, CardId, ChatId, ColumnId, ProjectId, RunId, RunToken,
    ServerId,
};
pub use time::Timestamp;

/// The environment variable that marks every process a run starts, so that a sweep after a crash
/// can find processes that escaped the run's process group and session.
pub const RUN_MARKER_ENV: &str = "BOSUN_RUN_ID";
