//! Answers about the board, the notes and the projects: every one is a question to the Board
//! actor (which keeps projects with the cards that belong to them), whose answer is taken as the
//! request's reply.

use std::sync::Arc;

use bosun_board::{
    BoardRequest, CardEdit, ColumnChange, NewCard, NewColumn, NewProject, ProjectEdit, Reply,
};
use bosun_kit::edit::Edit;
use bosun_protocol::board::{
    AddCardParams, AddColumnParams, Board, BoardLimit, BoardView, CardRemove, CardShow, CardView,
    ColumnView, EditCardParams, NoteList, NoteShow, NoteSummary, NoteView, NoteWrite,
    SetColumnParams,
};
use bosun_protocol::projects::{
    AddProjectParams, EditProjectParams, ProjectList, ProjectRemove, ProjectSet, ProjectShow,
    ProjectView,
};
use bosun_protocol::{ErrorCode, WireError};

use super::Handle;
use super::views::View;
use super::views::board::note_summary;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;
use bosun_runs::spend::BudgetGrant;
use bosun_store::writer::Change;

impl Handle for Board {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<BoardView, Failure> {
        shown(ctx, BoardRequest::Show).await
    }
}

impl Handle for AddColumnParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ColumnView, Failure> {
        let params = NewColumn {
            name: self.name,
            auto: self.auto,
            position: self.position,
        };
        shown(ctx, |reply| BoardRequest::AddColumn { params, reply }).await
    }
}

impl Handle for SetColumnParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ColumnView, Failure> {
        let params = ColumnChange {
            column: self.column,
            name: self.name,
            auto: self.auto,
            position: self.position,
        };
        shown(ctx, |reply| BoardRequest::SetColumn { params, reply }).await
    }
}

impl Handle for AddCardParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        let params = NewCard {
            title: self.title,
            description: self.description,
            acceptance: self.acceptance,
            assignee: self.assignee,
            column: self.column,
            project: self.project,
        };
        shown(ctx, |reply| BoardRequest::AddCard {
            params,
            taint: None,
            reply,
        })
        .await
    }
}

impl Handle for EditCardParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        let budget = self.budget_micro_usd.is_some()
            || self.budget_tokens.is_some()
            || self.budget_calls.is_some();
        let params = Box::new(card_edit(self)?);
        let view = shown(ctx, |reply| BoardRequest::EditCard {
            params,
            taint: None,
            reply,
        })
        .await?;
        if budget {
            budget_set_anew(ctx, &format!("card/{}", view.id)).await?;
            let caps = view.budget.as_ref().map(|b| b.caps);
            ctx.audit.record(
                &format!("card budget {} '{}'", view.short_id, view.title),
                None,
                Some(&caps),
            );
        }
        Ok(view)
    }
}

/// The wire's edit of a card as the board takes it: an empty assignee or project takes it off;
/// a hold and `clear_hold` together are refused.
fn card_edit(p: EditCardParams) -> Result<CardEdit, Failure> {
    let hold = match (p.hold, p.clear_hold) {
        (Some(_), true) => {
            return Err(Failure(WireError::new(
                ErrorCode::BadRequest,
                "put a card on hold or take it off hold, not both at once",
            )));
        }
        (Some(reason), false) => Edit::Set(reason),
        (None, true) => Edit::Clear,
        (None, false) => Edit::Keep,
    };
    let emptied = |given: Option<String>| Edit::read(given, |v| v.trim().is_empty());
    Ok(CardEdit {
        card: p.card,
        title: p.title,
        description: p.description,
        acceptance: p.acceptance,
        assignee: emptied(p.assignee),
        column: p.column,
        hold,
        comment: p.comment,
        project: emptied(p.project),
        budget_micro_usd: p.budget_micro_usd,
        budget_tokens: p.budget_tokens,
        budget_calls: p.budget_calls,
    })
}

/// The person set a card's or a project's budget: what was allowed more of the one before is
/// forgotten (the budget is what was set), and the runs that wait for it look again.
async fn budget_set_anew(ctx: &Arc<DaemonCtx>, prefix: &str) -> Result<(), Failure> {
    let keys = ctx.spend.grants_under(prefix);
    if !keys.is_empty() {
        let deletes = keys
            .iter()
            .map(|k| Change::delete::<BudgetGrant>(k.as_str()))
            .collect();
        ctx.writer.commit(deletes).await?;
        ctx.spend.forget_grants(&keys);
    }
    ctx.live.budgets_changed();
    Ok(())
}

