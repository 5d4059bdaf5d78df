//! The cards: adding, editing (words, assignee, project, column, hold, budget, comments),
//! showing and removing them. A card the lead touched after using a tool from outside bosun
//! waits on hold for the person ([`tainted_reason`]).

use bosun_kit::edit::Edit;
use bosun_shared::usage::{Budget, CapEdit};
use bosun_shared::{AgentId, CardId, Timestamp};
use tracing::info;

use crate::record::{BoardChange, CardRecord, Hold};
use crate::{BoardError, BoardState, Card, bad, worktree};
use bosun_kit::offload::blocking;

/// A new card.
#[derive(Clone, Debug, Default)]
pub struct NewCard {
    pub title: String,
    pub description: String,
    pub acceptance: String,
    /// The agent that takes it (name or id).
    pub assignee: Option<String>,
    /// The column (name or id); the first column when absent.
    pub column: Option<String>,
    /// The project it belongs to (name or id); its runs then work in a worktree of the
    /// project's repository.
    pub project: Option<String>,
}

/// A change to a card: what is `None` or [`Edit::Keep`] stays.
#[derive(Clone, Debug, Default)]
pub struct CardEdit {
    /// Its id or the start of it.
    pub card: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub acceptance: Option<String>,
    /// An agent's name or id.
    pub assignee: Edit<String>,
    /// Move it to this column (name or id).
    pub column: Option<String>,
    /// On hold (`needs_decision`) with this reason, or taken off hold.
    pub hold: Edit<String>,
    /// A line for its activity log.
    pub comment: Option<String>,
    /// The project it belongs to (name or id). Only before its first run in a project: then
    /// it has a worktree there.
    pub project: Edit<String>,
    /// What all the card's runs together may cost, in millionths of a dollar.
    pub budget_micro_usd: Option<CapEdit>,
    /// What all the card's runs together may use in tokens (every kind).
    pub budget_tokens: Option<CapEdit>,
    /// How many tool calls bosun may allow all the card's runs together.
    pub budget_calls: Option<CapEdit>,
}

const MAX_TITLE: usize = 200;
const MAX_TEXT: usize = 64 * 1024;

fn check_title(title: &str) -> Result<String, BoardError> {
    let title = title.trim();
    if title.is_empty() || title.chars().count() > MAX_TITLE || title.chars().any(char::is_control)
    {
        return Err(bad(format!(
            "a card's title is 1 to {MAX_TITLE} characters on one line; give it a short title and put the rest in its description"
        )));
    }
    Ok(title.to_string())
}

fn check_text(what: &str, text: &str) -> Result<(), BoardError> {
    if text.len() > MAX_TEXT || text.contains('\0') {
        return Err(bad(format!(
            "the card's {what} is over 64 KiB or has a NUL byte; shorten it"
        )));
    }
    Ok(())
}

/// Edits the card's title, description and acceptance criteria, logging what changed.
fn edit_words(
    card: &mut CardRecord,
    title: Option<&str>,
    description: Option<String>,
    acceptance: Option<String>,
) -> Result<(), BoardError> {
    if let Some(t) = title {
        let t = check_title(t)?;
        if t != card.title {
            card.log(format!("title: {} → {t}", card.title));
            card.title = t;
        }
    }
    if let Some(d) = description {
        check_text("description", &d)?;
        if d != card.description {
            card.description = d;
            card.log("description changed");
        }
    }
    if let Some(a) = acceptance {
        check_text("acceptance criteria", &a)?;
        if a != card.acceptance {
            card.acceptance = a;
            card.log("acceptance criteria changed");
        }
    }
    Ok(())
}

/// Puts the card on hold (`hold`: why), or takes it off hold (`clear`), logging it; a card
/// that was to run again once released counts as moved.
fn edit_hold(card: &mut CardRecord, hold: Edit<String>) -> Result<(), BoardError> {
    match hold {
        Edit::Keep => {}
        Edit::Set(reason) => {
            let reason = reason.trim().to_string();
            if reason.is_empty() {
                return Err(bad("say why the card is on hold"));
            }
            card.log(format!("put on hold: {reason}"));
            card.hold = Some(Hold::needs_decision(reason));
        }
        Edit::Clear => {
            if card.hold.take().is_some() {
                card.log("taken off hold");
                if std::mem::take(&mut card.rerun_on_release) {
                    card.moved += 1;
                }
            }
        }
    }
    Ok(())
}

impl BoardState {
    pub(crate) fn card_id(&self, key: &str) -> Result<CardId, BoardError> {
        Ok(bosun_kit::prefix::by_prefix(
            self.cards.keys().copied(),
            key,
            "cards'",
            |k| format!("there is no card `{k}`; `bosun board` shows the cards with their ids"),
        )?)
    }

    async fn agent(&self, key: &str) -> Result<(AgentId, String), BoardError> {
        let rec = bosun_agents::registry::find(&self.ctx.store, key).await?;
        Ok((rec.id, rec.name))
    }

