//! The board: columns (Auto or Manual), cards, the automation that starts a card's agent, and
//! memory notes. One actor, Board, owns every change to them, so two changes never race; each
//! step is committed durably before anyone hears of it.
//!
//! The automation: a card in an Auto column, with an assignee, not on hold, whose current move
//! has no run yet, gets a run of its agent — oldest move first, while fewer than the board's
//! limit of card runs are going. The move is marked (`started_for`) before the run is asked
//! for, and the run carries the card and the move; Runs keeps one run per move, so a run asked
//! again after any crash is the same run, never a second one.
//!
//! A card of a project runs in its worktree ([`worktree`]), made before its first run and found
//! again before every run after; projects themselves are kept here too ([`projects`]).
//!
//! This file holds the actor, its messages and the dispatch of each request; the work is done
//! by concern in [`columns`], [`cards`], [`notes`], [`view`] (how the board and its cards are
//! shown), [`automation`] (the cards' runs) and [`merge`] (pull requests and the lead's merge).

use crate::record::BoardReads;
mod automation;
mod cards;
mod columns;
mod detail;
mod error;
pub mod github;
mod merge;
mod notes;
mod projects;
pub mod record;
pub mod worktree;
pub use cards::{CardEdit, NewCard, tainted_reason};
pub use columns::{ColumnChange, NewColumn};
pub use detail::{BoardNow, BudgetNow, Card, Project};
pub use error::BoardError;
pub use merge::{Again, Closed, Finding, Findings, OfferNow, QaTokens};
pub use notes::check_note_path;
pub use projects::{NewProject, ProjectEdit};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bosun_shared::{CardId, ColumnId, ProjectId, RunId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::warn;

use bosun_agents::registry::AgentsContext;
use bosun_kit::handle::ActorHandle;
use bosun_runs::RunsMsg;
use bosun_store::Store;
use bosun_store::writer::{Change, StoreWriter};
use record::{
    BoardChange, BoardMeta, CardRecord, CardWorktree, ColumnRecord, NoteRecord, ProjectRecord,
};

/// How often the automation looks for work and for runs that ended.
const TICK: Duration = Duration::from_millis(500);

/// The columns a new board starts with: (name, auto).
const FIRST_COLUMNS: [(&str, bool); 6] = [
    ("Backlog", false),
    ("To do", true),
    ("In progress", true),
    ("Testing", true),
    ("Review", false),
    ("Done", false),
];

#[derive(Clone)]
pub struct BoardContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub agents: AgentsContext,
    pub runs: ActorHandle<RunsMsg>,
    /// Where cards' worktrees go (`<state dir>/worktrees`).
    pub worktrees: PathBuf,
    /// bosun's own MCP server, once it listens: a QA run gives its verdict there.
    pub mcp_url: Arc<OnceLock<String>>,
    /// The tokens of live QA runs.
    pub qa_tokens: QaTokens,
    /// Where the lead's merges are told (bosund tells every attached UI).
    pub tell: bosun_kit::tell::Tell<bosun_shared::notice::Notice>,
    /// What the runs of each card and project spent, for the budgets shown.
    pub spend: Arc<bosun_runs::spend::Spend>,
}

pub type BoardHandle = ActorHandle<BoardMsg>;

/// The port a request's reply goes back on: each request carries one of the type it yields,
/// so a caller gets exactly that and never picks it out of a union.
pub type Reply<T> = RpcReplyPort<Result<T, BoardError>>;

/// Asks the Board actor (every change to the board and the notes goes through it) the request
/// `make` builds around the reply port, and waits for that request's own reply.
pub async fn ask<T: Send + 'static>(
    board: &BoardHandle,
    make: impl FnOnce(Reply<T>) -> BoardRequest,
) -> Result<T, BoardError> {
    let board = board.get().ok_or(bosun_kit::error::Starting)?;
    ractor::call!(board, |reply| BoardMsg::Request(make(reply)))
        .map_err(|e| BoardError::internal(format!("the board did not answer: {e}")))?
}

