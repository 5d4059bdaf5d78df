//! `oauth-server`'s machine client: the OAuth client credentials grant (RFC 6749 §4.4) with
//! `client_secret_basic` or `private_key_jwt` (RFC 7523 §2.2, §3).
//!
//! ```text
//! --machine-client ID (--machine-secret S | --machine-jwk JWK)
//! [--grant-types "authorization_code refresh_token client_credentials"]
//! [--auth-methods "client_secret_basic private_key_jwt"]
//! ```
//!
//! - `--machine-client ID --machine-secret S`: a client that authenticates with
//!   `client_secret_basic` only; `--machine-jwk JWK` (a public JWK, EC P-256 or RSA, as JSON):
//!   one that authenticates with `private_key_jwt` only, its assertions checked against that
//!   key.
//! - The metadata's `grant_types_supported` gains `client_credentials` and its
//!   `token_endpoint_auth_methods_supported` the machine's method; `--grant-types` and
//!   `--auth-methods` replace either list outright (to test a client against a server that
//!   does not offer what it needs).
//! - `POST /token` with `grant_type=client_credentials`: the client authentication as above,
//!   else `401 invalid_client` with what was wrong. An assertion must have
//!   `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, verify
//!   with the JWK (ES256 or RS256), have `iss` = `sub` = the client id (and a `client_id` in
//!   the form, if sent, the same), an `aud` that is the issuer or the token endpoint (a string,
//!   or an array holding one), an `exp` in the future and at most 10 minutes away, an `iat`,
//!   and a `jti` never seen before (a replayed assertion is refused). Then `resource`, if
//!   sent, must be `<base>/mcp` and `scope`, if sent, within the resource's scopes (without
//!   `offline_access`); the answer is an access token for `--access-ttl` seconds and no
//!   refresh token.
//! - With `--dpop`, the grant needs a proof as a code grant does (checked after the client's
//!   authentication, so a nonce demand costs the client its assertion's `jti`), and the token
//!   is bound to the proof's key (`token_type: "DPoP"`); the log adds `dpop_jkt` to the grant.
//! - The log adds `"auth": "basic" | "private_key_jwt"`, and for an assertion `"aud"` and
//!   `"jti_sha"` (the first 8 hex digits of the SHA-256 of its `jti`). `/test/state` adds
//!   `"client_credentials"`: the grants issued. `POST /test/refuse-machine` makes every later
//!   grant answer `401 invalid_client` "the client's credentials were revoked".

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::bail;
use bosun_tests::http::{Request, Response};
use bosun_tests::oauth_cc::verify_jws;
use serde_json::{Map, Value, json};

use super::{
    Grant, OAuthError, Server, State, auth_header, basic_credentials, deny_client, short_sha,
};

const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The furthest in the future an assertion's `exp` may be.
const MAX_ASSERTION_LIFE: u64 = 600;

/// The machine client of the command line, and the lists the metadata shows.
#[derive(Debug, Default)]
pub struct MachineOptions {
    client: Option<String>,
    secret: Option<String>,
    jwk: Option<Value>,
    grant_types: Option<Vec<String>>,
    auth_methods: Option<Vec<String>>,
}

impl MachineOptions {
    /// Whether `flag` is one of this module's.
    pub fn takes(flag: &str) -> bool {
        matches!(
            flag,
            "--machine-client"
                | "--machine-secret"
                | "--machine-jwk"
                | "--grant-types"
                | "--auth-methods"
        )
    }

    pub fn set(&mut self, flag: &str, value: String) -> anyhow::Result<()> {
        let list = |v: &str| v.split_whitespace().map(str::to_owned).collect();
        match flag {
            "--machine-client" => self.client = Some(value),
            "--machine-secret" => self.secret = Some(value),
            "--machine-jwk" => match serde_json::from_str::<Value>(&value) {
                Ok(jwk) if jwk.is_object() => self.jwk = Some(jwk),
                Ok(_) | Err(_) => bail!("--machine-jwk takes a JWK, a JSON object"),
            },
            "--grant-types" => self.grant_types = Some(list(&value)),
            "--auth-methods" => self.auth_methods = Some(list(&value)),
            other => bail!("unknown argument {other:?}"),
        }
        Ok(())
    }

    pub fn check(&self) -> anyhow::Result<()> {
        match (&self.client, &self.secret, &self.jwk) {
            (Some(_), Some(_), None) | (Some(_), None, Some(_)) | (None, None, None) => Ok(()),
            (Some(_), Some(_), Some(_)) => {
                bail!("--machine-secret and --machine-jwk: a machine client has one of them")
            }
            (Some(_), None, None) => {
                bail!("--machine-client needs --machine-secret or --machine-jwk")
            }
            (None, Some(_), _) | (None, None, Some(_)) => {
                bail!("--machine-secret and --machine-jwk go with --machine-client")
            }
        }
    }

    fn method(&self) -> Option<&'static str> {
        self.client.as_ref()?;
        Some(if self.jwk.is_some() {
            "private_key_jwt"
        } else {
            "client_secret_basic"
        })
    }

    /// Adds the grant and the method to the authorization server's metadata, or replaces the
    /// lists with those of the command line.
    pub fn amend_metadata(&self, document: &mut Value) {
        let add = |document: &mut Value, field: &str, item: &str| {
            if let Some(list) = document[field].as_array_mut()
                && !list.iter().any(|x| x == item)
            {
                list.push(json!(item));
            }
        };
        if let Some(method) = self.method() {
            add(document, "grant_types_supported", "client_credentials");
            add(document, "token_endpoint_auth_methods_supported", method);
        }
        if let Some(grants) = &self.grant_types {
            document["grant_types_supported"] = json!(grants);
        }
        if let Some(methods) = &self.auth_methods {
            document["token_endpoint_auth_methods_supported"] = json!(methods);
        }
    }
}

