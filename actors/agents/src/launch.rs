//! An agent and a prompt turned into a run: the servers that are switched on resolved (their
//! secret values read from the keychain only now, for this run's 0600 files), the ones that
//! cannot be used left out with the reason, the allowed commands filtered to commands, the
//! environment built from an explicit allow-list plus the agent's own, the login checked, and
//! the adapter's invocation made into a [`Prepared`] run, which `runs` turns into its `RunSpec`
//! (runs know agents; agents know nothing of runs).

use bosun_mcp::record::ServerReads;
use std::num::NonZeroU64;
use std::time::Duration;

use crate::AgentsError;
use bosun_protocol::runner::ControlPlan;
use bosun_shared::agents::CliKind;
use bosun_shared::gateway::{self, GatewayServer, PinnedTool, Reach};
use bosun_shared::mcp::{ServerKind, SignInBy};
use bosun_shared::run::RunRequest;
use bosun_shared::{AnswerId, ChatId, RunId};

use super::adapter::{self, AgentSetup, RunServer, ToolPlan};
use super::homes;
use super::record::{AgentReads, AgentRun};
use super::record::{AgentRecord, ServerSwitch, Switches, ToolSelection};
use super::registry::{AgentsContext, find};
use super::secrets::{SecretLine, SecretSource, UsedAs};
use bosun_auth::{Access, AuthContext};
use bosun_kit::keychain::{Keychain, agent_env_key};
use bosun_kit::offload::blocking;
use bosun_mcp::record::{LineKind, ServerRecord, connect_url};
use bosun_mcp::{browser, redact};

/// The daemon's environment variables a run gets (besides the agent's own): enough to find
/// programs, a home, the locale, and where the CLIs keep their sign-ins.
const BASE_ENV: [&str; 14] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
];

/// The name bosun's own MCP server has in a chat answer's config.
pub const BOSUN_SERVER: &str = "bosun";

/// The longest prompt.
const MAX_PROMPT: usize = 256 * 1024;

/// An answer of the lead in a chat: what its run gets besides the agent's own setup.
#[derive(Clone, Debug)]
pub struct ChatLaunch {
    /// bosun's own MCP server.
    pub url: String,
    /// The bearer token that tells bosun's MCP server which answer a call belongs to.
    pub token: String,
    pub answer: (ChatId, AnswerId),
    /// The answer may use bosun's own tools only (a board check's answer): none of the agent's
    /// MCP servers, no web search or fetch, no browser.
    pub only_bosun: bool,
}

/// A Claude Code session a run continues: its id, and the run that wrote it last (none for a
/// session from before each run kept its CLI's state in its own folder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    pub session: String,
    pub run: Option<RunId>,
}

/// A run of an agent, ready to start.
#[derive(Debug)]
pub struct Prepared {
    pub request: RunRequest,
    /// Files the runner writes (mode 0600) before the program starts and deletes when the run
    /// ends: (path, contents), the path under [`RUN_DIR`](super::adapter::RUN_DIR).
    pub files: Vec<(String, String)>,
    /// Files the runner writes (mode 0600) before the program starts and leaves when the run
    /// ends, like the rest of the CLI's state: a continued session's transcript.
    pub kept_files: Vec<(String, String)>,
    /// Lines for the run's log, before the program's output.
    pub notes: Vec<String>,
    pub run: AgentRun,
    /// How the runner drives the CLI, when every tool call goes through bosun's policy.
    pub control: Option<ControlPlan>,
    /// Every secret value the run is given (its keychain values, its servers' lines and
    /// tokens): the runner writes `[redacted]` for each wherever the program prints it.
    pub redact: Vec<String>,
    /// The stdio servers the CLI reaches through the runner's gateway, with their secrets.
    pub gateway: Vec<GatewayServer>,
    /// Every secret value read for the run, with where it came from: what a plan kept sealed
    /// reads again ([`secrets`](super::secrets)).
    pub secrets: Vec<SecretLine>,
}

/// Turns an agent and a prompt into a run.
pub async fn prepare(
    ctx: &AgentsContext,
    agent: &str,
    prompt: &str,
) -> Result<Prepared, AgentsError> {
    prepare_with(ctx, agent, prompt, None, None).await
}

