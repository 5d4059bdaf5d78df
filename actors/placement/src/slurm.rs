//! A small typed client over Slurm's commands: `sbatch --parsable` to submit, `squeue --json`
//! to list, `scancel` to signal and cancel.
//!
//! Each command is found on bosund's `PATH`, started in a process group of its own
//! ([`Helper`]), and given [`Slurm::timeout`] to answer; what it wrote on stderr becomes the
//! error, in Slurm's own words (a refused partition, an unknown job).
//!
//! # The job's environment
//! A job gets exactly the variables its [`JobRequest`] names, plus the client's own environment
//! (`SLURM_CONF`, given by the caller) and the `SLURM_*` variables Slurm sets: `sbatch` runs with
//! an environment made of those alone and `--export=ALL`, so nothing of bosund's environment can
//! reach the job. `--export=NONE` (or a list of names) is not used: with it, Slurm 22.05 has
//! slurmd build the job's environment by running the user's login shell on the node
//! (`su - USER -c env`, its `--get-user-env`), which loads whatever that user's profile does and
//! can hang the launch. Slurm stores a job's environment and shows it to administrators (and
//! `scontrol show job -dd`), so no secret may ever be put there.
//!
//! # What Slurm reports
//! Recorded from Slurm 22.05 (`testdata/squeue-22.05.json`): `job_state` is one word
//! (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, …);
//! `exit_code` is the raw wait status of the batch script (`768` for `exit 3`, `15` for a job
//! ended by SIGTERM); `state_reason` is `None` when there is none; finished jobs stay listed for
//! the cluster's `MinJobAge`. Later Slurm versions give `job_state` as a list and `exit_code` as
//! an object; both forms are read.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;

use bosun_shared::RunId;
use bosun_shared::process::{Helper, HelperError};
use nix::sys::signal::Signal;
use serde::Deserialize;
use tokio::io::AsyncWriteExt as _;

/// What every job bosun submits is named: `bosun-<run id>`.
pub const JOB_NAME_PREFIX: &str = "bosun-";

/// How long a Slurm command may take unless the client is told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A Slurm job id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for JobId {
    type Err = SlurmError;

    /// A job id as `sbatch --parsable` prints it: `123`, or `123;cluster`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id = s.trim().split(';').next().unwrap_or_default().trim();
        id.parse().map(JobId).map_err(|_| SlurmError::Unreadable {
            command: "sbatch",
            detail: format!("expected a job id, got `{}`", s.trim()),
        })
    }
}

/// The job name that carries a run's id.
pub fn job_name(run: RunId) -> String {
    format!("{JOB_NAME_PREFIX}{run}")
}

/// The run a job name carries, if it is one of bosun's.
pub fn run_of(job_name: &str) -> Option<RunId> {
    job_name.strip_prefix(JOB_NAME_PREFIX)?.parse().ok()
}

/// One job to submit: a batch script run once, on one node, as one task.
#[derive(Clone, Debug)]
pub struct JobRequest {
    /// The job's name (`--job-name`): [`job_name`] of the run it carries.
    pub name: String,
    /// The batch script, given to `sbatch` on its stdin (Slurm stores it: never a secret in it).
    pub script: String,
    /// `--partition`; the cluster's default when `None`.
    pub partition: Option<String>,
    /// `--time`: Slurm counts whole minutes, so this is rounded up to the next minute.
    pub time_limit: Option<Duration>,
    /// `--chdir`: where the script runs; an absolute path the node sees.
    pub chdir: PathBuf,
    /// `--output`: the file the script's stdout goes to, an absolute path.
    pub stdout: PathBuf,
    /// `--error`: the file the script's stderr goes to, an absolute path.
    pub stderr: PathBuf,
    /// The only variables (besides the client's own and Slurm's `SLURM_*`) the job gets. Slurm
    /// stores and shows them: never a secret.
    pub env: Vec<(String, String)>,
}

/// A job's state, as `squeue` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for resources (or held; see the reason).
    Pending,
    Running,
    /// Ended; Slurm is still cleaning up on the node.
    Completing,
    /// The script exited 0.
    Completed,
    /// The script exited non-zero or was killed by a signal of its own.
    Failed,
    /// `scancel`led.
    Cancelled,
    /// Ended at its time limit.
    Timeout,
    /// Its node stopped answering.
    NodeFail,
    OutOfMemory,
    Preempted,
    /// Any other state, in Slurm's word (`SUSPENDED`, `BOOT_FAIL`, `DEADLINE`, …).
    Other(String),
}

