//! Drives a CLI through its control protocol: writes to its stdin, reads its stdout lines (a
//! copy of what the relay sends as the run's output), hands asks to the link and decisions back
//! to the CLI.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bosun_shared::protocol::runner::{ToolAnswer, ToolAsk};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{Notify, mpsc};

use super::{Protocol, Step};

/// The asks of this run, shared with the link: what is to be sent to bosund (again after each
/// reconnect) and what was delivered.
#[derive(Debug, Default)]
pub struct Asks {
    /// Asked and not decided yet, in the order asked.
    pub waiting: Vec<ToolAsk>,
    /// Decided and handed to the CLI; said to bosund after each reconnect.
    pub delivered: BTreeSet<String>,
    /// Withdrawn by the CLI before a decision; said to bosund after each reconnect.
    pub withdrawn: BTreeSet<String>,
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
                    Step::Ask(mut ask) => {
                        if ask.cwd.is_none() {
                            ask.cwd = Some(self.cwd.clone());
                        }
                        let mut asks = lock(&self.asks);
                        asks.waiting.retain(|a| a.key != ask.key);
                        asks.waiting.push(ask);
                        drop(asks);
                        self.wake.notify_one();
                    }
                    Step::Withdraw(key) => {
                        let mut asks = lock(&self.asks);
                        asks.waiting.retain(|a| a.key != key);
                        asks.withdrawn.insert(key);
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
                lock(&self.asks).delivered.extend(answered.drain(..));
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
                    let known = {
                        let mut asks = lock(&self.asks);
                        let before = asks.waiting.len();
                        asks.waiting.retain(|a| a.key != key);
                        asks.waiting.len() != before
                    };
                    if known {
                        steps.extend(self.protocol.answer(&key, &answer));
                        answered.push(key);
                    }
                }
            }
        }
    }
}
