//! Drives a CLI through its control protocol: writes to its stdin, reads its stdout lines (a
//! copy of what the relay sends as the run's output), hands asks to the link (the run's
//! secret values in them redacted, as in its output) and decisions back to the CLI.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bosun_protocol::FrameError;
use bosun_protocol::frame::check_fits;
use bosun_protocol::runner::{RunnerMsg, ToolAnswer, ToolAsk};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{Notify, mpsc};

use super::{Protocol, Step};
use crate::cleared::Cleared;
use crate::redact::Redactor;

/// The asks of this run, shared with the link: what is to be said to bosund (again after each
/// reconnect): the asks waiting, in the order asked, and the answers delivered and the asks
/// withdrawn since.
#[derive(Debug, Default)]
pub struct Asks {
    /// Every message to say, in order, each once per session (a new session says them all
    /// again; bosund takes them as the same ones), numbered as pushed. An ask leaves it once
    /// decided or withdrawn.
    said: Vec<(u64, RunnerMsg)>,
    /// The number of the next message pushed.
    next: u64,
    /// Bumped on every change, so a session with nothing new to say looks no further.
    version: u64,
}

/// What one session of the link has said of the asks.
#[derive(Debug, Default)]
pub struct Said {
    version: Option<u64>,
    /// The messages numbered below this were looked at already: a session looks only at
    /// those pushed since, however many the run has said.
    upto: u64,
    sent: HashSet<(u8, String)>,
}

impl Said {
    /// The decision on `key` this session's bosund told unsaved: it is not told back to the
    /// bosund that made it, only to a later one.
    pub fn told_unsaved(&mut self, key: &str) {
        self.sent.insert((6, key.to_string()));
    }
}

