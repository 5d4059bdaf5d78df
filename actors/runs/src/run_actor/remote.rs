//! A run placed on another host: handed to its backend, its plan kept sealed in the store until
//! its runner (having proved itself over mutual TLS) asks for it — its secrets read again then —,
//! its job asked about while the runner is away, and ended through the backend when it is lost.

use std::time::{Duration, Instant};

use bosun_agents::secrets::{SecretLine, SecretSource};
use bosun_protocol::runner::{DaemonMsg, LaunchPlan, StopOrder};
use bosun_shared::Timestamp;
use bosun_shared::placement::Placement;
use bosun_shared::run::{ExitInfo, Outcome, RunState};
use bosun_store::writer::Change;
use nix::sys::signal::Signal;
use ractor::{ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::{info, warn};

use super::{RUNNER_CHECK_EVERY, RunActorState, RunMsg, failed};
use crate::RunsError;
use crate::record::{Placed, RunSnapshot};
use crate::sealed::{self, SealedPlan};
use bosun_placement::JobPhase;

/// A remote run's plan, until its runner has started the program.
pub(super) enum PendingPlan {
    /// Sealed, and kept so in the store too: its secrets are read again when the runner asks,
    /// but for those that cannot be read again (a lead's answer's token), which only this
    /// bosund has (by the sources' order; `None` for the others).
    Sealed {
        plan: Box<SealedPlan>,
        ephemeral: Vec<Option<String>>,
    },
    /// Held in memory only (its secrets could not be sealed): a restart of bosund loses it.
    Held(Box<LaunchPlan>),
}

impl RunActorState {
    /// How often a runner that is away is looked at.
    pub(super) fn check_every(&self) -> Duration {
        match (&self.rec.placed, &self.ctx.remote) {
            (Some(_), Some(remote)) => remote.check_every(),
            (Some(_), None) | (None, _) => RUNNER_CHECK_EVERY,
        }
    }

    /// Records the run, hands its runner to the backend, and keeps the plan for the runner:
    /// sealed in the store with the record that says where the run went.
    pub(super) async fn launch_remote(
        &mut self,
        myself: &ActorRef<RunMsg>,
        mut plan: LaunchPlan,
        placement: Placement,
        secrets: &[SecretLine],
        reply: Option<RpcReplyPort<Result<RunSnapshot, RunsError>>>,
    ) -> Result<(), ActorProcessingErr> {
        self.record_and_answer(reply).await?;
        let Some(remote) = self.ctx.remote.clone() else {
            let reason = format!(
                "could not place the run on {placement}: this bosund places runs on this machine only"
            );
            return self.finish(myself, failed(reason)).await;
        };
        // bosund's own folder of the run (its log); the runner's folder is on the shared
        // filesystem.
        let own = self.ctx.dirs.run_dir(self.rec.id);
        if let Err(e) = bosun_shared::paths::create_private_dir(&own) {
            let reason = format!("could not make the run's folder {}: {e}", own.display());
            return self.finish(myself, failed(reason)).await;
        }
        let token = plan.token.clone();
        let pending = match sealed::seal(&plan, secrets) {
            Ok(s) => PendingPlan::Sealed {
                plan: Box::new(s),
                ephemeral: secrets
                    .iter()
                    .map(|l| {
                        matches!(l.source, SecretSource::Ephemeral { .. }).then(|| l.value.clone())
                    })
                    .collect(),
            },
            Err(why) => {
                warn!(run_id = %self.rec.id, reason = %why, "a remote run's plan cannot be sealed; it is held in memory only");
                plan.notes.push(format!(
                    "bosun holds this run's plan in memory only ({why}): had bosund restarted before the run's job left its queue, the run would have been lost"
                ));
                PendingPlan::Held(Box::new(plan))
            }
        };
        let submitted_at = Timestamp::now();
        let submitted = remote
            .submit(
                &placement,
                self.rec.id,
                &token,
                self.rec.time_cap_ms,
                self.rec.ladder.int_grace_ms + self.rec.ladder.term_grace_ms,
            )
            .await;
        let submitted = match submitted {
            Ok(s) => s,
            Err(e) => {
                let reason = format!("could not place the run on {placement}: {e}");
                return self.finish(myself, failed(reason)).await;
            }
        };
        info!(run_id = %self.rec.id, job = %submitted.job, %placement, "run placed");
        self.rec.placed = Some(Placed {
            placement,
            job: submitted.job,
            dir: submitted.dir,
            cert_digest: submitted.cert_digest,
            node: None,
            submitted_at: Some(submitted_at),
            left_queue_at: None,
        });
        let also = match &pending {
            PendingPlan::Sealed { plan, .. } => vec![Change::put(plan.as_ref())],
            PendingPlan::Held(_) => Vec::new(),
        };
        self.persist_with(also).await?;
        self.pending = Some(pending);
        self.away_since = Some(Instant::now());
        drop(myself.send_after(self.check_every(), || RunMsg::CheckRunner));
        Ok(())
    }

    /// The runner on another host asks for its plan: the sealed plan, its secrets read again
    /// now (after any number of restarts of bosund), or the one held in memory. A secret gone
    /// from the keychain meanwhile fails the run, saying which and how to set it again.
    pub(super) async fn on_want_plan(
        &mut self,
        myself: &ActorRef<RunMsg>,
    ) -> Result<(), ActorProcessingErr> {
        if matches!(self.rec.state, RunState::Queued) {
            self.rec.state = RunState::Starting;
        }
        if let Some(p) = self.rec.placed.as_mut()
            && p.left_queue_at.is_none()
        {
            p.left_queue_at = Some(Timestamp::now());
        }
        // Where the engine put it: asked once, as its runner first dials in.
        if let (Some(placed), Some(remote)) = (self.rec.placed.clone(), self.ctx.remote.clone())
            && placed.node.is_none()
        {
            match remote
                .job(&placed.placement, &placed.job, &placed.dir)
                .await
            {
                Ok(seen) => {
                    if let Some(p) = self.rec.placed.as_mut() {
                        p.node = seen.node;
                    }
                }
                Err(e) => {
                    warn!(run_id = %self.rec.id, job = %placed.job, error = %e, "could not ask the backend where a run's job is");
                }
            }
        }
        self.persist().await?;
        match self.plan_for_runner().await? {
            Ok(Some(plan)) => {
                self.send(DaemonMsg::Plan(Box::new(plan)));
                Ok(())
            }
            Ok(None) => {
                self.send(DaemonMsg::ExitAck);
                let node = self.node_words();
                let reason = format!(
                    "bosund restarted before the runner{node} took its plan, and kept none (the run was placed by an older bosund, or its plan was held in memory only); start the run again"
                );
                self.lose(myself, reason).await
            }
            Err(why) => {
                self.send(DaemonMsg::ExitAck);
                if let Some(placed) = self.rec.placed.clone() {
                    self.end_remote_job(&placed).await;
                }
                self.ctx.delete_secret_files(&self.rec);
                let reason =
                    format!("the run's plan could not be made as its runner asked for it: {why}");
                self.finish(myself, failed(reason)).await
            }
        }
    }

    /// The plan to hand the runner now: the one held in memory, or the sealed one (from memory,
    /// else from the store) filled in with its secrets as they are now. `Ok(None)`: bosund has
    /// no plan for the run; `Err`: why it cannot be made, in the person's words.
    async fn plan_for_runner(
        &mut self,
    ) -> Result<Result<Option<LaunchPlan>, NoPlan>, ActorProcessingErr> {
        let (sealed, ephemeral) = match self.pending.take() {
            Some(PendingPlan::Held(plan)) => {
                let given = (*plan).clone();
                self.pending = Some(PendingPlan::Held(plan));
                return Ok(Ok(Some(given)));
            }
            Some(PendingPlan::Sealed { plan, ephemeral }) => (plan, ephemeral),
            None => {
                let (store, id) = (self.ctx.store.clone(), self.rec.id);
                match tokio::task::spawn_blocking(move || store.get::<SealedPlan>(&id)).await?? {
                    Some(s) => (Box::new(s), Vec::new()),
                    None => return Ok(Ok(None)),
                }
            }
        };
        let Some(token) = self.link_token.clone() else {
            return Ok(Err(NoPlan::NoRunner));
        };
        // What only this bosund holds is taken from memory; everything else is read again.
        let held = |i: usize| ephemeral.get(i).cloned().flatten();
        let to_read: Vec<SecretSource> = (sealed.sources.iter().enumerate())
            .filter(|(i, _)| held(*i).is_none())
            .map(|(_, s)| s.clone())
            .collect();
        let filled = match self.ctx.secrets.read_again(&to_read).await {
            Ok(read) => {
                let mut read = read.into_iter();
                let values = (0..sealed.sources.len())
                    .map(|i| held(i).or_else(|| read.next()).unwrap_or_default())
                    .collect();
                sealed::fill(&sealed, values, token).map_err(NoPlan::Fill)
            }
            Err(e) => Err(NoPlan::Secrets(e)),
        };
        self.pending = Some(PendingPlan::Sealed {
            plan: sealed,
            ephemeral,
        });
        Ok(filled.map(Some))
    }

    /// The change that deletes a remote run's sealed plan, for the commit of the record that
    /// makes it needless (the program started, the run ended).
    pub(super) fn forget_sealed_plan(&self) -> Vec<Change> {
        match self.rec.placed {
            Some(_) => vec![Change::delete::<SealedPlan>(&self.rec.id)],
            None => Vec::new(),
        }
    }

    fn node_words(&self) -> String {
        match self.rec.placed.as_ref().and_then(|p| p.node.as_deref()) {
            Some(node) => format!(" on {node}"),
            None => String::new(),
        }
    }

    /// The runner is not connected: ask the backend about its job.
    pub(super) async fn check_remote(
        &mut self,
        myself: &ActorRef<RunMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let (Some(placed), Some(remote)) = (self.rec.placed.clone(), self.ctx.remote.clone())
        else {
            let reason = "the run was placed on another host, but this bosund has no remote placement configured any more (placement.toml is gone)".to_string();
            return self.lose(myself, reason).await;
        };
        match remote
            .job(&placed.placement, &placed.job, &placed.dir)
            .await
        {
            Ok(seen) => {
                let moved = seen.node.is_some() && seen.node != placed.node;
                let left_queue = seen.phase == JobPhase::Running && placed.left_queue_at.is_none();
                if moved || left_queue {
                    if let Some(p) = self.rec.placed.as_mut() {
                        if moved {
                            p.node = seen.node.clone();
                        }
                        if left_queue {
                            p.left_queue_at = Some(Timestamp::now());
                        }
                    }
                    self.persist().await?;
                }
                let node = self.node_words();
                match seen.phase {
                    JobPhase::Waiting => {
                        // Waiting for a host is not being away.
                        self.away_since = Some(Instant::now());
                    }
                    JobPhase::Running => {
                        let away = self.away_since.get_or_insert_with(Instant::now).elapsed();
                        let grace = remote.away_grace();
                        if away >= grace {
                            let reason = format!(
                                "the runner{node} did not connect to bosund within {}s although its job {} runs; the job was cancelled",
                                grace.as_secs(),
                                placed.job
                            );
                            return self.lose(myself, reason).await;
                        }
                    }
                    JobPhase::Ended(how) => {
                        if let Some(stop) = self.rec.stop.clone() {
                            // Stopped while its runner was away or not yet started.
                            let exit = ExitInfo {
                                outcome: Outcome::Stopped,
                                code: None,
                                signal: None,
                                reason: format!("{} (its job ended: {how})", stop.reason),
                            };
                            self.end_remote_job(&placed).await;
                            self.ctx.delete_secret_files(&self.rec);
                            return self.finish(myself, exit).await;
                        }
                        let reason = format!("the runner{node} is gone: {how}");
                        return self.lose(myself, reason).await;
                    }
                    JobPhase::Unknown => {
                        let reason = format!(
                            "the runner{node} is gone: {} no longer knows its job {}",
                            backend_name(&placed.placement),
                            placed.job
                        );
                        return self.lose(myself, reason).await;
                    }
                }
            }
            Err(e) => {
                // The backend cannot be asked now: keep waiting, and say so once in a while.
                warn!(run_id = %self.rec.id, job = %placed.job, error = %e, "could not ask the backend about a remote run's job");
            }
        }
        drop(myself.send_after(self.check_every(), || RunMsg::CheckRunner));
        Ok(())
    }

    /// A stop of a run on another host. With its runner connected the order went over the
    /// link; without, the backend carries it: a job still waiting for a host is cancelled (and
    /// the run ends stopped), one that runs has its runner signalled, which runs the ladder.
    pub(super) async fn stop_remote(&mut self, placed: &Placed, order: &StopOrder) {
        let Some(remote) = self.ctx.remote.clone() else {
            return;
        };
        if self.link.is_some() && !order.immediate {
            return;
        }
        // A job whose program never started has nothing to stop gracefully: it is cancelled.
        let signal = if order.immediate || self.rec.process.is_none() {
            None
        } else {
            Some(Signal::SIGTERM)
        };
        if let Err(e) = remote.signal(&placed.placement, &placed.job, signal).await {
            warn!(run_id = %self.rec.id, job = %placed.job, error = %e, "could not signal a remote run's job");
        }
    }

    /// Ends whatever is left of a lost run's job (the backend kills everything of it on its
    /// node) and deletes the run's link file, if the runner never read it.
    pub(super) async fn end_remote_job(&mut self, placed: &Placed) {
        if let Some(remote) = self.ctx.remote.clone()
            && let Err(e) = remote.signal(&placed.placement, &placed.job, None).await
        {
            warn!(run_id = %self.rec.id, job = %placed.job, error = %e, "could not cancel a lost run's job");
        }
        let _ = std::fs::remove_file(placed.dir.join("link.json"));
    }
}

fn backend_name(placement: &Placement) -> &'static str {
    match placement {
        Placement::Local => "this machine",
        Placement::Slurm { .. } => "Slurm",
        Placement::Kubernetes { .. } => "Kubernetes",
    }
}

/// Why the plan a runner asked for cannot be made.
#[derive(Debug, thiserror::Error)]
enum NoPlan {
    #[error("no runner is connected")]
    NoRunner,
    #[error(transparent)]
    Secrets(bosun_agents::AgentsError),
    #[error(transparent)]
    Fill(sealed::FillError),
}
