//! bosun's own MCP server (the lead's, Streamable HTTP on 127.0.0.1) answers clients of either
//! revision, checked on the wire with raw JSON-RPC over raw HTTP (no MCP client library, so
//! what is asserted is what a client really receives):
//! - a 2025-11-25 (or 2025-06-18) client: `initialize` negotiates its version (an unknown one
//!   gets the server's newest handshake revision), `notifications/initialized` is accepted,
//!   `tools/list` and `tools/call` work without a session (the server assigns none, which
//!   those revisions allow), and its results carry none of 2026-07-28's fields;
//! - a 2026-07-28 client: no handshake; `server/discover`; `_meta` and the
//!   `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers on every request; results with
//!   `resultType` and the server's identity; the refusals that revision prescribes (an
//!   unsupported version → -32022 with the supported list, missing `_meta` → -32602, a header
//!   that disagrees with the body or is missing → -32020, each with HTTP 400).

use std::io::{Read, Write};
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, wait_for};
use serde_json::{Value, json};

const V2025: &str = "2025-11-25";
const V2026: &str = "2026-07-28";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const META_CLIENT: &str = "io.modelcontextprotocol/clientInfo";
const META_SERVER: &str = "io.modelcontextprotocol/serverInfo";

/// One answer of bosun's MCP server as the wire carried it.
#[derive(Debug)]
struct Reply {
    status: u16,
    /// Header names in lower case.
    headers: Vec<(String, String)>,
    /// The JSON-RPC message (from a JSON body or the last `data:` line of an SSE body);
    /// `Null` for an empty body.
    body: Value,
    raw: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Decodes an HTTP/1.1 chunked body.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// Sends one request to `url` with the given method, extra headers and body, as a client
/// would (Accept both JSON and SSE, JSON content, the answer's bearer token).
fn send(
    url: &str,
    token: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> anyhow::Result<Reply> {
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (top, payload) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let mut lines = top.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let payload = if chunked {
        dechunk(payload)
    } else {
        payload.to_string()
    };
    let sse = headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
    let body = if sse {
        payload
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .filter_map(|d| serde_json::from_str(d).ok())
            .next_back()
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&payload).unwrap_or(Value::Null)
    };
    Ok(Reply {
        status,
        headers,
        body,
        raw: payload,
    })
}

/// A POST of one JSON-RPC message.
fn post(url: &str, token: &str, headers: &[(&str, &str)], body: &Value) -> anyhow::Result<Reply> {
    send(url, token, "POST", headers, Some(body))
}

/// The `_meta` a 2026-07-28 client puts on every request.
fn meta(version: &str) -> Value {
    json!({
        META_VERSION: version,
        META_CAPS: {},
        META_CLIENT: { "name": "raw-test-client", "version": "1.0.0" },
    })
}

/// The headers a 2026-07-28 client sends with `method` (and `name` for tools/call).
fn modern_headers<'a>(
    version: &'a str,
    method: &'a str,
    name: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", version), ("Mcp-Method", method)];
    if let Some(name) = name {
        h.push(("Mcp-Name", name));
    }
    h
}

/// A daemon whose lead (Claude Code against a fake model that holds its answer open) is
/// answering: bosun's MCP server's address and the live answer's token, read from the
/// answer's 0600 config the way the lead's CLI reads it. The returned child is the
/// `bosun chat send` that waits for the answer.
fn live_answer(b: &Bosun, fake: &FakeModel) -> anyhow::Result<(Answer, String, String)> {
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The answer is held open by the fake model; `chat send` returns once it is under way
    // or over, and the chat's `answering` says which run answers.
    let sending = b.cmd(&["chat", "send", &chat, "hi"]).spawn()?;
    let (url, token) = b.answer_mcp_server(&chat)?;
    Ok((Answer { chat, sending }, url, token))
}

/// The lead's live answer of a test, and the `bosun chat send` waiting for it.
struct Answer {
    chat: String,
    sending: std::process::Child,
}

