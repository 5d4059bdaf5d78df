//! A server as stored in redb (`servers[server id]`): how to reach it, the *names* of its
//! environment and header lines (their values are in the keychain), and its last listing.
//! An address's query is a secret too: the keychain keeps it (see [`super::address`]).

use bosun_shared::gateway::Rules;
use bosun_shared::mcp::Hints;
use bosun_shared::mcp::{ServerKind, SignInBy};
use bosun_shared::{ServerId, Timestamp};
use serde::{Deserialize, Serialize};
use url::Url;

use super::RegistryError;
use super::address;
use super::browser::BrowserSettings;
use super::redact::{Redact, Redactor};
use bosun_auth::signin;
use bosun_kit::keychain::Keychain;
use bosun_store::{Record, Store, StoreError};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub id: ServerId,
    pub name: String,
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// The address, without its query when `query_in_keychain` is set. (A record an older bosun
    /// wrote may still hold a query here, until it is moved to the keychain.)
    pub url: Option<String>,
    /// The address's query is in the keychain under `mcp/<id>/url-query`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query_in_keychain: bool,
    /// Plain `http://` may reach another machine (the person said `--allow-http`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_http: bool,
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
    /// The HTTPS address of bosun's client metadata document the person hosts: the client id
    /// where the authorization server takes such documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// What bosun's gateway holds the server to in every run (trust, tool lists, deadline,
    /// result size).
    #[serde(default, skip_serializing_if = "Rules::is_default")]
    pub rules: Rules,
    /// The tools as the person approved them: a run gets only these, as they are here (see
    /// `crate::ledger`). `None` until the first listing, which approves what it finds; in a
    /// record an older bosun kept, its last listing stands for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_tools: Option<Vec<StoredTool>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredListing {
    pub at: Timestamp,
    pub tools: Vec<StoredTool>,
    pub pages: usize,
    pub truncated: Option<String>,
    /// The tools the server listed whose definitions bosun cannot use, with what is wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<StoredMalformedTool>,
    /// The capabilities the server advertised, by the names it sent (absent from a listing an
    /// older bosun kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredTool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub params: Vec<StoredParam>,
    pub hints: Hints,
    /// Its `inputSchema` as the server sent it (absent from a listing an older bosun kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
}

/// A listed tool whose definition is malformed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMalformedTool {
    pub name: Option<String>,
    pub problem: String,
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

/// The MCP registry's reads of the store.
pub trait ServerReads {
    /// Every MCP server, in name order.
    fn servers(&self) -> Result<Vec<ServerRecord>, StoreError>;

    /// The server with this name, or whose id is this (or starts with it, when only one does).
    fn find_server(&self, name_or_id: &str) -> Result<Option<ServerRecord>, StoreError>;
}

