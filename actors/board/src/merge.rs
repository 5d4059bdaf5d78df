//! Pull requests, QA verdicts and the lead's merge, as the Board keeps them.
//!
//! - **QA verdicts.** A card run of an agent with role `qa` gets bosun's MCP server with a
//!   token of its own ([`QaTokens`]), whose only tools are `qa_pass` and `qa_fail`. The verdict
//!   is recorded on the card with the head commit of the card's worktree at that moment: the
//!   commit the QA run tested. The token's digest is kept on the card from before the run is
//!   asked for until its verdict or its end, so a verdict given after a restart of bosund is
//!   taken as any other.
//! - **The merge** ([`BoardState::merge_pr`]): every rule checked in this order, each refusal
//!   saying which and changing nothing — the switch; Review, testing on, not held, no run
//!   going; no release under way; GitHub; the pull request open, not a draft, the card's own
//!   branch in the same repository, into the main branch, mergeable; QA passed exactly its head
//!   commit now; every check passed. (After an outside tool the lead's call is kept for the
//!   person instead, by the lead's gate; approving it comes here and checks everything again.)
//!   The merge is recorded on the card before `gh pr merge` is called, so a crash in between
//!   leaves the record, and the pull request check finds out what became of it: nothing is
//!   ever merged twice.
//! - **The pull request check** ([`BoardState::check_prs`]): every so often
//!   (`BOSUN_PR_CHECK_SECS`, 300 s by default) and at once after a merge, each card of a GitHub
//!   project with a branch is looked up; one whose pull request was merged goes to Deploy, as
//!   when the person merges, and its worktree is removed.
//! - **`update_checkout`** ([`BoardState::update_checkout`]): the project's checkout brought up
//!   to date with its `origin` main branch, fast-forward only, stashing first when asked.
//!
//! This file holds the QA tokens and verdicts and the merge itself; the merge's rules are in
//! [`rules`], the pull request check in [`prs`], `update_checkout` in [`checkout`], and the
//! board check's offers of merges to the lead in [`offers`].

mod checkout;
mod offers;
mod prs;
mod rules;
pub use offers::{Again, Closed, Finding, Findings, OfferNow};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bosun_shared::notice::{Notice, NotificationKind};
use bosun_shared::{CardId, RunToken, Timestamp};
use tracing::info;

use super::github;
use super::record::{BoardChange, CardRecord, MergeAsk, QaVerdict};
use super::{BoardError, BoardState, Card};
use bosun_kit::git;
use bosun_kit::offload::blocking;

/// How often merged pull requests are looked for, unless `BOSUN_PR_CHECK_SECS` says.
const PR_CHECK: Duration = Duration::from_secs(300);

