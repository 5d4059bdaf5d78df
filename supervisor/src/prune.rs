//! Decided approvals and finished runs' decision details are kept for bosund's retention
//! (`bosun daemon set retention=…`; 30 days unless the person says), then pruned in the
//! background, so the store does not grow with every tool call of every run for ever. A run
//! keeps its summary (its record, its outcome, its usage, how many decisions were pruned); an
//! approval still waiting, and anything of a run still going, is never pruned. The last
//! round's figures (when it ended, how long it took, what went) are in `daemon status`.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bosun_approvals::record::{ApprovalRecord, ApprovalState};
use bosun_kit::offload::blocking;
use bosun_protocol::runs::PruneView;
use bosun_runs::decisions::{self, DecisionRow};
use bosun_runs::record::RunRecord;
use bosun_shared::Timestamp;
use bosun_store::StoreError;
use bosun_store::writer::Change;
use tracing::{info, warn};

use crate::ctx::DaemonCtx;

/// The first round, this long after bosund starts (it has runs to reattach first).
const FIRST_ROUND: Duration = Duration::from_secs(60);
/// And then a round every hour, or at once when the retention is set.
const ROUND: Duration = Duration::from_secs(3600);
/// The most changes committed together.
const BATCH: usize = 500;

/// Prunes every hour, and whenever `ctx.prune_now` is notified, until aborted.
pub async fn every_hour(ctx: Arc<DaemonCtx>) {
    let mut wait = FIRST_ROUND;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.prune_now.notified() => {}
        }
        wait = ROUND;
        let retention = ctx.settings.lock().await.retention_ms;
        let cutoff = Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(retention));
        prune_audit(&ctx, cutoff).await;
        let started = Instant::now();
        match round(&ctx, cutoff).await {
            Ok((approvals, runs)) => {
                let took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                if approvals > 0 || runs > 0 {
                    info!(
                        approvals,
                        runs, took_ms, "pruned what was older than the retention"
                    );
                }
                *ctx.last_prune
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(PruneView {
                    ended_at: Timestamp::now(),
                    took_ms,
                    approvals,
                    runs,
                });
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

/// Prunes what was decided or ended before `cutoff`: how many approvals went, and of how many
/// runs the decision details. One pass over each table, a record at a time (a store holds
/// millions of decided calls): only what is to change is kept in memory.
async fn round(ctx: &Arc<DaemonCtx>, cutoff: Timestamp) -> Result<(u64, u64), StoreError> {
    let (store, live) = (ctx.store.clone(), ctx.live.clone());
    let (mut changes, pruned) = blocking(move || {
        let read = store.read()?;
        let mut changes = Vec::new();
        let mut pruned = (0, 0);
        read.each::<ApprovalRecord>(|a| {
            if decided_at(&a).is_some_and(|at| at < cutoff) && live.get(a.run).is_none() {
                changes.push(vec![Change::delete::<ApprovalRecord>(&a.id)]);
                pruned.0 += 1;
            }
            Ok(())
        })?;
        read.each::<RunRecord>(|mut run| {
            let over = run.state.is_final() && run.ended_at.is_some_and(|e| e < cutoff);
            if !over || live.get(run.id).is_some() {
                return Ok(());
            }
            let Some(agent) = run.agent.as_mut() else {
                return Ok(());
            };
            let keys = decisions::keys_of(&read, run.id)?;
            if keys.is_empty() {
                return Ok(());
            }
            agent.decisions_pruned += keys.len() as u64;
            let mut group: Vec<Change> = keys.iter().map(Change::delete::<DecisionRow>).collect();
            group.push(Change::put(&run));
            changes.push(group);
            pruned.1 += 1;
            Ok(())
        })?;
        Ok::<_, StoreError>((changes, pruned))
    })
    .await
    .map_err(|e| StoreError::Corrupt(e.to_string()))??;
    // Whole groups a commit: a run's rows go in the commit that counts them on its record.
    let mut batch = Vec::new();
    for group in changes.drain(..) {
        batch.extend(group);
        if batch.len() >= BATCH {
            ctx.writer.commit(std::mem::take(&mut batch)).await?;
        }
    }
    if !batch.is_empty() {
        ctx.writer.commit(batch).await?;
    }
    Ok(pruned)
}
