//! The board's columns: their names, their order, Auto or Manual, and the limit on card runs at
//! once that the board keeps with them.

use bosun_shared::{ColumnId, Timestamp};
use tracing::info;

use crate::record::{BoardChange, BoardMeta, ColumnRecord};
use crate::{BoardError, BoardNow, BoardState, bad};

/// A new column.
#[derive(Clone, Debug)]
pub struct NewColumn {
    pub name: String,
    /// Auto: its assigned cards are picked up by their agent without being asked.
    pub auto: bool,
    /// Where it goes (0 = first); at the end when absent.
    pub position: Option<u32>,
}

/// A change to a column: what is `None` stays.
#[derive(Clone, Debug)]
pub struct ColumnChange {
    /// Its name or id.
    pub column: String,
    pub name: Option<String>,
    pub auto: Option<bool>,
    pub position: Option<u32>,
}

/// The most card runs at once the limit may be set to.
const MAX_LIMIT: u32 = 64;
const MAX_NAME: usize = 40;

/// A column's name: 1–40 characters, no control characters.
fn check_column_name(name: &str) -> Result<String, BoardError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(bad(format!(
            "a column's name is 1 to {MAX_NAME} characters with no control characters; `{}` is not",
            name.escape_debug()
        )));
    }
    Ok(name.to_string())
}

impl BoardState {
    pub(crate) fn column(&self, key: &str) -> Result<&ColumnRecord, BoardError> {
        let lower = key.trim().to_lowercase();
        self.columns
            .iter()
            .find(|c| c.name.to_lowercase() == lower || c.id.to_string() == lower)
            .ok_or_else(|| {
                BoardError::not_found(format!(
                    "there is no column `{}`; the columns are: {}",
                    key.trim(),
                    self.columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    pub(crate) fn column_name(&self, id: ColumnId) -> String {
        self.columns
            .iter()
            .find(|c| c.id == id)
            .map_or_else(|| id.short(), |c| c.name.clone())
    }

    pub(crate) fn is_auto(&self, id: ColumnId) -> bool {
        self.columns.iter().any(|c| c.id == id && c.auto)
    }

    pub(crate) async fn set_limit(&mut self, limit: u32) -> Result<BoardNow, BoardError> {
        if limit == 0 || limit > MAX_LIMIT {
            return Err(bad(format!(
                "the limit on card runs at once is 1 to {MAX_LIMIT}; {limit} is not"
            )));
        }
        let meta = BoardMeta { limit };
        self.save(vec![BoardChange::Meta(meta.clone())]).await?;
        self.meta = meta;
        self.board().await
    }

    pub(crate) async fn add_column(&mut self, p: NewColumn) -> Result<ColumnRecord, BoardError> {
        let name = check_column_name(&p.name)?;
        if self.column(&name).is_ok() {
            return Err(BoardError::conflict(format!(
                "there is a column `{name}` already; choose another name"
            )));
        }
        let at = p
            .position
            .unwrap_or(u32::MAX)
            .min(self.columns.len() as u32);
        let mut changes = Vec::new();
        let col = ColumnRecord {
            id: ColumnId::new(),
            name,
            auto: p.auto,
            position: at,
            created_at: Timestamp::now(),
        };
        let mut columns = self.columns.clone();
        columns.insert(at as usize, col.clone());
        renumber(&mut columns, &mut changes);
        changes.push(BoardChange::Column(columns[at as usize].clone()));
        self.save(changes).await?;
        self.columns = columns;
        info!(column = %col.name, auto = col.auto, "column added");
        Ok(self.columns[at as usize].clone())
    }

    pub(crate) async fn set_column(&mut self, p: ColumnChange) -> Result<ColumnRecord, BoardError> {
        let id = self.column(&p.column)?.id;
        let mut columns = self.columns.clone();
        let Some(index) = columns.iter().position(|c| c.id == id) else {
            return Err(BoardError::internal("the column went away"));
        };
        let mut col = columns.remove(index);
        if let Some(name) = &p.name {
            let name = check_column_name(name)?;
            if self.column(&name).is_ok_and(|other| other.id != id) {
                return Err(BoardError::conflict(format!(
                    "there is a column `{name}` already; choose another name"
                )));
            }
            col.name = name;
        }
        if let Some(auto) = p.auto {
            col.auto = auto;
        }
        let at = p
            .position
            .map_or(index, |pos| (pos as usize).min(columns.len()));
        columns.insert(at, col.clone());
        let mut changes = Vec::new();
        renumber(&mut columns, &mut changes);
        changes.push(BoardChange::Column(columns[at].clone()));
        self.save(changes).await?;
        self.columns = columns;
        Ok(self.columns[at].clone())
    }
}

/// Numbers the columns in order, adding a change for each whose number moved.
fn renumber(columns: &mut [ColumnRecord], changes: &mut Vec<BoardChange>) {
    for (i, c) in columns.iter_mut().enumerate() {
        if c.position != i as u32 {
            c.position = i as u32;
            changes.push(BoardChange::Column(c.clone()));
        }
    }
}
