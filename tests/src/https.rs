//! A small HTTPS server for tests that need a document published at an `https://` address —
//! a client metadata document that `oauth-server` fetches, say. It makes a CA of its own and a
//! certificate for `127.0.0.1` and `localhost` signed by it, writes the CA to a PEM file for
//! the client to trust (`ca_file`), serves the JSON documents a test gives it by path with
//! [`crate::http::serve_connection`] over TLS, and keeps the path of every request, so that a
//! test can say a document was really fetched.
//!
//! Its runtime lives on a thread of the test's process and ends with it; it starts no process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use crate::http::{self, Request, Response};

#[derive(Default)]
struct State {
    documents: HashMap<String, Value>,
    requests: Vec<String>,
}

pub struct HttpsDocuments {
    state: Arc<Mutex<State>>,
    port: u16,
    dir: tempfile::TempDir,
}

impl HttpsDocuments {
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("bt-https-")
            .tempdir_in("/tmp")?;
        let tls = http::TestTls::new("bosun test documents CA")?;
        std::fs::write(dir.path().join("ca.pem"), &tls.ca_pem)?;
        let state = Arc::new(Mutex::new(State::default()));
        let st = Arc::clone(&state);
        let port = http::serve_https(&tls, "https-documents", move |req| answer(&st, req))?;
        Ok(Self { state, port, dir })
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The PEM file of the CA that signed this server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Serves `document` at `path` from now on.
    pub fn publish(&self, path: &str, document: Value) {
        self.lock().documents.insert(path.to_string(), document);
    }

    /// Serves nothing at `path` from now on (a `404`).
    pub fn forget(&self, path: &str) {
        self.lock().documents.remove(path);
    }

    /// The path of every request so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn answer(state: &Mutex<State>, request: &Request) -> Response {
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    state.requests.push(request.path().to_string());
    match (request.method.as_str(), state.documents.get(request.path())) {
        ("GET", Some(document)) => Response::json(200, document),
        ("GET", None) => Response::text(404, format!("nothing at {}\n", request.path())),
        (_, _) => Response::new(405).with_header("Allow", "GET"),
    }
}
