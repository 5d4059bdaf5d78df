//! bosun's client ID metadata document, checked before the browser opens. Where the person
//! hosts bosun's metadata (`--client-metadata-url`) and the authorization server takes such
//! documents, the document's address is bosun's client id; the server fetches it at
//! `/authorize` and, when it finds it wrong, answers the browser with an error and does not
//! redirect (RFC 6749 §4.1.2.1) — bosun would hear nothing and wait out its limit. So bosund
//! fetches the document first, with the client and trust it uses for the authorization server,
//! and refuses the sign-in at once, saying what to fix, when it answered other than 200, is not
//! a JSON object, names another `client_id`, or allows no loopback redirect to bosun's listener.
//! A document this machine cannot reach at all (no answer, a certificate it does not trust) may
//! still be one the authorization server can: the sign-in goes on with a warning, and that
//! server decides.
//!
//! # Caveats
//! The check is the one every server that takes documents makes; a server may check more (a
//! `token_endpoint_auth_method`, a `client_name` policy), and its refusal then still shows only
//! in the browser.

use url::Url;

/// The largest document read, in bytes: a client's metadata is a few hundred.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// The longest piece of the document quoted back in a refusal.
const QUOTE_CHARS: usize = 200;

/// Why bosun's client metadata document cannot be used: from [`check`]. Fixing the document
/// (or its hosting) and signing in again helps; a fetch that failed may also work on a retry.
#[derive(Debug, thiserror::Error)]
pub enum ClientDocumentError {
    /// The document could not be fetched (no answer, a TLS failure, a read cut short).
    #[error(
        "could not fetch bosun's client metadata document at {url}: {why}; check that it is published there over HTTPS with a certificate this machine trusts, then sign in again"
    )]
    Unreachable { url: String, why: String },
    /// The address answered, but not with `200` (a redirect is not followed).
    #[error(
        "bosun's client metadata document at {url} answered {status} (a redirect is not followed); publish the document at exactly that address, then sign in again"
    )]
    Status { url: String, status: u16 },
    /// The answer is larger than any client's metadata.
    #[error(
        "bosun's client metadata document at {url} is larger than {MAX_DOCUMENT_BYTES} bytes; publish only bosun's client metadata there, then sign in again"
    )]
    TooLarge { url: String },
    /// The answer is not a JSON object.
    #[error(
        "bosun's client metadata document at {url} is not a JSON object: {why}; publish bosun's client metadata as JSON there, then sign in again"
    )]
    NotJson { url: String, why: String },
    /// The document's `client_id` is not its own address, character for character.
    #[error(
        "bosun's client metadata document at {url} names the client_id {found}, but it must be exactly its own address: set \"client_id\": \"{url}\" in it, then sign in again"
    )]
    OtherClientId { url: String, found: String },
    /// No `redirect_uris` entry lets the answer come back to bosun's loopback listener.
    #[error(
        "no redirect_uris entry of bosun's client metadata document at {url} allows bosun's answer at http://127.0.0.1/callback (any port); add \"http://127.0.0.1/callback\" to its redirect_uris, then sign in again"
    )]
    NoLoopbackRedirect { url: String },
}

/// Fetches the document at `url` and checks it for a sign-in whose answer comes back to
/// `http://127.0.0.1:<port>/callback`.
pub async fn check(http: &reqwest::Client, url: &str) -> Result<(), ClientDocumentError> {
    let unreachable = |e: reqwest::Error| ClientDocumentError::Unreachable {
        url: url.to_string(),
        why: plain(&e),
    };
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(ClientDocumentError::Status {
            url: url.to_string(),
            status: status.as_u16(),
        });
    }
    let (body, over) = crate::http_body::read_capped(response, MAX_DOCUMENT_BYTES)
        .await
        .map_err(unreachable)?;
    if over {
        return Err(ClientDocumentError::TooLarge {
            url: url.to_string(),
        });
    }
    let document: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&body)
        .map_err(|e| ClientDocumentError::NotJson {
            url: url.to_string(),
            why: e.to_string(),
        })?;
    judge(url, &document)
}

