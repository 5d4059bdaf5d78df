//! `oauth-server`: an OAuth 2.1 authorization server and an MCP server protected by it, in one
//! process, for the end-to-end tests of bosun's OAuth sign-in to MCP servers (MCP authorization
//! spec 2025-11-25; RFC 6749, 7009, 7591, 7636, 8414, 8707, 9728).
//!
//! ```text
//! oauth-server [--port N] [--prm header|path|root|none] [--prm-resource URL]
//!              [--issuer-path /t] [--metadata oauth|openid|none] [--malformed-metadata]
//!              [--scopes "mcp:read mcp:write offline_access"] [--registration on|off]
//!              [--client-id ID [--client-secret S]]
//!              [--auth-method none|client_secret_basic|client_secret_post]
//!              [--revocation on|off] [--authorize-error CODE] [--wrong-state]
//!              [--access-ttl SECONDS] [--refreshed-ttl SECONDS] [--rotate] [--refuse-refresh]
//!              [--refuse-refreshed] [--refresh-delay-ms N]
//!              [--step-up [--step-up-names SCOPES] [--step-up-forever]]
//!              [--open-initialize] [--stateless] [--log FILE]
//!              [--iss none|exact|wrong|slash] [--iss-advertised] [--metadata-issuer URL]
//!              [--client-metadata-documents [--ca-file PATH]] [--header-tools] [--input-required]
//!              [--second-issuer-path /t2]
//! ```
//!
//! Flags take their value as `--flag value` or `--flag=value`; the switches (`--rotate`, …)
//! take none. It listens on `127.0.0.1:N` (`--port 0`, the default, picks a free port) and,
//! once listening, prints exactly one line to stdout: `listening http://127.0.0.1:<port>`.
//! Below, `<base>` is that URL and `<issuer>` is `<base>` followed by `--issuer-path`. There is
//! no person: every valid authorization request is approved at once.
//!
//! # The MCP server (resource server)
//!
//! `<base>/mcp`, Streamable HTTP answering `application/json`: `initialize` (echoes a known
//! client protocol version, else `2025-11-25`; capabilities `{"tools":{}}`; server info
//! `oauth-test-server` 1.0.0; an `Mcp-Session-Id` header), notifications → `202`, `ping`,
//! `tools/list` (one tool, `whoami`, read-only), `tools/call whoami` → the text
//! `client=<client_id> scope=<scope> token=<first 8 hex of sha256(access token)>`. `DELETE` →
//! `200`, `GET` → `405`. Every request, whatever its method, needs `Authorization: Bearer`
//! with a valid, unexpired, unrevoked access token, else `401` with
//! `WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource/mcp", scope="<scopes>"`
//! (`resource_metadata` only with `--prm header`; `error="invalid_token"` and an
//! `error_description` are added when a token was sent but refused). `<scopes>` are the
//! resource's scopes: `--scopes` without `offline_access` (that one is the authorization
//! server's business: a client adds it when the AS metadata lists it). With `--step-up`, the
//! 401's scope is only `mcp:read`, and `tools/call` with a token lacking `mcp:write` gets `403`
//! with `Bearer error="insufficient_scope", scope="mcp:read mcp:write"[, resource_metadata=…]`
//! (`--step-up-names SCOPES`: that `scope` is `SCOPES` instead, such as only the missing
//! `mcp:write`; `--step-up-forever`: the 403 comes whatever the token's scope, as a server that
//! keeps asking would).
//!
//! `--sse` makes `/mcp` a server of the older HTTP+SSE transport (MCP 2024-11-05) as well:
//! `GET /mcp`, authorized as a POST is, opens an event stream whose first event, `endpoint`,
//! is `/mcp?sessionId=<id>`; a POST there is handled as above, and an answer it would have
//! had in its body is sent on that session's stream as a `message` event, the POST answered
//! `202` (logged with `"sse": true`). A refusal (401, 403) is the POST's own answer.
//!
//! `--stateless` makes `/mcp` a server of the 2026-07-28 revision only, as the ones seen in the
//! wild: a POST without `MCP-Protocol-Version` gets `400` with the JSON-RPC error `-32020`
//! "Missing MCP-Protocol-Version header" (whatever its method, `initialize` included); a
//! request whose `Mcp-Method` (or, for `tools/call`, `Mcp-Name`) header or version header does
//! not match its body gets `400` `-32020`; one whose `_meta` lacks
//! `io.modelcontextprotocol/protocolVersion` or `io.modelcontextprotocol/clientCapabilities`
//! gets `400` `-32602`; a version other than `2026-07-28` gets `400` `-32022` with
//! `data: {"supported": ["2026-07-28"], "requested": …}`. Then `server/discover` answers
//! `{resultType: "complete", supportedVersions: ["2026-07-28"], capabilities: {"tools": {}},
//! ttlMs: 0, cacheScope: "private", _meta: {"io.modelcontextprotocol/serverInfo": …}}`,
//! `initialize` (with the headers) answers just `{"resultType": "complete"}`, `tools/list` and
//! `tools/call` answer as above with `resultType: "complete"` (and the list `ttlMs`,
//! `cacheScope`), an unknown method gets `404` `-32601`. No `Mcp-Session-Id` is ever sent;
//! `GET` and `DELETE` get `405`. Authorization comes first, as above. The log adds
//! `"version_header"`, `"method_header"`, `"name_header"`, `"meta_version"` (the `_meta`
//! protocol version) and `"meta_client"` (the name in its `clientInfo`) to each `/mcp` POST
//! that has them.
//!
//! `--open-initialize` lets `initialize`, notifications and `server/discover` (`-32601`, as any
//! method it does not know) through without a token and asks for one on everything else: a server that lets the handshake through and
//! answers `tools/list` with the 401.
//!
//! # Discovery
//!
//! - Protected-resource metadata (RFC 9728), by `--prm`: `header` (default) and `path` serve
//!   it at `/.well-known/oauth-protected-resource/mcp` (only `header` names it in the 401);
//!   `root` only at `/.well-known/oauth-protected-resource`; `none` nowhere (404). Document:
//!   `{"resource": "<base>/mcp" or --prm-resource, "authorization_servers": ["<issuer>"],
//!   "scopes_supported": [<resource scopes>], "bearer_methods_supported": ["header"]}`.
//! - Authorization-server metadata, by `--metadata`: `oauth` (default) at
//!   `/.well-known/oauth-authorization-server<issuer-path>` (RFC 8414 path insertion; never the
//!   root path when the issuer has a path); `openid` at `/.well-known/openid-configuration<issuer-path>`
//!   and `<issuer-path>/.well-known/openid-configuration`, the oauth path being 404; `none`
//!   nowhere. Fields: `issuer`, `authorization_endpoint`, `token_endpoint`,
//!   `registration_endpoint` (unless `--registration off`), `revocation_endpoint` (unless
//!   `--revocation off`), `scopes_supported` (all of `--scopes`, default
//!   `mcp:read mcp:write offline_access`), `response_types_supported`,
//!   `grant_types_supported`, `code_challenge_methods_supported: ["S256"]`,
//!   `token_endpoint_auth_methods_supported: [--auth-method]`. `--malformed-metadata` serves
//!   `{"issuer": ` instead, wherever the document would be. `--authorization-endpoint TEXT`
//!   puts TEXT in `authorization_endpoint` as it is (a hostile server's `javascript:…`).
//!
//! # The authorization server
//!
//! The endpoints are always `<issuer>/authorize`, `/token`, `/register` and `/revoke`, even
//! with `--metadata none`.
//! - `POST /register` (RFC 7591; 404 with `--registration off`): JSON with a non-empty
//!   `redirect_uris`; answers `201` with `client_id`, `client_secret` (only for the secret
//!   methods) and `client_secret_expires_at: 0`, `client_id_issued_at`, `client_name`,
//!   `redirect_uris`, `grant_types`, `response_types` and `token_endpoint_auth_method`, which
//!   is always `--auth-method` (default `none`), whatever the client asked for.
//! - `--client-id ID [--client-secret S]` pre-registers a client (with or without
//!   registration); its redirect URI may be any `http://127.0.0.1:<port>/callback`. A secret
//!   needs a secret `--auth-method`, and a secret method needs a secret.
//! - `GET /authorize`: an unknown `client_id` or a redirect URI not registered for it → `400`
//!   (a loopback redirect URI matches a registered one on any port, RFC 8252 §7.3). Then
//!   `--authorize-error CODE` → redirect with `error=CODE&error_description=The person
//!   declined`. Else checks `response_type=code` (`unsupported_response_type`),
//!   `code_challenge` and `code_challenge_method=S256` (`invalid_request`), `resource`, if
//!   sent, equal to `<base>/mcp` (`invalid_target`), `scope`, if sent, a subset of
//!   `--scopes` (`invalid_scope`), and redirects `302` with `code` and the same `state`
//!   (`--wrong-state`: another state). Errors redirect with `error`, `error_description`
//!   and `state`. Without `scope`, the grant gets all of `--scopes`.
//! - `POST /token` (form): client authentication exactly as `--auth-method` says (`none`:
//!   `client_id` in the form and no secret; `client_secret_basic`:
//!   `Authorization: Basic base64(urlencode(id):urlencode(secret))`; `client_secret_post`:
//!   `client_id` and `client_secret` in the form), else `401 invalid_client`.
//!   `authorization_code`: the code works once, within 10 minutes, for its client and
//!   `redirect_uri`, with a `code_verifier` matching the S256 challenge and a `resource` (if
//!   sent) equal to `<base>/mcp`. `refresh_token`: an optional `scope` must be within the
//!   grant's; with `--rotate` every refresh token works once and the answer carries a new
//!   one; without it the answer has no `refresh_token` and the old one keeps working.
//!   `--refuse-refresh`: every refresh gets `400 invalid_grant` "refresh token expired".
//!   `--refuse-refreshed`: refreshes succeed, but `/mcp` answers 401 to the access tokens they
//!   issue (as a server that revoked the grant behind the client's back would).
//!   `--refresh-delay-ms N` waits N ms before handling a refresh (it is already counted in
//!   `/test/state` while it waits, and it is carried out after the wait even if the client
//!   has gone: with `--rotate`, a client killed mid-refresh loses its refresh token). Answers: `{access_token, token_type: "Bearer",
//!   expires_in (--access-ttl, default 3600; for a refresh --refreshed-ttl, default the same),
//!   refresh_token?, scope}`, errors as RFC 6749
//!   §5.2 JSON. Every code grant issues a refresh token, `offline_access` or not.
//! - `POST /revoke` (RFC 7009; 404 with `--revocation off`): `token`, `token_type_hint`,
//!   client authentication as for `/token`. A refresh token revokes its whole grant (every
//!   refresh and access token that came from the same authorization); an access token just
//!   itself. `200` for any token, known or not.
//!
//! # The rules of the 2026-07-28 revision
//!
//! - `--iss MODE` (RFC 9207): what the authorization response's `iss` is: `none` (default,
//!   absent), `exact` (`<issuer>`), `wrong` (`http://127.0.0.1:1/other`) or `slash`
//!   (`<issuer>/`, a normalisation away). `--iss-advertised` adds
//!   `authorization_response_iss_parameter_supported: true` to the metadata.
//! - `--metadata-issuer URL`: the metadata's `issuer` is `URL`, not the issuer its address was
//!   made from (a client must not use it).
//! - `--client-metadata-documents [--ca-file PATH]`: the metadata says
//!   `client_id_metadata_document_supported: true`, and an `https://` client id at `/authorize`
//!   is the address of the client's metadata document, fetched over TLS trusting only the CAs
//!   in `PATH` and checked (its `client_id` exactly that address, its `redirect_uris` allowing
//!   the request's, a loopback IP on any port): a public client when it passes, else `400
//!   invalid_client` without a redirect. See `oauth-server/cimd.rs`.
//! - `/register` logs the `application_type` the client sent.
//! - `--second-issuer-path /t2`: a second authorization server in the same process, issuer
//!   `<base>/t2`, with its own metadata and endpoints (`<base>/t2/authorize`, …) and its own
//!   clients: a client registered at one is unknown at the other. `POST /test/switch-as` makes
//!   the protected resource name the second one from then on, and `/mcp` accept only tokens it
//!   issued (a token of the first answers 401, as a resource that moved would).
//! - `--header-tools` (with `--stateless`): `tools/list` also offers `regional`, whose
//!   `region` property (a string) is marked `x-mcp-header: Region` and whose `note` is not
//!   marked, and `bad-header`, whose `x-mcp-header` is `"not a token"` (malformed: a client
//!   must set it aside and still use the others). `tools/call regional` answers
//!   `region=<the Mcp-Param-Region header, or "absent">`, and the log has `"param_region"`.
//! - `--input-required` (with `--stateless`): the first `tools/call whoami` is answered
//!   `{"resultType": "input_required", "requestState": <opaque>}` with no input requests; a
//!   retry must carry that `requestState` unchanged (else `-32602`) and a JSON-RPC id not used
//!   before (else `-32600`). The log has `"request_state"` and `"rpc_id"` for each
//!   `tools/call`.
//!
//! # Machines
//!
//! `--machine-client ID (--machine-secret S | --machine-jwk JWK) [--grant-types LIST]
//! [--auth-methods LIST]`: a client that signs in with the client credentials grant, by
//! `client_secret_basic` or `private_key_jwt` (its assertions checked, a replayed `jti`
//! refused). See `oauth-server/machine.rs`.
//!
//! # DPoP (RFC 9449)
//!
//! `--dpop`: the metadata lists `dpop_signing_alg_values_supported: ["ES256"]` and the
//! resource's says `dpop_bound_access_tokens_required: true`. `/token` (code, refresh and
//! client-credentials grants) then needs a `DPoP` proof (checked by `bosun_tests::dpop`: signature with the
//! header's `jwk`, `typ`, `alg`, `htm`, `htu`, `iat` within a minute, a `jti` never seen) and
//! answers `token_type: "DPoP"`, the tokens bound to the proof key's thumbprint; a bound refresh
//! token needs a proof of the same key. `/mcp` takes a bound token only as
//! `Authorization: DPoP` with a proof whose `ath` is the token's hash and whose key is the bound
//! one; a bound token sent as a bearer token, or a bad proof, gets `401` with
//! `WWW-Authenticate: DPoP error="invalid_token"` or `error="invalid_dpop_proof"`.
//! `--dpop-nonce-as` / `--dpop-nonce-rs`: the token endpoint / `/mcp` demand a nonce of their own
//! (`400 use_dpop_nonce` / `401 DPoP error="use_dpop_nonce"`, with `DPoP-Nonce`), take any of
//! the last three they handed out, and hand a new one on each successful answer.
//! `POST /test/dpop-refuse` makes `/mcp` refuse every proof from then on. `/test/state` adds
//! `dpop_proofs`, `dpop_unique_jtis`, `dpop_replays`, `dpop_refused`, `dpop_nonce_demands`;
//! the log adds `dpop_jkt`, `dpop_nonce` (whether the proof had one) and `auth_scheme` on `/mcp`.
//!
//! # Test controls and the log
//!
//! `POST /test/expire` expires every access token issued so far. `POST /test/forget-clients`
//! forgets every client registered through `/register` (as a service that expires clients, or
//! one that restarted): `/authorize` answers `400` for them and `/token` `401 invalid_client`.
//! `GET /test/state` →
//! `{"clients": <registered through /register>, "access_tokens": <issued>,
//! "refresh_requests": <refresh grants received>, "revoked": <tokens revoked by /revoke>}`.
//!
//! With `--log FILE`, every request appends one JSON line: `{"path", "method", "status",
//! "grant_type"?, "client_id"?, "auth"?: "none"|"basic"|"post", "resource"?, "scope"?,
//! "refresh_token_sha"?, "bearer_sha"?, "rpc"?, "error"?}`. `*_sha` are the first 8 hex digits
//! of the SHA-256 of the token (never the token itself): the refresh token of a refresh grant
//! or of a `/revoke` of one, the bearer token on `/mcp` or an access token revoked. `rpc` is
//! the JSON-RPC method POSTed to `/mcp`, `error` the OAuth error answered. `client_id` and
//! `scope` on `/mcp` are those of the accepted token. A refresh is logged when answered.
//!
//! # How to use
//!
//! ```text
//! oauth-server --log /tmp/as.log &    # prints: listening http://127.0.0.1:<port>; B=that URL
//! curl -i -X POST $B/mcp -d '{}'      # 401 + WWW-Authenticate resource_metadata
//! curl $B/.well-known/oauth-protected-resource/mcp
//! curl $B/.well-known/oauth-authorization-server
//! curl -X POST $B/register -H 'Content-Type: application/json' \
//!   -d '{"client_name":"x","redirect_uris":["http://127.0.0.1:9/callback"]}'  # → client_id
//! verifier=$(openssl rand -base64 32 | tr '+/' '-_' | tr -d '=')
//! challenge=$(printf %s "$verifier" | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')
//! curl -s -o /dev/null -w '%{redirect_url}' "$B/authorize?response_type=code&client_id=$ID\
//! &redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&code_challenge=$challenge\
//! &code_challenge_method=S256&state=s1&resource=$B/mcp"   # → ...callback?code=C&state=s1
//! curl -X POST $B/token -d grant_type=authorization_code -d code=$C -d client_id=$ID \
//!   -d redirect_uri=http://127.0.0.1:9/callback -d code_verifier=$verifier  # → tokens
//! curl -X POST $B/mcp -H "Authorization: Bearer $AT" \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}'
//! curl -X POST $B/token -d grant_type=refresh_token -d refresh_token=$RT -d client_id=$ID
//! curl -X POST $B/revoke -d token=$RT -d token_type_hint=refresh_token -d client_id=$ID
//! curl -X POST $B/test/expire; curl $B/test/state
//! ```
//!
//! With `--issuer-path /t` the AS endpoints are `$B/t/authorize` and so on, and the metadata is
//! at `$B/.well-known/oauth-authorization-server/t`. `test-browser` plays the person's browser.
//!
//! Usage errors exit with status 2, other failures with status 1.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bosun_tests::http::{self, Request, Response, encode_form, percent_decode};

