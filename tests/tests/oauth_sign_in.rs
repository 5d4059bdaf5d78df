//! Signing in to MCP servers with OAuth, against the project's own authorization server and
//! protected MCP server (`oauth-server`) with `test-browser` standing in for the person's
//! browser: every discovery variant, registration or a configured client, the three client
//! authentication methods, a scope step-up, refresh (rotating or not), a refused refresh,
//! revocation on sign-out, and the refusals — with no token ever in an output or a file of
//! bosun's.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use bosun_tests::{Bosun, FakeModel, OAuthServer, keychain_values};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// A bosun whose "browser" is test-browser.
fn bosun(test: &str) -> Bosun {
    Bosun::new(test).with_test_browser()
}

/// Every token bosun holds (in the fake keychain), for the secret checks.
fn held_tokens(b: &Bosun) -> Vec<String> {
    keychain_values(b)
        .iter()
        .filter(|(k, _)| k.contains("/oauth/"))
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .collect()
}

fn sign_in_state(b: &Bosun, server: &str) -> anyhow::Result<Value> {
    Ok(b.json(&["mcp", "show", server])?["sign_in"].clone())
}

/// Adds the server, checks it needs sign-in, signs in, and lists and calls its tool.
fn sign_in_and_use(b: &Bosun, oauth: &OAuthServer, extra: &[&str]) -> anyhow::Result<Value> {
    let url = oauth.mcp_url();
    let mut add = vec!["mcp", "add", "remote", "--transport", "http", &url];
    add.extend_from_slice(extra);
    let out = b.output_with_stdin(&add, "client-secret-for-bosun")?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(
        err.contains("the server needs sign-in") && err.contains("bosun mcp sign-in remote"),
        "{err}"
    );
    assert_eq!(sign_in_state(b, "remote")?["state"], "needs sign-in");
    let signed = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    let listing = b.json(&["mcp", "tools", "remote"])?;
    assert_eq!(listing["tools"][0]["name"], "whoami");
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    let text = call["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(text.starts_with("client="), "{call}");
    Ok(signed)
}

/// Ctrl-C while `bosun mcp sign-in` waits for the browser cancels the sign-in: bosund's loopback
/// address for the answer closes at once (not when the wait runs out), nothing is saved, and
/// the command says so.
#[test]
fn ctrl_c_while_waiting_cancels_the_sign_in_and_closes_its_address() -> anyhow::Result<()> {
    let b = Bosun::new("oauth_cancel");
    let oauth = OAuthServer::start(&[])?;
    oauth.add_to(&b)?;
    let before = sign_in_state(&b, "remote")?;
    let mut child = b
        .cmd(&["mcp", "sign-in", "remote", "--no-browser"])
        .stderr(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(child.stderr.take().context("no stderr")?).lines();
    let mut said = Vec::new();
    for line in lines.by_ref() {
        let line = line?;
        let waiting = line.contains("waiting for the sign-in to finish");
        said.push(line);
        if waiting {
            break;
        }
    }
    let page = said
        .iter()
        .map(|l| l.trim())
        .find(|l| l.starts_with("http"))
        .with_context(|| format!("no sign-in page in {said:?}"))?;
    // The loopback address the provider would send the browser back to.
    let callback = page
        .split_once("redirect_uri=")
        .and_then(|(_, r)| r.split('&').next())
        .map(|r| r.replace("%3A", ":").replace("%2F", "/"))
        .and_then(|r| {
            r.strip_prefix("http://")
                .and_then(|r| r.split('/').next())
                .map(str::to_string)
        })
        .with_context(|| format!("no loopback redirect in {page}"))?;
    assert!(
        TcpStream::connect(&callback).is_ok(),
        "bosund waits for the answer at {callback}"
    );

    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT)?;
    let rest: Vec<String> = lines.collect::<Result<_, _>>()?;
    let status = child.wait()?;
    let rest = rest.join("\n");
    assert!(!status.success(), "{status:?}: {rest}");
    assert!(
        rest.contains("the sign-in to `remote` was cancelled; nothing was saved. Run `bosun mcp sign-in remote` to start again"),
        "{rest}"
    );
    assert!(
        TcpStream::connect(&callback).is_err(),
        "the loopback address {callback} is closed once the sign-in is cancelled"
    );
    assert_eq!(sign_in_state(&b, "remote")?, before);
    assert!(oauth.requests_to("/token").is_empty());
    assert!(held_tokens(&b).is_empty());
    b.finish()
}

#[test]
fn sign_in_with_registration_then_use_refresh_and_sign_out() -> anyhow::Result<()> {
    let b = bosun("oauth_basic_flow");
    let oauth = OAuthServer::start(&["--rotate"])?;
    let signed = sign_in_and_use(&b, &oauth, &[])?;
    let s = &signed["sign_in"];
    assert_eq!(s["registered"], true);
    assert_eq!(s["scope"], "mcp:read mcp:write offline_access");
    assert_eq!(s["issuer"], oauth.base());
    // The steps of the spec, in order, with PKCE, the resource and the registration.
    let paths: Vec<String> = oauth
        .requests()
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_string))
        .filter(|p| !p.starts_with("/mcp"))
        .collect();
    assert_eq!(
        paths,
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/register",
            "/authorize",
            "/token"
        ]
    );
    let authorize = &oauth.requests_to("/authorize")[0];
    assert_eq!(authorize["resource"], oauth.mcp_url());

    // An expired token is refreshed (once) and the new, rotated one used.
    let before = held_tokens(&b);
    oauth.expire_tokens()?;
    b.json(&["mcp", "tools", "remote"])?;
    assert_eq!(oauth.refreshes(), 1);
    let after = held_tokens(&b);
    assert_ne!(before, after, "the rotated tokens were saved");

    // Two agents' verdicts on the server's tools, and one on a tool of the CLI's own.
    for agent in ["coder", "reviewer"] {
        b.add_claude_agent(agent, "http://127.0.0.1:9", &[])?;
        b.ok(&[
            "agent",
            "set",
            agent,
            "mcp.remote.whoami=allow",
            "Bash(git *)=allow",
        ])?;
        let shown = b.json(&["agent", "show", agent])?;
        assert_eq!(
            shown["approvals"]["verdicts"],
            serde_json::json!([["Bash(git *)", "allow"], ["mcp.remote.whoami", "allow"]]),
        );
    }

    // Sign-out revokes the refresh token and forgets everything, every agent's verdicts on
    // the server's tools too (an "always allow" must not outlive the sign-in it was given
    // under); the agents' other verdicts stay.
    let tokens = held_tokens(&b);
    let out = b.json(&["mcp", "sign-out", "remote"])?;
    for agent in ["coder", "reviewer"] {
        let shown = b.json(&["agent", "show", agent])?;
        assert_eq!(
            shown["approvals"]["verdicts"],
            serde_json::json!([["Bash(git *)", "allow"]]),
            "{agent}"
        );
    }
    assert_eq!(out["sign_in"]["state"], "not signed in");
    assert_eq!(
        out["sign_in"]["why"],
        "signed out; run `bosun mcp sign-in remote` to use it again"
    );
    assert_eq!(out["last_error"], Value::Null);
    assert_eq!(oauth.requests_to("/revoke").len(), 1);
    assert!(held_tokens(&b).is_empty(), "{:?}", keychain_values(&b));
    for t in tokens {
        b.assert_secret_nowhere(&t)?;
    }
    b.finish()
}

