//! The board check's side of the merge: the cards QA passed that are offered to the lead (again
//! while their merge had to wait, within the window after QA), the cards whose window closed, and
//! how each offered merge went.

use std::time::Duration;

use bosun_shared::{CardId, Timestamp};
use tracing::{info, warn};

use super::Why;
use crate::record::{BoardChange, MergeOffer};
use crate::{BoardError, BoardState};

/// How long after QA passed a card a board check offers its merge again while it has to wait,
/// unless `BOSUN_MERGE_WAIT_SECS` says.
const MERGE_WAIT: Duration = Duration::from_secs(3 * 60 * 60);

fn merge_wait_window() -> Duration {
    std::env::var("BOSUN_MERGE_WAIT_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(MERGE_WAIT, Duration::from_secs)
}

/// A board check's findings: cards QA passed, for the lead to merge; and cards whose window
/// after QA closed with their merge still owed, for the person.
#[derive(Clone, Debug)]
pub struct Findings {
    pub findings: Vec<Finding>,
    pub closed: Vec<Closed>,
}

/// A card a board check offers the lead to merge.
#[derive(Clone, Debug)]
pub struct Finding {
    pub card: CardId,
    pub short_id: String,
    pub title: String,
    pub project: String,
    /// Offered before for the same QA verdict, and why it is offered again.
    pub again: Option<Again>,
}

/// Why a card offered before is offered again, while the window after QA lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Again {
    /// Its merge had to wait (checks running, mergeability not worked out yet).
    Waited,
    /// The lead never called `merge_pull_request` for it.
    NotTried,
}

impl Again {
    /// Why, in words, after "offered again: ".
    pub fn words(self) -> &'static str {
        match self {
            Again::Waited => "its merge had to wait",
            Again::NotTried => "the lead did not try to merge it when it was offered",
        }
    }
}

/// A card whose window after QA closed with its merge still owed: the person is told, once.
#[derive(Clone, Debug)]
pub struct Closed {
    pub card: CardId,
    pub short_id: String,
    pub title: String,
    /// What to tell the person: what happened and what to do.
    pub said: String,
}

