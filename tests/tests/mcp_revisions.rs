//! The MCP revision bosun speaks, chosen by what the server answers: the stateless 2026-07-28
//! with a server of that revision only (`oauth-server --stateless`, which refuses a request
//! without the revision's headers as real ones do), the 2025-11-25 handshake with one that
//! answers `server/discover` as an older server does — never a mix — and `bosun mcp inspect`
//! saying which and why.

use std::io::{Read as _, Write as _};

use bosun_tests::{Bosun, OAuthServer, keychain_values};
use serde_json::Value;

/// POSTs `body` to `<base>/mcp` with `headers`; the whole answer, head and body.
fn post(base: &str, headers: &[&str], body: &str) -> anyhow::Result<String> {
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr)?;
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    write!(stream, "{head}\r\n{body}")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

fn bosun(test: &str) -> Bosun {
    Bosun::new(test).with_test_browser()
}

#[test]
fn a_stateless_server_is_spoken_to_in_its_own_revision() -> anyhow::Result<()> {
    let b = bosun("mcp_revision_stateless");
    let oauth = OAuthServer::start(&["--stateless"])?;
    b.ok(&[
        "mcp",
        "add",
        "modern",
        "--transport",
        "http",
        &oauth.mcp_url(),
    ])?;
    // Its challenge is heard on server/discover, and the sign-in follows it.
    let err = b.fails(&["mcp", "tools", "modern"])?;
    assert!(
        err.contains("the server needs sign-in: it answered 401 Unauthorized")
            && err.contains("sign in with `bosun mcp sign-in modern`"),
        "{err}"
    );
    let signed = b.json(&["mcp", "sign-in", "modern"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");

    let listing = b.json(&["mcp", "tools", "modern"])?;
    assert_eq!(listing["tools"][0]["name"], "whoami", "{listing:#}");
    let call = b.json(&["mcp", "call", "modern", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call}"
    );
    let inspect = b.json(&["mcp", "inspect", "modern"])?;
    assert_eq!(inspect["protocol_version"], "2026-07-28", "{inspect:#}");
    assert_eq!(inspect["server_name"], "oauth-test-server", "{inspect:#}");
    assert_eq!(inspect["tools"], 1);
    let revision = &inspect["revision"];
    assert_eq!(revision["version"], "2026-07-28");
    assert_eq!(revision["stateless"], true);
    assert_eq!(
        revision["why"],
        "it answered server/discover, naming 2026-07-28; so bosun speaks 2026-07-28 to it, without a session"
    );
    let shown = b.output(&["mcp", "inspect", "modern"])?;
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("revision          2026-07-28 (stateless): it answered server/discover"),
        "{shown}"
    );

    // Every request bosun made with its token was of the revision: the headers and `_meta`
    // on each, no handshake, no session, nothing refused.
    let signed_in: Vec<Value> = oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| !r["bearer_sha"].is_null())
        .collect();
    assert!(!signed_in.is_empty());
    for r in &signed_in {
        assert_eq!(r["method"], "POST", "{r}");
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["version_header"], "2026-07-28", "{r}");
        assert_eq!(r["meta_version"], "2026-07-28", "{r}");
        assert_eq!(r["meta_client"], "bosun", "{r}");
        assert_eq!(r["method_header"], r["rpc"], "{r}");
        assert_ne!(r["rpc"], "initialize", "{r}");
    }
    // What an older client meets there: its handshake refused for want of the headers, as the
    // servers seen in the wild do, and the handshake with them answered as a plain result.
    let token = keychain_values(&b)
        .iter()
        .find(|(k, _)| k.ends_with("/oauth/access"))
        .and_then(|(_, v)| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let auth = format!("Authorization: Bearer {token}");
    let answer = post(oauth.base(), &[&auth], initialize)?;
    assert!(
        answer.starts_with("HTTP/1.1 400")
            && answer.contains(r#""code":-32020,"message":"Missing MCP-Protocol-Version header""#),
        "{answer}"
    );
    let modern = r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let answer = post(
        oauth.base(),
        &[
            &auth,
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: initialize",
        ],
        modern,
    )?;
    assert!(
        answer.starts_with("HTTP/1.1 200")
            && answer.ends_with(r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete"}}"#),
        "{answer}"
    );

    let calls: Vec<&Value> = signed_in
        .iter()
        .filter(|r| r["rpc"] == "tools/call")
        .collect();
    assert!(
        !calls.is_empty() && calls.iter().all(|r| r["name_header"] == "whoami"),
        "{calls:#?}"
    );
    b.finish()
}

#[test]
fn an_older_server_gets_the_handshake_and_inspect_says_why() -> anyhow::Result<()> {
    let b = bosun("mcp_revision_legacy");
    let oauth = OAuthServer::start(&[])?;
    oauth.add_signed_in(&b, "older")?;
    let inspect = b.json(&["mcp", "inspect", "older"])?;
    assert_eq!(inspect["protocol_version"], "2025-11-25", "{inspect:#}");
    let revision = &inspect["revision"];
    assert_eq!(revision["stateless"], false);
    assert_eq!(
        revision["why"],
        "it answered server/discover with error -32601 (Method not found), as a server of the older revisions does; so bosun used the initialize handshake of 2025-11-25, and it answered with 2025-11-25"
    );
    b.json(&["mcp", "tools", "older"])?;
    b.json(&["mcp", "call", "older", "whoami"])?;
    // After the refused discover, the handshake and nothing of the stateless revision.
    let signed_in: Vec<Value> = oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| !r["bearer_sha"].is_null() && r["method"] == "POST")
        .collect();
    let looks = signed_in
        .iter()
        .filter(|r| r["rpc"] == "server/discover")
        .count();
    let handshakes = signed_in
        .iter()
        .filter(|r| r["rpc"] == "initialize")
        .count();
    assert_eq!(looks, 3, "{signed_in:#?}");
    assert_eq!(handshakes, 3, "{signed_in:#?}");
    b.finish()
}
