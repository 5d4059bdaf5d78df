//! A run's sign-in to a server reached by address, kept good while the run goes on: the real
//! Claude Code against its fake model API, the project's own authorization and MCP server
//! (`oauth-server`), and a second client dialling the run's gateway the way the CLI does.
//! A token that expires mid-run is renewed by bosund's refresher and the call goes on, once;
//! with bosund down the call fails, saying so. A wider scope asked mid-run, or a server that
//! moved to another authorization server, puts "needs a new sign-in" in the inbox: signing in
//! (at the terminal, or with the item's button in the web UI) lets the call go on, once;
//! dismissing it fails the call and the run goes on. No token is in the run's folder, its log,
//! the store or the inbox's answers.

use std::time::Duration;

use bosun_tests::gateway_client::{GatewayClient, text_of};
use bosun_tests::webui::Ui;
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
    c.initialize()?;
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
fn a_token_needed_while_bosund_is_down_fails_the_call_saying_so() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&[])?;
    let b = Bosun::new("gateway_token_no_bosund").with_test_browser();
    let (id, mut c, _fake) = a_run_on(&b, &oauth)?;
    oauth.expire_tokens()?;
    // bosund judges the call (every call at the gateway is judged), then dies as it begins to
    // renew the token: the token is needed while bosund is down.
    b.kill_daemon()?;
    let started = b
        .cmd(&["ps"])
        .env("BOSUN_CRASH_AT", "refresh-before-request")
        .stdout(std::process::Stdio::null())
        .output()?;
    // The run's own CLI may meet the expired token even before `ps` has its answer: bosund then
    // dies at the crash point under `ps`, having asked for the token. Either way bosund came
    // back and is down again when the call is made.
    let died_renewing = || {
        b.daemon_pid().is_none()
            && b.daemon_log()
                .contains("the run's gateway asks for a server's token anew")
    };
    anyhow::ensure!(
        started.status.success() || died_renewing(),
        "bosund did not start again: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    let before = oauth.requests_to("/mcp").len();
    let answer = c.call("whoami", json!({}), Duration::from_secs(60))?;
    // Which request of the run needs the token first is not ours to choose: the run's own CLI
    // (Claude Code, connected to the same gateway) may send one of its own to the server as
    // bosund comes back. If ours does, bosund judges it and dies renewing the token: the call
    // fails saying the sign-in could not be renewed. If the CLI's does, bosund dies renewing
    // the token before it judges ours: the call fails saying nobody could judge it. Either way
    // the token was asked for while bosund went down (its log says so), and the call says why
    // it did not run.
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let renewal_failed = message.contains(
        "bosun could not renew the sign-in to the MCP server `remote`: bosund did not answer within 15 s",
    ) && message.contains("the call was not run");
    let not_judged = text
        .contains("bosund could not be reached: bosund did not answer within 15 s")
        && text.contains("so nobody could judge this call");
    assert!(renewal_failed || not_judged, "{answer}");
    assert!(
        b.daemon_log()
            .contains("the run's gateway asks for a server's token anew"),
        "the token was asked for as bosund came back: {}",
        b.daemon_log()
    );
    // Refused, never run: the server saw only 401s since. When our call was judged and sent,
    // its own 401 is among them. When it was not judged, the 401 that sent bosund to renew the
    // token was the CLI's, and may have come before `before` was counted (or under `ps`).
    let after: Vec<Value> = oauth.requests_to("/mcp")[before..].to_vec();
    assert!(
        after.iter().all(|r| r["status"] == 401) && (!after.is_empty() || !renewal_failed),
        "{after:#?}"
    );
    // bosund back: the run went on all along.
    b.ok(&["ps"])?;
    wait_for("the run still running", Duration::from_secs(10), || {
        Ok((b.show(&id)?["state"] == "running").then_some(()))
    })?;
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

/// The "needs a new sign-in" items waiting in the inbox (`bosun inbox --json`).
fn sign_in_items(b: &Bosun) -> anyhow::Result<Vec<Value>> {
    let inbox = b.json(&["inbox"])?;
    Ok(inbox
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["class"] == "sign-in")
                .cloned()
                .collect()
        })
        .unwrap_or_default())
}