impl Handle for CardShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        shown(ctx, |reply| BoardRequest::ShowCard {
            card: self.card,
            reply,
        })
        .await
    }
}

impl Handle for CardRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        shown(ctx, |reply| BoardRequest::RemoveCard {
            card: self.card,
            force: self.force,
            reply,
        })
        .await
    }
}

impl Handle for AddProjectParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        let params = NewProject {
            name: self.name,
            folder: self.folder,
            main_branch: self.main_branch,
            github: self.github,
            testing: self.testing,
        };
        shown(ctx, |reply| BoardRequest::AddProject { params, reply }).await
    }
}

impl Handle for EditProjectParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        let budget = self.daily_budget_micro_usd.is_some()
            || self.daily_budget_tokens.is_some()
            || self.daily_budget_calls.is_some();
        // An empty GitHub name on the wire reads the host from the `origin` remote again.
        let params = ProjectEdit {
            project: self.project,
            name: self.name,
            folder: self.folder,
            main_branch: self.main_branch,
            github: Edit::read(self.github.map(|g| g.trim().to_string()), String::is_empty),
            daily_budget_micro_usd: self.daily_budget_micro_usd,
            daily_budget_tokens: self.daily_budget_tokens,
            daily_budget_calls: self.daily_budget_calls,
        };
        let view = shown(ctx, |reply| BoardRequest::EditProject { params, reply }).await?;
        if budget {
            budget_set_anew(ctx, &format!("project/{}/", view.id)).await?;
            let caps = view.daily_budget.as_ref().map(|b| b.caps);
            ctx.audit.record(
                &format!("project daily budget {}", view.name),
                None,
                Some(&caps),
            );
        }
        Ok(view)
    }
}

/// A person's request, from the command line or the web UI: the one way "the lead may merge"
/// is set.
impl Handle for ProjectSet {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        let what = format!("project set {} {}", self.project, self.settings.join(" "));
        let view = shown(ctx, |reply| BoardRequest::SetProject {
            project: self.project,
            settings: self.settings,
            reply,
        })
        .await?;
        let switches = serde_json::json!({
            "testing": view.testing,
            "lead_may_merge": view.lead_may_merge,
        });
        ctx.audit.record(&what, None, Some(&switches));
        Ok(view)
    }
}

impl Handle for ProjectShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        shown(ctx, |reply| BoardRequest::ShowProject {
            project: self.project,
            reply,
        })
        .await
    }
}

impl Handle for ProjectList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ProjectView>, Failure> {
        shown(ctx, BoardRequest::Projects).await
    }
}

impl Handle for ProjectRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        shown(ctx, |reply| BoardRequest::RemoveProject {
            project: self.project,
            reply,
        })
        .await
    }
}

impl Handle for BoardLimit {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<BoardView, Failure> {
        shown(ctx, |reply| BoardRequest::SetLimit {
            limit: self.limit,
            reply,
        })
        .await
    }
}

impl Handle for NoteList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<NoteSummary>, Failure> {
        let notes = ask(ctx, BoardRequest::Notes).await?;
        Ok(notes.iter().map(note_summary).collect())
    }
}

impl Handle for NoteShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<NoteView, Failure> {
        shown(ctx, |reply| BoardRequest::Note {
            path: self.path,
            reply,
        })
        .await
    }
}

impl Handle for NoteWrite {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<NoteView, Failure> {
        shown(ctx, |reply| BoardRequest::WriteNote {
            path: self.path,
            text: self.text,
            base_version: self.base_version,
            force: self.force,
            reply,
        })
        .await
    }
}

/// Asks the Board actor as [`ask`] does, and answers with the view of its reply.
async fn shown<T: View + Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    make: impl FnOnce(Reply<T>) -> BoardRequest,
) -> Result<T::Wire, Failure> {
    Ok(ask(ctx, make).await?.view())
}

/// Asks the Board actor (every change to the board and the notes goes through it) the request
/// `make` builds around its reply port; the reply is the request's own type.
pub(super) async fn ask<T: Send + 'static>(
    ctx: &Arc<DaemonCtx>,
    make: impl FnOnce(Reply<T>) -> BoardRequest,
) -> Result<T, Failure> {
    Ok(bosun_board::ask(&ctx.board, make).await?)
}