/// Turns an agent and a prompt into a run; with `chat`, an answer of the lead; with `resume`,
/// a run that continues that Claude Code session (its transcript carried into the run's
/// folder).
pub async fn prepare_with(
    ctx: &AgentsContext,
    agent: &str,
    prompt: &str,
    chat: Option<ChatLaunch>,
    resume: Option<Resume>,
) -> Result<Prepared, AgentsError> {
    let mut rec = find(&ctx.store, agent).await?;
    let only_bosun = chat.as_ref().is_some_and(|c| c.only_bosun);
    if only_bosun {
        rec.switches = Switches::default();
    }
    refuse_unfit(&rec, prompt, chat.is_some(), resume.is_some())?;
    let store = ctx.store.clone();
    let mut servers = blocking(move || store.servers()).await??;
    servers.sort_by(|a, b| a.name.cmp(&b.name));

    // The agent's own environment, secret lines from the keychain.
    let secret_env = {
        let keychain = ctx.keychain.clone();
        let (id, names) = (rec.id, rec.secret_env.clone());
        blocking(move || read_agent_secrets(&keychain, id, &names)).await??
    };
    let mut env: Vec<(String, String)> = BASE_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    let run_path = run_path(&rec);

    let mut parts = RunParts::new(&rec, only_bosun, &secret_env);
    give_servers(ctx, &rec, &servers, run_path, &mut parts).await?;
    if let Some(c) = &chat {
        parts.give_bosun(c);
    }
    if rec.cli == CliKind::Command && rec.switches.mcp.values().any(|s| s.on) {
        parts.notes.push(
            "A command agent's program is not a coding CLI: its MCP servers are not given to it."
                .into(),
        );
    }
    let allowed_commands = only_commands(&rec, &mut parts.notes);

    let session = resume.as_ref().map(|r| r.session.clone());
    let setup = agent_setup(&rec, allowed_commands, chat.as_ref(), session);
    let mut inv = adapter::build(&setup, prompt, &parts.servers);
    parts.notes.extend(inv.notes.iter().cloned());
    let mut redact = secret_values(&secret_env, &parts.servers, &parts.gateway);

    // The environment: the allow-list, the agent's own lines, then what the adapter needs
    // (the run's own folders for the CLI's state and caches), which wins.
    set_all(&mut env, rec.env.iter().cloned());
    set_all(&mut env, secret_env);
    let agent_env = env.clone();
    set_all(&mut env, inv.env.iter().cloned());
    refuse_root_bypass(&rec, &agent_env)?;
    // The agent's own folder says which sign-in the run uses: checked there, and copied from
    // there into the run's.
    super::login::check_login(&ctx.logins, &rec, &agent_env, &inv.program).await?;
    let kept_files = carry_in(
        ctx,
        &rec,
        &agent_env,
        resume,
        &mut inv,
        &mut parts,
        &mut redact,
    )
    .await?;
    if !rec.workspace.unrestricted && !rec.workspace.net_open {
        let urls: Vec<&str> = parts
            .servers
            .iter()
            .filter_map(|s| s.url.as_deref())
            .chain(chat.as_ref().map(|c| c.url.as_str()))
            .collect();
        parts.run.net = Some(super::fence::net_allow(
            rec.cli,
            &env,
            &setup.codex_config,
            &setup.web_fetch,
            &urls,
        ));
    }
    if !rec.workspace.unrestricted && !rec.workspace.reads_open {
        // Other agents' folders are theirs: the run may not read them (a folder that holds
        // one of its own roots excepted, when the fence is made).
        let store = ctx.store.clone();
        let others = blocking(move || store.agents()).await??;
        if let Some(space) = parts.run.workspace.as_mut() {
            let own: Vec<&std::path::Path> = std::iter::once(rec.cwd.as_path())
                .chain(rec.workspace.roots.iter().map(std::path::PathBuf::as_path))
                .collect();
            for folder in others
                .iter()
                .filter(|a| a.id != rec.id)
                .flat_map(|a| std::iter::once(&a.cwd).chain(&a.workspace.roots))
            {
                if !own.contains(&folder.as_path()) && !space.read_deny.contains(folder) {
                    space.read_deny.push(folder.clone());
                }
            }
        }
    }

    parts.run.task = task_of(prompt, &redact);
    let request = RunRequest {
        name: Some(rec.name.clone()),
        program: inv.program.clone(),
        args: inv.args.clone(),
        cwd: rec.cwd.clone(),
        env,
        time_cap: rec.time_cap()?,
        ladder: None,
        umask: None,
        max_output: rec.max_output.and_then(NonZeroU64::new),
        placement: rec.placement.clone(),
    };
    Ok(Prepared {
        request,
        files: inv.files,
        kept_files,
        notes: parts.notes,
        run: parts.run,
        control: inv.control,
        redact,
        gateway: parts.gateway,
        secrets: parts.secrets,
    })
}

