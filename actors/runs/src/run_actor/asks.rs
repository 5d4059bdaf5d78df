//! A run's tool calls: each ask of the runner is committed with its decision before the runner
//! hears it. The policy decides at once, or the call waits for the person as an approval (kept
//! in the store with its deadline), decided by the person, the deadline or the run's end.
//!
//! Exactly once: a decision is committed before it is sent, and an ask that comes again (after
//! a reconnect, or a restart of bosund) gets the decision that was committed, never a new one.

use crate::record::RunReads;
use bosun_approvals::record::ApprovalReads;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bosun_protocol::runner::{DaemonMsg, StopOrder, ToolAnswer, ToolAsk};
use bosun_shared::agents::CliKind;
use bosun_shared::usage::{Budget, BudgetScope, day_of};
use bosun_shared::{ApprovalId, CardId, Timestamp};
use ractor::{ActorProcessingErr, ActorRef};
use tracing::{info, warn};

use super::{RunActorState, RunMsg, ms};
use crate::RunsError;
use crate::decisions::DecisionRow;
use crate::events::RunsEvent;
use crate::spend::CardBudgets;
use bosun_agents::record::{AgentRun, Decision};
use bosun_approvals::Outcome;
use bosun_approvals::record::{ApprovalRecord, ApprovalState, changes_for, expired_message};
use bosun_kit::offload::blocking;
use bosun_store::writer::Change;

/// A budget reached at a call: what it says, what allowing gives more, and whose it is (a
/// card's or a project's day; `None` for the run's own).
struct BudgetReached {
    why: String,
    grant: Budget,
    scope: Option<BudgetScope>,
}

/// What the person says of one approval: each answer a person can give, with only what that
/// answer carries, so that no decision can both allow and block.
#[derive(Clone, Debug)]
pub enum PersonDecision {
    /// Let it go on; for a server's form, with the person's answer to it.
    Allow { answer: Option<serde_json::Value> },
    /// Let it go on, and every call like it from now on (`bosun approve --always`).
    AllowAlways,
    /// Refuse it; `message`, when given, tells the model why.
    Deny { message: Option<String> },
    /// Refuse it and every call like it from now on (`bosun deny --block`).
    Block { message: Option<String> },
}

impl PersonDecision {
    /// A plain allow (`bosun approve ID`, `approve --card`).
    pub fn allow() -> Self {
        Self::Allow { answer: None }
    }

    /// Whether it lets the call go on.
    pub fn allows(&self) -> bool {
        match self {
            Self::Allow { .. } | Self::AllowAlways => true,
            Self::Deny { .. } | Self::Block { .. } => false,
        }
    }

    /// The person's words for the model, given with a refusal.
    pub(super) fn message(self) -> Option<String> {
        match self {
            Self::Deny { message } | Self::Block { message } => message,
            Self::Allow { .. } | Self::AllowAlways => None,
        }
    }
}

/// What the RunActor knows of its run's asks.
#[derive(Debug, Default)]
pub struct Asks {
    /// Every decided ask, by key: what the runner is told if it asks again.
    pub(super) decided: HashMap<String, ToolAnswer>,
    /// Who decided each ask of `decided`, in the words of the run's record (told with it).
    pub(super) decided_by: HashMap<String, String>,
    /// The asks waiting for the person, by key.
    pub(super) waiting: HashMap<String, ApprovalRecord>,
    /// The run has taken in outside content this turn.
    escalated: bool,
    /// The `seq` of the next approval.
    pub(super) next_seq: u64,
    /// The calls that wait because the run's budget was reached, by key: each goes on to the
    /// policy once the person allows more.
    held: HashMap<String, ToolAsk>,
}

