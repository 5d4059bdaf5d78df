//! A server reached by address: which addresses bosun takes, how it keeps one, how it shows one,
//! and which request headers are the transport's rather than the person's.
//!
//! An address is checked whole before anything is kept: `http` or `https` with a host; no user
//! name or password in it (they belong in a header line, which the keychain keeps); no
//! `#fragment` (never sent to a server); and plain `http` only to this machine (127.0.0.0/8,
//! `::1`, `localhost`) unless the person allows it (`--allow-http`), since everything sent over
//! it — header lines, tokens, answers — crosses the network unencrypted.
//!
//! The query of an address often carries a key (`?api_key=…`), so it is kept as a secret: the
//! store keeps the address without it and marks the record (`query_in_keychain`); the keychain
//! keeps it under [`query_key`]; the address used to connect is made from both at that moment
//! (`record::connect_url`). Everything that shows an address writes its query as `?…`
//! ([`shown`]). Records written before this rule kept the whole address in the store; they are
//! moved at bosund's start, before anything else uses the store, which is then written anew so that
//! no copy stays in its free pages (`crate::upgrade`), and on their next edit, and work
//! unmoved in the meantime.

use bosun_shared::ServerId;
use bosun_shared::mcp::ServerKind;
use url::Url;

use super::RegistryError;

pub use bosun_auth::web_address::HIDDEN_QUERY;

/// An address as checked, split into what the store keeps and what the keychain keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    /// The address without its query, written as the URL standard writes it.
    pub base: String,
    /// The query, without its `?`, when the address has a non-empty one.
    pub query: Option<String>,
}

/// The keychain key of a server's address query.
pub fn query_key(server: ServerId) -> String {
    format!("mcp/{server}/url-query")
}

/// Checks an address a person gave for a server; `allow_http` lets plain `http` reach another
/// machine.
pub fn check(text: &str, allow_http: bool) -> Result<Address, RegistryError> {
    let bad = |m: String| Err(RegistryError::invalid(m));
    let shown_text = shown(text);
    let mut url = match Url::parse(text.trim()) {
        Ok(u) => u,
        Err(e) => {
            return bad(format!(
                "`{shown_text}` is not an address ({e}); write it such as https://example.com/mcp"
            ));
        }
    };
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return bad(format!(
            "`{shown_text}` is a {} address; an MCP server's address starts with http:// or https://",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad(format!(
            "`{shown_text}` has a user name or password in it, which bosun would have to keep and show in the clear; remove them from the address and give them as a header line, which the keychain keeps: --header 'Authorization: Basic <base64 of user:password>' (or the header the service documents for its key), with the value from stdin (--env-from-stdin) so that it is on no command line"
        ));
    }
    if url.fragment().is_some() {
        return bad(format!(
            "`{shown_text}` has a #fragment, which is never sent to a server; remove it"
        ));
    }
    let query = url.query().filter(|q| !q.is_empty()).map(str::to_string);
    if query.as_deref().is_some_and(is_hidden_marker) {
        return bad(format!(
            "`{shown_text}` ends in ?…, which is how bosun shows a query it keeps hidden; give the whole address with its query, or leave the address out to keep the one saved"
        ));
    }
    if let Some(host) = plain_http_elsewhere(&url)
        && !allow_http
    {
        return bad(format!(
            "`{shown_text}` is plain http:// to {host}, which is not this machine: header lines, tokens and answers would cross the network unencrypted; use https://, or, on a network you trust, allow it with --allow-http"
        ));
    }
    url.set_query(None);
    Ok(Address {
        base: url.to_string(),
        query,
    })
}

/// Checks how a server is reached: a command for stdio, an http(s) address otherwise (see
/// [`check`]). Returns the address as it is kept, for a server reached by one.
pub fn check_target(
    kind: ServerKind,
    command: &Option<String>,
    url: &Option<String>,
    allow_http: bool,
) -> Result<Option<Address>, RegistryError> {
    let bad = |m: String| Err(RegistryError::invalid(m));
    match kind {
        ServerKind::Stdio => {
            if command.as_deref().is_none_or(|c| c.trim().is_empty()) {
                return bad("a stdio server needs a command; write it after `--`, such as: bosun mcp add NAME -- npx -y @acme/mcp".into());
            }
            if url.is_some() {
                return bad("a stdio server has a command, not an address".into());
            }
            Ok(None)
        }
        ServerKind::Http | ServerKind::Sse => {
            let Some(u) = url else {
                return bad("an http or sse server needs an address (--url)".into());
            };
            let checked = check(u, allow_http)?;
            if command.is_some() {
                return bad("a server reached by address has no command".into());
            }
            Ok(Some(checked))
        }
    }
}

/// Whether a query is bosun's own `…` (as `?…` shows a hidden one), raw or percent-encoded.
fn is_hidden_marker(query: &str) -> bool {
    query == "…" || query.eq_ignore_ascii_case("%E2%80%A6")
}

pub(crate) use bosun_auth::web_address::plain_http_elsewhere;
pub use bosun_auth::web_address::shown;

/// The address without its query (what a sign-in is for: a resource indicator should have no
/// query, RFC 8707 section 2).
pub fn base_of(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut url) => {
            url.set_query(None);
            url.to_string()
        }
        Err(_) => text
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// Why a header line cannot set `name`, when the HTTP client or the MCP transport writes that
/// header itself for each request.
pub fn owned_header(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("mcp-param-") {
        return Some("MCP's own, written by bosun from a tool's arguments for each call");
    }
    Some(match lower.as_str() {
        "host" => {
            "written from the server's address; to reach another host, change the address (--url)"
        }
        "content-length" | "transfer-encoding" => {
            "it describes each request's body, which the HTTP client writes"
        }
        "connection" | "keep-alive" | "proxy-connection" | "te" | "trailer" | "upgrade"
        | "expect" => "it manages the connection itself, which the HTTP client does",
        "content-type" | "accept" => "the MCP transport fixes what each request sends and accepts",
        "mcp-session-id" | "mcp-protocol-version" | "mcp-method" | "mcp-name" | "last-event-id" => {
            "it is MCP's own, written by bosun for each request"
        }
        "dpop" => "it is a proof bosun's sign-in makes afresh for each request",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
