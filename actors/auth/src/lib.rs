//! Signing in to MCP servers with OAuth (the MCP authorization spec, 2025-11-25), and keeping
//! the tokens fresh with one actor per signed-in server.
//!
//! - [`challenge`]: the `WWW-Authenticate` header.
//! - [`discovery`]: where to sign in (RFC 9728, RFC 8414, OpenID discovery, defaults).
//! - [`oauth`]: registration, the authorization URL, code exchange, refresh, revocation.
//! - [`record`]: a sign-in as stored (redb for what is not secret, the keychain for tokens).
//! - [`signin`]: the person's sign-in: the browser, the loopback listener, the code exchange.
//! - [`client_credentials`]: a machine's sign-in (OAuth client credentials, with a client secret
//!   or a private key), no browser, renewed by a new grant.
//! - [`registrations`]: the clients bosun registered, one per authorization server, reused.
//! - [`refresher`]: the TokenRefresher actor, one per signed-in server, the only one that
//!   refreshes; [`Auth`] supervises them.

pub mod challenge;
pub mod client_credentials;
pub mod client_document;
pub mod discovery;
pub mod dpop;
mod error;
pub mod jws;
pub use error::{AuthError, ProbeError};
pub mod http_body;
pub mod oauth;
pub mod record;
pub mod refresher;
pub mod registrations;
pub mod signin;
pub mod web_address;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bosun_shared::ServerId;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tracing::{error, info, warn};

use bosun_kit::handle::ActorHandle;
use bosun_kit::keychain::Keychain;
use bosun_kit::offload::blocking;
use bosun_kit::supervision::{RestartBudget, RestartPolicy, Verdict};
use bosun_store::writer::StoreWriter;
use bosun_store::{Store, StoreError};
use record::SignInRecord;
use refresher::{RefresherArgs, RefresherMsg, TokenRefresher};

/// The refreshers that are running, for callers to ask directly (asking Auth would make every
/// server's callers wait for one server's refresh).
#[derive(Clone, Default)]
pub struct Refreshers(Arc<RwLock<HashMap<ServerId, ActorRef<RefresherMsg>>>>);

impl Refreshers {
    fn get(&self, server: ServerId) -> Option<ActorRef<RefresherMsg>> {
        self.0.read().ok().and_then(|m| m.get(&server).cloned())
    }

    fn insert(&self, server: ServerId, actor: ActorRef<RefresherMsg>) {
        if let Ok(mut m) = self.0.write() {
            m.insert(server, actor);
        }
    }

    fn remove(&self, server: ServerId) {
        if let Ok(mut m) = self.0.write() {
            m.remove(&server);
        }
    }
}

/// What signing in and the refreshers work with.
#[derive(Clone)]
pub struct AuthContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub keychain: Keychain,
    pub http: reqwest::Client,
    pub refreshers: Refreshers,
    pub auth: ActorHandle<AuthMsg>,
    /// Sign-ins under way, waiting for the person's browser.
    pub pending: signin::Pending,
    /// The DPoP nonces servers gave (RFC 9449), per server, for the life of bosund.
    pub nonces: dpop::Nonces,
    /// The servers' names, which the MCP registry keeps (a crate above this one): a refresher
    /// is named after its server.
    pub server_names: ServerNames,
    /// Told when a sign-in can no longer be used, with the server's name and why: bosund
    /// tells the person (the events, and so the desktop's notifications).
    pub sign_in_lost: SignInLost,
}

/// What is told when a server's sign-in can no longer be used: its name, and why.
pub type SignInLost = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Reads the name of every MCP server, by id, from the store: given by bosund, which knows the
/// registry's records, so that sign-in need not.
pub type ServerNames = fn(&Store) -> Result<Vec<(ServerId, String)>, StoreError>;

impl AuthContext {
    pub fn new(
        store: Store,
        writer: StoreWriter,
        keychain: Keychain,
        server_names: ServerNames,
    ) -> Self {
        Self {
            store,
            writer,
            keychain,
            http: oauth::http_client(),
            refreshers: Refreshers::default(),
            auth: ActorHandle::default(),
            pending: signin::Pending::default(),
            nonces: dpop::Nonces::default(),
            server_names,
            sign_in_lost: Arc::new(|_, _| {}),
        }
    }

    /// With `told` told of each sign-in that can no longer be used.
    pub fn with_sign_in_lost(mut self, told: SignInLost) -> Self {
        self.sign_in_lost = told;
        self
    }
}

