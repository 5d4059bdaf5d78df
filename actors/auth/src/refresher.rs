//! TokenRefresher: one actor per signed-in server, the only one that refreshes its tokens.
//!
//! Everyone who needs a token (List tools, a run about to start) asks it. Its mailbox makes
//! refreshes one at a time: twenty runs asking at once for an expired token make one refresh,
//! and the nineteen asking after it get its new token. A refresh is done in this order, so a
//! crash anywhere leaves something bosun can explain:
//!
//! 1. the marker `refresh_started` is committed (durably) to the sign-in's record;
//! 2. the request goes out;
//! 3. the new refresh token is saved to the keychain, then the new access token;
//! 4. the record (expiry, scope) is committed with the marker cleared;
//! 5. only then is the new access token handed to anyone.
//!
//! Found at startup, the marker means a refresh was cut off: the refresher tries the stored
//! refresh token at once. If the server took it (the crash came before it rotated), all is
//! well; if it refuses it (the crash fell between the rotation and the save), the person is
//! told plainly to sign in again — not later, by a puzzling failure.
//!
//! After a refused refresh the stored token is read once more (another refresh may just have
//! saved a new one) before the person is asked to sign in again; a token that is still refused
//! right after a refresh is not refreshed again in a loop.

use std::time::Duration;

