//! The board and its cards as the Board answers them: each record with what only the board sees
//! beside it (its assignee's and project's names, its column, its latest run's state, its
//! budget as it stands). bosund makes the UI's views of them.

use crate::record::ProjectRecord;
use bosun_agents::record::AgentReads;
use std::collections::HashMap;

use bosun_shared::usage::{Budget, BudgetScope, Spent};
use bosun_shared::{AgentId, CardId, ColumnId, RunId};

use crate::automation::RunNow;
use crate::record::{CardRecord, ColumnRecord};
use crate::{BoardError, BoardState};
use bosun_kit::offload::blocking;

/// The board: its columns in order, its cards (each with its latest activity only), its limit
/// of cards in progress and how many are.
#[derive(Clone, Debug)]
pub struct BoardNow {
    pub columns: Vec<ColumnRecord>,
    pub cards: Vec<Card>,
    pub limit: u32,
    pub running: u32,
}

/// A card with what the board sees beside its record.
#[derive(Clone, Debug)]
pub struct Card {
    pub record: CardRecord,
    /// Its assignee's name, or its short id and "(removed)".
    pub assignee: Option<String>,
    /// Its column's name.
    pub column: String,
    /// Its latest run's state in words ("starting" while the board starts it).
    pub run_state: Option<String>,
    /// Its project's name, or its short id and "(removed)".
    pub project: Option<String>,
    /// Its budget as it stands, when it has one.
    pub budget: Option<BudgetNow>,
}

/// A project with how many cards belong to it and its daily budget as it stands today (UTC).
#[derive(Clone, Debug)]
pub struct Project {
    pub record: ProjectRecord,
    pub cards: u32,
    pub daily_budget: Option<BudgetNow>,
}

/// A shared budget as it stands: its caps, what the person allowed more, what was spent.
#[derive(Clone, Copy, Debug)]
pub struct BudgetNow {
    pub caps: Budget,
    pub more: Budget,
    pub spent: Spent,
}

impl BoardState {
    async fn agent_names(&self) -> Result<HashMap<AgentId, String>, BoardError> {
        let store = self.ctx.store.clone();
        Ok(blocking(move || store.agents())
            .await??
            .into_iter()
            .map(|a| (a.id, a.name))
            .collect())
    }

    /// The card with what the board sees beside it; `whole`: with all its activity, else its
    /// latest only.
    fn card(
        &self,
        c: &CardRecord,
        names: &HashMap<AgentId, String>,
        states: &HashMap<RunId, RunNow>,
        whole: bool,
    ) -> Card {
        let run_state = if self.starting.contains(&c.id) {
            Some("starting".to_string())
        } else {
            c.runs
                .last()
                .and_then(|r| states.get(&r.run).map(|s| s.words.clone()))
        };
        let mut record = c.clone();
        if !whole {
            let last = record.activity.pop();
            record.activity = last.into_iter().collect();
        }
        Card {
            assignee: c.assignee.map(|a| {
                names
                    .get(&a)
                    .cloned()
                    .unwrap_or_else(|| format!("{} (removed)", a.short()))
            }),
            column: self.column_name(c.column),
            run_state,
            project: c.project.map(|p| {
                self.projects
                    .get(&p)
                    .map_or_else(|| format!("{} (removed)", p.short()), |p| p.name.clone())
            }),
            budget: (!c.budget.is_empty()).then(|| {
                let scope = BudgetScope::Card {
                    card: c.id,
                    title: c.title.clone(),
                };
                BudgetNow {
                    caps: c.budget,
                    more: self.ctx.spend.granted(&scope),
                    spent: self.ctx.spend.card(c.id),
                }
            }),
            record,
        }
    }

    pub(crate) async fn board(&self) -> Result<BoardNow, BoardError> {
        let names = self.agent_names().await?;
        let states = self.run_states(false).await;
        let position = |id: ColumnId| {
            self.columns
                .iter()
                .find(|c| c.id == id)
                .map_or(u32::MAX, |c| c.position)
        };
        let mut cards: Vec<&CardRecord> = self.cards.values().collect();
        cards.sort_by_key(|c| (position(c.column), c.moved_at, c.id));
        let running = self
            .cards
            .values()
            .filter(|c| self.in_progress(c, &states))
            .count() as u32;
        Ok(BoardNow {
            columns: self.columns.clone(),
            cards: cards
                .into_iter()
                .map(|c| self.card(c, &names, &states, false))
                .collect(),
            limit: self.meta.limit,
            running,
        })
    }

    /// The card as a request about it is answered: all its activity included.
    pub(crate) async fn card_reply(&self, id: CardId) -> Result<Card, BoardError> {
        let names = self.agent_names().await?;
        let states = self.run_states(false).await;
        let c = self
            .cards
            .get(&id)
            .ok_or_else(|| BoardError::internal("the card went away"))?;
        Ok(self.card(c, &names, &states, true))
    }
}
