//! DPoP-bound tokens (RFC 9449) against `oauth-server --dpop`: the sign-in binds its tokens to
//! a key bosun keeps in the keychain; every request to the MCP server carries
//! `Authorization: DPoP` and a fresh proof (no `jti` twice); nonces asked for by the token
//! endpoint and by the MCP server are given; a refresh keeps the binding; a refused proof is
//! said plainly and not retried in a loop; sign-out removes the key; the key is nowhere but the
//! keychain, and nothing is left running. A machine's sign-in (client credentials) binds its
//! tokens in the same way, and renews them with a proof of the same key.

use bosun_tests::dpop::kept_key_thumbprint;
use bosun_tests::oauth_cc::MachineKey;
use bosun_tests::{Bosun, OAuthServer, keychain_values};
use serde_json::Value;

fn bosun(test: &str) -> Bosun {
    Bosun::new(test).with_test_browser()
}

/// The value kept in the keychain under `…/oauth/<which>`.
fn held(b: &Bosun, which: &str) -> Option<String> {
    keychain_values(b)
        .iter()
        .find(|(k, _)| k.ends_with(&format!("/oauth/{which}")))
        .and_then(|(_, v)| v.as_str().map(str::to_string))
}

/// `POST <path>` to the test server, or its `GET /test/state`.
fn control(oauth: &OAuthServer, method: &str, path: &str) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let addr = oauth.base().trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    anyhow::ensure!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
    Ok(answer)
}

fn server_state(oauth: &OAuthServer) -> anyhow::Result<Value> {
    let answer = control(oauth, "GET", "/test/state")?;
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    Ok(serde_json::from_str(body)?)
}

/// Adds the server, signs in, lists the tools and calls one: the whole DPoP path.
fn sign_in_list_and_call(b: &Bosun, oauth: &OAuthServer) -> anyhow::Result<()> {
    oauth.add_to(b)?;
    let signed = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    let tools = b.json(&["mcp", "tools", "remote"])?;
    assert!(tools.to_string().contains("whoami"), "{tools:#}");
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call:#}"
    );
    Ok(())
}

/// Every request to `/mcp` used `Authorization: DPoP` with a proof of the one key the token
/// endpoint bound, and no proof was refused or replayed.
fn every_mcp_request_had_a_fresh_proof(oauth: &OAuthServer) -> anyhow::Result<String> {
    let token = oauth.requests_to("/token");
    let jkt = token
        .iter()
        .find_map(|r| r["dpop_jkt"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        !jkt.is_empty(),
        "the token request carried a proof: {token:?}"
    );
    let mcp = oauth.requests_to("/mcp");
    let signed: Vec<&Value> = mcp
        .iter()
        .filter(|r| r["auth_scheme"].is_string())
        .collect();
    assert!(signed.len() >= 3, "{mcp:#?}");
    for r in &signed {
        assert_eq!(r["auth_scheme"], "dpop", "{r}");
        assert_eq!(r["dpop_jkt"], jkt.as_str(), "the one key: {r}");
    }
    let state = server_state(oauth)?;
    assert_eq!(state["dpop_replays"], 0, "{state}");
    assert_eq!(
        state["dpop_proofs"], state["dpop_unique_jtis"],
        "no jti twice: {state}"
    );
    Ok(jkt)
}

#[test]
fn a_dpop_sign_in_binds_the_tokens_and_every_request_has_a_fresh_proof() -> anyhow::Result<()> {
    let b = bosun("oauth_dpop_bound");
    let oauth = OAuthServer::start(&["--dpop"])?;
    sign_in_list_and_call(&b, &oauth)?;
    let jkt = every_mcp_request_had_a_fresh_proof(&oauth)?;
    let state = server_state(&oauth)?;
    assert_eq!(state["dpop_refused"], 0, "{state}");
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "signed in", "{shown:#}");
    assert_eq!(shown["sign_in"]["dpop"], true, "{shown:#}");
    let human = b.ok(&["mcp", "show", "remote"])?;
    assert!(human.contains("bound to a key (DPoP)"), "{human}");

    // The key, the tokens: in the keychain, and nowhere else.
    let key = held(&b, "dpop_key").ok_or_else(|| anyhow::anyhow!("no DPoP key kept"))?;
    for secret in [
        key.clone(),
        held(&b, "access").unwrap_or_default(),
        held(&b, "refresh").unwrap_or_default(),
    ] {
        assert!(!secret.is_empty());
        b.assert_secret_nowhere(&secret)?;
    }
    assert!(!jkt.is_empty());

    // Sign-out removes the key with the tokens.
    b.ok(&["mcp", "sign-out", "remote"])?;
    assert!(held(&b, "dpop_key").is_none(), "the key is gone");
    assert!(held(&b, "access").is_none());
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert!(
        shown["sign_in"].get("dpop").is_none(),
        "no binding shown once signed out: {shown:#}"
    );
    let human = b.ok(&["mcp", "show", "remote"])?;
    assert!(!human.contains("DPoP"), "{human}");
    b.assert_secret_nowhere(&key)?;
    b.finish()
}

