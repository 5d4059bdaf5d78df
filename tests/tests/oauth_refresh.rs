//! The token refresher under load and across crashes, against the project's own authorization
//! and protected MCP server (`oauth-server`) with rotating refresh tokens (each works once):
//! twenty real Claude Code runs started at once on an expired token make exactly one refresh and
//! all use the same new token; a daemon killed at each point of a refresh leaves bosun holding
//! the new tokens, or a still valid old one, or — only when the server had already rotated the
//! token — saying plainly that the person must sign in again.

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, OAuthServer, keychain_values, wait_for};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A bosun whose "browser" is test-browser, with `remote` added and signed in.
fn signed_in(test: &str, oauth: &OAuthServer) -> anyhow::Result<Bosun> {
    let b = Bosun::new(test).with_test_browser();
    oauth.add_signed_in(&b, "remote")?;
    Ok(b)
}

/// The token held in the keychain under `…/oauth/<which>`.
fn held(b: &Bosun, which: &str) -> Option<String> {
    keychain_values(b)
        .iter()
        .find(|(k, _)| k.ends_with(&format!("/oauth/{which}")))
        .and_then(|(_, v)| v.as_str().map(str::to_string))
}

/// The name oauth-server logs a token by: the first 8 hex digits of its SHA-256.
fn short_sha(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn twenty_runs_on_an_expired_token_make_one_refresh_and_share_its_token() -> anyhow::Result<()> {
    // The signed-in token lives 4 s, the refreshed one an hour; the refresh answers slowly, so
    // that the runs' requests for a token surely overlap it.
    let oauth = OAuthServer::start(&[
        "--rotate",
        "--access-ttl",
        "4",
        "--refreshed-ttl",
        "3600",
        "--refresh-delay-ms",
        "1500",
    ])?;
    let b = Bosun::new("oauth_twenty_runs").with_test_browser();
    oauth.add_to(&b)?;
    let fake = FakeModel::start("anthropic", "text:ok")?;
    // Each run wants a token good for its whole time cap, longer than any token lives, and
    // must not refresh again a token that was just refreshed.
    b.add_claude_agent("coder", fake.url(), &["--time-cap", "2h"])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;
    b.ok(&["mcp", "sign-in", "remote"])?;
    let signed_at = std::time::Instant::now();
    // The daemon is stopped before its refresher renews the token ahead of expiry (at 3.6 s),
    // and started again by the runs once the token has expired.
    b.ok(&["daemon", "stop"])?;
    let old_access = held(&b, "access").unwrap_or_default();
    assert_eq!(oauth.refreshes(), 0);
    std::thread::sleep(Duration::from_secs(5).saturating_sub(signed_at.elapsed()));
    let before = oauth.requests().len();

    // Twenty `bosun agent run` at once, each its own client of the daemon.
    let ids: Vec<String> = std::thread::scope(|s| {
        let started: Vec<_> = (0..20)
            .map(|i| {
                let b = &b;
                s.spawn(move || b.json(&["agent", "run", "coder", &format!("task {i}")]))
            })
            .collect();
        started
            .into_iter()
            .map(|h| match h.join() {
                Ok(Ok(run)) => Ok(run["id"].as_str().unwrap_or_default().to_string()),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(anyhow::anyhow!("a thread starting a run panicked")),
            })
            .collect::<anyhow::Result<_>>()
    })?;
    for id in &ids {
        let run = b.wait_ended(id, Duration::from_secs(240))?;
        assert_eq!(run["outcome"], "succeeded", "{run:#}");
        assert_eq!(
            run["agent"]["servers"],
            serde_json::json!([["remote", "connected"]]),
            "{run:#}"
        );
    }

    // Exactly one refresh, and every run used the token it gave — never the expired one.
    assert_eq!(oauth.refreshes(), 1);
    let new_access = held(&b, "access").unwrap_or_default();
    assert_ne!(new_access, old_access);
    let mcp: Vec<Value> = oauth.requests()[before..]
        .iter()
        .filter(|r| r["path"] == "/mcp")
        .cloned()
        .collect();
    assert!(mcp.len() >= 20, "every run reached the server: {mcp:#?}");
    assert!(
        mcp.iter()
            .all(|r| r["bearer_sha"] == short_sha(&new_access) && r["status"] != 401),
        "every run used the new token: {mcp:#?}"
    );
    b.assert_secret_nowhere(&new_access)?;
    b.assert_secret_nowhere(&old_access)?;

    // Signed out, the server is left out of a run, which says how to sign in.
    b.ok(&["mcp", "sign-out", "remote"])?;
    let out = b.output(&["agent", "run", "coder", "once more", "--follow"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not signed in") && err.contains("bosun mcp sign-in remote"),
        "{err}"
    );
    let all = b.json(&["ps", "--all"])?;
    let last = all
        .as_array()
        .and_then(|runs| runs.iter().max_by_key(|r| r["created_at"].as_u64()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        last["agent"]["servers"],
        serde_json::json!([["remote", "left out: not signed in"]]),
        "{last:#}"
    );
    b.finish()
}

/// Kills the daemon at `point` of a refresh of an expired token (`mcp tools` asks for one),
/// and returns what `mcp tools` says once it is started again normally.
fn crash_during_refresh(
    b: &Bosun,
    oauth: &OAuthServer,
    point: &str,
) -> anyhow::Result<std::process::Output> {
    oauth.expire_tokens()?;
    b.ok(&["daemon", "stop"])?;
    let out = b
        .cmd(&["mcp", "tools", "remote"])
        .env("BOSUN_CRASH_AT", point)
        .output()?;
    assert!(!out.status.success(), "{point}: the daemon was to die");
    wait_for("the daemon to be gone", Duration::from_secs(10), || {
        Ok(b.daemon_pid().is_none().then_some(()))
    })?;
    b.output(&["mcp", "tools", "remote", "--json"])
}

#[test]
fn a_daemon_killed_mid_refresh_holds_good_tokens_or_says_to_sign_in_again() -> anyhow::Result<()> {
    // Before the request: the server never saw it, the stored token still works.
    let oauth = OAuthServer::start(&["--rotate"])?;
    let b = signed_in("oauth_crash_before", &oauth)?;
    let out = crash_during_refresh(&b, &oauth, "refresh-before-request")?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(oauth.refreshes(), 1, "refreshed once, after the restart");
    assert_eq!(
        b.json(&["mcp", "show", "remote"])?["sign_in"]["state"],
        "signed in"
    );
    b.finish()?;

    // After the answer, before the save: the server rotated the token bosun never kept.
    let oauth = OAuthServer::start(&["--rotate"])?;
    let b = signed_in("oauth_crash_answer", &oauth)?;
    let out = crash_during_refresh(&b, &oauth, "refresh-after-answer")?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`remote` needs you to sign in again: a token refresh was cut off by a crash")
            && err.contains("bosun mcp sign-in remote"),
        "{err}"
    );
    let state = &b.json(&["mcp", "show", "remote"])?["sign_in"];
    assert_eq!(state["state"], "needs sign-in", "{state}");
    assert!(
        state["why"]
            .as_str()
            .unwrap_or_default()
            .contains("cut off by a crash")
    );
    assert_eq!(
        oauth.refreshes(),
        2,
        "one cut off, one tried with the kept token"
    );
    // Signing in again puts it right.
    b.ok(&["mcp", "sign-in", "remote"])?;
    b.json(&["mcp", "tools", "remote"])?;
    b.finish()?;

    // The same crash against a server that does not rotate: the old token still refreshes.
    let oauth = OAuthServer::start(&[])?;
    let b = signed_in("oauth_crash_answer_kept", &oauth)?;
    let out = crash_during_refresh(&b, &oauth, "refresh-after-answer")?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(oauth.refreshes(), 2);
    b.finish()?;

    // After the save: the new tokens are held and used; no refresh is needed.
    let oauth = OAuthServer::start(&["--rotate"])?;
    let b = signed_in("oauth_crash_saved", &oauth)?;
    let before = held(&b, "refresh");
    let out = crash_during_refresh(&b, &oauth, "refresh-after-save")?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(oauth.refreshes(), 1);
    assert_ne!(held(&b, "refresh"), before, "the rotated token was kept");
    b.finish()
}