impl RunActorState {
    /// Rebuilds what is known of the run's asks from its record and the store (after a restart
    /// of bosund or of this actor), and re-arms the deadlines of those still waiting.
    pub(super) async fn load_asks(
        &mut self,
        myself: &ActorRef<RunMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let mut asks = Asks::default();
        let store = self.ctx.store.clone();
        let id = self.rec.id;
        if let Some(run) = self.rec.agent.as_mut() {
            // The decisions kept for the run so far (none for a run just made).
            run.decisions = blocking(move || store.decisions_of(id)).await??;
        }
        if let Some(run) = &self.rec.agent {
            for d in &run.decisions {
                asks.decided.insert(d.key.clone(), d.answer());
                asks.decided_by.insert(d.key.clone(), d.by.clone());
                asks.escalated |= d.allowed && d.escalates;
                // Each decided approval took its seq before those still waiting.
                asks.next_seq += u64::from(d.approval.is_some());
            }
        }
        let store = self.ctx.store.clone();
        let id = self.rec.id;
        for a in blocking(move || store.waiting_approvals_of(id)).await?? {
            asks.next_seq = asks.next_seq.max(a.seq + 1);
            match a.state {
                ApprovalState::Waiting => {
                    arm_deadline(myself, &a);
                    asks.waiting.insert(a.key.clone(), a);
                }
                ApprovalState::Allowed { .. }
                | ApprovalState::Denied { .. }
                | ApprovalState::Expired { .. }
                | ApprovalState::Ended { .. }
                | ApprovalState::Withdrawn { .. } => {
                    if let Some(answer) = a.answer() {
                        asks.escalated |= answer == ToolAnswer::Allow && a.escalates;
                        asks.decided.entry(a.key.clone()).or_insert(answer);
                        asks.decided_by
                            .entry(a.key.clone())
                            .or_insert_with(|| decided_by(&a.state));
                    }
                }
            }
        }
        self.asks = asks;
        Ok(())
    }

    pub(super) async fn on_ask(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: ToolAsk,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(answer) = self.asks.decided.get(&ask.key) {
            // Asked again after a reconnect: the same decision, once more.
            let by = self
                .asks
                .decided_by
                .get(&ask.key)
                .cloned()
                .unwrap_or_default();
            self.send(DaemonMsg::Decided {
                key: ask.key,
                answer: answer.clone(),
                by,
                unsaved: false,
            });
            return Ok(());
        }
        if let Some(a) = self.asks.waiting.get(&ask.key) {
            // Asked again while it waits (after a restart, the call itself is needed again
            // once a budget's approval is allowed). The runner is told it still waits (with no
            // note: the run's log said it the first time), so that a gateway that never heard
            // it does not take bosund for gone.
            let key = ask.key.clone();
            if a.budget.is_some() {
                self.asks.held.entry(ask.key.clone()).or_insert(ask);
            }
            self.send(DaemonMsg::Waiting {
                key,
                note: String::new(),
            });
            return Ok(());
        }
        if self.rec.state.is_final() {
            return Ok(());
        }
        let Some(run) = self.rec.agent.clone() else {
            // Only an agent's run has a policy; anything else asking is denied.
            return self
                .decide_now(
                    &ask,
                    false,
                    "bosun".into(),
                    Some("this run has no approval policy".into()),
                    false,
                    String::new(),
                )
                .await;
        };
        let store = self.ctx.store.clone();
        let escalated = self.asks.escalated;
        let ask2 = ask.clone();
        let folder = self.rec.cwd.clone();
        let reached = self.budget_reached(&run).await?;
        let eval =
            blocking(move || bosun_approvals::evaluate(&store, &run, &folder, escalated, &ask2))
                .await??;
        // A call the policy refuses costs nothing; any other waits for more budget first.
        if let Some(reached) = reached
            && !matches!(eval.outcome, Outcome::Deny { .. })
        {
            return self.ask_for_budget(myself, ask, reached, eval).await;
        }
        self.follow_policy(myself, ask, eval).await
    }

    /// Does what the policy said of a call: decides it at once, or keeps it waiting for the
    /// person.
    async fn follow_policy(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: ToolAsk,
        eval: bosun_approvals::Evaluation,
    ) -> Result<(), ActorProcessingErr> {
        match eval.outcome {
            Outcome::Allow { rule } => {
                self.decide_now(&ask, true, rule, None, eval.escalates, eval.summary)
                    .await
            }
            Outcome::Deny { rule, message } => {
                self.decide_now(
                    &ask,
                    false,
                    rule,
                    Some(message),
                    eval.escalates,
                    eval.summary,
                )
                .await
            }
            Outcome::Ask { why } => {
                let approval = ApprovalRecord {
                    class: eval.class,
                    escalates: eval.escalates,
                    why,
                    input: eval.input,
                    preview: eval.preview,
                    verdict_key: eval.verdict_key,
                    ..self.approval_of(&ask, eval.wait_ms, eval.attended)
                };
                info!(run_id = %self.rec.id, approval = %approval.id, tool = %approval.tool, "a tool call waits for the person");
                let note = format!(
                    "{} waits for your OK ({}): bosun approve {} | bosun deny {}",
                    approval.preview.lines().next().unwrap_or(&approval.tool),
                    approval.why,
                    approval.id.short(),
                    approval.id.short()
                );
                self.keep_waiting(myself, approval, note).await
            }
        }
    }

