//! Servers as `bosun mcp list` and `show` print them: where each is reached, the rules bosun's
//! gateway holds it to, what the person approved and what waits, and its sign-in.

use std::time::Duration;

use bosun_protocol::mcp::{PendingToolView, ServerKind, ServerView};
use bosun_shared::gateway::{AskPolicy, Capability, ToolGlob};
use bosun_shared::text::visible;

pub(super) fn describe_target(s: &ServerView) -> String {
    match s.kind {
        ServerKind::Stdio => {
            let mut parts = vec![s.command.clone().unwrap_or_default()];
            parts.extend(s.args.iter().cloned());
            format!("stdio: {}", parts.join(" "))
        }
        ServerKind::Http | ServerKind::Sse => {
            let plain = if s.allow_http {
                " (plain http allowed)"
            } else {
                ""
            };
            format!("{}: {}{plain}", s.kind, s.url.clone().unwrap_or_default())
        }
    }
}

pub(super) fn print_servers(servers: &[ServerView]) {
    if servers.is_empty() {
        outln!(
            "no MCP servers; add one with `bosun mcp add NAME -- CMD ARGS…` or `bosun mcp import`"
        );
        return;
    }
    for s in servers {
        let tools = match (s.tool_count, s.listed_at) {
            (Some(n), Some(_)) => format!("{n} tools"),
            _ => "tools not listed yet".to_string(),
        };
        let missing: Vec<&str> = s
            .env
            .iter()
            .chain(s.headers.iter())
            .filter(|l| !l.saved)
            .map(|l| l.name.as_str())
            .collect();
        let mut line = format!("{:<20} {}  ({tools})", s.name, describe_target(s));
        if let Some(b) = &s.browser {
            line = format!(
                "{:<20} built-in browser, chrome-devtools-mcp {}  ({tools})",
                s.name, b.version
            );
            if !b.missing.is_empty() {
                line.push_str(&format!(
                    "\n{:<20} cannot start: {}",
                    "",
                    b.missing.join("; ")
                ));
            }
        }
        if !missing.is_empty() {
            line.push_str(&format!(
                "  missing from the keychain: {}",
                missing.join(", ")
            ));
        }
        if let Some(si) = &s.sign_in
            && si.state != "not signed in"
        {
            line.push_str(&format!("  [{}]", si.state));
        }
        if let Some(e) = &s.last_error {
            line.push_str(&format!("\n{:<20} last look failed: {}", "", visible(e)));
        }
        outln!("{line}");
    }
}

