//! The UI protocol's part for MCP servers: the registry, List tools, inspect, call and import.
//!
//! A secret value (an environment or header line's value) travels only in a request, in a
//! [`SecretLine`], from the person's tool to the daemon, which puts it in the keychain. No
//! answer ever carries one back: a saved line is shown by its name and "saved".

use std::path::PathBuf;

use std::collections::BTreeSet;

use bosun_shared::gateway::{AskPolicy, Capability, Rules, ToolGlob};
use serde::{Deserialize, Serialize};

use bosun_shared::mcp::{Assessment, Hints};
pub use bosun_shared::mcp::{SecretLine, SecretValue, ServerKind, SignInBy, ToolChange};
use bosun_shared::{ServerId, Timestamp};

/// A new server.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AddServerParams {
    pub name: String,
    pub kind: ServerKind,
    /// Stdio: the program.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Http or Sse: the address. Its query is kept as a secret, and never shown again.
    pub url: Option<String>,
    /// Plain `http://` may reach another machine (without it, only this one).
    #[serde(default)]
    pub allow_http: bool,
    pub env: Vec<SecretLine>,
    pub headers: Vec<SecretLine>,
    /// A client id from the service, for a server that takes no registration.
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<SecretValue>,
    /// The loopback port for the sign-in's answer (a client id registered with a fixed one).
    #[serde(default)]
    pub callback_port: Option<u16>,
    #[serde(default)]
    pub sign_in_by: Option<SignInBy>,
    /// The HTTPS address of bosun's client metadata document that the person hosts: bosun's
    /// client id wherever the authorization server takes such documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
}

/// Changes to a server; what is absent stays as it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EditServerParams {
    pub server: String,
    pub command: Option<String>,
    /// Replaces the arguments when given.
    pub args: Option<Vec<String>>,
    /// A new address; its query is kept as a secret, and never shown again.
    pub url: Option<String>,
    /// Whether plain `http://` may reach another machine.
    #[serde(default)]
    pub allow_http: Option<bool>,
    pub kind: Option<ServerKind>,
    /// Lines to add or whose value to replace.
    pub set_env: Vec<SecretLine>,
    pub remove_env: Vec<String>,
    pub set_headers: Vec<SecretLine>,
    pub remove_headers: Vec<String>,
    /// The built-in browser only: the exact version of chrome-devtools-mcp.
    #[serde(default)]
    pub browser_version: Option<String>,
    /// The built-in browser only: the browser program (`Some("")` goes back to finding one).
    #[serde(default)]
    pub browser_program: Option<String>,
    /// `Some("")` removes it (and its secret).
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<SecretValue>,
    /// `Some(0)` goes back to any free port.
    #[serde(default)]
    pub callback_port: Option<u16>,
    #[serde(default)]
    pub sign_in_by: Option<SignInBy>,
    /// `Some("")` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// Changes to what bosun's gateway holds the server to.
    #[serde(default, skip_serializing_if = "GatewayEdit::is_empty")]
    pub gateway: GatewayEdit,
}

/// Changes to a server's gateway rules; what is `None` stays as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GatewayEdit {
    pub trusted: Option<bool>,
    /// Replaces the allow list (empty: every tool).
    pub allow_tools: Option<Vec<ToolGlob>>,
    /// Replaces the deny list.
    pub deny_tools: Option<Vec<ToolGlob>>,
    /// Replace the allow and deny lists of resources (by URI) and prompts (by name); empty:
    /// cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_resources: Option<Vec<ToolGlob>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_resources: Option<Vec<ToolGlob>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_prompts: Option<Vec<ToolGlob>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_prompts: Option<Vec<ToolGlob>>,
    pub deadline_ms: Option<u64>,
    pub max_result_chars: Option<u64>,
    /// Replaces the capabilities runs get.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<BTreeSet<Capability>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<AskPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<AskPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_max_tokens: Option<u64>,
    /// Replaces the hosts the server may reach from a fenced run (`host[:port]`; empty:
    /// none beyond what its transport needs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<Vec<String>>,
}

impl GatewayEdit {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// One environment or header line of a server, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineView {
    pub name: String,
    /// Whether its value is in the keychain ("saved") or missing.
    pub saved: bool,
}

