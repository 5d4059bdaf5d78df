//! A run's CLI keeps its state in folders of the run's own, so that nothing a run does reaches
//! the person's own CLI configuration (issue 45): a shell command the person allowed tries to
//! write a hook into the person's Claude Code settings, Codex's `config.toml`, `~/.claude.json`
//! and npm's cache, and each is checked from the outside to be untouched, while the run, signed
//! in from the agent's own folder, ends as it should. The copy of the sign-in goes with the run;
//! the CLI's transcripts stay in the run's folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel};
use serde_json::Value;

/// What the allowed command tries: every place the person's own CLIs read their settings from,
/// and npm's cache; then it says where its CLI's state and caches are, and writes there.
fn attack(home: &Path, source: &Path, source_file: &str) -> String {
    format!(
        "mkdir -p {h}/.claude {h}/.codex {h}/.npm 2>&1; \
         echo '{{\"hooks\":{{}}}}' > {h}/.claude/settings.json 2>&1; \
         echo '{{}}' > {h}/.claude.json 2>&1; \
         echo 'x=1' > {h}/.codex/config.toml 2>&1; \
         echo x > {h}/.npm/x 2>&1; \
         echo '{{\"hooks\":{{}}}}' > {s}/{f} 2>&1; \
         echo \"state=$CLAUDE_CONFIG_DIR$CODEX_HOME cache=$XDG_CACHE_HOME npm=$npm_config_cache\"; \
         echo x > \"$npm_config_cache/x\" && echo x > \"$XDG_CACHE_HOME/x\" && echo caches-ok",
        h = home.display(),
        s = source.display(),
        f = source_file,
    )
}

/// Runs `agent` to its end: its record, which must say it succeeded.
fn run_to_end(b: &Bosun, agent: &str) -> anyhow::Result<Value> {
    let run = b.run_agent(agent, "do as scripted")?;
    let view = b.wait_ended(&run, Duration::from_secs(120))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let ds = b.decisions(&run)?;
    assert!(
        ds.iter().any(|d| d["decision"] == "allowed"),
        "the person allowed the command: {ds:#?}"
    );
    Ok(view)
}

fn run_dir(b: &Bosun, view: &Value) -> PathBuf {
    b.home
        .join("runs")
        .join(view["id"].as_str().unwrap_or_default())
}

/// Nothing of the person's own was written, whatever the command said.
fn nothing_written(home: &Path, source: &Path, source_file: &str) {
    for p in [
        home.join(".claude/settings.json"),
        home.join(".claude.json"),
        home.join(".codex/config.toml"),
        home.join(".npm/x"),
        source.join(source_file),
    ] {
        assert!(!p.exists(), "{} was written", p.display());
    }
}

#[test]
fn a_claude_code_run_cannot_change_the_persons_claude_code_configuration() -> anyhow::Result<()> {
    let b = Bosun::new("cli_state_claude");
    let home = b.scratch().join("coder/home");
    let source = b.scratch().join("coder/claude");
    let command = attack(&home, &source, "settings.json");
    let fake = FakeModel::running("anthropic", &command)?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "Bash=allow"])?;
    // The agent's own folder says which sign-in the run uses: a Claude.ai sign-in here, which
    // the run gets a copy of (its key in the environment signs the fake API's calls).
    let creds = r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-cli-state-7f3e9a1c","refreshToken":"sk-ant-ort01-cli-state-2b8d4e6f","expiresAt":4102444800000,"scopes":["user:inference"],"subscriptionType":"max"}}"#;
    std::fs::write(source.join(".credentials.json"), creds)?;

    let view = run_to_end(&b, "coder")?;
    let dir = run_dir(&b, &view);
    let result = fake.result_at(1);
    assert!(
        result.contains(&format!("state={}", dir.join("claude").display())),
        "Claude Code's state is the run's own: {result}"
    );
    assert!(result.contains("caches-ok"), "{result}");
    assert!(
        result.to_lowercase().contains("permission denied"),
        "the fence refused the person's folders: {result}"
    );
    nothing_written(&home, &source, "settings.json");
    assert_eq!(
        std::fs::read_to_string(source.join(".credentials.json"))?,
        creds,
        "the person's sign-in is never written to"
    );
    // The copy of the sign-in and the caches went with the run; the CLI's state stays, with
    // the session's transcript.
    let state = dir.join("claude");
    assert!(!state.join(".credentials.json").exists());
    assert!(!dir.join("npm").exists() && !dir.join("cache").exists());
    let session = view["agent"]["session"].as_str().unwrap_or_default();
    let transcripts: Vec<PathBuf> = std::fs::read_dir(state.join("projects"))?
        .flatten()
        .map(|p| p.path().join(format!("{session}.jsonl")))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(transcripts.len(), 1, "the transcript of {session} is kept");
    b.assert_secret_nowhere("sk-ant-oat01-cli-state-7f3e9a1c")?;
    b.finish()
}

