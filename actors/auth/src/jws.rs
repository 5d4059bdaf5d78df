//! A JWS in compact serialization (RFC 7515 §7.1): base64url of the header and the claims,
//! signed as `header.claims`. DPoP proofs and client assertions are both made this way; each
//! brings its own header, claims and signing key.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

/// `header.claims.signature`, the signature made by `sign` over `header.claims`.
pub fn compact<S: AsRef<[u8]>, E>(
    header: &Value,
    claims: &Value,
    sign: impl FnOnce(&[u8]) -> Result<S, E>,
) -> Result<String, E> {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = sign(input.as_bytes())?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}
