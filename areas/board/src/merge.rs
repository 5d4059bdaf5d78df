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

use bosun_agents::record::AgentReads;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bosun_shared::projects::Host;
use bosun_shared::protocol::board::{AddColumnParams, CardView};
use bosun_shared::protocol::ui::{Event, NotificationKind};
use bosun_shared::{CardId, ColumnId, RunToken, Timestamp};
use tracing::{info, warn};

use super::github::{self, Checks};
use super::record::{
    BoardChange, CardRecord, MergeAsk, MergeOffer, MergedPr, ProjectRecord, QaVerdict,
};
use super::worktree;
use super::{BoardError, BoardState};
use bosun_kit::git;
use bosun_kit::offload::blocking;
use bosun_runs::events::EventsMsg;

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
    ) -> Result<CardView, BoardError> {
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

    /// Every rule of the lead's merge, in order; the first that does not hold is the refusal
    /// (`why` says whether it is one to wait out, or one for the person).
    async fn merge_plan(&self, id: CardId, why: &mut Why) -> Result<Plan, BoardError> {
        let card = self
            .cards
            .get(&id)
            .cloned()
            .ok_or_else(|| BoardError::internal("the card went away"))?;
        let c = id.short();
        let project = card
            .project
            .and_then(|p| self.projects.get(&p))
            .cloned()
            .ok_or_else(|| {
                refuse(format!(
                    "card {c} belongs to no project, so it has no pull request of its own"
                ))
            })?;
        let asked = Asked {
            card: &card,
            project: &project,
            c,
        };
        self.card_may_merge(&asked).await?;
        self.no_release_under_way(&asked).await?;
        let (repo, branch) = asked.repo_and_branch()?;
        let (n, pr) = asked.pull_request(&repo, &branch).await?;
        asked.the_cards_own(&pr, n, &repo, &branch)?;
        asked.mergeable(&pr, n, why)?;
        let qa = asked.qa_passed(&pr, n)?;
        let checks = checks_green(&pr, n, why)?;
        Ok(Plan {
            repo,
            number: n,
            url: pr.url,
            head: pr.head_ref_oid,
            qa_run: qa.run,
            checks,
        })
    }

    /// Rules 1 and 2: the project lets the lead merge, and the card is in Review, tested, not
    /// held, not being worked on, and no merge of it was asked already.
    async fn card_may_merge(&self, asked: &Asked<'_>) -> Result<(), BoardError> {
        let Asked { card, project, c } = asked;
        let p = &project.name;
        // 1. The switch.
        if !project.lead_may_merge {
            return Err(refuse(format!(
                "project {p} does not let the lead merge; only the person switches that on (`bosun project set {p} lead-may-merge=on`), and until then the person merges"
            )));
        }
        // 2. Review, testing on, not held, no agent working on it.
        let column = self.column_name(card.column);
        if !column.eq_ignore_ascii_case("review") {
            return Err(refuse(format!(
                "card {c} is in {column}, not Review; the lead merges only cards in Review"
            )));
        }
        if !project.testing {
            return Err(refuse(format!(
                "project {p} has testing off, so card {c} went to Review without QA; it stays the person's to open and merge"
            )));
        }
        if let Some(h) = &card.hold {
            return Err(refuse(format!(
                "card {c} is on hold ({}); the person takes it off hold first",
                h.reason
            )));
        }
        let states = self.run_states(false).await;
        if self.in_progress(card, &states) {
            return Err(refuse(format!(
                "an agent is working on card {c} (run {}); wait for its run to end",
                card.runs
                    .last()
                    .map_or_else(|| "being started".to_string(), |r| r.run.short())
            )));
        }
        if let Some(m) = &card.merge {
            return Err(refuse(format!(
                "a merge of pull request #{} was asked already; the pull request check finds out what became of it",
                m.number
            )));
        }
        Ok(())
    }

    /// Rule 6: no card of the project is in Deploy with a devops agent.
    async fn no_release_under_way(&self, asked: &Asked<'_>) -> Result<(), BoardError> {
        let project = asked.project;
        let p = &project.name;
        // 6. No release under way.
        let store = self.ctx.store.clone();
        let agents = blocking(move || store.agents()).await??;
        let devops: HashMap<_, _> = agents
            .iter()
            .filter(|a| a.role.eq_ignore_ascii_case("devops"))
            .map(|a| (a.id, a.name.clone()))
            .collect();
        if let Some((release, agent)) = self.cards.values().find_map(|other| {
            (other.project == Some(project.id)
                && self
                    .column_name(other.column)
                    .eq_ignore_ascii_case("deploy"))
            .then_some(())
            .and_then(|()| other.assignee.and_then(|a| devops.get(&a)))
            .map(|agent| (other.id.short(), agent.clone()))
        }) {
            return Err(refuse(format!(
                "a release is under way in project {p}: card {release} is in Deploy with {agent}, a devops agent, so main must not move under it; merge once the release is done"
            )));
        }
        Ok(())
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

    /// The pull request check of every card of a GitHub project with a branch, not merged yet.
    pub(super) async fn check_prs(&mut self) -> Result<(), BoardError> {
        let ids: Vec<CardId> = self
            .cards
            .values()
            .filter(|c| c.merged.is_none() && (c.worktree.is_some() || c.merge.is_some()))
            .map(|c| c.id)
            .collect();
        for id in ids {
            if let Err(e) = self.check_pr(id).await {
                warn!(card = %id, error = %e, "the pull request check failed for a card");
            }
        }
        Ok(())
    }

    /// One card's pull request: merged, the card goes to Deploy and its worktree is removed;
    /// a merge asked before a crash that did not happen is cleared, and said so.
    async fn check_pr(&mut self, id: CardId) -> Result<(), BoardError> {
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Ok(());
        };
        let Some(project) = card.project.and_then(|p| self.projects.get(&p)).cloned() else {
            return Ok(());
        };
        let Host::Github { repo } = &project.host else {
            return Ok(());
        };
        let Some(wt) = card.worktree.clone() else {
            return Ok(());
        };
        let (r, b) = (repo.clone(), wt.branch.clone());
        let found = blocking(move || github::find(&r, &b))
            .await?
            .map_err(|e| BoardError::unavailable(e.to_string()))?;
        let Some(pr) = found else {
            return Ok(());
        };
        if pr.state != "MERGED" {
            if card
                .merge
                .as_ref()
                .is_some_and(|m| !m.done && m.number == pr.number)
            {
                card.merge = None;
                card.log(format!(
                    "the lead's merge of pull request #{} was asked before bosund stopped, and GitHub did not merge it; it can be asked again",
                    pr.number
                ));
                self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                    .await?;
                self.cards.insert(id, card);
            }
            return Ok(());
        }
        if card.merge.as_ref().is_some_and(|m| !m.done) {
            // bosund stopped between gh's merge and its record: the record is made now.
            let said = merged_words(&card.merge);
            card.log(format!("comment: {said}"));
            card.log("merged by the lead (found by the pull request check after bosund stopped)");
            self.notify_merged(&card, pr.number);
        }
        card.merge = None;
        card.merged = Some(MergedPr {
            number: pr.number,
            url: pr.url.clone(),
            at: Timestamp::now(),
        });
        let deploy = self.deploy_column().await?;
        if card.column != deploy {
            let from = self.column_name(card.column);
            card.column = deploy;
            card.moved += 1;
            card.moved_at = Timestamp::now();
            card.log(format!(
                "pull request #{} was merged: moved from {from} to Deploy",
                pr.number
            ));
        }
        let repo_dir = project.folder.clone();
        let w = wt.clone();
        match blocking(move || worktree::remove(&repo_dir, &w, false)).await? {
            Ok(()) => {
                card.worktree = None;
                card.log(format!("worktree removed (branch {} stays)", wt.branch));
            }
            Err(why) => card.log(format!("its worktree was kept: {why}")),
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        info!(card = %id, pull_request = pr.number, "a card's pull request was merged");
        self.cards.insert(id, card);
        Ok(())
    }

    /// The Deploy column, added (Manual, after Review) when the board has none.
    async fn deploy_column(&mut self) -> Result<ColumnId, BoardError> {
        if let Ok(c) = self.column("Deploy") {
            return Ok(c.id);
        }
        let position = self
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case("review"))
            .map(|c| c.position + 1);
        self.add_column(AddColumnParams {
            name: "Deploy".into(),
            auto: false,
            position,
        })
        .await?;
        Ok(self.column("Deploy")?.id)
    }

    /// Brings a project's checkout up to date with `origin`'s main branch (fast-forward only),
    /// stashing its changes first when asked; refused, changing nothing, when the checkout is
    /// not on its main branch, has changes and no stash was asked, or has gone its own way.
    pub(super) async fn update_checkout(
        &mut self,
        key: &str,
        stash: bool,
    ) -> Result<String, BoardError> {
        let id = self.project_id(key)?;
        let project = self
            .projects
            .get(&id)
            .cloned()
            .ok_or_else(|| BoardError::internal("the project went away"))?;
        let said =
            blocking(move || update(&project.folder, &project.main_branch, &project.name, stash))
                .await?
                .map_err(|why| BoardError::conflict(format!("update_checkout refused: {why}")))?;
        Ok(said)
    }
}

