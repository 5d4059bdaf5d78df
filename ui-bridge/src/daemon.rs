//! Starting `bosund` when it is not running, and waiting until it answers.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bosun_protocol::socket;
use bosun_shared::paths::StateDir;
use interprocess::local_socket::tokio::Stream;

use crate::ClientError;

/// Set to `bosun` in the environment of a `bosund` that `bosun` started on demand, so `bosun
/// daemon status` can tell it from one started by systemd or by hand.
pub const STARTED_BY: &str = "BOSUN_STARTED_BY";

/// How long a freshly started daemon has to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Whether a connect error means there is no daemon listening.
pub fn is_not_running(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

/// Where `bosund` is: `$BOSUN_DAEMON_BIN`, else beside this program, else on `PATH`.
pub fn daemon_binary() -> Result<PathBuf, ClientError> {
    if let Some(p) = std::env::var_os("BOSUN_DAEMON_BIN") {
        return Ok(PathBuf::from(p));
    }
    if let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("bosund")))
        .filter(|p| p.is_file())
    {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bosund"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            ClientError::StartFailed(
                "bosund is not running, and it was not found beside bosun or on PATH; install it next to bosun or set BOSUN_DAEMON_BIN".into(),
            )
        })
}

/// Where a `bosund` started by `bosun` writes its stderr: why it could not start, when it could
/// not (kept until the next start).
fn stderr_file(dirs: &StateDir) -> PathBuf {
    dirs.root().join("bosund.stderr")
}

/// Why the last `bosund` that `bosun` started stopped or would not start, in its own words, when
/// it said (a store it refused, say); `None` when it said nothing.
pub fn last_words(dirs: &StateDir) -> Option<String> {
    let text = fs::read_to_string(stderr_file(dirs)).ok()?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(last.trim().trim_start_matches("bosund: ").to_string())
}

/// Starts `bosund` in a session of its own (so closing the terminal does not end it) and waits
/// until it answers on its socket.
pub async fn start(dirs: &StateDir) -> Result<Stream, ClientError> {
    let bin = daemon_binary()?;
    dirs.ensure()
        .map_err(|e| ClientError::StartFailed(e.to_string()))?;
    let stderr_path = stderr_file(dirs);
    let stderr = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&stderr_path)
        .map_err(|e| {
            ClientError::StartFailed(format!("could not prepare {}: {e}", stderr_path.display()))
        })?;
    let mut cmd = std::process::Command::new(&bin);
    cmd.env("BOSUN_HOME", dirs.root())
        .env(STARTED_BY, "bosun")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent's.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(io::Error::from));
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ClientError::StartFailed(format!("could not start {}: {e}", bin.display())))?;
    let result = wait_answering(dirs, &mut child, &stderr_path).await;
    // bosund is this process's child however it went: whoever outlives it (the web bridge runs
    // for days) reaps it when it ends, or a killed bosund would stay a zombie under it.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    result
}

/// Waits until the `bosund` just started (`child`) answers on its socket, or says why not.
async fn wait_answering(
    dirs: &StateDir,
    child: &mut std::process::Child,
    stderr_path: &std::path::Path,
) -> Result<Stream, ClientError> {
    let started = Instant::now();
    let mut exited = None;
    loop {
        match socket::connect(&dirs.socket()).await {
            Ok(stream) => return Ok(stream),
            Err(e) if is_not_running(&e) => {}
            Err(e) => {
                return Err(ClientError::StartFailed(format!(
                    "bosund started but its socket {} does not answer: {e}",
                    dirs.socket().display()
                )));
            }
        }
        if exited.is_none() {
            exited = child.try_wait().ok().flatten();
        }
        if started.elapsed() > START_TIMEOUT {
            let why = fs::read_to_string(stderr_path).unwrap_or_default();
            let why = why.trim();
            return Err(ClientError::StartFailed(if why.is_empty() {
                format!(
                    "bosund did not answer within {}s; see {}",
                    START_TIMEOUT.as_secs(),
                    dirs.log().display()
                )
            } else {
                why.trim_start_matches("bosund: ").to_string()
            }));
        }
        // A daemon that exited at once will never answer, unless another one (started by a
        // client racing us) does; give that one a moment, then report why ours failed.
        if let Some(status) = exited
            && started.elapsed() > Duration::from_secs(2)
        {
            let why = fs::read_to_string(stderr_path).unwrap_or_default();
            let why = why.trim().trim_start_matches("bosund: ");
            return Err(ClientError::StartFailed(if why.is_empty() {
                format!("bosund exited at once ({status})")
            } else {
                why.to_string()
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
