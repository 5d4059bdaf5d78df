//! The sign-in rules of the MCP revision 2026-07-28, against `oauth-server`: a registration is
//! a `native` application's and happens only when no client is configured and no client
//! metadata document can be used; a client metadata document is the client id where the server
//! takes one, and bosund fetches and checks it before the browser opens, as the server does after
//! (a document naming another client id, or allowing no loopback redirect, or not there, is
//! refused at once, with no request to `/authorize`); the authorization response's `iss`
//! (RFC 9207) is compared exactly with the issuer recorded at discovery; metadata that names
//! another issuer is not used. Nothing is saved from a refused sign-in, and no token shows
//! anywhere.

use bosun_tests::https::HttpsDocuments;
use bosun_tests::{Bosun, OAuthServer, keychain_values};
use serde_json::{Value, json};

fn bosun(test: &str) -> Bosun {
    Bosun::new(test).with_test_browser()
}

fn held_tokens(b: &Bosun) -> Vec<String> {
    keychain_values(b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .collect()
}

/// `POST /test/switch-as`: the resource names the second authorization server from now on.
fn switch_as(oauth: &OAuthServer) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let addr = oauth.base().trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "POST /test/switch-as HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    anyhow::ensure!(answer.starts_with("HTTP/1.1 200"), "switch-as: {answer}");
    Ok(())
}

fn add(b: &Bosun, oauth: &OAuthServer, extra: &[&str]) -> anyhow::Result<()> {
    let url = oauth.mcp_url();
    let mut args = vec!["mcp", "add", "remote", "--transport", "http", &url];
    args.extend_from_slice(extra);
    b.ok(&args)?;
    Ok(())
}

/// Signs in and calls the tool; the sign-in's view.
fn sign_in_and_call(b: &Bosun) -> anyhow::Result<Value> {
    let signed = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call}"
    );
    Ok(signed)
}

#[test]
fn a_registration_is_a_native_applications_and_an_exact_iss_is_taken() -> anyhow::Result<()> {
    let b = bosun("oauth_letter_native");
    let oauth = OAuthServer::start(&["--iss", "exact", "--iss-advertised"])?;
    add(&b, &oauth, &[])?;
    let signed = sign_in_and_call(&b)?;
    assert_eq!(signed["sign_in"]["registered"], true);
    let register = oauth.requests_to("/register");
    assert_eq!(register.len(), 1);
    assert_eq!(register[0]["application_type"], "native", "{register:?}");
    for t in held_tokens(&b) {
        b.assert_secret_nowhere(&t)?;
    }
    b.finish()
}

#[test]
fn an_answer_from_another_issuer_is_refused_and_nothing_saved() -> anyhow::Result<()> {
    let cases: &[(&[&str], &str)] = &[
        // A mismatch, whether or not the server said it sends `iss`.
        (
            &["--iss", "wrong"],
            "got an answer from the issuer `http://127.0.0.1:1/other`",
        ),
        (
            &["--iss", "wrong", "--iss-advertised"],
            "got an answer from the issuer",
        ),
        // No normalisation: a trailing slash is another issuer.
        (&["--iss", "slash"], "got an answer from the issuer"),
        // Missing, though advertised.
        (
            &["--iss", "none", "--iss-advertised"],
            "got an answer without `iss`",
        ),
        // Metadata naming another issuer is not used.
        (
            &["--metadata-issuer", "http://127.0.0.1:1/elsewhere"],
            "it names the issuer http://127.0.0.1:1/elsewhere, not",
        ),
    ];
    for (flags, want) in cases {
        let b = bosun("oauth_letter_iss");
        let oauth = OAuthServer::start(flags)?;
        add(&b, &oauth, &[])?;
        let err = b.fails(&["mcp", "sign-in", "remote"])?;
        assert!(err.contains(want), "{flags:?}: {err}");
        assert!(err.contains("remote"), "{flags:?}: {err}");
        let shown = b.json(&["mcp", "show", "remote"])?;
        assert_ne!(shown["sign_in"]["state"], "signed in", "{flags:?}");
        assert!(held_tokens(&b).is_empty(), "{flags:?}: nothing saved");
        assert!(
            oauth.requests_to("/token").is_empty(),
            "{flags:?}: no code was exchanged"
        );
        if flags.contains(&"--metadata-issuer") {
            assert!(
                oauth.requests_to("/register").is_empty()
                    && oauth.requests_to("/authorize").is_empty(),
                "refused before any registration or authorization"
            );
        }
        b.finish()?;
    }
    Ok(())
}