#[test]
fn every_discovery_variant_and_client_authentication_signs_in() -> anyhow::Result<()> {
    let variants: &[(&str, &[&str], &[&str])] = &[
        ("prm at the path only", &["--prm", "path"], &[]),
        ("prm at the root only", &["--prm", "root"], &[]),
        (
            "no prm: the server's origin is the issuer",
            &["--prm", "none"],
            &[],
        ),
        ("an issuer with a path", &["--issuer-path", "/tenant1"], &[]),
        (
            "OpenID metadata only",
            &["--metadata", "openid", "--issuer-path", "/t"],
            &[],
        ),
        (
            "no metadata: default endpoints",
            &["--metadata", "none"],
            &[],
        ),
        (
            "client_secret_basic from the registration",
            &["--auth-method", "client_secret_basic"],
            &[],
        ),
        (
            "client_secret_post from the registration",
            &["--auth-method", "client_secret_post"],
            &[],
        ),
        (
            "no registration: a configured client with a secret (basic)",
            &[
                "--registration",
                "off",
                "--client-id",
                "bosun-test-client",
                "--client-secret",
                "client-secret-for-bosun",
                "--auth-method",
                "client_secret_basic",
            ],
            &["--client-id", "bosun-test-client", "--client-secret-stdin"],
        ),
        (
            "no registration: a configured public client",
            &["--registration", "off", "--client-id", "public-client"],
            &["--client-id", "public-client"],
        ),
    ];
    for (what, server_flags, add_flags) in variants {
        let b = bosun("oauth_variants");
        let oauth = OAuthServer::start(server_flags)?;
        let signed =
            sign_in_and_use(&b, &oauth, add_flags).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
        let configured = add_flags.contains(&"--client-id");
        assert_eq!(signed["sign_in"]["registered"], !configured, "{what}");
        assert!(
            oauth.requests_to("/register").is_empty() == configured,
            "{what}"
        );
        let token = &oauth.requests_to("/token")[0];
        let want_auth = if server_flags.contains(&"client_secret_basic") {
            "basic"
        } else if server_flags.contains(&"client_secret_post") {
            "post"
        } else {
            "none"
        };
        assert_eq!(token["auth"], want_auth, "{what}: {token}");
        b.assert_secret_not_in_files("client-secret-for-bosun")?;
        for t in held_tokens(&b) {
            b.assert_secret_nowhere(&t)?;
        }
        b.finish()?;
    }
    Ok(())
}

