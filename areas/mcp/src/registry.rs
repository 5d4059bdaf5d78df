//! The Registry actor: the one place MCP servers are added, changed, renamed and removed, so two
//! changes never race (two servers with one name, a lost edit). Reads go straight to the store.
//!
//! Every change is checked whole before anything is written, secrets go to the keychain before
//! the record that names them is committed, and a failure part-way puts back what was changed:
//! nothing is ever half-saved.

use crate::record::ServerReads;
use bosun_shared::agents::{MAX_SECRET_VALUE, secret_too_long};
use std::collections::HashSet;
use std::num::NonZeroU16;
use std::sync::Arc;

use crate::RegistryError;
use bosun_shared::gateway::{AskPolicy, Rules};
use bosun_shared::mcp::check_server_name;
use bosun_shared::protocol::mcp::{
    AddServerParams, GatewayEdit, McpApprove, SecretLine, ServerKind, ServerView,
};
use bosun_shared::{ServerId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use std::path::PathBuf;

use bosun_shared::protocol::mcp::{BrowserView, SecretValue, SignInBy, SignInView};

use super::address::{self, Address};
use super::browser::{self, BrowserSettings};
use super::client::Endpoint;
use super::ledger;
use super::record::{self, LineKind, ServerRecord, StoredListing};
use super::redact::Redactor;
use super::tools;
use bosun_auth::AuthContext;
use bosun_auth::record::ClientAuth;
use bosun_auth::record::{Grant, SignInRecord, configured_secret_key};
use bosun_kit::edit::Edit;
use bosun_kit::keychain::Keychain;
use bosun_kit::offload::blocking;
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};

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
    pub gateway: GatewayEdit,
}

pub enum RegistryMsg {
    Add {
        params: AddServerParams,
        reply: RpcReplyPort<Result<ServerView, RegistryError>>,
    },
    /// Approves tools of its last listing and capabilities it advertises.
    Approve {
        params: McpApprove,
        reply: RpcReplyPort<Result<ServerView, RegistryError>>,
    },
    Edit {
        params: Box<ServerEdit>,
        reply: RpcReplyPort<Result<ServerView, RegistryError>>,
    },
    Rename {
        server: String,
        new_name: String,
        reply: RpcReplyPort<Result<ServerView, RegistryError>>,
    },
    Remove {
        server: String,
        reply: RpcReplyPort<Result<ServerView, RegistryError>>,
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
pub async fn sign_out(ctx: &RegistryContext, server: &str) -> Result<ServerView, RegistryError> {
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

/// Every server as the UI shows it, each line marked saved or missing in the keychain.
pub async fn list(ctx: &RegistryContext) -> Result<Vec<ServerView>, RegistryError> {
    let store = ctx.store.clone();
    let mut records = blocking(move || store.servers()).await??;
    // The built-in browser at the top, then by name.
    records.sort_by(|a, b| (a.browser.is_none(), &a.name).cmp(&(b.browser.is_none(), &b.name)));
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || {
        records
            .iter()
            .map(|r| view_of(&store, &keychain, r))
            .collect()
    })
    .await?)
}

/// One server as the UI shows it.
pub async fn show(ctx: &RegistryContext, server: &str) -> Result<ServerView, RegistryError> {
    let rec = find(&ctx.store, server).await?;
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
}

fn view_of(store: &Store, keychain: &Keychain, rec: &ServerRecord) -> ServerView {
    let mut view = rec.view(|kind, name| {
        keychain
            .get(&kind.key(rec.id, name))
            .ok()
            .flatten()
            .is_some()
    });
    ledger::fill_in(&mut view, rec);
    if let Some(settings) = &rec.browser {
        let path = std::env::var("PATH").ok();
        let mut missing = Vec::new();
        let node = browser::check_node(path.as_deref())
            .map_err(|e| missing.push(e.to_string()))
            .ok();
        let program = browser::find_program(settings, path.as_deref())
            .map_err(|e| missing.push(e.to_string()))
            .ok();
        let shown = match &program {
            Some(p) => browser::command_line(settings, p, false),
            None => browser::command_line(
                settings,
                &browser::Program::ServerFinds(PathBuf::new()),
                false,
            ),
        };
        view.command = Some(shown.command);
        view.args = shown.args;
        view.browser = Some(BrowserView {
            version: settings.version.clone(),
            program_set: settings.program.clone(),
            program_found: program.map(|p| p.path().to_path_buf()),
            node,
            missing,
        });
    }
    view.sign_in = sign_in_view(store, rec);
    if view.last_error.as_deref() == Some(SIGNED_OUT) {
        // Said by the sign-in's state.
        view.last_error = None;
    }
    // A look that failed for want of a sign-in is old news once signed in.
    if view
        .sign_in
        .as_ref()
        .is_some_and(|s| s.state == "signed in")
        && view
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("needs sign-in"))
    {
        view.last_error = None;
    }
    view
}

