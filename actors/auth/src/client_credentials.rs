//! A machine's sign-in: OAuth client credentials (RFC 6749 §4.4, and the MCP extension
//! `io.modelcontextprotocol/oauth-client-credentials` of the 2026-07-28 revision) for servers
//! that sign in programs rather than people. There is no browser: bosun asks the token endpoint
//! itself, `grant_type=client_credentials` with the `resource` (RFC 8707) and the scopes, and
//! proves the client by one of
//!
//! - `client_secret_basic` (RFC 6749 §2.3.1): HTTP Basic of the form-urlencoded id and secret;
//! - `private_key_jwt` (RFC 7523 §2.2, OpenID Connect Core §9): a JWT signed with the client's
//!   private key — ES256 for a P-256 key, RS256 for an RSA key — whose `iss` and `sub` are the
//!   client id, whose `aud` is the authorization server's issuer identifier (what
//!   draft-ietf-oauth-rfc7523bis asks of clients, closing RFC 7523's audience ambiguity), with a
//!   random `jti` never sent twice, `iat`, and `exp` a minute later.
//!
//! The client secret or the private key is read once, from the person's command, into the
//! keychain (`mcp/<server id>/oauth/machine_client_secret` or `…/private_key`) and is never in
//! the store, a log, an error or an answer. The store keeps the sign-in as any other, with
//! [`Grant::ClientCredentials`].
//!
//! Where the server asks for DPoP-bound tokens (the same rule as a person's sign-in,
//! [`dpop::wanted`]), the grant carries a proof of a key pair made for the sign-in and kept in
//! the keychain (`dpop::key_key`), and every renewal a proof of that same key.
//!
//! A machine's sign-in has no refresh token: the TokenRefresher renews it with a new grant
//! before it expires ([`renew`]). A refused grant (`invalid_client`: a secret or key the server
//! no longer takes) forgets the tokens and asks the person to give the credentials again, with
//! the server's reason.

use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bosun_shared::mcp::SignInBy;
use bosun_shared::{ServerId, Timestamp};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject as _;
use serde::Deserialize;
use tracing::info;

use super::challenge::Challenge;
use super::discovery;
use super::dpop::{self, DpopError, DpopKey, Prover, SendError};
use super::oauth::{self, OAuthError, TokenType, Tokens};
use super::record::ClientAuth;
use super::record::{
    Grant, SignInRecord, access_key, client_secret_key, machine_secret_key, private_key_key,
    refresh_key,
};
use super::signin::Server;
use super::{AuthContext, AuthError, AuthMsg, ProbeError};
use bosun_kit::offload::blocking;

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long a client assertion is good for: long enough for one request.
const ASSERTION_LIFE: Duration = Duration::from_secs(60);
/// How long one token request may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

/// What proves the client at the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// A client secret, sent with `client_secret_basic`.
    Secret(String),
    /// A private key in PEM (PKCS#8, SEC1 or PKCS#1), signing `private_key_jwt` assertions.
    PrivateKey(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::Secret(_) => "Secret(<secret>)",
            Credential::PrivateKey(_) => "PrivateKey(<secret>)",
        })
    }
}

impl Credential {
    fn auth(&self) -> ClientAuth {
        match self {
            Credential::Secret(_) => ClientAuth::ClientSecretBasic,
            Credential::PrivateKey(_) => ClientAuth::PrivateKeyJwt,
        }
    }

    fn method(&self) -> &'static str {
        match self {
            Credential::Secret(_) => "client_secret_basic",
            Credential::PrivateKey(_) => "private_key_jwt",
        }
    }

    /// Its keychain key, and the key of the other kind (which a new sign-in removes).
    fn keys(&self, server: ServerId) -> (String, String) {
        match self {
            Credential::Secret(_) => (machine_secret_key(server), private_key_key(server)),
            Credential::PrivateKey(_) => (private_key_key(server), machine_secret_key(server)),
        }
    }

    fn value(&self) -> &str {
        match self {
            Credential::Secret(s) | Credential::PrivateKey(s) => s,
        }
    }
}

