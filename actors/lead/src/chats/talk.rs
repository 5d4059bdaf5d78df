//! A chat's conversation: a new chat with the lead, the person's messages, the lead's answers
//! (each a Claude Code run, started here and looked at for its end) and the chat as it is shown.

use crate::record::ChatReads;
use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
use std::path::PathBuf;

use crate::ChatsError;
use bosun_runs::record::RunSnapshot;
use bosun_shared::notice::{Notice, NotificationKind};

use super::{Chat, ChatEvent};
use bosun_shared::{AnswerId, CardId, ChatId, RunToken, Timestamp};
use ractor::ActorProcessingErr;
use tracing::info;

use super::ChatsState;
use crate::record::{AnswerRecord, ChatChange, ChatRecord, MessageKind, MessageRecord};
use bosun_agents::launch::{self, ChatLaunch};
use bosun_kit::offload::blocking;

const MAX_MESSAGE: usize = 256 * 1024;

impl ChatsState {
    pub(super) async fn view(&self, id: ChatId, with_messages: bool) -> Result<Chat, ChatsError> {
        let c = self
            .chats
            .get(&id)
            .ok_or_else(|| ChatsError::internal("the chat went away"))?;
        let store = self.ctx.store.clone();
        let agent = match blocking(move || store.agents())
            .await?
            .map_err(ChatsError::from)
        {
            Ok(list) => list
                .into_iter()
                .find(|a| a.id == c.agent)
                .map_or_else(|| format!("{} (removed)", c.agent.short()), |a| a.name),
            Err(e) => return Err(e),
        };
        let messages = if with_messages {
            let store = self.ctx.store.clone();
            blocking(move || store.messages(id)).await??.to_vec()
        } else {
            Vec::new()
        };
        Ok(Chat {
            id,
            agent,
            created_at: c.created_at,
            answering: c.answering.as_ref().and_then(|a| a.run),
            waiting: self.waiting(Some(id)).len() as u32,
            messages,
            board_checks: c.board_checks,
        })
    }

