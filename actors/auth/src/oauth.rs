//! The requests to an authorization server: dynamic client registration (RFC 7591), the
//! authorization URL with PKCE S256, `state` and `resource` (RFC 8707), the code exchange, the
//! refresh, and revocation (RFC 7009) — each authenticating the client the way the server
//! asked (`none`, `client_secret_basic` or `client_secret_post`).
//!
//! Token requests go through the `oauth2` crate, handed the workspace's reqwest (its own
//! reqwest feature targets an older reqwest). Registration and revocation are plain requests:
//! `oauth2` has no registration, and refuses revocation endpoints that are not https, which a
//! loopback server is.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bosun_shared::Timestamp;
use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, HttpRequest,
    HttpResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken,
    RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use serde::Deserialize;

use super::dpop::{self, Prover, SendError};
use super::record::ClientAuth;

/// How long one request to the authorization server may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

/// Who bosun is to the authorization server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    pub client_id: String,
    pub secret: Option<String>,
    pub auth: ClientAuth,
}

/// What the token endpoint answered.
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens {
    pub access: String,
    pub refresh: Option<String>,
    /// Absolute: worked out from `expires_in` when the answer came.
    pub expires_at: Option<Timestamp>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access", &"<secret>")
            .field("refresh", &self.refresh.as_ref().map(|_| "<secret>"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// Why a request to the authorization server failed. No variant carries a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    #[error("the authorization server refused: {code}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        code: String,
        description: Option<String>,
    },
    #[error("could not reach the authorization server at {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("the authorization server's answer could not be read: {0}")]
    Malformed(String),
    #[error("`{0}` is not an address bosun can use")]
    BadUrl(String),
}

impl OAuthError {
    /// Whether the server refused the grant itself (the refresh token is no good any more).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, OAuthError::Refused { code, .. } if code == "invalid_grant")
    }

    /// Whether the server refused the client itself (RFC 6749 §5.2: `invalid_client`, an
    /// unknown client or one whose authentication failed; `unauthorized_client`): no request
    /// with this client will do better.
    pub fn is_client_refused(&self) -> bool {
        matches!(self, OAuthError::Refused { code, .. }
            if code == "invalid_client" || code == "unauthorized_client")
    }
}

/// The HTTP client every request here uses: no redirects followed (a token request must not
/// be sent somewhere else), a deadline.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(REQUEST_LIMIT)
        .build()
        .unwrap_or_default()
}

type HttpFuture = Pin<Box<dyn Future<Output = Result<HttpResponse, SendError>> + Send>>;

/// `oauth2`'s HTTP client, made of reqwest: with a DPoP proof on each request when the sign-in
/// binds its tokens (see [`dpop::execute`]).
fn adapter(
    http: &reqwest::Client,
    dpop: Option<&Prover>,
) -> impl Fn(HttpRequest) -> HttpFuture + use<> {
    let http = http.clone();
    let dpop = dpop.cloned();
    move |request: HttpRequest| {
        let http = http.clone();
        let dpop = dpop.clone();
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)?;
            let answer = dpop::execute(&http, dpop.as_ref(), request).await?;
            let mut out = http::Response::builder().status(answer.status);
            for (k, v) in &answer.headers {
                out = out.header(k, v);
            }
            // The status and headers came from a response already: they are valid.
            let body = answer.body;
            Ok(out
                .body(body.clone())
                .unwrap_or_else(|_| http::Response::new(body)))
        }) as HttpFuture
    }
}

/// How an access token is to be used: as a bearer token, or bound to bosun's DPoP key (the
/// token endpoint answered `token_type: DPoP`, RFC 9449 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    Bearer,
    Dpop,
}

fn token_type_of(t: &BasicTokenResponse) -> TokenType {
    if t.token_type().as_ref().eq_ignore_ascii_case("dpop") {
        TokenType::Dpop
    } else {
        TokenType::Bearer
    }
}