/// What the Board is asked, each with the port for what it yields: the view of what the
/// request was about, or for the lead's merges the words of what was done.
pub enum BoardRequest {
    Show(Reply<BoardNow>),
    AddColumn {
        params: NewColumn,
        reply: Reply<ColumnRecord>,
    },
    SetColumn {
        params: ColumnChange,
        reply: Reply<ColumnRecord>,
    },
    /// `taint`: the outside tool the lead's answer used before this call, if any.
    AddCard {
        params: NewCard,
        taint: Option<String>,
        reply: Reply<Card>,
    },
    EditCard {
        params: Box<CardEdit>,
        taint: Option<String>,
        reply: Reply<Card>,
    },
    ShowCard {
        card: String,
        reply: Reply<Card>,
    },
    /// Removes a card no run of is going, and its worktree (`force`: with changes not
    /// committed); the reply is the card as it was.
    RemoveCard {
        card: String,
        force: bool,
        reply: Reply<Card>,
    },
    SetLimit {
        limit: u32,
        reply: Reply<BoardNow>,
    },
    Notes(Reply<Vec<NoteRecord>>),
    Note {
        path: String,
        reply: Reply<NoteRecord>,
    },
    WriteNote {
        path: String,
        text: String,
        base_version: Option<u64>,
        force: bool,
        reply: Reply<NoteRecord>,
    },
    /// Adds a section (a `## heading` and its text) at the end of a note, creating it if need
    /// be.
    AppendNote {
        path: String,
        heading: String,
        text: String,
        reply: Reply<NoteRecord>,
    },
    MoveNote {
        from: String,
        to: String,
        reply: Reply<NoteRecord>,
    },
    AddProject {
        params: NewProject,
        reply: Reply<Project>,
    },
    EditProject {
        params: ProjectEdit,
        reply: Reply<Project>,
    },
    /// The person's switches of a project (`key=value`); nobody else's request is made into it.
    SetProject {
        project: String,
        settings: Vec<String>,
        reply: Reply<Project>,
    },
    ShowProject {
        project: String,
        reply: Reply<Project>,
    },
    Projects(Reply<Vec<Project>>),
    /// Removes a project; the reply is the project as it was.
    RemoveProject {
        project: String,
        reply: Reply<Project>,
    },
    /// A live QA run's verdict on its card (from bosun's MCP server, by the run's token).
    QaVerdict {
        card: CardId,
        pass: bool,
        summary: String,
        reply: Reply<Card>,
    },
    /// The lead's merge of a card's pull request, under every rule: what was done, in words.
    MergePr {
        card: String,
        reply: Reply<String>,
    },
    /// The lead brings a project's checkout up to date (`stash`: its changes put aside first):
    /// what was done, in words.
    UpdateCheckout {
        project: String,
        stash: bool,
        reply: Reply<String>,
    },
    /// A board check's findings (`mark`: recorded as offered to the lead now).
    MergeFindings {
        mark: bool,
        reply: Reply<Findings>,
    },
    /// How the merges of the cards a board check offered went.
    MergeOffers {
        cards: Vec<CardId>,
        reply: Reply<Vec<OfferNow>>,
    },
}

pub enum BoardMsg {
    /// A request, answered on its own reply port.
    Request(BoardRequest),
    /// Time to look for work.
    Tick,
    /// Time to look for merged pull requests.
    CheckPrs,
    /// A card's run was asked for; this is how it went.
    Started {
        card: CardId,
        moved: u64,
        result: Result<(RunId, Option<CardWorktree>), BoardError>,
    },
}

pub struct Board;

pub struct BoardState {
    ctx: BoardContext,
    meta: BoardMeta,
    columns: Vec<ColumnRecord>,
    cards: HashMap<CardId, CardRecord>,
    projects: HashMap<ProjectId, ProjectRecord>,
    /// Cards whose run is being asked for.
    starting: HashSet<CardId>,
    /// Runs known to be over (not read again).
    over: HashSet<RunId>,
}

impl Actor for Board {
    type Msg = BoardMsg;
    type State = BoardState;
    type Arguments = BoardContext;

