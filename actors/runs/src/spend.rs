//! What runs spent together, for the budgets several runs share: a card's (every run of the
//! card, its QA runs too) and a project's per day (UTC; every run of its cards created that
//! day). Each run's own budget is kept on its record; these are kept here.
//!
//! - [`UsageRow`] (table `usage[run_id]`): a small copy of what one run of a coding CLI used,
//!   written in the same commit as the run's record whenever its usage changes. `bosun usage`
//!   reads only this table, and [`Spend`] is filled from it at startup.
//! - [`Spend`]: the sums per card and per project and day, in memory, set by each RunActor as
//!   its CLI reports (before it is saved, so that a run going at the same time sees it at its
//!   next call), and the more the person allowed each ([`BudgetGrant`], table
//!   `budget_grants[scope]`).
//! - [`SharedBudgets`]: the caps themselves, which the board keeps on its cards and projects;
//!   defined here and implemented by the board, so that runs know nothing of the board.
//!
//! Every RunActor checks them at each tool call of its run, in the same place as the run's own
//! budget (`run_actor/asks.rs`). Since a run's usage reaches [`Spend`] as soon as its CLI
//! reports it, a run goes at most one tool call past a shared cap, as past its own.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use bosun_shared::agents::CliKind;
use bosun_shared::usage::{
    Budget, BudgetScope, ModelUsage, Reached, Spent, Tokens, day_of, is_zero,
};
use bosun_shared::{CardId, ProjectId, RunId, Timestamp};
use bosun_store::{Record, StoreError};
use serde::{Deserialize, Serialize};

use crate::record::RunRecord;

/// What one run of a coding CLI used, kept apart from its record so that sums over many runs
/// read a few hundred bytes a run rather than the whole record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRow {
    pub id: RunId,
    pub created_at: Timestamp,
    pub agent_name: String,
    pub cli: CliKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectId>,
    /// Every model's tokens together.
    pub tokens: Tokens,
    /// What it cost, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_usd: Option<u64>,
    #[serde(default)]
    pub tool_calls: u64,
    /// The tool calls bosun allowed the run: what a card's and a project's budget of tool
    /// calls count.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub allowed_calls: u64,
    /// Tokens per model (last, so that a reader that needs no model can pass over them).
    #[serde(default)]
    pub models: Vec<ModelUsage>,
}

impl Record for UsageRow {
    const TABLE: &'static str = "usage";
    const WHAT: &'static str = "run's usage";
    type Key = RunId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl UsageRow {
    /// The row of a run of a coding CLI; none for a run of a plain program.
    pub fn of(rec: &RunRecord) -> Option<UsageRow> {
        let run = rec.agent.as_ref()?;
        let cli = run.cli?;
        Some(UsageRow {
            id: rec.id,
            created_at: rec.created_at,
            agent_name: run.agent_name.clone(),
            cli,
            card: run.card.map(|(c, _)| c),
            project: run.project,
            tokens: run.usage.total(),
            // A command agent runs the person's program, no model: it costs nothing, which is
            // known (not a cost the table cannot price).
            micro_usd: match cli {
                CliKind::Command => Some(run.usage.cost.as_ref().map_or(0, |c| c.micro_usd)),
                CliKind::Claude | CliKind::Codex | CliKind::Gemini => {
                    run.usage.cost.as_ref().map(|c| c.micro_usd)
                }
            },
            tool_calls: run.usage.tool_calls,
            allowed_calls: run.decisions.iter().filter(|d| d.allowed).count() as u64,
            models: run.usage.models.clone(),
        })
    }

    fn spent(&self) -> Spent {
        let t = self.tokens;
        Spent {
            micro_usd: self.micro_usd,
            tokens: t
                .input
                .saturating_add(t.output)
                .saturating_add(t.cache_read)
                .saturating_add(t.cache_write),
            calls: self.allowed_calls,
        }
    }
}

/// The more the person allowed a shared budget, all told (`budget_grants[scope key]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetGrant {
    /// [`BudgetScope::key`].
    pub key: String,
    pub more: Budget,
    pub at: Timestamp,
}

