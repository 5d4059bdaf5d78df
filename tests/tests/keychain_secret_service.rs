//! Secrets in a real Secret Service (gnome-keyring on a private D-Bus session bus), not only in
//! the file fake: saved, read back for the server, replaced, removed with the server — and never
//! written anywhere in bosun's state directory.

use bosun_tests::{Bosun, SecretService, everything_bin};

const CANARY: &str = "canary-ss-2e91b7";

#[test]
fn secrets_round_trip_through_a_real_secret_service() -> anyhow::Result<()> {
    let ss = SecretService::start()?;
    let b = Bosun::new("keychain_ss")
        .without_fake_keychain()
        .with_env("DBUS_SESSION_BUS_ADDRESS", &ss.address);
    let bin = everything_bin();
    let out = b.output_with_stdin(
        &[
            "mcp",
            "add",
            "everything",
            "--env-from-stdin",
            "--",
            bin.to_str().unwrap_or_default(),
            "stdio",
        ],
        &format!("SS_SECRET={CANARY}\n"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = std::fs::read_to_string(b.home.join("bosund.log"))?;
    assert!(
        status.contains("keychain=Secret Service"),
        "bosund uses the Secret Service"
    );
    let shown = b.json(&["mcp", "show", "everything"])?;
    assert_eq!(
        shown["env"][0],
        serde_json::json!({"name": "SS_SECRET", "saved": true})
    );

    // The server gets the value from the keychain: its get-env tool prints it, and bosun shows
    // `[redacted]` in its place (it hides exactly the values it handed the server).
    let env = b.ok(&["mcp", "call", "everything", "get-env"])?;
    assert!(
        env.contains("SS_SECRET") && env.contains("[redacted]") && !env.contains(CANARY),
        "the server did not get the value from the keychain: {env}"
    );

    // Replaced, the server sees the new value: the old one would not be hidden any more.
    b.output_with_stdin(
        &["mcp", "edit", "everything", "--env-from-stdin"],
        "SS_SECRET=second-value\n",
    )?;
    let env = b.ok(&["mcp", "call", "everything", "get-env"])?;
    assert!(
        env.contains("[redacted]") && !env.contains("second-value") && !env.contains(CANARY),
        "{env}"
    );

    // Removed with the server: a new server of the same name does not find it.
    b.ok(&["mcp", "remove", "everything"])?;
    b.ok(&[
        "mcp",
        "add",
        "everything",
        "-e",
        "OTHER=x",
        "--",
        bin.to_str().unwrap_or_default(),
        "stdio",
    ])?;
    let env = b.ok(&["mcp", "call", "everything", "get-env"])?;
    assert!(!env.contains("second-value"));

    // Nothing of it in the state directory (store, logs).
    b.assert_secret_not_in_files(CANARY)?;
    b.assert_secret_not_in_files("second-value")?;
    b.finish()
}

#[test]
fn a_locked_or_absent_secret_service_is_reported_plainly() -> anyhow::Result<()> {
    // A bus with no Secret Service on it.
    let bus = bosun_tests::SessionBus::start(&[])?;
    let b = Bosun::new("keychain_absent")
        .without_fake_keychain()
        .with_env("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    let out = b.output_with_stdin(
        &["mcp", "add", "x", "--env-from-stdin", "--", "true"],
        "A=b\n",
    )?;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    drop(bus);
    assert!(!out.status.success());
    assert!(
        err.contains("no keychain is available") || err.contains("the keychain is locked"),
        "{err}"
    );
    assert!(
        b.json(&["mcp", "list"])?
            .as_array()
            .is_some_and(|a| a.iter().all(|s| s["builtin"] == true)),
        "only the built-in browser"
    );
    b.finish()
}
