//! List tools, inspect and call against real MCP servers: `@modelcontextprotocol/server-everything`
//! from npm over stdio, Streamable HTTP and SSE, and the project's own test server for what it
//! does not do (pagination, missing annotations, hanging, exiting, 401, not MCP at all).

use bosun_tests::{Bosun, Peer, everything_bin, test_server_bin};
use serde_json::Value;

fn tool<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .unwrap_or(&Value::Null)
}

fn check_everything(b: &Bosun, name: &str) -> anyhow::Result<()> {
    let listing = b.json(&["mcp", "tools", name])?;
    let tools = listing["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        tools.len(),
        13,
        "server-everything offers 13 tools to a client without capabilities"
    );
    for t in &tools {
        assert_eq!(
            t["assessment"]["sent"].as_array().map(Vec::len),
            Some(4),
            "every hint is sent: {t}"
        );
        assert_eq!(
            t["full_name"],
            format!("mcp__{name}__{}", t["name"].as_str().unwrap_or_default())
        );
    }
    let echo = tool(&listing, "echo");
    assert_eq!(echo["title"], "Echo Tool");
    assert_eq!(
        echo["hints"],
        serde_json::json!({"read_only": true, "destructive": false, "idempotent": true, "open_world": false})
    );
    assert_eq!(echo["assessment"]["risk"], "low");
    assert_eq!(
        echo["params"][0],
        serde_json::json!({"name": "message", "type": "string", "required": true, "description": "Message to echo"})
    );
    let gzip = tool(&listing, "gzip-file-as-resource");
    assert_eq!(
        gzip["assessment"]["risk"], "medium",
        "changes things, never deletes, reaches outside"
    );
    assert!(
        gzip["assessment"]["words"]
            .as_array()
            .is_some_and(|w| w.contains(&Value::from("reaches outside services")))
    );
    let logging = tool(&listing, "toggle-simulated-logging");
    assert_eq!(logging["assessment"]["risk"], "medium");

    let call = b.json(&[
        "mcp",
        "call",
        name,
        "echo",
        "--args",
        r#"{"message":"hello from bosun"}"#,
    ])?;
    assert_eq!(call["is_error"], false);
    assert_eq!(call["content"][0]["text"], "Echo: hello from bosun");
    let text = b.ok(&[
        "mcp",
        "call",
        name,
        "get-sum",
        "--args",
        r#"{"a": 2, "b": 3}"#,
    ])?;
    assert!(text.contains("The sum of 2 and 3 is 5"), "{text}");

    // The listing is kept, with its time.
    let shown = b.json(&["mcp", "show", name])?;
    assert_eq!(shown["tool_count"], 13);
    assert!(shown["listed_at"].is_u64());
    let cached = b.json(&["mcp", "tools", name, "--cached"])?;
    assert_eq!(cached["tools"].as_array().map(Vec::len), Some(13));
    Ok(())
}

#[test]
fn server_everything_over_stdio() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_everything_stdio");
    let bin = everything_bin();
    b.ok(&[
        "mcp",
        "add",
        "everything",
        "--",
        bin.to_str().unwrap_or_default(),
        "stdio",
    ])?;
    check_everything(&b, "everything")?;
    let inspect = b.json(&["mcp", "inspect", "everything"])?;
    assert_eq!(inspect["server_name"], "mcp-servers/everything");
    assert_eq!(inspect["protocol_version"], "2025-11-25");
    assert_eq!(
        (
            inspect["tools"].as_u64(),
            inspect["prompts"].as_u64(),
            inspect["resources"].as_u64()
        ),
        (Some(13), Some(4), Some(7))
    );
    assert!(inspect["capabilities"]["tools"].is_object());
    check_handshake_revision(&inspect);
    b.finish()
}

/// server-everything speaks only the revisions with a handshake: bosun asked it for
/// `server/discover` first, heard a refusal, and used the 2025-11-25 handshake.
fn check_handshake_revision(inspect: &Value) {
    let revision = &inspect["revision"];
    assert_eq!(revision["version"], "2025-11-25", "{inspect:#}");
    assert_eq!(revision["stateless"], false, "{inspect:#}");
    let why = revision["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("it answered server/discover with error ")
            && why.ends_with(
                "so bosun used the initialize handshake of 2025-11-25, and it answered with 2025-11-25"
            ),
        "{why}"
    );
}

#[test]
fn server_everything_over_streamable_http() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_everything_http");
    let peer = Peer::everything("streamableHttp")?;
    b.ok(&["mcp", "add", "everything", "--transport", "http", &peer.url])?;
    check_everything(&b, "everything")?;
    let inspect = b.json(&["mcp", "inspect", "everything"])?;
    assert_eq!(inspect["protocol_version"], "2025-11-25", "{inspect:#}");
    check_handshake_revision(&inspect);
    b.finish()
}