/// Issue 25: the sign-in address was taken from the server's metadata unchecked, handed to the
/// browser and made a link in the web UI. An `authorization_endpoint` that is not https:// (or
/// plain http:// to this machine) is refused with the reason, before any registration, any
/// browser and any request to the authorization server.
#[test]
fn a_sign_in_address_that_is_not_https_is_refused_before_the_browser_opens() -> anyhow::Result<()> {
    let cases = [
        (
            "javascript:alert(document.cookie)",
            "is a `javascript:` address",
        ),
        ("file:///etc/passwd", "is a `file:` address"),
        (
            "http://192.0.2.1/authorize",
            "is plain http:// to 192.0.2.1, another machine",
        ),
    ];
    for (endpoint, want) in cases {
        let b = bosun("oauth_letter_sign_in_address");
        let oauth = OAuthServer::start(&["--authorization-endpoint", endpoint])?;
        add(&b, &oauth, &[])?;
        let err = b.fails(&["mcp", "sign-in", "remote"])?;
        assert!(err.contains(want), "{endpoint}: {err}");
        assert!(
            err.contains("bosun signs in only at https:// addresses (or http:// to this machine)"),
            "{endpoint}: {err}"
        );
        assert!(
            oauth.requests_to("/register").is_empty() && oauth.requests_to("/authorize").is_empty(),
            "{endpoint}: refused before any registration or authorization"
        );
        let shown = b.json(&["mcp", "show", "remote"])?;
        assert_ne!(shown["sign_in"]["state"], "signed in", "{endpoint}");
        assert!(held_tokens(&b).is_empty(), "{endpoint}: nothing saved");
        b.finish()?;
    }
    Ok(())
}

