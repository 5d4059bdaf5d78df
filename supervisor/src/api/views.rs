//! The one place the areas' records become the wire's views: a run, an agent's part of it and
//! its decisions, a call waiting for the person, a chat, its messages and its pending actions
//! here; an agent in [`agents`], the board in [`board`], the MCP servers, their tools, an
//! inspection, a call and an import's finds in [`mcp`], and what the lead's model is shown in
//! [`lead`]. The areas answer in their own types; the handlers turn them into what the UI
//! reads, so that a word of the domain can change without changing the wire.

mod agents;
pub mod board;
pub mod lead;
mod mcp;
pub use self::mcp::{candidate_view, removed_view};

use bosun_agents::record::{AgentRun, Decision};
use bosun_approvals::record::{ApprovalRecord, ApprovalState};
use bosun_lead::chats::{Chat, PendingAction};
use bosun_lead::record::{MessageRecord, PendingState};
use bosun_protocol::agents::{AgentRunView, CliResultView, DECISIONS_SHOWN, ToolCallView};
use bosun_protocol::approvals::{ApprovalView, DecisionView};
use bosun_protocol::lead::{ChatView, MessageView, PendingView};
use bosun_protocol::runs::LogPrunedView;
use bosun_protocol::ui::RunView;
use bosun_runs::record::{PruneWhy, RunRecord, RunSnapshot};
use bosun_shared::placement::PlacedView;
use bosun_shared::run::{Outcome, RunState};

/// A domain value as the wire shows it.
pub trait View {
    type Wire;
    fn view(&self) -> Self::Wire;
}

impl View for RunSnapshot {
    type Wire = RunView;
    fn view(&self) -> RunView {
        run_view(&self.record, self.last_seq)
    }
}

/// A run's record as the UI shows it, with `last_seq` given by whoever knows it best (never
/// less than the record's own).
pub fn run_view(rec: &RunRecord, last_seq: u64) -> RunView {
    RunView {
        id: rec.id,
        short_id: rec.id.short(),
        name: rec.name.clone(),
        state: rec.state.name().to_string(),
        outcome: rec.state.outcome(),
        exit: rec.exit.clone(),
        program: rec.program.clone(),
        args: rec.args.clone(),
        cwd: rec.cwd.clone(),
        created_at: rec.created_at,
        started_at: rec.started_at,
        ended_at: rec.ended_at,
        pid: rec.process.map(|p| p.pid),
        pgid: rec.process.map(|p| p.pgid),
        time_cap_ms: rec.time_cap_ms,
        last_seq: last_seq.max(rec.last_seq),
        stop_reason: match rec.state {
            RunState::Stopping => rec.stop.as_ref().map(|s| s.reason.clone()),
            RunState::Queued | RunState::Starting | RunState::Running | RunState::Exited(_) => None,
        },
        agent: rec.agent.as_ref().map(|a| {
            let mut view = a.view();
            if let RunState::Exited(outcome) = rec.state {
                for call in view.calls.iter_mut().filter(|c| c.ok.is_none()) {
                    call.unanswered = Some(unanswered(outcome));
                }
            }
            view
        }),
        paused: None,
        log_unflushed: None,
        git: rec.git.clone(),
        placed: rec.placed.as_ref().map(|p| PlacedView {
            placement: p.placement.clone(),
            job: p.job.clone(),
            node: p.node.clone(),
            queued_ms: p.queued_ms(),
        }),
        mcp_calls: None,
        log_pruned: rec.log_pruned.map(|p| LogPrunedView {
            at: p.at,
            why: match p.why {
                PruneWhy::Retention => "retention",
                PruneWhy::Size => "size",
            }
            .to_string(),
            bytes: p.bytes,
        }),
    }
}

/// What happened to a call that never got its result, in a run that ended with `outcome`: it
/// is not running, whatever the CLI last said of it. (Said from the run's end rather than kept
/// on the call, so that runs that ended before this was said read the same.)
fn unanswered(outcome: Outcome) -> String {
    match outcome {
        Outcome::Stopped => "the run was stopped first",
        Outcome::TimedOut => "the run reached its time cap first",
        Outcome::Lost => "the run was lost first",
        Outcome::Succeeded | Outcome::Failed => "the run ended first",
    }
    .to_string()
}

