//! Why a change to the MCP servers, a look at one or an import failed, in the person's words.

use std::path::PathBuf;

use bosun_shared::process::HelperError;

use bosun_auth::AuthError;
use bosun_kit::keychain::KeychainError;
use bosun_kit::offload::BlockingError;
use bosun_store::StoreError;

use super::browser::{PACKAGE, PINNED_VERSION};
use super::client::McpError;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The request is not acceptable as given (a name, a flag, a value, a file to import from):
    /// from the checks made before anything is written. Retrying as is cannot help; the message
    /// says what to change.
    #[error("{0}")]
    Invalid(String),
    /// No server (or import candidate, or kept listing) answers to what the person named: from
    /// the lookups. Retrying cannot help.
    #[error("{0}")]
    NotFound(String),
    /// The request clashes with what is there (a name in use, a value missing from the
    /// keychain, a server Claude Code signs in to): retrying helps once that changes.
    #[error("{0}")]
    Conflict(String),
    /// Something the server needs cannot be had now (its browser cannot start): retrying later
    /// may help.
    #[error("{0}")]
    Unavailable(String),
    /// bosund failed on its side (the registry did not answer, a server answered without its
    /// details): retrying may help.
    #[error("{0}")]
    Internal(String),
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

/// Why the built-in browser (chrome-devtools-mcp) cannot be set up or started as asked, in the
/// person's words: from the checks in `mcp::browser`.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The version to pin is not an exact version (`latest`, a range, a tag): from
    /// `check_version`. Retrying as is cannot help; the message says what to give.
    #[error(
        "`{version}` is not an exact version of {PACKAGE}; give one such as {PINNED_VERSION} (never latest or a range)"
    )]
    NotExactVersion { version: String },
    /// A command line that starts chrome-devtools-mcp has an option that would connect it to a
    /// running browser, a real profile or Google: from `check_command_line`. Retrying as is
    /// cannot help.
    #[error(
        "`{arg}` is not allowed for {PACKAGE}: {option} {why}; bosun always starts the browser hidden (--headless) with a throwaway profile (--isolated)"
    )]
    ForbiddenOption {
        arg: String,
        option: &'static str,
        why: &'static str,
    },
    /// No browser program was set and none was found: from `find_program`. Retrying helps once
    /// one is installed or set.
    #[error(
        "no Google Chrome or Chromium was found; install one (on Debian: apt install chromium), or set its program with `bosun mcp edit chrome-devtools --browser /path/to/chrome`"
    )]
    NoBrowser,
    /// The browser program given is not a full path: from `check_program`. Retrying as is
    /// cannot help.
    #[error("the browser program {} is not a full path; give it such as /usr/bin/chromium", .0.display())]
    ProgramNotFullPath(PathBuf),
    /// The browser program given is Brave, which bosun does not use: from `check_program`.
    /// Retrying as is cannot help.
    #[error("{} is Brave, which bosun does not use for the browser; give Google Chrome or Chromium", .0.display())]
    ProgramIsBrave(PathBuf),
    /// The browser program given is missing or cannot be run: from `check_program`. Retrying
    /// helps once it is there.
    #[error("the browser program {} is not there or cannot be run", .0.display())]
    ProgramNotRunnable(PathBuf),
    /// Node.js is not on the PATH: from `check_node`. Retrying helps once it is installed.
    #[error("Node.js was not found on the PATH; install Node 20.19 or newer (with npx)")]
    NoNode,
    /// npx is not on the PATH beside Node: from `check_node`. Retrying helps once npm is
    /// installed.
    #[error("npx was not found on the PATH; it comes with npm (install npm beside Node)")]
    NoNpx,
    /// `node --version` could not be run or did not finish: from `check_node`. A retry may help.
    #[error("could not run {}: {error}", .node.display())]
    NodeDidNotRun { node: PathBuf, error: HelperError },
    /// The Node found is older than chrome-devtools-mcp needs: from `node_version_ok`. Retrying
    /// helps once a newer one is installed.
    #[error(
        "{PACKAGE} needs Node 20.19 or newer (22.12 or newer on Node 22); this is Node {version}: install a newer one"
    )]
    NodeTooOld { version: String },
}