impl Record for BudgetGrant {
    const TABLE: &'static str = "budget_grants";
    const WHAT: &'static str = "budget grant";
    type Key = str;

    fn key(&self) -> String {
        self.key.clone()
    }
}

/// A card's caps and its project's, as the board keeps them now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardBudgets {
    pub title: String,
    /// What every run of the card together may use.
    pub budget: Budget,
    pub project: Option<ProjectBudget>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectBudget {
    pub id: ProjectId,
    pub name: String,
    /// What every run of its cards created on one day (UTC) together may use.
    pub daily: Budget,
}

/// Who keeps the caps of cards and projects: the board. Called from blocking threads.
pub trait SharedBudgets: Send + Sync {
    /// The caps a run of `card` counts toward; `None` for a card that is gone.
    fn of_card(&self, card: CardId) -> Result<Option<CardBudgets>, StoreError>;
}

/// No card has a budget (for tests and tools that start no board).
pub struct NoSharedBudgets;

impl SharedBudgets for NoSharedBudgets {
    fn of_card(&self, _card: CardId) -> Result<Option<CardBudgets>, StoreError> {
        Ok(None)
    }
}

/// A shared budget a run's call found reached: which, what, and what allowing gives more (as
/// much again as its cap, of what was reached).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedReached {
    pub scope: BudgetScope,
    pub reached: Reached,
    pub grant: Budget,
}

/// The sums of the runs of cards, per card and per project and day, and the grants.
#[derive(Default)]
pub struct Spend {
    ledger: Mutex<Ledger>,
}

#[derive(Default)]
struct Ledger {
    /// Each counted run, as last counted: what is taken out of the sums when it counts anew.
    runs: HashMap<RunId, Counted>,
    cards: HashMap<CardId, Spent>,
    days: HashMap<(ProjectId, String), Spent>,
    grants: HashMap<String, Budget>,
}

struct Counted {
    card: CardId,
    project: Option<ProjectId>,
    day: String,
    spent: Spent,
}

