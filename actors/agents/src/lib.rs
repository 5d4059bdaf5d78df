//! Agents: saved setups of a coding CLI (its instructions, permission mode, allowed commands,
//! time cap, folder) with their tool switches, and what turns one into a run.
//!
//! - [`record`]: an agent as stored, and its switches.
//! - [`registry`]: the Agents actor, the one place agents are added, changed and switched.
//! - [`adapter`]: the switches turned into each CLI's own flags and per-run files.
//! - [`launch`]: an agent and a prompt turned into a run: servers resolved, secrets read.
//! - [`secrets`]: where each secret value of a run comes from, to read it again later.
//! - [`stream`]: each CLI's own output stream turned into the run's events.
//! - [`fence`]: where the programs of an agent's run may write, for the runner's Landlock fence.
//! - [`homes`]: the run's own folders for its CLI's state and caches, and the sign-in copied in.
//! - [`catalog`]: each CLI's built-in tools, by group; [`builtin`]: the list shown, and asking
//!   the installed Claude Code for its own.

pub mod adapter;
pub mod builtin;
pub mod catalog;
mod error;
pub mod fence;
pub mod homes;
pub use error::AgentsError;
pub mod launch;
pub mod login;
pub mod record;
pub mod registry;
pub mod secrets;
pub mod stream;