impl JobState {
    /// Reads Slurm's word for a state.
    pub fn parse(word: &str) -> Self {
        match word.trim().to_ascii_uppercase().as_str() {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "COMPLETING" => JobState::Completing,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "CANCELLED" => JobState::Cancelled,
            "TIMEOUT" => JobState::Timeout,
            "NODE_FAIL" => JobState::NodeFail,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            "PREEMPTED" => JobState::Preempted,
            other => JobState::Other(other.to_string()),
        }
    }

    /// Slurm's word for it.
    pub fn as_str(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Preempted => "PREEMPTED",
            JobState::Other(word) => word,
        }
    }

    /// Whether the job is over (nothing of it runs or will run).
    pub fn is_finished(&self) -> bool {
        match self {
            JobState::Pending | JobState::Running | JobState::Completing => false,
            JobState::Completed
            | JobState::Failed
            | JobState::Cancelled
            | JobState::Timeout
            | JobState::NodeFail
            | JobState::OutOfMemory
            | JobState::Preempted => true,
            JobState::Other(word) => matches!(
                word.as_str(),
                "BOOT_FAIL" | "DEADLINE" | "REVOKED" | "SPECIAL_EXIT"
            ),
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a finished job's batch script ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobExit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal (a number).
    Signal(i32),
}

impl JobExit {
    /// From a raw wait status, as Slurm 22.05 reports `exit_code`.
    pub fn from_wait_status(status: i64) -> Self {
        let status = status as i32;
        if status & 0x7f == 0 {
            JobExit::Code((status >> 8) & 0xff)
        } else {
            JobExit::Signal(status & 0x7f)
        }
    }
}

/// One job, as `squeue --json` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    pub id: JobId,
    pub name: String,
    /// The run its name carries, when it is one of bosun's.
    pub run: Option<RunId>,
    pub state: JobState,
    /// The node(s) it runs or ran on, as Slurm writes a node list (`node1`, `node[1-3]`); empty
    /// while it waits.
    pub nodes: String,
    /// Why it is in its state (`Resources`, `NodeDown`, `NonZeroExitCode`, …), when Slurm says.
    pub reason: Option<String>,
    /// How its script ended, once it is finished.
    pub exit: Option<JobExit>,
}

/// Why a Slurm command gave no answer, or not the one asked for.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// The command is not on bosund's PATH (every method). Retrying does not help until
    /// Slurm's client commands are installed.
    #[error(
        "{command} not found: install slurm-client on this machine (or put Slurm's commands on bosund's PATH)"
    )]
    NotInstalled { command: &'static str },
    /// Slurm answered with an error: the scheduler refused (an invalid partition, an unknown
    /// job, a time limit over the partition's) or could not be reached. `message` is Slurm's own
    /// words. Retrying helps only when it was not reachable.
    #[error("{command} failed: {message}")]
    Refused {
        command: &'static str,
        message: String,
    },
    /// The command did not finish in time (every method): slurmctld is slow or unreachable.
    /// Retrying may help.
    #[error(
        "{command} did not answer within {} s: check that slurmctld is up and reachable (`sinfo`)",
        .after.as_secs()
    )]
    TimedOut {
        command: &'static str,
        after: Duration,
    },
    /// The command could not be started or waited for (every method). Retrying may help.
    #[error("could not run {command}: {detail}")]
    Io {
        command: &'static str,
        detail: String,
    },
    /// The command's answer is not what this client reads (`sbatch`'s job id, `squeue`'s JSON):
    /// another Slurm version, most likely. Retrying does not help.
    #[error(
        "could not read {command}'s answer: {detail}; is this a Slurm version bosun supports (22.05 or later)?"
    )]
    Unreadable {
        command: &'static str,
        detail: String,
    },
    /// The request itself is wrong (returned by `submit`, before anything runs). Retrying the
    /// same request does not help.
    #[error("{0}")]
    Invalid(String),
}

/// The client: Slurm's commands, run with the caller's environment.
#[derive(Clone, Debug)]
pub struct Slurm {
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    /// Where the commands are looked for; bosund's `PATH` when `None`.
    search_path: Option<OsString>,
}

impl Slurm {
    /// A client whose commands get `env` (e.g. `SLURM_CONF`) and nothing else of bosund's
    /// environment.
    pub fn new<K, V>(env: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self {
            env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            timeout: DEFAULT_TIMEOUT,
            search_path: None,
        }
    }

