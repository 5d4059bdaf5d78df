//! The web bridge's connections to bosund, soaked: the real `bosun ui` bridge and bosund (release
//! builds), spoken to over HTTP as a page does.
//!
//! - **10,000 API calls** (`POST /api/call`, `list_runs`), one after another, then **1,000 event
//!   streams** (`GET /api/events`) each read to its `hello` and closed, as a closed tab does.
//!   Measured: the open files (`/proc/PID/fd`) and resident memory of the bridge and of bosund
//!   before and after. Baseline: the same figures after a warm-up of 20 calls and 5 streams, in
//!   the same processes. Target: the open files flat within 8, memory within 10 MB. Before the
//!   fix (issue 25) every call and stream left a connection open in both processes, for ever.
//!
//! `BOSUN_BENCH_CONNECTIONS_CALLS` and `BOSUN_BENCH_CONNECTIONS_STREAMS` make it smaller, for a
//! quick smoke run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bosun_bench::{Env, Figure, report, rss_kib};
use bosun_tests::open_files;
use serde_json::Value;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The bridge as a page sees it: its port, the session cookie and its CSRF value.
struct Page {
    port: u16,
    cookie: String,
    csrf: String,
}

impl Page {
    fn open(&self, request: &str) -> anyhow::Result<TcpStream> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        s.write_all(request.as_bytes())?;
        Ok(s)
    }

    fn get(&self, path: &str, cookie: bool) -> anyhow::Result<String> {
        let cookie = if cookie {
            format!("Cookie: {}\r\n", self.cookie)
        } else {
            String::new()
        };
        let mut s = self.open(&format!(
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n{cookie}\r\n",
            self.port
        ))?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        Ok(answer)
    }

    fn call(&self, body: &str) -> anyhow::Result<()> {
        let port = self.port;
        let mut s = self.open(&format!(
            "POST /api/call HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\nCookie: {}\r\nX-Bosun-Csrf: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.cookie,
            self.csrf,
            body.len()
        ))?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        if !answer.starts_with("HTTP/1.0 200") && !answer.starts_with("HTTP/1.1 200") {
            bail!("the call answered: {answer}");
        }
        Ok(())
    }

    /// Opens the event stream, reads it to its `hello`, and closes it.
    fn events(&self) -> anyhow::Result<()> {
        let s = self.open(&format!(
            "GET /api/events HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nCookie: {}\r\n\r\n",
            self.port, self.cookie
        ))?;
        bosun_tests::read_to_event(s, "hello")
    }
}

fn sign_in(env: &Env) -> anyhow::Result<(Page, i32)> {
    let v: Value = serde_json::from_str(&env.ok(&["ui", "--no-open", "--json"])?)?;
    let port = v["port"].as_u64().context("no port")? as u16;
    let pid = v["pid"].as_i64().context("no pid")? as i32;
    let login = v["login_url"].as_str().context("no login_url")?;
    let path = login
        .split_once(&format!(":{port}"))
        .map(|(_, p)| p.to_string())
        .context("a login address without the port")?;
    let mut page = Page {
        port,
        cookie: String::new(),
        csrf: String::new(),
    };
    let answer = page.get(&path, false)?;
    page.cookie = answer
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or(l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .context("no cookie")?
        .to_string();
    let session = page.get("/api/session", true)?;
    let body = session.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let v: Value = serde_json::from_str(body)?;
    page.csrf = v["csrf"].as_str().context("no csrf")?.to_string();
    Ok((page, pid))
}

/// Open files and resident memory (KiB) of each process, once the open files have stopped
/// falling (a closed tab's stream is noticed at its next keep-alive at the latest).
fn measure(pids: [i32; 2]) -> [(usize, u64); 2] {
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut last = pids.map(open_files);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = pids.map(open_files);
        if now == last || Instant::now() > deadline {
            return [0, 1].map(|i| (now[i], rss_kib(pids[i]).unwrap_or(0)));
        }
        last = now;
    }
}

fn main() -> anyhow::Result<()> {
    let calls = count("BOSUN_BENCH_CONNECTIONS_CALLS", 10_000);
    let streams = count("BOSUN_BENCH_CONNECTIONS_STREAMS", 1_000);
    let env = Env::new("connections")?;
    env.start_daemon()?;
    let daemon = env.daemon_pid().context("bosund is not running")?;
    let (page, bridge) = sign_in(&env)?;
    let list = r#"{"method":"list_runs","params":{"all":true}}"#;
    for _ in 0..20 {
        page.call(list)?;
    }
    for _ in 0..5 {
        page.events()?;
    }
    let before = measure([bridge, daemon]);
    let t0 = Instant::now();
    for _ in 0..calls {
        page.call(list)?;
    }
    for _ in 0..streams {
        page.events()?;
    }
    let took = t0.elapsed();
    let after = measure([bridge, daemon]);
    for (i, who) in ["bridge", "bosund"].iter().enumerate() {
        let ((files0, rss0), (files1, rss1)) = (before[i], after[i]);
        let grew_mb = (rss1 as f64 - rss0 as f64) / 1024.0;
        report(Figure {
            bench: "connections",
            what: &format!("{who}: {calls} calls + {streams} streams"),
            value: format!("{files1} files, {:.1} MB", rss1 as f64 / 1024.0),
            baseline: format!(
                "{files0} files, {:.1} MB before ({:.1} s)",
                rss0 as f64 / 1024.0,
                took.as_secs_f64()
            ),
            ratio: files1 as f64 / files0.max(1) as f64,
            target: "flat",
            met: files1 <= files0 + 8 && grew_mb < 10.0,
        });
    }
    env.ok(&["ui", "--stop"])?;
    Ok(())
}
