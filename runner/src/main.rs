//! `bosun-runner`: carries out one run's launch plan.
//!
//! The daemon starts one runner per run and hands it the plan on stdin. The runner leaves the
//! daemon's session (so the run outlives a crash of `bosund` and no terminal signal reaches it),
//! makes itself a child subreaper (so grandchildren that escape into process groups of their own
//! are still its to end), starts the program in a process group of its own with stdin at
//! `/dev/null` (or, for a CLI driven through its control protocol, a pipe the runner writes the
//! task and bosund's decisions to), relays its output, enforces the time cap and the stop ladder, and when the
//! program has exited, SIGKILLs whatever it left, deletes the run's secret files, reports the
//! exit, waits for the daemon's ack and exits.

/// Writes a line to the runner's own log (its stderr, `runs/<id>/runner.log`). Unlike
/// `eprintln!`, which panics when the write fails, a line that cannot be written (a full disk
/// under the run's folder) is dropped: the runner must outlive its own log.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod cleared;
mod control;
mod fence;
mod gateway;
mod link;
mod net_ask;
mod outbox;
mod proxy;
mod redact;
mod relay;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_protocol::FrameReader;
use bosun_protocol::runner::{AtEnd, LaunchPlan, StopOrder};
use bosun_protocol::tls;
use bosun_shared::RUN_MARKER_ENV;
use bosun_shared::Timestamp;
use bosun_shared::process::{self, Pgid, Pid, ProcessIdentity, SweepTarget};
use bosun_shared::run::{ExitInfo, Outcome, signal_name};
use bosun_shared::time::format_duration;
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::control::driver::{Asks, Decided, Driver};
use crate::link::{Dial, LinkEnd, LinkState};
use crate::outbox::Outbox;
use crate::relay::{OutputCap, Sink};

/// Unacked output kept in memory before it goes to the spool file.
const OUTBOX_MEMORY: usize = 32 * 1024 * 1024;
/// How long the final sweep keeps killing before it gives up on survivors.
const SWEEP_DEADLINE: Duration = Duration::from_secs(5);
/// How long the relay may go on reading after the sweep, for output still in the pipes.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    // A run's CLI starts `bosun-runner gateway …` as an MCP server: the CLI's end of the
    // gateway, a plain relay that stays in the CLI's session and group.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(bosun_shared::gateway::SHIM_ARG) {
        return gateway::shim(&args[1..]);
    }
    // Before any thread exists: a session of our own (we are not a group leader, so this
    // succeeds), and orphans of the run come to us rather than to init.
    let _ = nix::unistd::setsid();
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        say!("bosun-runner: could not become a child subreaper: {e}");
    }
    bosun_shared::process::tune_allocator();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            say!("bosun-runner: could not start: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("bosun-runner: {e}");
            ExitCode::from(2)
        }
    }
}

/// How long a CLI driven through its control protocol may take to exit once its work is done
/// and its stdin closed; then it is ended by the ladder (Gemini CLI in ACP mode does not exit
/// while a stdio MCP server is connected). Its exit counts as its own.
const FINISH_GRACE: Duration = Duration::from_secs(5);

/// How long the runner looks for a signal of its own after its program died of SIGTERM or
/// SIGINT (a cluster engine signals every process of the job at once).
const OUTSIDE_SIGNAL_WAIT: Duration = Duration::from_millis(200);

/// Why the program is being stopped, once it is.
struct Stopping {
    outcome: Outcome,
    reason: String,
}

/// How the runner was started: by bosund on this machine (the plan on stdin), or by a cluster
/// engine on another host (`--remote FILE`: the link file in the run's folder; the plan comes
/// over the link).
enum Start {
    Local(Box<LaunchPlan>),
    Remote(tls::RemoteLink, std::path::PathBuf),
}

/// Why the runner could not begin a run: said on its stderr, which bosund keeps.
#[derive(Debug, thiserror::Error)]
enum RunnerError {
    #[error("no launch plan arrived on stdin")]
    NoPlan,
    #[error("the launch plan on stdin is not valid: {0}")]
    BadPlan(bosun_protocol::frame::FrameError),
    #[error("could not read the link file {}: {source}", path.display())]
    ReadLink {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("the link file {} is not valid: {source}", path.display())]
    BadLink {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
    #[error("the link file {} has no folder", .0.display())]
    LinkNoFolder(std::path::PathBuf),
    #[error(
        "bosun-runner is started by bosund: with no arguments (the plan on stdin), or with `--remote LINK-FILE` on another host"
    )]
    Usage,
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("the link ended before the plan came")]
    NoPlanOverLink,
    #[error("bosund ended the run instead of handing over its plan (`bosun show` says why)")]
    EndedBeforePlan,
    #[error("bosund refused this run: {0}")]
    Refused(String),
    #[error("the link failed: {0}")]
    LinkFailed(tokio::task::JoinError),
}

