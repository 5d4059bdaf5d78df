//! The placement seam: where a run's runner runs.
//!
//! A run is placed on this machine (`local`, the default: bosund starts the runner itself) or
//! handed to a cluster engine that starts it on a host it picks (`slurm`, or `kubernetes`: one
//! Job per run, [`kubernetes`]). A placed runner dials
//! back to bosund over TCP with mutual TLS ([`ca`], `bosun_protocol::tls`) and speaks the same
//! frames, acks and spool as a local one; bosund stays the single writer of everything.
//!
//! Remote placement is configured in `$BOSUN_HOME/placement.toml`; without that file bosund
//! listens on no network address at all. A backend submits a run's runner, reports the state
//! of its job, signals or cancels it, and after a restart of bosund tells what it still has,
//! so that runs are reattached or recorded lost with the backend's reason.
//!
//! Where a remote run works: its folder (the runner's spool and log, the link file, the run's
//! per-run files) is under `shared_dir`, a path every node sees at the same place, and the
//! program runs in the run's working directory, which must be on such a shared filesystem too.
//! (On Kubernetes, a volume mounted in the pod at the same path.)

pub mod ca;
mod error;
pub mod kubernetes;
pub mod slurm;

pub use error::PlacementError;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_protocol::tls::{RemoteLink, cert_digest_pem};
use bosun_shared::placement::Placement;
use bosun_shared::{RunId, RunToken};
use serde::Deserialize;

use bosun_kit::keychain::write_private;
use ca::Ca;

/// The file that turns remote placement on.
pub const CONFIG_FILE: &str = "placement.toml";

/// `$BOSUN_HOME/placement.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementConfig {
    /// The address bosund's runner listener binds, `IP:PORT` (port 0: any free one).
    pub listen: String,
    /// The address runners on other hosts dial, when it is not `listen` (behind a NAT, or when
    /// `listen` is `0.0.0.0`).
    #[serde(default)]
    pub advertise: Option<String>,
    #[serde(default)]
    pub slurm: Option<SlurmConfig>,
    #[serde(default)]
    pub kubernetes: Option<kubernetes::KubernetesConfig>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmConfig {
    /// A folder every node sees at the same path: each remote run's folder is made under it.
    pub shared_dir: PathBuf,
    /// `bosun-runner` on the nodes: a path, or a name looked up on the node's PATH.
    #[serde(default = "default_runner")]
    pub runner: PathBuf,
    /// How often bosund asks Slurm about the jobs of runs whose runner is not connected, in
    /// seconds.
    #[serde(default = "default_check_secs")]
    pub check_secs: u64,
    /// How long a runner whose job Slurm says is running may stay away before the run is
    /// lost and its job cancelled, in seconds.
    #[serde(default = "default_away_secs")]
    pub away_secs: u64,
}

fn default_runner() -> PathBuf {
    PathBuf::from("bosun-runner")
}

fn default_check_secs() -> u64 {
    2
}

fn default_away_secs() -> u64 {
    60
}

impl PlacementConfig {
    /// The configuration in the state directory; `None` when there is none (local runs only).
    pub fn load(state_dir: &Path) -> Result<Option<PlacementConfig>, PlacementError> {
        let path = state_dir.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(PlacementError::Files {
                    action: "read",
                    path,
                    source: e,
                });
            }
        };
        let config: PlacementConfig = match toml::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                return Err(PlacementError::Config {
                    path,
                    problem: format!("not valid: {e}"),
                });
            }
        };
        if let Some(s) = &config.slurm
            && !s.shared_dir.is_absolute()
        {
            let problem = format!(
                "slurm.shared_dir must be an absolute path every node sees, not {}",
                s.shared_dir.display()
            );
            return Err(PlacementError::Config { path, problem });
        }
        if let Some(k) = &config.kubernetes
            && let Err(e) = k.check()
        {
            return Err(PlacementError::Config {
                path,
                problem: e.to_string(),
            });
        }
        Ok(Some(config))
    }
}

