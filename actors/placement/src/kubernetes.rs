//! The Kubernetes backend: one Job per run through kube-rs.
//!
//! A run placed on `kubernetes:NAMESPACE` becomes the Job `bosun-<run-id>` in that namespace
//! (labelled `bosun.dev/run=<run-id>`): one pod (`backoffLimit: 0`, `restartPolicy: Never`)
//! whose only container runs `bosun-runner --remote <run folder>/link.json` from the configured
//! image. The run's folder reaches the pod through a shared volume (a PersistentVolumeClaim or
//! a hostPath) mounted at the same path as on bosund's machine. Nothing secret is in the Job:
//! the runner dials bosund over mutual TLS and gets its plan over that link.
//!
//! State is read on each check (a get of the Job and a list of its pods by the run label),
//! not kept by a watcher: bosund only asks while a run's runner is away, every `check_secs`.
//! Stopping deletes the Job with `propagationPolicy: Foreground`: the pod gets SIGTERM (the
//! runner runs the stop ladder), then SIGKILL after its grace period.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use bosun_shared::RunId;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerStateTerminated, ContainerStateWaiting, HostPathVolumeSource,
    PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec, PodTemplateSpec, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde::Deserialize;

use super::{JobPhase, JobSeen};

/// The label every Job and pod of bosun's carries: the run it is for.
pub const RUN_LABEL: &str = "bosun.dev/run";

/// What a Job's name starts with; the rest is the run id, lowercased.
pub const JOB_NAME_PREFIX: &str = "bosun-";

/// The `[kubernetes]` section of `placement.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    /// A kubeconfig file; without it, kube's inference: `$KUBECONFIG`, `~/.kube/config`, or
    /// the pod's service account when bosund itself runs in the cluster.
    #[serde(default)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context to use, when not its current one.
    #[serde(default)]
    pub context: Option<String>,
    /// The container image with `bosun-runner` and the CLIs runs need.
    pub image: String,
    /// `bosun-runner` in the image: a path, or a name on the image's PATH.
    #[serde(default = "default_runner")]
    pub runner: PathBuf,
    /// A folder on the shared volume: each remote run's folder is made under it.
    pub shared_dir: PathBuf,
    /// Where the shared volume is mounted, in the pod and on bosund's machine alike:
    /// `shared_dir` or a folder above it (so that runs' working directories on the same volume
    /// are seen too). Default: `shared_dir`.
    #[serde(default)]
    pub mount: Option<PathBuf>,
    /// The volume: a PersistentVolumeClaim in the run's namespace (ReadWriteMany) …
    #[serde(default)]
    pub claim: Option<String>,
    /// … or a folder of every node (an NFS mount the nodes share), mounted at `mount`.
    #[serde(default)]
    pub host_path: Option<PathBuf>,
    /// The user and group the runner runs as in the pod (the run's folder is private to them);
    /// default: bosund's own.
    #[serde(default)]
    pub run_as_user: Option<i64>,
    #[serde(default)]
    pub run_as_group: Option<i64>,
    /// How often bosund asks about the Jobs of runs whose runner is not connected, in seconds.
    #[serde(default = "default_check_secs")]
    pub check_secs: u64,
    /// How long a runner whose pod runs may stay away before the run is lost, in seconds.
    #[serde(default = "default_away_secs")]
    pub away_secs: u64,
    /// How long a finished Job is kept before Kubernetes deletes it (`ttlSecondsAfterFinished`).
    #[serde(default = "default_ttl_secs")]
    pub ttl_secs: u64,
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

fn default_ttl_secs() -> u64 {
    600
}

impl KubernetesConfig {
    /// Where the volume is mounted.
    pub fn mount_path(&self) -> &Path {
        self.mount.as_deref().unwrap_or(&self.shared_dir)
    }

