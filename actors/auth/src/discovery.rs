//! Finding where to sign in to an MCP server: its protected-resource metadata (RFC 9728), with
//! the `resource` checked against the server's own address before anything else, then its
//! authorization server's metadata (RFC 8414 with path insertion, OpenID discovery as the
//! fallback, and the default endpoints for a server that publishes none), and the scopes to ask
//! for.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use super::challenge::Challenge;

/// How long one metadata request may take.
const FETCH_LIMIT: Duration = Duration::from_secs(15);
/// The largest metadata document read.
const MAX_DOCUMENT: usize = 256 * 1024;

/// An authorization server's endpoints and what it supports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsMetadata {
    #[serde(default)]
    pub issuer: Option<String>,
    /// Absent from the metadata of a server that signs in only machines (client credentials).
    #[serde(default)]
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// The grants it offers (`authorization_code`, `client_credentials`, …); empty when unsaid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grant_types_supported: Vec<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    /// The server sends `iss` in its authorization responses (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// The server takes an HTTPS address of a client's metadata as its client id.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// The algorithms of the DPoP proofs it takes (RFC 9449 §5.1); empty: it binds no tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dpop_signing_alg_values_supported: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    /// The resource takes only DPoP-bound tokens (RFC 9728 §2).
    #[serde(default)]
    dpop_bound_access_tokens_required: bool,
}

/// Where and how to sign in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// The RFC 8707 `resource`: the PRM's, as given, else the server's own address.
    pub resource: String,
    pub issuer: String,
    pub metadata: AsMetadata,
    /// The scopes to ask for, space-separated.
    pub scope: Option<String>,
    /// Where the endpoints came from, in words.
    pub source: String,
    /// The resource takes only DPoP-bound tokens (its metadata says so).
    pub dpop_required: bool,
}

/// Why discovery failed, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error("could not read {url}: {why}")]
    Fetch { url: String, why: String },
    #[error("{url} is not valid metadata: {why}")]
    Malformed { url: String, why: String },
    #[error(
        "the server's metadata names the resource {resource}, which is not the server's own address {server}; bosun does not sign in to another resource on its word"
    )]
    ForeignResource { resource: String, server: String },
    #[error("the server's metadata names no authorization server")]
    NoAuthorizationServer,
    #[error(
        "the authorization server does not offer PKCE with S256 (it lists {methods}), which MCP requires"
    )]
    NoPkce { methods: String },
    #[error("`{0}` is not an address")]
    BadUrl(String),
    /// An endpoint of the metadata is not an address bosun opens or sends a sign-in to (see
    /// `web_address::check_sign_in_address`). Not retryable: the server's metadata must change.
    #[error(
        "the authorization server's metadata gives its {field} as `{url}`, which {why}; bosun signs in only at https:// addresses (or http:// to this machine), so it refuses this sign-in"
    )]
    UnsafeEndpoint {
        field: &'static str,
        url: String,
        why: crate::web_address::SignInAddressError,
    },
}

fn fetch_error(url: &Url, e: &reqwest::Error) -> DiscoveryError {
    let why = if e.is_timeout() {
        format!("no answer within {} s", FETCH_LIMIT.as_secs())
    } else if e.is_connect() {
        "the connection was refused or could not be made".to_string()
    } else {
        e.to_string()
    };
    DiscoveryError::Fetch {
        url: url.to_string(),
        why,
    }
}

/// GETs a JSON document; `Ok(None)` when the server says it has none (404, 405, 400…).
async fn fetch<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, DiscoveryError> {
    let response = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .header("MCP-Protocol-Version", "2025-11-25")
        .timeout(FETCH_LIMIT)
        .send()
        .await
        .map_err(|e| fetch_error(url, &e))?;
    let status = response.status();
    if status.is_client_error() || status.is_redirection() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(DiscoveryError::Fetch {
            url: url.to_string(),
            why: format!("it answered {status}"),
        });
    }
    let (bytes, over) = crate::http_body::read_capped(response, MAX_DOCUMENT)
        .await
        .map_err(|e| fetch_error(url, &e))?;
    if over {
        return Err(DiscoveryError::Malformed {
            url: url.to_string(),
            why: format!("it is over {} KiB", MAX_DOCUMENT / 1024),
        });
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| DiscoveryError::Malformed {
            url: url.to_string(),
            why: e.to_string(),
        })
}