/// A client that signs in as a machine: its id and what proves it.
#[derive(Clone, Debug)]
pub struct Machine {
    pub client_id: String,
    pub credential: Credential,
}

impl Machine {
    /// The client as the person gave it: an id, and a secret or a private key (one of them).
    pub fn new(
        name: &str,
        client_id: String,
        secret: Option<String>,
        private_key: Option<String>,
    ) -> Result<Self, AuthError> {
        let client_id = client_id.trim().to_string();
        if client_id.is_empty() {
            return Err(AuthError::invalid(format!(
                "a machine's sign-in to `{name}` needs the client id the service gave you: add `--client-id ID`"
            )));
        }
        let credential = match (secret, private_key) {
            (Some(_), Some(_)) => {
                return Err(AuthError::invalid(format!(
                    "give `{name}`'s client either a secret (`--client-secret-stdin`) or a private key (`--private-key-file PATH`), not both: the server expects one way to prove the client"
                )));
            }
            (None, None) => {
                return Err(AuthError::invalid(format!(
                    "a machine's sign-in to `{name}` needs the client's secret (`--client-secret-stdin`) or its private key (`--private-key-file PATH`)"
                )));
            }
            (Some(s), None) if s.is_empty() => {
                return Err(AuthError::invalid(format!(
                    "the client secret for `{name}` is empty; pipe the secret in with `--client-secret-stdin`"
                )));
            }
            (Some(s), None) => Credential::Secret(s),
            (None, Some(k)) => {
                // Refused here, before any request, if it cannot sign.
                SigningKey::from_pem(&k).map_err(|e| {
                    AuthError::invalid(format!("the private key for `{name}` cannot be used: {e}"))
                })?;
                Credential::PrivateKey(k)
            }
        };
        Ok(Self {
            client_id,
            credential,
        })
    }
}

/// Why a private key cannot sign. No variant carries any of the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "it is not a PEM private key (a file that begins with `-----BEGIN PRIVATE KEY-----`, `-----BEGIN EC PRIVATE KEY-----` or `-----BEGIN RSA PRIVATE KEY-----`; an encrypted key must be decrypted first)"
    )]
    NotPem,
    #[error(
        "it is a {0} key, and bosun signs with a P-256 EC key (ES256) or an RSA key of 2048 to 8192 bits (RS256)"
    )]
    Unsupported(&'static str),
    #[error("signing the client assertion failed")]
    SigningFailed,
}

/// A private key that signs client assertions.
pub enum SigningKey {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl SigningKey {
    pub fn from_pem(pem: &str) -> Result<Self, KeyError> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| KeyError::NotPem)?;
        let ec = |der: &[u8]| {
            EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
                .ok()
                .map(SigningKey::Es256)
        };
        let (found, kind) = match &der {
            PrivateKeyDer::Pkcs8(k) => (
                ec(k.secret_pkcs8_der()).or_else(|| {
                    RsaKeyPair::from_pkcs8(k.secret_pkcs8_der())
                        .ok()
                        .map(SigningKey::Rs256)
                }),
                "another kind of",
            ),
            PrivateKeyDer::Sec1(k) => (ec(k.secret_sec1_der()), "EC (not P-256)"),
            PrivateKeyDer::Pkcs1(k) => (
                RsaKeyPair::from_der(k.secret_pkcs1_der())
                    .ok()
                    .map(SigningKey::Rs256),
                "RSA (too short or too long)",
            ),
            // A kind of key a later rustls-pki-types adds (its enum is non-exhaustive).
            _ => (None, "another kind of"),
        };
        found.ok_or(KeyError::Unsupported(kind))
    }

    /// The JWS `alg`.
    pub fn alg(&self) -> &'static str {
        match self {
            SigningKey::Es256(_) => "ES256",
            SigningKey::Rs256(_) => "RS256",
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        let rng = SystemRandom::new();
        match self {
            // The fixed encoding is JWS's (R || S, RFC 7518 §3.4), not DER.
            SigningKey::Es256(k) => k
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| KeyError::SigningFailed),
            SigningKey::Rs256(k) => {
                let mut out = vec![0; k.public_modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &rng, message, &mut out)
                    .map_err(|_| KeyError::SigningFailed)?;
                Ok(out)
            }
        }
    }

    /// A client assertion (RFC 7523 §2.2, §3) for `client_id`, for the authorization server
    /// whose issuer identifier is `audience`: signed now, good for [`ASSERTION_LIFE`], with a
    /// `jti` of 128 random bits.
    pub fn assertion(&self, client_id: &str, audience: &str) -> Result<String, KeyError> {
        let now = Timestamp::now().as_millis() / 1000;
        let header = serde_json::json!({"alg": self.alg(), "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "jti": URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>()),
            "iat": now,
            "exp": now + ASSERTION_LIFE.as_secs(),
        });
        super::jws::compact(&header, &claims, |input| self.sign(input))
    }
}