pub enum AuthMsg {
    /// A server was signed in: start (or restart) its refresher.
    Start {
        server: ServerId,
        name: String,
        reply: RpcReplyPort<()>,
    },
    /// Sign a server out: its refresher revokes and forgets (or, with none, the record goes).
    SignOut {
        server: ServerId,
        reply: RpcReplyPort<Result<(), AuthError>>,
    },
    /// The refresher of a signed-in server, started when it is not running yet (a request that
    /// comes while the daemon is starting); `None` when there is no sign-in or Auth gave up on
    /// it.
    Refresher {
        server: ServerId,
        reply: RpcReplyPort<Option<ActorRef<RefresherMsg>>>,
    },
}

/// The supervisor of the TokenRefreshers.
pub struct Auth;

pub struct AuthState {
    ctx: AuthContext,
    by_actor: HashMap<ActorId, (ServerId, String)>,
    budgets: HashMap<ServerId, RestartBudget>,
    /// The servers whose refresher failed too often, until they are signed in again.
    given_up: HashSet<ServerId>,
}

impl Actor for Auth {
    type Msg = AuthMsg;
    type State = AuthState;
    type Arguments = AuthContext;

    async fn pre_start(
        &self,
        _myself: ActorRef<AuthMsg>,
        ctx: AuthContext,
    ) -> Result<AuthState, ActorProcessingErr> {
        Ok(AuthState {
            ctx,
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
            given_up: HashSet::new(),
        })
    }

