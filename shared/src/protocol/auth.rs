//! The UI protocol's requests about signing in to an MCP server reached by address: start a
//! sign-in, wait for it to end, sign out. (A server's sign-in as shown is
//! [`super::mcp::SignInView`].)

use serde::{Deserialize, Serialize};

use super::call::calls;
use super::mcp::ServerView;

/// Starts a sign-in: the answer is the page for the person to open.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignIn {
    pub server: String,
}

/// Waits for a started sign-in to end (10 minutes at most).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignInFinish {
    pub attempt: u64,
}

/// Revokes (where the server offers that) and forgets a server's sign-in.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignOut {
    pub server: String,
}

calls! {
    McpSignIn => McpSignIn: SignInStarted;
    McpSignInFinish => McpSignInFinish: ServerView;
    McpSignOut => McpSignOut: ServerView;
}

/// A started sign-in: open `url` in the person's browser, then ask [`McpSignInFinish`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SignInStarted {
    pub attempt: u64,
    pub url: String,
    pub wait_secs: u64,
}