/// A server's sign-in, for the views (a server started as a command has none).
pub fn sign_in_view(store: &Store, rec: &ServerRecord) -> Option<SignInView> {
    if rec.kind == ServerKind::Stdio {
        return None;
    }
    let empty = |state: &str, why: Option<String>| SignInView {
        state: state.to_string(),
        why,
        issuer: None,
        client_id: rec.client_id.clone(),
        registered: false,
        scope: None,
        expires_at: None,
        signed_in_at: None,
        refreshed_at: None,
        wanted_scope: None,
        client_credentials: None,
        dpop: false,
    };
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Some(empty("Claude Code signs in", None));
    }
    match store.get::<SignInRecord>(&rec.id).ok().flatten() {
        Some(s) => Some(SignInView {
            state: if s.is_signed_in() {
                "signed in".to_string()
            } else {
                "needs sign-in".to_string()
            },
            why: s.needs_sign_in.clone(),
            issuer: Some(s.issuer.clone()),
            client_id: Some(s.client_id.clone()),
            registered: s.registered,
            scope: s.scope.clone(),
            expires_at: s.expires_at,
            signed_in_at: Some(s.signed_in_at),
            refreshed_at: s.refreshed_at,
            wanted_scope: s.wanted_scope.clone(),
            client_credentials: (s.grant == Grant::ClientCredentials).then(|| {
                match s.client_auth {
                    ClientAuth::PrivateKeyJwt => "private_key_jwt",
                    ClientAuth::ClientSecretBasic => "client_secret_basic",
                    ClientAuth::ClientSecretPost => "client_secret_post",
                    ClientAuth::None => "none",
                }
                .to_string()
            }),
            dpop: s.dpop,
        }),
        None if rec.last_error.as_deref() == Some(SIGNED_OUT) => Some(empty(
            "not signed in",
            Some(format!(
                "signed out; run `bosun mcp sign-in {}` to use it again",
                rec.name
            )),
        )),
        None => {
            let asked = rec
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("needs sign-in"));
            Some(if asked {
                empty(
                    "needs sign-in",
                    Some(format!(
                        "the server asks for one; run `bosun mcp sign-in {}`",
                        rec.name
                    )),
                )
            } else {
                empty("not signed in", None)
            })
        }
    }
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

/// A command line that starts chrome-devtools-mcp is checked for the forbidden options.
fn check_browser_options(command: &Option<String>, args: &[String]) -> Result<(), RegistryError> {
    match command {
        Some(c) if browser::starts_chrome_devtools(c, args) => {
            Ok(browser::check_command_line(c, args)?)
        }
        Some(_) | None => Ok(()),
    }
}

/// A server's environment and header lines with their values, read from the keychain for this
/// one use; a value that is missing is an error saying how to set it.
pub async fn secret_lines(
    keychain: &Keychain,
    rec: &ServerRecord,
) -> Result<(Vec<(String, String)>, Vec<(String, String)>), RegistryError> {
    let keychain = keychain.clone();
    let r = rec.clone();
    blocking(move || {
        let mut env = Vec::new();
        let mut headers = Vec::new();
        for (kind, names, out) in [
            (LineKind::Env, &r.env_names, &mut env),
            (LineKind::Header, &r.header_names, &mut headers),
        ] {
            for name in names {
                match keychain.get(&kind.key(r.id, name)) {
                    Ok(Some(v)) => out.push((name.clone(), v)),
                    Ok(None) => {
                        let flag = match kind {
                            LineKind::Env => "--env",
                            LineKind::Header => "--header",
                        };
                        return Err(RegistryError::conflict(format!(
                            "a value is missing from the keychain ({name}); set it with `bosun mcp edit {} {flag} {name} --values-from-stdin`",
                            r.name
                        )));
                    }
                    Err(e) => return Err(RegistryError::from(e)),
                }
            }
        }
        Ok((env, headers))
    })
    .await?
}