    /// Every sign-in the store has gets its refresher back.
    async fn post_start(
        &self,
        myself: ActorRef<AuthMsg>,
        state: &mut AuthState,
    ) -> Result<(), ActorProcessingErr> {
        let store = state.ctx.store.clone();
        let names = state.ctx.server_names;
        let (sign_ins, servers) = tokio::task::spawn_blocking(move || {
            Ok::<_, bosun_store::StoreError>((store.all::<SignInRecord>()?, names(&store)?))
        })
        .await??;
        for s in sign_ins {
            let name = servers
                .iter()
                .find(|(id, _)| *id == s.server)
                .map(|(_, name)| name.clone())
                .unwrap_or_else(|| s.server.to_string());
            state.start(&myself, s.server, name).await?;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<AuthMsg>,
        msg: AuthMsg,
        state: &mut AuthState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("auth"), async move {
            match msg {
                AuthMsg::Start {
                    server,
                    name,
                    reply,
                } => {
                    if let Some(old) = state.ctx.refreshers.get(server) {
                        state.by_actor.remove(&old.get_id());
                        old.stop(Some("signed in again".into()));
                    }
                    state.given_up.remove(&server);
                    state.budgets.remove(&server);
                    state.start(&myself, server, name).await?;
                    let _ = reply.send(());
                }
                AuthMsg::Refresher { server, reply } => {
                    let running = match state.ctx.refreshers.get(server) {
                        Some(r) => Some(r),
                        None if state.given_up.contains(&server) => None,
                        None => state.start_if_signed_in(&myself, server).await?,
                    };
                    let _ = reply.send(running);
                }
                AuthMsg::SignOut { server, reply } => match state.ctx.refreshers.get(server) {
                    Some(r) => {
                        state.by_actor.remove(&r.get_id());
                        state.ctx.refreshers.remove(server);
                        // The refresher revokes (a network call): the answer goes back from a task,
                        // so Auth is not held up.
                        tokio::spawn(async move {
                            let result = ractor::call!(r, |reply| RefresherMsg::SignOut { reply })
                                .unwrap_or_else(|e| {
                                    Err(AuthError::internal(format!(
                                        "the token refresher did not answer: {e}"
                                    )))
                                });
                            let _ = reply.send(result);
                        });
                    }
                    None => {
                        let _ = reply.send(refresher::forget(&state.ctx, server).await);
                    }
                },
            }
            Ok(())
        })
        .await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<AuthMsg>,
        event: SupervisionEvent,
        state: &mut AuthState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some((server, _)) = state.by_actor.remove(&cell.get_id()) {
                    state.ctx.refreshers.remove(server);
                }
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some((server, name)) = state.by_actor.remove(&cell.get_id()) else {
                    return Ok(());
                };
                state.ctx.refreshers.remove(server);
                let budget = state
                    .budgets
                    .entry(server)
                    .or_insert_with(|| RestartBudget::new(RestartPolicy::DEFAULT));
                match budget.on_failure(Instant::now()) {
                    Verdict::Restart { n } => {
                        warn!(server = %name, restart = n, error = %err, "restarting the token refresher");
                        state.start(&myself, server, name).await?;
                    }
                    Verdict::GiveUp => {
                        state.given_up.insert(server);
                        error!(server = %name, reason = %budget.give_up_reason(&err.to_string()), "gave up on the token refresher");
                    }
                }
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

impl AuthState {
    /// Starts the refresher of `server` if the store has a sign-in for it.
    async fn start_if_signed_in(
        &mut self,
        myself: &ActorRef<AuthMsg>,
        server: ServerId,
    ) -> Result<Option<ActorRef<RefresherMsg>>, ActorProcessingErr> {
        let store = self.ctx.store.clone();
        let names = self.ctx.server_names;
        let (sign_in, servers) = tokio::task::spawn_blocking(move || {
            Ok::<_, bosun_store::StoreError>((store.get::<SignInRecord>(&server)?, names(&store)?))
        })
        .await??;
        if sign_in.is_none() {
            return Ok(None);
        }
        let name = servers
            .into_iter()
            .find(|(id, _)| *id == server)
            .map_or_else(|| server.to_string(), |(_, name)| name);
        self.start(myself, server, name).await?;
        Ok(self.ctx.refreshers.get(server))
    }

    async fn start(
        &mut self,
        myself: &ActorRef<AuthMsg>,
        server: ServerId,
        name: String,
    ) -> Result<(), ActorProcessingErr> {
        let args = RefresherArgs {
            ctx: self.ctx.clone(),
            server,
            server_name: name.clone(),
        };
        let (actor, _) = Actor::spawn_linked(None, TokenRefresher, args, myself.get_cell()).await?;
        self.by_actor.insert(actor.get_id(), (server, name.clone()));
        self.ctx.refreshers.insert(server, actor);
        info!(server = %name, "token refresher started");
        Ok(())
    }
}

/// What bosun holds for a server reached by address.
pub enum Access {
    /// Not signed in by bosun (no sign-in, or the server needs none).
    None,
    /// An access token valid for the time asked.
    Token(String),
    /// An access token bound to bosun's DPoP key (RFC 9449): every request that carries it
    /// needs a fresh proof from the prover.
    Dpop { token: String, prover: dpop::Prover },
}

/// The access token for `server`, valid for at least `min_valid`, refreshed first when it is
/// not. `refused`: the fingerprint of a token the server just refused.
pub async fn access(
    ctx: &AuthContext,
    server: ServerId,
    min_valid: Duration,
    refused: Option<String>,
) -> Result<Access, AuthError> {
    let running = match ctx.refreshers.get(server) {
        Some(r) => Some(r),
        None => refresher_of(ctx, server).await?,
    };
    if let Some(r) = running {
        let answer = ractor::call!(r, |reply| RefresherMsg::Token {
            min_valid,
            refused,
            reply
        })
        .map_err(|e| {
            AuthError::unavailable(format!(
                "the token refresher did not answer ({e}); try again"
            ))
        })?;
        let token = answer?;
        return match dpop::prover_for(ctx, server, dpop::Side::Resource).await? {
            Some(prover) => Ok(Access::Dpop { token, prover }),
            None => Ok(Access::Token(token)),
        };
    }
    let store = ctx.store.clone();
    let rec = blocking(move || store.get::<SignInRecord>(&server)).await??;
    match rec {
        None => Ok(Access::None),
        Some(_) => Err(AuthError::unavailable(
            "the server's token refresher failed too often and bosun gave up on it; sign in again with `bosun mcp sign-in`, or restart bosund with `bosun daemon stop`",
        )),
    }
}

/// Asks Auth for the refresher of `server` (started if it is signed in and not running yet).
async fn refresher_of(
    ctx: &AuthContext,
    server: ServerId,
) -> Result<Option<ActorRef<RefresherMsg>>, AuthError> {
    let Some(auth) = ctx.auth.get() else {
        return Ok(None);
    };
    ractor::call!(auth, |reply| AuthMsg::Refresher { server, reply }).map_err(|e| {
        AuthError::unavailable(format!(
            "bosun's sign-in keeper did not answer ({e}); try again"
        ))
    })
}

/// Keeps the wider scope a server asked for, for the next sign-in.
pub async fn want_scope(ctx: &AuthContext, server: ServerId, scope: String) {
    if let Some(r) = ctx.refreshers.get(server) {
        let _ = ractor::call!(r, |reply| RefresherMsg::WantScope { scope, reply });
    }
}

/// Signs a server out (revoking where it offers that); a server not signed in is left as is.
pub async fn sign_out(ctx: &AuthContext, server: ServerId) -> Result<(), AuthError> {
    let Some(auth) = ctx.auth.get() else {
        return refresher::forget(ctx, server).await;
    };
    ractor::call!(auth, |reply| AuthMsg::SignOut { server, reply })
        .map_err(|e| AuthError::internal(format!("bosund's sign-ins did not answer: {e}")))?
}