use crate::AuthError;
use bosun_shared::{ServerId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{Instrument, info, warn};

use super::AuthContext;
use super::client_credentials::{self, Renewed};
use super::dpop;
use super::oauth::{self, ClientIdentity};
use super::record::{
    Grant, SignInRecord, access_key, client_secret_key, configured_secret_key, machine_secret_key,
    private_key_key, refresh_key,
};
use bosun_kit::offload::blocking;

/// A token is refreshed this long before it expires (or a tenth of its life, when shorter).
const MARGIN: Duration = Duration::from_secs(60);

/// A token obtained less than this long ago is not refreshed just to live longer: the new one
/// would not, and every run of a burst would otherwise refresh once more.
const FRESH: Duration = Duration::from_secs(60);

/// A short, one-way name for a token, to say which token was refused without holding it.
pub fn fingerprint(token: &str) -> String {
    bosun_shared::gateway::fingerprint(token)
}

pub enum RefresherMsg {
    /// An access token valid for at least `min_valid`. `refused` is the fingerprint of a token
    /// the server just refused: that one is refreshed (once), not handed out again.
    Token {
        min_valid: Duration,
        refused: Option<String>,
        reply: RpcReplyPort<Result<String, AuthError>>,
    },
    /// Time to refresh ahead of expiry.
    Tick,
    /// The server asked for a wider scope (403 `insufficient_scope`): kept for the next
    /// sign-in.
    WantScope {
        scope: String,
        reply: RpcReplyPort<()>,
    },
    /// The person signed out: revoke, forget, and stop.
    SignOut {
        reply: RpcReplyPort<Result<(), AuthError>>,
    },
}

pub struct TokenRefresher;

pub struct RefresherArgs {
    pub ctx: AuthContext,
    pub server: ServerId,
    pub server_name: String,
}

pub struct RefresherState {
    ctx: AuthContext,
    server: ServerId,
    name: String,
    rec: Option<SignInRecord>,
    access: Option<String>,
    /// Everything this actor logs is in its span, with the server as a field.
    span: tracing::Span,
}

impl Actor for TokenRefresher {
    type Msg = RefresherMsg;
    type State = RefresherState;
    type Arguments = RefresherArgs;

    /// Its state comes from the store and the keychain, so a restart loses nothing.
    async fn pre_start(
        &self,
        _myself: ActorRef<RefresherMsg>,
        args: RefresherArgs,
    ) -> Result<RefresherState, ActorProcessingErr> {
        let mut state = RefresherState {
            ctx: args.ctx,
            server: args.server,
            name: args.server_name,
            rec: None,
            access: None,
            span: tracing::info_span!("token_refresher", server = %args.server),
        };
        state.reload().await?;
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<RefresherMsg>,
        state: &mut RefresherState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        async move {
            let cut_off = state
                .rec
                .as_ref()
                .is_some_and(|r| r.refresh_started.is_some());
            if cut_off {
                warn!(server = %state.name, "a token refresh was cut off by a crash; trying the stored token");
                if let Err(e) = state.refresh(true).await {
                    warn!(server = %state.name, error = %e, "the refresh after a cut-off one failed");
                }
            }
            state.schedule(&myself);
            Ok(())
        }
        .instrument(span)
        .await
    }

    async fn handle(
        &self,
        myself: ActorRef<RefresherMsg>,
        msg: RefresherMsg,
        state: &mut RefresherState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        async move {
            match msg {
                RefresherMsg::Token {
                    min_valid,
                    refused,
                    reply,
                } => {
                    let result = state.token(min_valid, refused.as_deref()).await;
                    state.schedule(&myself);
                    let _ = reply.send(result);
                }
                RefresherMsg::Tick => {
                    if state.expires_within(state.margin())
                        && let Err(e) = state.refresh(false).await
                    {
                        warn!(server = %state.name, error = %e, "refreshing ahead of expiry failed");
                    }
                    state.schedule(&myself);
                }
                RefresherMsg::WantScope { scope, reply } => {
                    if let Some(mut rec) = state.rec.clone() {
                        rec.wanted_scope = Some(scope);
                        match state.ctx.writer.put(&rec).await {
                            Ok(()) => state.rec = Some(rec),
                            Err(e) => {
                                warn!(server = %state.name, error = %e, "could not keep the wider scope asked for")
                            }
                        }
                    }
                    let _ = reply.send(());
                }
                RefresherMsg::SignOut { reply } => {
                    let result = state.sign_out().await;
                    let _ = reply.send(result);
                    myself.stop(Some("signed out".into()));
                }
            }
            Ok(())
        }
        .instrument(span)
        .await
    }
}

fn needs_sign_in(name: &str, why: &str) -> AuthError {
    AuthError::NeedsSignIn {
        name: name.to_string(),
        why: why.to_string(),
    }
}

impl RefresherState {
    async fn reload(&mut self) -> Result<(), AuthError> {
        let (store, server) = (self.ctx.store.clone(), self.server);
        self.rec = blocking(move || store.get::<SignInRecord>(&server)).await??;
        let keychain = self.ctx.keychain.clone();
        let key = access_key(self.server);
        self.access = blocking(move || keychain.get(&key)).await??;
        Ok(())
    }

    fn margin(&self) -> Duration {
        let life = self
            .rec
            .as_ref()
            .and_then(|r| Some((r.expires_at?, r.refreshed_at.unwrap_or(r.signed_in_at))))
            .map(|(exp, from)| {
                Duration::from_millis(exp.as_millis().saturating_sub(from.as_millis()))
            });
        match life {
            Some(l) => MARGIN.min(l / 10),
            None => MARGIN,
        }
    }

    /// How long ago the access token was obtained.
    fn age(&self) -> Duration {
        self.rec.as_ref().map_or(Duration::MAX, |r| {
            Timestamp::now().since(r.refreshed_at.unwrap_or(r.signed_in_at))
        })
    }

    /// Whether the access token expires within `d` (a token with no known expiry never does).
    fn expires_within(&self, d: Duration) -> bool {
        let Some(exp) = self.rec.as_ref().and_then(|r| r.expires_at) else {
            return false;
        };
        Timestamp::now()
            .as_millis()
            .saturating_add(bosun_shared::time::millis(d))
            >= exp.as_millis()
    }

    fn schedule(&self, myself: &ActorRef<RefresherMsg>) {
        let Some(rec) = self.rec.as_ref().filter(|r| r.is_signed_in()) else {
            return;
        };
        let Some(exp) = rec.expires_at else {
            return;
        };
        let due = exp
            .as_millis()
            .saturating_sub(bosun_shared::time::millis(self.margin()))
            .saturating_sub(Timestamp::now().as_millis());
        // At most hourly, so a clock change is noticed; at least a second apart.
        let wait =
            Duration::from_millis(due).clamp(Duration::from_secs(1), Duration::from_secs(3600));
        drop(myself.send_after(wait, || RefresherMsg::Tick));
    }

    async fn token(
        &mut self,
        min_valid: Duration,
        refused: Option<&str>,
    ) -> Result<String, AuthError> {
        let rec = self
            .rec
            .clone()
            .ok_or_else(|| needs_sign_in(&self.name, "it is not signed in"))?;
        if let Some(why) = &rec.needs_sign_in {
            return Err(needs_sign_in(&self.name, why));
        }
        let current = self.access.clone();
        let was_refused = match (&current, refused) {
            (Some(t), Some(r)) => fingerprint(t) == r,
            (Some(_) | None, None) | (None, Some(_)) => false,
        };
        if was_refused
            && rec
                .refreshed_at
                .is_some_and(|t| Timestamp::now().since(t) < Duration::from_secs(5))
        {
            // Refreshed a moment ago and still refused: another refresh would not help.
            let why = "the server refused a token it had just issued";
            self.mark_needs_sign_in(why).await?;
            return Err(needs_sign_in(&self.name, why));
        }
        match current {
            Some(t) if !was_refused && !self.expires_within(self.margin()) => {
                // Valid now. Refreshed for a longer-lived caller only when that would gain
                // something: a token obtained moments ago lives as long as the server gives.
                if self.expires_within(min_valid) && self.age() > FRESH {
                    self.refresh(false).await
                } else {
                    Ok(t)
                }
            }
            Some(_) | None => self.refresh(false).await,
        }
    }

    async fn identity(&self, rec: &SignInRecord) -> Result<ClientIdentity, AuthError> {
        let keychain = self.ctx.keychain.clone();
        let key = if rec.registered {
            client_secret_key(self.server)
        } else {
            configured_secret_key(self.server)
        };
        let secret = blocking(move || keychain.get(&key)).await??;
        Ok(ClientIdentity {
            client_id: rec.client_id.clone(),
            secret,
            auth: rec.client_auth,
        })
    }

    /// Refreshes now. `cut_off`: the record's marker is from a refresh a crash cut off.
    async fn refresh(&mut self, cut_off: bool) -> Result<String, AuthError> {
        let Some(mut rec) = self.rec.clone() else {
            return Err(needs_sign_in(&self.name, "it is not signed in"));
        };
        if rec.grant == Grant::ClientCredentials {
            // A machine's sign-in has no refresh token: renewing is a new grant.
            return self.renew_grant(&rec).await;
        }
        let keychain = self.ctx.keychain.clone();
        let key = refresh_key(self.server);
        let Some(refresh) = blocking(move || keychain.get(&key)).await?? else {
            let why = "the server gave no refresh token, and the access token has expired";
            self.mark_needs_sign_in(why).await?;
            return Err(needs_sign_in(&self.name, why));
        };
        let identity = self.identity(&rec).await?;
        // A bound sign-in refreshes with a proof from the same key (RFC 9449 §5).
        let dpop = dpop::prover_for(&self.ctx, self.server, dpop::Side::Authorization).await?;
        // 1. The marker, durably, before the request.
        rec.refresh_started = Some(Timestamp::now());
        self.ctx.writer.put(&rec).await?;
        self.rec = Some(rec.clone());
        bosun_kit::crash::point("refresh-before-request");
        // 2. The request.
        let answer = oauth::refresh(
            &self.ctx.http,
            &identity,
            &rec.authorization_endpoint,
            &rec.token_endpoint,
            &refresh,
            &rec.resource,
            rec.scope.as_deref(),
            dpop.as_ref(),
        )
        .await;
        match answer {
            Ok((tokens, _)) => {
                bosun_kit::crash::point("refresh-after-answer");
                self.save_refreshed(rec, tokens).await
            }
            Err(e) if e.is_invalid_grant() => {
                // Read the stored token once more: another refresh may just have saved one.
                let keychain = self.ctx.keychain.clone();
                let key = refresh_key(self.server);
                let stored = blocking(move || keychain.get(&key)).await??;
                if stored.as_deref().is_some_and(|s| s != refresh) {
                    rec.refresh_started = None;
                    self.ctx.writer.put(&rec).await?;
                    self.reload().await?;
                    return Box::pin(self.refresh(false)).await;
                }
                let why = if cut_off {
                    "a token refresh was cut off by a crash and the server no longer takes the old token".to_string()
                } else {
                    format!("the server refused to refresh the sign-in ({e})")
                };
                self.mark_needs_sign_in(&why).await?;
                Err(needs_sign_in(&self.name, &why))
            }
            Err(e) if e.is_client_refused() => self.client_refused(&rec, &e).await,
            Err(e) => {
                // The request did not get an answer: the old tokens stay, the marker too when
                // the server may have seen it (cleared only when it surely did not).
                if matches!(e, oauth::OAuthError::Unreachable { .. }) && !cut_off {
                    rec.refresh_started = None;
                    self.ctx.writer.put(&rec).await?;
                    self.rec = Some(rec);
                }
                Err(AuthError::unavailable(format!(
                    "could not refresh the sign-in to `{}`: {e}",
                    self.name
                )))
            }
        }
    }

    /// A machine's sign-in renewed by a new client-credentials grant, or marked as needing a
    /// sign-in when the server refuses it.
    async fn renew_grant(&mut self, rec: &SignInRecord) -> Result<String, AuthError> {
        match client_credentials::renew(&self.ctx, &self.name, rec).await? {
            Renewed::Token(rec, access) => {
                self.rec = Some(*rec);
                self.access = Some(access.clone());
                Ok(access)
            }
            Renewed::Refused(why) => {
                self.mark_needs_sign_in(&why).await?;
                Err(needs_sign_in(&self.name, &why))
            }
        }
    }

    /// Steps 3 to 5 of a refresh: the new tokens saved, then the record, then the access token
    /// handed out.
    async fn save_refreshed(
        &mut self,
        mut rec: SignInRecord,
        tokens: oauth::Tokens,
    ) -> Result<String, AuthError> {
        // 3. The refresh token first, then the access token.
        let keychain = self.ctx.keychain.clone();
        let server = self.server;
        let (new_refresh, new_access) = (tokens.refresh.clone(), tokens.access.clone());
        blocking(move || {
            if let Some(r) = &new_refresh {
                keychain.set(&refresh_key(server), r)?;
            }
            keychain.set(&access_key(server), &new_access)
        })
        .await??;
        // 4. The record, marker cleared.
        rec.expires_at = tokens.expires_at;
        if tokens.scope.is_some() {
            rec.scope = tokens.scope.clone();
        }
        rec.refreshed_at = Some(Timestamp::now());
        rec.refresh_started = None;
        self.ctx.writer.put(&rec).await?;
        bosun_kit::crash::point("refresh-after-save");
        self.rec = Some(rec);
        self.access = Some(tokens.access.clone());
        info!(server = %self.name, "refreshed the sign-in");
        // 5. Now it may be used.
        Ok(tokens.access)
    }

    /// The server refused the client itself: a client bosun registered is forgotten, and the
    /// sign-in marked as needing the person.
    async fn client_refused(
        &mut self,
        rec: &SignInRecord,
        e: &oauth::OAuthError,
    ) -> Result<String, AuthError> {
        // The client itself is refused: every later refresh would be too. A client
        // bosun registered is dropped, so the next sign-in registers a new one.
        let why = if rec.registered {
            super::registrations::forget(&self.ctx, &rec.issuer, Some(&rec.client_id)).await?;
            format!(
                "the authorization server no longer knows the client bosun registered there ({e}); the next sign-in registers a new one"
            )
        } else {
            format!(
                "the authorization server refused the client id it was given ({e}); check it with `bosun mcp show {}` and change it with `bosun mcp edit {} --client-id ID`",
                self.name, self.name
            )
        };
        self.mark_needs_sign_in(&why).await?;
        Err(needs_sign_in(&self.name, &why))
    }

    /// The tokens are no good: forget them, and keep why for the person.
    async fn mark_needs_sign_in(&mut self, why: &str) -> Result<(), AuthError> {
        let Some(mut rec) = self.rec.clone() else {
            return Ok(());
        };
        let keychain = self.ctx.keychain.clone();
        let keys = vec![access_key(self.server), refresh_key(self.server)];
        blocking(move || keychain.delete_many(&keys)).await??;
        rec.needs_sign_in = Some(why.to_string());
        rec.refresh_started = None;
        self.ctx.writer.put(&rec).await?;
        warn!(server = %self.name, %why, "the sign-in is no longer usable");
        (self.ctx.sign_in_lost)(&self.name, why);
        self.rec = Some(rec);
        self.access = None;
        Ok(())
    }

    /// Revokes the refresh token where the server offers it, then forgets everything.
    async fn sign_out(&mut self) -> Result<(), AuthError> {
        if let Some(rec) = self.rec.clone() {
            let keychain = self.ctx.keychain.clone();
            let key = refresh_key(self.server);
            let refresh = blocking(move || keychain.get(&key)).await??;
            if let (Some(endpoint), Some(token)) = (&rec.revocation_endpoint, refresh) {
                let identity = self.identity(&rec).await?;
                if let Err(e) = oauth::revoke(&self.ctx.http, &identity, endpoint, &token).await {
                    // Forgotten here all the same; the server will expire it.
                    warn!(server = %self.name, error = %e, "could not revoke the refresh token");
                }
            }
        }
        forget(&self.ctx, self.server).await?;
        self.rec = None;
        self.access = None;
        info!(server = %self.name, "signed out");
        Ok(())
    }
}

/// Deletes a server's tokens, its registered client's secret, a machine's secret or private
/// key, and its sign-in record.
pub async fn forget(ctx: &AuthContext, server: ServerId) -> Result<(), AuthError> {
    let keychain = ctx.keychain.clone();
    let keys = vec![
        access_key(server),
        refresh_key(server),
        client_secret_key(server),
        machine_secret_key(server),
        private_key_key(server),
        dpop::key_key(server),
    ];
    blocking(move || keychain.delete_many(&keys)).await??;
    ctx.writer
        .delete::<SignInRecord>(&server)
        .await
        .map_err(AuthError::from)
}
