//! The clients bosun registered (RFC 7591), kept per authorization server: one registration
//! per issuer, reused by every later sign-in there — a second server behind the same
//! authorization server, a sign-in after a sign-out, a step-up — so that bosun does not leave a
//! trail of clients behind at the service. A registration is found by the issuer recorded at
//! discovery and by nothing else, so a client id is never carried to another issuer: a
//! resource that moves to another authorization server gets a registration of its own there.
//!
//! The store keeps the client id (`registrations[issuer]`), the keychain its secret, if the
//! server issued one, under `oauth/registrations/<hash of the issuer>/client_secret`.
//!
//! A registration the authorization server has forgotten (a service that expires unused
//! clients, a development server that restarted) is dropped as soon as the server refuses the
//! client (`invalid_client`, `unauthorized_client`) for a refresh or a code: the next sign-in
//! registers anew. The server's own authorization page cannot tell bosun (it shows the person an
//! error and does not redirect), so `bosun mcp sign-in NAME --new-client` drops it by hand.

use bosun_shared::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tracing::info;

use super::oauth::{self, ClientIdentity};
use super::record::ClientAuth;
use super::{AuthContext, AuthError};
use bosun_kit::offload::blocking;
use bosun_store::Record;

/// A client bosun registered at one authorization server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistrationRecord {
    /// The issuer identifier, exactly as recorded at discovery.
    pub issuer: String,
    pub client_id: String,
    pub client_auth: ClientAuth,
    /// Whether the server issued a secret (kept in the keychain).
    pub has_secret: bool,
    /// The redirect URI it was registered with (a loopback one: any port will do, RFC 8252).
    pub redirect_uri: String,
    pub registered_at: Timestamp,
}

impl Record for RegistrationRecord {
    const TABLE: &'static str = "registrations";
    const WHAT: &'static str = "registration";
    type Key = str;

    fn key(&self) -> String {
        self.issuer.clone()
    }
}

/// The keychain key of the secret of the client registered at `issuer`.
pub fn secret_key(issuer: &str) -> String {
    let digest = Sha256::digest(issuer.as_bytes());
    let short: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("oauth/registrations/{short}/client_secret")
}

/// The client registered at `issuer`, or a new registration at `endpoint` (kept for the next
/// sign-in there); and whether it is the one kept.
pub async fn client_for(
    ctx: &AuthContext,
    name: &str,
    issuer: &str,
    endpoint: &str,
    redirect_uri: &str,
    supported_auth: &[String],
) -> Result<(ClientIdentity, bool), AuthError> {
    let (store, key) = (ctx.store.clone(), issuer.to_string());
    let kept = blocking(move || store.get::<RegistrationRecord>(&key)).await??;
    if let Some(r) = kept {
        let secret = if r.has_secret {
            let (keychain, key) = (ctx.keychain.clone(), secret_key(issuer));
            blocking(move || keychain.get(&key)).await??
        } else {
            None
        };
        // A secret that went missing makes the registration useless: register again.
        if secret.is_some() || !r.has_secret {
            info!(server = %name, %issuer, "reusing bosun's registration at the authorization server");
            return Ok((
                ClientIdentity {
                    client_id: r.client_id,
                    secret,
                    auth: r.client_auth,
                },
                true,
            ));
        }
    }
    let identity = oauth::register(&ctx.http, endpoint, redirect_uri, supported_auth)
        .await
        .map_err(|error| AuthError::OAuth {
            name: name.to_string(),
            error,
        })?;
    let record = RegistrationRecord {
        issuer: issuer.to_string(),
        client_id: identity.client_id.clone(),
        client_auth: identity.auth,
        has_secret: identity.secret.is_some(),
        redirect_uri: redirect_uri.to_string(),
        registered_at: Timestamp::now(),
    };
    // The secret first, then the record that says it is there.
    let (keychain, key, secret) = (
        ctx.keychain.clone(),
        secret_key(issuer),
        identity.secret.clone(),
    );
    blocking(move || match &secret {
        Some(s) => keychain.set(&key, s),
        None => keychain.delete_many(&[key]),
    })
    .await??;
    ctx.writer.put(&record).await?;
    info!(server = %name, %issuer, "registered bosun at the authorization server");
    Ok((identity, false))
}

/// Drops the registration kept for `issuer` (and its secret), if it is the client
/// `client_id`: the authorization server refused it, or the person asked for a new one. A
/// registration made since, by another sign-in, stays.
pub async fn forget(
    ctx: &AuthContext,
    issuer: &str,
    client_id: Option<&str>,
) -> Result<bool, AuthError> {
    let (store, key) = (ctx.store.clone(), issuer.to_string());
    let Some(kept) = blocking(move || store.get::<RegistrationRecord>(&key)).await?? else {
        return Ok(false);
    };
    if client_id.is_some_and(|id| id != kept.client_id) {
        return Ok(false);
    }
    // The record first: a secret without its record is never read.
    ctx.writer.delete::<RegistrationRecord>(issuer).await?;
    let (keychain, key) = (ctx.keychain.clone(), secret_key(issuer));
    blocking(move || keychain.delete_many(&[key])).await??;
    info!(%issuer, client_id = %kept.client_id, "dropped bosun's registration at the authorization server");
    Ok(true)
}