fn parse_url(text: &str) -> Result<Url, DiscoveryError> {
    Url::parse(text).map_err(|_| DiscoveryError::BadUrl(text.to_string()))
}

/// `<origin>/.well-known/<name><path>` (path insertion), and without the path.
fn well_known(base: &Url, name: &str) -> Vec<Url> {
    let path = base.path().trim_end_matches('/');
    let mut out = Vec::new();
    let mut at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u.set_query(None);
        u.set_fragment(None);
        out.push(u);
    };
    if !path.is_empty() {
        at(format!("/.well-known/{name}{path}"));
    }
    at(format!("/.well-known/{name}"));
    out
}

/// Whether `resource` is the server's own: same origin, and a prefix of its address's path.
pub fn is_own_resource(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    let same_origin = r.scheme() == server.scheme()
        && r.host_str() == server.host_str()
        && r.port_or_known_default() == server.port_or_known_default();
    let prefix = r.path().trim_end_matches('/');
    let path = server.path();
    same_origin
        && (prefix.is_empty()
            || path == prefix
            || path.starts_with(&format!("{prefix}/"))
            || path.trim_end_matches('/') == prefix)
}

/// The authorization server's metadata, as RFC 8414 and OpenID Connect discovery say, or the
/// default endpoints when it publishes none. Metadata whose `issuer` is not exactly `issuer`
/// (no normalisation) is refused; `lenient`: an issuer bosun made up from the server's origin
/// (it published no resource metadata, as servers before 2025-06-18 do) may differ by a
/// trailing slash, and the metadata's own is then the one recorded.
pub async fn authorization_server(
    http: &reqwest::Client,
    issuer: &str,
    lenient: bool,
) -> Result<(AsMetadata, String), DiscoveryError> {
    let issuer_url = parse_url(issuer)?;
    let path = issuer_url.path().trim_end_matches('/').to_string();
    let mut candidates: Vec<(Url, &str)> = Vec::new();
    let with_path = |name: &str, path: &str| {
        let mut u = issuer_url.clone();
        u.set_path(&format!("/.well-known/{name}{path}"));
        u.set_query(None);
        u
    };
    if path.is_empty() {
        candidates.push((
            with_path("oauth-authorization-server", ""),
            "RFC 8414 metadata",
        ));
        candidates.push((with_path("openid-configuration", ""), "OpenID metadata"));
    } else {
        // Never the root path for an issuer that has one.
        candidates.push((
            with_path("oauth-authorization-server", &path),
            "RFC 8414 metadata",
        ));
        candidates.push((with_path("openid-configuration", &path), "OpenID metadata"));
        let mut appended = issuer_url.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        candidates.push((appended, "OpenID metadata"));
    }
    for (url, what) in candidates {
        if let Some(meta) = fetch::<AsMetadata>(http, &url).await? {
            let said = meta.issuer.clone().unwrap_or_default();
            let same = said == issuer
                || (lenient && said.trim_end_matches('/') == issuer.trim_end_matches('/'));
            if !same {
                // Not a variant of its own: the wire's codes of these errors are not this
                // module's to add to.
                let said = if said.is_empty() {
                    "no issuer".to_string()
                } else {
                    format!("the issuer {said}")
                };
                return Err(DiscoveryError::Malformed {
                    url: url.to_string(),
                    why: format!(
                        "it names {said}, not {issuer}, the issuer its address was made from, and bosun does not use metadata that names another issuer (it may be someone else's); ask the server's operator to publish metadata whose `issuer` is exactly {issuer}"
                    ),
                });
            }
            return Ok((meta, format!("{what} at {url}")));
        }
    }
    let base = issuer.trim_end_matches('/');
    Ok((
        AsMetadata {
            issuer: Some(issuer.to_string()),
            authorization_endpoint: format!("{base}/authorize"),
            token_endpoint: format!("{base}/token"),
            registration_endpoint: Some(format!("{base}/register")),
            revocation_endpoint: None,
            scopes_supported: Vec::new(),
            token_endpoint_auth_methods_supported: Vec::new(),
            grant_types_supported: Vec::new(),
            code_challenge_methods_supported: Vec::new(),
            authorization_response_iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
            dpop_signing_alg_values_supported: Vec::new(),
        },
        format!("the default endpoints under {base} (it publishes no metadata)"),
    ))
}

