//! RunActor: one per live run. It owns the run's record and the link to its runner, persists
//! every transition before announcing it, commits the runner's output through the store writer
//! and acks it, and decides when a run whose runner is gone is lost.

use crate::record::{RunSnapshot, RunWrites};
use bosun_approvals::record::ApprovalRecord;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::RunsError;
use bosun_agents::secrets::SecretLine;
use bosun_protocol::runner::{
    DaemonMsg, FlushFailure, HeldOutput, LaunchPlan, OutputChunk, RunnerMsg, Started, StopOrder,
};
use bosun_shared::placement::Placement;
use bosun_shared::process::{self, SweepTarget};
use bosun_shared::run::{ExitInfo, Outcome, RunState, Stream, signal_name};
use bosun_shared::{RunToken, Timestamp};
use nix::sys::signal::Signal;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use tracing::{Instrument, error, info, warn};

use super::RunsContext;
use super::follow::FileCursor;
use super::log_hub::LogHub;
use super::record::{ProcessInfo, RunRecord};
use super::spawn::{send_plan, spawn_runner};
use super::spend::UsageRow;
use bosun_agents::record::{AgentRun, LastRun, ParsedTo};
use bosun_agents::registry::AgentsMsg;
use bosun_agents::stream::{Change, StreamParser};
use bosun_shared::usage::Spent;
use bosun_store::writer::{self, WriteOp};
use bosun_store::{LogChunk, StoreError};

mod asks;
mod held;
mod person;
mod remote;
mod tokens;

pub use asks::PersonDecision;

/// The class of a run's "needs a new sign-in" approval (`tokens.rs`), which the person's
/// decisions (`asks.rs`) hand to it.
pub const SIGN_IN_CLASS: &str = "sign-in";
/// The classes of a server's requests for the person (`person.rs`): a form to fill in, and a
/// message of the model to allow.
pub const ELICITATION_CLASS: &str = "elicitation";
pub const SAMPLING_CLASS: &str = "sampling";

/// A duration in whole milliseconds, as the wire says them.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether `a` is a server's request for the person.
fn is_server_ask(a: &bosun_approvals::record::ApprovalRecord) -> bool {
    a.class == ELICITATION_CLASS || a.class == SAMPLING_CLASS
}

/// How often a run whose runner is not connected checks that the runner is still alive.
const RUNNER_CHECK_EVERY: Duration = Duration::from_millis(250);
/// How long a runner that is alive may stay away before it is ended and the run is lost.
const RECONNECT_GRACE: Duration = Duration::from_secs(20);
/// How long the daemon's own sweep of a lost run keeps killing.
const SWEEP_DEADLINE: Duration = Duration::from_secs(5);
/// How long past its whole ladder a stopped run may take to end before bosund ends it.
const STOP_SLACK: Duration = Duration::from_secs(2);
/// How long a runner whose program is gone may take to finish a stopped run (its last output,
/// its sweep, its exit) before bosund ends it.
const RUNNER_LAST_WHILE: Duration = Duration::from_secs(5);

/// The RunActor's messages.
pub enum RunMsg {
    /// A runner connected for this run (its token already checked).
    Attach {
        tx: mpsc::UnboundedSender<DaemonMsg>,
        /// The token it proved itself with (a sealed plan is filled in with it).
        token: RunToken,
        /// The runner keeps a decision told before it is saved.
        keeps_unsaved: bool,
        reply: RpcReplyPort<Attached>,
    },
    /// A message from the runner on link `link_id`.
    FromRunner { link_id: u64, msg: RunnerMsg },
    /// Link `link_id` closed.
    Detached { link_id: u64 },
    /// An output chunk is stored (or could not be saved).
    LogStored {
        seq: u64,
        result: Result<(), StoreError>,
    },
    /// The runner process this daemon started has exited.
    RunnerExited { how: String },
    /// Time to look at a runner that is not connected.
    CheckRunner,
    /// The run was stopped a whole ladder ago: if it has not ended, bosund ends it itself.
    StopOverdue,
    /// Stop the run by its ladder (or at once).
    Stop {
        order: StopOrder,
        reply: Option<RpcReplyPort<Result<RunSnapshot, RunsError>>>,
    },
    /// The run's record as the UI shows it.
    Get { reply: RpcReplyPort<RunSnapshot> },
    /// The person decides one of the run's approvals.
    Decide {
        approval: bosun_shared::ApprovalId,
        decision: PersonDecision,
        reply: RpcReplyPort<Result<ApprovalRecord, RunsError>>,
    },
    /// The deadline of the ask `key` may have come.
    Deadline { key: String },
    /// Another run's approval gave a budget this run shares (its card's, its project's day)
    /// more: the calls held for it may go on.
    BudgetMore,
    /// What came of the runner's ask for a server's token anew.
    TokenGot {
        ask: bosun_protocol::runner::TokenAsk,
        got: Box<bosun_agents::secrets::TokenAnew>,
    },
    /// The server `server` was signed in to: calls waiting for that sign-in go on.
    SignedIn { server: String },
}

