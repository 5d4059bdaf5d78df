//! `bosun usage`: what the runs of coding CLIs used, summed by agent, card, project, model or
//! day. Read from the runs' records (each keeps its usage) and the board (a card's title and
//! project), so it is here, where every area is known.

use std::collections::HashMap;
use std::sync::Arc;

use bosun_board::record::BoardReads;
use bosun_kit::offload::blocking;
use bosun_shared::agents::CliKind;
use bosun_shared::protocol::usage::{UsageBy, UsageReport, UsageRow, UsageView};
use bosun_shared::usage::{Tokens, Usage};
use bosun_shared::{CardId, RunId, Timestamp};
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
            let runs = store.all::<RunUsage>()?;
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
            Ok::<_, bosun_store::StoreError>(report(&runs, &cards, self.by, since))
        })
        .await??;
        Ok(view)
    }
}

/// The part of a run's record (`bosun_runs::record::RunRecord`, the `runs` table) a report
/// reads: decoding only this, and passing over the rest, is what keeps a report over a hundred
/// thousand runs quick. Its test checks it reads a whole record the same.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct RunUsage {
    pub id: RunId,
    pub created_at: Timestamp,
    #[serde(default)]
    pub agent: Option<AgentUsage>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentUsage {
    pub agent_name: String,
    pub cli: Option<CliKind>,
    #[serde(default)]
    pub card: Option<(CardId, u64)>,
    #[serde(default)]
    pub usage: Usage,
}

impl Record for RunUsage {
    const TABLE: &'static str = "runs";
    const WHAT: &'static str = "run";
    type Key = RunId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// What a row of a card's usage is named by.
pub struct Card {
    pub title: String,
    pub project: Option<String>,
}

/// The runs of coding CLIs among `runs` created at `since` or later, summed by `by`.
pub fn report(
    runs: &[RunUsage],
    cards: &HashMap<CardId, Card>,
    by: UsageBy,
    since: Option<Timestamp>,
) -> UsageView {
    let mut rows: HashMap<String, UsageRow> = HashMap::new();
    let mut total = UsageRow {
        key: "total".into(),
        ..UsageRow::default()
    };
    for run in runs {
        let Some(agent) = &run.agent else { continue };
        if since.is_some_and(|s| run.created_at < s) || agent.cli.is_none() {
            continue;
        }
        let u = &agent.usage;
        let card = agent.card.map(|(c, _)| c);
        let key = |model: Option<&str>| -> String {
            match by {
                UsageBy::Agent => agent.agent_name.clone(),
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
                    .unwrap_or_else(|| "-".into()),
                UsageBy::Model => model.unwrap_or("-").to_string(),
                UsageBy::Day => run.created_at.rfc3339().chars().take(10).collect(),
            }
        };
        add(
            &mut total,
            u.total(),
            u.cost.as_ref().map(|c| c.micro_usd),
            u.tool_calls,
        );
        if by == UsageBy::Model {
            // Each model its own row; the run counts once in each, its tool calls in none.
            for m in &u.models {
                let row = rows.entry(key(Some(&m.model))).or_default();
                add(row, m.tokens, m.micro_usd, 0);
            }
        } else {
            let row = rows.entry(key(None)).or_default();
            add(
                row,
                u.total(),
                u.cost.as_ref().map(|c| c.micro_usd),
                u.tool_calls,
            );
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
