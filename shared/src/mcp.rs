//! What every bosun process knows about MCP servers: how one is reached and who signs in to it,
//! a secret line on its way to the keychain, the rules for their names, how their tools are
//! named for the coding CLIs, how a tool's annotations become a risk in plain words, and how a
//! tool differs from what the person approved.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// A command bosun starts, speaking MCP on its stdin and stdout.
    Stdio,
    /// An address, Streamable HTTP.
    Http,
    /// An address, the older HTTP+SSE transport.
    Sse,
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerKind::Stdio => "stdio",
            ServerKind::Http => "http",
            ServerKind::Sse => "sse",
        })
    }
}

/// Who signs in to a server reached by address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SignInBy {
    /// bosun signs in (OAuth), keeps the tokens and hands runs a fresh one.
    #[default]
    Bosun,
    /// Claude Code signs in itself, with the sign-ins it keeps per account; bosun hands its runs
    /// the address and header lines only, and lists no tools.
    ClaudeCode,
}

impl fmt::Display for SignInBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignInBy::Bosun => "bosun",
            SignInBy::ClaudeCode => "claude-code",
        })
    }
}

/// An environment or header line with its value, on its way to the keychain.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretLine {
    pub name: String,
    pub value: String,
}

impl fmt::Debug for SecretLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=<secret>", self.name)
    }
}

/// A secret value on its way to the keychain (never printed by `Debug`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(pub String);

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

/// How a tool differs from what the person approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChange {
    /// Not among the tools the person approved.
    New,
    /// Its description or input schema is not what the person approved.
    Changed,
}

impl ToolChange {
    pub fn words(self) -> &'static str {
        match self {
            ToolChange::New => "new",
            ToolChange::Changed => "changed",
        }
    }
}

/// Names no server may take: bosun's own MCP server, and the built-in browser.
pub const RESERVED_NAMES: [&str; 2] = ["bosun", "chrome-devtools"];

/// The longest name a server may have.
pub const MAX_NAME_LEN: usize = 64;

/// Why a server name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a server needs a name")]
    Empty,
    #[error("`{0}` is longer than {MAX_NAME_LEN} characters")]
    TooLong(String),
    #[error("`{name}` has `{ch}` in it; a server name takes only letters, digits, - and _")]
    BadCharacter { name: String, ch: char },
    #[error(
        "`{0}` has two _ in a row; Claude Code reads __ as the end of the server's name in mcp__<server>__<tool>, so it is not allowed"
    )]
    DoubleUnderscore(String),
    #[error(
        "`{0}` ends with _; Claude Code would read the _ as part of the __ after it, so it is not allowed"
    )]
    TrailingUnderscore(String),
    #[error("`{0}` is taken by bosun itself; choose another name")]
    Reserved(String),
}

/// Checks a server name against the rules: letters, digits, `-` and `_`; no `__`; not ending in
/// `_`; not `bosun` or `chrome-devtools`.
pub fn check_server_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(NameError::TooLong(name.to_string()));
    }
    if let Some(ch) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(NameError::BadCharacter {
            name: name.to_string(),
            ch,
        });
    }
    if name.contains("__") {
        return Err(NameError::DoubleUnderscore(name.to_string()));
    }
    if name.ends_with('_') {
        return Err(NameError::TrailingUnderscore(name.to_string()));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(NameError::Reserved(name.to_string()));
    }
    Ok(())
}

/// The longest name a tool may have (MCP 2025-11-25).
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Why a tool's name breaks MCP's rules for tool names (1 to 128 characters: ASCII letters,
/// digits, `_`, `-` and `.`). Such a tool is set aside as malformed: a name is shown to people
/// and handed to models, so one that can hold anything is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    #[error("its name is empty; MCP asks for 1 to {MAX_TOOL_NAME_LEN} characters")]
    Empty,
    #[error("its name is {0} characters long; MCP allows at most {MAX_TOOL_NAME_LEN}")]
    TooLong(usize),
    #[error(
        "its name has `{}` in it; MCP allows only ASCII letters, digits, _, - and . in a tool's name",
        crate::text::visible(&.0.to_string())
    )]
    BadCharacter(char),
}

/// Checks a tool's name against MCP's rules ([`ToolNameError`]).
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    if name.is_empty() {
        return Err(ToolNameError::Empty);
    }
    let len = name.chars().count();
    if len > MAX_TOOL_NAME_LEN {
        return Err(ToolNameError::TooLong(len));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        Some(c) => Err(ToolNameError::BadCharacter(c)),
        None => Ok(()),
    }
}