    /// An approval of this run for `ask`, waiting from now for `wait_ms`; what it says of the
    /// call (class, why, input, preview) is for the caller to fill in.
    pub(super) fn approval_of(
        &self,
        ask: &ToolAsk,
        wait_ms: u64,
        attended: bool,
    ) -> ApprovalRecord {
        let now = Timestamp::now();
        let run = self.rec.agent.as_ref();
        ApprovalRecord {
            id: ApprovalId::new(),
            run: self.rec.id,
            key: ask.key.clone(),
            agent: run.and_then(|r| r.agent),
            agent_name: run.map(|r| r.agent_name.clone()).unwrap_or_default(),
            card: run.and_then(|r| r.card).map(|(c, _)| c),
            tool: ask.tool.clone(),
            class: String::new(),
            escalates: false,
            why: String::new(),
            input: Default::default(),
            preview: String::new(),
            cwd: ask.cwd.clone(),
            asked_at: now,
            seq: self.asks.next_seq,
            deadline: Timestamp::from_millis(now.as_millis().saturating_add(wait_ms)),
            attended,
            state: ApprovalState::Waiting,
            delivered_at: None,
            verdict_key: None,
            budget: None,
            budget_scope: None,
            answer: None,
        }
    }

    /// Keeps `approval` as waiting (committed before anyone hears of it), arms its deadline,
    /// and tells everyone watching and the runner (`note`, for the CLI's person).
    async fn keep_waiting(
        &mut self,
        myself: &ActorRef<RunMsg>,
        approval: ApprovalRecord,
        note: String,
    ) -> Result<(), ActorProcessingErr> {
        self.ctx.writer.commit(changes_for(&approval)).await?;
        self.asks.next_seq += 1;
        bosun_kit::crash::point("approval-kept");
        arm_deadline(myself, &approval);
        self.publish(&approval);
        self.send(DaemonMsg::Waiting {
            key: approval.key.clone(),
            note,
        });
        self.asks.waiting.insert(approval.key.clone(), approval);
        Ok(())
    }

    /// The budget this run has reached at this call, if any: its own, else its card's, else
    /// its project's for the day it was created (those two shared with the other runs there).
    async fn budget_reached(
        &self,
        run: &AgentRun,
    ) -> Result<Option<BudgetReached>, ActorProcessingErr> {
        if let Some(reached) = run.budget_reached() {
            return Ok(Some(BudgetReached {
                why: reached.to_string(),
                grant: run.budget_grant(reached),
                scope: None,
            }));
        }
        let Some((card, _)) = run.card else {
            return Ok(None);
        };
        let Some(caps) = self.card_budgets(card).await? else {
            return Ok(None);
        };
        Ok(self
            .ctx
            .spend
            .reached(&caps, card, &day_of(self.rec.created_at))
            .map(|r| BudgetReached {
                why: r.scope.reached_words(&r.reached),
                grant: r.grant,
                scope: Some(r.scope),
            }))
    }

    /// The caps of `card` and its project, as the board keeps them now.
    async fn card_budgets(&self, card: CardId) -> Result<Option<CardBudgets>, ActorProcessingErr> {
        let budgets = self.ctx.budgets.clone();
        Ok(blocking(move || budgets.of_card(card)).await??)
    }

    /// The run reached a budget at this call: it waits for the person as an approval that
    /// says what was reached; allowing gives as much again (to the run, or to the card or the
    /// project's day for every run there) and the call goes on to the policy; denying, or
    /// nobody answering in time, stops the run.
    async fn ask_for_budget(
        &mut self,
        myself: &ActorRef<RunMsg>,
        ask: ToolAsk,
        reached: BudgetReached,
        eval: bosun_approvals::Evaluation,
    ) -> Result<(), ActorProcessingErr> {
        let BudgetReached { why, grant, scope } = reached;
        let more = grant.caps_words().unwrap_or_default();
        let whom = match &scope {
            None => "this run".to_string(),
            Some(s) => format!("{} (every run it counts)", s.words()),
        };
        let approval = ApprovalRecord {
            class: "budget".into(),
            escalates: eval.escalates,
            why: why.clone(),
            input: eval.input,
            preview: format!(
                "allow {more} more for {whom} (then this call goes on as usual), or deny to stop the run\nthe call waiting: {}",
                if eval.summary.is_empty() {
                    &ask.tool
                } else {
                    &eval.summary
                }
            ),
            budget: Some(grant),
            budget_scope: scope,
            ..self.approval_of(&ask, eval.wait_ms, eval.attended)
        };
        info!(run_id = %self.rec.id, approval = %approval.id, reached = %why, "a budget is reached: the run's next call waits for the person");
        let note = format!(
            "{why}: allow more with bosun approve {id}, or stop the run with bosun deny {id}",
            id = approval.id.short()
        );
        self.keep_waiting(myself, approval, note).await?;
        self.asks.held.insert(ask.key.clone(), ask);
        Ok(())
    }