/// How to reach a server, with its secret values read from the keychain for this one use.
pub async fn endpoint(
    ctx: &RegistryContext,
    server: &str,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_with(ctx, server, None).await
}

/// As [`endpoint`]; `refused` is the fingerprint of a token the server just refused, which is
/// then refreshed rather than used again.
pub async fn endpoint_with(
    ctx: &RegistryContext,
    server: &str,
    refused: Option<String>,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_of(ctx, server, SignedIn::Yes { refused }).await
}

/// As [`endpoint`], without any `Authorization` (bosun's token or a configured header): what a
/// sign-in asks first, to hear the server's challenge.
pub async fn endpoint_unsigned(
    ctx: &RegistryContext,
    server: &str,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_of(ctx, server, SignedIn::No).await
}

/// Whether an endpoint carries bosun's sign-in.
enum SignedIn {
    /// A token good for a minute at least; `refused` as in [`endpoint_with`].
    Yes { refused: Option<String> },
    /// No `Authorization` at all.
    No,
}

async fn endpoint_of(
    ctx: &RegistryContext,
    server: &str,
    signed_in: SignedIn,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    let rec = find(&ctx.store, server).await?;
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Err(RegistryError::conflict(format!(
            "Claude Code signs in to `{}`, so bosun has no sign-in to call it with and cannot look at it itself; agents running Claude Code get all of its tools",
            rec.name
        )));
    }
    let (mut env, mut headers) = secret_lines(&ctx.keychain, &rec).await?;
    let (keychain, r) = (ctx.keychain.clone(), rec.clone());
    let url = blocking(move || record::connect_url(&keychain, &r)).await??;
    let mut dpop = None;
    match signed_in {
        SignedIn::Yes { refused } if rec.kind != ServerKind::Stdio => {
            // Before a look, a token good for a minute at least.
            match bosun_auth::access(
                &ctx.auth,
                rec.id,
                std::time::Duration::from_secs(60),
                refused,
            )
            .await?
            {
                bosun_auth::Access::Token(t) => {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                    headers.push(("Authorization".into(), format!("Bearer {t}")));
                }
                bosun_auth::Access::Dpop { token, prover } => {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                    headers.push(("Authorization".into(), format!("DPoP {token}")));
                    dpop = Some(super::dpop_http::Binding { token, prover });
                }
                bosun_auth::Access::None => {}
            }
        }
        SignedIn::Yes { .. } => {}
        SignedIn::No => headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
    }
    // Made before the browser's own environment joins the lines: that is no secret.
    let redactor = Redactor::new(&env, &headers, url.as_deref());
    let (command, args) = match &rec.browser {
        Some(settings) => {
            let settings = settings.clone();
            let launch = blocking(move || {
                browser::launch(&settings, false, std::env::var("PATH").ok().as_deref())
            })
            .await?
            .map_err(RegistryError::BrowserCannotStart)?;
            env.extend(launch.env);
            (Some(launch.command), launch.args)
        }
        None => (rec.command.clone(), rec.args.clone()),
    };
    check_browser_options(&command, &args)?;
    let ep = Endpoint {
        server: rec.name.clone(),
        kind: rec.kind,
        command,
        args,
        url,
        env,
        headers,
        redactor,
        dpop,
        offers_elicitation: rec.rules.elicitation == AskPolicy::Ask,
        offers_sampling: rec.rules.sampling != AskPolicy::Deny,
    };
    Ok((rec, ep))
}

