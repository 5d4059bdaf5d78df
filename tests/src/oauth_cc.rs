//! OAuth client credentials for the tests: a machine client's key pair (ES256: the private key
//! as PEM for bosun, the public key as a JWK for `oauth-server`), checking a JWS against a JWK
//! (ES256 or RS256), and a small blocking `POST` for a test to speak to the token endpoint
//! itself.

use std::io::{Read as _, Write as _};

use anyhow::{Context as _, bail};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents, UnparsedPublicKey,
};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

/// A P-256 key pair of a machine client.
pub struct MachineKey {
    /// The private key, PKCS#8 PEM: what the person gives bosun.
    pub pem: String,
    /// The public key as a JWK: what the authorization server knows the client by.
    pub jwk: Value,
    pair: EcdsaKeyPair,
}

impl MachineKey {
    pub fn es256() -> anyhow::Result<Self> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| anyhow::anyhow!("could not make a P-256 key"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .map_err(|e| anyhow::anyhow!("the new key does not read back: {e}"))?;
        // The uncompressed point: 0x04 || x || y.
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            pem: pem("PRIVATE KEY", pkcs8.as_ref()),
            jwk,
            pair,
        })
    }

    /// A JWS of `claims` signed with this key (ES256), as a client assertion is.
    pub fn sign(&self, claims: &Value) -> anyhow::Result<String> {
        let header = json!({"alg": "ES256", "typ": "JWT"});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| anyhow::anyhow!("signing failed"))?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// `der` as PEM with `label`.
pub fn pem(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The header and claims of `jwt` once its signature is checked against `jwk` (EC P-256 with
/// ES256, or RSA with RS256), or why not.
pub fn verify_jws(jwk: &Value, jwt: &str) -> Result<(Value, Value), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("the assertion is not a JWS in compact form (three parts)".into());
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| format!("the assertion's {what} is not base64url"))
    };
    let json = |part: &str, what: &str| -> Result<Value, String> {
        serde_json::from_slice(&decode(part, what)?)
            .map_err(|_| format!("the assertion's {what} is not JSON"))
    };
    let (h, c) = (json(header, "header")?, json(claims, "claims")?);
    let sig = decode(signature, "signature")?;
    let input = format!("{header}.{claims}");
    let field = |name: &str| -> Result<Vec<u8>, String> {
        jwk[name]
            .as_str()
            .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
            .ok_or_else(|| format!("the registered key has no {name}"))
    };
    let checked = match (jwk["kty"].as_str(), h["alg"].as_str()) {
        (Some("EC"), Some("ES256")) => {
            let mut point = vec![4u8];
            point.extend(field("x")?);
            point.extend(field("y")?);
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).verify(input.as_bytes(), &sig)
        }
        (Some("RSA"), Some("RS256")) => RsaPublicKeyComponents {
            n: field("n")?,
            e: field("e")?,
        }
        .verify(&RSA_PKCS1_2048_8192_SHA256, input.as_bytes(), &sig),
        (kty, alg) => {
            return Err(format!(
                "the assertion is signed with {alg:?}, which the registered {kty:?} key does not take"
            ));
        }
    };
    checked.map_err(|_| "the assertion's signature does not verify with the registered key")?;
    Ok((h, c))
}

/// `POST url` with a form body; the status and the body.
pub fn post_form(url: &str, pairs: &[(&str, &str)]) -> anyhow::Result<(u16, Value)> {
    let rest = url.strip_prefix("http://").context("only http:// here")?;
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = crate::http::encode_form(pairs);
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        bail!("not an HTTP answer: {answer}");
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status")?;
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}
