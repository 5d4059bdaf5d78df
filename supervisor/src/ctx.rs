//! What the daemon's parts share: the store, the live runs, the actor refs, and the paths.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use anyhow::Context;
use bosun_actors::events::EventsHandle;
use bosun_actors::runs::live::LiveRuns;
use bosun_actors::runs::{RunsContext, RunsMsg};
use bosun_actors::store::Store;
use bosun_actors::store::writer::StoreWriter;
use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use ractor::ActorRef;

use crate::root::RootMsg;

pub struct DaemonCtx {
    pub dirs: StateDir,
    pub store: Store,
    pub writer: StoreWriter,
    pub runner_bin: PathBuf,
    pub live: LiveRuns,
    pub events: EventsHandle,
    pub started_at: Timestamp,
    actors: RwLock<Option<Actors>>,
    root_failure: Mutex<Option<String>>,
}

/// The long-lived actors, known once Root has started them.
#[derive(Clone)]
pub struct Actors {
    pub root: ActorRef<RootMsg>,
    pub runs: ActorRef<RunsMsg>,
}

impl DaemonCtx {
    pub fn new(
        dirs: StateDir,
        store: Store,
        writer: StoreWriter,
        runner_bin: PathBuf,
        started_at: Timestamp,
    ) -> Self {
        Self {
            dirs,
            store,
            writer,
            runner_bin,
            live: LiveRuns::default(),
            events: EventsHandle::default(),
            started_at,
            actors: RwLock::new(None),
            root_failure: Mutex::new(None),
        }
    }

    pub fn set_actors(&self, actors: Actors) {
        if let Ok(mut a) = self.actors.write() {
            *a = Some(actors);
        }
    }

    /// The actors; `None` only before Root has started them.
    pub fn actors(&self) -> Option<Actors> {
        self.actors.read().ok().and_then(|a| a.clone())
    }

    /// What the RunActors share, made from the daemon's parts.
    pub fn runs_context(&self) -> Arc<RunsContext> {
        Arc::new(RunsContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            dirs: self.dirs.clone(),
            runner_bin: self.runner_bin.clone(),
            live: self.live.clone(),
            events: self.events.clone(),
        })
    }

    pub fn record_root_failure(&self, why: String) {
        if let Ok(mut f) = self.root_failure.lock() {
            *f = Some(why);
        }
    }

    pub fn root_failure(&self) -> Option<String> {
        self.root_failure.lock().ok().and_then(|f| f.clone())
    }
}

/// Where `bosun-runner` is: `$BOSUN_RUNNER_BIN`, else beside `bosund`, else on `PATH`.
pub fn runner_binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("BOSUN_RUNNER_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("could not find bosund's own path")?;
    if let Some(beside) = exe.parent().map(|d| d.join("bosun-runner"))
        && beside.is_file()
    {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bosun-runner"))
        .find(|p| p.is_file())
        .context("bosun-runner was not found beside bosund or on PATH; install it next to bosund or set BOSUN_RUNNER_BIN")
}