impl Answer {
    /// Stops the answer's run and waits until the chat says it is over.
    fn end(mut self, b: &Bosun) -> anyhow::Result<()> {
        let run = b.json(&["chat", "show", &self.chat])?["answering"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        b.ok(&["stop", &run])?;
        self.sending.wait()?;
        wait_for("the answer to be over", Duration::from_secs(30), || {
            Ok(b.json(&["chat", "show", &self.chat])?["answering"]
                .is_null()
                .then_some(()))
        })
    }
}

/// A 2025-era POST: the version header once the handshake agreed on one.
fn legacy(url: &str, token: &str, version: Option<&str>, body: &Value) -> anyhow::Result<Reply> {
    let headers: Vec<(&str, &str)> = version
        .map(|v| vec![("MCP-Protocol-Version", v)])
        .unwrap_or_default();
    post(url, token, &headers, body)
}

/// A 2026-07-28 request of `method` with `params` (plus the `_meta` of `version`), sent with
/// the headers that revision asks for.
fn modern(
    url: &str,
    token: &str,
    version: &str,
    id: u64,
    method: &str,
    mut params: Value,
) -> anyhow::Result<Reply> {
    params["_meta"] = meta(version);
    let name = params["name"].as_str().map(str::to_string);
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    post(
        url,
        token,
        &modern_headers(version, method, name.as_deref()),
        &body,
    )
}

fn initialize(id: u64, version: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "raw-test-client", "version": "1.0.0" },
        },
    })
}

fn server_info() -> Value {
    json!({ "name": "bosun", "version": env!("CARGO_PKG_VERSION") })
}

/// The revisions bosun's server says it speaks.
fn served() -> Value {
    json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
}

fn tool_names(r: &Reply) -> Vec<String> {
    r.body["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A refusal as 2026-07-28 prescribes it: HTTP 400 and a JSON-RPC error with `code` for the
/// request `id`, its message containing `words`.
fn assert_refused(r: &Reply, id: u64, code: i64, words: &str) {
    assert_eq!(r.status, 400, "{r:#?}");
    assert_eq!(r.body["id"], json!(id), "{r:#?}");
    assert_eq!(r.body["error"]["code"], json!(code), "{r:#?}");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(words), "{words:?} not in {r:#?}");
    assert!(r.body.get("result").is_none(), "{r:#?}");
}

#[test]
fn a_2025_client_handshakes_then_lists_and_calls_without_a_session() -> anyhow::Result<()> {
    let b = Bosun::new("lead_mcp_2025");
    let fake = FakeModel::start("anthropic", "hold")?;
    let (answer, url, token) = live_answer(&b, &fake)?;

    // The handshake: the client's version is echoed when the server speaks it.
    let r = legacy(&url, &token, None, &initialize(1, V2025))?;
    assert_eq!(r.status, 200, "{r:#?}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:#?}");
    let result = &r.body["result"];
    assert_eq!(r.body["id"], json!(1));
    assert_eq!(result["protocolVersion"], json!(V2025), "{r:#?}");
    assert_eq!(result["capabilities"], json!({ "tools": {} }), "{r:#?}");
    assert_eq!(result["serverInfo"], server_info(), "{r:#?}");
    assert!(result["instructions"].is_string(), "{r:#?}");
    // Nothing of 2026-07-28 reaches a 2025-era client, and no session is assigned (the
    // transport of 2025-03-26..2025-11-25 lets a server go without one).
    for absent in ["resultType", "_meta", "ttlMs", "cacheScope"] {
        assert!(result.get(absent).is_none(), "{absent} in {r:#?}");
    }
    assert_eq!(r.header("mcp-session-id"), None, "{r:#?}");

    let r = legacy(&url, &token, None, &initialize(2, "2025-06-18"))?;
    assert_eq!(
        r.body["result"]["protocolVersion"],
        json!("2025-06-18"),
        "{r:#?}"
    );
    // A version the server does not speak over this transport (2024-11-05 used HTTP+SSE), an
    // unknown one, and 2026-07-28 (which has no handshake) get its newest handshake revision.
    for asked in ["2024-11-05", "1999-01-01", V2026] {
        let r = legacy(&url, &token, None, &initialize(3, asked))?;
        assert_eq!(r.status, 200, "{asked}: {r:#?}");
        assert_eq!(
            r.body["result"]["protocolVersion"],
            json!(V2025),
            "{asked}: {r:#?}"
        );
    }

    let r = legacy(
        &url,
        &token,
        Some(V2025),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )?;
    assert_eq!(r.status, 202, "{r:#?}");
    assert!(r.raw.is_empty(), "{r:#?}");

    for (id, version) in [(4, V2025), (5, "2025-06-18")] {
        let r = legacy(
            &url,
            &token,
            Some(version),
            &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }),
        )?;
        assert_eq!(r.status, 200, "{r:#?}");
        assert_eq!(r.body["id"], json!(id));
        let names = tool_names(&r);
        for name in [
            "list_tasks",
            "list_agents",
            "start_agent_run",
            "memory_write",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
        }
        let result = r.body["result"].as_object().cloned().unwrap_or_default();
        assert_eq!(
            result.keys().collect::<Vec<_>>(),
            vec!["tools"],
            "a 2025-era tools/list result has only its tools: {r:#?}"
        );
        let list_agents = r.body["result"]["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "list_agents"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(list_agents["inputSchema"]["type"], json!("object"));
        assert_eq!(list_agents["annotations"]["readOnlyHint"], json!(true));
    }

    let r = legacy(
        &url,
        &token,
        Some(V2025),
        &json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call",
                 "params": { "name": "list_agents", "arguments": {} } }),
    )?;
    assert_eq!(r.status, 200, "{r:#?}");
    let result = &r.body["result"];
    assert_eq!(result["isError"], json!(false), "{r:#?}");
    assert_eq!(result["content"][0]["type"], json!("text"), "{r:#?}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("\"name\": \"lead\""), "{r:#?}");
    for absent in ["resultType", "_meta"] {
        assert!(result.get(absent).is_none(), "{absent} in {r:#?}");
    }

    // An unknown tool is a protocol error in both revisions, not a tool's failure.
    let r = legacy(
        &url,
        &token,
        Some(V2025),
        &json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": { "name": "nope", "arguments": {} } }),
    )?;
    assert_eq!(r.body["error"]["code"], json!(-32602), "{r:#?}");
    assert_eq!(
        r.body["error"]["message"],
        json!("bosun has no tool `nope`; tools/list names the ones there are"),
        "{r:#?}"
    );

    // Wrong: a version header naming no revision at all.
    let r = legacy(
        &url,
        &token,
        Some("1999-01-01"),
        &json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list" }),
    )?;
    assert_eq!(r.status, 400, "{r:#?}");
    assert!(
        r.raw
            .contains("Unsupported MCP-Protocol-Version: 1999-01-01"),
        "{r:#?}"
    );

    // Without sessions there is no stream to open and none to end.
    for method in ["GET", "DELETE"] {
        let r = send(
            &url,
            &token,
            method,
            &[("MCP-Protocol-Version", V2025)],
            None,
        )?;
        assert_eq!(r.status, 405, "{method}: {r:#?}");
        assert_eq!(r.header("allow"), Some("POST"), "{method}: {r:#?}");
    }

    answer.end(&b)?;
    b.assert_secret_nowhere(&token)?;
    b.finish()
}