// A crate root finds its modules beside it, not in a folder named after it.
#[path = "oauth-server/cimd.rs"]
mod cimd;
#[path = "oauth-server/machine.rs"]
mod machine;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

const USAGE: &str =
    "usage: oauth-server [--port N] [--prm header|path|root|none] [--prm-resource URL]
  [--issuer-path /t] [--metadata oauth|openid|none] [--malformed-metadata]
  [--scopes \"mcp:read mcp:write offline_access\"] [--registration on|off]
  [--client-id ID [--client-secret S]] [--auth-method none|client_secret_basic|client_secret_post]
  [--revocation on|off] [--authorize-error CODE] [--wrong-state] [--access-ttl SECONDS]
  [--refreshed-ttl SECONDS] [--rotate] [--refuse-refresh] [--refuse-refreshed]
  [--refresh-delay-ms N] [--step-up [--step-up-names SCOPES] [--step-up-forever]]
  [--open-initialize] [--stateless] [--sse] [--log FILE] [--iss none|exact|wrong|slash]
  [--iss-advertised] [--metadata-issuer URL] [--client-metadata-documents [--ca-file PATH]]
  [--header-tools]
  [--input-required] [--second-issuer-path /t2] [--dpop [--dpop-nonce-as] [--dpop-nonce-rs]]
  [--machine-client ID (--machine-secret S | --machine-jwk JWK)] [--grant-types LIST]
  [--auth-methods LIST]";

/// Exit status for a bad command line.
const USAGE_STATUS: u8 = 2;

const MCP_PATH: &str = "/mcp";
const PRM_PATH: &str = "/.well-known/oauth-protected-resource";
const OAUTH_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
const OPENID_METADATA_PATH: &str = "/.well-known/openid-configuration";
const OFFLINE_ACCESS: &str = "offline_access";
const DEFAULT_SCOPES: &str = "mcp:read mcp:write offline_access";
/// The scopes of `--step-up`: the 401 asks for the first, `tools/call` needs both.
const STEP_UP_READ: &str = "mcp:read";
const STEP_UP_WRITE: &str = "mcp:write";

const SERVER_NAME: &str = "oauth-test-server";
const SERVER_VERSION: &str = "1.0.0";
const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// The one revision `--stateless` speaks.
const STATELESS_VERSION: &str = "2026-07-28";
const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// How long an authorization code can be exchanged.
const CODE_LIFETIME: Duration = Duration::from_secs(600);

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("oauth-server: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(err) => {
            eprintln!("oauth-server: {err:#}\n{USAGE}");
            return Ok(ExitCode::from(USAGE_STATUS));
        }
    };
    let log = match &options.log {
        Some(path) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the log {}", path.display()))?,
        ),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(serve(options, log))?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

/// Where the protected-resource metadata is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prm {
    Header,
    Path,
    Root,
    None,
}

/// Which authorization-server metadata document is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metadata {
    OAuth,
    OpenId,
    None,
}

/// How a client authenticates to the token and revocation endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AuthMethod {
    None,
    Basic,
    Post,
}

impl AuthMethod {
    /// The RFC 7591 name.
    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Basic => "client_secret_basic",
            Self::Post => "client_secret_post",
        }
    }

    /// The name in the log: `none`, `basic` or `post`.
    fn short_name(self) -> &'static str {
        self.name().trim_start_matches("client_secret_")
    }

    fn has_secret(self) -> bool {
        self != Self::None
    }
}

