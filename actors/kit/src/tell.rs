//! How an area tells what happened in it to whoever listens, in its own words: a [`Tell`] of
//! its event type, handed to it by bosund. bosund's tells turn each event into what every UI
//! reads, so that no area knows the wire or the actor that fans events out.

use std::sync::Arc;

/// Tells one event of an area (never blocks, never fails: a listener that is gone misses it).
pub type Tell<E> = Arc<dyn Fn(E) + Send + Sync>;