/// What bosund knows to place runs elsewhere: its CA, where runners dial, and the backends.
pub struct Remote {
    pub ca: Ca,
    /// `host:port` runners dial.
    pub advertise: String,
    pub slurm: Option<SlurmBackend>,
    pub kubernetes: Option<kubernetes::Kubernetes>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("advertise", &self.advertise)
            .finish_non_exhaustive()
    }
}

pub struct SlurmBackend {
    pub config: SlurmConfig,
    pub client: slurm::Slurm,
}

/// The variables of bosund's environment Slurm's commands get (and, through `sbatch`, the job):
/// where Slurm's configuration is and where programs are found — nothing else of bosund's.
const SLURM_ENV: &[&str] = &["SLURM_CONF", "PATH", "LANG", "TZ"];

/// The extra time a job is given past the run's time cap: the stop ladder and a minute, so that
/// bosun's ladder ends a run at its cap, never Slurm.
const PAST_THE_CAP: Duration = Duration::from_secs(60);

impl SlurmBackend {
    /// The backend for `config`, its commands run with bosund's Slurm variables.
    pub fn new(config: SlurmConfig) -> Self {
        let env = SLURM_ENV
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)));
        Self {
            config,
            client: slurm::Slurm::new(env),
        }
    }

    /// Submits the run's runner: a script that only names the link file, and says plainly when
    /// `bosun-runner` is not installed on the node.
    async fn submit_runner(
        &self,
        run: RunId,
        dir: &Path,
        partition: Option<&str>,
        time_cap_ms: Option<u64>,
        ladder_ms: u64,
    ) -> Result<String, PlacementError> {
        let runner = sh_quote(&self.config.runner.display().to_string());
        let link = sh_quote(&dir.join("link.json").display().to_string());
        let script = format!(
            "#!/bin/sh\n\
             # bosun run {run}: the runner dials back to bosund; the plan comes over the link.\n\
             if ! command -v {runner} >/dev/null 2>&1; then\n  \
             echo \"bosun: bosun-runner is not installed on $(hostname) (looked for {runner}); install it there or set slurm.runner in placement.toml\" >&2\n  \
             exit 127\n\
             fi\n\
             exec {runner} --remote {link}\n"
        );
        let time_limit = time_cap_ms
            .map(|cap| Duration::from_millis(cap.saturating_add(ladder_ms)) + PAST_THE_CAP);
        let request = slurm::JobRequest {
            name: slurm::job_name(run),
            script,
            partition: partition.map(str::to_string),
            time_limit,
            chdir: dir.to_path_buf(),
            stdout: dir.join("runner.log"),
            stderr: dir.join("runner.log"),
            env: Vec::new(),
        };
        Ok(self.client.submit(&request).await?.to_string())
    }

    /// What Slurm says of `job`.
    async fn job_seen(&self, job: &str, dir: &Path) -> Result<JobSeen, PlacementError> {
        let jobs = self.client.jobs(slurm::JOB_NAME_PREFIX).await?;
        let Some(info) = jobs.into_iter().find(|j| j.id.to_string() == job) else {
            return Ok(JobSeen {
                phase: JobPhase::Unknown,
                node: None,
            });
        };
        let node = (!info.nodes.is_empty()).then(|| info.nodes.clone());
        let on = match &node {
            Some(n) => format!(" on {n}"),
            None => String::new(),
        };
        let reason = match info.reason.as_deref() {
            Some(r) if !r.is_empty() && r != "None" => format!(" ({r})"),
            Some(_) | None => String::new(),
        };
        use slurm::JobState;
        let phase = match &info.state {
            JobState::Pending => JobPhase::Waiting,
            JobState::Running | JobState::Completing => JobPhase::Running,
            JobState::NodeFail => JobPhase::Ended(format!(
                "its Slurm job {job}{on} ended NODE_FAIL: the node was lost{reason}"
            )),
            JobState::Cancelled => JobPhase::Ended(format!(
                "its Slurm job {job}{on} was cancelled outside bosun (scancel){reason}"
            )),
            JobState::Timeout => JobPhase::Ended(format!(
                "its Slurm job {job}{on} reached Slurm's time limit{reason}"
            )),
            state @ (JobState::Completed
            | JobState::Failed
            | JobState::OutOfMemory
            | JobState::Preempted) => JobPhase::Ended(format!(
                "its Slurm job {job}{on} ended {state}{reason}{}",
                runner_said(dir)
            )),
            JobState::Other(word) if info.state.is_finished() => {
                JobPhase::Ended(format!("its Slurm job {job}{on} ended {word}{reason}"))
            }
            JobState::Other(_) => JobPhase::Running,
        };
        Ok(JobSeen { phase, node })
    }

    async fn signal_job(
        &self,
        job: &str,
        signal: Option<nix::sys::signal::Signal>,
    ) -> Result<(), PlacementError> {
        let id: slurm::JobId = job.parse()?;
        match signal {
            Some(sig) => self.client.signal(id, sig).await?,
            None => self.client.cancel(id).await?,
        }
        Ok(())
    }
}