    /// A budget's approval is allowed: by the person, who gives `grant` more (to the run, or to
    /// its card or project's day when that is still reached: two runs' approvals allowed at
    /// once give it once), or by another run's approval that gave the shared budget more
    /// (`by_person` false: then only when the budget is no longer reached). Saved with the
    /// approval, then the call that waited goes on to the policy. `None` when it stays
    /// waiting.
    async fn allow_more(
        &mut self,
        myself: &ActorRef<RunMsg>,
        mut a: ApprovalRecord,
        grant: Budget,
        by_person: bool,
    ) -> Result<Option<ApprovalRecord>, RunsError> {
        let internal = |e: &dyn std::fmt::Display| RunsError::internal(e.to_string());
        let before = self.rec.agent.as_ref().map(|r| r.budget_more);
        // What goes into the commit besides the approval: the run's record, or the grant.
        let mut changes = Vec::new();
        let mut given = None;
        match (
            &a.budget_scope,
            self.rec.agent.as_ref().and_then(|r| r.card),
        ) {
            (None, _) => {
                if let Some(run) = self.rec.agent.as_mut() {
                    run.budget_more = run.budget_more.plus(&grant);
                }
                changes.push(Change::put(&self.rec));
            }
            (Some(scope), card) => {
                let caps = match card {
                    Some((card, _)) => self
                        .card_budgets(card)
                        .await
                        .map_err(|e| internal(&e))?
                        .unwrap_or_default(),
                    None => CardBudgets::default(),
                };
                if by_person {
                    if let Some((g, was)) = self.ctx.spend.grant(&caps, scope, &grant) {
                        changes.push(Change::put(&g));
                        given = Some((g.key, was));
                    }
                } else if self.ctx.spend.still_reached(&caps, scope) {
                    return Ok(None);
                }
            }
        }
        a.state = ApprovalState::Allowed {
            at: Timestamp::now(),
        };
        changes.extend(changes_for(&a));
        if let Err(e) = self.ctx.writer.commit(changes).await {
            if let (Some(run), Some(b)) = (self.rec.agent.as_mut(), before) {
                run.budget_more = b;
            }
            if let Some((key, was)) = &given {
                self.ctx.spend.ungrant(key, *was);
            }
            return Err(internal(&e));
        }
        self.asks.waiting.remove(&a.key);
        self.ctx.live.update(&self.rec);
        self.publish(&a);
        let view = a.clone();
        if let Some(held) = self.asks.held.remove(&a.key) {
            self.on_ask(myself, held).await.map_err(|e| internal(&e))?;
        }
        if given.is_some()
            && let Some(scope) = &a.budget_scope
        {
            self.tell_sharers(scope);
        }
        Ok(Some(view))
    }

    /// A shared budget was given more: every other live run that counts toward it looks again
    /// at the calls it holds for it.
    fn tell_sharers(&self, scope: &BudgetScope) {
        for e in self.ctx.live.entries() {
            if e.record.id == self.rec.id {
                continue;
            }
            let Some(run) = e.record.agent.as_ref() else {
                continue;
            };
            let shares = match scope {
                BudgetScope::Card { card, .. } => run.card.is_some_and(|(c, _)| c == *card),
                BudgetScope::ProjectDay { project, day, .. } => {
                    run.project == Some(*project) && day_of(e.record.created_at) == *day
                }
            };
            if shares {
                let _ = e.actor.cast(RunMsg::BudgetMore);
            }
        }
    }

    /// Another run's approval gave a shared budget more: each call of this run held for a
    /// shared budget that is no longer reached goes on.
    pub(super) async fn on_budget_more(
        &mut self,
        myself: &ActorRef<RunMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let held: Vec<ApprovalRecord> = self
            .asks
            .waiting
            .values()
            .filter(|a| a.budget_scope.is_some())
            .cloned()
            .collect();
        for a in held {
            let Some(grant) = a.budget else { continue };
            let id = a.id;
            if let Some(view) = self.allow_more(myself, a, grant, false).await? {
                info!(run_id = %self.rec.id, approval = %id, state = view.state.word(), "a shared budget was given more: the call that waited goes on");
            }
        }
        Ok(())
    }

