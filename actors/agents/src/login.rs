//! Whether an agent's CLI is signed in, checked cheaply before a run starts (`claude auth
//! status`, `codex login status`; for Gemini, that a key is given), once for runs started
//! together, the pass kept for a minute.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bosun_shared::agents::CliKind;
use bosun_shared::process::{Helper, HelperError};
use tokio::process::Command;

use crate::AgentsError;
use crate::record::AgentRecord;

/// How long the login check may take.
const LOGIN_CHECK_LIMIT: Duration = Duration::from_secs(15);

/// How long a passed sign-in check stands for runs of the same program, folder and environment.
const LOGIN_OK_FOR: Duration = Duration::from_secs(60);

/// The sign-in checks that passed lately, by program, folder and environment (hashed; nothing
/// of it is kept in clear), shared by every launch of bosund: runs started together — a
/// board's cards, twenty runs of one agent — make one check, not one each (`claude auth
/// status` is a Node.js start of a second or more), and the others wait for its answer. A
/// failed check is not kept: the next run checks again.
#[derive(Clone, Default)]
pub struct LoginChecks(Arc<std::sync::Mutex<HashMap<u64, LoginSlot>>>);

type LoginSlot = Arc<tokio::sync::Mutex<Option<Instant>>>;

impl LoginChecks {
    fn slot(&self, key: u64) -> LoginSlot {
        let mut slots = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Passes that no longer stand, and that nobody is checking, go: the map holds only
        // what could still save a check.
        slots.retain(|k, slot| {
            *k == key
                || slot
                    .try_lock()
                    .map_or(true, |at| at.is_some_and(|at| at.elapsed() < LOGIN_OK_FOR))
        });
        slots.entry(key).or_default().clone()
    }
}

/// Checks cheaply that the CLI is signed in, with the run's own environment: `claude auth
/// status`, `codex login status`; for Gemini, that a key (or Vertex AI) is given, as a run has
/// a home of its own.
pub(crate) async fn check_login(
    checks: &LoginChecks,
    rec: &AgentRecord,
    env: &[(String, String)],
    program: &str,
) -> Result<(), AgentsError> {
    let Some(args) = status_args(rec, env)? else {
        return Ok(());
    };
    let key = check_key(program, args, rec, env);
    let slot = checks.slot(key);
    // One check at a time for the same key; those that waited take its answer.
    let mut passed = slot.lock().await;
    if passed.is_some_and(|at| at.elapsed() < LOGIN_OK_FOR) {
        return Ok(());
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&rec.cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let helper = Helper::spawn(&mut cmd).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "`{program}` was not found on the PATH the run would have; install it, or put its folder on PATH (`bosun agent edit {} --env PATH=…`)",
                rec.name
            )
        } else {
            format!("could not run `{program}` to check its sign-in: {e}")
        };
        AgentsError::unavailable(why)
    })?;
    let out = match helper.output(LOGIN_CHECK_LIMIT).await {
        Ok(out) => out,
        Err(HelperError::Io(e)) => {
            return Err(AgentsError::unavailable(format!(
                "could not check the sign-in of {program}: {e}"
            )));
        }
        Err(HelperError::TimedOut(_)) => {
            return Err(AgentsError::unavailable(format!(
                "`{program} {}` did not answer within {} s",
                args.join(" "),
                LOGIN_CHECK_LIMIT.as_secs()
            )));
        }
    };
    if out.status.success() {
        *passed = Some(Instant::now());
        return Ok(());
    }
    Err(not_signed_in(rec, program, args))
}

/// The command line that asks the agent's CLI whether it is signed in; `None` when there is
/// nothing to ask (the run has a key, or its program signs in its own way).
fn status_args(
    rec: &AgentRecord,
    env: &[(String, String)],
) -> Result<Option<&'static [&'static str]>, AgentsError> {
    let has = |k: &str| env.iter().any(|(name, v)| name == k && !v.is_empty());
    let args: &'static [&'static str] = match rec.cli {
        CliKind::Claude => &["auth", "status"],
        CliKind::Codex => {
            // A provider of the agent's own signs in its own way (or not at all).
            let own_provider = rec
                .codex_config
                .iter()
                .any(|(k, v)| k == "model_provider" && v.trim_matches('"') != "openai");
            if own_provider || has("OPENAI_API_KEY") || has("CODEX_API_KEY") {
                return Ok(None);
            }
            &["login", "status"]
        }
        CliKind::Gemini => {
            if has("GEMINI_API_KEY") || has("GOOGLE_API_KEY") || has("GOOGLE_GENAI_USE_VERTEXAI") {
                return Ok(None);
            }
            return Err(AgentsError::unavailable(format!(
                "Gemini CLI has no key for this agent: each run has a home of its own, so give it one with `bosun agent edit {} --secret-env GEMINI_API_KEY` (the value is read from stdin)",
                rec.name
            )));
        }
        CliKind::Command => return Ok(None),
    };
    Ok(Some(args))
}

