//! The checks `oauth-server` makes of DPoP proofs (RFC 9449), kept apart from the rest of the
//! server: a proof's shape (`typ`, `alg`, the public `jwk`), its signature with that key, its
//! claims (`htm`, `htu` without query and fragment, `iat` within a minute, a `jti` never seen
//! before, `ath` and `nonce` where they are asked for), the JWK thumbprint (RFC 7638) a bound
//! token names in `cnf.jkt`, and the nonces the server hands out.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// How far a proof's `iat` may be from now.
const IAT_WINDOW_SECS: u64 = 60;
/// How many of the latest nonces handed out a proof may carry.
const NONCES_KEPT: usize = 3;

/// What a valid proof says.
#[derive(Debug)]
pub struct Proof {
    /// The thumbprint of its key.
    pub jkt: String,
    pub ath: Option<String>,
    pub nonce: Option<String>,
}

/// The proofs seen and the nonces handed out, for one server.
#[derive(Debug, Default)]
pub struct Tracker {
    jtis: HashSet<String>,
    pub proofs: u64,
    pub replays: u64,
    pub refused: u64,
    pub nonce_demands: u64,
    /// The nonces handed out by the token endpoint (`true`) and by `/mcp` (`false`).
    nonces: Vec<(bool, String)>,
    /// The tokens issued bound, with the thumbprint of their key (`cnf.jkt`).
    bound: std::collections::HashMap<String, String>,
}

impl Tracker {
    /// Checks `proof` for a request `htm htu`; a `jti` seen before is a replay.
    pub fn check(&mut self, proof: &str, htm: &str, htu: &str) -> Result<Proof, String> {
        self.proofs += 1;
        let checked = verify(proof, htm, htu);
        let checked = match checked {
            Ok((p, jti)) => {
                if self.jtis.insert(jti) {
                    Ok(p)
                } else {
                    self.replays += 1;
                    Err("the proof's jti was used before (a replay)".to_owned())
                }
            }
            Err(e) => Err(e),
        };
        if checked.is_err() {
            self.refused += 1;
        }
        checked
    }

    /// Whether `nonce` is one of the latest handed out by that side (`to_as`: the token
    /// endpoint).
    pub fn nonce_ok(&self, to_as: bool, nonce: Option<&str>) -> bool {
        nonce.is_some_and(|n| {
            self.nonces
                .iter()
                .rev()
                .filter(|(side, _)| *side == to_as)
                .take(NONCES_KEPT)
                .any(|(_, k)| k == n)
        })
    }

    /// A new nonce of that side, handed out now.
    pub fn new_nonce(&mut self, to_as: bool) -> String {
        let nonce = format!("n-{}", URL_SAFE_NO_PAD.encode(rand::random::<[u8; 12]>()));
        self.nonces.push((to_as, nonce.clone()));
        nonce
    }

    pub fn bind(&mut self, token: &str, jkt: &str) {
        self.bound.insert(token.to_owned(), jkt.to_owned());
    }

    /// The thumbprint `token` is bound to, if it is.
    pub fn bound_to(&self, token: &str) -> Option<&str> {
        self.bound.get(token).map(String::as_str)
    }

    pub fn unique_jtis(&self) -> usize {
        self.jtis.len()
    }
}

/// `ath`: base64url(SHA-256(token)).
pub fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

fn part(text: &str, what: &str) -> Result<Value, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| format!("the proof's {what} is not base64url"))?;
    serde_json::from_slice(&bytes).map_err(|_| format!("the proof's {what} is not JSON"))
}

/// Checks one proof; what it says and its `jti`.
pub fn verify(proof: &str, htm: &str, htu: &str) -> Result<(Proof, String), String> {
    let mut parts = proof.split('.');
    let (Some(h), Some(c), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the proof is not a compact JWS".to_owned());
    };
    let header = part(h, "header")?;
    let claims = part(c, "claims")?;
    if header["typ"] != "dpop+jwt" {
        return Err("the proof's typ is not dpop+jwt".to_owned());
    }
    if header["alg"] != "ES256" {
        return Err("the proof's alg is not ES256".to_owned());
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() {
        return Err("the proof's jwk holds a private key".to_owned());
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err("the proof's jwk has no x and y".to_owned());
    };
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err("the proof's jwk is not a P-256 key".to_owned());
    }
    let mut point = vec![4u8];
    for coordinate in [x, y] {
        point.extend(
            URL_SAFE_NO_PAD
                .decode(coordinate)
                .map_err(|_| "the proof's jwk is not base64url".to_owned())?,
        );
    }
    let signature = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "the proof's signature is not base64url".to_owned())?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{h}.{c}").as_bytes(), &signature)
        .map_err(|_| "the proof's signature does not verify with its jwk".to_owned())?;
    if claims["htm"] != htm {
        return Err(format!("the proof's htm is not {htm}"));
    }
    if claims["htu"] != htu {
        return Err(format!("the proof's htu is not {htu}"));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let iat = claims["iat"].as_u64().unwrap_or(0);
    if iat.abs_diff(now) > IAT_WINDOW_SECS {
        return Err("the proof's iat is not within a minute of now".to_owned());
    }
    let Some(jti) = claims["jti"].as_str().filter(|j| !j.is_empty()) else {
        return Err("the proof has no jti".to_owned());
    };
    let proof = Proof {
        jkt: thumbprint(x, y),
        ath: claims["ath"].as_str().map(str::to_owned),
        nonce: claims["nonce"].as_str().map(str::to_owned),
    };
    Ok((proof, jti.to_owned()))
}

/// The JWK thumbprint (RFC 7638) of the P-256 key whose coordinates are `x` and `y`
/// (base64url): the required members in lexicographic order, no whitespace.
fn thumbprint(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The thumbprint of the DPoP key bosun keeps in the keychain (its PKCS#8 document,
/// base64url), to compare with the `dpop_jkt` the server bound its tokens to. Errors name no
/// part of the key.
pub fn kept_key_thumbprint(kept: &str) -> anyhow::Result<String> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    let pkcs8 = URL_SAFE_NO_PAD
        .decode(kept.trim())
        .map_err(|_| anyhow::anyhow!("the kept DPoP key is not base64url"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8)
        .map_err(|_| anyhow::anyhow!("the kept DPoP key is not a P-256 PKCS#8 key"))?;
    // The uncompressed point: 0x04 || x || y.
    let point = pair.public_key().as_ref();
    let (Some(x), Some(y)) = (point.get(1..33), point.get(33..65)) else {
        anyhow::bail!("the kept DPoP key's public point is not 65 bytes");
    };
    Ok(thumbprint(
        &URL_SAFE_NO_PAD.encode(x),
        &URL_SAFE_NO_PAD.encode(y),
    ))
}