/// Why the run's program could not be started: said as the run's end.
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    #[error(transparent)]
    Gateway(#[from] gateway::SetUpError),
    #[error("could not write {}: {source}", path.display())]
    WriteFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("could not start `{program}`: the working directory {} does not exist", cwd.display())]
    NoFolder {
        program: String,
        cwd: std::path::PathBuf,
    },
    #[error("could not make {} for the run: {source}", dir.display())]
    MakeFolder {
        dir: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("bosun's fence: {0}")]
    Fence(#[from] fence::ns::NsError),
    #[error("could not start `{program}`: {}", spawn_words(source))]
    Spawn {
        program: String,
        source: std::io::Error,
    },
}

/// Why a program would not start, in words.
fn spawn_words(e: &std::io::Error) -> String {
    let kind = e.kind();
    if kind == std::io::ErrorKind::NotFound {
        "no such program (looked in the run's PATH)".to_string()
    } else if kind == std::io::ErrorKind::PermissionDenied {
        "permission denied".to_string()
    } else {
        e.to_string()
    }
}

/// Why the runner's own log file could not be flushed to disk.
#[derive(Debug, thiserror::Error)]
enum FlushError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("{0}")]
    Disk(String),
}

async fn start() -> Result<Start, RunnerError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            let mut stdin = FrameReader::new(tokio::io::stdin());
            match stdin.read().await {
                Ok(Some(plan)) => Ok(Start::Local(Box::new(plan))),
                Ok(None) => Err(RunnerError::NoPlan),
                Err(e) => Err(RunnerError::BadPlan(e)),
            }
        }
        [flag, file] if flag == "--remote" => {
            let path = std::path::PathBuf::from(file);
            let text = fs::read_to_string(&path).map_err(|source| RunnerError::ReadLink {
                path: path.clone(),
                source,
            })?;
            // Read once, then gone: the run's key and token stay in this process only.
            if let Err(e) = fs::remove_file(&path) {
                say!("bosun-runner: could not delete {}: {e}", path.display());
            }
            let link: tls::RemoteLink =
                serde_json::from_str(&text).map_err(|source| RunnerError::BadLink {
                    path: path.clone(),
                    source,
                })?;
            let run_dir = path
                .parent()
                .map(std::path::Path::to_path_buf)
                .ok_or_else(|| RunnerError::LinkNoFolder(path.clone()))?;
            Ok(Start::Remote(link, run_dir))
        }
        _ => Err(RunnerError::Usage),
    }
}

/// Where the runner dials bosund, and what it knows of its run before the plan is in hand.
struct Dialing {
    dial: Dial,
    run_dir: std::path::PathBuf,
    run_id: bosun_shared::RunId,
    token: bosun_shared::RunToken,
    /// The plan, when it came on stdin; a runner on another host gets it over the link.
    plan_now: Option<LaunchPlan>,
}

impl Dialing {
    /// Where to dial and what of the run is known, by how the runner was started.
    fn of(start: Start) -> Result<Self, RunnerError> {
        Ok(match start {
            Start::Local(plan) => Self {
                dial: Dial::Local(plan.socket.clone()),
                run_dir: plan.run_dir.clone(),
                run_id: plan.run_id,
                token: plan.token.clone(),
                plan_now: Some(*plan),
            },
            Start::Remote(link, run_dir) => {
                let config = tls::client_config(&link)?;
                Self {
                    dial: Dial::Tls {
                        addr: link.addr.clone(),
                        config,
                    },
                    run_dir,
                    run_id: link.run_id,
                    token: link.token.clone(),
                    plan_now: None,
                }
            }
        })
    }
}

/// The runner's ends of the channels the link feeds.
struct FromLink {
    stops: mpsc::UnboundedReceiver<StopOrder>,
    decisions: mpsc::UnboundedReceiver<Decided>,
    notes: mpsc::UnboundedReceiver<String>,
    /// Where the plan comes, for a runner on another host.
    plan: oneshot::Receiver<LaunchPlan>,
}

