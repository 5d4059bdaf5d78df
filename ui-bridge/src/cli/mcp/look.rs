//! Looking at a server and trying it: `bosun mcp show`, `tools`, `approve` and `call`, and how
//! a listing of tools, an inspection and a call's result are printed.

use std::process::ExitCode;

use bosun_protocol::mcp::{
    CallView, InspectView, McpApprove, McpCall, McpShow, McpTools, ToolListing,
};
use bosun_shared::gateway::Capability;
use bosun_shared::paths::StateDir;
use bosun_shared::text::visible;

use super::print::{print_ledger, print_server};
use super::sign_in::with_sign_in;
use super::{connect, output};

/// `bosun mcp show`: one server, and with `--tools` the tools its last listing found.
pub(super) async fn show(
    dirs: &StateDir,
    name: String,
    tools: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client
        .call(McpShow {
            server: name.clone(),
        })
        .await?;
    let listing = if tools && server.listed_at.is_some() {
        let request = McpTools {
            server: server.name.clone(),
            cached: true,
        };
        Some(client.call(request).await?)
    } else {
        None
    };
    if json {
        match listing {
            Some(l) => output::print_json(&serde_json::json!({ "server": server, "tools": l }))?,
            None => output::print_json(&server)?,
        }
    } else {
        print_server(&server);
        if let Some(l) = listing {
            outln!();
            print_tools(&l);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp tools`: a server's tools, listed now (signing in first if it asks) or, with
/// `--cached`, as its last listing found them.
pub(super) async fn tools(
    dirs: &StateDir,
    name: String,
    cached: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let request = McpTools {
        server: name.clone(),
        cached,
    };
    let listing = with_sign_in(dirs, request, &name, !cached && !json).await?;
    if json {
        output::print_json(&listing)?;
    } else {
        print_tools(&listing);
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp approve`: the tools and capabilities the person lets through, and the ledger after.
pub(super) async fn approve(
    dirs: &StateDir,
    request: McpApprove,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client.call(request).await?;
    if json {
        output::print_json(&server)?;
    } else {
        outln!("approved; runs get it from the next run on");
        print_ledger(
            &server.name,
            &server.rules.capabilities,
            &server.pending_capabilities,
            &server.pending_tools,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp call`: one call of a server's tool, its result printed; a result that is an error
/// exits 1.
pub(super) async fn call(
    dirs: &StateDir,
    name: String,
    tool: String,
    args: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(args).map_err(|e| {
        anyhow::anyhow!(
            "--args is not JSON ({e}); give an object such as '{{\"message\": \"hi\"}}'"
        )
    })?;
    let request = McpCall {
        server: name.clone(),
        tool,
        args,
    };
    let view = with_sign_in(dirs, request, &name, !json).await?;
    if json {
        output::print_json(&view)?;
    } else {
        print_call(&view);
    }
    Ok(if view.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_tools(l: &ToolListing) {
    outln!(
        "{} tools of {} (listed {})",
        l.tools.len(),
        l.server,
        l.listed_at.rfc3339()
    );
    if let Some(t) = &l.truncated {
        outln!("note: {t}");
    }
    print_malformed(&l.malformed);
    for t in &l.tools {
        outln!();
        let title = t
            .title
            .as_deref()
            .map(|t| format!(" — {}", visible(t)))
            .unwrap_or_default();
        outln!("{}{title}", visible(&t.full_name));
        if let Some(change) = t.pending {
            outln!(
                "  {}: held back from runs until you approve it (bosun mcp approve {} {})",
                change.words(),
                l.server,
                visible(&t.name)
            );
        }
        outln!(
            "  risk: {} ({})",
            t.assessment.risk,
            t.assessment.words.join(", ")
        );
        if t.assessment.sent.is_empty() {
            outln!("  hints: none sent; the MCP spec's defaults apply");
        } else if t.assessment.sent.len() < 4 {
            outln!(
                "  hints sent: {}; the others are the spec's defaults",
                t.assessment.sent.join(", ")
            );
        }
        // A description keeps its lines, each indented, so none passes for a line of bosun's.
        if let Some(d) = &t.description {
            for line in d.lines().filter(|l| !l.trim().is_empty()).take(6) {
                outln!("  {}", visible(line));
            }
        }
        for p in &t.params {
            let ty = p.r#type.as_deref().unwrap_or("any");
            let req = if p.required { "required" } else { "optional" };
            let desc = p
                .description
                .as_deref()
                .map(|d| format!(": {}", visible(d)))
                .unwrap_or_default();
            outln!("    {} ({}, {req}){desc}", visible(&p.name), visible(ty));
        }
    }
}

/// The tools bosun set aside, each with what is wrong (their input schemas as sent are in
/// `--json`).
fn print_malformed(malformed: &[bosun_protocol::mcp::MalformedToolView]) {
    if malformed.is_empty() {
        return;
    }
    outln!(
        "{} tool definition{} malformed; bosun lists and calls the others:",
        malformed.len(),
        if malformed.len() == 1 { " is" } else { "s are" }
    );
    for m in malformed {
        let name = m
            .name
            .as_deref()
            .map(|n| format!("`{}`", visible(n)))
            .unwrap_or_else(|| "a tool without a name".into());
        outln!("  {name}: {}", visible(&m.problem));
    }
}

pub(super) fn print_inspect(v: &InspectView) {
    outln!("{:<18}{}", "server", v.server);
    outln!(
        "{:<18}{} {}",
        "identifies as",
        visible(v.server_name.as_deref().unwrap_or("?")),
        visible(v.server_version.as_deref().unwrap_or(""))
    );
    outln!("{:<18}{}", "protocol", v.protocol_version);
    if let Some(r) = &v.revision {
        let how = if r.stateless {
            "stateless"
        } else {
            "initialize handshake"
        };
        outln!("{:<18}{} ({how}): {}", "revision", r.version, r.why);
    }
    let caps: Vec<String> = v
        .capabilities
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    outln!(
        "{:<18}{}",
        "capabilities",
        if caps.is_empty() {
            "none".into()
        } else {
            caps.join(", ")
        }
    );
    outln!("{:<18}{}", "tools", v.tools);
    print_malformed(&v.malformed);
    let names = |c: &[Capability]| c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
    outln!("{:<18}{}", "runs get", names(&v.approved_capabilities));
    if !v.pending_capabilities.is_empty() {
        outln!(
            "{:<18}{} (bosun mcp approve {} --capability NAME)",
            "pending",
            names(&v.pending_capabilities),
            v.server
        );
    }
    if !v.never_relayed.is_empty() {
        outln!(
            "{:<18}{} (bosun's gateway does not relay these)",
            "never in a run",
            v.never_relayed.join(", ")
        );
    }
    if !v.pending_tools.is_empty() {
        let tools: Vec<String> = v
            .pending_tools
            .iter()
            .map(|t| format!("{} ({})", visible(&t.name), t.change.words()))
            .collect();
        outln!(
            "{:<18}{} (bosun mcp approve {} TOOL…)",
            "pending tools",
            tools.join(", "),
            v.server
        );
    }
    outln!(
        "{:<18}{}",
        "prompts",
        v.prompts
            .map(|n| n.to_string())
            .unwrap_or_else(|| "not offered".into())
    );
    outln!(
        "{:<18}{}",
        "resources",
        v.resources
            .map(|n| n.to_string())
            .unwrap_or_else(|| "not offered".into())
    );
    outln!(
        "{:<18}connect + initialize {} ms, listing {} ms, total {} ms",
        "timings",
        v.connect_ms,
        v.list_ms,
        v.total_ms
    );
}

/// A call's result: its text keeps its lines, each indented, so that none of the server's
/// lines passes for one of bosun's (`--json` has the result exactly as it came).
fn print_call(v: &CallView) {
    if v.is_error {
        outln!("the tool reported an error:");
    }
    let indented = |text: &str| {
        for line in text.lines() {
            outln!("  {line}");
        }
    };
    match v.content.as_array() {
        Some(items) => {
            for item in items {
                match item.get("text").and_then(|t| t.as_str()) {
                    Some(text) => indented(text),
                    None => indented(&item.to_string()),
                }
            }
        }
        None => indented(&v.content.to_string()),
    }
    if let Some(s) = &v.structured {
        outln!("structured: {s}");
    }
}
