//! How the board and its cards are shown: the board's view, a card's view (its latest run's
//! state, its project, its budget) and a shared budget as the person sees it.

use crate::record::MergedPr;
use bosun_agents::record::AgentReads;
use std::collections::HashMap;

use bosun_shared::protocol::board::{BoardView, CardView, SharedBudgetView};
use bosun_shared::usage::{Budget, BudgetScope, Spent};
use bosun_shared::{AgentId, CardId, ColumnId, RunId};

use crate::automation::RunNow;
use crate::record::{CardRecord, CardWorktree, ColumnRecord, Hold, QaVerdict};
use crate::{BoardError, BoardState};
use bosun_kit::offload::blocking;

impl BoardState {
    async fn agent_names(&self) -> Result<HashMap<AgentId, String>, BoardError> {
        let store = self.ctx.store.clone();
        Ok(blocking(move || store.agents())
            .await??
            .into_iter()
            .map(|a| (a.id, a.name))
            .collect())
    }

    fn card_view(
        &self,
        c: &CardRecord,
        names: &HashMap<AgentId, String>,
        states: &HashMap<RunId, RunNow>,
        whole: bool,
    ) -> CardView {
        let run = c.runs.last().map(|r| r.run);
        let run_state = if self.starting.contains(&c.id) {
            Some("starting".to_string())
        } else {
            run.and_then(|r| states.get(&r).map(|s| s.words.clone()))
        };
        let activity = if whole {
            c.activity.iter().map(|a| a.view()).collect()
        } else {
            c.activity.last().map(|a| a.view()).into_iter().collect()
        };
        CardView {
            id: c.id,
            short_id: c.id.short(),
            title: c.title.clone(),
            description: c.description.clone(),
            acceptance: c.acceptance.clone(),
            assignee: c.assignee.map(|a| {
                names
                    .get(&a)
                    .cloned()
                    .unwrap_or_else(|| format!("{} (removed)", a.short()))
            }),
            assignee_id: c.assignee,
            column: self.column_name(c.column),
            column_id: c.column,
            hold: c.hold.as_ref().map(Hold::view),
            run,
            run_state,
            runs: c.runs.len() as u32,
            created_at: c.created_at,
            updated_at: c.updated_at,
            activity,
            project: c.project.map(|p| {
                self.projects
                    .get(&p)
                    .map_or_else(|| format!("{} (removed)", p.short()), |p| p.name.clone())
            }),
            worktree: c.worktree.as_ref().map(CardWorktree::view),
            qa: c.qa.as_ref().map(QaVerdict::view),
            merged: c.merged.as_ref().map(MergedPr::view),
            budget: (!c.budget.is_empty()).then(|| {
                let scope = BudgetScope::Card {
                    card: c.id,
                    title: c.title.clone(),
                };
                budget_view(
                    c.budget,
                    self.ctx.spend.granted(&scope),
                    self.ctx.spend.card(c.id),
                )
            }),
        }
    }

    pub(crate) async fn board_view(&self) -> Result<BoardView, BoardError> {
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
        Ok(BoardView {
            columns: self.columns.iter().map(ColumnRecord::view).collect(),
            cards: cards
                .into_iter()
                .map(|c| self.card_view(c, &names, &states, false))
                .collect(),
            limit: self.meta.limit,
            running,
        })
    }

    /// The card as a request about it is answered: its full view, activity included.
    pub(crate) async fn card_reply(&self, id: CardId) -> Result<CardView, BoardError> {
        let names = self.agent_names().await?;
        let states = self.run_states(false).await;
        let c = self
            .cards
            .get(&id)
            .ok_or_else(|| BoardError::internal("the card went away"))?;
        Ok(self.card_view(c, &names, &states, true))
    }
}

/// A shared budget as the person sees it: its caps, what was allowed more, what was spent.
pub(crate) fn budget_view(caps: Budget, more: Budget, spent: Spent) -> SharedBudgetView {
    SharedBudgetView {
        caps,
        more,
        spent_micro_usd: spent.micro_usd,
        spent_tokens: spent.tokens,
    }
}
