//! bosun-actors: the actors of `bosund` and the domain logic they own, and the store.
//!
//! - [`store`]: the redb file and its one group-committing writer.
//! - [`runs`]: Runs, the supervisor of one RunActor per live run; log hubs and followers.
//! - [`events`]: the fan-out of run changes to subscribed UIs.
//! - [`mcp`]: the MCP server registry, List tools, inspect, call and import.
//! - [`keychain`]: where secret values live (Secret Service, or a 0600 file for tests).
//! - [`agents`]: agents, their switches, the CLI adapters, and their runs' streams.
//! - [`supervision`]: the restart budget every supervisor uses; [`handle`]: "the current"
//!   actor of a kind, across restarts.

pub mod agents;
pub mod auth;
pub mod board;
pub mod crash;
pub mod events;
pub mod handle;
pub mod keychain;
pub mod lead;
pub mod mcp;
pub mod offload;
pub mod prefix;
pub mod runs;
pub mod store;
pub mod supervision;