impl ServerReads for Store {
    fn servers(&self) -> Result<Vec<ServerRecord>, StoreError> {
        let mut out = self.all::<ServerRecord>()?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn find_server(&self, name_or_id: &str) -> Result<Option<ServerRecord>, StoreError> {
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

/// What a sign-in to the server needs to know of it: its address without the query, which a
/// resource indicator should not have (RFC 8707) and which stays a secret.
impl From<&ServerRecord> for signin::Server {
    fn from(rec: &ServerRecord) -> Self {
        Self {
            id: rec.id,
            name: rec.name.clone(),
            kind: rec.kind,
            url: rec.url.as_deref().map(address::base_of),
            sign_in_by: rec.sign_in_by,
            client_id: rec.client_id.clone(),
            callback_port: rec.callback_port,
            client_metadata_url: rec.client_metadata_url.clone(),
        }
    }
}

impl ServerRecord {
    /// Its address as shown: the query hidden, whether the keychain or (an older record) the
    /// store keeps it.
    pub fn shown_url(&self) -> Option<String> {
        let url = self.url.as_deref()?;
        let shown = address::shown(url);
        Some(
            if self.query_in_keychain && !shown.ends_with(address::HIDDEN_QUERY) {
                format!("{shown}{}", address::HIDDEN_QUERY)
            } else {
                shown
            },
        )
    }

    /// Why the last look at it failed, as shown: an older record may still hold its whole
    /// address, and errors that name it.
    pub fn shown_error(&self) -> Option<String> {
        self.last_error
            .clone()
            .redact(&Redactor::new(&[], &[], self.url.as_deref()))
    }

    /// The tools the person approved: as they approved them, or (a record an older bosun
    /// kept) its last listing; `None` when it was never listed.
    pub fn approved(&self) -> Option<&[StoredTool]> {
        self.approved_tools
            .as_deref()
            .or_else(|| self.listing.as_ref().map(|l| l.tools.as_slice()))
    }

    /// Keeps a new listing. The first listing of a server approves what it found (the person
    /// looked at it); after that, a tool that is new or changed waits for `bosun mcp approve`.
    pub fn take_listing(&mut self, listing: StoredListing) {
        if self.approved_tools.is_none() {
            let seen = self.listing.as_ref().unwrap_or(&listing);
            self.approved_tools = Some(seen.tools.clone());
        }
        self.listing = Some(listing);
    }

    /// Forgets the listing and what was approved of it: the server is another program now.
    pub fn forget_listing(&mut self) {
        self.listing = None;
        self.approved_tools = None;
    }
}

/// The address bosun connects to, with its query read from the keychain for this one use, or
/// why it cannot be used. Blocks (the keychain): call it from a blocking thread.
pub fn connect_url(
    keychain: &Keychain,
    rec: &ServerRecord,
) -> Result<Option<String>, RegistryError> {
    let Some(url) = &rec.url else {
        return Ok(None);
    };
    if let Ok(parsed) = Url::parse(url)
        && let Some(host) = address::plain_http_elsewhere(&parsed)
        && !rec.allow_http
    {
        return Err(RegistryError::conflict(format!(
            "`{}` is reached by plain http:// at {host}, which is not this machine, and plain http is not allowed for it; give its https:// address with `bosun mcp edit {} --url URL`, or, on a network you trust, allow it with `bosun mcp edit {} --allow-http`",
            rec.name, rec.name, rec.name
        )));
    }
    if !rec.query_in_keychain {
        // No query, or one an older bosun kept in the store and not moved yet.
        return Ok(Some(url.clone()));
    }
    match keychain.get(&address::query_key(rec.id))? {
        Some(query) => Ok(Some(format!("{url}?{query}"))),
        None => Err(RegistryError::conflict(format!(
            "the query of `{}`'s address is missing from the keychain; give the whole address again with `bosun mcp edit {} --url URL`",
            rec.name, rec.name
        ))),
    }
}

/// Takes the query out of a record that an older bosun kept with its whole address in the store
/// (and out of what it kept of the server's words: its last error, its listing); the record
/// then says the keychain has it. Returns the query, for the keychain.
pub fn take_stored_query(rec: &mut ServerRecord) -> Option<String> {
    if rec.query_in_keychain || rec.kind == ServerKind::Stdio {
        return None;
    }
    let whole = rec.url.clone()?;
    let mut url = Url::parse(&whole).ok()?;
    let query = url.query().filter(|q| !q.is_empty())?.to_string();
    url.set_query(None);
    let redactor = Redactor::new(&[], &[], Some(&whole));
    rec.last_error = rec.last_error.take().redact(&redactor);
    rec.listing = rec.listing.take().redact(&redactor);
    rec.url = Some(url.to_string());
    rec.query_in_keychain = true;
    Some(query)
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
            LineKind::Env => bosun_kit::keychain::env_key(server, name),
            LineKind::Header => bosun_kit::keychain::header_key(server, name),
        }
    }
}

/// The name of every MCP server, by id: what sign-in needs of the registry
/// (`bosun_auth::ServerNames`).
pub fn server_names(store: &Store) -> Result<Vec<(ServerId, String)>, StoreError> {
    Ok(store
        .all::<ServerRecord>()?
        .into_iter()
        .map(|s| (s.id, s.name))
        .collect())
}

impl Redact for StoredListing {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            tools: self.tools.redact(r),
            truncated: self.truncated.redact(r),
            malformed: self.malformed.redact(r),
            capabilities: self.capabilities.redact(r),
            ..self
        }
    }
}

impl Redact for StoredTool {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            name: self.name.redact(r),
            title: self.title.redact(r),
            description: self.description.redact(r),
            params: self.params.redact(r),
            hints: self.hints,
            input_schema: self.input_schema.redact(r),
        }
    }
}

impl Redact for StoredMalformedTool {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            name: self.name.redact(r),
            problem: self.problem.redact(r),
        }
    }
}

impl Redact for StoredParam {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            name: self.name.redact(r),
            r#type: self.r#type.redact(r),
            required: self.required,
            description: self.description.redact(r),
        }
    }
}
