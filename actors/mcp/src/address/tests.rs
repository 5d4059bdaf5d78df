//! The address rules, and a server an older bosun kept with its whole address in the store (its
//! move to the keychain at start is tested with the upgrade, in bosund).

use super::*;
use crate::record::{ServerRecord, connect_url};
use bosun_kit::keychain::Keychain;

fn refusal(text: &str, allow_http: bool) -> String {
    match check(text, allow_http) {
        Ok(a) => panic!("{text} was taken: {a:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn credentials_a_fragment_and_plain_http_elsewhere_are_refused_with_the_fix() {
    let e = refusal("http://ann:pa55word@example.com/mcp?key=k3y-value", true);
    assert!(e.contains("has a user name or password in it"), "{e}");
    assert!(e.contains("--header 'Authorization: Basic"), "{e}");
    assert!(e.contains("`http://…@example.com/mcp?…`"), "{e}");
    assert!(!e.contains("pa55word") && !e.contains("k3y-value"), "{e}");
    assert!(refusal("https://token@example.com/mcp", false).contains("user name or password"));

    let e = refusal("http://example.com/mcp?key=k3y-value", false);
    assert!(e.contains("is plain http:// to example.com"), "{e}");
    assert!(e.contains("--allow-http"), "{e}");
    assert!(!e.contains("k3y-value"), "{e}");
    assert!(refusal("http://10.0.0.7:8080/mcp", false).contains("to 10.0.0.7"));
    assert!(refusal("http://[fe80::1]/mcp", false).contains("plain http://"));
    assert!(check("http://example.com/mcp", true).is_ok());
    for here in [
        "http://127.0.0.1:9/mcp",
        "http://127.3.4.5/mcp",
        "http://localhost:3000/mcp",
        "http://LOCALHOST/mcp",
        "http://[::1]:8/mcp",
        "https://example.com/mcp",
    ] {
        assert!(check(here, false).is_ok(), "{here}");
    }

    let e = refusal("https://example.com/mcp#k3y-value", false);
    assert!(e.contains("#fragment") && !e.contains("k3y-value"), "{e}");
    let e = refusal("https://example.com/mcp?…", false);
    assert!(e.contains("how bosun shows a query it keeps hidden"), "{e}");
    assert!(refusal("https://example.com/mcp?%E2%80%A6", false).contains("keeps hidden"));
    let e = refusal("ftp://example.com/mcp?key=k3y-value", false);
    assert!(
        e.contains("`ftp://example.com/mcp?…` is a ftp address"),
        "{e}"
    );
    let e = refusal("not an address?key=k3y-value", false);
    assert!(e.contains("`not an address?…` is not an address"), "{e}");
}

#[test]
fn the_query_is_split_off_for_the_keychain() {
    assert_eq!(
        check("https://Example.com/mcp?key=a%20b&x=1", false).ok(),
        Some(Address {
            base: "https://example.com/mcp".into(),
            query: Some("key=a%20b&x=1".into()),
        })
    );
    assert_eq!(
        check("https://example.com/mcp?", false).ok(),
        Some(Address {
            base: "https://example.com/mcp".into(),
            query: None,
        })
    );
}

#[test]
fn an_address_is_shown_without_its_secrets() {
    assert_eq!(
        shown("https://example.com/mcp?key=abc"),
        "https://example.com/mcp?…"
    );
    assert_eq!(shown("https://example.com/mcp"), "https://example.com/mcp");
    assert_eq!(
        shown("https://u:p@example.com:8443/a/b?k=v#frag"),
        "https://…@example.com:8443/a/b?…#…"
    );
    assert_eq!(shown("nonsense://[bad?key=abc"), "nonsense://[bad?…");
    assert_eq!(shown("//u:p@host/x?y"), "//…@host/x?…");
    assert_eq!(
        base_of("https://example.com/mcp?key=abc"),
        "https://example.com/mcp"
    );
}

#[test]
fn headers_the_transport_writes_are_named_with_the_reason() {
    for name in [
        "Host",
        "content-length",
        "Transfer-Encoding",
        "Connection",
        "Content-Type",
        "Accept",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Mcp-Param-Owner",
        "Last-Event-ID",
        "DPoP",
    ] {
        assert!(owned_header(name).is_some(), "{name}");
    }
    for name in ["Authorization", "X-Api-Key", "User-Agent", "Cookie"] {
        assert_eq!(owned_header(name), None, "{name}");
    }
}

/// A server row as bosun wrote it before the query was a secret: the whole address in `url`.
const OLD_ROW: &str = r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaas2","name":"keyed","kind":"http","command":null,"args":[],"url":"https://mcp.example.com/mcp?api_key=old-layout-k3y","env_names":[],"header_names":["X-Team"],"created_at":1700000000000,"updated_at":1700000000001,"listing":null,"last_error":"could not reach https://mcp.example.com/mcp?api_key=old-layout-k3y: dns error","client_id":null,"callback_port":null,"sign_in_by":"bosun"}"#;

#[test]
fn plain_http_elsewhere_kept_by_an_older_bosun_is_refused_until_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let keychain = Keychain::file(dir.path().join("keychain.json"));
    let mut rec: ServerRecord = serde_json::from_str(&OLD_ROW.replace(
        "https://mcp.example.com/mcp?api_key=old-layout-k3y",
        "http://mcp.example.com/mcp",
    ))
    .unwrap();
    let e = connect_url(&keychain, &rec).unwrap_err().to_string();
    assert!(e.contains("bosun mcp edit keyed --allow-http"), "{e}");
    rec.allow_http = true;
    assert!(connect_url(&keychain, &rec).is_ok());
}