/// The last line the job's script or its runner wrote (bosun-runner missing on the node, a link
/// file it could not read), as `: …` — or nothing.
fn runner_said(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("runner.log")).unwrap_or_default();
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => {
            let line: String = line.trim().chars().take(300).collect();
            format!(": {line}")
        }
        None => String::new(),
    }
}

/// A word for a POSIX shell, quoted.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A run handed to a backend.
#[derive(Debug)]
pub struct Submitted {
    pub job: String,
    pub dir: PathBuf,
    pub cert_digest: String,
}

/// What a backend says of a run's job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobPhase {
    /// Waiting for a host.
    Waiting,
    /// On a host (its runner may or may not be connected).
    Running,
    /// Over, in the backend's words (why it ended, and on which node).
    Ended(String),
    /// The backend does not know the job (any more).
    Unknown,
}

#[derive(Clone, Debug)]
pub struct JobSeen {
    pub phase: JobPhase,
    pub node: Option<String>,
}

impl Remote {
    /// The folder of a remote run, on the shared filesystem.
    pub fn run_dir(&self, placement: &Placement, run: RunId) -> Result<PathBuf, PlacementError> {
        match placement {
            Placement::Local => Err(PlacementError::Local("has no remote folder")),
            Placement::Slurm { .. } => {
                let slurm = self.slurm_backend()?;
                Ok(slurm.config.shared_dir.join("runs").join(run.to_string()))
            }
            Placement::Kubernetes { .. } => {
                let k = self.kubernetes_backend()?;
                Ok(k.config.shared_dir.join("runs").join(run.to_string()))
            }
        }
    }

    pub fn kubernetes_backend(&self) -> Result<&kubernetes::Kubernetes, PlacementError> {
        self.kubernetes
            .as_ref()
            .ok_or(PlacementError::NotConfigured {
                backend: "kubernetes",
                needs: "image, shared_dir and its volume",
            })
    }

    pub fn slurm_backend(&self) -> Result<&SlurmBackend, PlacementError> {
        self.slurm.as_ref().ok_or(PlacementError::NotConfigured {
            backend: "slurm",
            needs: "shared_dir = a folder every node sees",
        })
    }

    /// How often runs whose runner is away ask the backend about their job (Slurm's setting
    /// when both backends are configured).
    pub fn check_every(&self) -> Duration {
        let secs = match (&self.slurm, &self.kubernetes) {
            (Some(s), _) => s.config.check_secs,
            (None, Some(k)) => k.config.check_secs,
            (None, None) => 2,
        };
        Duration::from_secs(secs.max(1))
    }

    /// How long a runner whose job runs may stay away (Slurm's setting when both backends are
    /// configured).
    pub fn away_grace(&self) -> Duration {
        let secs = match (&self.slurm, &self.kubernetes) {
            (Some(s), _) => s.config.away_secs,
            (None, Some(k)) => k.config.away_secs,
            (None, None) => 60,
        };
        Duration::from_secs(secs)
    }

