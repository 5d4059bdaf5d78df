//! What bosund keeps is bounded: decided approvals, and finished runs' decision details, logs
//! and MCP call records, are kept for bosund's retention (`bosun daemon set retention=…`; 30
//! days unless the person says), and the finished runs' logs together no larger than
//! `logs.max` when the person sets one (the oldest runs' go first); then they are pruned in
//! the background, so the store and the state directory do not grow with every run for ever.
//! A run keeps its summary (its record, its outcome, its usage, how many decisions were
//! pruned, and when and why its log went); an approval still waiting, and anything of a run
//! still going, is never pruned. The last round's figures (when it ended, how long it took,
//! what went) are in `daemon status`.
//!
//! A round that pruned something, with no run going, ends by compacting the store, so that the
//! file gives the space back (`bosun daemon compact` does it at once: [`compact`]).
//!
//! **A pruned log is said before it is gone.** A run's record says its log was pruned in a
//! durable commit before its files are deleted: a crash between the two leaves files that the
//! next round deletes, never a record that promises a log that is not there.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bosun_approvals::record::{ApprovalRecord, ApprovalState};
use bosun_kit::offload::blocking;
use bosun_protocol::runs::{CompactView, PruneView};
use bosun_runs::decisions::{self, DecisionRow};
use bosun_runs::record::{LogPruned, PruneWhy, RunRecord};
use bosun_shared::Timestamp;
use bosun_shared::gateway::CALLS_FILE;
use bosun_store::StoreError;
use bosun_store::writer::Change;
use tracing::{info, warn};

use crate::ctx::DaemonCtx;
use crate::settings::LogsMax;

/// The first round, this long after bosund starts (it has runs to reattach first).
const FIRST_ROUND: Duration = Duration::from_secs(60);
/// And then a round every hour, or at once when the retention is set.
const ROUND: Duration = Duration::from_secs(3600);
/// The most changes committed together.
const BATCH: usize = 500;
/// A finished run's files that prune takes: its output, its runner's own log, a remote run's
/// spool, and the MCP calls its gateway recorded. (The CLI's own state, with the session
/// transcript a continued run carries over, stays.)
const RUN_FILES: [&str; 4] = ["log", "runner.log", "spool", CALLS_FILE];

/// Prunes every hour, and whenever `ctx.prune_now` is notified, until aborted.
pub async fn every_hour(ctx: Arc<DaemonCtx>) {
    let mut wait = FIRST_ROUND;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.prune_now.notified() => {}
        }
        wait = ROUND;
        let (retention, logs_max) = {
            let s = ctx.settings.lock().await;
            (s.retention_ms, s.logs_max)
        };
        let cutoff = Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(retention));
        prune_audit(&ctx, cutoff).await;
        let started = Instant::now();
        let result = round(&ctx, cutoff, logs_max).await;
        // The pass over every approval and run is memory the daemon does not need again.
        bosun_shared::process::give_back_memory();
        match result {
            Ok(pruned) => {
                let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                if pruned.approvals > 0 || pruned.runs > 0 || pruned.logs > 0 {
                    info!(
                        approvals = pruned.approvals,
                        runs = pruned.runs,
                        logs = pruned.logs,
                        log_bytes = pruned.log_bytes,
                        took_ms,
                        "pruned what was older than the retention or past logs.max"
                    );
                }
                *ctx.last_prune
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(PruneView {
                    ended_at: Timestamp::now(),
                    took_ms,
                    approvals: pruned.approvals,
                    runs: pruned.runs,
                    logs: pruned.logs,
                    log_bytes: pruned.log_bytes,
                });
                // Idle: the space the round freed goes back to the file system.
                let freed = pruned.approvals > 0 || pruned.runs > 0 || pruned.logs > 0;
                if freed
                    && ctx.live.is_empty()
                    && let Err(e) = compact(&ctx).await
                {
                    warn!(error = %e, "could not compact the store after pruning; the next round tries again");
                }
            }
            Err(e) => warn!(error = %e, "could not prune; the next round tries again"),
        }
    }
}

