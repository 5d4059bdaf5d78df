//! The person's sign-in to a server: it starts with the server's 401 challenge, finds where to
//! sign in, gets bosun a client (the one the person configured, or a registration of its own
//! named "bosun"), and opens a loopback listener on `127.0.0.1:<port>/callback`. The person's
//! own `bosun` opens the authorization URL in their browser (`$BROWSER`, else the system
//! opener); the listener takes one answer, checks `state`, exchanges the code (PKCE S256,
//! `resource`) and saves the tokens — or gives up after 10 minutes, saying so. Nothing is saved
//! until the whole sign-in has worked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{AuthError, ProbeError};
use bosun_shared::mcp::{ServerKind, SignInBy};
use bosun_shared::{ServerId, Timestamp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot};
use tracing::{info, warn};

use super::challenge::Challenge;
use super::client_document::{self, ClientDocumentError};
use super::discovery::{self, DiscoveryError};
use super::dpop;
use super::oauth::{self, ClientIdentity, OAuthError};
use super::record::ClientAuth;
use super::record::{
    SignInRecord, access_key, client_secret_key, configured_secret_key, refresh_key,
};
use super::{AuthContext, AuthMsg};
use bosun_kit::offload::blocking;

/// How long the listener waits for the browser's answer.
const WAIT: Duration = Duration::from_secs(600);
/// Sign-ins in a row that asked for a wider scope before bosun stops asking.
const MAX_STEP_UPS: u32 = 3;

/// A sign-in waiting for the person's browser.
pub struct Attempt {
    server: ServerId,
    done: oneshot::Receiver<Result<(), AuthError>>,
}

/// What a sign-in needs to know of its server. The MCP registry's record gives it (the
/// registry is above auth: auth knows nothing of the registry's records).
#[derive(Clone, Debug)]
pub struct Server {
    pub id: ServerId,
    pub name: String,
    pub kind: ServerKind,
    pub url: Option<String>,
    pub sign_in_by: SignInBy,
    /// A client id the person got from the service; its secret, if any, is in the keychain.
    pub client_id: Option<String>,
    /// The loopback port the sign-in's answer comes back to (absent: any free one).
    pub callback_port: Option<u16>,
    /// The HTTPS address of bosun's client metadata document the person hosts: the client id
    /// where the authorization server takes such documents.
    pub client_metadata_url: Option<String>,
}

/// Sign-ins under way, by attempt number: the answer to wait for (taken by whoever waits), and
/// the way to cancel it (kept until the sign-in ends).
#[derive(Clone, Default)]
pub struct Pending {
    attempts: Arc<Mutex<HashMap<u64, Attempt>>>,
    cancels: Arc<Mutex<HashMap<u64, Cancel>>>,
    next: Arc<AtomicU64>,
}

/// The way to cancel a sign-in under way: its server, and the signal its wait listens for.
type Cancel = (ServerId, Arc<Notify>);

/// A started sign-in: the page for the person to open.
pub struct Started {
    pub attempt: u64,
    pub url: String,
    pub wait: Duration,
    /// The client is the one bosun registered at this authorization server at an earlier
    /// sign-in (a server that forgot it says so on its page, not to bosun).
    pub reused_registration: bool,
    /// What bosun could not check before the browser opened, in words.
    pub warning: Option<String>,
}

fn wait_limit() -> Duration {
    std::env::var("BOSUN_SIGN_IN_WAIT")
        .ok()
        .and_then(|t| bosun_shared::time::parse_duration(&t).ok())
        .unwrap_or(WAIT)
}

fn discovery_error(name: &str, error: DiscoveryError) -> AuthError {
    AuthError::Discovery {
        name: name.to_string(),
        error,
    }
}

fn oauth_error(name: &str, error: OAuthError) -> AuthError {
    AuthError::OAuth {
        name: name.to_string(),
        error,
    }
}

