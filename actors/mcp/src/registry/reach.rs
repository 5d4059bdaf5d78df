//! How to reach a server: its command or address with its secret values, read from the
//! keychain for this one use, and bosun's sign-in (a token good for a minute at least) or none.

use bosun_kit::keychain::Keychain;
use bosun_kit::offload::blocking;
use bosun_shared::gateway::AskPolicy;
use bosun_shared::mcp::{ServerKind, SignInBy};

use super::checks::check_browser_options;
use super::{RegistryContext, find};
use crate::RegistryError;
use crate::browser;
use crate::client::Endpoint;
use crate::record::{self, LineKind, ServerRecord};
use crate::redact::Redactor;

/// A server's environment and header lines with their values, read from the keychain for this
/// one use; a value that is missing is an error saying how to set it.
pub async fn secret_lines(
    keychain: &Keychain,
    rec: &ServerRecord,
) -> Result<(Vec<(String, String)>, Vec<(String, String)>), RegistryError> {
    let keychain = keychain.clone();
    let r = rec.clone();
    blocking(move || {
        let mut env = Vec::new();
        let mut headers = Vec::new();
        for (kind, names, out) in [
            (LineKind::Env, &r.env_names, &mut env),
            (LineKind::Header, &r.header_names, &mut headers),
        ] {
            for name in names {
                match keychain.get(&kind.key(r.id, name)) {
                    Ok(Some(v)) => out.push((name.clone(), v)),
                    Ok(None) => {
                        let flag = match kind {
                            LineKind::Env => "--env",
                            LineKind::Header => "--header",
                        };
                        return Err(RegistryError::conflict(format!(
                            "a value is missing from the keychain ({name}); set it with `bosun mcp edit {} {flag} {name} --values-from-stdin`",
                            r.name
                        )));
                    }
                    Err(e) => return Err(RegistryError::from(e)),
                }
            }
        }
        Ok((env, headers))
    })
    .await?
}

/// How to reach a server, with its secret values read from the keychain for this one use.
pub async fn endpoint(
    ctx: &RegistryContext,
    server: &str,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_with(ctx, server, None).await
}

/// As [`endpoint`]; `refused` is the fingerprint of a token the server just refused, which is
/// then refreshed rather than used again.
pub async fn endpoint_with(
    ctx: &RegistryContext,
    server: &str,
    refused: Option<String>,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_of(ctx, server, SignedIn::Yes { refused }).await
}

/// As [`endpoint`], without any `Authorization` (bosun's token or a configured header): what a
/// sign-in asks first, to hear the server's challenge.
pub async fn endpoint_unsigned(
    ctx: &RegistryContext,
    server: &str,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    endpoint_of(ctx, server, SignedIn::No).await
}

/// Whether an endpoint carries bosun's sign-in.
enum SignedIn {
    /// A token good for a minute at least; `refused` as in [`endpoint_with`].
    Yes { refused: Option<String> },
    /// No `Authorization` at all.
    No,
}

async fn endpoint_of(
    ctx: &RegistryContext,
    server: &str,
    signed_in: SignedIn,
) -> Result<(ServerRecord, Endpoint), RegistryError> {
    let rec = find(&ctx.store, server).await?;
    if rec.sign_in_by == SignInBy::ClaudeCode {
        return Err(RegistryError::conflict(format!(
            "Claude Code signs in to `{}`, so bosun has no sign-in to call it with and cannot look at it itself; agents running Claude Code get all of its tools",
            rec.name
        )));
    }
    let (mut env, mut headers) = secret_lines(&ctx.keychain, &rec).await?;
    let (keychain, r) = (ctx.keychain.clone(), rec.clone());
    let url = blocking(move || record::connect_url(&keychain, &r)).await??;
    let mut dpop = None;
    match signed_in {
        SignedIn::Yes { refused } if rec.kind != ServerKind::Stdio => {
            // Before a look, a token good for a minute at least.
            match bosun_auth::access(
                &ctx.auth,
                rec.id,
                std::time::Duration::from_secs(60),
                refused,
            )
            .await?
            {
                bosun_auth::Access::Token(t) => {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                    headers.push(("Authorization".into(), format!("Bearer {t}")));
                }
                bosun_auth::Access::Dpop { token, prover } => {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                    headers.push(("Authorization".into(), format!("DPoP {token}")));
                    dpop = Some(crate::dpop_http::Binding { token, prover });
                }
                bosun_auth::Access::None => {}
            }
        }
        SignedIn::Yes { .. } => {}
        SignedIn::No => headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
    }
    // Made before the browser's own environment joins the lines: that is no secret.
    let redactor = Redactor::new(&env, &headers, url.as_deref());
    let (command, args) = match &rec.browser {
        Some(settings) => {
            let settings = settings.clone();
            let launch = blocking(move || {
                browser::launch(&settings, false, std::env::var("PATH").ok().as_deref())
            })
            .await?
            .map_err(RegistryError::BrowserCannotStart)?;
            env.extend(launch.env);
            (Some(launch.command), launch.args)
        }
        None => (rec.command.clone(), rec.args.clone()),
    };
    check_browser_options(&command, &args)?;
    let ep = Endpoint {
        server: rec.name.clone(),
        kind: rec.kind,
        command,
        args,
        url,
        env,
        headers,
        redactor,
        dpop,
        offers_elicitation: rec.rules.elicitation == AskPolicy::Ask,
        offers_sampling: rec.rules.sampling != AskPolicy::Deny,
    };
    Ok((rec, ep))
}
