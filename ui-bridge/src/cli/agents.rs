//! `bosun agent add|edit|show|list|remove|set|run|tools`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use bosun_protocol::agents::{
    AgentList, AgentParams, AgentRemove, AgentRun, AgentSet, AgentShow, AgentTools, AgentView,
    BuiltinToolsView, EditAgentParams,
};
use bosun_protocol::call::Call;
use bosun_protocol::mcp::SecretLine;
use bosun_shared::agents::{
    CliKind, MAX_INSTRUCTIONS, MAX_SECRET_VALUE, instructions_too_long, secret_too_long,
};
use bosun_shared::paths::StateDir;
use bosun_shared::size::read_at_most;
use bosun_shared::time::{TimeCap, format_duration};
use clap::{Args, Subcommand};

use super::logs::{FollowOptions, print_log};
use super::{connect, current_dir, output};

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Save a new agent: its CLI, instructions, permission mode, allowed commands, time cap
    Add(AddArgs),
    /// Change an agent (what is not given stays)
    Edit(EditArgs),
    /// Show an agent with its switches and what its last run found
    Show(NameArgs),
    /// List the agents
    List(ListArgs),
    /// Remove an agent (and its secrets from the keychain)
    Remove(NameArgs),
    /// Switch what the agent may use: mcp.<server>=on|off, mcp.<server>.<tool>=on|off,
    /// web.search=on|off, web.fetch=off|any|<domains>, browser=on|off,
    /// browser.insecure-certs=on|off, skills=on|off, builtin.<tool>=on|off, roots=DIR,…|none,
    /// workspace=roots|unrestricted, approval=ask|read-only|skip, and tool verdicts
    Set(SetArgs),
    /// Start a run of the agent with a prompt, and print its id
    Run(RunArgs),
    /// The agent's CLI's own tools, by group
    Tools(ToolsArgs),
}

