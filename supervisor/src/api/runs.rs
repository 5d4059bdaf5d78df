//! Answers about runs and the daemon itself (start, list, show, stop; status, stop the
//! daemon), and the lookups the session shares: a run named by an id prefix, the freshest view
//! of a run. (Following logs and subscribing to runs belong to the session.)

use bosun_runs::record::{RunReads, RunRecord};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::Arc;

use bosun_protocol::runner::StopOrder;
use bosun_protocol::runs::{
    DaemonCompact, DaemonSet, DaemonStatus, DaemonStatusView, DaemonStop, GetRun, ListRuns,
    McpCallsView, RUNS_PAGE_BYTES, RunList, RunsCursor, StopRun,
};
use bosun_protocol::ui::{RunView, StartRunParams};
use bosun_protocol::{ErrorCode, PROTOCOL_VERSION, WireError};
use bosun_runs::follow::blocking;
use bosun_runs::live::LiveEntry;
use bosun_runs::run_actor::RunMsg;
use bosun_runs::{RunSpec, RunsMsg};
use bosun_shared::RunId;
use bosun_shared::gateway::{CALLS_FILE, CallEntry};
use bosun_shared::run::{Ladder, RunRequest};
use bosun_shared::time::{StopGrace, TimeCap};
use bosun_store::StoreError;
use tracing::error;

use super::views::{View, run_view as run_view_of};
use super::{Handle, starting_up};
use crate::control::RootMsg;
use crate::ctx::DaemonCtx;
use crate::settings::LogsMax;
use crate::wire::Failure;

impl Handle for StartRunParams {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<RunView, Failure> {
        start(ctx, RunSpec::plain(run_request(self)?)).await
    }
}

/// The wire's start request as the runs area takes it: its time cap, its ladder's graces and
/// its output cap read into values that hold only what a run may have, or refused saying why.
/// The wire carries milliseconds; a value out of range is refused here, once, for every client.
fn run_request(p: StartRunParams) -> Result<RunRequest, Failure> {
    let ladder = match p.ladder {
        Some(l) => Some(Ladder {
            int_grace: StopGrace::from_millis(l.int_grace_ms)?,
            term_grace: StopGrace::from_millis(l.term_grace_ms)?,
        }),
        None => None,
    };
    let max_output = match p.max_output {
        None => None,
        Some(n) => Some(NonZeroU64::new(n).ok_or_else(|| {
            WireError::new(
                ErrorCode::BadRequest,
                "an output cap must be more than zero bytes",
            )
        })?),
    };
    Ok(RunRequest {
        name: p.name,
        program: p.program,
        args: p.args,
        cwd: p.cwd,
        env: p.env,
        time_cap: p.time_cap_ms.map(TimeCap::from_millis).transpose()?,
        ladder,
        umask: p.umask,
        max_output,
        placement: p.placement,
    })
}

impl Handle for ListRuns {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<RunList, Failure> {
        let list = match self.page {
            None => RunList {
                runs: list_runs(ctx, self.all).await?,
                next: None,
            },
            Some(page) => runs_page(ctx, self.all, page.after).await?,
        };
        // Every run's record and decisions were read (each page reads every record): what that
        // took goes back to the system once the last page is made.
        if self.all && list.next.is_none() {
            bosun_shared::process::give_back_memory();
        }
        Ok(list)
    }
}

impl Handle for GetRun {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<RunView, Failure> {
        let id = resolve(ctx, &self.run).await?;
        let mut view = run_view(ctx, id).await?;
        let dir = match &view.placed {
            None => Some(ctx.dirs.run_dir(id)),
            Some(p) => ctx
                .remote
                .as_ref()
                .and_then(|r| r.remote.run_dir(&p.placement, id).ok()),
        };
        if let Some(dir) = dir {
            view.mcp_calls = tokio::task::spawn_blocking(move || read_calls(&dir))
                .await
                .ok()
                .flatten();
        }
        Ok(view)
    }
}

/// The MCP calls the gateway recorded in a run's folder: how many, and the last
/// [`McpCallsView::SHOWN`]. `None` when the run made none. A line that does not parse (one cut
/// short by a crash) is passed over.
fn read_calls(dir: &std::path::Path) -> Option<McpCallsView> {
    use std::io::BufRead;
    let file = std::fs::File::open(dir.join(CALLS_FILE)).ok()?;
    let mut calls = std::collections::VecDeque::new();
    let mut total = 0u64;
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(entry) = serde_json::from_str::<CallEntry>(&line) else {
            continue;
        };
        total += 1;
        if calls.len() == McpCallsView::SHOWN {
            calls.pop_front();
        }
        calls.push_back(entry);
    }
    (total > 0).then(|| McpCallsView {
        total,
        calls: calls.into(),
    })
}

