//! The runner's link to `bosund`: connect, say hello, resend whatever is not acked, stream new
//! frames, take acks and stop orders, and reconnect with backoff whenever the daemon goes away.
//!
//! The link ends only when the daemon has acked the run's exit, or when no daemon will ever
//! take the run: the daemon refuses the runner outright (it does not know the run), or the run's
//! directory is gone (its state directory was deleted). Then nobody will ever read the output,
//! and the runner ends the program instead of waiting forever. While the daemon is merely away,
//! the runner waits for it, however long that takes.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_protocol::fast;
use bosun_protocol::frame::encode_frame;
use bosun_protocol::runner::{
    DaemonMsg, FlushFailure, LaunchPlan, RunnerMsg, ServerAnswer, ServerAsk, Started, StopOrder,
    TokenAnswer, ToolAnswer, ToolAsk,
};
use bosun_protocol::socket::{self, ReadHalf, WriteHalf};
use bosun_protocol::tls;
use bosun_protocol::{
    ErrorCode, FrameError, FrameReader, FrameWriter, Hello, HelloReply, PROTOCOL_VERSION, Role,
};
use bosun_shared::run::ExitInfo;
use bosun_shared::{RunId, RunToken};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::control::driver::{Asks, Decided, Said, too_large_to_judge};
use crate::outbox::Outbox;

const BACKOFF_FIRST: Duration = Duration::from_millis(50);
/// The longest wait between tries to reach a daemon that is not there (it is back within this).
const BACKOFF_MAX: Duration = Duration::from_millis(500);
/// The longest wait before a new session after sessions that ended soon after they began: a
/// daemon that welcomes the runner and then drops it again and again is not hammered.
const BACKOFF_MAX_SESSIONS: Duration = Duration::from_secs(5);
/// A session that lasted this long was a good one: the next goes on at once after it ends.
const SESSION_HEALTHY: Duration = Duration::from_secs(2);
/// How long a connection over the network may take to be made and secured before it is tried
/// again (a host that drops packets would otherwise hold the link forever).
const TLS_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the runner reaches bosund: its socket on this machine, or its runner listener over the
/// network with mutual TLS (a run placed on another host).
pub enum Dial {
    Local(PathBuf),
    Tls {
        addr: String,
        config: Arc<tokio_rustls::rustls::ClientConfig>,
    },
}

impl Dial {
    fn describe(&self) -> String {
        match self {
            Dial::Local(path) => path.display().to_string(),
            Dial::Tls { addr, .. } => format!("bosund at {addr} (TLS)"),
        }
    }

    async fn connect(&self) -> io::Result<(ReadHalf, WriteHalf)> {
        match self {
            Dial::Local(path) => socket::connect(path).await.map(socket::split),
            Dial::Tls { addr, config } => {
                let connect = async {
                    let tcp = tokio::net::TcpStream::connect(addr.as_str()).await?;
                    tcp.set_nodelay(true)?;
                    let name = tls::server_name().map_err(io::Error::other)?;
                    let stream = tokio_rustls::TlsConnector::from(config.clone())
                        .connect(name, tcp)
                        .await?;
                    Ok(socket::split_any(stream))
                };
                tokio::time::timeout(TLS_CONNECT_TIMEOUT, connect)
                    .await
                    .map_err(|_| {
                        io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("no answer within {}s", TLS_CONNECT_TIMEOUT.as_secs()),
                        )
                    })?
            }
        }
    }
}

/// What the link shares with the rest of the runner.
pub struct LinkState {
    pub outbox: Arc<Mutex<Outbox>>,
    pub wake: Arc<Notify>,
    pub started: Mutex<Option<Started>>,
    pub exit: Mutex<Option<ExitInfo>>,
    pub stops: mpsc::UnboundedSender<StopOrder>,
    /// The CLI's tool calls waiting for bosund, and those answered.
    pub asks: Arc<Mutex<Asks>>,
    /// bosund's decisions, to the control driver.
    pub decisions: mpsc::UnboundedSender<Decided>,
    /// bosun's own lines for the run's log (a call waits for the person).
    pub notes: mpsc::UnboundedSender<String>,
    /// A runner on another host waits for its plan here; `None` once it has it (or never
    /// needed it: a local runner reads it on stdin).
    pub plan: Mutex<Option<oneshot::Sender<LaunchPlan>>>,
    /// The gateway's asks for a server's token anew, by key: where bosund's answers go.
    pub tokens: Waiters<TokenAnswer>,
    /// The gateway's asks of the person for a server, by key: where bosund's answers go.
    pub server_asks: Waiters<ServerAnswer>,
    /// The gateway's own asks about MCP calls, by key: where bosund's answers go (the other
    /// decisions go to the control driver).
    pub judging: Waiters<Judgement>,
}

