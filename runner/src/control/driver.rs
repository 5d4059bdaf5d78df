//! Drives a CLI through its control protocol: writes to its stdin, reads its stdout lines (a
//! copy of what the relay sends as the run's output), hands asks to the link (the run's
//! secret values in them redacted, as in its output) and decisions back to the CLI.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bosun_shared::protocol::runner::{RunnerMsg, ToolAnswer, ToolAsk};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{Notify, mpsc};

use super::{Protocol, Step};
use crate::redact::Redactor;

/// The asks of this run, shared with the link: what is to be said to bosund (again after each
/// reconnect): the asks waiting, in the order asked, and the answers delivered and the asks
/// withdrawn since.
#[derive(Debug, Default)]
pub struct Asks {
    /// Every message to say, in order, each once per session (a new session says them all
    /// again; bosund takes them as the same ones). An ask leaves it once decided or withdrawn.
    said: Vec<RunnerMsg>,
    /// Bumped on every change, so a session with nothing new to say looks no further.
    version: u64,
}

/// What one session of the link has said of the asks.
#[derive(Debug, Default)]
pub struct Said {
    version: Option<u64>,
    sent: HashSet<(u8, String)>,
}

/// A message's identity among those said: its kind and key.
fn identity(msg: &RunnerMsg) -> Option<(u8, String)> {
    match msg {
        RunnerMsg::Ask(a) => Some((0, a.key.clone())),
        RunnerMsg::Delivered { key } => Some((1, key.clone())),
        RunnerMsg::Withdrawn { key } => Some((2, key.clone())),
        RunnerMsg::Token(t) => Some((3, t.key.clone())),
        RunnerMsg::ServerAsk(a) => Some((4, a.key.clone())),
        RunnerMsg::Started(_)
        | RunnerMsg::Output(_)
        | RunnerMsg::Logged { .. }
        | RunnerMsg::OutputHeld { .. }
        | RunnerMsg::LogFlush { .. }
        | RunnerMsg::Exited(_)
        | RunnerMsg::WantPlan => None,
    }
}

impl Asks {
    fn changed(&mut self) {
        self.version += 1;
    }

    /// A new ask (asked again under the same key: its newer form, at the end).
    fn ask(&mut self, ask: ToolAsk) {
        self.drop_ask(&ask.key);
        self.push(RunnerMsg::Ask(ask));
    }

    /// An ask of the gateway's (a server's token anew, a server's request for the person),
    /// said until bosund answers it for good.
    pub fn gateway(&mut self, msg: RunnerMsg) {
        if let Some((_, key)) = identity(&msg) {
            self.drop_gateway(&key);
        }
        self.push(msg);
    }

    /// Takes an ask of the gateway's out of what is said (answered, or given up).
    pub fn drop_gateway(&mut self, key: &str) {
        let before = self.said.len();
        // The gateway's asks are those said as kinds 3 (a token) and 4 (a server's request).
        self.said
            .retain(|m| !matches!(identity(m), Some((3 | 4, k)) if k == key));
        if self.said.len() != before {
            self.changed();
        }
    }

    /// Takes an ask out of what is said (decided or withdrawn); whether it was there.
    fn drop_ask(&mut self, key: &str) -> bool {
        let before = self.said.len();
        self.said
            .retain(|m| !matches!(m, RunnerMsg::Ask(a) if a.key == key));
        let dropped = self.said.len() != before;
        if dropped {
            self.changed();
        }
        dropped
    }

    fn push(&mut self, msg: RunnerMsg) {
        self.said.push(msg);
        self.changed();
    }

    /// What the session has not said yet, in order; nothing to look through when nothing
    /// changed since it last asked (the link asks on every wake, output's included).
    pub fn unsaid(&self, said: &mut Said) -> Vec<RunnerMsg> {
        if said.version == Some(self.version) {
            return Vec::new();
        }
        said.version = Some(self.version);
        self.said
            .iter()
            .filter(|m| identity(m).is_some_and(|id| said.sent.insert(id)))
            .cloned()
            .collect()
    }
}