/// Registers bosun as a public client (RFC 7591) with `redirect_uri`: a `native` application
/// (it listens on a loopback address for the answer), as the MCP revision 2026-07-28 asks.
pub async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    redirect_uri: &str,
    supported_auth: &[String],
) -> Result<ClientIdentity, OAuthError> {
    let body = serde_json::json!({
        "client_name": "bosun",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    let response = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(|e| unreachable(endpoint, &e))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(server_error(&text).unwrap_or(OAuthError::Refused {
            code: format!("registration answered {status}"),
            description: None,
        }));
    }
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<String>,
    }
    let r: Registered = serde_json::from_str(&text)
        .map_err(|e| OAuthError::Malformed(format!("the registration answer: {e}")))?;
    let auth = ClientAuth::choose(
        r.token_endpoint_auth_method.as_deref(),
        r.client_secret.is_some(),
        supported_auth,
    );
    Ok(ClientIdentity {
        client_id: r.client_id,
        secret: r.client_secret,
        auth,
    })
}

pub(super) fn unreachable(url: &str, e: &reqwest::Error) -> OAuthError {
    OAuthError::Unreachable {
        url: url.to_string(),
        why: if e.is_timeout() {
            format!("no answer within {} s", REQUEST_LIMIT.as_secs())
        } else if e.is_connect() {
            "the connection was refused or could not be made".to_string()
        } else {
            e.to_string()
        },
    }
}

/// An RFC 6749 §5.2 error body, when that is what `text` is.
pub(super) fn server_error(text: &str) -> Option<OAuthError> {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: String,
        error_description: Option<String>,
    }
    serde_json::from_str::<ErrorBody>(text)
        .ok()
        .map(|e| OAuthError::Refused {
            code: e.error,
            description: e.error_description,
        })
}

type Client = oauth2::Client<
    oauth2::basic::BasicErrorResponse,
    BasicTokenResponse,
    oauth2::basic::BasicTokenIntrospectionResponse,
    oauth2::StandardRevocableToken,
    oauth2::basic::BasicRevocationErrorResponse,
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

fn client(
    id: &ClientIdentity,
    authorization_endpoint: &str,
    token_endpoint: &str,
    redirect_uri: Option<&str>,
) -> Result<Client, OAuthError> {
    let auth_url = AuthUrl::new(authorization_endpoint.to_string())
        .map_err(|_| OAuthError::BadUrl(authorization_endpoint.to_string()))?;
    let token_url = TokenUrl::new(token_endpoint.to_string())
        .map_err(|_| OAuthError::BadUrl(token_endpoint.to_string()))?;
    let mut c = BasicClient::new(ClientId::new(id.client_id.clone()))
        .set_auth_uri(auth_url)
        .set_token_uri(token_url)
        .set_auth_type(match id.auth {
            ClientAuth::ClientSecretBasic => AuthType::BasicAuth,
            ClientAuth::None | ClientAuth::ClientSecretPost | ClientAuth::PrivateKeyJwt => {
                AuthType::RequestBody
            }
        });
    if let (Some(secret), ClientAuth::ClientSecretBasic | ClientAuth::ClientSecretPost) =
        (&id.secret, id.auth)
    {
        c = c.set_client_secret(ClientSecret::new(secret.clone()));
    }
    if let Some(r) = redirect_uri {
        c = c.set_redirect_uri(
            RedirectUrl::new(r.to_string()).map_err(|_| OAuthError::BadUrl(r.to_string()))?,
        );
    }
    Ok(c)
}

/// A started authorization: the URL to open, and what the answer is checked and completed with.
pub struct Authorization {
    pub url: String,
    pub state: String,
    pub verifier: PkceCodeVerifier,
}