/// The task a run is given, as its record keeps it: at most [`TASK_KEPT`] characters, every
/// secret value the run was given written `[redacted]`.
fn task_of(prompt: &str, secrets: &[String]) -> String {
    let mut task = redact::Redactor::of_values(secrets).text(prompt.trim());
    if task.chars().count() > TASK_KEPT {
        task = task.chars().take(TASK_KEPT).collect::<String>() + "…";
    }
    task
}

/// How much of a run's task its record keeps.
const TASK_KEPT: usize = 2_000;

/// What a run's CLI gets in its folder from outside it, read in a blocking task: copies of the
/// agent's sign-in (the run's secret files, their tokens hidden in its output), and the
/// transcript of the session it continues (kept with the run's own).
async fn carry_in(
    ctx: &AgentsContext,
    rec: &AgentRecord,
    agent_env: &[(String, String)],
    resume: Option<Resume>,
    inv: &mut adapter::Invocation,
    parts: &mut RunParts,
    redact: &mut Vec<String>,
) -> Result<Vec<(String, String)>, AgentsError> {
    let cli = rec.cli;
    let source = homes::source(cli, agent_env);
    let earlier = resume
        .as_ref()
        .and_then(|r| r.run)
        .map(|run| ctx.store.run_dir(run));
    let (copies, transcript) = blocking(move || {
        let copies = match &source {
            Some(s) => homes::sign_in(cli, s)?,
            None => Vec::new(),
        };
        let transcript = resume
            .map(|r| homes::transcript(&r.session, earlier.as_deref(), source.as_deref()))
            .transpose()?;
        Ok::<_, AgentsError>((copies, transcript))
    })
    .await??;
    for (copy, line) in copies {
        redact.extend(line.redact_forms());
        parts.secrets.push(line);
        inv.files.push((copy.path, copy.contents));
    }
    redact.sort();
    redact.dedup();
    Ok(transcript
        .map(|t| vec![(t.path, t.contents)])
        .unwrap_or_default())
}

/// What a run is given, gathered as it is prepared: the lines for its log, its record, the
/// servers the CLI is given (and those it reaches through the gateway) and every secret value
/// read for it.
struct RunParts {
    notes: Vec<String>,
    run: AgentRun,
    servers: Vec<RunServer>,
    gateway: Vec<GatewayServer>,
    secrets: Vec<SecretLine>,
}

impl RunParts {
    /// What every run of the agent starts with: a note when it may use bosun's own tools
    /// only, its record, and the agent's own secret environment lines, each with where in the
    /// keychain it came from.
    fn new(rec: &AgentRecord, only_bosun: bool, secret_env: &[(String, String)]) -> RunParts {
        let mut notes: Vec<String> = Vec::new();
        if only_bosun {
            notes.push(
                "a board check's answer: only bosun's own tools (no MCP server of the agent's, no web search or fetch, no browser)".into(),
            );
        }
        let run = AgentRun {
            agent: Some(rec.id),
            agent_name: rec.name.clone(),
            cli: Some(rec.cli),
            workspace: Some(rec.workspace.clone()),
            budget: rec.budget,
            ..AgentRun::default()
        };
        let secrets = secret_env
            .iter()
            .map(|(name, value)| SecretLine {
                source: SecretSource::Keychain {
                    key: agent_env_key(rec.id, name),
                    what: format!("the agent `{}`'s secret {name}", rec.name),
                    fix: format!("bosun agent edit {} --secret-env {name}", rec.name),
                    used_as: UsedAs::AgentEnv,
                },
                value: value.clone(),
            })
            .collect();
        RunParts {
            notes,
            run,
            servers: Vec::new(),
            gateway: Vec::new(),
            secrets,
        }
    }

