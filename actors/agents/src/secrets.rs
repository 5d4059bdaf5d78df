//! The secret values of an agent's run, each with where it comes from, so that a run whose plan
//! waits (a run placed on a cluster, queued there for hours, across restarts of bosund) can have
//! its secrets read again when its runner asks for the plan: the value from the keychain, a
//! fresh token from the server's TokenRefresher. [`launch`](super::launch) makes one
//! [`SecretLine`] for every value it reads; what a secret is used as says in which forms the
//! runner looks for it in the run's output ([`SecretLine::redact_forms`]).
//!
//! # Caveats
//! - The bearer token of a lead's answer lives only as long as the bosund that made it
//!   ([`SecretSource::Ephemeral`]): a plan holding one cannot be made again after a restart.

use std::time::Duration;

use bosun_auth::{Access, AuthContext, AuthError};
use bosun_kit::keychain::Keychain;
use bosun_kit::offload::blocking;
use bosun_mcp::redact;
use bosun_shared::ServerId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::AgentsError;

/// Where a secret value of a run comes from, and what it is used as. Holds no value: it is kept
/// in the store with a sealed plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum SecretSource {
    /// A value the keychain keeps under `key`.
    Keychain {
        key: String,
        /// What it is, for a person: "the agent `far`'s secret TOKEN".
        what: String,
        /// How the person sets it again: "bosun agent edit far --secret-env TOKEN".
        fix: String,
        used_as: UsedAs,
    },
    /// The access token of a server bosun signed in to, given as `Authorization: Bearer …`,
    /// valid for at least `min_valid_ms` when it is handed out.
    Token {
        server: ServerId,
        /// The server's name, for a person.
        name: String,
        min_valid_ms: u64,
    },
    /// A value that lives only as long as the bosund that made it (the bearer token of a lead's
    /// answer for bosun's own MCP server).
    Ephemeral { what: String },
    /// A coding CLI's sign-in file in the agent's own folder (Claude Code's
    /// `.credentials.json`, Codex's `auth.json`), copied whole into the run's folder
    /// ([`homes`](super::homes)).
    CliFile { path: std::path::PathBuf },
}

/// What a secret value is used as, which says how a program may print it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "as", rename_all = "snake_case")]
pub enum UsedAs {
    /// A line of the agent's own environment: looked for exactly as it is.
    AgentEnv,
    /// An environment line of an MCP server.
    ServerEnv,
    /// A header line of an MCP server (`name: value`): its credential after the scheme too.
    Header { name: String },
    /// The query of a server's address (`url?value`): its values percent-encoded and decoded.
    Query { url: String },
}

/// A secret value read for a run, with where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretLine {
    pub source: SecretSource,
    pub value: String,
}

impl std::fmt::Debug for SecretLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretLine")
            .field("source", &self.source)
            .field("value", &format_args!("<{} bytes>", self.value.len()))
            .finish()
    }
}

impl SecretLine {
    /// Every form of the value the runner hides in the run's output: the same list the launch
    /// gives for it.
    pub fn redact_forms(&self) -> Vec<String> {
        let v = &self.value;
        match &self.source {
            SecretSource::Keychain { used_as, .. } => match used_as {
                UsedAs::AgentEnv => vec![v.clone()],
                UsedAs::ServerEnv => {
                    redact::secret_values(&[(String::new(), v.clone())], &[], None)
                }
                UsedAs::Header { name } => {
                    redact::secret_values(&[], &[(name.clone(), v.clone())], None)
                }
                UsedAs::Query { url } => {
                    redact::secret_values(&[], &[], Some(&format!("{url}?{v}")))
                }
            },
            SecretSource::CliFile { .. } => sign_in_values(v),
            SecretSource::Token { .. } | SecretSource::Ephemeral { .. } => redact::secret_values(
                &[],
                &[("Authorization".into(), format!("Bearer {v}"))],
                None,
            ),
        }
    }
}

/// What reads a run's secrets again: the keychain, and the servers' sign-ins.
#[derive(Clone)]
pub struct SecretReader {
    pub keychain: Keychain,
    pub auth: AuthContext,
}

