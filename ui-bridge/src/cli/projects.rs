//! `bosun project …`: projects (a git checkout with its main branch and host, whose cards' runs
//! each work in a worktree of their own) and the person's switches on them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bosun_protocol::call::Call;
use bosun_protocol::projects::{
    AddProjectParams, EditProjectParams, ProjectList, ProjectRemove, ProjectSet, ProjectShow,
    ProjectView,
};
use bosun_shared::paths::StateDir;
use bosun_shared::usage::CapEdit;
use clap::{Args, Subcommand};

use super::{connect, current_dir, output};

#[derive(Subcommand, Debug)]
pub enum ProjectCommand {
    /// Add a project: a git checkout (FOLDER, the current one when absent)
    Add {
        name: String,
        folder: Option<PathBuf>,
        /// Its main branch (what origin/HEAD says, else the checked-out branch, when absent)
        #[arg(long, value_name = "BRANCH")]
        main_branch: Option<String>,
        /// GitHub owner/name, when the origin remote does not say it
        #[arg(long, value_name = "OWNER/NAME")]
        github: Option<String>,
        /// Its cards are not tested before review
        #[arg(long)]
        no_testing: bool,
        #[arg(long)]
        json: bool,
    },
    /// The projects
    List {
        #[arg(long)]
        json: bool,
    },
    /// One project
    Show(NameArgs),
    /// Change a project (what is not given stays)
    Edit {
        #[arg(add = super::complete::projects())]
        project: String,
        #[arg(long = "name", value_name = "NEW")]
        new_name: Option<String>,
        #[arg(long)]
        folder: Option<PathBuf>,
        #[arg(long, value_name = "BRANCH")]
        main_branch: Option<String>,
        /// GitHub owner/name ("" reads it from the origin remote again)
        #[arg(long, value_name = "OWNER/NAME")]
        github: Option<String>,
        /// What the runs of its cards created on one day (UTC) may cost together, in dollars
        /// (such as 20 or 7.50), or off; reached, each of those runs' next tool call waits for you
        #[arg(long = "daily-budget-usd", value_name = "DOLLARS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a project's daily budget in dollars", s, true))]
        daily_budget_micro_usd: Option<CapEdit>,
        /// The same in tokens (every kind), or off
        #[arg(long, value_name = "TOKENS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a project's daily budget in tokens", s, false))]
        daily_budget_tokens: Option<CapEdit>,
        /// The same in tool calls bosun allowed, or off
        #[arg(long, value_name = "CALLS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a project's daily budget in tool calls", s, false))]
        daily_budget_calls: Option<CapEdit>,
        #[arg(long)]
        json: bool,
    },
    /// Switch: testing=on|off, lead-may-merge=on|off (off until you set it; only you can)
    Set {
        #[arg(add = super::complete::projects())]
        project: String,
        #[arg(required = true, value_name = "KEY=VALUE")]
        settings: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove a project no card belongs to
    Remove(NameArgs),
}

#[derive(Args, Debug)]
pub struct NameArgs {
    #[arg(add = super::complete::projects())]
    project: String,
    #[arg(long)]
    json: bool,
}

async fn ask<C: Call>(dirs: &StateDir, call: C) -> anyhow::Result<C::Reply> {
    let mut client = connect(dirs).await?;
    Ok(client.call(call).await?)
}

/// A folder as the daemon needs it: absolute, from where the command was typed.
fn absolute(folder: &Path) -> anyhow::Result<PathBuf> {
    Ok(if folder.is_absolute() {
        folder.to_path_buf()
    } else {
        current_dir()?.join(folder)
    })
}

pub async fn run(dirs: &StateDir, cmd: ProjectCommand) -> anyhow::Result<ExitCode> {
    let (p, json, said) = match cmd {
        ProjectCommand::List { json } => {
            let list = ask(dirs, ProjectList).await?;
            if json {
                output::print_json(&list)?;
            } else if list.is_empty() {
                outln!("no projects yet; add one with `bosun project add NAME FOLDER`");
            } else {
                for p in &list {
                    outln!(
                        "{:<20} {:<10} {:<24} {} card{}  {}",
                        p.name,
                        p.main_branch,
                        p.host.to_string(),
                        p.cards,
                        if p.cards == 1 { "" } else { "s" },
                        p.folder.display()
                    );
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        ProjectCommand::Add {
            name,
            folder,
            main_branch,
            github,
            no_testing,
            json,
        } => {
            let folder = match folder {
                Some(f) => absolute(&f)?,
                None => current_dir()?,
            };
            let params = AddProjectParams {
                name,
                folder,
                main_branch,
                github,
                testing: Some(!no_testing),
            };
            (ask(dirs, params).await?, json, Some("added"))
        }
        ProjectCommand::Show(a) => (
            ask(dirs, ProjectShow { project: a.project }).await?,
            a.json,
            None,
        ),
        ProjectCommand::Edit {
            project,
            new_name,
            folder,
            main_branch,
            github,
            daily_budget_micro_usd,
            daily_budget_tokens,
            daily_budget_calls,
            json,
        } => {
            let params = EditProjectParams {
                project,
                name: new_name,
                folder: folder.as_deref().map(absolute).transpose()?,
                main_branch,
                github,
                daily_budget_micro_usd,
                daily_budget_tokens,
                daily_budget_calls,
            };
            (ask(dirs, params).await?, json, Some("changed"))
        }
        ProjectCommand::Set {
            project,
            settings,
            json,
        } => (
            ask(dirs, ProjectSet { project, settings }).await?,
            json,
            Some("set"),
        ),
        ProjectCommand::Remove(a) => (
            ask(dirs, ProjectRemove { project: a.project }).await?,
            a.json,
            Some("removed"),
        ),
    };
    if json {
        output::print_json(&p)?;
    } else if let Some(said) = said {
        outln!("project {} {said}", p.name);
        print_project(&p);
    } else {
        print_project(&p);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_project(p: &ProjectView) {
    let on = |b: bool| if b { "on" } else { "off" };
    outln!("{:<16}{}", "project", p.name);
    outln!("{:<16}{}", "id", p.id);
    outln!("{:<16}{}", "folder", p.folder.display());
    outln!("{:<16}{}", "main branch", p.main_branch);
    outln!("{:<16}{}", "host", p.host);
    outln!("{:<16}{}", "testing", on(p.testing));
    outln!("{:<16}{}", "lead may merge", on(p.lead_may_merge));
    outln!("{:<16}{}", "cards", p.cards);
    if let Some(b) = &p.daily_budget {
        outln!(
            "{:<16}{}",
            "daily budget",
            output::shared_budget(b, "a day for all its cards' runs; today")
        );
    }
}
