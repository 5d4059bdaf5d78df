//! bosun's MCP gateway: what a run's runner needs to stand between the run's CLI and each of
//! its MCP servers, and the rules it holds each server to.
//!
//! A run's CLI is never given a server itself: it is given a stdio command of bosun's
//! (`bosun-runner gateway --socket SOCKET NAME`) that reaches the run's own runner over a Unix
//! socket in the run's folder. The runner starts the real server with its secrets, which never
//! leave the runner, and relays each message both ways under the server's [`Rules`].

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// In the CLI's MCP configuration, the runner's own program; the runner writes its path in.
pub const RUNNER_EXE: &str = "${BOSUN_RUNNER_EXE}";
/// In the CLI's MCP configuration, the gateway's socket; the runner writes its path in.
pub const SOCKET: &str = "${BOSUN_GATEWAY_SOCKET}";
/// The gateway's socket, in the run's folder.
pub const SOCKET_FILE: &str = "gateway.sock";
/// The first argument of `bosun-runner` that makes it the CLI's end of the gateway.
pub const SHIM_ARG: &str = "gateway";

/// The file in the run's folder where the gateway keeps a line for each call (JSON lines of
/// [`CallEntry`]).
pub const CALLS_FILE: &str = "mcp-calls.jsonl";

/// One MCP call of a run, as the gateway saw it. Secret values are written `[redacted]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallEntry {
    /// When the CLI sent it.
    pub at: crate::Timestamp,
    pub server: String,
    pub tool: String,
    /// Its arguments as JSON, cut to 300 characters.
    pub args: String,
    pub outcome: CallOutcome,
    /// From the call to its answer, in milliseconds (absent for a call refused at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Characters of text in its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chars: Option<u64>,
    /// Set when the result was cut for the model: how many characters it got (head and tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_got: Option<u64>,
    /// Whether bosun let it run and who decided (absent from a record an older bosun kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<CallDecision>,
}

/// How bosun judged one call at the gateway: every call is judged once, by the approval policy
/// that judges the run's other tool calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallDecision {
    pub verdict: CallVerdict,
    /// Who decided, in bosund's words: the policy's rule (with its step), the person, the
    /// deadline, a switch, the run's end; or bosun's gateway itself (the server's rules, or
    /// bosund that could not be reached).
    pub by: String,
    pub asked: AskedAt,
}

/// Whether a call was let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallVerdict {
    Allowed,
    Denied,
}

/// Where bosun was asked about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskedAt {
    /// The CLI's own control protocol brought the call to bosund before it made it; the
    /// gateway let it through on that decision without asking again.
    Cli,
    /// The gateway asked bosund itself: no decision of the CLI's covered the call.
    Gateway,
    /// The gateway refused it by the server's rules (its tool lists, a tool held back) before
    /// anyone was asked.
    Rules,
}

impl CallDecision {
    /// In words, for the person: `allowed by the person (asked at the gateway)`.
    pub fn words(&self) -> String {
        let verdict = match self.verdict {
            CallVerdict::Allowed => "allowed",
            CallVerdict::Denied => "denied",
        };
        let asked = match self.asked {
            AskedAt::Cli => "asked by the CLI before the call",
            AskedAt::Gateway => "asked at the gateway",
            AskedAt::Rules => "the server's rules in bosun",
        };
        format!("{verdict} by {} ({asked})", self.by)
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The server answered with a result.
    Answered,
    /// The server answered with a result that says it failed (`isError`).
    AnsweredError,
    /// The server answered with a protocol error.
    Failed { message: String },
    /// bosun's gateway refused it before it reached the server.
    Refused { reason: String },
    /// No answer within the server's deadline: cancelled, never sent again.
    TimedOut,
    /// The server ended before it answered.
    ServerEnded { how: String },
}

impl CallOutcome {
    /// In words, for the person.
    pub fn words(&self) -> String {
        match self {
            CallOutcome::Answered => "answered".into(),
            CallOutcome::AnsweredError => "answered an error".into(),
            CallOutcome::Failed { message } => format!("failed: {message}"),
            CallOutcome::Refused { reason } => format!("refused by bosun's gateway ({reason})"),
            CallOutcome::TimedOut => {
                "no answer within its deadline; cancelled, not sent again".into()
            }
            CallOutcome::ServerEnded { how } => format!("the server ended during it ({how})"),
        }
    }
}

/// How long a call may take by default, in milliseconds.
pub const DEFAULT_DEADLINE_MS: u64 = 60_000;
/// The longest result, in characters, the model gets whole by default.
pub const DEFAULT_MAX_RESULT_CHARS: u64 = 8_192;

/// An MCP server a run reaches through its runner's gateway.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayServer {
    pub name: String,
    pub reach: Reach,
    pub rules: Rules,
    /// The folders answered to the server's `roots/list`: the run's workspace.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// The tools as the person approved them (the first `bosun mcp tools`, then `bosun mcp
    /// approve`): a tool not among them, or whose description or input schema is not the
    /// same, is held back from the run. `None` when the server was never listed: nothing is
    /// held back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Vec<PinnedTool>>,
    /// bosun's built-in browser (chrome-devtools): in a fenced run it reaches the run's
    /// `web.fetch` list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub browser: bool,
}

