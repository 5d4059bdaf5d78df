//! Pending actions: a privileged call after an outside tool kept for the person (once; a newer
//! write of the same note takes the older one's place), shown with a preview, and approved or
//! discarded, each decision committed before its call runs; after a restart, an approval cut
//! off is recorded failed.

use crate::ChatsError;
use bosun_shared::{ActionId, AnswerId, ChatId, Timestamp};
use ractor::ActorProcessingErr;
use serde_json::Value;
use tracing::{info, warn};

use super::{ChatsState, NOTHING_WAITS, PendingAction, line_of};
use crate::record::{
    AnswerRecord, ChatChange, ChatRecord, MessageKind, MessageRecord, PendingRecord, PendingState,
};
use crate::tools::{self, LeadTool};
use bosun_agents::stream::input_digest;

fn same_call(p: &PendingRecord, tool: LeadTool, args: &Value) -> bool {
    p.tool == tool.name() && input_digest(&p.args) == input_digest(args)
}

/// What the lead's tool result says of a call kept for the person.
pub fn kept_words(tool: LeadTool, cause: &str) -> String {
    format!(
        "{tool} wasn't run: this answer used {cause}, a tool from outside bosun. bosun keeps the call for the person to approve with one click. Tell them in a sentence what it does."
    )
}

impl ChatsState {
    /// The waiting actions (of one chat, or all), in the order tried.
    pub(super) fn waiting(&self, chat: Option<ChatId>) -> Vec<ActionId> {
        let mut w: Vec<&PendingRecord> = self
            .pending
            .values()
            .filter(|p| p.state == PendingState::Waiting && chat.is_none_or(|c| p.chat == c))
            .collect();
        w.sort_by_key(|p| (p.chat, p.order));
        w.into_iter().map(|p| p.id).collect()
    }

    pub(super) async fn views(&self, ids: &[ActionId]) -> Vec<PendingAction> {
        let records: Vec<PendingRecord> = ids
            .iter()
            .filter_map(|id| self.pending.get(id).cloned())
            .collect();
        self.views_of(&records).await
    }

    pub(super) async fn views_of(&self, records: &[PendingRecord]) -> Vec<PendingAction> {
        let mut out = Vec::new();
        for p in records {
            let (preview, would_fail) = match LeadTool::parse(&p.tool) {
                Ok(tool) if p.state == PendingState::Waiting => {
                    tools::preview(&self.ctx.tools, tool, &p.args, Some(p.chat)).await
                }
                Ok(_) => (String::new(), None),
                Err(why) => (String::new(), Some(why.to_string())),
            };
            out.push(PendingAction {
                record: p.clone(),
                line: line_of(p),
                preview,
                would_fail,
            });
        }
        out
    }