#[test]
fn server_everything_over_legacy_sse() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_everything_sse");
    let peer = Peer::everything("sse")?;
    b.ok(&["mcp", "add", "everything", "--transport", "sse", &peer.url])?;
    check_everything(&b, "everything")?;
    b.finish()
}

fn add_test_server(b: &Bosun, name: &str, mode: &str) -> anyhow::Result<()> {
    let bin = test_server_bin();
    b.ok(&[
        "mcp",
        "add",
        name,
        "--",
        bin.to_str().unwrap_or_default(),
        "--mode",
        mode,
    ])?;
    Ok(())
}

#[test]
fn pages_are_followed_and_parameters_keep_the_servers_order() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_paged");
    add_test_server(&b, "paged", "paged")?;
    let listing = b.json(&["mcp", "tools", "paged"])?;
    assert_eq!(listing["pages"], 3);
    assert_eq!(listing["tools"].as_array().map(Vec::len), Some(13));
    let t = tool(&listing, "tool-05");
    let params: Vec<&str> = t["params"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        params,
        ["zeta", "alpha", "mid"],
        "the server's order, not sorted"
    );
    assert_eq!(t["params"][0]["required"], true);
    assert_eq!(t["params"][1]["required"], false);
    assert!(listing["truncated"].is_null());
    b.finish()
}

#[test]
fn a_tool_without_annotations_gets_the_specs_defaults_marked_as_such() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_no_annotations");
    add_test_server(&b, "bare", "no-annotations")?;
    let listing = b.json(&["mcp", "tools", "bare"])?;
    let bare = tool(&listing, "bare");
    assert_eq!(bare["assessment"]["sent"], serde_json::json!([]));
    assert_eq!(bare["assessment"]["risk"], "high");
    assert_eq!(
        bare["assessment"]["words"],
        serde_json::json!([
            "changes things",
            "may delete or overwrite",
            "not safe to repeat",
            "reaches outside services"
        ])
    );
    let partial = tool(&listing, "partial");
    assert_eq!(
        partial["assessment"]["sent"],
        serde_json::json!(["readOnlyHint=true"])
    );
    assert_eq!(partial["assessment"]["risk"], "medium");
    let text = b.ok(&["mcp", "tools", "bare"])?;
    assert!(
        text.contains("hints: none sent; the MCP spec's defaults apply"),
        "{text}"
    );
    assert!(
        text.contains("hints sent: readOnlyHint=true; the others are the spec's defaults"),
        "{text}"
    );
    b.finish()
}

#[test]
fn endless_and_looping_cursors_are_bounded() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_cursors");
    add_test_server(&b, "endless", "endless")?;
    add_test_server(&b, "looping", "repeat-cursor")?;
    let endless = b.json(&["mcp", "tools", "endless"])?;
    assert_eq!(endless["pages"], 100);
    assert!(
        endless["truncated"]
            .as_str()
            .is_some_and(|t| t.contains("stopped after 100 pages"))
    );
    let looping = b.json(&["mcp", "tools", "looping"])?;
    assert!(
        looping["truncated"]
            .as_str()
            .is_some_and(|t| t.contains("sent the cursor `same` twice")),
        "{looping}"
    );
    b.finish()
}