/// A message's identity among those said: its kind and key.
fn identity(msg: &RunnerMsg) -> Option<(u8, String)> {
    match msg {
        RunnerMsg::Ask(a) => Some((0, a.key.clone())),
        RunnerMsg::Delivered { key } => Some((1, key.clone())),
        RunnerMsg::Withdrawn { key } => Some((2, key.clone())),
        RunnerMsg::Token(t) => Some((3, t.key.clone())),
        RunnerMsg::ServerAsk(a) => Some((4, a.key.clone())),
        RunnerMsg::HeldBack { server, tools, .. } => {
            let names: Vec<&str> = tools
                .iter()
                .filter_map(|t| t.get("name").and_then(serde_json::Value::as_str))
                .collect();
            Some((5, format!("{server}/{}", names.join(","))))
        }
        RunnerMsg::Unsaved { ask, .. } => Some((6, ask.key.clone())),
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

    /// A new ask (asked again under the same key: its newer form, at the end). Refused, and
    /// not said, when it could not fit in one message to bosund.
    pub fn ask(&mut self, ask: ToolAsk) -> Result<(), FrameError> {
        self.drop_ask(&ask.key);
        self.push_fitting(RunnerMsg::Ask(ask))
    }

    /// An ask of the gateway's (a server's token anew, a server's request for the person),
    /// said until bosund answers it for good. Refused, and not said, when it could not fit in
    /// one message to bosund.
    pub fn gateway(&mut self, msg: RunnerMsg) -> Result<(), FrameError> {
        if let Some((_, key)) = identity(&msg) {
            self.drop_gateway(&key);
        }
        self.push_fitting(msg)
    }

    /// Pushes a message made of what a peer said, once it is known to fit in one frame: one
    /// that does not is refused here, where the caller can still answer for it, rather than
    /// failing the link at every reconnect.
    fn push_fitting(&mut self, msg: RunnerMsg) -> Result<(), FrameError> {
        check_fits(&msg)?;
        self.push(msg);
        Ok(())
    }

    /// Takes out of what is said the messages `gone` picks; whether there were any.
    fn drop_where(&mut self, gone: impl Fn(&RunnerMsg) -> bool) -> bool {
        let before = self.said.len();
        self.said.retain(|(_, m)| !gone(m));
        let dropped = self.said.len() != before;
        if dropped {
            self.changed();
        }
        dropped
    }

    /// Takes an ask of the gateway's out of what is said (answered, or given up).
    pub fn drop_gateway(&mut self, key: &str) {
        // The gateway's asks are those said as kinds 3 (a token) and 4 (a server's request).
        self.drop_where(|m| matches!(identity(m), Some((3 | 4, k)) if k == key));
    }

    /// Takes an ask out of what is said (decided or withdrawn); whether it was there.
    pub fn drop_ask(&mut self, key: &str) -> bool {
        self.drop_where(|m| matches!(m, RunnerMsg::Ask(a) if a.key == key))
    }

    pub fn push(&mut self, msg: RunnerMsg) {
        self.said.push((self.next, msg));
        self.next += 1;
        self.changed();
    }

    /// bosund told its decision on the ask `key` before saving it: kept (the ask, the answer
    /// and who made it), and said to any later bosund, until bosund says it is saved.
    pub fn unsaved(&mut self, key: &str, answer: &ToolAnswer, by: &str) {
        let ask = self.said.iter().rev().find_map(|(_, m)| {
            if let RunnerMsg::Ask(a) = m
                && a.key == key
            {
                return Some(a.clone());
            }
            None
        });
        if let Some(ask) = ask {
            self.push(RunnerMsg::Unsaved {
                ask,
                answer: answer.clone(),
                by: by.to_string(),
                at: Some(bosun_shared::Timestamp::now()),
            });
        }
    }

    /// bosund saved its decision on the ask `key`: no more to keep.
    pub fn saved(&mut self, key: &str) {
        self.drop_where(|m| matches!(m, RunnerMsg::Unsaved { ask, .. } if ask.key == key));
    }

    /// Tools the gateway held back, said to bosund (again after each reconnect); said once
    /// however often the same tools are held back. `left_out` counts those held back but not
    /// told (the message is bounded). Refused, and not said, when it could not fit.
    pub fn held_back(
        &mut self,
        server: String,
        tools: Vec<serde_json::Value>,
        left_out: u64,
    ) -> Result<(), FrameError> {
        let msg = RunnerMsg::HeldBack {
            server,
            tools,
            left_out,
        };
        let id = identity(&msg);
        if self.said.iter().any(|(_, m)| identity(m) == id) {
            return Ok(());
        }
        self.push_fitting(msg)
    }

    /// What the session has not said yet, in order; nothing to look through when nothing
    /// changed since it last asked (the link asks on every wake, output's included), and only
    /// what was pushed since otherwise. Decisions kept unsaved are said only to a bosund that
    /// takes them back (`unsaved_taken`).
    pub fn unsaid(&self, said: &mut Said, unsaved_taken: bool) -> Vec<RunnerMsg> {
        if said.version == Some(self.version) {
            return Vec::new();
        }
        said.version = Some(self.version);
        let from = self.said.partition_point(|(n, _)| *n < said.upto);
        said.upto = self.next;
        self.said[from..]
            .iter()
            .map(|(_, m)| m)
            .filter(|m| unsaved_taken || !matches!(m, RunnerMsg::Unsaved { .. }))
            .filter(|m| identity(m).is_some_and(|id| said.sent.insert(id)))
            .cloned()
            .collect()
    }
}

/// The answer to a call whose ask could not fit in a message to bosund: nobody can judge it,
/// so it is denied, failing closed, saying why.
pub fn too_large_to_judge(e: &FrameError) -> ToolAnswer {
    ToolAnswer::Deny {
        message: format!(
            "bosun could not judge this call, so it is denied: its request to bosund is too large ({e}); make the call smaller"
        ),
    }
}

/// bosund's decision on an ask, from the link.
#[derive(Debug)]
pub struct Decided {
    pub key: String,
    pub answer: ToolAnswer,
    /// Who decided, in bosund's words (empty from a bosund of before it).
    pub by: String,
}

/// What the driver needs from the rest of the runner.
pub struct Driver {
    pub protocol: Box<dyn Protocol>,
    pub stdin: ChildStdin,
    /// The CLI's stdout, as read by the relay.
    pub lines_in: mpsc::UnboundedReceiver<Vec<u8>>,
    /// bosund's decisions, from the link.
    pub decisions: mpsc::UnboundedReceiver<Decided>,
    /// Where an allowed call of an MCP tool is noted for the gateway, which lets it through
    /// without asking again.
    pub cleared: Arc<Mutex<Cleared>>,
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
        // The asks of MCP tools waiting for bosund: their names and the arguments as the CLI
        // made them (the gateway sees those, not the redacted ones bosund sees).
        let mut mcp: HashMap<String, (String, serde_json::Value)> = HashMap::new();
        loop {
            // A step may bring more (a call denied here is answered at once).
            while !steps.is_empty() {
                for step in std::mem::take(&mut steps) {
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
                            if ask.tool.starts_with("mcp__") {
                                mcp.insert(ask.key.clone(), (ask.tool.clone(), ask.input.clone()));
                            }
                            let ask = super::for_bosund(ask, &self.cwd, &self.redactor);
                            let key = ask.key.clone();
                            match lock(&self.asks).ask(ask) {
                                Ok(()) => self.wake.notify_one(),
                                Err(e) => {
                                    // Nobody can judge a call that cannot be told to bosund: it is
                                    // denied here, failing closed, with the reason.
                                    mcp.remove(&key);
                                    say!("bosun-runner: the call {key} is denied: {e}");
                                    steps.extend(
                                        self.protocol.answer(&key, &too_large_to_judge(&e)),
                                    );
                                }
                            }
                        }
                        Step::Withdraw(key) => {
                            mcp.remove(&key);
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
                Some(Decided { key, answer, by }) = self.decisions.recv() => {
                    let known = lock(&self.asks).drop_ask(&key);
                    if known {
                        // Noted before the CLI hears it, and so before it can make the call.
                        if let (Some((tool, input)), ToolAnswer::Allow) = (mcp.remove(&key), &answer) {
                            lock(&self.cleared).allow(&tool, &input, by);
                        }
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
                RunnerMsg::HeldBack { server, .. } => format!("held back {server}"),
                RunnerMsg::Unsaved { ask, .. } => format!("unsaved {}", ask.key),
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
        asks.ask(ask("a")).unwrap();
        asks.ask(ask("b")).unwrap();
        assert_eq!(keys(&asks.unsaid(&mut session, true)), ["ask a", "ask b"]);
        assert!(asks.unsaid(&mut session, true).is_empty(), "nothing new");
        assert!(asks.drop_ask("a"));
        asks.push(RunnerMsg::Delivered { key: "a".into() });
        assert!(asks.drop_ask("b"));
        asks.push(RunnerMsg::Withdrawn { key: "b".into() });
        assert_eq!(
            keys(&asks.unsaid(&mut session, true)),
            ["delivered a", "withdrawn b"]
        );
        asks.ask(ask("c")).unwrap();
        let mut next = Said::default();
        assert_eq!(
            keys(&asks.unsaid(&mut next, true)),
            ["delivered a", "withdrawn b", "ask c"],
            "after a reconnect: in order, decided asks no more"
        );
        assert!(!asks.drop_ask("a"), "already gone");
    }

    #[test]
    fn a_decision_told_unsaved_is_said_back_to_each_later_bosund_that_takes_it_until_saved() {
        let mut asks = Asks::default();
        asks.ask(ask("a")).unwrap();
        asks.ask(ask("b")).unwrap();
        let mut session = Said::default();
        assert_eq!(keys(&asks.unsaid(&mut session, true)), ["ask a", "ask b"]);
        // Told before it was saved; the call goes on, and its answer is delivered.
        asks.unsaved("a", &ToolAnswer::Allow, "the policy (step 6)");
        assert!(asks.drop_ask("a"));
        asks.push(RunnerMsg::Delivered { key: "a".into() });
        assert_eq!(
            keys(&asks.unsaid(&mut session, true)),
            ["unsaved a", "delivered a"]
        );
        // bosund went away: the next one hears it back, in order; one of before does not.
        assert_eq!(
            keys(&asks.unsaid(&mut Said::default(), true)),
            ["ask b", "unsaved a", "delivered a"]
        );
        assert_eq!(
            keys(&asks.unsaid(&mut Said::default(), false)),
            ["ask b", "delivered a"]
        );
        let told = asks.unsaid(&mut Said::default(), true);
        assert!(matches!(
            &told[1],
            RunnerMsg::Unsaved { ask, answer: ToolAnswer::Allow, by, .. } if ask.key == "a" && by == "the policy (step 6)"
        ));
        // Saved: no more to say.
        asks.saved("a");
        assert_eq!(
            keys(&asks.unsaid(&mut Said::default(), true)),
            ["ask b", "delivered a"]
        );
        // An answer to an ask no longer there (withdrawn meanwhile) keeps nothing.
        asks.unsaved("gone", &ToolAnswer::Allow, "");
        assert_eq!(keys(&asks.unsaid(&mut Said::default(), true)).len(), 2);
    }

    #[test]
    fn a_session_looks_only_at_what_was_said_since_however_long_the_run() {
        let mut asks = Asks::default();
        let mut session = Said::default();
        for n in 0..1000 {
            let key = format!("k{n}");
            asks.ask(ask(&key)).unwrap();
            assert_eq!(asks.unsaid(&mut session, true).len(), 1);
            asks.drop_ask(&key);
            asks.push(RunnerMsg::Delivered { key });
            assert_eq!(
                keys(&asks.unsaid(&mut session, true)),
                [format!("delivered k{n}")]
            );
        }
        assert_eq!(asks.unsaid(&mut Said::default(), true).len(), 1000);
    }

    /// A protocol whose CLI asks about one MCP call per line it writes (`KEY ARGS`), and which
    /// writes `KEY allow` or `KEY deny` to the CLI as its answer.
    struct OneLine;

    impl Protocol for OneLine {
        fn start(&mut self) -> Vec<Step> {
            Vec::new()
        }
        fn on_line(&mut self, line: &[u8]) -> Vec<Step> {
            let line = String::from_utf8_lossy(line).into_owned();
            let (key, args) = line.split_once(' ').unwrap_or((&line, "{}"));
            vec![Step::Ask(ToolAsk {
                tool: "mcp__everything__echo".into(),
                input: serde_json::from_str(args).unwrap_or_default(),
                ..ask(key)
            })]
        }
        fn answer(&mut self, key: &str, answer: &ToolAnswer) -> Vec<Step> {
            let word = match answer {
                ToolAnswer::Allow => "allow",
                ToolAnswer::Deny { .. } => "deny",
            };
            vec![Step::Write(format!("{key} {word}").into_bytes())]
        }
    }

    /// The gateway may see the call as soon as the CLI has the answer: by then an allowed call
    /// is noted (with its own arguments, not the redacted ones), a denied one is not.
    #[tokio::test]
    async fn an_allowed_mcp_call_is_noted_for_the_gateway_before_the_cli_hears_of_it() {
        use tokio::io::AsyncBufReadExt;
        let mut cli = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut heard = tokio::io::BufReader::new(cli.stdout.take().unwrap()).lines();
        let (lines_tx, lines_in) = mpsc::unbounded_channel();
        let (decided_tx, decisions) = mpsc::unbounded_channel();
        let asks = Arc::new(Mutex::new(Asks::default()));
        let cleared = Arc::new(Mutex::new(Cleared::default()));
        let driver = Driver {
            protocol: Box::new(OneLine),
            stdin: cli.stdin.take().unwrap(),
            lines_in,
            decisions,
            cleared: cleared.clone(),
            asks: asks.clone(),
            wake: Arc::new(Notify::new()),
            cwd: PathBuf::from("/w"),
            redactor: Arc::new(Redactor::new(&["s3cret-5d1c".to_string()])),
            done: None,
        };
        let task = tokio::spawn(driver.run());
        let args = serde_json::json!({"message": "s3cret-5d1c"});
        lines_tx
            .send(format!("k1 {args}\nk2 {args}\n").into_bytes())
            .unwrap();
        // Both asks reach what the link says, redacted.
        let mut said = Said::default();
        for _ in 0..200 {
            if lock(&asks).unsaid(&mut Said::default(), true).len() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let sent = lock(&asks).unsaid(&mut said, true);
        assert_eq!(keys(&sent), ["ask k1", "ask k2"]);
        assert!(matches!(&sent[0], RunnerMsg::Ask(a) if a.redacted));
        decided_tx
            .send(Decided {
                key: "k2".into(),
                answer: ToolAnswer::Deny {
                    message: "no".into(),
                },
                by: "the person".into(),
            })
            .unwrap();
        decided_tx
            .send(Decided {
                key: "k1".into(),
                answer: ToolAnswer::Allow,
                by: "the person".into(),
            })
            .unwrap();
        assert_eq!(heard.next_line().await.unwrap().unwrap(), "k2 deny");
        assert_eq!(heard.next_line().await.unwrap().unwrap(), "k1 allow");
        let (first, second) = {
            let mut c = lock(&cleared);
            let first = c.take("mcp__everything__echo", &args);
            (first, c.take("mcp__everything__echo", &args))
        };
        assert_eq!(
            first.as_deref(),
            Some("the person"),
            "the allowed call, with its own arguments"
        );
        assert_eq!(second, None, "the denied call is not noted");
        drop(lines_tx);
        let _ = task.await;
    }
}