    /// A budget's approval was denied, or nobody answered it: the call is refused and the run
    /// stopped by its ladder, saying why.
    async fn stop_for_budget(
        &mut self,
        a: ApprovalRecord,
        by: String,
        message: String,
    ) -> Result<(), ActorProcessingErr> {
        let reason = format!("budget: {}; {by}", a.why);
        self.asks.held.remove(&a.key);
        self.settle(a, false, by, Some(message)).await?;
        let order = StopOrder {
            reason,
            immediate: false,
        };
        if let Err(e) = self.stop(order).await {
            warn!(run_id = %self.rec.id, error = %e, "could not stop a run whose budget is spent");
        }
        Ok(())
    }

    /// A decision the policy made at once: committed on the run's record, then sent.
    async fn decide_now(
        &mut self,
        ask: &ToolAsk,
        allowed: bool,
        by: String,
        message: Option<String>,
        escalates: bool,
        summary: String,
    ) -> Result<(), ActorProcessingErr> {
        let decision = Decision {
            key: ask.key.clone(),
            tool: ask.tool.clone(),
            summary,
            allowed,
            by,
            approval: None,
            message,
            escalates,
            at: Timestamp::now(),
        };
        self.commit_decision(decision, None).await
    }

    /// Commits a decision (with the approval it settles, together), then tells the runner.
    ///
    /// A decision of the policy alone goes to a runner that keeps unsaved decisions while its
    /// commit is under way (`unsaved`, then [`DaemonMsg::Saved`]): the call need not wait for
    /// the disk. Should bosund go away before the commit is on disk, the runner tells the
    /// decision back ([`Self::on_unsaved`]) and it is saved as it was told.
    async fn commit_decision(
        &mut self,
        decision: Decision,
        approval: Option<&ApprovalRecord>,
    ) -> Result<(), ActorProcessingErr> {
        let (key, by) = (decision.key.clone(), decision.by.clone());
        let early = approval.is_none() && self.link.as_ref().is_some_and(|l| l.keeps_unsaved);
        let answer = self.record_decision(decision, approval, early).await?;
        self.send(if early {
            DaemonMsg::Saved { key }
        } else {
            DaemonMsg::Decided {
                key,
                answer,
                by,
                unsaved: false,
            }
        });
        Ok(())
    }

    /// The runner tells back a decision told before it was saved, which this bosund (or the
    /// one before it) did not save: saved as it was told (what the call did went on it), never
    /// decided again; one already saved is only said to be.
    pub(super) async fn on_unsaved(
        &mut self,
        ask: ToolAsk,
        answer: ToolAnswer,
        by: String,
        at: Option<Timestamp>,
    ) -> Result<(), ActorProcessingErr> {
        let key = ask.key.clone();
        if !self.asks.decided.contains_key(&key) {
            // What it would do in one line, and whether it took in outside content, as the
            // policy says of the call; its verdict is the one told.
            let eval = match self.rec.agent.clone() {
                Some(run) => {
                    let (store, folder, ask2) =
                        (self.ctx.store.clone(), self.rec.cwd.clone(), ask.clone());
                    let escalated = self.asks.escalated;
                    Some(
                        blocking(move || {
                            bosun_approvals::evaluate(&store, &run, &folder, escalated, &ask2)
                        })
                        .await??,
                    )
                }
                None => None,
            };
            let (allowed, message) = match answer {
                ToolAnswer::Allow => (true, None),
                ToolAnswer::Deny { message } => (false, Some(message)),
            };
            info!(run_id = %self.rec.id, key = %key, "saved a decision told before bosund went away");
            let decision = Decision {
                key: key.clone(),
                tool: ask.tool.clone(),
                summary: eval.as_ref().map(|e| e.summary.clone()).unwrap_or_default(),
                allowed,
                by,
                approval: None,
                message,
                escalates: eval.is_some_and(|e| e.escalates),
                // When the runner was told it; an older runner does not say.
                at: at.unwrap_or_else(Timestamp::now),
            };
            self.record_decision(decision, None, false).await?;
        }
        self.send(DaemonMsg::Saved { key });
        Ok(())
    }