/// Checks environment and header lines: valid names, each once, values that fit.
fn check_lines(env: &[SecretLine], headers: &[SecretLine]) -> Result<(), RegistryError> {
    let bad = |m: String| Err(RegistryError::invalid(m));
    let mut seen = HashSet::new();
    for l in env {
        let ok = l
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && l.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return bad(format!(
                "`{}` is not an environment variable name; use letters, digits and _, not starting with a digit",
                l.name
            ));
        }
        if l.value.contains('\0') {
            return bad(format!(
                "the value of {} has a NUL byte, which no environment can hold",
                l.name
            ));
        }
        if l.value.len() > MAX_SECRET_VALUE {
            return bad(secret_too_long(&l.name));
        }
        if !seen.insert(l.name.clone()) {
            return bad(format!("the environment line {} is given twice", l.name));
        }
    }
    let mut seen = HashSet::new();
    for h in headers {
        if reqwest::header::HeaderName::try_from(h.name.as_str()).is_err() {
            return bad(format!("`{}` is not a header name", h.name));
        }
        if let Some(why) = address::owned_header(&h.name) {
            return bad(format!(
                "the header {} is set by bosun itself and cannot be given: {why}",
                h.name
            ));
        }
        if reqwest::header::HeaderValue::try_from(h.value.as_str()).is_err() {
            return bad(format!(
                "the value of header {} has characters a header cannot hold",
                h.name
            ));
        }
        if h.value.len() > MAX_SECRET_VALUE {
            return bad(secret_too_long(&format!("header {}", h.name)));
        }
        if !seen.insert(h.name.to_ascii_lowercase()) {
            return bad(format!("the header {} is given twice", h.name));
        }
    }
    Ok(())
}

/// Checks the sign-in settings: they are for a server reached by address.
fn check_sign_in_settings(
    kind: ServerKind,
    client_id: Option<&str>,
    client_secret: &Option<SecretValue>,
    by: Option<SignInBy>,
) -> Result<(), RegistryError> {
    let given = client_id.is_some_and(|c| !c.is_empty())
        || client_secret.is_some()
        || by == Some(SignInBy::ClaudeCode);
    if kind == ServerKind::Stdio && given {
        return Err(RegistryError::invalid(
            "a client id, a client secret and who signs in are for a server reached by address (--transport http or sse); a stdio server gets its credentials from its environment lines",
        ));
    }
    if let Some(id) = client_id
        && (id.chars().any(|c| c.is_control() || c.is_whitespace()) || id.len() > 512)
    {
        return Err(RegistryError::invalid(format!(
            "`{id}` is not a client id; copy it from the service's developer settings"
        )));
    }
    Ok(())
}

/// The shortest and longest deadline of a call.
const DEADLINE_RANGE: std::ops::RangeInclusive<u64> = 1_000..=3_600_000;
/// The smallest and largest result the model gets whole.
const RESULT_RANGE: std::ops::RangeInclusive<u64> = 256..=10_000_000;

/// The most tokens the person may let a server's request for a message ask for.
const SAMPLING_TOKENS_RANGE: std::ops::RangeInclusive<u64> = 1..=100_000;

/// A server's gateway rules with `edit` applied, or why it cannot be.
fn gateway_rules(rec: &ServerRecord, edit: GatewayEdit) -> Result<Rules, RegistryError> {
    let mut rules = rec.rules.clone();
    if edit.is_empty() {
        return Ok(rules);
    }
    if let Some(ms) = edit.deadline_ms {
        if !DEADLINE_RANGE.contains(&ms) {
            return Err(RegistryError::invalid(format!(
                "a call's deadline is from 1 s to 1 h; `{}` ms is not (say e.g. `--call-deadline 30s`)",
                ms
            )));
        }
        rules.deadline_ms = ms;
    }
    if let Some(n) = edit.max_result_chars {
        if !RESULT_RANGE.contains(&n) {
            return Err(RegistryError::invalid(format!(
                "the result the model gets whole is from 256 to 10000000 characters; {n} is not"
            )));
        }
        rules.max_result_chars = n;
    }
    if let Some(t) = edit.trusted {
        rules.trusted = t;
    }
    if let Some(allow) = edit.allow_tools {
        rules.allow_tools = allow;
    }
    if let Some(deny) = edit.deny_tools {
        rules.deny_tools = deny;
    }
    if let Some(capabilities) = edit.capabilities {
        if capabilities.is_empty() {
            return Err(RegistryError::invalid(format!(
                "give `{}` at least one capability (such as tools); to keep it from runs, switch it off for the agents (`bosun agent set AGENT mcp.{}=off`)",
                rec.name, rec.name
            )));
        }
        rules.capabilities = capabilities;
    }
    if let Some(p) = edit.elicitation {
        if p == AskPolicy::Allow {
            return Err(RegistryError::invalid(format!(
                "a form `{}` asks for is answered by the person: say `--elicitation ask` (or deny); allow is for sampling",
                rec.name
            )));
        }
        rules.elicitation = p;
    }
    if let Some(p) = edit.sampling {
        rules.sampling = p;
    }
    if let Some(n) = edit.sampling_max_tokens {
        if !SAMPLING_TOKENS_RANGE.contains(&n) {
            return Err(RegistryError::invalid(format!(
                "a request for a message of the model may ask for 1 to 100000 tokens; {n} is not"
            )));
        }
        rules.sampling_max_tokens = n;
    }
    for list in [&mut rules.allow_tools, &mut rules.deny_tools] {
        list.sort();
        list.dedup();
    }
    Ok(rules)
}

