//! `bosun usage`: what the runs of coding CLIs used, summed by agent, card, project, model or
//! day. Read from the runs' usage rows (`bosun_runs::spend::UsageRow`, the `usage` table, a
//! few hundred bytes a run, written with each run's record) and the board (a card's title and
//! project), so it is here, where every area is known.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bosun_board::record::BoardReads;
use bosun_kit::offload::blocking;
use bosun_protocol::usage::{UsageBy, UsageReport, UsageRow, UsageView};
use bosun_runs::spend::UsageRow as RunUsage;
use bosun_shared::usage::{Tokens, day_of};
use bosun_shared::{CardId, ProjectId, Timestamp};
use bosun_store::decode_part;
use serde::Deserialize;

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
            let names = match self.by {
                UsageBy::Card | UsageBy::Project => Names::read(&store)?,
                UsageBy::Agent | UsageBy::Model | UsageBy::Day => Names::default(),
            };
            let mut sums = Sums::new(self.by, since);
            let read = store.read()?;
            match self.by {
                UsageBy::Model => read.each::<RunUsage>(|run| {
                    sums.add_models(&run);
                    Ok(())
                })?,
                UsageBy::Agent | UsageBy::Card | UsageBy::Project | UsageBy::Day => {
                    read.each_bytes::<RunUsage>(|bytes| sums.add_bytes(bytes, &names))?
                }
            }
            Ok::<_, bosun_store::StoreError>(sums.finish(&names))
        })
        .await??;
        Ok(view)
    }
}

/// A run's usage row as a report by anything but the model reads it: its agent's name borrowed
/// from the stored bytes, its id, CLI and models passed over (100,000 runs are summed by
/// reading a few fields of each, not by building each row whole).
#[derive(Debug, PartialEq, Deserialize)]
pub struct RowView<'a> {
    pub created_at: Timestamp,
    #[serde(borrow)]
    pub agent_name: Cow<'a, str>,
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

/// What a row of a card's usage is named by.
pub struct Card {
    pub title: String,
    pub project: Option<String>,
}

/// The names a report by card or project shows: each card's title and project now, each
/// project's name.
#[derive(Default)]
pub struct Names {
    pub cards: HashMap<CardId, Card>,
    pub projects: HashMap<ProjectId, String>,
}

impl Names {
    fn read(store: &bosun_store::Store) -> Result<Names, bosun_store::StoreError> {
        let (_, _, cards) = store.board()?;
        let projects: HashMap<_, _> = store
            .projects()?
            .into_iter()
            .map(|p| (p.id, p.name))
            .collect();
        let cards = cards
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
        Ok(Names { cards, projects })
    }

    /// The project a run counts toward: its card's now, else the one it was started in.
    fn project_of(&self, card: Option<CardId>, project: Option<ProjectId>) -> &str {
        card.and_then(|c| self.cards.get(&c))
            .and_then(|c| c.project.as_deref())
            .or_else(|| {
                project
                    .and_then(|p| self.projects.get(&p))
                    .map(String::as_str)
            })
            .unwrap_or("-")
    }

    /// A card's row's name: its short id and title.
    fn card(&self, card: Option<CardId>) -> String {
        match card {
            Some(c) => match self.cards.get(&c) {
                Some(card) => format!("{} {}", c.short(), card.title),
                None => format!("{} (removed)", c.short()),
            },
            None => "-".into(),
        }
    }
}

/// The sums of a report as the runs are read, one at a time, grouped by what the report is by.
pub struct Sums {
    by: UsageBy,
    since: Option<Timestamp>,
    total: UsageRow,
    groups: Groups,
}

/// A report's rows while they are summed, by what they are named by; named at the end.
enum Groups {
    /// By the day (UTC) a run was created: days since the epoch.
    Days(HashMap<u64, UsageRow>),
    Cards(HashMap<Option<CardId>, UsageRow>),
    /// By agent, project or model: the name itself.
    Names(HashMap<String, UsageRow>),
}

const DAY_MS: u64 = 86_400_000;