/// Everything needed to sign in to the MCP server at `server_url`, from its challenge.
pub async fn discover(
    http: &reqwest::Client,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Discovered, DiscoveryError> {
    let server = parse_url(server_url)?;
    // 1. The protected-resource metadata: where the challenge says, else the well-known paths.
    let prm = resource_metadata(http, &server, challenge).await?;
    // 2. Its resource must be the server itself, checked before any authorization request.
    let from_prm = prm.is_some();
    let dpop_required = prm
        .as_ref()
        .is_some_and(|p| p.dpop_bound_access_tokens_required);
    let (resource, issuer, prm_scopes) = resource_of(prm, server_url, &server)?;
    // 3. The authorization server.
    let (metadata, source) = authorization_server(http, &issuer, !from_prm).await?;
    // The issuer recorded: the one the metadata was found for (the same but for a slash when
    // bosun made it up), which the authorization response's `iss` is compared with.
    let issuer = match (&metadata.issuer, from_prm) {
        (Some(said), false) => said.clone(),
        (Some(_) | None, true) | (None, false) => issuer,
    };
    check_endpoints(&metadata, &server)?;
    let methods = &metadata.code_challenge_methods_supported;
    if !methods.is_empty() && !methods.iter().any(|m| m == "S256") {
        return Err(DiscoveryError::NoPkce {
            methods: methods.join(", "),
        });
    }
    // 4. Scopes: the challenge's, else the resource's; offline_access when the AS has it.
    let mut scopes: Vec<String> = match &challenge.scope {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => prm_scopes,
    };
    if metadata
        .scopes_supported
        .iter()
        .any(|s| s == "offline_access")
        && !scopes.iter().any(|s| s == "offline_access")
    {
        scopes.push("offline_access".into());
    }
    Ok(Discovered {
        resource,
        issuer,
        metadata,
        scope: (!scopes.is_empty()).then(|| scopes.join(" ")),
        source,
        dpop_required,
    })
}

/// The server's protected-resource metadata, from the first address that has it: the
/// challenge's, else the well-known paths. `None` where none publishes it.
async fn resource_metadata(
    http: &reqwest::Client,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, DiscoveryError> {
    let prm_urls = match &challenge.resource_metadata {
        Some(u) => vec![parse_url(u)?],
        None => well_known(server, "oauth-protected-resource"),
    };
    for url in prm_urls {
        if let Some(doc) = fetch::<ResourceMetadata>(http, &url).await? {
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

/// The resource, the issuer of its authorization server, and its scopes: from its metadata
/// (whose resource must be the server itself), else the server's own address and origin.
fn resource_of(
    prm: Option<ResourceMetadata>,
    server_url: &str,
    server: &Url,
) -> Result<(String, String, Vec<String>), DiscoveryError> {
    match prm {
        Some(doc) => {
            let resource = doc.resource.unwrap_or_else(|| server_url.to_string());
            if !is_own_resource(&resource, server) {
                return Err(DiscoveryError::ForeignResource {
                    resource,
                    server: server_url.to_string(),
                });
            }
            let issuer = doc
                .authorization_servers
                .first()
                .cloned()
                .ok_or(DiscoveryError::NoAuthorizationServer)?;
            Ok((resource, issuer, doc.scopes_supported))
        }
        None => {
            let mut origin = server.clone();
            origin.set_path("/");
            origin.set_query(None);
            Ok((
                server_url.to_string(),
                origin.as_str().trim_end_matches('/').to_string(),
                Vec::new(),
            ))
        }
    }
}

/// Refuses an endpoint of the authorization server that is no safe address to sign in at.
fn check_endpoints(metadata: &AsMetadata, server: &Url) -> Result<(), DiscoveryError> {
    // Every endpoint is checked before anything is opened, shown or sent to it: the browser
    // opens the authorization endpoint's address, and the web UI makes it a link.
    let endpoints = [
        (
            "authorization_endpoint",
            Some(&metadata.authorization_endpoint),
        ),
        ("token_endpoint", Some(&metadata.token_endpoint)),
        (
            "registration_endpoint",
            metadata.registration_endpoint.as_ref(),
        ),
        ("revocation_endpoint", metadata.revocation_endpoint.as_ref()),
    ];
    for (field, url) in endpoints {
        // A server that signs in only machines publishes no authorization endpoint.
        let Some(url) = url.filter(|u| !u.is_empty()) else {
            continue;
        };
        if let Err(why) = crate::web_address::check_sign_in_address(url, server) {
            return Err(DiscoveryError::UnsafeEndpoint {
                field,
                url: crate::web_address::shown(url),
                why,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_must_be_the_server_itself() {
        let server = Url::parse("https://mcp.example.com/v1/mcp").unwrap();
        assert!(is_own_resource("https://mcp.example.com/v1/mcp", &server));
        assert!(is_own_resource("https://mcp.example.com/v1", &server));
        assert!(is_own_resource("https://mcp.example.com", &server));
        assert!(is_own_resource(
            "https://mcp.example.com:443/v1/mcp",
            &server
        ));
        assert!(!is_own_resource("https://evil.example.com/v1/mcp", &server));
        assert!(!is_own_resource("http://mcp.example.com/v1/mcp", &server));
        assert!(!is_own_resource(
            "https://mcp.example.com:8443/v1/mcp",
            &server
        ));
        assert!(!is_own_resource("https://mcp.example.com/v1/mcpx", &server));
        assert!(!is_own_resource("https://mcp.example.com/other", &server));
        assert!(!is_own_resource("not a url", &server));
    }

    /// Issue 25: a server's metadata could set `authorization_endpoint` to `javascript:…`, and
    /// bosun handed it to the browser and made it a link in the web UI.
    #[test]
    fn sign_in_addresses_are_https_or_plain_http_to_this_machine() {
        use crate::web_address::{SignInAddressError, check_sign_in_address as check};
        let server = Url::parse("https://mcp.example.com/mcp").unwrap();
        assert_eq!(check("https://as.example.com/authorize", &server), Ok(()));
        assert_eq!(check("http://127.0.0.1:8080/authorize", &server), Ok(()));
        assert_eq!(check("http://localhost/authorize", &server), Ok(()));
        assert_eq!(check("http://[::1]:9/authorize", &server), Ok(()));
        for bad in [
            "javascript:alert(document.cookie)",
            "JavaScript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:msgbox",
        ] {
            let why = check(bad, &server).unwrap_err().to_string();
            assert!(
                why.contains("which a browser would not open"),
                "{bad}: {why}"
            );
        }
        let why = check("http://as.example.com/authorize", &server).unwrap_err();
        assert_eq!(
            why,
            SignInAddressError::PlainHttpElsewhere("as.example.com".into())
        );
        assert!(
            why.to_string().contains("plain http:// to as.example.com"),
            "{why}"
        );
        assert_eq!(
            check("not an address", &server).map_err(|e| e.to_string()),
            Err("is not an address".into())
        );
        // A server the person allowed plain http for may have its sign-in on its own host.
        let plain = Url::parse("http://mcp.lan:8000/mcp").unwrap();
        assert_eq!(check("http://mcp.lan:8000/authorize", &plain), Ok(()));
        assert!(check("http://other.lan/authorize", &plain).is_err());
    }

    #[test]
    fn well_known_paths_insert_the_path_first() {
        let u = Url::parse("http://127.0.0.1:9/t/mcp").unwrap();
        let got: Vec<String> = well_known(&u, "oauth-protected-resource")
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/t/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource"
            ]
        );
    }
}
