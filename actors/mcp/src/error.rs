//! Why a change to the MCP servers, a look at one or an import failed, in the person's words.

use bosun_auth::AuthError;
use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

use super::browser::BrowserError;
use super::redact::{Redact, Redactor};

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Refused, in the person's words ([`bosun_kit::error::RefusedKind`] says of which
    /// kind).
    #[error(transparent)]
    Refused(#[from] bosun_kit::error::Refused),
    /// The browser's settings, or a command line that starts chrome-devtools-mcp, are not
    /// acceptable (a version that is not exact, a forbidden option, a browser program bosun does
    /// not use): from the checks made before anything is written. Retrying as is cannot help.
    #[error(transparent)]
    Browser(#[from] BrowserError),
    /// The built-in browser server cannot be started on this machine (no Node, no browser):
    /// from the look at it. Retrying helps once what is missing is installed.
    #[error("the browser cannot start: {0}")]
    BrowserCannotStart(BrowserError),
    /// The registry has not started yet: retrying in a moment helps.
    #[error(transparent)]
    Starting(#[from] bosun_kit::error::Starting),
    /// Reaching or using the server failed: from List tools, inspect and call. Whether a retry
    /// helps depends on `error` (a server that needs a sign-in needs the person first).
    #[error("could not {what} `{server}`: {error}{advice}")]
    Look {
        server: String,
        what: String,
        error: Box<McpError>,
        advice: String,
    },
    /// A removal stopped on `0` before anything was removed: from `remove`.
    #[error("{0}; nothing was removed")]
    NothingRemoved(Box<RegistryError>),
    /// An import stopped on `0` after the servers before it were added back out: from
    /// `adopt::import`.
    #[error("{0}; nothing was imported")]
    NothingImported(Box<RegistryError>),
    /// A sign-in (or its refresh, or signing out) failed.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The store failed: bosund's side; retrying may help once the cause is fixed.
    #[error("bosund could not use its store: {0}")]
    Store(#[from] StoreError),
    /// The keychain is absent, locked or failed: retrying helps once it is unlocked.
    #[error(transparent)]
    Keychain(#[from] KeychainError),
    /// A blocking task failed: bosund's side; retrying may help.
    #[error(transparent)]
    Blocking(#[from] BlockingError),
}

bosun_kit::message_constructors!(RegistryError);

/// Why talking to a server failed, in plain words. None of these carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error(
        "the command `{command}` was not found; give its full path, or put it on the PATH bosund runs with"
    )]
    CommandNotFound { command: String },
    #[error("could not start `{command}`: {reason}")]
    CannotStart { command: String, reason: String },
    #[error("the server exited with {status} before it answered{stderr}")]
    Exited { status: String, stderr: String },
    #[error("the server did not answer within {secs}s{hint}")]
    TimedOut { secs: u64, hint: String },
    /// The server's answer is past what bosun's MCP client reads of one message (`limit`
    /// bytes): `seen` bytes of it were seen, all of it when it `ended` (over HTTP the size is
    /// not known). Retrying gets the same answer; the person asks for less.
    #[error(
        "the server's answer is {}more than the {} MiB bosun reads of one message from an MCP server; ask for less (a tool's arguments may narrow or page what it returns)",
        size_words(*seen, *ended),
        limit / (1024 * 1024)
    )]
    TooLarge {
        seen: Option<u64>,
        ended: bool,
        limit: usize,
    },
    #[error(
        "the server needs sign-in: it answered 401 Unauthorized (WWW-Authenticate: {www_authenticate})"
    )]
    NeedsSignIn { www_authenticate: String },
    #[error(
        "the server needs a wider sign-in: it answered 403 insufficient_scope (WWW-Authenticate: {www_authenticate})"
    )]
    InsufficientScope { www_authenticate: String },
    #[error("could not make a secure (TLS) connection to {url}: {detail}")]
    Tls { url: String, detail: String },
    #[error("{url} refused the connection; is the server running there?")]
    Refused { url: String },
    #[error("could not reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{target} is not an MCP server: {detail}")]
    NotMcp { target: String, detail: String },
    #[error("the server answered HTTP {status}{detail}")]
    Http { status: u16, detail: String },
    #[error("the server broke the MCP protocol: {0}")]
    Protocol(String),
    #[error("the server has no tool named `{0}`")]
    NoSuchTool(String),
    #[error(
        "the server's definition of the tool `{tool}` is malformed ({problem}), so bosun does not call it; its other tools work"
    )]
    MalformedTool { tool: String, problem: String },
    #[error("{0}")]
    BadConfig(String),
}