/// What a runner is told when it attaches.
#[derive(Debug)]
pub struct Attached {
    pub link_id: u64,
    pub acked_seq: u64,
    pub stop: Option<StopOrder>,
    pub started_recorded: bool,
}

/// How a RunActor begins.
pub enum Launch {
    /// A new run: persist it, start its runner, hand over the plan, answer the person.
    Fresh {
        plan: Box<LaunchPlan>,
        /// Where the runner runs: started here, or handed to a cluster engine.
        placement: Placement,
        /// The plan's secret values and where they come from (a remote run's plan is kept
        /// sealed with them).
        secrets: Vec<SecretLine>,
        reply: Option<RpcReplyPort<Result<RunSnapshot, RunsError>>>,
    },
    /// A run found unfinished at startup (`daemon_restart`), or after this actor failed: wait
    /// for its runner to come back, or find it gone.
    Recover { daemon_restart: bool },
}

pub struct RunArgs {
    pub ctx: Arc<RunsContext>,
    pub record: RunRecord,
    pub hub: Arc<LogHub>,
    pub launch: Launch,
}

pub struct RunActor;

pub struct RunActorState {
    ctx: Arc<RunsContext>,
    rec: RunRecord,
    hub: Arc<LogHub>,
    link: Option<Link>,
    next_link_id: u64,
    /// The highest output seq received (committed, or on its way to the store).
    received: u64,
    /// How the runner process ended, when this daemon started it and saw it end.
    runner_exited: Option<String>,
    /// When the runner was last seen connected (or when recovery began).
    away_since: Option<Instant>,
    /// Whether this run was found unfinished when the daemon started.
    daemon_restart: bool,
    launch: Option<Launch>,
    /// For a run of an agent: its CLI's stdout, read into the record's events.
    parser: Option<StreamParser>,
    /// The parser found something worth saving at once (the init line, the result).
    events_to_save: bool,
    /// The CLI reported tokens that are not saved yet (for the crash test that kills bosund
    /// right there).
    usage_unsaved: bool,
    /// The run's usage row as last saved (`None` until this actor saves one): saved again
    /// with the record when its usage changed.
    usage_saved: Option<UsageRow>,
    /// The run's tool calls: decided, and waiting for the person.
    asks: asks::Asks,
    /// Everything this actor logs is in the run's span, so one run's story can be picked out
    /// of `bosund.log` by its id.
    span: tracing::Span,
    /// For a run on another host: its plan, until its runner has started the program (the plan
    /// and its secrets go only over the link; the store keeps it sealed, without them).
    pending: Option<remote::PendingPlan>,
    /// The token the connected runner proved itself with.
    link_token: Option<RunToken>,
    /// Where the run's log file is read for the CLI's events, when the runner writes the file
    /// itself.
    own_log: Option<FileCursor>,
    /// The runner said its output is held ([`RunnerMsg::OutputHeld`]).
    runner_held: bool,
    /// This actor, for the stop's own deadline ([`RunMsg::StopOverdue`]).
    me: ActorRef<RunMsg>,
    /// The stop's deadline found the program gone and gave its runner a last while to finish.
    stop_last_while: bool,
}

struct Link {
    link_id: u64,
    tx: mpsc::UnboundedSender<DaemonMsg>,
    /// The runner keeps a decision told before it is saved (see [`DaemonMsg::Decided`]).
    keeps_unsaved: bool,
}