    /// Makes the run's folder and its link file (the one thing the node's runner reads), then
    /// hands the runner to the backend.
    pub async fn submit(
        &self,
        placement: &Placement,
        run: RunId,
        token: &RunToken,
        time_cap_ms: Option<u64>,
        ladder_ms: u64,
    ) -> Result<Submitted, PlacementError> {
        let dir = self.run_dir(placement, run)?;
        if let Err(e) = bosun_shared::paths::create_private_dir(&dir) {
            return Err(PlacementError::Files {
                action: "make the run's folder",
                path: dir,
                source: e,
            });
        }
        let issued = self.ca.issue_run(run)?;
        let cert_digest = cert_digest_pem(&issued.cert_pem)
            .map_err(|e| PlacementError::Certificate(e.to_string()))?;
        let link = RemoteLink {
            run_id: run,
            token: token.clone(),
            addr: self.advertise.clone(),
            ca_pem: self.ca.cert_pem().to_string(),
            cert_pem: issued.cert_pem,
            key_pem: issued.key_pem,
        };
        let link_path = dir.join("link.json");
        let json = serde_json::to_vec(&link)
            .map_err(|e| PlacementError::Certificate(format!("could not write the link: {e}")))?;
        if let Err(e) = write_private(&link_path, &json) {
            return Err(PlacementError::Files {
                action: "write",
                path: link_path,
                source: e,
            });
        }
        let job = match placement {
            Placement::Local => return Err(PlacementError::Local("is not submitted")),
            Placement::Slurm { partition } => {
                let slurm = self.slurm_backend()?;
                slurm
                    .submit_runner(run, &dir, partition.as_deref(), time_cap_ms, ladder_ms)
                    .await
            }
            Placement::Kubernetes { namespace } => self
                .kubernetes_backend()?
                .submit(run, namespace, &dir, time_cap_ms, ladder_ms)
                .await
                .map_err(PlacementError::from),
        };
        match job {
            Ok(job) => Ok(Submitted {
                job,
                dir,
                cert_digest,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// What the backend says of a run's job (`dir`: the run's folder, where its runner's own
    /// words are).
    pub async fn job(
        &self,
        placement: &Placement,
        job: &str,
        dir: &Path,
    ) -> Result<JobSeen, PlacementError> {
        match placement {
            Placement::Local => Err(PlacementError::Local("has no job")),
            Placement::Slurm { .. } => self.slurm_backend()?.job_seen(job, dir).await,
            Placement::Kubernetes { namespace } => {
                Ok(self.kubernetes_backend()?.job_seen(namespace, job).await?)
            }
        }
    }

    /// Every job of bosun's the backends have that is not over, by the run its name carries:
    /// after a restart, those whose run is over (or was never placed for good) are cancelled.
    pub async fn unfinished_jobs(&self) -> Result<Vec<(RunId, Placement, String)>, PlacementError> {
        let mut found = Vec::new();
        if let Some(slurm) = &self.slurm {
            let jobs = slurm.client.jobs(slurm::JOB_NAME_PREFIX).await?;
            found.extend(
                jobs.into_iter()
                    .filter(|j| !j.state.is_finished())
                    .filter_map(|j| {
                        j.run.map(|run| {
                            (run, Placement::Slurm { partition: None }, j.id.to_string())
                        })
                    }),
            );
        }
        if let Some(k) = &self.kubernetes {
            // Slurm's orphans are still cancelled when Kubernetes cannot be asked.
            match k.unfinished().await {
                Ok(jobs) => found.extend(jobs.into_iter().map(|(run, namespace, name)| {
                    (run, Placement::Kubernetes { namespace }, name)
                })),
                Err(e) if self.slurm.is_some() => {
                    tracing::warn!(error = %e, "could not list bosun's Kubernetes Jobs to find orphans");
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(found)
    }

    /// Signals the run's runner through the backend (the stop ladder when the link is down),
    /// or cancels its job outright (`None`).
    pub async fn signal(
        &self,
        placement: &Placement,
        job: &str,
        signal: Option<nix::sys::signal::Signal>,
    ) -> Result<(), PlacementError> {
        match placement {
            Placement::Local => Err(PlacementError::Local("has no job")),
            Placement::Slurm { .. } => self.slurm_backend()?.signal_job(job, signal).await,
            // Kubernetes sends no signal of one's choosing: the Job is deleted, its pod first,
            // which is SIGTERM (the runner's ladder), then SIGKILL after the grace period.
            Placement::Kubernetes { namespace } => {
                Ok(self.kubernetes_backend()?.delete(namespace, job).await?)
            }
        }
    }
}