/// A duration in words: "3 hours", "90 minutes", "1 second".
fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    let (n, unit) = if s >= 3600 && s.is_multiple_of(3600) {
        (s / 3600, "hour")
    } else if s >= 60 && s.is_multiple_of(60) {
        (s / 60, "minute")
    } else {
        (s, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// How the merge of a card offered by a board check went, as the card says now.
#[derive(Clone, Debug)]
pub struct OfferNow {
    pub card: CardId,
    pub short_id: String,
    pub title: String,
    /// The merge had to wait: offered again by a later check (while the window lasts).
    pub wait: bool,
    /// Refused for the person: why.
    pub refused: Option<String>,
    /// Merged by the lead.
    pub merged: bool,
}

impl BoardState {
    /// The board check's findings: each card in Review that QA passed, in a project that lets
    /// the lead merge, not held, no run going, no merge asked — not offered yet for its latest
    /// QA verdict, or offered and its merge had to wait or was never tried by the lead, while
    /// the window after QA lasts. With `mark`, each is recorded as offered now (before the lead
    /// hears of it). Also the cards whose window closed with their merge still owed, not told
    /// yet: with `mark`, each is recorded as told, and its activity says so.
    pub(crate) async fn findings(&mut self, mark: bool) -> Result<Findings, BoardError> {
        let states = self.run_states(false).await;
        let window = merge_wait_window();
        let now = Timestamp::now();
        let mut found: Vec<(Timestamp, Finding)> = Vec::new();
        let mut closing: Vec<(CardId, Again)> = Vec::new();
        for card in self.cards.values() {
            let Some(project) = card.project.and_then(|p| self.projects.get(&p)) else {
                continue;
            };
            let Some(qa) = card.qa.as_ref().filter(|q| q.pass) else {
                continue;
            };
            if !project.lead_may_merge
                || !project.testing
                || !self.column_name(card.column).eq_ignore_ascii_case("review")
                || card.hold.is_some()
                || card.merge.is_some()
                || card.merged.is_some()
                || self.in_progress(card, &states)
            {
                continue;
            }
            let again = match &card.offer {
                Some(o) if o.qa_run == qa.run && o.qa_head == qa.head => {
                    let owed = if o.wait {
                        Again::Waited
                    } else if !o.tried {
                        Again::NotTried
                    } else {
                        continue;
                    };
                    if now.since(qa.at) >= window {
                        if !o.closed {
                            closing.push((card.id, owed));
                        }
                        continue;
                    }
                    Some(owed)
                }
                Some(_) | None => None,
            };
            found.push((
                qa.at,
                Finding {
                    card: card.id,
                    short_id: card.id.short(),
                    title: card.title.clone(),
                    project: project.name.clone(),
                    again,
                },
            ));
        }
        found.sort_by_key(|(at, f)| (*at, f.card));
        let findings: Vec<Finding> = found.into_iter().map(|(_, f)| f).collect();
        if mark && !findings.is_empty() {
            let mut changes = Vec::new();
            let mut marked = Vec::new();
            for f in &findings {
                let Some(mut card) = self.cards.get(&f.card).cloned() else {
                    continue;
                };
                let Some(qa) = card.qa.clone() else { continue };
                card.offer = Some(MergeOffer {
                    qa_run: qa.run,
                    qa_head: qa.head.clone(),
                    at: now,
                    wait: false,
                    refused: None,
                    tried: false,
                    closed: false,
                });
                card.log(match f.again {
                    Some(why) => format!(
                        "offered to the lead again by a board check: {}",
                        why.words()
                    ),
                    None => "offered to the lead by a board check: QA passed it, and its project lets the lead merge".to_string(),
                });
                changes.push(BoardChange::Card(Box::new(card.clone())));
                marked.push(card);
            }
            self.save(changes).await?;
            for card in marked {
                self.cards.insert(card.id, card);
            }
        }
        let closed = self.windows_closed(closing, window, mark).await?;
        Ok(Findings { findings, closed })
    }

    /// The cards whose window after QA closed with their merge still owed, in words for the
    /// person; with `mark`, each is recorded as told and its activity says so.
    async fn windows_closed(
        &mut self,
        closing: Vec<(CardId, Again)>,
        window: Duration,
        mark: bool,
    ) -> Result<Vec<Closed>, BoardError> {
        let mut closed = Vec::new();
        let mut changes = Vec::new();
        let mut marked = Vec::new();
        for (id, owed) in closing {
            let Some(mut card) = self.cards.get(&id).cloned() else {
                continue;
            };
            let why = match owed {
                Again::Waited => {
                    "its merge had to wait (checks still running, or GitHub still working out whether it can be merged)"
                }
                Again::NotTried => "the lead was offered it but never tried to merge it",
            };
            let what = format!(
                "merge window closed without a merge: {why}, and a board check offers a card to the lead only for {} after QA passed it",
                duration_words(window)
            );
            let todo = "Merge its pull request yourself, or move it to Testing so that QA passes it again and a new window opens.";
            closed.push(Closed {
                card: id,
                short_id: id.short(),
                title: card.title.clone(),
                said: format!(
                    "Card {} ({}) needs you: the {what}. {todo}",
                    id.short(),
                    card.title
                ),
            });
            if let Some(o) = card.offer.as_mut() {
                o.closed = true;
            }
            card.log(format!("The {what}. {todo}"));
            changes.push(BoardChange::Card(Box::new(card.clone())));
            marked.push(card);
        }
        if mark && !changes.is_empty() {
            self.save(changes).await?;
            for card in marked {
                info!(card = %card.id, "a card's merge window closed without a merge; the person is told");
                self.cards.insert(card.id, card);
            }
        }
        Ok(closed)
    }

    /// How the merges of the cards a board check offered went.
    pub(crate) fn offers(&self, cards: &[CardId]) -> Vec<OfferNow> {
        cards
            .iter()
            .filter_map(|id| self.cards.get(id))
            .map(|c| OfferNow {
                card: c.id,
                short_id: c.id.short(),
                title: c.title.clone(),
                wait: c.offer.as_ref().is_some_and(|o| o.wait),
                refused: c.offer.as_ref().and_then(|o| o.refused.clone()),
                merged: c.merge.as_ref().is_some_and(|m| m.done) || c.merged.is_some(),
            })
            .collect()
    }

    /// The lead's merge of a card a board check offered was refused: one to wait out is
    /// offered again by the next check; one for the person is kept, to be told in a chat.
    pub(super) async fn offer_answered(&mut self, id: CardId, why: Why, e: &BoardError) {
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return;
        };
        let (Some(qa), Some(offer)) = (card.qa.clone(), card.offer.as_mut()) else {
            return;
        };
        if offer.qa_run != qa.run || offer.qa_head != qa.head {
            return;
        }
        offer.tried = true;
        match why {
            Why::Wait => {
                offer.wait = true;
                offer.refused = None;
            }
            Why::Person => {
                offer.wait = false;
                offer.refused = Some(e.to_string());
            }
            Why::Other => {
                offer.wait = false;
                offer.refused = None;
            }
        }
        if let Err(e) = self
            .save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await
        {
            warn!(card = %id, error = %e, "how the lead's merge went could not be kept on the card");
            return;
        }
        self.cards.insert(id, card);
    }
}
