//! MCP calls the CLI's control protocol already brought to bosund and had allowed, waiting for
//! the gateway to see them: every call is judged once, so the gateway lets such a call through
//! on that decision instead of asking again.
//!
//! The driver notes each allowed ask of an MCP tool here (its full name `mcp__<server>__<tool>`,
//! as the protocols name it, Gemini's `mcp_<server>_<tool>` already made into it, and a digest
//! of its arguments as the CLI sent them, before any redaction) *before* it hands the answer to
//! the CLI; the gateway takes the first entry that matches a `tools/call` (same server, tool and
//! arguments, compared in a canonical form: object keys sorted). An entry is taken once, so two
//! identical calls need two decisions.
//!
//! # Caveats
//! - Entries are kept for [`KEEP`] and at most [`MOST`] of them: a CLI that asks and then makes
//!   the call much later, or never, has the gateway ask bosund itself (judged again, never let
//!   through unjudged).
//! - A CLI that changes the arguments between its ask and its call (or a protocol that shows
//!   bosun a summary of them) does not match: the gateway asks bosund about the call it sees.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

/// How long an allowed ask waits for its call.
pub const KEEP: Duration = Duration::from_secs(300);
/// The most allowed asks kept; the oldest go first.
pub const MOST: usize = 256;

/// One allowed ask waiting for its call.
#[derive(Debug)]
struct Entry {
    tool: String,
    args: [u8; 32],
    /// Who allowed it, in bosund's words.
    by: String,
    at: Instant,
}

/// The allowed asks of MCP tools not yet seen at the gateway, oldest first.
#[derive(Debug, Default)]
pub struct Cleared {
    entries: VecDeque<Entry>,
}

impl Cleared {
    /// The control protocol's ask of `tool` (its full name) with `args` was allowed by `by`.
    pub fn allow(&mut self, tool: &str, args: &Value, by: String) {
        self.forget_old();
        if self.entries.len() >= MOST {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            tool: tool.to_string(),
            args: digest(args),
            by,
            at: Instant::now(),
        });
    }

    /// Takes the oldest allowed ask that is this call (the server's `tool`, full name
    /// `full`, with `args`): who allowed it. `None` when no decision covers the call.
    pub fn take(&mut self, full: &str, args: &Value) -> Option<String> {
        self.forget_old();
        let args = digest(args);
        let at = self
            .entries
            .iter()
            .position(|e| e.tool == full && e.args == args)?;
        self.entries.remove(at).map(|e| e.by)
    }

    fn forget_old(&mut self) {
        while self.entries.front().is_some_and(|e| e.at.elapsed() > KEEP) {
            self.entries.pop_front();
        }
    }
}

/// A digest of a call's arguments in a canonical form: object keys sorted at every depth, no
/// arguments the same as `{}` (a CLI may leave them out).
fn digest(args: &Value) -> [u8; 32] {
    let mut text = String::new();
    if args.is_null() {
        text.push_str("{}");
    } else {
        canonical(args, &mut text);
    }
    Sha256::digest(text.as_bytes()).into()
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(inner) = map.get(k) {
                    canonical(inner, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.push_str(&v.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_let_through_once_on_the_decision_that_covers_it() {
        let mut c = Cleared::default();
        c.allow(
            "mcp__everything__echo",
            &json!({"message": "hi", "n": {"b": 1, "a": [2, {"y": 1, "x": 0}]}}),
            "the person".into(),
        );
        // Another tool, other arguments: not covered.
        assert_eq!(
            c.take("mcp__everything__add", &json!({"message": "hi"})),
            None
        );
        assert_eq!(
            c.take("mcp__everything__echo", &json!({"message": "hello"})),
            None
        );
        // The same arguments, keys in another order: covered, once.
        let same = json!({"n": {"a": [2, {"x": 0, "y": 1}], "b": 1}, "message": "hi"});
        assert_eq!(
            c.take("mcp__everything__echo", &same).as_deref(),
            Some("the person")
        );
        assert_eq!(c.take("mcp__everything__echo", &same), None, "taken once");
        // An array's order is its meaning.
        c.allow("mcp__s__t", &json!({"a": [1, 2]}), "p".into());
        assert_eq!(c.take("mcp__s__t", &json!({"a": [2, 1]})), None);
        // No arguments are none.
        c.allow("mcp__s__t", &json!({}), "p".into());
        assert_eq!(c.take("mcp__s__t", &Value::Null).as_deref(), Some("p"));
    }

    #[test]
    fn two_identical_asks_cover_two_calls_oldest_first_and_no_more_than_kept() {
        let mut c = Cleared::default();
        c.allow("mcp__s__t", &json!({}), "first".into());
        c.allow("mcp__s__t", &json!({}), "second".into());
        assert_eq!(c.take("mcp__s__t", &json!({})).as_deref(), Some("first"));
        assert_eq!(c.take("mcp__s__t", &json!({})).as_deref(), Some("second"));
        assert_eq!(c.take("mcp__s__t", &json!({})), None);
        for n in 0..MOST + 10 {
            c.allow("mcp__s__t", &json!({ "n": n }), "p".into());
        }
        assert_eq!(
            c.take("mcp__s__t", &json!({"n": 0})),
            None,
            "the oldest went"
        );
        assert!(c.take("mcp__s__t", &json!({ "n": MOST + 9 })).is_some());
    }

    #[test]
    fn an_ask_whose_call_never_came_is_forgotten() {
        let mut c = Cleared::default();
        c.allow("mcp__s__t", &json!({}), "p".into());
        let Some(long_ago) = Instant::now().checked_sub(KEEP + Duration::from_secs(1)) else {
            return;
        };
        for e in &mut c.entries {
            e.at = long_ago;
        }
        assert_eq!(c.take("mcp__s__t", &json!({})), None);
    }
}
