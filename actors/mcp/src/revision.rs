//! Which MCP revision bosun speaks with a server, and why.
//!
//! bosun speaks the 2026-07-28 revision (stateless: no handshake, `server/discover`, every
//! request carrying its protocol version, bosun's capabilities and its name in `_meta`, and
//! over HTTP the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers) with a server
//! that answers it, and the 2025-11-25 `initialize` handshake with one that does not — chosen
//! once per look by what the server answers to the first `server/discover`, never a mix. rmcp's
//! `ClientLifecycleMode::Auto` does the choosing and the speaking; [`Observed`] listens to what
//! the server answered, so that `bosun mcp inspect` can say why.
//!
//! # Caveats
//! - A server that refuses 2026-07-28 (`-32022`) is retried with a version it names only when
//!   bosun speaks that one too; today 2026-07-28 is the only stateless revision there is, so
//!   such a server is told plainly that no common revision exists.
//! - A server that does not answer `server/discover` at all is given rmcp's 10 seconds before
//!   the handshake is tried.

use std::sync::{Arc, Mutex};

use rmcp::ClientLifecycleMode;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ProtocolVersion, RequestId,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::tap::Pages;

/// The stateless revision bosun speaks where it can.
pub fn modern() -> ProtocolVersion {
    ProtocolVersion::V_2026_07_28
}

/// The handshake revision bosun falls back to.
pub fn legacy() -> ProtocolVersion {
    ProtocolVersion::V_2025_11_25
}

/// 2026-07-28 first; the 2025-11-25 handshake for a server that answers it otherwise.
pub fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![modern()],
        legacy_version: Some(legacy()),
    }
}

/// The revision spoken with a server, and why, in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    pub version: String,
    /// Spoken without a session (2026-07-28 and later).
    pub stateless: bool,
    pub why: String,
}

/// What the server answered to `server/discover`, as heard on the transport.
#[derive(Default)]
struct Heard {
    /// The ids of the `server/discover` requests sent, with the version each asked for.
    asked: Vec<(RequestId, String)>,
    answers: Vec<Answer>,
}

enum Answer {
    /// The revisions it speaks.
    Supported(Vec<String>),
    /// A JSON-RPC error: its code and message, and the versions it named, if it named any.
    Refused {
        asked: String,
        code: i32,
        message: String,
        supported: Vec<String>,
    },
}

/// A transport that passes everything on and keeps what the server answered to
/// `server/discover`.
pub struct Observed<T> {
    inner: T,
    heard: Arc<Mutex<Heard>>,
    /// The `tools/list` results, kept as JSON.
    pages: Pages,
}

/// What an [`Observed`] transport heard, kept after the transport is handed to rmcp.
#[derive(Clone)]
pub struct Listener(Arc<Mutex<Heard>>);

impl<T> Observed<T> {
    pub fn new(inner: T, pages: Pages) -> (Self, Listener) {
        let heard = Arc::new(Mutex::new(Heard::default()));
        (
            Self {
                inner,
                heard: heard.clone(),
                pages,
            },
            Listener(heard),
        )
    }
}

