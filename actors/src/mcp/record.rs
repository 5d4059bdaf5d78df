//! A server as stored in redb (`servers[server id]`): how to reach it, the *names* of its
//! environment and header lines (their values are in the keychain), and its last listing.

use bosun_shared::mcp::Hints;
use bosun_shared::protocol::mcp::{LineView, ServerKind, ServerView, SignInBy};
use bosun_shared::{ServerId, Timestamp};
use serde::{Deserialize, Serialize};

use super::browser::BrowserSettings;
use crate::auth::signin;
use crate::store::{Record, Store, StoreError};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub id: ServerId,
    pub name: String,
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    /// Names of environment lines; each value is in the keychain under `mcp/<id>/env/<name>`.
    pub env_names: Vec<String>,
    /// Names of header lines; each value is under `mcp/<id>/header/<name>`.
    pub header_names: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The last successful listing of its tools.
    pub listing: Option<StoredListing>,
    /// Why the last look at it failed, if it did (plain words, no secrets).
    pub last_error: Option<String>,
    /// Set on the built-in browser (`chrome-devtools`) only: its version and program. Its
    /// command line is made from these each time it starts.
    #[serde(default)]
    pub browser: Option<BrowserSettings>,
    /// A client id the person got from the service (for servers that take no registration);
    /// its secret, if any, is in the keychain.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The loopback port the sign-in's answer comes back to (0 or absent: any free one).
    #[serde(default)]
    pub callback_port: Option<u16>,
    #[serde(default)]
    pub sign_in_by: SignInBy,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredListing {
    pub at: Timestamp,
    pub tools: Vec<StoredTool>,
    pub pages: usize,
    pub truncated: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredTool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub params: Vec<StoredParam>,
    pub hints: Hints,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredParam {
    pub name: String,
    pub r#type: Option<String>,
    pub required: bool,
    pub description: Option<String>,
}

impl Record for ServerRecord {
    const TABLE: &'static str = "servers";
    const WHAT: &'static str = "server";
    type Key = ServerId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl Store {
    /// Every MCP server, in name order.
    pub fn servers(&self) -> Result<Vec<ServerRecord>, StoreError> {
        let mut out = self.all::<ServerRecord>()?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The server with this name, or whose id is this (or starts with it, when only one does).
    pub fn find_server(&self, name_or_id: &str) -> Result<Option<ServerRecord>, StoreError> {
        let servers = self.servers()?;
        if let Some(s) = servers.iter().find(|s| s.name == name_or_id) {
            return Ok(Some(s.clone()));
        }
        let lower = name_or_id.to_ascii_lowercase();
        let mut by_id = servers
            .into_iter()
            .filter(|s| s.id.to_string().starts_with(&lower));
        match (by_id.next(), by_id.next()) {
            (Some(s), None) if lower.len() >= 4 => Ok(Some(s)),
            (Some(_), _) | (None, _) => Ok(None),
        }
    }
}

/// What a sign-in to the server needs to know of it.
impl From<&ServerRecord> for signin::Server {
    fn from(rec: &ServerRecord) -> Self {
        Self {
            id: rec.id,
            name: rec.name.clone(),
            kind: rec.kind,
            url: rec.url.clone(),
            sign_in_by: rec.sign_in_by,
            client_id: rec.client_id.clone(),
            callback_port: rec.callback_port,
        }
    }
}

impl ServerRecord {
    /// The server as the UI shows it; `saved` says whether a line's value is in the keychain.
    pub fn view(&self, saved: impl Fn(LineKind, &str) -> bool) -> ServerView {
        ServerView {
            id: self.id,
            name: self.name.clone(),
            kind: self.kind,
            command: self.command.clone(),
            args: self.args.clone(),
            url: self.url.clone(),
            env: self
                .env_names
                .iter()
                .map(|n| LineView {
                    name: n.clone(),
                    saved: saved(LineKind::Env, n),
                })
                .collect(),
            headers: self
                .header_names
                .iter()
                .map(|n| LineView {
                    name: n.clone(),
                    saved: saved(LineKind::Header, n),
                })
                .collect(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            listed_at: self.listing.as_ref().map(|l| l.at),
            tool_count: self.listing.as_ref().map(|l| l.tools.len()),
            last_error: self.last_error.clone(),
            builtin: self.browser.is_some(),
            browser: None,
            sign_in_by: self.sign_in_by,
            client_id: self.client_id.clone(),
            callback_port: self.callback_port,
            sign_in: None,
        }
    }

    /// What the server is reached by, for matching an imported server against this one.
    pub fn target(&self) -> String {
        match self.kind {
            ServerKind::Stdio => std::iter::once(self.command.clone().unwrap_or_default())
                .chain(self.args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
            ServerKind::Http | ServerKind::Sse => self.url.clone().unwrap_or_default(),
        }
    }
}

/// Which kind of line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Env,
    Header,
}

impl LineKind {
    /// The keychain key of this line of `server`.
    pub fn key(self, server: ServerId, name: &str) -> String {
        match self {
            LineKind::Env => crate::keychain::env_key(server, name),
            LineKind::Header => crate::keychain::header_key(server, name),
        }
    }
}
