//! `bosun mcp …`: the MCP server registry, List tools, inspect, call and import.
//!
//! Secret values (environment and header lines) are taken, by preference, from stdin
//! (`--env-from-stdin`) or from a prompt that does not echo, because a command line is visible
//! to every process on the machine. `-e KEY=VALUE` works too, as with `claude mcp add`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bosun_shared::agents::{MAX_SECRET_VALUE, secret_too_long};
use bosun_shared::gateway::{AskPolicy, Capability, ToolGlob};
use bosun_shared::paths::StateDir;
use bosun_shared::protocol::ErrorCode;
use bosun_shared::protocol::auth::{
    McpSignIn, McpSignInCancel, McpSignInFinish, McpSignInMachine, McpSignOut, SignInStarted,
};
use bosun_shared::protocol::call::Call;
use bosun_shared::protocol::mcp::{
    AddServerParams, CallView, EditServerParams, GatewayEdit, ImportCandidateView,
    ImportCandidates, ImportParams, ImportPick, ImportScan, ImportStatus, Imported, InspectView,
    McpApprove, McpCall, McpInspect, McpList, McpRemove, McpRename, McpShow, McpTools,
    PendingToolView, SecretLine, SecretValue, ServerKind, ServerView, SignInBy, ToolListing,
};
use bosun_shared::size::{format_size, read_at_most};
use bosun_ui::{Client, ClientError};
use clap::{Args, Subcommand, ValueEnum};

use super::{connect, output};