#[test]
fn a_2026_client_is_served_statelessly_without_a_handshake() -> anyhow::Result<()> {
    let b = Bosun::new("lead_mcp_2026");
    let fake = FakeModel::start("anthropic", "hold")?;
    let (answer, url, token) = live_answer(&b, &fake)?;

    let r = modern(&url, &token, V2026, 1, "server/discover", json!({}))?;
    assert_eq!(r.status, 200, "{r:#?}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:#?}");
    let mut result = r.body["result"].clone();
    assert!(result["instructions"].is_string(), "{r:#?}");
    result["instructions"] = Value::Null;
    assert_eq!(
        result,
        json!({
            "resultType": "complete",
            "supportedVersions": served(),
            "capabilities": { "tools": {} },
            "instructions": null,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": { META_SERVER: server_info() },
        }),
        "{r:#?}"
    );

    // No handshake came before: a request stands on its own. A stray session id (which this
    // revision no longer has) is ignored, and none is minted.
    let r = post(
        &url,
        &token,
        &[
            ("MCP-Protocol-Version", V2026),
            ("Mcp-Method", "tools/list"),
            ("Mcp-Session-Id", "left-over-from-2025"),
        ],
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list",
                 "params": { "_meta": meta(V2026) } }),
    )?;
    assert_eq!(r.status, 200, "{r:#?}");
    assert_eq!(r.header("mcp-session-id"), None, "{r:#?}");
    let result = &r.body["result"];
    assert_eq!(result["resultType"], json!("complete"), "{r:#?}");
    assert_eq!(result["ttlMs"], json!(0), "{r:#?}");
    assert_eq!(result["cacheScope"], json!("private"), "{r:#?}");
    assert_eq!(
        result["_meta"],
        json!({ META_SERVER: server_info() }),
        "{r:#?}"
    );
    let names = tool_names(&r);
    for name in [
        "list_tasks",
        "list_agents",
        "start_agent_run",
        "memory_write",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }

    let r = modern(
        &url,
        &token,
        V2026,
        3,
        "tools/call",
        json!({ "name": "list_agents", "arguments": {} }),
    )?;
    assert_eq!(r.status, 200, "{r:#?}");
    let result = &r.body["result"];
    assert_eq!(result["resultType"], json!("complete"), "{r:#?}");
    assert_eq!(result["isError"], json!(false), "{r:#?}");
    assert_eq!(
        result["_meta"],
        json!({ META_SERVER: server_info() }),
        "{r:#?}"
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("\"name\": \"lead\""), "{r:#?}");

    // An unknown tool: -32602, as 2026-07-28's tools page says.
    let r = modern(
        &url,
        &token,
        V2026,
        4,
        "tools/call",
        json!({ "name": "nope", "arguments": {} }),
    )?;
    assert_eq!(r.body["error"]["code"], json!(-32602), "{r:#?}");

    // `ping` is gone from this revision: a method the server does not implement is 404 with
    // -32601.
    let r = modern(&url, &token, V2026, 5, "ping", json!({}))?;
    assert_eq!(r.status, 404, "{r:#?}");
    assert_eq!(r.body["error"]["code"], json!(-32601), "{r:#?}");

    // A notification is accepted with 202 and no body.
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "notifications/cancelled", None),
        &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": { "requestId": 99, "_meta": meta(V2026) } }),
    )?;
    assert_eq!(r.status, 202, "{r:#?}");

    answer.end(&b)?;
    b.finish()
}