/// The audit log's entries older than the retention go too, the last of them kept as the
/// anchor the rest follow.
async fn prune_audit(ctx: &Arc<DaemonCtx>, cutoff: Timestamp) {
    let audit = ctx.audit.clone();
    match tokio::task::spawn_blocking(move || audit.prune(cutoff)).await {
        Ok(Ok(0)) => {}
        Ok(Ok(entries)) => info!(
            entries,
            "pruned the audit log's entries older than the retention"
        ),
        Ok(Err(e)) => {
            warn!(error = %e, "could not prune the audit log; the next round tries again")
        }
        Err(e) => warn!(error = %e, "could not prune the audit log"),
    }
}

/// Compacts the store through its writer and keeps the figures for `daemon status`.
pub async fn compact(ctx: &Arc<DaemonCtx>) -> Result<CompactView, StoreError> {
    let before = ctx.store.file_bytes().unwrap_or(0);
    let started = Instant::now();
    ctx.writer.compact().await?;
    let view = CompactView {
        ended_at: Timestamp::now(),
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        before,
        after: ctx.store.file_bytes().unwrap_or(0),
    };
    info!(
        before = view.before,
        after = view.after,
        took_ms = view.took_ms,
        "compacted the store"
    );
    *ctx.last_compact
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(view);
    Ok(view)
}

/// When an approval was decided; `None` while it waits.
fn decided_at(a: &ApprovalRecord) -> Option<Timestamp> {
    match &a.state {
        ApprovalState::Waiting => None,
        ApprovalState::Allowed { at }
        | ApprovalState::Denied { at, .. }
        | ApprovalState::Expired { at, .. }
        | ApprovalState::Ended { at }
        | ApprovalState::Withdrawn { at } => Some(*at),
    }
}

/// What a round pruned.
#[derive(Default)]
struct Pruned {
    approvals: u64,
    /// Runs whose decision details went.
    runs: u64,
    /// Runs whose logs went, and what their files held.
    logs: u64,
    log_bytes: u64,
}

/// A finished run whose log is still there: its files and what they hold.
struct Kept {
    run: RunRecord,
    ended_at: Timestamp,
    files: Vec<PathBuf>,
    bytes: u64,
    /// Its decision rows, when they go in this round (with the record that counts them).
    decisions: Vec<Change>,
}

impl Kept {
    /// Says on the run's record that its log goes now, and why; counted in `pruned`.
    fn say_pruned(&mut self, why: PruneWhy, at: Timestamp, pruned: &mut Pruned) {
        self.run.log_pruned = Some(LogPruned {
            at,
            why,
            bytes: self.bytes,
        });
        pruned.logs += 1;
        pruned.log_bytes += self.bytes;
    }
}

/// A finished run's files that prune takes, those there are, and their size.
fn files_of(dirs: &bosun_shared::paths::StateDir, run: &RunRecord) -> (Vec<PathBuf>, u64) {
    let mut folders = vec![dirs.run_dir(run.id)];
    folders.extend(run.placed.as_ref().map(|p| p.dir.clone()));
    let mut files = Vec::new();
    let mut bytes = 0;
    for dir in folders {
        for name in RUN_FILES {
            let path = dir.join(name);
            if let Ok(m) = std::fs::symlink_metadata(&path)
                && m.is_file()
            {
                bytes += m.len();
                files.push(path);
            }
        }
    }
    (files, bytes)
}