/// The address a server signs in at: only a server reached by address has one.
pub(super) fn address(rec: &Server) -> Result<String, AuthError> {
    match (rec.kind, &rec.url) {
        (ServerKind::Http | ServerKind::Sse, Some(u)) => Ok(u.clone()),
        (ServerKind::Stdio, _) | (ServerKind::Http | ServerKind::Sse, None) => {
            Err(AuthError::invalid(format!(
                "`{}` is started as a command (stdio); only a server reached by address signs in",
                rec.name
            )))
        }
    }
}

/// Starts a sign-in: everything up to the page the person opens.
///
/// `probe` asks the server, without a token, for what it needs: its challenge (a 401 or 403 on
/// any of the requests a look makes, not only the first), or `None` when it lets bosun list its
/// tools without one. The MCP side makes it (it speaks the server's revision); it is awaited
/// only once the checks that need no server have passed, so a server that cannot sign in is
/// never started or reached.
///
/// `new_client`: drop the client bosun registered at the authorization server before, and
/// register a new one (for a server that forgot it).
pub async fn start(
    ctx: &AuthContext,
    rec: impl Into<Server>,
    probe: impl Future<Output = Result<Option<Challenge>, ProbeError>>,
    new_client: bool,
) -> Result<Started, AuthError> {
    let rec: Server = rec.into();
    let name = rec.name.clone();
    let url = address(&rec)?;
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Err(AuthError::invalid(format!(
            "Claude Code signs in to `{name}` itself (`bosun mcp edit {name} --sign-in-by bosun` changes that); sign Claude Code in with /mcp in a `claude` session"
        )));
    }
    let before = Before::load(ctx, &rec).await?;
    let challenge = before.challenge(probe, &name, &url).await?;
    let found = discovery::discover(&ctx.http, &url, &challenge)
        .await
        .map_err(|e| discovery_error(&name, e))?;
    check_issuer(&rec, before.existing.as_ref(), &found)?;

    // DPoP (RFC 9449) where the server asks for it: a key pair of this sign-in's own.
    let dpop = new_prover(ctx, rec.id, &name, &found)?;

    // The loopback listener, before the registration that names its address.
    let (listener, redirect_uri) = listen(&rec).await?;

    let client = choose_client(ctx, &rec, &found, &redirect_uri, new_client).await?;
    let authorization = oauth::authorization_url(
        &client.identity,
        &found.metadata.authorization_endpoint,
        &found.metadata.token_endpoint,
        &redirect_uri,
        found.scope.as_deref(),
        &found.resource,
    )
    .map_err(|e| oauth_error(&name, e))?;

    let done = Finish {
        ctx: ctx.clone(),
        server: rec.id,
        name: name.clone(),
        identity: client.identity,
        registered: client.registered,
        redirect_uri,
        found,
        step_ups: if before.step_up.is_some() {
            before.step_ups + 1
        } else {
            0
        },
        previous_scope: before.existing.and_then(|e| e.scope),
        dpop,
    };
    let (attempt, page, wait) = wait_in_background(ctx, done, listener, authorization);
    Ok(Started {
        attempt,
        url: page,
        wait,
        reused_registration: client.reused_registration,
        warning: client.warning,
    })
}

/// What an earlier sign-in to the server left: its record, and the wider scope it asked for
/// (a step-up) with how many step-ups came in a row.
struct Before {
    existing: Option<SignInRecord>,
    step_up: Option<String>,
    step_ups: u32,
}

impl Before {
    /// Reads the server's sign-in record, and refuses a step-up asked for too many times in a
    /// row.
    async fn load(ctx: &AuthContext, rec: &Server) -> Result<Self, AuthError> {
        let name = &rec.name;
        let (store, server) = (ctx.store.clone(), rec.id);
        let existing = blocking(move || store.get::<SignInRecord>(&server)).await??;
        let step_up = existing.as_ref().and_then(|e| e.wanted_scope.clone());
        let step_ups = existing.as_ref().map(|e| e.step_ups).unwrap_or(0);
        if step_up.is_some() && step_ups >= MAX_STEP_UPS {
            return Err(AuthError::conflict(format!(
                "`{name}` asked for a wider sign-in {MAX_STEP_UPS} times in a row; bosun stops there. Check the server's scopes, sign out (`bosun mcp sign-out {name}`) and sign in afresh"
            )));
        }
        Ok(Self {
            existing,
            step_up,
            step_ups,
        })
    }