/// The checks on a fetched document (kept apart from the fetch so they are tested alone).
fn judge(
    url: &str,
    document: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), ClientDocumentError> {
    // A simple string comparison (RFC 3986 §6.2.1), as the server makes it: no normalisation.
    match document.get("client_id") {
        Some(serde_json::Value::String(id)) if id == url => {}
        Some(serde_json::Value::String(id)) => {
            return Err(ClientDocumentError::OtherClientId {
                url: url.to_string(),
                found: quote(&format!("\"{id}\"")),
            });
        }
        Some(other) => {
            return Err(ClientDocumentError::OtherClientId {
                url: url.to_string(),
                found: quote(&other.to_string()),
            });
        }
        None => {
            return Err(ClientDocumentError::OtherClientId {
                url: url.to_string(),
                found: "nothing".to_string(),
            });
        }
    }
    let allowed = document
        .get("redirect_uris")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|uris| {
            uris.iter()
                .filter_map(serde_json::Value::as_str)
                .any(allows_bosun)
        });
    if !allowed {
        return Err(ClientDocumentError::NoLoopbackRedirect {
            url: url.to_string(),
        });
    }
    Ok(())
}

/// Whether a registered redirect URI allows bosun's listener, `http://127.0.0.1:<any>/callback`:
/// a loopback IP literal matches on any port (RFC 8252 §7.3). `http://[::1]/callback` is a
/// loopback redirect too, but bosun listens on 127.0.0.1 only, so a server would refuse bosun's
/// redirect against it; `localhost` is matched exactly by servers, never on any port.
fn allows_bosun(uri: &str) -> bool {
    let Ok(u) = Url::parse(uri) else {
        return false;
    };
    u.scheme() == "http"
        && u.host() == Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
        && u.path() == "/callback"
        && u.query().is_none()
        && u.fragment().is_none()
        && u.username().is_empty()
        && u.password().is_none()
}

/// A piece of the document, cut short where it is long.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// reqwest's error with its causes, in one line.
fn plain(e: &reqwest::Error) -> String {
    let mut words = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        words.push_str(": ");
        words.push_str(&s.to_string());
        source = s.source();
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const URL: &str = "https://bosun.example.com/client.json";

    fn judged(doc: serde_json::Value) -> Result<(), ClientDocumentError> {
        let serde_json::Value::Object(map) = doc else {
            panic!("a test document is an object");
        };
        judge(URL, &map)
    }

    #[test]
    fn a_document_with_its_own_address_and_a_loopback_redirect_is_taken() {
        for uri in [
            "http://127.0.0.1/callback",
            "http://127.0.0.1:8765/callback",
        ] {
            let doc = json!({"client_id": URL, "redirect_uris": ["https://x.example/cb", uri]});
            assert!(judged(doc).is_ok(), "{uri}");
        }
    }

    #[test]
    fn a_client_id_is_compared_exactly() {
        for id in [
            json!("https://bosun.example.com/client.json/"),
            json!("HTTPS://bosun.example.com/client.json"),
            json!(7),
        ] {
            let doc = json!({"client_id": id, "redirect_uris": ["http://127.0.0.1/callback"]});
            let err = judged(doc).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                err.contains("must be exactly its own address"),
                "{id}: {err}"
            );
        }
        let err = judged(json!({"redirect_uris": ["http://127.0.0.1/callback"]}));
        assert!(matches!(
            err,
            Err(ClientDocumentError::OtherClientId { found, .. }) if found == "nothing"
        ));
    }

    #[test]
    fn only_a_loopback_redirect_to_the_callback_allows_bosun() {
        for uris in [
            json!(["http://localhost/callback"]),
            json!(["http://[::1]/callback"]),
            json!(["http://127.0.0.1/"]),
            json!(["https://127.0.0.1/callback"]),
            json!(["http://127.0.0.1/callback?x=1"]),
            json!([]),
            json!("http://127.0.0.1/callback"),
        ] {
            let doc = json!({"client_id": URL, "redirect_uris": uris});
            assert!(
                matches!(
                    judged(doc),
                    Err(ClientDocumentError::NoLoopbackRedirect { .. })
                ),
                "{uris}"
            );
        }
    }
}
