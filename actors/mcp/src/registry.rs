//! The Registry actor: the one place MCP servers are added, changed, renamed and removed, so two
//! changes never race (two servers with one name, a lost edit). Reads go straight to the store.
//!
//! Every change is checked whole before anything is written, secrets go to the keychain before
//! the record that names them is committed, and a failure part-way puts back what was changed:
//! nothing is ever half-saved.
//!
//! This file holds the actor and the smaller changes (rename, remove, approve, what a look or a
//! run found); [`add_edit`] adds and changes servers, [`checks`] checks their settings,
//! [`reach`] says how to reach one, and [`detail`] what the registry answers with: a server's
//! record and what it finds out beyond it (its lines in the keychain, its sign-in).

mod add_edit;
mod checks;
mod detail;
mod reach;

use std::collections::{BTreeSet, HashSet};
use std::num::NonZeroU16;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_auth::AuthContext;
use bosun_auth::record::{SignInRecord, configured_secret_key};
use bosun_kit::edit::Edit;
use bosun_kit::keychain::Keychain;
use bosun_kit::offload::blocking;
use bosun_shared::gateway::{
    AskPolicy, CallDeadline, Capability, ResultChars, SamplingTokens, ToolGlob,
};
use bosun_shared::hosts::NetHost;
use bosun_shared::mcp::check_server_name;
use bosun_shared::mcp::{SecretLine, SecretValue, ServerKind, SignInBy};
use bosun_shared::{ServerId, Timestamp};
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use self::add_edit::{add, edit};
use self::checks::gateway_rules;
use self::detail::detail_of;
pub use self::detail::{ServerDetail, SignIn, SignInState, sign_in_of};
pub use self::reach::{endpoint, endpoint_unsigned, endpoint_with, secret_lines};
use super::address;
use super::browser::{self, BrowserSettings};
use super::ledger::{self, ToolChoice};
use super::record::{LineKind, ServerReads, ServerRecord, StoredListing};
use super::tools;
use crate::RegistryError;

/// What the Registry works with.
#[derive(Clone)]
pub struct RegistryContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub keychain: Keychain,
    /// Sign-ins: a server's token is added when it is reached.
    pub auth: AuthContext,
}

/// A change to a server: what is `None`, empty or [`Edit::Keep`] stays.
#[derive(Clone, Debug, Default)]
pub struct ServerEdit {
    /// Its name or the start of its id.
    pub server: String,
    pub command: Option<String>,
    /// Replaces the arguments.
    pub args: Option<Vec<String>>,
    /// A new address; its query is kept as a secret, and never shown again.
    pub url: Option<String>,
    /// Whether plain `http://` may reach another machine.
    pub allow_http: Option<bool>,
    pub kind: Option<ServerKind>,
    /// Lines to add or whose value to replace.
    pub set_env: Vec<SecretLine>,
    pub remove_env: Vec<String>,
    pub set_headers: Vec<SecretLine>,
    pub remove_headers: Vec<String>,
    /// The built-in browser only: the exact version of chrome-devtools-mcp.
    pub browser_version: Option<String>,
    /// The built-in browser only: the browser program (cleared: found again at each run).
    pub browser_program: Edit<PathBuf>,
    pub client_id: Edit<String>,
    pub client_secret: Option<SecretValue>,
    /// The loopback port for the sign-in's answer (cleared: any free port).
    pub callback_port: Edit<NonZeroU16>,
    pub sign_in_by: Option<SignInBy>,
    pub client_metadata_url: Edit<String>,
    /// Changes to what bosun's gateway holds the server to.
    pub gateway: GatewayChange,
}