    /// Awaits the server's challenge (`probe`); a step-up goes on without one, and asks for
    /// the wider scope with the ones already asked for and held.
    async fn challenge(
        &self,
        probe: impl Future<Output = Result<Option<Challenge>, ProbeError>>,
        name: &str,
        url: &str,
    ) -> Result<Challenge, AuthError> {
        let challenge = probe.await.map_err(|error| AuthError::Unreachable {
            name: name.to_string(),
            url: url.to_string(),
            error,
        })?;
        let mut challenge = match challenge {
            Some(c) => c,
            None if self.step_up.is_some() => Challenge::default(),
            None => {
                return Err(AuthError::conflict(format!(
                    "`{name}` lists its tools without asking for a sign-in; there is nothing to sign in to"
                )));
            }
        };
        if let Some(wider) = &self.step_up {
            let held = self.existing.as_ref().and_then(|e| e.scope.as_deref());
            let union = union_of_scopes(&[challenge.scope.as_deref(), Some(wider), held]);
            challenge.scope = Some(union).filter(|u| !u.is_empty());
        }
        Ok(challenge)
    }
}

/// Refuses to take a client id the person configured for the authorization server the server
/// named before to the one it names now.
fn check_issuer(
    rec: &Server,
    existing: Option<&SignInRecord>,
    found: &discovery::Discovered,
) -> Result<(), AuthError> {
    let name = &rec.name;
    // The resource may name another authorization server than the one bosun signed in with:
    // bosun registers anew there (a registration is never carried to another issuer), and a
    // client id the person configured for the old one is not taken to the new one.
    if let Some(old) = existing.filter(|e| e.issuer != found.issuer) {
        if let Some(id) = rec
            .client_id
            .as_ref()
            .filter(|id| !old.registered && old.client_id == **id)
        {
            return Err(AuthError::conflict(format!(
                "`{name}` now names another authorization server, {}, where bosun signed in at {}; the client id `{id}` you configured came from the old one, so bosun does not take it (or its secret) to the new one. Give a client id from the new one with `bosun mcp edit {name} --client-id ID`, or remove it with `bosun mcp edit {name} --client-id \"\"` to let bosun register there",
                found.issuer, old.issuer
            )));
        }
        info!(server = %name, from = %old.issuer, to = %found.issuer, "the server names another authorization server now; bosun registers there anew");
    }
    Ok(())
}

/// The DPoP prover of a new sign-in (a person's or a machine's) where the authorization server
/// asks for bound tokens: a key pair of the sign-in's own. Refused in words where the server
/// requires proofs bosun cannot make.
pub(super) fn new_prover(
    ctx: &AuthContext,
    server: ServerId,
    name: &str,
    found: &discovery::Discovered,
) -> Result<Option<dpop::Prover>, AuthError> {
    match dpop::wanted(&found.metadata, found.dpop_required) {
        Ok(true) => Ok(Some(authorization_prover(
            ctx,
            server,
            dpop::DpopKey::generate().map_err(|e| {
                AuthError::unavailable(format!("could not sign in to `{name}`: {e}"))
            })?,
        ))),
        Ok(false) => Ok(None),
        Err(why) => Err(AuthError::conflict(format!(
            "could not sign in to `{name}`: {why}"
        ))),
    }
}

/// A prover of `key` for the requests to the authorization server's token endpoint.
pub(super) fn authorization_prover(
    ctx: &AuthContext,
    server: ServerId,
    key: dpop::DpopKey,
) -> dpop::Prover {
    dpop::Prover::new(
        Arc::new(key),
        ctx.nonces.clone(),
        server,
        dpop::Side::Authorization,
    )
}

