//! A look at a server on the person's behalf: List tools, inspect (the "test connection"), and
//! calling one tool by hand. Each starts the server (or reaches its address), does its one
//! thing, and stops it; List tools keeps what it found, with the time, on the server's record.
//!
//! Whatever a look returns, answer or error, passes through [`reach`], which redacts the secret
//! values bosun handed the server: nothing the server says back reaches the person or the store
//! without it. A look answers in the area's own types ([`ListedTools`], [`Inspection`],
//! [`ToolAnswer`]), already redacted; `supervisor/src/api` shows them.

use std::time::{Duration, Instant};

use crate::RegistryError;
use bosun_auth::ProbeError;
use bosun_auth::challenge::Challenge;
use bosun_shared::Timestamp;
use bosun_shared::gateway::Capability;
use ractor::ActorRef;

use std::future::Future;

use super::client::{self, Endpoint, Limits};
use super::error::{McpError, SignInAsked};
use super::ledger::{self, PendingTool};
use super::record::{ServerRecord, StoredListing, StoredMalformedTool, StoredTool};
use super::redact::{Redact, Redactor};
use super::registry::{self, RegistryContext, RegistryMsg};
use super::revision::Revision;
use super::tools;

/// A server's tools as last listed, with its record as it is with that listing, to hold them
/// against what the person approved.
#[derive(Clone, Debug)]
pub struct ListedTools {
    pub record: ServerRecord,
    pub listing: StoredListing,
}

impl ListedTools {
    /// The tools of the listing that runs do not get until the person approves them.
    pub fn pending(&self) -> Vec<PendingTool> {
        self.record
            .approved()
            .map(|approved| ledger::pending_tools(approved, &self.listing.tools))
            .unwrap_or_default()
    }
}

/// What an inspection (the "test connection") found of a server: who it says it is, the
/// revision spoken, what it advertises and lists, how long each step took, and the capability
/// ledger held against what the person approved.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub server: String,
    pub protocol_version: String,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    /// The capabilities the server advertised, as it sent them.
    pub capabilities: serde_json::Value,
    /// How many usable tools it lists (the malformed ones not counted).
    pub tools: usize,
    pub prompts: Option<usize>,
    pub resources: Option<usize>,
    pub instructions: Option<String>,
    /// Starting or reaching the server and `initialize`.
    pub connect: Duration,
    /// The listings.
    pub list: Duration,
    pub total: Duration,
    pub revision: Revision,
    pub malformed: Vec<StoredMalformedTool>,
    /// The capabilities runs get (approved by the person).
    pub approved_capabilities: Vec<Capability>,
    /// Advertised, and not in runs until the person approves them.
    pub pending_capabilities: Vec<Capability>,
    /// Advertised capabilities bosun's gateway cannot relay (such as `experimental`).
    pub never_relayed: Vec<String>,
    /// Tools it lists now that runs do not get until the person approves them.
    pub pending_tools: Vec<PendingTool>,
}

/// What a server answered to a tool called by hand.
#[derive(Clone, Debug)]
pub struct ToolAnswer {
    pub is_error: bool,
    /// The result's content, as the server sent it.
    pub content: serde_json::Value,
    pub structured: Option<serde_json::Value>,
}

fn failed(server: &str, what: &str, e: &McpError) -> RegistryError {
    let advice = match e.sign_in_asked() {
        Some(SignInAsked::SignIn) => format!("; sign in with `bosun mcp sign-in {server}`"),
        Some(SignInAsked::WiderScope) => {
            format!(
                "; sign in again with `bosun mcp sign-in {server}` to give bosun the wider access"
            )
        }
        None => String::new(),
    };
    RegistryError::Look {
        server: server.to_string(),
        what: what.to_string(),
        error: Box::new(e.clone()),
        advice,
    }
}