/// The state the runner shares with its link to bosund, and the runner's ends of the link's
/// channels. The link hands over a plan only when `plan_over_link`.
fn link_state(
    outbox: &Arc<Mutex<Outbox>>,
    wake: &Arc<Notify>,
    plan_over_link: bool,
) -> (Arc<LinkState>, FromLink) {
    let (stops_tx, stops) = mpsc::unbounded_channel::<StopOrder>();
    let (decisions_tx, decisions) = mpsc::unbounded_channel();
    let (notes_tx, notes) = mpsc::unbounded_channel::<String>();
    let (plan_tx, plan) = oneshot::channel();
    let state = Arc::new(LinkState {
        outbox: outbox.clone(),
        wake: wake.clone(),
        started: Mutex::new(None),
        exit: Mutex::new(None),
        stops: stops_tx,
        asks: Arc::new(Mutex::new(Asks::default())),
        decisions: decisions_tx,
        notes: notes_tx,
        plan: Mutex::new(plan_over_link.then_some(plan_tx)),
        tokens: Default::default(),
        server_asks: Default::default(),
        judging: Default::default(),
    });
    let from_link = FromLink {
        stops,
        decisions,
        notes,
        plan,
    };
    (state, from_link)
}

/// Waits for the plan of a runner on another host; when the link ends first, the spool is
/// removed and the runner says why it has no plan.
async fn plan_over_link(
    plan_rx: oneshot::Receiver<LaunchPlan>,
    link: &mut tokio::task::JoinHandle<LinkEnd>,
    outbox: &Arc<Mutex<Outbox>>,
) -> Result<LaunchPlan, RunnerError> {
    tokio::select! {
        plan = plan_rx => match plan {
            Ok(plan) => Ok(plan),
            Err(_) => Err(RunnerError::NoPlanOverLink),
        },
        end = link => {
            let why = match end {
                Ok(LinkEnd::ExitAcked) => RunnerError::EndedBeforePlan,
                Ok(LinkEnd::Refused(why)) => RunnerError::Refused(why),
                Err(e) => RunnerError::LinkFailed(e),
            };
            lock(outbox).remove_spool();
            Err(why)
        }
    }
}

async fn run() -> Result<(), RunnerError> {
    let start = start().await?;
    let Dialing {
        dial,
        run_dir,
        run_id,
        token,
        plan_now,
    } = Dialing::of(start)?;

    let outbox = Arc::new(Mutex::new(Outbox::writing(
        run_dir.join("spool"),
        OUTBOX_MEMORY,
        plan_now.as_ref().and_then(|p| p.log_file.as_deref()),
    )));
    let wake = Arc::new(Notify::new());
    let flusher = tokio::spawn(keep_flushed(outbox.clone(), wake.clone()));
    let (state, from_link) = link_state(&outbox, &wake, plan_now.is_none());
    let FromLink {
        mut stops,
        decisions,
        notes: mut notes_rx,
        plan: plan_rx,
    } = from_link;
    // MCP calls the CLI's control protocol had allowed, for the gateway to let through once.
    let cleared = Arc::new(Mutex::new(cleared::Cleared::default()));
    let mut link = tokio::spawn(link::run_link(
        dial,
        run_dir.clone(),
        run_id,
        token,
        state.clone(),
    ));
    let plan = match plan_now {
        Some(plan) => plan,
        None => plan_over_link(plan_rx, &mut link, &outbox).await?,
    };

    let cap = Arc::new(OutputCap::new(plan.max_output));
    let redactor = Arc::new(redact::Redactor::new(&plan.redact));
    let notes_sink = Sink {
        outbox: outbox.clone(),
        wake: wake.clone(),
        cap: cap.clone(),
        tap: None,
        redactor: redactor.clone(),
        drop_lines: Arc::new([]),
    };
    notes_sink.notes(&plan.notes);
    let notes_sink_fence = notes_sink.clone();
    // bosund's lines for the log while the run goes on (a call waits for the person).
    tokio::spawn(async move {
        while let Some(note) = notes_rx.recv().await {
            notes_sink.notes(&[note]);
        }
    });
    let mut plan = plan;
    // The gateway's socket is open before the CLI starts, which dials it at once.
    let gateway = open_gateway(&mut plan);
    let plan = plan;
    let exit = match gateway.and_then(|listener| start_program(&plan).map(|c| (c, listener))) {
        Err(why) => ExitInfo {
            outcome: Outcome::Failed,
            code: None,
            signal: None,
            reason: why.to_string(),
        },
        Ok((program, listener)) => {
            let watch = Watch {
                plan: &plan,
                state: &state,
                cleared: &cleared,
                notes: &notes_sink_fence,
                cap,
                redactor,
                decisions,
                stops: &mut stops,
            };
            watch.program(program, listener).await
        }
    };
    report_end(exit, &plan, &state, flusher, link).await;
    Ok(())
}