/// What the driver needs from the rest of the runner.
pub struct Driver {
    pub protocol: Box<dyn Protocol>,
    pub stdin: ChildStdin,
    /// The CLI's stdout, as read by the relay.
    pub lines_in: mpsc::UnboundedReceiver<Vec<u8>>,
    /// bosund's decisions, from the link.
    pub decisions: mpsc::UnboundedReceiver<(String, ToolAnswer)>,
    pub asks: Arc<Mutex<Asks>>,
    /// Nudges the link: there is something to send.
    pub wake: Arc<Notify>,
    /// Filled in when the CLI does not say where a call acts.
    pub cwd: PathBuf,
    /// The run's secret values, replaced in each ask before it goes to bosund
    /// ([`super::ask_redactor`]).
    pub redactor: Arc<Redactor>,
    /// Told when the protocol says the CLI's work is done (its stdin is closed then).
    pub done: Option<tokio::sync::oneshot::Sender<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Driver {
    /// Runs until the CLI's stdout closes. Stdin is closed when the protocol says the work is
    /// done; until then it stays open, however long an ask waits.
    pub async fn run(mut self) {
        let first = self.protocol.start();
        let mut stdin = Some(self.stdin);
        let mut partial: Vec<u8> = Vec::new();
        let mut steps = first;
        let mut answered: Vec<String> = Vec::new();
        loop {
            for step in steps.drain(..) {
                match step {
                    Step::Write(mut bytes) => {
                        if let Some(w) = stdin.as_mut() {
                            bytes.push(b'\n');
                            let written = async {
                                w.write_all(&bytes).await?;
                                w.flush().await
                            }
                            .await;
                            if let Err(e) = written {
                                say!("bosun-runner: could not write to the CLI: {e}");
                                stdin = None;
                            }
                        }
                    }
                    Step::Ask(ask) => {
                        let ask = super::for_bosund(ask, &self.cwd, &self.redactor);
                        lock(&self.asks).ask(ask);
                        self.wake.notify_one();
                    }
                    Step::Withdraw(key) => {
                        let mut asks = lock(&self.asks);
                        asks.drop_ask(&key);
                        asks.push(RunnerMsg::Withdrawn { key });
                        drop(asks);
                        self.wake.notify_one();
                    }
                    Step::Finish => {
                        stdin = None;
                        if let Some(done) = self.done.take() {
                            let _ = done.send(());
                        }
                    }
                }
            }
            if !answered.is_empty() {
                let mut asks = lock(&self.asks);
                for key in answered.drain(..) {
                    asks.push(RunnerMsg::Delivered { key });
                }
                drop(asks);
                self.wake.notify_one();
            }
            tokio::select! {
                data = self.lines_in.recv() => match data {
                    Some(data) => {
                        partial.extend_from_slice(&data);
                        let mut start = 0;
                        while let Some(pos) = partial[start..].iter().position(|&b| b == b'\n') {
                            let end = start + pos;
                            steps.extend(self.protocol.on_line(&partial[start..end]));
                            start = end + 1;
                        }
                        partial.drain(..start);
                    }
                    None => {
                        if !partial.is_empty() {
                            steps.extend(self.protocol.on_line(&partial));
                        }
                        return;
                    }
                },
                Some((key, answer)) = self.decisions.recv() => {
                    let known = lock(&self.asks).drop_ask(&key);
                    if known {
                        steps.extend(self.protocol.answer(&key, &answer));
                        answered.push(key);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(key: &str) -> ToolAsk {
        ToolAsk {
            key: key.into(),
            tool: "Bash".into(),
            input: serde_json::Value::Null,
            input_cut: false,
            cwd: None,
            at: bosun_shared::Timestamp::now(),
            redacted: false,
        }
    }

    fn keys(msgs: &[RunnerMsg]) -> Vec<String> {
        msgs.iter()
            .map(|m| match m {
                RunnerMsg::Ask(a) => format!("ask {}", a.key),
                RunnerMsg::Delivered { key } => format!("delivered {key}"),
                RunnerMsg::Withdrawn { key } => format!("withdrawn {key}"),
                RunnerMsg::Token(t) => format!("token {}", t.key),
                RunnerMsg::ServerAsk(a) => format!("server ask {}", a.key),
                RunnerMsg::Started(_)
                | RunnerMsg::Output(_)
                | RunnerMsg::Logged { .. }
                | RunnerMsg::OutputHeld { .. }
                | RunnerMsg::LogFlush { .. }
                | RunnerMsg::Exited(_)
                | RunnerMsg::WantPlan => "?".into(),
            })
            .collect()
    }

    #[test]
    fn a_session_says_each_thing_once_and_a_new_session_says_what_still_stands() {
        let mut asks = Asks::default();
        let mut session = Said::default();
        asks.ask(ask("a"));
        asks.ask(ask("b"));
        assert_eq!(keys(&asks.unsaid(&mut session)), ["ask a", "ask b"]);
        assert!(asks.unsaid(&mut session).is_empty(), "nothing new");
        assert!(asks.drop_ask("a"));
        asks.push(RunnerMsg::Delivered { key: "a".into() });
        assert!(asks.drop_ask("b"));
        asks.push(RunnerMsg::Withdrawn { key: "b".into() });
        assert_eq!(
            keys(&asks.unsaid(&mut session)),
            ["delivered a", "withdrawn b"]
        );
        asks.ask(ask("c"));
        let mut next = Said::default();
        assert_eq!(
            keys(&asks.unsaid(&mut next)),
            ["delivered a", "withdrawn b", "ask c"],
            "after a reconnect: in order, decided asks no more"
        );
        assert!(!asks.drop_ask("a"), "already gone");
    }
}