/// Opens the loopback listener the sign-in's answer comes back to; the answer is the listener
/// and its redirect URI.
async fn listen(rec: &Server) -> Result<(TcpListener, String), AuthError> {
    let name = &rec.name;
    let port = rec.callback_port.unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            AuthError::conflict(format!(
                "port {port} on 127.0.0.1, where the sign-in's answer comes back, is taken by another program; free it, or choose another with `bosun mcp edit {name} --callback-port N`"
            ))
        } else {
            AuthError::unavailable(format!("could not listen on 127.0.0.1:{port} for the sign-in's answer: {e}"))
        }
    })?;
    let local = listener.local_addr().map_err(|e| {
        AuthError::unavailable(format!("could not listen for the sign-in's answer: {e}"))
    })?;
    let redirect_uri = format!("http://127.0.0.1:{}/callback", local.port());
    Ok((listener, redirect_uri))
}

/// The client a sign-in goes with, and where it came from.
struct Client {
    identity: ClientIdentity,
    /// bosun registered it at the authorization server.
    registered: bool,
    /// It is the registration of an earlier sign-in.
    reused_registration: bool,
    /// What bosun could not check before the browser opened, in words.
    warning: Option<String>,
}

/// Chooses the client to sign in with.
async fn choose_client(
    ctx: &AuthContext,
    rec: &Server,
    found: &discovery::Discovered,
    redirect_uri: &str,
    new_client: bool,
) -> Result<Client, AuthError> {
    let name = &rec.name;
    // The client: the one the person configured; else bosun's client metadata document, where
    // the server takes one; else a registration (RFC 7591), and only then.
    let m = &found.metadata;
    let document = rec
        .client_metadata_url
        .clone()
        .filter(|_| m.client_id_metadata_document_supported);
    let not_registered = |what: &str| {
        AuthError::invalid(format!(
            "`{name}` signs in with {what}, not with a client bosun registered; --new-client only drops a client bosun registered"
        ))
    };
    let mut warning = None;
    let (identity, registered, reused_registration) = match (&rec.client_id, document) {
        (Some(_), _) if new_client => return Err(not_registered("the client id you configured")),
        (None, Some(_)) if new_client => {
            return Err(not_registered("bosun's client metadata document"));
        }
        (Some(id), _) => (configured_client(ctx, rec, id, found).await?, false, false),
        (None, Some(document)) => {
            let (identity, not_checked) = document_client(ctx, name, document).await?;
            warning = not_checked;
            (identity, false, false)
        }
        (None, None) => registered_client(ctx, name, found, redirect_uri, new_client).await?,
    };
    Ok(Client {
        identity,
        registered,
        reused_registration,
        warning,
    })
}

/// The client id the person configured, with its secret from the keychain, if any.
async fn configured_client(
    ctx: &AuthContext,
    rec: &Server,
    id: &str,
    found: &discovery::Discovered,
) -> Result<ClientIdentity, AuthError> {
    let keychain = ctx.keychain.clone();
    let key = configured_secret_key(rec.id);
    let secret = blocking(move || keychain.get(&key)).await??;
    let auth = ClientAuth::choose(
        None,
        secret.is_some(),
        &found.metadata.token_endpoint_auth_methods_supported,
    );
    Ok(ClientIdentity {
        client_id: id.to_string(),
        secret,
        auth,
    })
}

/// bosun's client metadata document as the client id, checked first where this machine can
/// reach it; the answer holds the warning to give when it could not be fetched here.
async fn document_client(
    ctx: &AuthContext,
    name: &str,
    document: String,
) -> Result<(ClientIdentity, Option<String>), AuthError> {
    let mut warning = None;
    // Checked before the browser opens: a server that finds it wrong does not redirect.
    // A document this machine cannot reach may still be one the authorization server
    // can (a network or a CA of its own): it fetches it, and decides.
    match client_document::check(&ctx.http, &document).await {
        Ok(()) => {}
        Err(ClientDocumentError::Unreachable { url, why }) => {
            warn!(server = %name, %url, %why, "bosun's client metadata document could not be fetched here; the sign-in goes on");
            warning = Some(format!(
                "bosun could not fetch its client metadata document at {url} to check it ({why}); the authorization server fetches it itself: if its page shows an error instead of coming back here, publish the document where that server can reach it"
            ));
        }
        Err(error) => {
            return Err(AuthError::ClientDocument {
                name: name.to_string(),
                error,
            });
        }
    }
    Ok((
        ClientIdentity {
            client_id: document,
            secret: None,
            auth: ClientAuth::None,
        },
        warning,
    ))
}

