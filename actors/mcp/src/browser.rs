//! The browser: the built-in `chrome-devtools` MCP server (Google's Chrome DevTools MCP), pinned
//! to an exact version and always started hidden, with a throwaway profile, and with nothing
//! sent to Google:
//!
//! ```text
//! npx -y chrome-devtools-mcp@<version> --headless --isolated --no-usage-statistics \
//!     --no-performance-crux [--executablePath=<browser>] [--acceptInsecureCerts]
//! ```
//!
//! Only the version and the browser program can be changed. Every command line that starts
//! `chrome-devtools-mcp` — the built-in one, or a server a person adds or imports — is checked
//! for the options that would connect it to a running browser or a real profile, and refused
//! when one is there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bosun_shared::process::{HelperError, output_blocking};
use serde::{Deserialize, Serialize};

/// The built-in server's name (reserved: no other server may take it).
pub const NAME: &str = "chrome-devtools";
/// The npm package.
pub const PACKAGE: &str = "chrome-devtools-mcp";
/// The version a new state directory starts with. Never `latest`.
pub const PINNED_VERSION: &str = "1.10.1";

/// Always on the command line: hidden, a throwaway profile, no statistics, no CrUX lookups.
const ALWAYS: [&str; 4] = [
    "--headless",
    "--isolated",
    "--no-usage-statistics",
    "--no-performance-crux",
];

/// Always in the environment: no usage statistics, no update check.
const ENV: [(&str, &str); 2] = [
    ("CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS", "1"),
    ("CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS", "1"),
];

/// Options never passed: each connects to a running browser, uses a real profile, or undoes one
/// of the options that are always there. (name as written, its other spellings, why.)
const FORBIDDEN: [(&str, &[&str], &str); 11] = [
    (
        "--browserUrl",
        &["--browser-url", "-u"],
        "connects to a running browser",
    ),
    (
        "--wsEndpoint",
        &["--ws-endpoint", "-w"],
        "connects to a running browser",
    ),
    (
        "--autoConnect",
        &["--auto-connect"],
        "connects to a running browser",
    ),
    (
        "--userDataDir",
        &["--user-data-dir"],
        "uses a real browser profile",
    ),
    (
        "--channel",
        &[],
        "starts an installed browser with its own profile",
    ),
    (
        "--config",
        &[],
        "reads options from a file bosun does not check",
    ),
    (
        "--chromeArg",
        &["--chrome-arg"],
        "passes the browser options bosun does not check",
    ),
    (
        "--no-headless",
        &["--headless=false"],
        "shows the browser on the screen",
    ),
    (
        "--no-isolated",
        &["--isolated=false"],
        "uses a real browser profile",
    ),
    (
        "--usageStatistics",
        &["--usage-statistics", "--no-no-usage-statistics"],
        "sends usage statistics to Google",
    ),
    (
        "--performanceCrux",
        &["--performance-crux"],
        "sends page addresses to Google's CrUX API",
    ),
];

/// The built-in browser's settings: the two things a person may change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserSettings {
    /// The exact version of chrome-devtools-mcp, such as `1.10.1`.
    pub version: String,
    /// The browser program the person set; found by bosun when absent.
    pub program: Option<PathBuf>,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            version: PINNED_VERSION.to_string(),
            program: None,
        }
    }
}

/// Checks a version for the pin: an exact version, never a range or a tag.
pub fn check_version(v: &str) -> Result<(), BrowserError> {
    let (core, pre) = match v.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (v, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let core_ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    let pre_ok = pre.is_none_or(|p| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    });
    if core_ok && pre_ok {
        Ok(())
    } else {
        Err(BrowserError::NotExactVersion {
            version: v.to_string(),
        })
    }
}

/// Whether a command line starts chrome-devtools-mcp (by npx, or its own program).
pub fn starts_chrome_devtools(command: &str, args: &[String]) -> bool {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .any(|a| a.contains(PACKAGE))
}

/// Checks a command line that starts chrome-devtools-mcp for the forbidden options (those after
/// the package: what comes before it is npx's own).
pub fn check_command_line(command: &str, args: &[String]) -> Result<(), BrowserError> {
    let own: &[String] = if command.contains(PACKAGE) {
        args
    } else {
        match args.iter().position(|a| a.contains(PACKAGE)) {
            Some(i) => &args[i + 1..],
            None => return Ok(()),
        }
    };
    for arg in own {
        let lower = arg.to_ascii_lowercase();
        let name = lower.split('=').next().unwrap_or_default();
        for (option, spellings, why) in FORBIDDEN {
            let long = option.to_ascii_lowercase();
            let hit = name == long
                || spellings.iter().any(|s| {
                    let s = s.to_ascii_lowercase();
                    if s.contains('=') {
                        lower == s
                    } else if s.len() == 2 {
                        // A short option, alone or with its value stuck on (`-uhttp://…`).
                        arg.starts_with(s.as_str()) && !arg.starts_with("--")
                    } else {
                        name == s
                    }
                });
            if hit {
                return Err(BrowserError::ForbiddenOption {
                    arg: arg.clone(),
                    option,
                    why,
                });
            }
        }
    }
    Ok(())
}