/// A tool as the person last saw it (its description and input schema as bosun kept them,
/// secret values written `[redacted]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedTool {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// `None` in a listing an older bosun kept, which had no schema: not compared.
    #[serde(default)]
    pub input_schema: Option<serde_json::Value>,
}

/// How the runner reaches a server, with its secrets.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum Reach {
    /// A program the runner starts, with the lines configured for it (secret values among
    /// them). The runner adds only a minimal safe environment of its own (see [`SAFE_ENV`]).
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP address (its query, a secret, included), with its header lines and
    /// the bearer token of its sign-in, reached by bosun's bridge ([`BRIDGE`]).
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// The address of a server of the older HTTP+SSE transport (its event stream; its query,
    /// a secret, included), with its header lines and the bearer token of its sign-in, reached
    /// by bosun's bridge as a Streamable HTTP one is.
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// How bosun's bridge speaks to a server reached by address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpTransport {
    /// Streamable HTTP (MCP 2025-03-26 and later): every message POSTed to the address.
    #[default]
    Streamable,
    /// The older HTTP+SSE transport (MCP 2024-11-05): a GET event stream at the address,
    /// whose `endpoint` event names where (on the same origin) to POST each message; every
    /// answer comes on the stream.
    Sse,
}

impl std::fmt::Debug for GatewayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayServer")
            .field("name", &self.name)
            .field("reach", &self.reach)
            .field("rules", &self.rules)
            .field("roots", &self.roots)
            .field("pinned", &self.pinned.as_ref().map(Vec::len))
            .finish()
    }
}

impl std::fmt::Debug for Reach {
    /// Names only: no value, no query.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[(String, String)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        match self {
            Reach::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            Reach::Http { url, headers } | Reach::Sse { url, headers } => f
                .debug_struct(if matches!(self, Reach::Sse { .. }) {
                    "Sse"
                } else {
                    "Http"
                })
                .field("url", &url.split('?').next().unwrap_or_default())
                .field("headers", &names(headers))
                .finish(),
        }
    }
}

/// The variables of the run's environment a stdio server gets besides its own lines: the MCP
/// SDKs' minimal safe environment on POSIX, plus where temporary files go and the locale.
pub const SAFE_ENV: [&str; 9] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LC_ALL",
];

/// What the gateway holds one server to: kept with the server in the registry, the same for
/// every run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rules {
    /// Results reach the model as they are; otherwise framed as untrusted content.
    #[serde(default)]
    pub trusted: bool,
    /// Tools offered and callable: every tool when empty, else those matching one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_tools: Vec<ToolGlob>,
    /// Tools never offered nor callable; deny wins over allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_tools: Vec<ToolGlob>,
    /// Resources listed and readable, by URI: every one when empty, else those matching one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_resources: Vec<ToolGlob>,
    /// Resources never listed nor readable; deny wins over allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_resources: Vec<ToolGlob>,
    /// Prompts listed and given, by name: every one when empty, else those matching one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_prompts: Vec<ToolGlob>,
    /// Prompts never listed nor given; deny wins over allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_prompts: Vec<ToolGlob>,
    /// How long a call may take before the CLI gets an error and the server a cancellation.
    pub deadline_ms: u64,
    /// Text results longer than this reach the model as head and tail.
    pub max_result_chars: u64,
    /// The capabilities the person approved: only these reach the CLI, and requests of any
    /// other are refused. Tools and prompts unless the person says otherwise.
    pub capabilities: BTreeSet<Capability>,
    /// What becomes of the server's requests for the person's input (`elicitation/create`).
    #[serde(skip_serializing_if = "AskPolicy::is_deny")]
    pub elicitation: AskPolicy,
    /// What becomes of the server's requests for a message of the model
    /// (`sampling/createMessage`).
    #[serde(skip_serializing_if = "AskPolicy::is_deny")]
    pub sampling: AskPolicy,
    /// With sampling `allow`: the most tokens a request may ask for; one that asks for more
    /// is refused.
    #[serde(skip_serializing_if = "is_default_sampling_max")]
    pub sampling_max_tokens: u64,
    /// Hosts the server may reach from a fenced run beyond what its transport needs
    /// (`bosun mcp edit NAME --net HOST[:PORT],…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<crate::hosts::NetHost>,
}