/// A server as the UI shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    pub id: ServerId,
    pub name: String,
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// The address, its query (a secret) shown as `?…`.
    pub url: Option<String>,
    /// Plain `http://` may reach another machine.
    #[serde(default)]
    pub allow_http: bool,
    pub env: Vec<LineView>,
    pub headers: Vec<LineView>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When its tools were last listed, and how many there were.
    pub listed_at: Option<Timestamp>,
    pub tool_count: Option<usize>,
    /// Set when the last look at the server failed, in plain words.
    pub last_error: Option<String>,
    /// The built-in browser (`chrome-devtools`): only its version and program can change.
    #[serde(default)]
    pub builtin: bool,
    /// For the built-in browser: what it needs, and what was found.
    #[serde(default)]
    pub browser: Option<BrowserView>,
    #[serde(default)]
    pub sign_in_by: SignInBy,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub callback_port: Option<u16>,
    /// For a server reached by address: its sign-in.
    #[serde(default)]
    pub sign_in: Option<SignInView>,
    /// The address of bosun's client metadata document, used as its client id where the
    /// authorization server takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// What bosun's gateway holds it to in every run.
    #[serde(default)]
    pub rules: Rules,
    /// What the server advertised at its last listing that runs do not get until the person
    /// approves it (`rules.capabilities` are the approved ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_capabilities: Vec<Capability>,
    /// Tools of its last listing that runs do not get until the person approves them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tools: Vec<PendingToolView>,
}

/// A tool runs do not get until the person approves it as it is now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingToolView {
    pub name: String,
    pub change: ToolChange,
}

/// Approves tools of a server's last listing as they are, and capabilities it advertises: runs
/// get them from the next run on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct McpApprove {
    pub server: String,
    /// Tools by name, as the last listing has them.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Every tool of the last listing.
    #[serde(default)]
    pub all_tools: bool,
    #[serde(default)]
    pub capabilities: Vec<Capability>,
}

/// A server's sign-in as the UI shows it (never a token).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInView {
    /// `signed in`, `needs sign-in`, `not signed in`, or `Claude Code signs in`.
    pub state: String,
    /// Why the person must sign in (again), when they must.
    pub why: Option<String>,
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    /// Whether bosun registered the client itself.
    pub registered: bool,
    pub scope: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub signed_in_at: Option<Timestamp>,
    pub refreshed_at: Option<Timestamp>,
    /// A wider scope the server asked for, for the next sign-in.
    pub wanted_scope: Option<String>,
    /// For a machine's sign-in (OAuth client credentials): how the client proves itself,
    /// `client_secret_basic` or `private_key_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<String>,
    /// Whether the sign-in's tokens are bound to a key bosun keeps (DPoP, RFC 9449), so that
    /// a stolen token alone is of no use.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop: bool,
}

/// The built-in browser's settings and what it needs on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserView {
    /// The pinned version of chrome-devtools-mcp.
    pub version: String,
    /// The browser program the person set.
    pub program_set: Option<PathBuf>,
    /// The browser program a run would use.
    pub program_found: Option<PathBuf>,
    /// Node's version, when found.
    pub node: Option<String>,
    /// What is missing, and what to install, in plain words.
    pub missing: Vec<String>,
}

/// One parameter of a tool, in the order the server lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamView {
    pub name: String,
    /// The JSON Schema type, when the server says (`string`, `integer`, `array`, …).
    pub r#type: Option<String>,
    pub required: bool,
    pub description: Option<String>,
}

/// One tool of a server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    /// `mcp__<server>__<tool>`.
    pub full_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub params: Vec<ParamView>,
    pub hints: Hints,
    pub assessment: Assessment,
    /// The tool's `inputSchema` exactly as the server sent it (JSON Schema 2020-12, `$ref` and
    /// `$defs` included; nothing dereferenced), absent from a listing an older bosund kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// Set when runs do not get this tool until the person approves it as it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<ToolChange>,
}

/// A tool the server listed whose definition bosun cannot use: shown with what is wrong, and
/// never called. The server's other tools are listed and callable all the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MalformedToolView {
    /// Its name, when it has one that is a string.
    pub name: Option<String>,
    /// What is wrong with it, in plain words.
    pub problem: String,
}

/// A server's tools as listed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolListing {
    pub server: String,
    pub listed_at: Timestamp,
    pub tools: Vec<ToolView>,
    /// How many pages `tools/list` took.
    pub pages: usize,
    /// Set when listing stopped at a bound (a server that never stops paging).
    pub truncated: Option<String>,
    /// The tools whose definitions are malformed, with what is wrong with each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<MalformedToolView>,
}

