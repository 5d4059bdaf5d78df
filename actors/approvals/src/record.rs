//! A run's tool call that waits for the person, as stored in redb (`approvals[approval id]`).
//!
//! Only calls that go to the person are kept here; a call the policy decides at once is kept in
//! its run's record ([`Decision`](bosun_agents::record::Decision)). Each record is committed
//! before the person hears of it, and its decision is committed before the runner does.

use std::path::PathBuf;

use bosun_shared::{AgentId, ApprovalId, CardId, RunId, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_store::writer::Change;
use bosun_store::{Record, Store, StoreError};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    pub id: ApprovalId,
    pub run: RunId,
    /// The CLI's own id of the request: the runner asks again with it after a reconnect.
    pub key: String,
    pub agent: Option<AgentId>,
    pub agent_name: String,
    pub card: Option<CardId>,
    pub tool: String,
    /// The tool's class in words.
    pub class: String,
    /// Allowing it takes in outside content (the rest of the turn is escalated).
    pub escalates: bool,
    /// The rule that sent it to the person, in words.
    pub why: String,
    /// Its arguments with secret-looking values hidden.
    pub input: Value,
    pub preview: String,
    pub cwd: Option<PathBuf>,
    pub asked_at: Timestamp,
    /// The order the run asked in: 0, 1, 2… per run.
    #[serde(default)]
    pub seq: u64,
    pub deadline: Timestamp,
    pub attended: bool,
    pub state: ApprovalState,
    pub delivered_at: Option<Timestamp>,
    /// What `--always` or `--block` saves a verdict under (worked out with the policy's own
    /// naming when the call was judged); `None` when it cannot be one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_key: Option<String>,
    /// A run's budget was reached at this call: what allowing gives the run more (the call
    /// then goes on to the policy); a denial stops the run. Absent for any other approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<bosun_shared::usage::Budget>,
    /// The budget reached was a card's or a project's for the day, not the run's own: what
    /// allowing gives more goes to it, for every run it counts. Absent for a run's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_scope: Option<bosun_shared::usage::BudgetScope>,
    /// A server's form the person filled in (class `elicitation`): what they answered,
    /// checked against the form, as the server got it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
}

impl Record for ApprovalRecord {
    const TABLE: &'static str = "approvals";
    const WHAT: &'static str = "approval";
    type Key = ApprovalId;

    fn key(&self) -> String {
        self.id.to_string()
    }
}

/// The approvals that wait, each also in its own table (`approvals_waiting[approval id]`), kept
/// in the same commit as every change of its state: the inbox, a decision and a restart read
/// what waits, not every approval ever kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WaitingApproval(pub ApprovalRecord);

impl Record for WaitingApproval {
    const TABLE: &'static str = "approvals_waiting";
    const WHAT: &'static str = "waiting approval";
    type Key = ApprovalId;

    fn key(&self) -> String {
        self.0.id.to_string()
    }
}

/// The changes that record an approval as it is now: the approval, and its place among those
/// waiting (put while it waits, deleted once decided). Committed together.
pub fn changes_for(a: &ApprovalRecord) -> Vec<Change> {
    let waiting = match a.state {
        ApprovalState::Waiting => Change::put(&WaitingApproval(a.clone())),
        ApprovalState::Allowed { .. }
        | ApprovalState::Denied { .. }
        | ApprovalState::Expired { .. }
        | ApprovalState::Ended { .. }
        | ApprovalState::Withdrawn { .. } => Change::delete::<WaitingApproval>(&a.id),
    };
    vec![Change::put(a), waiting]
}

/// Where an approval stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ApprovalState {
    Waiting,
    Allowed {
        at: Timestamp,
    },
    /// By the person, or by a block that landed before the person's approval was delivered.
    Denied {
        at: Timestamp,
        by: String,
        message: String,
    },
    /// Nobody decided before the deadline: denied.
    Expired {
        at: Timestamp,
        message: String,
    },
    /// The run ended before anyone decided; it can no longer be approved.
    Ended {
        at: Timestamp,
    },
    /// The CLI withdrew the call before anyone decided (its turn was interrupted).
    Withdrawn {
        at: Timestamp,
    },
}