#[derive(Debug)]
struct Options {
    port: u16,
    prm: Prm,
    prm_resource: Option<String>,
    /// Empty, or `/t` (no trailing slash).
    issuer_path: String,
    metadata: Metadata,
    malformed_metadata: bool,
    scopes: Vec<String>,
    registration: bool,
    client_id: Option<String>,
    client_secret: Option<String>,
    auth_method: AuthMethod,
    revocation: bool,
    authorize_error: Option<String>,
    wrong_state: bool,
    access_ttl: u64,
    refreshed_ttl: Option<u64>,
    rotate: bool,
    refuse_refresh: bool,
    refuse_refreshed: bool,
    refresh_delay: Duration,
    step_up: bool,
    step_up_names: Option<String>,
    step_up_forever: bool,
    open_initialize: bool,
    stateless: bool,
    sse: bool,
    log: Option<PathBuf>,
    iss: Iss,
    iss_advertised: bool,
    metadata_issuer: Option<String>,
    /// `--authorization-endpoint`: the metadata's `authorization_endpoint`, as given (a
    /// hostile server's `javascript:…`), in place of `<issuer>/authorize`.
    authorization_endpoint: Option<String>,
    client_metadata_documents: bool,
    /// The CAs trusted when fetching a client metadata document (`cimd.rs`).
    ca_file: Option<PathBuf>,
    header_tools: bool,
    input_required: bool,
    /// DPoP (RFC 9449): see `dpop_token_request` and `dpop_resource_request`.
    dpop: bool,
    dpop_nonce_as: bool,
    dpop_nonce_rs: bool,
    second_issuer_path: Option<String>,
    /// The machine client and its grant (`machine.rs`).
    machine: machine::MachineOptions,
}

/// What the authorization response's `iss` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Iss {
    None,
    Exact,
    Wrong,
    Slash,
}

const ISS_CHOICES: [(&str, Iss); 4] = [
    ("none", Iss::None),
    ("exact", Iss::Exact),
    ("wrong", Iss::Wrong),
    ("slash", Iss::Slash),
];

impl Default for Options {
    /// The options of a command line with no flag, as the module's documentation gives them.
    fn default() -> Self {
        Self {
            port: 0,
            prm: Prm::Header,
            prm_resource: None,
            issuer_path: String::new(),
            metadata: Metadata::OAuth,
            malformed_metadata: false,
            scopes: split_scopes(DEFAULT_SCOPES),
            registration: true,
            client_id: None,
            client_secret: None,
            auth_method: AuthMethod::None,
            revocation: true,
            authorize_error: None,
            wrong_state: false,
            access_ttl: 3600,
            refreshed_ttl: None,
            rotate: false,
            refuse_refresh: false,
            refuse_refreshed: false,
            refresh_delay: Duration::ZERO,
            step_up: false,
            step_up_names: None,
            step_up_forever: false,
            open_initialize: false,
            stateless: false,
            sse: false,
            log: None,
            iss: Iss::None,
            iss_advertised: false,
            metadata_issuer: None,
            authorization_endpoint: None,
            client_metadata_documents: false,
            ca_file: None,
            header_tools: false,
            input_required: false,
            dpop: false,
            dpop_nonce_as: false,
            dpop_nonce_rs: false,
            second_issuer_path: None,
            machine: machine::MachineOptions::default(),
        }
    }
}

/// The options, or `None` for `--help`.
fn parse_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<Option<Options>> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline_value) = split_flag(arg);
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        if let Some(switch) = options.switch(&flag) {
            ensure!(inline_value.is_none(), "{flag} takes no value");
            *switch = true;
            continue;
        }
        let value = match inline_value {
            Some(value) => value,
            None => args
                .next()
                .with_context(|| format!("{flag} needs a value"))?,
        };
        options.set(&flag, value)?;
    }
    options.check()?;
    Ok(Some(options))
}

/// `--flag=value` as the flag and its value; any other argument as it is, without a value.
fn split_flag(arg: String) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
        Some(_) | None => (arg, None),
    }
}

/// The value of a flag that takes a whole number.
fn number(flag: &str, value: &str) -> anyhow::Result<u64> {
    value
        .parse::<u64>()
        .with_context(|| format!("bad {flag} {value:?}"))
}

impl Options {
    /// The setting a switch (a flag without a value) turns on; `None` for any other flag.
    fn switch(&mut self, flag: &str) -> Option<&mut bool> {
        match flag {
            "--malformed-metadata" => Some(&mut self.malformed_metadata),
            "--wrong-state" => Some(&mut self.wrong_state),
            "--rotate" => Some(&mut self.rotate),
            "--refuse-refresh" => Some(&mut self.refuse_refresh),
            "--refuse-refreshed" => Some(&mut self.refuse_refreshed),
            "--step-up" => Some(&mut self.step_up),
            "--step-up-forever" => Some(&mut self.step_up_forever),
            "--open-initialize" => Some(&mut self.open_initialize),
            "--stateless" => Some(&mut self.stateless),
            "--sse" => Some(&mut self.sse),
            "--iss-advertised" => Some(&mut self.iss_advertised),
            "--client-metadata-documents" => Some(&mut self.client_metadata_documents),
            "--header-tools" => Some(&mut self.header_tools),
            "--input-required" => Some(&mut self.input_required),
            "--dpop" => Some(&mut self.dpop),
            "--dpop-nonce-as" => Some(&mut self.dpop_nonce_as),
            "--dpop-nonce-rs" => Some(&mut self.dpop_nonce_rs),
            _ => None,
        }
    }

    /// Sets what a flag that takes a value says; an error for a bad value or an unknown flag.
    fn set(&mut self, flag: &str, value: String) -> anyhow::Result<()> {
        match flag {
            "--port" => self.port = value.parse().context("bad --port")?,
            "--prm" => self.prm = choose(flag, &value, &PRM_CHOICES)?,
            "--prm-resource" => self.prm_resource = Some(value),
            "--issuer-path" => self.issuer_path = issuer_path(&value)?,
            "--metadata" => self.metadata = choose(flag, &value, &METADATA_CHOICES)?,
            "--scopes" => self.scopes = split_scopes(&value),
            "--registration" => self.registration = choose(flag, &value, &ON_OFF)?,
            "--client-id" => self.client_id = Some(value),
            "--client-secret" => self.client_secret = Some(value),
            "--auth-method" => self.auth_method = choose(flag, &value, &AUTH_CHOICES)?,
            "--revocation" => self.revocation = choose(flag, &value, &ON_OFF)?,
            "--authorize-error" => self.authorize_error = Some(value),
            "--access-ttl" => self.access_ttl = number(flag, &value)?,
            "--refreshed-ttl" => self.refreshed_ttl = Some(number(flag, &value)?),
            "--refresh-delay-ms" => {
                self.refresh_delay = Duration::from_millis(number(flag, &value)?);
            }
            "--step-up-names" => self.step_up_names = Some(value),
            "--log" => self.log = Some(PathBuf::from(value)),
            "--iss" => self.iss = choose(flag, &value, &ISS_CHOICES)?,
            "--metadata-issuer" => self.metadata_issuer = Some(value),
            "--authorization-endpoint" => self.authorization_endpoint = Some(value),
            "--ca-file" => self.ca_file = Some(PathBuf::from(value)),
            "--second-issuer-path" => self.second_issuer_path = Some(issuer_path(&value)?),
            other if machine::MachineOptions::takes(other) => self.machine.set(other, value)?,
            other => bail!("unknown argument {other:?}"),
        }
        Ok(())
    }

    /// The rules between flags: which need which, and which cannot go together.
    fn check(&self) -> anyhow::Result<()> {
        self.machine.check()?;
        if self.client_secret.is_some() && self.client_id.is_none() {
            bail!("--client-secret needs --client-id");
        }
        if self.client_id.is_some() && self.client_secret.is_some() != self.auth_method.has_secret()
        {
            bail!(
                "--auth-method {} and --client-secret go together",
                self.auth_method.name()
            );
        }
        if self.open_initialize && self.stateless {
            bail!("--open-initialize is for the handshake revisions; --stateless has no handshake");
        }
        if (self.header_tools || self.input_required) && !self.stateless {
            bail!("--header-tools and --input-required go with --stateless");
        }
        if (self.step_up_names.is_some() || self.step_up_forever) && !self.step_up {
            bail!("--step-up-names and --step-up-forever go with --step-up");
        }
        Ok(())
    }
}

fn split_scopes(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|scope| !scope.is_empty())
        .map(str::to_owned)
        .collect()
}

const PRM_CHOICES: [(&str, Prm); 4] = [
    ("header", Prm::Header),
    ("path", Prm::Path),
    ("root", Prm::Root),
    ("none", Prm::None),
];
const METADATA_CHOICES: [(&str, Metadata); 3] = [
    ("oauth", Metadata::OAuth),
    ("openid", Metadata::OpenId),
    ("none", Metadata::None),
];
const AUTH_CHOICES: [(&str, AuthMethod); 3] = [
    ("none", AuthMethod::None),
    ("client_secret_basic", AuthMethod::Basic),
    ("client_secret_post", AuthMethod::Post),
];
const ON_OFF: [(&str, bool); 2] = [("on", true), ("off", false)];

/// The value of `choices` named `value`.
fn choose<T: Copy>(flag: &str, value: &str, choices: &[(&str, T)]) -> anyhow::Result<T> {
    match choices.iter().find(|(name, _)| *name == value) {
        Some((_, choice)) => Ok(*choice),
        None => {
            let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
            bail!("{flag} takes {}, not {value:?}", names.join(" or "))
        }
    }
}

/// `--issuer-path`: empty (or `/`), or `/segments` without a trailing slash.
fn issuer_path(value: &str) -> anyhow::Result<String> {
    let path = value.trim_end_matches('/');
    if !path.is_empty() && (!path.starts_with('/') || path.contains(['?', '#', ' '])) {
        bail!("--issuer-path must look like /t, not {value:?}");
    }
    Ok(path.to_owned())
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

struct Client {
    /// The issuer it is a client of.
    issuer: String,
    secret: Option<String>,
    redirect_uris: Vec<String>,
    /// The pre-registered client of `--client-id`: any loopback `/callback` will do.
    preregistered: bool,
}

impl Client {
    fn allows_redirect(&self, uri: &str) -> bool {
        if self.preregistered {
            return loopback_port(uri).is_some_and(|(_, rest)| rest == "/callback");
        }
        self.redirect_uris.iter().any(|registered| {
            registered == uri
                || matches!(
                    (loopback_port(registered), loopback_port(uri)),
                    (Some((_, a)), Some((_, b))) if a == b
                )
        })
    }
}

/// For `http://127.0.0.1:<port><rest>` (or `localhost`, `[::1]`): the port and the rest.
fn loopback_port(uri: &str) -> Option<(u16, &str)> {
    let after = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"]
        .iter()
        .find_map(|prefix| uri.strip_prefix(prefix))?;
    let digits = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    let (port, rest) = after.split_at(digits);
    Some((port.parse().ok()?, rest))
}

struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    resource: Option<String>,
    issued: Instant,
    used: bool,
}