    /// Checks what a Job will be made of, with the way to fix each mistake.
    pub fn check(&self) -> Result<(), KubeError> {
        if !self.shared_dir.is_absolute() {
            return Err(KubeError::Setting(format!(
                "kubernetes.shared_dir must be an absolute path (where the shared volume is mounted), not {}",
                self.shared_dir.display()
            )));
        }
        let mount = self.mount_path();
        if !mount.is_absolute() || !self.shared_dir.starts_with(mount) {
            return Err(KubeError::Setting(format!(
                "kubernetes.mount ({}) must be an absolute path that holds shared_dir ({})",
                mount.display(),
                self.shared_dir.display()
            )));
        }
        if self.image.trim().is_empty() {
            return Err(KubeError::Setting(
                "kubernetes.image is empty: name the container image that has bosun-runner and the CLIs"
                    .into(),
            ));
        }
        match (&self.claim, &self.host_path) {
            (Some(claim), None) => {
                if !is_dns_subdomain(claim) {
                    return Err(KubeError::Setting(format!(
                        "kubernetes.claim `{claim}` is not a PersistentVolumeClaim name (lowercase letters, digits, '-' and '.')"
                    )));
                }
            }
            (None, Some(path)) => {
                if !path.is_absolute() {
                    return Err(KubeError::Setting(format!(
                        "kubernetes.host_path must be an absolute path of the nodes, not {}",
                        path.display()
                    )));
                }
            }
            (Some(_), Some(_)) => {
                return Err(KubeError::Setting(
                    "[kubernetes] names both `claim` and `host_path`: the run folders' volume is one of them"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(KubeError::Setting(
                    "[kubernetes] needs the volume that carries the run folders to the pods: `claim = \"NAME\"` (a PersistentVolumeClaim) or `host_path = \"/PATH\"` (a folder every node has)"
                        .into(),
                ));
            }
        }
        Ok(())
    }
}

/// A DNS-1123 subdomain (a PVC's name): at most 253 characters of lowercase letters, digits,
/// '-' and '.', starting and ending with a letter or digit.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// The Job's name for a run: `bosun-` and the run id, lowercased (32 characters).
pub fn job_name(run: RunId) -> String {
    format!("{JOB_NAME_PREFIX}{}", run.to_string().to_ascii_lowercase())
}

/// What goes into one run's Job.
#[derive(Clone, Debug)]
pub struct JobRequest<'a> {
    pub run: RunId,
    pub namespace: &'a str,
    /// The run's folder (on the shared volume): the link file is in it.
    pub dir: &'a Path,
    pub time_cap_ms: Option<u64>,
    pub ladder_ms: u64,
    pub run_as_user: i64,
    pub run_as_group: i64,
}

/// The extra time a Job is given past the run's time cap and ladder, so that bosun's ladder,
/// not Kubernetes, ends a run at its cap.
const PAST_THE_CAP: Duration = Duration::from_secs(60);

/// How long the pod has after SIGTERM, past the ladder, before the kubelet sends SIGKILL.
const GRACE_PAST_LADDER: Duration = Duration::from_secs(10);

/// The Job for a run. Nothing secret is in it: only the link file's path.
pub fn job_spec(config: &KubernetesConfig, req: &JobRequest<'_>) -> Job {
    let run = req.run.to_string();
    let labels = BTreeMap::from([(RUN_LABEL.to_string(), run.clone())]);
    let ceil_secs = |ms: u64| -> i64 { i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX) };
    let active_deadline = req.time_cap_ms.map(|cap| {
        ceil_secs(cap.saturating_add(req.ladder_ms))
            .saturating_add(i64::try_from(PAST_THE_CAP.as_secs()).unwrap_or(60))
    });
    let grace = ceil_secs(req.ladder_ms)
        .saturating_add(i64::try_from(GRACE_PAST_LADDER.as_secs()).unwrap_or(10));
    let mount = config.mount_path().display().to_string();
    let volume = match (&config.claim, &config.host_path) {
        (Some(claim), _) => Volume {
            name: "bosun-shared".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: None,
            }),
            ..Volume::default()
        },
        (None, host) => Volume {
            name: "bosun-shared".into(),
            host_path: Some(HostPathVolumeSource {
                path: host
                    .as_deref()
                    .unwrap_or(config.mount_path())
                    .display()
                    .to_string(),
                type_: Some("Directory".into()),
            }),
            ..Volume::default()
        },
    };
    let container = Container {
        name: "bosun-runner".into(),
        image: Some(config.image.clone()),
        command: Some(vec![
            config.runner.display().to_string(),
            "--remote".into(),
            req.dir.join("link.json").display().to_string(),
        ]),
        working_dir: Some(req.dir.display().to_string()),
        volume_mounts: Some(vec![VolumeMount {
            name: "bosun-shared".into(),
            mount_path: mount,
            ..VolumeMount::default()
        }]),
        // The runner's last lines become the pod's termination message when it fails.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(req.run)),
            namespace: Some(req.namespace.to_string()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: active_deadline,
            ttl_seconds_after_finished: Some(i32::try_from(config.ttl_secs).unwrap_or(i32::MAX)),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    termination_grace_period_seconds: Some(grace),
                    // The runner never talks to the Kubernetes API.
                    automount_service_account_token: Some(false),
                    security_context: Some(PodSecurityContext {
                        run_as_user: Some(req.run_as_user),
                        run_as_group: Some(req.run_as_group),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container],
                    volumes: Some(vec![volume]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// The Kubernetes backend: its configuration and a client of the API server.
pub struct Kubernetes {
    pub config: KubernetesConfig,
    client: kube::Client,
    /// Jobs bosun itself deleted, so that a Job being deleted is told apart from one deleted
    /// from outside.
    deleted: Mutex<HashSet<String>>,
}

impl Kubernetes {
    /// A client of the cluster `config` names (its kubeconfig, or kube's inference).
    pub async fn connect(config: KubernetesConfig) -> Result<Self, KubeError> {
        config.check()?;
        let kube_config = match &config.kubeconfig {
            Some(path) => {
                let file = kube::config::Kubeconfig::read_from(path).map_err(|e| {
                    KubeError::Kubeconfig(format!(
                        "could not read the kubeconfig {} (kubernetes.kubeconfig in placement.toml): {e}",
                        path.display()
                    ))
                })?;
                let options = kube::config::KubeConfigOptions {
                    context: config.context.clone(),
                    cluster: None,
                    user: None,
                };
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|e| {
                        KubeError::Kubeconfig(format!(
                            "the kubeconfig {} cannot be used: {e}; check its current context (or kubernetes.context)",
                            path.display()
                        ))
                    })?
            }
            None => kube::Config::infer().await.map_err(|e| {
                KubeError::Kubeconfig(format!(
                    "found no Kubernetes configuration ($KUBECONFIG, ~/.kube/config, or a pod's service account): {e}; set kubernetes.kubeconfig in placement.toml"
                ))
            })?,
        };
        let client = kube::Client::try_from(kube_config).map_err(|e| {
            KubeError::Kubeconfig(format!("could not make a Kubernetes client: {e}"))
        })?;
        Ok(Self {
            config,
            client,
            deleted: Mutex::new(HashSet::new()),
        })
    }

    fn jobs(&self, namespace: &str) -> Api<Job> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Creates the run's Job; returns its name.
    pub async fn submit(
        &self,
        run: RunId,
        namespace: &str,
        dir: &Path,
        time_cap_ms: Option<u64>,
        ladder_ms: u64,
    ) -> Result<String, KubeError> {
        let req = JobRequest {
            run,
            namespace,
            dir,
            time_cap_ms,
            ladder_ms,
            run_as_user: self
                .config
                .run_as_user
                .unwrap_or_else(|| i64::from(nix::unistd::getuid().as_raw())),
            run_as_group: self
                .config
                .run_as_group
                .unwrap_or_else(|| i64::from(nix::unistd::getgid().as_raw())),
        };
        let job = job_spec(&self.config, &req);
        let name = job_name(run);
        self.jobs(namespace)
            .create(&PostParams::default(), &job)
            .await
            .map_err(|e| api_error(e, &format!("create the Job {name}"), namespace))?;
        Ok(name)
    }

    /// What the Job and its pod say.
    pub async fn job_seen(&self, namespace: &str, name: &str) -> Result<JobSeen, KubeError> {
        let job = self
            .jobs(namespace)
            .get_opt(name)
            .await
            .map_err(|e| api_error(e, &format!("read the Job {name}"), namespace))?;
        let run = job
            .as_ref()
            .and_then(|j| j.metadata.labels.as_ref())
            .and_then(|l| l.get(RUN_LABEL).cloned())
            .unwrap_or_else(|| run_of_name(name));
        let pods = self
            .pods(namespace)
            .list(&ListParams::default().labels(&format!("{RUN_LABEL}={run}")))
            .await
            .map_err(|e| api_error(e, &format!("list the pods of the Job {name}"), namespace))?;
        let by_bosun = self
            .deleted
            .lock()
            .map(|d| d.contains(&format!("{namespace}/{name}")))
            .unwrap_or(false);
        Ok(seen(namespace, name, job.as_ref(), &pods.items, by_bosun))
    }

    /// Deletes the Job, its pod first (`Foreground`): the runner gets SIGTERM and runs its
    /// ladder, then SIGKILL after the pod's grace period. A Job already gone is fine.
    pub async fn delete(&self, namespace: &str, name: &str) -> Result<(), KubeError> {
        if let Ok(mut d) = self.deleted.lock() {
            d.insert(format!("{namespace}/{name}"));
        }
        match self
            .jobs(namespace)
            .delete(name, &DeleteParams::foreground())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(api_error(e, &format!("delete the Job {name}"), namespace)),
        }
    }

    /// bosun's Jobs that are not over, in every namespace: (run, namespace, Job name).
    pub async fn unfinished(&self) -> Result<Vec<(RunId, String, String)>, KubeError> {
        let all: Api<Job> = Api::all(self.client.clone());
        let jobs = all
            .list(&ListParams::default().labels(RUN_LABEL))
            .await
            .map_err(|e| api_error(e, "list bosun's Jobs in all namespaces", "(all)"))?;
        Ok(jobs
            .items
            .into_iter()
            .filter(|j| finished_condition(j).is_none() && j.metadata.deletion_timestamp.is_none())
            .filter_map(|j| {
                let run = j.metadata.labels.as_ref()?.get(RUN_LABEL)?.parse().ok()?;
                Some((run, j.metadata.namespace?, j.metadata.name?))
            })
            .collect())
    }
}

/// The run id a Job's name carries (uppercase, as bosun writes run ids).
fn run_of_name(name: &str) -> String {
    name.strip_prefix(JOB_NAME_PREFIX)
        .unwrap_or(name)
        .to_ascii_uppercase()
}

/// An API error in plain words, with what to do for the usual ones.
fn api_error(e: kube::Error, action: &str, namespace: &str) -> KubeError {
    // Not a match on kube's error: it grows variants, and every one but `Api` is "no answer".
    if let kube::Error::Api(status) = e {
        let hint = match status.code {
            401 => " (the credentials of the kubeconfig were not accepted: renew them)".into(),
            403 => format!(
                " (bosun's Kubernetes account needs create, get, list and delete on jobs, and list on pods, in the namespace {namespace})"
            ),
            404 if status.message.contains("namespaces") => format!(
                " (the namespace {namespace} does not exist: create it, or place the run in another)"
            ),
            409 => " (a Job of that name is already there)".into(),
            _ => String::new(),
        };
        KubeError::Refused {
            action: action.to_string(),
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
            hint,
        }
    } else {
        KubeError::NoAnswer {
            action: action.to_string(),
            source: e,
        }
    }
}

/// Why the Kubernetes backend could not be set up, or could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// A `[kubernetes]` setting cannot work: from `KubernetesConfig::check`, at bosund's start.
    /// Retrying cannot help; the message says what to change.
    #[error("{0}")]
    Setting(String),
    /// The kubeconfig could not be read or used, or none was found: from `Kubernetes::connect`.
    /// Retrying cannot help until it is fixed; the message says where to look.
    #[error("{0}")]
    Kubeconfig(String),
    /// The API server answered with an error to `action`; `hint` says what to do for the usual
    /// codes. Retrying helps only when what stood in the way is gone.
    #[error("Kubernetes refused to {action}: {message} ({code} {reason}){hint}")]
    Refused {
        action: String,
        code: u16,
        reason: String,
        message: String,
        hint: String,
    },
    /// The API server did not answer `action`. Retrying helps once it is reachable.
    #[error(
        "could not {action}: the Kubernetes API server did not answer ({source}); check that it is reachable and kubernetes.kubeconfig in placement.toml"
    )]
    NoAnswer {
        action: String,
        #[source]
        source: kube::Error,
    },
}