#[test]
fn a_wider_scope_asked_by_a_403_leads_to_one_more_sign_in() -> anyhow::Result<()> {
    let b = bosun("oauth_step_up");
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    oauth.add_to(&b)?;
    let first = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(first["sign_in"]["scope"], "mcp:read");
    b.json(&["mcp", "tools", "remote"])?;
    let err = b.fails(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        err.contains("needs a wider sign-in") && err.contains("bosun mcp sign-in remote"),
        "{err}"
    );
    assert_eq!(
        sign_in_state(&b, "remote")?["wanted_scope"],
        "mcp:read mcp:write"
    );
    let second = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(second["sign_in"]["scope"], "mcp:read mcp:write");
    assert_eq!(second["sign_in"]["wanted_scope"], Value::Null);
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("mcp:write"))
    );
    // The step-up reuses the registration: a loopback redirect address matches on any port
    // (RFC 8252 §7.3), so the new port needs no new client.
    assert_eq!(oauth.requests_to("/register").len(), 1);
    b.finish()
}

/// With a person at the terminal, the wider sign-in happens within the one command: the
/// browser opens once, and the call goes on.
#[test]
fn a_wider_scope_asked_with_a_person_at_the_terminal_is_signed_in_and_the_call_goes_on()
-> anyhow::Result<()> {
    let b = bosun("oauth_step_up_at_hand");
    let oauth = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    oauth.add_to(&b)?;
    b.json(&["mcp", "sign-in", "remote"])?;
    let before = oauth.requests_to("/authorize").len();
    let (ok, said) = b.at_terminal(&["mcp", "call", "remote", "whoami"])?;
    assert!(ok, "{said}");
    assert!(
        said.contains("needs a wider sign-in")
            && said.contains("bosun: signing in to remote now, then asking once more")
            && said.contains("mcp:write"),
        "{said}"
    );
    assert_eq!(
        oauth.requests_to("/authorize").len(),
        before + 1,
        "the browser opened once"
    );
    assert_eq!(sign_in_state(&b, "remote")?["scope"], "mcp:read mcp:write");
    // Without a person at hand (no terminal), the command says what to run, as before.
    let b2 = bosun("oauth_step_up_unattended");
    let oauth2 = OAuthServer::start(&["--step-up", "--scopes", "mcp:read mcp:write"])?;
    oauth2.add_to(&b2)?;
    b2.json(&["mcp", "sign-in", "remote"])?;
    let err = b2.fails(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        err.contains("bosun mcp sign-in remote") && !err.contains("signing in"),
        "{err}"
    );
    b2.finish()?;
    b.finish()
}

