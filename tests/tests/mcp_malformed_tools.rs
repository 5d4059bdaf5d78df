//! One malformed tool definition does not spoil a listing: the server's other tools are listed
//! and callable, each bad one is shown with what is wrong, and an `inputSchema` (JSON Schema
//! 2020-12, `$ref` and `$defs` included) is kept and shown exactly as the server sent it.

use bosun_tests::{Bosun, Peer, test_server_bin};
use serde_json::Value;

/// The input schema `test-mcp-server --mode malformed` sends for `schema-ref`.
const SCHEMA_REF: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"point":{"type":"object","properties":{"x":{"type":"number","minimum":1.50},"y":{"type":"number"}},"required":["x","y"]}},"properties":{"at":{"$ref":"#/$defs/point"},"label":{"type":["string","null"],"x-vendor":{"keep":[1,2,3]}}},"required":["at"],"additionalProperties":false}"##;

const CANARY: &str = "canary-7d1e2f-malformed";

/// `leaky`: whether the server was handed the canary, and lists a malformed tool holding it.
fn check(b: &Bosun, name: &str, leaky: bool) -> anyhow::Result<()> {
    let listing = b.json(&["mcp", "tools", name])?;
    let names: Vec<&str> = listing["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["echo", "schema-ref"], "{listing:#}");
    let schema: Value = serde_json::from_str(SCHEMA_REF)?;
    assert_eq!(
        listing["tools"][1]["input_schema"], schema,
        "kept as sent: {listing:#}"
    );
    let malformed = listing["malformed"].as_array().cloned().unwrap_or_default();
    let problems: Vec<(Value, String)> = malformed
        .iter()
        .map(|m| {
            (
                m["name"].clone(),
                m["problem"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(problems.len(), 4 + usize::from(leaky), "{problems:?}");
    if leaky {
        assert_eq!(problems[4].0, "leaky");
        assert!(
            problems[4].1.contains("[redacted]") && !problems[4].1.contains(CANARY),
            "{problems:?}"
        );
    }
    let bad = 4 + usize::from(leaky);
    assert_eq!(problems[0].0, "no-schema");
    assert!(problems[0].1.contains("inputSchema"), "{problems:?}");
    assert_eq!(problems[1].0, Value::Null);
    assert!(problems[1].1.contains("has no name"), "{problems:?}");
    assert_eq!(problems[2].0, "bad-hints");
    assert!(
        problems[2].1.contains("definition is not valid"),
        "{problems:?}"
    );
    assert_eq!(problems[3].0, "array-schema");

    // The good ones are callable.
    let call = b.json(&["mcp", "call", name, "echo", "--args", r#"{"message":"hi"}"#])?;
    assert_eq!(call["content"][0]["text"], "Echo: hi", "{call}");
    let call = b.json(&[
        "mcp",
        "call",
        name,
        "schema-ref",
        "--args",
        r#"{"at":{"x":2,"y":3}}"#,
    ])?;
    assert_eq!(call["content"][0]["text"], "called schema-ref", "{call}");

    // The kept listing says the same, without starting the server.
    let kept = b.json(&["mcp", "tools", name, "--cached"])?;
    assert_eq!(kept["malformed"].as_array().map(Vec::len), Some(bad));
    assert_eq!(kept["tools"][1]["input_schema"], schema);

    // Shown in words.
    let text = b.ok(&["mcp", "tools", name])?;
    assert!(
        text.contains(&format!(
            "{bad} tool definitions are malformed; bosun lists and calls the others:"
        )) && text.contains("`no-schema`: ")
            && text.contains("a tool without a name: "),
        "{text}"
    );
    let inspect = b.json(&["mcp", "inspect", name])?;
    assert_eq!(inspect["tools"], 2, "{inspect:#}");
    assert_eq!(inspect["malformed"].as_array().map(Vec::len), Some(bad));
    let text = b.ok(&["mcp", "inspect", name])?;
    assert!(text.contains("`bad-hints`: "), "{text}");
    Ok(())
}

#[test]
fn one_malformed_tool_does_not_spoil_the_listing_over_stdio() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_malformed_stdio");
    let bin = test_server_bin();
    let bin = bin.to_str().unwrap_or_default();
    // Handed a canary, which a malformed definition quotes back: redacted everywhere.
    let out = b.output_with_stdin(
        &[
            "mcp",
            "add",
            "quirky",
            "--env-from-stdin",
            "--",
            bin,
            "--mode",
            "malformed",
        ],
        &format!("TEST_SECRET={CANARY}\n"),
    )?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&b, "quirky", true)?;
    b.assert_secret_nowhere(CANARY)
}

#[test]
fn one_malformed_tool_does_not_spoil_the_listing_over_http() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_malformed_http");
    let server = Peer::test_server("malformed")?;
    b.ok(&["mcp", "add", "quirky", "--url", &server.url])?;
    check(&b, "quirky", false)
}
