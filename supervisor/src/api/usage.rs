//! `bosun usage`: what the runs of coding CLIs used, summed by agent, card, project, model or
//! day. Read from the runs' usage rows (`bosun_runs::spend::UsageRow`, the `usage` table, a
//! few hundred bytes a run, written with each run's record) and the board (a card's title and
//! project), so it is here, where every area is known.

use std::collections::HashMap;
use std::sync::Arc;

use bosun_board::record::BoardReads;
use bosun_kit::offload::blocking;
use bosun_runs::spend::UsageRow as RunUsage;
use bosun_shared::agents::CliKind;
use bosun_shared::protocol::usage::{UsageBy, UsageReport, UsageRow, UsageView};
use bosun_shared::usage::{Tokens, day_of};
use bosun_shared::{CardId, ProjectId, RunId, Timestamp};
use bosun_store::Record;
use serde::{Deserialize, Serialize};

use super::Handle;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for UsageReport {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<UsageView, Failure> {
        let store = ctx.store.clone();
        let since = self
            .since_ms
            .map(|ms| Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(ms)));
        let view = blocking(move || {
            let runs = match self.by {
                UsageBy::Model => store.all::<RunUsage>()?,
                UsageBy::Agent | UsageBy::Card | UsageBy::Project | UsageBy::Day => store
                    .all::<RunSums>()?
                    .into_iter()
                    .map(RunSums::into_row)
                    .collect(),
            };
            let (_, _, cards) = store.board()?;
            let projects: HashMap<_, _> = store
                .projects()?
                .into_iter()
                .map(|p| (p.id, p.name))
                .collect();
            let cards: HashMap<CardId, Card> = cards
                .into_iter()
                .map(|c| {
                    let project = c.project.and_then(|p| projects.get(&p).cloned());
                    (
                        c.id,
                        Card {
                            title: c.title,
                            project,
                        },
                    )
                })
                .collect();
            Ok::<_, bosun_store::StoreError>(report(&runs, &cards, &projects, self.by, since))
        })
        .await??;
        Ok(view)
    }
}

/// A run's usage row without its models: what a report by anything but the model reads, so
/// that it passes over the models rather than building them.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSums {
    pub id: RunId,
    pub created_at: Timestamp,
    pub agent_name: String,
    pub cli: CliKind,
    #[serde(default)]
    pub card: Option<CardId>,
    #[serde(default)]
    pub project: Option<ProjectId>,
    pub tokens: Tokens,
    #[serde(default)]
    pub micro_usd: Option<u64>,
    #[serde(default)]
    pub tool_calls: u64,
}

impl Record for RunSums {
    const TABLE: &'static str = RunUsage::TABLE;
    const WHAT: &'static str = RunUsage::WHAT;
    type Key = RunId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl RunSums {
    fn into_row(self) -> RunUsage {
        RunUsage {
            id: self.id,
            created_at: self.created_at,
            agent_name: self.agent_name,
            cli: self.cli,
            card: self.card,
            project: self.project,
            tokens: self.tokens,
            micro_usd: self.micro_usd,
            tool_calls: self.tool_calls,
            models: Vec::new(),
        }
    }
}

/// What a row of a card's usage is named by.
pub struct Card {
    pub title: String,
    pub project: Option<String>,
}

/// The runs of coding CLIs among `runs` created at `since` or later, summed by `by`. A run's
/// project is its card's now, else the one it was started in (`projects` names it).
pub fn report(
    runs: &[RunUsage],
    cards: &HashMap<CardId, Card>,
    projects: &HashMap<ProjectId, String>,
    by: UsageBy,
    since: Option<Timestamp>,
) -> UsageView {
    let mut rows: HashMap<String, UsageRow> = HashMap::new();
    let mut total = UsageRow {
        key: "total".into(),
        ..UsageRow::default()
    };
    // A run's day written out once a day, not once a run.
    let mut days: HashMap<u64, String> = HashMap::new();
    for run in runs {
        if since.is_some_and(|s| run.created_at < s) {
            continue;
        }
        let card = run.card;
        let day = match by {
            UsageBy::Day => days
                .entry(run.created_at.as_millis() / 86_400_000)
                .or_insert_with(|| day_of(run.created_at))
                .clone(),
            UsageBy::Agent | UsageBy::Card | UsageBy::Project | UsageBy::Model => String::new(),
        };
        let key = |model: Option<&str>| -> String {
            match by {
                UsageBy::Agent => run.agent_name.clone(),
                UsageBy::Card => match card {
                    Some(c) => match cards.get(&c) {
                        Some(card) => format!("{} {}", c.short(), card.title),
                        None => format!("{} (removed)", c.short()),
                    },
                    None => "-".into(),
                },
                UsageBy::Project => card
                    .and_then(|c| cards.get(&c))
                    .and_then(|c| c.project.clone())
                    .or_else(|| run.project.and_then(|p| projects.get(&p).cloned()))
                    .unwrap_or_else(|| "-".into()),
                UsageBy::Model => model.unwrap_or("-").to_string(),
                UsageBy::Day => day.clone(),
            }
        };
        add(&mut total, run.tokens, run.micro_usd, run.tool_calls);
        if by == UsageBy::Model {
            // Each model its own row; the run counts once in each, its tool calls in none.
            for m in &run.models {
                let row = rows.entry(key(Some(&m.model))).or_default();
                add(row, m.tokens, m.micro_usd, 0);
            }
        } else {
            let row = rows.entry(key(None)).or_default();
            add(row, run.tokens, run.micro_usd, run.tool_calls);
        }
    }
    let mut rows: Vec<UsageRow> = rows
        .into_iter()
        .map(|(key, row)| UsageRow { key, ..row })
        .collect();
    match by {
        UsageBy::Day => rows.sort_by(|a, b| a.key.cmp(&b.key)),
        UsageBy::Agent | UsageBy::Card | UsageBy::Project | UsageBy::Model => {
            rows.sort_by(|a, b| {
                b.micro_usd
                    .cmp(&a.micro_usd)
                    .then(b.runs.cmp(&a.runs))
                    .then(a.key.cmp(&b.key))
            })
        }
    }
    UsageView {
        by,
        since,
        rows,
        total,
    }
}

/// One run (or one model of it) into `row`.
fn add(row: &mut UsageRow, tokens: Tokens, micro_usd: Option<u64>, tool_calls: u64) {
    row.runs += 1;
    row.tokens += tokens;
    match micro_usd {
        Some(c) => row.micro_usd = row.micro_usd.saturating_add(c),
        None => row.unpriced += 1,
    }
    row.tool_calls += tool_calls;
}

#[cfg(test)]
mod tests;