    /// Commits a decision (with the approval it settles, together) and remembers it: what the
    /// runner is to be told. `early`: the runner is told it (`unsaved`) as soon as the commit is
    /// submitted, before it is on disk.
    async fn record_decision(
        &mut self,
        decision: Decision,
        approval: Option<&ApprovalRecord>,
        early: bool,
    ) -> Result<ToolAnswer, ActorProcessingErr> {
        let answer = decision.answer();
        let key = decision.key.clone();
        let by = decision.by.clone();
        let escalated = self.asks.escalated;
        self.asks.escalated |= decision.allowed && decision.escalates;
        // Its own row (an agent's run's: no other run keeps decisions); the run's record is not
        // written again for it.
        let id = self.rec.id;
        let row = self.rec.agent.as_mut().map(|run| {
            let row = DecisionRow {
                run: id,
                n: run.decisions.len() as u64,
                decision: decision.clone(),
            };
            // A command agent has no stream its calls are read from: each call bosun decides
            // is one.
            if run.cli == Some(CliKind::Command) {
                run.usage.tool_calls += 1;
            }
            run.decisions.push(Arc::new(decision));
            row
        });
        let usage = self.usage_row_to_save();
        let mut changes: Vec<Change> = row.iter().map(Change::put).collect();
        changes.extend(usage.iter().map(Change::put));
        if let Some(a) = approval {
            changes.extend(changes_for(a));
        }
        if early {
            self.send(DaemonMsg::Decided {
                key: key.clone(),
                answer: answer.clone(),
                by: by.clone(),
                unsaved: true,
            });
            // Told, and not saved: the runner has to tell it back to the next bosund.
            bosun_kit::crash::point_after("decision-told-unsaved", Duration::from_millis(300))
                .await;
        }
        if let Err(e) = self.ctx.writer.commit(changes).await {
            // Refused as a whole (a full disk): memory goes back to what the store has, and
            // an approval stays waiting.
            if let Some(run) = self.rec.agent.as_mut() {
                run.decisions.pop();
                if run.cli == Some(CliKind::Command) {
                    run.usage.tool_calls -= 1;
                }
            }
            self.asks.escalated = escalated;
            return Err(e.into());
        }
        // A call allowed counts at once toward its card's and project's budgets of tool calls.
        if let Some(row) = usage.as_ref().filter(|r| r.card.is_some()) {
            self.ctx.spend.count(row);
        }
        self.usage_saved = usage.or(self.usage_saved.take());
        self.asks.waiting.remove(&key);
        bosun_kit::crash::point("approval-decided");
        self.ctx.live.update(&self.rec);
        self.asks.decided.insert(key.clone(), answer.clone());
        self.asks.decided_by.insert(key, by);
        Ok(answer)
    }

    pub(super) async fn on_delivered(&mut self, key: String) -> Result<(), ActorProcessingErr> {
        let found = self
            .asks
            .decided
            .contains_key(&key)
            .then(|| {
                self.rec
                    .agent
                    .as_ref()
                    .and_then(|r| r.decisions.iter().rev().find(|d| d.key == key))
                    .and_then(|d| d.approval)
            })
            .flatten();
        let Some(id) = found else {
            return Ok(());
        };
        let store = self.ctx.store.clone();
        let Some(mut a) = blocking(move || store.get::<ApprovalRecord>(&id)).await?? else {
            return Ok(());
        };
        if a.delivered_at.is_none() {
            a.delivered_at = Some(Timestamp::now());
            self.ctx.writer.put(&a).await?;
            self.publish(&a);
        }
        Ok(())
    }

    /// The person decides an approval of this run.
    pub(super) async fn person_decides(
        &mut self,
        myself: &ActorRef<RunMsg>,
        id: ApprovalId,
        d: PersonDecision,
    ) -> Result<ApprovalRecord, RunsError> {
        let Some(key) = self
            .asks
            .waiting
            .values()
            .find(|a| a.id == id)
            .map(|a| a.key.clone())
        else {
            return Err(RunsError::conflict(format!(
                "approval {} is not waiting any more; see `bosun inbox --all`",
                id.short()
            )));
        };
        // It stays waiting until its decision is saved ([`Self::commit_decision`]).
        let Some(a) = self.asks.waiting.get(&key).cloned() else {
            return Err(RunsError::internal("the approval went missing"));
        };
        if a.class == super::SIGN_IN_CLASS {
            return self.sign_in_decided(a, d).await;
        }
        if super::is_server_ask(&a) {
            return self.server_ask_decided(a, d).await;
        }
        let now = Timestamp::now();
        if a.deadline <= now {
            return self.decided_too_late(a, id, now).await;
        }
        if let Some(grant) = a.budget {
            return self.budget_decided(myself, a, grant, d, now).await;
        }
        match d {
            PersonDecision::Allow { .. } => self.person_allows(a, false, now).await,
            PersonDecision::AllowAlways => self.person_allows(a, true, now).await,
            PersonDecision::Deny { .. } | PersonDecision::Block { .. } => {
                self.person_denies(a, d, now).await
            }
        }
    }