impl SecretReader {
    /// Reads every value again, in order: the keychain's as it is now, a token as the server's
    /// refresher hands it out now (refreshed first when it would not last). A value that is
    /// gone is refused as a conflict ([`bosun_kit::error::RefusedKind::Conflict`]) with what it was and how to set it again.
    pub async fn read_again(&self, sources: &[SecretSource]) -> Result<Vec<String>, AgentsError> {
        let (keychain, auth) = (&self.keychain, &self.auth);
        let mut out = Vec::with_capacity(sources.len());
        for source in sources {
            let value = match source {
                SecretSource::Keychain { key, what, fix, .. } => {
                    let (keychain, key) = (keychain.clone(), key.clone());
                    match blocking(move || keychain.get(&key)).await?? {
                        Some(v) => v,
                        None => {
                            return Err(AgentsError::conflict(format!(
                                "{what} is no longer in the keychain; set it again with `{fix}`"
                            )));
                        }
                    }
                }
                SecretSource::Token {
                    server,
                    name,
                    min_valid_ms,
                } => {
                    let min_valid = Duration::from_millis(*min_valid_ms);
                    match bosun_auth::access(auth, *server, min_valid, None).await {
                        Ok(Access::Token(t)) => t,
                        Ok(Access::None) | Err(AuthError::NeedsSignIn { .. }) => {
                            return Err(AgentsError::conflict(format!(
                                "the MCP server `{name}` is no longer signed in; sign in again with `bosun mcp sign-in {name}`"
                            )));
                        }
                        Ok(Access::Dpop { .. }) => {
                            return Err(AgentsError::conflict(format!(
                                "the sign-in of the MCP server `{name}` is now bound to bosun's DPoP key, which a run cannot use; sign in again with `bosun mcp sign-in {name}`"
                            )));
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                SecretSource::CliFile { path } => {
                    let p = path.clone();
                    match blocking(move || std::fs::read_to_string(p)).await? {
                        Ok(v) => v,
                        Err(e) => {
                            return Err(AgentsError::conflict(format!(
                                "the CLI's sign-in {} could not be read again ({e}); sign the CLI in again",
                                path.display()
                            )));
                        }
                    }
                }
                SecretSource::Ephemeral { what } => {
                    return Err(AgentsError::conflict(format!(
                        "{what} lived only as long as the bosund that started the run"
                    )));
                }
            };
            out.push(value);
        }
        Ok(out)
    }
}

/// What came of asking for a server's token anew during a run (its gateway's HTTP call was
/// refused: 401, or 403 `insufficient_scope`).
pub enum TokenAnew {
    /// The server's current access token: refreshed first when the refused one was current.
    Token(String),
    /// Only the person can help (`why`): a new sign-in.
    NeedsSignIn { why: String },
    /// No token, for another reason (the message says which and what to do).
    Failed(String),
}

impl SecretReader {
    /// The current token of the server named `server`, for a run's gateway whose call was
    /// refused: `refused` is the fingerprint of the token the server refused (that one is
    /// refreshed, never handed out again); `wider` the server asked for a wider scope (`scope`),
    /// which only a new sign-in gives (kept for it). `signed_in_after`: only a sign-in made
    /// after that time will do (a call that waited for the person's new sign-in).
    pub async fn token_anew(
        &self,
        store: &bosun_store::Store,
        server: &str,
        refused: Option<String>,
        wider: bool,
        scope: Option<String>,
        signed_in_after: Option<bosun_shared::Timestamp>,
    ) -> TokenAnew {
        let rec = match bosun_mcp::registry::find(store, server).await {
            Ok(r) => r,
            Err(e) => {
                return TokenAnew::Failed(format!(
                    "bosun could not renew the sign-in to the MCP server `{server}`: {e}"
                ));
            }
        };
        if let Some(after) = signed_in_after {
            let (store, id) = (store.clone(), rec.id);
            let sign_in =
                blocking(move || store.get::<bosun_auth::record::SignInRecord>(&id)).await;
            let signed_in_at = match sign_in {
                Ok(Ok(r)) => r.map(|r| r.signed_in_at),
                Ok(Err(e)) => {
                    return TokenAnew::Failed(format!(
                        "bosun could not read the sign-in to the MCP server `{server}`: {e}"
                    ));
                }
                Err(e) => {
                    return TokenAnew::Failed(format!(
                        "bosun could not read the sign-in to the MCP server `{server}`: {e}"
                    ));
                }
            };
            if signed_in_at.is_none_or(|t| t <= after) {
                return TokenAnew::NeedsSignIn {
                    why: "it has not been signed in to again since the call began to wait".into(),
                };
            }
        }
        if wider {
            if let Some(scope) = scope.clone() {
                bosun_auth::want_scope(&self.auth, rec.id, scope).await;
            }
            let why = match scope {
                Some(s) => format!("it asks for a wider scope ({s})"),
                None => "it asks for a wider scope".to_string(),
            };
            return TokenAnew::NeedsSignIn { why };
        }
        match bosun_auth::access(&self.auth, rec.id, Duration::from_secs(60), refused).await {
            Ok(Access::Token(t)) => TokenAnew::Token(t),
            // No sign-in of bosun's (never made, or signed out): the refused credentials may be
            // a header line of the person's, which no sign-in replaces.
            Ok(Access::None) => TokenAnew::Failed(format!(
                "the MCP server `{server}` refused the run's credentials, and bosun holds no sign-in to it; the call was not run. Sign in with `bosun mcp sign-in {server}` if it needs one, or check its header lines with `bosun mcp show {server}`"
            )),
            Err(AuthError::NeedsSignIn { why, .. }) => TokenAnew::NeedsSignIn { why },
            Ok(Access::Dpop { .. }) => TokenAnew::Failed(format!(
                "the sign-in of the MCP server `{server}` is now bound to bosun's DPoP key, which a run cannot use; sign in again with `bosun mcp sign-in {server}`"
            )),
            Err(e) => TokenAnew::Failed(format!(
                "bosun could not renew the sign-in to the MCP server `{server}`: {e}"
            )),
        }
    }
}

/// The secret values in a CLI's sign-in file (a JSON document): every string under a key that
/// names a token or a key, for the runner to hide in the run's output.
pub fn sign_in_values(contents: &str) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    let k = k.to_ascii_lowercase();
                    let secret = k.contains("token") || k.contains("key");
                    match v.as_str() {
                        Some(s) if secret && s.len() >= bosun_shared::redact::MIN_LEN => {
                            out.push(s.to_string())
                        }
                        Some(_) | None => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(contents) {
        walk(&v, &mut out);
    }
    out
}
