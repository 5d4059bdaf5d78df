//! bosun's MCP gateway for servers of the older HTTP+SSE transport (MCP 2024-11-05), end to
//! end: a run of the real Claude Code against its fake model API reaches the server only
//! through the run's runner and bosun's bridge (`bosun-mcp-http`), which speaks SSE to it —
//! the real `@modelcontextprotocol/server-everything` in its `sse` mode, and the harness's
//! `test-mcp-server --transport sse` in its `echo-secrets` mode, which gives back the header
//! line and address query it was reached with. The server's rules hold as for any other
//! server, its secrets reach it but not the CLI, and a stream that ends is a server that
//! ended: started again at the next call.

use std::time::{Duration, Instant};

use bosun_tests::gateway_client::{GatewayClient as Client, text_of};
use bosun_tests::{Bosun, FakeModel, OAuthServer, Peer, keychain_values};
use serde_json::{Value, json};

/// The harness's Claude key (`Bosun::add_claude_agent`).
const API_KEY: &str = "sk-ant-test-77c1e0d9a4";

/// bosun's own lines of a run's log (`bosun logs` prints them on stderr).
fn log_text(b: &Bosun, id: &str) -> String {
    b.output(&["logs", id])
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

/// Waits until the run's log says `want`; the log.
fn wait_log(b: &Bosun, id: &str, want: &str) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = log_text(b, id);
        if log.contains(want) {
            return Ok(log);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the run's log did not say {want:?} within 30 s: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Adds the server at `url` (HTTP+SSE) as `name` with the header line `X-Api-Key: key`.
fn add_sse(b: &Bosun, name: &str, url: &str, key: &str) -> anyhow::Result<()> {
    let out = b.output_with_stdin(
        &[
            "mcp",
            "add",
            name,
            "--transport",
            "sse",
            "--url",
            url,
            "--env-from-stdin",
        ],
        &format!("X-Api-Key: {key}\n"),
    )?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The CLI of the run `id` (alive) holds none of `secrets`, in its environment or command line,
/// and its MCP configuration names bosun's gateway, not the server at `url`.
fn cli_holds_none(b: &Bosun, id: &str, url: &str, secrets: &[&str]) -> anyhow::Result<()> {
    let config = std::fs::read_to_string(b.home.join("runs").join(id).join("mcp.json"))?;
    assert!(
        config.contains("gateway.sock") && !config.contains(url) && !config.contains("\"sse\""),
        "{config}"
    );
    let pid = b.show(id)?["pid"].as_i64().unwrap_or_default() as i32;
    for what in ["environ", "cmdline"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{what}"))?;
        let text = String::from_utf8_lossy(&bytes);
        for s in secrets {
            assert!(
                !text.contains(s),
                "the CLI's {what} holds no secret of the server"
            );
            assert!(
                !config.contains(s),
                "the run's MCP configuration holds none"
            );
        }
    }
    Ok(())
}

#[test]
fn a_server_of_the_older_sse_transport_is_reached_through_the_gateway_under_its_rules()
-> anyhow::Result<()> {
    const HEADER: &str = "canary-sse-hdr-5b7c";
    const QUERY: &str = "canary-sse-q-2f9a";
    let b = Bosun::new("gateway_sse_everything");
    let peer = Peer::everything("sse")?;
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:echo:{"message":"ping"};tool:everything/get-sum:{"a":1,"b":2};hold"#,
    )?;
    let url = format!("{}?key={QUERY}", peer.url);
    add_sse(&b, "everything", &url, HEADER)?;
    // bosun's own look over SSE, which the gateway then pins the tools to; and the rules the
    // registry once refused for an SSE server.
    let tools = b.ok(&["mcp", "tools", "everything"])?;
    assert!(
        tools.contains("echo") && tools.contains("get-sum"),
        "{tools}"
    );
    b.ok(&[
        "mcp",
        "edit",
        "everything",
        "--deny-tool",
        "get-sum",
        "--deny-tool",
        "trigger-*",
    ])?;
    let shown = b.ok(&["mcp", "show", "everything"])?;
    assert!(
        shown.contains("deny tools  get-sum, trigger-*") && shown.contains("untrusted"),
        "{shown}"
    );
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;

    let run = b.json(&["agent", "run", "coder", "echo ping, then add"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    let turns = fake.wait_turns(3, Duration::from_secs(90))?;
    let offered = bosun_tests::strings(&turns[0]["tools"]);
    assert!(
        offered.contains(&"mcp__everything__echo".to_string()),
        "{offered:?}"
    );
    for held in ["get-sum", "trigger-long-running-operation"] {
        assert!(
            !offered.iter().any(|t| t.ends_with(held)),
            "the denied tool {held} is not offered: {offered:?}"
        );
    }
    // The call passed through the gateway and the bridge to the server, and back.
    let echo = turns[1]["tool_result"].as_str().unwrap_or_default();
    assert!(
        echo.contains("Echo: ping")
            && echo.starts_with("[untrusted content from the MCP server `everything`"),
        "the result of an untrusted server is framed: {echo}"
    );
    let refused = turns[2]["tool_result"].as_str().unwrap_or_default();
    assert!(
        !refused.contains("\"3\"") && !refused.contains("is 3"),
        "the denied call did not run: {refused}"
    );
    cli_holds_none(&b, &id, &peer.url, &[HEADER, QUERY])?;
    let log = log_text(&b, &id);
    assert!(
        log.contains(r#"mcp everything/echo {"message":"ping"}: answered in"#),
        "the call is in the run's log: {log}"
    );
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    for s in [HEADER, QUERY, API_KEY] {
        b.assert_secret_nowhere(s)?;
    }
    b.finish()
}

#[test]
fn an_sse_server_gets_its_secrets_from_the_runner_only_and_its_stream_s_end_is_a_restart()
-> anyhow::Result<()> {
    const CANARY: &str = "canary-gw-sse-63d1";
    let b = Bosun::new("gateway_sse_secrets");
    let peer = Peer::test_server_over("sse", "echo-secrets")?;
    let fake = FakeModel::start("anthropic", "tool:reveal;hold")?;
    let url = format!("{}?key={CANARY}&team=blue", peer.url);
    add_sse(&b, "remote", &url, CANARY)?;
    b.ok(&["mcp", "tools", "remote"])?;
    b.ok(&["mcp", "edit", "remote", "--trusted"])?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;

    let run = b.json(&["agent", "run", "coder", "say what you were given"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(2, Duration::from_secs(60))?;
    // The runner's bridge opened the stream at the whole address and POSTed with the header
    // line: the server's answer, as the model got it (trusted: not framed), holds both.
    let result = fake.turns()[1]["tool_result"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        result.contains(&format!("{CANARY} key={CANARY}&team=blue"))
            && !result.contains("[untrusted content"),
        "{result}"
    );
    cli_holds_none(&b, &id, &peer.url, &[CANARY])?;

    // A second client dials the run's gateway as the CLI does. The server ends every event
    // stream (as a server that restarted): the bridge ends with it, and the next call starts
    // it again, opens a new stream, initializes it and is answered.
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "remote")?;
    c.initialize()?;
    let one = c.call("reveal", json!({}), Duration::from_secs(30))?;
    assert!(text_of(&one).contains("key="), "{one}");
    let base = peer.url.trim_end_matches("/sse");
    let (status, _) = bosun_tests::oauth_cc::post_form(&format!("{base}/test/end-streams"), &[])?;
    assert_eq!(status, 204);
    let log = wait_log(&b, &id, "bosun's MCP gateway: remote ended")?;
    assert!(
        log.contains("the event stream of remote ended: the server closed it"),
        "{log}"
    );
    let two = c.call("reveal", json!({}), Duration::from_secs(30))?;
    assert!(text_of(&two).contains("key="), "{two}");
    let log = wait_log(
        &b,
        &id,
        "bosun's MCP gateway: remote was started again and initialized",
    )?;
    assert!(log.contains("mcp remote/reveal"), "{log}");
    drop(c);

    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn a_signed_in_sse_server_s_token_that_expires_mid_run_is_renewed_and_the_call_runs_once()
-> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--rotate", "--sse"])?;
    let b = Bosun::new("gateway_sse_token").with_test_browser();
    b.ok(&[
        "mcp",
        "add",
        "remote",
        "--transport",
        "sse",
        &oauth.mcp_url(),
    ])?;
    b.ok(&["mcp", "sign-in", "remote"])?;
    b.ok(&["mcp", "tools", "remote"])?;
    // Event streams opened, signed in (bosun's own look opened one).
    let streams = || {
        oauth
            .requests_to("/mcp")
            .into_iter()
            .filter(|r| r["method"] == "GET" && r["status"] == 200 && r["sse"] == true)
            .count()
    };
    let looked = streams();
    assert!(looked >= 1, "bosun's look reached it by SSE");
    let fake = FakeModel::start("anthropic", "hold")?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "remote")?;
    c.initialize()?;

    let first = c.call("whoami", json!({}), Duration::from_secs(30))?;
    let said = text_of(&first);
    assert!(said.contains("token="), "{first}");
    // The run's bridges (the CLI's and this client's) opened their event streams with the
    // run's token.
    assert!(streams() >= looked + 2, "{}", streams());

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
    // Its POST was refused once (401: it did not run), then taken once, its answer on the
    // stream.
    let after: Vec<Value> = oauth.requests_to("/mcp")[before..].to_vec();
    let ran: Vec<&Value> = after
        .iter()
        .filter(|r| r["rpc"] == "tools/call" && r["status"] == 202 && r["sse"] == true)
        .collect();
    assert_eq!(ran.len(), 1, "{after:#?}");
    assert!(after.iter().any(|r| r["status"] == 401), "{after:#?}");
    let log = log_text(&b, &id);
    assert!(
        log.contains("remote refused the run's token; asking bosund for its token anew")
            && log.contains("bosund gave the run its token anew"),
        "{log}"
    );

    drop(c);
    let tokens: Vec<String> = keychain_values(&b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .collect();
    assert!(!tokens.is_empty());
    let held: Vec<&str> = tokens.iter().map(String::as_str).collect();
    cli_holds_none(&b, &id, &oauth.mcp_url(), &held)?;
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    for t in &tokens {
        b.assert_secret_nowhere(t)?;
    }
    b.finish()
}