/// What bosund says of an ask of the gateway's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// It waits for the person.
    Waiting,
    /// Decided, by `by`.
    Decided { answer: ToolAnswer, by: String },
}

/// How long bosund has to first answer an ask (a decision, or that it waits for the person):
/// past it, the ask is withdrawn and what asked fails closed.
pub const FIRST_ANSWER: std::time::Duration = std::time::Duration::from_secs(15);

/// What came of an ask ([`LinkState::judged`]).
pub enum Verdict {
    /// Decided, by `by` (`bosund` when it named nobody).
    Decided { answer: ToolAnswer, by: String },
    /// bosund did not answer within [`FIRST_ANSWER`].
    Unreachable,
    /// The ask was withdrawn before it was decided.
    Withdrawn,
}

/// Where bosund's answers to the gateway's asks of one kind go, by the ask's key.
pub struct Waiters<T>(Mutex<HashMap<String, mpsc::UnboundedSender<T>>>);

impl<T> Default for Waiters<T> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<T> Waiters<T> {
    fn add(&self, key: &str) -> mpsc::UnboundedReceiver<T> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut w) = self.0.lock() {
            w.insert(key.to_string(), tx);
        }
        rx
    }

    /// Where bosund's answers to `key` go, when someone waits for them.
    fn waiter(&self, key: &str) -> Option<mpsc::UnboundedSender<T>> {
        self.0.lock().ok().and_then(|w| w.get(key).cloned())
    }

    /// bosund's answer to `key`, to whoever waits for it.
    fn answer(&self, key: &str, answer: T) {
        if let Some(to) = self.waiter(key) {
            let _ = to.send(answer);
        }
    }

    fn remove(&self, key: &str) {
        if let Ok(mut w) = self.0.lock() {
            w.remove(key);
        }
    }
}

impl LinkState {
    /// Asks bosund for a server's token anew (said again after each reconnect until answered
    /// for good); its answers come on the channel returned.
    pub fn ask_token(
        &self,
        ask: bosun_protocol::runner::TokenAsk,
    ) -> mpsc::UnboundedReceiver<TokenAnswer> {
        let rx = self.tokens.add(&ask.key);
        let key = ask.key.clone();
        if let Err(e) = self.say_until_done(RunnerMsg::Token(ask)) {
            let message = format!("bosun could not ask bosund for the server's token: {e}");
            self.tokens.answer(&key, TokenAnswer::Failed { message });
        }
        rx
    }

    /// Asks bosund about an MCP call the gateway has no decision for, as the control driver
    /// asks about the CLI's (said again after each reconnect until decided); bosund's answers
    /// come on the channel returned.
    pub fn ask_tool(&self, ask: ToolAsk) -> mpsc::UnboundedReceiver<Judgement> {
        let rx = self.judging.add(&ask.key);
        let key = ask.key.clone();
        let said = match self.asks.lock() {
            Ok(mut a) => a.ask(ask),
            Err(_) => Ok(()),
        };
        match said {
            Ok(()) => self.wake.notify_one(),
            // Nobody can judge a call that cannot be told to bosund: denied, failing closed.
            Err(e) => self.judging.answer(
                &key,
                Judgement::Decided {
                    answer: too_large_to_judge(&e),
                    by: "bosun-runner".into(),
                },
            ),
        }
        rx
    }