/// The Job's finished condition (`Complete`, `Failed`, or the `FailureTarget` / success
/// criteria that come before them), as (type, reason, message).
fn finished_condition(job: &Job) -> Option<(String, String, String)> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .filter(|c| c.status == "True")
        .find(|c| {
            matches!(
                c.type_.as_str(),
                "Complete" | "Failed" | "FailureTarget" | "SuccessCriteriaMet"
            )
        })
        .map(|c| {
            (
                c.type_.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// The newest pod (a Job with `backoffLimit: 0` has one).
fn newest(pods: &[Pod]) -> Option<&Pod> {
    pods.iter().max_by(|a, b| {
        a.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0)
            .cmp(&b.metadata.creation_timestamp.as_ref().map(|t| t.0))
    })
}

fn runner_container_terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find_map(|c| c.state.as_ref()?.terminated.as_ref())
}

fn runner_container_waiting(pod: &Pod) -> Option<&ContainerStateWaiting> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref())
}

/// `: message`, cut to one line of at most 300 characters — or nothing.
fn words(message: Option<&str>) -> String {
    let text = message.unwrap_or("").trim();
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if line.is_empty() {
        return String::new();
    }
    let line: String = line.trim().chars().take(300).collect();
    format!(": {line}")
}

/// How the runner's container ended, when it did.
fn container_end(pod: &Pod) -> String {
    match runner_container_terminated(pod) {
        Some(t) => {
            let reason = t.reason.as_deref().unwrap_or("ended");
            let signal = match t.signal {
                Some(s) if s != 0 => format!(", signal {s}"),
                Some(_) | None => String::new(),
            };
            format!(
                "the runner's container ended {reason} with exit code {}{signal}{}",
                t.exit_code,
                words(t.message.as_deref())
            )
        }
        None => "the runner's container did not report how it ended".into(),
    }
}