    pub(crate) async fn show_card(&self, key: &str) -> Result<Card, BoardError> {
        let id = self.card_id(key)?;
        self.card_reply(id).await
    }

    pub(crate) async fn add_card(
        &mut self,
        p: NewCard,
        taint: Option<String>,
    ) -> Result<Card, BoardError> {
        let title = check_title(&p.title)?;
        check_text("description", &p.description)?;
        check_text("acceptance criteria", &p.acceptance)?;
        let column = match &p.column {
            Some(c) => self.column(c)?.id,
            None => self.columns.first().map(|c| c.id).ok_or_else(|| {
                bad("the board has no column; add one with `bosun board column add NAME`")
            })?,
        };
        let assignee = match p.assignee.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(a) => Some(self.agent(a).await?),
        };
        let project = match p.project.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(key) => Some(self.project_id(key)?),
        };
        let now = Timestamp::now();
        let mut card = CardRecord {
            id: CardId::new(),
            title,
            description: p.description,
            acceptance: p.acceptance,
            assignee: assignee.as_ref().map(|(id, _)| *id),
            column,
            hold: None,
            activity: Vec::new(),
            created_at: now,
            updated_at: now,
            moved: 1,
            moved_at: now,
            started_for: None,
            runs: Vec::new(),
            rerun_on_release: false,
            project,
            worktree: None,
            qa: None,
            merge: None,
            merged: None,
            offer: None,
            qa_tokens: Vec::new(),
            budget: Budget::default(),
        };
        card.log(format!(
            "created in {}{}{}",
            self.column_name(column),
            assignee
                .map(|(_, n)| format!(", assigned to {n}"))
                .unwrap_or_default(),
            project
                .and_then(|id| self.projects.get(&id))
                .map(|p| format!(", in project {}", p.name))
                .unwrap_or_default()
        ));
        if let Some(tool) = &taint
            && self.is_auto(column)
        {
            let reason = tainted_reason(tool);
            card.log(format!("put on hold: {reason}"));
            card.hold = Some(Hold::needs_decision(reason));
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        let id = card.id;
        self.cards.insert(id, card);
        self.card_reply(id).await
    }

    pub(crate) async fn edit_card(
        &mut self,
        p: CardEdit,
        taint: Option<String>,
    ) -> Result<Card, BoardError> {
        let id = self.card_id(&p.card)?;
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::internal("the card went away"));
        };
        edit_words(&mut card, p.title.as_deref(), p.description, p.acceptance)?;
        if !p.assignee.is_keep() {
            self.assign(&mut card, p.assignee).await?;
        }
        if !p.project.is_keep() {
            self.put_in_project(&mut card, p.project)?;
        }
        if let Some(c) = &p.column {
            self.move_to_column(&mut card, c)?;
        }
        edit_hold(&mut card, p.hold)?;
        let budget = edit_budget(
            card.budget,
            [p.budget_micro_usd, p.budget_tokens, p.budget_calls],
            "a card's budget",
        )?;
        if budget != card.budget {
            card.budget = budget;
            card.log(match budget.caps_words() {
                Some(caps) => format!("budget: {caps} for all its runs"),
                None => "budget taken off".to_string(),
            });
        }
        if let Some(c) = p.comment {
            check_text("comment", &c)?;
            if !c.trim().is_empty() {
                card.log(format!("comment: {}", c.trim()));
            }
        }
        if let Some(tool) = &taint
            && self.is_auto(card.column)
        {
            self.hold_if_touched(id, &mut card, tool);
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.cards.insert(id, card);
        self.card_reply(id).await
    }

    /// Gives the card to the agent `a` (or to none), logging the change.
    async fn assign(&self, card: &mut CardRecord, a: Edit<String>) -> Result<(), BoardError> {
        let new = match a {
            Edit::Keep => return Ok(()),
            Edit::Clear => None,
            Edit::Set(a) => Some(self.agent(a.trim()).await?),
        };
        if new.as_ref().map(|(id, _)| *id) != card.assignee {
            card.assignee = new.as_ref().map(|(id, _)| *id);
            card.log(match new {
                Some((_, n)) => format!("assigned to {n}"),
                None => "assignee taken off".to_string(),
            });
        }
        Ok(())
    }

    /// Puts the card in the project `key` (or out of its project), logging the change; refused
    /// for a card that works in a worktree of its project already.
    fn put_in_project(&self, card: &mut CardRecord, key: Edit<String>) -> Result<(), BoardError> {
        let new = match key {
            Edit::Keep => return Ok(()),
            Edit::Clear => None,
            Edit::Set(key) => Some(self.project_id(key.trim())?),
        };
        if new != card.project {
            if let Some(wt) = &card.worktree {
                return Err(BoardError::conflict(format!(
                    "card {} works in a worktree of its project already (branch {}), so its project stays; add a new card for the other project",
                    card.id.short(),
                    wt.branch
                )));
            }
            card.project = new;
            card.log(match new.and_then(|id| self.projects.get(&id)) {
                Some(p) => format!("put in project {}", p.name),
                None => "taken out of its project".to_string(),
            });
        }
        Ok(())
    }

    /// Moves the card to the column `c`, logging the move.
    fn move_to_column(&self, card: &mut CardRecord, c: &str) -> Result<(), BoardError> {
        let col = self.column(c)?;
        let (to, name) = (col.id, col.name.clone());
        if to != card.column {
            let from = self.column_name(card.column);
            card.column = to;
            card.moved += 1;
            card.moved_at = Timestamp::now();
            card.log(format!("moved from {from} to {name}"));
        }
        Ok(())
    }

    /// Puts the card on hold for the person when the lead moved it or changed what it asks
    /// for after using a tool from outside bosun (`tool`).
    fn hold_if_touched(&self, id: CardId, card: &mut CardRecord, tool: &str) {
        let before = self.cards.get(&id);
        let touched = before.is_none_or(|b| {
            b.column != card.column
                || b.description != card.description
                || b.acceptance != card.acceptance
                || b.assignee != card.assignee
        });
        if touched {
            let reason = tainted_reason(tool);
            card.log(format!("put on hold: {reason}"));
            card.hold = Some(Hold::needs_decision(reason));
        }
    }

    /// Removes a card, and its worktree first (its branch stays): a crash in between leaves
    /// the card, whose next run or removal finds the worktree gone. Refused while a run of it
    /// is going.
    pub(crate) async fn remove_card(&mut self, key: &str, force: bool) -> Result<Card, BoardError> {
        let id = self.card_id(key)?;
        let Some(card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::internal("the card went away"));
        };
        let states = self.run_states(false).await;
        if self.in_progress(&card, &states) {
            let run = card
                .runs
                .last()
                .map(|r| r.run.short())
                .unwrap_or_else(|| "being started".into());
            return Err(BoardError::conflict(format!(
                "a run of card {} is going ({run}); stop it first (`bosun stop {run}`), then remove the card",
                id.short()
            )));
        }
        let view = self.card_reply(id).await?;
        if let Some(wt) = card.worktree.clone() {
            let repo = card
                .project
                .and_then(|p| self.projects.get(&p))
                .map(|p| p.folder.clone())
                .unwrap_or_default();
            blocking(move || worktree::remove(&repo, &wt, force))
                .await?
                .map_err(|why| {
                    BoardError::conflict(format!("card {} was not removed: {why}", id.short()))
                })?;
        }
        self.save(vec![BoardChange::DeleteCard(id)]).await?;
        self.cards.remove(&id);
        info!(card = %id, "card removed");
        Ok(view)
    }
}