    /// A new chat with the lead (`board_checks`: the board checks' chat).
    pub(super) async fn new_chat(
        &mut self,
        agent: Option<String>,
        board_checks: bool,
    ) -> Result<Chat, ChatsError> {
        let store = self.ctx.store.clone();
        let agents = blocking(move || store.agents()).await??;
        let lead = match agent {
            Some(name) => bosun_agents::registry::find(&self.ctx.store, &name).await?,
            None => {
                let leads: Vec<_> = agents.into_iter().filter(|a| a.role == "lead").collect();
                match leads.as_slice() {
                    [one] => one.clone(),
                    [] => {
                        return Err(ChatsError::invalid(
                            "there is no lead to chat with: add one with `bosun agent add lead --cli claude --role lead --secret-env ANTHROPIC_API_KEY …`, or name an agent with --agent",
                        ));
                    }
                    [_, _, ..] => {
                        return Err(ChatsError::invalid(format!(
                            "several agents have the role lead ({}); say which with --agent",
                            leads
                                .iter()
                                .map(|a| a.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
            }
        };
        if lead.cli != bosun_shared::agents::CliKind::Claude {
            return Err(ChatsError::invalid(format!(
                "the lead answers through Claude Code, and `{}` is a {} agent",
                lead.name, lead.cli
            )));
        }
        let chat = ChatRecord {
            id: ChatId::new(),
            agent: lead.id,
            created_at: Timestamp::now(),
            session: None,
            session_run: None,
            messages: 0,
            answering: None,
            untold: Vec::new(),
            files: Vec::new(),
            next_action: 1,
            board_checks,
        };
        self.save(vec![ChatChange::Chat(Box::new(chat.clone()))])
            .await?;
        let id = chat.id;
        self.chats.insert(id, chat);
        info!(chat_id = %id, lead = %lead.name, "chat started");
        self.view(id, false).await
    }

    pub(super) async fn send(
        &mut self,
        id: ChatId,
        message: String,
        files: Vec<PathBuf>,
    ) -> Result<(Chat, RunSnapshot), ChatsError> {
        let Some(mut chat) = self.chats.get(&id).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        if chat.answering.is_some() {
            return Err(ChatsError::conflict(format!(
                "the lead is still answering in this chat; wait for it (`bosun chat show {} -f`) and send then",
                id.short()
            )));
        }
        if message.trim().is_empty() || message.len() > MAX_MESSAGE || message.contains('\0') {
            return Err(ChatsError::invalid(
                "a message is 1 byte to 256 KiB of text with no NUL byte",
            ));
        }
        for f in &files {
            if !f.is_absolute() || !f.is_file() {
                return Err(ChatsError::invalid(format!(
                    "{} is not a file (give an absolute path to an existing file)",
                    f.display()
                )));
            }
        }
        chat.files
            .extend(files.iter().map(|f| f.display().to_string()));
        let person = Self::message(&mut chat, MessageKind::Person, message.clone(), false);
        self.answer(chat, person, &message, Vec::new()).await
    }

    /// Starts the lead's answer to `said` (the person's message, or a board check's note) with
    /// `message` as its prompt; `offered`: the cards a board check offers it.
    pub(super) async fn answer(
        &mut self,
        mut chat: ChatRecord,
        said: MessageRecord,
        message: &str,
        offered: Vec<CardId>,
    ) -> Result<(Chat, RunSnapshot), ChatsError> {
        let id = chat.id;
        let url =
            self.ctx.mcp_url.get().cloned().ok_or_else(|| {
                ChatsError::unavailable("bosun's MCP server is starting; try again")
            })?;
        // What the person decided since the last answer comes first.
        let prompt = if chat.untold.is_empty() {
            message.to_string()
        } else {
            format!("[{}]\n\n{message}", chat.untold.join(" "))
        };
        let token = RunToken::generate();
        let token_text = token.expose().to_string();
        let answer = AnswerRecord {
            id: AnswerId::new(),
            run: None,
            token_digest: token.digest(),
            started_at: Timestamp::now(),
            offered,
        };
        chat.untold.clear();
        chat.answering = Some(answer.clone());
        self.save(vec![
            ChatChange::Message(Box::new(said)),
            ChatChange::Chat(Box::new(chat.clone())),
        ])
        .await?;
        self.chats.insert(id, chat.clone());
        self.ctx
            .answers
            .open(answer.token_digest.clone(), id, answer.id, None);
        let launch = ChatLaunch {
            url,
            token: token_text,
            answer: (id, answer.id),
            // A board check uses no tool from outside bosun.
            only_bosun: chat.board_checks,
        };
        let started = self.start_answer(&chat, &prompt, launch).await;
        match started {
            Ok(run) => {
                chat.answering = Some(AnswerRecord {
                    run: Some(run.record.id),
                    ..answer.clone()
                });
                self.save(vec![ChatChange::Chat(Box::new(chat.clone()))])
                    .await?;
                self.chats.insert(id, chat);
                self.ctx.answers.set_run(answer.id, run.record.id);
                Ok((self.view(id, false).await?, run))
            }
            Err(e) => {
                self.ctx.answers.close(answer.id);
                chat.answering = None;
                let note = Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("The lead's answer could not start: {e}"),
                    true,
                );
                self.save(vec![
                    ChatChange::Message(Box::new(note)),
                    ChatChange::Chat(Box::new(chat.clone())),
                ])
                .await?;
                self.chats.insert(id, chat);
                Err(e)
            }
        }
    }

    pub(super) async fn start_answer(
        &self,
        chat: &ChatRecord,
        prompt: &str,
        launch: ChatLaunch,
    ) -> Result<RunSnapshot, ChatsError> {
        let spec = launch::prepare_with(
            &self.ctx.tools.agents_ctx,
            &chat.agent.to_string(),
            prompt,
            Some(launch),
            chat.session.clone().map(|session| launch::Resume {
                session,
                run: chat.session_run,
            }),
        )
        .await?;
        Ok(bosun_runs::start(&self.ctx.tools.runs, spec).await?)
    }

    /// Looks for answers that ended.
    pub(super) async fn tick(&mut self) -> Result<(), ActorProcessingErr> {
        let live: Vec<(ChatId, AnswerRecord)> = self
            .chats
            .values()
            .filter_map(|c| c.answering.clone().map(|a| (c.id, a)))
            .collect();
        for (chat, answer) in live {
            let Some(run) = answer.run else { continue };
            let store = self.ctx.store.clone();
            let Ok(Ok(Some(rec))) = blocking(move || store.run(run)).await else {
                continue;
            };
            if !rec.state.is_final() {
                continue;
            }
            let Some(mut c) = self.chats.get(&chat).cloned() else {
                continue;
            };
            let agent = rec.agent.clone().unwrap_or_default();
            if agent.session.is_some() {
                c.session = agent.session.clone();
                c.session_run = Some(rec.id);
            }
            let result = agent.result.clone();
            let msg = match result {
                Some(r) if !r.is_error => {
                    Self::message(&mut c, MessageKind::Lead, r.text.unwrap_or_default(), false)
                }
                Some(r) => Self::message(
                    &mut c,
                    MessageKind::Note,
                    format!(
                        "The lead's answer failed: {}",
                        r.text
                            .or(r.reason)
                            .unwrap_or_else(|| "no reason given".into())
                    ),
                    true,
                ),
                None => Self::message(
                    &mut c,
                    MessageKind::Note,
                    format!(
                        "The lead's answer ended without a result ({})",
                        rec.exit
                            .map(|e| e.reason)
                            .unwrap_or_else(|| rec.state.to_string())
                    ),
                    true,
                ),
            };
            let mut changes = vec![ChatChange::Message(Box::new(msg))];
            // A board check's answer: the merges refused for the person are told here.
            let mut told = Vec::new();
            for (card, text) in self.needs_person(&answer.offered).await {
                let note = Self::message(&mut c, MessageKind::Note, text.clone(), false);
                changes.push(ChatChange::Message(Box::new(note)));
                told.push((card, text));
            }
            c.answering = None;
            changes.push(ChatChange::Chat(Box::new(c.clone())));
            self.save(changes).await?;
            self.chats.insert(chat, c);
            self.ctx.answers.close(answer.id);
            for (card, text) in told {
                (self.ctx.tell)(ChatEvent::Notice(Notice {
                    kind: NotificationKind::NeedsYou,
                    text,
                    card: Some(card),
                    chat: Some(chat),
                    at: Timestamp::now(),
                }));
            }
        }
        Ok(())
    }
}
