//! An agent's approval settings as people write them: its approval mode, the verdicts it saves
//! per tool, and the keys those verdicts are saved under. The policy that uses them is the
//! daemon's (`bosun_approvals::policy`); these are here because an agent's record and
//! the command line both need them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::CliKind;

/// How much an agent's runs may do without asking, before any saved verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Every tool call asks, reads included.
    AskEveryAction,
    /// Reads (the agent's folder, web searches, page fetches) run; the rest asks.
    ReadOnlyWithoutAsking,
    /// Everything runs except what cannot be undone, shell commands and unknown tools.
    #[default]
    SkipApprovals,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 3] = [
        ApprovalMode::AskEveryAction,
        ApprovalMode::ReadOnlyWithoutAsking,
        ApprovalMode::SkipApprovals,
    ];
}

/// The words `bosun agent` takes for a mode, as [`NotAChoice`] lists them.
const MODE_CHOICES: &str = "ask (ask before every action), read-only (run read-only actions without asking) or skip (skip approvals: only irreversible writes, commands and unknown tools ask)";

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApprovalMode::AskEveryAction => "ask",
            ApprovalMode::ReadOnlyWithoutAsking => "read-only",
            ApprovalMode::SkipApprovals => "skip",
        })
    }
}

impl FromStr for ApprovalMode {
    type Err = NotAChoice;
    fn from_str(text: &str) -> Result<Self, NotAChoice> {
        match words(text).as_str() {
            "ask" | "ask-every-action" | "ask-before-every-action" => {
                Ok(ApprovalMode::AskEveryAction)
            }
            "read-only" | "readonly" | "read-only-without-asking" => {
                Ok(ApprovalMode::ReadOnlyWithoutAsking)
            }
            "skip" | "skip-approvals" => Ok(ApprovalMode::SkipApprovals),
            _ => Err(NotAChoice::new(text, "an approval mode", MODE_CHOICES)),
        }
    }
}

/// What the person saved for one tool: it overrides the mode in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    AlwaysAllow,
    NeedsApproval,
    Blocked,
}

impl Verdict {
    pub const ALL: [Verdict; 3] = [
        Verdict::AlwaysAllow,
        Verdict::NeedsApproval,
        Verdict::Blocked,
    ];

    /// How strict it is: when two saved verdicts are equally specific, the stricter holds.
    pub fn strictness(self) -> u8 {
        match self {
            Verdict::AlwaysAllow => 0,
            Verdict::NeedsApproval => 1,
            Verdict::Blocked => 2,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::AlwaysAllow => "allow",
            Verdict::NeedsApproval => "ask",
            Verdict::Blocked => "block",
        })
    }
}

impl FromStr for Verdict {
    type Err = NotAChoice;
    fn from_str(text: &str) -> Result<Self, NotAChoice> {
        match words(text).as_str() {
            "allow" | "always-allow" | "allowed" => Ok(Verdict::AlwaysAllow),
            "ask" | "needs-approval" => Ok(Verdict::NeedsApproval),
            "block" | "blocked" => Ok(Verdict::Blocked),
            _ => Err(NotAChoice::new(
                text,
                "a verdict",
                "allow (always allow), ask (needs approval) or block (blocked)",
            )),
        }
    }
}