/// Changes to a server's gateway rules, each value in its range (read where the edit arrived);
/// what is `None` stays as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayChange {
    pub trusted: Option<bool>,
    /// Replaces the allow list, or clears it (every tool).
    pub allow_tools: Edit<Vec<ToolGlob>>,
    /// Replaces the deny list, or clears it (no tool denied).
    pub deny_tools: Edit<Vec<ToolGlob>>,
    /// The same of resources (by URI) and of prompts (by name).
    pub allow_resources: Edit<Vec<ToolGlob>>,
    pub deny_resources: Edit<Vec<ToolGlob>>,
    pub allow_prompts: Edit<Vec<ToolGlob>>,
    pub deny_prompts: Edit<Vec<ToolGlob>>,
    pub deadline: Option<CallDeadline>,
    pub max_result_chars: Option<ResultChars>,
    /// Replaces the capabilities runs get (at least one: checked with the server's name).
    pub capabilities: Option<BTreeSet<Capability>>,
    /// Ask or deny (allow is refused, with the server's name).
    pub elicitation: Option<AskPolicy>,
    pub sampling: Option<AskPolicy>,
    pub sampling_max_tokens: Option<SamplingTokens>,
    /// Replaces the hosts the server may reach from a fenced run, or clears them.
    pub net: Edit<Vec<NetHost>>,
}

impl GatewayChange {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A new server, as read where the request arrived.
#[derive(Clone, Debug)]
pub struct NewServer {
    pub name: String,
    pub kind: ServerKind,
    /// Stdio: the program.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Http or Sse: the address. Its query is kept as a secret, and never shown again.
    pub url: Option<String>,
    /// Plain `http://` may reach another machine (without it, only this one).
    pub allow_http: bool,
    pub env: Vec<SecretLine>,
    pub headers: Vec<SecretLine>,
    /// A client id from the service, for a server that takes no registration.
    pub client_id: Option<String>,
    pub client_secret: Option<SecretValue>,
    /// The loopback port for the sign-in's answer (a client id registered with a fixed one).
    pub callback_port: Option<NonZeroU16>,
    pub sign_in_by: SignInBy,
    /// The HTTPS address of bosun's client metadata document that the person hosts.
    pub client_metadata_url: Option<String>,
}

impl NewServer {
    /// A server reached as `kind` says, with nothing else set.
    pub fn reached(name: String, kind: ServerKind) -> Self {
        Self {
            name,
            kind,
            command: None,
            args: Vec::new(),
            url: None,
            allow_http: false,
            env: Vec::new(),
            headers: Vec::new(),
            client_id: None,
            client_secret: None,
            callback_port: None,
            sign_in_by: SignInBy::default(),
            client_metadata_url: None,
        }
    }
}

/// What the person approves of a server: tools of its last listing, and capabilities it
/// advertises.
#[derive(Clone, Debug)]
pub struct Approve {
    /// Its name or id.
    pub server: String,
    pub tools: ToolChoice,
    pub capabilities: Vec<Capability>,
}

pub enum RegistryMsg {
    Add {
        params: NewServer,
        reply: RpcReplyPort<Result<ServerDetail, RegistryError>>,
    },
    /// Approves tools of its last listing and capabilities it advertises.
    Approve {
        params: Approve,
        reply: RpcReplyPort<Result<ServerDetail, RegistryError>>,
    },
    Edit {
        params: Box<ServerEdit>,
        reply: RpcReplyPort<Result<ServerDetail, RegistryError>>,
    },
    Rename {
        server: String,
        new_name: String,
        reply: RpcReplyPort<Result<ServerDetail, RegistryError>>,
    },
    /// Answers with the record removed: its lines' values and its sign-in are gone with it.
    Remove {
        server: String,
        reply: RpcReplyPort<Result<ServerRecord, RegistryError>>,
    },
    /// A run's gateway held these tools of `server` back (their definitions as the server
    /// listed them to the run, secret values redacted): they join its pending list.
    HeldBack {
        server: String,
        tools: Vec<serde_json::Value>,
    },
    /// Records the outcome of a look at a server: its tools, or why it failed.
    SaveLook {
        id: ServerId,
        listing: Option<StoredListing>,
        error: Option<String>,
        reply: RpcReplyPort<()>,
    },
}

pub struct Registry;

impl Actor for Registry {
    type Msg = RegistryMsg;
    type State = RegistryContext;
    type Arguments = RegistryContext;