impl Handle for StopRun {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<RunView, Failure> {
        let id = resolve(ctx, &self.run).await?;
        let Some(entry) = ctx.live.get(id) else {
            let view = run_view(ctx, id).await?;
            return Err(WireError::conflict(format!(
                "run {} has already ended ({})",
                view.short_id,
                view.outcome.map(|o| o.to_string()).unwrap_or_default()
            ))
            .into());
        };
        let order = StopOrder {
            reason: "stopped by the person".into(),
            immediate: false,
        };
        ractor::call!(entry.actor, |reply| RunMsg::Stop {
            order,
            reply: Some(reply)
        })
        .map_err(|_| WireError::conflict(format!("run {} has just ended", id.short())))?
        .map(|run| run.view())
        .map_err(Failure::from)
    }
}

impl Handle for DaemonStatus {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<DaemonStatusView, Failure> {
        Ok(status(ctx).await)
    }
}

/// Saves the settings with the changes made (all of them, or none when one is wrong), then
/// puts them in force.
impl Handle for DaemonSet {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<DaemonStatusView, Failure> {
        let changes = crate::settings::parse(&self.settings)?;
        let mut settings = ctx.settings.lock().await;
        let next = settings.with(&changes);
        ctx.writer.put(&next).await?;
        ctx.notifier.set(next.notify);
        ctx.audit.record(
            &format!("daemon set {}", self.settings.join(" ")),
            Some(&*settings),
            Some(&next),
        );
        *settings = next;
        drop(settings);
        // A retention set (or set again) prunes at once, not at the next hourly round.
        ctx.prune_now.notify_one();
        Ok(status(ctx).await)
    }
}

async fn status(ctx: &Arc<DaemonCtx>) -> DaemonStatusView {
    let shutting_down = match ctx.runs() {
        Some(runs) => ractor::call!(runs, |reply| RunsMsg::ShuttingDown { reply }).unwrap_or(true),
        None => false,
    };
    let settings = ctx.settings.lock().await.clone();
    DaemonStatusView {
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        protocol_version: PROTOCOL_VERSION,
        state_dir: ctx.dirs.root().to_path_buf(),
        started_at: ctx.started_at,
        live_runs: ctx.live.len(),
        attached_runners: ctx.live.attached(),
        shutting_down,
        storage_fault: ctx.writer.health().fault(),
        storage_last_fault: ctx.writer.health().last_fault(),
        runner_listener: ctx.remote.as_ref().map(|r| r.describe()),
        upgrade: ctx.upgrade.clone(),
        notify: Some(ctx.notifier.view()),
        retention_ms: Some(settings.retention_ms),
        last_prune: *ctx
            .last_prune
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        logs_max: settings.logs_max.map(LogsMax::bytes),
        store_bytes: ctx.store.file_bytes(),
        last_compact: *ctx
            .last_compact
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    }
}

/// Compacts the store now, whatever else goes on (runs' changes wait meanwhile).
impl Handle for DaemonCompact {
    const TASK: bool = true;

    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<DaemonStatusView, Failure> {
        crate::prune::compact(ctx).await?;
        Ok(status(ctx).await)
    }
}

impl Handle for DaemonStop {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<(), Failure> {
        let (root, runs) = (ctx.root(), ctx.runs());
        let (Some(root), Some(runs)) = (root, runs) else {
            return Err(starting_up());
        };
        let immediate =
            ractor::call!(runs, |reply| RunsMsg::ShuttingDown { reply }).unwrap_or(false);
        let _ = root.cast(RootMsg::Shutdown { immediate });
        Ok(())
    }
}

/// Starts a run the one way there is: [`bosun_runs::start`].
pub async fn start(ctx: &Arc<DaemonCtx>, spec: RunSpec) -> Result<RunView, Failure> {
    Ok(bosun_runs::start(ctx.runs_handle(), spec).await?.view())
}

fn store_error(e: StoreError) -> WireError {
    error!(error = %e, "a store read failed");
    WireError::internal(format!("bosund could not read its store: {e}"))
}

/// The run a person named by its id or a unique prefix of it.
pub async fn resolve(ctx: &Arc<DaemonCtx>, text: &str) -> Result<RunId, WireError> {
    let prefix = text.trim().to_ascii_lowercase();
    if prefix.is_empty() {
        return Err(WireError::bad_request(
            "no run given; name it by its id or the start of it",
        ));
    }
    if let Ok(id) = prefix.parse::<RunId>()
        && ctx.live.get(id).is_some()
    {
        return Ok(id);
    }
    let p = prefix.clone();
    let ids = blocking(&ctx.store, move |s| s.run_ids_with_prefix(&p, 3))
        .await
        .map_err(store_error)?;
    match ids.as_slice() {
        [] => Err(WireError::not_found(format!(
            "no run has an id starting with `{prefix}`; `bosun ps --all` lists every run"
        ))),
        [one] => Ok(*one),
        [a, b, ..] => Err(WireError::new(
            ErrorCode::Ambiguous,
            format!(
                "`{prefix}` is the start of more than one run's id ({}, {}{}); type more of it",
                a.short(),
                b.short(),
                if ids.len() > 2 { ", …" } else { "" }
            ),
        )),
    }
}

/// A live run as it is now, paused when its output cannot be written, and saying so when its
/// log could not be flushed.
fn live_view(ctx: &DaemonCtx, e: &LiveEntry) -> RunView {
    let mut view = run_view_of(&e.record, e.hub.state().received);
    view.paused = ctx.writer.health().paused(e.record.id);
    view.log_unflushed = ctx.writer.health().unflushed(e.record.id);
    view
}

