//! A sign-in as stored: in redb (`oauth[server id]`) only what is not secret — the endpoints,
//! the client id, the scopes, the expiry as an absolute time, and the durable marker of a
//! refresh under way; the tokens and a client secret in the keychain, under
//! `mcp/<server id>/oauth/…`.

use bosun_shared::{ServerId, Timestamp};
use serde::{Deserialize, Serialize};

use bosun_store::Record;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInRecord {
    pub server: ServerId,
    /// The RFC 8707 resource the tokens are for.
    pub resource: String,
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub revocation_endpoint: Option<String>,
    pub registration_endpoint: Option<String>,
    pub client_id: String,
    pub client_auth: ClientAuth,
    /// Registered by bosun itself (RFC 7591), rather than given by the person.
    pub registered: bool,
    /// The redirect URI the client was registered with.
    pub redirect_uri: String,
    /// The scopes granted.
    pub scope: Option<String>,
    /// When the access token expires.
    pub expires_at: Option<Timestamp>,
    pub signed_in_at: Timestamp,
    pub refreshed_at: Option<Timestamp>,
    /// Set, durably, just before a refresh request goes out; cleared once its answer is saved.
    /// Found set at startup, it means a refresh was cut off by a crash.
    pub refresh_started: Option<Timestamp>,
    /// Why the person must sign in again, when they must (the tokens are gone then).
    pub needs_sign_in: Option<String>,
    /// A wider scope the server asked for (403 `insufficient_scope`), for the next sign-in.
    pub wanted_scope: Option<String>,
    /// Sign-ins in a row that asked for a wider scope; bosun stops after 3.
    pub step_ups: u32,
    /// How the tokens are got: a person's authorization (absent in older records), or the
    /// client's own credentials (a machine's sign-in, renewed by a new grant).
    #[serde(default, skip_serializing_if = "Grant::is_authorization_code")]
    pub grant: Grant,
    /// The tokens are bound to a DPoP key (RFC 9449) kept in the keychain
    /// (`dpop::key_key`): every token request and every request to the server carries a proof.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop: bool,
}

/// How a sign-in's tokens are got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person signed in in a browser (authorization code with PKCE); renewed by refresh.
    #[default]
    AuthorizationCode,
    /// bosun signs in as a machine with the client's credentials (RFC 6749 §4.4): no browser,
    /// and a new grant before the token expires.
    ClientCredentials,
}

impl Grant {
    fn is_authorization_code(&self) -> bool {
        *self == Grant::AuthorizationCode
    }
}

impl Record for SignInRecord {
    const TABLE: &'static str = "oauth";
    const WHAT: &'static str = "sign-in";
    type Key = ServerId;

    fn key(&self) -> String {
        self.server.to_string()
    }
}

impl SignInRecord {
    /// Whether the tokens are usable (not waiting for the person to sign in again).
    pub fn is_signed_in(&self) -> bool {
        self.needs_sign_in.is_none()
    }
}

/// The keychain keys of a server's sign-in.
pub fn access_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/access")
}

pub fn refresh_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/refresh")
}

/// The secret of the client bosun registered (when the server issued one).
pub fn client_secret_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/client_secret")
}

/// The secret of a client the person configured.
pub fn configured_secret_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/configured_client_secret")
}

/// The client secret of a machine's sign-in (client credentials with `client_secret_basic`).
pub fn machine_secret_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/machine_client_secret")
}

/// The private key (PEM) of a machine's sign-in (client credentials with `private_key_jwt`).
pub fn private_key_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/private_key")
}

/// How the client proves itself at the token and revocation endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// A public client: its id in the request body, no secret.
    None,
    ClientSecretBasic,
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523 §2.2), for a machine's sign-in
    /// with client credentials: see `client_credentials`.
    PrivateKeyJwt,
}

impl ClientAuth {
    /// The method to use: the one the registration returned, else (with a secret) basic when
    /// the server lists it, then post; else none.
    pub fn choose(returned: Option<&str>, has_secret: bool, supported: &[String]) -> Self {
        match returned {
            Some("client_secret_basic") if has_secret => return ClientAuth::ClientSecretBasic,
            Some("client_secret_post") if has_secret => return ClientAuth::ClientSecretPost,
            Some("none") => return ClientAuth::None,
            Some(_) | None => {}
        }
        if !has_secret {
            return ClientAuth::None;
        }
        let lists = |m: &str| supported.iter().any(|s| s == m);
        if lists("client_secret_basic") || !lists("client_secret_post") {
            ClientAuth::ClientSecretBasic
        } else {
            ClientAuth::ClientSecretPost
        }
    }
}