    /// The gateway no longer waits for its ask `key`: its decision reached the call
    /// (`delivered`), or it gave up on it (withdrawn: bosund stops waiting for the person).
    /// Asks bosund about `ask` and waits for its verdict: bosund must first answer within
    /// [`FIRST_ANSWER`] (a decision, or that the ask waits for the person), then the wait is
    /// as long as the decision takes. The ask is done with (delivered, or withdrawn when
    /// bosund never answered) before this returns; a withdrawn one (`Withdrawn`) is the
    /// caller's.
    pub async fn judged(&self, ask: ToolAsk) -> Verdict {
        let key = ask.key.clone();
        let mut answers = self.ask_tool(ask);
        let mut wait = Some(FIRST_ANSWER);
        loop {
            let next = match wait {
                Some(w) => tokio::time::timeout(w, answers.recv()).await,
                None => Ok(answers.recv().await),
            };
            match next {
                Ok(Some(Judgement::Waiting)) => wait = None,
                Ok(Some(Judgement::Decided { answer, by })) => {
                    self.tool_done(&key, true);
                    let by = if by.is_empty() { "bosund".into() } else { by };
                    return Verdict::Decided { answer, by };
                }
                Err(_) => {
                    self.tool_done(&key, false);
                    return Verdict::Unreachable;
                }
                // Nobody waits for the answer any more (the call was withdrawn, or the link
                // is gone with the run).
                Ok(None) => return Verdict::Withdrawn,
            }
        }
    }

    pub fn tool_done(&self, key: &str, delivered: bool) {
        self.judging.remove(key);
        if let Ok(mut a) = self.asks.lock() {
            a.drop_ask(key);
            let key = key.to_string();
            a.push(if delivered {
                RunnerMsg::Delivered { key }
            } else {
                RunnerMsg::Withdrawn { key }
            });
        }
        self.wake.notify_one();
    }

    /// Asks the person, through bosund, what a server wants of them (said again after each
    /// reconnect until answered for good); bosund's answers come on the channel returned.
    pub fn ask_person(&self, ask: ServerAsk) -> mpsc::UnboundedReceiver<ServerAnswer> {
        let rx = self.server_asks.add(&ask.key);
        let key = ask.key.clone();
        if let Err(e) = self.say_until_done(RunnerMsg::ServerAsk(ask)) {
            let message = format!("bosun could not put the server's request to the person: {e}");
            self.server_asks
                .answer(&key, ServerAnswer::Cancel { message });
        }
        rx
    }

    /// Says `msg` to bosund until it is answered for good; refused when it cannot fit.
    fn say_until_done(&self, msg: RunnerMsg) -> Result<(), FrameError> {
        if let Ok(mut a) = self.asks.lock() {
            a.gateway(msg)?;
        }
        self.wake.notify_one();
        Ok(())
    }

    /// The gateway no longer waits for its ask `key` (answered, or given up).
    pub fn gateway_done(&self, key: &str) {
        self.tokens.remove(key);
        self.server_asks.remove(key);
        if let Ok(mut a) = self.asks.lock() {
            a.drop_gateway(key);
        }
    }
}

/// How the link ended.
#[derive(Debug)]
pub enum LinkEnd {
    /// The daemon recorded the exit.
    ExitAcked,
    /// The daemon refused this runner; nothing it sends will be kept.
    Refused(String),
}

enum SessionEnd {
    ExitAcked,
    Lost(String),
    Refused(String),
}

pub async fn run_link(
    dial: Dial,
    run_dir: PathBuf,
    run_id: RunId,
    token: RunToken,
    state: Arc<LinkState>,
) -> LinkEnd {
    let mut backoff = BACKOFF_FIRST;
    let mut last_problem = String::new();
    loop {
        // Sessions that keep ending soon after they begin back off further than tries to
        // connect do: whatever ends them (a daemon that drops the runner) will not mend itself
        // within a few milliseconds.
        let mut most = BACKOFF_MAX;
        match dial.connect().await {
            Ok((r, w)) => {
                let began = tokio::time::Instant::now();
                let end = session(r, w, run_id, &token, &state).await;
                if began.elapsed() >= SESSION_HEALTHY {
                    backoff = BACKOFF_FIRST;
                } else {
                    most = BACKOFF_MAX_SESSIONS;
                }
                match end {
                    SessionEnd::ExitAcked => return LinkEnd::ExitAcked,
                    SessionEnd::Refused(why) => {
                        // Nobody will ever keep this run's output or record its end: end the
                        // program rather than leave it running unsupervised.
                        let _ = state.stops.send(StopOrder {
                            reason: format!("bosund refused the run's runner: {why}"),
                            immediate: false,
                        });
                        return LinkEnd::Refused(why);
                    }
                    SessionEnd::Lost(why) => {
                        if why != last_problem {
                            say!("bosun-runner: lost the daemon ({why}); reconnecting");
                            last_problem = why;
                        }
                    }
                }
            }
            Err(_) if !run_dir.exists() => {
                // The state directory was deleted: no daemon will ever come back for this run.
                let why = format!("the run's directory {} is gone", run_dir.display());
                let _ = state.stops.send(StopOrder {
                    reason: why.clone(),
                    immediate: false,
                });
                return LinkEnd::Refused(why);
            }
            Err(e) => {
                let why = format!("cannot reach {}: {e}", dial.describe());
                if why != last_problem {
                    say!("bosun-runner: {why}; retrying");
                    last_problem = why;
                }
            }
        }
        tokio::time::sleep(backoff.min(most)).await;
        backoff = (backoff * 2).min(most);
    }
}

