//! Where a run's coding CLI keeps its state: folders of the run's own, in the run's directory,
//! never the person's (`~/.claude`, `~/.claude.json`, `~/.codex`, `~/.gemini`, `~/.cache`,
//! `~/.npm`). A command a run is allowed to run may write anything the fence lets it; were the
//! CLI's own configuration among that, a hook written into it would run, unfenced, in the
//! person's next session of that CLI outside bosun.
//!
//! Every agent's run, fenced or not, gets (under its `RUN_DIR`):
//! - its CLI's state: `claude/` (`CLAUDE_CONFIG_DIR`), `codex/` (`CODEX_HOME`) or `home/`
//!   (Gemini's `HOME`), kept after the run with the CLI's transcripts;
//! - its caches: `cache/` (`XDG_CACHE_HOME`) and `npm/` (`npm_config_cache`), removed when the
//!   run ends.
//!
//! The agent's own `CLAUDE_CONFIG_DIR` or `CODEX_HOME` (else `~/.claude`, `~/.codex`) still says
//! which sign-in a run uses: its sign-in files are read when the run is prepared and copied into
//! the run's folder as the run's secret files (0600, deleted when the run ends). Nothing is ever
//! written back.
//!
//! # Caveats
//! - A run that refreshes its sign-in keeps the new tokens in its own copy, which goes at its
//!   end. Where the provider rotates refresh tokens, the person's own copy may then be refused
//!   at its next refresh, and the CLI asks the person to sign in again.
//! - A run's caches start empty: an MCP server the CLI starts with `npx` is fetched anew by
//!   each run (the servers bosun's gateway starts are started by the runner the same way).

use std::path::{Path, PathBuf};

use bosun_shared::agents::CliKind;

use crate::AgentsError;
use crate::secrets::{SecretLine, SecretSource};

/// Stands for the run's own directory in arguments, environment values and file paths.
pub const RUN_DIR: &str = "${BOSUN_RUN_DIR}";

/// Claude Code's `CLAUDE_CONFIG_DIR` in a run's directory.
pub const CLAUDE: &str = "claude";
/// Codex's `CODEX_HOME` in a run's directory.
pub const CODEX: &str = "codex";
/// Gemini CLI's `HOME` in a run's directory.
pub const GEMINI: &str = "home";
/// The caches in a run's directory: `XDG_CACHE_HOME`'s, then npm's.
pub const CACHES: [&str; 2] = ["cache", "npm"];

/// The longest session transcript a continued run carries over (it travels in the run's plan,
/// whose frame is 4 MiB).
const MAX_TRANSCRIPT: usize = 3 * 1024 * 1024;

/// The folder in a run's directory where `cli` keeps its state, if it is a coding CLI.
pub fn state(cli: CliKind) -> Option<&'static str> {
    match cli {
        CliKind::Claude => Some(CLAUDE),
        CliKind::Codex => Some(CODEX),
        CliKind::Gemini => Some(GEMINI),
        CliKind::Command => None,
    }
}

/// The environment that points a run's CLI and its programs at the run's own folders (under
/// [`RUN_DIR`]); it wins over the agent's own.
pub fn env(cli: CliKind) -> Vec<(String, String)> {
    let var = match cli {
        CliKind::Claude => Some("CLAUDE_CONFIG_DIR"),
        CliKind::Codex => Some("CODEX_HOME"),
        CliKind::Gemini => Some("HOME"),
        CliKind::Command => None,
    };
    let mut env: Vec<(String, String)> = var
        .zip(state(cli))
        .map(|(var, dir)| (var.to_string(), format!("{RUN_DIR}/{dir}")))
        .into_iter()
        .collect();
    for (var, dir) in ["XDG_CACHE_HOME", "npm_config_cache"]
        .into_iter()
        .zip(CACHES)
    {
        env.push((var.to_string(), format!("{RUN_DIR}/{dir}")));
    }
    env
}

/// A file a run's CLI gets in its folder: where (under [`RUN_DIR`]) and what it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct CopiedIn {
    pub path: String,
    pub contents: String,
}

impl std::fmt::Debug for CopiedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopiedIn")
            .field("path", &self.path)
            .field("contents", &format_args!("<{} bytes>", self.contents.len()))
            .finish()
    }
}

/// The folder the agent's own sign-in is in: its `CLAUDE_CONFIG_DIR` or `CODEX_HOME`, else the
/// CLI's folder in its `HOME`.
pub fn source(cli: CliKind, env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
    };
    let (own, in_home) = match cli {
        CliKind::Claude => ("CLAUDE_CONFIG_DIR", ".claude"),
        CliKind::Codex => ("CODEX_HOME", ".codex"),
        CliKind::Gemini | CliKind::Command => return None,
    };
    var(own).or_else(|| var("HOME").map(|h| h.join(in_home)))
}

