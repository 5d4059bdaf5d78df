//! Memory notes: listed, read, written against the version they were based on, appended to and
//! moved, each change a new version.

use crate::record::{BoardChange, NoteRecord};
use crate::{BoardError, BoardState, bad};
use bosun_kit::offload::blocking;
use bosun_shared::Timestamp;
use bosun_shared::projects::MAX_NOTE;

const MAX_PATH: usize = 200;

/// A note's path: segments of letters, digits, `.`, `_` and `-`, joined by `/`; no `.` or `..`
/// segment, no leading `/`, at most 200 characters.
pub fn check_note_path(path: &str) -> Result<(), BoardError> {
    let ok = !path.is_empty()
        && path.len() <= MAX_PATH
        && path.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "`{}` is not a note's path: use names of letters, digits, `.`, `_` and `-` joined by `/`, such as `decisions/api.md` (at most {MAX_PATH} characters, no `..`)",
            path.escape_debug()
        )))
    }
}

impl BoardState {
    pub(crate) async fn notes(&self) -> Result<Vec<NoteRecord>, BoardError> {
        let store = self.ctx.store.clone();
        Ok(blocking(move || store.all::<NoteRecord>()).await??)
    }

    pub(crate) async fn read_note(&self, path: &str) -> Result<NoteRecord, BoardError> {
        check_note_path(path)?;
        self.note(path).await?.ok_or_else(|| {
            BoardError::not_found(format!(
                "there is no note `{path}`; `bosun note list` shows them"
            ))
        })
    }

    pub(crate) async fn append_note(
        &mut self,
        path: String,
        heading: String,
        text: String,
    ) -> Result<NoteRecord, BoardError> {
        check_note_path(&path)?;
        let heading = heading.trim();
        if heading.is_empty() || heading.contains('\n') {
            return Err(bad("an appended section needs a one-line heading"));
        }
        let current = self.note(&path).await?;
        let mut body = current.as_ref().map(|n| n.text.clone()).unwrap_or_default();
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&format!("## {heading}\n\n{}\n", text.trim_end()));
        if body.len() > MAX_NOTE || body.contains('\0') {
            return Err(bad("a note is at most 1 MiB of text with no NUL byte"));
        }
        let note = NoteRecord {
            path,
            text: body,
            version: current.map_or(1, |n| n.version + 1),
            updated_at: Timestamp::now(),
        };
        self.save(vec![BoardChange::Note(note.clone())]).await?;
        Ok(note)
    }

    pub(crate) async fn move_note(
        &mut self,
        from: String,
        to: String,
    ) -> Result<NoteRecord, BoardError> {
        check_note_path(&from)?;
        check_note_path(&to)?;
        let Some(note) = self.note(&from).await? else {
            return Err(BoardError::not_found(format!(
                "there is no note `{from}` to move"
            )));
        };
        if from == to {
            return Ok(note);
        }
        if self.note(&to).await?.is_some() {
            return Err(BoardError::conflict(format!(
                "there is a note `{to}` already; move it away first, or choose another path"
            )));
        }
        let moved = NoteRecord {
            path: to,
            text: note.text,
            version: note.version + 1,
            updated_at: Timestamp::now(),
        };
        self.save(vec![
            BoardChange::DeleteNote(from),
            BoardChange::Note(moved.clone()),
        ])
        .await?;
        Ok(moved)
    }

    async fn note(&self, path: &str) -> Result<Option<NoteRecord>, BoardError> {
        let (store, path) = (self.ctx.store.clone(), path.to_string());
        blocking(move || store.get::<NoteRecord>(&path))
            .await?
            .map_err(BoardError::from)
    }

    pub(crate) async fn write_note(
        &mut self,
        path: String,
        text: String,
        base_version: Option<u64>,
        force: bool,
    ) -> Result<NoteRecord, BoardError> {
        check_note_path(&path)?;
        if text.len() > MAX_NOTE || text.contains('\0') {
            return Err(bad("a note is at most 1 MiB of text with no NUL byte"));
        }
        let current = self.note(&path).await?;
        let version = match (&current, base_version, force) {
            (Some(n), _, true) => n.version + 1,
            (Some(n), Some(base), false) if base == n.version => n.version + 1,
            (Some(n), Some(base), false) => {
                return Err(BoardError::conflict(format!(
                    "the note `{path}` has changed since version {base}: it is at version {}; read it again (`bosun note show {path}`) and write your change on that",
                    n.version
                )));
            }
            (Some(n), None, false) => {
                return Err(BoardError::conflict(format!(
                    "the note `{path}` exists (version {}); say which version your text is based on with --base-version {}, or replace it whatever it says with --force",
                    n.version, n.version
                )));
            }
            (None, Some(base), false) => {
                return Err(BoardError::conflict(format!(
                    "the note `{path}` does not exist (any more), so it is not at version {base}; write it without --base-version to create it"
                )));
            }
            (None, _, _) => 1,
        };
        let note = NoteRecord {
            path,
            text,
            version,
            updated_at: Timestamp::now(),
        };
        self.save(vec![BoardChange::Note(note.clone())]).await?;
        Ok(note)
    }
}
