//! The pull request check: a card whose pull request was merged goes to Deploy (the column is
//! added when the board has none) and its worktree is removed; a merge asked before a crash that
//! GitHub did not carry out is cleared.

use crate::columns::NewColumn;
use bosun_shared::projects::Host;
use bosun_shared::{CardId, ColumnId, Timestamp};
use tracing::{info, warn};

use super::merged_words;
use crate::github;
use crate::record::{BoardChange, MergedPr};
use crate::worktree;
use crate::{BoardError, BoardState};
use bosun_kit::offload::blocking;

impl BoardState {
    /// The pull request check of every card of a GitHub project with a branch, not merged yet.
    pub(crate) async fn check_prs(&mut self) -> Result<(), BoardError> {
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
    pub(super) async fn check_pr(&mut self, id: CardId) -> Result<(), BoardError> {
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
        self.add_column(NewColumn {
            name: "Deploy".into(),
            auto: false,
            position,
        })
        .await?;
        Ok(self.column("Deploy")?.id)
    }
}