/// A mode or verdict typed in lower case, with `-` between its words (`Read only` is `read-only`).
fn words(text: &str) -> String {
    text.trim()
        .to_ascii_lowercase()
        .split(|c: char| c.is_whitespace() || c == '_' || c == '-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A word that is not one of the choices: returned by the `FromStr` of [`ApprovalMode`] and
/// [`Verdict`]. Retrying with one of the listed words helps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not {what}; choose {choices}")]
pub struct NotAChoice {
    text: String,
    what: &'static str,
    choices: &'static str,
}

impl NotAChoice {
    fn new(text: &str, what: &'static str, choices: &'static str) -> Self {
        NotAChoice {
            text: text.to_string(),
            what,
            choices,
        }
    }
}

/// The shell tools, by CLI, and the field of their input that holds the command line.
const SHELL_TOOLS: [(CliKind, &str, &str); 5] = [
    (CliKind::Claude, "Bash", "command"),
    (CliKind::Claude, "Monitor", "command"),
    (CliKind::Codex, "exec_command", "command"),
    (CliKind::Codex, "shell_command", "command"),
    (CliKind::Gemini, "run_shell_command", "command"),
];

/// The command line of a shell tool's call; `None` for any other tool, or when the input holds
/// no command as text.
pub fn shell_command<'a>(cli: CliKind, tool: &str, input: &'a Value) -> Option<&'a str> {
    let (_, _, field) = SHELL_TOOLS
        .iter()
        .find(|(c, name, _)| *c == cli && *name == tool)?;
    input.get(field).and_then(Value::as_str)
}

/// The tool a fenced run's proxy asks about when a program of the run wants a host its list
/// does not have, with the input `{"host": "...", "port": N}`. No CLI has a built-in tool of
/// this name (a test of the policy's tables checks it), so a call of it is always the proxy's.
pub const NET_TOOL: &str = "Network";

/// What a verdict is saved against, and what a call is looked up by.
///
/// Written as the person types it (and saved under its [`Display`](fmt::Display), the one
/// spelling of each key): a built-in tool by the CLI's own name (`Bash`, `write_file`); an MCP
/// tool as `mcp.<server>.<tool>`; shell commands as `Bash(…)` for every CLI, as allowed commands
/// are — `Bash(git *)` (or `Bash(git:*)`) for the commands that start with the word `git`,
/// `Bash(npm test)` for that one command. `Bash` alone is the shell of whichever CLI the agent
/// runs. A host the fence's proxy asks for is `Network(example.com:443)` (that port) or
/// `Network(example.com)` (any port); `Network` alone is every host.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolKey {
    Builtin(String),
    Mcp { server: String, tool: String },
    Command(CommandPattern),
    Host(HostKey),
}

/// A host the run's proxy may be allowed to reach: a lowercased DNS name or an address (IPv6 in
/// brackets), and its port (`None`: any port).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey {
    host: String,
    port: Option<u16>,
}

impl HostKey {
    /// Reads `host[:port]` as a key names it; `None` when it is not a host (a `*`, a space, a
    /// bracket out of place, a port out of range).
    pub fn parse(text: &str) -> Option<HostKey> {
        let text = text.trim();
        let (host, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (v6, after) = rest.split_once(']')?;
                let port = match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':')?),
                };
                v6.parse::<std::net::Ipv6Addr>().ok()?;
                (format!("[{}]", v6.to_ascii_lowercase()), port)
            }
            None => {
                let (host, port) = match text.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (text, None),
                };
                let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
                let fits = host.len() <= 253
                    && host.split('.').all(|label| {
                        !label.is_empty()
                            && label.len() <= 63
                            && label
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    });
                if !fits {
                    return None;
                }
                (host, port)
            }
        };
        let port = match port {
            None => None,
            Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => {
                Some(digits.parse::<u16>().ok().filter(|p| *p != 0)?)
            }
            Some(_) => return None,
        };
        Some(HostKey { host, port })
    }

    /// The key for exactly `host` and `port`, as the proxy's ask names them.
    pub fn exact(host: &str, port: u16) -> Option<HostKey> {
        HostKey::parse(host)
            .filter(|k| k.port.is_none())
            .map(|k| HostKey {
                port: Some(port),
                ..k
            })
    }

    /// Whether this key (a host with its port, or with any port) covers `call`'s host and port.
    pub fn covers(&self, call: &HostKey) -> bool {
        self.host == call.host && self.port.is_none_or(|p| Some(p) == call.port)
    }

    /// A key with its port is more specific than one for any port.
    pub fn specificity(&self) -> bool {
        self.port.is_some()
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// The commands a `Bash(…)` key stands for, as words (runs of spaces count as one).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommandPattern {
    /// `Bash(npm test)`: exactly these words.
    Exact(Vec<String>),
    /// `Bash(git *)`: these words, then anything.
    Prefix(Vec<String>),
}