    async fn pre_start(
        &self,
        _myself: ActorRef<BoardMsg>,
        ctx: BoardContext,
    ) -> Result<BoardState, ActorProcessingErr> {
        let store = ctx.store.clone();
        let (meta, mut columns, cards) =
            tokio::task::spawn_blocking(move || store.board()).await??;
        let meta = match meta {
            Some(m) => m,
            None => {
                // A new board: its first columns.
                let meta = BoardMeta::default();
                let now = Timestamp::now();
                columns = FIRST_COLUMNS
                    .iter()
                    .enumerate()
                    .map(|(i, (name, auto))| ColumnRecord {
                        id: ColumnId::new(),
                        name: (*name).to_string(),
                        auto: *auto,
                        position: i as u32,
                        created_at: now,
                    })
                    .collect();
                let mut changes: Vec<BoardChange> =
                    columns.iter().cloned().map(BoardChange::Column).collect();
                changes.push(BoardChange::Meta(meta.clone()));
                ctx.writer
                    .commit(changes.into_iter().map(Change::from).collect())
                    .await?;
                meta
            }
        };
        columns.sort_by_key(|c| c.position);
        let store = ctx.store.clone();
        let projects = tokio::task::spawn_blocking(move || store.projects()).await??;
        // Worktrees of cards that are gone (removed while bosund died) go now; those of cards
        // that are here are found again before their next run.
        let keep: HashSet<CardId> = cards.iter().map(|c| c.id).collect();
        let repos: Vec<PathBuf> = projects.iter().map(|p| p.folder.clone()).collect();
        let root = ctx.worktrees.clone();
        tokio::task::spawn_blocking(move || worktree::sweep(&root, &keep, &repos)).await?;
        // The tokens of QA runs that were live when bosund stopped: a verdict they give now is
        // taken (and refused once their run is found over).
        for card in &cards {
            for digest in &card.qa_tokens {
                ctx.qa_tokens.open(card.id, digest.clone());
            }
        }
        Ok(BoardState {
            ctx,
            meta,
            columns,
            cards: cards.into_iter().map(|c| (c.id, c)).collect(),
            projects: projects.into_iter().map(|p| (p.id, p)).collect(),
            starting: HashSet::new(),
            over: HashSet::new(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<BoardMsg>,
        _state: &mut BoardState,
    ) -> Result<(), ActorProcessingErr> {
        // A move marked started whose run is not recorded on the card is asked again: Runs
        // answers with the run it made for that move, or makes it if the crash came first.
        myself.send_interval(TICK, || BoardMsg::Tick);
        let _ = myself.cast(BoardMsg::Tick);
        // Merged pull requests are looked for now (a merge cut off by a crash is found) and
        // every so often.
        myself.send_interval(merge::pr_check_interval(), || BoardMsg::CheckPrs);
        let _ = myself.cast(BoardMsg::CheckPrs);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<BoardMsg>,
        msg: BoardMsg,
        state: &mut BoardState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("board"), async move {
            match msg {
                BoardMsg::Request(req) => {
                    if state.request(req).await {
                        state.automate(&myself).await?;
                    }
                }
                BoardMsg::Tick => state.automate(&myself).await?,
                BoardMsg::CheckPrs => {
                    if let Err(e) = state.check_prs().await {
                        warn!(error = %e, "the pull request check failed");
                    }
                }
                BoardMsg::Started {
                    card,
                    moved,
                    result,
                } => {
                    state.starting.remove(&card);
                    state.started(card, moved, result).await?;
                    state.automate(&myself).await?;
                }
            }
            Ok(())
        })
        .await
    }
}

/// Sends a request's reply (a caller that stopped waiting is no matter) and says whether it was
/// a success.
fn send<T>(reply: Reply<T>, result: Result<T, BoardError>) -> bool {
    let ok = result.is_ok();
    let _ = reply.send(result);
    ok
}

fn bad(m: impl std::fmt::Display) -> BoardError {
    BoardError::invalid(m)
}

impl BoardState {
    async fn save(&self, changes: Vec<BoardChange>) -> Result<(), BoardError> {
        self.ctx
            .writer
            .commit(changes.into_iter().map(Change::from).collect())
            .await
            .map_err(BoardError::from)
    }

    /// Carries out a request and sends its reply on the request's own port. Whether it
    /// succeeded: the board may have changed, so the automation looks again.
    async fn request(&mut self, req: BoardRequest) -> bool {
        match req {
            BoardRequest::Show(reply) => send(reply, self.board().await),
            BoardRequest::AddColumn { params, reply } => send(reply, self.add_column(params).await),
            BoardRequest::SetColumn { params, reply } => send(reply, self.set_column(params).await),
            BoardRequest::AddCard {
                params,
                taint,
                reply,
            } => send(reply, self.add_card(params, taint).await),
            BoardRequest::EditCard {
                params,
                taint,
                reply,
            } => send(reply, self.edit_card(*params, taint).await),
            BoardRequest::ShowCard { card, reply } => send(reply, self.show_card(&card).await),
            BoardRequest::SetLimit { limit, reply } => send(reply, self.set_limit(limit).await),
            BoardRequest::Notes(reply) => send(reply, self.notes().await),
            BoardRequest::Note { path, reply } => send(reply, self.read_note(&path).await),
            BoardRequest::WriteNote {
                path,
                text,
                base_version,
                force,
                reply,
            } => send(
                reply,
                self.write_note(path, text, base_version, force).await,
            ),
            BoardRequest::AppendNote {
                path,
                heading,
                text,
                reply,
            } => send(reply, self.append_note(path, heading, text).await),
            BoardRequest::MoveNote { from, to, reply } => {
                send(reply, self.move_note(from, to).await)
            }
            BoardRequest::RemoveCard { card, force, reply } => {
                send(reply, self.remove_card(&card, force).await)
            }
            BoardRequest::AddProject { params, reply } => {
                send(reply, self.add_project(params).await)
            }
            BoardRequest::EditProject { params, reply } => {
                send(reply, self.edit_project(params).await)
            }
            BoardRequest::SetProject {
                project,
                settings,
                reply,
            } => send(reply, self.set_project(&project, &settings).await),
            BoardRequest::ShowProject { project, reply } => {
                send(reply, self.show_project(&project))
            }
            BoardRequest::Projects(reply) => send(reply, Ok(self.list_projects())),
            BoardRequest::QaVerdict {
                card,
                pass,
                summary,
                reply,
            } => send(reply, self.qa_verdict(card, pass, summary).await),
            BoardRequest::MergePr { card, reply } => send(reply, self.merge_pr(&card).await),
            BoardRequest::UpdateCheckout {
                project,
                stash,
                reply,
            } => send(reply, self.update_checkout(&project, stash).await),
            BoardRequest::MergeFindings { mark, reply } => send(reply, self.findings(mark).await),
            BoardRequest::MergeOffers { cards, reply } => send(reply, Ok(self.offers(&cards))),
            BoardRequest::RemoveProject { project, reply } => {
                send(reply, self.remove_project(&project).await)
            }
        }
    }
}
