//! The web UI's security: who may talk to the bridge, and what every answer carries.
//!
//! - **Host allow-list.** A request whose `Host` is not this bridge's own address (`127.0.0.1`,
//!   `localhost` or `[::1]` on its port, or the address given to `--listen`) is refused with 403
//!   before anything else: a page of another site that rebinds its DNS name to 127.0.0.1 still
//!   sends its own name as `Host`.
//! - **Sign-in.** `bosun ui` prints an address carrying a one-time token (kept in the 0600
//!   address file); `/login?token=` trades it for a session cookie (HttpOnly, SameSite=Strict)
//!   and redirects to the clean address, and the token is replaced at once. Every other request
//!   without a session's cookie gets 401.
//! - **Writes.** Anything but GET and HEAD also needs `Origin` equal to the bridge's own origin
//!   and the session's CSRF value in `X-Bosun-Csrf` (which only a page of the bridge can read,
//!   from `GET /api/session`).
//! - **Headers.** Every answer forbids inline script, framing, sniffing and referrers; no CORS
//!   header is ever sent, so no other origin can read an answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use rand::RngCore;
use serde::Deserialize;

use super::Bridge;
use super::error::ApiError;

/// The header a page sends its session's CSRF value in.
pub const CSRF_HEADER: &str = "x-bosun-csrf";

/// How many browser sessions are remembered; signing in once more drops the oldest.
const MAX_SESSIONS: usize = 32;

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A signed-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    id: String,
    pub csrf: String,
}

/// The sign-in token and the sessions it has opened.
#[derive(Debug)]
pub struct Keys {
    token: String,
    sessions: VecDeque<Session>,
}

impl Keys {
    pub fn new() -> Self {
        Self {
            token: random_hex(),
            sessions: VecDeque::new(),
        }
    }

    pub fn token(&self) -> &str {
        &self.token
    }
}

/// 256 random bits from the thread's CSPRNG (seeded by the OS), as hex.
pub fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two secrets in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

pub fn lock(keys: &Mutex<Keys>) -> MutexGuard<'_, Keys> {
    keys.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The middleware every request goes through.
pub async fn guard(State(bridge): State<Arc<Bridge>>, mut req: Request, next: Next) -> Response {
    let mut response = match admit(&bridge, &req) {
        Ok(session) => {
            if let Some(session) = session {
                req.extensions_mut().insert(session);
            }
            next.run(req).await
        }
        Err(refusal) => refusal.into_response(req.uri().path().starts_with("/api/")),
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Why a request was not let through.
struct Refusal {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// JSON for the API, a small plain page for everything else.
    fn into_response(self, api: bool) -> Response {
        if api {
            ApiError::new(self.status, self.code, self.message).into_response()
        } else {
            (self.status, Html(plain_page(&self.message))).into_response()
        }
    }
}

/// Lets a request through (with its [`Session`], but for the login), or says why not.
fn admit(bridge: &Bridge, req: &Request) -> Result<Option<Session>, Refusal> {
    let host = header_str(req.headers(), header::HOST.as_str()).unwrap_or_default();
    if !bridge.allowed_hosts.iter().any(|h| h == host) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "This address ({}) is not bosun's web UI. Open the address `bosun ui` prints.",
                if host.is_empty() { "no Host" } else { host }
            ),
        ));
    }
    if req.uri().path() == "/login" {
        return Ok(None);
    }
    let session = session_of(bridge, req.headers()).ok_or_else(|| {
        Refusal::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "This browser is not signed in to bosun's web UI (or the web UI restarted). Run `bosun ui` again and open the address it prints.",
        )
    })?;
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let own_origin = format!("http://{host}");
        match header_str(req.headers(), header::ORIGIN.as_str()) {
            Some(origin) if origin == own_origin => {}
            Some(origin) => {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "cross_origin",
                    format!(
                        "A page of {origin} tried to change something in bosun; only bosun's own pages may. Nothing was done."
                    ),
                ));
            }
            None => {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "cross_origin",
                    "A change came without an Origin header; only bosun's own pages may change things. Nothing was done.",
                ));
            }
        }
        let csrf = header_str(req.headers(), CSRF_HEADER).unwrap_or_default();
        if !same_secret(csrf, &session.csrf) {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "csrf",
                "A change came without this session's X-Bosun-Csrf header; reload the page and try again. Nothing was done.",
            ));
        }
    }
    Ok(Some(session))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The session whose cookie the request carries.
fn session_of(bridge: &Bridge, headers: &HeaderMap) -> Option<Session> {
    let prefix = format!("{}=", bridge.cookie_name);
    let value = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .find_map(|c| c.strip_prefix(prefix.as_str()))?;
    let keys = lock(&bridge.keys);
    keys.sessions
        .iter()
        .find(|s| same_secret(&s.id, value))
        .cloned()
}

fn plain_page(message: &str) -> String {
    let escaped = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>bosun</title></head><body><h1>bosun</h1><p>{escaped}</p></body></html>"
    )
}

#[derive(Deserialize)]
pub struct LoginQuery {
    token: Option<String>,
}

/// `GET /login?token=…`: trades the one-time token for a session cookie, replaces the token, and
/// redirects to the clean address.
pub async fn login(State(bridge): State<Arc<Bridge>>, Query(q): Query<LoginQuery>) -> Response {
    let given = q.token.unwrap_or_default();
    let session = {
        let mut keys = lock(&bridge.keys);
        if given.is_empty() || !same_secret(&given, &keys.token) {
            None
        } else {
            let session = Session {
                id: random_hex(),
                csrf: random_hex(),
            };
            keys.sessions.push_back(session.clone());
            while keys.sessions.len() > MAX_SESSIONS {
                keys.sessions.pop_front();
            }
            keys.token = random_hex();
            Some(session)
        }
    };
    let Some(session) = session else {
        return (
            StatusCode::UNAUTHORIZED,
            Html(plain_page(
                "This sign-in address was already used, or is from an earlier start of the web UI. Run `bosun ui` again and open the new address it prints.",
            )),
        )
            .into_response();
    };
    if let Err(e) = bridge.save_address() {
        super::note(&format!("could not write the address file: {e}"));
    }
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        bridge.cookie_name, session.id
    );
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    match HeaderValue::from_str(&cookie) {
        Ok(v) => {
            headers.insert(header::SET_COOKIE, v);
        }
        Err(_) => {
            return ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "could not make the session cookie",
            )
            .into_response();
        }
    }
    response
}