/// The copies of the agent's sign-in a run of `cli` gets in its folder, each with its secret
/// line (the whole file, read again for a sealed plan), read from `source` now. A file that is
/// not there is not copied: the CLI is then signed in some other way (a key in the
/// environment), or not at all, which the login check says.
pub fn sign_in(cli: CliKind, source: &Path) -> Result<Vec<(CopiedIn, SecretLine)>, AgentsError> {
    let (dir, names): (&str, &[&str]) = match cli {
        // Measured with 2.1.332: `-p` signed in by `.credentials.json` alone; nothing of
        // `.claude.json` is needed.
        CliKind::Claude => (CLAUDE, &[".credentials.json"]),
        // 0.171.0: `auth.json`. Its `config.toml` stays out: it would bring the person's MCP
        // servers into the run past bosun's gateway, and the agent's own settings are
        // `--codex-config`.
        CliKind::Codex => (CODEX, &["auth.json"]),
        CliKind::Gemini | CliKind::Command => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for name in names {
        let path = source.join(name);
        let contents = match std::fs::read_to_string(&path) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(AgentsError::unavailable(format!(
                    "could not read the CLI's sign-in {} for the run: {e}; make it readable by bosund's user, or sign the CLI in again",
                    path.display()
                )));
            }
        };
        let line = SecretLine {
            source: SecretSource::CliFile { path: path.clone() },
            value: contents.clone(),
        };
        out.push((
            CopiedIn {
                path: format!("{RUN_DIR}/{dir}/{name}"),
                contents,
            },
            line,
        ));
    }
    Ok(out)
}

/// The transcript of Claude Code's session `session`, for a run that continues it: looked for
/// in the run that wrote it (`earlier`, its directory), else in the agent's own folder (a
/// session from before runs had folders of their own); put at the same place in the new run's
/// folder, kept after the run like the CLI's own.
pub fn transcript(
    session: &str,
    earlier: Option<&Path>,
    source: Option<&Path>,
) -> Result<CopiedIn, AgentsError> {
    let name = format!("{session}.jsonl");
    if session.is_empty() || session.contains(['/', '\0']) || session.starts_with('.') {
        return Err(AgentsError::invalid(format!(
            "`{session}` is not a Claude Code session; continue a run that reported one"
        )));
    }
    let places = earlier
        .map(|d| d.join(CLAUDE))
        .into_iter()
        .chain(source.map(Path::to_path_buf));
    for config in places {
        let Ok(projects) = std::fs::read_dir(config.join("projects")) else {
            continue;
        };
        for project in projects.flatten() {
            let path = project.path().join(&name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.len() > MAX_TRANSCRIPT as u64 {
                return Err(AgentsError::invalid(format!(
                    "the session {session} is {} MiB, more than a run carries over ({} MiB); start a new run (or a new chat)",
                    meta.len() / (1024 * 1024),
                    MAX_TRANSCRIPT / (1024 * 1024)
                )));
            }
            let contents = std::fs::read_to_string(&path).map_err(|e| {
                AgentsError::unavailable(format!(
                    "could not read the session's transcript {}: {e}",
                    path.display()
                ))
            })?;
            return Ok(CopiedIn {
                path: format!(
                    "{RUN_DIR}/{CLAUDE}/projects/{}/{name}",
                    project.file_name().to_string_lossy()
                ),
                contents,
            });
        }
    }
    Err(AgentsError::conflict(format!(
        "the transcript of the session {session} is not in the folder of the run that wrote it; it cannot be continued: start a new run (or a new chat)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::sign_in_values;

    #[test]
    fn each_cli_gets_its_own_folders_and_the_caches() {
        let names = |cli| {
            env(cli)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(CliKind::Claude),
            [
                "CLAUDE_CONFIG_DIR=${BOSUN_RUN_DIR}/claude",
                "XDG_CACHE_HOME=${BOSUN_RUN_DIR}/cache",
                "npm_config_cache=${BOSUN_RUN_DIR}/npm",
            ]
        );
        assert_eq!(
            names(CliKind::Codex)[0],
            "CODEX_HOME=${BOSUN_RUN_DIR}/codex"
        );
        assert_eq!(names(CliKind::Gemini)[0], "HOME=${BOSUN_RUN_DIR}/home");
        assert_eq!(names(CliKind::Command).len(), 2);
    }

    #[test]
    fn the_sign_in_is_read_from_the_agents_folder_and_a_missing_file_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![("HOME".to_string(), dir.path().display().to_string())];
        let claude = source(CliKind::Claude, &env).unwrap();
        assert_eq!(claude, dir.path().join(".claude"));
        assert!(sign_in(CliKind::Claude, &claude).unwrap().is_empty());
        std::fs::create_dir_all(&claude).unwrap();
        let creds = r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-abcdefgh","refreshToken":"sk-ant-ort01-ijklmnop","expiresAt":1}}"#;
        std::fs::write(claude.join(".credentials.json"), creds).unwrap();
        let got = sign_in(CliKind::Claude, &claude).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.path, "${BOSUN_RUN_DIR}/claude/.credentials.json");
        assert_eq!(got[0].0.contents, creds);
        assert_eq!(
            sign_in_values(creds),
            ["sk-ant-oat01-abcdefgh", "sk-ant-ort01-ijklmnop"]
        );
        let own = vec![("CODEX_HOME".to_string(), "/acct/two".to_string())];
        assert_eq!(
            source(CliKind::Codex, &own),
            Some(PathBuf::from("/acct/two"))
        );
    }

    #[test]
    fn a_continued_session_is_found_in_the_run_that_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let earlier = dir.path().join("r1");
        let project = earlier.join("claude/projects/-work-x");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("s1.jsonl"), "{}\n").unwrap();
        let got = transcript("s1", Some(&earlier), None).unwrap();
        assert_eq!(
            got.path,
            "${BOSUN_RUN_DIR}/claude/projects/-work-x/s1.jsonl"
        );
        assert_eq!(got.contents, "{}\n");
        let gone = transcript("s2", Some(&earlier), None).unwrap_err();
        assert!(gone.to_string().contains("cannot be continued"), "{gone}");
        assert!(transcript("../s1", Some(&earlier), None).is_err());
    }
}
