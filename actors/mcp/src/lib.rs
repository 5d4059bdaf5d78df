//! MCP servers: one registry for all agents, their secrets in the keychain, a look into each
//! server (List tools, inspect, call), and the import of servers the coding CLIs already have.
//!
//! - [`record`]: a server as stored (names of its lines, never their values).
//! - [`address`]: the addresses bosun takes, keeps (the query in the keychain) and shows (`?…`),
//!   and the headers the transport owns.
//! - [`redact`]: the secret values bosun hands a server, replaced in what it says back.
//! - [`registry`]: the Registry actor, the one place servers are added, changed and removed.
//! - [`client`]: talking to a server for a moment, over stdio, Streamable HTTP or [`sse`], in
//!   the revision [`revision`] chose; [`dpop_http`] makes its HTTP requests for a server whose
//!   tokens are DPoP-bound.
//! - [`tools`]: a server's tools as bosun keeps them, with their hints; one malformed tool set
//!   aside with what is wrong, from the `tools/list` results [`tap`] keeps as sent.
//! - [`import`] and [`adopt`]: the servers the coding CLIs already have, read and taken over.

pub mod address;
pub mod adopt;
pub mod browser;
pub mod client;
pub mod dpop_http;
mod error;
pub use browser::BrowserError;
pub use error::{McpError, RegistryError, SignInAsked};
pub mod import;
pub mod ledger;
pub mod look;
pub mod record;
pub mod redact;
pub mod registry;
pub mod revision;
pub mod sse;
pub mod tap;
pub mod tools;