/// bosun's client metadata document as a person would publish it at `url`: a public, native
/// client whose loopback redirect URI has no port (any port will do, RFC 8252 §7.3).
fn client_document(url: &str) -> Value {
    json!({
        "client_id": url,
        "client_name": "bosun",
        "application_type": "native",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

#[test]
fn a_client_metadata_document_is_the_client_id_where_the_server_takes_one() -> anyhow::Result<()> {
    let published = HttpsDocuments::start()?;
    let path = "/bosun/client-metadata.json";
    let url = published.url(path);
    let doc = url.as_str();
    published.publish(path, client_document(doc));
    let ca = published.ca_file().display().to_string();
    // The server takes documents: no registration, the document's address is the client id,
    // and the server fetched the document (over TLS, trusting the test's CA) and checked it.
    let b = bosun("oauth_letter_cimd").with_env("SSL_CERT_FILE", &ca);
    let oauth = OAuthServer::start(&[
        "--client-metadata-documents",
        "--ca-file",
        &ca,
        "--iss",
        "exact",
    ])?;
    add(&b, &oauth, &["--client-metadata-url", doc])?;
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(shown["client_metadata_url"], doc);
    let signed = sign_in_and_call(&b)?;
    assert_eq!(signed["sign_in"]["client_id"], doc, "{signed:#}");
    assert_eq!(signed["sign_in"]["registered"], false);
    assert!(oauth.requests_to("/register").is_empty(), "no registration");
    let authorize = oauth.requests_to("/authorize");
    assert_eq!(authorize[0]["client_id"], doc);
    assert_eq!(authorize[0]["client_metadata"], "fetched", "{authorize:#?}");
    assert_eq!(
        published.requests(),
        [path, path],
        "the document was fetched by bosund before the browser opened, then by the server"
    );
    b.finish()?;
    // A server that does not take them: registration, the fallback.
    let b = bosun("oauth_letter_cimd_fallback");
    let oauth = OAuthServer::start(&[])?;
    add(&b, &oauth, &["--client-metadata-url", doc])?;
    let signed = sign_in_and_call(&b)?;
    assert_eq!(signed["sign_in"]["registered"], true);
    assert_ne!(signed["sign_in"]["client_id"], doc);
    b.finish()?;

    // A configured client id comes first.
    let b = bosun("oauth_letter_cimd_configured");
    let oauth = OAuthServer::start(&[
        "--client-metadata-documents",
        "--ca-file",
        &ca,
        "--client-id",
        "given",
    ])?;
    add(
        &b,
        &oauth,
        &["--client-metadata-url", doc, "--client-id", "given"],
    )?;
    let signed = sign_in_and_call(&b)?;
    assert_eq!(signed["sign_in"]["client_id"], "given");
    assert!(oauth.requests_to("/register").is_empty());
    assert_eq!(
        published.requests(),
        [path, path],
        "not fetched where not used"
    );
    b.finish()?;

    // Only an https:// address with a path is a client id.
    let b = bosun("oauth_letter_cimd_refused");
    for bad in [
        "http://bosun.example.com/client.json",
        "https://bosun.example.com",
        "https://user:pw@bosun.example.com/c.json",
    ] {
        let err = b.fails(&[
            "mcp",
            "add",
            "remote",
            "--transport",
            "http",
            "https://mcp.example.com/mcp",
            "--client-metadata-url",
            bad,
        ])?;
        assert!(
            err.contains("a client metadata document's address must be https://"),
            "{bad}: {err}"
        );
        assert!(!err.contains("pw@"), "{err}");
    }
    b.finish()
}

#[test]
fn a_client_metadata_document_this_machine_cannot_reach_is_left_to_the_authorization_server()
-> anyhow::Result<()> {
    let published = HttpsDocuments::start()?;
    let path = "/bosun/client-metadata.json";
    let url = published.url(path);
    published.publish(path, client_document(&url));
    let ca = published.ca_file().display().to_string();
    // The authorization server trusts the document's CA; this machine's bosund does not (no
    // SSL_CERT_FILE): bosund cannot check the document, says so, and the sign-in goes on.
    let b = bosun("oauth_letter_cimd_unreachable");
    let oauth = OAuthServer::start(&["--client-metadata-documents", "--ca-file", &ca])?;
    add(&b, &oauth, &["--client-metadata-url", &url])?;
    let out = b.output(&["mcp", "sign-in", "remote", "--json"])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "bosun: warning: bosun could not fetch its client metadata document at {url} to check it"
        )) && stderr.contains("the authorization server fetches it itself"),
        "{stderr}"
    );
    let signed: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    assert_eq!(signed["sign_in"]["client_id"], url.as_str(), "{signed:#}");
    let authorize = oauth.requests_to("/authorize");
    assert_eq!(authorize[0]["client_metadata"], "fetched", "{authorize:#?}");
    assert_eq!(
        published.requests(),
        [path],
        "only the authorization server could fetch it"
    );
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call}"
    );
    b.finish()
}

#[test]
fn a_client_metadata_document_that_names_another_client_id_is_refused_and_nothing_saved()
-> anyhow::Result<()> {
    let published = HttpsDocuments::start()?;
    let path = "/bosun/client-metadata.json";
    let url = published.url(path);
    let ca = published.ca_file().display().to_string();
    // A server that finds a document wrong answers the browser with its error and, as RFC 6749
    // §4.1.2.1 asks, does not redirect: bosund checks the document itself before the browser
    // opens, and refuses at once, saying what to fix.
    let other = published.url("/bosun/other.json");
    let mut no_loopback = client_document(&url);
    no_loopback["redirect_uris"] = json!(["http://localhost/callback", "http://[::1]/callback"]);
    let cases: [(&str, Option<Value>, String); 3] = [
        (
            "oauth_letter_cimd_mismatch",
            Some(client_document(&other)),
            format!(
                "names the client_id \"{other}\", but it must be exactly its own address: set \"client_id\": \"{url}\" in it"
            ),
        ),
        (
            "oauth_letter_cimd_no_loopback",
            Some(no_loopback),
            format!(
                "no redirect_uris entry of bosun's client metadata document at {url} allows bosun's answer at http://127.0.0.1/callback (any port); add \"http://127.0.0.1/callback\" to its redirect_uris"
            ),
        ),
        (
            "oauth_letter_cimd_missing",
            None,
            format!("bosun's client metadata document at {url} answered 404"),
        ),
    ];
    for (test, document, said) in cases {
        let oauth = OAuthServer::start(&["--client-metadata-documents", "--ca-file", &ca])?;
        match document {
            Some(d) => published.publish(path, d),
            None => published.forget(path),
        }
        let before = published.requests().len();
        let b = bosun(test).with_env("SSL_CERT_FILE", &ca);
        add(&b, &oauth, &["--client-metadata-url", &url])?;
        let err = b.fails(&["mcp", "sign-in", "remote"])?;
        assert!(err.contains("could not sign in to `remote`"), "{err}");
        assert!(err.contains(&said), "{test}: {err}");
        assert!(err.contains("then sign in again"), "{err}");
        assert!(!err.contains("was not finished within"), "at once: {err}");
        assert_eq!(
            published.requests()[before..],
            [path],
            "{test}: fetched by bosund alone"
        );
        assert!(
            oauth.requests_to("/authorize").is_empty(),
            "{test}: the browser never opened"
        );
        assert!(oauth.requests_to("/token").is_empty(), "no code, no token");
        assert!(held_tokens(&b).is_empty(), "nothing saved");
        let shown = b.json(&["mcp", "show", "remote"])?;
        assert_ne!(shown["sign_in"]["state"], "signed in", "{shown:#}");
        b.finish()?;
    }
    Ok(())
}