/// A client bosun registers (or registered before) at the authorization server; refused in
/// words where the server takes no registration. The answer is the client, that it was
/// registered, and whether it is an earlier registration.
async fn registered_client(
    ctx: &AuthContext,
    name: &str,
    found: &discovery::Discovered,
    redirect_uri: &str,
    new_client: bool,
) -> Result<(ClientIdentity, bool, bool), AuthError> {
    let m = &found.metadata;
    match &m.registration_endpoint {
        // bosun's registration at this issuer, else a new one, kept for the next time.
        Some(endpoint) => {
            if new_client {
                super::registrations::forget(ctx, &found.issuer, None).await?;
            }
            let (identity, reused) = super::registrations::client_for(
                ctx,
                name,
                &found.issuer,
                endpoint,
                redirect_uri,
                &m.token_endpoint_auth_methods_supported,
            )
            .await?;
            Ok((identity, true, reused))
        }
        None if m.client_id_metadata_document_supported => Err(AuthError::conflict(format!(
            "`{name}`'s authorization server takes no registration from apps, but it takes client metadata documents: publish bosun's client metadata at an https:// address you control and give it with `bosun mcp edit {name} --client-metadata-url URL`, or give a client id from the service with `--client-id ID`"
        ))),
        None => Err(AuthError::conflict(format!(
            "`{name}`'s authorization server takes no registration from apps: give bosun a client id from the service's developer settings with `bosun mcp edit {name} --client-id ID` (and `--client-secret-stdin` if it has a secret), or let Claude Code sign in with `--sign-in-by claude-code`"
        ))),
    }
}

/// Keeps the sign-in as under way (with the way to cancel it) and waits for the browser's
/// answer in the background. The answer is the attempt's number, the page for the person to
/// open, and how long the sign-in waits.
fn wait_in_background(
    ctx: &AuthContext,
    done: Finish,
    listener: TcpListener,
    authorization: oauth::Authorization,
) -> (u64, String, Duration) {
    let server = done.server;
    let (tx, rx) = oneshot::channel();
    let attempt = ctx.pending.next.fetch_add(1, Ordering::Relaxed) + 1;
    let wait = wait_limit();
    let page = authorization.url.clone();
    let cancel = Arc::new(Notify::new());
    if let Ok(mut m) = ctx.pending.cancels.lock() {
        m.insert(attempt, (server, cancel.clone()));
    }
    let pending = ctx.pending.clone();
    tokio::spawn(async move {
        let result = done.run(listener, authorization, wait, &cancel).await;
        if let Ok(mut m) = pending.cancels.lock() {
            m.remove(&attempt);
        }
        if let Err(e) = &result {
            warn!(server = %done.name, error = %e, "sign-in failed");
        }
        let _ = tx.send(result);
    });
    if let Ok(mut m) = ctx.pending.attempts.lock() {
        m.insert(attempt, Attempt { server, done: rx });
    }
    (attempt, page, wait)
}