/// What the pod says, when it says the run cannot go on.
fn pod_end(p: &Pod, its_pod: &str, node: Option<&str>) -> Option<String> {
    let status = p.status.as_ref()?;
    let reason = status.reason.as_deref().unwrap_or("");
    let message = status.message.as_deref();
    let disruption = status.conditions.as_ref().and_then(|cs| {
        cs.iter()
            .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
    });
    if reason == "Evicted" {
        return Some(format!("{its_pod} was evicted{}", words(message)));
    }
    if reason == "NodeLost" || status.phase.as_deref() == Some("Unknown") {
        let n = node.unwrap_or("(not known)");
        return Some(format!(
            "the node {n} was lost: Kubernetes lost contact with it{}",
            words(message)
        ));
    }
    if let Some(c) = disruption {
        let why = match c.reason.as_deref().unwrap_or("") {
            "DeletionByTaintManager" | "DeletionByPodGC" => {
                let n = node.unwrap_or("(not known)");
                format!("the node {n} was lost: {its_pod} was deleted by Kubernetes")
            }
            "EvictionByEvictionAPI" => format!("{its_pod} was evicted (a node drain)"),
            "PreemptionByScheduler" => {
                format!("{its_pod} was preempted for a pod of higher priority")
            }
            "TerminationByKubelet" => {
                format!("{its_pod} was ended by the node's kubelet (shutdown or pressure)")
            }
            other => format!("{its_pod} was disrupted ({other})"),
        };
        return Some(format!("{why}{}", words(c.message.as_deref())));
    }
    if p.metadata.deletion_timestamp.is_some() {
        return Some(format!(
            "{its_pod} was deleted from outside bosun (kubectl delete pod)"
        ));
    }
    if let Some(why) = cannot_start(p, its_pod) {
        return Some(why);
    }
    match status.phase.as_deref() {
        Some("Failed") => {
            let start_error = runner_container_terminated(p)
                .and_then(|t| t.reason.as_deref())
                .is_some_and(|r| r == "StartError" || r == "ContainerCannotRun");
            let hint = if start_error {
                "; is bosun-runner in the image at kubernetes.runner?"
            } else {
                ""
            };
            Some(format!("{its_pod} failed: {}{hint}", container_end(p)))
        }
        Some("Succeeded") => Some(format!(
            "{its_pod} ended without its runner reporting to bosund: {}",
            container_end(p)
        )),
        Some(_) | None => None,
    }
}

