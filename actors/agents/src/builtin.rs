//! `bosun agent tools NAME [--ask]`: the CLI's own tools, from bosun's catalog merged with what
//! the CLI reported. With `--ask`, the installed Claude Code is asked the cheap way: started
//! with a scratch `CLAUDE_CONFIG_DIR` and `HOME` and no key, it prints its init line (with its
//! tools) before its "Not logged in" error — nothing is spent, nothing is written in the
//! person's `~/.claude` — and bosun ends it.

use std::time::Duration;

use crate::AgentsError;
use bosun_shared::agents::CliKind;
use bosun_shared::process::Helper;
use nix::sys::signal::Signal;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::catalog::{self, BuiltinTool, SwitchStates};
use super::record::AgentRecord;
use super::registry::{AgentsContext, AgentsMsg, SAVE_LIMIT_MS, find};

/// How long Claude Code may take to print its init line.
const ASK_LIMIT: Duration = Duration::from_secs(30);

/// An agent's built-in tools as the form lists them, and where the list comes from in words.
#[derive(Clone, Debug)]
pub struct BuiltinTools {
    pub agent: String,
    pub cli: CliKind,
    pub source: String,
    pub tools: Vec<BuiltinTool>,
}

/// The agent's built-in tools: bosun's catalog merged with those its last run saw, or with those
/// Claude Code reports now when `ask`.
pub async fn tools(
    ctx: &AgentsContext,
    agents: Option<ractor::ActorRef<AgentsMsg>>,
    agent: &str,
    ask: bool,
) -> Result<BuiltinTools, AgentsError> {
    let rec = find(&ctx.store, agent).await?;
    let mut seen = rec
        .last_run
        .as_ref()
        .map(|l| l.tools_seen.clone())
        .unwrap_or_default();
    let mut source = catalog::source(rec.cli, &seen).to_string();
    if ask {
        if rec.cli != CliKind::Claude {
            return Err(AgentsError::invalid(format!(
                "only Claude Code can be asked for its tools without a model call; {} has no such command, so its list is bosun's catalog (leave out --ask)",
                rec.cli
            )));
        }
        seen = ask_claude(&rec).await?;
        source = "Bosun's catalog merged with the tools Claude Code reported just now".into();
        // Kept on the agent before the answer goes (a few seconds at most: this runs outside
        // the agents actor, in a task of its own).
        if let Some(agents) = agents {
            let tools = seen.clone();
            let saved = ractor::call_t!(
                agents,
                |saved| AgentsMsg::ToolsSeen {
                    agent: rec.id,
                    tools,
                    saved,
                },
                SAVE_LIMIT_MS
            );
            if let Err(e) = saved {
                tracing::warn!(agent = %rec.name, error = %e, "the agents actor did not say it kept the tools seen");
            }
        }
    }
    let states = SwitchStates {
        web_search: rec.switches.web_search,
        web_fetch: rec.switches.web_fetch.to_string(),
        skills: rec.switches.skills,
        permission_mode: rec.permission_mode.clone(),
        allowed_commands: rec.allowed_commands.clone(),
    };
    Ok(BuiltinTools {
        agent: rec.name.clone(),
        cli: rec.cli,
        source,
        tools: catalog::merged(rec.cli, &seen, &states),
    })
}

/// Starts the installed Claude Code with nothing of the person's, reads its init line, and
/// ends it.
async fn ask_claude(rec: &AgentRecord) -> Result<Vec<String>, AgentsError> {
    let failed = |m: String| AgentsError::unavailable(m);
    let scratch = tempfile::Builder::new()
        .prefix("bosun-ask-")
        .tempdir()
        .map_err(|e| failed(format!("could not make a scratch folder: {e}")))?;
    let home = scratch.path().join("home");
    let config = scratch.path().join("config");
    for d in [&home, &config] {
        std::fs::create_dir_all(d)
            .map_err(|e| failed(format!("could not make {}: {e}", d.display())))?;
    }
    let path = rec
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let mut cmd = Command::new("claude");
    cmd.args([
        "-p",
        "hi",
        "--output-format=stream-json",
        "--verbose",
        "--strict-mcp-config",
    ]);
    if !rec.switches.skills {
        cmd.arg("--disable-slash-commands");
    }
    cmd.current_dir(scratch.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &config)
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut helper = Helper::spawn(&mut cmd).map_err(|e| {
        failed(if e.kind() == std::io::ErrorKind::NotFound {
            "Claude Code (`claude`) was not found on PATH; install it (npm install -g @anthropic-ai/claude-code)".into()
        } else {
            format!("could not start Claude Code: {e}")
        })
    })?;
    let stdout = helper
        .child()
        .stdout
        .take()
        .ok_or_else(|| failed("Claude Code has no output to read".into()))?;
    let read = async {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if v.get("type").and_then(|t| t.as_str()) == Some("system")
                && v.get("subtype").and_then(|t| t.as_str()) == Some("init")
            {
                return Some(
                    v.get("tools")
                        .and_then(|t| t.as_array())
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect::<Vec<_>>()
                        })
                        .unwrap_or_default(),
                );
            }
        }
        None
    };
    let tools = tokio::time::timeout(ASK_LIMIT, read).await;
    // Ended the gentle way first (SIGKILL would leave its socket in /tmp/cc-socks behind).
    helper.signal(Signal::SIGINT);
    let _ = helper.wait(Duration::from_secs(3)).await;
    // Dropping it SIGKILLs whatever is left of its group.
    drop(helper);
    match tools {
        Ok(Some(tools)) => Ok(tools),
        Ok(None) => Err(failed(
            "Claude Code ended without printing its init line; run `claude --version` to check the installation".into(),
        )),
        Err(_) => Err(failed(format!(
            "Claude Code did not print its init line within {} s",
            ASK_LIMIT.as_secs()
        ))),
    }
}