/// Where the browser program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// Google Chrome where chrome-devtools-mcp looks for it itself: no option needed.
    ServerFinds(PathBuf),
    /// Passed with `--executablePath`.
    Given(PathBuf),
}

impl Program {
    pub fn path(&self) -> &Path {
        match self {
            Program::ServerFinds(p) | Program::Given(p) => p,
        }
    }
}

/// Where Google Chrome (stable) is on Linux, where chrome-devtools-mcp finds it itself.
const CHROME_STABLE: &str = "/opt/google/chrome/chrome";
/// Programs looked for on PATH, in order.
const ON_PATH: [&str; 5] = [
    "google-chrome",
    "google-chrome-stable",
    "chromium",
    "chromium-browser",
    "chrome",
];

/// The browser program: the one set, else Google Chrome where the server finds it, else the
/// Google Chrome or Chromium on `path`.
pub fn find_program(
    settings: &BrowserSettings,
    path: Option<&str>,
) -> Result<Program, BrowserError> {
    if let Some(p) = &settings.program {
        check_program(p)?;
        return Ok(Program::Given(p.clone()));
    }
    if is_executable(Path::new(CHROME_STABLE)) {
        return Ok(Program::ServerFinds(PathBuf::from(CHROME_STABLE)));
    }
    let dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    for name in ON_PATH {
        for d in &dirs {
            let candidate = d.join(name);
            if is_executable(&candidate) && check_program(&candidate).is_ok() {
                return Ok(Program::Given(candidate));
            }
        }
    }
    Err(BrowserError::NoBrowser)
}