    /// Looks for Slurm's commands in `path` (a `PATH`-style list) instead of bosund's `PATH`.
    pub fn with_search_path(mut self, path: impl Into<OsString>) -> Self {
        self.search_path = Some(path.into());
        self
    }

    /// How long each command may take.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The time each command is given.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Submits `job` with `sbatch --parsable`; its script goes on stdin.
    pub async fn submit(&self, job: &JobRequest) -> Result<JobId, SlurmError> {
        let args = sbatch_args(job)?;
        let mut env = self.env.clone();
        env.extend(
            job.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let out = self
            .run(
                "sbatch",
                &args,
                &env,
                Some(&job.chdir),
                Some(job.script.as_bytes()),
            )
            .await?;
        String::from_utf8_lossy(&out).parse()
    }

    /// Every job Slurm lists whose name starts with `name_prefix` (`squeue --json`, every
    /// state; finished jobs stay listed for the cluster's `MinJobAge`).
    pub async fn jobs(&self, name_prefix: &str) -> Result<Vec<JobInfo>, SlurmError> {
        let args: Vec<OsString> = ["--json", "--states=all"]
            .iter()
            .map(OsString::from)
            .collect();
        let out = self.run("squeue", &args, &self.env, None, None).await?;
        let all = parse_squeue_json(&out)?;
        Ok(all
            .into_iter()
            .filter(|j| j.name.starts_with(name_prefix))
            .collect())
    }

    /// Sends `signal` to the whole job, its batch shell included (`scancel --signal --full`).
    pub async fn signal(&self, job: JobId, signal: Signal) -> Result<(), SlurmError> {
        let name = signal.as_str().trim_start_matches("SIG");
        let args = vec![
            OsString::from(format!("--signal={name}")),
            OsString::from("--full"),
            OsString::from(job.to_string()),
        ];
        self.run("scancel", &args, &self.env, None, None)
            .await
            .map(|_| ())
    }

    /// Cancels the job (`scancel`): Slurm sends SIGTERM, then SIGKILL after its `KillWait`.
    /// Slurm 22.05 takes this silently for a job that is over or unknown, so it may be repeated;
    /// [`Slurm::signal`] to such a job is an error.
    pub async fn cancel(&self, job: JobId) -> Result<(), SlurmError> {
        let args = vec![OsString::from(job.to_string())];
        self.run("scancel", &args, &self.env, None, None)
            .await
            .map(|_| ())
    }

    /// Runs `command` with exactly `env`, `stdin` written to it; returns its stdout when it
    /// exits 0, else its stderr as the error.
    async fn run(
        &self,
        command: &'static str,
        args: &[OsString],
        env: &[(OsString, OsString)],
        dir: Option<&Path>,
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, SlurmError> {
        let search = self
            .search_path
            .clone()
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let program = find_in(&search, command).ok_or(SlurmError::NotInstalled { command })?;
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = dir {
            cmd.current_dir(dir);
        }
        let io = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                SlurmError::NotInstalled { command }
            } else {
                SlurmError::Io {
                    command,
                    detail: e.to_string(),
                }
            }
        };
        let mut helper = Helper::spawn(&mut cmd).map_err(io)?;
        if let (Some(input), Some(mut pipe)) = (stdin, helper.child().stdin.take()) {
            let write = async {
                pipe.write_all(input).await?;
                pipe.shutdown().await
            };
            match tokio::time::timeout(self.timeout, write).await {
                // A command that stopped reading said why on stderr; that is read below.
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Ok(Err(e)) => return Err(io(e)),
                Err(_) => {
                    return Err(SlurmError::TimedOut {
                        command,
                        after: self.timeout,
                    });
                }
            }
        }
        let out = helper.output(self.timeout).await.map_err(|e| match e {
            HelperError::TimedOut(after) => SlurmError::TimedOut { command, after },
            HelperError::Io(e) => io(e),
        })?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        let said = plain_stderr(&out.stderr);
        let message = if said.is_empty() {
            format!("it ended with {} and said nothing", out.status)
        } else {
            said
        };
        Err(SlurmError::Refused { command, message })
    }
}