    /// Gives an answer of the lead bosun's own MCP server, with the answer's bearer token.
    fn give_bosun(&mut self, c: &ChatLaunch) {
        self.run.answer = Some(c.answer);
        self.secrets.push(SecretLine {
            source: SecretSource::Ephemeral {
                what: "the bearer token of the lead's answer for bosun's own MCP server".into(),
            },
            value: c.token.clone(),
        });
        self.servers.push(RunServer {
            name: BOSUN_SERVER.into(),
            kind: ServerKind::Http,
            command: None,
            args: Vec::new(),
            url: Some(c.url.clone()),
            env: Vec::new(),
            headers: vec![("Authorization".into(), format!("Bearer {}", c.token))],
            tools: ToolPlan::All,
        });
    }
}

/// Refuses what cannot make a run: continuing or answering as the lead with an agent that is
/// not Claude Code, an empty, overlong or NUL-bearing prompt, a working folder that is not one.
fn refuse_unfit(
    rec: &AgentRecord,
    prompt: &str,
    chat: bool,
    resume: bool,
) -> Result<(), AgentsError> {
    if resume && rec.cli != CliKind::Claude {
        return Err(AgentsError::invalid(format!(
            "continuing a run works for Claude Code agents; `{}` is a {} agent: start a new run instead",
            rec.name, rec.cli
        )));
    }
    if chat && rec.cli != CliKind::Claude {
        return Err(AgentsError::invalid(format!(
            "the lead answers through Claude Code, and `{}` is a {} agent; make the lead a Claude agent (`bosun agent add lead --cli claude --role lead …`)",
            rec.name, rec.cli
        )));
    }
    if prompt.trim().is_empty() {
        return Err(AgentsError::invalid(format!(
            "no prompt given; say what the agent should do: bosun agent run {} \"fix the failing test\"",
            rec.name
        )));
    }
    if prompt.len() > MAX_PROMPT || prompt.contains('\0') {
        return Err(AgentsError::invalid(
            "the prompt is over 256 KiB or has a NUL byte; shorten it",
        ));
    }
    if let Some(why) = bosun_shared::paths::not_a_folder(&rec.cwd) {
        return Err(AgentsError::invalid(format!(
            "the agent's working folder {} {why}; create it, or change it with `bosun agent edit {} --cwd DIR`",
            rec.cwd.display(),
            rec.name
        )));
    }
    Ok(())
}

/// The PATH a run's programs are found on: the agent's own, else the daemon's.
fn run_path(rec: &AgentRecord) -> Option<String> {
    let daemon_path = std::env::var("PATH").ok();
    rec.env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or(daemon_path)
}

/// Gives the run the servers switched on, each resolved or left out with the reason.
async fn give_servers(
    ctx: &AgentsContext,
    rec: &AgentRecord,
    servers: &[ServerRecord],
    run_path: Option<String>,
    parts: &mut RunParts,
) -> Result<(), AgentsError> {
    let uses_servers = rec.cli != CliKind::Command;
    for s in servers {
        let Some(switch) = rec.switches.mcp.get(&s.id).filter(|sw| sw.on) else {
            continue;
        };
        if !uses_servers {
            continue;
        }
        let Some(tools) = tool_plan(switch, s) else {
            let why = "switched on with none of its tools".to_string();
            left_out(&mut parts.notes, &mut parts.run, &s.name, &why, None);
            continue;
        };
        if let Err((why, fix)) = signed_in_for_run(rec, s) {
            left_out(
                &mut parts.notes,
                &mut parts.run,
                &s.name,
                &why,
                fix.as_deref(),
            );
            continue;
        }
        match resolve(
            &ctx.auth,
            ctx.keychain.clone(),
            s.clone(),
            tools,
            rec,
            run_path.clone(),
        )
        .await?
        {
            Ok((server, lines)) => {
                let (given, through) = through_gateway(server, s, rec);
                if let Some(clash) = env_clash(rec.cli, &parts.servers, &given) {
                    left_out(&mut parts.notes, &mut parts.run, &s.name, &clash, None);
                    continue;
                }
                parts.secrets.extend(lines);
                parts.run.servers.push((s.name.clone(), "given".into()));
                if s.sign_in_by == SignInBy::ClaudeCode {
                    parts.run.claude_signs_in.push(s.name.clone());
                }
                parts.servers.push(given);
                parts.gateway.extend(through);
            }
            Err((why, fix)) => left_out(
                &mut parts.notes,
                &mut parts.run,
                &s.name,
                &why,
                fix.as_deref(),
            ),
        }
    }
    Ok(())
}

