//! Session: one per connection. It takes the hello, then serves a UI (requests, log
//! subscriptions, run events) or links a runner to its RunActor.
//!
//! A frame that is not valid JSON of the expected shape is answered with a plain-words error —
//! under the request's id when its JSON has one, quoting a few hundred bytes of it at most —
//! and the connection goes on; a frame over the size limit is answered and the connection is
//! closed (its body is never read). Neither disturbs any other connection.

use bosun_runs::record::RunReads;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bosun_protocol::call::Reply;
use bosun_protocol::runner::{DaemonMsg, RunnerMsg};
use bosun_protocol::runs::{Following, Unfollow};
use bosun_protocol::socket::{self, ReadHalf, WriteHalf};
use bosun_protocol::ui::{
    ClientFrame, Event, FollowParams, Outbound, Request, ResponseResult, ServerFrame, UnreadFrame,
};
use bosun_protocol::{
    ErrorCode, FrameError, FrameReader, FrameWriter, Hello, HelloReply, LogBytes, PROTOCOL_VERSION,
    Role, Welcome, WireError, fast,
};
use bosun_runs::follow::{FollowSpec, LogItem, LogSink, blocking, follow};
use bosun_runs::live::LiveEntry;
use bosun_runs::log_hub::LogHub;
use bosun_runs::run_actor::RunMsg;
use bosun_shared::{RunId, RunToken};
use interprocess::local_socket::tokio::Stream;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::api;
use crate::ctx::DaemonCtx;
use crate::remote::TlsConn;
use crate::requests::{self, Routed};

/// How long a follower waits for a run that is not over to get its actor back after bosund
/// starts (its runner has the recovery grace to reconnect; past that it is recorded lost).
const RECOVERY_WAIT: Duration = Duration::from_secs(30);

/// How long a new connection has to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Frames waiting for a slow UI before producers (log followers) wait too.
const UI_OUTBOX: usize = 256;

pub struct SessionArgs {
    pub ctx: Arc<DaemonCtx>,
    pub stream: Conn,
    pub id: u64,
}

/// A connection: on the local socket (a UI, or a runner on this machine), or over the network
/// with mutual TLS (only the runner of the run its certificate was issued for).
pub enum Conn {
    Local(Stream),
    Tls(TlsConn),
}

pub enum SessionMsg {
    /// A UI's request.
    Request { id: u64, body: Box<Request> },
    /// A UI sent a frame that is not a request it can read.
    BadFrame(UnreadFrame),
    /// A UI sent a frame over the limit; the connection is closed after the answer.
    TooLarge { detail: String },
    /// A log subscription ended.
    FollowEnded { sub: u64 },
    /// The connection closed.
    Closed,
}

pub struct Session;

pub struct SessionState {
    ctx: Arc<DaemonCtx>,
    id: u64,
    stream: Option<Conn>,
    /// For a connection over the network: its client certificate's SHA-256.
    remote_cert: Option<String>,
    mode: Mode,
    /// The reader (and for a runner, the writer): ended with the session.
    tasks: Vec<JoinHandle<()>>,
    /// Tasks working for one request each: log subscriptions, looks at MCP servers. Aborted
    /// when the session ends.
    follows: HashMap<u64, JoinHandle<()>>,
    /// The UI reads log events in their binary form (its hello said so).
    binary_log: bool,
    /// Which UI it is (its hello said so): who its requests are in the audit log.
    client: bosun_protocol::UiClient,
}

enum Mode {
    Handshake,
    Ui {
        out: mpsc::Sender<Outbound>,
        events: mpsc::UnboundedSender<ServerFrame>,
    },
    Runner {
        run_id: RunId,
        actor: ActorRef<RunMsg>,
        link_id: u64,
    },
}

impl SessionState {
    /// The session's span: its id, and for a runner's link, the run.
    fn span(&self) -> tracing::Span {
        match &self.mode {
            Mode::Runner { run_id, .. } => {
                tracing::info_span!("session", session = self.id, run_id = %run_id)
            }
            Mode::Handshake | Mode::Ui { .. } => tracing::info_span!("session", session = self.id),
        }
    }
}