pub fn pr_check_interval() -> Duration {
    std::env::var("BOSUN_PR_CHECK_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(PR_CHECK, Duration::from_secs)
}

/// The tokens of live QA runs, by their SHA-256: each belongs to one card's QA run while it
/// lives. bosun's MCP server takes a QA run's verdict by it. This is the index the server reads;
/// the digests themselves are kept on the cards (`CardRecord::qa_tokens`), committed before the
/// run is asked for, and the index is made again from them when the Board starts, so a QA run
/// that outlives a restart of bosund still gives its verdict.
#[derive(Clone, Default)]
pub struct QaTokens {
    inner: Arc<Mutex<HashMap<String, CardId>>>,
}

impl QaTokens {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, CardId>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token whose digest this is belongs to a live QA run of `card` (once the digest is
    /// kept on the card).
    pub fn open(&self, card: CardId, digest: String) {
        self.lock().insert(digest, card);
    }

    /// The card whose live QA run holds this token.
    pub fn find(&self, token: &str) -> Option<CardId> {
        self.lock().get(&RunToken::digest_of(token)).copied()
    }

    /// The card's QA run gave its verdict or ended: its tokens are refused from now on.
    pub fn close(&self, card: CardId) {
        self.lock().retain(|_, c| *c != card);
    }
}

fn refuse(m: impl Into<String>) -> BoardError {
    BoardError::conflict(format!("merge_pull_request refused: {}", m.into()))
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// What the rules found, to merge.
struct Plan {
    repo: String,
    number: u64,
    url: String,
    head: String,
    qa_run: bosun_shared::RunId,
    checks: Vec<String>,
}

impl BoardState {
    /// A QA run's verdict on its card, with the head commit of the card's worktree now.
    pub(super) async fn qa_verdict(
        &mut self,
        id: CardId,
        pass: bool,
        summary: String,
    ) -> Result<Card, BoardError> {
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::not_found("the card of this QA run is gone"));
        };
        let states = self.run_states(false).await;
        let Some(run) = card.runs.last().map(|r| r.run) else {
            return Err(BoardError::conflict("this card has no QA run going"));
        };
        if !self.in_progress(&card, &states) {
            return Err(BoardError::conflict(
                "this QA run is over; a verdict comes from a live QA run of the card",
            ));
        }
        let Some(wt) = card.worktree.clone() else {
            return Err(BoardError::conflict(
                "the card has no worktree, so there is no commit to give a verdict on",
            ));
        };
        let path = wt.path.clone();
        let head = blocking(move || git::commit(&path, "HEAD"))
            .await?
            .ok_or_else(|| {
                BoardError::unavailable(format!(
                    "bosun could not read the head commit of the card's worktree {}",
                    wt.path.display()
                ))
            })?;
        let summary = summary.trim().to_string();
        card.log(format!(
            "QA {} commit {} (run {}){}",
            if pass { "passed" } else { "failed" },
            short(&head),
            run.short(),
            if summary.is_empty() {
                String::new()
            } else {
                format!(": {summary}")
            }
        ));
        card.qa = Some(QaVerdict {
            pass,
            run,
            head,
            at: Timestamp::now(),
            summary,
        });
        // One verdict per QA run: its token is spent.
        card.qa_tokens.clear();
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.ctx.qa_tokens.close(id);
        info!(card = %id, pass, "QA verdict recorded");
        self.cards.insert(id, card);
        self.card_reply(id).await
    }

    /// The lead's merge of a card's pull request, under every rule.
    pub(super) async fn merge_pr(&mut self, key: &str) -> Result<String, BoardError> {
        let id = self.card_id(key)?;
        let mut why = Why::Other;
        let plan = match self.merge_plan(id, &mut why).await {
            Ok(plan) => plan,
            Err(e) => {
                self.offer_answered(id, why, &e).await;
                return Err(e);
            }
        };
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::internal("the card went away"));
        };
        // The request, durably, before gh is asked.
        let ask = MergeAsk {
            number: plan.number,
            url: plan.url.clone(),
            head: plan.head.clone(),
            qa_run: plan.qa_run,
            checks: plan.checks.clone(),
            at: Timestamp::now(),
            done: false,
        };
        card.merge = Some(ask.clone());
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.cards.insert(id, card.clone());
        bosun_kit::crash::point("merge-after-record");
        let (repo, n, head) = (plan.repo.clone(), plan.number, plan.head.clone());
        let merged = blocking(move || github::merge(&repo, n, &head)).await?;
        bosun_kit::crash::point("merge-after-gh");
        if let Err(e) = merged {
            card.merge = None;
            card.log(format!(
                "the lead's merge of pull request #{n} was refused by GitHub: {e}"
            ));
            self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                .await?;
            self.cards.insert(id, card);
            let e = refuse(format!("GitHub did not merge pull request #{n}: {e}"));
            self.offer_answered(id, Why::Person, &e).await;
            return Err(e);
        }
        card.merge = Some(MergeAsk { done: true, ..ask });
        let said = merged_words(&card.merge);
        card.log(format!("comment: {said}"));
        card.log("merged by the lead");
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        info!(card = %id, pull_request = n, "the lead merged a card's pull request");
        self.notify_merged(&card, n);
        self.cards.insert(id, card);
        // The pull request check, at once: it moves the card to Deploy.
        self.check_pr(id).await?;
        Ok(said)
    }
}

/// The lead's comment on a card it merged.
fn merged_words(ask: &Option<MergeAsk>) -> String {
    match ask {
        Some(m) => format!(
            "The lead merged pull request #{} ({}): head commit {}, which QA run {} passed; checks passed: {}.",
            m.number,
            m.url,
            m.head,
            m.qa_run.short(),
            m.checks.join(", ")
        ),
        None => "The lead merged the card's pull request.".into(),
    }
}

/// What kind of refusal the merge rules gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Why {
    /// One the lead reports in its answer (no pull request, a draft, pushed after QA, …).
    Other,
    /// One to wait out: checks still running, GitHub still working out the mergeability.
    Wait,
    /// One for the person: failed checks, conflicts, a merge blocked or behind, GitHub's own
    /// refusal.
    Person,
}

impl BoardState {
    /// Tells every attached UI that the lead merged a card's pull request.
    fn notify_merged(&self, card: &CardRecord, number: u64) {
        let text = format!(
            "The lead merged pull request #{number} of card {} ({}).",
            card.id.short(),
            card.title
        );
        (self.ctx.tell)(Notice {
            kind: NotificationKind::Merged,
            text,
            card: Some(card.id),
            chat: None,
            at: Timestamp::now(),
        });
    }
}