/// Why a grant failed.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// The token endpoint refused, could not be reached, or answered what bosun cannot read.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    /// The client's private key cannot sign its assertion: only new credentials help.
    #[error("the private key cannot be used: {0}")]
    Key(#[from] KeyError),
    /// The DPoP proof could not be made (a key bosun cannot read, or the system's random
    /// source failed).
    #[error("{0}")]
    Dpop(#[from] DpopError),
}

/// Asks `token_endpoint` for a token with the client's credentials — with a DPoP proof made
/// by `dpop` when the sign-in binds its tokens (RFC 9449 §5) — and says how the token is to be
/// used. A server that wants a nonce in the proof is asked once more with it, by a request made
/// anew: a client assertion is good for one request (its `jti` is never sent twice).
pub async fn grant(
    http: &reqwest::Client,
    token_endpoint: &str,
    issuer: &str,
    machine: &Machine,
    resource: &str,
    scope: Option<&str>,
    dpop: Option<&Prover>,
) -> Result<(Tokens, TokenType), GrantError> {
    let build = || -> Result<reqwest::Request, GrantError> {
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", "client_credentials".into()),
            ("resource", resource.into()),
        ];
        if let Some(scope) = scope.filter(|s| !s.is_empty()) {
            form.push(("scope", scope.into()));
        }
        let mut request = http.post(token_endpoint).timeout(REQUEST_LIMIT);
        match &machine.credential {
            Credential::Secret(secret) => {
                let enc = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                request = request.basic_auth(enc(&machine.client_id), Some(enc(secret)));
            }
            Credential::PrivateKey(pem) => {
                let key = SigningKey::from_pem(pem)?;
                form.push(("client_id", machine.client_id.clone()));
                form.push(("client_assertion_type", JWT_BEARER.into()));
                form.push((
                    "client_assertion",
                    key.assertion(&machine.client_id, issuer)?,
                ));
            }
        }
        request
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .build()
            .map_err(|_| OAuthError::BadUrl(token_endpoint.to_string()).into())
    };
    let send = |request| async move {
        dpop::send_once(http, dpop, request)
            .await
            .map_err(|e| match e {
                SendError::Http(e) => GrantError::OAuth(oauth::unreachable(token_endpoint, &e)),
                SendError::Proof(e) => GrantError::Dpop(e),
            })
    };
    let answer = match send(build()?).await? {
        (_, true) => send(build()?).await?.0,
        (answer, false) => answer,
    };
    let text = String::from_utf8_lossy(&answer.body);
    if !(200..300).contains(&answer.status) {
        return Err(oauth::server_error(&text)
            .unwrap_or(OAuthError::Refused {
                code: format!("the token endpoint answered HTTP {}", answer.status),
                description: None,
            })
            .into());
    }
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        token_type: Option<String>,
        refresh_token: Option<String>,
        expires_in: Option<u64>,
        scope: Option<String>,
    }
    let a: Answer = serde_json::from_str(&text).map_err(|e| {
        // serde's message names a field or a position, never the body.
        OAuthError::Malformed(format!("the token answer: {e}"))
    })?;
    let token_type = match a.token_type.as_deref() {
        Some(t) if t.eq_ignore_ascii_case("dpop") => TokenType::Dpop,
        Some(_) | None => TokenType::Bearer,
    };
    let tokens = Tokens {
        access: a.access_token,
        refresh: a.refresh_token,
        expires_at: a
            .expires_in
            .map(|s| Timestamp::from_millis(Timestamp::now().as_millis() + s * 1000)),
        scope: a.scope.or_else(|| scope.map(str::to_string)),
    };
    Ok((tokens, token_type))
}