impl CommandPattern {
    pub fn matches(&self, words: &[&str]) -> bool {
        let (pattern, exact) = match self {
            CommandPattern::Exact(p) => (p, true),
            CommandPattern::Prefix(p) => (p, false),
        };
        (if exact {
            words.len() == pattern.len()
        } else {
            words.len() >= pattern.len()
        }) && pattern.iter().zip(words).all(|(p, w)| p == w)
    }

    /// More words are more specific; for the same words, exact is more specific than a prefix.
    pub fn specificity(&self) -> (usize, bool) {
        match self {
            CommandPattern::Exact(p) => (p.len(), true),
            CommandPattern::Prefix(p) => (p.len(), false),
        }
    }
}

/// The name `Bash` stands for: the shell of any CLI.
pub const SHELL: &str = "Bash";

impl ToolKey {
    /// Whether the key is a CLI's shell tool, whose calls carry a command line.
    pub fn is_shell_tool(&self) -> bool {
        match self {
            ToolKey::Builtin(name) => SHELL_TOOLS.iter().any(|(_, n, _)| n == name),
            ToolKey::Mcp { .. } | ToolKey::Command(_) | ToolKey::Host(_) => false,
        }
    }
}

impl fmt::Display for ToolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolKey::Builtin(name) => f.write_str(name),
            ToolKey::Mcp { server, tool } => write!(f, "mcp.{server}.{tool}"),
            ToolKey::Command(CommandPattern::Exact(words)) => {
                write!(f, "{SHELL}({})", words.join(" "))
            }
            ToolKey::Command(CommandPattern::Prefix(words)) => {
                write!(f, "{SHELL}({} *)", words.join(" "))
            }
            ToolKey::Host(host) => write!(f, "{NET_TOOL}({host})"),
        }
    }
}

/// Why a tool key was refused, said with how to write it. Returned when a verdict is saved (and
/// when one is read back, where a refused key matches nothing); retrying with the key rewritten
/// as the message says helps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "a verdict needs a tool; write a built-in tool's name such as Bash or write_file, an MCP tool as mcp.<server>.<tool>, or commands such as Bash(git *)"
    )]
    Empty,
    #[error(
        "`{0}` is not a tool's name; a built-in tool's name takes only letters, digits and _ (such as Read or write_file), and an MCP tool is written mcp.<server>.<tool>"
    )]
    BadName(String),
    #[error("`{written}` is how the CLI names an MCP tool; write it as {suggested}")]
    CliMcpName { written: String, suggested: String },
    #[error(
        "`{0}` names a server, not one of its tools; write mcp.<server>.<tool>, such as mcp.github.create_issue"
    )]
    ServerOnly(String),
    #[error(
        "`{0}` has no server's name after mcp.; write mcp.<server>.<tool>, such as mcp.github.create_issue"
    )]
    NoServer(String),
    #[error(
        "`{server}` in `{written}` is not a server's name; a server's name takes only letters, digits, - and _"
    )]
    BadServer { written: String, server: String },
    #[error(
        "`{0}` needs a tool's name after the server, without spaces, =, ( or ); write it such as mcp.github.create_issue"
    )]
    BadTool(String),
    #[error("`{0}` is missing its closing ); write commands such as Bash(git *)")]
    Unclosed(String),
    #[error("`{0}` has a ) inside the brackets; a command pattern ends at its one )")]
    ParenInside(String),
    #[error(
        "`{written}`: only commands and hosts take a pattern in brackets, written Bash(…) for every CLI and Network(host:port); for the whole of {tool} write {tool} alone"
    )]
    NotACommand { written: String, tool: String },
    #[error(
        "`{0}` has nothing between the brackets; write Bash for every command, Bash(git *) for those that start with git, or Bash(npm test) for that one command"
    )]
    EmptyPattern(String),
    #[error("`{0}` has a * that does not end it; a * may only end the pattern, as in Bash(git *)")]
    StarInside(String),
    #[error(
        "`{0}` does not name one host: write Network(example.com:443) for that host and port, Network(example.com) for any port, or Network for every host (no wildcards)"
    )]
    BadHost(String),
}