impl Actor for RunActor {
    type Msg = RunMsg;
    type State = RunActorState;
    type Arguments = RunArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RunMsg>,
        args: RunArgs,
    ) -> Result<RunActorState, ActorProcessingErr> {
        let received = args.hub.state().received;
        let parser = args
            .record
            .agent
            .as_ref()
            .and_then(|a| a.cli)
            .map(|cli| StreamParser::new(cli, args.ctx.prices.clone()));
        let run = args.record.agent.as_ref();
        let span = tracing::info_span!(
            "run",
            run_id = %args.record.id,
            agent = run.and_then(|a| a.agent).map(|a| a.to_string()),
            card = run.and_then(|a| a.card).map(|(card, _)| card.to_string()),
        );
        args.ctx
            .live
            .insert_new(myself.clone(), args.hub.clone(), &args.record);
        Ok(RunActorState {
            ctx: args.ctx,
            rec: args.record,
            hub: args.hub,
            link: None,
            next_link_id: 1,
            received,
            runner_exited: None,
            away_since: None,
            daemon_restart: false,
            launch: Some(args.launch),
            parser,
            events_to_save: false,
            usage_unsaved: false,
            usage_saved: None,
            asks: asks::Asks::default(),
            span,
            pending: None,
            link_token: None,
            own_log: None,
            runner_held: false,
            me: myself,
            stop_last_while: false,
        })
    }

    /// The launch (or recovery) runs here rather than in `pre_start`, so that the spawner is
    /// not held up by it: runs start concurrently.
    async fn post_start(
        &self,
        myself: ActorRef<RunMsg>,
        state: &mut RunActorState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        async {
            match state.launch.take() {
                Some(Launch::Fresh {
                    plan,
                    placement: Placement::Local,
                    secrets: _,
                    reply,
                }) => state.launch(&myself, *plan, reply).await,
                Some(Launch::Fresh {
                    plan,
                    placement,
                    secrets,
                    reply,
                }) => {
                    state
                        .launch_remote(&myself, *plan, placement, &secrets, reply)
                        .await
                }
                Some(Launch::Recover { daemon_restart }) => {
                    state.daemon_restart = daemon_restart;
                    state.load_asks(&myself).await?;
                    state.read_unparsed().await?;
                    state.recover(&myself).await
                }
                None => Ok(()),
            }
        }
        .instrument(span)
        .await
    }

    async fn handle(
        &self,
        myself: ActorRef<RunMsg>,
        msg: RunMsg,
        state: &mut RunActorState,
    ) -> Result<(), ActorProcessingErr> {
        let span = state.span.clone();
        state.on_msg(&myself, msg).instrument(span).await
    }
}