/// Whether a refusal of the grant means the credentials (or what they may do) are no good, so
/// that only the person can fix it.
fn is_refusal(e: &OAuthError) -> bool {
    matches!(e, OAuthError::Refused { code, .. } if matches!(code.as_str(),
        "invalid_client" | "unauthorized_client" | "invalid_grant" | "invalid_scope"
        | "unsupported_grant_type" | "invalid_target" | "access_denied"))
}

/// What the person reads when the server refuses the client's credentials.
fn refused(name: &str, machine: &Machine, e: &OAuthError) -> String {
    format!(
        "the authorization server refused bosun's client credentials for `{name}` ({e}); check the client id `{}` and its {} with the service, then give them again with `bosun mcp sign-in {name} --client-credentials --client-id ID {}`",
        machine.client_id,
        match machine.credential {
            Credential::Secret(_) => "secret",
            Credential::PrivateKey(_) => "private key",
        },
        match machine.credential {
            Credential::Secret(_) => "--client-secret-stdin",
            Credential::PrivateKey(_) => "--private-key-file PATH",
        },
    )
}

/// Signs `rec` in as a machine: finds the authorization server from the server's challenge
/// (`probe`, as for a person's sign-in), checks that it offers the grant and the client
/// authentication, asks for a token, and saves it — the credential in the keychain, nothing at
/// all when anything fails. Then the server's TokenRefresher keeps the token fresh.
pub async fn sign_in(
    ctx: &AuthContext,
    rec: impl Into<Server>,
    machine: Machine,
    probe: impl Future<Output = Result<Option<Challenge>, ProbeError>>,
) -> Result<ServerId, AuthError> {
    let rec: Server = rec.into();
    let name = rec.name.clone();
    let url = super::signin::address(&rec)?;
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Err(AuthError::invalid(format!(
            "Claude Code signs in to `{name}` itself; `bosun mcp edit {name} --sign-in-by bosun` lets bosun sign in"
        )));
    }
    let challenge = probe
        .await
        .map_err(|error| AuthError::Unreachable {
            name: name.clone(),
            url: url.clone(),
            error,
        })?
        .ok_or_else(|| {
            AuthError::conflict(format!(
                "`{name}` lists its tools without asking for a sign-in; there is nothing to sign in to"
            ))
        })?;
    let found = discovery::discover(&ctx.http, &url, &challenge)
        .await
        .map_err(|error| AuthError::Discovery {
            name: name.clone(),
            error,
        })?;
    let m = &found.metadata;
    check_offers(&name, &found, &machine)?;
    let method = machine.credential.method();
    let scope = machine_scope(&found);
    // DPoP (RFC 9449) exactly where a person's sign-in would bind: a key pair of this
    // sign-in's own, refused in words where the server requires proofs bosun cannot make.
    let prover = super::signin::new_prover(ctx, rec.id, &name, &found)?;
    let (tokens, token_type) = grant(
        &ctx.http,
        &m.token_endpoint,
        &found.issuer,
        &machine,
        &found.resource,
        scope.as_deref(),
        prover.as_ref(),
    )
    .await
    .map_err(|e| sign_in_failed(&name, &machine, e))?;
    // Bound only when the server says so: one that answers `Bearer` to a proof did not bind
    // the token, and the key has nothing to do.
    let bound = match token_type {
        TokenType::Dpop => prover.as_ref(),
        TokenType::Bearer => None,
    };

    // Secrets first (all or none), then the record; on a failure of the record, the secrets go.
    let server = rec.id;
    let keys = keep_secrets(ctx, server, &machine, &tokens, bound).await?;
    let record = machine_record(server, &found, &machine, &tokens, scope, bound.is_some());
    if let Err(e) = ctx.writer.put(&record).await {
        let keychain = ctx.keychain.clone();
        let _ = blocking(move || keychain.delete_many(&keys)).await;
        return Err(AuthError::from(e));
    }
    if let Some(auth) = ctx.auth.get() {
        let _ = ractor::call!(auth, |reply| AuthMsg::Start {
            server,
            name: name.clone(),
            reply
        });
    }
    info!(server = %name, method, dpop = bound.is_some(), source = %found.source, "signed in as a machine (client credentials)");
    Ok(server)
}