/// Why the runner's container cannot start, when it waits on an image it cannot pull or a
/// command it cannot run.
fn cannot_start(p: &Pod, its_pod: &str) -> Option<String> {
    let w = runner_container_waiting(p)?;
    let why = w.reason.as_deref().unwrap_or("");
    match why {
        "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName" | "ErrImageNeverPull" => {
            Some(format!(
                "{its_pod} could not pull its image ({why}){}; check kubernetes.image in placement.toml and the registry's credentials",
                words(w.message.as_deref())
            ))
        }
        "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError" => {
            Some(format!(
                "{its_pod} could not start bosun-runner ({why}){}; is bosun-runner in the image at kubernetes.runner?",
                words(w.message.as_deref())
            ))
        }
        _ => None,
    }
}

/// The state of a run's Job as the RunActor wants it, from the Job and its pods (`None`: the
/// Job is not there). `by_bosun`: bosun itself deleted the Job.
pub fn seen(
    namespace: &str,
    name: &str,
    job: Option<&Job>,
    pods: &[Pod],
    by_bosun: bool,
) -> JobSeen {
    let pod = newest(pods);
    let node = pod
        .and_then(|p| p.spec.as_ref())
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let on = match &node {
        Some(n) => format!(" on node {n}"),
        None => String::new(),
    };
    let the_job = format!("its Kubernetes Job {namespace}/{name}");
    let ended = |how: String| JobSeen {
        phase: JobPhase::Ended(how),
        node: node.clone(),
    };
    let Some(job) = job else {
        return ended(if by_bosun {
            format!("{the_job}{on} was deleted by bosun")
        } else {
            format!(
                "{the_job}{on} is gone: deleted from outside bosun (kubectl delete), or removed after it ended (ttlSecondsAfterFinished)"
            )
        });
    };
    if job.metadata.deletion_timestamp.is_some() {
        return ended(if by_bosun {
            format!("{the_job}{on} was deleted by bosun")
        } else {
            format!("{the_job}{on} was deleted from outside bosun (kubectl delete)")
        });
    }
    let pod_name = pod
        .and_then(|p| p.metadata.name.clone())
        .unwrap_or_else(|| "(unnamed)".into());
    let its_pod = format!("its pod {pod_name}{on}");
    let pod_end = pod.and_then(|p| pod_end(p, &its_pod, node.as_deref()));
    if let Some((kind, reason, message)) = finished_condition(job) {
        let msg = words(Some(&message));
        return ended(match (kind.as_str(), reason.as_str()) {
            (_, "DeadlineExceeded") => format!(
                "{the_job}{on} ran past its activeDeadlineSeconds (the run's time cap, its stop ladder and a minute) and was ended by Kubernetes{msg}"
            ),
            ("Complete" | "SuccessCriteriaMet", _) => match pod_end {
                Some(p) => p,
                None => format!("{the_job}{on} ended Complete without its runner reporting"),
            },
            (_, _) => match pod_end {
                Some(p) => p,
                None if reason.is_empty() => format!("{the_job}{on} ended {kind}{msg}"),
                None => format!("{the_job}{on} ended {kind} ({reason}){msg}"),
            },
        });
    }
    if let Some(p) = pod_end {
        return ended(p);
    }
    let phase = match pod.and_then(|p| p.status.as_ref()?.phase.as_deref()) {
        Some("Running") => JobPhase::Running,
        // Pending: not scheduled yet, or its image being pulled and its container made.
        Some(_) | None => JobPhase::Waiting,
    };
    JobSeen { phase, node }
}

#[cfg(test)]
mod tests;