#[test]
fn wrong_or_mixed_requests_are_refused_as_the_revision_says() -> anyhow::Result<()> {
    let b = Bosun::new("lead_mcp_wrong");
    let fake = FakeModel::start("anthropic", "hold")?;
    let (answer, url, token) = live_answer(&b, &fake)?;
    let list = |id: u64, meta: Option<Value>| {
        let mut body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" });
        if let Some(meta) = meta {
            body["params"] = json!({ "_meta": meta });
        }
        body
    };

    // A version the server does not speak, per request: -32022 with the ones it does.
    for (id, asked) in [(1, "2099-01-01"), (2, "2024-11-05")] {
        let r = modern(&url, &token, asked, id, "tools/list", json!({}))?;
        assert_refused(&r, id, -32022, "Unsupported protocol version");
        assert_eq!(
            r.body["error"]["data"],
            json!({ "requested": asked, "supported": served() }),
            "{r:#?}"
        );
    }

    // A 2026-07-28 request without its `_meta`, or with only part of it: -32602.
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "tools/list", None),
        &list(3, None),
    )?;
    assert_refused(
        &r,
        3,
        -32602,
        "io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities",
    );
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "tools/list", None),
        &list(4, Some(json!({ META_VERSION: V2026 }))),
    )?;
    assert_refused(&r, 4, -32602, "io.modelcontextprotocol/clientCapabilities");

    // The version header and the body disagree, or the header is missing: -32020.
    let r = post(
        &url,
        &token,
        &modern_headers(V2025, "tools/list", None),
        &list(5, Some(meta(V2026))),
    )?;
    assert_refused(&r, 5, -32020, "does not match");
    let r = post(
        &url,
        &token,
        &[("Mcp-Method", "tools/list")],
        &list(6, Some(meta(V2026))),
    )?;
    assert_refused(&r, 6, -32020, "MCP-Protocol-Version");

    // `Mcp-Method` missing or naming another method; `Mcp-Name` missing or naming another
    // tool than the body calls: -32020, and nothing is run.
    let r = post(
        &url,
        &token,
        &[("MCP-Protocol-Version", V2026)],
        &list(7, Some(meta(V2026))),
    )?;
    assert_refused(&r, 7, -32020, "missing required Mcp-Method header");
    let call = |id: u64| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "list_agents", "arguments": {}, "_meta": meta(V2026) } })
    };
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "tools/list", None),
        &call(8),
    )?;
    assert_refused(
        &r,
        8,
        -32020,
        "Mcp-Method header `tools/list` does not match",
    );
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "tools/call", None),
        &call(9),
    )?;
    assert_refused(&r, 9, -32020, "missing required Mcp-Name header");
    let r = post(
        &url,
        &token,
        &modern_headers(V2026, "tools/call", Some("list_tasks")),
        &call(10),
    )?;
    assert_refused(
        &r,
        10,
        -32020,
        "Mcp-Name header `list_tasks` does not match",
    );

    // A 2025-era initialize whose version header contradicts its body.
    let r = legacy(&url, &token, Some("2025-06-18"), &initialize(11, V2025))?;
    assert_eq!(r.status, 400, "{r:#?}");
    assert_eq!(r.body["error"]["code"], json!(-32600), "{r:#?}");

    answer.end(&b)?;
    b.finish()
}