/// A tool's name as the coding CLIs see it: `mcp__<server>__<tool>`.
pub fn full_tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// The four hints of a tool's annotations, as the server sent them (`None`: not sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// How much harm a tool can do, from its hints (with the MCP spec's defaults for missing ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads, and only from what the server itself holds.
    Low,
    /// Reads from outside services, or changes things without destroying any.
    Medium,
    /// May delete or overwrite.
    High,
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        })
    }
}

/// What a tool's hints mean, with the spec's defaults applied where the server sent none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    pub risk: Risk,
    /// One phrase per hint, in plain words, e.g. "reads only", "may delete or overwrite".
    pub words: Vec<String>,
    /// The hints the server really sent, each with its value (`readOnlyHint=true`); the others
    /// are the spec's defaults.
    pub sent: Vec<String>,
}

impl Hints {
    /// The MCP spec's defaults for hints a server does not send: not read-only, may delete or
    /// overwrite, not safe to repeat, reaches outside services.
    pub fn assess(&self) -> Assessment {
        let read_only = self.read_only.unwrap_or(false);
        let destructive = self.destructive.unwrap_or(true);
        let idempotent = self.idempotent.unwrap_or(false);
        let open_world = self.open_world.unwrap_or(true);
        let mut words = Vec::new();
        if read_only {
            words.push("reads only".to_string());
        } else {
            words.push("changes things".to_string());
            words.push(if destructive {
                "may delete or overwrite".to_string()
            } else {
                "only adds, never deletes".to_string()
            });
            words.push(if idempotent {
                "safe to repeat".to_string()
            } else {
                "not safe to repeat".to_string()
            });
        }
        words.push(if open_world {
            "reaches outside services".to_string()
        } else {
            "stays within the server".to_string()
        });
        let risk = match (read_only, destructive, open_world) {
            (true, _, false) => Risk::Low,
            (true, _, true) | (false, false, _) => Risk::Medium,
            (false, true, _) => Risk::High,
        };
        let sent = [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
        .collect();
        Assessment { risk, words, sent }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rules_with_the_reason_in_the_refusal() {
        assert_eq!(check_server_name("github"), Ok(()));
        assert_eq!(check_server_name("my-server_2"), Ok(()));
        assert_eq!(check_server_name(""), Err(NameError::Empty));
        assert!(matches!(
            check_server_name("a b"),
            Err(NameError::BadCharacter { ch: ' ', .. })
        ));
        assert!(matches!(
            check_server_name("a.b"),
            Err(NameError::BadCharacter { ch: '.', .. })
        ));
        assert!(matches!(
            check_server_name("bosun__notes"),
            Err(NameError::DoubleUnderscore(_))
        ));
        assert!(matches!(
            check_server_name("notes_"),
            Err(NameError::TrailingUnderscore(_))
        ));
        assert!(matches!(
            check_server_name("bosun"),
            Err(NameError::Reserved(_))
        ));
        assert!(matches!(
            check_server_name("chrome-devtools"),
            Err(NameError::Reserved(_))
        ));
        assert!(matches!(
            check_server_name(&"x".repeat(65)),
            Err(NameError::TooLong(_))
        ));
        let msg = check_server_name("a__b")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("Claude Code reads __"), "{msg}");
        assert_eq!(
            full_tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
    }

    #[test]
    fn missing_hints_take_the_spec_defaults_and_are_marked_as_such() {
        let none = Hints::default().assess();
        assert_eq!(none.risk, Risk::High);
        assert_eq!(
            none.words,
            [
                "changes things",
                "may delete or overwrite",
                "not safe to repeat",
                "reaches outside services"
            ]
        );
        assert!(none.sent.is_empty());

        let read_local = Hints {
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        }
        .assess();
        assert_eq!(read_local.risk, Risk::Low);
        assert_eq!(read_local.words, ["reads only", "stays within the server"]);
        assert_eq!(read_local.sent.len(), 4);

        let partial = Hints {
            read_only: Some(true),
            ..Hints::default()
        }
        .assess();
        assert_eq!(partial.risk, Risk::Medium, "open world by default");
        assert_eq!(partial.sent, ["readOnlyHint=true"]);

        let additive = Hints {
            read_only: Some(false),
            destructive: Some(false),
            idempotent: None,
            open_world: Some(false),
        }
        .assess();
        assert_eq!(additive.risk, Risk::Medium);
    }
}