/// Binds the gateway's socket when the run has MCP servers, and fills the plan in with where
/// it is.
fn open_gateway(plan: &mut LaunchPlan) -> Result<Option<tokio::net::UnixListener>, LaunchError> {
    if plan.gateway.is_empty() {
        Ok(None)
    } else {
        gateway::bind(&plan.run_dir)
            .and_then(|(listener, path)| {
                gateway::fill_in(plan, &path)?;
                Ok(Some(listener))
            })
            .map_err(LaunchError::from)
    }
}

/// What the runner serves, relays and watches a started program with.
struct Watch<'a> {
    plan: &'a LaunchPlan,
    state: &'a Arc<LinkState>,
    cleared: &'a Arc<Mutex<cleared::Cleared>>,
    /// Where the fence's report goes, as bosun's line in the run's log.
    notes: &'a Sink,
    cap: Arc<OutputCap>,
    redactor: Arc<redact::Redactor>,
    decisions: mpsc::UnboundedReceiver<Decided>,
    stops: &'a mut mpsc::UnboundedReceiver<StopOrder>,
}

impl Watch<'_> {
    /// Serves the started program's gateway, drives and relays it, and watches it until it is
    /// gone; then ends whatever it left, lets its pipes drain, and says how it ended.
    async fn program(
        self,
        program: Program,
        listener: Option<tokio::net::UnixListener>,
    ) -> ExitInfo {
        let Program {
            mut child,
            fence,
            net,
            absent,
        } = program;
        let Watch {
            plan,
            state,
            cleared,
            notes,
            cap,
            redactor,
            decisions,
            stops,
        } = self;
        if let Some(report) = &fence {
            notes.notes(&[format!("bosun's fence: {report}")]);
        }
        let proxy = net.map(|(net, listeners)| {
            let person = net_ask::OverLink::new(
                Arc::clone(state),
                plan.cwd.clone(),
                control::ask_redactor(&plan.redact, &plan.cwd),
            );
            let notes = notes.clone();
            proxy::served::serve_net(
                &net,
                listeners,
                proxy::served::Whose::Program(Arc::new(person)),
                move |line| notes.notes(&[line]),
            )
        });
        let me = ProcessIdentity::of(Pid::this());
        let pid = Pid::of_child(child.id().unwrap_or(0));
        if let Some(listener) = listener {
            let gw = gateway::Gateway::new(
                plan,
                pid.as_raw(),
                state.notes.clone(),
                redactor.clone(),
                state.clone(),
                cleared.clone(),
            );
            tokio::spawn(gateway::serve(listener, Arc::new(gw)));
        }
        let leader = ProcessIdentity::of(pid);
        if let Some(l) = leader {
            *lock(&state.started) = Some(bosun_protocol::runner::Started {
                pid,
                pgid: Pgid::led_by(pid),
                start_time: l.start_time,
                at: Timestamp::now(),
                fence,
            });
            state.wake.notify_one();
        }
        let control = start_driver(plan, &mut child, decisions, state, cleared);
        let sink = Sink {
            outbox: state.outbox.clone(),
            wake: state.wake.clone(),
            cap,
            tap: control.tap,
            redactor,
            drop_lines: plan
                .drop_lines
                .iter()
                .map(|d| d.as_bytes().into())
                .collect(),
        };
        let (finish_tx, finish_rx) = oneshot::channel();
        let relay = match (child.stdout.take(), child.stderr.take()) {
            (Some(out), Some(err)) => {
                widen_pipe(&out);
                Some(tokio::spawn(relay::relay(out, err, sink, finish_rx)))
            }
            _ => None,
        };
        let (status, stopping) =
            supervise(&mut child, plan, Pgid::led_by(pid), stops, control.done).await;

        // The program is gone: end whatever it left, then let the relay drain the pipes.
        sweep_leftovers(plan, me, leader).await;
        if let Some(proxy) = proxy {
            proxy.finish().await;
        }
        notes.notes(&fence::set_aside(&absent));
        if let Some(relay) = relay {
            drain(relay, finish_tx).await;
        }
        if let Some(driver) = control.driver {
            driver.abort();
        }
        exit_info(status, stopping)
    }
}

