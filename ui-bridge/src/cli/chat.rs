//! `bosun chat new|send|show|list`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use bosun_protocol::lead::{AnswerStarted, ChatList, ChatNew, ChatSend, ChatShow, ChatView};
use bosun_protocol::runs::Following;
use bosun_protocol::ui::{Event, FollowParams};
use bosun_shared::paths::StateDir;
use bosun_shared::run::Stream;
use clap::Subcommand;
use serde_json::Value;

use super::{connect, output};

#[derive(Subcommand, Debug)]
pub enum ChatCommand {
    /// Start a chat with the lead (the agent with role lead, or --agent)
    New {
        #[arg(long)]
        #[arg(add = super::complete::agents())]
        agent: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Send a message and stream the lead's answer until it ends
    Send {
        #[arg(add = super::complete::chats())]
        chat: String,
        message: String,
        /// A file the lead may attach to a card (repeatable)
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The chat's messages; with -f, the answer being written too, until it ends
    Show {
        #[arg(add = super::complete::chats())]
        chat: String,
        #[arg(short = 'f', long)]
        follow: bool,
        #[arg(long)]
        json: bool,
    },
    /// The chats
    List {
        #[arg(long)]
        json: bool,
    },
}

pub async fn chat(dirs: &StateDir, cmd: ChatCommand) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    match cmd {
        ChatCommand::New { agent, json } => {
            let c = client.call(ChatNew { agent }).await?;
            if json {
                output::print_json(&c)?;
            } else {
                outln!("{}", c.short_id);
            }
            Ok(ExitCode::SUCCESS)
        }
        ChatCommand::List { json } => {
            let chats = client.call(ChatList).await?;
            if json {
                output::print_json(&chats)?;
            } else if chats.is_empty() {
                outln!("no chats; start one with `bosun chat new`");
            } else {
                for c in &chats {
                    outln!(
                        "{}  with {}  {}{}",
                        c.short_id,
                        c.agent,
                        output::age(c.created_at),
                        match (c.answering.is_some(), c.waiting) {
                            (true, _) => "  (answering)".to_string(),
                            (false, 0) => String::new(),
                            (false, n) => format!("  ({n} waiting for your OK)"),
                        }
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ChatCommand::Send {
            chat,
            message,
            files,
            json,
        } => {
            let files = files
                .into_iter()
                .map(|f| std::path::absolute(&f).unwrap_or(f))
                .collect();
            let AnswerStarted { chat: c, run } = client
                .call(ChatSend {
                    chat,
                    message,
                    files,
                })
                .await?;
            stream_answer(&mut client, &run.id.to_string(), json).await?;
            // The answer's end is recorded a moment after its run ends: return once it is, so
            // the next message can follow at once.
            let chat = c.id.to_string();
            for _ in 0..50 {
                let now = client.call(ChatShow { chat: chat.clone() }).await?;
                if now.answering.is_none() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            if !json {
                print_waiting(&mut client, &c).await?;
            }
            Ok(ExitCode::SUCCESS)
        }
        ChatCommand::Show { chat, follow, json } => {
            let c = client.call(ChatShow { chat: chat.clone() }).await?;
            if json && !follow {
                output::print_json(&c)?;
                return Ok(ExitCode::SUCCESS);
            }
            print_messages(&c, 0);
            if follow && let Some(run) = c.answering {
                stream_answer(&mut client, &run.to_string(), json).await?;
                // The answer's end is recorded a moment after its run ends.
                let mut after = c.clone();
                for _ in 0..20 {
                    let now = client.call(ChatShow { chat: chat.clone() }).await?;
                    after = now;
                    if after.answering.is_none() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                print_messages(&after, c.messages.last().map_or(0, |m| m.n));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_messages(c: &ChatView, after: u64) {
    for m in c.messages.iter().filter(|m| m.n > after) {
        match m.kind.as_str() {
            "person" => outln!("you: {}", m.text),
            "lead" => outln!("{}: {}", c.agent, m.text),
            _ => outln!("{}bosun: {}", if m.failed { "!! " } else { "" }, m.text),
        }
    }
}

/// Follows an answer's run and prints what the lead writes as it comes (with --json, the
/// CLI's own stream-json lines).
async fn stream_answer(client: &mut bosun_ui::Client, run: &str, json: bool) -> anyhow::Result<()> {
    let Following { sub, .. } = client
        .call(FollowParams {
            run: run.to_string(),
            from_seq: 0,
            follow: true,
            stream: None,
            direct: false,
        })
        .await?;
    let mut partial: Vec<u8> = Vec::new();
    let stdout = std::io::stdout();
    loop {
        let Some(event) = client.next_event().await? else {
            anyhow::bail!("bosund closed the connection before the answer ended");
        };
        match event {
            Event::Log {
                sub: s,
                stream,
                data,
                ..
            } if s == sub => {
                if stream == Stream::Note {
                    for line in String::from_utf8_lossy(data.as_slice()).lines() {
                        errln!("bosun: {line}");
                    }
                    continue;
                }
                if stream != Stream::Stdout {
                    continue;
                }
                partial.extend_from_slice(data.as_slice());
                while let Some(i) = partial.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = partial.drain(..=i).collect();
                    let mut out = stdout.lock();
                    if json {
                        out.write_all(&line)?;
                    } else if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                        print_line(&mut out, &v)?;
                    }
                    out.flush()?;
                }
            }
            Event::LogEnd { sub: s, .. } if s == sub => return Ok(()),
            Event::LogFailed {
                sub: s, message, ..
            } if s == sub => anyhow::bail!(message),
            Event::Log { .. }
            | Event::LogLagged { .. }
            | Event::LogProgress { .. }
            | Event::LogEnd { .. }
            | Event::LogFailed { .. }
            | Event::RunChanged { .. }
            | Event::PendingChanged { .. }
            | Event::ApprovalChanged { .. }
            | Event::ChatMessage { .. }
            | Event::StorageFault { .. }
            | Event::StorageRecovered { .. }
            | Event::Notification { .. } => {}
        }
    }
}

/// One stream-json line of Claude Code, for a person: the lead's text, and its calls.
fn print_line(out: &mut impl Write, v: &Value) -> std::io::Result<()> {
    if v["type"] != "assistant" {
        return Ok(());
    }
    for block in v["message"]["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => writeln!(out, "{}", block["text"].as_str().unwrap_or_default())?,
            Some("tool_use") => {
                writeln!(out, "  · {}", block["name"].as_str().unwrap_or_default())?
            }
            Some(_) | None => {}
        }
    }
    Ok(())
}

async fn print_waiting(client: &mut bosun_ui::Client, c: &ChatView) -> anyhow::Result<()> {
    let actions = client
        .call(bosun_protocol::lead::Inbox {
            chat: Some(c.id.to_string()),
        })
        .await?;
    if !actions.is_empty() {
        outln!("\nWaiting for your OK:");
        super::inbox::print_actions(&actions);
    }
    Ok(())
}