impl FromStr for ToolKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(KeyError::Empty);
        }
        if let Some(rest) = text.strip_prefix("mcp.") {
            return mcp_key(text, rest);
        }
        if let Some(rest) = text.strip_prefix("mcp__") {
            return Err(match rest.split_once("__") {
                Some((server, tool)) => KeyError::CliMcpName {
                    written: text.to_string(),
                    suggested: format!("mcp.{server}.{tool}"),
                },
                None => KeyError::ServerOnly(text.to_string()),
            });
        }
        let (name, pattern) = match text.split_once('(') {
            Some((name, rest)) => (name.trim_end(), Some(rest)),
            None => (text, None),
        };
        let name_ok = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if name.is_empty() || !name_ok {
            return Err(KeyError::BadName(text.to_string()));
        }
        let Some(rest) = pattern else {
            return Ok(ToolKey::Builtin(name.to_string()));
        };
        let Some(inner) = rest.strip_suffix(')') else {
            return Err(KeyError::Unclosed(text.to_string()));
        };
        if name == NET_TOOL {
            return HostKey::parse(inner)
                .map(ToolKey::Host)
                .ok_or_else(|| KeyError::BadHost(text.to_string()));
        }
        if name != SHELL {
            return Err(KeyError::NotACommand {
                written: text.to_string(),
                tool: name.to_string(),
            });
        }
        command_key(text, inner)
    }
}

/// `mcp.<server>.<tool>`: a server's name has no dots; a tool's may.
fn mcp_key(text: &str, rest: &str) -> Result<ToolKey, KeyError> {
    let Some((server, tool)) = rest.split_once('.') else {
        return Err(KeyError::ServerOnly(text.to_string()));
    };
    if server.is_empty() {
        return Err(KeyError::NoServer(text.to_string()));
    }
    let server_ok = server
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !server_ok {
        return Err(KeyError::BadServer {
            written: text.to_string(),
            server: server.to_string(),
        });
    }
    let tool_ok = !tool.chars().any(|c| c.is_whitespace() || "=()".contains(c));
    if tool.is_empty() || !tool_ok {
        return Err(KeyError::BadTool(text.to_string()));
    }
    Ok(ToolKey::Mcp {
        server: server.to_string(),
        tool: tool.to_string(),
    })
}

/// The pattern between `Bash(` and `)`: `git *`, `git:*` and `git*` are the prefix `git`; `*`
/// alone is every command (`Bash`).
fn command_key(text: &str, inner: &str) -> Result<ToolKey, KeyError> {
    if inner.contains(')') {
        return Err(KeyError::ParenInside(text.to_string()));
    }
    let inner = inner.trim();
    if inner.is_empty() {
        return Err(KeyError::EmptyPattern(text.to_string()));
    }
    let (base, prefix) = match inner.strip_suffix('*') {
        Some(base) => {
            let base = base.trim_end();
            (base.strip_suffix(':').unwrap_or(base), true)
        }
        None => (inner, false),
    };
    if base.contains('*') {
        return Err(KeyError::StarInside(text.to_string()));
    }
    let words: Vec<String> = base.split_whitespace().map(str::to_string).collect();
    Ok(match (words.is_empty(), prefix) {
        (true, _) => ToolKey::Builtin(SHELL.to_string()),
        (false, true) => ToolKey::Command(CommandPattern::Prefix(words)),
        (false, false) => ToolKey::Command(CommandPattern::Exact(words)),
    })
}