/// One authorization: every token that came from one authorization code.
struct Grant {
    client_id: String,
    revoked: bool,
    /// The issuer that granted it.
    issuer: String,
}

struct AccessToken {
    grant: usize,
    scope: String,
    expires_at: Instant,
    expired: bool,
    revoked: bool,
    /// `--refuse-refreshed`: issued by a refresh, and refused on `/mcp` all the same.
    refused: bool,
}

struct RefreshToken {
    grant: usize,
    scope: String,
    used: bool,
}

#[derive(Default)]
struct State {
    clients: HashMap<String, Client>,
    registered: u64,
    codes: HashMap<String, Code>,
    grants: Vec<Grant>,
    access: HashMap<String, AccessToken>,
    refresh: HashMap<String, RefreshToken>,
    refresh_requests: u64,
    revoked: u64,
    sessions: u64,
    /// `--input-required`: the request states handed out, and the JSON-RPC ids of the calls.
    request_states: Vec<String>,
    call_ids: Vec<Value>,
    /// `POST /test/switch-as`: the resource names the second issuer.
    switched: bool,
    /// `--second-issuer-path`: the second issuer.
    second_issuer: Option<String>,
    /// `--dpop`: the proofs seen, the nonces handed out, the tokens bound.
    dpop: bosun_tests::dpop::Tracker,
    /// `POST /test/dpop-refuse`: `/mcp` refuses every DPoP proof from now on.
    dpop_refuse: bool,
    /// The machine client's grants (`machine.rs`).
    machine: machine::MachineState,
    /// `--sse`: the open event streams, by session id.
    streams: HashMap<String, tokio::sync::mpsc::Sender<Vec<u8>>>,
}

impl State {
    fn grant(&self, index: usize) -> Option<&Grant> {
        self.grants.get(index)
    }

    fn grant_revoked(&self, index: usize) -> bool {
        self.grant(index).is_none_or(|grant| grant.revoked)
    }

    /// The client id and scope of a usable access token, or why it is refused.
    fn check_bearer(&self, token: &str) -> Result<(String, String), &'static str> {
        let entry = self.access.get(token).ok_or("unknown access token")?;
        if entry.revoked || self.grant_revoked(entry.grant) {
            return Err("the access token was revoked");
        }
        if entry.expired || Instant::now() >= entry.expires_at {
            return Err("the access token expired");
        }
        if entry.refused {
            return Err("the access token is refused");
        }
        if self.switched
            && self
                .grant(entry.grant)
                .is_some_and(|g| Some(g.issuer.as_str()) != self.second_issuer.as_deref())
        {
            return Err(
                "the access token is from an authorization server this resource no longer trusts",
            );
        }
        let client = self.grant(entry.grant).map(|grant| grant.client_id.clone());
        Ok((client.unwrap_or_default(), entry.scope.clone()))
    }
}

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Debug)]
struct OAuthError {
    status: u16,
    error: &'static str,
    description: String,
}

impl OAuthError {
    fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        let description = description.into();
        Self {
            status,
            error,
            description,
        }
    }

    fn response(&self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let response = no_store(Response::json(self.status, &body));
        if self.status == 401 {
            response.with_header("WWW-Authenticate", "Basic realm=\"oauth-test-server\"")
        } else {
            response
        }
    }
}

/// A `400` OAuth error.
fn fail<T>(error: &'static str, description: impl Into<String>) -> Result<T, OAuthError> {
    Err(OAuthError::new(400, error, description))
}

// The 400 errors this server answers most (RFC 6749 §5.2, RFC 8707).
fn invalid_request<T>(description: impl Into<String>) -> Result<T, OAuthError> {
    fail("invalid_request", description)
}

fn invalid_grant<T>(description: impl Into<String>) -> Result<T, OAuthError> {
    fail("invalid_grant", description)
}

fn invalid_target<T>(description: impl Into<String>) -> Result<T, OAuthError> {
    fail("invalid_target", description)
}

fn invalid_scope<T>(description: impl Into<String>) -> Result<T, OAuthError> {
    fail("invalid_scope", description)
}

/// A `401 invalid_client`.
fn deny_client<T>(description: impl Into<String>) -> Result<T, OAuthError> {
    Err(OAuthError::new(401, "invalid_client", description))
}

fn no_store(response: Response) -> Response {
    response
        .with_header("Cache-Control", "no-store")
        .with_header("Pragma", "no-cache")
}

// ---------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------

struct Server {
    options: Options,
    base: String,
    issuer: String,
    log: Option<Mutex<File>>,
    state: Mutex<State>,
    /// Fetches client metadata documents (`--client-metadata-documents`).
    documents: cimd::Fetcher,
}