/// `sbatch`'s arguments for `job`, checked.
fn sbatch_args(job: &JobRequest) -> Result<Vec<OsString>, SlurmError> {
    if job.name.is_empty() || job.name.chars().any(|c| c.is_control() || c == ',') {
        return Err(SlurmError::Invalid(format!(
            "the job name `{}` cannot be given to Slurm: use letters, digits and dashes",
            job.name.escape_debug()
        )));
    }
    for (what, path) in [
        ("working directory", &job.chdir),
        ("output file", &job.stdout),
        ("error file", &job.stderr),
    ] {
        if !path.is_absolute() {
            return Err(SlurmError::Invalid(format!(
                "the job's {what} must be an absolute path the node sees, not {}",
                path.display()
            )));
        }
    }
    for (name, _) in &job.env {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(SlurmError::Invalid(format!(
                "`{}` is not a variable name a job can be given: use letters, digits and `_`",
                name.escape_debug()
            )));
        }
    }
    let mut args: Vec<OsString> = vec![
        "--parsable".into(),
        format!("--job-name={}", job.name).into(),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        // A job whose node fails must end, not start again: its runner would run twice.
        "--no-requeue".into(),
        // The environment is exactly the one `sbatch` runs with (see the module's notes).
        "--export=ALL".into(),
    ];
    if let Some(partition) = &job.partition {
        args.push(format!("--partition={partition}").into());
    }
    if let Some(limit) = job.time_limit {
        let minutes = limit.as_secs().div_ceil(60).max(1);
        args.push(format!("--time={minutes}").into());
    }
    args.push(prefixed("--chdir=", &job.chdir, false));
    args.push(prefixed("--output=", &job.stdout, true));
    args.push(prefixed("--error=", &job.stderr, true));
    Ok(args)
}

/// `flag` followed by `path`; in an output file name Slurm reads `%` as a pattern (`%j`), so
/// each is doubled to stand for itself.
fn prefixed(flag: &str, path: &Path, pattern: bool) -> OsString {
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    let mut bytes = flag.as_bytes().to_vec();
    for &b in path.as_os_str().as_bytes() {
        if pattern && b == b'%' {
            bytes.push(b'%');
        }
        bytes.push(b);
    }
    OsString::from_vec(bytes)
}

