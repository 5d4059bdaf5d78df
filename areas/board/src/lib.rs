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

use crate::record::BoardReads;
use crate::record::MergedPr;
use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
mod error;
pub mod github;
mod merge;
mod projects;
pub mod record;
pub mod worktree;
pub use error::BoardError;
pub use merge::{Again, Closed, Finding, Findings, OfferNow, QaTokens};

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bosun_shared::projects::MAX_NOTE;
use bosun_shared::projects::RunGit;
use bosun_shared::protocol::board::{
    AddCardParams, AddColumnParams, BoardView, CardView, ColumnView, EditCardParams, NoteSummary,
    NoteView, SetColumnParams, SharedBudgetView,
};
use bosun_shared::protocol::projects::{AddProjectParams, EditProjectParams, ProjectView};
use bosun_shared::run::{Outcome, RunState};
use bosun_shared::usage::{Budget, BudgetScope, CapEdit, Spent};
use bosun_shared::{AgentId, CardId, ColumnId, ProjectId, RunId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use bosun_agents::launch;
use bosun_agents::registry::AgentsContext;
use bosun_kit::handle::ActorHandle;
use bosun_kit::offload::blocking;
use bosun_runs::RunsMsg;
use bosun_store::Store;
use bosun_store::writer::{Change, StoreWriter};
use record::{
    BoardChange, BoardMeta, CardRecord, CardRun, CardWorktree, ColumnRecord, Hold, NoteRecord,
    ProjectRecord, QaVerdict,
};

/// How often the automation looks for work and for runs that ended.
const TICK: Duration = Duration::from_millis(500);
/// The most card runs at once the limit may be set to.
const MAX_LIMIT: u32 = 64;
const MAX_NAME: usize = 40;
const MAX_TITLE: usize = 200;
const MAX_TEXT: usize = 64 * 1024;
const MAX_PATH: usize = 200;

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
    /// Every attached UI hears of the lead's merges.
    pub events: bosun_runs::events::EventsHandle,
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
    Show(Reply<BoardView>),
    AddColumn {
        params: AddColumnParams,
        reply: Reply<ColumnView>,
    },
    SetColumn {
        params: SetColumnParams,
        reply: Reply<ColumnView>,
    },
    /// `taint`: the outside tool the lead's answer used before this call, if any.
    AddCard {
        params: AddCardParams,
        taint: Option<String>,
        reply: Reply<CardView>,
    },
    EditCard {
        params: Box<EditCardParams>,
        taint: Option<String>,
        reply: Reply<CardView>,
    },
    ShowCard {
        card: String,
        reply: Reply<CardView>,
    },
    /// Removes a card no run of is going, and its worktree (`force`: with changes not
    /// committed); the reply is the card as it was.
    RemoveCard {
        card: String,
        force: bool,
        reply: Reply<CardView>,
    },
    SetLimit {
        limit: u32,
        reply: Reply<BoardView>,
    },
    Notes(Reply<Vec<NoteSummary>>),
    Note {
        path: String,
        reply: Reply<NoteView>,
    },
    WriteNote {
        path: String,
        text: String,
        base_version: Option<u64>,
        force: bool,
        reply: Reply<NoteView>,
    },
    /// Adds a section (a `## heading` and its text) at the end of a note, creating it if need
    /// be.
    AppendNote {
        path: String,
        heading: String,
        text: String,
        reply: Reply<NoteView>,
    },
    MoveNote {
        from: String,
        to: String,
        reply: Reply<NoteView>,
    },
    AddProject {
        params: AddProjectParams,
        reply: Reply<ProjectView>,
    },
    EditProject {
        params: EditProjectParams,
        reply: Reply<ProjectView>,
    },
    /// The person's switches of a project (`key=value`); nobody else's request is made into it.
    SetProject {
        project: String,
        settings: Vec<String>,
        reply: Reply<ProjectView>,
    },
    ShowProject {
        project: String,
        reply: Reply<ProjectView>,
    },
    Projects(Reply<Vec<ProjectView>>),
    /// Removes a project; the reply is the project as it was.
    RemoveProject {
        project: String,
        reply: Reply<ProjectView>,
    },
    /// A live QA run's verdict on its card (from bosun's MCP server, by the run's token).
    QaVerdict {
        card: CardId,
        pass: bool,
        summary: String,
        reply: Reply<CardView>,
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

/// What the store says of a card's run.
struct RunNow {
    words: String,
    over: bool,
    /// Its runner was never recorded, so its program never started.
    never_ran: bool,
    /// Lost before its program was reported started: it may or may not have begun.
    maybe_ran: bool,
    why: String,
}

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

fn check_title(title: &str) -> Result<String, BoardError> {
    let title = title.trim();
    if title.is_empty() || title.chars().count() > MAX_TITLE || title.chars().any(char::is_control)
    {
        return Err(bad(format!(
            "a card's title is 1 to {MAX_TITLE} characters on one line; give it a short title and put the rest in its description"
        )));
    }
    Ok(title.to_string())
}

fn check_text(what: &str, text: &str) -> Result<(), BoardError> {
    if text.len() > MAX_TEXT || text.contains('\0') {
        return Err(bad(format!(
            "the card's {what} is over 64 KiB or has a NUL byte; shorten it"
        )));
    }
    Ok(())
}

/// Edits the card's title, description and acceptance criteria, logging what changed.
fn edit_words(
    card: &mut CardRecord,
    title: Option<&str>,
    description: Option<String>,
    acceptance: Option<String>,
) -> Result<(), BoardError> {
    if let Some(t) = title {
        let t = check_title(t)?;
        if t != card.title {
            card.log(format!("title: {} → {t}", card.title));
            card.title = t;
        }
    }
    if let Some(d) = description {
        check_text("description", &d)?;
        if d != card.description {
            card.description = d;
            card.log("description changed");
        }
    }
    if let Some(a) = acceptance {
        check_text("acceptance criteria", &a)?;
        if a != card.acceptance {
            card.acceptance = a;
            card.log("acceptance criteria changed");
        }
    }
    Ok(())
}

/// Puts the card on hold (`hold`: why), or takes it off hold (`clear`), logging it; a card
/// that was to run again once released counts as moved.
fn edit_hold(card: &mut CardRecord, hold: Option<String>, clear: bool) -> Result<(), BoardError> {
    if let Some(reason) = hold {
        let reason = reason.trim().to_string();
        if reason.is_empty() {
            return Err(bad("say why the card is on hold"));
        }
        card.log(format!("put on hold: {reason}"));
        card.hold = Some(Hold::needs_decision(reason));
    }
    if clear && card.hold.take().is_some() {
        card.log("taken off hold");
        if std::mem::take(&mut card.rerun_on_release) {
            card.moved += 1;
        }
    }
    Ok(())
}

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
    fn column(&self, key: &str) -> Result<&ColumnRecord, BoardError> {
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

    fn column_name(&self, id: ColumnId) -> String {
        self.columns
            .iter()
            .find(|c| c.id == id)
            .map_or_else(|| id.short(), |c| c.name.clone())
    }

    fn is_auto(&self, id: ColumnId) -> bool {
        self.columns.iter().any(|c| c.id == id && c.auto)
    }

    fn card_id(&self, key: &str) -> Result<CardId, BoardError> {
        Ok(bosun_kit::prefix::by_prefix(
            self.cards.keys().copied(),
            key,
            "cards'",
            |k| format!("there is no card `{k}`; `bosun board` shows the cards with their ids"),
        )?)
    }

    async fn agent(&self, key: &str) -> Result<(AgentId, String), BoardError> {
        let rec = bosun_agents::registry::find(&self.ctx.store, key).await?;
        Ok((rec.id, rec.name))
    }

    async fn agent_names(&self) -> Result<HashMap<AgentId, String>, BoardError> {
        let store = self.ctx.store.clone();
        Ok(blocking(move || store.agents())
            .await??
            .into_iter()
            .map(|a| (a.id, a.name))
            .collect())
    }

    /// The state of each card's latest run, and whether it is over.
    /// With `live_only`, runs already known to be over are not read again.
    async fn run_states(&self, live_only: bool) -> HashMap<RunId, RunNow> {
        let ids: Vec<RunId> = self
            .cards
            .values()
            .filter_map(|c| c.runs.last().map(|r| r.run))
            .filter(|r| !(live_only && self.over.contains(r)))
            .collect();
        let store = self.ctx.store.clone();
        blocking(move || {
            ids.into_iter()
                .filter_map(|id| {
                    store.run(id).ok().flatten().map(|r| {
                        let now = RunNow {
                            words: r.state.to_string(),
                            over: r.state.is_final(),
                            never_ran: r.runner.is_none()
                                && r.state == RunState::Exited(Outcome::Lost),
                            maybe_ran: r.runner.is_some()
                                && r.process.is_none()
                                && r.state == RunState::Exited(Outcome::Lost),
                            why: r.exit.map(|e| e.reason).unwrap_or_default(),
                        };
                        (id, now)
                    })
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    fn card_view(
        &self,
        c: &CardRecord,
        names: &HashMap<AgentId, String>,
        states: &HashMap<RunId, RunNow>,
        whole: bool,
    ) -> CardView {
        let run = c.runs.last().map(|r| r.run);
        let run_state = if self.starting.contains(&c.id) {
            Some("starting".to_string())
        } else {
            run.and_then(|r| states.get(&r).map(|s| s.words.clone()))
        };
        let activity = if whole {
            c.activity.iter().map(|a| a.view()).collect()
        } else {
            c.activity.last().map(|a| a.view()).into_iter().collect()
        };
        CardView {
            id: c.id,
            short_id: c.id.short(),
            title: c.title.clone(),
            description: c.description.clone(),
            acceptance: c.acceptance.clone(),
            assignee: c.assignee.map(|a| {
                names
                    .get(&a)
                    .cloned()
                    .unwrap_or_else(|| format!("{} (removed)", a.short()))
            }),
            assignee_id: c.assignee,
            column: self.column_name(c.column),
            column_id: c.column,
            hold: c.hold.as_ref().map(Hold::view),
            run,
            run_state,
            runs: c.runs.len() as u32,
            created_at: c.created_at,
            updated_at: c.updated_at,
            activity,
            project: c.project.map(|p| {
                self.projects
                    .get(&p)
                    .map_or_else(|| format!("{} (removed)", p.short()), |p| p.name.clone())
            }),
            worktree: c.worktree.as_ref().map(CardWorktree::view),
            qa: c.qa.as_ref().map(QaVerdict::view),
            merged: c.merged.as_ref().map(MergedPr::view),
            budget: (!c.budget.is_empty()).then(|| {
                let scope = BudgetScope::Card {
                    card: c.id,
                    title: c.title.clone(),
                };
                budget_view(
                    c.budget,
                    self.ctx.spend.granted(&scope),
                    self.ctx.spend.card(c.id),
                )
            }),
        }
    }

    async fn board_view(&self) -> Result<BoardView, BoardError> {
        let names = self.agent_names().await?;
        let states = self.run_states(false).await;
        let position = |id: ColumnId| {
            self.columns
                .iter()
                .find(|c| c.id == id)
                .map_or(u32::MAX, |c| c.position)
        };
        let mut cards: Vec<&CardRecord> = self.cards.values().collect();
        cards.sort_by_key(|c| (position(c.column), c.moved_at, c.id));
        let running = self
            .cards
            .values()
            .filter(|c| self.in_progress(c, &states))
            .count() as u32;
        Ok(BoardView {
            columns: self.columns.iter().map(ColumnRecord::view).collect(),
            cards: cards
                .into_iter()
                .map(|c| self.card_view(c, &names, &states, false))
                .collect(),
            limit: self.meta.limit,
            running,
        })
    }

    /// Whether a run of the card is being started or going.
    fn in_progress(&self, c: &CardRecord, states: &HashMap<RunId, RunNow>) -> bool {
        self.starting.contains(&c.id)
            || c.runs.last().is_some_and(|r| {
                !self.over.contains(&r.run) && states.get(&r.run).is_none_or(|s| !s.over)
            })
    }

    /// The card as a request about it is answered: its full view, activity included.
    async fn card_reply(&self, id: CardId) -> Result<CardView, BoardError> {
        let names = self.agent_names().await?;
        let states = self.run_states(false).await;
        let c = self
            .cards
            .get(&id)
            .ok_or_else(|| BoardError::internal("the card went away"))?;
        Ok(self.card_view(c, &names, &states, true))
    }

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
            BoardRequest::Show(reply) => send(reply, self.board_view().await),
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

    async fn show_card(&self, key: &str) -> Result<CardView, BoardError> {
        let id = self.card_id(key)?;
        self.card_reply(id).await
    }

    async fn set_limit(&mut self, limit: u32) -> Result<BoardView, BoardError> {
        if limit == 0 || limit > MAX_LIMIT {
            return Err(bad(format!(
                "the limit on card runs at once is 1 to {MAX_LIMIT}; {limit} is not"
            )));
        }
        let meta = BoardMeta { limit };
        self.save(vec![BoardChange::Meta(meta.clone())]).await?;
        self.meta = meta;
        self.board_view().await
    }

    async fn notes(&self) -> Result<Vec<NoteSummary>, BoardError> {
        let store = self.ctx.store.clone();
        let notes = blocking(move || store.all::<NoteRecord>()).await??;
        Ok(notes
            .into_iter()
            .map(|n| NoteSummary {
                bytes: n.text.len() as u64,
                path: n.path,
                version: n.version,
                updated_at: n.updated_at,
            })
            .collect())
    }

    async fn read_note(&self, path: &str) -> Result<NoteView, BoardError> {
        check_note_path(path)?;
        self.note(path).await?.map(|n| n.view()).ok_or_else(|| {
            BoardError::not_found(format!(
                "there is no note `{path}`; `bosun note list` shows them"
            ))
        })
    }

    async fn append_note(
        &mut self,
        path: String,
        heading: String,
        text: String,
    ) -> Result<NoteView, BoardError> {
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
        Ok(note.view())
    }

    async fn move_note(&mut self, from: String, to: String) -> Result<NoteView, BoardError> {
        check_note_path(&from)?;
        check_note_path(&to)?;
        let Some(note) = self.note(&from).await? else {
            return Err(BoardError::not_found(format!(
                "there is no note `{from}` to move"
            )));
        };
        if from == to {
            return Ok(note.view());
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
        Ok(moved.view())
    }

    async fn note(&self, path: &str) -> Result<Option<NoteRecord>, BoardError> {
        let (store, path) = (self.ctx.store.clone(), path.to_string());
        blocking(move || store.get::<NoteRecord>(&path))
            .await?
            .map_err(BoardError::from)
    }

    async fn write_note(
        &mut self,
        path: String,
        text: String,
        base_version: Option<u64>,
        force: bool,
    ) -> Result<NoteView, BoardError> {
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
        Ok(note.view())
    }

    async fn add_column(&mut self, p: AddColumnParams) -> Result<ColumnView, BoardError> {
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
        Ok(self.columns[at as usize].view())
    }

    async fn set_column(&mut self, p: SetColumnParams) -> Result<ColumnView, BoardError> {
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
        Ok(self.columns[at].view())
    }

    async fn add_card(
        &mut self,
        p: AddCardParams,
        taint: Option<String>,
    ) -> Result<CardView, BoardError> {
        let title = check_title(&p.title)?;
        check_text("description", &p.description)?;
        check_text("acceptance criteria", &p.acceptance)?;
        let column = match &p.column {
            Some(c) => self.column(c)?.id,
            None => self.columns.first().map(|c| c.id).ok_or_else(|| {
                bad("the board has no column; add one with `bosun board column add NAME`")
            })?,
        };
        let assignee = match p.assignee.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(a) => Some(self.agent(a).await?),
        };
        let project = match p.project.as_deref().map(str::trim) {
            Some("") | None => None,
            Some(key) => Some(self.project_id(key)?),
        };
        let now = Timestamp::now();
        let mut card = CardRecord {
            id: CardId::new(),
            title,
            description: p.description,
            acceptance: p.acceptance,
            assignee: assignee.as_ref().map(|(id, _)| *id),
            column,
            hold: None,
            activity: Vec::new(),
            created_at: now,
            updated_at: now,
            moved: 1,
            moved_at: now,
            started_for: None,
            runs: Vec::new(),
            rerun_on_release: false,
            project,
            worktree: None,
            qa: None,
            merge: None,
            merged: None,
            offer: None,
            qa_tokens: Vec::new(),
            budget: Budget::default(),
        };
        card.log(format!(
            "created in {}{}{}",
            self.column_name(column),
            assignee
                .map(|(_, n)| format!(", assigned to {n}"))
                .unwrap_or_default(),
            project
                .and_then(|id| self.projects.get(&id))
                .map(|p| format!(", in project {}", p.name))
                .unwrap_or_default()
        ));
        if let Some(tool) = &taint
            && self.is_auto(column)
        {
            let reason = tainted_reason(tool);
            card.log(format!("put on hold: {reason}"));
            card.hold = Some(Hold::needs_decision(reason));
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        let id = card.id;
        self.cards.insert(id, card);
        self.card_reply(id).await
    }

    async fn edit_card(
        &mut self,
        p: EditCardParams,
        taint: Option<String>,
    ) -> Result<CardView, BoardError> {
        let id = self.card_id(&p.card)?;
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::internal("the card went away"));
        };
        if p.hold.is_some() && p.clear_hold {
            return Err(bad(
                "put a card on hold or take it off hold, not both at once",
            ));
        }
        edit_words(&mut card, p.title.as_deref(), p.description, p.acceptance)?;
        if let Some(a) = p.assignee.as_deref().map(str::trim) {
            self.assign(&mut card, a).await?;
        }
        if let Some(key) = p.project.as_deref().map(str::trim) {
            self.put_in_project(&mut card, key)?;
        }
        if let Some(c) = &p.column {
            self.move_to_column(&mut card, c)?;
        }
        edit_hold(&mut card, p.hold, p.clear_hold)?;
        let budget = edit_budget(
            card.budget,
            p.budget_micro_usd,
            p.budget_tokens,
            "a card's budget",
        )?;
        if budget != card.budget {
            card.budget = budget;
            card.log(match budget.caps_words() {
                Some(caps) => format!("budget: {caps} for all its runs"),
                None => "budget taken off".to_string(),
            });
        }
        if let Some(c) = p.comment {
            check_text("comment", &c)?;
            if !c.trim().is_empty() {
                card.log(format!("comment: {}", c.trim()));
            }
        }
        if let Some(tool) = &taint
            && self.is_auto(card.column)
        {
            self.hold_if_touched(id, &mut card, tool);
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.cards.insert(id, card);
        self.card_reply(id).await
    }

    /// Gives the card to the agent `a` (none when empty), logging the change.
    async fn assign(&self, card: &mut CardRecord, a: &str) -> Result<(), BoardError> {
        let new = match a {
            "" => None,
            a => Some(self.agent(a).await?),
        };
        if new.as_ref().map(|(id, _)| *id) != card.assignee {
            card.assignee = new.as_ref().map(|(id, _)| *id);
            card.log(match new {
                Some((_, n)) => format!("assigned to {n}"),
                None => "assignee taken off".to_string(),
            });
        }
        Ok(())
    }

    /// Puts the card in the project `key` (out of its project when empty), logging the change;
    /// refused for a card that works in a worktree of its project already.
    fn put_in_project(&self, card: &mut CardRecord, key: &str) -> Result<(), BoardError> {
        let new = match key {
            "" => None,
            key => Some(self.project_id(key)?),
        };
        if new != card.project {
            if let Some(wt) = &card.worktree {
                return Err(BoardError::conflict(format!(
                    "card {} works in a worktree of its project already (branch {}), so its project stays; add a new card for the other project",
                    card.id.short(),
                    wt.branch
                )));
            }
            card.project = new;
            card.log(match new.and_then(|id| self.projects.get(&id)) {
                Some(p) => format!("put in project {}", p.name),
                None => "taken out of its project".to_string(),
            });
        }
        Ok(())
    }

    /// Moves the card to the column `c`, logging the move.
    fn move_to_column(&self, card: &mut CardRecord, c: &str) -> Result<(), BoardError> {
        let col = self.column(c)?;
        let (to, name) = (col.id, col.name.clone());
        if to != card.column {
            let from = self.column_name(card.column);
            card.column = to;
            card.moved += 1;
            card.moved_at = Timestamp::now();
            card.log(format!("moved from {from} to {name}"));
        }
        Ok(())
    }

    /// Puts the card on hold for the person when the lead moved it or changed what it asks
    /// for after using a tool from outside bosun (`tool`).
    fn hold_if_touched(&self, id: CardId, card: &mut CardRecord, tool: &str) {
        let before = self.cards.get(&id);
        let touched = before.is_none_or(|b| {
            b.column != card.column
                || b.description != card.description
                || b.acceptance != card.acceptance
                || b.assignee != card.assignee
        });
        if touched {
            let reason = tainted_reason(tool);
            card.log(format!("put on hold: {reason}"));
            card.hold = Some(Hold::needs_decision(reason));
        }
    }

    /// Removes a card, and its worktree first (its branch stays): a crash in between leaves
    /// the card, whose next run or removal finds the worktree gone. Refused while a run of it
    /// is going.
    async fn remove_card(&mut self, key: &str, force: bool) -> Result<CardView, BoardError> {
        let id = self.card_id(key)?;
        let Some(card) = self.cards.get(&id).cloned() else {
            return Err(BoardError::internal("the card went away"));
        };
        let states = self.run_states(false).await;
        if self.in_progress(&card, &states) {
            let run = card
                .runs
                .last()
                .map(|r| r.run.short())
                .unwrap_or_else(|| "being started".into());
            return Err(BoardError::conflict(format!(
                "a run of card {} is going ({run}); stop it first (`bosun stop {run}`), then remove the card",
                id.short()
            )));
        }
        let view = self.card_reply(id).await?;
        if let Some(wt) = card.worktree.clone() {
            let repo = card
                .project
                .and_then(|p| self.projects.get(&p))
                .map(|p| p.folder.clone())
                .unwrap_or_default();
            blocking(move || worktree::remove(&repo, &wt, force))
                .await?
                .map_err(|why| {
                    BoardError::conflict(format!("card {} was not removed: {why}", id.short()))
                })?;
        }
        self.save(vec![BoardChange::DeleteCard(id)]).await?;
        self.cards.remove(&id);
        info!(card = %id, "card removed");
        Ok(view)
    }

    /// Starts the runs the board owes, as far as the limit allows, and notes runs that ended.
    async fn automate(&mut self, myself: &ActorRef<BoardMsg>) -> Result<(), ActorProcessingErr> {
        let states = self.run_states(true).await;
        for (run, now) in &states {
            if now.over && self.over.insert(*run) {
                // Said on its card once.
                self.note_run_over(*run, now).await?;
            }
        }
        let mut running = self
            .cards
            .values()
            .filter(|c| self.in_progress(c, &states))
            .count() as u32;
        let (due, qa_agents) = self.due_cards(&states).await;
        for id in due {
            if running >= self.meta.limit {
                break;
            }
            let Some(mut card) = self.cards.get(&id).cloned() else {
                continue;
            };
            let Some(agent) = card.assignee else {
                continue;
            };
            // A QA run of a card of a project gets a token for its verdict; its digest is
            // committed with the mark, before the run is asked for.
            let qa_token = (card.project.is_some() && qa_agents.contains(&agent))
                .then(bosun_shared::RunToken::generate);
            let mark = card.started_for != Some(card.moved);
            if mark || qa_token.is_some() {
                card.started_for = Some(card.moved);
                if let Some(token) = &qa_token {
                    card.qa_tokens.push(token.digest());
                }
                self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                    .await?;
                self.cards.insert(id, card.clone());
                if mark {
                    bosun_kit::crash::point("board-after-mark");
                }
            }
            if let Some(token) = &qa_token {
                self.ctx.qa_tokens.open(id, token.digest());
            }
            self.starting.insert(id);
            running += 1;
            self.start_card(myself, &card, agent, qa_token);
        }
        Ok(())
    }

    /// A run of a card ended: said on the card (or, for a run that never started, or that may
    /// have, another run is owed or the card is held), and its QA tokens are spent.
    async fn note_run_over(&mut self, run: RunId, now: &RunNow) -> Result<(), ActorProcessingErr> {
        let card = self
            .cards
            .values()
            .find(|c| c.runs.last().is_some_and(|r| r.run == run && !r.ended))
            .cloned();
        if let Some(mut card) = card {
            card.qa_tokens.clear();
            if let Some(r) = card.runs.last_mut() {
                r.ended = true;
            }
            if now.never_ran {
                // Its program never started (bosund died first): this move is owed a
                // run still, under a new move so that Runs makes a new one.
                card.moved += 1;
                card.log(format!(
                    "run {} never started ({}); starting another",
                    run.short(),
                    now.why
                ));
            } else if now.maybe_ran {
                let reason = format!(
                    "run {} was lost before it said its program had started ({}), so it may or may not have begun; check, then take the card off hold to run it again",
                    run.short(),
                    now.why
                );
                card.log(format!("put on hold: {reason}"));
                card.hold = Some(Hold::needs_decision(reason));
                card.rerun_on_release = true;
            } else {
                card.log(format!("run {} {}", run.short(), now.words));
            }
            self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                .await?;
            self.ctx.qa_tokens.close(card.id);
            self.cards.insert(card.id, card);
        }
        Ok(())
    }

    /// The cards owed a run, oldest move first: in an auto column, assigned to an agent not
    /// paused, not held, not run for this move and not in progress. With them, the QA agents.
    async fn due_cards(&self, states: &HashMap<RunId, RunNow>) -> (Vec<CardId>, HashSet<AgentId>) {
        let store = self.ctx.store.clone();
        let agents = blocking(move || store.agents())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let paused: HashSet<AgentId> = agents.iter().filter(|a| a.paused).map(|a| a.id).collect();
        let qa_agents: HashSet<AgentId> = agents
            .iter()
            .filter(|a| a.role.eq_ignore_ascii_case("qa"))
            .map(|a| a.id)
            .collect();
        let mut due: Vec<&CardRecord> = self
            .cards
            .values()
            .filter(|c| {
                self.is_auto(c.column)
                    && c.assignee.is_some_and(|a| !paused.contains(&a))
                    && c.hold.is_none()
                    && !c.runs.iter().any(|r| r.moved == c.moved)
                    && !self.in_progress(c, states)
            })
            .collect();
        due.sort_by_key(|c| (c.moved_at, c.id));
        let due: Vec<CardId> = due.into_iter().map(|c| c.id).collect();
        (due, qa_agents)
    }

    /// Asks, in a task of its own, for the run of a card by its agent (in a worktree of the
    /// card's project, when it has one); the Board hears how it went as [`BoardMsg::Started`].
    fn start_card(
        &self,
        myself: &ActorRef<BoardMsg>,
        card: &CardRecord,
        agent: AgentId,
        qa_token: Option<bosun_shared::RunToken>,
    ) {
        let id = card.id;
        let (ctx, runs, me) = (
            self.ctx.agents.clone(),
            self.ctx.runs.clone(),
            myself.clone(),
        );
        let qa = QaLaunch {
            url: self.ctx.mcp_url.get().cloned(),
            token: qa_token,
        };
        let (prompt, moved) = (card.prompt(), card.moved);
        let place = match card.project {
            None => Ok(None),
            Some(p) => self
                .projects
                .get(&p)
                .map(|project| {
                    Some(Place {
                        worktrees: self.ctx.worktrees.clone(),
                        project: project.clone(),
                        title: card.title.clone(),
                        recorded: card.worktree.clone(),
                    })
                })
                .ok_or_else(|| {
                    BoardError::not_found(
                        "its project is gone; put it in another (`bosun board card edit CARD --project NAME`)",
                    )
                }),
        };
        tokio::spawn(async move {
            let result = match place {
                Ok(place) => {
                    start_card_run(&ctx, &runs, agent, &prompt, (id, moved), place, qa).await
                }
                Err(e) => Err(e),
            };
            let _ = me.cast(BoardMsg::Started {
                card: id,
                moved,
                result,
            });
        });
    }

    async fn started(
        &mut self,
        id: CardId,
        moved: u64,
        result: Result<(RunId, Option<CardWorktree>), BoardError>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Ok(());
        };
        match result {
            Ok((run, wt)) => {
                let recorded = card.worktree.is_some();
                let new_place = wt.is_some() && wt != card.worktree;
                if let Some(wt) = wt.filter(|_| new_place) {
                    card.log(if recorded {
                        format!("worktree made again on branch {}", wt.branch)
                    } else {
                        format!("worktree made on branch {}", wt.branch)
                    });
                    card.worktree = Some(wt);
                }
                if card.runs.iter().any(|r| r.run == run) {
                    if new_place {
                        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                            .await?;
                        self.cards.insert(id, card);
                    }
                    return Ok(());
                }
                card.runs.push(CardRun {
                    run,
                    moved,
                    ended: false,
                });
                card.log(format!("run {} started", run.short()));
            }
            Err(e) => {
                warn!(card = %id, error = %e, "a card's run could not start");
                card.started_for = None;
                // No run of it is going, so no QA token of it is live.
                card.qa_tokens.clear();
                self.ctx.qa_tokens.close(id);
                let reason = format!(
                    "its agent's run could not start: {}. Put that right, then take the card off hold",
                    e
                );
                card.log(format!("put on hold: {reason}"));
                card.hold = Some(Hold::needs_decision(reason));
            }
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.cards.insert(id, card);
        Ok(())
    }
}

/// `budget` with the caps the person changed (set, or taken off), each checked: a cap of 0 is
/// refused with the reason, and nothing is changed.
pub(crate) fn edit_budget(
    mut budget: Budget,
    micro_usd: Option<CapEdit>,
    tokens: Option<CapEdit>,
    what: &str,
) -> Result<Budget, BoardError> {
    let cap = |edit: CapEdit, of: &str| match edit {
        CapEdit::Off => Ok(None),
        CapEdit::Set(0) => Err(bad(format!(
            "`0` is not a positive amount: {what} in {of} takes one, or off to take it off"
        ))),
        CapEdit::Set(n) => Ok(Some(n)),
    };
    if let Some(e) = micro_usd {
        budget.micro_usd = cap(e, "dollars")?;
    }
    if let Some(e) = tokens {
        budget.tokens = cap(e, "tokens")?;
    }
    Ok(budget)
}

/// A shared budget as the person sees it: its caps, what was allowed more, what was spent.
pub(crate) fn budget_view(caps: Budget, more: Budget, spent: Spent) -> SharedBudgetView {
    SharedBudgetView {
        caps,
        more,
        spent_micro_usd: spent.micro_usd,
        spent_tokens: spent.tokens,
    }
}

/// Why a card the lead touched after an outside tool waits.
pub fn tainted_reason(tool: &str) -> String {
    format!(
        "Waiting for your OK: the lead put this card here after using {tool}, a tool from outside bosun. Check it, then take it off hold."
    )
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

/// Where a card of a project runs: its worktree, made or found again before the run.
struct Place {
    worktrees: PathBuf,
    project: ProjectRecord,
    title: String,
    recorded: Option<CardWorktree>,
}

/// A run of the card's agent, carrying the card and its move; for a card of a project, in its
/// worktree, whatever the agent's own folder (the worktree is answered, to be recorded).
async fn start_card_run(
    ctx: &AgentsContext,
    runs: &ActorHandle<RunsMsg>,
    agent: AgentId,
    prompt: &str,
    card: (CardId, u64),
    place: Option<Place>,
    qa: QaLaunch,
) -> Result<(RunId, Option<CardWorktree>), BoardError> {
    let mut prepared = launch::prepare(ctx, &agent.to_string(), prompt).await?;
    prepared.run.card = Some(card);
    prepared.run.project = place.as_ref().map(|p| p.project.id);
    prepared.run.unattended = true;
    let rec = bosun_agents::registry::find(&ctx.store, &agent.to_string()).await?;
    if rec.role.eq_ignore_ascii_case("qa") && place.is_some() {
        give_verdict_tools(&mut prepared, rec.cli, &qa);
    }
    let mut spec = bosun_runs::RunSpec::from(prepared);
    let mut made = None;
    if let Some(p) = place {
        let (wt, head) = blocking(move || {
            worktree::ensure(
                &p.worktrees,
                &p.project,
                card.0,
                &p.title,
                p.recorded.as_ref(),
            )
        })
        .await?
        .map_err(|e| BoardError::unavailable(format!("its worktree could not be made: {e}")))?;
        spec.params.cwd = wt.path.clone();
        spec.git = Some(RunGit {
            branch: wt.branch.clone(),
            head_at_start: head,
            head_at_end: None,
        });
        made = Some(wt);
    }
    let run = bosun_runs::start(runs, spec).await.map(|v| v.id);
    bosun_kit::crash::point("board-after-run-started");
    Ok((run?, made))
}

/// What a QA run needs to give its verdict: bosun's MCP server and a token of its own (whose
/// digest the card keeps).
struct QaLaunch {
    url: Option<String>,
    token: Option<bosun_shared::RunToken>,
}

/// A QA run of a card of a project (a Claude Code agent) gets bosun's MCP server, with a token
/// of its own whose only tools are `qa_pass` and `qa_fail`; the token is one of the run's
/// secrets (written as `[redacted]` wherever the run prints it).
fn give_verdict_tools(
    prepared: &mut launch::Prepared,
    cli: bosun_shared::agents::CliKind,
    qa: &QaLaunch,
) {
    let why_not = match (&qa.url, cli) {
        (None, _) => Some("bosun's MCP server was not listening yet".to_string()),
        (Some(_), bosun_shared::agents::CliKind::Claude) => None,
        (Some(_), other) => Some(format!(
            "a {other} agent gets no bosun MCP server; make the QA agent a Claude Code agent"
        )),
    };
    let config = prepared
        .files
        .iter_mut()
        .find(|(path, _)| path.ends_with("/mcp.json"));
    let why_not = why_not.or_else(|| {
        qa.token
            .is_none()
            .then(|| "bosun gave it no token (its agent's role changed as it started)".to_string())
    });
    let (Some(url), None, Some((_, text)), Some(token)) = (&qa.url, &why_not, config, &qa.token)
    else {
        prepared.notes.push(format!(
            "This QA run cannot give its verdict through bosun's qa_pass and qa_fail tools: {}.",
            why_not.unwrap_or_else(|| "its MCP config was not found".into())
        ));
        return;
    };
    let Ok(mut json) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let secret = token.expose().to_string();
    json["mcpServers"][launch::BOSUN_SERVER] = serde_json::json!({
        "type": "http",
        "url": url,
        "headers": { "Authorization": format!("Bearer {secret}") },
    });
    *text = serde_json::to_string_pretty(&json).unwrap_or_default();
    prepared.redact.push(secret);
    prepared.notes.push(
        "bosun's MCP server is given to this QA run: it ends with qa_pass or qa_fail for its card."
            .into(),
    );
}

#[cfg(test)]
mod budget_tests {
    use super::{CapEdit, edit_budget};
    use bosun_shared::usage::Budget;

    /// A client may send a cap of 0, which the CLI's parser never makes: refused with the
    /// reason, whatever else the edit held.
    #[test]
    fn a_cap_of_zero_is_refused_and_off_takes_one_off() {
        let b = Budget {
            micro_usd: Some(5_000_000),
            tokens: Some(100),
            ..Budget::default()
        };
        let e = edit_budget(
            b,
            Some(CapEdit::Set(1)),
            Some(CapEdit::Set(0)),
            "a card's budget",
        )
        .expect_err("0 tokens");
        assert_eq!(
            e.to_string(),
            "`0` is not a positive amount: a card's budget in tokens takes one, or off to take it off"
        );
        let edited = edit_budget(b, Some(CapEdit::Off), None, "a card's budget").expect("off");
        assert_eq!(
            edited,
            Budget {
                tokens: Some(100),
                ..Budget::default()
            }
        );
    }
}