/// The agent's allowed commands that are commands; a note for each rule left out, and for
/// skills switched on in a CLI that has no switch for them.
fn only_commands(rec: &AgentRecord, notes: &mut Vec<String>) -> Vec<String> {
    // Allowed commands take only commands.
    let mut allowed_commands = Vec::new();
    for rule in &rec.allowed_commands {
        if rule == "Bash" || rule.starts_with("Bash(") {
            allowed_commands.push(rule.clone());
        } else {
            notes.push(format!(
                "Left out `{rule}` from the allowed commands: they take only commands (Bash(…)); web search, fetching pages, skills and other tools have switches of their own."
            ));
        }
    }
    if !rec.cli.has_skills_switch() && rec.switches.skills {
        notes.push(format!(
            "{} has no checked per-run switch for slash commands and skills: this run goes without them.",
            rec.cli
        ));
    }
    allowed_commands
}

/// What the adapter builds the CLI's invocation from.
fn agent_setup(
    rec: &AgentRecord,
    allowed_commands: Vec<String>,
    chat: Option<&ChatLaunch>,
    resume: Option<String>,
) -> AgentSetup {
    AgentSetup {
        cli: rec.cli,
        instructions: rec.instructions.clone(),
        permission_mode: rec.permission_mode.clone(),
        allowed_commands,
        web_search: rec.switches.web_search,
        web_fetch: rec.switches.web_fetch.clone(),
        skills: rec.switches.skills && rec.cli.has_skills_switch(),
        outside_sources: rec.has_outside_sources(),
        command: rec.command.clone(),
        model: rec.model.clone(),
        codex_config: rec.codex_config.clone(),
        gemini_vertex: rec
            .env
            .iter()
            .any(|(k, v)| k == "GOOGLE_GENAI_USE_VERTEXAI" && v == "true"),
        chat: chat.map(|_| adapter::ChatAnswer),
        resume,
        // The lead's answers have their own gate (bosun's MCP server keeps its privileged
        // calls for the person); every other run's calls go through the approval policy.
        controlled: chat.is_none(),
        fenced: !rec.workspace.unrestricted,
    }
}

/// Refuses a Claude Code run with bypassPermissions as root, which Claude Code itself refuses
/// unless the agent's environment says the machine is a sandbox.
fn refuse_root_bypass(
    rec: &AgentRecord,
    agent_env: &[(String, String)],
) -> Result<(), AgentsError> {
    if rec.cli == CliKind::Claude
        && rec.permission_mode.as_deref() == Some("bypassPermissions")
        && nix::unistd::geteuid().is_root()
        && !agent_env.iter().any(|(k, v)| k == "IS_SANDBOX" && v == "1")
    {
        return Err(AgentsError::invalid(format!(
            "Claude Code refuses bypassPermissions as root unless IS_SANDBOX=1 says the machine is a sandbox; if it is one, add it with `bosun agent edit {} --env IS_SANDBOX=1`, else choose another permission mode",
            rec.name
        )));
    }
    Ok(())
}

fn set_all(env: &mut Vec<(String, String)>, lines: impl IntoIterator<Item = (String, String)>) {
    for (k, v) in lines {
        match env.iter_mut().find(|(name, _)| *name == k) {
            Some(line) => line.1 = v,
            None => env.push((k, v)),
        }
    }
}

fn left_out(
    notes: &mut Vec<String>,
    run: &mut AgentRun,
    server: &str,
    why: &str,
    fix: Option<&str>,
) {
    let mut line = format!("Left out {server}: {why}.");
    if let Some(fix) = fix {
        line.push_str(&format!(" {fix}"));
    }
    notes.push(line);
    run.servers
        .push((server.to_string(), format!("left out: {why}")));
}