impl View for AgentRun {
    type Wire = AgentRunView;
    /// Its latest decisions only ([`DECISIONS_SHOWN`]), the earlier ones counted.
    fn view(&self) -> AgentRunView {
        let not_shown = self.decisions.len().saturating_sub(DECISIONS_SHOWN);
        AgentRunView {
            agent: self.agent,
            agent_name: self.agent_name.clone(),
            task: bosun_shared::text::visible_lines(&self.task).into_owned(),
            cli: self.cli,
            servers: self.servers.clone(),
            claude_signs_in: self.claude_signs_in.clone(),
            card: self.card.map(|(c, _)| c),
            tools: self.tools.clone(),
            calls: self
                .calls
                .iter()
                .map(|c| ToolCallView {
                    name: c.name.clone(),
                    ok: c.ok,
                    error: c.error.clone(),
                    unanswered: None,
                })
                .collect(),
            session: self.session.clone(),
            model: self.model.clone(),
            result: self.result.as_ref().map(|r| CliResultView {
                is_error: r.is_error,
                reason: r.reason.clone(),
                text: r.text.clone(),
            }),
            decisions: self.decisions[not_shown..]
                .iter()
                .map(|d| d.view())
                .collect(),
            workspace: self
                .workspace
                .as_ref()
                .map(bosun_agents::record::WorkspaceSettings::view),
            fence: self.fence.clone(),
            usage: (self.usage != Default::default()).then(|| self.usage.clone()),
            decisions_pruned: self.decisions_pruned,
            decisions_not_shown: not_shown as u64,
        }
    }
}

impl View for Decision {
    type Wire = DecisionView;
    fn view(&self) -> DecisionView {
        DecisionView {
            tool: self.tool.clone(),
            summary: self.summary.clone(),
            decision: if self.allowed { "allowed" } else { "denied" }.to_string(),
            by: self.by.clone(),
            approval: self.approval,
            message: self.message.clone(),
            at: self.at,
        }
    }
}

impl View for ApprovalRecord {
    type Wire = ApprovalView;
    fn view(&self) -> ApprovalView {
        let (decided_by, decided_at, message) = match &self.state {
            ApprovalState::Waiting => (None, None, None),
            ApprovalState::Allowed { at } => (Some("the person".to_string()), Some(*at), None),
            ApprovalState::Denied { at, by, message } => {
                (Some(by.clone()), Some(*at), Some(message.clone()))
            }
            ApprovalState::Expired { at, message } => (
                Some("the deadline".to_string()),
                Some(*at),
                Some(message.clone()),
            ),
            ApprovalState::Ended { at } => (Some("the run's end".to_string()), Some(*at), None),
            ApprovalState::Withdrawn { at } => (Some("the CLI".to_string()), Some(*at), None),
        };
        ApprovalView {
            id: self.id,
            short_id: self.id.short(),
            run: self.run,
            agent: Some(self.agent_name.clone()).filter(|n| !n.is_empty()),
            card: self.card,
            tool: self.tool.clone(),
            class: self.class.clone(),
            why: self.why.clone(),
            preview: self.preview.clone(),
            input: self.input.clone(),
            asked_at: self.asked_at,
            deadline: self.deadline,
            attended: self.attended,
            state: self.state.word().to_string(),
            decided_by,
            decided_at,
            message,
            delivered_at: self.delivered_at,
            form_answer: self.answer.clone(),
        }
    }
}

impl View for MessageRecord {
    type Wire = MessageView;
    fn view(&self) -> MessageView {
        MessageView {
            n: self.n,
            at: self.at,
            kind: self.kind.word().to_string(),
            text: self.text.clone(),
            failed: self.failed,
        }
    }
}

impl View for Chat {
    type Wire = ChatView;
    fn view(&self) -> ChatView {
        ChatView {
            id: self.id,
            short_id: self.id.short(),
            agent: self.agent.clone(),
            created_at: self.created_at,
            answering: self.answering,
            waiting: self.waiting,
            messages: self.messages.iter().map(View::view).collect(),
            board_checks: self.board_checks,
        }
    }
}

impl View for PendingAction {
    type Wire = PendingView;
    fn view(&self) -> PendingView {
        let p = &self.record;
        let result = match &p.state {
            PendingState::Approved { result, .. } => Some(result.clone()),
            PendingState::Failed { why, .. } => Some(why.clone()),
            PendingState::Gone { why } => Some(why.clone()),
            PendingState::Replaced { by } => Some(format!("replaced by {}", by.short())),
            PendingState::Waiting
            | PendingState::Approving { .. }
            | PendingState::Discarded { .. } => None,
        };
        PendingView {
            id: p.id,
            short_id: p.id.short(),
            chat: p.chat,
            answer: p.answer,
            tool: p.tool.clone(),
            args: p.args.clone(),
            cause: p.cause.clone(),
            at: p.at,
            state: p.state.word().to_string(),
            line: self.line.clone(),
            preview: self.preview.clone(),
            would_fail: self.would_fail.clone(),
            result,
        }
    }
}

impl<T: View> View for Vec<T> {
    type Wire = Vec<T::Wire>;
    fn view(&self) -> Vec<T::Wire> {
        self.iter().map(View::view).collect()
    }
}

impl<A: View, B: View> View for (A, B) {
    type Wire = (A::Wire, B::Wire);
    fn view(&self) -> Self::Wire {
        (self.0.view(), self.1.view())
    }
}