async fn serve(options: Options, log: Option<File>) -> anyhow::Result<()> {
    let (listener, port) = http::listen(options.port).await?;
    let base = format!("http://127.0.0.1:{port}");
    let issuer = format!("{base}{}", options.issuer_path);
    let mut state = State {
        second_issuer: options
            .second_issuer_path
            .as_ref()
            .map(|p| format!("{base}{p}")),
        ..State::default()
    };
    if let Some(id) = &options.client_id {
        let client = Client {
            issuer: issuer.clone(),
            secret: options.client_secret.clone(),
            redirect_uris: Vec::new(),
            preregistered: true,
        };
        state.clients.insert(id.clone(), client);
    }
    eprintln!("oauth-server: issuer {issuer}, resource {base}{MCP_PATH}");
    let documents = cimd::Fetcher::new(options.ca_file.as_deref())?;
    let server = Arc::new(Server {
        documents,
        options,
        base,
        issuer,
        log: log.map(Mutex::new),
        state: Mutex::new(state),
    });
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening http://127.0.0.1:{port}").context("writing stdout")?;
    stdout.flush().context("writing stdout")?;
    drop(stdout);
    http::serve(listener, "oauth-server", move |request| {
        let server = Arc::clone(&server);
        async move {
            let mut log = Map::new();
            if let Some(reply) = server.sse(&request, &mut log) {
                let status = match &reply {
                    http::Reply::Full(r) | http::Reply::Stream(r, _) => r.status,
                    http::Reply::Hold => 0,
                };
                server.write_log(&request, status, log);
                return reply;
            }
            let response = server.route(&request, &mut log).await;
            server.write_log(&request, response.status, log);
            http::Reply::Full(response)
        }
    })
    .await
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn write_log(&self, request: &Request, status: u16, fields: Map<String, Value>) {
        let Some(log) = &self.log else {
            return;
        };
        let mut entry = Map::new();
        entry.insert("path".to_owned(), json!(request.path()));
        entry.insert("method".to_owned(), json!(request.method));
        entry.insert("status".to_owned(), json!(status));
        entry.extend(fields);
        let line = format!("{}\n", Value::Object(entry));
        // One write per line, so that a reader never sees half a line.
        if let Err(err) = lock(log).write_all(line.as_bytes()) {
            eprintln!("oauth-server: writing the log: {err}");
        }
    }

    /// The resource the RS is, and the only `resource` the AS accepts.
    fn resource(&self) -> String {
        format!("{}{MCP_PATH}", self.base)
    }

    /// The scopes the RS names: all but `offline_access`.
    fn resource_scopes(&self) -> Vec<&str> {
        self.options
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|scope| *scope != OFFLINE_ACCESS)
            .collect()
    }

    /// The issuer the resource names now.
    fn current_issuer(&self) -> String {
        let state = self.state();
        match (&state.second_issuer, state.switched) {
            (Some(second), true) => second.clone(),
            (Some(_), false) | (None, _) => self.issuer.clone(),
        }
    }

    /// The issuer whose endpoint `path` is.
    fn issuer_for(&self, path: &str) -> String {
        match &self.options.second_issuer_path {
            Some(second) if path.starts_with(&format!("{second}/")) => {
                format!("{}{second}", self.base)
            }
            Some(_) | None => self.issuer.clone(),
        }
    }

    fn prm_url(&self) -> String {
        format!("{}{PRM_PATH}{MCP_PATH}", self.base)
    }

    async fn route(&self, request: &Request, log: &mut Map<String, Value>) -> Response {
        let path = request.path();
        let method = request.method.as_str();
        if path == MCP_PATH {
            let answer = self.mcp(request, log);
            return self.with_rs_nonce(answer);
        }
        if let Some(document) = self.document(path) {
            return document;
        }
        match (method, path) {
            ("POST", "/test/switch-as") if self.options.second_issuer_path.is_some() => {
                self.state().switched = true;
                return Response::new(200);
            }
            ("POST", "/test/expire") => return self.expire_all(),
            ("POST", "/test/forget-clients") => {
                // As a service that expires unused clients, or one that restarted: every
                // registered client is unknown from now on, at every endpoint.
                self.state().clients.retain(|_, c| c.preregistered);
                return Response::new(200);
            }
            ("POST", "/test/dpop-refuse") => {
                self.state().dpop_refuse = true;
                return Response::new(200);
            }
            ("POST", "/test/refuse-machine") => {
                self.state().machine.refused = true;
                return Response::new(200);
            }
            ("GET", "/test/state") => return self.state_summary(),
            _ => {}
        }
        let endpoint = match &self.options.second_issuer_path {
            Some(second) if path.starts_with(&format!("{second}/")) => {
                path.strip_prefix(second.as_str())
            }
            Some(_) | None => path.strip_prefix(self.options.issuer_path.as_str()),
        };
        let expected = match endpoint {
            Some("/authorize") => "GET",
            Some("/token") => "POST",
            Some("/register") if self.options.registration => "POST",
            Some("/revoke") if self.options.revocation => "POST",
            Some(_) | None => return Response::text(404, format!("no {path} here\n")),
        };
        if method != expected {
            return Response::new(405).with_header("Allow", expected);
        }
        let answer = match endpoint {
            Some("/authorize") => return self.authorize(request, log).await,
            Some("/token") => self.token(request, log).await,
            Some("/register") => self.register(request, log),
            Some(_) | None => self.revoke(request, log),
        };
        answer.unwrap_or_else(|err| {
            log.insert("error".to_owned(), json!(err.error));
            err.response()
        })
    }

    // -----------------------------------------------------------------------------------------
    // Discovery documents
    // -----------------------------------------------------------------------------------------

    /// The metadata document served at `path`, if any.
    fn document(&self, path: &str) -> Option<Response> {
        let prm_here = match self.options.prm {
            Prm::Header | Prm::Path => path == format!("{PRM_PATH}{MCP_PATH}"),
            Prm::Root => path == PRM_PATH,
            Prm::None => false,
        };
        if prm_here {
            let resource = self
                .options
                .prm_resource
                .clone()
                .unwrap_or_else(|| self.resource());
            return Some(Response::json(
                200,
                &json!({
                    "resource": resource,
                    "authorization_servers": [self.current_issuer()],
                    "scopes_supported": self.resource_scopes(),
                    "bearer_methods_supported": ["header"],
                    "dpop_bound_access_tokens_required": self.options.dpop,
                }),
            ));
        }
        if let Some(second) = &self.options.second_issuer_path
            && path == format!("{OAUTH_METADATA_PATH}{second}")
        {
            return Some(Response::json(
                200,
                &self.as_metadata(&format!("{}{second}", self.base)),
            ));
        }
        let issuer_path = &self.options.issuer_path;
        let as_here = match self.options.metadata {
            Metadata::OAuth => path == format!("{OAUTH_METADATA_PATH}{issuer_path}"),
            Metadata::OpenId => {
                path == format!("{OPENID_METADATA_PATH}{issuer_path}")
                    || path == format!("{issuer_path}{OPENID_METADATA_PATH}")
            }
            Metadata::None => false,
        };
        if !as_here {
            return None;
        }
        if self.options.malformed_metadata {
            return Some(Response::new(200).with_body("application/json", "{\"issuer\": "));
        }
        Some(Response::json(200, &self.as_metadata(&self.issuer)))
    }

    fn as_metadata(&self, issuer: &str) -> Value {
        let mut document = json!({
            "issuer": self.options.metadata_issuer.as_deref().unwrap_or(issuer),
            "authorization_endpoint": self
                .options
                .authorization_endpoint
                .clone()
                .unwrap_or_else(|| format!("{issuer}/authorize")),
            "token_endpoint": format!("{issuer}/token"),
        });
        let fields = [
            (
                "registration_endpoint",
                self.options.registration,
                "register",
            ),
            ("revocation_endpoint", self.options.revocation, "revoke"),
        ];
        for (name, offered, endpoint) in fields {
            if offered {
                document[name] = json!(format!("{issuer}/{endpoint}"));
            }
        }
        let method = self.options.auth_method.name();
        document["scopes_supported"] = json!(self.options.scopes);
        document["response_types_supported"] = json!(["code"]);
        document["grant_types_supported"] = json!(["authorization_code", "refresh_token"]);
        document["code_challenge_methods_supported"] = json!(["S256"]);
        document["token_endpoint_auth_methods_supported"] = json!([method]);
        if self.options.revocation {
            document["revocation_endpoint_auth_methods_supported"] = json!([method]);
        }
        if self.options.iss_advertised {
            document["authorization_response_iss_parameter_supported"] = json!(true);
        }
        if self.options.client_metadata_documents {
            document["client_id_metadata_document_supported"] = json!(true);
        }
        if self.options.dpop {
            document["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        self.options.machine.amend_metadata(&mut document);
        if self.options.metadata == Metadata::OpenId {
            document["subject_types_supported"] = json!(["public"]);
            document["id_token_signing_alg_values_supported"] = json!(["RS256"]);
        }
        document
    }

    // -----------------------------------------------------------------------------------------
    // Registration and authorization
    // -----------------------------------------------------------------------------------------

    fn register(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Response, OAuthError> {
        let body = match request.json() {
            Ok(body) => body,
            Err(err) => return fail("invalid_client_metadata", format!("not JSON: {err}")),
        };
        if let Some(kind) = body.get("application_type") {
            log.insert("application_type".to_owned(), kind.clone());
        }
        let uris: Vec<String> = body
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|uris| {
                uris.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if uris.is_empty() {
            return fail(
                "invalid_redirect_uri",
                "redirect_uris must be a non-empty list of URIs",
            );
        }
        if let Some(bad) = uris.iter().find(|uri| !uri.starts_with("http")) {
            return fail(
                "invalid_redirect_uri",
                format!("{bad} is not an http(s) URI"),
            );
        }
        let method = self.options.auth_method;
        let client_id = format!("client-{}", &random_token()[..16]);
        let secret = method.has_secret().then(random_token);
        let issued_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": issued_at,
            "client_name": body.get("client_name").cloned().unwrap_or(Value::Null),
            "redirect_uris": uris,
            "grant_types": body.get("grant_types").cloned()
                .unwrap_or_else(|| json!(["authorization_code"])),
            "response_types": ["code"],
            "token_endpoint_auth_method": method.name(),
        });
        if let Some(secret) = &secret {
            answer["client_secret"] = json!(secret);
            answer["client_secret_expires_at"] = json!(0);
        }
        let mut state = self.state();
        state.registered += 1;
        let client = Client {
            issuer: self.issuer_for(request.path()),
            secret,
            redirect_uris: uris,
            preregistered: false,
        };
        state.clients.insert(client_id, client);
        Ok(no_store(Response::json(201, &answer)))
    }

    /// The authorization endpoint: the client and its redirect URI checked, then a code, or
    /// the error, sent back to the redirect URI.
    async fn authorize(&self, request: &Request, log: &mut Map<String, Value>) -> Response {
        let param = |name: &str| request.query_param(name).filter(|value| !value.is_empty());
        for name in ["client_id", "resource", "scope"] {
            if let Some(value) = param(name) {
                log.insert(name.to_owned(), json!(value));
            }
        }
        let Some(client_id) = param("client_id") else {
            return Response::text(400, "client_id is missing\n");
        };
        // A client known by its metadata document: fetched and checked on every request,
        // before the state is locked (the fetch awaits another server).
        let asked_uri = param("redirect_uri").unwrap_or_default();
        let described = match self.described_client(&client_id, asked_uri, log).await {
            Ok(described) => described,
            Err(refused) => return refused,
        };
        let mut state = self.state();
        if let Some(redirect_uris) = described {
            let client = Client {
                issuer: self.issuer_for(request.path()),
                secret: None,
                redirect_uris,
                preregistered: false,
            };
            state.clients.insert(client_id.clone(), client);
        }
        let here = self.issuer_for(request.path());
        let Some(client) = state.clients.get(&client_id).filter(|c| c.issuer == here) else {
            return Response::text(400, format!("unknown client_id {client_id}\n"));
        };
        let Some(redirect_uri) = param("redirect_uri") else {
            return Response::text(400, "redirect_uri is missing\n");
        };
        if !client.allows_redirect(&redirect_uri) {
            return Response::text(400, format!("{redirect_uri} is not registered\n"));
        }
        let state_param = if self.options.wrong_state {
            Some(format!("wrong-{}", &random_token()[..12]))
        } else {
            request.query_param("state")
        };
        let iss = match self.options.iss {
            Iss::None => None,
            Iss::Exact => Some(self.issuer_for(request.path())),
            Iss::Wrong => Some("http://127.0.0.1:1/other".to_owned()),
            Iss::Slash => Some(format!("{}/", self.issuer_for(request.path()))),
        };
        let redirect = |mut pairs: Vec<(&str, String)>| {
            if let Some(value) = &state_param {
                pairs.push(("state", value.clone()));
            }
            if let Some(value) = &iss {
                pairs.push(("iss", value.clone()));
            }
            let separator = if redirect_uri.contains('?') { '&' } else { '?' };
            Response::redirect(
                302,
                format!("{redirect_uri}{separator}{}", encode_form(&pairs)),
            )
        };
        let checked = match &self.options.authorize_error {
            Some(error) => Err((error.clone(), "The person declined".to_owned())),
            None => self
                .check_authorization(&param)
                .map_err(|err| (err.error.to_owned(), err.description)),
        };
        let (scope, resource) = match checked {
            Ok(grant) => grant,
            Err((error, description)) => {
                log.insert("error".to_owned(), json!(error));
                return redirect(vec![("error", error), ("error_description", description)]);
            }
        };
        let code = random_token();
        let entry = Code {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge: param("code_challenge").unwrap_or_default(),
            scope,
            resource,
            issued: Instant::now(),
            used: false,
        };
        state.codes.insert(code.clone(), entry);
        redirect(vec![("code", code)])
    }

    /// The redirect URIs of a client known by its metadata document (`client_id` an https
    /// address and documents on), fetched and checked now against the `redirect_uri` asked for; `Ok(None)` for any other client,
    /// `Err` the refusal of one whose document cannot be trusted.
    async fn described_client(
        &self,
        client_id: &str,
        redirect_uri: String,
        log: &mut Map<String, Value>,
    ) -> Result<Option<Vec<String>>, Response> {
        if !(self.options.client_metadata_documents && client_id.starts_with("https://")) {
            return Ok(None);
        }
        let checked = match self.documents.fetch(client_id).await {
            Ok(document) => cimd::check(&document, client_id, &redirect_uri),
            Err(why) => Err(why),
        };
        match checked {
            Ok(_) => {
                log.insert("client_metadata".to_owned(), json!("fetched"));
                // The document allowed this redirect URI (on this port, for a loopback one):
                // the client is known by it for this request.
                Ok(Some(vec![redirect_uri]))
            }
            Err(why) => {
                log.insert("client_metadata_error".to_owned(), json!(why));
                log.insert("error".to_owned(), json!("invalid_client"));
                // The redirect URI of a client that cannot be trusted is not followed.
                Err(Response::json(
                    400,
                    &json!({"error": "invalid_client", "error_description": why}),
                ))
            }
        }
    }

    /// Checks an authorization request; the scope to grant and the `resource`, if sent.
    fn check_authorization(
        &self,
        param: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(String, Option<String>), OAuthError> {
        if param("response_type").as_deref() != Some("code") {
            return fail("unsupported_response_type", "response_type must be code");
        }
        if param("code_challenge").is_none() {
            return invalid_request("code_challenge is missing");
        }
        if param("code_challenge_method").as_deref() != Some("S256") {
            return invalid_request("code_challenge_method must be S256");
        }
        let resource = param("resource");
        self.check_resource(resource.as_deref())?;
        let scope = self.check_scope(param("scope").as_deref(), &self.options.scopes)?;
        Ok((scope, resource))
    }

    fn check_resource(&self, resource: Option<&str>) -> Result<(), OAuthError> {
        match resource {
            Some(resource) if resource != self.resource() => invalid_target(format!(
                "resource must be {}, not {resource}",
                self.resource()
            )),
            Some(_) | None => Ok(()),
        }
    }

    /// The scope to grant: `requested` if it is within `allowed`, else all of `allowed`.
    fn check_scope(
        &self,
        requested: Option<&str>,
        allowed: &[String],
    ) -> Result<String, OAuthError> {
        let Some(requested) = requested.filter(|scope| !scope.trim().is_empty()) else {
            return Ok(allowed.join(" "));
        };
        let scopes = split_scopes(requested);
        match scopes.iter().find(|scope| !allowed.contains(scope)) {
            Some(unknown) => invalid_scope(format!("scope {unknown} is not allowed here")),
            None => Ok(scopes.join(" ")),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Token, refresh and revocation
    // -----------------------------------------------------------------------------------------

    /// Checks the client authentication of a token or revocation request; the client id.
    fn authenticate(
        &self,
        state: &State,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<String, OAuthError> {
        let form_id = request.form_param("client_id");
        let form_secret = request.form_param("client_secret");
        let form_client = form_id.clone().unwrap_or_default();
        let (method, id, secret) = match auth_header(request, "basic") {
            Some(credentials) => match basic_credentials(credentials) {
                Some((id, secret)) => (AuthMethod::Basic, id, Some(secret)),
                None => return deny_client("Basic credentials are not base64(id:secret)"),
            },
            None if form_secret.is_some() => (AuthMethod::Post, form_client, form_secret.clone()),
            None => (AuthMethod::None, form_client, None),
        };
        log.insert("client_id".to_owned(), json!(id));
        log.insert("auth".to_owned(), json!(method.short_name()));
        if method == AuthMethod::Basic && form_secret.is_some() {
            return deny_client("more than one client authentication method");
        }
        if form_id.as_ref().is_some_and(|form_id| *form_id != id) {
            return deny_client("client_id differs from the authenticated client");
        }
        if id.is_empty() {
            return deny_client("no client_id");
        }
        let here = self.issuer_for(request.path());
        let Some(client) = state.clients.get(&id).filter(|c| c.issuer == here) else {
            return deny_client(format!("unknown client {id}"));
        };
        let expected = self.options.auth_method;
        if method != expected {
            return deny_client(format!(
                "this client authenticates with {}, not {}",
                expected.name(),
                method.name()
            ));
        }
        if secret != client.secret {
            return deny_client("wrong client secret");
        }
        Ok(id)
    }

    async fn token(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Response, OAuthError> {
        let param = |name: &str| request.form_param(name).filter(|value| !value.is_empty());
        let grant_type = param("grant_type").unwrap_or_default();
        log.insert("grant_type".to_owned(), json!(grant_type));
        for name in ["resource", "scope"] {
            if let Some(value) = param(name) {
                log.insert(name.to_owned(), json!(value));
            }
        }
        if grant_type == "refresh_token" {
            if let Some(token) = param("refresh_token") {
                log.insert("refresh_token_sha".to_owned(), json!(short_sha(&token)));
            }
            self.state().refresh_requests += 1;
            if !self.options.refresh_delay.is_zero() {
                tokio::time::sleep(self.options.refresh_delay).await;
            }
        }
        let mut state = self.state();
        if grant_type == "client_credentials" {
            return self.client_credentials(&mut state, request, log);
        }
        let client_id = self.authenticate(&state, request, log)?;
        let jkt = match self.dpop_token_request(&mut state, request, &grant_type, log) {
            Ok(jkt) => jkt,
            Err(refused) => return Ok(refused),
        };
        let answer = match grant_type.as_str() {
            "authorization_code" => self.exchange_code(&mut state, &client_id, &param)?,
            "refresh_token" => self.refresh(&mut state, &client_id, &param)?,
            "" => return invalid_request("grant_type is missing"),
            other => {
                return fail(
                    "unsupported_grant_type",
                    format!("grant_type {other} is not supported"),
                );
            }
        };
        Ok(self.dpop_bind(&mut state, jkt, answer))
    }

    fn exchange_code(
        &self,
        state: &mut State,
        client_id: &str,
        param: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Value, OAuthError> {
        let required = |name: &str| {
            param(name).map_or_else(|| invalid_request(format!("{name} is missing")), Ok)
        };
        let code = required("code")?;
        let verifier = required("code_verifier")?;
        let redirect_uri = required("redirect_uri")?;
        let resource = param("resource");
        self.check_resource(resource.as_deref())?;
        let valid_verifier = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"-._~".contains(&byte));
        if !valid_verifier {
            return invalid_request("code_verifier must be 43 to 128 unreserved characters");
        }
        let Some(entry) = state.codes.get_mut(&code) else {
            return invalid_grant("unknown authorization code");
        };
        if entry.used {
            return invalid_grant("the authorization code was already used");
        }
        if entry.client_id != client_id {
            return invalid_grant("the authorization code was issued to another client");
        }
        if entry.issued.elapsed() > CODE_LIFETIME {
            return invalid_grant("the authorization code expired");
        }
        if entry.redirect_uri != redirect_uri {
            return invalid_grant("redirect_uri differs from the authorization request's");
        }
        if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != entry.challenge {
            return invalid_grant("code_verifier does not match the code_challenge");
        }
        if entry.resource.is_some() && resource.is_some() && entry.resource != resource {
            return invalid_target("resource differs from the authorization request's");
        }
        entry.used = true;
        let scope = entry.scope.clone();
        let issuer = state
            .clients
            .get(client_id)
            .map(|c| c.issuer.clone())
            .unwrap_or_default();
        state.grants.push(Grant {
            client_id: client_id.to_owned(),
            revoked: false,
            issuer,
        });
        let grant = state.grants.len() - 1;
        Ok(self.issue(state, grant, &scope, self.options.access_ttl, true))
    }

    fn refresh(
        &self,
        state: &mut State,
        client_id: &str,
        param: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Value, OAuthError> {
        if self.options.refuse_refresh {
            return invalid_grant("refresh token expired");
        }
        let Some(token) = param("refresh_token") else {
            return invalid_request("refresh_token is missing");
        };
        let Some(entry) = state.refresh.get(&token) else {
            return invalid_grant("unknown refresh token");
        };
        let (grant, granted) = (entry.grant, split_scopes(&entry.scope));
        if state
            .grant(grant)
            .is_none_or(|grant| grant.client_id != client_id)
        {
            return invalid_grant("the refresh token was issued to another client");
        }
        if state.grant_revoked(grant) {
            return invalid_grant("the refresh token was revoked");
        }
        if self.options.rotate && entry.used {
            return invalid_grant("the refresh token was already used");
        }
        self.check_resource(param("resource").as_deref())?;
        let scope = self.check_scope(param("scope").as_deref(), &granted)?;
        if self.options.rotate
            && let Some(entry) = state.refresh.get_mut(&token)
        {
            entry.used = true;
        }
        let ttl = self
            .options
            .refreshed_ttl
            .unwrap_or(self.options.access_ttl);
        let answer = self.issue(state, grant, &scope, ttl, self.options.rotate);
        if self.options.refuse_refreshed
            && let Some(token) = answer["access_token"].as_str()
            && let Some(entry) = state.access.get_mut(token)
        {
            entry.refused = true;
        }
        Ok(answer)
    }

    /// A token answer: a new access token and, if `with_refresh`, a new refresh token.
    fn issue(
        &self,
        state: &mut State,
        grant: usize,
        scope: &str,
        ttl_secs: u64,
        with_refresh: bool,
    ) -> Value {
        let access_token = random_token();
        let ttl = Duration::from_secs(ttl_secs);
        let entry = AccessToken {
            grant,
            scope: scope.to_owned(),
            expires_at: Instant::now() + ttl,
            expired: false,
            revoked: false,
            refused: false,
        };
        state.access.insert(access_token.clone(), entry);
        let mut answer = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": ttl_secs,
        });
        if with_refresh {
            let refresh_token = random_token();
            let entry = RefreshToken {
                grant,
                scope: scope.to_owned(),
                used: false,
            };
            state.refresh.insert(refresh_token.clone(), entry);
            answer["refresh_token"] = json!(refresh_token);
        }
        answer["scope"] = json!(scope);
        answer
    }

    fn revoke(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Response, OAuthError> {
        let mut state = self.state();
        let client_id = self.authenticate(&state, request, log)?;
        let Some(token) = request
            .form_param("token")
            .filter(|token| !token.is_empty())
        else {
            return invalid_request("token is missing");
        };
        let owned_by = |state: &State, grant: usize| {
            state
                .grant(grant)
                .is_some_and(|grant| grant.client_id == client_id)
        };
        if let Some(grant) = state.refresh.get(&token).map(|entry| entry.grant) {
            log.insert("refresh_token_sha".to_owned(), json!(short_sha(&token)));
            if owned_by(&state, grant)
                && let Some(entry) = state.grants.get_mut(grant)
            {
                entry.revoked = true;
                state.revoked += 1;
            }
        } else if let Some(grant) = state.access.get(&token).map(|entry| entry.grant) {
            log.insert("bearer_sha".to_owned(), json!(short_sha(&token)));
            if owned_by(&state, grant)
                && let Some(entry) = state.access.get_mut(&token)
            {
                entry.revoked = true;
                state.revoked += 1;
            }
        } else if request.form_param("token_type_hint").as_deref() == Some("access_token") {
            log.insert("bearer_sha".to_owned(), json!(short_sha(&token)));
        } else {
            log.insert("refresh_token_sha".to_owned(), json!(short_sha(&token)));
        }
        Ok(Response::new(200))
    }

    // -----------------------------------------------------------------------------------------
    // Test controls
    // -----------------------------------------------------------------------------------------

    fn expire_all(&self) -> Response {
        let mut state = self.state();
        for token in state.access.values_mut() {
            token.expired = true;
        }
        Response::json(200, &json!({"expired": state.access.len()}))
    }

    fn state_summary(&self) -> Response {
        let state = self.state();
        Response::json(
            200,
            &json!({
                "clients": state.registered,
                "access_tokens": state.access.len(),
                "refresh_requests": state.refresh_requests,
                "revoked": state.revoked,
                "dpop_proofs": state.dpop.proofs,
                "dpop_unique_jtis": state.dpop.unique_jtis(),
                "dpop_replays": state.dpop.replays,
                "dpop_refused": state.dpop.refused,
                "dpop_nonce_demands": state.dpop.nonce_demands,
                "client_credentials": state.machine.grants,
            }),
        )
    }

    // -----------------------------------------------------------------------------------------
    // The MCP server
    // -----------------------------------------------------------------------------------------

    /// A `401` (`refused` says why a token sent was not accepted) or, for `insufficient_scope`,
    /// a `403`, with its `WWW-Authenticate: Bearer` challenge.
    fn challenge(&self, refused: Option<&str>, insufficient_scope: bool) -> Response {
        let mut params = Vec::new();
        if self.options.prm == Prm::Header {
            params.push(format!("resource_metadata=\"{}\"", self.prm_url()));
        }
        let scope = match (insufficient_scope, self.options.step_up) {
            (true, _) => self
                .options
                .step_up_names
                .clone()
                .unwrap_or_else(|| format!("{STEP_UP_READ} {STEP_UP_WRITE}")),
            (false, true) => STEP_UP_READ.to_owned(),
            (false, false) => self.resource_scopes().join(" "),
        };
        if !scope.is_empty() {
            params.push(format!("scope=\"{scope}\""));
        }
        let (status, error, description) = match (insufficient_scope, refused) {
            (true, _) => (403, "insufficient_scope", "tools/call needs mcp:write"),
            (false, Some(reason)) => (401, "invalid_token", reason),
            (false, None) => (401, "unauthorized", "a bearer token is needed"),
        };
        if status == 403 || refused.is_some() {
            params.push(format!("error=\"{error}\""));
            params.push(format!("error_description=\"{description}\""));
        }
        let body = json!({"error": error, "error_description": description});
        let header = format!("Bearer {}", params.join(", "));
        Response::json(status, &body).with_header("WWW-Authenticate", header.trim_end())
    }

    /// `--sse`: the HTTP+SSE transport's requests to `/mcp` (`None` for any other).
    fn sse(&self, request: &Request, log: &mut Map<String, Value>) -> Option<http::Reply> {
        if !self.options.sse || request.path() != MCP_PATH {
            return None;
        }
        match request.method.as_str() {
            "GET" => {
                // Authorized as any request to `/mcp`: one that passes is answered 405 there.
                let checked = self.mcp(request, log);
                if checked.status != 405 {
                    return Some(http::Reply::Full(checked));
                }
                let (tx, rx) = tokio::sync::mpsc::channel(64);
                let id = {
                    let mut state = self.state();
                    state.sessions += 1;
                    format!("oauth-sse-{}-{}", std::process::id(), state.sessions)
                };
                let first = format!("event: endpoint\ndata: {MCP_PATH}?sessionId={id}\n\n");
                let _ = tx.try_send(first.into_bytes());
                self.state().streams.insert(id, tx);
                log.insert("sse".to_owned(), json!(true));
                let head = Response::new(200).with_header("Content-Type", "text/event-stream");
                Some(http::Reply::Stream(head, rx))
            }
            "POST" => {
                let id = request.query_param("sessionId")?;
                log.insert("sse".to_owned(), json!(true));
                let Some(tx) = self.state().streams.get(&id).cloned() else {
                    return Some(http::Reply::Full(Response::text(404, "no such session\n")));
                };
                let answer = self.mcp(request, log);
                if answer.status != 200 {
                    return Some(http::Reply::Full(answer));
                }
                let event = format!(
                    "event: message\ndata: {}\n\n",
                    String::from_utf8_lossy(&answer.body)
                );
                if tx.try_send(event.into_bytes()).is_err() {
                    self.state().streams.remove(&id);
                    return Some(http::Reply::Full(Response::text(
                        404,
                        "its stream is gone\n",
                    )));
                }
                Some(http::Reply::Full(Response::new(202)))
            }
            _ => None,
        }
    }

    /// `/mcp`: authorizes the request, then answers the JSON-RPC message it POSTs (see the
    /// module's documentation for what each revision and flag changes).
    fn mcp(&self, request: &Request, log: &mut Map<String, Value>) -> Response {
        let caller = match self.mcp_caller(request, log) {
            Ok(caller) => caller,
            Err(answer) => return answer,
        };
        match request.method.as_str() {
            "POST" => {}
            "DELETE" if !self.options.stateless => return Response::new(200),
            _ if self.options.stateless => return Response::new(405).with_header("Allow", "POST"),
            _ => return Response::new(405).with_header("Allow", "POST, DELETE"),
        }
        let message: Value = match request.json() {
            Ok(message) => message,
            Err(_) => return Response::json(400, &rpc_error(Value::Null, -32700, "Parse error")),
        };
        let method = message.get("method").and_then(Value::as_str);
        if let Some(method) = method {
            log.insert("rpc".to_owned(), json!(method));
        }
        if self.options.stateless
            && let Some(refused) = stateless_refusal(request, &message, log)
        {
            return refused;
        }
        let (Some(id), Some(method)) = (message.get("id").cloned(), method) else {
            // A notification, or a response from the client.
            return Response::new(202);
        };
        let has_write = split_scopes(&caller.scope)
            .iter()
            .any(|s| s == STEP_UP_WRITE);
        let enough = has_write && !self.options.step_up_forever;
        if self.options.step_up && method == "tools/call" && !enough {
            return self.challenge(None, true);
        }
        self.rpc(request, &caller, id, method, message.get("params"), log)
    }

    /// Who a request to `/mcp` comes from, by its access token (a DPoP-bound one with `--dpop`,
    /// else a bearer token), logged; else the answer it gets instead: a refusal, or with
    /// `--open-initialize` the answer to a handshake sent without a token.
    fn mcp_caller(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Caller, Response> {
        let bearer = match self.dpop_resource_request(request, log) {
            Ok(Some(token)) => Some(token),
            Ok(None) => auth_header(request, "bearer").map(str::to_owned),
            Err(refused) => return Err(refused),
        };
        let Some(bearer) = bearer else {
            if let Some(answer) = self.open_without_token(request, log) {
                return Err(answer);
            }
            return Err(self.challenge(None, false));
        };
        log.insert("bearer_sha".to_owned(), json!(short_sha(&bearer)));
        let checked = self.state().check_bearer(&bearer);
        let (client_id, scope) = match checked {
            Ok(found) => found,
            Err(reason) => return Err(self.challenge(Some(reason), false)),
        };
        log.insert("client_id".to_owned(), json!(client_id));
        log.insert("scope".to_owned(), json!(scope));
        Ok(Caller {
            bearer,
            client_id,
            scope,
        })
    }

    /// The answer to the JSON-RPC request `method` (with `id` and `params`) of an authorized
    /// caller.
    fn rpc(
        &self,
        request: &Request,
        caller: &Caller,
        id: Value,
        method: &str,
        params: Option<&Value>,
        log: &mut Map<String, Value>,
    ) -> Response {
        let stateless = self.options.stateless;
        let result = match method {
            "initialize" if stateless => Ok(json!({})),
            "initialize" => return self.initialize(id, params),
            "server/discover" if stateless => Ok(discover_result()),
            "ping" if !stateless => Ok(json!({})),
            "tools/list" => Ok(self.tools_list()),
            "tools/call" => self.tools_call(request, caller, &id, params, log),
            _ => Err((-32601, "Method not found".to_owned())),
        };
        let answer = match result {
            Ok(mut result) => {
                if stateless && result.get("resultType").is_none() {
                    result["resultType"] = json!("complete");
                }
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            }
            Err((-32601, message)) if stateless => {
                return Response::json(404, &rpc_error(id, -32601, &message));
            }
            Err((code, message)) => rpc_error(id, code, &message),
        };
        Response::json(200, &answer)
    }

    /// The result of `tools/list`: `whoami`, and with `--stateless` the list's `ttlMs` and
    /// `cacheScope` and the tools of `--header-tools`.
    fn tools_list(&self) -> Value {
        if !self.options.stateless {
            return json!({"tools": [whoami_tool()]});
        }
        let mut tools = vec![whoami_tool()];
        if self.options.header_tools {
            tools.extend(header_tools());
        }
        json!({"tools": tools, "ttlMs": 0, "cacheScope": "private"})
    }

    /// The result of `tools/call`: `whoami` (after the round trip of `--input-required`) or,
    /// with `--header-tools`, `regional`; else the JSON-RPC error.
    fn tools_call(
        &self,
        request: &Request,
        caller: &Caller,
        id: &Value,
        params: Option<&Value>,
        log: &mut Map<String, Value>,
    ) -> Result<Value, (i64, String)> {
        let name = params
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str);
        match name {
            Some("regional") if self.options.header_tools => {
                let region = request.header("mcp-param-region");
                if let Some(region) = region {
                    log.insert("param_region".to_owned(), json!(region));
                }
                let text = format!("region={}", region.unwrap_or("absent"));
                Ok(text_result(&text))
            }
            Some("whoami") if self.options.input_required => {
                match self.round_trip(id, params, log)? {
                    None => Ok(caller.whoami()),
                    Some(asked) => Ok(asked),
                }
            }
            Some("whoami") => Ok(caller.whoami()),
            Some(other) => Err((-32602, format!("unknown tool {other}"))),
            None => Err((-32602, "tools/call needs a string `name`".to_owned())),
        }
    }
}

/// Who a request to `/mcp` comes from: its access token, and that token's client and scope.
struct Caller {
    bearer: String,
    client_id: String,
    scope: String,
}

impl Caller {
    /// The result of `tools/call whoami`: the client, the scope and the token's short hash.
    fn whoami(&self) -> Value {
        let text = format!(
            "client={} scope={} token={}",
            self.client_id,
            self.scope,
            short_sha(&self.bearer)
        );
        text_result(&text)
    }
}

/// A tool's result that is one text.
fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// `--stateless`: the result of `server/discover`.
fn discover_result() -> Value {
    json!({
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": {"tools": {}},
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo":
            {"name": SERVER_NAME, "version": SERVER_VERSION}},
    })
}

impl Server {
    /// `--input-required`: `Some(input_required result)` for a first call, `None` for a retry
    /// that echoes a state handed out, with a new id; else the error.
    fn round_trip(
        &self,
        id: &Value,
        params: Option<&Value>,
        log: &mut Map<String, Value>,
    ) -> Result<Option<Value>, (i64, String)> {
        let mut state = self.state();
        log.insert("rpc_id".to_owned(), id.clone());
        if state.call_ids.contains(id) {
            return Err((-32600, format!("the id {id} was used before")));
        }
        state.call_ids.push(id.clone());
        match params.and_then(|p| p.get("requestState")) {
            None => {
                let issued = format!("opaque+/={}", &random_token()[..12]);
                state.request_states.push(issued.clone());
                Ok(Some(
                    json!({"resultType": "input_required", "requestState": issued}),
                ))
            }
            Some(sent) => {
                log.insert("request_state".to_owned(), sent.clone());
                match sent.as_str() {
                    Some(sent) if state.request_states.iter().any(|s| s == sent) => Ok(None),
                    Some(_) | None => Err((-32602, "requestState is not one handed out".into())),
                }
            }
        }
    }

    /// `--open-initialize`: the answer to an `initialize` or a notification sent without a
    /// token; `None` for anything else (which then gets the 401).
    fn open_without_token(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Option<Response> {
        if !self.options.open_initialize || request.method != "POST" {
            return None;
        }
        let message: Value = request.json().ok()?;
        let method = message.get("method").and_then(Value::as_str)?;
        log.insert("rpc".to_owned(), json!(method));
        match message.get("id").cloned() {
            Some(id) if method == "initialize" => Some(self.initialize(id, message.get("params"))),
            // A client of both revisions asks this first; unknown here, as to any server of
            // the older revisions.
            Some(id) if method == "server/discover" => Some(Response::json(
                200,
                &rpc_error(id, -32601, "Method not found"),
            )),
            None if method.starts_with("notifications/") => Some(Response::new(202)),
            Some(_) | None => None,
        }
    }

    /// The answer to `initialize`, with a new session.
    fn initialize(&self, id: Value, params: Option<&Value>) -> Response {
        let version = params
            .and_then(|params| params.get("protocolVersion"))
            .and_then(Value::as_str)
            .filter(|version| SUPPORTED_PROTOCOL_VERSIONS.contains(version))
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        let result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        });
        let session = {
            let mut state = self.state();
            state.sessions += 1;
            format!("oauth-test-{}-{}", std::process::id(), state.sessions)
        };
        Response::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .with_header("Mcp-Session-Id", session)
    }
}

/// `--stateless`: the `400` a request of the wrong shape gets (see the module's documentation),
/// or `None` when its headers and `_meta` are in order.
fn stateless_refusal(
    request: &Request,
    message: &Value,
    log: &mut Map<String, Value>,
) -> Option<Response> {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let refuse = |code: i64, text: &str, data: Option<Value>| {
        let mut body = rpc_error(id.clone(), code, text);
        if let Some(data) = data {
            body["error"]["data"] = data;
        }
        Some(Response::json(400, &body))
    };
    let params = message.get("params");
    let meta = params.and_then(|p| p.get("_meta"));
    let meta_version = meta
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str);
    let client = meta
        .and_then(|m| m.get("io.modelcontextprotocol/clientInfo"))
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str);
    for (field, value) in [
        ("meta_client", client),
        ("version_header", request.header("mcp-protocol-version")),
        ("method_header", request.header("mcp-method")),
        ("name_header", request.header("mcp-name")),
        ("meta_version", meta_version),
    ] {
        if let Some(value) = value {
            log.insert(field.to_owned(), json!(value));
        }
    }
    let Some(version) = request.header("mcp-protocol-version") else {
        return refuse(-32020, "Missing MCP-Protocol-Version header", None);
    };
    let method = message.get("method").and_then(Value::as_str)?;
    // Notifications carry no headers this revision asks for.
    message.get("id")?;
    if request.header("mcp-method") != Some(method) {
        return refuse(
            -32020,
            "Header mismatch: Mcp-Method is missing or does not match the body's method",
            None,
        );
    }
    let name = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")),
        "resources/read" => params.and_then(|p| p.get("uri")),
        _ => None,
    };
    if let Some(name) = name.and_then(Value::as_str)
        && request.header("mcp-name") != Some(name)
    {
        return refuse(
            -32020,
            "Header mismatch: Mcp-Name is missing or does not match the body's name",
            None,
        );
    }
    let Some(meta_version) = meta_version else {
        return refuse(
            -32602,
            "Invalid params: _meta needs io.modelcontextprotocol/protocolVersion",
            None,
        );
    };
    if meta_version != version {
        return refuse(
            -32020,
            "Header mismatch: MCP-Protocol-Version does not match the body's protocol version",
            None,
        );
    }
    if meta_version != STATELESS_VERSION {
        let data = json!({"supported": [STATELESS_VERSION], "requested": meta_version});
        return refuse(-32022, "Unsupported protocol version", Some(data));
    }
    if meta
        .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
        .is_none()
    {
        return refuse(
            -32602,
            "Invalid params: _meta needs io.modelcontextprotocol/clientCapabilities",
            None,
        );
    }
    None
}

/// The credentials of an `Authorization: <scheme> <credentials>` header, if it has that scheme.
fn auth_header<'a>(request: &'a Request, scheme: &str) -> Option<&'a str> {
    let (sent, credentials) = request.header("authorization")?.split_once(' ')?;
    sent.eq_ignore_ascii_case(scheme)
        .then(|| credentials.trim())
}