/// How long a call through the gateway may take: 1 s to 1 h, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallDeadline(u64);

/// How long a text result may be before the model gets its head and tail: 256 to 10,000,000
/// characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultChars(u64);

/// The most tokens a server's request for a message of the model may ask for: 1 to 100,000.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplingTokens(u64);

/// A gateway rule's value out of its range, said as the person fixes it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error(
        "a call's deadline is from 1 s to 1 h; `{0}` ms is not (say e.g. `--call-deadline 30s`)"
    )]
    Deadline(u64),
    #[error("the result the model gets whole is from 256 to 10000000 characters; {0} is not")]
    ResultChars(u64),
    #[error("a request for a message of the model may ask for 1 to 100000 tokens; {0} is not")]
    SamplingTokens(u64),
    #[error("`{host}` is not a host a server may reach: {why}")]
    NetHost {
        host: String,
        why: crate::hosts::HostError,
    },
}

impl CallDeadline {
    pub fn from_millis(ms: u64) -> Result<Self, RuleError> {
        (1_000..=3_600_000)
            .contains(&ms)
            .then_some(Self(ms))
            .ok_or(RuleError::Deadline(ms))
    }

    pub fn as_millis(self) -> u64 {
        self.0
    }
}

impl ResultChars {
    pub fn new(n: u64) -> Result<Self, RuleError> {
        (256..=10_000_000)
            .contains(&n)
            .then_some(Self(n))
            .ok_or(RuleError::ResultChars(n))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

impl SamplingTokens {
    pub fn new(n: u64) -> Result<Self, RuleError> {
        (1..=100_000)
            .contains(&n)
            .then_some(Self(n))
            .ok_or(RuleError::SamplingTokens(n))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// What a server's request for a message of the model may ask for at most, unless the person
/// says otherwise.
pub const DEFAULT_SAMPLING_MAX_TOKENS: u64 = 1_000;

fn is_default_sampling_max(n: &u64) -> bool {
    *n == DEFAULT_SAMPLING_MAX_TOKENS
}

/// What the gateway does with one kind of request a server makes of its client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskPolicy {
    /// Refused at once; the server is not told the client could do it.
    #[default]
    Deny,
    /// Each request waits in the inbox for the person.
    Ask,
    /// Each request goes on without the person, within the limits they set (sampling only).
    Allow,
}

impl AskPolicy {
    pub fn is_deny(&self) -> bool {
        *self == AskPolicy::Deny
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AskPolicy::Deny => "deny",
            AskPolicy::Ask => "ask",
            AskPolicy::Allow => "allow",
        }
    }

    /// `deny`, `ask` or `allow`, or why it is none of them.
    pub fn parse(s: &str) -> Result<AskPolicy, UnknownPolicy> {
        match s.trim() {
            "deny" => Ok(AskPolicy::Deny),
            "ask" => Ok(AskPolicy::Ask),
            "allow" => Ok(AskPolicy::Allow),
            other => Err(UnknownPolicy(other.escape_debug().to_string())),
        }
    }
}

/// A name that is no capability bosun's gateway can relay.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a capability bosun's gateway can relay; say one of tools, prompts, resources, completions, logging"
)]
pub struct UnknownCapability(String);

/// Why a tool pattern is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolGlobError {
    #[error("a tool pattern is empty; give a name such as `delete_*`")]
    Empty,
    #[error("`{0}` is not a tool pattern: at most 200 characters, no control characters")]
    Malformed(String),
}

/// A policy that is neither `deny` nor `ask`.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a policy for a server's requests; say deny, ask or allow")]
pub struct UnknownPolicy(String);