/// A call of `whoami` sent, refused by the server for a wider scope, waiting in the inbox: the
/// run, the client, the call's id and the item.
fn a_call_that_waits_for_a_wider_sign_in(
    b: &Bosun,
    oauth: &OAuthServer,
) -> anyhow::Result<(String, GatewayClient, FakeModel, u64, Value)> {
    let (id, mut c, fake) = a_run_on(b, oauth)?;
    let call = 100;
    c.send(
        &json!({"jsonrpc": "2.0", "id": call, "method": "tools/call",
                   "params": {"name": "whoami", "arguments": {}}}),
    )?;
    let item = wait_for(
        "a sign-in item in the inbox",
        Duration::from_secs(30),
        || Ok(sign_in_items(b)?.into_iter().next()),
    )?;
    assert_eq!(item["run"], json!(id), "{item}");
    let preview = item["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("server remote needs a new sign-in (scope mcp:read mcp:write)")
            && preview.contains("sign in to go on: bosun mcp sign-in remote"),
        "{item}"
    );
    // The call waits: no answer yet, and the server ran nothing.
    assert!(
        !c.drain(Duration::from_millis(500))
            .iter()
            .any(|m| m["id"] == json!(call)),
        "the call waits for the sign-in"
    );
    assert!(
        !oauth
            .requests_to("/mcp")
            .iter()
            .any(|r| r["rpc"] == "tools/call" && r["status"] == 200)
    );
    let log = log_text(b, &id);
    assert!(
        log.contains("the MCP server remote needs a new sign-in (scope mcp:read mcp:write)"),
        "{log}"
    );
    Ok((id, c, fake, call, item))
}

#[test]
fn a_wider_scope_asked_mid_run_waits_in_the_inbox_until_the_person_signs_in() -> anyhow::Result<()>
{
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    let b = Bosun::new("gateway_step_up").with_test_browser();
    let (id, mut c, _fake, call, item) = a_call_that_waits_for_a_wider_sign_in(&b, &oauth)?;
    let mut seen = tokens(&b);

    // The person signs in (the test browser approves at once): the call goes on, once.
    b.ok(&["mcp", "sign-in", "remote"])?;
    let answer = c.answer(call, Duration::from_secs(30))?;
    assert!(
        text_of(&answer).contains("scope=mcp:read mcp:write"),
        "the call ran with the wider sign-in: {answer}"
    );
    assert_eq!(calls_run(&oauth), 1, "the call ran once");
    // The item is settled, once.
    assert!(sign_in_items(&b)?.is_empty());
    let all = b.json(&["inbox", "--all"])?;
    let settled: Vec<&Value> = all
        .as_array()
        .map(|a| a.iter().filter(|i| i["id"] == item["id"]).collect())
        .unwrap_or_default();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0]["state"], "allowed", "{all}");
    let refused = b.output(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
    assert!(!refused.status.success(), "answered once");

    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    seen.extend(tokens(&b));
    for t in &seen {
        b.assert_secret_nowhere(t)?;
    }
    b.finish()
}

#[test]
fn a_dismissed_sign_in_fails_the_call_saying_so_and_the_run_goes_on() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    let b = Bosun::new("gateway_step_up_dismissed").with_test_browser();
    let (id, mut c, _fake, call, item) = a_call_that_waits_for_a_wider_sign_in(&b, &oauth)?;
    // Allowed before any sign-in: refused, saying to sign in first; it still waits.
    let early = b.output(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
    assert!(
        !early.status.success()
            && String::from_utf8_lossy(&early.stderr)
                .contains("sign in with `bosun mcp sign-in remote`"),
        "{}",
        String::from_utf8_lossy(&early.stderr)
    );
    assert_eq!(sign_in_items(&b)?.len(), 1);

    b.ok(&["deny", item["short_id"].as_str().unwrap_or_default()])?;
    let answer = c.answer(call, Duration::from_secs(30))?;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "the MCP server `remote` needs a new sign-in and the person dismissed it; the call was not run"
        ),
        "{answer}"
    );
    assert!(
        !oauth
            .requests_to("/mcp")
            .iter()
            .any(|r| r["rpc"] == "tools/call" && r["status"] == 200),
        "never run"
    );
    assert!(sign_in_items(&b)?.is_empty());
    // The run goes on.
    assert_eq!(b.show(&id)?["state"], "running");
    let log = log_text(&b, &id);
    assert!(log.contains("the person dismissed it"), "{log}");
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    for t in tokens(&b) {
        b.assert_secret_nowhere(&t)?;
    }
    b.finish()
}