/// Checks a browser program the person gives: it exists, runs, and is not Brave.
pub fn check_program(p: &Path) -> Result<(), BrowserError> {
    if !p.is_absolute() {
        return Err(BrowserError::ProgramNotFullPath(p.to_path_buf()));
    }
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if [p, real.as_path()]
        .iter()
        .any(|q| q.to_string_lossy().to_ascii_lowercase().contains("brave"))
    {
        return Err(BrowserError::ProgramIsBrave(p.to_path_buf()));
    }
    if !is_executable(p) {
        return Err(BrowserError::ProgramNotRunnable(p.to_path_buf()));
    }
    Ok(())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How long `node --version` may take: it is asked on every `bosun mcp list`.
const NODE_LIMIT: Duration = Duration::from_secs(10);

/// Node as found on `path`: its version, checked against what chrome-devtools-mcp needs (20.19
/// or newer; 22.12 or newer on Node 22), and npx beside it.
pub fn check_node(path: Option<&str>) -> Result<String, BrowserError> {
    let find = |name: &str| -> Option<PathBuf> {
        path.map(|p| std::env::split_paths(p).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.join(name))
            .find(|c| is_executable(c))
    };
    let Some(node) = find("node") else {
        return Err(BrowserError::NoNode);
    };
    if find("npx").is_none() {
        return Err(BrowserError::NoNpx);
    }
    let out = output_blocking(Command::new(&node).arg("--version").env_clear(), NODE_LIMIT)
        .map_err(|error| BrowserError::NodeDidNotRun {
            node: node.clone(),
            error,
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    node_version_ok(&version)?;
    Ok(version)
}

/// Whether a `node --version` answer (`v20.19.0`) is new enough.
pub fn node_version_ok(version: &str) -> Result<(), BrowserError> {
    let nums: Vec<u64> = version
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    let (major, minor) = (
        nums.first().copied().unwrap_or(0),
        nums.get(1).copied().unwrap_or(0),
    );
    let ok = match major {
        20 => minor >= 19,
        22 => minor >= 12,
        // chrome-devtools-mcp's engines: ^20.19.0 || ^22.12.0 || >=23.
        m => m >= 23,
    };
    if ok {
        Ok(())
    } else {
        Err(BrowserError::NodeTooOld {
            version: version.to_string(),
        })
    }
}

/// How the built-in server is started: its command, arguments and environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The built-in server's command line, after checking what it needs. `path` is the PATH the
/// server will run with.
pub fn launch(
    settings: &BrowserSettings,
    insecure_certs: bool,
    path: Option<&str>,
) -> Result<Launch, BrowserError> {
    check_version(&settings.version)?;
    check_node(path)?;
    let program = find_program(settings, path)?;
    Ok(command_line(settings, &program, insecure_certs))
}

/// What this machine has of what the built-in browser needs, and the command line a run would
/// start it with: for the person's list of servers.
#[derive(Clone, Debug)]
pub struct BrowserCheck {
    /// Node's version, when found and new enough.
    pub node: Option<String>,
    /// The browser program a run would use, when found.
    pub program: Option<Program>,
    /// What is missing, and what to install, in plain words.
    pub missing: Vec<String>,
    /// The command line of a run (without insecure certificates), with the program found.
    pub launch: Launch,
}

/// Looks on `path` for Node and the browser program the settings say, for the person's list.
/// Blocks (it runs `node --version`).
pub fn check_machine(settings: &BrowserSettings, path: Option<&str>) -> BrowserCheck {
    let mut missing = Vec::new();
    let node = check_node(path)
        .map_err(|e| missing.push(e.to_string()))
        .ok();
    let program = find_program(settings, path)
        .map_err(|e| missing.push(e.to_string()))
        .ok();
    let launch = match &program {
        Some(p) => command_line(settings, p, false),
        None => command_line(settings, &Program::ServerFinds(PathBuf::new()), false),
    };
    BrowserCheck {
        node,
        program,
        missing,
        launch,
    }
}

/// The command line itself (no checks of the machine), for a given program.
pub fn command_line(settings: &BrowserSettings, program: &Program, insecure_certs: bool) -> Launch {
    let mut args = vec!["-y".to_string(), format!("{PACKAGE}@{}", settings.version)];
    args.extend(ALWAYS.iter().map(|s| s.to_string()));
    match program {
        Program::ServerFinds(_) => {}
        Program::Given(p) => args.push(format!("--executablePath={}", p.display())),
    }
    if insecure_certs {
        args.push("--acceptInsecureCerts".into());
    }
    Launch {
        command: "npx".into(),
        args,
        env: ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_command_line_is_pinned_hidden_and_private() {
        let s = BrowserSettings::default();
        let l = command_line(&s, &Program::Given("/usr/bin/chromium".into()), true);
        assert_eq!(l.command, "npx");
        assert_eq!(
            l.args,
            args(&[
                "-y",
                "chrome-devtools-mcp@1.10.1",
                "--headless",
                "--isolated",
                "--no-usage-statistics",
                "--no-performance-crux",
                "--executablePath=/usr/bin/chromium",
                "--acceptInsecureCerts",
            ])
        );
        assert!(
            l.env
                .contains(&("CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS".into(), "1".into()))
        );
        assert!(check_command_line(&l.command, &l.args).is_ok());
        let found = command_line(&s, &Program::ServerFinds(CHROME_STABLE.into()), false);
        assert!(!found.args.iter().any(|a| a.starts_with("--executablePath")));
    }

    #[test]
    fn forbidden_options_are_refused_in_every_spelling() {
        let base = ["-y", "chrome-devtools-mcp@1.10.1"];
        for bad in [
            "--browserUrl=http://127.0.0.1:9222",
            "--browser-url",
            "-u",
            "-uhttp://127.0.0.1:9222",
            "--wsEndpoint",
            "-w",
            "--autoConnect",
            "--userDataDir=/home/me/.config/chromium",
            "--user-data-dir",
            "--channel=beta",
            "--config=x.json",
            "--chromeArg=--remote-debugging-port=9222",
            "--no-headless",
            "--headless=false",
            "--usage-statistics",
            "--performanceCrux",
        ] {
            let mut a = args(&base);
            a.push(bad.into());
            let err = check_command_line("npx", &a).unwrap_err();
            assert!(
                matches!(err, BrowserError::ForbiddenOption { .. }),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("is not allowed"), "{bad}: {err}");
        }
        // npx's own options before the package are its own business.
        assert!(
            check_command_line(
                "npx",
                &args(&["-w", "x", "chrome-devtools-mcp", "--headless"])
            )
            .is_ok()
        );
        // The program itself, without npx.
        assert!(
            check_command_line(
                "/usr/bin/chrome-devtools-mcp",
                &args(&["--wsEndpoint=ws://x"])
            )
            .is_err()
        );
        assert!(!starts_chrome_devtools(
            "npx",
            &args(&["-y", "@modelcontextprotocol/server-everything"])
        ));
    }

    #[test]
    fn versions_and_node_are_checked() {
        assert!(check_version("1.10.1").is_ok());
        assert!(check_version("1.11.0-beta.2").is_ok());
        for bad in ["latest", "^1.10.1", "1.10", "1.10.x", ""] {
            assert!(check_version(bad).is_err(), "{bad}");
        }
        assert!(node_version_ok("v20.19.0").is_ok());
        assert!(node_version_ok("v20.18.3").is_err());
        assert!(node_version_ok("v22.11.0").is_err());
        assert!(node_version_ok("v22.12.0").is_ok());
        assert!(node_version_ok("v24.1.0").is_ok());
        assert!(node_version_ok("v18.20.0").is_err());
    }

    #[test]
    fn brave_is_refused() {
        let err = check_program(Path::new("/usr/bin/brave-browser")).unwrap_err();
        assert!(matches!(err, BrowserError::ProgramIsBrave(_)), "{err}");
        assert!(err.to_string().contains("Brave"), "{err}");
        let err = check_program(Path::new("chromium")).unwrap_err();
        assert!(matches!(err, BrowserError::ProgramNotFullPath(_)), "{err}");
        assert!(err.to_string().contains("full path"), "{err}");
    }
}
