//! Answers about runs' tool calls that wait for the person: the list is read from the store;
//! a decision goes to the run's own RunActor, which alone decides its approvals.

use bosun_approvals::record::ApprovalReads;
use std::sync::Arc;

use bosun_approvals::record::{ApprovalRecord, ApprovalState};
use bosun_kit::prefix::{PrefixError, by_prefix};
use bosun_protocol::WireError;
use bosun_protocol::approvals::{ApprovalView, Approvals, ApproveCard, Decide};
use bosun_runs::follow::blocking;
use bosun_runs::run_actor::{PersonDecision, RunMsg};
use bosun_shared::ApprovalId;

use super::Handle;
use super::runs::resolve;
use super::views::View;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

/// The approvals that wait (with `decided`, every one kept), in the order asked.
async fn list(ctx: &Arc<DaemonCtx>, decided: bool) -> Result<Vec<ApprovalRecord>, Failure> {
    let mut list = if decided {
        blocking(&ctx.store, |s| s.approvals()).await?
    } else {
        blocking(&ctx.store, |s| s.waiting_approvals()).await?
    };
    list.sort_by_key(|a| (a.asked_at, a.run, a.seq, a.id));
    Ok(list)
}

impl Handle for Approvals {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ApprovalView>, Failure> {
        let run = match &self.run {
            Some(r) => Some(resolve(ctx, r).await?),
            None => None,
        };
        Ok(list(ctx, self.all)
            .await?
            .into_iter()
            .filter(|a| self.all || a.state == ApprovalState::Waiting)
            .filter(|a| run.is_none_or(|r| a.run == r))
            .map(|a| a.view())
            .collect())
    }
}

/// Why an approval that is not waiting cannot be decided, in plain words.
fn not_waiting(a: &ApprovalRecord) -> WireError {
    let short = a.id.short();
    WireError::conflict(match &a.state {
        ApprovalState::Waiting => format!("approval {short} is waiting"),
        ApprovalState::Allowed { .. } => format!("approval {short} was already allowed"),
        ApprovalState::Denied { by, .. } => format!("approval {short} was already denied by {by}"),
        ApprovalState::Expired { .. } => {
            format!("approval {short} ran out of time and was denied; the agent may ask again")
        }
        ApprovalState::Ended { .. } => {
            format!("approval {short} can no longer be decided: the run ended before a decision")
        }
        ApprovalState::Withdrawn { .. } => {
            format!("approval {short} can no longer be decided: the CLI withdrew the call")
        }
    })
}

async fn decide(
    ctx: &Arc<DaemonCtx>,
    a: &ApprovalRecord,
    decision: PersonDecision,
) -> Result<ApprovalView, Failure> {
    if a.state != ApprovalState::Waiting {
        return Err(not_waiting(a).into());
    }
    let Some(entry) = ctx.live.get(a.run) else {
        return Err(WireError::conflict(format!(
            "approval {} can no longer be decided: its run {} is not running",
            a.id.short(),
            a.run.short()
        ))
        .into());
    };
    let id = a.id;
    let said = match &decision {
        PersonDecision::Allow { .. } => "allowed",
        PersonDecision::AllowAlways => "allowed always",
        PersonDecision::Deny { .. } => "denied",
        PersonDecision::Block { .. } => "blocked",
    };
    let view = ractor::call!(entry.actor, |reply| RunMsg::Decide {
        approval: id,
        decision,
        reply
    })
    .map_err(|_| {
        WireError::conflict(format!(
            "approval {} can no longer be decided: its run has just ended",
            id.short()
        ))
    })?
    .map(|decided| decided.view())
    .map_err(Failure::from)?;
    ctx.audit.record(
        &format!(
            "{said} approval {} of run {}: {} ({})",
            id.short(),
            a.run.short(),
            bosun_shared::text::visible(&a.tool),
            a.class
        ),
        Some(&a.view()),
        Some(&view),
    );
    Ok(view)
}

impl Handle for Decide {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<ApprovalView, Failure> {
        if self.allow && self.block {
            return Err(WireError::bad_request(
                "--block goes with a denial: `bosun deny ID --block`",
            )
            .into());
        }
        if !self.allow && self.always {
            return Err(WireError::bad_request(
                "--always goes with an approval: `bosun approve ID --always`",
            )
            .into());
        }
        // Among those that wait first; among all, to say why one that does not cannot be.
        let missing =
            |k: &str| format!("there is no approval `{k}`; `bosun inbox` lists those that wait");
        let mut found = list(ctx, false).await?;
        let id: ApprovalId = match by_prefix(
            found.iter().map(|a| a.id),
            &self.approval,
            "approvals'",
            missing,
        ) {
            Ok(id) => id,
            Err(PrefixError::NoMatch(_)) => {
                found = list(ctx, true).await?;
                by_prefix(
                    found.iter().map(|a| a.id),
                    &self.approval,
                    "approvals'",
                    missing,
                )?
            }
            Err(e) => return Err(e.into()),
        };
        let Some(a) = found.iter().find(|a| a.id == id) else {
            return Err(WireError::not_found("the approval went missing").into());
        };
        // The wire's three switches, read into the one answer they make (the combinations
        // that mean nothing were refused above).
        let decision = match (self.allow, self.always, self.block) {
            (true, true, _) => PersonDecision::AllowAlways,
            (true, false, _) => PersonDecision::Allow {
                answer: self.answer,
            },
            (false, _, true) => PersonDecision::Block {
                message: self.message,
            },
            (false, _, false) => PersonDecision::Deny {
                message: self.message,
            },
        };
        decide(ctx, a, decision).await
    }
}

impl Handle for ApproveCard {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<Vec<ApprovalView>, Failure> {
        let list = list(ctx, false).await?;
        let waiting: Vec<&ApprovalRecord> = list
            .iter()
            .filter(|a| a.state == ApprovalState::Waiting)
            .collect();
        let card = by_prefix(
            waiting
                .iter()
                .filter_map(|a| a.card)
                .collect::<std::collections::BTreeSet<_>>(),
            &self.card,
            "cards'",
            |k| format!("no run of a card `{k}` has a tool call waiting; `bosun inbox` lists them"),
        )?;
        let mut done = Vec::new();
        // In the order asked: each is decided and sent to its runner before the next is decided.
        // A server's form is left for the person to fill in.
        for a in waiting
            .into_iter()
            .filter(|a| a.card == Some(card) && a.class != bosun_runs::run_actor::ELICITATION_CLASS)
        {
            match decide(ctx, a, PersonDecision::allow()).await {
                Ok(view) => done.push(view),
                // A wait for the card's (or its project's) budget is let go by the first one
                // allowed, for every run of the card: allowed already, not refused.
                Err(e) if a.budget_scope.is_some() => {
                    let id = a.id;
                    match blocking(&ctx.store, move |s| s.get::<ApprovalRecord>(&id)).await? {
                        Some(now) if matches!(now.state, ApprovalState::Allowed { .. }) => {
                            done.push(now.view())
                        }
                        Some(_) | None => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}
