//! Requests of the 2026-07-28 revision beyond the plain ones, against `oauth-server
//! --stateless`: an argument marked `x-mcp-header` travels as its `Mcp-Param-*` header too
//! (and not at all when absent), a tool whose `x-mcp-header` is malformed is set aside with
//! what is wrong while the others work, and a multi round-trip request (`input_required`) is
//! asked again with its `requestState` echoed unchanged and a new JSON-RPC id.

use bosun_tests::{Bosun, OAuthServer, keychain_values};
use serde_json::Value;

fn signed_in(test: &str, flags: &[&str]) -> anyhow::Result<(Bosun, OAuthServer)> {
    let b = Bosun::new(test).with_test_browser();
    let mut all = vec!["--stateless"];
    all.extend_from_slice(flags);
    let oauth = OAuthServer::start(&all)?;
    b.ok(&[
        "mcp",
        "add",
        "modern",
        "--transport",
        "http",
        &oauth.mcp_url(),
    ])?;
    let signed = b.json(&["mcp", "sign-in", "modern"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    Ok((b, oauth))
}

#[test]
fn x_mcp_header_arguments_travel_as_headers_and_a_malformed_one_is_set_aside() -> anyhow::Result<()>
{
    let (b, oauth) = signed_in("mcp_param_headers", &["--header-tools"])?;
    let listing = b.json(&["mcp", "tools", "modern"])?;
    let names: Vec<&str> = listing["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["whoami", "regional"], "{listing:#}");
    assert_eq!(
        listing["tools"][1]["input_schema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    assert_eq!(listing["malformed"][0]["name"], "bad-header", "{listing:#}");
    assert!(
        listing["malformed"][0]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("x-mcp-header") && p.contains("not a token")),
        "{listing:#}"
    );

    let call = b.json(&[
        "mcp",
        "call",
        "modern",
        "regional",
        "--args",
        r#"{"region":"eu-west-1","note":null}"#,
    ])?;
    assert_eq!(call["content"][0]["text"], "region=eu-west-1", "{call}");
    // Absent: no header at all.
    let call = b.json(&["mcp", "call", "modern", "regional", "--args", "{}"])?;
    assert_eq!(call["content"][0]["text"], "region=absent", "{call}");
    let regions: Vec<Value> = oauth
        .requests_to("/mcp")
        .iter()
        .filter(|r| r["rpc"] == "tools/call")
        .map(|r| r["param_region"].clone())
        .collect();
    assert_eq!(regions, [Value::from("eu-west-1"), Value::Null]);

    // The malformed one is not called.
    let err = b.fails(&[
        "mcp",
        "call",
        "modern",
        "bad-header",
        "--args",
        r#"{"x":"1"}"#,
    ])?;
    assert!(
        err.contains("the server's definition of the tool `bad-header` is malformed")
            && err.contains("its other tools work"),
        "{err}"
    );
    let inspect = b.json(&["mcp", "inspect", "modern"])?;
    assert_eq!(inspect["tools"], 2);
    assert_eq!(inspect["malformed"][0]["name"], "bad-header");
    // No token anywhere but the keychain: not in the headers' echo, the logs, the store.
    let tokens: Vec<String> = keychain_values(&b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .collect();
    assert!(!tokens.is_empty());
    for t in &tokens {
        b.assert_secret_nowhere(t)?;
    }
    b.finish()
}

#[test]
fn an_input_required_answer_is_asked_again_with_its_state_and_a_new_id() -> anyhow::Result<()> {
    let (b, oauth) = signed_in("mcp_input_required", &["--input-required"])?;
    let call = b.json(&["mcp", "call", "modern", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call}"
    );
    let calls: Vec<Value> = oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| r["rpc"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["request_state"], Value::Null);
    let echoed = calls[1]["request_state"].as_str().unwrap_or_default();
    assert!(
        echoed.starts_with("opaque+/="),
        "echoed unchanged: {echoed}"
    );
    assert_ne!(calls[0]["rpc_id"], calls[1]["rpc_id"], "a new JSON-RPC id");
    assert_eq!(calls[1]["status"], 200);
    b.finish()
}