/// `budget` with the caps the person changed (set, or taken off), each checked: a cap of 0 is
/// refused with the reason, and nothing is changed.
/// `budget` with its caps of dollars, tokens and tool calls edited (`None`: kept).
pub(crate) fn edit_budget(
    mut budget: Budget,
    [micro_usd, tokens, calls]: [Option<CapEdit>; 3],
    what: &str,
) -> Result<Budget, BoardError> {
    let cap = |edit: CapEdit, of: &str| match edit {
        CapEdit::Off => Ok(None),
        CapEdit::Set(0) => Err(bad(format!(
            "`0` is not a positive amount: {what} in {of} takes a positive amount, or off to take it off"
        ))),
        CapEdit::Set(n) => Ok(Some(n)),
    };
    if let Some(e) = micro_usd {
        budget.micro_usd = cap(e, "dollars")?;
    }
    if let Some(e) = tokens {
        budget.tokens = cap(e, "tokens")?;
    }
    if let Some(e) = calls {
        budget.tool_calls = cap(e, "tool calls")?;
    }
    Ok(budget)
}

/// Why a card the lead touched after an outside tool waits.
pub fn tainted_reason(tool: &str) -> String {
    format!(
        "Waiting for your OK: the lead put this card here after using {tool}, a tool from outside bosun. Check it, then take it off hold."
    )
}

#[cfg(test)]
mod budget_tests {
    use super::{CapEdit, edit_budget};
    use bosun_shared::usage::Budget;

    /// A client may send a cap of 0, which the CLI's parser never makes: refused with the
    /// reason, whatever else the edit held.
    #[test]
    fn a_cap_of_zero_is_refused_and_off_takes_one_off() {
        let b = Budget {
            micro_usd: Some(5_000_000),
            tokens: Some(100),
            ..Budget::default()
        };
        let e = edit_budget(
            b,
            [Some(CapEdit::Set(1)), Some(CapEdit::Set(0)), None],
            "a card's budget",
        )
        .expect_err("0 tokens");
        assert_eq!(
            e.to_string(),
            "`0` is not a positive amount: a card's budget in tokens takes a positive amount, or off to take it off"
        );
        let edited = edit_budget(
            b,
            [Some(CapEdit::Off), None, Some(CapEdit::Set(7))],
            "a card's budget",
        )
        .expect("off");
        assert_eq!(
            edited,
            Budget {
                tokens: Some(100),
                tool_calls: Some(7),
                ..Budget::default()
            }
        );
    }
}
