//! The Chats supervisor: it makes chats, finds the chat or the action a request names by the
//! start of its id and hands the request to that chat's actor, restarts a failed ChatActor
//! within its restart budget, and starts the board checks (in the board checks' chat, made once
//! the board has findings).

use crate::record::ChatReads;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::ChatsError;
use bosun_shared::{ActionId, ChatId};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tracing::{error, warn};

use super::{Chat, ChatActor, ChatMsg, ChatsContext, ChatsMsg, ChatsState, PendingAction, Reply};
use bosun_board::{BoardRequest, Findings};
use bosun_kit::offload::blocking;
use bosun_kit::prefix::by_prefix;
use bosun_kit::supervision::{RestartBudget, RestartPolicy, Verdict};

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
    ) -> Result<Chat, ChatsError> {
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
        reply: Reply<Vec<PendingAction>>,
        msg: impl FnOnce(ActionId, Reply<Vec<PendingAction>>) -> ChatMsg,
    ) {
        match self.chat_of_action(key).await {
            Ok((action, a)) => forward(&a, msg(action, reply)),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Answers with what waits in every chat, oldest chat first.
    async fn every_inbox(&self, reply: Reply<Vec<PendingAction>>) {
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
    async fn every_view(&self, reply: Reply<Vec<Chat>>) {
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
