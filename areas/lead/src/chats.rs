//! Chats with the lead: the Chats supervisor (it creates chats, and routes every request to the
//! chat's own ChatActor, restarting a failed one within the restart budget), and the ChatActor,
//! one per chat — its answers (each a Claude Code run) and its pending actions, which it alone
//! decides. Every step is committed durably before anyone is told:
//! a pending action before the lead hears that it waits, an approval before its call runs, so a
//! crash loses none and runs none twice (an approval cut off between its decision and its result
//! is recorded as failed, "may or may not have happened").

use crate::record::ChatReads;
use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::ChatsError;
use bosun_shared::protocol::lead::{ChatView, PendingView};
use bosun_shared::protocol::ui::{Event, NotificationKind, RunView};
use bosun_shared::{ActionId, AnswerId, CardId, ChatId, RunToken, Timestamp};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use serde_json::Value;
use tracing::{Instrument, error, info, warn};

use super::answers::Answers;
use super::record::{
    AnswerRecord, ChatChange, ChatRecord, MessageKind, MessageRecord, PendingRecord, PendingState,
};
use super::tools::{self, LeadTool, ToolCtx};
use bosun_agents::launch::{self, ChatLaunch};
use bosun_agents::stream::input_digest;
use bosun_board::{BoardRequest, Findings};
use bosun_kit::offload::blocking;
use bosun_kit::prefix::by_prefix;
use bosun_kit::supervision::{RestartBudget, RestartPolicy, Verdict};
use bosun_runs::events::{EventsHandle, EventsMsg};
use bosun_store::Store;
use bosun_store::writer::{Change, StoreWriter};

/// How often answers are looked at for their end.
const TICK: Duration = Duration::from_millis(300);
const MAX_MESSAGE: usize = 256 * 1024;
/// The last note, once nothing waits and the lead is not answering.
pub const NOTHING_WAITS: &str =
    "Nothing else waits for your OK. The lead's answer above is done: send a message to go on.";

#[derive(Clone)]
pub struct ChatsContext {
    pub store: Store,
    pub writer: StoreWriter,
    pub answers: Answers,
    pub tools: ToolCtx,
    /// bosun's own MCP server, once it listens.
    pub mcp_url: Arc<OnceLock<String>>,
    /// Every attached UI hears of new messages and of pending actions kept or decided.
    pub events: EventsHandle,
}

pub type ChatsHandle = bosun_kit::handle::ActorHandle<ChatsMsg>;

type Reply<T> = RpcReplyPort<Result<T, ChatsError>>;

/// What the Chats supervisor is asked: a chat or an action is named by the start of its id,
/// found here, and the request handed to that chat's actor.
pub enum ChatsMsg {
    New {
        agent: Option<String>,
        reply: Reply<ChatView>,
    },
    Send {
        chat: String,
        message: String,
        files: Vec<PathBuf>,
        reply: Reply<(ChatView, RunView)>,
    },
    Show {
        chat: String,
        reply: Reply<ChatView>,
    },
    List {
        reply: Reply<Vec<ChatView>>,
    },
    Inbox {
        chat: Option<String>,
        reply: Reply<Vec<PendingView>>,
    },
    Approve {
        action: String,
        reply: Reply<Vec<PendingView>>,
    },
    ApproveAll {
        chat: String,
        reply: Reply<Vec<PendingView>>,
    },
    Discard {
        action: String,
        reply: Reply<Vec<PendingView>>,
    },
    /// A privileged call after an outside tool: keep it for the person. The answer is the
    /// tool result the lead gets.
    Pend {
        chat: ChatId,
        answer: AnswerId,
        tool: LeadTool,
        args: Value,
        cause: String,
        reply: RpcReplyPort<String>,
    },
    /// The lead made a privileged call itself and it ran: a waiting twin goes.
    RanItself {
        chat: ChatId,
        tool: LeadTool,
        args: Value,
    },
    /// Time for a board check.
    BoardCheck,
    /// The board has findings and there is no board checks' chat yet: it is made, and the
    /// check done there.
    OpenChecks,
}

/// What one chat's actor is asked, by the Chats supervisor (which has found the chat and the
/// action) and by its own timer. `chat` is always the actor's own chat.
pub enum ChatMsg {
    Send {
        chat: ChatId,
        message: String,
        files: Vec<PathBuf>,
        reply: Reply<(ChatView, RunView)>,
    },
    /// The chat with its messages.
    Show {
        chat: ChatId,
        reply: Reply<ChatView>,
    },
    /// The chat as a list shows it, without its messages.
    View {
        chat: ChatId,
        reply: Reply<ChatView>,
    },
    Inbox {
        chat: ChatId,
        reply: Reply<Vec<PendingView>>,
    },
    Approve {
        action: ActionId,
        reply: Reply<Vec<PendingView>>,
    },
    ApproveAll {
        chat: ChatId,
        reply: Reply<Vec<PendingView>>,
    },
    Discard {
        action: ActionId,
        reply: Reply<Vec<PendingView>>,
    },
    Pend {
        chat: ChatId,
        answer: AnswerId,
        tool: LeadTool,
        args: Value,
        cause: String,
        reply: RpcReplyPort<String>,
    },
    RanItself {
        chat: ChatId,
        tool: LeadTool,
        args: Value,
    },
    /// Time to look whether an answer ended.
    Tick,
    /// A board check, in this chat (the board checks' chat).
    BoardCheck { chat: ChatId },
}

/// One chat: its answers and its pending actions.
pub struct ChatActor;

pub struct ChatsState {
    ctx: ChatsContext,
    chats: HashMap<ChatId, ChatRecord>,
    pending: HashMap<ActionId, PendingRecord>,
    /// Everything this actor logs is in its span, with the chat's id as a field.
    span: tracing::Span,
}

impl Actor for ChatActor {
    type Msg = ChatMsg;
    type State = ChatsState;
    type Arguments = (ChatsContext, ChatId);