/// Refuses, in words, an authorization server that does not offer the client credentials
/// grant or does not take the client's way of proving itself.
fn check_offers(
    name: &str,
    found: &discovery::Discovered,
    machine: &Machine,
) -> Result<(), AuthError> {
    let m = &found.metadata;
    if !m.grant_types_supported.is_empty()
        && !m
            .grant_types_supported
            .iter()
            .any(|g| g == "client_credentials")
    {
        return Err(AuthError::conflict(format!(
            "`{name}`'s authorization server {} does not offer client credentials (it lists the grants {}), so it signs in no machines; sign in as a person with `bosun mcp sign-in {name}`",
            found.issuer,
            m.grant_types_supported.join(", ")
        )));
    }
    let method = machine.credential.method();
    let methods = &m.token_endpoint_auth_methods_supported;
    if !methods.is_empty() && !methods.iter().any(|x| x == method) {
        return Err(AuthError::conflict(format!(
            "`{name}`'s authorization server {} does not take {method} (it lists {}); give the client's credentials the way it takes them{}",
            found.issuer,
            methods.join(", "),
            match machine.credential {
                Credential::Secret(_) if methods.iter().any(|x| x == "private_key_jwt") =>
                    " (a private key: `--private-key-file PATH`)",
                Credential::PrivateKey(_) if methods.iter().any(|x| x == "client_secret_basic") =>
                    " (a secret: `--client-secret-stdin`)",
                Credential::Secret(_) | Credential::PrivateKey(_) => "",
            }
        )));
    }
    Ok(())
}

/// The scopes a machine asks for: the resource's, without `offline_access`.
fn machine_scope(found: &discovery::Discovered) -> Option<String> {
    // A machine asks for the resource's scopes; `offline_access` (a refresh token for when the
    // person is away) means nothing to it.
    let scope = found.scope.as_deref().map(|s| {
        s.split_whitespace()
            .filter(|s| *s != "offline_access")
            .collect::<Vec<_>>()
            .join(" ")
    });
    scope.filter(|s| !s.is_empty())
}

/// What the person reads when a machine's first grant failed.
fn sign_in_failed(name: &str, machine: &Machine, e: GrantError) -> AuthError {
    match e {
        GrantError::OAuth(e) if is_refusal(&e) => {
            AuthError::conflict(format!("{}; nothing was saved", refused(name, machine, &e)))
        }
        GrantError::OAuth(error) => AuthError::OAuth {
            name: name.to_string(),
            error,
        },
        GrantError::Key(e) => AuthError::invalid(format!(
            "could not sign in to `{name}`: the private key: {e}"
        )),
        GrantError::Dpop(e) => AuthError::unavailable(format!(
            "could not sign in to `{name}`: {e}; nothing was saved"
        )),
    }
}