/// The card whose pull request the lead asks to merge, and its project, as the rules read them.
struct Asked<'a> {
    card: &'a CardRecord,
    project: &'a ProjectRecord,
    /// The card's short id, as the refusals say it.
    c: String,
}

impl Asked<'_> {
    /// Rule 8: the project's GitHub repository, and the card's branch.
    fn repo_and_branch(&self) -> Result<(String, String), BoardError> {
        let Asked { card, project, c } = self;
        let p = &project.name;
        // 8. GitHub only.
        let repo = match &project.host {
            Host::Github { repo } => repo.clone(),
            other @ (Host::Other { .. } | Host::None) => {
                return Err(refuse(format!(
                    "project {p} is hosted on {other}, not GitHub; bosun merges only on GitHub with the person's gh, so the person merges it there"
                )));
            }
        };
        let Some(branch) = card.worktree.as_ref().map(|w| w.branch.clone()) else {
            return Err(refuse(format!(
                "card {c} has no branch yet (no run of it worked in project {p})"
            )));
        };
        Ok((repo, branch))
    }

    /// Rule 4, first: the pull request of the card's branch, as GitHub has it, and its number.
    async fn pull_request(
        &self,
        repo: &str,
        branch: &str,
    ) -> Result<(u64, github::PullRequest), BoardError> {
        let c = &self.c;
        // 4. The pull request: the card's own, open, not a draft, into main, mergeable.
        let (r, b) = (repo.to_string(), branch.to_string());
        let listed = blocking(move || github::find(&r, &b))
            .await?
            .map_err(|e| refuse(format!("bosun could not look up the pull request: {e}")))?
            .ok_or_else(|| {
                refuse(format!(
                    "card {c}'s branch {branch} has no pull request on GitHub {repo}; open one first"
                ))
            })?;
        let (r, n) = (repo.to_string(), listed.number);
        let pr = blocking(move || github::view(&r, n))
            .await?
            .map_err(|e| refuse(format!("bosun could not read pull request #{n}: {e}")))?;
        Ok((n, pr))
    }

    /// Rule 4, then: the pull request is open, not a draft, from the card's own branch in the
    /// same repository, into the project's main branch.
    fn the_cards_own(
        &self,
        pr: &github::PullRequest,
        n: u64,
        repo: &str,
        branch: &str,
    ) -> Result<(), BoardError> {
        let Asked { project, c, .. } = self;
        let p = &project.name;
        if pr.state != "OPEN" {
            return Err(refuse(format!(
                "pull request #{n} is {}, not open",
                pr.state.to_ascii_lowercase()
            )));
        }
        if pr.is_draft {
            return Err(refuse(format!(
                "pull request #{n} is a draft; it is marked ready for review first"
            )));
        }
        let owner = repo.split('/').next().unwrap_or_default();
        let head_owner = pr
            .head_repository_owner
            .as_ref()
            .map(|o| o.login.clone())
            .unwrap_or_default();
        if pr.is_cross_repository
            || pr.head_ref_name != branch
            || !head_owner.eq_ignore_ascii_case(owner)
        {
            return Err(refuse(format!(
                "pull request #{n} comes from {head_owner}:{}, not from card {c}'s branch {branch} in {repo}; the lead merges only the card's own pull request",
                pr.head_ref_name
            )));
        }
        if pr.base_ref_name != project.main_branch {
            return Err(refuse(format!(
                "pull request #{n} goes into {}, not into project {p}'s main branch {}",
                pr.base_ref_name, project.main_branch
            )));
        }
        Ok(())
    }

    /// Rule 4, last: GitHub says the pull request can be merged, with no conflicts, no rule
    /// blocking it, and its branch up to date.
    fn mergeable(&self, pr: &github::PullRequest, n: u64, why: &mut Why) -> Result<(), BoardError> {
        let main_branch = &self.project.main_branch;
        match pr.mergeable.as_str() {
            "MERGEABLE" => {}
            "CONFLICTING" => {
                *why = Why::Person;
                return Err(refuse(format!(
                    "GitHub says pull request #{n} has conflicts with {main_branch}; they are resolved on the branch, then QA runs again"
                )));
            }
            other => {
                *why = Why::Wait;
                return Err(refuse(format!(
                    "GitHub is still working out whether pull request #{n} can be merged ({}); wait a minute and try again",
                    other.to_ascii_lowercase()
                )));
            }
        }
        match pr.merge_state_status.as_deref().unwrap_or("") {
            "BLOCKED" => {
                *why = Why::Person;
                return Err(refuse(format!(
                    "GitHub says a rule blocks pull request #{n} (such as a required review); the person sees to it"
                )));
            }
            "BEHIND" => {
                *why = Why::Person;
                return Err(refuse(format!(
                    "pull request #{n}'s branch is behind {main_branch} and must be up to date before it is merged"
                )));
            }
            "DIRTY" => {
                *why = Why::Person;
                return Err(refuse(format!(
                    "GitHub says pull request #{n} has conflicts with {main_branch}"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Rule 3: the card's latest QA verdict passed exactly the pull request's head commit.
    fn qa_passed(&self, pr: &github::PullRequest, n: u64) -> Result<QaVerdict, BoardError> {
        let c = &self.c;
        // 3. QA passed exactly this commit.
        let qa = self.card.qa.clone().ok_or_else(|| {
            refuse(format!(
                "card {c} has no QA verdict; a QA run passes it first"
            ))
        })?;
        if !qa.pass {
            return Err(refuse(format!(
                "card {c}'s latest QA verdict is qa_fail (run {}); it is fixed and QA runs again",
                qa.run.short()
            )));
        }
        if qa.head != pr.head_ref_oid {
            return Err(refuse(format!(
                "QA passed commit {} (run {}), but pull request #{n}'s head is now {}: something was pushed after QA, so QA runs again on the new commit",
                short(&qa.head),
                qa.run.short(),
                short(&pr.head_ref_oid)
            )));
        }
        Ok(qa)
    }
}

/// Rule 5: every check of the pull request passed; their names.
fn checks_green(
    pr: &github::PullRequest,
    n: u64,
    why: &mut Why,
) -> Result<Vec<String>, BoardError> {
    // 5. CI is green.
    match github::checks(&pr.status_check_rollup) {
        Checks::Green(names) => Ok(names),
        Checks::Running(names) => {
            *why = Why::Wait;
            Err(refuse(format!(
                "checks are still running on pull request #{n} ({}); wait for them and try again",
                names.join(", ")
            )))
        }
        Checks::Failed(names) => {
            *why = Why::Person;
            Err(refuse(format!(
                "checks failed on pull request #{n}: {}; the DevOps agent or the person re-runs them",
                names.join(", ")
            )))
        }
        Checks::None => Err(refuse(format!(
            "pull request #{n} has no checks (CI has not started, or the repository has none); then the person merges"
        ))),
    }
}

fn update(folder: &Path, main: &str, name: &str, stash: bool) -> Result<String, UpdateError> {
    use UpdateError as E;
    let at = folder.display();
    let checkout = || Checkout {
        name: name.into(),
        at: folder.into(),
        main: main.into(),
    };
    let branch = git::git(folder, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .map_err(|why| E::NoBranch { c: checkout(), why })?;
    if branch != main {
        return Err(E::OffMain {
            c: checkout(),
            branch,
        });
    }
    let dirty = git::dirty(folder).map_err(E::Dirty)?;
    if dirty && !stash {
        return Err(E::Uncommitted { c: checkout() });
    }
    git::git(folder, &["fetch", "--no-tags", "origin", main])
        .map_err(|why| E::Fetch { c: checkout(), why })?;
    let before = git::commit(folder, "HEAD").unwrap_or_default();
    let target = git::commit(folder, "FETCH_HEAD").unwrap_or_default();
    let ahead = git::git(
        folder,
        &["merge-base", "--is-ancestor", "HEAD", "FETCH_HEAD"],
    )
    .is_err();
    if ahead {
        return Err(E::Diverged { c: checkout() });
    }
    let mut said = String::new();
    if dirty {
        git::git(
            folder,
            &[
                "stash",
                "push",
                "--include-untracked",
                "-m",
                "bosun: before update_checkout",
            ],
        )
        .map_err(E::Stash)?;
        said.push_str("Stashed the checkout's changes (`git stash list` shows them). ");
    }
    if before == target {
        said.push_str(&format!(
            "Project {name}'s checkout {at} is up to date with origin's {main} ({}).",
            short(&target)
        ));
        return Ok(said);
    }
    git::git(folder, &["merge", "--ff-only", "FETCH_HEAD"])
        .map_err(|why| E::FastForward { c: checkout(), why })?;
    said.push_str(&format!(
        "Brought project {name}'s checkout {at} up to date: {main} moved from {} to {}.",
        short(&before),
        short(&target)
    ));
    Ok(said)
}

/// The project checkout an update was refused for: the project's name, its folder and its
/// main branch.
#[derive(Debug)]
pub(crate) struct Checkout {
    name: String,
    at: std::path::PathBuf,
    main: String,
}

/// Why [`update`] refused to bring a checkout up to date (`c`); it changed nothing, except
/// after a stash (which it says it made).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpdateError {
    #[error(
        "project {}'s checkout {} is on no branch ({why}); check out {} there first",
        .c.name, .c.at.display(), .c.main
    )]
    NoBranch { c: Checkout, why: git::GitError },
    /// The checkout is on this other branch.
    #[error(
        "project {}'s checkout {} is on branch {branch}, not its main branch {}; check out {} there first",
        .c.name, .c.at.display(), .c.main, .c.main
    )]
    OffMain { c: Checkout, branch: String },
    #[error("{0}")]
    Dirty(git::GitError),
    /// It has changes and no stash was asked.
    #[error(
        "project {}'s checkout {} has changes not committed; ask again with stash on to put them aside first (`git stash`), or commit them",
        .c.name, .c.at.display()
    )]
    Uncommitted { c: Checkout },
    #[error("git could not fetch {} from origin: {why}", .c.main)]
    Fetch { c: Checkout, why: git::GitError },
    /// Its main branch has commits origin's has not: no fast-forward, the person sees to it.
    #[error(
        "project {}'s {} has commits that origin's {} has not; it cannot be brought up to date by a fast-forward, so the person sees to it",
        .c.name, .c.main, .c.main
    )]
    Diverged { c: Checkout },
    #[error("git could not stash the changes: {0}")]
    Stash(git::GitError),
    #[error("git could not fast-forward {}: {why}", .c.main)]
    FastForward { c: Checkout, why: git::GitError },
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

/// How long after QA passed a card a board check offers its merge again while it has to wait,
/// unless `BOSUN_MERGE_WAIT_SECS` says.
const MERGE_WAIT: Duration = Duration::from_secs(3 * 60 * 60);

fn merge_wait_window() -> Duration {
    std::env::var("BOSUN_MERGE_WAIT_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(MERGE_WAIT, Duration::from_secs)
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
    pub(super) async fn findings(&mut self, mark: bool) -> Result<Findings, BoardError> {
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
    pub(super) fn offers(&self, cards: &[CardId]) -> Vec<OfferNow> {
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
    async fn offer_answered(&mut self, id: CardId, why: Why, e: &BoardError) {
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

    /// Tells every attached UI that the lead merged a card's pull request.
    fn notify_merged(&self, card: &CardRecord, number: u64) {
        let text = format!(
            "The lead merged pull request #{number} of card {} ({}).",
            card.id.short(),
            card.title
        );
        self.ctx
            .events
            .cast(EventsMsg::Publish(Box::new(Event::Notification {
                kind: NotificationKind::Merged,
                text,
                card: Some(card.id),
                chat: None,
                at: Timestamp::now(),
            })));
    }
}