/// Reaches the server and does `op`, with the sign-in in mind: a token the server refuses
/// (401) is refreshed and the look tried once more; a 403 asking for a wider scope is kept
/// for the next sign-in. What `op` returns comes back redacted.
async fn reach<T, F, Fut>(
    ctx: &RegistryContext,
    server: &str,
    op: F,
) -> Result<(ServerRecord, Result<T, McpError>), RegistryError>
where
    T: Redact,
    F: Fn(Endpoint) -> Fut,
    Fut: Future<Output = Result<T, McpError>>,
{
    let (rec, ep) = registry::endpoint(ctx, server).await?;
    // It comes to know every token this look hands out: the first, and a refreshed one.
    let mut redactor = ep.redactor.clone();
    let token = bearer(&ep);
    let mut outcome = op(ep).await;
    if let (Err(McpError::NeedsSignIn { .. }), Some(t)) = (&outcome, token) {
        let refused = Some(bosun_auth::refresher::fingerprint(&t));
        let (_, ep) = registry::endpoint_with(ctx, server, refused).await?;
        let retried = bearer(&ep);
        redactor = redactor.with(&ep.redactor);
        outcome = op(ep).await;
        // The fresh token refused too: said plainly once (the refresher does not refresh a
        // token it has just issued again, and asks for a sign-in instead).
        if let (Err(McpError::NeedsSignIn { .. }), Some(t)) = (&outcome, retried) {
            let refused = Some(bosun_auth::refresher::fingerprint(&t));
            registry::endpoint_with(ctx, server, refused).await?;
        }
    }
    if let Err(McpError::InsufficientScope { www_authenticate }) = &outcome {
        let challenge = bosun_auth::challenge::Challenge::parse(www_authenticate);
        if let Some(scope) = challenge.scope {
            bosun_auth::want_scope(&ctx.auth, rec.id, scope).await;
        }
    }
    Ok((rec, outcome.redact(&redactor)))
}

/// The bearer token bosun added to a server's headers, if it did.
fn bearer(ep: &Endpoint) -> Option<String> {
    ep.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .and_then(|(_, v)| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("DPoP "))
        })
        .map(str::to_string)
}

/// What the server answers bosun without a token, for a sign-in: the same connection and
/// `tools/list` as `bosun mcp tools` makes, in whichever revision the server speaks, so a
/// challenge on any of those requests is heard (a server may let the opening request through
/// and ask on the next one). `None`: it listed its tools without asking.
pub async fn sign_in_probe(
    ctx: &RegistryContext,
    server: &str,
) -> Result<Option<Challenge>, ProbeError> {
    let (_, ep) = registry::endpoint_unsigned(ctx, server)
        .await
        .map_err(|e| ProbeError::Failed(e.to_string()))?;
    let redactor = ep.redactor.clone();
    let outcome = async {
        let conn = client::connect(&ep, Limits::for_endpoint(&ep)).await?;
        let listing = conn.list_tools().await;
        conn.close_in_background();
        listing.map(|_| ())
    }
    .await;
    match outcome {
        Ok(()) => Ok(None),
        Err(e) => match e.www_authenticate() {
            Some(header) => Ok(Some(Challenge::parse(header))),
            None => Err(ProbeError::Failed(e.redact(&redactor).to_string())),
        },
    }
}

/// Starts or reaches the server, lists every tool, stops it, and keeps the listing.
pub async fn list_tools(
    ctx: &RegistryContext,
    registry: &ActorRef<RegistryMsg>,
    server: &str,
) -> Result<ListedTools, RegistryError> {
    let (rec, outcome) = reach(ctx, server, |ep| async move {
        let conn = client::connect(&ep, Limits::for_endpoint(&ep)).await?;
        let listing = conn.list_tools().await;
        let advertised = conn.peer().map(|p| advertised(&p.capabilities));
        conn.close_in_background();
        let listing = listing?;
        Ok(StoredListing {
            at: Timestamp::now(),
            tools: listing.tools.iter().map(tools::kept).collect(),
            pages: listing.pages,
            truncated: listing.truncated,
            malformed: listing.malformed,
            capabilities: advertised,
        })
    })
    .await?;
    match outcome {
        Ok(kept) => {
            // As the record will have it, to hold against what the person approved.
            let mut after = rec.clone();
            after.take_listing(kept.clone());
            let listed = ListedTools {
                record: after,
                listing: kept.clone(),
            };
            // Kept before the answer goes out, so a `show` right after sees it.
            let _ = ractor::call!(registry, |reply| RegistryMsg::SaveLook {
                id: rec.id,
                listing: Some(kept),
                error: None,
                reply,
            });
            Ok(listed)
        }
        Err(e) => {
            let _ = ractor::call!(registry, |reply| RegistryMsg::SaveLook {
                id: rec.id,
                listing: None,
                error: Some(e.to_string()),
                reply,
            });
            Err(failed(&rec.name, "list the tools of", &e))
        }
    }
}

/// The names of the capabilities a server advertised.
fn advertised(capabilities: &rmcp::model::ServerCapabilities) -> Vec<String> {
    serde_json::to_value(capabilities)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect()))
        .unwrap_or_default()
}

/// The last listing kept, without starting the server.
pub async fn last_listing(
    ctx: &RegistryContext,
    server: &str,
) -> Result<ListedTools, RegistryError> {
    let rec = registry::find(&ctx.store, server).await?;
    let Some(listing) = rec.listing.clone() else {
        return Err(RegistryError::not_found(format!(
            "the tools of `{}` have not been listed yet; `bosun mcp tools {}` lists them",
            rec.name, rec.name
        )));
    };
    Ok(ListedTools {
        record: rec,
        listing,
    })
}

