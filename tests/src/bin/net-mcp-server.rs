//! `net-mcp-server`: a small MCP server (stdio) whose one tool, `reach`, tries to reach a TCP
//! address, so that the end-to-end tests can see what a server's network lets through.
//!
//! ```text
//! net-mcp-server --to HOST:PORT
//! ```
//!
//! `reach` connects to the address directly, then, when `HTTPS_PROXY` is set (a fenced run's
//! server has it), through that proxy with `CONNECT`, sending a plain `GET /` once through; it
//! answers what happened each way, the proxy's answer included.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

fn main() {
    let mut args = std::env::args().skip(1);
    let to = match (args.next().as_deref(), args.next()) {
        (Some("--to"), Some(to)) => to,
        _ => {
            eprintln!("net-mcp-server: give --to HOST:PORT");
            std::process::exit(2);
        }
    };
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (msg.get("id").cloned(), msg["method"].as_str()) else {
            continue;
        };
        let result = match method {
            "initialize" => json!({
                "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "net", "version": "1.0.0"},
            }),
            "ping" => json!({}),
            "tools/list" => json!({"tools": [{
                "name": "reach",
                "description": "Tries to reach the server's address",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": true, "openWorldHint": true},
            }]}),
            "tools/call" => json!({"content": [{"type": "text", "text": reach(&to)}]}),
            _ => {
                let reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}});
                let _ = writeln!(out, "{reply}");
                let _ = out.flush();
                continue;
            }
        };
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// What came of reaching `to` directly, then through the proxy, in words.
fn reach(to: &str) -> String {
    let direct = match to
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a: SocketAddr| TcpStream::connect_timeout(&a, WAIT))
    {
        Some(Ok(_)) => "direct: connected".to_string(),
        Some(Err(e)) => format!("direct: failed ({e})"),
        None => "direct: no address".to_string(),
    };
    let proxy = match std::env::var("HTTPS_PROXY") {
        Ok(url) => through(&url, to).unwrap_or_else(|e| format!("proxy: failed ({e})")),
        Err(_) => "proxy: none".to_string(),
    };
    format!("{direct}\n{proxy}")
}

fn through(proxy: &str, to: &str) -> std::io::Result<String> {
    let address = proxy.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(address)?;
    s.set_read_timeout(Some(WAIT))?;
    write!(s, "CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n\r\n")?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    if got.starts_with(b"HTTP/1.1 200") {
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n"
        )?;
    }
    // The rest: a refusal's body, or the host's answer, until either closes.
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    Ok(format!("proxy: {}", String::from_utf8_lossy(&got)))
}
