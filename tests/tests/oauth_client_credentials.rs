//! A machine's sign-in (OAuth client credentials, the MCP extension of the 2026-07-28
//! revision) against `oauth-server`'s machine client: no browser, the client proved by
//! `client_secret_basic` or a `private_key_jwt` assertion (checked by the server: signature,
//! `aud`, `exp`, a `jti` never replayed), the token renewed by a new grant before it expires,
//! refusals in plain words with nothing kept, and the canary secret and private key nowhere.

use std::time::Duration;

use bosun_tests::oauth_cc::{MachineKey, post_form};
use bosun_tests::{Bosun, OAuthServer, keychain_values, wait_for};
use serde_json::{Value, json};

/// A bosun that must never open a browser: its "browser" fails.
fn bosun(test: &str) -> Bosun {
    Bosun::new(test).with_env("BROWSER", "/bin/false")
}

fn canary(what: &str) -> String {
    format!("canary-{what}-{:016x}", rand::random::<u64>())
}

/// `bosun mcp sign-in remote --client-credentials --client-id robot --client-secret-stdin`.
fn sign_in_with_secret(b: &Bosun, secret: &str) -> anyhow::Result<std::process::Output> {
    b.output_with_stdin(
        &[
            "mcp",
            "sign-in",
            "remote",
            "--client-credentials",
            "--client-id",
            "robot",
            "--client-secret-stdin",
            "--json",
        ],
        secret,
    )
}

