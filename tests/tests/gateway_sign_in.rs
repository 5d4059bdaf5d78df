//! A run's sign-in to a server reached by address, kept good while the run goes on: the real
//! Claude Code against its fake model API, the project's own authorization and MCP server
//! (`oauth-server`), and a second client dialling the run's gateway the way the CLI does.
//! A token that expires mid-run is renewed by bosund's refresher and the call goes on, once.

use std::time::Duration;

use bosun_tests::gateway_client::{GatewayClient, text_of};
use bosun_tests::{Bosun, FakeModel, OAuthServer, keychain_values, wait_for};
use serde_json::{Value, json};

/// A Claude agent `coder` with the signed-in server `remote` on, its tools looked at (so the
/// gateway lets `whoami` through); a run of it, holding, with a client of its gateway
/// initialized. The run's id and the client.
fn a_run_on(b: &Bosun, oauth: &OAuthServer) -> anyhow::Result<(String, GatewayClient, FakeModel)> {
    oauth.add_signed_in(b, "remote")?;
    b.ok(&["mcp", "tools", "remote"])?;
    let fake = FakeModel::start("anthropic", "hold")?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = GatewayClient::dial(&socket, "remote")?;
    let init = c.ask(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "probe", "version": "1"},
               "capabilities": {}}),
        Duration::from_secs(30),
    )?;
    anyhow::ensure!(init.get("result").is_some(), "initialized: {init}");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    Ok((id, c, fake))
}

/// bosun's own lines of a run's log.
fn log_text(b: &Bosun, id: &str) -> String {
    b.output(&["logs", id])
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

/// Every token value the fake keychain holds for the server (access and refresh).
fn tokens(b: &Bosun) -> Vec<String> {
    keychain_values(b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_token_that_expires_mid_run_is_renewed_and_the_call_runs_once() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--rotate"])?;
    let b = Bosun::new("gateway_token_renewed").with_test_browser();
    let (id, mut c, _fake) = a_run_on(&b, &oauth)?;

    let first = c.call("whoami", json!({}), Duration::from_secs(30))?;
    let said = text_of(&first);
    assert!(said.contains("token="), "{first}");
    let mut seen = tokens(&b);

    // The server takes every token it gave so far as expired; bosun does not know yet.
    oauth.expire_tokens()?;
    let before = oauth.requests_to("/mcp").len();
    let refreshes_before = oauth.refreshes();
    let second = c.call("whoami", json!({}), Duration::from_secs(30))?;
    let again = text_of(&second);
    assert!(
        again.contains("token=") && again != said,
        "the call went on with a token got anew: {second}"
    );
    assert_eq!(oauth.refreshes(), refreshes_before + 1, "one refresh");
    // The server refused the call once (401, before it read what was asked: it did not run),
    // then ran it once. (The run's own CLI may have messages of its own refused meanwhile.)
    let after: Vec<Value> = oauth.requests_to("/mcp")[before..].to_vec();
    let ran: Vec<&Value> = after
        .iter()
        .filter(|r| r["rpc"] == "tools/call" && r["status"] == 200)
        .collect();
    assert_eq!(ran.len(), 1, "{after:#?}");
    assert!(after.iter().any(|r| r["status"] == 401), "{after:#?}");
    let log = log_text(&b, &id);
    assert!(
        log.contains("remote refused the run's token; asking bosund for its token anew")
            && log.contains("bosund gave the run its token anew"),
        "{log}"
    );

    // The new token is used from then on: no second refresh.
    let third = c.call("whoami", json!({}), Duration::from_secs(30))?;
    assert_eq!(text_of(&third), again);
    assert_eq!(oauth.refreshes(), refreshes_before + 1);

    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    seen.extend(tokens(&b));
    b.ok(&["inbox", "--json", "--all"])?;
    for t in &seen {
        b.assert_secret_nowhere(t)?;
    }
    b.finish()
}

#[test]
fn a_call_whose_token_cannot_be_renewed_fails_saying_why_and_the_run_goes_on() -> anyhow::Result<()>
{
    let oauth = OAuthServer::start(&["--refuse-refresh"])?;
    let b = Bosun::new("gateway_token_refused").with_test_browser();
    let (id, mut c, _fake) = a_run_on(&b, &oauth)?;
    oauth.expire_tokens()?;
    let before = oauth.requests_to("/mcp").len();
    let answer = c.call("whoami", json!({}), Duration::from_secs(30))?;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the MCP server `remote` needs a new sign-in")
            && message.contains("the call was not run")
            && message.contains("bosun mcp sign-in remote"),
        "{answer}"
    );
    // Refused, never run.
    let after: Vec<Value> = oauth.requests_to("/mcp")[before..].to_vec();
    assert!(
        after.iter().all(|r| r["status"] == 401) && !after.is_empty(),
        "{after:#?}"
    );
    // The run goes on, and so does the connection: the next request is answered (with the
    // same refusal: only a new sign-in helps).
    let next = c.ask("tools/list", json!({}), Duration::from_secs(30))?;
    assert!(
        next["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs a new sign-in")),
        "{next}"
    );
    wait_for("the run still running", Duration::from_secs(10), || {
        Ok((b.show(&id)?["state"] == "running").then_some(()))
    })?;
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}