/// The id and secret of `client_secret_basic`: `base64(urlencode(id):urlencode(secret))`.
fn basic_credentials(credentials: &str) -> Option<(String, String)> {
    let decoded = String::from_utf8(STANDARD.decode(credentials).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((percent_decode(id), percent_decode(secret)))
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// `--header-tools`: one tool whose argument travels as a header, and one whose
/// `x-mcp-header` is malformed.
fn header_tools() -> [Value; 2] {
    [
        json!({
            "name": "regional",
            "description": "Answers with the region it was told in the Mcp-Param-Region header",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "note": {"type": ["string", "null"]},
            }},
        }),
        json!({
            "name": "bad-header",
            "inputSchema": {"type": "object", "properties": {
                "x": {"type": "string", "x-mcp-header": "not a token"},
            }},
        }),
    ]
}

fn whoami_tool() -> Value {
    json!({
        "name": "whoami",
        "title": "Who am I",
        "description": "Says which client, scope and token the request was authorized with",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false,
        },
    })
}

/// 32 random bytes, base64url without padding.
fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// The first 8 hex digits of the SHA-256 of `token`.
fn short_sha(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// DPoP (RFC 9449), with `--dpop`: the checks themselves are `bosun_tests::dpop`'s
// ---------------------------------------------------------------------------------------------

/// A refusal of a token request (RFC 9449 §7.1 errors), with a nonce when it asks for one.
fn dpop_refusal(
    log: &mut Map<String, Value>,
    error: &str,
    why: &str,
    nonce: Option<String>,
) -> Response {
    log.insert("error".to_owned(), json!(error));
    let response = no_store(Response::json(
        400,
        &json!({"error": error, "error_description": why}),
    ));
    match nonce {
        Some(n) => response.with_header("DPoP-Nonce", n),
        None => response,
    }
}

/// A `401` from `/mcp` with a `DPoP` challenge.
fn dpop_challenge(log: &mut Map<String, Value>, error: &str, why: &str) -> Response {
    log.insert("error".to_owned(), json!(error));
    let header = format!("DPoP algs=\"ES256\", error=\"{error}\", error_description=\"{why}\"");
    Response::json(401, &json!({"error": error, "error_description": why}))
        .with_header("WWW-Authenticate", header)
}

impl Server {
    /// A token request's proof: required with `--dpop` (`400 invalid_dpop_proof` without a
    /// valid one), with a nonce of the token endpoint's under `--dpop-nonce-as` (else
    /// `400 use_dpop_nonce` and a `DPoP-Nonce`); a refresh token bound to a key needs a proof
    /// of that key. The thumbprint the tokens will be bound to.
    fn dpop_token_request(
        &self,
        state: &mut State,
        request: &Request,
        grant_type: &str,
        log: &mut Map<String, Value>,
    ) -> Result<Option<String>, Response> {
        if !self.options.dpop {
            return Ok(None);
        }
        let Some(proof) = request.header("dpop") else {
            return Err(dpop_refusal(
                log,
                "invalid_dpop_proof",
                "a DPoP proof is required",
                None,
            ));
        };
        let htu = format!("{}{}", self.base, request.path());
        let checked = match state.dpop.check(proof, "POST", &htu) {
            Ok(checked) => checked,
            Err(why) => return Err(dpop_refusal(log, "invalid_dpop_proof", &why, None)),
        };
        log.insert("dpop_jkt".to_owned(), json!(checked.jkt));
        log.insert("dpop_nonce".to_owned(), json!(checked.nonce.is_some()));
        if self.options.dpop_nonce_as && !state.dpop.nonce_ok(true, checked.nonce.as_deref()) {
            state.dpop.nonce_demands += 1;
            let nonce = state.dpop.new_nonce(true);
            return Err(dpop_refusal(
                log,
                "use_dpop_nonce",
                "a fresh nonce is required",
                Some(nonce),
            ));
        }
        if grant_type == "refresh_token"
            && let Some(token) = request.form_param("refresh_token")
            && let Some(bound) = state.dpop.bound_to(&token)
            && bound != checked.jkt
        {
            let why = "the refresh token is bound to another key";
            return Err(dpop_refusal(log, "invalid_dpop_proof", why, None));
        }
        Ok(Some(checked.jkt))
    }

    /// A token answer, bound to `jkt` when there is one (`token_type: DPoP`).
    fn dpop_bind(&self, state: &mut State, jkt: Option<String>, mut answer: Value) -> Response {
        let Some(jkt) = jkt else {
            return no_store(Response::json(200, &answer));
        };
        answer["token_type"] = json!("DPoP");
        for field in ["access_token", "refresh_token"] {
            if let Some(token) = answer[field].as_str() {
                state.dpop.bind(token, &jkt);
            }
        }
        let response = no_store(Response::json(200, &answer));
        if self.options.dpop_nonce_as {
            let nonce = state.dpop.new_nonce(true);
            return response.with_header("DPoP-Nonce", nonce);
        }
        response
    }

    /// `/mcp` with `--dpop`: `Authorization: DPoP <token>` with a valid proof for this request
    /// (its `ath` the token's hash, its key the one the token is bound to, a nonce of
    /// `/mcp`'s under `--dpop-nonce-rs`) gives the token; a bound token used as a bearer
    /// token, or a bad proof, gets a `401` with a `DPoP` challenge. `None`: no DPoP here.
    fn dpop_resource_request(
        &self,
        request: &Request,
        log: &mut Map<String, Value>,
    ) -> Result<Option<String>, Response> {
        if !self.options.dpop {
            return Ok(None);
        }
        let mut state = self.state();
        if let Some(token) = auth_header(request, "bearer") {
            if state.dpop.bound_to(token).is_some() {
                log.insert("auth_scheme".to_owned(), json!("bearer"));
                let why = "a DPoP-bound token was sent as a bearer token";
                return Err(dpop_challenge(log, "invalid_token", why));
            }
            return Ok(None);
        }
        let Some(token) = auth_header(request, "dpop").map(str::to_owned) else {
            return Ok(None);
        };
        log.insert("auth_scheme".to_owned(), json!("dpop"));
        let Some(proof) = request.header("dpop") else {
            let why = "a DPoP proof is required";
            return Err(dpop_challenge(log, "invalid_dpop_proof", why));
        };
        let htu = format!("{}{}", self.base, request.path());
        let checked = match state.dpop.check(proof, &request.method, &htu) {
            Ok(checked) => checked,
            Err(why) => return Err(dpop_challenge(log, "invalid_dpop_proof", &why)),
        };
        log.insert("dpop_jkt".to_owned(), json!(checked.jkt));
        log.insert("dpop_nonce".to_owned(), json!(checked.nonce.is_some()));
        if state.dpop_refuse {
            state.dpop.refused += 1;
            let why = "the proof is refused (test control)";
            return Err(dpop_challenge(log, "invalid_dpop_proof", why));
        }
        if checked.ath.as_deref() != Some(bosun_tests::dpop::ath(&token).as_str()) {
            let why = "the proof's ath is not the token's hash";
            return Err(dpop_challenge(log, "invalid_dpop_proof", why));
        }
        if state.dpop.bound_to(&token) != Some(checked.jkt.as_str()) {
            let why = "the token is not bound to the proof's key";
            return Err(dpop_challenge(log, "invalid_dpop_proof", why));
        }
        if self.options.dpop_nonce_rs && !state.dpop.nonce_ok(false, checked.nonce.as_deref()) {
            state.dpop.nonce_demands += 1;
            let nonce = state.dpop.new_nonce(false);
            let why = "a fresh nonce is required";
            return Err(dpop_challenge(log, "use_dpop_nonce", why).with_header("DPoP-Nonce", nonce));
        }
        Ok(Some(token))
    }

    /// With `--dpop-nonce-rs`, every answer of `/mcp` that was not a refusal carries a new
    /// nonce, which a client must take in place of the one it had.
    fn with_rs_nonce(&self, response: Response) -> Response {
        if !self.options.dpop_nonce_rs
            || response.status == 401
            || response.header("dpop-nonce").is_some()
        {
            return response;
        }
        let nonce = self.state().dpop.new_nonce(false);
        response.with_header("DPoP-Nonce", nonce)
    }
}
