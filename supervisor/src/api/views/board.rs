//! The board, its cards, columns, notes and projects as the wire shows them.

use bosun_board::record::{
    Activity, CardWorktree, ColumnRecord, Hold, MergedPr, NoteRecord, QaVerdict,
};
use bosun_board::{BoardNow, BudgetNow, Card, Project};
use bosun_protocol::board::{
    ActivityView, BoardView, CardView, ColumnView, HoldView, MergedView, NoteSummary, NoteView,
    QaView, SharedBudgetView, WorktreeView,
};
use bosun_protocol::projects::ProjectView;

use super::View;

impl View for BoardNow {
    type Wire = BoardView;
    fn view(&self) -> BoardView {
        BoardView {
            columns: self.columns.view(),
            cards: self.cards.view(),
            limit: self.limit,
            running: self.running,
        }
    }
}

impl View for ColumnRecord {
    type Wire = ColumnView;
    fn view(&self) -> ColumnView {
        ColumnView {
            id: self.id,
            name: self.name.clone(),
            auto: self.auto,
            position: self.position,
        }
    }
}

impl View for Card {
    type Wire = CardView;
    fn view(&self) -> CardView {
        let c = &self.record;
        CardView {
            id: c.id,
            short_id: c.id.short(),
            title: c.title.clone(),
            description: c.description.clone(),
            acceptance: c.acceptance.clone(),
            assignee: self.assignee.clone(),
            assignee_id: c.assignee,
            column: self.column.clone(),
            column_id: c.column,
            hold: c.hold.as_ref().map(View::view),
            run: c.runs.last().map(|r| r.run),
            run_state: self.run_state.clone(),
            runs: c.runs.len() as u32,
            created_at: c.created_at,
            updated_at: c.updated_at,
            activity: c.activity.view(),
            project: self.project.clone(),
            worktree: c.worktree.as_ref().map(View::view),
            qa: c.qa.as_ref().map(View::view),
            merged: c.merged.as_ref().map(View::view),
            budget: self.budget.as_ref().map(View::view),
        }
    }
}

impl View for Hold {
    type Wire = HoldView;
    fn view(&self) -> HoldView {
        HoldView {
            kind: self.kind.clone(),
            reason: self.reason.clone(),
        }
    }
}

impl View for Activity {
    type Wire = ActivityView;
    fn view(&self) -> ActivityView {
        ActivityView {
            at: self.at,
            what: self.what.clone(),
        }
    }
}

impl View for CardWorktree {
    type Wire = WorktreeView;
    fn view(&self) -> WorktreeView {
        WorktreeView {
            path: self.path.clone(),
            branch: self.branch.clone(),
        }
    }
}

impl View for QaVerdict {
    type Wire = QaView;
    fn view(&self) -> QaView {
        QaView {
            verdict: if self.pass { "qa_pass" } else { "qa_fail" }.into(),
            run: self.run,
            head: self.head.clone(),
            at: self.at,
            summary: self.summary.clone(),
        }
    }
}

impl View for MergedPr {
    type Wire = MergedView;
    fn view(&self) -> MergedView {
        MergedView {
            number: self.number,
            url: self.url.clone(),
            at: self.at,
        }
    }
}

impl View for BudgetNow {
    type Wire = SharedBudgetView;
    fn view(&self) -> SharedBudgetView {
        SharedBudgetView {
            caps: self.caps,
            more: self.more,
            spent_micro_usd: self.spent.micro_usd,
            spent_tokens: self.spent.tokens,
            spent_calls: self.spent.calls,
        }
    }
}

impl View for NoteRecord {
    type Wire = NoteView;
    fn view(&self) -> NoteView {
        NoteView {
            path: self.path.clone(),
            text: self.text.clone(),
            version: self.version,
            updated_at: self.updated_at,
        }
    }
}

/// A note as a list of them shows it: its size, not its text.
pub fn note_summary(n: &NoteRecord) -> NoteSummary {
    NoteSummary {
        path: n.path.clone(),
        version: n.version,
        bytes: n.text.len() as u64,
        updated_at: n.updated_at,
    }
}

impl View for Project {
    type Wire = ProjectView;
    fn view(&self) -> ProjectView {
        let p = &self.record;
        ProjectView {
            id: p.id,
            name: p.name.clone(),
            folder: p.folder.clone(),
            main_branch: p.main_branch.clone(),
            host: p.host.clone(),
            testing: p.testing,
            lead_may_merge: p.lead_may_merge,
            cards: self.cards,
            created_at: p.created_at,
            updated_at: p.updated_at,
            daily_budget: self.daily_budget.as_ref().map(View::view),
        }
    }
}