    async fn pre_start(
        &self,
        _myself: ActorRef<RegistryMsg>,
        ctx: RegistryContext,
    ) -> Result<RegistryContext, ActorProcessingErr> {
        // A query an older bosun kept in the store was moved by `crate::upgrade` before the
        // actors started.
        ensure_builtin(&ctx).await?;
        Ok(ctx)
    }

    async fn handle(
        &self,
        _myself: ActorRef<RegistryMsg>,
        msg: RegistryMsg,
        ctx: &mut RegistryContext,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("mcp"), async move {
            match msg {
                RegistryMsg::Add { params, reply } => {
                    let _ = reply.send(add(ctx, params).await);
                }
                RegistryMsg::Edit { params, reply } => {
                    let _ = reply.send(edit(ctx, *params).await);
                }
                RegistryMsg::Approve { params, reply } => {
                    let _ = reply.send(approve(ctx, params).await);
                }
                RegistryMsg::Rename {
                    server,
                    new_name,
                    reply,
                } => {
                    let _ = reply.send(rename(ctx, &server, &new_name).await);
                }
                RegistryMsg::Remove { server, reply } => {
                    let _ = reply.send(remove(ctx, &server).await);
                }
                RegistryMsg::HeldBack { server, tools } => {
                    if let Err(e) = held_back(ctx, &server, tools).await {
                        warn!(server = %server, error = %e, "could not record the tools a run held back");
                    }
                }
                RegistryMsg::SaveLook {
                    id,
                    listing,
                    error,
                    reply,
                } => {
                    if let Err(e) = save_look(ctx, id, listing, error).await {
                        warn!(server = %id, error = %e, "could not record a look at a server");
                    }
                    let _ = reply.send(());
                }
            }
            Ok(())
        })
        .await
    }
}

/// The server named (by name, or id), or a plain not-found.
pub async fn find(store: &Store, server: &str) -> Result<ServerRecord, RegistryError> {
    let (store, key) = (store.clone(), server.to_string());
    blocking(move || store.find_server(&key))
        .await??
        .ok_or_else(|| {
            RegistryError::not_found(format!(
                "there is no MCP server `{server}`; `bosun mcp list` shows them"
            ))
        })
}

/// A server's last error once the person signed bosun out of it: it needs a sign-in again
/// before a run may have it (until a look says otherwise).
pub const SIGNED_OUT: &str = "needs sign-in: signed out with `bosun mcp sign-out`";

/// Signs bosun out of a server at the person's asking, and remembers that it needs a sign-in.
pub async fn sign_out(ctx: &RegistryContext, server: &str) -> Result<ServerDetail, RegistryError> {
    let rec = find(&ctx.store, server).await?;
    let (store, id) = (ctx.store.clone(), rec.id);
    let had = blocking(move || store.get::<SignInRecord>(&id))
        .await??
        .is_some();
    bosun_auth::sign_out(&ctx.auth, rec.id).await?;
    if had {
        save_look(ctx, rec.id, None, Some(SIGNED_OUT.to_string())).await?;
    }
    show(ctx, &rec.name).await
}

/// Every server's record, in name order.
pub async fn records(store: &Store) -> Result<Vec<ServerRecord>, RegistryError> {
    let store = store.clone();
    Ok(blocking(move || store.servers()).await??)
}

/// Every server, the built-in browser first, then by name.
pub async fn list(ctx: &RegistryContext) -> Result<Vec<ServerDetail>, RegistryError> {
    let mut records = records(&ctx.store).await?;
    records.sort_by(|a, b| (a.browser.is_none(), &a.name).cmp(&(b.browser.is_none(), &b.name)));
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || {
        records
            .iter()
            .map(|r| detail_of(&store, &keychain, r))
            .collect()
    })
    .await?)
}

/// One server.
pub async fn show(ctx: &RegistryContext, server: &str) -> Result<ServerDetail, RegistryError> {
    let rec = find(&ctx.store, server).await?;
    detail(ctx, rec).await
}