/// Saves a new machine sign-in's secrets in the keychain (all or none) and deletes what an
/// earlier sign-in held; the answer is the keys saved, to delete should the record fail.
async fn keep_secrets(
    ctx: &AuthContext,
    server: ServerId,
    machine: &Machine,
    tokens: &Tokens,
    bound: Option<&Prover>,
) -> Result<Vec<String>, AuthError> {
    let (own, other) = machine.credential.keys(server);
    let mut secrets = vec![
        (access_key(server), tokens.access.clone()),
        (own, machine.credential.value().to_string()),
    ];
    // What an earlier sign-in held must not outlive this one.
    let mut stale = vec![other, client_secret_key(server)];
    match bound {
        Some(prover) => secrets.push((dpop::key_key(server), prover.key().keychain_value())),
        None => stale.push(dpop::key_key(server)),
    }
    match &tokens.refresh {
        Some(r) => secrets.push((refresh_key(server), r.clone())),
        None => stale.push(refresh_key(server)),
    }
    let keys: Vec<String> = secrets.iter().map(|(k, _)| k.clone()).collect();
    let keychain = ctx.keychain.clone();
    blocking(move || {
        keychain.set_many(&secrets)?;
        keychain.delete_many(&stale)
    })
    .await??;
    Ok(keys)
}

/// The record of a new machine sign-in (its secrets are in the keychain).
fn machine_record(
    server: ServerId,
    found: &discovery::Discovered,
    machine: &Machine,
    tokens: &Tokens,
    scope: Option<String>,
    dpop: bool,
) -> SignInRecord {
    let m = &found.metadata;
    let now = Timestamp::now();
    SignInRecord {
        server,
        resource: found.resource.clone(),
        issuer: found.issuer.clone(),
        authorization_endpoint: m.authorization_endpoint.clone(),
        token_endpoint: m.token_endpoint.clone(),
        revocation_endpoint: m.revocation_endpoint.clone(),
        registration_endpoint: m.registration_endpoint.clone(),
        client_id: machine.client_id.clone(),
        client_auth: machine.credential.auth(),
        registered: false,
        redirect_uri: String::new(),
        scope: tokens.scope.clone().or(scope),
        expires_at: tokens.expires_at,
        signed_in_at: now,
        refreshed_at: None,
        refresh_started: None,
        needs_sign_in: None,
        wanted_scope: None,
        step_ups: 0,
        grant: Grant::ClientCredentials,
        dpop,
    }
}

/// What renewing a machine's sign-in came to.
pub enum Renewed {
    /// A new access token, its record saved.
    Token(Box<SignInRecord>, String),
    /// The server refused the credentials (or they are gone): only the person can fix it; why.
    Refused(String),
}