/// Which of a server's tools the run may use; `None` when none is on.
fn tool_plan(switch: &ServerSwitch, s: &ServerRecord) -> Option<ToolPlan> {
    let known: Option<Vec<String>> = s
        .listing
        .as_ref()
        .map(|l| l.tools.iter().map(|t| t.name.clone()).collect());
    match &switch.tools {
        ToolSelection::AllExcept(off) if off.is_empty() => Some(ToolPlan::All),
        ToolSelection::AllExcept(off) => {
            let on = known.map(|k| {
                k.into_iter()
                    .filter(|t| !off.contains(t))
                    .collect::<Vec<_>>()
            });
            if on.as_ref().is_some_and(Vec::is_empty) {
                return None;
            }
            Some(ToolPlan::AllExcept {
                off: off.iter().cloned().collect(),
                on,
            })
        }
        ToolSelection::Only(on) if on.is_empty() => None,
        ToolSelection::Only(on) => Some(ToolPlan::Only {
            on: on.iter().cloned().collect(),
            off: known.map(|k| k.into_iter().filter(|t| !on.contains(t)).collect()),
        }),
    }
}

/// Codex hands a stdio server's secrets on by the variable's name: two servers that need the
/// same name with different values cannot both be given.
fn env_clash(cli: CliKind, given: &[RunServer], new: &RunServer) -> Option<String> {
    if cli != CliKind::Codex {
        return None;
    }
    for (k, v) in &new.env {
        if let Some(other) = given
            .iter()
            .find(|g| g.env.iter().any(|(gk, gv)| gk == k && gv != v))
        {
            return Some(format!(
                "Codex passes environment lines by name, and {} already gives {k} another value",
                other.name
            ));
        }
    }
    None
}

/// A server made ready for the run with the secret values it was given, or why it cannot be
/// used (and how to fix it).
type Resolved = Result<(RunServer, Vec<SecretLine>), (String, Option<String>)>;

async fn resolve(
    auth: &AuthContext,
    keychain: Keychain,
    s: ServerRecord,
    tools: ToolPlan,
    agent: &AgentRecord,
    path: Option<String>,
) -> Result<Resolved, AgentsError> {
    if let Some(settings) = &s.browser {
        return launch_browser(settings.clone(), &s, tools, agent, path).await;
    }
    if let Some(c) = &s.command
        && browser::starts_chrome_devtools(c, &s.args)
        && let Err(why) = browser::check_command_line(c, &s.args)
    {
        return Ok(Err((
            why.to_string(),
            Some(format!(
                "Change its command line with `bosun mcp edit {}`.",
                s.name
            )),
        )));
    }
    let rec = s.clone();
    let values = blocking(move || keychain_values(&keychain, &rec)).await?;
    let ServerValues {
        url,
        env,
        mut headers,
        mut lines,
    } = match values {
        Ok(v) => v,
        Err(why) => return Ok(Err(why)),
    };
    if s.kind != ServerKind::Stdio
        && s.sign_in_by == SignInBy::Bosun
        && let Err(why) = bosun_token(auth, &s, agent, &mut headers, &mut lines).await
    {
        return Ok(Err(why));
    }
    Ok(Ok((
        RunServer {
            name: s.name.clone(),
            kind: s.kind,
            command: s.command.clone(),
            args: s.args.clone(),
            url,
            env,
            headers,
            tools,
        },
        lines,
    )))
}

/// A browser server made ready for the run: the browser's command line, or why it cannot start.
async fn launch_browser(
    settings: browser::BrowserSettings,
    s: &ServerRecord,
    tools: ToolPlan,
    agent: &AgentRecord,
    path: Option<String>,
) -> Result<Resolved, AgentsError> {
    let insecure = agent.switches.browser_insecure_certs;
    let launch = blocking(move || browser::launch(&settings, insecure, path.as_deref())).await?;
    Ok(match launch {
        Ok(l) => Ok((
            RunServer {
                name: s.name.clone(),
                kind: ServerKind::Stdio,
                command: Some(l.command),
                args: l.args,
                url: None,
                env: l.env,
                headers: Vec::new(),
                tools,
            },
            Vec::new(),
        )),
        Err(why) => Err((format!("the browser cannot start: {why}"), None)),
    })
}

/// A server's values from the keychain: its address with the query, its environment lines
/// and headers, and each secret value with where it came from.
struct ServerValues {
    url: Option<String>,
    env: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    lines: Vec<SecretLine>,
}

