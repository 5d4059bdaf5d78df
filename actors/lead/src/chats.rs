//! Chats with the lead: the Chats supervisor (it creates chats, and routes every request to the
//! chat's own ChatActor, restarting a failed one within the restart budget), and the ChatActor,
//! one per chat — its answers (each a Claude Code run) and its pending actions, which it alone
//! decides. Every step is committed durably before anyone is told:
//! a pending action before the lead hears that it waits, an approval before its call runs, so a
//! crash loses none and runs none twice (an approval cut off between its decision and its result
//! is recorded as failed, "may or may not have happened").
//!
//! This file holds the messages and the ChatActor; the supervisor is in [`supervisor`], a chat's
//! messages and the lead's answers in [`talk`], the pending actions in [`pending`], and the
//! board checks in [`board_check`].

mod board_check;
mod pending;
mod supervisor;
mod talk;
pub use pending::kept_words;
pub use supervisor::{Chats, ChatsSupervisor, board_check_interval};

use crate::record::ChatReads;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::ChatsError;
use bosun_runs::record::RunSnapshot;
use bosun_shared::{ActionId, AnswerId, ChatId, RunId, Timestamp};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tracing::{Instrument, warn};

use super::answers::Answers;
use super::record::{ChatChange, ChatRecord, MessageKind, MessageRecord, PendingRecord};
use super::tools::{self, LeadTool, ToolCtx};
use bosun_kit::tell::Tell;
use bosun_shared::notice::Notice;
use bosun_store::Store;
use bosun_store::writer::{Change, StoreWriter};

/// How often answers are looked at for their end.
const TICK: Duration = Duration::from_millis(300);
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
    /// Where new messages, pending actions kept or decided, and notices are told (bosund
    /// tells every attached UI).
    pub tell: Tell<ChatEvent>,
}

/// A chat as the person is shown it.
#[derive(Clone, Debug)]
pub struct Chat {
    pub id: ChatId,
    /// The lead agent's name (or its id's start and "(removed)").
    pub agent: String,
    pub created_at: Timestamp,
    /// The run of the answer being written now.
    pub answering: Option<RunId>,
    /// How many pending actions wait for the person.
    pub waiting: u32,
    /// Its messages, when they were asked for.
    pub messages: Vec<MessageRecord>,
    /// The chat of the board checks.
    pub board_checks: bool,
}

/// A pending action as the person is shown it: its record, the one line that says what it
/// does, and, while it waits, what it would do or why it would fail.
#[derive(Clone, Debug)]
pub struct PendingAction {
    pub record: PendingRecord,
    pub line: String,
    pub preview: String,
    pub would_fail: Option<String>,
}

/// What the chats tell as it happens, each already saved.
#[derive(Clone, Debug)]
pub enum ChatEvent {
    /// A chat got a message (the person's, the lead's, or a note of bosun's).
    Message(Box<MessageRecord>),
    /// A pending action was kept, or decided (its `state` says which).
    Pending(Box<PendingAction>),
    /// Something the person is to hear of now.
    Notice(Notice),
}

pub type ChatsHandle = bosun_kit::handle::ActorHandle<ChatsMsg>;

type Reply<T> = RpcReplyPort<Result<T, ChatsError>>;

/// What the Chats supervisor is asked: a chat or an action is named by the start of its id,
/// found here, and the request handed to that chat's actor.
pub enum ChatsMsg {
    New {
        agent: Option<String>,
        reply: Reply<Chat>,
    },
    Send {
        chat: String,
        message: String,
        files: Vec<PathBuf>,
        reply: Reply<(Chat, RunSnapshot)>,
    },
    Show {
        chat: String,
        reply: Reply<Chat>,
    },
    List {
        reply: Reply<Vec<Chat>>,
    },
    Inbox {
        chat: Option<String>,
        reply: Reply<Vec<PendingAction>>,
    },
    Approve {
        action: String,
        reply: Reply<Vec<PendingAction>>,
    },
    ApproveAll {
        chat: String,
        reply: Reply<Vec<PendingAction>>,
    },
    Discard {
        action: String,
        reply: Reply<Vec<PendingAction>>,
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
        reply: Reply<(Chat, RunSnapshot)>,
    },
    /// The chat with its messages.
    Show { chat: ChatId, reply: Reply<Chat> },
    /// The chat as a list shows it, without its messages.
    View { chat: ChatId, reply: Reply<Chat> },
    Inbox {
        chat: ChatId,
        reply: Reply<Vec<PendingAction>>,
    },
    Approve {
        action: ActionId,
        reply: Reply<Vec<PendingAction>>,
    },
    ApproveAll {
        chat: ChatId,
        reply: Reply<Vec<PendingAction>>,
    },
    Discard {
        action: ActionId,
        reply: Reply<Vec<PendingAction>>,
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

/// A kept call in one plain line. Its tool was parsed before it was kept; a name bosun has no
/// tool of (from a store written by another version) is shown as it is.
fn line_of(p: &PendingRecord) -> String {
    match LeadTool::parse(&p.tool) {
        Ok(tool) => tools::describe(tool, &p.args),
        Err(_) => format!("Call {}", p.tool),
    }
}

impl ChatsState {
    /// Commits the changes together, then tells every attached UI of the messages and the
    /// pending actions among them.
    async fn save(&self, changes: Vec<ChatChange>) -> Result<(), ChatsError> {
        let mut told = Vec::new();
        let mut actions = Vec::new();
        for c in &changes {
            match c {
                ChatChange::Message(m) => told.push(ChatEvent::Message(m.clone())),
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
                (self.ctx.tell)(ChatEvent::Pending(Box::new(view)));
            }
        }
        for e in told {
            (self.ctx.tell)(e);
        }
        Ok(())
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
}
