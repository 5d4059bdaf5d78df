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

use crate::http::{self, Reply, Request, Response};

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
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "bosun test documents CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate()?)?;
        let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
        leaf.subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse()?));
        let leaf_key = rcgen::KeyPair::generate()?;
        let cert = leaf.signed_by(&leaf_key, &ca)?;
        std::fs::write(dir.path().join("ca.pem"), ca.pem())?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State::default()));
        let st = Arc::clone(&state);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                    return;
                };
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let (acceptor, st) = (acceptor.clone(), Arc::clone(&st));
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let handler = move |req: Request| {
                            let st = Arc::clone(&st);
                            async move { Reply::Full(answer(&st, &req)) }
                        };
                        let _ = http::serve_connection(tls, "https-documents", &handler).await;
                    });
                }
            });
        });
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
