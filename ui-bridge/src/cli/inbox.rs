//! What waits for the person's OK, and the person's decisions: the lead's pending actions and
//! the runs' tool calls. `bosun inbox [-f]`, `bosun approve ID [--always] | --all CHAT |
//! --card CARD`, `bosun deny ID [--block] [--message TEXT]`, `bosun discard ID`.

use bosun_shared::text::visible;
use std::io::Write;
use std::process::ExitCode;

use bosun_protocol::ErrorCode;
use bosun_protocol::approvals::{ApprovalView, Approvals, ApproveCard, Decide};
use bosun_protocol::lead::{Approve, ApproveAll, Discard, Inbox, PendingView};
use bosun_protocol::runs::SubscribeRuns;
use bosun_protocol::ui::Event;
use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use bosun_shared::time::format_duration;
use bosun_ui::ClientError;
use clap::Args;
use serde::Serialize;

use super::{connect, output};

#[derive(Args, Debug)]
pub struct InboxArgs {
    /// Only this chat's pending actions (and no run's tool calls)
    #[arg(add = super::complete::chats())]
    chat: Option<String>,
    /// Then print each item as it starts waiting or is decided, until Ctrl-C (with --json, one
    /// JSON object per line)
    #[arg(short = 'f', long)]
    follow: bool,
    /// The runs' decided tool calls too
    #[arg(long)]
    all: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ApproveArgs {
    /// The id (or its start) of a run's tool call or of a pending action of the lead
    #[arg(required_unless_present_any = ["all", "card"], conflicts_with_all = ["all", "card"])]
    id: Option<String>,
    /// Every action of the lead waiting in this chat, one after the other, in the order tried
    #[arg(long, value_name = "CHAT", conflicts_with = "card")]
    all: Option<String>,
    /// Every tool call waiting in the runs of this card, in the order asked
    #[arg(long, value_name = "CARD")]
    #[arg(add = super::complete::cards())]
    card: Option<String>,
    /// A run's tool call: allow this tool for the agent from now on (a shell command: that
    /// command)
    #[arg(long)]
    always: bool,
    /// A server's form (an `elicitation` item): the answer, a JSON object of its fields, e.g.
    /// '{"name": "Ada"}' (`-` reads it from stdin)
    #[arg(long, value_name = "JSON", conflicts_with = "always")]
    answer: Option<String>,
    #[arg(long)]
    json: bool,
}

/// `--answer`: a JSON value, or from stdin with `-`.
fn parse_answer(given: &str) -> anyhow::Result<serde_json::Value> {
    let text = if given == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| anyhow::anyhow!("--answer -: could not read stdin ({e})"))?
    } else {
        given.to_string()
    };
    serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "--answer must be JSON, an object of the form's fields like '{{\"name\": \"Ada\"}}' ({e}); `bosun inbox` shows the form"
        )
    })
}