impl RunActorState {
    async fn on_msg(
        &mut self,
        myself: &ActorRef<RunMsg>,
        msg: RunMsg,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RunMsg::Attach {
                tx,
                token,
                keeps_unsaved,
                reply,
            } => {
                let link_id = self.next_link_id;
                self.next_link_id += 1;
                self.link = Some(Link {
                    link_id,
                    tx,
                    keeps_unsaved,
                });
                self.link_token = Some(token);
                self.away_since = None;
                // A runner whose output is still held says so again on its new link.
                if self.runner_held {
                    self.on_output_held(None);
                }
                self.ctx.live.set_attached(self.rec.id, true);
                let _ = reply.send(Attached {
                    link_id,
                    acked_seq: self.hub.state().stored,
                    stop: self.rec.stop.clone(),
                    started_recorded: self.rec.process.is_some(),
                });
                info!(run_id = %self.rec.id, link_id, "runner attached");
            }
            RunMsg::FromRunner { link_id, msg } => {
                if self.link.as_ref().is_some_and(|l| l.link_id == link_id) {
                    self.on_runner_msg(myself, msg).await?;
                }
            }
            RunMsg::Detached { link_id } => {
                if self.link.as_ref().is_some_and(|l| l.link_id == link_id) {
                    self.link = None;
                    self.ctx.live.set_attached(self.rec.id, false);
                    if !self.rec.state.is_final() {
                        self.away_since = Some(Instant::now());
                        drop(myself.send_after(self.check_every(), || RunMsg::CheckRunner));
                    }
                }
            }
            RunMsg::LogStored { seq, result } => {
                result.map_err(|e| format!("could not save output of run {}: {e}", self.rec.id))?;
                self.hub.stored(seq);
                self.send(DaemonMsg::Ack { seq });
            }
            RunMsg::RunnerExited { how } => {
                self.runner_exited = Some(how.clone());
                if !self.rec.state.is_final() && self.link.is_none() {
                    self.lose(myself, format!("the runner died ({how})"))
                        .await?;
                }
            }
            RunMsg::CheckRunner => self.check_runner(myself).await?,
            RunMsg::StopOverdue => self.stop_overdue(myself).await?,
            RunMsg::Stop { order, reply } => {
                let result = self.stop(order).await;
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
            }
            RunMsg::Get { reply } => {
                let _ = reply.send(self.snapshot());
            }
            RunMsg::Decide {
                approval,
                decision,
                reply,
            } => {
                let result = self.person_decides(myself, approval, decision).await;
                let _ = reply.send(result);
            }
            RunMsg::Deadline { key } => self.on_deadline(key).await?,
            RunMsg::BudgetMore => self.on_budget_more(myself).await?,
            RunMsg::TokenGot { ask, got } => self.on_token_got(myself, ask, *got).await?,
            RunMsg::SignedIn { server } => self.on_signed_in(server).await?,
        }
        Ok(())
    }

    /// The run as it stands.
    fn snapshot(&self) -> RunSnapshot {
        RunSnapshot::new(self.rec.clone(), self.hub.state().received)
    }

    /// Persists the record durably (with its usage row when that changed), then tells
    /// everyone.
    async fn persist(&mut self) -> Result<(), ActorProcessingErr> {
        self.persist_with(Vec::new()).await
    }

    /// Persists the record durably with other changes in the same commit (and its usage row
    /// when that changed), then tells everyone.
    async fn persist_with(
        &mut self,
        mut also: Vec<writer::Change>,
    ) -> Result<(), ActorProcessingErr> {
        let row = self.usage_row_to_save();
        also.extend(row.iter().map(writer::Change::put));
        self.ctx.writer.put_run_with(&self.rec, also).await?;
        self.usage_saved = row.or(self.usage_saved.take());
        self.ctx.live.update(&self.rec);
        self.ctx.announce(&self.rec, self.hub.state().received);
        Ok(())
    }

    /// The run's usage row, when it differs from the one last saved: it goes into the same
    /// commit as the record.
    fn usage_row_to_save(&self) -> Option<UsageRow> {
        UsageRow::of(&self.rec).filter(|r| self.usage_saved.as_ref() != Some(r))
    }

    fn send(&self, msg: DaemonMsg) {
        if let Some(link) = &self.link {
            let _ = link.tx.send(msg);
        }
    }

    /// Records a new run durably, and answers whoever asked for it: the run as it is, or why it
    /// could not be recorded.
    async fn record_and_answer(
        &mut self,
        reply: Option<RpcReplyPort<Result<RunSnapshot, RunsError>>>,
    ) -> Result<(), ActorProcessingErr> {
        let persisted = self.persist().await;
        if let Some(reply) = reply {
            let _ = reply.send(match &persisted {
                Ok(()) => Ok(self.snapshot()),
                Err(e) => Err(RunsError::internal(format!(
                    "could not record the run: {e}"
                ))),
            });
        }
        persisted?;
        Ok(())
    }

    async fn launch(
        &mut self,
        myself: &ActorRef<RunMsg>,
        plan: LaunchPlan,
        reply: Option<RpcReplyPort<Result<RunSnapshot, RunsError>>>,
    ) -> Result<(), ActorProcessingErr> {
        self.record_and_answer(reply).await?;

        let run_dir = self.ctx.dirs.run_dir(self.rec.id);
        let spawned = match spawn_runner(&self.ctx.runner_bin, &self.ctx.dirs, &run_dir) {
            Ok(s) => s,
            Err(e) => {
                let reason = format!(
                    "could not start the runner {}: {e}",
                    self.ctx.runner_bin.display()
                );
                return self.finish(myself, failed(reason)).await;
            }
        };
        self.rec.state = RunState::Starting;
        self.rec.runner = Some(spawned.identity);
        self.persist().await?;

        // The runner is recorded: now it may have its plan.
        if let Err(e) = send_plan(spawned.stdin, &plan).await {
            warn!(run_id = %self.rec.id, error = %e, "could not hand the runner its plan");
        }
        let me = myself.clone();
        let mut child = spawned.child;
        tokio::spawn(async move {
            let how = match child.wait().await {
                Ok(status) => describe_status(status),
                Err(e) => format!("could not wait for it: {e}"),
            };
            let _ = me.cast(RunMsg::RunnerExited { how });
        });
        self.away_since = Some(Instant::now());
        Ok(())
    }

    async fn recover(&mut self, myself: &ActorRef<RunMsg>) -> Result<(), ActorProcessingErr> {
        if self.rec.placed.is_some() && !self.rec.state.is_final() {
            // A runner on another host: wait for it to dial back, asking its backend meanwhile.
            self.away_since = Some(Instant::now());
            return self.check_runner(myself).await;
        }
        match (self.rec.state, self.rec.runner) {
            (RunState::Exited(_), _) => Ok(()),
            (
                RunState::Queued | RunState::Starting | RunState::Running | RunState::Stopping,
                None,
            ) => {
                let reason = "bosund stopped before the run's runner was started; start it again";
                self.lose(myself, reason.into()).await
            }
            (
                RunState::Starting | RunState::Running | RunState::Stopping | RunState::Queued,
                Some(_),
            ) => {
                self.away_since = Some(Instant::now());
                // A stop the last bosund ordered holds here too, runner or no runner.
                if self.rec.stop.is_some() {
                    self.arm_stop_deadline();
                }
                self.check_runner(myself).await
            }
        }
    }

    /// Looks at a runner that is not connected: gone means lost; alive but away too long
    /// means it is ended and the run is lost.
    async fn check_runner(&mut self, myself: &ActorRef<RunMsg>) -> Result<(), ActorProcessingErr> {
        if self.rec.state.is_final() || self.link.is_some() {
            return Ok(());
        }
        if self.rec.placed.is_some() {
            return self.check_remote(myself).await;
        }
        let Some(runner) = self.rec.runner else {
            return Ok(());
        };
        if !runner.is_alive() {
            let reason = match &self.runner_exited {
                Some(how) => format!("the runner died ({how})"),
                None if self.daemon_restart => "runner lost after daemon restart".to_string(),
                None => "the runner died".to_string(),
            };
            return self.lose(myself, reason).await;
        }
        let away = self.away_since.get_or_insert_with(Instant::now).elapsed();
        if away >= RECONNECT_GRACE {
            let _ = process::signal_process(runner.pid, Signal::SIGKILL);
            let reason = format!(
                "the runner did not reconnect within {}s and was ended",
                RECONNECT_GRACE.as_secs()
            );
            return self.lose(myself, reason).await;
        }
        drop(myself.send_after(RUNNER_CHECK_EVERY, || RunMsg::CheckRunner));
        Ok(())
    }

    async fn on_runner_msg(
        &mut self,
        myself: &ActorRef<RunMsg>,
        msg: RunnerMsg,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RunnerMsg::Output(chunk) => {
                self.on_output(myself, chunk)?;
                if std::mem::take(&mut self.events_to_save) && !self.rec.state.is_final() {
                    if std::mem::take(&mut self.usage_unsaved) {
                        bosun_kit::crash::point("usage-read-not-saved");
                    }
                    self.persist().await?;
                }
                Ok(())
            }
            RunnerMsg::Logged { upto } => {
                self.on_logged(upto).await?;
                if std::mem::take(&mut self.events_to_save) && !self.rec.state.is_final() {
                    if std::mem::take(&mut self.usage_unsaved) {
                        bosun_kit::crash::point("usage-read-not-saved");
                    }
                    self.persist().await?;
                }
                Ok(())
            }
            RunnerMsg::OutputHeld { held } => {
                self.on_output_held(held);
                Ok(())
            }
            RunnerMsg::LogFlush { failed } => {
                self.on_log_flush(failed);
                Ok(())
            }
            RunnerMsg::Started(started) => self.on_started(started).await,
            RunnerMsg::Exited(exit) => {
                if !self.rec.state.is_final() {
                    self.finish(myself, exit).await?;
                }
                self.send(DaemonMsg::ExitAck);
                Ok(())
            }
            RunnerMsg::Ask(ask) => self.on_ask(myself, ask).await,
            RunnerMsg::Delivered { key } => self.on_delivered(key).await,
            RunnerMsg::Unsaved {
                ask,
                answer,
                by,
                at,
            } => self.on_unsaved(ask, answer, by, at).await,
            RunnerMsg::Withdrawn { key } => self.on_withdrawn(key).await,
            RunnerMsg::WantPlan => self.on_want_plan(myself).await,
            RunnerMsg::Token(ask) => self.on_token_ask(myself, ask),
            RunnerMsg::ServerAsk(ask) => self.on_server_ask(myself, ask).await,
            RunnerMsg::HeldBack {
                server,
                tools,
                left_out,
            } => {
                self.on_held_back(server, tools, left_out);
                Ok(())
            }
        }
    }

    fn on_output(
        &mut self,
        myself: &ActorRef<RunMsg>,
        chunk: OutputChunk,
    ) -> Result<(), ActorProcessingErr> {
        if chunk.seq <= self.received {
            // Resent after a reconnect: already here (in memory or in the store).
            return Ok(());
        }
        if chunk.seq != self.received + 1 {
            // A runner sends its chunks in order on one connection and resends from the last
            // ack after a reconnect, so this is a runner's bug. Taking the chunk would leave a
            // hole that no follower could ever get past; refusing it leaves the seq to the
            // runner's next resend.
            error!(run_id = %self.rec.id, expected = self.received + 1, got = chunk.seq, "a runner skipped output seqs; the chunk is refused");
            return Ok(());
        }
        self.received = chunk.seq;
        if chunk.stream == Stream::Stdout {
            self.parse(chunk.seq, &chunk.data.0, 0);
        }
        let stored = Arc::new(LogChunk {
            seq: chunk.seq,
            stream: chunk.stream,
            at: chunk.at,
            data: chunk.data.0,
        });
        let pushed = self.hub.push(stored.clone());
        debug_assert!(pushed, "the seq was checked above");
        let me = myself.clone();
        let seq = stored.seq;
        self.ctx.writer.submit(
            WriteOp::AppendLog {
                run: self.rec.id,
                chunk: stored,
            },
            Some(Box::new(move |result| {
                let _ = me.cast(RunMsg::LogStored { seq, result });
            })),
        )?;
        Ok(())
    }

    /// The CLI's events in a piece of its stdout (a run of a coding CLI): chunk `seq` from its
    /// byte `from`. The run then says it has read the chunk up to its last line's end.
    fn parse(&mut self, seq: u64, stdout: &[u8], from: usize) {
        let (Some(parser), Some(run)) = (self.parser.as_mut(), self.rec.agent.as_mut()) else {
            return;
        };
        let tokens = |run: &AgentRun| (run.usage.models.len(), run.usage.total());
        let before = (tokens(run), Spent::of(&run.usage, 0));
        let change = parser.feed(stdout, run);
        if tokens(run) != before.0 {
            self.usage_unsaved = true;
        }
        // What a run of a card spent counts at once for the runs that share its budgets.
        let spent_more = Spent::of(&run.usage, 0) != before.1;
        if spent_more
            && run.card.is_some()
            && let Some(row) = UsageRow::of(&self.rec)
        {
            self.ctx.spend.count(&row);
        }
        let Some(run) = self.rec.agent.as_mut() else {
            return;
        };
        if let Some(end) = stdout.iter().rposition(|b| *b == b'\n') {
            run.parsed_to = Some(ParsedTo {
                seq,
                offset: u32::try_from(from + end + 1).unwrap_or(u32::MAX),
            });
        }
        if change != Change::None && run.answer.is_some() {
            self.ctx.answers.calls_read(self.rec.id, &run.calls);
        }
        match change {
            Change::None => {}
            Change::Minor => self.ctx.live.update(&self.rec),
            Change::Major => self.events_to_save = true,
        }
    }

    /// The runner wrote the run's log file up to `upto` itself. Nothing of it is in memory:
    /// followers read it from the file; a coding CLI's stdout is read from there for its
    /// events.
    async fn on_logged(&mut self, upto: u64) -> Result<(), ActorProcessingErr> {
        if upto <= self.received {
            return Ok(());
        }
        if self.parser.is_some() {
            self.parse_log(self.received + 1, 0, upto).await?;
        }
        self.received = upto;
        self.hub.logged(upto);
        Ok(())
    }

    /// Reads the stdout chunks `from..=upto` of the run's log file into the run, the chunk
    /// `from` from its byte `skip`.
    async fn parse_log(
        &mut self,
        from: u64,
        skip: usize,
        upto: u64,
    ) -> Result<(), ActorProcessingErr> {
        let path = self.ctx.store.log_path(self.rec.id);
        let mut cursor = self.own_log.take().unwrap_or_else(|| FileCursor::at(path));
        let mut next = from;
        while next <= upto {
            let chunks = cursor.read(next, upto).await?;
            let Some(last) = chunks.last().map(|c| c.seq) else {
                error!(run_id = %self.rec.id, seq = next, "the log file does not have a chunk it was said to have");
                break;
            };
            for c in chunks.iter().filter(|c| c.stream == Stream::Stdout) {
                let skip = if c.seq == from { skip } else { 0 };
                self.parse(c.seq, c.data.get(skip..).unwrap_or_default(), skip);
            }
            next = last + 1;
        }
        self.own_log = Some(cursor);
        Ok(())
    }

    /// After a restart (of bosund, or of this actor): reads what the log holds of the CLI's
    /// stdout past what the record says was read, so that what a killed bosund had read but
    /// not saved (tool calls, usage) is read again, once, and saves it.
    async fn read_unparsed(&mut self) -> Result<(), ActorProcessingErr> {
        let Some(run) = self.rec.agent.as_ref().filter(|_| self.parser.is_some()) else {
            return Ok(());
        };
        let (from, skip) = match run.parsed_to {
            Some(p) => (p.seq, p.offset as usize),
            None => (1, 0),
        };
        if from > self.received || self.received == 0 {
            return Ok(());
        }
        let before = run.clone();
        self.parse_log(from, skip, self.received).await?;
        if self.rec.agent.as_ref() != Some(&before) {
            self.persist().await?;
        }
        Ok(())
    }

    /// Output waits in the runner (the run's log file cannot take it): the run is paused, and
    /// says why, as when bosund's own writes are held.
    fn on_output_held(&mut self, held: Option<HeldOutput>) {
        let health = self.ctx.writer.health();
        self.runner_held = held.is_some();
        match held {
            Some(h) => {
                let io = match h.errno {
                    Some(errno) => std::io::Error::from_raw_os_error(errno),
                    None => std::io::Error::other(h.error),
                };
                health.hold(self.rec.id, h.bytes, &StoreError::LogFile(io));
            }
            None => health.release(self.rec.id),
        }
    }

    /// The runner's own log file could not be flushed to disk, or is flushed again: `daemon
    /// status` names the run meanwhile, as it does when bosund's own flush of a log fails.
    fn on_log_flush(&self, failed: Option<FlushFailure>) {
        let health = self.ctx.writer.health();
        let id = self.rec.id;
        match failed {
            Some(f) if f.lost => health.log_lost(
                id,
                format!(
                    "the log of run {} could not be flushed to disk, and what it wrote since then no longer reads back whole ({}): the log lacks it",
                    id.short(),
                    f.error
                ),
            ),
            Some(f) => {
                let io = match f.errno {
                    Some(errno) => std::io::Error::from_raw_os_error(errno),
                    None => std::io::Error::other(f.error),
                };
                health.unsynced(id, &io);
            }
            None => health.synced(id),
        }
    }

    async fn on_started(&mut self, s: Started) -> Result<(), ActorProcessingErr> {
        // The runner on another host has carried out its plan: bosund forgets it (the sealed
        // plan goes with the record that says the program started).
        self.pending = None;
        if self.rec.process.is_none() {
            self.rec.process = Some(ProcessInfo {
                pid: s.pid,
                pgid: s.pgid,
                start_time: s.start_time,
            });
            self.rec.started_at = Some(s.at);
            if let Some(agent) = self.rec.agent.as_mut() {
                agent.fence = s.fence.clone();
            }
            if matches!(self.rec.state, RunState::Queued | RunState::Starting) {
                self.rec.state = RunState::Running;
            }
            let also = self.forget_sealed_plan();
            self.persist_with(also).await?;
        }
        self.send(DaemonMsg::StartedAck);
        Ok(())
    }

    async fn stop(&mut self, order: StopOrder) -> Result<RunSnapshot, RunsError> {
        if let RunState::Exited(outcome) = self.rec.state {
            return Err(RunsError::conflict(format!(
                "run {} has already ended ({outcome})",
                self.rec.id.short()
            )));
        }
        let escalate = order.immediate && !self.rec.stop.as_ref().is_some_and(|s| s.immediate);
        if self.rec.stop.is_none() || escalate {
            self.rec.stop = Some(order.clone());
            self.rec.state = RunState::Stopping;
            self.persist()
                .await
                .map_err(|e| RunsError::internal(format!("could not record the stop: {e}")))?;
            self.send(DaemonMsg::Stop(order.clone()));
            self.arm_stop_deadline();
        }
        if let Some(placed) = self.rec.placed.clone() {
            self.stop_remote(&placed, &order).await;
        } else if order.immediate {
            // Do not count on the runner: kill the program's group from here too.
            if let Some(p) = self.rec.process.filter(|p| p.leader().is_alive()) {
                let _ = process::signal_group(p.pgid, Signal::SIGKILL);
            }
        }
        Ok(self.snapshot())
    }

    /// Records the end, tells everyone, and stops this actor.
    async fn finish(
        &mut self,
        myself: &ActorRef<RunMsg>,
        mut exit: ExitInfo,
    ) -> Result<(), ActorProcessingErr> {
        // A CLI can exit with 0 and still say the run failed (Claude Code when not logged in).
        if exit.outcome == Outcome::Succeeded
            && let Some(why) = self.rec.agent.as_ref().and_then(|a| a.reported_failure())
        {
            exit.outcome = Outcome::Failed;
            exit.reason = format!("{}; {why}", exit.reason);
        }
        self.end_asks().await;
        // A card's run in a worktree: where its branch got to.
        if let Some(git) = self.rec.git.as_mut()
            && git.head_at_end.is_none()
        {
            let cwd = self.rec.cwd.clone();
            git.head_at_end =
                bosun_kit::offload::blocking(move || bosun_kit::git::commit(&cwd, "HEAD"))
                    .await
                    .ok()
                    .flatten();
        }
        self.rec.state = RunState::Exited(exit.outcome);
        self.rec.ended_at = Some(Timestamp::now());
        self.rec.exit = Some(exit);
        self.rec.stop = None;
        self.rec.last_seq = self.received;
        // The agent keeps what the run found before anyone can see the run ended: whoever sees
        // it ended and then asks the agent finds its last run there. (Waited for a few seconds
        // at most: the agents actor calls no run, so it cannot be waiting for this one.)
        if let Some(run) = &self.rec.agent
            && let Some(agent) = run.agent
            && let Some(agents) = self.ctx.agents.get()
        {
            let last = LastRun {
                run: Some(self.rec.id),
                at: self.rec.ended_at,
                servers: run.servers.clone(),
                tools_seen: run.tools_seen(),
            };
            let saved = ractor::call_t!(
                agents,
                |saved| AgentsMsg::RunEnded { agent, last, saved },
                bosun_agents::registry::SAVE_LIMIT_MS
            );
            if let Err(e) = saved {
                warn!(run_id = %self.rec.id, error = %e, "the agent did not say it kept what the run found");
            }
        }
        let also = self.forget_sealed_plan();
        self.persist_with(also).await?;
        if self.runner_held {
            self.on_output_held(None);
        }
        self.hub.end();
        info!(run_id = %self.rec.id, outcome = %self.rec.state, "run ended");
        myself.stop(Some("run ended".into()));
        Ok(())
    }

    /// Arms the stop's own deadline: a whole ladder from now (at once for an immediate stop),
    /// and a little more, the run must have ended. A stop never waits on the link.
    fn arm_stop_deadline(&mut self) {
        if self.rec.placed.is_some() {
            // Its backend ends a run on another host ([`Self::stop_remote`]).
            return;
        }
        let immediate = self.rec.stop.as_ref().is_some_and(|s| s.immediate);
        let ladder = if immediate {
            Duration::ZERO
        } else {
            Duration::from_millis(
                self.rec
                    .ladder
                    .int_grace_ms
                    .saturating_add(self.rec.ladder.term_grace_ms),
            )
        };
        self.stop_last_while = false;
        drop(
            self.me
                .send_after(ladder + STOP_SLACK, || RunMsg::StopOverdue),
        );
    }

    /// The stop's deadline came. A run that ended is left alone. While the program's group
    /// still lives past the whole ladder, its runner did not carry the stop out (wedged, or its
    /// link is): bosund ends the group and the runner itself and records the run stopped. When
    /// the program is gone, the runner is finishing (its last output, its sweep) and gets one
    /// more while.
    async fn stop_overdue(&mut self, myself: &ActorRef<RunMsg>) -> Result<(), ActorProcessingErr> {
        if self.rec.state.is_final() || self.rec.placed.is_some() {
            return Ok(());
        }
        let Some(order) = self.rec.stop.clone() else {
            return Ok(());
        };
        let program_alive = self.rec.process.is_some_and(|p| p.leader().is_alive());
        if !program_alive && !self.stop_last_while {
            self.stop_last_while = true;
            drop(myself.send_after(RUNNER_LAST_WHILE, || RunMsg::StopOverdue));
            return Ok(());
        }
        warn!(run_id = %self.rec.id, program_alive, "the runner did not end a stopped run; bosund ends it");
        let reason = format!(
            "{} (its runner did not end it in time, so bosund ended it)",
            order.reason
        );
        self.end_without_runner(myself, Outcome::Stopped, reason)
            .await
    }

    /// The runner is gone without reporting an end: end whatever the run left, delete its
    /// secret files, and record it lost.
    async fn lose(
        &mut self,
        myself: &ActorRef<RunMsg>,
        reason: String,
    ) -> Result<(), ActorProcessingErr> {
        self.end_without_runner(myself, Outcome::Lost, reason).await
    }

    /// Ends a run without its runner's word: SIGKILLs whatever the run has left, its runner
    /// included, deletes its secret files, and records the end as `outcome`.
    async fn end_without_runner(
        &mut self,
        myself: &ActorRef<RunMsg>,
        outcome: Outcome,
        reason: String,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(placed) = self.rec.placed.clone() {
            // Its processes are on another host: its backend ends whatever is left of its job.
            self.end_remote_job(&placed).await;
        } else {
            let target = SweepTarget {
                marker: Some(self.rec.id.to_string()),
                runner: self.rec.runner,
                group_leader: self.rec.process.map(|p| p.leader()),
                reap_children: false,
            };
            let report =
                tokio::task::spawn_blocking(move || process::sweep(&target, SWEEP_DEADLINE))
                    .await
                    .unwrap_or_default();
            if report.killed > 0 || report.survivors > 0 {
                info!(run_id = %self.rec.id, killed = report.killed, survivors = report.survivors, "swept a lost run");
            }
        }
        self.ctx.delete_secret_files(&self.rec);
        if self.rec.placed.is_none() {
            // A runner that wrote the log file itself may have written more than it could
            // say before it died: the log is what the file holds.
            let (store, id) = (self.ctx.store.clone(), self.rec.id);
            if let Ok(Ok(last)) = tokio::task::spawn_blocking(move || store.last_log_seq(id)).await
                && last > self.received
            {
                self.received = last;
                self.hub.logged(last);
            }
        }
        warn!(run_id = %self.rec.id, %reason, %outcome, "run ended without its runner");
        let exit = ExitInfo {
            outcome,
            code: None,
            signal: None,
            reason,
        };
        self.finish(myself, exit).await
    }
}

fn failed(reason: String) -> ExitInfo {
    ExitInfo {
        outcome: Outcome::Failed,
        code: None,
        signal: None,
        reason,
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by {}", signal_name(s)),
        (None, None) => "ended".to_string(),
    }
}

/// A fresh token for a new run's runner.
pub fn new_token() -> RunToken {
    RunToken::generate()
}