/// Reads a server's values from the keychain, or why they cannot be had (and how to fix it).
fn keychain_values(
    keychain: &Keychain,
    rec: &ServerRecord,
) -> Result<ServerValues, (String, Option<String>)> {
    // The address with its query, which the keychain keeps.
    let url = connect_url(keychain, rec).map_err(|e| (e.to_string(), None))?;
    let mut lines = Vec::new();
    let fix = format!("bosun mcp edit {}", rec.name);
    if let (Some(base), Some(full)) = (&rec.url, &url)
        && let Some(query) = full.strip_prefix(&format!("{base}?"))
    {
        lines.push(SecretLine {
            source: SecretSource::Keychain {
                key: bosun_mcp::address::query_key(rec.id),
                what: format!("the query of the MCP server `{}`'s address", rec.name),
                fix: format!("{fix} --url URL"),
                used_as: UsedAs::Query { url: base.clone() },
            },
            value: query.to_string(),
        });
    }
    let mut env = Vec::new();
    let mut headers = Vec::new();
    for (kind, names, out) in [
        (LineKind::Env, &rec.env_names, &mut env),
        (LineKind::Header, &rec.header_names, &mut headers),
    ] {
        for name in names {
            let key = kind.key(rec.id, name);
            match keychain.get(&key) {
                Ok(Some(v)) => {
                    let (what, used_as) = match kind {
                        LineKind::Env => ("environment line", UsedAs::ServerEnv),
                        LineKind::Header => ("header", UsedAs::Header { name: name.clone() }),
                    };
                    lines.push(SecretLine {
                        source: SecretSource::Keychain {
                            key,
                            what: format!("the MCP server `{}`'s {what} {name}", rec.name),
                            fix: fix.clone(),
                            used_as,
                        },
                        value: v.clone(),
                    });
                    out.push((name.clone(), v));
                }
                Ok(None) => {
                    return Err((
                        format!("a value is missing from the keychain ({name})"),
                        Some(format!("Set it with `bosun mcp edit {}`.", rec.name)),
                    ));
                }
                Err(e) => {
                    return Err((format!("the keychain could not be read ({e})"), None));
                }
            }
        }
    }
    Ok(ServerValues {
        url,
        env,
        headers,
        lines,
    })
}

/// Puts the token of a server bosun signs in to in the run's Authorization header (in place of
/// one from the keychain), or says why the server cannot be used (and how to fix it).
async fn bosun_token(
    auth: &AuthContext,
    s: &ServerRecord,
    agent: &AgentRecord,
    headers: &mut Vec<(String, String)>,
    lines: &mut Vec<SecretLine>,
) -> Result<(), (String, Option<String>)> {
    // A token good for the whole run: refreshed first when less than its time cap is left.
    let min_valid = agent
        .time_cap_ms
        .map(Duration::from_millis)
        .unwrap_or(Duration::ZERO);
    match bosun_auth::access(auth, s.id, min_valid, None).await {
        Ok(Access::Token(t)) => {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            lines.retain(|l| {
                !matches!(&l.source, SecretSource::Keychain { used_as: UsedAs::Header { name }, .. } if name.eq_ignore_ascii_case("authorization"))
            });
            headers.push(("Authorization".into(), format!("Bearer {t}")));
            lines.push(SecretLine {
                source: SecretSource::Token {
                    server: s.id,
                    name: s.name.clone(),
                    min_valid_ms: u64::try_from(min_valid.as_millis()).unwrap_or(u64::MAX),
                },
                value: t,
            });
        }
        Ok(Access::Dpop { .. }) => {
            // A CLI sends a fixed header; a DPoP-bound token needs a fresh proof on every
            // request, made with a key that never leaves bosund.
            return Err((
                format!(
                    "its sign-in is bound to bosun's DPoP key (RFC 9449), and {} cannot make a proof for each request",
                    agent.cli
                ),
                Some(format!(
                    "bosun's own looks use it: `bosun mcp tools {}`, `bosun mcp call {} TOOL`.",
                    s.name, s.name
                )),
            ));
        }
        Ok(Access::None) => {
            if s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("needs sign-in"))
            {
                return Err((
                    "not signed in".into(),
                    Some(format!("Sign in with `bosun mcp sign-in {}`.", s.name)),
                ));
            }
        }
        Err(bosun_auth::AuthError::NeedsSignIn { .. }) => {
            return Err((
                "signed out".into(),
                Some(format!(
                    "Sign in again with `bosun mcp sign-in {}`.",
                    s.name
                )),
            ));
        }
        Err(e) => {
            return Err((format!("its sign-in could not be refreshed ({e})"), None));
        }
    }
    Ok(())
}