/// A run as it is now: from its live snapshot, or from the store once it is over (a run that
/// ended while its log could not be flushed still says so).
pub async fn run_view(ctx: &Arc<DaemonCtx>, id: RunId) -> Result<RunView, WireError> {
    if let Some(e) = ctx.live.get(id) {
        return Ok(live_view(ctx, &e));
    }
    let rec = blocking(&ctx.store, move |s| s.run(id))
        .await
        .map_err(store_error)?;
    let mut view = rec
        .map(|r| run_view_of(&r, r.last_seq))
        .ok_or_else(|| WireError::not_found(format!("no run {id}")))?;
    view.log_unflushed = ctx.writer.health().unflushed(id);
    Ok(view)
}

/// One page of the runs after `after`, in the order they were made: runs are added while the
/// page's JSON stays within [`RUNS_PAGE_BYTES`] (one run at least, however large). The records
/// are read without their decisions, and only the page's runs get theirs (a few runs ahead at
/// a time, in one read each), so a page costs what it holds rather than what the whole history
/// holds.
async fn runs_page(
    ctx: &Arc<DaemonCtx>,
    all: bool,
    after: Option<RunsCursor>,
) -> Result<RunList, WireError> {
    let cursor = |r: &RunRecord| RunsCursor {
        created_at: r.created_at,
        run: r.id,
    };
    // A run only in the store comes with its record; a live one is viewed from its snapshot.
    let mut runs: Vec<(RunsCursor, Option<RunRecord>)> = if all {
        blocking(&ctx.store, |s| s.runs_without_decisions())
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|r| (cursor(&r), Some(r)))
            .collect()
    } else {
        ctx.live
            .entries()
            .iter()
            .map(|e| (cursor(&e.record), None))
            .collect()
    };
    runs.retain(|(c, _)| after.is_none_or(|a| *c > a));
    runs.sort_unstable_by_key(|(c, _)| *c);
    let mut page = RunList::default();
    let mut bytes = 0;
    let mut rest = runs.into_iter();
    loop {
        let ahead: Vec<_> = rest.by_ref().take(READ_AHEAD).collect();
        if ahead.is_empty() {
            return Ok(page);
        }
        for view in views_of(ctx, ahead).await? {
            let size = serde_json::to_vec(&view).map_or(0, |v| v.len() + 1);
            if !page.runs.is_empty() && bytes + size > RUNS_PAGE_BYTES {
                page.next = page.runs.last().map(|v| RunsCursor {
                    created_at: v.created_at,
                    run: v.id,
                });
                return Ok(page);
            }
            bytes += size;
            page.runs.push(view);
        }
    }
}

/// How many runs a page reads the decisions of at once.
const READ_AHEAD: usize = 64;

/// The views of `runs`, in order: a live run's from its snapshot, a stored run's from its record
/// with its decisions (read for all of them in one read). A run that was live when it was
/// chosen and is over now is left out: it is no longer one of the runs asked for.
async fn views_of(
    ctx: &Arc<DaemonCtx>,
    runs: Vec<(RunsCursor, Option<RunRecord>)>,
) -> Result<Vec<RunView>, WireError> {
    let runs: Vec<(Option<LiveEntry>, Option<RunRecord>)> = runs
        .into_iter()
        .map(|(at, record)| (ctx.live.get(at.run), record))
        .collect();
    let wanted: Vec<RunId> = runs
        .iter()
        .filter_map(|(live, record)| match (live, record) {
            (None, Some(r)) if r.agent.is_some() => Some(r.id),
            _ => None,
        })
        .collect();
    let ids = wanted.clone();
    let mut decisions: HashMap<RunId, _> = wanted
        .into_iter()
        .zip(
            blocking(&ctx.store, move |s| s.decisions_of_each(&ids))
                .await
                .map_err(store_error)?,
        )
        .collect();
    Ok(runs
        .into_iter()
        .filter_map(|(live, record)| match (live, record) {
            (Some(e), _) => Some(live_view(ctx, &e)),
            (None, Some(mut r)) => {
                if let (Some(agent), Some(d)) = (r.agent.as_mut(), decisions.remove(&r.id)) {
                    agent.decisions = d;
                }
                Some(run_view_of(&r, r.last_seq))
            }
            (None, None) => None,
        })
        .collect())
}

async fn list_runs(ctx: &Arc<DaemonCtx>, all: bool) -> Result<Vec<RunView>, WireError> {
    let mut views: Vec<RunView> = if all {
        let records = blocking(&ctx.store, |s| s.runs())
            .await
            .map_err(store_error)?;
        records
            .into_iter()
            .map(|r| match ctx.live.get(r.id) {
                Some(e) => live_view(ctx, &e),
                None => run_view_of(&r, r.last_seq),
            })
            .collect()
    } else {
        ctx.live
            .entries()
            .into_iter()
            .map(|e| live_view(ctx, &e))
            .collect()
    };
    views.sort_by_key(|v| (v.created_at, v.id));
    Ok(views)
}