#[derive(Args, Debug)]
pub struct DenyArgs {
    /// The id (or its start) of a run's tool call, or of a pending action of the lead
    id: String,
    /// Block this tool for the agent from now on (a shell command: that command)
    #[arg(long)]
    block: bool,
    /// What the model is told
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DiscardArgs {
    action: String,
    #[arg(long)]
    json: bool,
}

/// One item of the inbox as `--json` prints it: tagged with its kind.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item<'a> {
    Approval(&'a ApprovalView),
    Action(&'a PendingView),
}

pub fn print_actions(actions: &[PendingView]) {
    for a in actions {
        outln!(
            "  {}  {}  [{}]  (after {})",
            a.short_id,
            visible(&a.line),
            a.state,
            visible(&a.cause)
        );
        for line in a.preview.lines() {
            outln!("      {line}");
        }
        if let Some(why) = &a.would_fail {
            outln!("      approving would fail now: {}", visible(why));
        }
        if let Some(r) = &a.result {
            outln!("      {}", visible(r.lines().next().unwrap_or_default()));
        }
    }
}

fn left(deadline: Timestamp) -> String {
    let now = Timestamp::now();
    if deadline <= now {
        "no time left".into()
    } else {
        format!("{} left", format_duration(deadline.since(now)))
    }
}

fn print_approvals(approvals: &[ApprovalView]) {
    for a in approvals {
        let state = if a.state == "waiting" {
            left(a.deadline)
        } else {
            match (&a.decided_by, &a.message) {
                (Some(by), Some(m)) => format!("{} by {by}: {}", a.state, visible(m)),
                (Some(by), None) => format!("{} by {by}", a.state),
                (None, _) => a.state.clone(),
            }
        };
        outln!(
            "  {}  {}  [{}]  agent {}, run {}{}",
            a.short_id,
            visible(&a.tool),
            state,
            a.agent.as_deref().unwrap_or("?"),
            a.run.short(),
            a.card
                .map(|c| format!(", card {}", c.short()))
                .unwrap_or_default()
        );
        outln!("      {} · asks because {}", a.class, visible(&a.why));
        for line in a.preview.lines().take(50) {
            outln!("      {line}");
        }
        if let Some(answer) = &a.form_answer {
            outln!("      answered: {}", answer);
        }
    }
}

fn print_item(out: &mut impl Write, json: bool, item: Item<'_>) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, &item)?;
        writeln!(out)?;
    } else {
        match item {
            Item::Approval(a) => print_approvals(std::slice::from_ref(a)),
            Item::Action(a) => print_actions(std::slice::from_ref(a)),
        }
    }
    out.flush()?;
    Ok(())
}

pub async fn inbox(dirs: &StateDir, a: InboxArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    if a.follow {
        // Subscribed first, so nothing kept between the listing and the subscription is missed.
        client.call(SubscribeRuns).await?;
    }
    let chat = a.chat.clone();
    let actions = client.call(Inbox { chat: a.chat }).await?;
    let approvals = if chat.is_none() {
        client
            .call(Approvals {
                run: None,
                all: a.all,
            })
            .await?
    } else {
        Vec::new()
    };
    if a.follow {
        let stdout = std::io::stdout();
        for approval in &approvals {
            print_item(&mut stdout.lock(), a.json, Item::Approval(approval))?;
        }
        for action in &actions {
            print_item(&mut stdout.lock(), a.json, Item::Action(action))?;
        }
        let mut interrupt =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        loop {
            let event = tokio::select! {
                e = client.next_event() => e?,
                _ = interrupt.recv() => return Ok(ExitCode::SUCCESS),
            };
            let Some(event) = event else {
                anyhow::bail!("bosund closed the connection");
            };
            match event {
                Event::PendingChanged { action }
                    if chat.as_deref().is_none_or(|c| {
                        action.chat.to_string().starts_with(&c.to_ascii_lowercase())
                    }) =>
                {
                    print_item(&mut stdout.lock(), a.json, Item::Action(&action))?;
                }
                Event::ApprovalChanged { approval } if chat.is_none() => {
                    print_item(&mut stdout.lock(), a.json, Item::Approval(&approval))?;
                }
                Event::PendingChanged { .. }
                | Event::ApprovalChanged { .. }
                | Event::Log { .. }
                | Event::LogLagged { .. }
                | Event::LogProgress { .. }
                | Event::LogEnd { .. }
                | Event::LogFailed { .. }
                | Event::RunChanged { .. }
                | Event::ChatMessage { .. }
                | Event::StorageFault { .. }
                | Event::StorageRecovered { .. }
                | Event::Notification { .. } => {}
            }
        }
    }
    if a.json {
        let items: Vec<Item<'_>> = approvals
            .iter()
            .map(Item::Approval)
            .chain(actions.iter().map(Item::Action))
            .collect();
        output::print_json(&items)?;
    } else if actions.is_empty() && approvals.is_empty() {
        outln!("nothing waits for your OK");
    } else {
        if !approvals.is_empty() {
            outln!("Runs' tool calls:");
            print_approvals(&approvals);
            outln!(
                "\n`bosun approve ID [--always]` lets one run, `bosun deny ID [--block] [--message TEXT]` refuses it.\n"
            );
        }
        if !actions.is_empty() {
            outln!("The lead's pending actions:");
            print_actions(&actions);
            outln!(
                "\n`bosun approve ID` runs one, `bosun approve --all CHAT` runs a chat's in order, `bosun discard ID` drops one."
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A decision sent and then the connection lost before its answer (bosund crashed or was
/// stopped): bosund commits a decision before it answers, so it may have been made, and sending
/// it again is not the way to find out.
fn maybe_decided(e: ClientError) -> anyhow::Error {
    match e {
        ClientError::Connection(why) => anyhow::anyhow!(
            "lost the connection to bosund after the decision was sent ({why}); it may have been made all the same: `bosun inbox --all` shows whether it was"
        ),
        ClientError::NotRunning(_)
        | ClientError::StartFailed(_)
        | ClientError::Refused(_)
        | ClientError::Daemon(_)
        | ClientError::Unexpected => e.into(),
    }
}

/// Whether the daemon found no run approval by that id (it may be a pending action).
fn no_such_approval(e: &ClientError) -> bool {
    matches!(e, ClientError::Daemon(w) if w.code == ErrorCode::NotFound)
}

pub async fn approve(dirs: &StateDir, a: ApproveArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    if let Some(card) = a.card {
        let done = client
            .call(ApproveCard { card })
            .await
            .map_err(maybe_decided)?;
        return decided_approvals(&done, a.json);
    }
    let actions = match (a.all, a.id) {
        (Some(chat), _) => client
            .call(ApproveAll { chat })
            .await
            .map_err(maybe_decided)?,
        (None, Some(id)) => {
            let answer = a.answer.as_deref().map(parse_answer).transpose()?;
            let for_form = answer.is_some();
            match client
                .call(Decide {
                    approval: id.clone(),
                    allow: true,
                    always: a.always,
                    answer,
                    ..Decide::default()
                })
                .await
            {
                Ok(view) => return decided_approvals(std::slice::from_ref(&view), a.json),
                Err(e) if no_such_approval(&e) => {
                    if for_form {
                        anyhow::bail!(
                            "there is no server's form `{id}` waiting (--answer is for those); `bosun inbox` lists what waits"
                        );
                    }
                    if a.always {
                        anyhow::bail!(
                            "there is no run's tool call `{id}` waiting (--always is for those); `bosun inbox` lists what waits"
                        );
                    }
                    client
                        .call(Approve { action: id })
                        .await
                        .map_err(maybe_decided)?
                }
                Err(e) => return Err(maybe_decided(e)),
            }
        }
        (None, None) => anyhow::bail!("say which to approve: an id, --all CHAT or --card CARD"),
    };
    decided(&actions, a.json)
}

pub async fn deny(dirs: &StateDir, a: DenyArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    match client
        .call(Decide {
            approval: a.id.clone(),
            allow: false,
            always: false,
            block: a.block,
            message: a.message.clone(),
            answer: None,
        })
        .await
    {
        Ok(view) => decided_approvals(std::slice::from_ref(&view), a.json),
        Err(e) if no_such_approval(&e) => {
            if a.block || a.message.is_some() {
                anyhow::bail!(
                    "there is no run's tool call `{}` waiting (--block and --message are for those); a pending action of the lead is dropped with `bosun discard ID`",
                    a.id
                );
            }
            let actions = client
                .call(Discard { action: a.id })
                .await
                .map_err(maybe_decided)?;
            decided(&actions, a.json)
        }
        Err(e) => Err(maybe_decided(e)),
    }
}

pub async fn discard(dirs: &StateDir, a: DiscardArgs) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let actions = client
        .call(Discard { action: a.action })
        .await
        .map_err(maybe_decided)?;
    decided(&actions, a.json)
}

fn decided_approvals(approvals: &[ApprovalView], json: bool) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(&approvals)?;
    } else {
        print_approvals(approvals);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the actions an approval or a discard decided; a failed one fails the command.
fn decided(actions: &[PendingView], json: bool) -> anyhow::Result<ExitCode> {
    if json {
        output::print_json(&actions)?;
    } else {
        print_actions(actions);
    }
    Ok(if actions.iter().any(|a| a.state == "failed") {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