#[test]
fn a_move_to_another_authorization_server_with_a_person_at_the_terminal_is_one_command()
-> anyhow::Result<()> {
    let b = bosun("oauth_letter_migration_at_hand");
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2"])?;
    add(&b, &oauth, &[])?;
    sign_in_and_call(&b)?;
    switch_as(&oauth)?;
    let (ok, said) = b.at_terminal(&["mcp", "tools", "remote"])?;
    assert!(ok, "{said}");
    assert!(
        said.contains("signing in to remote now") && said.contains("whoami"),
        "{said}"
    );
    assert_eq!(
        oauth.requests_to("/t2/authorize").len(),
        1,
        "the browser opened once"
    );
    let shown = b.json(&["mcp", "show", "remote"])?;
    assert_eq!(
        shown["sign_in"]["issuer"],
        format!("{}/t2", oauth.base()),
        "{shown:#}"
    );
    b.finish()
}

#[test]
fn a_resource_that_moves_to_another_authorization_server_gets_a_new_registration_there()
-> anyhow::Result<()> {
    let b = bosun("oauth_letter_migration");
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2"])?;
    add(&b, &oauth, &[])?;
    let first = sign_in_and_call(&b)?;
    assert_eq!(first["sign_in"]["issuer"], oauth.base());
    let first_client = first["sign_in"]["client_id"].clone();
    let old_tokens = held_tokens(&b);

    // The resource now names /t2 and refuses the old tokens.
    switch_as(&oauth)?;
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(err.contains("sign in"), "{err}");

    let second = sign_in_and_call(&b)?;
    let issuer = format!("{}/t2", oauth.base());
    assert_eq!(second["sign_in"]["issuer"], issuer, "{second:#}");
    assert_eq!(second["sign_in"]["registered"], true);
    assert_ne!(
        second["sign_in"]["client_id"], first_client,
        "never the old client id"
    );
    let registered_at: Vec<Value> = oauth
        .requests()
        .iter()
        .filter(|r| {
            r["method"] == "POST" && r["path"].as_str().is_some_and(|p| p.ends_with("/register"))
        })
        .map(|r| r["path"].clone())
        .collect();
    assert_eq!(
        registered_at,
        [Value::from("/register"), Value::from("/t2/register")]
    );
    let authorized: Vec<Value> = oauth
        .requests_to("/t2/authorize")
        .iter()
        .map(|r| r["client_id"].clone())
        .collect();
    assert_eq!(authorized, [second["sign_in"]["client_id"].clone()]);
    for t in old_tokens.iter().chain(held_tokens(&b).iter()) {
        b.assert_secret_nowhere(t)?;
    }
    b.finish()?;

    // A client id the person configured for the old server is not taken to the new one.
    let b = bosun("oauth_letter_migration_configured");
    let oauth = OAuthServer::start(&["--second-issuer-path", "/t2", "--client-id", "given"])?;
    add(&b, &oauth, &["--client-id", "given"])?;
    sign_in_and_call(&b)?;
    switch_as(&oauth)?;
    let err = b.fails(&["mcp", "sign-in", "remote"])?;
    assert!(
        err.contains("now names another authorization server")
            && err.contains("does not take it (or its secret) to the new one"),
        "{err}"
    );
    assert!(oauth.requests_to("/t2/authorize").is_empty());
    b.finish()
}
