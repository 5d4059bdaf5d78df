//! DPoP-bound tokens (RFC 9449), where a server asks for them.
//!
//! A sign-in to a server whose authorization server lists ES256 in
//! `dpop_signing_alg_values_supported` (or whose protected resource says
//! `dpop_bound_access_tokens_required`) gets a P-256 key pair of its own. Its private key lives
//! in the keychain beside the tokens (`mcp/<server id>/oauth/dpop_key`) and nowhere else: not
//! in the store, a log, an error or an IPC answer ([`DpopKey`]'s `Debug` shows only its
//! thumbprint). Every HTTP request that uses the binding carries a fresh proof: a JWT of type
//! `dpop+jwt` signed with that key, naming the method and the address (without query and
//! fragment), with a unique `jti`, the time, the server's nonce when it gave one, and `ath`, the
//! hash of the access token, on requests to the resource server.
//!
//! Nonces (RFC 9449 §8, §9) are kept per server, the authorization server's apart from the
//! resource server's, in memory for the life of bosund: a server that wants one answers
//! `use_dpop_nonce` with a `DPoP-Nonce` header, and bosun retries once with it; a `DPoP-Nonce`
//! on any answer replaces the one kept.
//!
//! # Caveats
//! A run's CLI (Claude Code, Codex, Gemini) cannot make a proof per request, so a server whose
//! tokens are DPoP-bound is left out of runs with that reason; bosun's own looks (`mcp tools`,
//! `mcp call`, `mcp inspect`) use it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bosun_shared::ServerId;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::challenge;
use super::discovery::AsMetadata;
use super::record::SignInRecord;
use super::{AuthContext, AuthError};
use bosun_kit::offload::blocking;

/// The one signing algorithm bosun's proofs use.
pub const ALG: &str = "ES256";
/// The header a proof travels in, and the one a server's nonce comes in.
pub const PROOF_HEADER: &str = "DPoP";
pub const NONCE_HEADER: &str = "DPoP-Nonce";

/// The keychain key of a server's DPoP private key.
pub fn key_key(server: ServerId) -> String {
    format!("mcp/{server}/oauth/dpop_key")
}

/// Why a proof could not be made. No variant carries the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DpopError {
    /// The key in the keychain is not a P-256 key bosun made: only a new sign-in helps.
    #[error(
        "the DPoP key bosun keeps for this server in the keychain cannot be read; sign in again"
    )]
    BadKey,
    /// Making or signing with a key failed (the system's random source): a retry may help.
    #[error("bosun could not sign its DPoP proof")]
    Sign,
}

/// A DPoP key pair. Its private half never leaves this type except as the keychain value.
pub struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .field("private", &"<secret>")
            .finish()
    }
}

