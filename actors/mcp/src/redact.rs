//! Redaction: the secret values bosun hands a server — its environment and header lines, the
//! token of a sign-in, the query of its address — written as `[redacted]` in everything bosun
//! shows or keeps of what the server says back, so that a server that echoes one (in a tool's
//! answer, its description, its instructions, an error, its stderr) cannot make bosun print or
//! store it. The address itself, where it appears, is written as [`address::shown`] does.
//!
//! A [`Redactor`] is made once per look at a server, from the values of that look
//! ([`Redactor::new`]); [`Redact`] applies it to every value a look returns, in one place
//! (`look::reach`), and the client applies it to a server's own words before it cuts them short
//! (a secret cut in two would not be found afterwards). [`secret_values`] is the same list of
//! values for a run, whose output the runner redacts.
//!
//! # Caveats
//! - A value shorter than [`MIN_LEN`] bytes is not redacted: hiding every `1` or `yes` in an
//!   answer would garble it, and a value that short protects nothing. (The runner redacts a
//!   run's output from the same values with the same bound.)
//! - The value is found as it was given, JSON-escaped, with surrounding blanks trimmed, and,
//!   for a header, its credential after the scheme (`Bearer <token>`; `Basic`'s `user:password`
//!   and password decoded); a query's values are found percent-encoded and decoded. A server
//!   that sends back a part of a secret, or a transformed one (reversed, hashed, re-encoded),
//!   is not caught.

use std::fmt;

use base64::Engine as _;
use serde_json::Value;

use super::address;

pub use bosun_shared::redact::{MIN_LEN, REDACTED};

/// Replaces the secret values of one server (and its address) in text and JSON.
#[derive(Clone, Default)]
pub struct Redactor {
    /// What to find and what to write instead, longest first: a secret that holds another is
    /// replaced whole.
    pairs: Vec<(String, String)>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} values)", self.pairs.len())
    }
}

impl Redactor {
    /// A redactor for the lines bosun hands a server (`headers` with the sign-in's token, when
    /// there is one) and the address it reaches it at.
    pub fn new(env: &[(String, String)], headers: &[(String, String)], url: Option<&str>) -> Self {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(u) = url {
            let shown = address::shown(u);
            if shown != u {
                pairs.push((u.to_string(), shown));
            }
        }
        pairs.extend(
            secret_values(env, headers, url)
                .into_iter()
                .map(|v| (v, REDACTED.to_string())),
        );
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        pairs.dedup_by(|a, b| a.0 == b.0);
        Self { pairs }
    }

    /// A redactor for `values` (each already known to be a secret of the run's).
    pub fn of_values(values: &[String]) -> Self {
        Self::default().with(&Self {
            pairs: values
                .iter()
                .filter(|v| !v.is_empty())
                .map(|v| (v.clone(), REDACTED.to_string()))
                .collect(),
        })
    }

    /// A redactor that knows the values of both.
    pub fn with(mut self, other: &Redactor) -> Self {
        self.pairs.extend(other.pairs.iter().cloned());
        self.pairs
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self.pairs.dedup_by(|a, b| a.0 == b.0);
        self
    }

    /// `text` with every secret value replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (find, with) in &self.pairs {
            if out.contains(find.as_str()) {
                out = out.replace(find.as_str(), with);
            }
        }
        out
    }
}