impl Spend {
    /// The sums of `rows` (the usage table as it is at startup) and the grants kept.
    pub fn load(rows: impl IntoIterator<Item = UsageRow>, grants: Vec<BudgetGrant>) -> Spend {
        let spend = Spend::default();
        for row in rows {
            spend.count(&row);
        }
        let mut l = spend.lock();
        for g in grants {
            l.grants.insert(g.key, g.more);
        }
        drop(l);
        spend
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts what a run has used so far, in place of what it had (a run of no card counts
    /// toward nothing here).
    pub fn count(&self, row: &UsageRow) {
        let Some(card) = row.card else { return };
        let now = Counted {
            card,
            project: row.project,
            day: day_of(row.created_at),
            spent: row.spent(),
        };
        let mut l = self.lock();
        if let Some(before) = l.runs.remove(&row.id) {
            if let Some(s) = l.cards.get_mut(&before.card) {
                *s = s.minus(&before.spent);
            }
            if let Some(p) = before.project
                && let Some(s) = l.days.get_mut(&(p, before.day.clone()))
            {
                *s = s.minus(&before.spent);
            }
        }
        let c = l.cards.entry(card).or_default();
        *c = c.plus(&now.spent);
        if let Some(p) = now.project {
            let d = l.days.entry((p, now.day.clone())).or_default();
            *d = d.plus(&now.spent);
        }
        l.runs.insert(row.id, now);
    }

    /// What every run of `card` spent together.
    pub fn card(&self, card: CardId) -> Spent {
        self.lock().cards.get(&card).copied().unwrap_or_default()
    }

    /// What the runs of `project`'s cards created on `day` spent together.
    pub fn day(&self, project: ProjectId, day: &str) -> Spent {
        self.lock()
            .days
            .get(&(project, day.to_string()))
            .copied()
            .unwrap_or_default()
    }

    /// The first shared budget a run of `card` created on `day` has reached, if any: the
    /// card's, then its project's for that day.
    pub fn reached(&self, caps: &CardBudgets, card: CardId, day: &str) -> Option<SharedReached> {
        let l = self.lock();
        let mut scopes = vec![BudgetScope::Card {
            card,
            title: caps.title.clone(),
        }];
        if let Some(p) = &caps.project {
            scopes.push(BudgetScope::ProjectDay {
                project: p.id,
                name: p.name.clone(),
                day: day.to_string(),
            });
        }
        scopes.into_iter().find_map(|scope| {
            let (cap, reached) = l.scope_reached(caps, &scope)?;
            Some(SharedReached {
                grant: grant_of(&cap, reached),
                scope,
                reached,
            })
        })
    }

    /// Whether `scope` is still reached: when another run's approval gave it more meanwhile,
    /// it is not.
    pub fn still_reached(&self, caps: &CardBudgets, scope: &BudgetScope) -> bool {
        self.lock().scope_reached(caps, scope).is_some()
    }

    /// Gives `scope` `grant` more when it is still reached, checked and added under one lock
    /// (two approvals allowed at once give more once). Returns the grant to save, all told,
    /// and what it was before (to put back if it cannot be saved); `None` when not reached.
    pub fn grant(
        &self,
        caps: &CardBudgets,
        scope: &BudgetScope,
        grant: &Budget,
    ) -> Option<(BudgetGrant, Budget)> {
        let mut l = self.lock();
        l.scope_reached(caps, scope)?;
        let key = scope.key();
        let before = l.grants.get(&key).copied().unwrap_or_default();
        let more = before.plus(grant);
        l.grants.insert(key.clone(), more);
        Some((
            BudgetGrant {
                key,
                more,
                at: Timestamp::now(),
            },
            before,
        ))
    }

    /// Puts a scope's grants back to `before` (its grant could not be saved).
    pub fn ungrant(&self, key: &str, before: Budget) {
        self.lock().grants.insert(key.to_string(), before);
    }

    /// The keys of the grants kept under `prefix` (`card/<id>`, `project/<id>/`).
    pub fn grants_under(&self, prefix: &str) -> Vec<String> {
        self.lock()
            .grants
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Forgets the grants `keys` (the person set the budget anew; they are deleted from the
    /// store first).
    pub fn forget_grants(&self, keys: &[String]) {
        let mut l = self.lock();
        for k in keys {
            l.grants.remove(k);
        }
    }

    /// What the person allowed `scope` more, all told.
    pub fn granted(&self, scope: &BudgetScope) -> Budget {
        self.lock()
            .grants
            .get(&scope.key())
            .copied()
            .unwrap_or_default()
    }
}

impl Ledger {
    /// The cap of `scope` (with its grants) and what it reached, if it did.
    fn scope_reached(&self, caps: &CardBudgets, scope: &BudgetScope) -> Option<(Budget, Reached)> {
        let (base, spent) = match scope {
            BudgetScope::Card { card, .. } => (
                caps.budget,
                self.cards.get(card).copied().unwrap_or_default(),
            ),
            BudgetScope::ProjectDay { project, day, .. } => {
                let p = caps.project.as_ref().filter(|p| p.id == *project)?;
                (
                    p.daily,
                    self.days
                        .get(&(*project, day.clone()))
                        .copied()
                        .unwrap_or_default(),
                )
            }
        };
        let more = self.grants.get(&scope.key()).copied().unwrap_or_default();
        let reached = base.extended(&more).reached_by(&spent, spent.calls)?;
        Some((base, reached))
    }
}

/// What allowing more gives when `reached`: as much again as the cap of that kind.
fn grant_of(cap: &Budget, reached: Reached) -> Budget {
    match reached {
        Reached::Cost { .. } => Budget {
            micro_usd: cap.micro_usd,
            ..Budget::default()
        },
        Reached::Tokens { .. } => Budget {
            tokens: cap.tokens,
            ..Budget::default()
        },
        Reached::ToolCalls { .. } => Budget {
            tool_calls: cap.tool_calls,
            ..Budget::default()
        },
    }
}

#[cfg(test)]
mod tests;