#[test]
fn a_refused_refresh_asks_the_person_to_sign_in_again() -> anyhow::Result<()> {
    let b = bosun("oauth_refused_refresh");
    let oauth = OAuthServer::start(&["--refuse-refresh"])?;
    oauth.add_signed_in(&b, "remote")?;
    oauth.expire_tokens()?;
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(
        err.contains(
            "`remote` needs you to sign in again: the server refused to refresh the sign-in"
        ) && err.contains("run `bosun mcp sign-in remote`"),
        "{err}"
    );
    let state = sign_in_state(&b, "remote")?;
    assert_eq!(state["state"], "needs sign-in");
    assert!(
        held_tokens(&b).is_empty(),
        "the refused tokens are forgotten"
    );
    // Asked again, it does not refresh in a loop.
    b.fails(&["mcp", "tools", "remote"])?;
    assert_eq!(oauth.refreshes(), 1);
    b.ok(&["mcp", "sign-in", "remote"])?;
    b.json(&["mcp", "tools", "remote"])?;
    b.finish()
}

#[test]
fn bad_answers_are_refused_plainly_and_nothing_is_half_saved() -> anyhow::Result<()> {
    let cases: &[(&[&str], &str)] = &[
        (&["--malformed-metadata"], "is not valid metadata"),
        (
            &["--prm-resource", "http://127.0.0.1:1/mcp"],
            "which is not the server's own address",
        ),
        (
            &["--authorize-error", "access_denied"],
            "was not completed: the authorization server answered access_denied",
        ),
        (
            &["--wrong-state"],
            "whose state does not match the one bosun sent",
        ),
        (
            &["--registration", "off", "--client-id", "x"],
            "takes no registration from apps: give bosun a client id",
        ),
    ];
    for (flags, want) in cases {
        let b = bosun("oauth_refusals");
        let oauth = OAuthServer::start(flags)?;
        oauth.add_to(&b)?;
        let err = b.fails(&["mcp", "sign-in", "remote"])?;
        assert!(err.contains(want), "{flags:?}: {err}");
        assert_ne!(sign_in_state(&b, "remote")?["state"], "signed in");
        assert!(held_tokens(&b).is_empty(), "{flags:?}: nothing saved");
        if flags.contains(&"--prm-resource") {
            assert!(
                oauth.requests_to("/authorize").is_empty()
                    && oauth.requests_to("/register").is_empty(),
                "refused before any authorization request"
            );
        }
        b.finish()?;
    }

    // The listener's port is taken.
    let b = bosun("oauth_port_taken");
    let oauth = OAuthServer::start(&[])?;
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = taken.local_addr()?.port().to_string();
    b.ok(&[
        "mcp",
        "add",
        "remote",
        "--transport",
        "http",
        &oauth.mcp_url(),
        "--callback-port",
        &port,
    ])?;
    let err = b.fails(&["mcp", "sign-in", "remote"])?;
    assert!(
        err.contains(&format!("port {port} on 127.0.0.1"))
            && err.contains("is taken by another program"),
        "{err}"
    );
    drop(taken);
    b.finish()?;

    // The person never finishes: bosun gives up, saying so.
    let b = bosun("oauth_never")
        .with_env("TEST_BROWSER_MODE", "never")
        .with_env("BOSUN_SIGN_IN_WAIT", "2s");
    let oauth = OAuthServer::start(&[])?;
    oauth.add_to(&b)?;
    let err = b.fails(&["mcp", "sign-in", "remote"])?;
    assert!(
        err.contains("was not finished within 2s; nothing was saved"),
        "{err}"
    );
    assert!(held_tokens(&b).is_empty());
    b.finish()?;

    // A stdio server has nothing to sign in to.
    let b = bosun("oauth_stdio");
    b.ok(&["mcp", "add", "local", "--", "true"])?;
    let err = b.fails(&["mcp", "sign-in", "local"])?;
    assert!(
        err.contains("only a server reached by address signs in"),
        "{err}"
    );
    let err = b.fails(&["mcp", "edit", "local", "--client-id", "abc"])?;
    assert!(err.contains("are for a server reached by address"), "{err}");
    b.finish()
}