async fn session(
    r: ReadHalf,
    w: WriteHalf,
    run_id: RunId,
    token: &RunToken,
    state: &LinkState,
) -> SessionEnd {
    let mut writer = FrameWriter::new(w);
    let mut reader = FrameReader::new(r);
    let hello = Hello {
        binary_log: false,
        client: Default::default(),
        protocol_version: PROTOCOL_VERSION,
        role: Role::Runner {
            run_id,
            token: token.clone(),
            keeps_unsaved: true,
        },
    };
    if let Err(e) = writer.send_now(&hello).await {
        return SessionEnd::Lost(e.to_string());
    }
    let welcome = match reader.read::<HelloReply>().await {
        Ok(Some(HelloReply::Welcome(w))) => w,
        Ok(Some(HelloReply::Refused(e))) => {
            // The daemon does not know this run, or will never talk to this runner: nothing it
            // sends will be kept. Any other refusal may pass (a daemon starting up).
            return match e.code {
                ErrorCode::NotFound | ErrorCode::Unauthorized | ErrorCode::ProtocolVersion => {
                    SessionEnd::Refused(e.message)
                }
                ErrorCode::BadRequest
                | ErrorCode::Ambiguous
                | ErrorCode::Conflict
                | ErrorCode::BadFrame
                | ErrorCode::FrameTooLarge
                | ErrorCode::ShuttingDown
                | ErrorCode::Unavailable
                | ErrorCode::Internal => SessionEnd::Lost(e.message),
            };
        }
        Ok(None) => return SessionEnd::Lost("the daemon closed the connection".into()),
        Err(e) => return SessionEnd::Lost(e.to_string()),
    };
    if let Ok(mut outbox) = state.outbox.lock()
        && let Err(e) = outbox.ack(welcome.acked_seq)
    {
        say!("bosun-runner: spool: {e}");
    }
    if let Some(stop) = welcome.stop {
        let _ = state.stops.send(stop);
    }
    let wants_plan = state.plan.lock().map(|p| p.is_some()).unwrap_or(false);
    if wants_plan && let Err(e) = writer.send_now(&RunnerMsg::WantPlan).await {
        return SessionEnd::Lost(e.to_string());
    }

    let (msgs_tx, mut msgs) = mpsc::unbounded_channel();
    let reader_task = tokio::spawn(read_daemon(reader, msgs_tx));
    let end = pump(
        state,
        &mut writer,
        &mut msgs,
        welcome.started_recorded,
        welcome.binary_output,
        welcome.keeps_unsaved,
    )
    .await;
    reader_task.abort();
    end
}

/// Sends what is due and handles what the daemon says, until the session ends. Output goes in
/// binary frames, or as JSON to a daemon of before them (`binary_output` false); decisions kept
/// unsaved only to a daemon that takes them back (`unsaved_taken`).
async fn pump(
    state: &LinkState,
    writer: &mut FrameWriter<WriteHalf>,
    msgs: &mut mpsc::UnboundedReceiver<io::Result<DaemonMsg>>,
    started_acked: bool,
    binary_output: bool,
    unsaved_taken: bool,
) -> SessionEnd {
    let mut told = Told {
        unsaved_taken,
        next_seq: state.outbox.lock().map(|o| o.acked() + 1).unwrap_or(1),
        started_acked,
        started_sent: false,
        exit_sent: false,
        logged_said: 0,
        held_said: None,
        flush_said: None,
        said: Said::default(),
    };
    loop {
        if let Err(e) = told.send_due(state, writer, binary_output).await {
            return SessionEnd::Lost(e.to_string());
        }
        tokio::select! {
            msg = msgs.recv() => {
                if let Some(end) = told.hear(state, msg) {
                    return end;
                }
            }
            _ = state.wake.notified() => {}
        }
    }
}