impl Default for Rules {
    fn default() -> Self {
        Self {
            trusted: false,
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            allow_resources: Vec::new(),
            deny_resources: Vec::new(),
            allow_prompts: Vec::new(),
            deny_prompts: Vec::new(),
            deadline_ms: DEFAULT_DEADLINE_MS,
            max_result_chars: DEFAULT_MAX_RESULT_CHARS,
            capabilities: Capability::APPROVED_AT_FIRST.into_iter().collect(),
            elicitation: AskPolicy::Deny,
            sampling: AskPolicy::Deny,
            sampling_max_tokens: DEFAULT_SAMPLING_MAX_TOKENS,
            net: Vec::new(),
        }
    }
}

/// A capability a server advertises that bosun's gateway can relay, once the person approves
/// it. (A server may advertise others, such as `experimental`: those never reach a run.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    Tools,
    Prompts,
    Resources,
    Completions,
    Logging,
}

impl Capability {
    pub const ALL: [Capability; 5] = [
        Capability::Tools,
        Capability::Prompts,
        Capability::Resources,
        Capability::Completions,
        Capability::Logging,
    ];
    /// What a server is held to until the person says more.
    pub const APPROVED_AT_FIRST: [Capability; 2] = [Capability::Tools, Capability::Prompts];

    /// Its name, as servers advertise it in `initialize`.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Tools => "tools",
            Capability::Prompts => "prompts",
            Capability::Resources => "resources",
            Capability::Completions => "completions",
            Capability::Logging => "logging",
        }
    }

    /// The capability named `name`, or why there is none bosun can relay.
    pub fn parse(name: &str) -> Result<Capability, UnknownCapability> {
        let name = name.trim();
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| UnknownCapability(name.escape_debug().to_string()))
    }

    /// The capability a request or notification belongs to, by its method; `None` for the
    /// protocol's own (`initialize`, `ping`, cancellations, `roots/…`, …).
    pub fn of_method(method: &str) -> Option<Capability> {
        let method = method.strip_prefix("notifications/").unwrap_or(method);
        let (family, _) = method.split_once('/').unwrap_or((method, ""));
        match family {
            "tools" => Some(Capability::Tools),
            "prompts" => Some(Capability::Prompts),
            "resources" => Some(Capability::Resources),
            "completion" => Some(Capability::Completions),
            "logging" | "message" => Some(Capability::Logging),
            _ => None,
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a tool is not offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held<'a> {
    Denied(&'a ToolGlob),
    NotAllowed,
}

impl Held<'_> {
    /// Why, in words: "its deny list holds `delete_*`", "it is not on its allow list".
    pub fn words(&self) -> String {
        match self {
            Held::Denied(g) => format!("its deny list holds `{g}`"),
            Held::NotAllowed => "it is not on its allow list".to_string(),
        }
    }
}

impl Rules {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `tool` may be offered and called; deny wins.
    pub fn judge(&self, tool: &str) -> Result<(), Held<'_>> {
        judge_by(&self.allow_tools, &self.deny_tools, tool)
    }

    /// Whether a resource (by its URI) may be listed and read.
    pub fn judge_resource(&self, uri: &str) -> Result<(), Held<'_>> {
        judge_by(&self.allow_resources, &self.deny_resources, uri)
    }

    /// Whether a prompt (by its name) may be listed and given.
    pub fn judge_prompt(&self, name: &str) -> Result<(), Held<'_>> {
        judge_by(&self.allow_prompts, &self.deny_prompts, name)
    }
}

/// `name` against an allow list (empty: everything) and a deny list, deny winning.
fn judge_by<'a>(allow: &[ToolGlob], deny: &'a [ToolGlob], name: &str) -> Result<(), Held<'a>> {
    if let Some(g) = deny.iter().find(|g| g.matches(name)) {
        return Err(Held::Denied(g));
    }
    if !allow.is_empty() && !allow.iter().any(|g| g.matches(name)) {
        return Err(Held::NotAllowed);
    }
    Ok(())
}

/// A pattern of names (of tools, of prompts) or of resource URIs: `*` stands for any run of
/// characters, `?` for one; nothing else is special. Never empty, no control characters, at
/// most 200 characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ToolGlob(String);

