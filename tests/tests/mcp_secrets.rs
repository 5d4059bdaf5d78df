//! No secret shown anywhere: addresses and headers that would leak one are refused with the fix,
//! an address's query is kept in the keychain and shown as `?…`, and a canary handed to servers
//! (an environment line, a header line, an address's query) and echoed back by them is
//! `[redacted]` in every answer and error — and found in no output, log or store file.

use bosun_tests::{Bosun, FakeModel, Peer, free_port, keychain_values, test_server_bin};
use serde_json::Value;

const CANARY: &str = "canary-5be1d0c7-secret";

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn addresses_and_headers_that_would_leak_are_refused_with_the_fix() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_address_rules");
    let with_credentials = format!("http://ann:{CANARY}@example.com/mcp?key={CANARY}");
    let ftp = format!("ftp://example.com/mcp?key={CANARY}");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![
                "mcp",
                "add",
                "creds",
                "--transport",
                "http",
                &with_credentials,
            ],
            vec![
                "`http://…@example.com/mcp?…` has a user name or password in it",
                "--header 'Authorization: Basic <base64 of user:password>'",
            ],
        ),
        (
            vec!["mcp", "add", "ftp", "--url", &ftp],
            vec!["`ftp://example.com/mcp?…` is a ftp address"],
        ),
        (
            vec!["mcp", "add", "lan", "--url", "http://example.com/mcp"],
            vec![
                "is plain http:// to example.com, which is not this machine",
                "allow it with --allow-http",
            ],
        ),
        (
            vec!["mcp", "add", "frag", "--url", "https://example.com/mcp#top"],
            vec!["has a #fragment, which is never sent to a server"],
        ),
        (
            vec!["mcp", "add", "s", "--allow-http", "--", "true"],
            vec!["--allow-http is for a server reached by address"],
        ),
    ];
    for (args, wants) in &cases {
        let err = b.fails(args)?;
        for want in wants {
            assert!(
                err.contains(want),
                "bosun {args:?} said: {err}\nexpected: {want}"
            );
        }
    }
    for header in [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Content-Type",
        "Accept",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
        "Mcp-Param-Repo",
        "Last-Event-ID",
    ] {
        let line = format!("{header}: x");
        let err = b.fails(&[
            "mcp",
            "add",
            "h",
            "--url",
            "https://example.com/mcp",
            "-H",
            &line,
        ])?;
        let want = format!("the header {header} is set by bosun itself and cannot be given: ");
        assert!(err.contains(&want), "{header}: {err}");
    }

    // Allowed plain http is kept, and shown.
    b.ok(&[
        "mcp",
        "add",
        "lan",
        "--url",
        "http://example.com/mcp",
        "--allow-http",
    ])?;
    let shown = b.ok(&["mcp", "show", "lan"])?;
    assert!(
        shown.contains("http: http://example.com/mcp (plain http allowed)"),
        "{shown}"
    );
    assert!(b.ok(&["mcp", "list"])?.contains("(plain http allowed)"));
    assert_eq!(b.json(&["mcp", "show", "lan"])?["allow_http"], true);
    let err = b.fails(&["mcp", "edit", "lan", "--no-allow-http"])?;
    assert!(err.contains("is plain http:// to example.com"), "{err}");
    assert_eq!(b.json(&["mcp", "show", "lan"])?["allow_http"], true);
    let https = b.json(&[
        "mcp",
        "edit",
        "lan",
        "--url",
        "https://example.com/mcp",
        "--no-allow-http",
    ])?;
    assert_eq!(https["allow_http"], false);
    // This machine needs no permission.
    for (name, url) in [
        ("local", "http://localhost:9/mcp"),
        ("local4", "http://127.0.0.2:9/mcp"),
        ("local6", "http://[::1]:9/mcp"),
    ] {
        b.ok(&["mcp", "add", name, "--url", url])?;
    }
    assert_eq!(
        names(&b.json(&["mcp", "list"])?),
        ["chrome-devtools", "lan", "local", "local4", "local6"],
        "nothing refused was saved"
    );
    assert!(keychain_values(&b).is_empty());
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn a_canary_handed_to_servers_is_redacted_everywhere_and_kept_only_in_the_keychain()
-> anyhow::Result<()> {
    let b = Bosun::new("mcp_canary")
        .with_env("BOSUN_MCP_TIMEOUT", "5s")
        .with_env("BOSUN_SIGN_IN_WAIT", "2s");
    let peer = Peer::test_server("echo-secrets")?;
    let bin = test_server_bin();
    let bin = bin.to_str().unwrap_or_default();
    let hidden = format!("{}?…", peer.url);

    // By address: the canary in the query and in a header line (from stdin).
    let url = format!("{}?key={CANARY}&team=blue", peer.url);
    let out = b.output_with_stdin(
        &[
            "mcp",
            "add",
            "remote",
            "--url",
            &url,
            "--env-from-stdin",
            "--json",
        ],
        &format!("X-Api-Key: {CANARY}\n"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Value = serde_json::from_slice(&out.stdout)?;
    let remote_id = added["id"].as_str().unwrap_or_default().to_string();
    assert_eq!(added["url"], hidden.as_str());
    let keys = keychain_values(&b);
    assert_eq!(
        keys[&format!("mcp/{remote_id}/url-query")],
        format!("key={CANARY}&team=blue").as_str()
    );
    assert!(
        b.ok(&["mcp", "show", "remote"])?
            .contains(&format!("http: {hidden}"))
    );
    assert!(b.ok(&["mcp", "list"])?.contains(&format!("http: {hidden}")));
    assert_eq!(b.json(&["mcp", "list"])?[1]["url"], hidden.as_str());

    // The server says back what it was given (the header, then the query): redacted in the
    // listing (kept too), the inspection, a call's answer and an error.
    let both = "I was given: [redacted] [redacted]";
    let listing = b.json(&["mcp", "tools", "remote"])?;
    assert_eq!(
        listing["tools"][0]["description"],
        "Tells what it was given: [redacted] [redacted]"
    );
    let cached = b.json(&["mcp", "tools", "remote", "--cached"])?;
    assert_eq!(
        cached["tools"][0]["description"],
        listing["tools"][0]["description"]
    );
    // In the input schema as sent.
    assert_eq!(
        listing["tools"][0]["input_schema"]["properties"]["why"]["description"],
        "given: [redacted] [redacted]"
    );
    let inspect = b.json(&["mcp", "inspect", "remote"])?;
    assert_eq!(inspect["instructions"], both);
    let call = b.json(&["mcp", "call", "remote", "reveal"])?;
    assert_eq!(call["content"][0]["text"], both);
    assert_eq!(call["structured"]["given"], "[redacted] [redacted]");
    assert!(b.ok(&["mcp", "call", "remote", "reveal"])?.contains(both));
    let err = b.fails(&["mcp", "call", "remote", "fail"])?;
    assert!(
        err.contains("failed on purpose, holding [redacted] [redacted]"),
        "{err}"
    );
    // A sign-in goes to the address without its query; whatever it says, no canary.
    let _ = b.output(&["mcp", "sign-in", "remote", "--no-browser"])?;

    // An address that cannot be reached is named with its query hidden.
    let gone = format!("http://127.0.0.1:{}/mcp?key={CANARY}", free_port()?);
    b.ok(&["mcp", "add", "gone", "--url", &gone])?;
    let err = b.fails(&["mcp", "tools", "gone"])?;
    assert!(err.contains("/mcp?… refused the connection"), "{err}");
    assert!(
        b.ok(&["mcp", "list"])?
            .contains("/mcp?… refused the connection")
    );

    // A new query replaces the old; an address without one removes it; `?…` is not a query.
    b.ok(&[
        "mcp",
        "edit",
        "remote",
        "--url",
        &format!("{}?token={CANARY}", peer.url),
    ])?;
    assert_eq!(
        keychain_values(&b)[&format!("mcp/{remote_id}/url-query")],
        format!("token={CANARY}").as_str()
    );
    let call = b.json(&["mcp", "call", "remote", "reveal"])?;
    assert_eq!(call["content"][0]["text"], both);
    let err = b.fails(&["mcp", "edit", "remote", "--url", &hidden])?;
    assert!(
        err.contains("how bosun shows a query it keeps hidden"),
        "{err}"
    );
    b.ok(&["mcp", "edit", "remote", "--url", &peer.url])?;
    assert!(
        !keychain_values(&b).contains_key(&format!("mcp/{remote_id}/url-query")),
        "the old query goes with the address"
    );
    assert_eq!(
        b.json(&["mcp", "show", "remote"])?["url"],
        peer.url.as_str()
    );
    let call = b.json(&["mcp", "call", "remote", "reveal"])?;
    assert_eq!(call["content"][0]["text"], "I was given: [redacted]");

    // Over stdio: the canary in an environment line, echoed in every answer and on stderr.
    b.output_with_stdin(
        &[
            "mcp",
            "add",
            "local",
            "--env-from-stdin",
            "--",
            bin,
            "--mode",
            "echo-secrets",
        ],
        &format!("TEST_SECRET={CANARY}\n"),
    )?;
    let listing = b.json(&["mcp", "tools", "local"])?;
    assert_eq!(
        listing["tools"][0]["description"],
        "Tells what it was given: [redacted]"
    );
    assert_eq!(
        b.json(&["mcp", "inspect", "local"])?["instructions"],
        "I was given: [redacted]"
    );
    assert_eq!(
        b.json(&["mcp", "call", "local", "reveal"])?["content"][0]["text"],
        "I was given: [redacted]"
    );
    b.output_with_stdin(
        &[
            "mcp",
            "add",
            "exits",
            "--env-from-stdin",
            "--",
            bin,
            "--mode",
            "exit",
        ],
        &format!("TEST_SECRET={CANARY}\n"),
    )?;
    let err = b.fails(&["mcp", "tools", "exits"])?;
    assert!(err.contains("using token [redacted]"), "{err}");

    // Removing the servers removes their secrets, the query with them.
    for name in ["remote", "gone", "local", "exits"] {
        b.ok(&["mcp", "remove", name])?;
    }
    assert!(keychain_values(&b).is_empty(), "{:?}", keychain_values(&b));

    // Nowhere: not in anything printed, the daemon's log, the store or any other file.
    assert!(b.home.join("bosund.log").exists());
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn a_run_reaches_the_whole_address_and_shows_the_canary_it_gets_back_nowhere() -> anyhow::Result<()>
{
    let b = Bosun::new("mcp_canary_run");
    let peer = Peer::test_server("echo-secrets")?;
    let fake = FakeModel::start("anthropic", "tool:reveal;text:Done.")?;
    let url = format!("{}?key={CANARY}&team=blue", peer.url);
    let out = b.output_with_stdin(
        &["mcp", "add", "remote", "--url", &url, "--env-from-stdin"],
        &format!("X-Api-Key: {CANARY}\n"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    b.ok(&["mcp", "tools", "remote"])?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;

    let out = b.output(&[
        "agent",
        "run",
        "coder",
        "say what you were given",
        "--follow",
    ])?;
    assert!(
        out.status.success(),
        "the run failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Claude Code reached the server at its whole address, with the header line: the server's
    // answer, as the model got it, holds both.
    let turns = fake.turns();
    let result = turns
        .get(1)
        .and_then(|t| t["tool_result"].as_str())
        .unwrap_or_default();
    assert!(
        result.contains(&format!("{CANARY} key={CANARY}&team=blue")),
        "{turns:#?}"
    );
    // bosun shows it nowhere: not in the run's output, its log, the store or the daemon's log.
    let run = b.json(&["ps", "--all"])?[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&["logs", &run])?;
    b.ok(&["show", &run])?;
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}