#[test]
fn nonces_asked_for_by_the_token_endpoint_and_the_mcp_server_are_given() -> anyhow::Result<()> {
    let b = bosun("oauth_dpop_nonces");
    let oauth = OAuthServer::start(&["--dpop", "--dpop-nonce-as", "--dpop-nonce-rs"])?;
    sign_in_list_and_call(&b, &oauth)?;
    every_mcp_request_had_a_fresh_proof(&oauth)?;
    // The token endpoint asked once (then its nonce came with the tokens); the MCP server asked
    // once per look, and took the nonce of each answer in place of the one before.
    let token = oauth.requests_to("/token");
    let asked = |rs: &[Value]| rs.iter().filter(|r| r["error"] == "use_dpop_nonce").count();
    assert_eq!(asked(&token), 1, "{token:#?}");
    assert!(
        token
            .iter()
            .any(|r| r["status"] == 200 && r["dpop_nonce"] == true)
    );
    let mcp = oauth.requests_to("/mcp");
    let demands = asked(&mcp);
    assert!((1..=2).contains(&demands), "{mcp:#?}");
    let answered = mcp
        .iter()
        .filter(|r| r["status"] != 401 && r["dpop_nonce"] == true)
        .count();
    assert!(answered >= 3, "{mcp:#?}");
    b.finish()
}

#[test]
fn a_refresh_keeps_the_binding() -> anyhow::Result<()> {
    let b = bosun("oauth_dpop_refresh");
    let oauth = OAuthServer::start(&["--dpop", "--dpop-nonce-as", "--rotate"])?;
    sign_in_list_and_call(&b, &oauth)?;
    let key = held(&b, "dpop_key").unwrap_or_default();
    let access = held(&b, "access").unwrap_or_default();
    oauth.expire_tokens()?;
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(call.to_string().contains("client="), "{call:#}");
    assert_eq!(oauth.refreshes(), 1);
    let refresh = oauth
        .requests_to("/token")
        .into_iter()
        .filter(|r| r["grant_type"] == "refresh_token" && r["status"] == 200)
        .collect::<Vec<_>>();
    assert_eq!(refresh.len(), 1, "{refresh:#?}");
    let jkt = every_mcp_request_had_a_fresh_proof(&oauth)?;
    assert_eq!(refresh[0]["dpop_jkt"], jkt.as_str(), "the same key");
    assert_eq!(held(&b, "dpop_key").unwrap_or_default(), key);
    assert_ne!(held(&b, "access").unwrap_or_default(), access);
    b.assert_secret_nowhere(&key)?;
    b.finish()
}

#[test]
fn a_refused_proof_is_said_plainly_and_not_retried_in_a_loop() -> anyhow::Result<()> {
    let b = bosun("oauth_dpop_refused");
    let oauth = OAuthServer::start(&["--dpop"])?;
    sign_in_list_and_call(&b, &oauth)?;
    control(&oauth, "POST", "/test/dpop-refuse")?;
    let before = oauth.requests_to("/mcp").len();
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(err.contains("refused bosun's DPoP proof"), "{err}");
    assert!(err.contains("invalid_dpop_proof"), "{err}");
    let after = oauth.requests_to("/mcp").len();
    assert!(after - before <= 2, "no loop: {} requests", after - before);
    assert_eq!(oauth.refreshes(), 0, "a proof is not mended by a refresh");
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "signed in", "{shown:#}");
    b.assert_secret_nowhere(&held(&b, "dpop_key").unwrap_or_default())?;
    b.finish()
}