impl ToolGlob {
    pub fn parse(s: &str) -> Result<Self, ToolGlobError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ToolGlobError::Empty);
        }
        if s.chars().count() > 200 || s.chars().any(char::is_control) {
            return Err(ToolGlobError::Malformed(s.escape_debug().to_string()));
        }
        Ok(Self(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        let p: Vec<char> = self.0.chars().collect();
        let n: Vec<char> = name.chars().collect();
        // The classic linear matcher with one backtrack point for the last `*`.
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
                pi += 1;
                ni += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ni));
                pi += 1;
            } else if let Some((sp, sn)) = star {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|c| *c == '*')
    }
}

impl std::fmt::Display for ToolGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ToolGlob {
    type Error = ToolGlobError;
    fn try_from(s: String) -> Result<Self, ToolGlobError> {
        Self::parse(&s)
    }
}

impl From<ToolGlob> for String {
    fn from(g: ToolGlob) -> String {
        g.0
    }
}

/// bosun's bridge to a server reached by address: a program beside `bosun-runner` that the
/// gateway starts as a stdio server.
pub const BRIDGE: &str = "bosun-mcp-http";

/// The first line the gateway writes to its bridge: which server, where, and how (secrets
/// included, so it goes on the bridge's stdin only).
#[derive(Clone, Serialize, Deserialize)]
pub struct HttpBridge {
    pub name: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Streamable HTTP when absent (a runner of an older bosun does not say).
    #[serde(default)]
    pub transport: HttpTransport,
}

/// The method of the bridge's own request to the gateway for the server's token anew (the
/// server refused the one it has): `params` `{"refused": FINGERPRINT, "wider": bool, "scope":
/// …, "call": the id of the message it was for}`, answered `{"token": …}` or with an error.
/// A message of that method from the server itself is dropped by the bridge, and an answer to
/// it from the CLI by the gateway: only the two of them speak it.
pub const TOKEN_METHOD: &str = "bosun/token";

/// The ids of the bridge's requests for a token start with this.
pub const TOKEN_ID_PREFIX: &str = "bosun-token-";