/// Checks the address of a client metadata document (`""`: none): an `https://` address with
/// a path, for a server reached by address, as the MCP authorization rules ask of a client id.
fn check_client_metadata_url(
    kind: ServerKind,
    url: Option<&str>,
) -> Result<Option<String>, RegistryError> {
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    if kind == ServerKind::Stdio {
        return Err(RegistryError::invalid(
            "a client metadata document is for a server reached by address (--transport http or sse); a stdio server gets its credentials from its environment lines",
        ));
    }
    let parsed = url::Url::parse(url).map_err(|_| {
        RegistryError::invalid(format!(
            "`{url}` is not an address; give the https:// address where your copy of bosun's client metadata document is published"
        ))
    })?;
    if parsed.scheme() != "https"
        || parsed.path().trim_matches('/').is_empty()
        || parsed.fragment().is_some()
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(RegistryError::invalid(format!(
            "`{}` cannot be a client id: a client metadata document's address must be https://, with a path, and without a fragment or credentials (such as https://example.com/bosun/client.json)",
            address::shown(url)
        )));
    }
    Ok(Some(url.to_string()))
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

async fn add(ctx: &RegistryContext, p: AddServerParams) -> Result<ServerView, RegistryError> {
    check_name(ctx, &p.name, None).await?;
    if p.allow_http && p.kind == ServerKind::Stdio {
        return Err(stdio_allow_http());
    }
    let target = address::check_target(p.kind, &p.command, &p.url, p.allow_http)?;
    check_browser_options(&p.command, &p.args)?;
    check_lines(&p.env, &p.headers)?;
    check_sign_in_settings(
        p.kind,
        p.client_id.as_deref(),
        &p.client_secret,
        p.sign_in_by,
    )?;
    let now = Timestamp::now();
    let rec = ServerRecord {
        id: ServerId::new(),
        name: p.name,
        kind: p.kind,
        command: p.command,
        args: p.args,
        url: target.as_ref().map(|a| a.base.clone()),
        query_in_keychain: target.as_ref().is_some_and(|a| a.query.is_some()),
        allow_http: p.allow_http,
        env_names: p.env.iter().map(|l| l.name.clone()).collect(),
        header_names: p.headers.iter().map(|l| l.name.clone()).collect(),
        created_at: now,
        updated_at: now,
        listing: None,
        last_error: None,
        browser: None,
        client_id: p.client_id.clone().filter(|c| !c.is_empty()),
        callback_port: p.callback_port.filter(|port| *port != 0),
        sign_in_by: p.sign_in_by.unwrap_or_default(),
        client_metadata_url: check_client_metadata_url(p.kind, p.client_metadata_url.as_deref())?,
        rules: Default::default(),
        approved_tools: None,
    };
    let lines: Vec<(LineKind, SecretLine)> = p
        .env
        .into_iter()
        .map(|l| (LineKind::Env, l))
        .chain(p.headers.into_iter().map(|l| (LineKind::Header, l)))
        .collect();
    let mut pairs = line_pairs(rec.id, lines);
    if let Some(secret) = p.client_secret {
        pairs.push((configured_secret_key(rec.id), secret.0));
    }
    if let Some(query) = target.and_then(|a| a.query) {
        pairs.push((address::query_key(rec.id), query));
    }
    let keys: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    save_values(&ctx.keychain, pairs).await?;
    if let Err(e) = ctx.writer.put(&rec).await {
        let _ = delete_values(&ctx.keychain, keys).await;
        return Err(RegistryError::from(e));
    }
    info!(server = %rec.name, id = %rec.id, "server added");
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
}