/// Renews a machine's sign-in with a new grant: saves the new access token, then the record.
/// Called by the server's TokenRefresher only, one renewal at a time.
pub async fn renew(
    ctx: &AuthContext,
    name: &str,
    rec: &SignInRecord,
) -> Result<Renewed, AuthError> {
    let server = rec.server;
    let (machine, prover) = match kept_credentials(ctx, name, rec).await? {
        Ok(kept) => kept,
        Err(why) => return Ok(Renewed::Refused(why.to_string())),
    };
    let answer = grant(
        &ctx.http,
        &rec.token_endpoint,
        &rec.issuer,
        &machine,
        &rec.resource,
        rec.scope.as_deref(),
        prover.as_ref(),
    )
    .await;
    let (tokens, token_type) = match answer {
        Ok(t) => t,
        Err(GrantError::OAuth(e)) if is_refusal(&e) => {
            return Ok(Renewed::Refused(refused(name, &machine, &e)));
        }
        Err(GrantError::Key(e)) => {
            return Ok(Renewed::Refused(format!(
                "the private key in the keychain cannot be used: {e}"
            )));
        }
        Err(GrantError::OAuth(e)) => {
            return Err(AuthError::unavailable(format!(
                "could not renew the sign-in to `{name}`: {e}"
            )));
        }
        Err(GrantError::Dpop(e)) => {
            return Err(AuthError::unavailable(format!(
                "could not renew the sign-in to `{name}`: {e}"
            )));
        }
    };
    // A server that stopped binding answers `Bearer` to the proof: the token is a bearer
    // token, and the key goes (as at a sign-in that was not bound).
    let unbound = rec.dpop && token_type == TokenType::Bearer;
    let keychain = ctx.keychain.clone();
    let (access, refresh) = (tokens.access.clone(), tokens.refresh.clone());
    blocking(move || {
        if let Some(r) = &refresh {
            keychain.set(&refresh_key(server), r)?;
        }
        keychain.set(&access_key(server), &access)?;
        if unbound {
            keychain.delete_many(&[dpop::key_key(server)])?;
        }
        Ok::<_, AuthError>(())
    })
    .await??;
    let mut rec = rec.clone();
    rec.dpop = rec.dpop && !unbound;
    rec.expires_at = tokens.expires_at;
    if tokens.scope.is_some() {
        rec.scope = tokens.scope.clone();
    }
    rec.refreshed_at = Some(Timestamp::now());
    rec.refresh_started = None;
    ctx.writer.put(&rec).await?;
    info!(server = %name, "renewed the machine's sign-in (client credentials)");
    Ok(Renewed::Token(Box::new(rec), tokens.access))
}

/// Why a machine's sign-in cannot be renewed with what the keychain kept: only the person can
/// renew it now, by giving its credentials again.
#[derive(Debug, thiserror::Error)]
enum NotKept {
    #[error(
        "the sign-in's client authentication ({auth:?}) is not one bosun uses for client credentials; give them again with `bosun mcp sign-in {name} --client-credentials …`"
    )]
    NotUsable { auth: ClientAuth, name: String },
    #[error("the client's secret or private key is no longer in the keychain")]
    SecretGone,
    #[error(
        "bosun's DPoP key for this sign-in is gone from the keychain, and the server's tokens are bound to a key"
    )]
    DpopKeyGone,
    #[error(transparent)]
    DpopKey(#[from] super::dpop::DpopError),
}