impl Actor for Session {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<SessionMsg>,
        args: SessionArgs,
    ) -> Result<SessionState, ActorProcessingErr> {
        Ok(SessionState {
            ctx: args.ctx,
            id: args.id,
            stream: Some(args.stream),
            remote_cert: None,
            mode: Mode::Handshake,
            tasks: Vec::new(),
            follows: HashMap::new(),
            binary_log: false,
            client: Default::default(),
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<SessionMsg>,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        let Some(stream) = state.stream.take() else {
            return Ok(());
        };
        let (r, w) = match stream {
            Conn::Local(stream) => socket::split(stream),
            Conn::Tls(conn) => {
                debug!(session = state.id, peer = %conn.peer, "runner connection over TLS");
                state.remote_cert = Some(conn.cert_digest);
                socket::split_any(*conn.stream)
            }
        };
        let mut reader = FrameReader::new(r);
        let mut writer = FrameWriter::new(w);
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, reader.read::<Hello>()).await {
            Err(_) => {
                debug!(session = state.id, "no hello in time");
                myself.stop(None);
                return Ok(());
            }
            Ok(Ok(Some(h))) => h,
            Ok(Ok(None)) => {
                myself.stop(None);
                return Ok(());
            }
            Ok(Err(e)) => {
                let code = match e {
                    FrameError::TooLarge { .. } => ErrorCode::FrameTooLarge,
                    FrameError::Malformed { .. } | FrameError::Io(_) | FrameError::Truncated => {
                        ErrorCode::BadFrame
                    }
                };
                let err = WireError::new(code, format!("the first frame must be a hello: {e}"));
                let _ = writer.send_now(&HelloReply::Refused(err)).await;
                myself.stop(None);
                return Ok(());
            }
        };
        if hello.protocol_version != PROTOCOL_VERSION {
            let err = WireError::new(
                ErrorCode::ProtocolVersion,
                format!(
                    "this bosund speaks protocol {PROTOCOL_VERSION} and the client speaks protocol {}; use a bosun and a bosund of the same version (`bosun daemon stop` ends the running daemon so the next command starts the installed one)",
                    hello.protocol_version
                ),
            );
            warn!(
                session = state.id,
                client = hello.protocol_version,
                "refused a client of another protocol version"
            );
            let _ = writer.send_now(&HelloReply::Refused(err)).await;
            myself.stop(None);
            return Ok(());
        }
        match hello.role {
            Role::Ui if state.remote_cert.is_some() => {
                let err = WireError::new(
                    ErrorCode::Unauthorized,
                    "only a run's runner may connect over the network; use bosun on this machine",
                );
                let _ = writer.send_now(&HelloReply::Refused(err)).await;
                myself.stop(None);
            }
            Role::Ui => {
                state.binary_log = hello.binary_log;
                state.client = hello.client;
                state.start_ui(&myself, reader, writer).await
            }
            Role::Runner {
                run_id,
                token,
                keeps_unsaved,
            } => {
                state
                    .start_runner(&myself, reader, writer, run_id, token, keeps_unsaved)
                    .await
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SessionMsg>,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        for (_, t) in state.follows.drain() {
            t.abort();
        }
        for t in state.tasks.drain(..) {
            t.abort();
        }
        // A UI's writer is not aborted: once the session's senders are dropped below, it sends
        // what is still queued (such as the error that closed the connection) and ends.
        match std::mem::replace(&mut state.mode, Mode::Handshake) {
            Mode::Runner {
                run_id,
                actor,
                link_id,
            } => {
                debug!(session = state.id, run_id = %run_id, "runner unlinked");
                let _ = actor.cast(RunMsg::Detached { link_id });
            }
            Mode::Ui { .. } => {
                state
                    .ctx
                    .events
                    .cast(crate::events::EventsMsg::Unsubscribe { session: state.id });
            }
            Mode::Handshake => {}
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SessionMsg>,
        msg: SessionMsg,
        state: &mut SessionState,
    ) -> Result<(), ActorProcessingErr> {
        bosun_kit::supervision::in_span(state.span(), async move {
            match msg {
                SessionMsg::Request { id, body } => state.on_request(&myself, id, *body).await,
                SessionMsg::BadFrame(unread) => {
                    // A request whose id could be read is answered under it, so that its client
                    // knows which of its requests was not done; any other frame with an error
                    // of its own.
                    let err = WireError::new(ErrorCode::BadFrame, unread.to_string());
                    let frame = match unread.id {
                        Some(id) => ServerFrame::Response {
                            id,
                            result: ResponseResult::Err(err),
                        },
                        None => ServerFrame::Error(err),
                    };
                    state.send(frame).await;
                }
                SessionMsg::TooLarge { detail } => {
                    let err = WireError::new(
                        ErrorCode::FrameTooLarge,
                        format!("{detail}; the connection is closed"),
                    );
                    state.send(ServerFrame::Error(err)).await;
                    myself.stop(None);
                }
                SessionMsg::FollowEnded { sub } => {
                    state.follows.remove(&sub);
                }
                SessionMsg::Closed => myself.stop(None),
            }
            Ok(())
        })
        .await
    }
}

impl SessionState {
    async fn send(&self, frame: ServerFrame) {
        if let Mode::Ui { out, .. } = &self.mode {
            let _ = out.send(frame.into()).await;
        }
    }

    async fn start_ui(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        mut reader: FrameReader<ReadHalf>,
        mut writer: FrameWriter<WriteHalf>,
    ) {
        if writer
            .send_now(&HelloReply::Welcome(welcome(0, None, false)))
            .await
            .is_err()
        {
            myself.stop(None);
            return;
        }
        let (out, out_rx) = mpsc::channel(UI_OUTBOX);
        let (events, events_rx) = mpsc::unbounded_channel();
        followers().spawn(write_ui(writer, out_rx, events_rx));
        let me = myself.clone();
        self.tasks.push(tokio::spawn(async move {
            loop {
                let msg = match reader.read_raw().await {
                    Ok(Some(body)) => match ClientFrame::decode(body) {
                        Ok(ClientFrame::Request { id, body }) => SessionMsg::Request {
                            id,
                            body: Box::new(body),
                        },
                        Err(unread) => SessionMsg::BadFrame(unread),
                    },
                    Ok(None) => SessionMsg::Closed,
                    Err(e @ FrameError::TooLarge { .. }) => SessionMsg::TooLarge {
                        detail: e.to_string(),
                    },
                    Err(FrameError::Malformed { detail }) => SessionMsg::BadFrame(UnreadFrame {
                        id: None,
                        method: None,
                        detail,
                    }),
                    Err(FrameError::Io(_) | FrameError::Truncated) => SessionMsg::Closed,
                };
                let last = matches!(msg, SessionMsg::Closed | SessionMsg::TooLarge { .. });
                if me.cast(msg).is_err() || last {
                    return;
                }
            }
        }));
        self.mode = Mode::Ui { out, events };
    }

    /// The live run a runner dials in for, when it may link to it: the run is live, placed
    /// (over the network), and the certificate and token are the ones issued for it; else the
    /// refusal the runner is sent.
    async fn admit(&self, run_id: RunId, token: &RunToken) -> Result<LiveEntry, HelloReply> {
        let Some(entry) = self.ctx.live.get(run_id) else {
            // Not live: either not recovered yet (the runner must try again), or over or
            // unknown (the runner must give up).
            let stored = blocking(&self.ctx.store, move |s| s.run(run_id)).await;
            let reply = match stored {
                Ok(Some(rec)) if !rec.state.is_final() => refused(
                    ErrorCode::Unavailable,
                    format!("bosund is still recovering run {run_id}; try again"),
                ),
                Ok(Some(_)) | Ok(None) => refused(
                    ErrorCode::NotFound,
                    format!("run {run_id} is not running under this bosund"),
                ),
                Err(e) => refused(
                    ErrorCode::Unavailable,
                    format!("bosund could not read run {run_id}: {e}"),
                ),
            };
            return Err(reply);
        };
        // Over the network, the certificate must be the very one issued for this run. A runner
        // that dials in before its submission is recorded (a job that starts at once) is told
        // to try again.
        if self.remote_cert.is_some() && entry.record.placed.is_none() {
            let msg = format!("bosund is still placing run {run_id}; try again");
            return Err(refused(ErrorCode::Unavailable, msg));
        }
        if let Some(cert) = &self.remote_cert
            && entry.record.placed.as_ref().map(|p| &p.cert_digest) != Some(cert)
        {
            warn!(run_id = %run_id, "a runner over the network presented another run's certificate");
            let msg = format!("this certificate was not issued for run {run_id}");
            return Err(refused(ErrorCode::Unauthorized, msg));
        }
        if entry.record.token_digest != token.digest() {
            warn!(run_id = %run_id, "a runner presented the wrong token");
            let msg = format!("the token for run {run_id} is wrong");
            return Err(refused(ErrorCode::Unauthorized, msg));
        }
        Ok(entry)
    }

    async fn start_runner(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        mut reader: FrameReader<ReadHalf>,
        mut writer: FrameWriter<WriteHalf>,
        run_id: RunId,
        token: RunToken,
        keeps_unsaved: bool,
    ) {
        let entry = match self.admit(run_id, &token).await {
            Ok(entry) => entry,
            Err(reply) => {
                let _ = writer.send_now(&reply).await;
                myself.stop(None);
                return;
            }
        };
        let (tx, rx) = mpsc::unbounded_channel::<DaemonMsg>();
        let attached = match ractor::call!(entry.actor, |reply| RunMsg::Attach {
            tx,
            token,
            keeps_unsaved,
            reply
        }) {
            Ok(a) => a,
            Err(_) => {
                let msg = format!("run {run_id} is not running under this bosund");
                let _ = writer.send_now(&refused(ErrorCode::NotFound, msg)).await;
                myself.stop(None);
                return;
            }
        };
        let hello = HelloReply::Welcome(welcome(
            attached.acked_seq,
            attached.stop.clone(),
            attached.started_recorded,
        ));
        if writer.send_now(&hello).await.is_err() {
            let _ = entry.actor.cast(RunMsg::Detached {
                link_id: attached.link_id,
            });
            myself.stop(None);
            return;
        }
        self.tasks.push(tokio::spawn(write_runner(writer, rx)));
        let (actor, link_id, hub) = (entry.actor.clone(), attached.link_id, entry.hub.clone());
        let me = myself.clone();
        self.tasks.push(tokio::spawn(async move {
            loop {
                // Backpressure: while too much output waits for the store, leave it in the
                // runner's outbox rather than in the daemon's memory.
                hub.room().await;
                match reader.read::<RunnerMsg>().await {
                    Ok(Some(msg)) => {
                        if actor.cast(RunMsg::FromRunner { link_id, msg }).is_err() {
                            // The run's actor is gone (restarting): close, and the runner
                            // reconnects to its successor.
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        warn!(run_id = %run_id, error = %e, "a runner sent something unreadable; closing its link");
                        break;
                    }
                }
            }
            let _ = me.cast(SessionMsg::Closed);
        }));
        self.mode = Mode::Runner {
            run_id,
            actor: entry.actor,
            link_id,
        };
        debug!(session = self.id, run_id = %run_id, "runner linked");
    }

    async fn on_request(&mut self, myself: &ActorRef<SessionMsg>, id: u64, body: Request) {
        let Mode::Ui { out, events } = &self.mode else {
            return;
        };
        let (out, events) = (out.clone(), events.clone());
        // What the request changes is the UI's in the audit log.
        let who = crate::audit::Who::Ui(self.client);
        let result = match requests::route(&self.ctx, body) {
            Routed::Now(answer) => crate::audit::as_who(who, answer).await.map_err(|f| f.0),
            // Looking at an MCP server can take minutes (a first npx download): it runs as a
            // task of the session's, ended (with the server's process group) if the client goes.
            Routed::Task(answer) => {
                let me = myself.clone();
                let task = tokio::spawn(async move {
                    let result = match crate::audit::as_who(who, answer).await {
                        Ok(r) => ResponseResult::Ok(r),
                        Err(e) => ResponseResult::Err(e.0),
                    };
                    let _ = out.send(ServerFrame::Response { id, result }.into()).await;
                    let _ = me.cast(SessionMsg::FollowEnded { sub: id });
                });
                self.follows.insert(id, task);
                return;
            }
            Routed::Follow(p) => match self.follow(myself, id, p, &out).await {
                Ok(()) => return,
                Err(e) => Err(e),
            },
            Routed::Unfollow(Unfollow { sub }) => {
                if let Some(t) = self.follows.remove(&sub) {
                    t.abort();
                }
                Ok(().into_response())
            }
            Routed::SubscribeRuns => {
                self.ctx.events.cast(crate::events::EventsMsg::Subscribe {
                    session: self.id,
                    tx: events,
                });
                Ok(().into_response())
            }
        };
        let result = match result {
            Ok(r) => ResponseResult::Ok(r),
            Err(e) => ResponseResult::Err(e),
        };
        let _ = out.send(ServerFrame::Response { id, result }.into()).await;
    }

    /// Opens a log subscription: answers [`Following`] first, then a task of the session's
    /// sends the log. An error is the answer still to send.
    async fn follow(
        &mut self,
        myself: &ActorRef<SessionMsg>,
        id: u64,
        p: FollowParams,
        out: &mpsc::Sender<Outbound>,
    ) -> Result<(), WireError> {
        let run = api::runs::resolve(&self.ctx, &p.run).await?;
        let view = api::runs::run_view(&self.ctx, run).await?;
        // A pruned log is said to be so, in words, to every reader (the CLI, the web UI's
        // stream, chunks and download), rather than read as a damaged one.
        if let Some(pruned) = &view.log_pruned {
            return Err(WireError::not_found(pruned.words(&view.short_id)));
        }
        let spec = FollowSpec {
            run,
            from_seq: p.from_seq,
            follow: p.follow,
            stream: p.stream,
            direct: p.direct,
        };
        let sink = FrameSink {
            sub: id,
            binary: self.binary_log,
            out: out.clone(),
        };
        // The answer goes out before any of the subscription's events.
        let following = Following {
            sub: id,
            run: Box::new(view),
            log_file: p.direct.then(|| self.ctx.store.log_path(run)),
        };
        let answer = ServerFrame::Response {
            id,
            result: ResponseResult::Ok(following.into_response()),
        };
        if out.send(answer.into()).await.is_err() {
            return Ok(());
        }
        let store = self.ctx.store.clone();
        let me = myself.clone();
        let ctx = self.ctx.clone();
        let task = followers().spawn(async move {
            let hub = live_hub(&ctx, run).await;
            if let Err(e) = follow(store, hub, spec, sink).await {
                warn!(run_id = %run, error = %e, "following a log failed");
            }
            let _ = me.cast(SessionMsg::FollowEnded { sub: id });
        });
        self.follows.insert(id, task);
        Ok(())
    }
}

/// A log subscription's items as its UI's frames: each chunk as a `Log` event (binary when the
/// UI reads them so, its bytes not copied), then `LogLagged`, `LogProgress`, `LogEnd` or
/// `LogFailed`, all under the subscription's id.
struct FrameSink {
    sub: u64,
    binary: bool,
    out: mpsc::Sender<Outbound>,
}

impl LogSink for FrameSink {
    async fn send(&self, item: LogItem) -> bool {
        let sub = self.sub;
        let frame = match item {
            LogItem::Chunk(c) if self.binary => Outbound::Split {
                head: fast::log_event_head(sub, c.seq, c.stream, c.at, c.data.len()),
                chunk: c,
            },
            LogItem::Chunk(c) => Outbound::Frame(ServerFrame::Event(Event::Log {
                sub,
                seq: c.seq,
                stream: c.stream,
                at: c.at,
                data: LogBytes(c.data.clone()),
            })),
            LogItem::Lagged { resume_from } => {
                ServerFrame::Event(Event::LogLagged { sub, resume_from }).into()
            }
            LogItem::Progress { upto } => {
                ServerFrame::Event(Event::LogProgress { sub, upto }).into()
            }
            LogItem::End { last_seq, run } => ServerFrame::Event(Event::LogEnd {
                sub,
                last_seq,
                run: Box::new(crate::api::views::run_view(&run, last_seq)),
            })
            .into(),
            LogItem::Failed { last_seq, message } => ServerFrame::Event(Event::LogFailed {
                sub,
                last_seq,
                message,
            })
            .into(),
        };
        self.out.send(frame).await.is_ok()
    }
}

fn welcome(
    acked_seq: u64,
    stop: Option<bosun_protocol::runner::StopOrder>,
    started_recorded: bool,
) -> Welcome {
    Welcome {
        protocol_version: PROTOCOL_VERSION,
        daemon_version: env!("CARGO_PKG_VERSION").to_string(),
        daemon_pid: std::process::id(),
        acked_seq,
        stop,
        started_recorded,
        binary_output: true,
        keeps_unsaved: true,
    }
}

/// Writes a UI's frames: answers and log events in the order they were queued, run events as
/// they come, flushed whenever nothing more is waiting.
async fn write_ui(
    mut writer: FrameWriter<WriteHalf>,
    mut out: mpsc::Receiver<Outbound>,
    mut events: mpsc::UnboundedReceiver<ServerFrame>,
) {
    loop {
        let frame = tokio::select! {
            f = out.recv() => f,
            Some(f) = events.recv() => Some(Outbound::Frame(f)),
        };
        let Some(frame) = frame else {
            let _ = writer.flush().await;
            return;
        };
        if send_outbound(&mut writer, frame).await.is_err() {
            return;
        }
        loop {
            let next = match out.try_recv() {
                Ok(f) => f,
                Err(_) => match events.try_recv() {
                    Ok(f) => Outbound::Frame(f),
                    Err(_) => break,
                },
            };
            if send_outbound(&mut writer, next).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
}

async fn send_outbound(
    writer: &mut FrameWriter<WriteHalf>,
    frame: Outbound,
) -> Result<(), FrameError> {
    match frame {
        Outbound::Frame(f) => match writer.send(&f).await {
            // Too large for one frame (nothing of it was written): an answer is replaced by an
            // error that says so, so the client is not left waiting; an event is let go. The
            // session goes on either way.
            Err(FrameError::TooLarge { len, max }) => {
                let ServerFrame::Response { id, .. } = f else {
                    warn!(len, max, "an event too large for one frame was not sent");
                    return Ok(());
                };
                warn!(
                    id,
                    len, max, "an answer too large for one frame was not sent"
                );
                let err = WireError::internal(format!(
                    "bosund's answer is {len} bytes, more than the {max} one message of its socket may hold, so it was not sent; ask for less at a time"
                ));
                let result = ResponseResult::Err(err);
                writer.send(&ServerFrame::Response { id, result }).await
            }
            sent => sent,
        },
        Outbound::Encoded(bytes) => writer.send_encoded(&bytes).await,
        Outbound::Split { head, chunk } => writer.send_split(&head, &chunk.data).await,
    }
}

/// The hub of a run that is not over. Right after bosund starts, clients (followers that
/// reconnect first of all) can ask for a run before recovery has given it its actor back;
/// following it from the file alone would end the subscription as if the run were over. So a
/// run that is not over is waited for, until its actor is up or the run is recorded over.
async fn live_hub(ctx: &DaemonCtx, run: RunId) -> Option<Arc<LogHub>> {
    let deadline = tokio::time::Instant::now() + RECOVERY_WAIT;
    loop {
        if let Some(e) = ctx.live.get(run) {
            return Some(e.hub);
        }
        let not_over = blocking(&ctx.store, move |s| s.run(run))
            .await
            .ok()
            .flatten()
            .is_some_and(|r| !r.state.is_final());
        if !not_over || tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The runtime that serves UIs: log followers and the writing of UI frames. Its threads run at
/// a lower priority (nice 10) than the rest of bosund, so that under load the kernel gives the
/// CPU to what runs produce (the runner links, the store writer) before what people watch: a
/// follower that cannot keep up falls behind and reads from the file, and the run never waits
/// for it. Requests are still answered on the main runtime.
fn followers() -> tokio::runtime::Handle {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("followers")
                .on_thread_start(|| {
                    // SAFETY: setpriority on this thread's own id changes only its nice value.
                    unsafe {
                        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
                    }
                })
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
        // Without a runtime of its own (it could not be made), followers share the main one.
        .map_or_else(tokio::runtime::Handle::current, |rt| rt.handle().clone())
}

/// A refusal of a runner's hello, with its code and words.
fn refused(code: ErrorCode, message: String) -> HelloReply {
    HelloReply::Refused(WireError::new(code, message))
}

/// Sends a run's messages to its runner, flushing after each batch that was waiting, until the
/// run's actor lets go or the runner's link breaks.
async fn write_runner(
    mut writer: FrameWriter<WriteHalf>,
    mut rx: mpsc::UnboundedReceiver<DaemonMsg>,
) {
    while let Some(msg) = rx.recv().await {
        if writer.send(&msg).await.is_err() {
            return;
        }
        while let Ok(more) = rx.try_recv() {
            if writer.send(&more).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
}
