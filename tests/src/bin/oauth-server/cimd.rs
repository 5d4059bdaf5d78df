//! `oauth-server`'s client ID metadata documents (draft-ietf-oauth-client-id-metadata-document,
//! as the MCP revision 2026-07-28 uses them): with `--client-metadata-documents`, an `https://`
//! `client_id` at `/authorize` is the address of the client's metadata, which the server
//! fetches (`GET`, over TLS, trusting only the CAs of `--ca-file PATH`, no redirects followed)
//! on every authorization request, and then checks:
//!
//! - the answer is `200` with a JSON object;
//! - its `client_id` is the address it was fetched from, exactly (simple string comparison,
//!   RFC 3986 §6.2.1: no normalisation);
//! - its `redirect_uris` allow the request's `redirect_uri`: the same string, or, for a loopback
//!   IP literal (`http://127.0.0.1`, `http://[::1]`), the same host and path on any port
//!   (RFC 8252 §7.3); `localhost` is matched exactly;
//! - its `token_endpoint_auth_method`, if given, is `none` (a public client).
//!
//! A document that cannot be fetched or fails a check makes the client unknown: the server
//! answers `400` with `{"error": "invalid_client", "error_description": …}` and does not
//! redirect (RFC 6749 §4.1.2.1: the redirect URI of a client it cannot trust is not followed).
//! The log of `/authorize` adds `"client_metadata": "fetched"` or the refusal's description in
//! `"client_metadata_error"`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// How long fetching one document may take.
const FETCH_LIMIT: Duration = Duration::from_secs(10);
/// The largest document read, in bytes.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Fetches documents over TLS, trusting the CAs of `--ca-file` and nothing else.
pub struct Fetcher {
    tls: Arc<rustls::ClientConfig>,
}

impl Fetcher {
    pub fn new(ca_file: Option<&Path>) -> anyhow::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        if let Some(path) = ca_file {
            let certs = CertificateDer::pem_file_iter(path)
                .with_context(|| format!("reading --ca-file {}", path.display()))?;
            for cert in certs {
                roots
                    .add(cert.with_context(|| format!("--ca-file {}", path.display()))?)
                    .context("a certificate of --ca-file")?;
            }
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self { tls: Arc::new(tls) })
    }

    /// The document at `url`, or why it could not be had.
    pub async fn fetch(&self, url: &str) -> Result<Value, String> {
        tokio::time::timeout(FETCH_LIMIT, self.get(url))
            .await
            .unwrap_or_else(|_| Err(format!("no answer from {url} within 10 s")))
    }

    async fn get(&self, url: &str) -> Result<Value, String> {
        let Some(rest) = url.strip_prefix("https://") else {
            return Err(format!("{url} is not an https:// address"));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("{url} has a bad port"))?,
            ),
            Some(_) | None => (authority, 443),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name =
            ServerName::try_from(host.to_owned()).map_err(|_| format!("{url} has a bad host"))?;
        let tcp = TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("could not connect to {url}: {e}"))?;
        let mut stream = tokio_rustls::TlsConnector::from(Arc::clone(&self.tls))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {url} failed: {e}"))?;
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
            if path.is_empty() { "/" } else { path }
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("could not ask {url}: {e}"))?;
        // Read until the body named by `Content-Length` is whole (a TLS peer that closes
        // without close_notify must not turn a whole answer into an error).
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            if let Some((status, body)) = whole(&answer) {
                return parse(url, status, body);
            }
            if answer.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("the document at {url} is too large"));
            }
            match stream.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("reading {url} failed: {e}")),
            }
        }
        Err(format!("{url} closed the connection before a whole answer"))
    }
}

/// The status and body of an answer, once its headers and `Content-Length` bytes are in.
fn whole(answer: &[u8]) -> Option<(u16, &[u8])> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    })?;
    answer.get(end + 4..end + 4 + length).map(|b| (status, b))
}