impl ApprovalState {
    pub fn word(&self) -> &'static str {
        match self {
            ApprovalState::Waiting => "waiting",
            ApprovalState::Allowed { .. } => "allowed",
            ApprovalState::Denied { .. } => "denied",
            ApprovalState::Expired { .. } => "expired",
            ApprovalState::Ended { .. } => "ended",
            ApprovalState::Withdrawn { .. } => "withdrawn",
        }
    }
}

/// The message a denial by the deadline gives the model.
pub fn expired_message(wait_ms: u64) -> String {
    format!(
        "no answer within {}: denied (bosun denies a call nobody approves in time)",
        bosun_shared::time::format_duration(std::time::Duration::from_millis(wait_ms))
    )
}

impl ApprovalRecord {
    /// What the run's gateway tells a server that asked the person (a form, a message of the
    /// model), once decided.
    pub fn server_answer(&self) -> Option<bosun_protocol::runner::ServerAnswer> {
        use bosun_protocol::runner::ServerAnswer;
        Some(match &self.state {
            ApprovalState::Waiting => return None,
            ApprovalState::Allowed { .. } => ServerAnswer::Accept {
                content: self.answer.as_ref().and_then(Value::as_object).cloned(),
            },
            ApprovalState::Denied { message, .. } => ServerAnswer::Decline {
                message: message.clone(),
            },
            ApprovalState::Expired { message, .. } => ServerAnswer::Cancel {
                message: message.clone(),
            },
            ApprovalState::Ended { .. } | ApprovalState::Withdrawn { .. } => ServerAnswer::Cancel {
                message: "the run ended before the person answered".into(),
            },
        })
    }

    /// What the CLI is told, once decided.
    pub fn answer(&self) -> Option<bosun_protocol::runner::ToolAnswer> {
        use bosun_protocol::runner::ToolAnswer;
        match &self.state {
            ApprovalState::Waiting => None,
            ApprovalState::Allowed { .. } => Some(ToolAnswer::Allow),
            ApprovalState::Denied { message, .. } | ApprovalState::Expired { message, .. } => {
                Some(ToolAnswer::Deny {
                    message: message.clone(),
                })
            }
            ApprovalState::Ended { .. } => Some(ToolAnswer::Deny {
                message: "the run ended before a decision".into(),
            }),
            ApprovalState::Withdrawn { .. } => Some(ToolAnswer::Deny {
                message: "the CLI withdrew the call".into(),
            }),
        }
    }
}

/// The approvals' reads of the store.
pub trait ApprovalReads {
    /// Every approval, in id order.
    fn approvals(&self) -> Result<Vec<ApprovalRecord>, StoreError>;

    /// The approvals that wait, in id order.
    fn waiting_approvals(&self) -> Result<Vec<ApprovalRecord>, StoreError>;

    /// The approvals of one run that wait (its decided ones are on its record).
    fn waiting_approvals_of(&self, run: RunId) -> Result<Vec<ApprovalRecord>, StoreError>;
}

impl ApprovalReads for Store {
    fn approvals(&self) -> Result<Vec<ApprovalRecord>, StoreError> {
        self.all::<ApprovalRecord>()
    }

    fn waiting_approvals(&self) -> Result<Vec<ApprovalRecord>, StoreError> {
        Ok(self
            .all::<WaitingApproval>()?
            .into_iter()
            .map(|w| w.0)
            .collect())
    }

    fn waiting_approvals_of(&self, run: RunId) -> Result<Vec<ApprovalRecord>, StoreError> {
        Ok(self
            .waiting_approvals()?
            .into_iter()
            .filter(|a| a.run == run)
            .collect())
    }
}