/// What a session has told bosund (and heard back of the start), so that each thing is said
/// once.
struct Told {
    /// The seq of the next output frame to send.
    next_seq: u64,
    /// bosund has acknowledged the start (this session or an earlier one).
    started_acked: bool,
    /// This session has sent the start.
    started_sent: bool,
    /// This session has sent the end.
    exit_sent: bool,
    // How far this session has told bosund the runner's own log file goes, and whether output
    // is held.
    logged_said: u64,
    held_said: Option<Option<String>>,
    flush_said: Option<Option<FlushFailure>>,
    // What this session has said of the asks: each once (a new session says them all again;
    // bosund takes them as the same ones).
    said: Said,
    /// This session's bosund takes back the decisions told before they were saved.
    unsaved_taken: bool,
}

impl Told {
    /// Sends what is due, in order: the start, the output and how far the log goes, the asks
    /// not said yet, how output stands, the end once all output is acknowledged; then flushes.
    /// The output goes before the asks: what a CLI wrote before a tool call it asks (what its
    /// model used, for the run's budget) reaches bosund first.
    async fn send_due(
        &mut self,
        state: &LinkState,
        writer: &mut FrameWriter<WriteHalf>,
        binary_output: bool,
    ) -> Result<(), FrameError> {
        // The start first, so the daemon sees the program running before its output.
        if !self.started_acked && !self.started_sent {
            let started = state.started.lock().ok().and_then(|s| s.clone());
            if let Some(s) = started {
                writer.send(&RunnerMsg::Started(s)).await?;
                self.started_sent = true;
            }
        }
        // The end is looked at before how far the log goes: whatever was written before the
        // end was set is then in what `Logged` says, which goes first.
        let exit = state.exit.lock().ok().and_then(|e| e.clone());
        self.send_output(state, writer, binary_output).await?;
        self.send_logged(state, writer).await?;
        let unsaid = match state.asks.lock() {
            Ok(a) => a.unsaid(&mut self.said, self.unsaved_taken),
            Err(_) => Vec::new(),
        };
        for msg in unsaid {
            match encode_frame(&msg) {
                Ok(frame) => writer.send_encoded(&frame).await?,
                // What is said is checked to fit where it is made; one that still does not is
                // dropped here, once a session, and never fails the link.
                Err(e) => say!("bosun-runner: a message to bosund is not sent: {e}"),
            }
        }
        self.send_log_state(state, writer).await?;
        if !self.exit_sent {
            let all_acked = state.outbox.lock().map(|o| o.all_acked()).unwrap_or(false);
            if let (true, Some(exit)) = (all_acked, exit) {
                let frame = encode_frame(&RunnerMsg::Exited(exit)).unwrap_or_default();
                writer.send_encoded(&frame).await?;
                self.exit_sent = true;
            }
        }
        writer.flush().await
    }

    /// Sends the output frames of the outbox not sent yet: binary frames, or JSON to a daemon
    /// of before them (`binary_output` false).
    async fn send_output(
        &mut self,
        state: &LinkState,
        writer: &mut FrameWriter<WriteHalf>,
        binary_output: bool,
    ) -> Result<(), FrameError> {
        loop {
            let frame = match state.outbox.lock() {
                Ok(o) => o.frame(self.next_seq),
                Err(_) => Ok(None),
            };
            match frame {
                Ok(Some(f)) => {
                    if binary_output {
                        writer.send_encoded(&f).await?;
                    } else {
                        writer.send_encoded(&fast::output_frame_as_json(&f)).await?;
                    }
                    self.next_seq += 1;
                }
                Ok(None) => return Ok(()),
                Err(e) => {
                    say!("bosun-runner: spool: {e}");
                    return Ok(());
                }
            }
        }
    }

    /// Tells bosund, where it changed, how far the runner's own log file goes.
    async fn send_logged(
        &mut self,
        state: &LinkState,
        writer: &mut FrameWriter<WriteHalf>,
    ) -> Result<(), FrameError> {
        let logged = state.outbox.lock().ok().and_then(|o| o.logged());
        if let Some(upto) = logged.filter(|&l| l > self.logged_said) {
            writer.send(&RunnerMsg::Logged { upto }).await?;
            self.logged_said = upto;
        }
        Ok(())
    }