    /// Settles an approval whose deadline passed before the person decided (as its deadline
    /// would have), and says so.
    async fn decided_too_late(
        &mut self,
        mut a: ApprovalRecord,
        id: ApprovalId,
        now: Timestamp,
    ) -> Result<ApprovalRecord, RunsError> {
        let message = expired_message(ms(a.deadline.since(a.asked_at)));
        a.state = ApprovalState::Expired {
            at: now,
            message: message.clone(),
        };
        let settled = if a.budget.is_some() {
            self.stop_for_budget(a, "nobody allowed more in time".into(), message)
                .await
        } else {
            self.settle(a, false, "the deadline".into(), Some(message))
                .await
        };
        settled.map_err(|e| RunsError::internal(e.to_string()))?;
        Err(RunsError::conflict(format!(
            "approval {} ran out of time and was denied; nothing ran",
            id.short()
        )))
    }

    /// The person decides a budget's approval: allows `grant` more, or stops the run.
    async fn budget_decided(
        &mut self,
        myself: &ActorRef<RunMsg>,
        mut a: ApprovalRecord,
        grant: Budget,
        d: PersonDecision,
        now: Timestamp,
    ) -> Result<ApprovalRecord, RunsError> {
        if d.allows() {
            let view = a.clone();
            return Ok(self
                .allow_more(myself, a, grant, true)
                .await?
                .unwrap_or(view));
        }
        let message = match d.message() {
            Some(m) if !m.trim().is_empty() => m,
            _ => "the run's budget is spent and the person stopped the run".to_string(),
        };
        a.state = ApprovalState::Denied {
            at: now,
            by: "the person".into(),
            message: message.clone(),
        };
        let view = a.clone();
        self.stop_for_budget(a, "the person stopped it".into(), message)
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        Ok(view)
    }

    /// The person allows a call (`always`: and every call like it from now on), unless a block
    /// landed while it waited.
    async fn person_allows(
        &mut self,
        mut a: ApprovalRecord,
        always: bool,
        now: Timestamp,
    ) -> Result<ApprovalRecord, RunsError> {
        let run = self.rec.agent.clone();
        if always {
            bosun_approvals::set_verdict(
                &self.ctx.agents,
                &a,
                bosun_approvals::AlwaysOrBlock::Always,
            )
            .await
            .map_err(RunsError::internal)?;
        }
        // A block that landed while the call waited wins over the person's approval.
        let store = self.ctx.store.clone();
        let (tool, input) = (a.tool.clone(), a.input.clone());
        let blocked = match run {
            Some(run) => blocking(move || bosun_approvals::blocked(&store, &run, &tool, &input))
                .await
                .map_err(|e| RunsError::internal(e.to_string()))?
                .map_err(|e| RunsError::internal(e.to_string()))?,
            None => None,
        };
        if let Some(message) = blocked {
            a.state = ApprovalState::Denied {
                at: now,
                by: "the block".into(),
                message: message.clone(),
            };
            let view = a.clone();
            self.settle(a, false, "blocked since it was asked".into(), Some(message))
                .await
                .map_err(|e| RunsError::internal(e.to_string()))?;
            return Ok(view);
        }
        a.state = ApprovalState::Allowed { at: now };
        let view = a.clone();
        self.settle(a, true, "the person".into(), None)
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        Ok(view)
    }

    /// The person denies a call (blocked: and every call like it from now on).
    async fn person_denies(
        &mut self,
        mut a: ApprovalRecord,
        d: PersonDecision,
        now: Timestamp,
    ) -> Result<ApprovalRecord, RunsError> {
        let block = matches!(d, PersonDecision::Block { .. });
        if block {
            bosun_approvals::set_verdict(
                &self.ctx.agents,
                &a,
                bosun_approvals::AlwaysOrBlock::Block,
            )
            .await
            .map_err(RunsError::internal)?;
        }
        let message = match (d.message(), block) {
            (Some(m), _) if !m.trim().is_empty() => m,
            (_, true) => bosun_approvals::blocked_message(&a.tool),
            (_, false) => "the person denied this call".to_string(),
        };
        a.state = ApprovalState::Denied {
            at: now,
            by: "the person".into(),
            message: message.clone(),
        };
        let view = a.clone();
        self.settle(a, false, "the person".into(), Some(message))
            .await
            .map_err(|e| RunsError::internal(e.to_string()))?;
        Ok(view)
    }

    /// The CLI withdrew the ask `key` itself: it no longer waits for anyone.
    pub(super) async fn on_withdrawn(&mut self, key: String) -> Result<(), ActorProcessingErr> {
        if self.rec.state == bosun_shared::run::RunState::Stopping {
            // The CLI lets its calls go as it is stopped: the run's end settles them.
            return Ok(());
        }
        let Some(mut a) = self.asks.waiting.remove(&key) else {
            return Ok(());
        };
        a.state = ApprovalState::Withdrawn {
            at: Timestamp::now(),
        };
        info!(run_id = %self.rec.id, approval = %a.id, "the CLI withdrew a call that waited");
        self.settle(a, false, "the CLI withdrew it".into(), None)
            .await
    }

