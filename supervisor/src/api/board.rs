//! Answers about the board, the notes and the projects: every one is a question to the Board
//! actor (which keeps projects with the cards that belong to them), whose answer is taken as the
//! request's reply.

use std::sync::Arc;

use bosun_board::{BoardAnswer, BoardRequest};
use bosun_shared::protocol::WireError;
use bosun_shared::protocol::board::{
    AddCardParams, AddColumnParams, Board, BoardLimit, BoardView, CardRemove, CardShow, CardView,
    ColumnView, EditCardParams, NoteList, NoteShow, NoteSummary, NoteView, NoteWrite,
    SetColumnParams,
};
use bosun_shared::protocol::projects::{
    AddProjectParams, EditProjectParams, ProjectList, ProjectRemove, ProjectSet, ProjectShow,
    ProjectView,
};

use super::Handle;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;
use bosun_runs::spend::BudgetGrant;
use bosun_store::writer::Change;

impl Handle for Board {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<BoardView, Failure> {
        ask(ctx, BoardRequest::Show).await
    }
}

impl Handle for AddColumnParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ColumnView, Failure> {
        ask(ctx, BoardRequest::AddColumn(self)).await
    }
}

impl Handle for SetColumnParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ColumnView, Failure> {
        ask(ctx, BoardRequest::SetColumn(self)).await
    }
}

impl Handle for AddCardParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        let req = BoardRequest::AddCard {
            params: self,
            taint: None,
        };
        ask(ctx, req).await
    }
}

impl Handle for EditCardParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        let budget = self.budget_micro_usd.is_some() || self.budget_tokens.is_some();
        let req = BoardRequest::EditCard {
            params: Box::new(self),
            taint: None,
        };
        let view: CardView = ask(ctx, req).await?;
        if budget {
            budget_set_anew(ctx, &format!("card/{}", view.id)).await?;
        }
        Ok(view)
    }
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
        ask(ctx, BoardRequest::ShowCard(self.card)).await
    }
}

impl Handle for CardRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<CardView, Failure> {
        let req = BoardRequest::RemoveCard {
            card: self.card,
            force: self.force,
        };
        ask(ctx, req).await
    }
}

impl Handle for AddProjectParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        ask(ctx, BoardRequest::AddProject(self)).await
    }
}

impl Handle for EditProjectParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        let budget = self.daily_budget_micro_usd.is_some() || self.daily_budget_tokens.is_some();
        let view: ProjectView = ask(ctx, BoardRequest::EditProject(self)).await?;
        if budget {
            budget_set_anew(ctx, &format!("project/{}/", view.id)).await?;
        }
        Ok(view)
    }
}

/// A person's request, from the command line or the web UI: the one way "the lead may merge"
/// is set.
impl Handle for ProjectSet {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        let req = BoardRequest::SetProject {
            project: self.project,
            settings: self.settings,
        };
        ask(ctx, req).await
    }
}

impl Handle for ProjectShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        ask(ctx, BoardRequest::ShowProject(self.project)).await
    }
}

impl Handle for ProjectList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ProjectView>, Failure> {
        ask(ctx, BoardRequest::Projects).await
    }
}

impl Handle for ProjectRemove {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ProjectView, Failure> {
        ask(ctx, BoardRequest::RemoveProject(self.project)).await
    }
}

impl Handle for BoardLimit {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<BoardView, Failure> {
        ask(ctx, BoardRequest::SetLimit(self.limit)).await
    }
}

impl Handle for NoteList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<NoteSummary>, Failure> {
        ask(ctx, BoardRequest::Notes).await
    }
}

impl Handle for NoteShow {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<NoteView, Failure> {
        ask(ctx, BoardRequest::Note(self.path)).await
    }
}

impl Handle for NoteWrite {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<NoteView, Failure> {
        let req = BoardRequest::WriteNote {
            path: self.path,
            text: self.text,
            base_version: self.base_version,
            force: self.force,
        };
        ask(ctx, req).await
    }
}

/// Asks the Board actor (every change to the board and the notes goes through it), expecting
/// the kind of answer `T` is.
pub(super) async fn ask<T: FromBoard>(
    ctx: &Arc<DaemonCtx>,
    req: BoardRequest,
) -> Result<T, Failure> {
    let answer = bosun_board::ask(&ctx.board, req).await?;
    T::from_board(answer)
        .ok_or_else(|| WireError::internal("the board answered with something else").into())
}

/// A reply the Board's [`BoardAnswer`] can carry.
pub(super) trait FromBoard: Sized {
    fn from_board(a: BoardAnswer) -> Option<Self>;
}

impl FromBoard for BoardView {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Board(b) = a {
            Some(*b)
        } else {
            None
        }
    }
}

impl FromBoard for ColumnView {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Column(c) = a {
            Some(c)
        } else {
            None
        }
    }
}

impl FromBoard for CardView {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Card(c) = a {
            Some(*c)
        } else {
            None
        }
    }
}

impl FromBoard for Vec<NoteSummary> {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Notes { notes } = a {
            Some(notes)
        } else {
            None
        }
    }
}

impl FromBoard for NoteView {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Note(n) = a {
            Some(n)
        } else {
            None
        }
    }
}

impl FromBoard for ProjectView {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Project(p) = a {
            Some(*p)
        } else {
            None
        }
    }
}

impl FromBoard for Vec<ProjectView> {
    fn from_board(a: BoardAnswer) -> Option<Self> {
        if let BoardAnswer::Projects { projects } = a {
            Some(projects)
        } else {
            None
        }
    }
}