/// What `add` and `edit` share.
#[derive(Args, Debug)]
pub struct SetupArgs {
    /// `worker` (the default), `lead`, or a role of yours such as QA
    #[arg(long)]
    role: Option<String>,
    /// What the agent is told before each task
    #[arg(long, conflicts_with = "instructions_file")]
    instructions: Option<String>,
    /// Read the instructions from this file
    #[arg(long, value_name = "PATH")]
    instructions_file: Option<PathBuf>,
    /// The CLI's permission mode (claude: default, acceptEdits, auto, dontAsk, plan,
    /// bypassPermissions; codex: read-only, workspace-write, danger-full-access; gemini:
    /// default, auto_edit, plan, yolo)
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<String>,
    /// A command the agent may run without asking, such as 'Bash(git *)' (repeatable)
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// Stop each run by its ladder after this long, such as 30m or 2h ("none" for no cap)
    #[arg(long, value_name = "DURATION")]
    time_cap: Option<String>,
    /// Keep at most this much of each run's output, such as 1G or 500M ("none" for no cap)
    #[arg(long, value_name = "SIZE")]
    max_output: Option<String>,
    /// The folder its runs work in (default for a new agent: the current one)
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The model, such as sonnet
    #[arg(long)]
    model: Option<String>,
    /// Codex only: a model or provider setting, KEY=VALUE in TOML, such as
    /// model_provider="ollama" (repeatable)
    #[arg(long = "codex-config", value_name = "KEY=VALUE")]
    codex_config: Vec<String>,
    /// A plain environment line for its runs, KEY=VALUE (repeatable)
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A secret environment line, such as an API key, kept in the keychain; the value is read
    /// from stdin (one name: all of stdin; several: KEY=VALUE lines) or asked on a terminal
    #[arg(long = "secret-env", value_name = "KEY")]
    secret_env: Vec<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    name: String,
    /// Which CLI its runs are: claude, codex, gemini, or command (a program of yours)
    #[arg(long)]
    cli: String,
    #[command(flatten)]
    setup: SetupArgs,
    /// A command agent's program and arguments (the prompt is in BOSUN_PROMPT)
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct EditArgs {
    #[arg(add = super::complete::agents())]
    name: String,
    /// A new name
    #[arg(long = "name", value_name = "NEW")]
    new_name: Option<String>,
    #[arg(long)]
    cli: Option<String>,
    #[command(flatten)]
    setup: SetupArgs,
    /// Take away every allowed command
    #[arg(long, conflicts_with = "allow")]
    no_allow: bool,
    /// The board starts no run of it until --unpause
    #[arg(long, conflicts_with = "unpause")]
    pause: bool,
    #[arg(long)]
    unpause: bool,
    /// Remove an environment line, plain or secret (repeatable)
    #[arg(long, value_name = "KEY")]
    remove_env: Vec<String>,
    /// A new program and arguments for a command agent
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct NameArgs {
    #[arg(add = super::complete::agents())]
    name: String,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct SetArgs {
    #[arg(add = super::complete::agents())]
    name: String,
    /// KEY=VALUE switches, all applied or none
    #[arg(required = true, value_name = "KEY=VALUE")]
    settings: Vec<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[arg(add = super::complete::agents())]
    name: String,
    /// What the agent should do
    prompt: String,
    /// Stream the run's log until it ends, and exit with the run's exit status
    #[arg(long, short = 'f')]
    follow: bool,
    /// A card (of no project) the run is for: it counts toward the card's budget and usage
    #[arg(long)]
    #[arg(add = super::complete::cards())]
    card: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ToolsArgs {
    #[arg(add = super::complete::agents())]
    name: String,
    /// Ask the installed Claude Code for its list now (no model call, nothing spent)
    #[arg(long)]
    ask: bool,
    #[arg(long)]
    json: bool,
}

pub async fn run(dirs: &StateDir, cmd: AgentCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AgentCommand::Add(a) => add(dirs, a).await,
        AgentCommand::Edit(a) => edit(dirs, a).await,
        AgentCommand::Show(a) => {
            let agent = agent_request(dirs, AgentShow { agent: a.name }).await?;
            if a.json {
                output::print_json(&agent)?;
            } else {
                print_agent(&agent);
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::List(a) => {
            let mut client = connect(dirs).await?;
            let agents = client.call(AgentList).await?;
            if a.json {
                output::print_json(&agents)?;
            } else {
                print_agents(&agents);
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Remove(a) => {
            let agent = agent_request(dirs, AgentRemove { agent: a.name }).await?;
            done(a.json, &agent, "removed")
        }
        AgentCommand::Set(a) => {
            let agent = agent_request(
                dirs,
                AgentSet {
                    agent: a.name,
                    settings: a.settings,
                },
            )
            .await?;
            if a.json {
                output::print_json(&agent)?;
            } else {
                outln!("{} switched", agent.name);
                print_switches(&agent);
                print_warnings(&agent);
            }
            Ok(ExitCode::SUCCESS)
        }
        AgentCommand::Run(a) => start(dirs, a).await,
        AgentCommand::Tools(a) => {
            let mut client = connect(dirs).await?;
            let view = client
                .call(AgentTools {
                    agent: a.name,
                    ask: a.ask,
                })
                .await?;
            if a.json {
                output::print_json(&view)?;
            } else {
                print_tools(&view);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Asks one request that answers with the agent.
async fn agent_request<C: Call<Reply = AgentView>>(
    dirs: &StateDir,
    call: C,
) -> anyhow::Result<AgentView> {
    let mut client = connect(dirs).await?;
    Ok(client.call(call).await?)
}

fn done(json: bool, agent: &AgentView, what: &str) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(agent)?;
    } else {
        outln!("{} {what}", agent.name);
        print_warnings(agent);
    }
    Ok(ExitCode::SUCCESS)
}

/// The `KEY=VALUE` lines of a repeatable flag, read by the one reader of such lists: a line
/// without `=` or without a key, or a key given twice, is refused naming the flag.
fn key_values(args: &[String], flag: &str) -> anyhow::Result<Vec<(String, String)>> {
    let pairs = bosun_shared::settings::parse(args).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
    Ok(pairs
        .iter()
        .map(|p| (p.key.to_string(), p.value.to_string()))
        .collect())
}

/// The values of `--secret-env` names: one name takes all of stdin (or is asked on a
/// terminal), several take `KEY=VALUE` lines.
fn secret_values(names: &[String]) -> anyhow::Result<Vec<SecretLine>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return names
            .iter()
            .map(|n| {
                let value = rpassword::prompt_password(format!("value of {n} (not shown): "))?;
                Ok(SecretLine {
                    name: n.clone(),
                    value,
                })
            })
            .collect();
    }
    // Every value may be as long as the rule allows, with its name and `=` on its line.
    let limit = names
        .iter()
        .map(|n| n.len() + 2 + MAX_SECRET_VALUE)
        .sum::<usize>();
    let Some(text) = read_at_most(stdin.lock(), limit)? else {
        anyhow::bail!(
            "stdin holds more than the --secret-env values can: {}",
            secret_too_long("each")
        );
    };
    if let [name] = names {
        let value = text.strip_suffix('\n').unwrap_or(&text);
        let value = value.strip_suffix('\r').unwrap_or(value);
        if value.is_empty() {
            anyhow::bail!(
                "no value for {name} on stdin; pipe it in, such as: printenv {name} | bosun agent … --secret-env {name}"
            );
        }
        if value.len() > MAX_SECRET_VALUE {
            anyhow::bail!("{}", secret_too_long(name));
        }
        return Ok(vec![SecretLine {
            name: name.clone(),
            value: value.to_string(),
        }]);
    }
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            anyhow::bail!(
                "with several --secret-env names, stdin holds one KEY=VALUE line each, and a line has no `=` (its text is not shown, as it may be a secret)"
            );
        };
        let k = k.trim();
        if !names.iter().any(|n| n == k) {
            anyhow::bail!("stdin has a value for {k}, which is not one of the --secret-env names");
        }
        if v.len() > MAX_SECRET_VALUE {
            anyhow::bail!("{}", secret_too_long(k));
        }
        out.push(SecretLine {
            name: k.to_string(),
            value: v.to_string(),
        });
    }
    if let Some(missing) = names.iter().find(|n| !out.iter().any(|l| l.name == **n)) {
        anyhow::bail!("stdin has no line {missing}=VALUE");
    }
    Ok(out)
}

/// `--instructions TEXT` or `--instructions-file FILE`, held to the instructions' size rule
/// before anything is sent: a file is read no further than one byte past it.
fn instructions(s: &SetupArgs) -> anyhow::Result<Option<String>> {
    match (&s.instructions, &s.instructions_file) {
        (Some(t), _) if t.len() > MAX_INSTRUCTIONS => {
            anyhow::bail!("{}", instructions_too_long("--instructions"))
        }
        (Some(t), _) => Ok(Some(t.clone())),
        (None, Some(p)) => {
            let could_not =
                |e| anyhow::anyhow!("could not read the instructions from {}: {e}", p.display());
            let file = std::fs::File::open(p).map_err(could_not)?;
            match read_at_most(file, MAX_INSTRUCTIONS).map_err(could_not)? {
                Some(text) => Ok(Some(text)),
                None => anyhow::bail!("{}", instructions_too_long(&p.display().to_string())),
            }
        }
        (None, None) => Ok(None),
    }
}

/// `--time-cap`: a duration, or `none` (0: no cap).
fn time_cap(s: &SetupArgs) -> anyhow::Result<Option<u64>> {
    match s.time_cap.as_deref() {
        None => Ok(None),
        Some("none" | "off") => Ok(Some(0)),
        Some(t) => TimeCap::parse(t)
            .map(|cap| Some(cap.as_millis()))
            .map_err(|e| anyhow::anyhow!("--time-cap: {e}")),
    }
}

/// `--max-output`: a size, or `none` (0: no cap).
fn max_output(s: &SetupArgs) -> anyhow::Result<Option<u64>> {
    match s.max_output.as_deref() {
        None => Ok(None),
        Some("none" | "off") => Ok(Some(0)),
        Some(t) => {
            let n = bosun_shared::size::parse_size(t)
                .map_err(|e| anyhow::anyhow!("--max-output: {e}"))?;
            if n == 0 {
                anyhow::bail!(
                    "--max-output: an output cap must be more than zero bytes (or `none`)"
                );
            }
            Ok(Some(n))
        }
    }
}

fn absolute(p: PathBuf) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p
    } else {
        current_dir()?.join(p)
    })
}

async fn add(dirs: &StateDir, a: AddArgs) -> anyhow::Result<ExitCode> {
    let cli: CliKind = a.cli.parse()?;
    let s = &a.setup;
    let params = AgentParams {
        name: a.name,
        role: s.role.clone(),
        cli,
        instructions: instructions(s)?,
        permission_mode: s.permission_mode.clone(),
        allowed_commands: s.allow.clone(),
        time_cap_ms: time_cap(s)?.filter(|t| *t > 0),
        max_output: max_output(s)?.filter(|m| *m > 0),
        cwd: match s.cwd.clone() {
            Some(d) => absolute(d)?,
            None => current_dir()?,
        },
        command: a.command,
        env: key_values(&s.env, "--env")?,
        secret_env: secret_values(&s.secret_env)?,
        model: s.model.clone(),
        codex_config: key_values(&s.codex_config, "--codex-config")?,
    };
    let agent = agent_request(dirs, params).await?;
    done(s.json, &agent, "added")
}

async fn edit(dirs: &StateDir, a: EditArgs) -> anyhow::Result<ExitCode> {
    let s = &a.setup;
    let cli = a
        .cli
        .as_deref()
        .map(|c| c.parse::<CliKind>().map_err(|e| anyhow::anyhow!(e)))
        .transpose()?;
    let allowed_commands = if a.no_allow {
        Some(Vec::new())
    } else if s.allow.is_empty() {
        None
    } else {
        Some(s.allow.clone())
    };
    let codex_config = if s.codex_config.is_empty() {
        None
    } else {
        Some(key_values(&s.codex_config, "--codex-config")?)
    };
    let params = EditAgentParams {
        agent: a.name,
        name: a.new_name,
        role: s.role.clone(),
        cli,
        instructions: instructions(s)?,
        permission_mode: s.permission_mode.clone(),
        allowed_commands,
        time_cap_ms: time_cap(s)?,
        max_output: max_output(s)?,
        cwd: s.cwd.clone().map(absolute).transpose()?,
        command: if a.command.is_empty() {
            None
        } else {
            Some(a.command)
        },
        set_env: key_values(&s.env, "--env")?,
        remove_env: Vec::new(),
        set_secret_env: secret_values(&s.secret_env)?,
        remove_secret_env: Vec::new(),
        model: s.model.clone(),
        codex_config,
        paused: (a.pause || a.unpause).then_some(a.pause),
    };
    // A name to remove may be a plain or a secret line: the daemon knows which.
    let mut client = connect(dirs).await?;
    let current = client
        .call(AgentShow {
            agent: params.agent.clone(),
        })
        .await?;
    let mut params = params;
    for name in a.remove_env {
        if current.secret_env.iter().any(|l| l.name == name) {
            params.remove_secret_env.push(name);
        } else {
            params.remove_env.push(name);
        }
    }
    let agent = client.call(params).await?;
    done(s.json, &agent, "changed")
}

async fn start(dirs: &StateDir, a: RunArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let run = client
        .call(AgentRun {
            agent: a.name,
            prompt: a.prompt,
            card: a.card,
        })
        .await?;
    if !a.follow {
        if a.json {
            output::print_json(&run)?;
        } else {
            outln!("{}", run.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if a.json {
        output::print_json(&run)?;
    } else if output::stderr_is_terminal() {
        errln!(
            "bosun: run {} started; Ctrl-C stops following, not the run",
            run.short_id
        );
    }
    let opts = FollowOptions {
        from_seq: 1,
        follow: true,
        stream: None,
        timestamps: false,
        json: a.json,
    };
    let end = print_log(dirs, &mut client, &run.id.to_string(), opts).await?;
    if !a.json {
        for p in output::server_problems(&end) {
            errln!("bosun: {p}");
        }
    }
    if !a.json && end.outcome != Some(bosun_shared::run::Outcome::Succeeded) {
        errln!("bosun: run {} {}", end.short_id, output::state_words(&end));
    }
    Ok(output::exit_code_of(&end))
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn print_agents(agents: &[AgentView]) {
    if agents.is_empty() {
        outln!("no agents; add one with `bosun agent add NAME --cli claude`");
        return;
    }
    for a in agents {
        let servers: Vec<&str> = a
            .switches
            .mcp
            .iter()
            .filter(|s| s.on)
            .map(|s| s.server.as_str())
            .collect();
        outln!(
            "{:<20} {:<8} {:<8} {}  mcp: {}",
            a.name,
            a.cli.to_string(),
            a.role,
            a.cwd.display(),
            if servers.is_empty() {
                "none".to_string()
            } else {
                servers.join(", ")
            }
        );
    }
}

fn print_agent(a: &AgentView) {
    let row = |k: &str, v: String| outln!("{k:<18}{v}");
    row("name", a.name.clone());
    row("id", a.id.to_string());
    row("role", a.role.clone());
    row("cli", a.cli.to_string());
    if let Some(m) = &a.model {
        row("model", m.clone());
    }
    row("folder", a.cwd.display().to_string());
    if !a.command.is_empty() {
        row("command", a.command.join(" "));
    }
    row(
        "permission mode",
        a.permission_mode
            .clone()
            .unwrap_or_else(|| "the CLI's default".into()),
    );
    row(
        "allowed commands",
        if a.allowed_commands.is_empty() {
            "none".into()
        } else {
            a.allowed_commands.join(", ")
        },
    );
    row(
        "time cap",
        a.time_cap_ms
            .map(|t| format_duration(std::time::Duration::from_millis(t)))
            .unwrap_or_else(|| "none".into()),
    );
    if let Some(m) = a.max_output {
        row("output cap", format!("{m} bytes"));
    }
    if !a.placement.is_local() {
        row("placement", a.placement.to_string());
    }
    for (k, v) in &a.codex_config {
        row("codex config", format!("{k}={v}"));
    }
    for (k, _) in &a.env {
        row("env", k.clone());
    }
    for l in &a.secret_env {
        row(
            "secret env",
            format!(
                "{} ({})",
                l.name,
                if l.saved {
                    "saved"
                } else {
                    "missing from the keychain"
                }
            ),
        );
    }
    if !a.instructions.is_empty() {
        let first = a.instructions.lines().next().unwrap_or_default();
        row(
            "instructions",
            format!(
                "{first}{}",
                if a.instructions.lines().count() > 1 {
                    " …"
                } else {
                    ""
                }
            ),
        );
    }
    print_switches(a);
    print_approvals(a);
    if let Some(l) = &a.last_run {
        outln!();
        outln!(
            "last run          {}",
            l.run.map(|r| r.short()).unwrap_or_else(|| "-".into())
        );
        for (server, state) in &l.servers {
            outln!("  {server:<16}{state}");
        }
        if !l.tools_seen.is_empty() {
            outln!("  {} tools seen", l.tools_seen.len());
        }
    }
    print_warnings(a);
}

fn print_approvals(a: &AgentView) {
    let ap = &a.approvals;
    outln!();
    let mode = match ap.mode.as_str() {
        "ask" => "ask before every action",
        "read-only" => "run read-only actions without asking",
        "skip" => "skip approvals (irreversible writes, commands and unknown tools still ask)",
        other => other,
    };
    outln!("approval          {} ({mode})", ap.mode);
    outln!(
        "approval wait     {}, then denied{}",
        format_duration(std::time::Duration::from_millis(ap.wait_ms)),
        if ap.wait_for_person {
            "; runs of the board and the lead wait for you too"
        } else {
            ""
        }
    );
    for (tool, verdict) in &ap.verdicts {
        let words = match verdict.as_str() {
            "allow" => "always allowed",
            "ask" => "asks every time",
            "block" => "blocked",
            other => other,
        };
        outln!("  {tool:<30}{words}");
    }
    if let Some(c) = &a.carried_over {
        outln!(
            "  ({c}; change them with `bosun agent set {} KEY=ask`)",
            a.name
        );
    }
    if !a.budget.is_empty() {
        outln!(
            "budget: {}; reached, a run's next tool call waits for you (allow more, or stop it)",
            a.budget.words()
        );
    }
}

fn print_switches(a: &AgentView) {
    let s = &a.switches;
    outln!();
    outln!("web search        {}", on_off(s.web_search));
    outln!("fetch web pages   {}", s.web_fetch);
    outln!(
        "browser           {}{}",
        on_off(s.browser),
        if s.browser_insecure_certs {
            " (accepts self-signed certificates)"
        } else {
            ""
        }
    );
    outln!("skills            {}", on_off(s.skills));
    for tool in &s.builtins {
        outln!("built-in {tool:<9}on (not in bosun's catalog: asks before each use)");
    }
    outln!(
        "workspace         {}",
        super::output::workspace_words(&a.cwd, &a.workspace)
    );
    for server in &s.mcp {
        if server.server == "chrome-devtools" && !server.on {
            continue;
        }
        let mut line = format!("mcp {:<14}{}", server.server, on_off(server.on));
        match server.sign_in.as_deref() {
            Some("signed in") => line.push_str("  (signed in: its tools act as you there)"),
            Some(state) => line.push_str(&format!("  ({state})")),
            None => {}
        }
        if let Some(state) = &server.last_run_state {
            line.push_str(&format!("  (last run: {state})"));
        }
        outln!("{line}");
        if server.on {
            if !server.listed {
                outln!("    tools not listed yet: all of them are on");
            }
            for t in &server.tools {
                outln!(
                    "    {:<32}{:<4} {} risk{}",
                    t.name,
                    on_off(t.on),
                    t.risk,
                    if t.seen_in_last_run {
                        ", seen in the last run"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}

fn print_warnings(a: &AgentView) {
    for w in &a.warnings {
        errln!("bosun: warning: {w}");
    }
}

fn print_tools(v: &BuiltinToolsView) {
    outln!("{} ({}): {}", v.agent, v.cli, v.source);
    let mut group = "";
    for t in &v.tools {
        if t.group != group {
            group = &t.group;
            outln!();
            outln!("{group}");
        }
        outln!(
            "  {:<22}{:<8}{}{}",
            t.name,
            t.risk
                .map(|r| r.to_string())
                .unwrap_or_else(|| "unknown".into()),
            t.state,
            if t.seen_in_last_run { " · seen" } else { "" }
        );
        if !t.what.is_empty() {
            outln!("  {:<22}{:<8}{}", "", "", t.what);
        }
    }
}