fn stdout_json(out: &std::process::Output) -> anyhow::Result<Value> {
    anyhow::ensure!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The `client_credentials` grants the server answered, in order.
fn grants(oauth: &OAuthServer) -> Vec<Value> {
    oauth
        .requests_to("/token")
        .into_iter()
        .filter(|r| r["grant_type"] == "client_credentials")
        .collect()
}

/// The values the keychain holds for the sign-in.
fn held(b: &Bosun) -> Vec<(String, String)> {
    keychain_values(b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

fn call_whoami(b: &Bosun) -> anyhow::Result<String> {
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    Ok(call["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// No browser and no person: nothing asked the authorization or registration endpoints.
fn assert_no_person(oauth: &OAuthServer) {
    assert!(oauth.requests_to("/authorize").is_empty(), "no browser");
    assert!(oauth.requests_to("/register").is_empty(), "no registration");
}

#[test]
fn a_machine_signs_in_with_client_secret_basic_and_its_token_works() -> anyhow::Result<()> {
    let secret = canary("secret");
    let oauth = OAuthServer::start(&["--machine-client", "robot", "--machine-secret", &secret])?;
    let b = bosun("oauth_cc_basic");
    oauth.add_to(&b)?;
    let signed = stdout_json(&sign_in_with_secret(&b, &secret)?)?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    assert_eq!(signed["sign_in"]["client_id"], "robot");
    assert_eq!(
        signed["sign_in"]["client_credentials"],
        "client_secret_basic"
    );
    assert_eq!(signed["sign_in"]["registered"], false);

    let g = grants(&oauth);
    assert_eq!(g.len(), 1, "{g:#?}");
    assert_eq!(g[0]["status"], 200);
    assert_eq!(g[0]["auth"], "basic");
    assert_eq!(g[0]["resource"], oauth.mcp_url());
    assert_eq!(
        g[0]["scope"], "mcp:read mcp:write",
        "the resource's scopes, without offline_access"
    );
    assert_no_person(&oauth);

    let tools = b.json(&["mcp", "tools", "remote"])?;
    assert_eq!(tools["tools"][0]["name"], "whoami", "{tools:#}");
    let text = call_whoami(&b)?;
    assert!(
        text.starts_with("client=robot scope=mcp:read mcp:write"),
        "{text}"
    );
    let shown = b.ok(&["mcp", "show", "remote"])?;
    assert!(
        shown.contains("client credentials (client_secret_basic)"),
        "{shown}"
    );

    // The secret is in the keychain, and nowhere bosun writes or prints.
    let kept = held(&b);
    assert!(
        kept.iter()
            .any(|(k, v)| k.ends_with("/oauth/machine_client_secret") && *v == secret),
        "{:?}",
        kept.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    for (_, v) in &kept {
        b.assert_secret_nowhere(v)?;
    }
    b.assert_secret_nowhere(&secret)?;

    // Signed out, nothing of it stays.
    b.ok(&["mcp", "sign-out", "remote"])?;
    assert!(held(&b).is_empty(), "signed out: nothing kept");
    b.finish()
}

#[test]
fn a_machine_signs_in_with_a_private_key_jwt_and_the_server_checks_the_assertion()
-> anyhow::Result<()> {
    let key = MachineKey::es256()?;
    let oauth = OAuthServer::start(&[
        "--machine-client",
        "robot",
        "--machine-jwk",
        &key.jwk.to_string(),
    ])?;
    let b = bosun("oauth_cc_jwt");
    oauth.add_to(&b)?;
    let key_file = b.scratch().join("robot.pem");
    std::fs::write(&key_file, &key.pem)?;
    let path = key_file.display().to_string();
    let out = b.output(&[
        "mcp",
        "sign-in",
        "remote",
        "--client-credentials",
        "--client-id",
        "robot",
        "--private-key-file",
        &path,
        "--json",
    ])?;
    let signed = stdout_json(&out)?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    assert_eq!(signed["sign_in"]["client_credentials"], "private_key_jwt");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("is in the keychain now; bosun does not read the file again"),
        "{said}"
    );

    let g = grants(&oauth);
    assert_eq!(g.len(), 1, "{g:#?}");
    assert_eq!(g[0]["status"], 200, "{g:#?}");
    assert_eq!(g[0]["auth"], "private_key_jwt");
    assert_eq!(
        g[0]["aud"],
        oauth.base(),
        "the audience is the issuer (RFC 7523bis)"
    );
    assert_no_person(&oauth);
    // The file is not read again: the key is used from the keychain.
    std::fs::remove_file(&key_file)?;
    oauth.expire_tokens()?;
    let text = call_whoami(&b)?;
    assert!(text.starts_with("client=robot"), "{text}");
    let g = grants(&oauth);
    assert_eq!(g.len(), 2, "a new grant for the expired token: {g:#?}");
    assert_ne!(g[0]["jti_sha"], g[1]["jti_sha"], "a new jti each time");

    // The private key is in the keychain only. Its PEM, and any line of it, is nowhere else.
    assert!(
        held(&b)
            .iter()
            .any(|(k, v)| k.ends_with("/oauth/private_key") && *v == key.pem)
    );
    b.assert_secret_nowhere(&key.pem)?;
    for line in key.pem.lines().filter(|l| !l.starts_with("-----")) {
        b.assert_secret_nowhere(line)?;
    }
    for (_, v) in held(&b) {
        b.assert_secret_nowhere(&v)?;
    }

    // The server's checks: a replayed assertion, another audience, an expired one.
    let token = format!("{}/token", oauth.base());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let claims = |aud: &str, jti: &str, exp: u64| json!({"iss": "robot", "sub": "robot", "aud": aud, "jti": jti, "iat": now, "exp": exp});
    let ask = |assertion: &str| {
        post_form(
            &token,
            &[
                ("grant_type", "client_credentials"),
                (
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                ),
                ("client_assertion", assertion),
            ],
        )
    };
    let once = key.sign(&claims(oauth.base(), "replay-me", now + 60))?;
    assert_eq!(ask(&once)?.0, 200);
    let (status, body) = ask(&once)?;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "invalid_client");
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| d.contains("used before")),
        "{body}"
    );
    let (status, body) = ask(&key.sign(&claims("http://127.0.0.1:1/other", "x1", now + 60))?)?;
    assert_eq!(
        (status, &body["error"]),
        (401, &json!("invalid_client")),
        "{body}"
    );
    let (status, body) = ask(&key.sign(&claims(oauth.base(), "x2", now - 5))?)?;
    assert_eq!(
        (status, &body["error"]),
        (401, &json!("invalid_client")),
        "{body}"
    );
    let other = MachineKey::es256()?;
    let (status, body) = ask(&other.sign(&claims(oauth.base(), "x3", now + 60))?)?;
    assert!(
        status == 401
            && body["error_description"]
                .as_str()
                .is_some_and(|d| d.contains("does not verify")),
        "{body}"
    );
    b.finish()
}

#[test]
fn a_machine_token_is_renewed_by_a_new_grant_before_it_expires() -> anyhow::Result<()> {
    let secret = canary("secret");
    // Tokens live 3 s: the refresher renews each about 0.3 s before it expires.
    let oauth = OAuthServer::start(&[
        "--machine-client",
        "robot",
        "--machine-secret",
        &secret,
        "--access-ttl",
        "3",
    ])?;
    let b = bosun("oauth_cc_renew");
    oauth.add_to(&b)?;
    stdout_json(&sign_in_with_secret(&b, &secret)?)?;
    let renewed = wait_for(
        "two renewals ahead of expiry",
        Duration::from_secs(30),
        || {
            let g = grants(&oauth);
            Ok((g.len() >= 3).then_some(g))
        },
    )?;
    assert!(renewed.iter().all(|g| g["status"] == 200), "{renewed:#?}");
    assert_eq!(
        oauth.refreshes(),
        0,
        "no refresh token is used: there is none"
    );
    // Whatever the moment, the token held works.
    let text = call_whoami(&b)?;
    assert!(text.starts_with("client=robot"), "{text}");
    // (The sign-in's probe, without a token, was answered 401: it is how sign-in begins.)
    let mcp: Vec<Value> = oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| r.get("bearer_sha").is_some())
        .collect();
    assert!(
        !mcp.is_empty() && mcp.iter().all(|r| r["status"] != 401),
        "never an expired token: {mcp:#?}"
    );
    for (_, v) in held(&b) {
        b.assert_secret_nowhere(&v)?;
    }
    b.assert_secret_nowhere(&secret)?;
    b.finish()
}

#[test]
fn credentials_the_server_refuses_are_refused_in_plain_words_and_nothing_is_kept()
-> anyhow::Result<()> {
    let secret = canary("secret");
    let wrong = canary("wrong");
    let oauth = OAuthServer::start(&["--machine-client", "robot", "--machine-secret", &secret])?;
    let b = bosun("oauth_cc_refused");
    oauth.add_to(&b)?;

    // A wrong secret: refused with the server's reason; nothing kept.
    let out = sign_in_with_secret(&b, &wrong)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refused bosun's client credentials for `remote`")
            && err.contains("invalid_client")
            && err.contains("wrong client secret")
            && err.contains("nothing was saved"),
        "{err}"
    );
    assert!(held(&b).is_empty(), "nothing kept: {:?}", held(&b));
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_ne!(shown["sign_in"]["state"], "signed in");
    b.assert_secret_nowhere(&wrong)?;

    // A secret and a key at once: refused before anything is sent.
    let key_file = b.scratch().join("k.pem");
    std::fs::write(&key_file, MachineKey::es256()?.pem)?;
    let path = key_file.display().to_string();
    let out = b.output_with_stdin(
        &[
            "mcp",
            "sign-in",
            "remote",
            "--client-credentials",
            "--client-id",
            "robot",
            "--client-secret-stdin",
            "--private-key-file",
            &path,
        ],
        &secret,
    )?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot be used with"), "{err}");
    assert_eq!(grants(&oauth).len(), 1, "only the wrong secret was sent");

    // A key that is not one.
    std::fs::write(
        &key_file,
        format!("-----BEGIN PRIVATE KEY-----\n{wrong}\n-----END PRIVATE KEY-----\n"),
    )?;
    let err = b.fails(&[
        "mcp",
        "sign-in",
        "remote",
        "--client-credentials",
        "--client-id",
        "robot",
        "--private-key-file",
        &path,
    ])?;
    assert!(
        err.contains("the private key for `remote` cannot be used"),
        "{err}"
    );
    assert!(!err.contains(&wrong), "{err}");

    // Signed in, then the service revokes the credentials: the renewal is refused and the
    // person is asked to give them again, with the reason.
    stdout_json(&sign_in_with_secret(&b, &secret)?)?;
    assert!(call_whoami(&b)?.starts_with("client=robot"));
    let (status, _) = post_form(&format!("{}/test/refuse-machine", oauth.base()), &[])?;
    assert_eq!(status, 200);
    oauth.expire_tokens()?;
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(
        err.contains("needs you to sign in again")
            && err.contains("refused bosun's client credentials")
            && err.contains("the client's credentials were revoked")
            && err.contains("--client-credentials"),
        "{err}"
    );
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["sign_in"]["state"], "needs sign-in", "{shown:#}");
    assert!(
        !held(&b).iter().any(|(k, _)| k.ends_with("/oauth/access")),
        "the refused token is forgotten"
    );
    b.assert_secret_nowhere(&secret)?;
    b.assert_secret_nowhere(&wrong)?;
    b.finish()
}

#[test]
fn a_server_that_does_not_offer_the_grant_or_the_method_is_refused_before_any_grant()
-> anyhow::Result<()> {
    let secret = canary("secret");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--grant-types", "authorization_code refresh_token"],
            "does not offer client credentials (it lists the grants authorization_code, refresh_token)",
        ),
        (
            &["--auth-methods", "private_key_jwt"],
            "does not take client_secret_basic (it lists private_key_jwt)",
        ),
    ];
    for (flags, want) in cases {
        let mut args = vec!["--machine-client", "robot", "--machine-secret", &secret];
        args.extend_from_slice(flags);
        let oauth = OAuthServer::start(&args)?;
        let b = bosun("oauth_cc_unoffered");
        oauth.add_to(&b)?;
        let out = sign_in_with_secret(&b, &secret)?;
        assert!(!out.status.success(), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{flags:?}: {err}");
        assert!(grants(&oauth).is_empty(), "{flags:?}: no grant asked");
        assert!(held(&b).is_empty(), "{flags:?}: nothing kept");
        b.assert_secret_nowhere(&secret)?;
        b.finish()?;
    }
    Ok(())
}