/// What bosun's gateway holds a server to, as `mcp show` says it.
fn print_rules(r: &bosun_shared::gateway::Rules) {
    let list = |l: &[ToolGlob]| {
        l.iter()
            .map(ToolGlob::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!(
        "{:<12}{}",
        "trust",
        if r.trusted {
            "trusted: results reach the model as they are"
        } else {
            "untrusted: results reach the model framed as untrusted content"
        }
    );
    if !r.allow_tools.is_empty() {
        outln!("{:<12}{}", "allow tools", list(&r.allow_tools));
    }
    if !r.deny_tools.is_empty() {
        outln!(
            "{:<12}{} (never offered nor allowed)",
            "deny tools",
            list(&r.deny_tools)
        );
    }
    for (what, allow, deny) in [
        ("resources", &r.allow_resources, &r.deny_resources),
        ("prompts", &r.allow_prompts, &r.deny_prompts),
    ] {
        if !allow.is_empty() {
            outln!("{:<12}{}", format!("allow {what}"), list(allow));
        }
        if !deny.is_empty() {
            outln!(
                "{:<12}{} (never listed nor given)",
                format!("deny {what}"),
                list(deny)
            );
        }
    }
    outln!(
        "{:<12}{} per call; results over {} characters reach the model as head and tail",
        "deadline",
        bosun_shared::time::format_duration(std::time::Duration::from_millis(r.deadline_ms)),
        r.max_result_chars
    );
    outln!(
        "{:<12}{}",
        "elicitation",
        match r.elicitation {
            AskPolicy::Deny => "deny: the server's requests for the person's input are refused",
            AskPolicy::Ask | AskPolicy::Allow => {
                "ask: the server's requests for the person's input wait in the inbox"
            }
        }
    );
    let sampling = match r.sampling {
        AskPolicy::Deny => {
            "deny: the server's requests for a message of the model are refused".to_string()
        }
        AskPolicy::Ask => {
            "ask: the server's requests for a message of the model wait in the inbox".to_string()
        }
        AskPolicy::Allow => format!(
            "allow: the run's CLI writes the messages the server asks for, up to {} tokens each",
            r.sampling_max_tokens
        ),
    };
    outln!("{:<12}{sampling}", "sampling");
    if !r.net.is_empty() {
        let hosts: Vec<&str> = r.net.iter().map(|h| h.as_str()).collect();
        outln!(
            "{:<12}in a fenced run, what its transport needs and {}",
            "network",
            hosts.join(", ")
        );
    }
}

/// What runs get of a server, and what waits for the person's approval.
pub(super) fn print_ledger(
    server: &str,
    approved: &std::collections::BTreeSet<Capability>,
    pending: &[Capability],
    pending_tools: &[PendingToolView],
) {
    let names = |c: &mut dyn Iterator<Item = &Capability>| {
        c.map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
    };
    outln!("{:<12}{}", "capabilities", names(&mut approved.iter()));
    if !pending.is_empty() {
        outln!(
            "{:<12}{} advertised, held back from runs (bosun mcp approve {server} --capability NAME)",
            "pending",
            names(&mut pending.iter())
        );
    }
    if !pending_tools.is_empty() {
        let tools: Vec<String> = pending_tools
            .iter()
            .map(|t| format!("{} ({})", visible(&t.name), t.change.words()))
            .collect();
        outln!(
            "{:<12}{}: held back from runs (bosun mcp approve {server} TOOL…, or --all-tools)",
            "new tools",
            tools.join(", ")
        );
    }
}

pub(super) fn print_server(s: &ServerView) {
    outln!("{:<12}{}", "name", s.name);
    outln!("{:<12}{}", "id", s.id);
    outln!("{:<12}{}", "reached by", describe_target(s));
    for (what, lines) in [("env", &s.env), ("headers", &s.headers)] {
        if lines.is_empty() {
            continue;
        }
        for (i, l) in lines.iter().enumerate() {
            let label = if i == 0 { what } else { "" };
            outln!(
                "{label:<12}{} ({})",
                l.name,
                if l.saved {
                    "saved"
                } else {
                    "missing from the keychain"
                }
            );
        }
    }
    if let Some(b) = &s.browser {
        outln!(
            "{:<12}chrome-devtools-mcp {} (built in)",
            "browser",
            b.version
        );
        match &b.program_found {
            Some(p) => outln!("{:<12}{}", "program", p.display()),
            None => outln!("{:<12}none found", "program"),
        }
        match &b.node {
            Some(v) => outln!("{:<12}{v}", "node"),
            None => outln!("{:<12}not usable", "node"),
        }
        for m in &b.missing {
            outln!("{:<12}{m}", "missing");
        }
    }
    match (s.listed_at, s.tool_count) {
        (Some(at), Some(n)) => outln!("{:<12}{n}, listed {}", "tools", at.rfc3339()),
        _ => outln!("{:<12}not listed yet (bosun mcp tools {})", "tools", s.name),
    }
    if let Some(doc) = &s.client_metadata_url {
        outln!("{:<12}{doc} (client metadata document)", "client doc");
    }
    print_rules(&s.rules);
    print_ledger(
        &s.name,
        &s.rules.capabilities,
        &s.pending_capabilities,
        &s.pending_tools,
    );
    if let Some(si) = &s.sign_in {
        outln!("{:<12}{}", "sign-in", si.state);
        if let Some(why) = &si.why {
            outln!("{:<12}{}", "", visible(why));
        }
        if let Some(issuer) = &si.issuer {
            outln!("{:<12}{}", "issuer", visible(issuer));
        }
        if let Some(id) = &si.client_id {
            let how = if si.registered {
                " (registered by bosun)"
            } else {
                ""
            };
            outln!("{:<12}{}{how}", "client id", visible(id));
        }
        if si.dpop {
            outln!("{:<12}bound to a key (DPoP)", "tokens");
        }
        if let Some(method) = &si.client_credentials {
            outln!("{:<12}client credentials ({method})", "as machine");
        }
        if let Some(scope) = &si.scope {
            outln!("{:<12}{}", "scope", visible(scope));
        }
        if let Some(left) = token_life(si.expires_at) {
            outln!("{:<12}{left}", "token");
        }
        if let Some(w) = &si.wanted_scope {
            outln!(
                "{:<12}the server asks for more: {} (sign in again)",
                "",
                visible(w)
            );
        }
    }
    if let Some(e) = &s.last_error {
        outln!("{:<12}{}", "last error", visible(e));
    }
}

/// How long an access token has left, in words.
fn token_life(at: Option<bosun_shared::Timestamp>) -> Option<String> {
    let at = at?;
    let now = bosun_shared::Timestamp::now().as_millis();
    Some(if at.as_millis() <= now {
        "expired (refreshed when next used)".to_string()
    } else {
        format!(
            "valid for {}",
            bosun_shared::time::format_duration(Duration::from_secs((at.as_millis() - now) / 1000))
        )
    })
}