    /// After a restart: approvals cut off are failed, answers go on or are over.
    pub(super) async fn recover(&mut self) -> Result<(), ActorProcessingErr> {
        let cut: Vec<ActionId> = self
            .pending
            .values()
            .filter(|p| matches!(p.state, PendingState::Approving { .. }))
            .map(|p| p.id)
            .collect();
        for id in cut {
            let Some(mut p) = self.pending.get(&id).cloned() else {
                continue;
            };
            let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
                continue;
            };
            let line = line_of(&p);
            let why =
                "bosund stopped while it was being carried out: it may or may not have happened"
                    .to_string();
            p.state = PendingState::Failed {
                at: Timestamp::now(),
                why: why.clone(),
            };
            let note = Self::message(
                &mut chat,
                MessageKind::Note,
                format!("It failed: {line}: {why}."),
                true,
            );
            chat.untold.push(format!(
                "Approved, but cut off by a restart (may or may not have happened): {line}."
            ));
            self.save(vec![
                ChatChange::Pending(Box::new(p.clone())),
                ChatChange::Message(Box::new(note)),
                ChatChange::Chat(Box::new(chat.clone())),
            ])
            .await?;
            warn!(action = %id, "an approval was cut off by a restart; recorded as failed");
            self.pending.insert(id, p);
            self.chats.insert(chat.id, chat);
        }
        let answering: Vec<(ChatId, AnswerRecord)> = self
            .chats
            .values()
            .filter_map(|c| c.answering.clone().map(|a| (c.id, a)))
            .collect();
        for (chat, answer) in answering {
            match answer.run {
                Some(run) => {
                    self.ctx
                        .answers
                        .open(answer.token_digest.clone(), chat, answer.id, Some(run))
                }
                None => {
                    // Cut off before its run was made: it never began.
                    let Some(mut c) = self.chats.get(&chat).cloned() else {
                        continue;
                    };
                    c.answering = None;
                    let note = Self::message(
                        &mut c,
                        MessageKind::Note,
                        "The lead's answer was cut off by a restart before it began; send the message again.".into(),
                        true,
                    );
                    self.save(vec![
                        ChatChange::Message(Box::new(note)),
                        ChatChange::Chat(Box::new(c.clone())),
                    ])
                    .await?;
                    self.chats.insert(chat, c);
                }
            }
        }
        Ok(())
    }

    pub(super) async fn pend(
        &mut self,
        chat_id: ChatId,
        answer: AnswerId,
        tool: LeadTool,
        args: Value,
        cause: String,
    ) -> Result<String, ActorProcessingErr> {
        let words = kept_words(tool, &cause);
        let Some(mut chat) = self.chats.get(&chat_id).cloned() else {
            return Ok(format!("{tool} wasn't run: its chat is gone."));
        };
        // The same call made twice is kept once.
        if self.pending.values().any(|p| {
            p.chat == chat_id && p.state == PendingState::Waiting && same_call(p, tool, &args)
        }) {
            return Ok(words);
        }
        let id = ActionId::new();
        let mut changes = Vec::new();
        // A newer write or append of the same note takes the older one's place.
        if matches!(tool, LeadTool::MemoryWrite | LeadTool::MemoryAppend) {
            let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
            let older: Vec<ActionId> = self
                .pending
                .values()
                .filter(|p| {
                    p.chat == chat_id
                        && p.state == PendingState::Waiting
                        && matches!(
                            LeadTool::parse(&p.tool),
                            Ok(LeadTool::MemoryWrite | LeadTool::MemoryAppend)
                        )
                        && p.args.get("path").and_then(Value::as_str) == Some(path)
                })
                .map(|p| p.id)
                .collect();
            for o in older {
                if let Some(mut p) = self.pending.get(&o).cloned() {
                    p.state = PendingState::Replaced { by: id };
                    changes.push(ChatChange::Pending(Box::new(p)));
                }
            }
        }
        let rec = PendingRecord {
            id,
            chat: chat_id,
            answer,
            tool: tool.name().to_string(),
            args,
            cause,
            at: Timestamp::now(),
            order: chat.next_action,
            state: PendingState::Waiting,
        };
        chat.next_action += 1;
        changes.push(ChatChange::Pending(Box::new(rec.clone())));
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        bosun_kit::crash::point("pending-before-commit");
        // Memory takes the changes only once they are saved, replaced ones included.
        let replaced: Vec<PendingRecord> = changes
            .iter()
            .filter_map(|c| match c {
                ChatChange::Pending(p) if p.id != id => Some(p.as_ref().clone()),
                ChatChange::Pending(_) | ChatChange::Message(_) | ChatChange::Chat(_) => None,
            })
            .collect();
        self.save(changes).await?;
        bosun_kit::crash::point("pending-after-commit");
        info!(chat_id = %chat_id, action = %id, tool = %rec.tool, "a call waits for the person's OK");
        for p in replaced {
            self.pending.insert(p.id, p);
        }
        self.pending.insert(id, rec);
        self.chats.insert(chat_id, chat);
        Ok(words)
    }

    pub(super) async fn ran_itself(
        &mut self,
        chat_id: ChatId,
        tool: LeadTool,
        args: &Value,
    ) -> Result<(), ActorProcessingErr> {
        let twins: Vec<ActionId> = self
            .pending
            .values()
            .filter(|p| {
                p.chat == chat_id && p.state == PendingState::Waiting && same_call(p, tool, args)
            })
            .map(|p| p.id)
            .collect();
        for id in twins {
            let (Some(mut p), Some(mut chat)) = (
                self.pending.get(&id).cloned(),
                self.chats.get(&chat_id).cloned(),
            ) else {
                continue;
            };
            let line = line_of(&p);
            p.state = PendingState::Gone {
                why: "the lead made the same call itself, and it ran".into(),
            };
            let note = Self::message(
                &mut chat,
                MessageKind::Note,
                format!(
                    "The lead made this call itself, so the one waiting for your OK is gone: {line}."
                ),
                false,
            );
            self.save(vec![
                ChatChange::Pending(Box::new(p.clone())),
                ChatChange::Message(Box::new(note)),
                ChatChange::Chat(Box::new(chat.clone())),
            ])
            .await
            .map_err(|e| ActorProcessingErr::from(e.to_string()))?;
            self.pending.insert(id, p);
            self.chats.insert(chat_id, chat);
        }
        Ok(())
    }

    pub(super) fn decidable(&self, id: ActionId) -> Result<PendingRecord, ChatsError> {
        let p = self
            .pending
            .get(&id)
            .cloned()
            .ok_or_else(|| ChatsError::internal("the action went away"))?;
        if p.state != PendingState::Waiting {
            return Err(ChatsError::conflict(format!(
                "action {} was {} already; each runs once at most",
                id.short(),
                p.state.word()
            )));
        }
        Ok(p)
    }

    pub(super) async fn approve(&mut self, id: ActionId) -> Result<(), ChatsError> {
        let mut p = self.decidable(id)?;
        let line = line_of(&p);
        // The decision, durably, before the call runs.
        p.state = PendingState::Approving {
            at: Timestamp::now(),
        };
        self.save(vec![ChatChange::Pending(Box::new(p.clone()))])
            .await?;
        self.pending.insert(id, p.clone());
        bosun_kit::crash::point("approve-after-decision");
        let result = match LeadTool::parse(&p.tool) {
            Ok(tool) => tools::execute(&self.ctx.tools, tool, &p.args, None, Some(p.chat)).await,
            Err(why) => Err(why.into()),
        };
        bosun_kit::crash::point("approve-after-execution");
        let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        let note = match &result {
            Ok(text) => {
                p.state = PendingState::Approved {
                    at: Timestamp::now(),
                    result: text.clone(),
                };
                chat.untold.push(format!("Approved: {line}."));
                let first = text.lines().next().unwrap_or_default();
                Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("Approved: {line}. {first}"),
                    false,
                )
            }
            Err(why) => {
                p.state = PendingState::Failed {
                    at: Timestamp::now(),
                    why: why.to_string(),
                };
                chat.untold
                    .push(format!("Approved, but it failed: {line}: {why}."));
                Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("It failed: {line}: {why}"),
                    true,
                )
            }
        };
        self.finish_decision(p, chat, note).await
    }

    pub(super) async fn discard(&mut self, id: ActionId) -> Result<(), ChatsError> {
        let mut p = self.decidable(id)?;
        let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        let line = line_of(&p);
        p.state = PendingState::Discarded {
            at: Timestamp::now(),
        };
        chat.untold.push(format!("Discarded: {line}."));
        let note = Self::message(
            &mut chat,
            MessageKind::Note,
            format!("Discarded: {line}."),
            false,
        );
        self.finish_decision(p, chat, note).await
    }

    pub(super) async fn finish_decision(
        &mut self,
        p: PendingRecord,
        mut chat: ChatRecord,
        note: MessageRecord,
    ) -> Result<(), ChatsError> {
        let mut changes = vec![
            ChatChange::Pending(Box::new(p.clone())),
            ChatChange::Message(Box::new(note)),
        ];
        // Memory changes only with the store: a decision that cannot be saved (a full disk)
        // leaves the action as it was, to be decided again.
        let before = self.pending.insert(p.id, p.clone());
        let none_left = self.waiting(Some(chat.id)).is_empty();
        if none_left && chat.answering.is_none() {
            let last = Self::message(&mut chat, MessageKind::Note, NOTHING_WAITS.into(), false);
            changes.push(ChatChange::Message(Box::new(last)));
        }
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        if let Err(e) = self.save(changes).await {
            match before {
                Some(old) => self.pending.insert(p.id, old),
                None => self.pending.remove(&p.id),
            };
            return Err(e);
        }
        self.chats.insert(chat.id, chat);
        Ok(())
    }
}