/// A short, one-way name for a token, to say which token was refused without holding it.
pub fn fingerprint(token: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The first line the CLI's end of the gateway sends: which server it stands for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub server: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_holds_only_a_value_in_its_range() {
        assert_eq!(
            CallDeadline::from_millis(999),
            Err(RuleError::Deadline(999))
        );
        assert_eq!(
            CallDeadline::from_millis(1_000).map(CallDeadline::as_millis),
            Ok(1_000)
        );
        assert_eq!(
            CallDeadline::from_millis(3_600_000).map(CallDeadline::as_millis),
            Ok(3_600_000)
        );
        assert!(CallDeadline::from_millis(3_600_001).is_err());
        assert!(ResultChars::new(255).is_err());
        assert_eq!(ResultChars::new(256).map(ResultChars::get), Ok(256));
        assert!(ResultChars::new(10_000_001).is_err());
        assert_eq!(SamplingTokens::new(0), Err(RuleError::SamplingTokens(0)));
        assert_eq!(
            SamplingTokens::new(100_000).map(SamplingTokens::get),
            Ok(100_000)
        );
        assert!(SamplingTokens::new(100_001).is_err());
    }

    fn g(s: &str) -> ToolGlob {
        ToolGlob::parse(s).unwrap()
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(g("delete_*").matches("delete_file"));
        assert!(g("delete_*").matches("delete_"));
        assert!(!g("delete_*").matches("undelete_file"));
        assert!(g("*_file").matches("read_file"));
        assert!(g("get?").matches("gets"));
        assert!(!g("get?").matches("get"));
        assert!(g("*").matches(""));
        assert!(g("a*b*c").matches("aXXbYYc"));
        assert!(!g("a*b*c").matches("aXXbYY"));
        assert!(g("echo").matches("echo"));
        assert!(!g("echo").matches("echoes"));
    }

    #[test]
    fn bad_globs_are_refused_with_the_reason() {
        assert!(
            ToolGlob::parse("  ")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            ToolGlob::parse("a\nb")
                .unwrap_err()
                .to_string()
                .contains("control")
        );
        assert!(serde_json::from_str::<ToolGlob>("\"\"").is_err());
    }

    #[test]
    fn deny_wins_over_allow() {
        let rules = Rules {
            allow_tools: vec![g("*")],
            deny_tools: vec![g("delete_*")],
            ..Rules::default()
        };
        assert!(rules.judge("echo").is_ok());
        assert_eq!(rules.judge("delete_all"), Err(Held::Denied(&g("delete_*"))));
        let only = Rules {
            allow_tools: vec![g("get_*")],
            ..Rules::default()
        };
        assert_eq!(only.judge("echo"), Err(Held::NotAllowed));
    }

    #[test]
    fn resources_by_uri_and_prompts_by_name_have_lists_of_their_own() {
        let rules = Rules {
            allow_resources: vec![g("docs://public/*")],
            deny_resources: vec![g("docs://public/secret*")],
            deny_prompts: vec![g("admin-*")],
            ..Rules::default()
        };
        assert!(rules.judge_resource("docs://public/readme").is_ok());
        assert_eq!(
            rules.judge_resource("docs://public/secret.txt"),
            Err(Held::Denied(&g("docs://public/secret*")))
        );
        assert_eq!(
            rules.judge_resource("file:///etc/passwd"),
            Err(Held::NotAllowed)
        );
        assert!(rules.judge_prompt("review").is_ok());
        assert!(rules.judge_prompt("admin-reset").is_err());
        assert!(
            rules.judge("admin-reset").is_ok(),
            "tools keep their own lists"
        );
    }

    #[test]
    fn methods_belong_to_their_capability() {
        use Capability::*;
        assert_eq!(Capability::of_method("tools/call"), Some(Tools));
        assert_eq!(Capability::of_method("resources/read"), Some(Resources));
        assert_eq!(
            Capability::of_method("notifications/resources/updated"),
            Some(Resources)
        );
        assert_eq!(
            Capability::of_method("completion/complete"),
            Some(Completions)
        );
        assert_eq!(Capability::of_method("logging/setLevel"), Some(Logging));
        assert_eq!(
            Capability::of_method("notifications/message"),
            Some(Logging)
        );
        assert_eq!(
            Capability::of_method("notifications/prompts/list_changed"),
            Some(Prompts)
        );
        for own in [
            "initialize",
            "ping",
            "notifications/cancelled",
            "roots/list",
        ] {
            assert_eq!(Capability::of_method(own), None, "{own}");
        }
        assert!(
            Capability::parse("experimental")
                .unwrap_err()
                .to_string()
                .contains("resources")
        );
        assert_eq!(Capability::parse(" logging").unwrap(), Logging);
    }

    #[test]
    fn an_sse_server_s_reach_says_its_transport_and_hides_its_secrets() {
        let reach = Reach::Sse {
            url: "https://h.example/sse?key=SECRET".into(),
            headers: vec![("X-Api-Key".into(), "HIDDEN".into())],
        };
        let json = serde_json::to_value(&reach).unwrap();
        assert_eq!(json["transport"], "sse");
        assert_eq!(serde_json::from_value::<Reach>(json).unwrap(), reach);
        let shown = format!("{reach:?}");
        assert!(
            shown.contains("Sse") && !shown.contains("SECRET") && !shown.contains("HIDDEN"),
            "{shown}"
        );
        // A runner of an older bosun says no transport: Streamable HTTP.
        let old: HttpBridge =
            serde_json::from_str(r#"{"name": "n", "url": "https://h/mcp", "headers": []}"#)
                .unwrap();
        assert_eq!(old.transport, HttpTransport::Streamable);
    }

    #[test]
    fn a_call_entry_says_its_decision_and_one_an_older_bosun_kept_reads_without() {
        let old: CallEntry = serde_json::from_str(
            r#"{"at":1,"server":"s","tool":"t","args":"{}","outcome":{"kind":"answered"},"ms":3}"#,
        )
        .unwrap();
        assert_eq!(old.decision, None);
        let entry = CallEntry {
            decision: Some(CallDecision {
                verdict: CallVerdict::Denied,
                by: "the person".into(),
                asked: AskedAt::Gateway,
            }),
            ..old
        };
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            json["decision"],
            serde_json::json!({"verdict": "denied", "by": "the person", "asked": "gateway"})
        );
        assert_eq!(
            entry.decision.map(|d| d.words()).unwrap_or_default(),
            "denied by the person (asked at the gateway)"
        );
    }

    #[test]
    fn rules_an_older_bosun_kept_approve_tools_and_prompts() {
        let old: Rules = serde_json::from_str(r#"{"trusted": true}"#).unwrap();
        assert!(old.trusted);
        assert_eq!(
            old.capabilities.into_iter().collect::<Vec<_>>(),
            vec![Capability::Tools, Capability::Prompts]
        );
    }
}