/// What the machine grants have seen.
#[derive(Default)]
pub struct MachineState {
    /// The `jti` of every assertion taken.
    jtis: HashSet<String>,
    /// Grants issued.
    pub grants: u64,
    /// `POST /test/refuse-machine`: the client's credentials are refused from now on, as a
    /// service whose operator revoked them would.
    pub refused: bool,
}

impl Server {
    /// `POST /token` with `grant_type=client_credentials`: the token answer, or the error.
    /// With `--dpop`, the proof is checked once the client is (a nonce demand comes after its
    /// assertion was taken, so a client must make a new one to ask again), and the token is
    /// bound to the proof's key, as a code grant's is.
    pub(super) fn client_credentials(
        &self,
        state: &mut State,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Response, OAuthError> {
        let machine = &self.options.machine;
        let Some(client_id) = machine.client.clone() else {
            return Err(OAuthError::new(
                400,
                "unauthorized_client",
                "this server has no client that may use client_credentials",
            ));
        };
        log.insert("client_id".to_owned(), json!(client_id));
        if state.machine.refused {
            return deny_client("the client's credentials were revoked");
        }
        match (&machine.secret, &machine.jwk) {
            (Some(secret), _) => {
                log.insert("auth".to_owned(), json!("basic"));
                let Some((id, sent)) = auth_header(request, "basic").and_then(basic_credentials)
                else {
                    return deny_client("this client authenticates with client_secret_basic");
                };
                if id != client_id {
                    return deny_client(format!("unknown client {id}"));
                }
                if sent != *secret {
                    return deny_client("wrong client secret");
                }
            }
            (None, Some(jwk)) => {
                log.insert("auth".to_owned(), json!("private_key_jwt"));
                self.check_assertion(state, request, jwk, &client_id, log)?;
            }
            (None, None) => return deny_client("the machine client has no credential"),
        }
        let jkt = match self.dpop_token_request(state, request, "client_credentials", log) {
            Ok(jkt) => jkt,
            Err(refused) => return Ok(refused),
        };
        let param = |name: &str| request.form_param(name).filter(|v| !v.is_empty());
        self.check_resource(param("resource").as_deref())?;
        let allowed: Vec<String> = self
            .resource_scopes()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let scope = self.check_scope(param("scope").as_deref(), &allowed)?;
        state.grants.push(Grant {
            client_id,
            revoked: false,
            issuer: self.issuer_for(request.path()),
        });
        state.machine.grants += 1;
        let grant = state.grants.len() - 1;
        let answer = self.issue(state, grant, &scope, self.options.access_ttl, false);
        Ok(self.dpop_bind(state, jkt, answer))
    }

    fn check_assertion(
        &self,
        state: &mut State,
        request: &Request,
        jwk: &Value,
        client_id: &str,
        log: &mut Map<String, Value>,
    ) -> Result<(), OAuthError> {
        if auth_header(request, "basic").is_some() || request.form_param("client_secret").is_some()
        {
            return deny_client("more than one client authentication method");
        }
        if request.form_param("client_assertion_type").as_deref() != Some(JWT_BEARER) {
            return deny_client(format!("client_assertion_type must be {JWT_BEARER}"));
        }
        let Some(assertion) = request.form_param("client_assertion") else {
            return deny_client("client_assertion is missing");
        };
        let (_, claims) = verify_jws(jwk, &assertion).or_else(deny_client)?;
        if claims["iss"] != client_id || claims["sub"] != client_id {
            return deny_client("the assertion's iss and sub must both be the client id");
        }
        if let Some(form) = request.form_param("client_id")
            && form != client_id
        {
            return deny_client("client_id differs from the assertion's");
        }
        let issuer = self.issuer_for(request.path());
        let ours = [issuer.clone(), format!("{issuer}/token")];
        let aud = &claims["aud"];
        log.insert("aud".to_owned(), aud.clone());
        let audiences: Vec<&str> = match aud {
            Value::String(a) => vec![a.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => Vec::new(),
        };
        if !audiences.iter().any(|a| ours.iter().any(|o| o == a)) {
            return deny_client(format!(
                "the assertion's aud must be this server ({issuer}), not {aud}"
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match claims["exp"].as_u64() {
            Some(exp) if exp <= now => return deny_client("the assertion has expired"),
            Some(exp) if exp > now + MAX_ASSERTION_LIFE => {
                return deny_client("the assertion's exp is too far in the future");
            }
            Some(_) => {}
            None => return deny_client("the assertion has no exp"),
        }
        if claims["iat"].as_u64().is_none() {
            return deny_client("the assertion has no iat");
        }
        let Some(jti) = claims["jti"].as_str().filter(|j| !j.is_empty()) else {
            return deny_client("the assertion has no jti");
        };
        log.insert("jti_sha".to_owned(), json!(short_sha(jti)));
        if !state.machine.jtis.insert(jti.to_owned()) {
            return deny_client("the assertion was used before (its jti is not new)");
        }
        Ok(())
    }
}