async fn edit(ctx: &RegistryContext, mut p: ServerEdit) -> Result<ServerView, RegistryError> {
    let mut rec = find(&ctx.store, &p.server).await?;
    if rec.browser.is_some() {
        return edit_builtin(ctx, rec, p).await;
    }
    if p.browser_version.is_some() || !p.browser_program.is_keep() {
        return Err(RegistryError::invalid(format!(
            "`{}` is not the built-in browser; a version and browser program are set on {} only",
            rec.name,
            browser::NAME
        )));
    }
    if let Some(kind) = p.kind {
        rec.kind = kind;
    }
    if let Some(c) = p.command.take() {
        rec.command = Some(c);
    }
    if let Some(a) = p.args.take() {
        rec.args = a;
    }
    // What a sign-in is for: the address without its query.
    let old_target = (rec.kind, rec.url.as_deref().map(address::base_of));
    if p.allow_http == Some(true) && rec.kind == ServerKind::Stdio {
        return Err(stdio_allow_http());
    }
    if let Some(allow) = p.allow_http {
        rec.allow_http = allow;
    }
    let mut keys = KeychainChanges::default();
    edit_address(&mut rec, p.url.take(), &mut keys)?;
    check_browser_options(&rec.command, &rec.args)?;
    check_lines(&p.set_env, &p.set_headers)?;
    let by = edit_sign_in(&mut rec, &mut p, &mut keys)?;
    rec.rules = gateway_rules(&rec, std::mem::take(&mut p.gateway))?;
    // A sign-in is for one address and one way of signing in: changing either ends it.
    let sign_out =
        (rec.kind, rec.url.as_deref().map(address::base_of)) != old_target || by != rec.sign_in_by;
    rec.sign_in_by = by;
    edit_line_names(&mut rec, &p, &mut keys)?;
    rec.updated_at = Timestamp::now();
    let lines: Vec<(LineKind, SecretLine)> = p
        .set_env
        .into_iter()
        .map(|l| (LineKind::Env, l))
        .chain(p.set_headers.into_iter().map(|l| (LineKind::Header, l)))
        .collect();
    keys.save.extend(line_pairs(rec.id, lines));
    if sign_out {
        bosun_auth::sign_out(&ctx.auth, rec.id).await?;
    }
    save_values(&ctx.keychain, keys.save).await?;
    ctx.writer.put(&rec).await?;
    // The record no longer names them: the old lines' values go.
    if let Err(e) = delete_values(&ctx.keychain, keys.stale).await {
        warn!(server = %rec.name, error = %e, "could not delete the values of removed lines");
    }
    info!(server = %rec.name, "server changed");
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
}

/// What an edit does to the keychain once the record is saved: values to save, and the keys
/// of values the record no longer names.
#[derive(Default)]
struct KeychainChanges {
    save: Vec<(String, String)>,
    stale: Vec<String>,
}

/// Fits the record's address to its kind and checks it again, keeping a query in the keychain.
fn edit_address(
    rec: &mut ServerRecord,
    url: Option<String>,
    keys: &mut KeychainChanges,
) -> Result<(), RegistryError> {
    let given_url = url.is_some();
    match rec.kind {
        ServerKind::Stdio => {
            rec.url = None;
            rec.allow_http = false;
        }
        ServerKind::Http | ServerKind::Sse => {
            rec.command = None;
            rec.args.clear();
        }
    }
    if !given_url && let Some(query) = record::take_stored_query(rec) {
        // An older bosun kept this query in the store: the keychain keeps it from now on.
        keys.save.push((address::query_key(rec.id), query));
    }
    // The address given, or the one kept (checked again: plain http may no longer be allowed).
    let url = if given_url { url } else { rec.url.clone() };
    let checked = address::check_target(rec.kind, &rec.command, &url, rec.allow_http)?;
    match checked {
        Some(Address {
            base,
            query: Some(query),
        }) => {
            rec.url = Some(base);
            rec.query_in_keychain = true;
            keys.save.push((address::query_key(rec.id), query));
        }
        Some(Address { base, query: None }) => {
            rec.url = Some(base);
            if given_url {
                rec.query_in_keychain = false;
            }
        }
        None => rec.query_in_keychain = false,
    }
    if !rec.query_in_keychain {
        keys.stale.push(address::query_key(rec.id));
    }
    Ok(())
}