    /// Its chat and its pending actions, from the store; an approval cut off by a crash is
    /// recorded failed, an answer still running is taken back.
    async fn pre_start(
        &self,
        _myself: ActorRef<ChatMsg>,
        (ctx, id): (ChatsContext, ChatId),
    ) -> Result<ChatsState, ActorProcessingErr> {
        let store = ctx.store.clone();
        let (chats, pending) = tokio::task::spawn_blocking(move || store.chats()).await??;
        let mut state = ChatsState {
            ctx,
            chats: chats
                .into_iter()
                .filter(|c| c.id == id)
                .map(|c| (c.id, c))
                .collect(),
            pending: pending
                .into_iter()
                .filter(|p| p.chat == id)
                .map(|p| (p.id, p))
                .collect(),
            span: tracing::info_span!("chat", chat_id = %id),
        };
        state.recover().await?;
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<ChatMsg>,
        _state: &mut ChatsState,
    ) -> Result<(), ActorProcessingErr> {
        myself.send_interval(TICK, || ChatMsg::Tick);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ChatMsg>,
        msg: ChatMsg,
        state: &mut ChatsState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        async move {
            match msg {
                ChatMsg::Send {
                    chat,
                    message,
                    files,
                    reply,
                } => {
                    let _ = reply.send(state.send(chat, message, files).await);
                }
                ChatMsg::Show { chat, reply } => {
                    let _ = reply.send(state.view(chat, true).await);
                }
                ChatMsg::View { chat, reply } => {
                    let _ = reply.send(state.view(chat, false).await);
                }
                ChatMsg::Inbox { chat, reply } => {
                    let ids = state.waiting(Some(chat));
                    let _ = reply.send(Ok(state.views(&ids).await));
                }
                ChatMsg::Approve { action, reply } => {
                    let answer = match state.approve(action).await {
                        Ok(()) => Ok(state.views(&[action]).await),
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(answer);
                }
                ChatMsg::ApproveAll { chat, reply } => {
                    let ids = state.waiting(Some(chat));
                    let answer = if ids.is_empty() {
                        Err(ChatsError::conflict(
                            "nothing in this chat waits for your OK",
                        ))
                    } else {
                        for id in &ids {
                            // Each is decided on its own; one failing does not stop the rest.
                            if let Err(e) = state.approve(*id).await {
                                warn!(action = %id, error = %e, "approve all: one was not run");
                            }
                        }
                        Ok(state.views(&ids).await)
                    };
                    let _ = reply.send(answer);
                }
                ChatMsg::Discard { action, reply } => {
                    let answer = match state.discard(action).await {
                        Ok(()) => Ok(state.views(&[action]).await),
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(answer);
                }
                ChatMsg::Pend {
                    chat,
                    answer,
                    tool,
                    args,
                    cause,
                    reply,
                } => {
                    let text = state.pend(chat, answer, tool, args, cause).await?;
                    let _ = reply.send(text);
                }
                ChatMsg::RanItself { chat, tool, args } => {
                    state.ran_itself(chat, tool, &args).await?
                }
                ChatMsg::Tick => state.tick().await?,
                ChatMsg::BoardCheck { chat } if state.ctx.mcp_url.get().is_none() => {
                    // bosun's MCP server is not listening yet: the check in a moment.
                    myself.send_after(Duration::from_secs(1), move || ChatMsg::BoardCheck { chat });
                }
                ChatMsg::BoardCheck { chat } => {
                    if let Err(e) = state.board_check(chat).await {
                        warn!(error = %e, "the board check could not start the lead");
                    }
                }
            }
            Ok(())
        }
        .instrument(span)
        .await
    }
}

/// The supervisor of the ChatActors.
pub struct Chats;

pub struct ChatsSupervisor {
    ctx: ChatsContext,
    /// The board checks' chat, once there is one.
    checks: Option<ChatId>,
    actors: HashMap<ChatId, ActorRef<ChatMsg>>,
    by_actor: HashMap<ActorId, ChatId>,
    budgets: HashMap<ChatId, RestartBudget>,
}

impl Actor for Chats {
    type Msg = ChatsMsg;
    type State = ChatsSupervisor;
    type Arguments = ChatsContext;

    async fn pre_start(
        &self,
        myself: ActorRef<ChatsMsg>,
        ctx: ChatsContext,
    ) -> Result<ChatsSupervisor, ActorProcessingErr> {
        let store = ctx.store.clone();
        let (chats, _) = tokio::task::spawn_blocking(move || store.chats()).await??;
        let mut state = ChatsSupervisor {
            ctx,
            checks: chats.iter().find(|c| c.board_checks).map(|c| c.id),
            actors: HashMap::new(),
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
        };
        for c in chats {
            state.open(&myself, c.id).await?;
        }
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<ChatsMsg>,
        _state: &mut ChatsSupervisor,
    ) -> Result<(), ActorProcessingErr> {
        // A board check soon after startup (what waited across a restart is offered again), then
        // every so often.
        myself.send_after(Duration::from_secs(1), || ChatsMsg::BoardCheck);
        myself.send_interval(board_check_interval(), || ChatsMsg::BoardCheck);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ChatsMsg>,
        msg: ChatsMsg,
        state: &mut ChatsSupervisor,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(tracing::info_span!("chats"), async move {
            match msg {
                ChatsMsg::New { agent, reply } => {
                    let answer = state.new_chat(&myself, agent).await;
                    let _ = reply.send(answer);
                }
                ChatsMsg::Send {
                    chat,
                    message,
                    files,
                    reply,
                } => state.to_chat(&chat, reply, |chat, reply| ChatMsg::Send {
                    chat,
                    message,
                    files,
                    reply,
                }),
                ChatsMsg::Show { chat, reply } => {
                    state.to_chat(&chat, reply, |chat, reply| ChatMsg::Show { chat, reply })
                }
                ChatsMsg::ApproveAll { chat, reply } => {
                    state.to_chat(&chat, reply, |chat, reply| ChatMsg::ApproveAll {
                        chat,
                        reply,
                    })
                }
                ChatsMsg::Inbox {
                    chat: Some(chat),
                    reply,
                } => state.to_chat(&chat, reply, |chat, reply| ChatMsg::Inbox { chat, reply }),
                ChatsMsg::Inbox { chat: None, reply } => state.every_inbox(reply).await,
                ChatsMsg::List { reply } => state.every_view(reply).await,
                ChatsMsg::Approve { action, reply } => {
                    state
                        .to_action_chat(&action, reply, |action, reply| ChatMsg::Approve {
                            action,
                            reply,
                        })
                        .await
                }
                ChatsMsg::Discard { action, reply } => {
                    state
                        .to_action_chat(&action, reply, |action, reply| ChatMsg::Discard {
                            action,
                            reply,
                        })
                        .await
                }
                ChatsMsg::Pend {
                    chat,
                    answer,
                    tool,
                    args,
                    cause,
                    reply,
                } => {
                    if let Some(a) = state.actors.get(&chat) {
                        forward(
                            a,
                            ChatMsg::Pend {
                                chat,
                                answer,
                                tool,
                                args,
                                cause,
                                reply,
                            },
                        );
                    }
                }
                ChatsMsg::RanItself { chat, tool, args } => {
                    if let Some(a) = state.actors.get(&chat) {
                        forward(a, ChatMsg::RanItself { chat, tool, args });
                    }
                }
                ChatsMsg::BoardCheck => state.board_check(&myself),
                ChatsMsg::OpenChecks => state.open_checks(&myself).await?,
            }
            Ok(())
        })
        .await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<ChatsMsg>,
        event: SupervisionEvent,
        state: &mut ChatsSupervisor,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                if let Some(chat) = state.by_actor.remove(&cell.get_id()) {
                    state.actors.remove(&chat);
                }
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some(chat) = state.by_actor.remove(&cell.get_id()) else {
                    return Ok(());
                };
                state.actors.remove(&chat);
                let budget = state
                    .budgets
                    .entry(chat)
                    .or_insert_with(|| RestartBudget::new(RestartPolicy::DEFAULT));
                match budget.on_failure(Instant::now()) {
                    Verdict::Restart { n } => {
                        warn!(chat_id = %chat, restart = n, error = %err, "restarting a chat");
                        state.open(&myself, chat).await?;
                    }
                    Verdict::GiveUp => {
                        error!(chat_id = %chat, reason = %budget.give_up_reason(&err.to_string()), "gave up on a chat");
                    }
                }
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

fn no_chat(key: &str) -> String {
    format!("there is no chat `{key}`; `bosun chat list` shows them")
}

fn no_action(key: &str) -> String {
    format!("there is no pending action `{key}`; `bosun inbox` shows what waits")
}

/// Hands a request to a chat's actor (its reply port goes with it).
fn forward(actor: &ActorRef<ChatMsg>, msg: ChatMsg) {
    if let Err(e) = actor.send_message(msg) {
        warn!(error = %e, "a chat's actor is gone; its request went unanswered");
    }
}

impl ChatsSupervisor {
    /// A state of no chat, to make a new chat's record with before its actor runs.
    fn scratch(&self) -> ChatsState {
        ChatsState {
            ctx: self.ctx.clone(),
            chats: HashMap::new(),
            pending: HashMap::new(),
            span: tracing::info_span!("chats"),
        }
    }

    /// Makes a new chat and opens its actor.
    async fn new_chat(
        &mut self,
        myself: &ActorRef<ChatsMsg>,
        agent: Option<String>,
    ) -> Result<ChatView, ChatsError> {
        let mut scratch = self.scratch();
        match scratch.new_chat(agent, false).await {
            Ok(view) => match self.open(myself, view.id).await {
                Ok(()) => Ok(view),
                Err(e) => Err(ChatsError::internal(format!(
                    "the chat could not open: {e}"
                ))),
            },
            Err(e) => Err(e),
        }
    }

    /// Hands a request to the actor of the chat named by the start of its id, or answers why
    /// there is no such chat.
    fn to_chat<T>(
        &self,
        key: &str,
        reply: Reply<T>,
        msg: impl FnOnce(ChatId, Reply<T>) -> ChatMsg,
    ) {
        match self.actor_of(key) {
            Ok((chat, a)) => forward(&a, msg(chat, reply)),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Hands a decision to the actor of the chat of the action named by the start of its id,
    /// or answers why there is no such action.
    async fn to_action_chat(
        &self,
        key: &str,
        reply: Reply<Vec<PendingView>>,
        msg: impl FnOnce(ActionId, Reply<Vec<PendingView>>) -> ChatMsg,
    ) {
        match self.chat_of_action(key).await {
            Ok((action, a)) => forward(&a, msg(action, reply)),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Answers with what waits in every chat, oldest chat first.
    async fn every_inbox(&self, reply: Reply<Vec<PendingView>>) {
        let actors = self.in_order().await;
        // Asked of every chat away from here, so no chat waits on another.
        tokio::spawn(async move {
            let mut all = Vec::new();
            for (chat, a) in actors {
                if let Ok(Ok(mut some)) = ractor::call!(a, |reply| ChatMsg::Inbox { chat, reply }) {
                    all.append(&mut some);
                }
            }
            let _ = reply.send(Ok(all));
        });
    }

    /// Answers with every chat as a list shows it, oldest first.
    async fn every_view(&self, reply: Reply<Vec<ChatView>>) {
        let actors = self.in_order().await;
        tokio::spawn(async move {
            let mut all = Vec::new();
            for (chat, a) in actors {
                match ractor::call!(a, |reply| ChatMsg::View { chat, reply }) {
                    Ok(Ok(view)) => all.push(view),
                    Ok(Err(e)) => {
                        let _ = reply.send(Err(e));
                        return;
                    }
                    Err(_) => {}
                }
            }
            let _ = reply.send(Ok(all));
        });
    }

    /// Starts a board check in the board checks' chat, or, while there is none, looks whether
    /// there is anything to check.
    fn board_check(&self, myself: &ActorRef<ChatsMsg>) {
        match self
            .checks
            .and_then(|c| self.actors.get(&c).map(|a| (c, a.clone())))
        {
            Some((chat, a)) => forward(&a, ChatMsg::BoardCheck { chat }),
            None if self.checks.is_none() => {
                // Whether there is anything to check, asked away from here (the board
                // may be busy with GitHub): the chat is made only then.
                let (board, me) = (self.ctx.tools.board.clone(), myself.clone());
                tokio::spawn(async move {
                    let peek = |reply| BoardRequest::MergeFindings { mark: false, reply };
                    if let Ok(Findings { findings, closed }) = bosun_board::ask(&board, peek).await
                        && !(findings.is_empty() && closed.is_empty())
                    {
                        let _ = me.cast(ChatsMsg::OpenChecks);
                    }
                });
            }
            None => warn!("the board checks' chat is restarting; the check waits for the next"),
        }
    }

    /// Makes the board checks' chat if there is none yet, and starts the check there.
    async fn open_checks(&mut self, myself: &ActorRef<ChatsMsg>) -> Result<(), ActorProcessingErr> {
        if self.checks.is_none() {
            let mut scratch = self.scratch();
            match scratch.new_chat(None, true).await {
                Ok(view) => {
                    self.open(myself, view.id).await?;
                    self.checks = Some(view.id);
                }
                Err(e) => {
                    warn!(error = %e, "the board checks' chat could not be made; the lead is not started for the board's findings");
                }
            }
        }
        if let Some((chat, a)) = self
            .checks
            .and_then(|c| self.actors.get(&c).map(|a| (c, a.clone())))
        {
            forward(&a, ChatMsg::BoardCheck { chat });
        }
        Ok(())
    }

    async fn open(
        &mut self,
        myself: &ActorRef<ChatsMsg>,
        chat: ChatId,
    ) -> Result<(), ActorProcessingErr> {
        let (actor, _) =
            Actor::spawn_linked(None, ChatActor, (self.ctx.clone(), chat), myself.get_cell())
                .await?;
        self.by_actor.insert(actor.get_id(), chat);
        self.actors.insert(chat, actor);
        Ok(())
    }

    /// The chat named by the start of its id, and its actor.
    fn actor_of(&self, key: &str) -> Result<(ChatId, ActorRef<ChatMsg>), ChatsError> {
        let id = by_prefix(self.actors.keys().copied(), key, "chats'", no_chat)?;
        self.actors
            .get(&id)
            .map(|a| (id, a.clone()))
            .ok_or_else(|| ChatsError::internal("the chat went away"))
    }

    /// The action named by the start of its id, and the actor of the chat it belongs to (found
    /// in the store, where every action is committed).
    async fn chat_of_action(&self, key: &str) -> Result<(ActionId, ActorRef<ChatMsg>), ChatsError> {
        let store = self.ctx.store.clone();
        let (_, pending) = blocking(move || store.chats()).await??;
        let id = by_prefix(pending.iter().map(|p| p.id), key, "actions'", no_action)?;
        let chat = pending
            .iter()
            .find(|p| p.id == id)
            .map(|p| p.chat)
            .ok_or_else(|| ChatsError::internal("the action went away"))?;
        self.actors
            .get(&chat)
            .map(|a| (id, a.clone()))
            .ok_or_else(|| ChatsError::unavailable("that action's chat is restarting; try again"))
    }

    /// The chats and their actors, oldest chat first.
    async fn in_order(&self) -> Vec<(ChatId, ActorRef<ChatMsg>)> {
        let store = self.ctx.store.clone();
        let mut chats = blocking(move || store.chats())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|(c, _)| c)
            .unwrap_or_default();
        chats.sort_by_key(|c| c.created_at);
        chats
            .iter()
            .filter_map(|c| self.actors.get(&c.id).map(|a| (c.id, a.clone())))
            .collect()
    }
}

fn same_call(p: &PendingRecord, tool: LeadTool, args: &Value) -> bool {
    p.tool == tool.name() && input_digest(&p.args) == input_digest(args)
}

/// A kept call in one plain line. Its tool was parsed before it was kept; a name bosun has no
/// tool of (from a store written by another version) is shown as it is.
fn line_of(p: &PendingRecord) -> String {
    match LeadTool::parse(&p.tool) {
        Ok(tool) => tools::describe(tool, &p.args),
        Err(_) => format!("Call {}", p.tool),
    }
}

/// How often the board is checked for cards the lead may merge, unless
/// `BOSUN_BOARD_CHECK_SECS` says.
const BOARD_CHECK: Duration = Duration::from_secs(600);

pub fn board_check_interval() -> Duration {
    std::env::var("BOSUN_BOARD_CHECK_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(BOARD_CHECK, Duration::from_secs)
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What the lead's tool result says of a call kept for the person.
pub fn kept_words(tool: LeadTool, cause: &str) -> String {
    format!(
        "{tool} wasn't run: this answer used {cause}, a tool from outside bosun. bosun keeps the call for the person to approve with one click. Tell them in a sentence what it does."
    )
}

impl ChatsState {
    /// Commits the changes together, then tells every attached UI of the messages and the
    /// pending actions among them.
    async fn save(&self, changes: Vec<ChatChange>) -> Result<(), ChatsError> {
        let mut told = Vec::new();
        let mut actions = Vec::new();
        for c in &changes {
            match c {
                ChatChange::Message(m) => told.push(Event::ChatMessage {
                    chat: m.chat,
                    message: m.view(),
                }),
                ChatChange::Pending(p) => actions.push(p.as_ref().clone()),
                ChatChange::Chat(_) => {}
            }
        }
        self.ctx
            .writer
            .commit(changes.iter().map(Change::from).collect())
            .await?;
        for p in actions {
            for view in self.views_of(&[p]).await {
                self.ctx
                    .events
                    .cast(EventsMsg::Publish(Box::new(Event::PendingChanged {
                        action: Box::new(view),
                    })));
            }
        }
        for e in told {
            self.ctx.events.cast(EventsMsg::Publish(Box::new(e)));
        }
        Ok(())
    }

    /// The waiting actions (of one chat, or all), in the order tried.
    fn waiting(&self, chat: Option<ChatId>) -> Vec<ActionId> {
        let mut w: Vec<&PendingRecord> = self
            .pending
            .values()
            .filter(|p| p.state == PendingState::Waiting && chat.is_none_or(|c| p.chat == c))
            .collect();
        w.sort_by_key(|p| (p.chat, p.order));
        w.into_iter().map(|p| p.id).collect()
    }

    async fn views(&self, ids: &[ActionId]) -> Vec<PendingView> {
        let records: Vec<PendingRecord> = ids
            .iter()
            .filter_map(|id| self.pending.get(id).cloned())
            .collect();
        self.views_of(&records).await
    }

    async fn views_of(&self, records: &[PendingRecord]) -> Vec<PendingView> {
        let mut out = Vec::new();
        for p in records {
            let (preview, would_fail) = match LeadTool::parse(&p.tool) {
                Ok(tool) if p.state == PendingState::Waiting => {
                    tools::preview(&self.ctx.tools, tool, &p.args, Some(p.chat)).await
                }
                Ok(_) => (String::new(), None),
                Err(why) => (String::new(), Some(why.to_string())),
            };
            let result = match &p.state {
                PendingState::Approved { result, .. } => Some(result.clone()),
                PendingState::Failed { why, .. } => Some(why.clone()),
                PendingState::Gone { why } => Some(why.clone()),
                PendingState::Replaced { by } => Some(format!("replaced by {}", by.short())),
                PendingState::Waiting
                | PendingState::Approving { .. }
                | PendingState::Discarded { .. } => None,
            };
            out.push(PendingView {
                id: p.id,
                short_id: p.id.short(),
                chat: p.chat,
                answer: p.answer,
                tool: p.tool.clone(),
                args: p.args.clone(),
                cause: p.cause.clone(),
                at: p.at,
                state: p.state.word().to_string(),
                line: line_of(p),
                preview,
                would_fail,
                result,
            });
        }
        out
    }

    async fn view(&self, id: ChatId, with_messages: bool) -> Result<ChatView, ChatsError> {
        let c = self
            .chats
            .get(&id)
            .ok_or_else(|| ChatsError::internal("the chat went away"))?;
        let store = self.ctx.store.clone();
        let agent = match blocking(move || store.agents())
            .await?
            .map_err(ChatsError::from)
        {
            Ok(list) => list
                .into_iter()
                .find(|a| a.id == c.agent)
                .map_or_else(|| format!("{} (removed)", c.agent.short()), |a| a.name),
            Err(e) => return Err(e),
        };
        let messages = if with_messages {
            let store = self.ctx.store.clone();
            blocking(move || store.messages(id))
                .await??
                .iter()
                .map(MessageRecord::view)
                .collect()
        } else {
            Vec::new()
        };
        Ok(ChatView {
            id,
            short_id: id.short(),
            agent,
            created_at: c.created_at,
            answering: c.answering.as_ref().and_then(|a| a.run),
            waiting: self.waiting(Some(id)).len() as u32,
            messages,
            board_checks: c.board_checks,
        })
    }

    fn message(
        chat: &mut ChatRecord,
        kind: MessageKind,
        text: String,
        failed: bool,
    ) -> MessageRecord {
        let m = MessageRecord {
            chat: chat.id,
            n: chat.messages + 1,
            at: Timestamp::now(),
            kind,
            text,
            failed,
        };
        chat.messages += 1;
        m
    }

    /// A new chat with the lead (`board_checks`: the board checks' chat).
    async fn new_chat(
        &mut self,
        agent: Option<String>,
        board_checks: bool,
    ) -> Result<ChatView, ChatsError> {
        let store = self.ctx.store.clone();
        let agents = blocking(move || store.agents()).await??;
        let lead = match agent {
            Some(name) => bosun_agents::registry::find(&self.ctx.store, &name).await?,
            None => {
                let leads: Vec<_> = agents.into_iter().filter(|a| a.role == "lead").collect();
                match leads.as_slice() {
                    [one] => one.clone(),
                    [] => {
                        return Err(ChatsError::invalid(
                            "there is no lead to chat with: add one with `bosun agent add lead --cli claude --role lead --secret-env ANTHROPIC_API_KEY …`, or name an agent with --agent",
                        ));
                    }
                    [_, _, ..] => {
                        return Err(ChatsError::invalid(format!(
                            "several agents have the role lead ({}); say which with --agent",
                            leads
                                .iter()
                                .map(|a| a.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
            }
        };
        if lead.cli != bosun_shared::agents::CliKind::Claude {
            return Err(ChatsError::invalid(format!(
                "the lead answers through Claude Code, and `{}` is a {} agent",
                lead.name, lead.cli
            )));
        }
        let chat = ChatRecord {
            id: ChatId::new(),
            agent: lead.id,
            created_at: Timestamp::now(),
            session: None,
            messages: 0,
            answering: None,
            untold: Vec::new(),
            files: Vec::new(),
            next_action: 1,
            board_checks,
        };
        self.save(vec![ChatChange::Chat(Box::new(chat.clone()))])
            .await?;
        let id = chat.id;
        self.chats.insert(id, chat);
        info!(chat_id = %id, lead = %lead.name, "chat started");
        self.view(id, false).await
    }

    async fn send(
        &mut self,
        id: ChatId,
        message: String,
        files: Vec<PathBuf>,
    ) -> Result<(ChatView, RunView), ChatsError> {
        let Some(mut chat) = self.chats.get(&id).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        if chat.answering.is_some() {
            return Err(ChatsError::conflict(format!(
                "the lead is still answering in this chat; wait for it (`bosun chat show {} -f`) and send then",
                id.short()
            )));
        }
        if message.trim().is_empty() || message.len() > MAX_MESSAGE || message.contains('\0') {
            return Err(ChatsError::invalid(
                "a message is 1 byte to 256 KiB of text with no NUL byte",
            ));
        }
        for f in &files {
            if !f.is_absolute() || !f.is_file() {
                return Err(ChatsError::invalid(format!(
                    "{} is not a file (give an absolute path to an existing file)",
                    f.display()
                )));
            }
        }
        chat.files
            .extend(files.iter().map(|f| f.display().to_string()));
        let person = Self::message(&mut chat, MessageKind::Person, message.clone(), false);
        self.answer(chat, person, &message, Vec::new()).await
    }

    /// Starts the lead's answer to `said` (the person's message, or a board check's note) with
    /// `message` as its prompt; `offered`: the cards a board check offers it.
    async fn answer(
        &mut self,
        mut chat: ChatRecord,
        said: MessageRecord,
        message: &str,
        offered: Vec<CardId>,
    ) -> Result<(ChatView, RunView), ChatsError> {
        let id = chat.id;
        let url =
            self.ctx.mcp_url.get().cloned().ok_or_else(|| {
                ChatsError::unavailable("bosun's MCP server is starting; try again")
            })?;
        // What the person decided since the last answer comes first.
        let prompt = if chat.untold.is_empty() {
            message.to_string()
        } else {
            format!("[{}]\n\n{message}", chat.untold.join(" "))
        };
        let token = RunToken::generate();
        let token_text = token.expose().to_string();
        let answer = AnswerRecord {
            id: AnswerId::new(),
            run: None,
            token_digest: token.digest(),
            started_at: Timestamp::now(),
            offered,
        };
        chat.untold.clear();
        chat.answering = Some(answer.clone());
        self.save(vec![
            ChatChange::Message(Box::new(said)),
            ChatChange::Chat(Box::new(chat.clone())),
        ])
        .await?;
        self.chats.insert(id, chat.clone());
        self.ctx
            .answers
            .open(answer.token_digest.clone(), id, answer.id, None);
        let launch = ChatLaunch {
            url,
            token: token_text,
            answer: (id, answer.id),
            // A board check uses no tool from outside bosun.
            only_bosun: chat.board_checks,
        };
        let started = self.start_answer(&chat, &prompt, launch).await;
        match started {
            Ok(run) => {
                chat.answering = Some(AnswerRecord {
                    run: Some(run.id),
                    ..answer.clone()
                });
                self.save(vec![ChatChange::Chat(Box::new(chat.clone()))])
                    .await?;
                self.chats.insert(id, chat);
                self.ctx.answers.set_run(answer.id, run.id);
                Ok((self.view(id, false).await?, run))
            }
            Err(e) => {
                self.ctx.answers.close(answer.id);
                chat.answering = None;
                let note = Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("The lead's answer could not start: {e}"),
                    true,
                );
                self.save(vec![
                    ChatChange::Message(Box::new(note)),
                    ChatChange::Chat(Box::new(chat.clone())),
                ])
                .await?;
                self.chats.insert(id, chat);
                Err(e)
            }
        }
    }

    async fn start_answer(
        &self,
        chat: &ChatRecord,
        prompt: &str,
        launch: ChatLaunch,
    ) -> Result<RunView, ChatsError> {
        let spec = launch::prepare_with(
            &self.ctx.tools.agents_ctx,
            &chat.agent.to_string(),
            prompt,
            Some(launch),
            chat.session.clone(),
        )
        .await?;
        Ok(bosun_runs::start(&self.ctx.tools.runs, spec).await?)
    }

    /// Looks for answers that ended.
    async fn tick(&mut self) -> Result<(), ActorProcessingErr> {
        let live: Vec<(ChatId, AnswerRecord)> = self
            .chats
            .values()
            .filter_map(|c| c.answering.clone().map(|a| (c.id, a)))
            .collect();
        for (chat, answer) in live {
            let Some(run) = answer.run else { continue };
            let store = self.ctx.store.clone();
            let Ok(Ok(Some(rec))) = blocking(move || store.run(run)).await else {
                continue;
            };
            if !rec.state.is_final() {
                continue;
            }
            let Some(mut c) = self.chats.get(&chat).cloned() else {
                continue;
            };
            let agent = rec.agent.clone().unwrap_or_default();
            if agent.session.is_some() {
                c.session = agent.session.clone();
            }
            let result = agent.result.clone();
            let msg = match result {
                Some(r) if !r.is_error => {
                    Self::message(&mut c, MessageKind::Lead, r.text.unwrap_or_default(), false)
                }
                Some(r) => Self::message(
                    &mut c,
                    MessageKind::Note,
                    format!(
                        "The lead's answer failed: {}",
                        r.text
                            .or(r.reason)
                            .unwrap_or_else(|| "no reason given".into())
                    ),
                    true,
                ),
                None => Self::message(
                    &mut c,
                    MessageKind::Note,
                    format!(
                        "The lead's answer ended without a result ({})",
                        rec.exit
                            .map(|e| e.reason)
                            .unwrap_or_else(|| rec.state.to_string())
                    ),
                    true,
                ),
            };
            let mut changes = vec![ChatChange::Message(Box::new(msg))];
            // A board check's answer: the merges refused for the person are told here.
            let mut told = Vec::new();
            for (card, text) in self.needs_person(&answer.offered).await {
                let note = Self::message(&mut c, MessageKind::Note, text.clone(), false);
                changes.push(ChatChange::Message(Box::new(note)));
                told.push((card, text));
            }
            c.answering = None;
            changes.push(ChatChange::Chat(Box::new(c.clone())));
            self.save(changes).await?;
            self.chats.insert(chat, c);
            self.ctx.answers.close(answer.id);
            for (card, text) in told {
                self.ctx
                    .events
                    .cast(EventsMsg::Publish(Box::new(Event::Notification {
                        kind: NotificationKind::NeedsYou,
                        text,
                        card: Some(card),
                        chat: Some(chat),
                        at: Timestamp::now(),
                    })));
            }
        }
        Ok(())
    }

    /// Of the cards a board check offered, those whose merge was refused for the person (failed
    /// checks, conflicts, a blocked merge): each with what to tell the person.
    async fn needs_person(&self, offered: &[CardId]) -> Vec<(CardId, String)> {
        if offered.is_empty() {
            return Vec::new();
        }
        let ask = |reply| BoardRequest::MergeOffers {
            cards: offered.to_vec(),
            reply,
        };
        let offers = match bosun_board::ask(&self.ctx.tools.board, ask).await {
            Ok(offers) => offers,
            Err(e) => {
                warn!(error = %e, "how the board check's merges went could not be read");
                return Vec::new();
            }
        };
        offers
            .into_iter()
            .filter(|o| !o.merged)
            .filter_map(|o| {
                o.refused.map(|why| {
                    (
                        o.card,
                        format!(
                            "Card {} ({}) needs you: the lead cannot merge it. {}",
                            o.short_id,
                            o.title,
                            why.strip_prefix("merge_pull_request refused: ")
                                .map_or(why.clone(), upper_first)
                        ),
                    )
                })
            })
            .collect()
    }

    /// A board check in this chat: the board's findings (cards in Review that QA passed, in a
    /// project that lets the lead merge) are marked offered, and the lead is started for them;
    /// the cards whose window after QA closed without a merge are told to the person here.
    /// Skipped while the lead is still answering here (the next check offers them).
    async fn board_check(&mut self, id: ChatId) -> Result<(), ChatsError> {
        let Some(chat) = self.chats.get(&id).cloned() else {
            return Ok(());
        };
        if chat.answering.is_some() {
            return Ok(());
        }
        let ask = |reply| BoardRequest::MergeFindings { mark: true, reply };
        let Findings { findings, closed } = bosun_board::ask(&self.ctx.tools.board, ask)
            .await
            .map_err(|e| ChatsError::unavailable(format!("the board did not answer: {e}")))?;
        let chat = if closed.is_empty() {
            chat
        } else {
            self.tell_closed(chat, closed).await?
        };
        if findings.is_empty() {
            info!(chat_id = %id, "a board check found nothing to offer the lead");
            return Ok(());
        }
        let lines: Vec<String> = findings
            .iter()
            .map(|f| {
                format!(
                    "- card {} \"{}\" (project {}){}",
                    f.short_id,
                    f.title,
                    f.project,
                    f.again
                        .map(|why| format!(", offered again: {}", why.words()))
                        .unwrap_or_default()
                )
            })
            .collect();
        let prompt = format!(
            "Board check (from bosun, not from the person). These cards are in Review, QA passed their pull request's head commit, and their project lets you merge:\n{}\n\nFor each card, call merge_pull_request with its id. Merge what the tool allows, and never work around a refusal: do not push, re-run checks, move or edit the card to get past a rule. End with a short summary for the person: what you merged, what has to wait, and what needs them.",
            lines.join("\n")
        );
        let mut chat = chat;
        let note = Self::message(
            &mut chat,
            MessageKind::Note,
            format!(
                "Board check: offered to the lead for merging:\n{}",
                lines.join("\n")
            ),
            false,
        );
        let offered = findings.iter().map(|f| f.card).collect();
        let (_, run) = self.answer(chat, note, &prompt, offered).await?;
        info!(chat_id = %id, run = %run.id, cards = findings.len(), "a board check started the lead");
        Ok(())
    }

    /// Tells the person, in the board checks' chat and by a notification, of each card whose
    /// window after QA closed without a merge (the board has recorded it as told, and said so
    /// in the card's activity). The chat as it is now.
    async fn tell_closed(
        &mut self,
        mut chat: ChatRecord,
        closed: Vec<bosun_board::Closed>,
    ) -> Result<ChatRecord, ChatsError> {
        let mut changes = Vec::new();
        for c in &closed {
            let note = Self::message(&mut chat, MessageKind::Note, c.said.clone(), false);
            changes.push(ChatChange::Message(Box::new(note)));
        }
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        self.save(changes).await?;
        self.chats.insert(chat.id, chat.clone());
        for c in closed {
            self.ctx
                .events
                .cast(EventsMsg::Publish(Box::new(Event::Notification {
                    kind: NotificationKind::NeedsYou,
                    text: c.said,
                    card: Some(c.card),
                    chat: Some(chat.id),
                    at: Timestamp::now(),
                })));
        }
        Ok(chat)
    }

    /// After a restart: approvals cut off are failed, answers go on or are over.
    async fn recover(&mut self) -> Result<(), ActorProcessingErr> {
        let cut: Vec<ActionId> = self
            .pending
            .values()
            .filter(|p| matches!(p.state, PendingState::Approving { .. }))
            .map(|p| p.id)
            .collect();
        for id in cut {
            let Some(mut p) = self.pending.get(&id).cloned() else {
                continue;
            };
            let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
                continue;
            };
            let line = line_of(&p);
            let why =
                "bosund stopped while it was being carried out: it may or may not have happened"
                    .to_string();
            p.state = PendingState::Failed {
                at: Timestamp::now(),
                why: why.clone(),
            };
            let note = Self::message(
                &mut chat,
                MessageKind::Note,
                format!("It failed: {line}: {why}."),
                true,
            );
            chat.untold.push(format!(
                "Approved, but cut off by a restart (may or may not have happened): {line}."
            ));
            self.save(vec![
                ChatChange::Pending(Box::new(p.clone())),
                ChatChange::Message(Box::new(note)),
                ChatChange::Chat(Box::new(chat.clone())),
            ])
            .await?;
            warn!(action = %id, "an approval was cut off by a restart; recorded as failed");
            self.pending.insert(id, p);
            self.chats.insert(chat.id, chat);
        }
        let answering: Vec<(ChatId, AnswerRecord)> = self
            .chats
            .values()
            .filter_map(|c| c.answering.clone().map(|a| (c.id, a)))
            .collect();
        for (chat, answer) in answering {
            match answer.run {
                Some(run) => {
                    self.ctx
                        .answers
                        .open(answer.token_digest.clone(), chat, answer.id, Some(run))
                }
                None => {
                    // Cut off before its run was made: it never began.
                    let Some(mut c) = self.chats.get(&chat).cloned() else {
                        continue;
                    };
                    c.answering = None;
                    let note = Self::message(
                        &mut c,
                        MessageKind::Note,
                        "The lead's answer was cut off by a restart before it began; send the message again.".into(),
                        true,
                    );
                    self.save(vec![
                        ChatChange::Message(Box::new(note)),
                        ChatChange::Chat(Box::new(c.clone())),
                    ])
                    .await?;
                    self.chats.insert(chat, c);
                }
            }
        }
        Ok(())
    }

    async fn pend(
        &mut self,
        chat_id: ChatId,
        answer: AnswerId,
        tool: LeadTool,
        args: Value,
        cause: String,
    ) -> Result<String, ActorProcessingErr> {
        let words = kept_words(tool, &cause);
        let Some(mut chat) = self.chats.get(&chat_id).cloned() else {
            return Ok(format!("{tool} wasn't run: its chat is gone."));
        };
        // The same call made twice is kept once.
        if self.pending.values().any(|p| {
            p.chat == chat_id && p.state == PendingState::Waiting && same_call(p, tool, &args)
        }) {
            return Ok(words);
        }
        let id = ActionId::new();
        let mut changes = Vec::new();
        // A newer write or append of the same note takes the older one's place.
        if matches!(tool, LeadTool::MemoryWrite | LeadTool::MemoryAppend) {
            let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
            let older: Vec<ActionId> = self
                .pending
                .values()
                .filter(|p| {
                    p.chat == chat_id
                        && p.state == PendingState::Waiting
                        && matches!(
                            LeadTool::parse(&p.tool),
                            Ok(LeadTool::MemoryWrite | LeadTool::MemoryAppend)
                        )
                        && p.args.get("path").and_then(Value::as_str) == Some(path)
                })
                .map(|p| p.id)
                .collect();
            for o in older {
                if let Some(mut p) = self.pending.get(&o).cloned() {
                    p.state = PendingState::Replaced { by: id };
                    changes.push(ChatChange::Pending(Box::new(p)));
                }
            }
        }
        let rec = PendingRecord {
            id,
            chat: chat_id,
            answer,
            tool: tool.name().to_string(),
            args,
            cause,
            at: Timestamp::now(),
            order: chat.next_action,
            state: PendingState::Waiting,
        };
        chat.next_action += 1;
        changes.push(ChatChange::Pending(Box::new(rec.clone())));
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        bosun_kit::crash::point("pending-before-commit");
        // Memory takes the changes only once they are saved, replaced ones included.
        let replaced: Vec<PendingRecord> = changes
            .iter()
            .filter_map(|c| match c {
                ChatChange::Pending(p) if p.id != id => Some(p.as_ref().clone()),
                ChatChange::Pending(_) | ChatChange::Message(_) | ChatChange::Chat(_) => None,
            })
            .collect();
        self.save(changes).await?;
        bosun_kit::crash::point("pending-after-commit");
        info!(chat_id = %chat_id, action = %id, tool = %rec.tool, "a call waits for the person's OK");
        for p in replaced {
            self.pending.insert(p.id, p);
        }
        self.pending.insert(id, rec);
        self.chats.insert(chat_id, chat);
        Ok(words)
    }

    async fn ran_itself(
        &mut self,
        chat_id: ChatId,
        tool: LeadTool,
        args: &Value,
    ) -> Result<(), ActorProcessingErr> {
        let twins: Vec<ActionId> = self
            .pending
            .values()
            .filter(|p| {
                p.chat == chat_id && p.state == PendingState::Waiting && same_call(p, tool, args)
            })
            .map(|p| p.id)
            .collect();
        for id in twins {
            let (Some(mut p), Some(mut chat)) = (
                self.pending.get(&id).cloned(),
                self.chats.get(&chat_id).cloned(),
            ) else {
                continue;
            };
            let line = line_of(&p);
            p.state = PendingState::Gone {
                why: "the lead made the same call itself, and it ran".into(),
            };
            let note = Self::message(
                &mut chat,
                MessageKind::Note,
                format!(
                    "The lead made this call itself, so the one waiting for your OK is gone: {line}."
                ),
                false,
            );
            self.save(vec![
                ChatChange::Pending(Box::new(p.clone())),
                ChatChange::Message(Box::new(note)),
                ChatChange::Chat(Box::new(chat.clone())),
            ])
            .await
            .map_err(|e| ActorProcessingErr::from(e.to_string()))?;
            self.pending.insert(id, p);
            self.chats.insert(chat_id, chat);
        }
        Ok(())
    }

    fn decidable(&self, id: ActionId) -> Result<PendingRecord, ChatsError> {
        let p = self
            .pending
            .get(&id)
            .cloned()
            .ok_or_else(|| ChatsError::internal("the action went away"))?;
        if p.state != PendingState::Waiting {
            return Err(ChatsError::conflict(format!(
                "action {} was {} already; each runs once at most",
                id.short(),
                p.state.word()
            )));
        }
        Ok(p)
    }

    async fn approve(&mut self, id: ActionId) -> Result<(), ChatsError> {
        let mut p = self.decidable(id)?;
        let line = line_of(&p);
        // The decision, durably, before the call runs.
        p.state = PendingState::Approving {
            at: Timestamp::now(),
        };
        self.save(vec![ChatChange::Pending(Box::new(p.clone()))])
            .await?;
        self.pending.insert(id, p.clone());
        bosun_kit::crash::point("approve-after-decision");
        let result = match LeadTool::parse(&p.tool) {
            Ok(tool) => tools::execute(&self.ctx.tools, tool, &p.args, None, Some(p.chat)).await,
            Err(why) => Err(why.into()),
        };
        bosun_kit::crash::point("approve-after-execution");
        let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        let note = match &result {
            Ok(text) => {
                p.state = PendingState::Approved {
                    at: Timestamp::now(),
                    result: text.clone(),
                };
                chat.untold.push(format!("Approved: {line}."));
                let first = text.lines().next().unwrap_or_default();
                Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("Approved: {line}. {first}"),
                    false,
                )
            }
            Err(why) => {
                p.state = PendingState::Failed {
                    at: Timestamp::now(),
                    why: why.to_string(),
                };
                chat.untold
                    .push(format!("Approved, but it failed: {line}: {why}."));
                Self::message(
                    &mut chat,
                    MessageKind::Note,
                    format!("It failed: {line}: {why}"),
                    true,
                )
            }
        };
        self.finish_decision(p, chat, note).await
    }

    async fn discard(&mut self, id: ActionId) -> Result<(), ChatsError> {
        let mut p = self.decidable(id)?;
        let Some(mut chat) = self.chats.get(&p.chat).cloned() else {
            return Err(ChatsError::internal("the chat went away"));
        };
        let line = line_of(&p);
        p.state = PendingState::Discarded {
            at: Timestamp::now(),
        };
        chat.untold.push(format!("Discarded: {line}."));
        let note = Self::message(
            &mut chat,
            MessageKind::Note,
            format!("Discarded: {line}."),
            false,
        );
        self.finish_decision(p, chat, note).await
    }

    async fn finish_decision(
        &mut self,
        p: PendingRecord,
        mut chat: ChatRecord,
        note: MessageRecord,
    ) -> Result<(), ChatsError> {
        let mut changes = vec![
            ChatChange::Pending(Box::new(p.clone())),
            ChatChange::Message(Box::new(note)),
        ];
        // Memory changes only with the store: a decision that cannot be saved (a full disk)
        // leaves the action as it was, to be decided again.
        let before = self.pending.insert(p.id, p.clone());
        let none_left = self.waiting(Some(chat.id)).is_empty();
        if none_left && chat.answering.is_none() {
            let last = Self::message(&mut chat, MessageKind::Note, NOTHING_WAITS.into(), false);
            changes.push(ChatChange::Message(Box::new(last)));
        }
        changes.push(ChatChange::Chat(Box::new(chat.clone())));
        if let Err(e) = self.save(changes).await {
            match before {
                Some(old) => self.pending.insert(p.id, old),
                None => self.pending.remove(&p.id),
            };
            return Err(e);
        }
        self.chats.insert(chat.id, chat);
        Ok(())
    }
}
