//! What bosun's MCP server knows of the lead's live answers: which bearer token belongs to
//! which answer (only while the answer's run lives), and how far the daemon has read each
//! answer's stream — the tools it called, in order — so a privileged call can be checked
//! against what came before it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bosun_shared::{AnswerId, ChatId, RunId, RunToken};
use tokio::sync::Notify;

use bosun_agents::record::ToolCall;
use bosun_runs::CallsRead;

/// The built-in tools that only read, and the prefix of bosun's own tools: anything else an
/// answer calls came from outside bosun.
const INSIDE: [&str; 4] = ["Read", "Glob", "Grep", "ToolSearch"];
pub const OWN_PREFIX: &str = "mcp__bosun__";

/// Whether a tool (as the CLI names it) is from outside bosun.
pub fn is_outside(name: &str) -> bool {
    !(INSIDE.contains(&name) || name.starts_with(OWN_PREFIX))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveAnswer {
    pub chat: ChatId,
    pub answer: AnswerId,
    pub run: Option<RunId>,
}

/// A tool call read from an answer's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenUse {
    pub name: String,
    pub input: Option<String>,
}

#[derive(Default)]
struct Inner {
    by_token: HashMap<String, LiveAnswer>,
    uses: HashMap<RunId, Vec<SeenUse>>,
    /// The calls already matched to a request of bosun's MCP server, by index.
    claimed: HashMap<RunId, HashSet<usize>>,
}

#[derive(Clone, Default)]
pub struct Answers {
    inner: Arc<Mutex<Inner>>,
    read: Arc<Notify>,
}

/// How a privileged call stands against its answer's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Read up to the call: the outside tool used before it, if any.
    Read { outside: Option<String> },
    /// Not read by the deadline.
    NotYet,
}

impl Answers {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An answer begins (or, after a restart, goes on): calls with its token are its own.
    pub fn open(&self, digest: String, chat: ChatId, answer: AnswerId, run: Option<RunId>) {
        self.lock()
            .by_token
            .insert(digest, LiveAnswer { chat, answer, run });
    }

    pub fn set_run(&self, answer: AnswerId, run: RunId) {
        let mut inner = self.lock();
        for a in inner.by_token.values_mut() {
            if a.answer == answer {
                a.run = Some(run);
            }
        }
    }

    /// The run of a live answer, once known.
    pub fn run_of(&self, answer: AnswerId) -> Option<RunId> {
        self.lock()
            .by_token
            .values()
            .find(|a| a.answer == answer)
            .and_then(|a| a.run)
    }

    /// The answer ended: its token is refused from now on.
    pub fn close(&self, answer: AnswerId) {
        let mut inner = self.lock();
        let runs: Vec<RunId> = inner
            .by_token
            .values()
            .filter(|a| a.answer == answer)
            .filter_map(|a| a.run)
            .collect();
        inner.by_token.retain(|_, a| a.answer != answer);
        for r in runs {
            inner.uses.remove(&r);
            inner.claimed.remove(&r);
        }
    }

    /// The live answer a bearer token belongs to.
    pub fn find(&self, token: &str) -> Option<LiveAnswer> {
        self.lock()
            .by_token
            .get(&RunToken::digest_of(token))
            .copied()
    }

    /// The daemon read more of a run's stream (called by its RunActor).
    pub fn publish(&self, run: RunId, uses: Vec<SeenUse>) {
        self.lock().uses.insert(run, uses);
        self.read.notify_waiters();
    }

    /// Waits (up to `limit`) until the answer's stream has been read up to a call of `name`
    /// with these arguments, and says which outside tool, if any, came before it.
    pub async fn read_up_to(
        &self,
        run: RunId,
        name: &str,
        input: &str,
        limit: Duration,
    ) -> Reading {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.read.notified();
            if let Some(found) = self.claim(run, name, input) {
                return Reading::Read { outside: found };
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Reading::NotYet;
            }
        }
    }

    fn claim(&self, run: RunId, name: &str, input: &str) -> Option<Option<String>> {
        let mut inner = self.lock();
        let uses = inner.uses.get(&run)?.clone();
        let claimed = inner.claimed.entry(run).or_default();
        let index = uses.iter().enumerate().position(|(i, u)| {
            !claimed.contains(&i) && u.name == name && u.input.as_deref() == Some(input)
        })?;
        claimed.insert(index);
        Some(
            uses[..index]
                .iter()
                .find(|u| is_outside(&u.name))
                .map(|u| u.name.clone()),
        )
    }
}

/// A RunActor hears its answer's tool calls; the answers keep what a privileged call is
/// checked against.
impl CallsRead for Answers {
    fn calls_read(&self, run: RunId, calls: &[ToolCall]) {
        let uses = calls
            .iter()
            .map(|c| SeenUse {
                name: c.name.clone(),
                input: c.input.clone(),
            })
            .collect();
        self.publish(run, uses);
    }
}