impl DpopKey {
    /// A new P-256 key pair.
    pub fn generate() -> Result<Self, DpopError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| DpopError::Sign)?;
        Self::from_pkcs8(doc.as_ref())
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, DpopError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8)
            .map_err(|_| DpopError::BadKey)?;
        Ok(Self {
            pair,
            pkcs8: pkcs8.to_vec(),
        })
    }

    /// The key as kept in the keychain (its PKCS#8 document, base64url).
    pub fn from_keychain(value: &str) -> Result<Self, DpopError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(value.trim())
            .map_err(|_| DpopError::BadKey)?;
        Self::from_pkcs8(&bytes)
    }

    pub fn keychain_value(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// The public key's coordinates, base64url (the point is `04 || x || y`).
    fn coordinates(&self) -> (String, String) {
        let point = self.pair.public_key().as_ref();
        let (x, y) = point
            .get(1..)
            .unwrap_or_default()
            .split_at(32.min(point.len().saturating_sub(1)));
        (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y))
    }

    /// The public key as a JWK (RFC 7517).
    pub fn jwk(&self) -> Value {
        let (x, y) = self.coordinates();
        json!({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    }

    /// The JWK thumbprint (RFC 7638): what a bound token's `cnf.jkt` names.
    pub fn thumbprint(&self) -> String {
        let (x, y) = self.coordinates();
        // The required members in lexicographic order, no whitespace.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// A fresh proof for one request: `htm` the method, `url` its address, `access_token` the
    /// token it carries (to the resource server), `nonce` the server's.
    pub fn proof(
        &self,
        htm: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, DpopError> {
        let header = json!({"typ": "dpop+jwt", "alg": ALG, "jwk": self.jwk()});
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(rand::random::<[u8; 18]>()),
            "htm": htm,
            "htu": htu(url),
            "iat": iat,
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(ath(token));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        super::jws::compact(&header, &claims, |input| {
            self.pair
                .sign(&SystemRandom::new(), input)
                .map_err(|_| DpopError::Sign)
        })
    }
}

/// `url` without its query and fragment, as a proof's `htu` names it.
pub fn htu(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_string(),
    }
}

/// `ath`: base64url(SHA-256(access token)).
pub fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// Whether a sign-in binds its tokens: `Ok(true)` where the authorization server offers ES256
/// proofs, `Ok(false)` where it offers none (or others, and the resource does not require
/// them), and the refusal in words where the resource requires DPoP and bosun cannot give it.
pub fn wanted(metadata: &AsMetadata, required: bool) -> Result<bool, DpopUnmet> {
    let algs = &metadata.dpop_signing_alg_values_supported;
    if algs.iter().any(|a| a == ALG) {
        return Ok(true);
    }
    if !required {
        return Ok(false);
    }
    Err(if algs.is_empty() {
        DpopUnmet::NotOffered
    } else {
        DpopUnmet::OtherAlgorithms(algs.clone())
    })
}

/// Why a sign-in cannot give the DPoP proofs its resource requires ([`wanted`]). Not
/// retryable: the server's metadata must change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DpopUnmet {
    #[error(
        "the server requires DPoP-bound tokens (RFC 9449), but its authorization server does not say it takes DPoP proofs (`dpop_signing_alg_values_supported`); ask the server's operator to publish it"
    )]
    NotOffered,
    /// It takes proofs signed with these algorithms only, none of them ES256.
    #[error(
        "the server requires DPoP-bound tokens (RFC 9449), and its authorization server takes proofs signed with {} only; bosun signs them with {ALG}",
        .0.join(", ")
    )]
    OtherAlgorithms(Vec<String>),
}

/// Which server a nonce is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The authorization server (its token endpoint).
    Authorization,
    /// The MCP server, the resource.
    Resource,
}

/// The nonces servers gave, per server and side, for the life of bosund.
#[derive(Clone, Default)]
pub struct Nonces(Arc<Mutex<HashMap<(ServerId, Side), String>>>);

impl Nonces {
    fn get(&self, server: ServerId, side: Side) -> Option<String> {
        self.0.lock().ok()?.get(&(server, side)).cloned()
    }

    fn set(&self, server: ServerId, side: Side, nonce: String) {
        if let Ok(mut m) = self.0.lock() {
            m.insert((server, side), nonce);
        }
    }
}

/// Makes the proofs of one server's requests to one side, with the nonce kept for it.
#[derive(Clone)]
pub struct Prover {
    key: Arc<DpopKey>,
    nonces: Nonces,
    server: ServerId,
    side: Side,
}

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prover")
            .field("server", &self.server)
            .field("side", &self.side)
            .finish()
    }
}

impl Prover {
    pub fn new(key: Arc<DpopKey>, nonces: Nonces, server: ServerId, side: Side) -> Self {
        Self {
            key,
            nonces,
            server,
            side,
        }
    }

    /// The key, to keep in the keychain.
    pub fn key(&self) -> &DpopKey {
        &self.key
    }

    /// The same key and nonces, for the other side.
    pub fn for_side(&self, side: Side) -> Self {
        Self {
            side,
            ..self.clone()
        }
    }

