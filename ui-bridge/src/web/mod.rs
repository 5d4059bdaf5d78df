//! The web UI's bridge: an HTTP server on loopback that serves the embedded pages and passes
//! the browser's requests to bosund over the same socket protocol and typed client as the
//! command line.
//!
//! It is a process of its own (`bosun ui` starts it detached, `bosun ui --foreground` runs it in
//! place): a crash of it never touches the daemon, and a restart of the daemon is ridden out —
//! each request connects anew, and each stream reconnects and resumes by seq.
//!
//! - `guard.rs`: the Host allow-list, the sign-in, CSRF and Origin checks, the headers.
//! - `api.rs`: `POST /api/call` (one UI-protocol request, passed through), a log's chunks and
//!   its download, and `GET /api/parse` (a time cap, a size or a budget the person typed, read
//!   by the one parser the command line and bosund use).
//! - `sse.rs`: the live streams, `/api/events` and `/api/runs/{run}/log`.
//! - `assets.rs`: the pages, embedded in the binary.
//! - `address.rs`: `ui.json`, how `bosun ui` finds the running bridge.
//! - `uploads.rs`: the files picked in the browser for a chat, removed after a day.
//!
//! See `docs/webui.md` for the security model and the resume rule.

mod address;
mod api;
mod assets;
mod daemon;
mod error;
mod guard;
mod sse;
mod uploads;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::{get, post};
use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;

pub use address::Address;

/// How the bridge listens.
#[derive(Clone, Debug)]
pub struct Options {
    /// 127.0.0.1 unless the person asked for another address.
    pub listen: IpAddr,
    /// 0 for a free port.
    pub port: u16,
}

/// What can stop the bridge from serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound (the port is taken, the address is not this machine's).
    #[error("could not listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The address file could not be written.
    #[error("could not write {path}: {source}")]
    AddressFile {
        path: String,
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("the web server failed: {0}")]
    Serve(std::io::Error),
}

/// The bridge's state, shared by every request.
#[derive(Debug)]
pub struct Bridge {
    dirs: StateDir,
    listen: IpAddr,
    port: u16,
    started_at: Timestamp,
    /// The `Host` values this bridge answers to.
    allowed_hosts: Vec<String>,
    /// The session cookie's name carries the port: cookies are not kept apart by port, and two
    /// bridges (two state directories) must not overwrite each other's.
    cookie_name: String,
    keys: Mutex<guard::Keys>,
}

impl Bridge {
    /// Writes the address file with the current token.
    fn save_address(&self) -> std::io::Result<()> {
        let (pid, start_time) = Address::this_process();
        let token = guard::lock(&self.keys).token().to_string();
        Address {
            pid,
            start_time,
            listen: self.listen,
            port: self.port,
            token,
            started_at: self.started_at,
        }
        .write(&self.dirs)
    }
}

/// Says something in the bridge's log (its stderr: `ui.log` when `bosun ui` started it).
fn note(line: &str) {
    eprintln!("bosun ui: {line}");
}

/// Serves the web UI until SIGTERM or SIGINT; removes the address file on the way out.
pub async fn serve(dirs: StateDir, opts: Options) -> Result<(), ServeError> {
    // What this process asks of bosund is the web UI's, in bosund's audit log.
    let _ = crate::CLIENT.set(bosun_protocol::UiClient::Web);
    ignore_sigpipe();
    let addr = SocketAddr::new(opts.listen, opts.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let port = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?
        .port();
    let mut allowed_hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    if !opts.listen.is_loopback() && !opts.listen.is_unspecified() {
        allowed_hosts.push(SocketAddr::new(opts.listen, port).to_string());
    }
    let bridge = Arc::new(Bridge {
        dirs: dirs.clone(),
        listen: opts.listen,
        port,
        started_at: Timestamp::now(),
        allowed_hosts,
        cookie_name: format!("bosun_session_{port}"),
        keys: Mutex::new(guard::Keys::new()),
    });
    bridge
        .save_address()
        .map_err(|source| ServeError::AddressFile {
            path: Address::path(&dirs).display().to_string(),
            source,
        })?;
    let app = Router::new()
        .route("/login", get(guard::login))
        .route("/api/session", get(api::session))
        .route("/api/call", post(api::call))
        .route("/api/parse", get(api::parse))
        .route(
            "/api/uploads",
            post(api::upload).layer(axum::extract::DefaultBodyLimit::max(api::MAX_UPLOAD)),
        )
        .route("/api/events", get(sse::events))
        .route("/api/runs/{run}/log", get(sse::log))
        .route("/api/runs/{run}/chunks", get(api::chunks))
        .route("/api/runs/{run}/log.txt", get(api::download))
        .fallback(get(assets::serve))
        .layer(axum::middleware::from_fn_with_state(
            bridge.clone(),
            guard::guard,
        ))
        .with_state(bridge.clone());
    let sweeper = tokio::spawn(uploads::sweep_forever(dirs.clone()));
    note(&format!(
        "listening on http://{}/ for {} (`bosun ui` prints the sign-in address)",
        SocketAddr::new(opts.listen, port),
        dirs.root().display()
    ));
    let result = tokio::select! {
        r = axum::serve(listener, app) => r.map_err(ServeError::Serve),
        () = stop_signal() => Ok(()),
    };
    sweeper.abort();
    Address::remove_if_mine(&dirs);
    result
}

/// A browser that goes away mid-answer (a page left while its log is read) must end that one
/// answer, not the bridge. `bosun` restores SIGPIPE's default disposition for the command line
/// (`bosun logs … | head` ends quietly), and the bridge runs in that same binary; but the HTTP
/// server writes a response with `writev`, which unlike `send` has no flag to suppress the
/// signal, so a closed connection would kill the whole bridge. Ignored, the write fails with
/// EPIPE on that connection only.
fn ignore_sigpipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions, and no handler of
    // ours is replaced.
    if let Err(e) = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) } {
        note(&format!(
            "could not ignore SIGPIPE ({e}); a browser leaving mid-answer may stop the web UI"
        ));
    }
}

/// Resolves on SIGTERM or SIGINT. Open streams are not waited for: the pages reconnect.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        note("could not listen for SIGTERM; stop the web UI with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
