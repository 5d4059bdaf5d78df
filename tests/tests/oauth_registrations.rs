//! bosun's registrations (RFC 7591) are kept per authorization server: later sign-ins to the
//! same issuer — after a sign-out, for a second server behind it, with the secret the server
//! issued — reuse the one registration, and a resource that moves to another authorization
//! server gets a registration there, never the old client id.

use bosun_tests::{Bosun, OAuthServer, keychain_values};
use serde_json::Value;

fn sign_in(b: &Bosun, name: &str) -> anyhow::Result<Value> {
    let signed = b.json(&["mcp", "sign-in", name])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    assert_eq!(signed["sign_in"]["registered"], true, "{signed:#}");
    let call = b.json(&["mcp", "call", name, "whoami"])?;
    let text = call["content"][0]["text"].as_str().unwrap_or_default();
    let client = signed["sign_in"]["client_id"].as_str().unwrap_or_default();
    assert!(text.starts_with(&format!("client={client} ")), "{text}");
    Ok(signed)
}

fn registrations(oauth: &OAuthServer) -> Vec<String> {
    oauth
        .requests()
        .iter()
        .filter(|r| {
            r["method"] == "POST" && r["path"].as_str().is_some_and(|p| p.ends_with("/register"))
        })
        .filter_map(|r| r["path"].as_str().map(str::to_string))
        .collect()
}

fn switch_as(oauth: &OAuthServer) -> anyhow::Result<()> {
    let (status, _) =
        bosun_tests::oauth_cc::post_form(&format!("{}/test/switch-as", oauth.base()), &[])?;
    anyhow::ensure!(status == 200, "switch-as answered {status}");
    Ok(())
}

#[test]
fn sign_ins_to_one_authorization_server_register_once() -> anyhow::Result<()> {
    // A confidential registration: the reused client must bring its secret along.
    let oauth = OAuthServer::start(&["--auth-method", "client_secret_basic"])?;
    let b = Bosun::new("oauth_reg_once").with_test_browser();
    for name in ["one", "two"] {
        b.ok(&["mcp", "add", name, "--transport", "http", &oauth.mcp_url()])?;
    }
    let first = sign_in(&b, "one")?;
    let client = first["sign_in"]["client_id"].clone();
    // Signed out and in again, and a second server behind the same authorization server.
    b.ok(&["mcp", "sign-out", "one"])?;
    assert_eq!(sign_in(&b, "one")?["sign_in"]["client_id"], client);
    assert_eq!(sign_in(&b, "two")?["sign_in"]["client_id"], client);
    assert_eq!(registrations(&oauth), ["/register"], "one registration");
    let tokens = oauth.requests_to("/token");
    assert!(
        tokens
            .iter()
            .all(|t| t["auth"] == "basic" && t["status"] == 200),
        "the kept secret authenticates: {tokens:#?}"
    );
    for v in keychain_values(&b).values().filter_map(Value::as_str) {
        b.assert_secret_nowhere(v)?;
    }
    b.finish()
}

#[test]
fn a_resource_that_moves_gets_a_registration_at_the_new_server_and_keeps_it() -> anyhow::Result<()>
{
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2"])?;
    let b = Bosun::new("oauth_reg_move").with_test_browser();
    oauth.add_to(&b)?;
    let first = sign_in(&b, "remote")?;
    switch_as(&oauth)?;
    let second = sign_in(&b, "remote")?;
    assert_eq!(second["sign_in"]["issuer"], format!("{}/t2", oauth.base()));
    assert_ne!(
        second["sign_in"]["client_id"],
        first["sign_in"]["client_id"]
    );
    let third = sign_in(&b, "remote")?;
    assert_eq!(
        third["sign_in"]["client_id"],
        second["sign_in"]["client_id"]
    );
    assert_eq!(registrations(&oauth), ["/register", "/t2/register"]);
    b.finish()
}