    /// A fresh proof for `htm url`, with the nonce kept for this side, if any.
    pub fn proof(
        &self,
        htm: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, DpopError> {
        let nonce = self.nonces.get(self.server, self.side);
        self.key.proof(htm, url, access_token, nonce.as_deref())
    }

    /// Keeps the nonce an answer carries (it replaces the one kept); whether it carried one.
    pub fn note_nonce(&self, headers: &http::HeaderMap) -> bool {
        match headers
            .get(NONCE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            Some(nonce) => {
                self.nonces.set(self.server, self.side, nonce.to_string());
                true
            }
            None => false,
        }
    }
}

/// The prover of a signed-in server whose tokens are DPoP-bound, for `side`; `None` when its
/// tokens are plain bearer tokens (or it is not signed in).
pub async fn prover_for(
    ctx: &AuthContext,
    server: ServerId,
    side: Side,
) -> Result<Option<Prover>, AuthError> {
    let (store, keychain) = (ctx.store.clone(), ctx.keychain.clone());
    let key = blocking(move || -> Result<Option<Option<String>>, AuthError> {
        match store.get::<SignInRecord>(&server)? {
            Some(rec) if rec.dpop => Ok(Some(keychain.get(&key_key(server))?)),
            Some(_) | None => Ok(None),
        }
    })
    .await??;
    match key {
        None => Ok(None),
        Some(None) => Err(AuthError::conflict(
            "bosun's DPoP key for this server is gone from the keychain, so its DPoP-bound tokens cannot be used; sign in to it again with `bosun mcp sign-in`",
        )),
        Some(Some(value)) => {
            let key =
                DpopKey::from_keychain(&value).map_err(|e| AuthError::conflict(e.to_string()))?;
            Ok(Some(Prover::new(
                Arc::new(key),
                ctx.nonces.clone(),
                server,
                side,
            )))
        }
    }
}

/// Whether an authorization server's answer asks for a nonce: `400` with the error
/// `use_dpop_nonce` (RFC 9449 §8).
pub fn as_wants_nonce(status: u16, body: &[u8]) -> bool {
    status == 400
        && serde_json::from_slice::<Value>(body)
            .ok()
            .is_some_and(|v| v.get("error").and_then(Value::as_str) == Some("use_dpop_nonce"))
}

/// The `error` of the `DPoP` challenge in a `WWW-Authenticate` header, if it has one.
pub fn challenge_error(www_authenticate: &str) -> Option<String> {
    challenge::scheme_params(www_authenticate, "dpop")
        .get("error")
        .cloned()
}

/// Whether a resource server's `401` asks for a nonce (RFC 9449 §9).
pub fn rs_wants_nonce(status: u16, www_authenticate: Option<&str>) -> bool {
    status == 401
        && www_authenticate
            .and_then(challenge_error)
            .is_some_and(|e| e == "use_dpop_nonce")
}

/// An answer read whole: its status, headers and body.
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

/// Why a request sent with a proof got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Proof(#[from] DpopError),
}

/// Sends a request to an authorization server — with a fresh proof when `prover` is given —
/// and reads its answer; an answer asking for a nonce (`400 use_dpop_nonce` with a
/// `DPoP-Nonce`) is answered once, with a new proof carrying it. The code exchange and the
/// refresh go through here; a machine's grant, whose request may not be sent twice as it is,
/// through [`send_once`].
pub async fn execute(
    http: &reqwest::Client,
    prover: Option<&Prover>,
    request: reqwest::Request,
) -> Result<Answer, SendError> {
    let again = request.try_clone();
    let (answer, retry) = send_once(http, prover, request).await?;
    match again {
        Some(again) if retry => Ok(send_once(http, prover, again).await?.0),
        Some(_) | None => Ok(answer),
    }
}

/// Sends one request to an authorization server, with a fresh proof when `prover` is given,
/// reads its answer and keeps the nonce it carries. The flag says whether the answer asks for
/// the request again with that new nonce (`400 use_dpop_nonce` with a `DPoP-Nonce`): the
/// caller sends it once more, made anew where a part of it is good for one request only (a
/// client assertion's `jti`, RFC 7523 §3).
pub async fn send_once(
    http: &reqwest::Client,
    prover: Option<&Prover>,
    request: reqwest::Request,
) -> Result<(Answer, bool), SendError> {
    let Some(prover) = prover else {
        return Ok((read(http.execute(request).await?).await?, false));
    };
    let answer = read(http.execute(with_proof(prover, request)?).await?).await?;
    let fresh = prover.note_nonce(&answer.headers);
    let retry = fresh && as_wants_nonce(answer.status, &answer.body);
    Ok((answer, retry))
}

fn with_proof(
    prover: &Prover,
    mut request: reqwest::Request,
) -> Result<reqwest::Request, DpopError> {
    let proof = prover.proof(request.method().as_str(), request.url().as_str(), None)?;
    let value = http::HeaderValue::from_str(&proof).map_err(|_| DpopError::Sign)?;
    request.headers_mut().insert(PROOF_HEADER, value);
    Ok(request)
}

