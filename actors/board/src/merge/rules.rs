//! The rules of the lead's merge, checked in order ([`BoardState::merge_plan`]): each refusal
//! says which rule, and whether it is one to wait out or one for the person.

use bosun_agents::record::AgentReads;
use std::collections::HashMap;

use bosun_shared::CardId;
use bosun_shared::projects::Host;

use super::{Plan, Why, refuse, short};
use crate::github::{self, Checks};
use crate::record::{CardRecord, ProjectRecord, QaVerdict};
use crate::{BoardError, BoardState};
use bosun_kit::offload::blocking;

impl BoardState {
    /// Every rule of the lead's merge, in order; the first that does not hold is the refusal
    /// (`why` says whether it is one to wait out, or one for the person).
    pub(super) async fn merge_plan(&self, id: CardId, why: &mut Why) -> Result<Plan, BoardError> {
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