/// A value of `_meta` or of a result, read from its JSON.
fn strings(v: Option<&serde_json::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Observed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(r) = &item
            && matches!(r.request, ClientRequest::DiscoverRequest(_))
        {
            let version = serde_json::to_value(&r.request)
                .ok()
                .and_then(|v| {
                    v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                        .and_then(|s| s.as_str().map(str::to_string))
                })
                .unwrap_or_default();
            if let Ok(mut h) = self.heard.lock() {
                h.asked.push((r.id.clone(), version));
            }
        }
        self.pages.note_request(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(m) = &message {
            self.pages.note_answer(m);
            if let Ok(mut h) = self.heard.lock() {
                h.note(m);
            }
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl Heard {
    fn asked_by(&self, id: Option<&RequestId>) -> Option<String> {
        let id = id?;
        self.asked
            .iter()
            .find(|(a, _)| a == id)
            .map(|(_, v)| v.clone())
    }

    fn note(&mut self, m: &RxJsonRpcMessage<RoleClient>) {
        match m {
            JsonRpcMessage::Response(r) => {
                if self.asked_by(Some(&r.id)).is_some() {
                    let result = serde_json::to_value(&r.result).unwrap_or_default();
                    self.answers
                        .push(Answer::Supported(strings(result.get("supportedVersions"))));
                }
            }
            JsonRpcMessage::Error(e) => {
                if let Some(asked) = self.asked_by(e.id.as_ref()) {
                    let supported = strings(e.error.data.as_ref().and_then(|d| d.get("supported")));
                    self.answers.push(Answer::Refused {
                        asked,
                        code: e.error.code.0,
                        message: e.error.message.to_string(),
                        supported,
                    });
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
    }
}

impl Listener {
    /// The revision spoken, given the version the connection settled on, and why.
    pub fn revision(&self, version: &ProtocolVersion) -> Revision {
        let stateless = !version.has_initialize();
        let version = version.to_string();
        let Ok(heard) = self.0.lock() else {
            return Revision {
                version,
                stateless,
                why: String::new(),
            };
        };
        let mut steps: Vec<String> = Vec::new();
        for a in &heard.answers {
            match a {
                Answer::Refused {
                    asked,
                    code: -32022,
                    supported,
                    ..
                } => steps.push(format!(
                    "it refused {asked} and named {}",
                    if supported.is_empty() {
                        "no revision it speaks".to_string()
                    } else {
                        supported.join(", ")
                    }
                )),
                Answer::Refused { code, message, .. } => steps.push(format!(
                    "it answered server/discover with error {code} ({}), as a server of the older revisions does",
                    cut(message, 120)
                )),
                Answer::Supported(versions) => steps.push(format!(
                    "it answered server/discover, naming {}",
                    if versions.is_empty() {
                        "no revision".to_string()
                    } else {
                        versions.join(", ")
                    }
                )),
            }
        }
        if heard.asked.is_empty() {
            steps.push("bosun did not ask it for server/discover".into());
        } else if heard.answers.is_empty() {
            steps.push("it did not answer server/discover".into());
        }
        let end = if stateless {
            format!("so bosun speaks {version} to it, without a session")
        } else {
            format!(
                "so bosun used the initialize handshake of {}, and it answered with {version}",
                legacy()
            )
        };
        steps.push(end);
        Revision {
            version,
            stateless,
            why: steps.join("; "),
        }
    }
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ErrorCode, ErrorData, JsonRpcError, JsonRpcVersion2_0, NumberOrString};

    fn error(id: i64, code: i32, message: &str, data: Option<serde_json::Value>) -> Answer {
        let mut h = Heard::default();
        h.asked
            .push((NumberOrString::Number(id), "2026-07-28".into()));
        h.note(&JsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(NumberOrString::Number(id)),
            error: ErrorData::new(ErrorCode(code), message.to_string(), data),
        }));
        h.answers.remove(0)
    }

    #[test]
    fn why_a_revision_was_chosen_is_said_plainly() {
        let listener = Listener(Arc::new(Mutex::new(Heard {
            asked: vec![(NumberOrString::Number(0), "2026-07-28".into())],
            answers: vec![error(0, -32601, "Method not found", None)],
        })));
        let r = listener.revision(&ProtocolVersion::V_2025_11_25);
        assert!(!r.stateless);
        assert_eq!(
            r.why,
            "it answered server/discover with error -32601 (Method not found), as a server of the older revisions does; so bosun used the initialize handshake of 2025-11-25, and it answered with 2025-11-25"
        );
        let listener = Listener(Arc::new(Mutex::new(Heard {
            asked: vec![(NumberOrString::Number(0), "2026-07-28".into())],
            answers: vec![Answer::Supported(vec!["2026-07-28".into()])],
        })));
        let r = listener.revision(&ProtocolVersion::V_2026_07_28);
        assert!(r.stateless);
        assert_eq!(
            r.why,
            "it answered server/discover, naming 2026-07-28; so bosun speaks 2026-07-28 to it, without a session"
        );
        let refused = error(
            1,
            -32022,
            "Unsupported protocol version",
            Some(serde_json::json!({"supported": ["2027-01-01"]})),
        );
        let listener = Listener(Arc::new(Mutex::new(Heard {
            asked: vec![(NumberOrString::Number(1), "2026-07-28".into())],
            answers: vec![refused],
        })));
        assert!(
            listener
                .revision(&ProtocolVersion::V_2025_11_25)
                .why
                .starts_with("it refused 2026-07-28 and named 2027-01-01; ")
        );
        let silent = Listener(Arc::new(Mutex::new(Heard {
            asked: vec![(NumberOrString::Number(0), "2026-07-28".into())],
            answers: vec![],
        })));
        assert!(
            silent
                .revision(&ProtocolVersion::V_2025_11_25)
                .why
                .starts_with("it did not answer server/discover; ")
        );
    }
}
