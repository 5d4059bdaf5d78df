//! Starting a runner: a process of its own, recorded before it is handed its plan.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Stdio;

use bosun_protocol::frame::encode_frame;
use bosun_protocol::runner::LaunchPlan;
use bosun_shared::paths::{StateDir, create_private_dir};
use bosun_shared::process::{Pid, ProcessIdentity};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};

pub struct SpawnedRunner {
    pub child: Child,
    pub stdin: ChildStdin,
    pub identity: ProcessIdentity,
}

/// Starts `bosun-runner` for a run. The runner waits for its plan on stdin, so it can do nothing
/// until the caller has recorded it and calls [`send_plan`]. Its stderr goes to the run's
/// `runner.log`; its environment holds only `BOSUN_HOME` (the plan carries the rest).
pub fn spawn_runner(
    runner_bin: &Path,
    dirs: &StateDir,
    run_dir: &Path,
) -> io::Result<SpawnedRunner> {
    create_private_dir(run_dir)?;
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(run_dir.join("runner.log"))?;
    let mut child = tokio::process::Command::new(runner_bin)
        .env_clear()
        .env("BOSUN_HOME", dirs.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the runner exited at once"))?;
    let identity = ProcessIdentity::of(Pid::of_child(pid))
        .ok_or_else(|| io::Error::other("the runner exited at once"))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the runner has no stdin"))?;
    Ok(SpawnedRunner {
        child,
        stdin,
        identity,
    })
}

/// Hands the runner its plan and closes its stdin.
pub async fn send_plan(mut stdin: ChildStdin, plan: &LaunchPlan) -> io::Result<()> {
    let frame = encode_frame(plan).map_err(|e| io::Error::other(e.to_string()))?;
    stdin.write_all(&frame).await?;
    stdin.flush().await?;
    drop(stdin);
    Ok(())
}
