//! `bosun mcp …`: the MCP server registry, List tools, inspect, call and import.
//!
//! Secret values (environment and header lines) are taken, by preference, from stdin
//! (`--env-from-stdin`) or from a prompt that does not echo, because a command line is visible
//! to every process on the machine. `-e KEY=VALUE` works too, as with `claude mcp add`.
//!
//! This file holds the commands and their dispatch; [`add_edit`], [`sign_in`], [`look`] (show,
//! tools, approve, call), [`import`] and [`print`] (servers as text) hold the rest.

mod add_edit;
mod import;
mod look;
mod print;
mod sign_in;

use std::process::ExitCode;

use bosun_protocol::auth::McpSignOut;
use bosun_protocol::mcp::{McpApprove, McpInspect, McpList, McpRemove, McpRename, ServerView};
use bosun_shared::gateway::Capability;
use bosun_shared::paths::StateDir;
use clap::Subcommand;

use self::add_edit::{AddArgs, EditArgs, add, edit};
use self::import::{ImportArgs, import};
use self::look::{approve, call, print_inspect, show, tools};
use self::print::print_servers;
use self::sign_in::{MachineArgs, sign_in, sign_in_machine, with_sign_in};
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

fn done(json: bool, server: &ServerView, what: &str) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(server)?;
    } else {
        outln!("{} {what}", server.name);
    }
    Ok(ExitCode::SUCCESS)
}