#[test]
fn claude_code_signs_in_itself_when_told_to() -> anyhow::Result<()> {
    let b = bosun("oauth_claude_code");
    let oauth = OAuthServer::start(&[])?;
    b.ok(&[
        "mcp",
        "add",
        "figma",
        "--transport",
        "http",
        &oauth.mcp_url(),
    ])?;
    b.ok(&["mcp", "sign-in", "figma"])?;
    assert!(!held_tokens(&b).is_empty());
    // Switching to Claude Code signs bosun out first (revoking).
    let shown = b.json(&["mcp", "edit", "figma", "--sign-in-by", "claude-code"])?;
    assert_eq!(shown["sign_in"]["state"], "Claude Code signs in");
    assert!(held_tokens(&b).is_empty());
    assert_eq!(oauth.requests_to("/revoke").len(), 1);
    let err = b.fails(&["mcp", "tools", "figma"])?;
    assert!(err.contains("Claude Code signs in to `figma`"), "{err}");
    let err = b.fails(&["mcp", "sign-in", "figma"])?;
    assert!(
        err.contains("Claude Code signs in to `figma` itself"),
        "{err}"
    );

    // A Claude Code run gets the address with no Authorization of bosun's; Claude Code, not
    // signed in, says `needs-auth`, and the run says how to sign Claude Code in.
    let fake = FakeModel::start("anthropic", "text:ok")?;
    b.add_claude_agent("designer", fake.url(), &[])?;
    b.ok(&["agent", "set", "designer", "mcp.figma=on"])?;
    let switches = &b.json(&["agent", "show", "designer"])?["switches"]["mcp"];
    let figma = switches
        .as_array()
        .and_then(|s| s.iter().find(|s| s["server"] == "figma"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(figma["sign_in"], "Claude Code signs in", "{switches:#}");
    let before = oauth.requests_to("/mcp").len();
    let out = b.output(&["agent", "run", "designer", "look at the design", "--follow"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MCP server figma needs Claude Code to sign in")
            && err.contains("type `/mcp`, choose figma and sign in"),
        "{err}"
    );
    let run = &b.json(&["ps", "--all"])?[0];
    assert_eq!(
        run["agent"]["servers"],
        serde_json::json!([["figma", "needs-auth"]]),
        "{run:#}"
    );
    let mcp = &oauth.requests_to("/mcp")[before..];
    assert!(
        !mcp.is_empty() && mcp.iter().all(|r| r["bearer_sha"].is_null()),
        "{mcp:#?}"
    );
    b.finish()
}

#[test]
fn a_short_lived_token_is_refreshed_ahead_of_expiry() -> anyhow::Result<()> {
    let b = bosun("oauth_ahead");
    let oauth = OAuthServer::start(&["--access-ttl", "3", "--rotate"])?;
    oauth.add_signed_in(&b, "remote")?;
    // With nobody asking, the refresher renews the token before it expires.
    bosun_tests::wait_for("a refresh ahead of expiry", Duration::from_secs(15), || {
        Ok((oauth.refreshes() >= 1).then_some(()))
    })?;
    b.json(&["mcp", "tools", "remote"])?;
    let mcp = oauth.requests_to("/mcp");
    assert!(
        mcp.iter()
            .all(|r| r["status"] != 401 || r["bearer_sha"].is_null()),
        "no expired token was used: {mcp:#?}"
    );
    b.finish()
}

#[test]
fn a_token_refused_right_after_its_refresh_is_not_refreshed_again_and_again() -> anyhow::Result<()>
{
    let b = bosun("oauth_refused_fresh");
    let oauth = OAuthServer::start(&["--rotate", "--refuse-refreshed"])?;
    oauth.add_signed_in(&b, "remote")?;
    oauth.expire_tokens()?;
    // Refreshed once; the new token refused too: the person is asked to sign in, plainly.
    let err = b.fails(&["mcp", "tools", "remote"])?;
    assert!(
        err.contains("`remote` needs you to sign in again: the server refused a token it had just issued; run `bosun mcp sign-in remote`"),
        "{err}"
    );
    let state = sign_in_state(&b, "remote")?;
    assert_eq!(state["state"], "needs sign-in");
    // Asked again, it does not refresh again.
    b.fails(&["mcp", "tools", "remote"])?;
    assert_eq!(oauth.refreshes(), 1, "one refresh, not a loop");
    assert!(
        held_tokens(&b).is_empty(),
        "the refused tokens are forgotten"
    );
    b.finish()
}

/// Issue 14: a server that lets `initialize` through and answers `tools/list` with the 401
/// left the person stuck between "nothing to sign in to" and "sign in". The sign-in now hears
/// the challenge wherever it comes, and every look says the same words.
#[test]
fn a_401_after_the_handshake_leads_to_sign_in() -> anyhow::Result<()> {
    let b = bosun("oauth_open_initialize");
    let oauth = OAuthServer::start(&["--open-initialize"])?;
    oauth.add_to(&b)?;
    for look in [
        &["mcp", "tools", "remote"][..],
        &["mcp", "inspect", "remote"],
        &["mcp", "call", "remote", "whoami"],
    ] {
        let err = b.fails(look)?;
        assert!(
            err.contains("the server needs sign-in: it answered 401 Unauthorized (WWW-Authenticate: Bearer resource_metadata=")
                && err.contains("sign in with `bosun mcp sign-in remote`"),
            "{look:?}: {err}"
        );
    }
    let signed = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(signed["sign_in"]["state"], "signed in", "{signed:#}");
    // The probe went past the handshake and heard the challenge on tools/list.
    let unsigned: Vec<Value> = oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| r["bearer_sha"].is_null())
        .collect();
    assert!(
        unsigned
            .iter()
            .any(|r| r["rpc"] == "initialize" && r["status"] == 200),
        "{unsigned:#?}"
    );
    assert!(
        unsigned
            .iter()
            .any(|r| r["rpc"] == "tools/list" && r["status"] == 401)
            || unsigned
                .iter()
                .any(|r| r["rpc"].is_null() && r["status"] == 401),
        "{unsigned:#?}"
    );
    assert_eq!(
        b.json(&["mcp", "tools", "remote"])?["tools"][0]["name"],
        "whoami"
    );
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("client=")),
        "{call}"
    );
    b.json(&["mcp", "inspect", "remote"])?;
    for t in held_tokens(&b) {
        b.assert_secret_nowhere(&t)?;
    }
    b.finish()
}