#[test]
fn a_machine_sign_in_binds_its_tokens_and_renews_them_with_the_same_key() -> anyhow::Result<()> {
    let robot = MachineKey::es256()?;
    // The token endpoint wants a nonce: the grant is asked twice, each time with a new
    // assertion (the server took the first one's `jti` before it asked).
    let oauth = OAuthServer::start(&[
        "--dpop",
        "--dpop-nonce-as",
        "--machine-client",
        "robot",
        "--machine-jwk",
        &robot.jwk.to_string(),
    ])?;
    // A machine's sign-in opens no browser: this one fails if asked.
    let b = Bosun::new("oauth_dpop_machine").with_env("BROWSER", "/bin/false");
    oauth.add_to(&b)?;
    let key_file = b.scratch().join("robot.pem");
    std::fs::write(&key_file, &robot.pem)?;
    let path = key_file.display().to_string();
    let signed = b.json(&[
        "mcp",
        "sign-in",
        "remote",
        "--client-credentials",
        "--client-id",
        "robot",
        "--private-key-file",
        &path,
    ])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    assert_eq!(signed["sign_in"]["client_credentials"], "private_key_jwt");
    std::fs::remove_file(&key_file)?;
    assert!(oauth.requests_to("/authorize").is_empty(), "no browser");

    let grants = || -> Vec<Value> {
        oauth
            .requests_to("/token")
            .into_iter()
            .filter(|r| r["grant_type"] == "client_credentials")
            .collect()
    };
    let g = grants();
    assert_eq!(g.len(), 2, "a nonce demand, then the grant: {g:#?}");
    assert_eq!(
        (g[0]["status"].clone(), g[0]["error"].clone()),
        (Value::from(400), Value::from("use_dpop_nonce")),
        "{g:#?}"
    );
    assert_eq!(g[1]["status"], 200, "{g:#?}");
    assert_eq!(
        g[1]["dpop_nonce"], true,
        "the proof carried the nonce: {g:#?}"
    );
    assert_ne!(g[0]["jti_sha"], g[1]["jti_sha"], "a new assertion: {g:#?}");
    let key = held(&b, "dpop_key").ok_or_else(|| anyhow::anyhow!("no DPoP key kept"))?;
    let jkt = kept_key_thumbprint(&key)?;
    assert_eq!(g[1]["dpop_jkt"], jkt.as_str(), "bound to the kept key");

    // `mcp tools` and `mcp call` use `Authorization: DPoP` with proofs of that key.
    let tools = b.json(&["mcp", "tools", "remote"])?;
    assert!(tools.to_string().contains("whoami"), "{tools:#}");
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    let text = call["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("client=robot"), "{call:#}");
    assert_eq!(every_mcp_request_had_a_fresh_proof(&oauth)?, jkt);
    let access = held(&b, "access").unwrap_or_default();

    // Renewed by a new grant, with a proof of the same key, when the token is refused.
    oauth.expire_tokens()?;
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(call.to_string().contains("client=robot"), "{call:#}");
    let renewed: Vec<Value> = grants()
        .into_iter()
        .skip(2)
        .filter(|r| r["status"] == 200)
        .collect();
    assert_eq!(renewed.len(), 1, "one renewal: {:#?}", grants());
    assert_eq!(renewed[0]["dpop_jkt"], jkt.as_str(), "the same key");
    assert_eq!(
        held(&b, "dpop_key").unwrap_or_default(),
        key,
        "the key kept"
    );
    assert_ne!(
        held(&b, "access").unwrap_or_default(),
        access,
        "a new token"
    );
    assert_eq!(every_mcp_request_had_a_fresh_proof(&oauth)?, jkt);
    assert_eq!(oauth.refreshes(), 0, "there is no refresh token");
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "signed in", "{shown:#}");

    // The DPoP key, the client's key and the tokens: in the keychain and nowhere else.
    for secret in [
        key.clone(),
        access,
        held(&b, "access").unwrap_or_default(),
        held(&b, "private_key").unwrap_or_default(),
    ] {
        assert!(!secret.is_empty());
        b.assert_secret_nowhere(&secret)?;
    }
    for line in robot.pem.lines().filter(|l| !l.starts_with("-----")) {
        b.assert_secret_nowhere(line)?;
    }

    // Sign-out removes the key with the rest.
    b.ok(&["mcp", "sign-out", "remote"])?;
    let left: Vec<String> = keychain_values(&b)
        .keys()
        .filter(|k| k.contains("/oauth/"))
        .cloned()
        .collect();
    assert!(left.is_empty(), "signed out, nothing kept: {left:?}");
    b.assert_secret_nowhere(&key)?;
    b.finish()
}