/// Prunes what was decided or ended before `cutoff`, and the oldest finished runs' logs past
/// `logs_max`. One pass over each table, a record at a time (a store holds millions of decided
/// calls): only what is to change is kept in memory.
async fn round(
    ctx: &Arc<DaemonCtx>,
    cutoff: Timestamp,
    logs_max: Option<LogsMax>,
) -> Result<Pruned, StoreError> {
    let (store, live, dirs) = (ctx.store.clone(), ctx.live.clone(), ctx.dirs.clone());
    let (groups, deletions, pruned) = blocking(move || {
        let read = store.read()?;
        let mut groups: Vec<Vec<Change>> = Vec::new();
        let mut pruned = Pruned::default();
        read.each::<ApprovalRecord>(|a| {
            if decided_at(&a).is_some_and(|at| at < cutoff) && live.get(a.run).is_none() {
                groups.push(vec![Change::delete::<ApprovalRecord>(&a.id)]);
                pruned.approvals += 1;
            }
            Ok(())
        })?;
        // Finished runs whose log is still there, for `logs.max`; those past the retention are
        // pruned here and now.
        let mut kept: Vec<Kept> = Vec::new();
        let mut deletions: Vec<Vec<PathBuf>> = Vec::new();
        let now = Timestamp::now();
        read.each::<RunRecord>(|mut run| {
            let Some(ended_at) = run.ended_at.filter(|_| run.state.is_final()) else {
                return Ok(());
            };
            if live.get(run.id).is_some() {
                return Ok(());
            }
            let over = ended_at < cutoff;
            let mut decisions = Vec::new();
            if over && let Some(agent) = run.agent.as_mut() {
                let keys = decisions::keys_of(&read, run.id)?;
                if !keys.is_empty() {
                    agent.decisions_pruned += keys.len() as u64;
                    decisions = keys.iter().map(Change::delete::<DecisionRow>).collect();
                    pruned.runs += 1;
                }
            }
            let (files, bytes) = files_of(&dirs, &run);
            if files.is_empty() {
                if !decisions.is_empty() {
                    decisions.push(Change::put(&run));
                    groups.push(decisions);
                }
                return Ok(());
            }
            let mut k = Kept {
                run,
                ended_at,
                files,
                bytes,
                decisions,
            };
            if over {
                // A record that says so already (a round cut off by a crash after its commit)
                // keeps what it says; only its files go.
                if k.run.log_pruned.is_none() {
                    k.say_pruned(PruneWhy::Retention, now, &mut pruned);
                    k.decisions.push(Change::put(&k.run));
                } else if !k.decisions.is_empty() {
                    k.decisions.push(Change::put(&k.run));
                }
                if !k.decisions.is_empty() {
                    groups.push(k.decisions);
                }
                deletions.push(k.files);
            } else {
                kept.push(k);
            }
            Ok(())
        })?;
        // Past `logs.max`: the oldest runs' logs go until the rest fit.
        let mut total: u64 = kept.iter().map(|k| k.bytes).sum();
        kept.sort_by_key(|k| (k.ended_at, k.run.id));
        for mut k in kept {
            let mut changed = !k.decisions.is_empty();
            if k.run.log_pruned.is_some() {
                // Said pruned by a round that a crash cut off before its files went.
                total -= k.bytes;
                deletions.push(k.files);
            } else if logs_max.is_some_and(|max| total > max.bytes()) {
                total -= k.bytes;
                k.say_pruned(PruneWhy::Size, now, &mut pruned);
                deletions.push(k.files);
                changed = true;
            }
            if changed {
                k.decisions.push(Change::put(&k.run));
                groups.push(k.decisions);
            }
        }
        Ok::<_, StoreError>((groups, deletions, pruned))
    })
    .await
    .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    // Whole groups a commit: a run's rows go in the commit that counts them on its record.
    let mut batch = Vec::new();
    for group in groups {
        batch.extend(group);
        if batch.len() >= BATCH {
            ctx.writer.commit(std::mem::take(&mut batch)).await?;
        }
    }
    if !batch.is_empty() {
        ctx.writer.commit(batch).await?;
    }
    // Every record that says its log was pruned is committed: now the files go.
    if !deletions.is_empty() {
        blocking(move || {
            for path in deletions.iter().flatten() {
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        warn!(path = %path.display(), error = %e, "could not delete a pruned run's file; the next round tries again")
                    }
                }
            }
        })
        .await
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    }
    Ok(pruned)
}
