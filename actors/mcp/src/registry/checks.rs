//! The checks of a server's settings, each refusal saying why: its environment and header
//! lines, its sign-in settings and client metadata address, the rules bosun's gateway holds it
//! to, and the options a command line may not give chrome-devtools-mcp.

use std::collections::HashSet;

use bosun_shared::agents::{MAX_SECRET_VALUE, secret_too_long};
use bosun_shared::gateway::{AskPolicy, Rules};
use bosun_shared::mcp::{SecretLine, SecretValue, ServerKind, SignInBy};

use super::GatewayChange;
use crate::RegistryError;
use crate::address;
use crate::browser;
use crate::record::ServerRecord;
use bosun_kit::edit::Edit;

/// Checks environment and header lines: valid names, each once, values that fit.
pub(super) fn check_lines(env: &[SecretLine], headers: &[SecretLine]) -> Result<(), RegistryError> {
    let bad = |m: String| Err(RegistryError::invalid(m));
    let mut seen = HashSet::new();
    for l in env {
        let ok = l
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && l.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return bad(format!(
                "`{}` is not an environment variable name; use letters, digits and _, not starting with a digit",
                l.name
            ));
        }
        if l.value.contains('\0') {
            return bad(format!(
                "the value of {} has a NUL byte, which no environment can hold",
                l.name
            ));
        }
        if l.value.len() > MAX_SECRET_VALUE {
            return bad(secret_too_long(&l.name));
        }
        if !seen.insert(l.name.clone()) {
            return bad(format!("the environment line {} is given twice", l.name));
        }
    }
    let mut seen = HashSet::new();
    for h in headers {
        if reqwest::header::HeaderName::try_from(h.name.as_str()).is_err() {
            return bad(format!("`{}` is not a header name", h.name));
        }
        if let Some(why) = address::owned_header(&h.name) {
            return bad(format!(
                "the header {} is set by bosun itself and cannot be given: {why}",
                h.name
            ));
        }
        if reqwest::header::HeaderValue::try_from(h.value.as_str()).is_err() {
            return bad(format!(
                "the value of header {} has characters a header cannot hold",
                h.name
            ));
        }
        if h.value.len() > MAX_SECRET_VALUE {
            return bad(secret_too_long(&format!("header {}", h.name)));
        }
        if !seen.insert(h.name.to_ascii_lowercase()) {
            return bad(format!("the header {} is given twice", h.name));
        }
    }
    Ok(())
}

/// Checks the sign-in settings: they are for a server reached by address.
pub(super) fn check_sign_in_settings(
    kind: ServerKind,
    client_id: Option<&str>,
    client_secret: &Option<SecretValue>,
    by: Option<SignInBy>,
) -> Result<(), RegistryError> {
    let given = client_id.is_some_and(|c| !c.is_empty())
        || client_secret.is_some()
        || by == Some(SignInBy::ClaudeCode);
    if kind == ServerKind::Stdio && given {
        return Err(RegistryError::invalid(
            "a client id, a client secret and who signs in are for a server reached by address (--transport http or sse); a stdio server gets its credentials from its environment lines",
        ));
    }
    if let Some(id) = client_id
        && (id.chars().any(|c| c.is_control() || c.is_whitespace()) || id.len() > 512)
    {
        return Err(RegistryError::invalid(format!(
            "`{id}` is not a client id; copy it from the service's developer settings"
        )));
    }
    Ok(())
}