/// A step-up asks for every scope the server asks for now, the wider one it asked for, and the
/// ones held: a server that names only the scope it is missing must not cost the others.
/// Each scope once, in the order met.
fn union_of_scopes(lists: &[Option<&str>]) -> String {
    let mut scopes: Vec<&str> = Vec::new();
    for s in lists.iter().flatten().flat_map(|l| l.split_whitespace()) {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    scopes.join(" ")
}

/// Waits for a started sign-in to end.
pub async fn finish(ctx: &AuthContext, attempt: u64) -> Result<ServerId, AuthError> {
    let taken = ctx
        .pending
        .attempts
        .lock()
        .ok()
        .and_then(|mut m| m.remove(&attempt));
    let Some(a) = taken else {
        return Err(AuthError::not_found(format!(
            "there is no sign-in {attempt} under way; start one with `bosun mcp sign-in NAME`"
        )));
    };
    match a.done.await {
        Ok(Ok(())) => Ok(a.server),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(AuthError::internal("the sign-in stopped without an answer")),
    }
}

/// Cancels a started sign-in that still waits for the browser's answer: its loopback address
/// closes at once, nothing is saved, and whoever waits for it is told it was cancelled. Once the
/// answer has come, the sign-in is completed (it is too late to cancel: the server has already
/// issued the tokens), and whoever waits for it is told how it went.
/// The answer is the server's id.
pub fn cancel(ctx: &AuthContext, attempt: u64) -> Result<ServerId, AuthError> {
    let found = ctx
        .pending
        .cancels
        .lock()
        .ok()
        .and_then(|m| m.get(&attempt).cloned());
    match found {
        Some((server, c)) => {
            // A permit is kept when the sign-in is not waiting at this very moment.
            c.notify_one();
            Ok(server)
        }
        None => Err(AuthError::not_found(format!(
            "there is no sign-in {attempt} under way (it has ended, or was never started)"
        ))),
    }
}

/// What completes a sign-in once the browser's answer comes.
struct Finish {
    ctx: AuthContext,
    server: ServerId,
    name: String,
    identity: ClientIdentity,
    registered: bool,
    redirect_uri: String,
    found: discovery::Discovered,
    step_ups: u32,
    previous_scope: Option<String>,
    /// The proofs of the token request, when the sign-in binds its tokens (DPoP).
    dpop: Option<dpop::Prover>,
}

impl Finish {
    async fn run(
        &self,
        listener: TcpListener,
        authorization: oauth::Authorization,
        wait: Duration,
        cancel: &Notify,
    ) -> Result<(), AuthError> {
        let issuer = Issuer {
            expected: &self.found.issuer,
            advertised: self
                .found
                .metadata
                .authorization_response_iss_parameter_supported,
        };
        let waited = tokio::select! {
            waited = tokio::time::timeout(
                wait,
                callback(&listener, &authorization.state, &issuer, &self.name),
            ) => waited,
            () = cancel.notified() => {
                return Err(AuthError::conflict(format!(
                    "the sign-in to `{}` was cancelled; nothing was saved. Run `bosun mcp sign-in {}` to start again",
                    self.name, self.name
                )));
            }
        };
        let answer = waited
            .map_err(|_| {
                AuthError::unavailable(format!(
                        "the sign-in to `{}` was not finished within {}; nothing was saved. Run `bosun mcp sign-in {}` again",
                        self.name,
                        bosun_shared::time::format_duration(wait),
                        self.name
                    ),
                )
            })??;
        drop(listener);
        let exchanged = oauth::exchange_code(
            &self.ctx.http,
            &self.identity,
            &self.found.metadata.authorization_endpoint,
            &self.found.metadata.token_endpoint,
            &self.redirect_uri,
            &answer,
            authorization.verifier,
            &self.found.resource,
            self.found.scope.as_deref(),
            self.dpop.as_ref(),
        )
        .await;
        let (tokens, token_type) = match exchanged {
            Ok(t) => t,
            Err(e) if e.is_client_refused() && self.registered => {
                // A registration the server forgot since bosun kept it: dropped, so that the
                // next sign-in registers anew.
                super::registrations::forget(
                    &self.ctx,
                    &self.found.issuer,
                    Some(&self.identity.client_id),
                )
                .await?;
                return Err(AuthError::conflict(format!(
                    "`{}`'s authorization server no longer knows the client bosun registered there ({e}); nothing was saved. Run `bosun mcp sign-in {}` again: bosun registers a new client",
                    self.name, self.name
                )));
            }
            Err(e) => return Err(oauth_error(&self.name, e)),
        };
        // Bound only when the server says so: one that answers `Bearer` to a proof did not
        // bind the token, and the key has nothing to do.
        let bound = match (token_type, &self.dpop) {
            (oauth::TokenType::Dpop, Some(prover)) => Some(prover),
            (oauth::TokenType::Dpop | oauth::TokenType::Bearer, _) => None,
        };
        self.save(tokens, bound).await
    }

    /// Saves the whole sign-in: secrets first (all or none), then the record; on a failure of
    /// the record, the secrets go again.
    async fn save(
        &self,
        tokens: oauth::Tokens,
        bound: Option<&dpop::Prover>,
    ) -> Result<(), AuthError> {
        let mut secrets = vec![(access_key(self.server), tokens.access.clone())];
        if let Some(prover) = bound {
            secrets.push((dpop::key_key(self.server), prover.key().keychain_value()));
        }
        if let Some(r) = &tokens.refresh {
            secrets.push((refresh_key(self.server), r.clone()));
        }
        if let (true, Some(s)) = (self.registered, &self.identity.secret) {
            secrets.push((client_secret_key(self.server), s.clone()));
        }
        let keys: Vec<String> = secrets.iter().map(|(k, _)| k.clone()).collect();
        let keychain = self.ctx.keychain.clone();
        // A refresh token of an earlier sign-in must not outlive this one.
        let mut stale = if tokens.refresh.is_none() {
            vec![refresh_key(self.server)]
        } else {
            Vec::new()
        };
        // Nor the DPoP key of an earlier, bound sign-in.
        if bound.is_none() {
            stale.push(dpop::key_key(self.server));
        }
        blocking(move || {
            keychain.set_many(&secrets)?;
            keychain.delete_many(&stale)
        })
        .await??;
        let now = Timestamp::now();
        let m = &self.found.metadata;
        let rec = SignInRecord {
            server: self.server,
            resource: self.found.resource.clone(),
            issuer: self.found.issuer.clone(),
            authorization_endpoint: m.authorization_endpoint.clone(),
            token_endpoint: m.token_endpoint.clone(),
            revocation_endpoint: m.revocation_endpoint.clone(),
            registration_endpoint: m.registration_endpoint.clone(),
            client_id: self.identity.client_id.clone(),
            client_auth: self.identity.auth,
            registered: self.registered,
            redirect_uri: self.redirect_uri.clone(),
            scope: tokens.scope.clone().or_else(|| self.previous_scope.clone()),
            expires_at: tokens.expires_at,
            signed_in_at: now,
            refreshed_at: None,
            refresh_started: None,
            needs_sign_in: None,
            wanted_scope: None,
            step_ups: self.step_ups,
            grant: super::record::Grant::AuthorizationCode,
            dpop: bound.is_some(),
        };
        if let Err(e) = self.ctx.writer.put(&rec).await {
            let keychain = self.ctx.keychain.clone();
            let _ = blocking(move || keychain.delete_many(&keys)).await;
            return Err(AuthError::from(e));
        }
        if let Some(auth) = self.ctx.auth.get() {
            let name = self.name.clone();
            let server = self.server;
            let _ = ractor::call!(auth, |reply| AuthMsg::Start {
                server,
                name,
                reply
            });
        }
        info!(server = %self.name, source = %self.found.source, "signed in");
        Ok(())
    }
}

/// The issuer an authorization response must come from (RFC 9207).
struct Issuer<'a> {
    /// The issuer recorded at discovery.
    expected: &'a str,
    /// Whether its metadata says it sends `iss`.
    advertised: bool,
}

