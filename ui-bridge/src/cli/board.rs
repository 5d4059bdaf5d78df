//! `bosun board …` (columns, cards, the limit on card runs) and `bosun note …` (memory notes).

use std::process::ExitCode;

use bosun_protocol::board::{
    AddCardParams, AddColumnParams, Board, BoardLimit, BoardView, CardRemove, CardShow, CardView,
    EditCardParams, NoteList, NoteShow, NoteView, NoteWrite, SetColumnParams,
};
use bosun_protocol::call::Call;
use bosun_shared::paths::StateDir;
use bosun_shared::projects::MAX_NOTE;
use bosun_shared::usage::CapEdit;
use clap::{Args, Subcommand};

use super::{connect, output};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BoardArgs {
    #[command(subcommand)]
    command: Option<BoardCommand>,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum BoardCommand {
    /// Columns: Auto (their assigned cards are picked up by their agent) or Manual
    #[command(subcommand)]
    Column(ColumnCommand),
    /// Cards: add, edit, move, hold, show
    #[command(subcommand)]
    Card(Box<CardCommand>),
    /// The most card runs going at once
    Limit {
        limit: u32,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ColumnCommand {
    /// Add a column (Manual unless --auto), at the end or at --position
    Add {
        name: String,
        #[arg(long)]
        auto: bool,
        #[arg(long)]
        position: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Rename a column, make it Auto or Manual, or move it
    Set {
        column: String,
        #[arg(long = "name", value_name = "NEW")]
        new_name: Option<String>,
        #[arg(long, conflicts_with = "manual")]
        auto: bool,
        #[arg(long)]
        manual: bool,
        #[arg(long)]
        position: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
struct CardFields {
    #[arg(long)]
    description: Option<String>,
    /// What must be true when it is done
    #[arg(long)]
    acceptance: Option<String>,
    /// The agent that takes it ("" takes the assignee off)
    #[arg(long)]
    #[arg(add = super::complete::agents())]
    assignee: Option<String>,
    /// The project it belongs to: its runs work in a worktree of the project's repository
    /// ("" takes it out, before its first run there)
    #[arg(long)]
    project: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum CardCommand {
    /// Add a card (to the first column unless --column)
    Add {
        title: String,
        #[arg(long)]
        column: Option<String>,
        #[command(flatten)]
        fields: CardFields,
    },
    /// Change a card (what is not given stays)
    Edit {
        #[arg(add = super::complete::cards())]
        card: String,
        #[arg(long)]
        title: Option<String>,
        /// Move it to this column
        #[arg(long = "move", value_name = "COLUMN")]
        column: Option<String>,
        /// Put it on hold (needs_decision) with this reason; no agent starts a held card
        #[arg(long, value_name = "REASON", conflicts_with = "clear_hold")]
        hold: Option<String>,
        /// Take it off hold
        #[arg(long)]
        clear_hold: bool,
        /// Add a line to its activity log
        #[arg(long)]
        comment: Option<String>,
        /// What all its runs together may cost, in dollars (such as 5 or 2.50), or off;
        /// reached, each run's next tool call waits for you
        #[arg(long = "budget-usd", value_name = "DOLLARS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a card's budget in dollars", s, true))]
        budget_micro_usd: Option<CapEdit>,
        /// What all its runs together may use in tokens (every kind), or off
        #[arg(long, value_name = "TOKENS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a card's budget in tokens", s, false))]
        budget_tokens: Option<CapEdit>,
        /// How many tool calls bosun may allow all its runs together, or off
        #[arg(long, value_name = "CALLS|off", allow_hyphen_values = true,
              value_parser = |s: &str| CapEdit::parse("a card's budget in tool calls", s, false))]
        budget_calls: Option<CapEdit>,
        #[command(flatten)]
        fields: CardFields,
    },
    /// Move a card to a column
    Move {
        #[arg(add = super::complete::cards())]
        card: String,
        column: String,
        #[arg(long)]
        json: bool,
    },
    /// Show a card with its whole activity log
    Show {
        #[arg(add = super::complete::cards())]
        card: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a card no run of is going, and its worktree (its branch stays)
    Remove {
        #[arg(add = super::complete::cards())]
        card: String,
        /// Also when its worktree has changes not committed (they are lost)
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum NoteCommand {
    /// The notes, with their versions
    List {
        #[arg(long)]
        json: bool,
    },
    /// A note's text (with --json, its version too)
    Show {
        path: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a note from stdin. An existing note needs the version your text is based on
    /// (--base-version, from `note show --json`), or --force to replace it whatever it says
    Write {
        path: String,
        #[arg(long, value_name = "N")]
        base_version: Option<u64>,
        #[arg(long, conflicts_with = "base_version")]
        force: bool,
        #[arg(long)]
        json: bool,
    },
}

async fn ask<C: Call>(dirs: &StateDir, call: C) -> anyhow::Result<C::Reply> {
    let mut client = connect(dirs).await?;
    Ok(client.call(call).await?)
}

pub async fn board(dirs: &StateDir, args: BoardArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        None => {
            let b = ask(dirs, Board).await?;
            show_board(&b, args.json)
        }
        Some(BoardCommand::Limit { limit, json }) => {
            let b = ask(dirs, BoardLimit { limit }).await?;
            if json {
                output::print_json(&b)?;
            } else {
                outln!("at most {} card runs at once", b.limit);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(BoardCommand::Column(c)) => column(dirs, c).await,
        Some(BoardCommand::Card(c)) => card(dirs, *c).await,
    }
}

/// `bosun board column …`: adds or changes a column, then prints it.
async fn column(dirs: &StateDir, c: ColumnCommand) -> anyhow::Result<ExitCode> {
    let (c, json) = match c {
        ColumnCommand::Add {
            name,
            auto,
            position,
            json,
        } => (
            ask(
                dirs,
                AddColumnParams {
                    name,
                    auto,
                    position,
                },
            )
            .await?,
            json,
        ),
        ColumnCommand::Set {
            column,
            new_name,
            auto,
            manual,
            position,
            json,
        } => (
            ask(
                dirs,
                SetColumnParams {
                    column,
                    name: new_name,
                    auto: (auto || manual).then_some(auto),
                    position,
                },
            )
            .await?,
            json,
        ),
    };
    if json {
        output::print_json(&c)?;
    } else {
        outln!(
            "column {} ({}, position {})",
            c.name,
            if c.auto { "Auto" } else { "Manual" },
            c.position
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `bosun board card …`: adds, edits, moves, shows or removes a card, then prints it.
async fn card(dirs: &StateDir, c: CardCommand) -> anyhow::Result<ExitCode> {
    let (c, json) = match c {
        CardCommand::Add {
            title,
            column,
            fields,
        } => (
            ask(
                dirs,
                AddCardParams {
                    title,
                    description: fields.description.unwrap_or_default(),
                    acceptance: fields.acceptance.unwrap_or_default(),
                    assignee: fields.assignee,
                    column,
                    project: fields.project,
                },
            )
            .await?,
            fields.json,
        ),
        CardCommand::Edit {
            card,
            title,
            column,
            hold,
            clear_hold,
            comment,
            budget_micro_usd,
            budget_tokens,
            budget_calls,
            fields,
        } => (
            ask(
                dirs,
                EditCardParams {
                    card,
                    title,
                    description: fields.description,
                    acceptance: fields.acceptance,
                    assignee: fields.assignee,
                    column,
                    hold,
                    clear_hold,
                    comment,
                    project: fields.project,
                    budget_micro_usd,
                    budget_tokens,
                    budget_calls,
                },
            )
            .await?,
            fields.json,
        ),
        CardCommand::Move { card, column, json } => (
            ask(
                dirs,
                EditCardParams {
                    card,
                    column: Some(column),
                    ..EditCardParams::default()
                },
            )
            .await?,
            json,
        ),
        CardCommand::Show { card, json } => (ask(dirs, CardShow { card }).await?, json),
        CardCommand::Remove { card, force, json } => {
            let c = ask(dirs, CardRemove { card, force }).await?;
            if json {
                output::print_json(&c)?;
            } else {
                outln!("card {} removed", c.short_id);
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if json {
        output::print_json(&c)?;
    } else {
        print_card(&c);
    }
    Ok(ExitCode::SUCCESS)
}

fn show_board(b: &BoardView, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(b)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "card runs: {} going, at most {} at once",
        b.running,
        b.limit
    );
    for col in &b.columns {
        let cards: Vec<&CardView> = b.cards.iter().filter(|c| c.column_id == col.id).collect();
        outln!();
        outln!(
            "{} ({}, {} card{})",
            col.name,
            if col.auto { "Auto" } else { "Manual" },
            cards.len(),
            if cards.len() == 1 { "" } else { "s" }
        );
        for c in cards {
            let mut line = format!("  {}  {}", c.short_id, c.title);
            if let Some(a) = &c.assignee {
                line.push_str(&format!("  → {a}"));
            }
            if let Some(s) = &c.run_state {
                line.push_str(&format!("  [run {s}]"));
            }
            if c.hold.is_some() {
                line.push_str("  ON HOLD");
            }
            outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_card(c: &CardView) {
    outln!("{:<12}{}", "card", c.id);
    outln!("{:<12}{}", "title", c.title);
    outln!("{:<12}{}", "column", c.column);
    outln!(
        "{:<12}{}",
        "assignee",
        c.assignee.as_deref().unwrap_or("(none)")
    );
    if let Some(p) = &c.project {
        outln!("{:<12}{}", "project", p);
    }
    if let Some(w) = &c.worktree {
        outln!("{:<12}{} ({})", "worktree", w.path.display(), w.branch);
    }
    if let Some(h) = &c.hold {
        outln!("{:<12}{}: {}", "on hold", h.kind, h.reason);
    }
    if let Some(b) = &c.budget {
        outln!(
            "{:<12}{}",
            "budget",
            output::shared_budget(b, "for all its runs")
        );
    }
    if let Some(r) = &c.run {
        outln!(
            "{:<12}{} ({}), {} in all",
            "last run",
            r.short(),
            c.run_state.as_deref().unwrap_or("?"),
            c.runs
        );
    }
    if !c.description.is_empty() {
        outln!("\n{}", c.description.trim_end());
    }
    if !c.acceptance.is_empty() {
        outln!("\nAcceptance criteria:\n{}", c.acceptance.trim_end());
    }
    if !c.activity.is_empty() {
        outln!("\nActivity:");
        for a in &c.activity {
            outln!("  {:>10}  {}", output::age(a.at), a.what);
        }
    }
}

pub async fn note(dirs: &StateDir, cmd: NoteCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        NoteCommand::List { json } => {
            let notes = ask(dirs, NoteList).await?;
            if json {
                output::print_json(&notes)?;
            } else if notes.is_empty() {
                outln!("no notes yet; write one with `bosun note write PATH < file`");
            } else {
                for n in &notes {
                    outln!("{:<40} v{:<4} {} bytes", n.path, n.version, n.bytes);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        NoteCommand::Show { path, json } => {
            let n = ask(dirs, NoteShow { path }).await?;
            print_note(&n, json, true)
        }
        NoteCommand::Write {
            path,
            base_version,
            force,
            json,
        } => {
            let text = bosun_shared::size::read_at_most(std::io::stdin().lock(), MAX_NOTE)
                .map_err(|e| anyhow::anyhow!("could not read the note's text from stdin: {e}"))?
                .ok_or_else(|| {
                    anyhow::anyhow!("a note is at most 1 MiB of text; stdin holds more")
                })?;
            let n = ask(
                dirs,
                NoteWrite {
                    path,
                    text,
                    base_version,
                    force,
                },
            )
            .await?;
            print_note(&n, json, false)
        }
    }
}

fn print_note(n: &NoteView, json: bool, text: bool) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(n)?;
    } else if text {
        out!("{}", n.text);
    } else {
        outln!("{} saved (version {})", n.path, n.version);
    }
    Ok(ExitCode::SUCCESS)
}