#[test]
fn the_web_ui_s_sign_in_button_on_the_item_signs_in_and_the_call_goes_on() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    let b = Bosun::new("gateway_step_up_web").with_test_browser();
    let (id, mut c, _fake, call, _item) = a_call_that_waits_for_a_wider_sign_in(&b, &oauth)?;
    let ui = Ui::start(&b)?;
    let seen = bosun_tests::browser_scenario(&ui.login, "signinitem", &[])?;
    let shown = seen["shown"].as_str().unwrap_or_default();
    assert!(
        shown.contains("server remote needs a new sign-in (scope mcp:read mcp:write)"),
        "{seen:#}"
    );
    assert_eq!(seen["buttons"], json!(["Sign in", "Dismiss"]), "{seen:#}");
    assert_eq!(
        seen["popups"], 1,
        "the provider's page opened once: {seen:#}"
    );
    let answer = c.answer(call, Duration::from_secs(30))?;
    assert!(
        text_of(&answer).contains("scope=mcp:read mcp:write"),
        "the call ran with the wider sign-in: {answer}"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.ok(&["ui", "--stop"])?;
    b.finish()
}

#[test]
fn a_server_that_moved_to_another_authorization_server_mid_run_waits_for_the_new_sign_in()
-> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2"])?;
    let b = Bosun::new("gateway_moved_as").with_test_browser();
    let (id, mut c, _fake) = a_run_on(&b, &oauth)?;
    // The resource now takes only the second authorization server's tokens: bosun's refresh at
    // the first gives a token it refuses too, and only a new sign-in (there) helps.
    oauth.control("switch-as")?;
    let call = 200;
    c.send(
        &json!({"jsonrpc": "2.0", "id": call, "method": "tools/call",
                   "params": {"name": "whoami", "arguments": {}}}),
    )?;
    let item = wait_for(
        "a sign-in item in the inbox",
        Duration::from_secs(30),
        || Ok(sign_in_items(&b)?.into_iter().next()),
    )?;
    assert!(
        item["preview"]
            .as_str()
            .is_some_and(|p| p.contains("server remote needs a new sign-in")),
        "{item}"
    );
    b.ok(&["mcp", "sign-in", "remote"])?;
    let answer = c.answer(call, Duration::from_secs(30))?;
    assert!(
        text_of(&answer).contains("token="),
        "the call ran: {answer}"
    );
    assert_eq!(calls_run(&oauth), 1, "the call ran once");
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

#[test]
fn a_sign_in_item_outlives_a_sigkill_of_bosund_and_the_call_goes_on_once_signed_in()
-> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    let b = Bosun::new("gateway_step_up_restart").with_test_browser();
    let (id, mut c, _fake, call, item) = a_call_that_waits_for_a_wider_sign_in(&b, &oauth)?;
    b.kill_daemon()?;
    // bosund back (started by the next command): the same item still waits, and the runner,
    // linked again, still waits for it.
    let again = wait_for("the item again", Duration::from_secs(30), || {
        Ok(sign_in_items(&b)?.into_iter().next())
    })?;
    assert_eq!(again["id"], item["id"]);
    // Allowed before any sign-in: still refused (bosun holds the token the server refused).
    let early = b.output(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
    assert!(!early.status.success());
    b.ok(&["mcp", "sign-in", "remote"])?;
    let answer = c.answer(call, Duration::from_secs(30))?;
    assert!(
        text_of(&answer).contains("scope=mcp:read mcp:write"),
        "{answer}"
    );
    assert_eq!(calls_run(&oauth), 1, "the call ran once");
    assert!(sign_in_items(&b)?.is_empty());
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

/// How many `tools/call` requests the server accepted and ran.
fn calls_run(oauth: &OAuthServer) -> usize {
    oauth
        .requests_to("/mcp")
        .iter()
        .filter(|r| r["rpc"] == "tools/call" && r["status"] == 200)
        .count()
}
