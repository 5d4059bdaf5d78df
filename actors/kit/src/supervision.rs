//! The one supervision policy of bosund.
//!
//! ractor has no restart strategies: by default a supervisor stops when any child exits. Every
//! supervisor in bosund instead keeps a [`RestartBudget`] per child: a failed child is restarted
//! (rebuilding its state from the store, which is safe because every transition is persisted
//! first) as long as it has failed fewer than `max_restarts` times within `window`. Past that,
//! the supervisor gives up on the child and records why. See `docs/supervision.md`.

use std::collections::VecDeque;
use std::future::Future;
use std::time::{Duration, Instant};

use ractor::ActorProcessingErr;
use tracing::Instrument;

/// How many restarts a child gets, and over what window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    pub max_restarts: usize,
    pub window: Duration,
}

impl RestartPolicy {
    /// 3 restarts in 30 s: enough for a transient fault, few enough that a child failing on
    /// every start is given up on within seconds.
    pub const DEFAULT: RestartPolicy = RestartPolicy {
        max_restarts: 3,
        window: Duration::from_secs(30),
    };
}

/// The restarts of one child within its policy's window.
#[derive(Clone, Debug)]
pub struct RestartBudget {
    policy: RestartPolicy,
    recent: VecDeque<Instant>,
}

/// What to do with a child that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Restart it; this is restart number `n` within the window.
    Restart { n: usize },
    /// The budget is spent: give up on it.
    GiveUp,
}

impl RestartBudget {
    pub fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            recent: VecDeque::new(),
        }
    }

    /// Records a failure at `now` and says whether the child may be restarted.
    pub fn on_failure(&mut self, now: Instant) -> Verdict {
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.policy.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.policy.max_restarts {
            return Verdict::GiveUp;
        }
        self.recent.push_back(now);
        Verdict::Restart {
            n: self.recent.len(),
        }
    }

    /// The reason recorded when giving up.
    pub fn give_up_reason(&self, last_error: &str) -> String {
        format!(
            "failed {} times within {}s; gave up (last failure: {last_error})",
            self.policy.max_restarts + 1,
            self.policy.window.as_secs()
        )
    }
}

/// Runs one of an actor's handlers inside the actor's span, so that everything it logs carries
/// the actor's name and ids (`run_id`, `chat_id`, `server`, `session`) as fields: one actor's
/// story can be picked out of `bosund.log`.
pub async fn in_span<T>(
    span: tracing::Span,
    handler: impl Future<Output = Result<T, ActorProcessingErr>>,
) -> Result<T, ActorProcessingErr> {
    handler.instrument(span).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_allows_bursts_then_gives_up_and_recovers_after_the_window() {
        let mut b = RestartBudget::new(RestartPolicy::DEFAULT);
        let t0 = Instant::now();
        assert_eq!(b.on_failure(t0), Verdict::Restart { n: 1 });
        assert_eq!(
            b.on_failure(t0 + Duration::from_secs(1)),
            Verdict::Restart { n: 2 }
        );
        assert_eq!(
            b.on_failure(t0 + Duration::from_secs(2)),
            Verdict::Restart { n: 3 }
        );
        assert_eq!(b.on_failure(t0 + Duration::from_secs(3)), Verdict::GiveUp);
        // Once the old failures leave the window, restarts are allowed again.
        assert_eq!(
            b.on_failure(t0 + Duration::from_secs(40)),
            Verdict::Restart { n: 1 }
        );
    }
}
