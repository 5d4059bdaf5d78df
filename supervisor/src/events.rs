//! Events: the fan-out of what every UI is told (a run's change, a call waiting, a chat's
//! message, a notice; each area tells its own, and `ctx.rs` turns it into the wire's event) to
//! every UI that asked for them, and of the storage's faults: when storage becomes faulty and
//! when it recovers ([`bosun_store::health`]).

use std::collections::HashMap;
use std::sync::Arc;

use bosun_protocol::ui::{Event, ServerFrame};
use bosun_shared::Timestamp;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use bosun_kit::handle::ActorHandle;
use bosun_kit::tell::Tell;

use crate::api::views::View;
use bosun_lead::chats::ChatEvent;
use bosun_runs::events::RunsEvent;
use bosun_shared::notice::Notice;
use bosun_store::health::Fault;

/// The Events actor's messages.
pub enum EventsMsg {
    /// A session wants every run change from now on.
    Subscribe {
        session: u64,
        tx: mpsc::UnboundedSender<ServerFrame>,
    },
    Unsubscribe {
        session: u64,
    },
    /// An event for every subscriber, already persisted.
    Publish(Box<Event>),
}

pub struct Events;

pub struct EventsState {
    subscribers: HashMap<u64, mpsc::UnboundedSender<ServerFrame>>,
    /// The task that turns the storage's faults into events; ended with the actor.
    storage: Option<tokio::task::JoinHandle<()>>,
    /// Everything this actor logs is in its span.
    span: tracing::Span,
}

/// What the Events actor starts with: the storage's faults to tell (the store writer's
/// [`bosun_store::health::StorageHealth::watch`]), or none.
pub type StorageWatch = Option<watch::Receiver<Option<Fault>>>;

impl Actor for Events {
    type Msg = EventsMsg;
    type State = EventsState;
    type Arguments = StorageWatch;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        storage: StorageWatch,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(EventsState {
            subscribers: HashMap::new(),
            storage: storage.map(|rx| tokio::spawn(tell_storage(rx, myself))),
            span: tracing::info_span!("events"),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(task) = state.storage.take() {
            task.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        async move {
            match msg {
                EventsMsg::Subscribe { session, tx } => {
                    state.subscribers.insert(session, tx);
                }
                EventsMsg::Unsubscribe { session } => {
                    state.subscribers.remove(&session);
                }
                EventsMsg::Publish(event) => {
                    // A subscriber whose session is gone is dropped; the others each get it.
                    state
                        .subscribers
                        .retain(|_, tx| tx.send(ServerFrame::Event((*event).clone())).is_ok());
                }
            }
            Ok(())
        }
        .instrument(span)
        .await
    }
}

/// Publishes [`Event::StorageFault`] when storage becomes faulty and
/// [`Event::StorageRecovered`] when it recovers, until the actor is gone. A fault that is
/// already there when it starts (a restarted Events actor) is told too.
async fn tell_storage(mut rx: watch::Receiver<Option<Fault>>, events: ActorRef<EventsMsg>) {
    let mut current: Option<Fault> = None;
    loop {
        let now = rx.borrow_and_update().clone();
        let mut told = Vec::new();
        // A fault that ended (or one that ended and another that began meanwhile).
        if let Some(was) = &current
            && now.as_ref().is_none_or(|f| f.since != was.since)
        {
            told.push(Event::StorageRecovered {
                fault: was.message.clone(),
                since: was.since,
                at: Timestamp::now(),
            });
        }
        if let Some(f) = &now
            && current.as_ref().is_none_or(|c| c.since != f.since)
        {
            told.push(Event::StorageFault {
                message: f.message.clone(),
                since: f.since,
            });
        }
        current = now;
        for event in told {
            if events.cast(EventsMsg::Publish(Box::new(event))).is_err() {
                return;
            }
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Where to send events: the current Events actor.
pub type EventsHandle = ActorHandle<EventsMsg>;

/// The runs area's tell: a run's change and a call's approval, as the wire's events.
pub fn tell_runs(events: EventsHandle) -> Tell<RunsEvent> {
    Arc::new(move |e| {
        let event = match e {
            RunsEvent::Run(run) => Event::RunChanged {
                run: Box::new(run.view()),
            },
            RunsEvent::Approval(a) => Event::ApprovalChanged {
                approval: Box::new(a.view()),
            },
        };
        events.cast(EventsMsg::Publish(Box::new(event)));
    })
}

/// The chats' tell: a message, a pending action, a notice, as the wire's events.
pub fn tell_chats(events: EventsHandle) -> Tell<ChatEvent> {
    Arc::new(move |e| {
        let event = match e {
            ChatEvent::Message(m) => Event::ChatMessage {
                chat: m.chat,
                message: m.view(),
            },
            ChatEvent::Pending(action) => Event::PendingChanged {
                action: Box::new(action.view()),
            },
            ChatEvent::Notice(n) => notification(n),
        };
        events.cast(EventsMsg::Publish(Box::new(event)));
    })
}

/// A tell of notices (the board's merges, a sign-in lost), as the wire's events.
pub fn tell_notices(events: EventsHandle) -> Tell<Notice> {
    Arc::new(move |n| events.cast(EventsMsg::Publish(Box::new(notification(n)))))
}

fn notification(n: Notice) -> Event {
    Event::Notification {
        kind: n.kind,
        text: n.text,
        card: n.card,
        chat: n.chat,
        at: n.at,
    }
}