async fn read(response: reqwest::Response) -> Result<Answer, SendError> {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await?.to_vec();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(jwt: &str, n: usize) -> Value {
        let p = jwt.split('.').nth(n).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_a_signed_dpop_jwt_with_the_claims_rfc_9449_asks_for() {
        let key = DpopKey::generate().unwrap();
        let jwt = key
            .proof(
                "POST",
                "https://mcp.example.com/mcp?key=abc#frag",
                Some("tok"),
                Some("n-1"),
            )
            .unwrap();
        let header = part(&jwt, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"], key.jwk());
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&jwt, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["ath"], ath("tok"));
        assert_eq!(claims["nonce"], "n-1");
        assert!(claims["iat"].as_u64().unwrap() > 1_700_000_000);
        let again = key
            .proof("POST", "https://mcp.example.com/mcp", None, None)
            .unwrap();
        assert_ne!(
            part(&again, 1)["jti"],
            claims["jti"],
            "a fresh jti each time"
        );
        assert!(part(&again, 1).get("ath").is_none());
        // The signature checks with the public key of the header.
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let point = key.pair.public_key().as_ref().to_vec();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .unwrap();
    }

    #[test]
    fn the_key_survives_the_keychain_and_its_debug_shows_no_secret() {
        let key = DpopKey::generate().unwrap();
        let kept = key.keychain_value();
        let back = DpopKey::from_keychain(&kept).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        assert_eq!(key.thumbprint().len(), 43);
        assert!(!format!("{key:?}").contains(&kept));
        assert_eq!(
            DpopKey::from_keychain("not a key").unwrap_err(),
            DpopError::BadKey
        );
    }

    #[test]
    fn nonces_are_asked_for_in_the_two_ways_and_kept_apart() {
        assert!(as_wants_nonce(400, br#"{"error":"use_dpop_nonce"}"#));
        assert!(!as_wants_nonce(400, br#"{"error":"invalid_grant"}"#));
        assert!(rs_wants_nonce(
            401,
            Some(r#"DPoP error="use_dpop_nonce", error_description="fresh nonce""#)
        ));
        assert!(!rs_wants_nonce(
            401,
            Some(r#"Bearer error="use_dpop_nonce""#)
        ));
        assert_eq!(
            challenge_error(r#"Bearer scope="a", DPoP algs="ES256", error="invalid_dpop_proof""#)
                .as_deref(),
            Some("invalid_dpop_proof")
        );
        let nonces = Nonces::default();
        let server = ServerId::new();
        let key = Arc::new(DpopKey::generate().unwrap());
        let to_as = Prover::new(key, nonces.clone(), server, Side::Authorization);
        let to_rs = to_as.for_side(Side::Resource);
        let mut headers = http::HeaderMap::new();
        headers.insert(NONCE_HEADER, http::HeaderValue::from_static("as-1"));
        assert!(to_as.note_nonce(&headers));
        let p = to_as.proof("POST", "http://a/token", None).unwrap();
        assert_eq!(part(&p, 1)["nonce"], "as-1");
        let p = to_rs.proof("POST", "http://a/mcp", Some("t")).unwrap();
        assert!(
            part(&p, 1).get("nonce").is_none(),
            "the resource's nonce is its own"
        );
    }

    #[test]
    fn dpop_is_used_where_es256_is_offered_and_refused_plainly_where_it_cannot_be() {
        let mut m: AsMetadata = serde_json::from_value(json!({
            "authorization_endpoint": "http://a/authorize", "token_endpoint": "http://a/token"
        }))
        .unwrap();
        assert_eq!(wanted(&m, false), Ok(false));
        assert_eq!(wanted(&m, true), Err(DpopUnmet::NotOffered));
        assert!(
            wanted(&m, true)
                .unwrap_err()
                .to_string()
                .contains("requires DPoP")
        );
        m.dpop_signing_alg_values_supported = vec!["RS256".into()];
        assert_eq!(wanted(&m, false), Ok(false));
        assert!(
            wanted(&m, true)
                .unwrap_err()
                .to_string()
                .contains("RS256 only")
        );
        m.dpop_signing_alg_values_supported.push("ES256".into());
        assert_eq!(wanted(&m, false), Ok(true));
    }
}
