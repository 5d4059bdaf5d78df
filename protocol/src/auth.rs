//! The UI protocol's requests about signing in to an MCP server reached by address: start a
//! sign-in, wait for it to end, sign out. (A server's sign-in as shown is
//! [`super::mcp::SignInView`].)

use serde::{Deserialize, Serialize};

use super::mcp::SecretValue;

/// Starts a sign-in: the answer is the page for the person to open.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignIn {
    pub server: String,
    /// Drop the client bosun registered at the server's authorization server before, and
    /// register a new one (for a server that forgot it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_client: bool,
}

/// Waits for a started sign-in to end (10 minutes at most).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignInFinish {
    pub attempt: u64,
}

/// Cancels a started sign-in that still waits for the person's browser: its loopback address
/// closes, nothing is saved, and its [`McpSignInFinish`] answers that it was cancelled. The
/// answer is the server as it is.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignInCancel {
    pub attempt: u64,
}

/// Revokes (where the server offers that) and forgets a server's sign-in.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignOut {
    pub server: String,
}

/// Signs a server in as a machine (OAuth client credentials): no browser, the answer comes once
/// the token is saved. The client proves itself with `client_secret` (`client_secret_basic`) or
/// `private_key` (a PEM private key, `private_key_jwt`), one of the two; both go to the
/// keychain.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpSignInMachine {
    pub server: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<SecretValue>,
}

/// A started sign-in: open `url` in the person's browser, then ask [`McpSignInFinish`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SignInStarted {
    pub attempt: u64,
    pub url: String,
    pub wait_secs: u64,
    /// The client is the one bosun registered there at an earlier sign-in: a server that forgot
    /// it says so on its page only, and `new_client` is the way out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused_registration: bool,
    /// What bosun could not check before the browser opened (a client metadata document this
    /// machine cannot reach), in words for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}