fn parse(url: &str, status: u16, body: &[u8]) -> Result<Value, String> {
    if status != 200 {
        return Err(format!("{url} answered HTTP {status}"));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(document) if document.is_object() => Ok(document),
        Ok(_) | Err(_) => Err(format!("{url} did not answer with a JSON object")),
    }
}

/// Checks the document fetched from `client_id` for an authorization request that sent
/// `redirect_uri`; why it is refused, if it is.
pub fn check(document: &Value, client_id: &str, redirect_uri: &str) -> Result<(), String> {
    match document["client_id"].as_str() {
        Some(id) if id == client_id => {}
        Some(id) => {
            return Err(format!(
                "the client metadata document at {client_id} names the client_id {id}, not the address it was fetched from"
            ));
        }
        None => {
            return Err(format!(
                "the client metadata document at {client_id} has no client_id"
            ));
        }
    }
    let uris: Vec<&str> = document["redirect_uris"]
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !uris
        .iter()
        .any(|allowed| redirect_allowed(allowed, redirect_uri))
    {
        return Err(format!(
            "the client metadata document at {client_id} does not allow the redirect_uri {redirect_uri}"
        ));
    }
    match document.get("token_endpoint_auth_method") {
        None => Ok(()),
        Some(method) if method == "none" => Ok(()),
        Some(method) => Err(format!(
            "the client metadata document at {client_id} asks for token_endpoint_auth_method {method}; a client known by its document is public here (none)"
        )),
    }
}

/// Whether `allowed` (from the document) allows `sent`: the same string, or the same loopback
/// IP literal and path on any port (RFC 8252 §7.3).
fn redirect_allowed(allowed: &str, sent: &str) -> bool {
    allowed == sent || matches!((loopback(allowed), loopback(sent)), (Some(a), Some(b)) if a == b)
}

/// For `http://127.0.0.1[:port]<rest>` or `http://[::1][:port]<rest>`: the host and the rest.
fn loopback(uri: &str) -> Option<(&str, &str)> {
    let after = uri.strip_prefix("http://")?;
    let host = ["127.0.0.1", "[::1]"]
        .into_iter()
        .find(|h| after.starts_with(h))?;
    let after = &after[host.len()..];
    let rest = match after.strip_prefix(':') {
        Some(port) => {
            let digits = port
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(port.len());
            if digits == 0 {
                return None;
            }
            &port[digits..]
        }
        None => after,
    };
    (rest.is_empty() || rest.starts_with(['/', '?'])).then_some((host, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_loopback_redirect_matches_on_any_port_and_nothing_else_does() {
        let doc = "http://127.0.0.1/callback";
        assert!(redirect_allowed(doc, "http://127.0.0.1:51234/callback"));
        assert!(redirect_allowed(
            "http://127.0.0.1:8080/callback",
            "http://127.0.0.1:9/callback"
        ));
        assert!(redirect_allowed(
            "http://[::1]/callback",
            "http://[::1]:9/callback"
        ));
        for other in [
            "http://127.0.0.1:9/other",
            "http://[::1]:9/callback",
            "http://localhost:9/callback",
            "http://127.0.0.10:9/callback",
            "https://127.0.0.1:9/callback",
        ] {
            assert!(!redirect_allowed(doc, other), "{other}");
        }
        assert!(!redirect_allowed(
            "http://localhost/callback",
            "http://localhost:9/callback"
        ));
    }

    #[test]
    fn a_document_must_name_itself_exactly() {
        let url = "https://127.0.0.1:9/bosun/client.json";
        let doc =
            |id: &str| json!({"client_id": id, "redirect_uris": ["http://127.0.0.1/callback"]});
        let sent = "http://127.0.0.1:5/callback";
        assert_eq!(check(&doc(url), url, sent), Ok(()));
        for other in [
            "https://127.0.0.1:9/bosun/client.json/",
            "https://127.0.0.1:9/bosun/Client.json",
            "https://127.0.0.1:9/bosun/other.json",
        ] {
            assert!(check(&doc(other), url, sent).is_err(), "{other}");
        }
        assert!(check(&doc(url), url, "http://127.0.0.1:5/elsewhere").is_err());
    }
}