/// A record with what the registry finds out beyond it, from a blocking thread.
async fn detail(ctx: &RegistryContext, rec: ServerRecord) -> Result<ServerDetail, RegistryError> {
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || detail_of(&store, &keychain, &rec)).await?)
}

/// The built-in browser is a server like the others (it has a listing and per-tool switches),
/// created with the pinned version the first time bosund starts.
async fn ensure_builtin(ctx: &RegistryContext) -> Result<(), StoreError> {
    let store = ctx.store.clone();
    let found = tokio::task::spawn_blocking(move || store.find_server(browser::NAME))
        .await
        .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    if found.is_some() {
        return Ok(());
    }
    let now = Timestamp::now();
    let settings = BrowserSettings::default();
    let shown = browser::command_line(
        &settings,
        &browser::Program::ServerFinds(PathBuf::new()),
        false,
    );
    let rec = ServerRecord {
        id: ServerId::new(),
        name: browser::NAME.to_string(),
        kind: ServerKind::Stdio,
        command: Some(shown.command),
        args: shown.args,
        url: None,
        query_in_keychain: false,
        allow_http: false,
        env_names: Vec::new(),
        header_names: Vec::new(),
        created_at: now,
        updated_at: now,
        listing: None,
        last_error: None,
        browser: Some(settings),
        client_id: None,
        callback_port: None,
        sign_in_by: SignInBy::Bosun,
        client_metadata_url: None,
        rules: Default::default(),
        approved_tools: None,
    };
    ctx.writer.put(&rec).await?;
    info!(
        server = browser::NAME,
        version = browser::PINNED_VERSION,
        "built-in browser server added"
    );
    Ok(())
}

/// Refused for the built-in browser, which only changes its version and program.
fn builtin_refusal(what: &str) -> RegistryError {
    RegistryError::invalid(format!(
        "{} is built in and cannot be {what}; only its version and browser program change (`bosun mcp edit {} --version V --browser PATH`), and each agent switches it with `bosun agent set NAME browser=on|off`",
        browser::NAME,
        browser::NAME
    ))
}

/// Checks a name, and that no other server has it.
async fn check_name(
    ctx: &RegistryContext,
    name: &str,
    except: Option<ServerId>,
) -> Result<(), RegistryError> {
    check_server_name(name).map_err(|e| RegistryError::invalid(e.to_string()))?;
    let store = ctx.store.clone();
    let servers = blocking(move || store.servers()).await??;
    if servers
        .iter()
        .any(|s| s.name == name && Some(s.id) != except)
    {
        return Err(RegistryError::conflict(format!(
            "there is already a server named `{name}`; choose another name, or change that one with `bosun mcp edit {name}`"
        )));
    }
    Ok(())
}

/// The keychain keys and values of a server's lines.
fn line_pairs(id: ServerId, lines: Vec<(LineKind, SecretLine)>) -> Vec<(String, String)> {
    lines
        .into_iter()
        .map(|(kind, l)| (kind.key(id, &l.name), l.value))
        .collect()
}

/// Saves values in the keychain, all or none.
async fn save_values(
    keychain: &Keychain,
    pairs: Vec<(String, String)>,
) -> Result<(), RegistryError> {
    let keychain = keychain.clone();
    blocking(move || keychain.set_many(&pairs).map_err(RegistryError::from)).await?
}

async fn delete_values(keychain: &Keychain, keys: Vec<String>) -> Result<(), RegistryError> {
    let keychain = keychain.clone();
    blocking(move || keychain.delete_many(&keys).map_err(RegistryError::from)).await?
}

/// Refused: plain http is a question for a server reached by address only.
fn stdio_allow_http() -> RegistryError {
    RegistryError::invalid(
        "--allow-http is for a server reached by address (--transport http or sse); a stdio server has none",
    )
}

async fn rename(
    ctx: &RegistryContext,
    server: &str,
    new_name: &str,
) -> Result<ServerDetail, RegistryError> {
    let mut rec = find(&ctx.store, server).await?;
    if rec.browser.is_some() {
        return Err(builtin_refusal("renamed"));
    }
    check_name(ctx, new_name, Some(rec.id)).await?;
    let old = std::mem::replace(&mut rec.name, new_name.to_string());
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(from = %old, to = %new_name, "server renamed");
    detail(ctx, rec).await
}