    /// The deadline of the ask `key` came.
    pub(super) async fn on_deadline(&mut self, key: String) -> Result<(), ActorProcessingErr> {
        let due = self
            .asks
            .waiting
            .get(&key)
            .is_some_and(|a| a.deadline <= Timestamp::now());
        if !due {
            return Ok(());
        }
        let Some(mut a) = self.asks.waiting.remove(&key) else {
            return Ok(());
        };
        if a.class == super::SIGN_IN_CLASS {
            return self.sign_in_expired(a).await;
        }
        if super::is_server_ask(&a) {
            return self.server_ask_expired(a).await;
        }
        let message = expired_message(ms(a.deadline.since(a.asked_at)));
        a.state = ApprovalState::Expired {
            at: Timestamp::now(),
            message: message.clone(),
        };
        info!(run_id = %self.rec.id, approval = %a.id, "an approval ran out of time and was denied");
        if a.budget.is_some() {
            return self
                .stop_for_budget(a, "nobody allowed more in time".into(), message)
                .await;
        }
        self.settle(a, false, "the deadline".into(), Some(message))
            .await
    }

    /// The run ended: what still waits can never be approved.
    pub(super) async fn end_asks(&mut self) {
        self.asks.held.clear();
        let waiting: Vec<ApprovalRecord> = self.asks.waiting.drain().map(|(_, a)| a).collect();
        for mut a in waiting {
            a.state = ApprovalState::Ended {
                at: Timestamp::now(),
            };
            if let Err(e) = self.ctx.writer.commit(changes_for(&a)).await {
                warn!(run_id = %self.rec.id, approval = %a.id, error = %e, "could not record that an approval ended with its run");
                continue;
            }
            self.publish(&a);
        }
    }

    /// Commits the approval's decision and the run's record together, tells the runner and
    /// everyone watching.
    async fn settle(
        &mut self,
        a: ApprovalRecord,
        allowed: bool,
        by: String,
        message: Option<String>,
    ) -> Result<(), ActorProcessingErr> {
        let (key, by_too) = (a.key.clone(), by.clone());
        let answer = self.record_settled(&a, allowed, by, message).await?;
        self.send(DaemonMsg::Decided {
            key,
            answer,
            by: by_too,
            unsaved: false,
        });
        Ok(())
    }

    /// Commits the approval's decision and the run's record together and tells everyone
    /// watching: what the runner is to be told.
    pub(super) async fn record_settled(
        &mut self,
        a: &ApprovalRecord,
        allowed: bool,
        by: String,
        message: Option<String>,
    ) -> Result<ToolAnswer, ActorProcessingErr> {
        let decision = Decision {
            key: a.key.clone(),
            tool: a.tool.clone(),
            summary: a.preview.lines().next().unwrap_or_default().to_string(),
            allowed,
            by,
            approval: Some(a.id),
            message,
            escalates: a.escalates,
            at: Timestamp::now(),
        };
        let answer = self.record_decision(decision, Some(a), false).await?;
        self.publish(a);
        Ok(answer)
    }

    /// How long the ask `key` may still wait for the person, in ms, when it waits: what a
    /// runner that asks again is told.
    pub(super) fn left_to_wait(&self, key: &str) -> Option<u64> {
        self.asks
            .waiting
            .get(key)
            .map(|a| ms(a.deadline.since(Timestamp::now())))
    }

    pub(super) fn publish(&self, a: &ApprovalRecord) {
        (self.ctx.tell)(RunsEvent::Approval(Box::new(a.clone())));
    }
}

/// Who decided an approval, in the words of the run's record, from its state alone (for an
/// approval whose decision the run's record no longer holds).
fn decided_by(state: &ApprovalState) -> String {
    match state {
        ApprovalState::Waiting => String::new(),
        ApprovalState::Allowed { .. } => "the person".into(),
        ApprovalState::Denied { by, .. } => by.clone(),
        ApprovalState::Expired { .. } => "the deadline".into(),
        ApprovalState::Ended { .. } => "the run's end".into(),
        ApprovalState::Withdrawn { .. } => "the CLI withdrew it".into(),
    }
}

pub(super) fn arm_deadline(myself: &ActorRef<RunMsg>, a: &ApprovalRecord) {
    let left = ms(a.deadline.since(Timestamp::now()));
    let key = a.key.clone();
    drop(
        myself.send_after(std::time::Duration::from_millis(left + 10), move || {
            RunMsg::Deadline { key }
        }),
    );
}