/// A CLI driven through its control protocol, once its driver is started.
struct Control {
    driver: Option<tokio::task::JoinHandle<()>>,
    /// Where the relay copies the CLI's stdout, for the driver to read.
    tap: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// Told when the driver says the CLI's work is done.
    done: oneshot::Receiver<()>,
}

/// Starts the driver of a CLI driven through its control protocol, when the plan has one.
fn start_driver(
    plan: &LaunchPlan,
    child: &mut tokio::process::Child,
    decisions: mpsc::UnboundedReceiver<Decided>,
    state: &LinkState,
    cleared: &Arc<Mutex<cleared::Cleared>>,
) -> Control {
    // A CLI driven through its control protocol: its stdout is read by the driver too,
    // and its stdin stays open for the driver's answers.
    let mut tap = None;
    let (done_tx, done_rx) = oneshot::channel();
    let driver = match (&plan.control, child.stdin.take(), decisions) {
        (Some(control), Some(stdin), decisions) => {
            let (tap_tx, lines_in) = mpsc::unbounded_channel();
            tap = Some(tap_tx);
            Some(tokio::spawn(
                Driver {
                    protocol: control::protocol(control),
                    stdin,
                    lines_in,
                    decisions,
                    cleared: cleared.clone(),
                    asks: state.asks.clone(),
                    wake: state.wake.clone(),
                    cwd: plan.cwd.clone(),
                    redactor: Arc::new(control::ask_redactor(&plan.redact, &plan.cwd)),
                    done: Some(done_tx),
                }
                .run(),
            ))
        }
        _ => None,
    };
    Control {
        driver,
        tap,
        done: done_rx,
    }
}

/// Ends whatever the program left (its group, its marked processes, the runner's children),
/// and says in the runner's log when some would not die.
async fn sweep_leftovers(
    plan: &LaunchPlan,
    me: Option<ProcessIdentity>,
    leader: Option<ProcessIdentity>,
) {
    let target = SweepTarget {
        marker: Some(plan.run_id.to_string()),
        runner: me,
        group_leader: leader,
        reap_children: true,
    };
    let report = tokio::task::spawn_blocking(move || process::sweep(&target, SWEEP_DEADLINE))
        .await
        .unwrap_or_default();
    if report.survivors > 0 {
        say!(
            "bosun-runner: {} process(es) of the run would not die",
            report.survivors
        );
    }
}

/// Lets the relay read what is still in the pipes: told to finish after half of
/// [`DRAIN_GRACE`], left behind after all of it.
async fn drain(relay: tokio::task::JoinHandle<()>, finish_tx: oneshot::Sender<()>) {
    let drained = tokio::time::timeout(DRAIN_GRACE, async {
        let mut relay = relay;
        tokio::select! {
            _ = &mut relay => {}
            _ = tokio::time::sleep(DRAIN_GRACE / 2) => {
                let _ = finish_tx.send(());
                let _ = relay.await;
            }
        }
    })
    .await;
    if drained.is_err() {
        say!("bosun-runner: output pipes did not close");
    }
}

/// Once the program is gone: its output settled in the runner's own log, its secret files
/// deleted, its end reported to bosund (waiting for the link to end), the log flushed to disk
/// and the spool removed.
async fn report_end(
    exit: ExitInfo,
    plan: &LaunchPlan,
    state: &LinkState,
    flusher: tokio::task::JoinHandle<()>,
    link: tokio::task::JoinHandle<LinkEnd>,
) {
    let outbox = &state.outbox;
    settle_own_log(outbox).await;
    flusher.abort();
    let flushed = tokio::spawn(flush_at_end(outbox.clone()));
    delete_secret_files(plan);
    *lock(&state.exit) = Some(exit);
    state.wake.notify_one();
    match link.await {
        Ok(LinkEnd::ExitAcked) => {}
        Ok(LinkEnd::Refused(why)) => say!("bosun-runner: the daemon refused this run: {why}"),
        Err(e) => say!("bosun-runner: the link failed: {e}"),
    }
    let _ = flushed.await;
    lock(outbox).remove_spool();
}