/// Checks and applies the sign-in settings given; returns the way of signing in from now on.
fn edit_sign_in(
    rec: &mut ServerRecord,
    p: &mut ServerEdit,
    keys: &mut KeychainChanges,
) -> Result<SignInBy, RegistryError> {
    let by = p.sign_in_by.unwrap_or(rec.sign_in_by);
    let given_id = match &p.client_id {
        Edit::Set(id) => Some(id.as_str()),
        Edit::Keep | Edit::Clear => None,
    };
    check_sign_in_settings(rec.kind, given_id, &p.client_secret, Some(by))?;
    match std::mem::take(&mut p.client_id) {
        Edit::Clear => {
            rec.client_id = None;
            keys.stale.push(configured_secret_key(rec.id));
        }
        Edit::Set(id) => rec.client_id = Some(id),
        Edit::Keep => {}
    }
    if let Some(secret) = p.client_secret.take() {
        if rec.client_id.is_none() {
            return Err(RegistryError::invalid(format!(
                "a client secret goes with a client id; give both: `bosun mcp edit {} --client-id ID --client-secret-stdin`",
                rec.name
            )));
        }
        keys.save.push((configured_secret_key(rec.id), secret.0));
    }
    std::mem::take(&mut p.callback_port)
        .map(NonZeroU16::get)
        .apply(&mut rec.callback_port);
    match &p.client_metadata_url {
        Edit::Keep => {}
        Edit::Clear => rec.client_metadata_url = None,
        Edit::Set(doc) => rec.client_metadata_url = check_client_metadata_url(rec.kind, Some(doc))?,
    }
    Ok(by)
}

/// Removes and adds the names of environment lines and headers; a name to remove must be there.
fn edit_line_names(
    rec: &mut ServerRecord,
    p: &ServerEdit,
    keys: &mut KeychainChanges,
) -> Result<(), RegistryError> {
    for (names, removed, what) in [
        (&rec.env_names, &p.remove_env, "environment line"),
        (&rec.header_names, &p.remove_headers, "header"),
    ] {
        if let Some(missing) = removed.iter().find(|r| !names.contains(r)) {
            return Err(RegistryError::invalid(format!(
                "`{}` has no {what} {missing} to remove",
                rec.name
            )));
        }
    }
    for name in &p.remove_env {
        rec.env_names.retain(|n| n != name);
        keys.stale.push(LineKind::Env.key(rec.id, name));
    }
    for name in &p.remove_headers {
        rec.header_names.retain(|n| n != name);
        keys.stale.push(LineKind::Header.key(rec.id, name));
    }
    for l in &p.set_env {
        if !rec.env_names.contains(&l.name) {
            rec.env_names.push(l.name.clone());
        }
    }
    for l in &p.set_headers {
        if !rec.header_names.contains(&l.name) {
            rec.header_names.push(l.name.clone());
        }
    }
    Ok(())
}

/// The built-in browser: its version and its program, nothing else.
async fn edit_builtin(
    ctx: &RegistryContext,
    mut rec: ServerRecord,
    p: ServerEdit,
) -> Result<ServerView, RegistryError> {
    let other = p.command.is_some()
        || p.args.is_some()
        || p.url.is_some()
        || p.allow_http.is_some()
        || p.kind.is_some()
        || !p.set_env.is_empty()
        || !p.remove_env.is_empty()
        || !p.set_headers.is_empty()
        || !p.remove_headers.is_empty();
    if other {
        return Err(builtin_refusal("changed that way"));
    }
    let mut settings = rec.browser.clone().unwrap_or_default();
    if let Some(v) = p.browser_version {
        browser::check_version(v.trim())?;
        settings.version = v.trim().to_string();
    }
    match p.browser_program {
        Edit::Keep => {}
        Edit::Clear => settings.program = None,
        Edit::Set(path) => {
            browser::check_program(&path)?;
            settings.program = Some(path);
        }
    }
    if rec.browser.as_ref().map(|b| &b.version) != Some(&settings.version) {
        // Another version may have other tools: the old listing no longer says what it has,
        // and the person chose it: its first listing approves what it finds.
        rec.forget_listing();
    }
    rec.browser = Some(settings);
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(server = %rec.name, "built-in browser changed");
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
}