/// The "test connection": identity, protocol, capabilities, counts and timings.
pub async fn inspect(ctx: &RegistryContext, server: &str) -> Result<Inspection, RegistryError> {
    let t0 = Instant::now();
    // What the person approved, to hold what the server says now against.
    let known = registry::find(&ctx.store, server).await?;
    let approved: Option<Vec<StoredTool>> = known.approved().map(<[StoredTool]>::to_vec);
    let rules = &known.rules;
    let (rec, result) = reach(ctx, server, |ep| {
        let approved = approved.clone();
        let redactor = ep.redactor.clone();
        async move {
            let conn = client::connect(&ep, Limits::for_endpoint(&ep)).await?;
            let connected = t0.elapsed();
            let t1 = Instant::now();
            let outcome = async {
                let listing = conn.list_tools().await?;
                let prompts = conn.count_prompts().await?;
                let resources = conn.count_resources().await?;
                Ok::<_, McpError>((listing, prompts, resources))
            }
            .await;
            let list_time = t1.elapsed();
            let peer = conn.peer();
            let revision = conn.revision.clone();
            conn.close_in_background();
            let (listing, prompts, resources) = outcome?;
            let peer = peer.ok_or_else(|| {
                McpError::Protocol("it answered initialize without its details".into())
            })?;
            let (pending_capabilities, never_relayed) =
                ledger::pending_capabilities(&advertised(&peer.capabilities), rules);
            // As a listing keeps them (redacted), to compare with what the person approved.
            let now: Vec<StoredTool> = listing.tools.iter().map(tools::kept).collect();
            let now = now.redact(&redactor);
            Ok(Inspection {
                approved_capabilities: rules.capabilities.iter().copied().collect(),
                pending_capabilities,
                never_relayed,
                pending_tools: approved
                    .map(|a| ledger::pending_tools(&a, &now))
                    .unwrap_or_default(),
                server: ep.server.clone(),
                protocol_version: peer.protocol_version.to_string(),
                server_name: peer.server_info.as_ref().map(|i| i.name.clone()),
                server_version: peer.server_info.as_ref().map(|i| i.version.clone()),
                capabilities: serde_json::to_value(&peer.capabilities).unwrap_or_default(),
                tools: listing.tools.len(),
                prompts,
                resources,
                instructions: peer.instructions.clone(),
                connect: connected,
                list: list_time,
                total: t0.elapsed(),
                revision,
                malformed: listing.malformed,
            })
        }
    })
    .await?;
    result.map_err(|e| failed(&rec.name, "reach", &e))
}

/// Calls one tool of the server, for checking it by hand.
pub async fn call(
    ctx: &RegistryContext,
    server: &str,
    tool: &str,
    args: serde_json::Value,
) -> Result<ToolAnswer, RegistryError> {
    let serde_json::Value::Object(args) = args else {
        return Err(RegistryError::invalid(
            "--args must be a JSON object, such as '{\"message\": \"hi\"}'",
        ));
    };
    let (rec, outcome) = reach(ctx, server, |ep| {
        let args = args.clone();
        async move {
            let conn = client::connect(&ep, Limits::for_endpoint(&ep)).await?;
            let result = conn.call(tool, args).await;
            conn.close_in_background();
            let result = result?;
            Ok(ToolAnswer {
                is_error: result.is_error.unwrap_or(false),
                content: serde_json::to_value(&result.content).unwrap_or_default(),
                structured: result.structured_content,
            })
        }
    })
    .await?;
    outcome.map_err(|e| {
        failed(
            &rec.name,
            &format!("call `{}` on", bosun_shared::text::visible(tool)),
            &e,
        )
    })
}

impl Redact for Inspection {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            protocol_version: self.protocol_version.redact(r),
            server_name: self.server_name.redact(r),
            server_version: self.server_version.redact(r),
            capabilities: self.capabilities.redact(r),
            instructions: self.instructions.redact(r),
            revision: Revision {
                version: self.revision.version.redact(r),
                stateless: self.revision.stateless,
                why: self.revision.why.redact(r),
            },
            malformed: self.malformed.redact(r),
            never_relayed: self.never_relayed.redact(r),
            ..self
        }
    }
}

impl Redact for ToolAnswer {
    fn redact(self, r: &Redactor) -> Self {
        Self {
            is_error: self.is_error,
            content: self.content.redact(r),
            structured: self.structured.redact(r),
        }
    }
}
