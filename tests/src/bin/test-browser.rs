//! `test-browser`: stands in for a person's web browser in bosun's OAuth end-to-end tests.
//! Bosun opens a sign-in page with `$BROWSER <url>`; tests set `BROWSER` to this program.
//!
//! ```text
//! test-browser URL
//! ```
//!
//! It GETs `URL` (the authorization endpoint, e.g. `oauth-server`'s `/authorize`, which
//! approves at once), expects a redirect (`301`, `302`, `303`, `307` or `308`) with a
//! `Location`, and GETs that location: bosun's loopback callback listener. Redirects are not
//! followed any further. It prints the status line and the first line of the body of the last
//! response to stderr, and exits 0 if that status is 2xx, 1 otherwise (also when the first
//! answer is not a redirect). Only plain `http://` URLs are supported (plain HTTP/1.1 over a
//! TCP stream, `Connection: close`); a relative `Location` is resolved against the first URL's
//! host. Each request gives up after 30 seconds, so the program always returns quickly; bosun
//! waits for the callback itself.
//!
//! Environment:
//! - `TEST_BROWSER_LOG=FILE`: append each URL visited to FILE, one per line (the sign-in URL
//!   first, then the callback URL), before visiting it.
//! - `TEST_BROWSER_MODE=never`: do nothing at all and exit 0, like a person who never finishes
//!   signing in (for timeout tests). `follow` (or unset) is the behaviour above.
//!
//! # How to use
//!
//! ```text
//! oauth-server --client-id app --registration off > /tmp/as.out &  # listening http://127.0.0.1:P
//! python3 -m http.server 8123 --bind 127.0.0.1 &          # stands in for the callback listener
//! TEST_BROWSER_LOG=/tmp/visited test-browser "http://127.0.0.1:P/authorize?response_type=code\
//! &client_id=app&redirect_uri=http%3A%2F%2F127.0.0.1%3A8123%2Fcallback&code_challenge=x\
//! &code_challenge_method=S256&state=s"
//! # stderr: "test-browser: HTTP/1.0 404 File not found", exit 1 (http.server has no /callback;
//! # bosun's listener answers 200). /tmp/visited holds the sign-in URL and the callback URL.
//! ```
//!
//! Usage errors exit with status 2.

use std::fs::OpenOptions;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};

const USAGE: &str = "usage: test-browser URL
environment: TEST_BROWSER_LOG=FILE (append visited URLs), TEST_BROWSER_MODE=follow|never";

/// Exit status for a bad command line.
const USAGE_STATUS: u8 = 2;
/// How long one request may take, connecting, writing or reading.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response read, in bytes.
const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let url = match (args.next(), args.next()) {
        (Some(flag), None) if flag == "-h" || flag == "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        (Some(url), None) => url,
        (Some(_), Some(_)) | (None, _) => {
            eprintln!("test-browser: expected exactly one URL\n{USAGE}");
            return ExitCode::from(USAGE_STATUS);
        }
    };
    match std::env::var("TEST_BROWSER_MODE").as_deref() {
        Ok("never") => {
            eprintln!("test-browser: mode never: not opening {url}");
            return ExitCode::SUCCESS;
        }
        Ok("follow" | "") | Err(_) => {}
        Ok(other) => {
            eprintln!("test-browser: unknown TEST_BROWSER_MODE {other:?}\n{USAGE}");
            return ExitCode::from(USAGE_STATUS);
        }
    }
    match browse(&url) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("test-browser: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Visits `url` and the location it redirects to; whether the last answer was 2xx.
fn browse(url: &str) -> anyhow::Result<bool> {
    let first = Url::parse(url)?;
    let response = visit(&first)?;
    if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
        report(&response);
        eprintln!("test-browser: expected a redirect from {url}");
        return Ok(false);
    }
    let location = response
        .location
        .as_deref()
        .with_context(|| format!("{} without a Location", response.status_line))?;
    let next = if location.starts_with('/') {
        Url {
            host: first.host.clone(),
            port: first.port,
            target: location.to_owned(),
        }
    } else {
        Url::parse(location)?
    };
    let response = visit(&next)?;
    report(&response);
    Ok((200..300).contains(&response.status))
}

fn report(response: &Answer) {
    let first_line = response.body.lines().next().unwrap_or("");
    eprintln!("test-browser: {}", response.status_line);
    eprintln!("test-browser: {first_line}");
}

/// An `http://host[:port]/target` URL.
#[derive(Debug)]
struct Url {
    host: String,
    port: u16,
    target: String,
}

impl Url {
    fn parse(url: &str) -> anyhow::Result<Self> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("only http:// URLs are supported, not {url:?}");
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        };
        let target = if target.starts_with('?') {
            format!("/{target}")
        } else {
            target.to_owned()
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse()
                    .with_context(|| format!("bad port in {url:?}"))?,
            ),
            Some(_) | None => (authority, 80),
        };
        if host.is_empty() {
            bail!("no host in {url:?}");
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            target,
        })
    }

    fn text(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.target)
    }
}

/// What a GET got back.
#[derive(Debug)]
struct Answer {
    status: u16,
    status_line: String,
    location: Option<String>,
    body: String,
}

/// Logs the URL if asked to, then GETs it over a fresh connection.
fn visit(url: &Url) -> anyhow::Result<Answer> {
    if let Some(path) = std::env::var_os("TEST_BROWSER_LOG") {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.to_string_lossy()))?;
        log.write_all(format!("{}\n", url.text()).as_bytes())
            .context("writing the log")?;
    }
    let host = url.host.trim_start_matches('[').trim_end_matches(']');
    let address = std::net::ToSocketAddrs::to_socket_addrs(&(host, url.port))
        .with_context(|| format!("resolving {}", url.host))?
        .next()
        .with_context(|| format!("no address for {}", url.host))?;
    let mut stream = TcpStream::connect_timeout(&address, REQUEST_TIMEOUT)
        .with_context(|| format!("connecting to {}", url.text()))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: bosun-test-browser\r\n\
         Accept: text/html,*/*\r\nConnection: close\r\n\r\n",
        url.target, url.host, url.port
    );
    stream
        .write_all(request.as_bytes())
        .with_context(|| format!("sending the request to {}", url.text()))?;
    let mut reader = BufReader::new(stream.take(MAX_RESPONSE_BYTES));
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .with_context(|| format!("reading the answer of {}", url.text()))?;
    let status_line = status_line.trim_end().to_owned();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .with_context(|| format!("bad status line {status_line:?} from {}", url.text()))?;
    let mut location = None;
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).context("reading headers")? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "location" => location = Some(value.to_owned()),
            "content-length" => length = value.parse::<u64>().ok(),
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    match (length, chunked) {
        (Some(length), false) => {
            reader.take(length).read_to_end(&mut body)?;
        }
        // Only the first chunk: the first line of the body is all that is reported.
        (None, true) | (Some(_), true) => {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size_text = size.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size_text, 16)
                .with_context(|| format!("bad chunk size {size_text:?}"))?;
            reader.take(size).read_to_end(&mut body)?;
        }
        (None, false) => {
            reader.read_to_end(&mut body)?;
        }
    }
    Ok(Answer {
        status,
        status_line,
        location,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