/// Every secret value of a server's lines and address, as a run or a look may see them sent
/// back (see the caveats above for which forms).
pub fn secret_values(
    env: &[(String, String)],
    headers: &[(String, String)],
    url: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |value: &str| {
        let value = value.trim();
        if value.len() < MIN_LEN {
            return;
        }
        out.push(value.to_string());
        if let Ok(quoted) = serde_json::to_string(value) {
            let escaped = &quoted[1..quoted.len() - 1];
            if escaped != value {
                out.push(escaped.to_string());
            }
        }
    };
    for (_, v) in env {
        add(v);
    }
    for (_, v) in headers {
        add(v);
        if let Some((scheme, credential)) = v.trim().split_once(' ') {
            add(credential);
            if scheme.eq_ignore_ascii_case("basic")
                && let Ok(bytes) =
                    base64::engine::general_purpose::STANDARD.decode(credential.trim())
                && let Ok(pair) = String::from_utf8(bytes)
            {
                add(&pair);
                if let Some((_, password)) = pair.split_once(':') {
                    add(password);
                }
            }
        }
    }
    if let Some(parsed) = url.and_then(|u| url::Url::parse(u).ok())
        && let Some(query) = parsed.query()
    {
        add(query);
        for raw in query.split('&') {
            add(raw.split_once('=').map_or(raw, |(_, v)| v));
        }
        for (_, decoded) in parsed.query_pairs() {
            add(&decoded);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A value with the secret values a [`Redactor`] knows replaced, throughout.
pub trait Redact {
    fn redact(self, r: &Redactor) -> Self;
}

impl Redact for String {
    fn redact(self, r: &Redactor) -> Self {
        r.text(&self)
    }
}

impl<T: Redact> Redact for Option<T> {
    fn redact(self, r: &Redactor) -> Self {
        self.map(|v| v.redact(r))
    }
}

impl<T: Redact> Redact for Vec<T> {
    fn redact(self, r: &Redactor) -> Self {
        self.into_iter().map(|v| v.redact(r)).collect()
    }
}

impl<T: Redact, E: Redact> Redact for Result<T, E> {
    fn redact(self, r: &Redactor) -> Self {
        self.map(|v| v.redact(r)).map_err(|e| e.redact(r))
    }
}

/// Every string of the JSON, object keys included.
impl Redact for Value {
    fn redact(self, r: &Redactor) -> Self {
        match self {
            Value::String(s) => Value::String(r.text(&s)),
            Value::Array(items) => Value::Array(items.redact(r)),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (r.text(&k), v.redact(r)))
                    .collect(),
            ),
            v @ (Value::Null | Value::Bool(_) | Value::Number(_)) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McpError;

    #[test]
    fn values_are_replaced_longest_first_so_none_leaves_a_piece_of_another() {
        let r = Redactor::of_values(&["secret-one".into(), "secret-one-two".into(), String::new()]);
        assert_eq!(
            r.text("a secret-one-two and a secret-one"),
            "a [redacted] and a [redacted]"
        );
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn every_form_of_a_secret_is_replaced_and_the_address_is_shown_without_its_query() {
        let basic = base64::engine::general_purpose::STANDARD.encode("ann:hunter22");
        let r = Redactor::new(
            &[pair("TOKEN", "env-secret-1"), pair("SHORT", "ab")],
            &[
                pair("Authorization", "Bearer tok-secret-2"),
                pair("Proxy-Authorization", &format!("Basic {basic}")),
                pair("X-Quote", "has \"quotes\""),
            ],
            Some("https://example.com/mcp?key=q%20secret&x=1"),
        );
        let text = r.text(
            "env-secret-1 tok-secret-2 ann:hunter22 hunter22 q secret q%20secret ab \
             at https://example.com/mcp?key=q%20secret&x=1 and {\"v\":\"has \\\"quotes\\\"\"}",
        );
        assert_eq!(
            text,
            "[redacted] [redacted] [redacted] [redacted] [redacted] [redacted] ab \
             at https://example.com/mcp?… and {\"v\":\"[redacted]\"}"
        );
        let json = serde_json::json!({"tok-secret-2": ["say env-secret-1", 3, true, null]});
        assert_eq!(
            json.redact(&r),
            serde_json::json!({"[redacted]": ["say [redacted]", 3, true, null]})
        );
        assert_eq!(
            format!("{r:?}"),
            format!("Redactor({} values)", r.pairs.len())
        );
        assert!(!format!("{r:?}").contains("secret"));
    }

    #[test]
    fn an_error_is_redacted_in_every_field() {
        let r = Redactor::new(&[pair("K", "s3cret-value")], &[], None);
        let e = McpError::Exited {
            status: "status 3".into(),
            stderr: "; token s3cret-value".into(),
        };
        assert_eq!(
            e.redact(&r).to_string(),
            "the server exited with status 3 before it answered; token [redacted]"
        );
    }
}