impl Issuer<'_> {
    /// Why an answer carrying `iss` is refused, if it is: an `iss` that is not exactly the
    /// issuer recorded at discovery (no normalisation of case, port, slash or encoding), or none
    /// from a server that said it sends one.
    fn refusal(&self, iss: Option<&str>, name: &str) -> Option<String> {
        match iss {
            Some(iss) if iss != self.expected => Some(format!(
                "the sign-in to `{name}` got an answer from the issuer `{iss}`, not from `{}`, where bosun began it; it was refused (it may come from another authorization server) and nothing was saved. Run `bosun mcp sign-in {name}` again, and if this comes back, tell the server's operator",
                self.expected
            )),
            None if self.advertised => Some(format!(
                "the sign-in to `{name}` got an answer without `iss`, though the authorization server `{}` says it always sends one; it was refused and nothing was saved. Run `bosun mcp sign-in {name}` again, and if this comes back, tell the server's operator",
                self.expected
            )),
            Some(_) | None => None,
        }
    }
}

/// Takes the one answer on the loopback listener: the code, after checking `state` and `iss`.
async fn callback(
    listener: &TcpListener,
    state: &str,
    issuer: &Issuer<'_>,
    name: &str,
) -> Result<String, AuthError> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| AuthError::unavailable(format!("the sign-in's listener failed: {e}")))?;
        let Some(target) = read_target(&mut stream).await else {
            continue;
        };
        let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
            respond(&mut stream, 400, "That is not an answer bosun understands.").await;
            continue;
        };
        if url.path() != "/callback" {
            respond(
                &mut stream,
                404,
                "Not here: bosun waits for the sign-in's answer at /callback.",
            )
            .await;
            continue;
        }
        let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
        if q.get("state").map(String::as_str) != Some(state) {
            respond(
                &mut stream,
                400,
                "This answer does not belong to the sign-in bosun started (its state does not match). Nothing was saved.",
            )
            .await;
            return Err(AuthError::conflict(format!(
                "the sign-in to `{name}` got an answer whose state does not match the one bosun sent, so it was refused and nothing was saved; run `bosun mcp sign-in {name}` again"
            )));
        }
        if let Some(refusal) = issuer.refusal(q.get("iss").map(String::as_str), name) {
            respond(
                &mut stream,
                400,
                "This answer does not come from the authorization server bosun asked (its issuer does not match). Nothing was saved.",
            )
            .await;
            return Err(AuthError::conflict(refusal));
        }
        if let Some(error) = q.get("error") {
            let description = q
                .get("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            respond(
                &mut stream,
                200,
                &format!(
                    "The sign-in was not completed: {error}{description}. You can close this page."
                ),
            )
            .await;
            return Err(AuthError::conflict(format!(
                "the sign-in to `{name}` was not completed: the authorization server answered {error}{description}; nothing was saved"
            )));
        }
        let Some(code) = q.get("code").filter(|c| !c.is_empty()) else {
            respond(&mut stream, 400, "The answer has no code.").await;
            return Err(AuthError::conflict(format!(
                "the sign-in to `{name}` got an answer without a code; nothing was saved"
            )));
        };
        respond(
            &mut stream,
            200,
            &format!("bosun has the answer for {name}. You can close this page."),
        )
        .await;
        return Ok(code.clone());
    }
}