/// The client's credentials and DPoP key a machine's sign-in kept in the keychain, to renew
/// it with. The inner error says why only the person can renew it now (they are gone, or not
/// ones bosun can use); the outer one is a failure of the keychain.
async fn kept_credentials(
    ctx: &AuthContext,
    name: &str,
    rec: &SignInRecord,
) -> Result<Result<(Machine, Option<Prover>), NotKept>, AuthError> {
    let server = rec.server;
    let key = match rec.client_auth {
        ClientAuth::ClientSecretBasic => machine_secret_key(server),
        ClientAuth::PrivateKeyJwt => private_key_key(server),
        ClientAuth::None | ClientAuth::ClientSecretPost => {
            return Ok(Err(NotKept::NotUsable {
                auth: rec.client_auth,
                name: name.to_string(),
            }));
        }
    };
    let keychain = ctx.keychain.clone();
    let (kept, kept_dpop) = blocking(move || -> Result<_, AuthError> {
        Ok((keychain.get(&key)?, keychain.get(&dpop::key_key(server))?))
    })
    .await??;
    let Some(value) = kept else {
        return Ok(Err(NotKept::SecretGone));
    };
    let credential = match rec.client_auth {
        ClientAuth::PrivateKeyJwt => Credential::PrivateKey(value),
        ClientAuth::ClientSecretBasic | ClientAuth::None | ClientAuth::ClientSecretPost => {
            Credential::Secret(value)
        }
    };
    let machine = Machine {
        client_id: rec.client_id.clone(),
        credential,
    };
    // A bound sign-in renews with a proof from the same key (RFC 9449 §5), so that the new
    // token is bound to the key the MCP requests prove.
    let prover = match (rec.dpop, kept_dpop) {
        (false, _) => None,
        (true, None) => {
            return Ok(Err(NotKept::DpopKeyGone));
        }
        (true, Some(value)) => match DpopKey::from_keychain(&value) {
            Ok(key) => Some(super::signin::authorization_prover(ctx, server, key)),
            Err(e) => return Ok(Err(e.into())),
        },
    };
    Ok(Ok((machine, prover)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{
        ECDSA_P256_SHA256_FIXED, KeyPair as _, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey,
    };
    use base64::engine::general_purpose::STANDARD;

    fn pem(label: &str, der: &[u8]) -> String {
        let body = STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            lines.join("\n")
        )
    }

    fn parts(jwt: &str) -> (serde_json::Value, serde_json::Value, Vec<u8>, String) {
        let p: Vec<&str> = jwt.split('.').collect();
        assert_eq!(p.len(), 3);
        let json = |s: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap();
        (
            json(p[0]),
            json(p[1]),
            URL_SAFE_NO_PAD.decode(p[2]).unwrap(),
            format!("{}.{}", p[0], p[1]),
        )
    }

    #[test]
    fn an_es256_assertion_has_the_claims_rfc_7523_asks_and_verifies() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let key = SigningKey::from_pem(&pem("PRIVATE KEY", pkcs8.as_ref())).unwrap();
        let a = key
            .assertion("machine-1", "https://as.example.com/t")
            .unwrap();
        let b = key
            .assertion("machine-1", "https://as.example.com/t")
            .unwrap();
        let (header, claims, sig, input) = parts(&a);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(claims["iss"], "machine-1");
        assert_eq!(claims["sub"], "machine-1");
        assert_eq!(claims["aud"], "https://as.example.com/t");
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert_eq!(exp - iat, 60);
        assert_ne!(
            claims["jti"],
            parts(&b).1["jti"],
            "a jti is never sent twice"
        );
        assert_eq!(sig.len(), 64, "R || S, not DER");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn an_rsa_key_signs_rs256() {
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der =
            aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).unwrap();
        let key = SigningKey::from_pem(&pem("PRIVATE KEY", der.as_ref())).unwrap();
        let (header, _, sig, input) = parts(&key.assertion("m", "https://as").unwrap());
        assert_eq!(header["alg"], "RS256");
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, pair.public_key().as_ref())
            .verify(input.as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn a_key_that_cannot_sign_is_refused_in_words_that_hold_none_of_it() {
        let secret = "c2VjcmV0LWtleS1tYXRlcmlhbA";
        for text in [
            "not a key".to_string(),
            format!("-----BEGIN CERTIFICATE-----\n{secret}\n-----END CERTIFICATE-----\n"),
            format!("-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----\n"),
        ] {
            let e = SigningKey::from_pem(&text).err().unwrap().to_string();
            assert!(!e.contains(secret), "{e}");
            let e = Machine::new("m", "id".into(), None, Some(text))
                .unwrap_err()
                .to_string();
            assert!(e.contains("the private key for `m` cannot be used"), "{e}");
            assert!(!e.contains(secret), "{e}");
        }
    }

    #[test]
    fn a_machine_has_a_secret_or_a_key_never_both_nor_neither() {
        let both = Machine::new("m", "id".into(), Some("s".into()), Some("k".into()));
        assert!(both.unwrap_err().to_string().contains("not both"));
        let neither = Machine::new("m", "id".into(), None, None);
        assert!(
            neither
                .unwrap_err()
                .to_string()
                .contains("needs the client's secret")
        );
        let no_id = Machine::new("m", " ".into(), Some("s".into()), None);
        assert!(no_id.unwrap_err().to_string().contains("--client-id"));
        let m = Machine::new("m", "id".into(), Some("s3cr3t".into()), None).unwrap();
        assert!(!format!("{m:?}").contains("s3cr3t"));
    }
}
