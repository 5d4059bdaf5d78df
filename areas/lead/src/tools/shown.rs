//! How the Board's replies are shown to the lead: JSON tagged `answer`, pinned byte for byte by
//! its tests.

use bosun_shared::protocol::board::{BoardView, CardView, ColumnView, NoteSummary, NoteView};
use bosun_shared::protocol::projects::ProjectView;

use super::pretty;

/// A Board's reply as the lead is shown it: JSON tagged `answer` with what the reply is about,
/// as the lead's tools have always shown it (the model reads these words, so they stay as
/// they are). Serialized only, borrowing the reply.
#[derive(serde::Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub(super) enum Shown<'a> {
    Board(&'a BoardView),
    Column(&'a ColumnView),
    Card(&'a CardView),
    Notes { notes: &'a [NoteSummary] },
    Note(&'a NoteView),
    Project(&'a ProjectView),
    Projects { projects: &'a [ProjectView] },
}

impl Shown<'_> {
    pub(super) fn text(&self) -> String {
        pretty(self)
    }
}

/// The JSON the lead is shown of the Board's replies, pinned byte for byte: the model has
/// always read these shapes (tagged `answer`), so a change to the types behind them must not
/// change them.
#[cfg(test)]
mod shown_tests {
    use super::*;
    use bosun_shared::Timestamp;

    fn column() -> ColumnView {
        ColumnView {
            id: "2wsews00nev1322zbxr4fzry82".parse().expect("an id"),
            name: "To do".to_string(),
            auto: true,
            position: 1,
        }
    }

    #[test]
    fn the_boards_replies_are_shown_to_the_lead_tagged_as_they_always_were() {
        let at = Timestamp::from_millis(1_700_000_000_000);
        let board = BoardView {
            columns: vec![column()],
            cards: Vec::new(),
            limit: 2,
            running: 0,
        };
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
        .assert_eq(&Shown::Board(&board).text());
        expect_test::expect![[r#"
            {
              "answer": "column",
              "id": "2wsews00nev1322zbxr4fzry82",
              "name": "To do",
              "auto": true,
              "position": 1
            }"#]]
        .assert_eq(&Shown::Column(&column()).text());
        let notes = vec![NoteSummary {
            path: "a/b.md".to_string(),
            version: 3,
            bytes: 12,
            updated_at: at,
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
        .assert_eq(&Shown::Notes { notes: &notes }.text());
        let note = NoteView {
            path: "a/b.md".to_string(),
            text: "hello\n".to_string(),
            version: 3,
            updated_at: at,
        };
        expect_test::expect![[r#"
            {
              "answer": "note",
              "path": "a/b.md",
              "text": "hello\n",
              "version": 3,
              "updated_at": 1700000000000
            }"#]]
        .assert_eq(&Shown::Note(&note).text());
        expect_test::expect![[r#"
            {
              "answer": "projects",
              "projects": []
            }"#]]
        .assert_eq(&Shown::Projects { projects: &[] }.text());
    }
}