/// The request target of a GET, or `None` for anything else.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_string()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: u16, message: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>bosun</title><p>{}</p>\n",
        message
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::{Issuer, union_of_scopes};

    #[test]
    fn the_iss_of_an_answer_is_compared_exactly() {
        let quiet = Issuer {
            expected: "https://as.example.com/t",
            advertised: false,
        };
        assert!(
            quiet
                .refusal(Some("https://as.example.com/t"), "s")
                .is_none()
        );
        assert!(quiet.refusal(None, "s").is_none());
        for other in [
            "https://as.example.com/t/",
            "https://AS.example.com/t",
            "https://as.example.com:443/t",
            "https://as.example.com/%74",
            "https://evil.example.com/t",
        ] {
            assert!(quiet.refusal(Some(other), "s").is_some(), "{other}");
        }
        let loud = Issuer {
            expected: "https://as.example.com/t",
            advertised: true,
        };
        assert!(
            loud.refusal(None, "s")
                .is_some_and(|r| r.contains("without `iss`"))
        );
        assert!(
            loud.refusal(Some("https://as.example.com/t"), "s")
                .is_none()
        );
    }

    #[test]
    fn a_step_up_asks_for_the_union_of_the_scopes_held_and_asked() {
        assert_eq!(
            union_of_scopes(&[
                Some("mcp:basic"),
                Some("mcp:write"),
                Some("mcp:basic offline_access")
            ]),
            "mcp:basic mcp:write offline_access"
        );
        assert_eq!(union_of_scopes(&[None, Some("a  b"), None]), "a b");
        assert_eq!(union_of_scopes(&[None, None]), "");
    }
}
