//! How bosun's answers are written for the lead's model. The words are the UI's views as JSON,
//! which bosund makes (the lead never names the wire): bosund hands the lead a [`Shows`].

use bosun_agents::registry::AgentDetail;
use bosun_board::record::{ColumnRecord, NoteRecord};
use bosun_board::{BoardNow, Card, Project};

/// One of bosun's answers the lead's model reads.
#[derive(Clone, Copy)]
pub enum Answer<'a> {
    Agent(&'a AgentDetail),
    Board(&'a BoardNow),
    Column(&'a ColumnRecord),
    Card(&'a Card),
    Notes(&'a [NoteRecord]),
    Note(&'a NoteRecord),
    Project(&'a Project),
    Projects(&'a [Project]),
}

/// Writes answers for the lead's model, as JSON the model has always read.
pub trait Shows: Send + Sync {
    /// The answer tagged `answer` with what it is about (`board`, `card`, `notes`, ...).
    fn tagged(&self, answer: Answer<'_>) -> String;
    /// The answer alone, untagged.
    fn plain(&self, answer: Answer<'_>) -> String;
}
