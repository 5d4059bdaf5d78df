//! bosun's registrations (RFC 7591) are kept per authorization server: later sign-ins to the
//! same issuer — after a sign-out, for a second server behind it, with the secret the server
//! issued — reuse the one registration, and a resource that moves to another authorization
//! server gets a registration there, never the old client id. A registration the server has
//! forgotten is dropped when the server refuses it, and `--new-client` drops it by hand.

use std::time::Duration;

use bosun_tests::{Bosun, OAuthServer, keychain_values, wait_for};
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

/// Every value in the test's keychain.
fn secret_values(b: &Bosun) -> Vec<String> {
    keychain_values(b)
        .values()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
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
    for v in secret_values(&b) {
        b.assert_secret_nowhere(&v)?;
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
    oauth.control("switch-as")?;
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

#[test]
fn a_registration_the_server_forgot_is_dropped_when_a_refresh_is_refused() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&["--auth-method", "client_secret_basic"])?;
    let b = Bosun::new("oauth_reg_forgot").with_test_browser();
    oauth.add_to(&b)?;
    let first = sign_in(&b, "remote")?;
    let secrets = secret_values(&b);
    // The service forgets bosun's client, and the access token runs out: the refresh is
    // refused with `invalid_client`, and bosun says what happened instead of retrying forever.
    oauth.forget_clients()?;
    oauth.expire_tokens()?;
    let watcher = bosun_tests::EventWatcher::start(&b)?;
    let out = b.output(&["mcp", "call", "remote", "whoami"])?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no longer knows the client bosun registered there")
            && err.contains("bosun mcp sign-in remote"),
        "{err}"
    );
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "needs sign-in", "{shown:#}");
    // The person hears of it where they are (every UI, and so the desktop's notifications).
    let heard = wait_for(
        "the sign-in's notification",
        Duration::from_secs(10),
        || Ok(watcher.of(&["notification"]).into_iter().next()),
    )?;
    assert_eq!(heard["kind"], "sign_in", "{heard:#}");
    let text = heard["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("remote needs you to sign in again (")
            && text.ends_with("): bosun mcp sign-in remote"),
        "{text}"
    );
    // The next sign-in registers anew, without being told to, and works.
    let second = sign_in(&b, "remote")?;
    assert_ne!(
        second["sign_in"]["client_id"],
        first["sign_in"]["client_id"]
    );
    assert_eq!(registrations(&oauth), ["/register", "/register"]);
    // Nothing of the old client is left in the keychain (its secret, its tokens); no secret,
    // old or new, was ever shown or written to the state directory.
    let now = secret_values(&b);
    for s in &secrets {
        assert!(!now.contains(s), "a secret of the old client is still kept");
        b.assert_secret_nowhere(s)?;
    }
    for s in &now {
        b.assert_secret_nowhere(s)?;
    }
    b.finish()
}

#[test]
fn new_client_registers_anew_when_the_sign_in_page_refuses_the_kept_one() -> anyhow::Result<()> {
    let oauth = OAuthServer::start(&[])?;
    let b = Bosun::new("oauth_reg_new_client")
        .with_test_browser()
        .with_env("BOSUN_SIGN_IN_WAIT", "3s");
    oauth.add_to(&b)?;
    let first = sign_in(&b, "remote")?;
    oauth.forget_clients()?;
    // Signed in again with the kept client: the server's page refuses it (400, no redirect),
    // which bosun cannot see; it says how to get out, and the wait ends with nothing saved.
    let out = b.output(&["mcp", "sign-in", "remote"])?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("uses the client bosun registered there before")
            && err.contains("bosun mcp sign-in remote --new-client"),
        "{err}"
    );
    assert!(err.contains("was not finished within"), "{err}");
    let second = b.json(&["mcp", "sign-in", "remote", "--new-client"])?;
    assert_eq!(second["sign_in"]["state"], "signed in", "{second:#}");
    assert_ne!(
        second["sign_in"]["client_id"],
        first["sign_in"]["client_id"]
    );
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    let text = call["content"][0]["text"].as_str().unwrap_or_default();
    let client = second["sign_in"]["client_id"].as_str().unwrap_or_default();
    assert!(text.starts_with(&format!("client={client} ")), "{text}");
    // The new one is kept for the next time.
    let out = b.output(&["mcp", "sign-in", "remote"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(registrations(&oauth), ["/register", "/register"]);
    // --new-client is only for a client bosun registered.
    let oauth2 = OAuthServer::start(&["--client-id", "app", "--registration", "off"])?;
    b.ok(&[
        "mcp",
        "add",
        "fixed",
        "--transport",
        "http",
        &oauth2.mcp_url(),
        "--client-id",
        "app",
    ])?;
    let err = b.fails(&["mcp", "sign-in", "fixed", "--new-client"])?;
    assert!(
        err.contains("signs in with the client id you configured")
            && err.contains("--new-client only drops a client bosun registered"),
        "{err}"
    );
    b.finish()
}