/// Slurm's stderr in one line: `sbatch: error: Batch job submission failed: Invalid partition
/// name specified` becomes `Batch job submission failed: Invalid partition name specified`.
fn plain_stderr(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| {
            let l = l.trim();
            for prefix in [
                "sbatch: error: ",
                "squeue: error: ",
                "scancel: error: ",
                "error: ",
            ] {
                if let Some(rest) = l.strip_prefix(prefix) {
                    return rest.to_string();
                }
            }
            l.to_string()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn find_in(path: &std::ffi::OsStr, command: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
}

#[derive(Deserialize)]
struct SqueueJson {
    #[serde(default)]
    jobs: Vec<SqueueJob>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct SqueueJob {
    job_id: u64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    job_state: serde_json::Value,
    #[serde(default)]
    nodes: String,
    #[serde(default)]
    state_reason: String,
    #[serde(default)]
    exit_code: serde_json::Value,
}

/// Reads `squeue --json`.
pub fn parse_squeue_json(bytes: &[u8]) -> Result<Vec<JobInfo>, SlurmError> {
    let unreadable = |detail: String| SlurmError::Unreadable {
        command: "squeue",
        detail,
    };
    let answer: SqueueJson =
        serde_json::from_slice(bytes).map_err(|e| unreadable(format!("not its JSON ({e})")))?;
    if let Some(first) = answer.errors.first() {
        let said = first
            .get("error")
            .or_else(|| first.get("description"))
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| first.to_string());
        return Err(SlurmError::Refused {
            command: "squeue",
            message: said,
        });
    }
    answer
        .jobs
        .into_iter()
        .map(|j| {
            // 22.05: "RUNNING"; later versions: ["RUNNING", "COMPLETING"…].
            let word = match &j.job_state {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(words) => words
                    .first()
                    .and_then(|w| w.as_str())
                    .unwrap_or_default()
                    .to_string(),
                other @ (serde_json::Value::Null
                | serde_json::Value::Bool(_)
                | serde_json::Value::Number(_)
                | serde_json::Value::Object(_)) => {
                    return Err(unreadable(format!(
                        "job {} has the state {other}",
                        j.job_id
                    )));
                }
            };
            let state = JobState::parse(&word);
            let exit = if state.is_finished() {
                exit_of(&j.exit_code)
            } else {
                None
            };
            let reason = match j.state_reason.as_str() {
                "" | "None" => None,
                r => Some(r.to_string()),
            };
            Ok(JobInfo {
                id: JobId(j.job_id),
                run: run_of(&j.name),
                name: j.name,
                state,
                nodes: j.nodes,
                reason,
                exit,
            })
        })
        .collect()
}

/// 22.05: the raw wait status as a number. Later versions: `{"return_code": n, "signal":
/// {"signal_id": n}}`, where a number may itself be `{"set": true, "number": n}`.
fn exit_of(value: &serde_json::Value) -> Option<JobExit> {
    fn number(v: Option<&serde_json::Value>) -> Option<i64> {
        let v = v?;
        if let Some(set) = v.get("set").and_then(|s| s.as_bool()) {
            return if set {
                v.get("number").and_then(|n| n.as_i64())
            } else {
                None
            };
        }
        v.as_i64()
    }
    if let Some(status) = value.as_i64() {
        return Some(JobExit::from_wait_status(status));
    }
    let signal = number(value.get("signal").and_then(|s| s.get("signal_id")));
    if let Some(signal) = signal.filter(|s| *s > 0) {
        return Some(JobExit::Signal(signal as i32));
    }
    number(value.get("return_code")).map(|c| JobExit::Code(c as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real `squeue --json --states=all` of Slurm 22.05.8, trimmed to one job of each state
    /// seen: a node killed under a job (NODE_FAIL), a time limit (TIMEOUT), `scancel`
    /// (CANCELLED), `exit 3` (FAILED), a held job (PENDING), a refused one (FAILED,
    /// BadConstraints).
    const SAMPLE: &[u8] = include_bytes!("testdata/squeue-22.05.json");

    /// A job as the test compares it: id, state, reason, exit, nodes.
    type Seen<'a> = (u64, &'a str, Option<&'a str>, Option<JobExit>, &'a str);

    fn by_name<'a>(jobs: &'a [JobInfo], name: &str) -> &'a JobInfo {
        jobs.iter().find(|j| j.name == name).unwrap()
    }

    #[test]
    fn reads_squeue_json_of_22_05() {
        let jobs = parse_squeue_json(SAMPLE).unwrap();
        assert_eq!(jobs.len(), 8);
        let seen: Vec<Seen> = jobs
            .iter()
            .map(|j| {
                (
                    j.id.0,
                    j.state.as_str(),
                    j.reason.as_deref(),
                    j.exit,
                    j.nodes.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, "COMPLETED", None, Some(JobExit::Code(0)), "node1"),
                (
                    2,
                    "FAILED",
                    Some("NonZeroExitCode"),
                    Some(JobExit::Code(3)),
                    "node1"
                ),
                (4, "CANCELLED", None, Some(JobExit::Code(0)), "node1"),
                (
                    7,
                    "NODE_FAIL",
                    Some("NodeDown"),
                    Some(JobExit::Code(0)),
                    "node1"
                ),
                (9, "PENDING", Some("JobHeldUser"), None, ""),
                (
                    15,
                    "TIMEOUT",
                    Some("TimeLimit"),
                    Some(JobExit::Signal(15)),
                    "node2"
                ),
                (17, "RUNNING", None, None, "node2"),
                (
                    18,
                    "FAILED",
                    Some("BadConstraints"),
                    Some(JobExit::Signal(1)),
                    ""
                ),
            ]
        );
        assert_eq!(by_name(&jobs, "bosun-nodefail").state, JobState::NodeFail);
        assert_eq!(by_name(&jobs, "bosun-timeout3").state, JobState::Timeout);
        assert_eq!(by_name(&jobs, "bosun-cancelled").state, JobState::Cancelled);
        assert_eq!(by_name(&jobs, "bosun-held").state, JobState::Pending);
        // Only a name that carries a run id names a run.
        let run = by_name(&jobs, "bosun-01kbdz0ad7w5m8d3rqf7e7x2cz");
        assert_eq!(
            run.run.map(|r| r.to_string()).as_deref(),
            Some("01kbdz0ad7w5m8d3rqf7e7x2cz")
        );
        assert_eq!(by_name(&jobs, "bosun-held").run, None);
    }

    #[test]
    fn reads_the_later_forms_of_state_and_exit() {
        let json = br#"{"jobs":[{"job_id":5,"name":"bosun-x","job_state":["COMPLETED"],
            "nodes":"n1","state_reason":"None","exit_code":{"status":["SUCCESS"],
            "return_code":{"set":true,"infinite":false,"number":2},
            "signal":{"signal_id":{"set":false,"infinite":false,"number":0},"name":""}}}],
            "errors":[]}"#;
        let jobs = parse_squeue_json(json).unwrap();
        assert_eq!(jobs[0].state, JobState::Completed);
        assert_eq!(jobs[0].exit, Some(JobExit::Code(2)));
    }

    #[test]
    fn squeue_errors_and_garbage_are_errors_in_words() {
        let e = parse_squeue_json(
            br#"{"jobs":[],"errors":[{"error":"Unable to contact slurm controller"}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "squeue failed: Unable to contact slurm controller"
        );
        let e = parse_squeue_json(b"JOBID NAME").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("could not read squeue's answer: not its JSON"),
            "{e}"
        );
    }

    #[test]
    fn states_map_both_ways_and_know_when_they_are_over() {
        for word in [
            "PENDING",
            "RUNNING",
            "COMPLETING",
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "PREEMPTED",
            "SUSPENDED",
            "BOOT_FAIL",
        ] {
            assert_eq!(JobState::parse(word).as_str(), word);
        }
        assert_eq!(
            JobState::parse("SUSPENDED"),
            JobState::Other("SUSPENDED".into())
        );
        assert!(!JobState::Pending.is_finished());
        assert!(!JobState::Completing.is_finished());
        assert!(!JobState::Other("SUSPENDED".into()).is_finished());
        assert!(JobState::NodeFail.is_finished());
        assert!(JobState::Other("BOOT_FAIL".into()).is_finished());
    }

    #[test]
    fn parses_sbatch_parsable_ids() {
        assert_eq!("123\n".parse::<JobId>().unwrap(), JobId(123));
        assert_eq!("77;bosun3\n".parse::<JobId>().unwrap(), JobId(77));
        let e = "Submitted batch job 5".parse::<JobId>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "could not read sbatch's answer: expected a job id, got `Submitted batch job 5`; is this a Slurm version bosun supports (22.05 or later)?"
        );
    }

    fn request() -> JobRequest {
        JobRequest {
            name: "bosun-01kbdz0ad7w5m8d3rqf7e7x2cz".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            partition: Some("main".into()),
            time_limit: Some(Duration::from_secs(61)),
            chdir: "/shared/runs/x".into(),
            stdout: "/shared/runs/x/50%.out".into(),
            stderr: "/shared/runs/x/job.err".into(),
            env: vec![("BOSUN_LINK".into(), "/shared/runs/x/link.json".into())],
        }
    }

    #[test]
    fn sbatch_gets_one_node_one_task_no_requeue_and_escaped_paths() {
        let args: Vec<String> = sbatch_args(&request())
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "--parsable",
                "--job-name=bosun-01kbdz0ad7w5m8d3rqf7e7x2cz",
                "--nodes=1",
                "--ntasks=1",
                "--no-requeue",
                "--export=ALL",
                "--partition=main",
                "--time=2",
                "--chdir=/shared/runs/x",
                "--output=/shared/runs/x/50%%.out",
                "--error=/shared/runs/x/job.err",
            ]
        );
    }

    #[test]
    fn bad_requests_are_refused_in_words() {
        let mut r = request();
        r.chdir = "runs/x".into();
        assert_eq!(
            sbatch_args(&r).unwrap_err().to_string(),
            "the job's working directory must be an absolute path the node sees, not runs/x"
        );
        let mut r = request();
        r.env.push(("A-B".into(), "1".into()));
        assert_eq!(
            sbatch_args(&r).unwrap_err().to_string(),
            "`A-B` is not a variable name a job can be given: use letters, digits and `_`"
        );
    }

    #[test]
    fn exit_of_a_wait_status() {
        assert_eq!(JobExit::from_wait_status(0), JobExit::Code(0));
        assert_eq!(JobExit::from_wait_status(768), JobExit::Code(3));
        assert_eq!(JobExit::from_wait_status(9), JobExit::Signal(9));
    }

    #[test]
    fn stderr_in_one_line_without_prefixes() {
        assert_eq!(
            plain_stderr(
                b"sbatch: error: invalid partition specified: nope\nsbatch: error: Batch job submission failed: Invalid partition name specified\n"
            ),
            "invalid partition specified: nope; Batch job submission failed: Invalid partition name specified"
        );
    }

    #[tokio::test]
    async fn a_missing_command_is_named_with_what_to_install() {
        let empty = tempfile::tempdir().unwrap();
        let slurm = Slurm::new(Vec::<(String, String)>::new()).with_search_path(empty.path());
        let e = slurm.jobs(JOB_NAME_PREFIX).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "squeue not found: install slurm-client on this machine (or put Slurm's commands on bosund's PATH)"
        );
        let e = slurm.cancel(JobId(1)).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("scancel not found: install slurm-client")
        );
    }
}