#[test]
fn failures_are_told_in_plain_words() -> anyhow::Result<()> {
    let secret = "canary-stderr-4411";
    let b = Bosun::new("mcp_failures").with_env("BOSUN_MCP_TIMEOUT", "3s");
    let bin = test_server_bin();
    let bin = bin.to_str().unwrap_or_default();
    b.ok(&["mcp", "add", "missing", "--", "/no/such/mcp-server"])?;
    b.ok(&["mcp", "add", "hangs", "--", bin, "--mode", "hang"])?;
    b.ok(&["mcp", "add", "notmcp", "--", bin, "--mode", "not-mcp"])?;
    b.output_with_stdin(
        &[
            "mcp",
            "add",
            "exits",
            "--env-from-stdin",
            "--",
            bin,
            "--mode",
            "exit",
        ],
        &format!("TEST_SECRET={secret}\n"),
    )?;
    let unauthorized = Peer::test_server("unauthorized")?;
    let html = Peer::test_server("not-mcp")?;
    b.ok(&["mcp", "add", "locked", "--url", &unauthorized.url])?;
    b.ok(&["mcp", "add", "webpage", "--url", &html.url])?;
    b.ok(&[
        "mcp",
        "add",
        "refused",
        "--url",
        &format!("http://127.0.0.1:{}/mcp", bosun_tests::free_port()?),
    ])?;
    b.ok(&[
        "mcp",
        "add",
        "badtls",
        "--url",
        &format!(
            "https://127.0.0.1:{}/mcp",
            html.url
                .split(':')
                .nth(2)
                .and_then(|p| p.split('/').next())
                .unwrap_or("1")
        ),
    ])?;

    let cases: &[(&str, &str)] = &[
        ("missing", "the command `/no/such/mcp-server` was not found"),
        ("hangs", "the server did not answer within 3s"),
        (
            "notmcp",
            "is not an MCP server: it wrote `hello, I am not an MCP server` on stdout",
        ),
        (
            "exits",
            "the server exited with status 3 before it answered; the last lines it wrote on stderr:",
        ),
        (
            "locked",
            "needs sign-in: it answered 401 Unauthorized (WWW-Authenticate: Bearer resource_metadata=",
        ),
        (
            "webpage",
            "is not an MCP server: it answered with text/html",
        ),
        (
            "refused",
            "refused the connection; is the server running there?",
        ),
        ("badtls", "could not make a secure (TLS) connection"),
    ];
    for (server, want) in cases {
        let err = b.fails(&["mcp", "tools", server])?;
        assert!(
            err.contains(&format!("could not list the tools of `{server}`")),
            "{err}"
        );
        assert!(err.contains(want), "{server}: {err}\nexpected: {want}");
    }
    let exits = b.fails(&["mcp", "tools", "exits"])?;
    assert!(exits.contains("line 30 of stderr"), "{exits}");
    assert!(
        exits.contains("using token [redacted]"),
        "the secret is redacted from stderr: {exits}"
    );
    // The failure is kept on the server, for `bosun mcp list`.
    let listed = b.ok(&["mcp", "list"])?;
    assert!(
        listed.contains("last look failed: the command `/no/such/mcp-server` was not found"),
        "{listed}"
    );
    b.assert_secret_nowhere(secret)?;
    b.finish()
}

/// Issue 44: a 50 MB tool result over stdio failed after 30 s with "the server did not answer
/// within 30s", though the server had answered in a fraction of a second: the answer was over
/// the 16 MiB bosun's MCP client reads of one message, dropped without a word, and the call
/// waited for an answer that would not come. Too large is now said as such at once, with the
/// size and the limit and what to do; a result that fits in bosund's answer to the command
/// comes whole, and one that fits the MCP client but not that answer (4 MiB) is refused in
/// words, with the session and the server's next call going on.
#[test]
fn a_tool_result_too_large_is_refused_at_once_as_too_large_and_one_that_fits_comes_whole()
-> anyhow::Result<()> {
    let b = Bosun::new("mcp_big_result");
    add_test_server(&b, "big", "big")?;
    let call = |bytes: u64| {
        let args = format!("{{\"bytes\": {bytes}}}");
        let started = std::time::Instant::now();
        let out = b.output(&["mcp", "call", "big", "big", "--args", &args, "--json"]);
        (out, started.elapsed())
    };

    let (out, _) = call(1_000_000);
    let out = out?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fits: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        fits["content"][0]["text"].as_str().map(str::len),
        Some(1_000_000),
        "a result that fits comes whole"
    );

    let (out, took) = call(50_000_000);
    let err = String::from_utf8_lossy(&out?.stderr).to_string();
    assert!(
        took < std::time::Duration::from_secs(15),
        "refused at once, not after the 30 s deadline: {took:?}: {err}"
    );
    assert!(!err.contains("did not answer"), "{err}");
    assert!(err.contains("the server's answer is 500000"), "{err}");
    assert!(
        err.contains("bytes, more than the 16 MiB bosun reads of one message from an MCP server"),
        "{err}"
    );
    assert!(err.contains("ask for less"), "{err}");

    // Within the MCP client's limit, over what one answer of bosund to this command can carry.
    let (out, took) = call(6_000_000);
    let err = String::from_utf8_lossy(&out?.stderr).to_string();
    assert!(took < std::time::Duration::from_secs(15), "{took:?}: {err}");
    assert!(
        err.contains("could not call `big` on `big`: its result is 6000"),
        "said as too large, with its size: {err}"
    );
    assert!(err.contains("more than the 4 MiB"), "{err}");
    assert!(err.contains("ask for less"), "{err}");

    let echo = b.json(&[
        "mcp",
        "call",
        "big",
        "echo",
        "--args",
        r#"{"message":"still here"}"#,
    ])?;
    assert_eq!(echo["content"][0]["text"], "Echo: still here");

    // Over Streamable HTTP the client reads at most 16 MiB of a response's body too: said as
    // too large, not as the server breaking the protocol.
    let http = Peer::test_server("big")?;
    b.ok(&["mcp", "add", "bighttp", "--url", &http.url])?;
    let out = b.output(&[
        "mcp",
        "call",
        "bighttp",
        "big",
        "--args",
        r#"{"bytes": 20000000}"#,
    ])?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains(
            "could not call `big` on `bighttp`: the server's answer is more than the 16 MiB bosun reads of one message from an MCP server; ask for less"
        ),
        "{err}"
    );
    b.finish()
}
