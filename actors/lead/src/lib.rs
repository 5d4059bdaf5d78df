//! The lead: chats, bosun's own MCP server, and the pending actions that wait for the person.

pub mod answers;
pub mod chats;
mod error;
pub use error::{ChatsError, ToolError, UnknownTool};
pub mod record;
pub mod server;
pub mod tools;
