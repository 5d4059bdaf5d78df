//! `bosun mcp add` and `bosun mcp edit`: their options (how a server is reached, its secret
//! lines, the rules bosun's gateway holds it to) and the environment and header lines, taken
//! from the arguments, a prompt that does not echo, or stdin.

use std::io::IsTerminal;
use std::process::ExitCode;

use bosun_protocol::mcp::{AddServerParams, EditServerParams, GatewayEdit, SecretLine, ServerKind};
use bosun_shared::agents::MAX_SECRET_VALUE;
use bosun_shared::gateway::{AskPolicy, Capability, ToolGlob};
use bosun_shared::paths::StateDir;
use bosun_shared::size::{format_size, read_at_most};
use clap::{Args, ValueEnum};

use super::print::describe_target;
use super::sign_in::SignInArgs;
use super::{connect, done, output};

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
    #[arg(add = super::super::complete::servers())]
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
    /// List and read only the resources whose URI matches these patterns, e.g.
    /// 'docs://public/*' (repeatable; replaces the list; "" clears it: every resource)
    #[arg(long = "allow-resource", value_name = "PATTERN")]
    allow_resources: Vec<String>,
    /// Never list nor read the resources whose URI matches these patterns (repeatable; replaces
    /// the list; "" clears it). Deny wins over allow
    #[arg(long = "deny-resource", value_name = "PATTERN")]
    deny_resources: Vec<String>,
    /// List and give only the prompts whose name matches these patterns (repeatable; replaces
    /// the list; "" clears it: every prompt)
    #[arg(long = "allow-prompt", value_name = "PATTERN")]
    allow_prompts: Vec<String>,
    /// Never list nor give the prompts whose name matches these patterns (repeatable; replaces
    /// the list; "" clears it). Deny wins over allow
    #[arg(long = "deny-prompt", value_name = "PATTERN")]
    deny_prompts: Vec<String>,
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
    /// The hosts the server may reach from a fenced run besides what its transport needs,
    /// comma-separated: host, host:port, *.domain, an address ([::1]:443); replaces the list;
    /// "none" clears it
    #[arg(long, value_name = "HOST[:PORT],…")]
    net: Option<String>,
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
            allow_resources: globs(self.allow_resources)?,
            deny_resources: globs(self.deny_resources)?,
            allow_prompts: globs(self.allow_prompts)?,
            deny_prompts: globs(self.deny_prompts)?,
            deadline_ms,
            max_result_chars: self.max_result,
            capabilities: self.capabilities.map(|c| c.into_iter().collect()),
            elicitation: self.elicitation,
            sampling: self.sampling,
            sampling_max_tokens: self.sampling_max_tokens,
            net: self.net.map(|list| net_list(&list)).transpose()?,
        })
    }
}

/// The hosts of `--net`: comma-separated, each read as the fence's proxy reads it (a bad one is
/// refused here with the reason, as bosund would); `none` is the empty list, which clears it.
fn net_list(list: &str) -> anyhow::Result<Vec<String>> {
    if list.trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    list.split(',')
        .map(|h| {
            bosun_shared::hosts::NetHost::parse(h.trim())
                .map(String::from)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "--net: `{}` is not a host a server may reach: {e}",
                        bosun_shared::text::visible(h.trim())
                    )
                })
        })
        .collect()
}

/// The environment and header lines given on the command line, and from stdin when asked.
fn given_lines(
    env: &[String],
    headers: &[String],
    from_stdin: bool,
) -> anyhow::Result<(Vec<SecretLine>, Vec<SecretLine>)> {
    let (mut env, mut headers) = (
        lines(env, LineSyntax::Env)?,
        lines(headers, LineSyntax::Header)?,
    );
    if from_stdin {
        let (e, h) = read_stdin_lines()?;
        env.extend(e);
        headers.extend(h);
    }
    Ok((env, headers))
}

pub(super) async fn add(dirs: &StateDir, a: AddArgs) -> anyhow::Result<ExitCode> {
    let (env, headers) = given_lines(&a.env, &a.headers, a.env_from_stdin)?;
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
        outln!("added {} ({})", server.name, describe_target(&server));
        if server.kind == ServerKind::Stdio {
            outln!("list its tools with: bosun mcp tools {}", server.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn edit(dirs: &StateDir, a: EditArgs) -> anyhow::Result<ExitCode> {
    let (env, headers) = given_lines(&a.env, &a.headers, a.env_from_stdin)?;
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
