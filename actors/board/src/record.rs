//! The board as stored: columns (`columns[column id]`), cards (`cards[card id]`, with the moves
//! that decide when a card's run starts), the board's settings (`meta["board"]`), and memory
//! notes with their versions (`notes[path]`), projects (`projects[project id]`); and
//! [`BoardChange`], the board's one batch write.

use std::path::PathBuf;

use bosun_shared::projects::Host;
use bosun_shared::usage::Budget;
use bosun_shared::{AgentId, CardId, ColumnId, ProjectId, RunId, Timestamp};
use serde::{Deserialize, Serialize};

use bosun_store::writer::Change;
use bosun_store::{META, Record, Store, StoreError};

/// The most activity lines a card keeps (the oldest go first).
pub const MAX_ACTIVITY: usize = 200;

/// The board's settings; stored under the key `board`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardMeta {
    /// The most card runs at once.
    pub limit: u32,
}

impl Default for BoardMeta {
    fn default() -> Self {
        Self { limit: 4 }
    }
}

/// The board's settings are the one record of the store's own `meta` table: its key is always
/// [`BoardMeta::KEY`].
impl Record for BoardMeta {
    const TABLE: &'static str = META;
    const WHAT: &'static str = "board";
    type Key = str;

    fn key(&self) -> String {
        Self::KEY.to_string()
    }
}