async fn rename(
    ctx: &RegistryContext,
    server: &str,
    new_name: &str,
) -> Result<ServerView, RegistryError> {
    let mut rec = find(&ctx.store, server).await?;
    if rec.browser.is_some() {
        return Err(builtin_refusal("renamed"));
    }
    check_name(ctx, new_name, Some(rec.id)).await?;
    let old = std::mem::replace(&mut rec.name, new_name.to_string());
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(from = %old, to = %new_name, "server renamed");
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
}

async fn remove(ctx: &RegistryContext, server: &str) -> Result<ServerView, RegistryError> {
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
    Ok(rec.view(|_, _| false))
}

/// Approves tools of the server's last listing as they are, and capabilities: runs get them
/// from the next run on.
async fn approve(ctx: &RegistryContext, p: McpApprove) -> Result<ServerView, RegistryError> {
    let mut rec = find(&ctx.store, &p.server).await?;
    if p.tools.is_empty() && !p.all_tools && p.capabilities.is_empty() {
        return Err(RegistryError::invalid(format!(
            "say what to approve of `{}`: tool names, --all-tools, or --capability NAME; `bosun mcp show {}` lists what waits",
            rec.name, rec.name
        )));
    }
    ledger::approve_tools(&mut rec, &p.tools, p.all_tools)?;
    if !p.capabilities.is_empty() {
        let mut capabilities = rec.rules.capabilities.clone();
        capabilities.extend(p.capabilities.iter().copied());
        let edit = GatewayEdit {
            capabilities: Some(capabilities),
            ..GatewayEdit::default()
        };
        rec.rules = gateway_rules(&rec, edit)?;
    }
    rec.updated_at = Timestamp::now();
    ctx.writer.put(&rec).await?;
    info!(server = %rec.name, tools = p.tools.len(), all_tools = p.all_tools, capabilities = p.capabilities.len(), "approved");
    let (keychain, store) = (ctx.keychain.clone(), ctx.store.clone());
    Ok(blocking(move || view_of(&store, &keychain, &rec)).await?)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, value: &str) -> SecretLine {
        SecretLine {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn targets_and_lines_are_checked_with_reasons() {
        fn msg<T>(r: Result<T, RegistryError>) -> String {
            r.err().map(|e| e.to_string()).unwrap_or_default()
        }
        let target = |kind, url: &str| address::check_target(kind, &None, &Some(url.into()), false);
        assert!(
            msg(address::check_target(
                ServerKind::Stdio,
                &None,
                &None,
                false
            ))
            .contains("needs a command")
        );
        assert!(msg(target(ServerKind::Http, "ftp://x/mcp")).contains("is a ftp address"));
        assert!(msg(target(ServerKind::Http, "not a url")).contains("is not an address"));
        assert!(target(ServerKind::Sse, "https://example.com/sse").is_ok());
        assert!(
            msg(check_lines(&[line("1BAD", "x")], &[]))
                .contains("is not an environment variable name")
        );
        assert!(msg(check_lines(&[line("A", "1"), line("A", "2")], &[])).contains("given twice"));
        assert!(msg(check_lines(&[], &[line("Accept", "x")])).contains("set by bosun itself"));
        for owned in [
            "Host",
            "content-length",
            "Transfer-Encoding",
            "Mcp-Method",
            "Mcp-Param-Repo",
        ] {
            assert!(
                msg(check_lines(&[], &[line(owned, "x")])).contains("cannot be given: "),
                "{owned}"
            );
        }
        assert!(msg(check_lines(&[], &[line("X-Key", "a\nb")])).contains("cannot hold"));
        assert!(
            check_lines(
                &[line("GITHUB_TOKEN", "x")],
                &[line("Authorization", "Bearer y")]
            )
            .is_ok()
        );
    }
}
