//! The proxy's asks for a host, carried to bosund as tool calls of bosun's own tool
//! [`NET_TOOL`] (input `{"host", "port", "how", "why"}`), over the same path as the gateway's
//! asks about MCP calls: the link says the ask again after each reconnect until it is decided,
//! and bosund answers an ask it decided with the decision it committed, so across a SIGKILL of
//! bosund the proxy gets that decision, once. bosund's approvals decide it (a saved verdict, or
//! the person through the inbox, within the agent's approval wait).
//!
//! # Caveats
//! - bosund must first answer within [`FIRST_ANSWER`](crate::link::FIRST_ANSWER) (a decision, or that the ask waits for
//!   the person): past it, bosund is taken as unreachable and the host is refused, saying so.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bosun_protocol::runner::{ToolAnswer, ToolAsk};
use bosun_shared::Timestamp;
use bosun_shared::approvals::NET_TOOL;
use serde_json::json;

use crate::link::{FIRST_ANSWER, LinkState, Verdict};
use crate::proxy::How;
use crate::proxy::asking::{HostAnswer, Person};
use crate::redact::Redactor;

/// Asks bosund over the runner's link.
pub struct OverLink {
    link: Arc<LinkState>,
    cwd: PathBuf,
    redactor: Arc<Redactor>,
    asked: AtomicU64,
}

impl OverLink {
    pub fn new(link: Arc<LinkState>, cwd: PathBuf, redactor: Redactor) -> Self {
        OverLink {
            link,
            cwd,
            redactor: Arc::new(redactor),
            asked: AtomicU64::new(0),
        }
    }
}

impl Person for OverLink {
    fn ask(
        &self,
        host: &str,
        port: u16,
        how: How,
        why: &str,
    ) -> Pin<Box<dyn Future<Output = HostAnswer> + Send>> {
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let key = format!("net-{n}");
        let how = match how {
            How::Tunnel => "tunnel",
            How::Forward => "http",
            How::Direct => "direct",
        };
        let ask = ToolAsk {
            key: key.clone(),
            tool: NET_TOOL.to_string(),
            input: json!({"host": host, "port": port, "how": how, "why": why}),
            input_cut: false,
            cwd: None,
            at: Timestamp::now(),
            redacted: false,
        };
        let ask = crate::control::for_bosund(ask, &self.cwd, &self.redactor);
        let link = Arc::clone(&self.link);
        Box::pin(async move {
            match link.judged(ask).await {
                Verdict::Decided {
                    answer: ToolAnswer::Allow,
                    by,
                } => HostAnswer::Allowed { by },
                Verdict::Decided {
                    answer: ToolAnswer::Deny { message },
                    by,
                } if message.is_empty() => HostAnswer::Denied {
                    reason: format!("denied by {by}"),
                },
                Verdict::Decided {
                    answer: ToolAnswer::Deny { message },
                    by,
                } => HostAnswer::Denied {
                    reason: format!("denied by {by}: {message}"),
                },
                Verdict::Unreachable => HostAnswer::Denied {
                    reason: format!(
                        "bosund did not answer within {} s, so nobody could allow it",
                        FIRST_ANSWER.as_secs()
                    ),
                },
                Verdict::Withdrawn => HostAnswer::Denied {
                    reason: "the ask for it was withdrawn".into(),
                },
            }
        })
    }
}