impl BoardMeta {
    pub const KEY: &'static str = "board";
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnRecord {
    pub id: ColumnId,
    pub name: String,
    pub auto: bool,
    pub position: u32,
    pub created_at: Timestamp,
}

impl Record for ColumnRecord {
    const TABLE: &'static str = "columns";
    const WHAT: &'static str = "column";
    type Key = ColumnId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// `needs_decision`.
    pub kind: String,
    pub reason: String,
}

impl Hold {
    pub fn needs_decision(reason: impl Into<String>) -> Self {
        Self {
            kind: "needs_decision".into(),
            reason: reason.into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    pub at: Timestamp,
    pub what: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRecord {
    pub id: CardId,
    pub title: String,
    pub description: String,
    pub acceptance: String,
    pub assignee: Option<AgentId>,
    pub column: ColumnId,
    pub hold: Option<Hold>,
    pub activity: Vec<Activity>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// One more each time the card is put into a column (created in one, or moved): its agent
    /// is started at most once per move.
    pub moved: u64,
    pub moved_at: Timestamp,
    /// The move a run was asked for. Committed before the run is started; a run carries the
    /// card and the move, so after a crash the board can tell whether it was made.
    pub started_for: Option<u64>,
    /// Its runs, oldest first.
    pub runs: Vec<CardRun>,
    /// Taken off hold, it gets a new run (its last one may or may not have begun).
    #[serde(default)]
    pub rerun_on_release: bool,
    /// The project it belongs to. Left out of the record when it has none, as cards were
    /// before projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectId>,
    /// Its worktree, recorded once its first run in the project made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<CardWorktree>,
    /// Its latest QA verdict, with the commit the QA run tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qa: Option<QaVerdict>,
    /// A merge asked of GitHub: committed before `gh pr merge` is called, so that after any
    /// crash the pull request check finds out what became of it (and nothing asks again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeAsk>,
    /// Its pull request, once the pull request check found it merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedPr>,
    /// The last board check that offered the lead its merge, and how the merge went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<MergeOffer>,
    /// The SHA-256 digests (never the tokens) of the bearer tokens its QA run was given for
    /// bosun's MCP server: committed before the run is asked for, so that a verdict given after
    /// a restart of bosund is still taken; cleared once the verdict is given or the run ends.
    /// (More than one when the run was asked again after a crash, not knowing whether the first
    /// ask made it.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qa_tokens: Vec<String>,
    /// What all its runs together may use (its QA runs too); kept by each run's RunActor at
    /// every tool call (`bosun_runs::spend`). Left out of the record when it has none.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
}

/// A board check offered the lead a card QA passed, to merge: for which verdict (its QA run and
/// commit), when, and what the lead's merge answered since.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeOffer {
    pub qa_run: RunId,
    pub qa_head: String,
    pub at: Timestamp,
    /// The merge had to wait (checks running, mergeability not worked out yet): the next check
    /// offers it again, while the window after QA lasts.
    #[serde(default)]
    pub wait: bool,
    /// The merge was refused for the person to see to (failed checks, conflicts, a blocked
    /// merge): why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The lead called `merge_pull_request` for the card since this offer. An offer it never
    /// tried is made again by the next check, while the window after QA lasts. (An offer kept
    /// by an older bosun, which did not record it, counts as tried.)
    #[serde(default = "tried_before")]
    pub tried: bool,
    /// The window after QA closed with the merge still owed (it had to wait, or the lead never
    /// tried it), and the person was told so: they are told once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
}

fn tried_before() -> bool {
    true
}

/// A QA run's verdict on a card: passed or failed, and the head commit of the card's worktree
/// it tested.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QaVerdict {
    pub pass: bool,
    pub run: RunId,
    pub head: String,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
}

/// The lead's merge of a card's pull request, as asked of GitHub.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeAsk {
    pub number: u64,
    pub url: String,
    pub head: String,
    pub qa_run: RunId,
    pub checks: Vec<String>,
    pub at: Timestamp,
    /// gh said it merged, and the lead's comment is on the card.
    #[serde(default)]
    pub done: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedPr {
    pub number: u64,
    pub url: String,
    pub at: Timestamp,
}

/// Where a card's runs work: a git worktree of its project's repository, on a branch of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardWorktree {
    pub path: PathBuf,
    pub branch: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRun {
    pub run: RunId,
    /// The move it was started for.
    pub moved: u64,
    /// Its end is in the card's activity log.
    #[serde(default)]
    pub ended: bool,
}

impl Record for CardRecord {
    const TABLE: &'static str = "cards";
    const WHAT: &'static str = "card";
    type Key = CardId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl CardRecord {
    pub fn log(&mut self, what: impl Into<String>) {
        let now = Timestamp::now();
        self.activity.push(Activity {
            at: now,
            what: what.into(),
        });
        if self.activity.len() > MAX_ACTIVITY {
            let extra = self.activity.len() - MAX_ACTIVITY;
            self.activity.drain(..extra);
        }
        self.updated_at = now;
    }

    /// The prompt its agent's run gets.
    pub fn prompt(&self) -> String {
        let mut p = format!("Card {}: {}\n", self.id.short(), self.title);
        if !self.description.trim().is_empty() {
            p.push_str(&format!("\n{}\n", self.description.trim_end()));
        }
        if !self.acceptance.trim().is_empty() {
            p.push_str(&format!(
                "\nAcceptance criteria:\n{}\n",
                self.acceptance.trim_end()
            ));
        }
        p
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteRecord {
    pub path: String,
    pub text: String,
    pub version: u64,
    pub updated_at: Timestamp,
}

impl Record for NoteRecord {
    const TABLE: &'static str = "notes";
    const WHAT: &'static str = "note";
    type Key = str;

    fn key(&self) -> String {
        self.path.clone()
    }
}

/// A project: a git checkout whose cards' runs each work in a worktree of their own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: ProjectId,
    pub name: String,
    /// The checkout's top folder.
    pub folder: PathBuf,
    pub main_branch: String,
    pub host: Host,
    pub testing: bool,
    /// Set by the person alone (`bosun project set NAME lead-may-merge=on`).
    pub lead_may_merge: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// What the runs of its cards created on one day (UTC) together may use. Left out of the
    /// record when it has none.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub daily_budget: Budget,
}

impl Record for ProjectRecord {
    const TABLE: &'static str = "projects";
    const WHAT: &'static str = "project";
    type Key = ProjectId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// One change to the tables of the board, the notes and the projects; the changes of one step
/// are committed together.
#[derive(Clone, Debug)]
pub enum BoardChange {
    Meta(BoardMeta),
    Column(ColumnRecord),
    Card(Box<CardRecord>),
    DeleteCard(CardId),
    Note(NoteRecord),
    DeleteNote(String),
    Project(Box<ProjectRecord>),
    DeleteProject(ProjectId),
}

impl From<BoardChange> for Change {
    fn from(change: BoardChange) -> Self {
        match change {
            BoardChange::Meta(m) => Change::put(&m),
            BoardChange::Column(c) => Change::put(&c),
            BoardChange::Card(c) => Change::put(c.as_ref()),
            BoardChange::DeleteCard(id) => Change::delete::<CardRecord>(&id),
            BoardChange::Note(n) => Change::put(&n),
            BoardChange::DeleteNote(path) => Change::delete::<NoteRecord>(&path),
            BoardChange::Project(p) => Change::put(p.as_ref()),
            BoardChange::DeleteProject(id) => Change::delete::<ProjectRecord>(&id),
        }
    }
}

/// The board as stored: its settings (none before its first start), columns and cards.
pub type StoredBoard = (Option<BoardMeta>, Vec<ColumnRecord>, Vec<CardRecord>);

/// The board's reads of the store.
pub trait BoardReads {
    /// The board: its settings (none before the first start), columns and cards, as of one
    /// moment.
    fn board(&self) -> Result<StoredBoard, StoreError>;

    /// Every project.
    fn projects(&self) -> Result<Vec<ProjectRecord>, StoreError>;
}

impl BoardReads for Store {
    fn board(&self) -> Result<StoredBoard, StoreError> {
        let read = self.read()?;
        Ok((
            read.get::<BoardMeta>(BoardMeta::KEY)?,
            read.all::<ColumnRecord>()?,
            read.all::<CardRecord>()?,
        ))
    }

    fn projects(&self) -> Result<Vec<ProjectRecord>, StoreError> {
        self.all::<ProjectRecord>()
    }
}

/// The caps of cards and projects, as the runs read them at each tool call: from the store,
/// which has every change the board made (it commits before it answers).
pub struct BoardBudgets(pub Store);

impl bosun_runs::spend::SharedBudgets for BoardBudgets {
    fn of_card(&self, card: CardId) -> Result<Option<bosun_runs::spend::CardBudgets>, StoreError> {
        let read = self.0.read()?;
        let Some(c) = read.get::<CardRecord>(&card)? else {
            return Ok(None);
        };
        let project = match c.project {
            Some(p) => read
                .get::<ProjectRecord>(&p)?
                .map(|p| bosun_runs::spend::ProjectBudget {
                    id: p.id,
                    name: p.name,
                    daily: p.daily_budget,
                }),
            None => None,
        };
        Ok(Some(bosun_runs::spend::CardBudgets {
            title: c.title,
            budget: c.budget,
            project,
        }))
    }
}