async fn remove(ctx: &RegistryContext, server: &str) -> Result<ServerRecord, RegistryError> {
    let rec = find(&ctx.store, server).await?;
    if rec.browser.is_some() {
        return Err(builtin_refusal("removed"));
    }
    // Its sign-in first (revoked where the server offers that), then its lines.
    bosun_auth::sign_out(&ctx.auth, rec.id)
        .await
        .map_err(|e| RegistryError::NothingRemoved(Box::new(e.into())))?;
    let keys: Vec<String> = rec
        .env_names
        .iter()
        .map(|n| LineKind::Env.key(rec.id, n))
        .chain(
            rec.header_names
                .iter()
                .map(|n| LineKind::Header.key(rec.id, n)),
        )
        .chain([configured_secret_key(rec.id), address::query_key(rec.id)])
        .collect();
    // Secrets first: a server is never removed while its secrets stay behind unnoticed.
    delete_values(&ctx.keychain, keys)
        .await
        .map_err(|e| RegistryError::NothingRemoved(Box::new(e)))?;
    ctx.writer.delete::<ServerRecord>(&rec.id).await?;
    info!(server = %rec.name, "server removed");
    Ok(rec)
}

/// Approves tools of the server's last listing as they are, and capabilities: runs get them
/// from the next run on.
async fn approve(ctx: &RegistryContext, p: Approve) -> Result<ServerDetail, RegistryError> {
    let mut rec = find(&ctx.store, &p.server).await?;
    if p.tools == ToolChoice::None && p.capabilities.is_empty() {
        return Err(RegistryError::invalid(format!(
            "say what to approve of `{}`: tool names, --all-tools, or --capability NAME; `bosun mcp show {}` lists what waits",
            rec.name, rec.name
        )));
    }
    ledger::approve_tools(&mut rec, &p.tools)?;
    if !p.capabilities.is_empty() {
        let mut capabilities = rec.rules.capabilities.clone();
        capabilities.extend(p.capabilities.iter().copied());
        let edit = GatewayChange {
            capabilities: Some(capabilities),
            ..GatewayChange::default()
        };
        rec.rules = gateway_rules(&rec, edit)?;
    }
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(server = %rec.name, tools = ?p.tools, capabilities = p.capabilities.len(), "approved");
    detail(ctx, rec).await
}

async fn save_look(
    ctx: &RegistryContext,
    id: ServerId,
    listing: Option<StoredListing>,
    error: Option<String>,
) -> Result<(), StoreError> {
    let store = ctx.store.clone();
    let key = id.to_string();
    let current = tokio::task::spawn_blocking(move || store.find_server(&key))
        .await
        .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    let Some(mut rec) = current else {
        return Ok(());
    };
    if let Some(listing) = listing {
        rec.take_listing(listing);
    }
    rec.last_error = error;
    ctx.writer.put(&rec).await
}

/// Takes the tools a run's gateway held back into the server's last listing (see
/// [`ledger::take_held_back`]); a definition bosun cannot read is left out.
async fn held_back(
    ctx: &RegistryContext,
    server: &str,
    tools: Vec<serde_json::Value>,
) -> Result<(), StoreError> {
    let (store, key) = (ctx.store.clone(), server.to_string());
    let current = tokio::task::spawn_blocking(move || store.find_server(&key))
        .await
        .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    let Some(mut rec) = current else {
        return Ok(());
    };
    let page = serde_json::json!({ "tools": tools });
    let Ok(page) = tools::read_page(&page, false, &mut HashSet::new()) else {
        return Ok(());
    };
    let held = page.tools.iter().map(tools::kept).collect();
    if ledger::take_held_back(&mut rec, held) {
        ctx.writer.put(&rec).await?;
    }
    Ok(())
}

/// The registry's context, shared by the daemon's request handlers.
pub type SharedRegistry = Arc<RegistryContext>;