    /// Tells bosund, where it changed, whether output is held, and whether writing the log
    /// out failed.
    async fn send_log_state(
        &mut self,
        state: &LinkState,
        writer: &mut FrameWriter<WriteHalf>,
    ) -> Result<(), FrameError> {
        let held = state.outbox.lock().ok().and_then(|o| o.held_output());
        let held_now = held.as_ref().map(|h| h.error.clone());
        if self.held_said.as_ref() != Some(&held_now)
            && (held.is_some() || self.held_said.is_some())
        {
            writer.send(&RunnerMsg::OutputHeld { held }).await?;
            self.held_said = Some(held_now);
        }
        let failure = state
            .outbox
            .lock()
            .ok()
            .and_then(|o| o.flush_failure().cloned());
        if self.flush_said.as_ref() != Some(&failure)
            && (failure.is_some() || self.flush_said.is_some())
        {
            let msg = RunnerMsg::LogFlush {
                failed: failure.clone(),
            };
            writer.send(&msg).await?;
            self.flush_said = Some(failure);
        }
        Ok(())
    }

    /// Handles what the daemon says (`None`: it closed the connection); the answer is how the
    /// session ends, when it does.
    fn hear(
        &mut self,
        state: &LinkState,
        msg: Option<io::Result<DaemonMsg>>,
    ) -> Option<SessionEnd> {
        match msg {
            Some(Ok(DaemonMsg::Ack { seq })) => {
                if let Ok(mut o) = state.outbox.lock()
                    && let Err(e) = o.ack(seq)
                {
                    say!("bosun-runner: spool: {e}");
                }
            }
            Some(Ok(DaemonMsg::StartedAck)) => self.started_acked = true,
            Some(Ok(DaemonMsg::Stop(order))) => {
                let _ = state.stops.send(order);
            }
            Some(Ok(DaemonMsg::ExitAck)) => return Some(SessionEnd::ExitAcked),
            Some(Ok(DaemonMsg::Decided {
                key,
                answer,
                by,
                unsaved,
            })) => {
                if unsaved && let Ok(mut a) = state.asks.lock() {
                    // Kept before the call goes on, in case this bosund goes away unsaved.
                    a.unsaved(&key, &answer, &by);
                    self.said.told_unsaved(&key);
                }
                match state.judging.waiter(&key) {
                    Some(to) => {
                        let _ = to.send(Judgement::Decided { answer, by });
                    }
                    None => {
                        let _ = state.decisions.send(Decided { key, answer, by });
                    }
                }
            }
            Some(Ok(DaemonMsg::Saved { key })) => {
                if let Ok(mut a) = state.asks.lock() {
                    a.saved(&key);
                }
            }
            Some(Ok(DaemonMsg::Waiting { key, note })) => {
                if let Some(to) = state.judging.waiter(&key) {
                    let _ = to.send(Judgement::Waiting);
                }
                // Said again after a reconnect without a note: the log has it already.
                if !note.is_empty() {
                    let _ = state.notes.send(note);
                }
            }
            Some(Ok(DaemonMsg::Token { key, answer })) => state.tokens.answer(&key, answer),
            Some(Ok(DaemonMsg::ServerAnswer { key, answer })) => {
                state.server_asks.answer(&key, answer);
            }
            Some(Ok(DaemonMsg::Plan(plan))) => {
                let waiting = state.plan.lock().ok().and_then(|mut p| p.take());
                if let Some(tx) = waiting {
                    let _ = tx.send(*plan);
                }
            }
            Some(Err(e)) => return Some(SessionEnd::Lost(e.to_string())),
            None => return Some(SessionEnd::Lost("the daemon closed the connection".into())),
        }
        None
    }
}

/// Reads the daemon's messages into a channel, so that the pump never cancels a half-read frame.
async fn read_daemon(
    mut reader: FrameReader<ReadHalf>,
    tx: mpsc::UnboundedSender<io::Result<DaemonMsg>>,
) {
    loop {
        let msg = match reader.read::<DaemonMsg>().await {
            Ok(Some(m)) => Ok(m),
            Ok(None) => return,
            Err(e) => Err(io::Error::other(e.to_string())),
        };
        let failed = msg.is_err();
        if tx.send(msg).is_err() || failed {
            return;
        }
    }
}