/// What a check is kept under: the same program, command line, folder and environment.
fn check_key(program: &str, args: &[&str], rec: &AgentRecord, env: &[(String, String)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (program, args, &rec.cwd).hash(&mut h);
    let mut sorted: Vec<&(String, String)> = env.iter().collect();
    sorted.sort();
    sorted.hash(&mut h);
    h.finish()
}

/// That the agent's CLI is not signed in, and how to sign it in or give it a key.
fn not_signed_in(rec: &AgentRecord, program: &str, args: &[&str]) -> AgentsError {
    let fix = match rec.cli {
        CliKind::Claude => format!(
            "sign Claude Code in (`claude /login` in a terminal, with the same CLAUDE_CONFIG_DIR), or give the agent a key: `bosun agent edit {} --secret-env ANTHROPIC_API_KEY`",
            rec.name
        ),
        CliKind::Codex => format!(
            "sign Codex in (`codex login`, with the same CODEX_HOME), or give the agent a key: `bosun agent edit {} --secret-env OPENAI_API_KEY`",
            rec.name
        ),
        CliKind::Gemini | CliKind::Command => String::new(),
    };
    AgentsError::unavailable(format!(
        "{} is not signed in for this agent (`{program} {}` says so); {fix}",
        match rec.cli {
            CliKind::Claude => "Claude Code",
            CliKind::Codex => "Codex",
            CliKind::Gemini => "Gemini CLI",
            CliKind::Command => "the program",
        },
        args.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use bosun_shared::placement::Placement;
    use bosun_shared::{AgentId, Timestamp};

    use super::*;
    use crate::record::{ApprovalSettings, Switches};

    fn claude_agent(cwd: &std::path::Path) -> AgentRecord {
        let now = Timestamp::now();
        AgentRecord {
            id: AgentId::new(),
            name: "coder".into(),
            role: "worker".into(),
            cli: CliKind::Claude,
            instructions: String::new(),
            permission_mode: None,
            allowed_commands: Vec::new(),
            time_cap_ms: None,
            max_output: None,
            cwd: cwd.to_path_buf(),
            command: Vec::new(),
            env: Vec::new(),
            secret_env: Vec::new(),
            model: None,
            codex_config: Vec::new(),
            switches: Switches::default(),
            approvals: ApprovalSettings::default(),
            workspace: Default::default(),
            budget: Default::default(),
            paused: false,
            placement: Placement::Local,
            created_at: now,
            updated_at: now,
            last_run: None,
            carried_over: None,
        }
    }

    /// A stand-in for `claude` whose `auth status` counts its calls and answers `status`.
    fn program(dir: &std::path::Path, status: u8) -> String {
        let path = dir.join(format!("claude-{status}"));
        let script = format!("#!/bin/sh\necho called >> \"$COUNT\"\nsleep 0.2\nexit {status}\n");
        if let Err(e) = std::fs::write(&path, script)
            .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)))
        {
            panic!("{e}");
        }
        path.display().to_string()
    }

    fn calls(count: &std::path::Path) -> usize {
        std::fs::read_to_string(count)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn runs_started_together_make_one_sign_in_check_and_a_failed_one_is_not_kept() {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let rec = claude_agent(dir.path());
        let checks = LoginChecks::default();
        let count = dir.path().join("count");
        let env = vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("COUNT".to_string(), count.display().to_string()),
        ];
        // Ten at once: one check, the others take its answer.
        let ok = program(dir.path(), 0);
        let all =
            futures::future::join_all((0..10).map(|_| check_login(&checks, &rec, &env, &ok))).await;
        assert!(all.iter().all(Result::is_ok), "{all:?}");
        assert_eq!(calls(&count), 1);
        // Another environment (another sign-in, perhaps) is checked on its own.
        let mut other = env.clone();
        other.push(("ANTHROPIC_API_KEY".into(), "k".into()));
        assert!(check_login(&checks, &rec, &other, &ok).await.is_ok());
        assert_eq!(calls(&count), 2);
        // A failed check is said each time, never kept.
        let _ = std::fs::remove_file(&count);
        let bad = program(dir.path(), 1);
        for _ in 0..2 {
            match check_login(&checks, &rec, &env, &bad).await {
                Ok(()) => panic!("a failed check passed"),
                Err(e) => assert!(e.to_string().contains("is not signed in"), "{e}"),
            }
        }
        assert_eq!(calls(&count), 2);
    }
}