#[derive(Subcommand, Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "a command line is parsed once per process: the edit's many flags cost nothing"
)]
pub enum McpCommand {
    /// Add a server: a command (`-- CMD ARGS…`) or an address (`--url URL`, or the address as
    /// the second argument with --transport http|sse)
    Add(AddArgs),
    /// List the servers
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one server (its lines by name: values are never shown)
    Show {
        name: String,
        /// Also print the tools found by the last listing
        #[arg(long)]
        tools: bool,
        #[arg(long)]
        json: bool,
    },
    /// Change a server: its command or address, or its environment and header lines
    Edit(EditArgs),
    /// Give a server another name (its id, secrets and listing stay)
    Rename {
        #[arg(add = super::complete::servers())]
        name: String,
        new_name: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a server and its secrets
    Remove {
        #[arg(add = super::complete::servers())]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Start (or call) the server, list its tools with what each may do, and stop it
    Tools {
        #[arg(add = super::complete::servers())]
        name: String,
        /// Show the last listing kept, without starting the server
        #[arg(long)]
        cached: bool,
        #[arg(long)]
        json: bool,
    },
    /// Test the connection: protocol, identity, capabilities, counts and timings
    Inspect {
        #[arg(add = super::complete::servers())]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Let runs have tools that are new or changed since you approved the server's tools, or
    /// capabilities it advertises beyond tools and prompts (`bosun mcp show` lists what waits)
    Approve {
        #[arg(add = super::complete::servers())]
        name: String,
        /// Tools of the last listing, by name, as they are now
        tools: Vec<String>,
        /// Every tool of the last listing, as it is now
        #[arg(long, conflicts_with = "tools")]
        all_tools: bool,
        /// A capability: resources, completions, logging (repeatable)
        #[arg(long = "capability", value_name = "NAME", value_parser = Capability::parse)]
        capabilities: Vec<Capability>,
        #[arg(long)]
        json: bool,
    },
    /// Call one tool by hand
    Call {
        #[arg(add = super::complete::servers())]
        name: String,
        tool: String,
        /// The tool's arguments, a JSON object
        #[arg(long, default_value = "{}")]
        args: String,
        #[arg(long)]
        json: bool,
    },
    /// Import servers from Claude Code, Codex and Gemini CLI (read-only; shows them when none is
    /// picked)
    Import(ImportArgs),
    /// Sign in to a server reached by address (OAuth): opens the sign-in page in your browser
    /// ($BROWSER, else the system opener) and waits for it (10 minutes at most); with
    /// --client-credentials, signs bosun in as a machine instead, with no browser
    SignIn {
        #[arg(add = super::complete::servers())]
        name: String,
        /// Print the page's address instead of opening a browser
        #[arg(long)]
        no_browser: bool,
        /// Drop the client bosun registered at the server's authorization server before and
        /// register a new one (when its sign-in page says the client or app is unknown)
        #[arg(long, conflicts_with = "client_credentials")]
        new_client: bool,
        #[command(flatten)]
        machine: MachineArgs,
        #[arg(long)]
        json: bool,
    },
    /// Sign out of a server: revoke its token where the server offers that, and forget it
    SignOut {
        #[arg(add = super::complete::servers())]
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// A machine's sign-in (OAuth client credentials), for servers that sign in programs rather
/// than people.
#[derive(Args, Debug)]
pub struct MachineArgs {
    /// Sign in as a machine with the client's own credentials (OAuth client credentials): no
    /// browser; needs --client-id and --client-secret-stdin or --private-key-file
    #[arg(long, requires = "client_id")]
    client_credentials: bool,
    /// The client id the service gave the machine
    #[arg(long, value_name = "ID", requires = "client_credentials")]
    client_id: Option<String>,
    /// Read the client's secret from stdin (client_secret_basic; kept in the keychain)
    #[arg(
        long,
        requires = "client_credentials",
        conflicts_with = "private_key_file"
    )]
    client_secret_stdin: bool,
    /// The client's private key, a PEM file (P-256 EC or RSA; private_key_jwt): read once into
    /// the keychain, never again from the file
    #[arg(long, value_name = "PATH", requires = "client_credentials")]
    private_key_file: Option<PathBuf>,
}

impl MachineArgs {
    /// The request, with the secret from stdin or the key from its file; `None` without
    /// --client-credentials.
    fn request(&self, name: &str) -> anyhow::Result<Option<McpSignInMachine>> {
        if !self.client_credentials {
            return Ok(None);
        }
        let client_secret = if self.client_secret_stdin {
            Some(client_secret_from_stdin()?)
        } else {
            None
        };
        let private_key = match &self.private_key_file {
            Some(path) => {
                // The error names the file, never what is in it.
                let could_not = |e| {
                    anyhow::anyhow!(
                        "could not read the private key file {}: {e}",
                        path.display()
                    )
                };
                let file = std::fs::File::open(path).map_err(could_not)?;
                let Some(text) = read_at_most(file, MAX_SECRET_VALUE).map_err(could_not)? else {
                    anyhow::bail!(
                        "{}",
                        secret_too_long(&format!("the private key file {}", path.display()))
                    );
                };
                Some(SecretValue(text))
            }
            None => None,
        };
        if client_secret.is_none() && private_key.is_none() {
            anyhow::bail!(
                "--client-credentials needs the client's secret (--client-secret-stdin) or its private key (--private-key-file PATH)"
            );
        }
        Ok(Some(McpSignInMachine {
            server: name.to_string(),
            client_id: self.client_id.clone().unwrap_or_default(),
            client_secret,
            private_key,
        }))
    }
}

/// The sign-in options `add` and `edit` share.
#[derive(Args, Debug)]
pub struct SignInArgs {
    /// A client id from the service's developer settings, for a server that takes no
    /// registration ("" removes it)
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// Read the client id's secret from stdin (kept in the keychain)
    #[arg(long)]
    client_secret_stdin: bool,
    /// The loopback port the sign-in's answer comes back to (for a client id registered with a
    /// fixed redirect address; 0: any free port)
    #[arg(long, value_name = "PORT")]
    callback_port: Option<u16>,
    /// Who signs in: bosun, or claude-code (for services that let only listed apps register;
    /// Claude Code then signs in with its own sign-ins)
    #[arg(long, value_enum, value_name = "WHO")]
    sign_in_by: Option<SignInByArg>,
    /// The https:// address where you publish bosun's client metadata document: bosun's
    /// client id wherever the authorization server takes such documents, instead of
    /// registering ("" removes it)
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SignInByArg {
    Bosun,
    ClaudeCode,
}

impl From<SignInByArg> for SignInBy {
    fn from(a: SignInByArg) -> Self {
        match a {
            SignInByArg::Bosun => SignInBy::Bosun,
            SignInByArg::ClaudeCode => SignInBy::ClaudeCode,
        }
    }
}

impl SignInArgs {
    /// The client secret, read from stdin when asked for.
    fn secret(&self) -> anyhow::Result<Option<SecretValue>> {
        if !self.client_secret_stdin {
            return Ok(None);
        }
        client_secret_from_stdin().map(Some)
    }
}

/// `--client-secret-stdin`: the secret is all of stdin but its last line end, read no further
/// than one byte past the secret values' rule.
fn client_secret_from_stdin() -> anyhow::Result<SecretValue> {
    // Room for a line end after a value of the most bytes allowed.
    let Some(text) = read_at_most(std::io::stdin().lock(), MAX_SECRET_VALUE + 2)? else {
        anyhow::bail!(
            "--client-secret-stdin: {}",
            secret_too_long("the client secret")
        );
    };
    let value = text.trim_end_matches(['\n', '\r']).to_string();
    if value.is_empty() {
        anyhow::bail!("--client-secret-stdin: stdin was empty; pipe the secret in");
    }
    if value.len() > MAX_SECRET_VALUE {
        anyhow::bail!(
            "--client-secret-stdin: {}",
            secret_too_long("the client secret")
        );
    }
    Ok(SecretValue(value))
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TransportArg {
    Stdio,
    Http,
    Sse,
}

impl From<TransportArg> for ServerKind {
    fn from(t: TransportArg) -> Self {
        match t {
            TransportArg::Stdio => ServerKind::Stdio,
            TransportArg::Http => ServerKind::Http,
            TransportArg::Sse => ServerKind::Sse,
        }
    }
}

#[derive(Args, Debug)]
pub struct AddArgs {
    name: String,
    /// With --transport http or sse: the address (or use --url)
    url_arg: Option<String>,
    /// How the server is reached (default: stdio with a command, http with an address)
    #[arg(long, short = 't', value_enum)]
    transport: Option<TransportArg>,
    /// The server's address (its query, which often holds a key, is kept in the keychain and
    /// shown as ?…; a user name or password in it is refused: give a header line instead)
    #[arg(long)]
    url: Option<String>,
    /// Let plain http:// reach another machine (over a network you trust); without it plain
    /// http is for this machine only
    #[arg(long)]
    allow_http: bool,
    /// An environment line, KEY=VALUE, or KEY alone to be asked for the value (repeatable)
    #[arg(long = "env", short = 'e', value_name = "KEY[=VALUE]")]
    env: Vec<String>,
    /// A header line, 'Name: value', or Name alone to be asked for the value (repeatable)
    #[arg(long = "header", short = 'H', value_name = "NAME[: VALUE]")]
    headers: Vec<String>,
    /// Read lines from stdin: KEY=VALUE for the environment, 'Name: value' for headers
    #[arg(long, alias = "values-from-stdin")]
    env_from_stdin: bool,
    #[command(flatten)]
    sign_in: SignInArgs,
    #[arg(long)]
    json: bool,
    /// The command and its arguments
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct EditArgs {
    #[arg(add = super::complete::servers())]
    name: String,
    #[arg(long, short = 't', value_enum)]
    transport: Option<TransportArg>,
    /// A new address (its query is kept in the keychain and shown as ?…)
    #[arg(long)]
    url: Option<String>,
    /// Let plain http:// reach another machine (over a network you trust)
    #[arg(long, conflicts_with = "no_allow_http")]
    allow_http: bool,
    /// Plain http:// may reach this machine only again
    #[arg(long)]
    no_allow_http: bool,
    /// Add an environment line or replace its value: KEY=VALUE, or KEY to be asked
    #[arg(long = "env", short = 'e', value_name = "KEY[=VALUE]")]
    env: Vec<String>,
    /// Remove an environment line (and its value from the keychain)
    #[arg(long, value_name = "KEY")]
    remove_env: Vec<String>,
    /// Add a header line or replace its value: 'Name: value', or Name to be asked
    #[arg(long = "header", short = 'H', value_name = "NAME[: VALUE]")]
    headers: Vec<String>,
    /// Remove a header line (and its value from the keychain)
    #[arg(long, value_name = "NAME")]
    remove_header: Vec<String>,
    /// Read lines from stdin: KEY=VALUE for the environment, 'Name: value' for headers
    #[arg(long, alias = "values-from-stdin")]
    env_from_stdin: bool,
    /// The built-in browser (chrome-devtools) only: the exact chrome-devtools-mcp version
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
    /// The built-in browser only: the browser program (Google Chrome or Chromium; "" to let
    /// bosun find one)
    #[arg(long, value_name = "PATH")]
    browser: Option<String>,
    #[command(flatten)]
    sign_in: SignInArgs,
    #[command(flatten)]
    gateway: GatewayArgs,
    #[arg(long)]
    json: bool,
    /// A new command and arguments (replaces both)
    #[arg(last = true, value_name = "CMD ARGS")]
    command: Vec<String>,
}

/// What bosun's gateway holds a stdio server to in every run.
#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// Its results reach the model as they are, not framed as untrusted content
    #[arg(long, conflicts_with = "untrusted")]
    trusted: bool,
    /// Its results reach the model framed as untrusted content (the default)
    #[arg(long)]
    untrusted: bool,
    /// Offer and allow only the tools matching these patterns (`*`, `?`; repeatable; replaces
    /// the list; "" clears it: every tool)
    #[arg(long = "allow-tool", value_name = "PATTERN")]
    allow_tools: Vec<String>,
    /// Never offer nor allow the tools matching these patterns, e.g. 'delete_*' (repeatable;
    /// replaces the list; "" clears it). Deny wins over allow
    #[arg(long = "deny-tool", value_name = "PATTERN")]
    deny_tools: Vec<String>,
    /// How long a call may take before it is cancelled: 30s, 2m (default 60s)
    #[arg(long, value_name = "DURATION")]
    call_deadline: Option<String>,
    /// Text results longer than this many characters reach the model as head and tail
    /// (default 8192)
    #[arg(long, value_name = "CHARS")]
    max_result: Option<u64>,
    /// The capabilities runs get, comma-separated: tools, prompts, resources, completions,
    /// logging (replaces them; default tools,prompts)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Capability::parse)]
    capabilities: Option<Vec<Capability>>,
    /// What becomes of the server's requests for the person's input (an elicitation form):
    /// deny (the default) or ask (each waits in the inbox for the person to fill it in)
    #[arg(long, value_name = "POLICY", value_parser = AskPolicy::parse)]
    elicitation: Option<AskPolicy>,
    /// What becomes of the server's requests for a message of the model (sampling): deny
    /// (the default), ask (each waits in the inbox; once allowed, the run's CLI writes it) or
    /// allow (the run's CLI writes it without asking, within --sampling-max-tokens)
    #[arg(long, value_name = "POLICY", value_parser = AskPolicy::parse)]
    sampling: Option<AskPolicy>,
    /// The most tokens a server's request for a message may ask for (default 1000); one that
    /// asks for more is refused
    #[arg(long, value_name = "TOKENS")]
    sampling_max_tokens: Option<u64>,
}

impl GatewayArgs {
    fn edit(self) -> anyhow::Result<GatewayEdit> {
        let globs = |v: Vec<String>| -> anyhow::Result<Option<Vec<ToolGlob>>> {
            if v.is_empty() {
                return Ok(None);
            }
            if v.len() == 1 && v[0].is_empty() {
                return Ok(Some(Vec::new()));
            }
            v.iter()
                .map(|g| ToolGlob::parse(g).map_err(anyhow::Error::msg))
                .collect::<anyhow::Result<Vec<_>>>()
                .map(Some)
        };
        let deadline_ms = match self.call_deadline {
            Some(d) => {
                let d = bosun_shared::time::parse_duration(&d)
                    .map_err(|e| anyhow::anyhow!("--call-deadline: {e}"))?;
                Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            }
            None => None,
        };
        Ok(GatewayEdit {
            trusted: match (self.trusted, self.untrusted) {
                (true, _) => Some(true),
                (false, true) => Some(false),
                (false, false) => None,
            },
            allow_tools: globs(self.allow_tools)?,
            deny_tools: globs(self.deny_tools)?,
            deadline_ms,
            max_result_chars: self.max_result,
            capabilities: self.capabilities.map(|c| c.into_iter().collect()),
            elicitation: self.elicitation,
            sampling: self.sampling,
            sampling_max_tokens: self.sampling_max_tokens,
        })
    }
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Server names to import (see them first by running without names)
    names: Vec<String>,
    /// Import every server found that is not in the list yet
    #[arg(long)]
    all: bool,
    /// Import a server under another name: NAME=NEW (repeatable)
    #[arg(long = "as", value_name = "NAME=NEW")]
    rename: Vec<String>,
    /// Also read this file: another account's .claude.json, a Codex config.toml, a Gemini
    /// settings.json (repeatable)
    #[arg(long = "file", value_name = "PATH")]
    files: Vec<PathBuf>,
    /// When a name is found in several files, the one to take
    #[arg(long, value_name = "PATH")]
    from_file: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub async fn run(dirs: &StateDir, cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Add(a) => add(dirs, a).await,
        McpCommand::List { json } => {
            let mut client = connect(dirs).await?;
            let servers = client.call(McpList).await?;
            if json {
                output::print_json(&servers)?;
            } else {
                print_servers(&servers);
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Show { name, tools, json } => show(dirs, name, tools, json).await,
        McpCommand::Edit(a) => edit(dirs, a).await,
        McpCommand::Rename {
            name,
            new_name,
            json,
        } => {
            let mut client = connect(dirs).await?;
            let server = client
                .call(McpRename {
                    server: name,
                    new_name,
                })
                .await?;
            done(json, &server, "renamed")
        }
        McpCommand::Remove { name, json } => {
            let mut client = connect(dirs).await?;
            let server = client.call(McpRemove { server: name }).await?;
            done(json, &server, "removed, with its secrets")
        }
        McpCommand::Tools { name, cached, json } => tools(dirs, name, cached, json).await,
        McpCommand::Inspect { name, json } => {
            let request = McpInspect {
                server: name.clone(),
            };
            let view = with_sign_in(dirs, request, &name, !json).await?;
            if json {
                output::print_json(&view)?;
            } else {
                print_inspect(&view);
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Approve {
            name,
            tools,
            all_tools,
            capabilities,
            json,
        } => {
            let request = McpApprove {
                server: name,
                tools,
                all_tools,
                capabilities,
            };
            approve(dirs, request, json).await
        }
        McpCommand::Call {
            name,
            tool,
            args,
            json,
        } => call(dirs, name, tool, &args, json).await,
        McpCommand::Import(a) => import(dirs, a).await,
        McpCommand::SignIn {
            name,
            no_browser,
            new_client,
            machine,
            json,
        } => match machine.request(&name)? {
            Some(request) => sign_in_machine(dirs, request, machine.private_key_file, json).await,
            None => sign_in(dirs, &name, no_browser, new_client, json).await,
        },
        McpCommand::SignOut { name, json } => {
            let mut client = connect(dirs).await?;
            let server = client
                .call(McpSignOut {
                    server: name.clone(),
                })
                .await?;
            done(json, &server, "signed out")
        }
    }
}

/// `bosun mcp show`: one server, and with `--tools` the tools its last listing found.
async fn show(dirs: &StateDir, name: String, tools: bool, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client
        .call(McpShow {
            server: name.clone(),
        })
        .await?;
    let listing = if tools && server.listed_at.is_some() {
        let request = McpTools {
            server: server.name.clone(),
            cached: true,
        };
        Some(client.call(request).await?)
    } else {
        None
    };
    if json {
        match listing {
            Some(l) => output::print_json(&serde_json::json!({ "server": server, "tools": l }))?,
            None => output::print_json(&server)?,
        }
    } else {
        print_server(&server);
        if let Some(l) = listing {
            println!();
            print_tools(&l);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp tools`: a server's tools, listed now (signing in first if it asks) or, with
/// `--cached`, as its last listing found them.
async fn tools(
    dirs: &StateDir,
    name: String,
    cached: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let request = McpTools {
        server: name.clone(),
        cached,
    };
    let listing = with_sign_in(dirs, request, &name, !cached && !json).await?;
    if json {
        output::print_json(&listing)?;
    } else {
        print_tools(&listing);
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp approve`: the tools and capabilities the person lets through, and the ledger after.
async fn approve(dirs: &StateDir, request: McpApprove, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client.call(request).await?;
    if json {
        output::print_json(&server)?;
    } else {
        println!("approved; runs get it from the next run on");
        print_ledger(
            &server.name,
            &server.rules.capabilities,
            &server.pending_capabilities,
            &server.pending_tools,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun mcp call`: one call of a server's tool, its result printed; a result that is an error
/// exits 1.
async fn call(
    dirs: &StateDir,
    name: String,
    tool: String,
    args: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(args).map_err(|e| {
        anyhow::anyhow!(
            "--args is not JSON ({e}); give an object such as '{{\"message\": \"hi\"}}'"
        )
    })?;
    let request = McpCall {
        server: name.clone(),
        tool,
        args,
    };
    let view = with_sign_in(dirs, request, &name, !json).await?;
    if json {
        output::print_json(&view)?;
    } else {
        print_call(&view);
    }
    Ok(if view.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn done(json: bool, server: &ServerView, what: &str) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(server)?;
    } else {
        println!("{} {what}", server.name);
    }
    Ok(ExitCode::SUCCESS)
}

async fn add(dirs: &StateDir, a: AddArgs) -> anyhow::Result<ExitCode> {
    let (mut env, mut headers) = (
        lines(&a.env, LineSyntax::Env)?,
        lines(&a.headers, LineSyntax::Header)?,
    );
    if a.env_from_stdin {
        let (e, h) = read_stdin_lines()?;
        env.extend(e);
        headers.extend(h);
    }
    let url = a.url.clone().or(a.url_arg.clone());
    let kind: ServerKind = match (a.transport, &url, a.command.is_empty()) {
        (Some(t), _, _) => t.into(),
        (None, Some(_), true) => ServerKind::Http,
        (None, None, _) | (None, Some(_), false) => ServerKind::Stdio,
    };
    let (command, args, url) = match kind {
        ServerKind::Stdio => {
            if url.is_some() && a.command.is_empty() {
                anyhow::bail!(
                    "a stdio server takes a command after `--`, not an address; for an address use --transport http or sse"
                );
            }
            let mut parts = a.command.clone().into_iter();
            (parts.next(), parts.collect(), None)
        }
        ServerKind::Http | ServerKind::Sse => {
            if !a.command.is_empty() {
                anyhow::bail!(
                    "a server reached by address takes no command; remove what follows `--`"
                );
            }
            (None, Vec::new(), url)
        }
    };
    let params = AddServerParams {
        name: a.name,
        kind,
        command,
        args,
        url,
        allow_http: a.allow_http,
        env,
        headers,
        client_secret: a.sign_in.secret()?,
        client_id: a.sign_in.client_id,
        callback_port: a.sign_in.callback_port,
        sign_in_by: a.sign_in.sign_in_by.map(Into::into),
        client_metadata_url: a.sign_in.client_metadata_url,
    };
    let mut client = connect(dirs).await?;
    let server = client.call(params).await?;
    if a.json {
        output::print_json(&server)?;
    } else {
        println!("added {} ({})", server.name, describe_target(&server));
        if server.kind == ServerKind::Stdio {
            println!("list its tools with: bosun mcp tools {}", server.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn edit(dirs: &StateDir, a: EditArgs) -> anyhow::Result<ExitCode> {
    let (mut env, mut headers) = (
        lines(&a.env, LineSyntax::Env)?,
        lines(&a.headers, LineSyntax::Header)?,
    );
    if a.env_from_stdin {
        let (e, h) = read_stdin_lines()?;
        env.extend(e);
        headers.extend(h);
    }
    let (command, args) = if a.command.is_empty() {
        (None, None)
    } else {
        let mut parts = a.command.into_iter();
        (parts.next(), Some(parts.collect()))
    };
    let params = EditServerParams {
        server: a.name,
        command,
        args,
        url: a.url,
        allow_http: match (a.allow_http, a.no_allow_http) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        },
        kind: a.transport.map(Into::into),
        set_env: env,
        remove_env: a.remove_env,
        set_headers: headers,
        remove_headers: a.remove_header,
        browser_version: a.version,
        browser_program: a.browser,
        client_secret: a.sign_in.secret()?,
        client_id: a.sign_in.client_id,
        callback_port: a.sign_in.callback_port,
        sign_in_by: a.sign_in.sign_in_by.map(Into::into),
        client_metadata_url: a.sign_in.client_metadata_url,
        gateway: a.gateway.edit()?,
    };
    let mut client = connect(dirs).await?;
    let server = client.call(params).await?;
    done(a.json, &server, "changed")
}

/// Starts the sign-in, opens the page in the person's browser (or prints it), and waits.
async fn sign_in(
    dirs: &StateDir,
    name: &str,
    no_browser: bool,
    new_client: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let server = sign_in_flow(dirs, name, no_browser, new_client).await?;
    done(json, &server, "signed in")
}

/// A person is at this terminal to go through a sign-in.
fn person_at_hand() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `call` of the server `name`. When the server asks for a sign-in, or a wider or new one
/// (a 403 `insufficient_scope`, a move to another authorization server), and a person is at
/// the terminal, bosun goes through the sign-in with them (the browser opens) and asks once
/// more; otherwise the error says what to run.
async fn with_sign_in<C: Call + Clone>(
    dirs: &StateDir,
    call: C,
    name: &str,
    progress: bool,
) -> anyhow::Result<C::Reply> {
    let mut client = connect(dirs).await?;
    let first = with_progress(&mut client, call.clone(), name, progress).await;
    let asked = match &first {
        Err(ClientError::Daemon(e)) if e.code == ErrorCode::Unauthorized && person_at_hand() => {
            e.message.clone()
        }
        _ => return Ok(first?),
    };
    // Only a server bosun signs in to: a stdio server's credentials are its lines, and Claude
    // Code signs in to its own.
    let server = client
        .call(McpShow {
            server: name.to_string(),
        })
        .await?;
    if server.kind == ServerKind::Stdio || server.sign_in_by != SignInBy::Bosun {
        return Ok(first?);
    }
    eprintln!("bosun: {asked}");
    eprintln!("bosun: signing in to {name} now, then asking once more");
    sign_in_flow(dirs, name, false, false).await?;
    let mut client = connect(dirs).await?;
    Ok(with_progress(&mut client, call, name, progress).await?)
}

/// Starts the sign-in, opens the page in the person's browser (or prints it), and waits for it;
/// the server as signed in.
async fn sign_in_flow(
    dirs: &StateDir,
    name: &str,
    no_browser: bool,
    new_client: bool,
) -> anyhow::Result<ServerView> {
    let mut client = connect(dirs).await?;
    let SignInStarted {
        attempt,
        url,
        wait_secs,
        reused_registration,
        warning,
    } = client
        .call(McpSignIn {
            server: name.to_string(),
            new_client,
        })
        .await?;
    // Asked not to, or it could not: the person opens the page.
    let opened = if no_browser {
        None
    } else {
        super::ui::open_browser(&url).await.ok()
    };
    match opened {
        Some(how) => eprintln!("bosun: opened the sign-in page for {name} with {how}"),
        None => eprintln!("bosun: open this page to sign in to {name}:\n\n  {url}\n"),
    }
    if let Some(w) = &warning {
        eprintln!("bosun: warning: {w}");
    }
    if reused_registration {
        // The server's page is the only one to know when it forgot bosun's client.
        eprintln!(
            "bosun: this uses the client bosun registered there before; if the page says the client or app is unknown, press Ctrl-C and run `bosun mcp sign-in {name} --new-client`"
        );
    }
    // Taken from here on: Ctrl-C cancels the sign-in rather than leave it waiting in bosund.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    eprintln!(
        "bosun: waiting for the sign-in to finish ({} at most; Ctrl-C cancels it)…",
        bosun_shared::time::format_duration(Duration::from_secs(wait_secs))
    );
    let finish = client.call(McpSignInFinish { attempt });
    tokio::pin!(finish);
    let server = tokio::select! {
        server = &mut finish => server?,
        _ = interrupt.recv() => {
            // Cancelled over a connection of its own (this one waits for the end), then the
            // end is told as it came: cancelled, or signed in when the answer was already in.
            let cancelled = match connect(dirs).await {
                Ok(mut other) => other
                    .call(McpSignInCancel { attempt })
                    .await
                    .map(|_| ())
                    .map_err(anyhow::Error::from),
                Err(e) => Err(e),
            };
            if let Err(e) = cancelled {
                // bosund may still wait for the browser's answer: its wait runs out by itself.
                anyhow::bail!("could not cancel the sign-in to {name}: {e:#}");
            }
            // The answer comes at once; a second Ctrl-C does not wait for it.
            tokio::select! {
                server = &mut finish => server?,
                _ = interrupt.recv() => anyhow::bail!("the sign-in to {name} is cancelled"),
            }
        }
    };
    Ok(server)
}

/// Signs a machine in (client credentials): one request, no browser.
async fn sign_in_machine(
    dirs: &StateDir,
    request: McpSignInMachine,
    key_file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let server = client.call(request).await?;
    if let Some(path) = key_file {
        eprintln!(
            "bosun: the private key from {} is in the keychain now; bosun does not read the file again (you may remove it)",
            path.display()
        );
    }
    done(json, &server, "signed in as a machine (client credentials)")
}

#[derive(Clone, Copy)]
enum LineSyntax {
    Env,
    Header,
}

/// Turns `KEY=VALUE` / `Name: value` arguments into lines; a name alone is asked for on the
/// terminal without echo.
fn lines(args: &[String], syntax: LineSyntax) -> anyhow::Result<Vec<SecretLine>> {
    let mut out = Vec::new();
    for arg in args {
        let split = match syntax {
            LineSyntax::Env => arg.split_once('='),
            LineSyntax::Header => arg.split_once(':'),
        };
        let (name, value) = match split {
            Some((n, v)) => (
                n.trim().to_string(),
                match syntax {
                    LineSyntax::Env => v.to_string(),
                    LineSyntax::Header => v.trim().to_string(),
                },
            ),
            None => {
                let name = arg.trim().to_string();
                (name.clone(), ask(&name)?)
            }
        };
        if name.is_empty() {
            anyhow::bail!(
                "`{arg}` has no name; write {}",
                match syntax {
                    LineSyntax::Env => "KEY=VALUE",
                    LineSyntax::Header => "'Name: value'",
                }
            );
        }
        out.push(SecretLine { name, value });
    }
    Ok(out)
}

/// Asks for a value on the terminal without echoing it.
fn ask(name: &str) -> anyhow::Result<String> {
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "no value given for {name}, and there is no terminal to ask on; pass it on stdin with --env-from-stdin (a line {name}=VALUE, or '{name}: value' for a header)"
        );
    }
    let value = rpassword::prompt_password(format!("value of {name} (not shown): "))?;
    Ok(value)
}

/// Reads `KEY=VALUE` (environment) and `Name: value` (header) lines from stdin.
fn read_stdin_lines() -> anyhow::Result<(Vec<SecretLine>, Vec<SecretLine>)> {
    // Read no further than sixteen values of the most bytes each: more is a mistake (a file
    // piped in by accident), refused before it is held whole.
    let limit = 16 * MAX_SECRET_VALUE;
    let Some(text) = read_at_most(std::io::stdin().lock(), limit)? else {
        anyhow::bail!(
            "stdin holds over {}; it takes KEY=VALUE and 'Name: value' lines, and a secret value may have at most {}",
            format_size(limit as u64),
            format_size(MAX_SECRET_VALUE as u64)
        );
    };
    let (mut env, mut headers) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let eq = line.find('=');
        let colon = line.find(':');
        match (eq, colon) {
            (Some(e), c) if c.is_none_or(|c| e < c) => env.push(SecretLine {
                name: line[..e].trim().to_string(),
                value: line[e + 1..].to_string(),
            }),
            (_, Some(c)) => headers.push(SecretLine {
                name: line[..c].trim().to_string(),
                value: line[c + 1..].trim().to_string(),
            }),
            (Some(_), None) | (None, None) => anyhow::bail!(
                "line {} on stdin is neither KEY=VALUE nor 'Name: value'",
                i + 1
            ),
        }
    }
    Ok((env, headers))
}

/// Sends a request that starts a server, showing on a terminal how long it has been going.
async fn with_progress<C: Call>(
    client: &mut Client,
    call: C,
    name: &str,
    show: bool,
) -> Result<C::Reply, ClientError> {
    let show = show && std::io::stderr().is_terminal();
    let t0 = Instant::now();
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    let pending = client.call(call);
    tokio::pin!(pending);
    let result = loop {
        tokio::select! {
            r = &mut pending => break r,
            _ = ticker.tick(), if show => {
                let secs = t0.elapsed().as_secs();
                if secs >= 1 {
                    let hint = if secs >= 5 { " (a first run of an npx server downloads its package: up to 2 minutes)" } else { "" };
                    eprint!("\r\x1b[2Kstarting {name}… {secs}s{hint}");
                    let _ = std::io::stderr().flush();
                }
            }
        }
    };
    if show && t0.elapsed() >= Duration::from_secs(1) {
        eprint!("\r\x1b[2K");
    }
    result
}

async fn import(dirs: &StateDir, a: ImportArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let scan = ImportScan {
        extra_files: a
            .files
            .iter()
            .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone()))
            .collect(),
        env: ["HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"]
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect(),
    };
    if !a.all && a.names.is_empty() {
        let ImportCandidates {
            candidates,
            problems,
        } = client.call(scan).await?;
        if a.json {
            output::print_json(
                &serde_json::json!({ "candidates": candidates, "problems": problems }),
            )?;
        } else {
            for p in &problems {
                eprintln!("bosun: {p}");
            }
            print_candidates(&candidates);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut renames = std::collections::HashMap::new();
    for r in &a.rename {
        let Some((from, to)) = r.split_once('=') else {
            anyhow::bail!("--as takes NAME=NEW, such as --as github=github-work");
        };
        renames.insert(from.to_string(), to.to_string());
    }
    let picks = a
        .names
        .iter()
        .map(|n| ImportPick {
            name: n.clone(),
            rename_to: renames.get(n).cloned(),
            account: a
                .from_file
                .as_ref()
                .map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone())),
        })
        .collect();
    let params = ImportParams {
        scan,
        all: a.all,
        picks,
    };
    let Imported { servers } = client.call(params).await?;
    if a.json {
        output::print_json(&servers)?;
    } else if servers.is_empty() {
        println!("nothing to import: every server found is already in the list");
    } else {
        for s in &servers {
            println!("imported {} ({})", s.name, describe_target(s));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn describe_target(s: &ServerView) -> String {
    match s.kind {
        ServerKind::Stdio => {
            let mut parts = vec![s.command.clone().unwrap_or_default()];
            parts.extend(s.args.iter().cloned());
            format!("stdio: {}", parts.join(" "))
        }
        ServerKind::Http | ServerKind::Sse => {
            let plain = if s.allow_http {
                " (plain http allowed)"
            } else {
                ""
            };
            format!("{}: {}{plain}", s.kind, s.url.clone().unwrap_or_default())
        }
    }
}

fn print_servers(servers: &[ServerView]) {
    if servers.is_empty() {
        println!(
            "no MCP servers; add one with `bosun mcp add NAME -- CMD ARGS…` or `bosun mcp import`"
        );
        return;
    }
    for s in servers {
        let tools = match (s.tool_count, s.listed_at) {
            (Some(n), Some(_)) => format!("{n} tools"),
            _ => "tools not listed yet".to_string(),
        };
        let missing: Vec<&str> = s
            .env
            .iter()
            .chain(s.headers.iter())
            .filter(|l| !l.saved)
            .map(|l| l.name.as_str())
            .collect();
        let mut line = format!("{:<20} {}  ({tools})", s.name, describe_target(s));
        if let Some(b) = &s.browser {
            line = format!(
                "{:<20} built-in browser, chrome-devtools-mcp {}  ({tools})",
                s.name, b.version
            );
            if !b.missing.is_empty() {
                line.push_str(&format!(
                    "\n{:<20} cannot start: {}",
                    "",
                    b.missing.join("; ")
                ));
            }
        }
        if !missing.is_empty() {
            line.push_str(&format!(
                "  missing from the keychain: {}",
                missing.join(", ")
            ));
        }
        if let Some(si) = &s.sign_in
            && si.state != "not signed in"
        {
            line.push_str(&format!("  [{}]", si.state));
        }
        if let Some(e) = &s.last_error {
            line.push_str(&format!("\n{:<20} last look failed: {e}", ""));
        }
        println!("{line}");
    }
}

/// What bosun's gateway holds a server to, as `mcp show` says it.
fn print_rules(r: &bosun_shared::gateway::Rules) {
    let list = |l: &[ToolGlob]| {
        l.iter()
            .map(ToolGlob::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "{:<12}{}",
        "trust",
        if r.trusted {
            "trusted: results reach the model as they are"
        } else {
            "untrusted: results reach the model framed as untrusted content"
        }
    );
    if !r.allow_tools.is_empty() {
        println!("{:<12}{}", "allow tools", list(&r.allow_tools));
    }
    if !r.deny_tools.is_empty() {
        println!(
            "{:<12}{} (never offered nor allowed)",
            "deny tools",
            list(&r.deny_tools)
        );
    }
    println!(
        "{:<12}{} per call; results over {} characters reach the model as head and tail",
        "deadline",
        bosun_shared::time::format_duration(std::time::Duration::from_millis(r.deadline_ms)),
        r.max_result_chars
    );
    println!(
        "{:<12}{}",
        "elicitation",
        match r.elicitation {
            AskPolicy::Deny => "deny: the server's requests for the person's input are refused",
            AskPolicy::Ask | AskPolicy::Allow => {
                "ask: the server's requests for the person's input wait in the inbox"
            }
        }
    );
    let sampling = match r.sampling {
        AskPolicy::Deny => {
            "deny: the server's requests for a message of the model are refused".to_string()
        }
        AskPolicy::Ask => {
            "ask: the server's requests for a message of the model wait in the inbox".to_string()
        }
        AskPolicy::Allow => format!(
            "allow: the run's CLI writes the messages the server asks for, up to {} tokens each",
            r.sampling_max_tokens
        ),
    };
    println!("{:<12}{sampling}", "sampling");
}

/// What runs get of a server, and what waits for the person's approval.
fn print_ledger(
    server: &str,
    approved: &std::collections::BTreeSet<Capability>,
    pending: &[Capability],
    pending_tools: &[PendingToolView],
) {
    let names = |c: &mut dyn Iterator<Item = &Capability>| {
        c.map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
    };
    println!("{:<12}{}", "capabilities", names(&mut approved.iter()));
    if !pending.is_empty() {
        println!(
            "{:<12}{} advertised, held back from runs (bosun mcp approve {server} --capability NAME)",
            "pending",
            names(&mut pending.iter())
        );
    }
    if !pending_tools.is_empty() {
        let tools: Vec<String> = pending_tools
            .iter()
            .map(|t| format!("{} ({})", t.name, t.change.words()))
            .collect();
        println!(
            "{:<12}{}: held back from runs (bosun mcp approve {server} TOOL…, or --all-tools)",
            "new tools",
            tools.join(", ")
        );
    }
}

fn print_server(s: &ServerView) {
    println!("{:<12}{}", "name", s.name);
    println!("{:<12}{}", "id", s.id);
    println!("{:<12}{}", "reached by", describe_target(s));
    for (what, lines) in [("env", &s.env), ("headers", &s.headers)] {
        if lines.is_empty() {
            continue;
        }
        for (i, l) in lines.iter().enumerate() {
            let label = if i == 0 { what } else { "" };
            println!(
                "{label:<12}{} ({})",
                l.name,
                if l.saved {
                    "saved"
                } else {
                    "missing from the keychain"
                }
            );
        }
    }
    if let Some(b) = &s.browser {
        println!(
            "{:<12}chrome-devtools-mcp {} (built in)",
            "browser", b.version
        );
        match &b.program_found {
            Some(p) => println!("{:<12}{}", "program", p.display()),
            None => println!("{:<12}none found", "program"),
        }
        match &b.node {
            Some(v) => println!("{:<12}{v}", "node"),
            None => println!("{:<12}not usable", "node"),
        }
        for m in &b.missing {
            println!("{:<12}{m}", "missing");
        }
    }
    match (s.listed_at, s.tool_count) {
        (Some(at), Some(n)) => println!("{:<12}{n}, listed {}", "tools", at.rfc3339()),
        _ => println!("{:<12}not listed yet (bosun mcp tools {})", "tools", s.name),
    }
    if let Some(doc) = &s.client_metadata_url {
        println!("{:<12}{doc} (client metadata document)", "client doc");
    }
    print_rules(&s.rules);
    print_ledger(
        &s.name,
        &s.rules.capabilities,
        &s.pending_capabilities,
        &s.pending_tools,
    );
    if let Some(si) = &s.sign_in {
        println!("{:<12}{}", "sign-in", si.state);
        if let Some(why) = &si.why {
            println!("{:<12}{why}", "");
        }
        if let Some(issuer) = &si.issuer {
            println!("{:<12}{issuer}", "issuer");
        }
        if let Some(id) = &si.client_id {
            let how = if si.registered {
                " (registered by bosun)"
            } else {
                ""
            };
            println!("{:<12}{id}{how}", "client id");
        }
        if si.dpop {
            println!("{:<12}bound to a key (DPoP)", "tokens");
        }
        if let Some(method) = &si.client_credentials {
            println!("{:<12}client credentials ({method})", "as machine");
        }
        if let Some(scope) = &si.scope {
            println!("{:<12}{scope}", "scope");
        }
        if let Some(left) = token_life(si.expires_at) {
            println!("{:<12}{left}", "token");
        }
        if let Some(w) = &si.wanted_scope {
            println!("{:<12}the server asks for more: {w} (sign in again)", "");
        }
    }
    if let Some(e) = &s.last_error {
        println!("{:<12}{e}", "last error");
    }
}

/// How long an access token has left, in words.
fn token_life(at: Option<bosun_shared::Timestamp>) -> Option<String> {
    let at = at?;
    let now = bosun_shared::Timestamp::now().as_millis();
    Some(if at.as_millis() <= now {
        "expired (refreshed when next used)".to_string()
    } else {
        format!(
            "valid for {}",
            bosun_shared::time::format_duration(Duration::from_secs((at.as_millis() - now) / 1000))
        )
    })
}

fn print_tools(l: &ToolListing) {
    println!(
        "{} tools of {} (listed {})",
        l.tools.len(),
        l.server,
        l.listed_at.rfc3339()
    );
    if let Some(t) = &l.truncated {
        println!("note: {t}");
    }
    print_malformed(&l.malformed);
    for t in &l.tools {
        println!();
        let title = t
            .title
            .as_deref()
            .map(|t| format!(" — {t}"))
            .unwrap_or_default();
        println!("{}{title}", t.full_name);
        if let Some(change) = t.pending {
            println!(
                "  {}: held back from runs until you approve it (bosun mcp approve {} {})",
                change.words(),
                l.server,
                t.name
            );
        }
        println!(
            "  risk: {} ({})",
            t.assessment.risk,
            t.assessment.words.join(", ")
        );
        if t.assessment.sent.is_empty() {
            println!("  hints: none sent; the MCP spec's defaults apply");
        } else if t.assessment.sent.len() < 4 {
            println!(
                "  hints sent: {}; the others are the spec's defaults",
                t.assessment.sent.join(", ")
            );
        }
        if let Some(d) = &t.description {
            for line in d.lines().filter(|l| !l.trim().is_empty()).take(6) {
                println!("  {line}");
            }
        }
        for p in &t.params {
            let ty = p.r#type.as_deref().unwrap_or("any");
            let req = if p.required { "required" } else { "optional" };
            let desc = p
                .description
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            println!("    {} ({ty}, {req}){desc}", p.name);
        }
    }
}

/// The tools bosun set aside, each with what is wrong (their input schemas as sent are in
/// `--json`).
fn print_malformed(malformed: &[bosun_shared::protocol::mcp::MalformedToolView]) {
    if malformed.is_empty() {
        return;
    }
    println!(
        "{} tool definition{} malformed; bosun lists and calls the others:",
        malformed.len(),
        if malformed.len() == 1 { " is" } else { "s are" }
    );
    for m in malformed {
        let name = m
            .name
            .as_deref()
            .map(|n| format!("`{n}`"))
            .unwrap_or_else(|| "a tool without a name".into());
        println!("  {name}: {}", m.problem);
    }
}

fn print_inspect(v: &InspectView) {
    println!("{:<18}{}", "server", v.server);
    println!(
        "{:<18}{} {}",
        "identifies as",
        v.server_name.as_deref().unwrap_or("?"),
        v.server_version.as_deref().unwrap_or("")
    );
    println!("{:<18}{}", "protocol", v.protocol_version);
    if let Some(r) = &v.revision {
        let how = if r.stateless {
            "stateless"
        } else {
            "initialize handshake"
        };
        println!("{:<18}{} ({how}): {}", "revision", r.version, r.why);
    }
    let caps: Vec<String> = v
        .capabilities
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    println!(
        "{:<18}{}",
        "capabilities",
        if caps.is_empty() {
            "none".into()
        } else {
            caps.join(", ")
        }
    );
    println!("{:<18}{}", "tools", v.tools);
    print_malformed(&v.malformed);
    let names = |c: &[Capability]| c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
    println!("{:<18}{}", "runs get", names(&v.approved_capabilities));
    if !v.pending_capabilities.is_empty() {
        println!(
            "{:<18}{} (bosun mcp approve {} --capability NAME)",
            "pending",
            names(&v.pending_capabilities),
            v.server
        );
    }
    if !v.never_relayed.is_empty() {
        println!(
            "{:<18}{} (bosun's gateway does not relay these)",
            "never in a run",
            v.never_relayed.join(", ")
        );
    }
    if !v.pending_tools.is_empty() {
        let tools: Vec<String> = v
            .pending_tools
            .iter()
            .map(|t| format!("{} ({})", t.name, t.change.words()))
            .collect();
        println!(
            "{:<18}{} (bosun mcp approve {} TOOL…)",
            "pending tools",
            tools.join(", "),
            v.server
        );
    }
    println!(
        "{:<18}{}",
        "prompts",
        v.prompts
            .map(|n| n.to_string())
            .unwrap_or_else(|| "not offered".into())
    );
    println!(
        "{:<18}{}",
        "resources",
        v.resources
            .map(|n| n.to_string())
            .unwrap_or_else(|| "not offered".into())
    );
    println!(
        "{:<18}connect + initialize {} ms, listing {} ms, total {} ms",
        "timings", v.connect_ms, v.list_ms, v.total_ms
    );
}

fn print_call(v: &CallView) {
    if v.is_error {
        println!("the tool reported an error:");
    }
    match v.content.as_array() {
        Some(items) => {
            for item in items {
                match item.get("text").and_then(|t| t.as_str()) {
                    Some(text) => println!("{text}"),
                    None => println!("{item}"),
                }
            }
        }
        None => println!("{}", v.content),
    }
    if let Some(s) = &v.structured {
        println!("structured: {s}");
    }
}

fn print_candidates(cands: &[ImportCandidateView]) {
    if cands.is_empty() {
        println!("no MCP servers found in Claude Code, Codex or Gemini CLI configuration");
        return;
    }
    for c in cands {
        let status = match c.status {
            ImportStatus::New => "new",
            ImportStatus::AlreadyInList => "already in the list",
            ImportStatus::NameTaken => "name taken: import with --as NAME=NEW",
            ImportStatus::BadName => "name not allowed in bosun: import with --as NAME=NEW",
        };
        let target = match c.kind {
            ServerKind::Stdio => {
                let mut parts = vec![c.command.clone().unwrap_or_default()];
                parts.extend(c.args.iter().cloned());
                parts.join(" ")
            }
            ServerKind::Http | ServerKind::Sse => c.url.clone().unwrap_or_default(),
        };
        println!(
            "{:<20} {} ({}), {} scope, {}: {target}",
            c.name,
            c.source,
            c.account.display(),
            c.scope,
            c.kind
        );
        if !c.env_names.is_empty() {
            println!("{:<20} env: {}", "", c.env_names.join(", "));
        }
        if !c.header_names.is_empty() {
            println!("{:<20} headers: {}", "", c.header_names.join(", "));
        }
        println!("{:<20} {status}", "");
    }
    println!("\nimport with: bosun mcp import NAME… (or --all)");
}
