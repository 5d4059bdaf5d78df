//! The `WWW-Authenticate` header of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1): the Bearer
//! challenge's `resource_metadata`, `scope` and `error`.

use std::collections::HashMap;

/// A Bearer challenge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the protected-resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// The scopes the request needs.
    pub scope: Option<String>,
    /// Such as `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// Parses the header's value. Several schemes may be listed; the Bearer one is read, and a
    /// header with no scheme bosun knows gives an empty challenge.
    pub fn parse(header: &str) -> Self {
        let params = scheme_params(header, "bearer");
        Self {
            resource_metadata: params.get("resource_metadata").cloned(),
            scope: params
                .get("scope")
                .cloned()
                .filter(|s| !s.trim().is_empty()),
            error: params.get("error").cloned(),
        }
    }

    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The auth-params of the challenge of `scheme` (such as `bearer`, or `dpop` for RFC 9449's):
/// `k=v` or `k="quoted \" value"`, comma-separated.
pub fn scheme_params(header: &str, scheme: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = header.trim();
    let mut in_bearer = false;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        // A token: a scheme name (followed by a space or the end) or a parameter name.
        let end = rest.find(['=', ' ', ',']).unwrap_or(rest.len());
        let word = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if let Some(value_part) = after.strip_prefix('=') {
            let value_part = value_part.trim_start();
            let (value, remaining) = read_value(value_part);
            if in_bearer {
                out.insert(word.to_ascii_lowercase(), value);
            }
            rest = remaining;
        } else {
            // A scheme name.
            in_bearer = word.eq_ignore_ascii_case(scheme);
            rest = after;
            if word.is_empty() {
                break;
            }
        }
    }
    out
}

/// A value: a quoted string (with `\` escapes) or a token up to the next comma.
fn read_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = text.find(',').unwrap_or(text.len());
        (text[..end].trim().to_string(), &text[end..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_in_their_usual_shapes() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", error_description="needs \"b\"""#,
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a b"));
        // Another scheme first, unquoted values, odd spacing.
        let c = Challenge::parse(r#"Basic realm="x", Bearer  error=invalid_token ,scope=read"#);
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(Challenge::parse("Basic realm=\"x\""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse(""), Challenge::default());
    }
}
