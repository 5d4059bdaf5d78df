//! How bosun's answers are written for the lead's model: the same views the UI reads, as
//! pretty JSON, the board's tagged `answer` with what they are about. The model has always read
//! these shapes, so they are pinned byte for byte below.

use bosun_lead::tools::{Answer, Shows};
use bosun_protocol::board::{BoardView, CardView, ColumnView, NoteSummary, NoteView};
use bosun_protocol::projects::ProjectView;
use serde::Serialize;

use super::View;
use super::board::note_summary;

/// The views the lead's model is shown.
pub struct LeadShows;

/// An answer as the lead is shown it, tagged `answer`.
#[derive(Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
enum Shown {
    Agent(bosun_protocol::agents::AgentView),
    Board(BoardView),
    Column(ColumnView),
    Card(CardView),
    Notes { notes: Vec<NoteSummary> },
    Note(NoteView),
    Project(ProjectView),
    Projects { projects: Vec<ProjectView> },
}

impl Shown {
    fn of(answer: Answer<'_>) -> Shown {
        match answer {
            Answer::Agent(a) => Shown::Agent(a.view()),
            Answer::Board(b) => Shown::Board(b.view()),
            Answer::Column(c) => Shown::Column(c.view()),
            Answer::Card(c) => Shown::Card(c.view()),
            Answer::Notes(notes) => Shown::Notes {
                notes: notes.iter().map(note_summary).collect(),
            },
            Answer::Note(n) => Shown::Note(n.view()),
            Answer::Project(p) => Shown::Project(p.view()),
            Answer::Projects(projects) => Shown::Projects {
                projects: projects.iter().map(View::view).collect(),
            },
        }
    }
}

impl Shows for LeadShows {
    fn tagged(&self, answer: Answer<'_>) -> String {
        pretty(&Shown::of(answer))
    }

    fn plain(&self, answer: Answer<'_>) -> String {
        match Shown::of(answer) {
            Shown::Agent(v) => pretty(&v),
            Shown::Board(v) => pretty(&v),
            Shown::Column(v) => pretty(&v),
            Shown::Card(v) => pretty(&v),
            Shown::Notes { notes } => pretty(&notes),
            Shown::Note(v) => pretty(&v),
            Shown::Project(v) => pretty(&v),
            Shown::Projects { projects } => pretty(&projects),
        }
    }
}

fn pretty(v: &impl Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The JSON the lead is shown of the Board's replies, pinned byte for byte: the model has
/// always read these shapes (tagged `answer`), so a change to the types behind them must not
/// change them.
#[cfg(test)]
mod tests {
    use super::*;
    use bosun_board::BoardNow;
    use bosun_board::record::{ColumnRecord, NoteRecord};
    use bosun_shared::Timestamp;

    fn column() -> ColumnRecord {
        ColumnRecord {
            id: "2wsews00nev1322zbxr4fzry82".parse().expect("an id"),
            name: "To do".to_string(),
            auto: true,
            position: 1,
            created_at: Timestamp::from_millis(1_600_000_000_000),
        }
    }

    #[test]
    fn the_boards_replies_are_shown_to_the_lead_tagged_as_they_always_were() {
        let at = Timestamp::from_millis(1_700_000_000_000);
        let board = BoardNow {
            columns: vec![column()],
            cards: Vec::new(),
            limit: 2,
            running: 0,
        };
        let shows = LeadShows;
        expect_test::expect![[r#"
            {
              "answer": "board",
              "columns": [
                {
                  "id": "2wsews00nev1322zbxr4fzry82",
                  "name": "To do",
                  "auto": true,
                  "position": 1
                }
              ],
              "cards": [],
              "limit": 2,
              "running": 0
            }"#]]
        .assert_eq(&shows.tagged(Answer::Board(&board)));
        expect_test::expect![[r#"
            {
              "answer": "column",
              "id": "2wsews00nev1322zbxr4fzry82",
              "name": "To do",
              "auto": true,
              "position": 1
            }"#]]
        .assert_eq(&shows.tagged(Answer::Column(&column())));
        let note = NoteRecord {
            path: "a/b.md".to_string(),
            text: "hello\n".to_string(),
            version: 3,
            updated_at: at,
        };
        let notes = vec![NoteRecord {
            text: "hello, world".to_string(),
            ..note.clone()
        }];
        expect_test::expect![[r#"
            {
              "answer": "notes",
              "notes": [
                {
                  "path": "a/b.md",
                  "version": 3,
                  "bytes": 12,
                  "updated_at": 1700000000000
                }
              ]
            }"#]]
        .assert_eq(&shows.tagged(Answer::Notes(&notes)));
        expect_test::expect![[r#"
            {
              "answer": "note",
              "path": "a/b.md",
              "text": "hello\n",
              "version": 3,
              "updated_at": 1700000000000
            }"#]]
        .assert_eq(&shows.tagged(Answer::Note(&note)));
        expect_test::expect![[r#"
            {
              "answer": "projects",
              "projects": []
            }"#]]
        .assert_eq(&shows.tagged(Answer::Projects(&[])));
    }
}
