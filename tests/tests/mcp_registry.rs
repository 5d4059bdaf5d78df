//! The MCP server registry through the real command line: add, list, show, edit, rename,
//! remove; secrets in the keychain and nowhere else; bad input refused with nothing half-saved.

use bosun_tests::Bosun;
use serde_json::Value;

const CANARY: &str = "canary-7f3a9c21-secret";

fn keychain(b: &Bosun) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(b.keychain_file()).unwrap_or_else(|_| "{}".into());
    Ok(serde_json::from_str(&text)?)
}

#[test]
fn a_servers_secrets_go_to_the_keychain_and_nowhere_else() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_secrets");
    // From stdin, so the value is not on any command line.
    let out = b.output_with_stdin(
        &[
            "mcp",
            "add",
            "github",
            "--env-from-stdin",
            "--json",
            "--",
            "npx",
            "-y",
            "@acme/github-mcp",
        ],
        &format!("GITHUB_TOKEN={CANARY}\n"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Value = serde_json::from_slice(&out.stdout)?;
    let id = added["id"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        added["env"][0],
        serde_json::json!({"name": "GITHUB_TOKEN", "saved": true})
    );

    // Header values too, and from -H as claude mcp add takes them.
    b.ok(&[
        "mcp",
        "add",
        "remote",
        "--transport",
        "http",
        "https://example.com/mcp",
        "-H",
        &format!("Authorization: Bearer {CANARY}"),
    ])?;

    let keys = keychain(&b)?;
    assert_eq!(keys[format!("mcp/{id}/env/GITHUB_TOKEN")], CANARY);
    let show = b.ok(&["mcp", "show", "github"])?;
    assert!(show.contains("GITHUB_TOKEN (saved)"), "{show}");
    b.ok(&["mcp", "list"])?;
    b.ok(&["mcp", "list", "--json"])?;
    b.ok(&["mcp", "show", "remote", "--json"])?;

    // Replacing the value keeps one line; renaming the line needs its value again and the old
    // name's value goes.
    b.output_with_stdin(
        &["mcp", "edit", "github", "--env-from-stdin"],
        "GITHUB_TOKEN=second-value\n",
    )?;
    assert_eq!(
        keychain(&b)?[format!("mcp/{id}/env/GITHUB_TOKEN")],
        "second-value"
    );
    let out = b.output_with_stdin(
        &[
            "mcp",
            "edit",
            "github",
            "--remove-env",
            "GITHUB_TOKEN",
            "--env-from-stdin",
        ],
        "GH_TOKEN=third-value\n",
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keys = keychain(&b)?;
    assert!(
        keys.get(format!("mcp/{id}/env/GITHUB_TOKEN")).is_none(),
        "{keys}"
    );
    assert_eq!(keys[format!("mcp/{id}/env/GH_TOKEN")], "third-value");

    // A rename keeps the id (and so the secrets).
    let renamed = b.json(&["mcp", "rename", "github", "gh"])?;
    assert_eq!(renamed["id"], id.as_str());
    assert_eq!(renamed["env"][0]["saved"], true);

    // Removing the server removes its secrets.
    b.ok(&["mcp", "remove", "gh"])?;
    let keys = keychain(&b)?;
    assert!(!keys.to_string().contains(&id), "{keys}");
    assert!(
        b.fails(&["mcp", "show", "gh"])?
            .contains("there is no MCP server `gh`")
    );

    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn bad_input_is_refused_with_the_reason_and_nothing_is_saved() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_bad_input");
    b.ok(&["mcp", "add", "taken", "--", "true"])?;
    let cases: &[(&[&str], &str)] = &[
        (
            &["mcp", "add", "a b", "--", "true"],
            "has ` ` in it; a server name takes only letters, digits, - and _",
        ),
        (&["mcp", "add", "a.b", "--", "true"], "has `.` in it"),
        (
            &["mcp", "add", "bosun__notes", "--", "true"],
            "has two _ in a row",
        ),
        (&["mcp", "add", "notes_", "--", "true"], "ends with _"),
        (
            &["mcp", "add", "bosun", "--", "true"],
            "`bosun` is taken by bosun itself",
        ),
        (
            &["mcp", "add", "chrome-devtools", "--", "true"],
            "`chrome-devtools` is taken by bosun itself",
        ),
        (
            &["mcp", "add", "taken", "--", "true"],
            "there is already a server named `taken`",
        ),
        (
            &["mcp", "add", "ftp", "--url", "ftp://example.com/mcp"],
            "is a ftp address; an MCP server's address starts with http:// or https://",
        ),
        (
            &["mcp", "add", "junk", "--url", "not a url"],
            "is not an address",
        ),
        (&["mcp", "add", "nocmd"], "a stdio server needs a command"),
        (
            &["mcp", "add", "e1", "-e", "1BAD=x", "--", "true"],
            "`1BAD` is not an environment variable name",
        ),
        (
            &["mcp", "add", "e2", "-e", "NOVALUE", "--", "true"],
            "no value given for NOVALUE, and there is no terminal to ask on",
        ),
        (
            &[
                "mcp",
                "add",
                "h1",
                "--url",
                "https://x.example/mcp",
                "-H",
                "Accept: x",
            ],
            "the header Accept is set by bosun itself",
        ),
        (&["mcp", "rename", "taken", "bad name"], "has ` ` in it"),
        (
            &["mcp", "rename", "ghost", "fine"],
            "there is no MCP server `ghost`",
        ),
        (
            &["mcp", "edit", "taken", "--remove-env", "NOPE"],
            "`taken` has no environment line NOPE to remove",
        ),
        (
            &["mcp", "edit", "taken", "--transport", "http"],
            "an http or sse server needs an address",
        ),
    ];
    for (args, want) in cases {
        let err = b.fails(args)?;
        assert!(
            err.contains(want),
            "bosun {args:?} said: {err}\nexpected: {want}"
        );
    }
    let err = b.output_with_stdin(
        &["mcp", "add", "stdin", "--env-from-stdin", "--", "true"],
        "JUSTANAME\n",
    )?;
    assert!(
        String::from_utf8_lossy(&err.stderr)
            .contains("line 1 on stdin is neither KEY=VALUE nor 'Name: value'")
    );
    let list = b.json(&["mcp", "list"])?;
    let names: Vec<&str> = list
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        ["chrome-devtools", "taken"],
        "nothing half-saved (the browser is built in)"
    );
    assert!(keychain(&b)?.as_object().is_none_or(|m| m.is_empty()));
    b.finish()
}

#[test]
fn without_a_keychain_a_secret_is_refused_plainly_and_never_kept_in_plaintext() -> anyhow::Result<()>
{
    // No fake file, and no session bus: no keychain at all.
    let b = Bosun::new("mcp_no_keychain")
        .without_fake_keychain()
        .with_env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus");
    let out = b.output_with_stdin(
        &["mcp", "add", "gh", "--env-from-stdin", "--", "true"],
        &format!("TOKEN={CANARY}\n"),
    )?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no keychain is available"), "{err}");
    assert!(err.contains("BOSUN_FAKE_KEYCHAIN"), "{err}");
    assert!(
        b.json(&["mcp", "list"])?
            .as_array()
            .is_some_and(|a| a.iter().all(|s| s["builtin"] == true))
    );
    // A server without secrets needs no keychain.
    b.ok(&["mcp", "add", "plain", "--", "true"])?;
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}