/// The authorization URL: PKCE S256, a random `state`, the scopes and the resource.
pub fn authorization_url(
    id: &ClientIdentity,
    authorization_endpoint: &str,
    token_endpoint: &str,
    redirect_uri: &str,
    scope: Option<&str>,
    resource: &str,
) -> Result<Authorization, OAuthError> {
    let c = client(
        id,
        authorization_endpoint,
        token_endpoint,
        Some(redirect_uri),
    )?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = c
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", resource.to_string());
    for s in scope.unwrap_or_default().split_whitespace() {
        request = request.add_scope(Scope::new(s.to_string()));
    }
    let (url, state) = request.url();
    Ok(Authorization {
        url: url.to_string(),
        state: state.secret().clone(),
        verifier,
    })
}

fn tokens_of(t: &BasicTokenResponse, asked_scope: Option<&str>) -> Tokens {
    Tokens {
        access: t.access_token().secret().clone(),
        refresh: t.refresh_token().map(|r| r.secret().clone()),
        expires_at: t
            .expires_in()
            // A server's `expires_in` of any size is a time, never a wrap or an overflow.
            .map(|d| {
                Timestamp::from_millis(
                    Timestamp::now()
                        .as_millis()
                        .saturating_add(bosun_shared::time::millis(d)),
                )
            }),
        scope: t
            .scopes()
            .map(|s| {
                s.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .or_else(|| asked_scope.map(str::to_string)),
    }
}

fn token_error(
    url: &str,
    e: RequestTokenError<SendError, oauth2::basic::BasicErrorResponse>,
) -> OAuthError {
    match e {
        RequestTokenError::ServerResponse(r) => OAuthError::Refused {
            code: match r.error() {
                BasicErrorResponseType::InvalidGrant => "invalid_grant".into(),
                BasicErrorResponseType::InvalidClient => "invalid_client".into(),
                BasicErrorResponseType::InvalidRequest => "invalid_request".into(),
                BasicErrorResponseType::InvalidScope => "invalid_scope".into(),
                BasicErrorResponseType::UnauthorizedClient => "unauthorized_client".into(),
                BasicErrorResponseType::UnsupportedGrantType => "unsupported_grant_type".into(),
                BasicErrorResponseType::Extension(x) => x.clone(),
            },
            description: r.error_description().cloned(),
        },
        RequestTokenError::Request(SendError::Http(e)) => unreachable(url, &e),
        RequestTokenError::Request(SendError::Proof(e)) => OAuthError::Unreachable {
            url: url.to_string(),
            why: e.to_string(),
        },
        RequestTokenError::Parse(e, body) => {
            // An error answer in a shape oauth2 did not expect still says what it is.
            server_error(&String::from_utf8_lossy(&body))
                .unwrap_or_else(|| OAuthError::Malformed(e.to_string()))
        }
        RequestTokenError::Other(why) => OAuthError::Malformed(why),
    }
}

/// Exchanges the authorization code for tokens, with a DPoP proof when `dpop` is given.
#[allow(clippy::too_many_arguments)]
pub async fn exchange_code(
    http: &reqwest::Client,
    id: &ClientIdentity,
    authorization_endpoint: &str,
    token_endpoint: &str,
    redirect_uri: &str,
    code: &str,
    verifier: PkceCodeVerifier,
    resource: &str,
    asked_scope: Option<&str>,
    dpop: Option<&Prover>,
) -> Result<(Tokens, TokenType), OAuthError> {
    let c = client(
        id,
        authorization_endpoint,
        token_endpoint,
        Some(redirect_uri),
    )?;
    let call = adapter(http, dpop);
    c.exchange_code(AuthorizationCode::new(code.to_string()))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", resource.to_string())
        .request_async(&call)
        .await
        .map(|t| (tokens_of(&t, asked_scope), token_type_of(&t)))
        .map_err(|e| token_error(token_endpoint, e))
}

/// Uses the refresh token (with a DPoP proof from the same key when the sign-in is bound).
/// When the answer has no new refresh token, the old one stays good.
#[allow(clippy::too_many_arguments)]
pub async fn refresh(
    http: &reqwest::Client,
    id: &ClientIdentity,
    authorization_endpoint: &str,
    token_endpoint: &str,
    refresh_token: &str,
    resource: &str,
    scope: Option<&str>,
    dpop: Option<&Prover>,
) -> Result<(Tokens, TokenType), OAuthError> {
    let c = client(id, authorization_endpoint, token_endpoint, None)?;
    let call = adapter(http, dpop);
    let rt = RefreshToken::new(refresh_token.to_string());
    c.exchange_refresh_token(&rt)
        .add_extra_param("resource", resource.to_string())
        .request_async(&call)
        .await
        .map(|t| {
            let mut tokens = tokens_of(&t, scope);
            if tokens.refresh.is_none() {
                tokens.refresh = Some(refresh_token.to_string());
            }
            (tokens, token_type_of(&t))
        })
        .map_err(|e| token_error(token_endpoint, e))
}

/// Revokes the refresh token (RFC 7009), authenticating the client as for the token endpoint.
pub async fn revoke(
    http: &reqwest::Client,
    id: &ClientIdentity,
    endpoint: &str,
    refresh_token: &str,
) -> Result<(), OAuthError> {
    let mut form: Vec<(&str, &str)> = vec![
        ("token", refresh_token),
        ("token_type_hint", "refresh_token"),
    ];
    let mut request = http.post(endpoint);
    match (id.auth, &id.secret) {
        (ClientAuth::ClientSecretBasic, Some(secret)) => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(&id.client_id), Some(enc(secret)));
        }
        (ClientAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", &id.client_id));
            form.push(("client_secret", secret));
        }
        (
            ClientAuth::None
            | ClientAuth::ClientSecretBasic
            | ClientAuth::ClientSecretPost
            | ClientAuth::PrivateKeyJwt,
            _,
        ) => {
            form.push(("client_id", &id.client_id));
        }
    }
    let response = request
        .form(&form)
        .send()
        .await
        .map_err(|e| unreachable(endpoint, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = response.text().await.unwrap_or_default();
    Err(server_error(&text).unwrap_or(OAuthError::Refused {
        code: format!("revocation answered {status}"),
        description: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_authentication_follows_the_registration_then_the_server() {
        let both = vec![
            "client_secret_post".to_string(),
            "client_secret_basic".to_string(),
        ];
        let post_only = vec!["client_secret_post".to_string()];
        assert_eq!(
            ClientAuth::choose(Some("none"), false, &both),
            ClientAuth::None
        );
        assert_eq!(
            ClientAuth::choose(Some("client_secret_post"), true, &both),
            ClientAuth::ClientSecretPost
        );
        assert_eq!(
            ClientAuth::choose(None, true, &both),
            ClientAuth::ClientSecretBasic
        );
        assert_eq!(
            ClientAuth::choose(None, true, &post_only),
            ClientAuth::ClientSecretPost
        );
        assert_eq!(
            ClientAuth::choose(None, true, &[]),
            ClientAuth::ClientSecretBasic
        );
        assert_eq!(ClientAuth::choose(None, false, &both), ClientAuth::None);
    }

    #[test]
    fn the_authorization_url_has_pkce_state_scope_and_resource() {
        let id = ClientIdentity {
            client_id: "abc".into(),
            secret: None,
            auth: ClientAuth::None,
        };
        let a = authorization_url(
            &id,
            "http://127.0.0.1:9/authorize",
            "http://127.0.0.1:9/token",
            "http://127.0.0.1:5555/callback",
            Some("mcp:read offline_access"),
            "http://127.0.0.1:9/mcp",
        )
        .unwrap();
        let u = url::Url::parse(&a.url).unwrap();
        let q: std::collections::HashMap<String, String> = u.query_pairs().into_owned().collect();
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "abc");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["code_challenge"].len(), 43);
        assert_eq!(q["state"], a.state);
        assert_eq!(q["scope"], "mcp:read offline_access");
        assert_eq!(q["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:5555/callback");
    }
}