/// What `bosun mcp inspect` shows: the "test connection".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InspectView {
    pub server: String,
    pub protocol_version: String,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    /// The capabilities the server advertised, as it sent them.
    pub capabilities: serde_json::Value,
    pub tools: usize,
    pub prompts: Option<usize>,
    pub resources: Option<usize>,
    pub instructions: Option<String>,
    /// Milliseconds: starting or reaching the server and `initialize`, then each listing.
    pub connect_ms: u64,
    pub list_ms: u64,
    pub total_ms: u64,
    /// Which MCP revision bosun spoke with the server, and why (absent from an older bosund).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<RevisionView>,
    /// The tools whose definitions are malformed (not counted in `tools`), with what is wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<MalformedToolView>,
    /// The capability ledger: what runs get (approved by the person), and what the server
    /// advertised that they do not get until the person approves it.
    #[serde(default)]
    pub approved_capabilities: Vec<Capability>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_capabilities: Vec<Capability>,
    /// Advertised capabilities bosun's gateway cannot relay (such as `experimental`): never
    /// in a run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never_relayed: Vec<String>,
    /// Tools the server lists now that runs do not get until the person approves them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tools: Vec<PendingToolView>,
}

/// The MCP revision a look spoke: the stateless 2026-07-28 with a server that answers it, else
/// the 2025-11-25 `initialize` handshake.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionView {
    /// Such as `2026-07-28`.
    pub version: String,
    /// Spoken without a session (no `initialize` handshake).
    pub stateless: bool,
    /// Why, in plain words: what the server answered to `server/discover`.
    pub why: String,
}

/// The result of `bosun mcp call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallView {
    pub is_error: bool,
    /// The result's content, as the server sent it.
    pub content: serde_json::Value,
    pub structured: Option<serde_json::Value>,
}

/// Where importable servers are looked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportScan {
    /// Config files to read beyond the usual places (Claude Code `.claude.json` of further
    /// accounts, a project's `.mcp.json`, a Codex `config.toml`, a Gemini `settings.json`).
    pub extra_files: Vec<PathBuf>,
    /// The person's own `HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and `GEMINI_CLI_HOME`, which
    /// say where the usual places are (the daemon's may differ).
    pub env: Vec<(String, String)>,
}

/// A server found in a coding CLI's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportCandidateView {
    /// "Claude Code", "Codex", "Gemini CLI".
    pub source: String,
    /// The file it is in.
    pub account: PathBuf,
    /// "user", or "local (<folder>)" / "project (<folder>)".
    pub scope: String,
    pub name: String,
    pub kind: ServerKind,
    pub command: Option<String>,
    pub args: Vec<String>,
    /// The address, its query shown as `?…`.
    pub url: Option<String>,
    /// Names only: values are never shown.
    pub env_names: Vec<String>,
    pub header_names: Vec<String>,
    pub status: ImportStatus,
}

/// Whether a candidate can be imported as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    /// Not in bosun's list yet.
    New,
    /// A server with the same name and the same command or address is already in the list.
    AlreadyInList,
    /// Another server has this name: import it under another (`--as`).
    NameTaken,
    /// The name breaks the rules or is reserved: import it under another (`--as`).
    BadName,
}

/// Which candidates to import.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportParams {
    pub scan: ImportScan,
    /// Every candidate that is new.
    pub all: bool,
    /// Candidates by name, each with the name to give it in bosun (the same when absent).
    pub picks: Vec<ImportPick>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportPick {
    pub name: String,
    pub rename_to: Option<String>,
    /// To choose between servers of the same name in several files or scopes.
    pub account: Option<PathBuf>,
}

/// Renames a server (its tools' names in agents change with it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpRename {
    pub server: String,
    pub new_name: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpRemove {
    pub server: String,
}

/// Every server.
#[derive(Clone, Copy, Debug, Default)]
pub struct McpList;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpShow {
    pub server: String,
}

/// Start (or call) the server and list its tools; the listing is kept. With `cached`, the last
/// listing kept, without starting anything.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpTools {
    pub server: String,
    pub cached: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpInspect {
    pub server: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpCall {
    pub server: String,
    pub tool: String,
    pub args: serde_json::Value,
}

/// What an import would find; `problems` are files that could not be read, in words.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ImportCandidates {
    pub candidates: Vec<ImportCandidateView>,
    pub problems: Vec<String>,
}

/// The servers an import added.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Imported {
    pub servers: Vec<ServerView>,
}