/// A 403 `insufficient_scope` that names only the scope it misses: the next sign-in asks for
/// that one and the ones held, and the call then works.
#[test]
fn a_step_up_asks_for_the_scopes_held_and_the_one_missing() -> anyhow::Result<()> {
    let b = bosun("oauth_step_up_union");
    let oauth = OAuthServer::start(&[
        "--open-initialize",
        "--step-up",
        "--step-up-names",
        "mcp:write",
    ])?;
    oauth.add_to(&b)?;
    let first = b.json(&["mcp", "sign-in", "remote"])?;
    assert_eq!(first["sign_in"]["scope"], "mcp:read offline_access");
    let err = b.fails(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        err.contains("the server needs a wider sign-in: it answered 403 insufficient_scope")
            && err.contains("sign in again with `bosun mcp sign-in remote`"),
        "{err}"
    );
    assert_eq!(sign_in_state(&b, "remote")?["wanted_scope"], "mcp:write");
    let second = b.json(&["mcp", "sign-in", "remote"])?;
    let asked = oauth.requests_to("/authorize");
    let asked = asked[asked.len() - 1]["scope"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let asked: Vec<&str> = asked.split_whitespace().collect();
    // The one asked for, and both held (offline_access too, or the refresh token goes).
    for s in ["mcp:read", "mcp:write", "offline_access"] {
        assert!(asked.contains(&s), "{s} in {asked:?}");
    }
    let granted = second["sign_in"]["scope"].as_str().unwrap_or_default();
    assert!(
        granted.contains("mcp:write") && granted.contains("offline_access"),
        "{second:#}"
    );
    let call = b.json(&["mcp", "call", "remote", "whoami"])?;
    assert!(
        call["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("mcp:write")),
        "{call}"
    );
    b.finish()
}

/// A server that keeps asking for a wider scope gets three step-ups, then bosun stops, saying
/// what to do.
#[test]
fn step_ups_stop_after_three() -> anyhow::Result<()> {
    let b = bosun("oauth_step_up_bound");
    let oauth = OAuthServer::start(&["--step-up", "--step-up-forever"])?;
    oauth.add_to(&b)?;
    b.ok(&["mcp", "sign-in", "remote"])?;
    for _ in 0..3 {
        let err = b.fails(&["mcp", "call", "remote", "whoami"])?;
        assert!(err.contains("needs a wider sign-in"), "{err}");
        b.ok(&["mcp", "sign-in", "remote"])?;
    }
    b.fails(&["mcp", "call", "remote", "whoami"])?;
    let err = b.fails(&["mcp", "sign-in", "remote"])?;
    assert!(
        err.contains("`remote` asked for a wider sign-in 3 times in a row; bosun stops there")
            && err.contains("bosun mcp sign-out remote"),
        "{err}"
    );
    assert_eq!(oauth.requests_to("/authorize").len(), 4);
    b.finish()
}
