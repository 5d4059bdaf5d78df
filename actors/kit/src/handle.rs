//! A handle on "the current" actor of a kind: Root replaces the actor in it when it restarts
//! one, so nobody keeps a reference to a dead actor.

use std::sync::{Arc, RwLock};

use ractor::ActorRef;

pub struct ActorHandle<M>(Arc<RwLock<Option<ActorRef<M>>>>);

impl<M> Clone for ActorHandle<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M> Default for ActorHandle<M> {
    fn default() -> Self {
        Self(Arc::new(RwLock::new(None)))
    }
}

impl<M: ractor::Message> ActorHandle<M> {
    pub fn set(&self, actor: ActorRef<M>) {
        if let Ok(mut a) = self.0.write() {
            *a = Some(actor);
        }
    }

    pub fn get(&self) -> Option<ActorRef<M>> {
        self.0.read().ok().and_then(|a| a.clone())
    }

    /// Sends without waiting; dropped when there is no actor (it is being restarted).
    pub fn cast(&self, msg: M) {
        if let Some(actor) = self.get() {
            let _ = actor.cast(msg);
        }
    }
}
