//! A board check in the board checks' chat: the board's findings are offered to the lead, the
//! cards whose window after QA closed are told to the person, and once the lead's answer ends,
//! the merges refused for the person are told too.

use crate::ChatsError;
use bosun_shared::notice::{Notice, NotificationKind};

use super::ChatEvent;
use bosun_shared::{CardId, ChatId, Timestamp};
use tracing::{info, warn};

use super::ChatsState;
use crate::record::{ChatChange, ChatRecord, MessageKind};
use bosun_board::{BoardRequest, Findings};

impl ChatsState {
    /// Of the cards a board check offered, those whose merge was refused for the person (failed
    /// checks, conflicts, a blocked merge): each with what to tell the person.
    pub(super) async fn needs_person(&self, offered: &[CardId]) -> Vec<(CardId, String)> {
        if offered.is_empty() {
            return Vec::new();
        }
        let ask = |reply| BoardRequest::MergeOffers {
            cards: offered.to_vec(),
            reply,
        };
        let offers = match bosun_board::ask(&self.ctx.tools.board, ask).await {
            Ok(offers) => offers,
            Err(e) => {
                warn!(error = %e, "how the board check's merges went could not be read");
                return Vec::new();
            }
        };
        offers
            .into_iter()
            .filter(|o| !o.merged)
            .filter_map(|o| {
                o.refused.map(|why| {
                    (
                        o.card,
                        format!(
                            "Card {} ({}) needs you: the lead cannot merge it. {}",
                            o.short_id,
                            o.title,
                            why.strip_prefix("merge_pull_request refused: ")
                                .map_or(why.clone(), upper_first)
                        ),
                    )
                })
            })
            .collect()
    }

    /// A board check in this chat: the board's findings (cards in Review that QA passed, in a
    /// project that lets the lead merge) are marked offered, and the lead is started for them;
    /// the cards whose window after QA closed without a merge are told to the person here.
    /// Skipped while the lead is still answering here (the next check offers them).
    pub(super) async fn board_check(&mut self, id: ChatId) -> Result<(), ChatsError> {
        let Some(chat) = self.chats.get(&id).cloned() else {
            return Ok(());
        };
        if chat.answering.is_some() {
            return Ok(());
        }
        let ask = |reply| BoardRequest::MergeFindings { mark: true, reply };
        let Findings { findings, closed } = bosun_board::ask(&self.ctx.tools.board, ask)
            .await
            .map_err(|e| ChatsError::unavailable(format!("the board did not answer: {e}")))?;
        let chat = if closed.is_empty() {
            chat
        } else {
            self.tell_closed(chat, closed).await?
        };
        if findings.is_empty() {
            info!(chat_id = %id, "a board check found nothing to offer the lead");
            return Ok(());
        }
        let lines: Vec<String> = findings
            .iter()
            .map(|f| {
                format!(
                    "- card {} \"{}\" (project {}){}",
                    f.short_id,
                    f.title,
                    f.project,
                    f.again
                        .map(|why| format!(", offered again: {}", why.words()))
                        .unwrap_or_default()
                )
            })
            .collect();
        let prompt = format!(
            "Board check (from bosun, not from the person). These cards are in Review, QA passed their pull request's head commit, and their project lets you merge:\n{}\n\nFor each card, call merge_pull_request with its id. Merge what the tool allows, and never work around a refusal: do not push, re-run checks, move or edit the card to get past a rule. End with a short summary for the person: what you merged, what has to wait, and what needs them.",
            lines.join("\n")
        );
        let mut chat = chat;
        let note = Self::message(
            &mut chat,
            MessageKind::Note,
            format!(
                "Board check: offered to the lead for merging:\n{}",
                lines.join("\n")
            ),
            false,
        );
        let offered = findings.iter().map(|f| f.card).collect();
        let (_, run) = self.answer(chat, note, &prompt, offered).await?;
        info!(chat_id = %id, run = %run.record.id, cards = findings.len(), "a board check started the lead");
        Ok(())
    }

    /// Tells the person, in the board checks' chat and by a notification, of each card whose
    /// window after QA closed without a merge (the board has recorded it as told, and said so
    /// in the card's activity). The chat as it is now.
    pub(super) async fn tell_closed(
        &mut self,
        mut chat: ChatRecord,
        closed: Vec<bosun_board::Closed>,
    ) -> Result<ChatRecord, ChatsError> {
        let mut changes = Vec::new();
        for c in &closed {
            let note = Self::message(&mut chat, MessageKind::Note, c.said.clone(), false);
            changes.push(ChatChange::Message(Box::new(note)));
        }
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        self.save(changes).await?;
        self.chats.insert(chat.id, chat.clone());
        for c in closed {
            (self.ctx.tell)(ChatEvent::Notice(Notice {
                kind: NotificationKind::NeedsYou,
                text: c.said,
                card: Some(c.card),
                chat: Some(chat.id),
                at: Timestamp::now(),
            }));
        }
        Ok(chat)
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