#[test]
fn a_codex_run_cannot_change_the_persons_codex_configuration() -> anyhow::Result<()> {
    let b = Bosun::new("cli_state_codex");
    let home = b.scratch().join("coder/home");
    let source = b.scratch().join("coder/codex");
    let command = attack(&home, &source, "config.toml");
    let fake = FakeModel::running("openai", &command)?;
    b.add_codex_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "Bash=allow"])?;
    let auth = r#"{"OPENAI_API_KEY":"sk-test-cli-state-5c1d8e2a9b"}"#;
    std::fs::write(source.join("auth.json"), auth)?;

    let view = run_to_end(&b, "coder")?;
    let dir = run_dir(&b, &view);
    let result = fake.result_at(1);
    assert!(
        result.contains(&format!("state={}", dir.join("codex").display())),
        "Codex's state is the run's own: {result}"
    );
    assert!(result.contains("caches-ok"), "{result}");
    assert!(
        result.to_lowercase().contains("permission denied"),
        "{result}"
    );
    nothing_written(&home, &source, "config.toml");
    assert_eq!(std::fs::read_to_string(source.join("auth.json"))?, auth);
    assert!(dir.join("codex").is_dir(), "Codex's state is kept");
    assert!(!dir.join("codex/auth.json").exists());
    assert!(!dir.join("npm").exists() && !dir.join("cache").exists());
    b.finish()
}

#[test]
fn a_gemini_run_cannot_change_the_persons_gemini_configuration() -> anyhow::Result<()> {
    let b = Bosun::new("cli_state_gemini");
    let home = b.scratch().join("writer/home");
    let source = b.scratch().join("writer/gemini");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&source)?;
    let command = attack(&home, &source, "settings.json");
    let fake = FakeModel::running("gemini", &command)?;
    b.add_gemini_agent("writer", fake.url(), &[])?;
    b.ok(&["agent", "set", "writer", "Bash=allow"])?;
    let view = run_to_end(&b, "writer")?;
    let dir = run_dir(&b, &view);
    let result = fake.result_at(1);
    assert!(result.contains("caches-ok"), "{result}");
    assert!(
        result.to_lowercase().contains("permission denied"),
        "{result}"
    );
    nothing_written(&home, &source, "settings.json");
    assert!(dir.join("home/.gemini").is_dir(), "Gemini's state is kept");
    assert!(!dir.join("npm").exists() && !dir.join("cache").exists());
    b.finish()
}

#[test]
fn the_leads_next_answer_continues_its_session_from_the_previous_answers_folder()
-> anyhow::Result<()> {
    let b = Bosun::new("cli_state_lead");
    let fake = FakeModel::start("anthropic", "text:first answer;text:second answer")?;
    b.add_claude_agent("lead", fake.url(), &["--role", "lead"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let out = b.ok(&["chat", "send", &chat, "hello"])?;
    assert!(out.contains("first answer"), "{out}");
    let out = b.ok(&["chat", "send", &chat, "again"])?;
    assert!(out.contains("second answer"), "{out}");
    let runs = b.json(&["ps", "--all"])?;
    let runs: Vec<Value> = runs
        .as_array()
        .map(|r| r.iter().filter(|r| r["name"] == "lead").cloned().collect())
        .unwrap_or_default();
    assert_eq!(runs.len(), 2, "{runs:#?}");
    // The second answer's run carried the session over, and Claude Code went on with it there.
    let second = runs
        .iter()
        .find(|r| {
            r["args"].as_array().is_some_and(|a| {
                a.iter()
                    .any(|x| x.as_str().is_some_and(|x| x.starts_with("--resume=")))
            })
        })
        .cloned()
        .unwrap_or_default();
    let view = b.show(second["id"].as_str().unwrap_or_default())?;
    assert_eq!(view["agent"]["result"]["is_error"], false, "{view:#}");
    let session = view["agent"]["session"].as_str().unwrap_or_default();
    let projects = run_dir(&b, &view).join("claude/projects");
    let transcript = std::fs::read_dir(&projects)?
        .flatten()
        .map(|p| p.path().join(format!("{session}.jsonl")))
        .find(|p| p.exists())
        .map(std::fs::read_to_string)
        .transpose()?
        .unwrap_or_default();
    assert!(
        transcript.contains("first answer") && transcript.contains("second answer"),
        "{transcript}"
    );
    // Nothing of it was written to the lead's own folder.
    assert!(!b.scratch().join("lead/claude/projects").exists());
    b.finish()
}