/// A stdio server, or one reached by address (Streamable HTTP or the older HTTP+SSE transport)
/// that bosun signs in to, is given to the CLI as bosun's gateway: a command of the runner's
/// that reaches the run's own runner, which reaches the real server with its lines, address
/// and token (which stay in the runner) under the rules kept with the server. A server Claude
/// Code signs in to itself is given as it is.
fn through_gateway(
    server: RunServer,
    rec: &ServerRecord,
    agent: &AgentRecord,
) -> (RunServer, Option<GatewayServer>) {
    let reach = match server.kind {
        ServerKind::Stdio => Reach::Stdio {
            command: server.command.clone().unwrap_or_default(),
            args: server.args.clone(),
            env: server.env.clone(),
        },
        ServerKind::Http if rec.sign_in_by != SignInBy::ClaudeCode => Reach::Http {
            url: server.url.clone().unwrap_or_default(),
            headers: server.headers.clone(),
        },
        ServerKind::Sse if rec.sign_in_by != SignInBy::ClaudeCode => Reach::Sse {
            url: server.url.clone().unwrap_or_default(),
            headers: server.headers.clone(),
        },
        ServerKind::Http | ServerKind::Sse => return (server, None),
    };
    let mut roots = vec![agent.cwd.clone()];
    for r in &agent.workspace.roots {
        if !roots.contains(r) {
            roots.push(r.clone());
        }
    }
    let through = GatewayServer {
        name: server.name.clone(),
        reach,
        rules: rec.rules.clone(),
        roots,
        // The tools as the person approved them (`bosun_mcp::ledger`).
        pinned: rec.approved().map(|tools| {
            tools
                .iter()
                .map(|t| PinnedTool {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                })
                .collect()
        }),
        browser: rec.browser.is_some(),
    };
    let given = RunServer {
        kind: ServerKind::Stdio,
        command: Some(gateway::RUNNER_EXE.into()),
        args: vec![
            gateway::SHIM_ARG.into(),
            "--socket".into(),
            gateway::SOCKET.into(),
            server.name.clone(),
        ],
        url: None,
        env: Vec::new(),
        headers: Vec::new(),
        ..server
    };
    (given, Some(through))
}

/// A server Claude Code signs in to goes only to Claude Code runs (which keep their own
/// sign-ins); it is never left out of one for bosun's sign-in.
fn signed_in_for_run(
    agent: &AgentRecord,
    s: &ServerRecord,
) -> Result<(), (String, Option<String>)> {
    if s.sign_in_by == SignInBy::ClaudeCode && agent.cli != CliKind::Claude {
        return Err((
            format!(
                "Claude Code signs in to it, and this agent runs {}",
                agent.cli
            ),
            None,
        ));
    }
    Ok(())
}

/// The secret values a run is given: the agent's secret environment, and every environment
/// and header value of its servers (all of which come from the keychain, or are tokens) — a
/// header's credential also on its own (`Bearer abc`: `abc` too, as a server may echo it).
fn secret_values(
    agent_secrets: &[(String, String)],
    servers: &[RunServer],
    gateway: &[GatewayServer],
) -> Vec<String> {
    let mut out: Vec<String> = agent_secrets.iter().map(|(_, v)| v.clone()).collect();
    for s in servers {
        out.extend(redact::secret_values(&s.env, &s.headers, s.url.as_deref()));
    }
    for s in gateway {
        out.extend(match &s.reach {
            Reach::Stdio { env, .. } => redact::secret_values(env, &[], None),
            Reach::Http { url, headers } | Reach::Sse { url, headers } => {
                redact::secret_values(&[], headers, Some(url))
            }
        });
    }
    out.sort();
    out.dedup();
    out
}

fn read_agent_secrets(
    keychain: &Keychain,
    id: bosun_shared::AgentId,
    names: &[String],
) -> Result<Vec<(String, String)>, AgentsError> {
    let mut out = Vec::new();
    for name in names {
        match keychain.get(&agent_env_key(id, name)) {
            Ok(Some(v)) => out.push((name.clone(), v)),
            Ok(None) => {
                return Err(AgentsError::conflict(format!(
                    "the agent's secret {name} is missing from the keychain; set it again with `bosun agent edit AGENT --secret-env {name}` (the value is read from stdin)"
                )));
            }
            Err(e) => return Err(AgentsError::from(e)),
        }
    }
    Ok(out)
}