impl Sums {
    pub fn new(by: UsageBy, since: Option<Timestamp>) -> Sums {
        let groups = match by {
            UsageBy::Day => Groups::Days(HashMap::new()),
            UsageBy::Card => Groups::Cards(HashMap::new()),
            UsageBy::Agent | UsageBy::Project | UsageBy::Model => Groups::Names(HashMap::new()),
        };
        Sums {
            by,
            since,
            total: UsageRow {
                key: "total".into(),
                ..UsageRow::default()
            },
            groups,
        }
    }

    fn counts(&self, created_at: Timestamp) -> bool {
        self.since.is_none_or(|s| created_at >= s)
    }

    /// A run's usage row from its stored bytes, into a report by anything but the model.
    pub fn add_bytes(
        &mut self,
        bytes: &[u8],
        names: &Names,
    ) -> Result<(), bosun_store::StoreError> {
        let run: RowView<'_> = decode_part::<RunUsage, _>(bytes)?;
        self.add(&run, names);
        Ok(())
    }

    fn add(&mut self, run: &RowView<'_>, names: &Names) {
        if !self.counts(run.created_at) {
            return;
        }
        let (tokens, cost, calls) = (run.tokens, run.micro_usd, run.tool_calls);
        add(&mut self.total, tokens, cost, calls);
        match &mut self.groups {
            Groups::Days(days) => add(
                days.entry(run.created_at.as_millis() / DAY_MS).or_default(),
                tokens,
                cost,
                calls,
            ),
            Groups::Cards(cards) => add(cards.entry(run.card).or_default(), tokens, cost, calls),
            Groups::Names(rows) => {
                let name = match self.by {
                    UsageBy::Project => names.project_of(run.card, run.project),
                    UsageBy::Agent | UsageBy::Card | UsageBy::Model | UsageBy::Day => {
                        &run.agent_name
                    }
                };
                add_named(rows, name, tokens, cost, calls);
            }
        }
    }

    /// A run's whole usage row into a report by model: each model its own row; the run counts
    /// once in each, its tool calls in none.
    pub fn add_models(&mut self, run: &RunUsage) {
        if !self.counts(run.created_at) {
            return;
        }
        add(&mut self.total, run.tokens, run.micro_usd, run.tool_calls);
        if let Groups::Names(rows) = &mut self.groups {
            for m in &run.models {
                add_named(rows, &m.model, m.tokens, m.micro_usd, 0);
            }
        }
    }

    /// The report: days in order, anything else the costliest first.
    pub fn finish(self, names: &Names) -> UsageView {
        let named = |key: String, row: UsageRow| UsageRow { key, ..row };
        let mut rows: Vec<UsageRow> = match self.groups {
            Groups::Days(days) => {
                let mut days: Vec<_> = days.into_iter().collect();
                days.sort_by_key(|(day, _)| *day);
                days.into_iter()
                    .map(|(day, row)| named(day_of(Timestamp::from_millis(day * DAY_MS)), row))
                    .collect()
            }
            Groups::Cards(cards) => cards
                .into_iter()
                .map(|(card, row)| named(names.card(card), row))
                .collect(),
            Groups::Names(rows) => rows.into_iter().map(|(key, row)| named(key, row)).collect(),
        };
        if self.by != UsageBy::Day {
            rows.sort_by(|a, b| {
                b.micro_usd
                    .cmp(&a.micro_usd)
                    .then(b.runs.cmp(&a.runs))
                    .then(a.key.cmp(&b.key))
            });
        }
        UsageView {
            by: self.by,
            since: self.since,
            rows,
            total: self.total,
        }
    }
}

/// One run (or one model of it) into the row named `name`, made if it is the first.
fn add_named(
    rows: &mut HashMap<String, UsageRow>,
    name: &str,
    tokens: Tokens,
    micro_usd: Option<u64>,
    tool_calls: u64,
) {
    if let Some(row) = rows.get_mut(name) {
        add(row, tokens, micro_usd, tool_calls);
        return;
    }
    add(
        rows.entry(name.to_owned()).or_default(),
        tokens,
        micro_usd,
        tool_calls,
    );
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