/// How large an answer too large was, as far as it is known, for [`McpError::TooLarge`].
fn size_words(seen: Option<u64>, ended: bool) -> String {
    match (seen, ended) {
        (Some(n), true) => format!("{n} bytes, "),
        (Some(n), false) => format!("over {n} bytes, "),
        (None, _) => String::new(),
    }
}

/// What a failure asks of the person's sign-in, if anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInAsked {
    /// Sign in (401).
    SignIn,
    /// Sign in again, for a wider scope (403 insufficient_scope).
    WiderScope,
}

impl McpError {
    /// The server's `WWW-Authenticate` challenge, when this failure is one (a 401, or a 403
    /// with a challenge, on any request).
    pub fn www_authenticate(&self) -> Option<&str> {
        match self {
            McpError::NeedsSignIn { www_authenticate }
            | McpError::InsufficientScope { www_authenticate } => Some(www_authenticate),
            McpError::CommandNotFound { .. }
            | McpError::CannotStart { .. }
            | McpError::Exited { .. }
            | McpError::TimedOut { .. }
            | McpError::TooLarge { .. }
            | McpError::Tls { .. }
            | McpError::Refused { .. }
            | McpError::Unreachable { .. }
            | McpError::NotMcp { .. }
            | McpError::Http { .. }
            | McpError::Protocol(_)
            | McpError::NoSuchTool(_)
            | McpError::MalformedTool { .. }
            | McpError::BadConfig(_) => None,
        }
    }

    /// Whether this failure is the server asking for a sign-in: the one place that says so,
    /// for the advice bosun gives and the code the wire carries.
    pub fn sign_in_asked(&self) -> Option<SignInAsked> {
        match self {
            McpError::NeedsSignIn { .. } => Some(SignInAsked::SignIn),
            McpError::InsufficientScope { .. } => Some(SignInAsked::WiderScope),
            McpError::CommandNotFound { .. }
            | McpError::CannotStart { .. }
            | McpError::Exited { .. }
            | McpError::TimedOut { .. }
            | McpError::TooLarge { .. }
            | McpError::Tls { .. }
            | McpError::Refused { .. }
            | McpError::Unreachable { .. }
            | McpError::NotMcp { .. }
            | McpError::Http { .. }
            | McpError::Protocol(_)
            | McpError::NoSuchTool(_)
            | McpError::MalformedTool { .. }
            | McpError::BadConfig(_) => None,
        }
    }
}

impl Redact for McpError {
    fn redact(self, r: &Redactor) -> Self {
        match self {
            McpError::CommandNotFound { command } => McpError::CommandNotFound {
                command: command.redact(r),
            },
            McpError::CannotStart { command, reason } => McpError::CannotStart {
                command: command.redact(r),
                reason: reason.redact(r),
            },
            McpError::Exited { status, stderr } => McpError::Exited {
                status,
                stderr: stderr.redact(r),
            },
            McpError::TimedOut { secs, hint } => McpError::TimedOut {
                secs,
                hint: hint.redact(r),
            },
            e @ McpError::TooLarge { .. } => e,
            McpError::NeedsSignIn { www_authenticate } => McpError::NeedsSignIn {
                www_authenticate: www_authenticate.redact(r),
            },
            McpError::InsufficientScope { www_authenticate } => McpError::InsufficientScope {
                www_authenticate: www_authenticate.redact(r),
            },
            McpError::Tls { url, detail } => McpError::Tls {
                url: url.redact(r),
                detail: detail.redact(r),
            },
            McpError::Refused { url } => McpError::Refused { url: url.redact(r) },
            McpError::Unreachable { url, detail } => McpError::Unreachable {
                url: url.redact(r),
                detail: detail.redact(r),
            },
            McpError::NotMcp { target, detail } => McpError::NotMcp {
                target: target.redact(r),
                detail: detail.redact(r),
            },
            McpError::Http { status, detail } => McpError::Http {
                status,
                detail: detail.redact(r),
            },
            McpError::Protocol(m) => McpError::Protocol(m.redact(r)),
            McpError::NoSuchTool(m) => McpError::NoSuchTool(m.redact(r)),
            McpError::MalformedTool { tool, problem } => McpError::MalformedTool {
                tool: tool.redact(r),
                problem: problem.redact(r),
            },
            McpError::BadConfig(m) => McpError::BadConfig(m.redact(r)),
        }
    }
}
