//! Events: the fan-out of run changes to every UI that asked for them.

use std::collections::HashMap;

use bosun_shared::protocol::ui::{Event, RunView, ServerFrame};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::handle::ActorHandle;

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
    /// A run changed (already persisted).
    RunChanged(Box<RunView>),
    /// Any other event for every subscriber (a chat's message, a pending action), already
    /// persisted.
    Publish(Box<Event>),
}

pub struct Events;

pub struct EventsState {
    subscribers: HashMap<u64, mpsc::UnboundedSender<ServerFrame>>,
    /// Everything this actor logs is in its span.
    span: tracing::Span,
}

impl Actor for Events {
    type Msg = EventsMsg;
    type State = EventsState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(EventsState {
            subscribers: HashMap::new(),
            span: tracing::info_span!("events"),
        })
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
                    state
                        .subscribers
                        .retain(|_, tx| tx.send(ServerFrame::Event((*event).clone())).is_ok());
                }
                EventsMsg::RunChanged(run) => {
                    // A subscriber whose session is gone is dropped; the others each get the event.
                    state.subscribers.retain(|_, tx| {
                        tx.send(ServerFrame::Event(Event::RunChanged { run: run.clone() }))
                            .is_ok()
                    });
                }
            }
            Ok(())
        }
        .instrument(span)
        .await
    }
}

/// Where to send run changes: the current Events actor.
pub type EventsHandle = ActorHandle<EventsMsg>;