/// A server's gateway rules with `edit` applied, or why it cannot be.
pub(super) fn gateway_rules(
    rec: &ServerRecord,
    edit: GatewayChange,
) -> Result<Rules, RegistryError> {
    let mut rules = rec.rules.clone();
    if edit.is_empty() {
        return Ok(rules);
    }
    if let Some(d) = edit.deadline {
        rules.deadline_ms = d.as_millis();
    }
    if let Some(n) = edit.max_result_chars {
        rules.max_result_chars = n.get();
    }
    if let Some(t) = edit.trusted {
        rules.trusted = t;
    }
    for (change, list) in [
        (edit.allow_tools, &mut rules.allow_tools),
        (edit.deny_tools, &mut rules.deny_tools),
        (edit.allow_resources, &mut rules.allow_resources),
        (edit.deny_resources, &mut rules.deny_resources),
        (edit.allow_prompts, &mut rules.allow_prompts),
        (edit.deny_prompts, &mut rules.deny_prompts),
    ] {
        match change {
            Edit::Keep => {}
            Edit::Clear => list.clear(),
            Edit::Set(globs) => *list = globs,
        }
    }
    if let Some(capabilities) = edit.capabilities {
        if capabilities.is_empty() {
            return Err(RegistryError::invalid(format!(
                "give `{}` at least one capability (such as tools); to keep it from runs, switch it off for the agents (`bosun agent set AGENT mcp.{}=off`)",
                rec.name, rec.name
            )));
        }
        rules.capabilities = capabilities;
    }
    if let Some(p) = edit.elicitation {
        if p == AskPolicy::Allow {
            return Err(RegistryError::invalid(format!(
                "a form `{}` asks for is answered by the person: say `--elicitation ask` (or deny); allow is for sampling",
                rec.name
            )));
        }
        rules.elicitation = p;
    }
    if let Some(p) = edit.sampling {
        rules.sampling = p;
    }
    if let Some(n) = edit.sampling_max_tokens {
        rules.sampling_max_tokens = n.get();
    }
    match edit.net {
        Edit::Keep => {}
        Edit::Clear => rules.net.clear(),
        Edit::Set(hosts) => rules.net = hosts,
    }
    rules.net.sort();
    rules.net.dedup();
    for list in [
        &mut rules.allow_tools,
        &mut rules.deny_tools,
        &mut rules.allow_resources,
        &mut rules.deny_resources,
        &mut rules.allow_prompts,
        &mut rules.deny_prompts,
    ] {
        list.sort();
        list.dedup();
    }
    Ok(rules)
}

/// Checks the address of a client metadata document (`""`: none): an `https://` address with
/// a path, for a server reached by address, as the MCP authorization rules ask of a client id.
pub(super) fn check_client_metadata_url(
    kind: ServerKind,
    url: Option<&str>,
) -> Result<Option<String>, RegistryError> {
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    if kind == ServerKind::Stdio {
        return Err(RegistryError::invalid(
            "a client metadata document is for a server reached by address (--transport http or sse); a stdio server gets its credentials from its environment lines",
        ));
    }
    let parsed = url::Url::parse(url).map_err(|_| {
        RegistryError::invalid(format!(
            "`{url}` is not an address; give the https:// address where your copy of bosun's client metadata document is published"
        ))
    })?;
    if parsed.scheme() != "https"
        || parsed.path().trim_matches('/').is_empty()
        || parsed.fragment().is_some()
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(RegistryError::invalid(format!(
            "`{}` cannot be a client id: a client metadata document's address must be https://, with a path, and without a fragment or credentials (such as https://example.com/bosun/client.json)",
            address::shown(url)
        )));
    }
    Ok(Some(url.to_string()))
}

/// A command line that starts chrome-devtools-mcp is checked for the forbidden options.
pub(super) fn check_browser_options(
    command: &Option<String>,
    args: &[String],
) -> Result<(), RegistryError> {
    match command {
        Some(c) if browser::starts_chrome_devtools(c, args) => {
            Ok(browser::check_command_line(c, args)?)
        }
        Some(_) | None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::mcp::SecretLine;

    fn line(name: &str, value: &str) -> SecretLine {
        SecretLine {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn targets_and_lines_are_checked_with_reasons() {
        fn msg<T>(r: Result<T, RegistryError>) -> String {
            r.err().map(|e| e.to_string()).unwrap_or_default()
        }
        let target = |kind, url: &str| address::check_target(kind, &None, &Some(url.into()), false);
        assert!(
            msg(address::check_target(
                ServerKind::Stdio,
                &None,
                &None,
                false
            ))
            .contains("needs a command")
        );
        assert!(msg(target(ServerKind::Http, "ftp://x/mcp")).contains("is a ftp address"));
        assert!(msg(target(ServerKind::Http, "not a url")).contains("is not an address"));
        assert!(target(ServerKind::Sse, "https://example.com/sse").is_ok());
        assert!(
            msg(check_lines(&[line("1BAD", "x")], &[]))
                .contains("is not an environment variable name")
        );
        assert!(msg(check_lines(&[line("A", "1"), line("A", "2")], &[])).contains("given twice"));
        assert!(msg(check_lines(&[], &[line("Accept", "x")])).contains("set by bosun itself"));
        for owned in [
            "Host",
            "content-length",
            "Transfer-Encoding",
            "Mcp-Method",
            "Mcp-Param-Repo",
        ] {
            assert!(
                msg(check_lines(&[], &[line(owned, "x")])).contains("cannot be given: "),
                "{owned}"
            );
        }
        assert!(msg(check_lines(&[], &[line("X-Key", "a\nb")])).contains("cannot hold"));
        assert!(
            check_lines(
                &[line("GITHUB_TOKEN", "x")],
                &[line("Authorization", "Bearer y")]
            )
            .is_ok()
        );
    }
}