/// The program's stdout pipe holds this much (Linux's default is 64 KiB): a program writing
/// fast then blocks, and the runner wakes, a quarter as often, and reads more at a time.
const PIPE_SIZE: i32 = 1024 * 1024;

/// Makes the program's stdout pipe [`PIPE_SIZE`] large. When the system refuses (a limit
/// below it in /proc/sys/fs/pipe-max-size), the pipe stays as it is.
fn widen_pipe(pipe: &tokio::process::ChildStdout) {
    use std::os::fd::AsFd;
    let _ = nix::fcntl::fcntl(pipe.as_fd(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
}

/// How often the runner's own log file is flushed to disk while output comes.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often output held by a full disk is tried again once the program is gone.
const SETTLE_RETRY: Duration = Duration::from_millis(200);
/// Failed flushes at the end after which the runner gives up and exits (the output is in the
/// file, but the disk would not say it has it).
const SETTLE_FLUSH_TRIES: u32 = 5;

/// Flushes the runner's own log file to disk every [`FLUSH_EVERY`] while the run goes on.
async fn keep_flushed(outbox: Arc<Mutex<Outbox>>, wake: Arc<Notify>) {
    loop {
        tokio::time::sleep(FLUSH_EVERY).await;
        if let Err(e) = flush_own_log(&outbox).await {
            say!(
                "bosun-runner: could not flush the run's log file to disk: {e}; it is written again and flushed on the next round"
            );
        }
        // The link says to bosund what came of it, when that changed.
        wake.notify_one();
    }
}

/// Flushes what of the runner's own log file is not known to be on disk ([`outbox::flush`]),
/// and keeps what came of it in the outbox, for bosund to hear.
async fn flush_own_log(outbox: &Arc<Mutex<Outbox>>) -> Result<(), FlushError> {
    let Some(job) = lock(outbox).flush_job()? else {
        return Ok(());
    };
    let upto = job.upto;
    let flushed = tokio::task::spawn_blocking(move || outbox::flush(&job, File::sync_data)).await?;
    let said = flushed.as_ref().map_err(|f| f.error.clone()).err();
    lock(outbox).flush_done(upto, flushed);
    said.map_or(Ok(()), |e| Err(FlushError::Disk(e)))
}

/// Once the program is gone: every chunk into the runner's own log file, waiting for room on a
/// full disk as long as it takes, before the end is reported.
async fn settle_own_log(outbox: &Arc<Mutex<Outbox>>) {
    loop {
        let held = {
            let mut o = lock(outbox);
            o.retry();
            o.held()
        };
        if !held {
            return;
        }
        tokio::time::sleep(SETTLE_RETRY).await;
    }
}

/// The runner's own log file flushed to disk at the end of the run. It runs beside the report
/// of the end (bosund records an end without waiting for the disk, as it always has), and the
/// runner exits only once it is done.
async fn flush_at_end(outbox: Arc<Mutex<Outbox>>) {
    for _ in 0..SETTLE_FLUSH_TRIES {
        match flush_own_log(&outbox).await {
            Ok(()) => return,
            Err(e) => {
                say!("bosun-runner: could not flush the run's log file to disk: {e}");
                tokio::time::sleep(SETTLE_RETRY).await;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes the plan's files and starts the program in a process group of its own, under the
/// plan's fence (what it applied, in words, beside the child).
fn start_program(plan: &LaunchPlan) -> Result<Program, LaunchError> {
    for file in &plan.files {
        write_private_file(&file.path, file.contents.as_bytes()).map_err(|source| {
            LaunchError::WriteFile {
                path: file.path.clone(),
                source,
            }
        })?;
    }
    if !plan.cwd.is_dir() {
        return Err(LaunchError::NoFolder {
            program: plan.program.clone(),
            cwd: plan.cwd.clone(),
        });
    }
    // The runner's own files are private (it inherits bosund's 0o077); the program gets the
    // mask of the person who started the run.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(plan.umask as _));
    let mut cmd = tokio::process::Command::new(&plan.program);
    cmd.args(&plan.args)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .env(RUN_MARKER_ENV, plan.run_id.to_string())
        .current_dir(&plan.cwd)
        .stdin(if plan.control.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // The run's own folders (the CLI's state, its caches, its TMPDIR), and those a fenced
    // run's programs make when they need them, made before the fence names them.
    let folders = plan.folders.iter().map(|f| &f.path);
    for dir in folders.chain(plan.fence.iter().flat_map(|f| &f.make)) {
        if !dir.is_dir() {
            bosun_shared::paths::create_private_dir(dir).map_err(|source| {
                LaunchError::MakeFolder {
                    dir: dir.clone(),
                    source,
                }
            })?;
        }
    }
    let absent = plan.fence.as_ref().map(fence::absent).unwrap_or_default();
    let (report, spaces, net) = match &plan.fence {
        None => (None, None, None),
        Some(f) => {
            let empty =
                fence::unreadable_file(&plan.run_dir).map_err(|source| LaunchError::WriteFile {
                    path: plan.run_dir.join(fence::UNREADABLE),
                    source,
                })?;
            let fence = fence::Fence::build(f, &empty)?;
            let report = fence.report.clone();
            let (spaces, net) = fence.install(&mut cmd)?;
            (Some(report), spaces, net)
        }
    };
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(source) => {
            if let Some(why) = spaces.and_then(fence::ns::Started::failure) {
                return Err(why.into());
            }
            return Err(LaunchError::Spawn {
                program: plan.program.clone(),
                source,
            });
        }
    };
    let net = match (spaces, net) {
        (Some(spaces), Some(net)) => Some((net, spaces.listeners()?)),
        _ => None,
    };
    Ok(Program {
        child,
        fence: report,
        net,
        absent,
    })
}

/// A started program: the child, the fence it is under (in words), and its fenced network's
/// proxy to serve.
struct Program {
    child: tokio::process::Child,
    fence: Option<String>,
    net: Option<(fence::Net, fence::ns::Listeners)>,
    /// The paths to keep read-only that did not exist at the start, checked at the end.
    absent: Vec<std::path::PathBuf>,
}

fn write_private_file(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        bosun_shared::paths::create_private_dir(parent)?;
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents)?;
    f.sync_all()
}

/// Deletes what the run needed only while it ran: the gateway's socket, the run's scratch
/// folders (its `TMPDIR`, its caches: never one outside the run's directory), and its secret
/// files. The CLI's state folder stays, with its transcripts.
fn delete_secret_files(plan: &LaunchPlan) {
    if !plan.gateway.is_empty() {
        let _ = fs::remove_file(plan.run_dir.join(bosun_shared::gateway::SOCKET_FILE));
    }
    let scratch = plan
        .folders
        .iter()
        .filter(|f| f.at_end == AtEnd::Remove && f.path.starts_with(&plan.run_dir));
    for folder in scratch {
        match fs::remove_dir_all(&folder.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => say!(
                "bosun-runner: could not remove {}: {e}",
                folder.path.display()
            ),
        }
    }
    for file in plan.files.iter().filter(|f| f.secret) {
        match fs::remove_file(&file.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => say!(
                "bosun-runner: could not delete {}: {e}",
                file.path.display()
            ),
        }
    }
}

/// Waits for the program to exit, carrying out stop orders, the time cap and the runner's own
/// signals by the ladder meanwhile.
async fn supervise(
    child: &mut tokio::process::Child,
    plan: &LaunchPlan,
    pgid: Pgid,
    stops: &mut mpsc::UnboundedReceiver<StopOrder>,
    mut done: oneshot::Receiver<()>,
) -> (Option<std::process::ExitStatus>, Option<Stopping>) {
    let mut done_open = true;
    let mut finish_by: Option<tokio::time::Instant> = None;
    let mut finish_ladder: Option<tokio::task::JoinHandle<()>> = None;
    let cap = plan.time_cap_ms.map(Duration::from_millis);
    let cap_at = cap.map(|c| tokio::time::Instant::now() + c);
    let far = tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
    let mut stopping: Option<Stopping> = None;
    let mut ladder: Option<tokio::task::JoinHandle<()>> = None;
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut sigint = signal(SignalKind::interrupt()).ok();
    let mut sighup = signal(SignalKind::hangup()).ok();

    let status = loop {
        let mut start_ladder = |stopping: &mut Option<Stopping>, outcome, reason: String, now| {
            if stopping.is_none() {
                *stopping = Some(Stopping { outcome, reason });
                ladder = Some(tokio::spawn(run_ladder(pgid, plan.ladder, now)));
            } else if now {
                let _ = process::signal_group(pgid, Signal::SIGKILL);
            }
        };
        tokio::select! {
            status = child.wait() => break status.ok(),
            Some(order) = stops.recv() => {
                start_ladder(&mut stopping, Outcome::Stopped, order.reason, order.immediate);
            }
            _ = tokio::time::sleep_until(cap_at.unwrap_or(far)), if cap_at.is_some() && stopping.is_none() => {
                let reason = format!("time cap {} reached", cap.map(format_duration).unwrap_or_default());
                start_ladder(&mut stopping, Outcome::TimedOut, reason, false);
            }
            Some(()) = recv_signal(&mut sigterm) => {
                start_ladder(&mut stopping, Outcome::Stopped, "stopped from outside bosun: the runner was sent SIGTERM".into(), false);
            }
            Some(()) = recv_signal(&mut sigint) => {
                start_ladder(&mut stopping, Outcome::Stopped, "stopped from outside bosun: the runner was sent SIGINT".into(), false);
            }
            Some(()) = recv_signal(&mut sighup) => {}
            r = &mut done, if done_open => {
                done_open = false;
                if r.is_ok() {
                    finish_by = Some(tokio::time::Instant::now() + FINISH_GRACE);
                }
            }
            _ = tokio::time::sleep_until(finish_by.unwrap_or(far)), if finish_by.is_some() && stopping.is_none() => {
                finish_by = None;
                say!("bosun-runner: the CLI's work is done but it did not exit within {}s; ending it by the ladder", FINISH_GRACE.as_secs());
                finish_ladder = Some(tokio::spawn(run_ladder(pgid, plan.ladder, false)));
            }
        }
    };
    for l in [ladder, finish_ladder].into_iter().flatten() {
        l.abort();
    }
    // A signal sent to the whole job by a cluster engine (`scancel`) reaches the program and the
    // runner at once, and the program may die of it before the runner's own signal is read: a
    // program killed by SIGTERM or SIGINT while the runner got the same is stopped from outside.
    let killed_by = status.and_then(|s| s.signal());
    if stopping.is_none() && matches!(killed_by, Some(libc::SIGTERM | libc::SIGINT)) {
        let both = tokio::time::timeout(OUTSIDE_SIGNAL_WAIT, async {
            tokio::select! {
                Some(()) = recv_signal(&mut sigterm) => "SIGTERM",
                Some(()) = recv_signal(&mut sigint) => "SIGINT",
            }
        })
        .await;
        if let Ok(sig) = both {
            stopping = Some(Stopping {
                outcome: Outcome::Stopped,
                reason: format!(
                    "stopped from outside bosun: the runner and the program were sent {sig}"
                ),
            });
        }
    }
    (status, stopping)
}

async fn recv_signal(sig: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match sig {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// SIGINT, wait, SIGTERM, wait, SIGKILL, to the program's whole process group. Aborted as soon
/// as the program exits.
async fn run_ladder(pgid: Pgid, ladder: bosun_protocol::runner::StopLadder, now: bool) {
    if !now {
        for (sig, grace) in [
            (Signal::SIGINT, ladder.int_grace_ms),
            (Signal::SIGTERM, ladder.term_grace_ms),
        ] {
            if !process::signal_group(pgid, sig).unwrap_or(false) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(grace)).await;
        }
    }
    let _ = process::signal_group(pgid, Signal::SIGKILL);
}

fn exit_info(status: Option<std::process::ExitStatus>, stopping: Option<Stopping>) -> ExitInfo {
    let code = status.and_then(|s| s.code());
    let signal = status.and_then(|s| s.signal());
    let (outcome, reason) = match stopping {
        Some(s) => (s.outcome, s.reason),
        None => match (code, signal) {
            (Some(0), _) => (Outcome::Succeeded, "exited with status 0".to_string()),
            (Some(c), _) => (Outcome::Failed, format!("exited with status {c}")),
            (None, Some(sig)) => (Outcome::Failed, format!("killed by {}", signal_name(sig))),
            (None, None) => (Outcome::Failed, "ended in an unknown way".to_string()),
        },
    };
    ExitInfo {
        outcome,
        code,
        signal,
        reason,
    }
}
