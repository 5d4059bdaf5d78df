//! Processes: the one module where bosun reads `/proc`, signals process groups and sweeps what a
//! run left behind.
//!
//! - [`ProcessIdentity`] pins a process by pid *and* start time, so a pid reused by an unrelated
//!   process is never mistaken for one of ours.
//! - [`signal_group`] signals a process group; a group that is already gone is not an error.
//! - [`Helper`] (async) and [`output_blocking`] run a short-lived process bosund starts itself (a
//!   sign-in check, a version check, a moment's MCP server): in a process group of its own, with
//!   a deadline, and with its whole group SIGKILLed when it is done or dropped
//!   ([`ProcessGroupGuard`]), so that nothing it started outlives it.
//! - [`sweep`] kills, with SIGKILL and in rounds until none is left, every process that belongs to
//!   a run: the members of its session and process group, the orphans reparented to its runner,
//!   and any process that carries the run's marker in its environment.
//!
//! # Caveats
//! Process groups and sessions can be left (`setsid`, `setpgid`). The runner is a child
//! subreaper, so orphans come back to it, and a sweep by the daemon after a runner died falls back
//! on the environment marker [`crate::RUN_MARKER_ENV`]. A process that both leaves the session
//! and clears its environment, after its runner was SIGKILLed, escapes; only a cgroup would catch
//! it, and bosun does not use cgroups.
//!
//! A helper's group is signalled by number after its leader was reaped; if every member is gone
//! and the number was handed to a new process in between, that process's group would be hit. The
//! window is the time between the reap and the signal, and pids are not reused that fast.

use std::fs;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::{ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid as NixPid;
use serde::{Deserialize, Serialize};

/// A process id. It is stored and sent as the bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pid(i32);

impl Pid {
    /// The process numbered `pid` (as the kernel, `/proc` or a pid file gives it).
    pub const fn from_raw(pid: i32) -> Self {
        Self(pid)
    }

    /// A child's pid as the standard library gives it.
    pub fn of_child(id: u32) -> Self {
        Self(id as i32)
    }

    /// This process.
    pub fn this() -> Self {
        Self::of_child(std::process::id())
    }

    pub const fn as_raw(self) -> i32 {
        self.0
    }
}

impl std::fmt::Display for Pid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A process group id: the pid of the process that leads the group. It is stored and sent as the
/// bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pgid(i32);

impl Pgid {
    /// The group numbered `pgid` (as the kernel or `/proc` gives it).
    pub const fn from_raw(pgid: i32) -> Self {
        Self(pgid)
    }

    /// The group `leader` leads (a process started in a group of its own: pgid == its pid).
    pub const fn led_by(leader: Pid) -> Self {
        Self(leader.0)
    }

    pub const fn as_raw(self) -> i32 {
        self.0
    }
}

impl std::fmt::Display for Pgid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A process pinned by pid and start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: Pid,
    /// Clock ticks since boot, `/proc/<pid>/stat` field 22.
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity of a process that exists now.
    pub fn of(pid: Pid) -> Option<Self> {
        stat(pid.as_raw()).map(|s| Self {
            pid,
            start_time: s.start_time,
        })
    }

    /// Whether this very process is still alive (a zombie is not).
    pub fn is_alive(&self) -> bool {
        stat(self.pid.as_raw()).is_some_and(|s| s.start_time == self.start_time && s.state != 'Z')
    }

    /// Whether the pid now belongs to some other process: then neither the pid nor a session or
    /// group numbered after it is ours any more.
    pub fn is_reused(&self) -> bool {
        stat(self.pid.as_raw()).is_some_and(|s| s.start_time != self.start_time)
    }
}

/// The fields of `/proc/<pid>/stat` bosun uses, the kernel's numbers as it gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    pub start_time: u64,
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

fn parse_stat(pid: i32, text: &str) -> Option<ProcStat> {
    // The command name (field 2) is in parentheses and may itself contain spaces and ')', so
    // the fields are counted from the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); field N is at index N - 3.
    let field = |n: usize| fields.get(n - 3).copied();
    Some(ProcStat {
        pid,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgid: field(5)?.parse().ok()?,
        sid: field(6)?.parse().ok()?,
        start_time: field(22)?.parse().ok()?,
    })
}

/// Every process visible in `/proc` now.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether the process's environment holds exactly `KEY=VALUE`. False when it can't be read
/// (another user's process, or gone).
pub fn environ_contains(pid: Pid, key: &str, value: &str) -> bool {
    let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{key}={value}");
    env.split(|b| *b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// The value of `key` in the environment the process started with; `None` when it has none or
/// the environment can't be read (another user's process, or gone).
pub fn environ_value(pid: Pid, key: &str) -> Option<String> {
    let env = fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{key}=");
    env.split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The systemd service whose control group holds the process (`bosund.service`), from the
/// last `.service` in its cgroup path; `None` outside any service or when it can't be read.
pub fn systemd_service(pid: Pid) -> Option<String> {
    let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    cgroups.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        path.rsplit('/')
            .find(|part| part.ends_with(".service"))
            .map(str::to_string)
    })
}

/// Sends `sig` to the process group `pgid`. `Ok(false)` when the group no longer exists. Refuses
/// groups 0 and 1 and bosun's own group, whatever the caller passes.
pub fn signal_group(pgid: Pgid, sig: Signal) -> io::Result<bool> {
    if pgid.0 <= 1 || pgid.0 == nix::unistd::getpgrp().as_raw() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    match killpg(NixPid::from_raw(pgid.0), sig) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Sends `sig` to one process. `Ok(false)` when it no longer exists.
pub fn signal_process(pid: Pid, sig: Signal) -> io::Result<bool> {
    if pid.0 <= 1 || pid == Pid::this() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process {pid}"),
        ));
    }
    match kill(NixPid::from_raw(pid.0), sig) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Ends a process group when dropped: SIGKILL to the whole group, whatever path the owner took
/// (an error, a timeout, a cancelled task). For short-lived helpers bosund starts itself, such
/// as a stdio MCP server it lists the tools of.
#[derive(Debug)]
pub struct ProcessGroupGuard {
    pgid: Pgid,
}

impl ProcessGroupGuard {
    /// Guards the group `pgid` (a child started with `process_group(0)`, so pgid == its pid).
    pub fn new(pgid: Pgid) -> Self {
        Self { pgid }
    }

    /// Sends `sig` to the group now.
    pub fn signal(&self, sig: Signal) {
        if self.pgid.0 > 1 {
            let _ = signal_group(self.pgid, sig);
        }
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Why a short-lived helper gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// It was still running at its deadline; its group has been killed.
    #[error("it did not finish within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// Waiting for it failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// How long the output of a helper that has ended is still read: only a process that left its
/// group can hold the pipes open after the group was killed, and it is not waited for.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// A short-lived process bosund starts itself, from an async task: started in a process group of
/// its own, and the whole group SIGKILLed when this is dropped, whatever path the owner took (an
/// error, a timeout, a cancelled task). Its waits take a deadline.
#[derive(Debug)]
pub struct Helper {
    group: ProcessGroupGuard,
    child: tokio::process::Child,
}

impl Helper {
    /// Starts `cmd` in a new process group (pgid == its pid). The caller sets its arguments,
    /// environment and pipes.
    pub fn spawn(cmd: &mut tokio::process::Command) -> io::Result<Self> {
        let child = cmd.process_group(0).kill_on_drop(true).spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("it exited before it could be guarded"))?;
        Ok(Self {
            group: ProcessGroupGuard::new(Pgid::led_by(Pid::of_child(pid))),
            child,
        })
    }

    /// The process itself, to take its pipes.
    pub fn child(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// Sends `sig` to its whole group now.
    pub fn signal(&self, sig: Signal) {
        self.group.signal(sig);
    }

    /// Waits at most `limit` for the process itself to exit. The group is left as it is.
    pub async fn wait(&mut self, limit: Duration) -> Result<ExitStatus, HelperError> {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => Err(HelperError::TimedOut(limit)),
        }
    }

    /// Waits at most `limit` for the process to exit, ends what is left of its group, and
    /// returns what it wrote on the pipes the caller made.
    pub async fn output(mut self, limit: Duration) -> Result<Output, HelperError> {
        let mut stdout = read_all(self.child.stdout.take());
        let mut stderr = read_all(self.child.stderr.take());
        let status = self.wait(limit).await;
        // Exited or out of time, nothing of its group stays; that also closes the pipes.
        self.signal(Signal::SIGKILL);
        let status = match status {
            Ok(status) => status,
            Err(e) => {
                stdout.abort();
                stderr.abort();
                return Err(e);
            }
        };
        Ok(Output {
            status,
            stdout: collect(&mut stdout).await,
            stderr: collect(&mut stderr).await,
        })
    }
}

fn read_all<R>(pipe: Option<R>) -> tokio::task::JoinHandle<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    use tokio::io::AsyncReadExt as _;
    tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf).await;
        }
        buf
    })
}

async fn collect(reader: &mut tokio::task::JoinHandle<Vec<u8>>) -> Vec<u8> {
    match tokio::time::timeout(PIPE_GRACE, &mut *reader).await {
        Ok(read) => read.unwrap_or_default(),
        Err(_) => {
            reader.abort();
            Vec::new()
        }
    }
}

/// Runs `cmd` to its end from a blocking thread, as [`Helper::output`] does from a task: stdin
/// at `/dev/null`, stdout and stderr read, a process group of its own, at most `limit`, and the
/// whole group SIGKILLed afterwards.
pub fn output_blocking(
    cmd: &mut std::process::Command,
    limit: Duration,
) -> Result<Output, HelperError> {
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let group = ProcessGroupGuard::new(Pgid::led_by(Pid::of_child(child.id())));
    let stdout = read_all_blocking(child.stdout.take());
    let stderr = read_all_blocking(child.stderr.take());
    // The wait has a thread of its own, so the deadline holds and the child is reaped whatever
    // happens: after the group is killed below, its wait returns.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(limit);
    drop(group);
    let status = match status {
        Ok(status) => status?,
        Err(_) => return Err(HelperError::TimedOut(limit)),
    };
    Ok(Output {
        status,
        stdout: stdout.recv_timeout(PIPE_GRACE).unwrap_or_default(),
        stderr: stderr.recv_timeout(PIPE_GRACE).unwrap_or_default(),
    })
}

fn read_all_blocking<R>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>>
where
    R: io::Read + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

/// What belongs to a run, for [`sweep`].
#[derive(Clone, Debug, Default)]
pub struct SweepTarget {
    /// The run's marker value ([`crate::RUN_MARKER_ENV`]): any process carrying it is the run's.
    pub marker: Option<String>,
    /// The runner: its pid is the run's session id, and orphans of the run are reparented to
    /// it. Members of the session count only while the pid is not reused.
    pub runner: Option<ProcessIdentity>,
    /// The program's process group, led by the program (pgid == its pid). Members count only
    /// while the pid is not reused.
    pub group_leader: Option<ProcessIdentity>,
    /// Whether the caller is the runner itself (a child subreaper): then it reaps its orphans
    /// between rounds, and a round that finds it with no child left ends the sweep without
    /// reading `/proc` (see [`sweep`]).
    pub reap_children: bool,
}

/// What a sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Processes sent SIGKILL.
    pub killed: usize,
    /// Processes still alive when the sweep gave up (uninterruptible sleep, usually).
    pub survivors: usize,
}

/// Kills every process of the run with SIGKILL, in rounds, until none is left or `deadline` has
/// passed. Blocking: call it from a blocking thread.
///
/// Called by the runner ([`SweepTarget::reap_children`]), a round first asks the kernel whether
/// the runner has any child left, and when it has none the sweep is over. That is exact, not a
/// guess: every process of the run descends from the runner, and because the runner is a child
/// subreaper, a descendant whose parent died becomes the runner's child; so while any
/// descendant lives, the runner has a child. Only then is `/proc` read, which costs a file read
/// per process of the machine (and one more per process for the marker). A marked process that
/// does not descend from the runner (started for the run by a service outside it, such as
/// `atd`) is found only by the full scan, so only when something of the run was left over.
pub fn sweep(target: &SweepTarget, deadline: Duration) -> SweepReport {
    let me = std::process::id() as i32;
    let session = target.runner.filter(|r| !r.is_reused());
    let group = target.group_leader.filter(|l| !l.is_reused());
    let started = Instant::now();
    let mut report = SweepReport::default();
    let mut killed = std::collections::HashSet::new();
    loop {
        if target.reap_children {
            reap_orphans();
            if !has_children() {
                return report;
            }
        }
        let members: Vec<ProcStat> = all_processes()
            .into_iter()
            .filter(|p| p.pid != me && p.pid > 1 && p.state != 'Z')
            .filter(|p| {
                session.is_some_and(|r| {
                    let r = r.pid.as_raw();
                    p.sid == r || p.ppid == r && r == me
                }) || group.is_some_and(|l| p.pgid == l.pid.as_raw())
                    || target.marker.as_deref().is_some_and(|m| {
                        environ_contains(Pid::from_raw(p.pid), crate::RUN_MARKER_ENV, m)
                    })
            })
            .collect();
        if members.is_empty() {
            report.survivors = 0;
            return report;
        }
        if started.elapsed() >= deadline {
            report.survivors = members.len();
            return report;
        }
        for p in &members {
            if signal_process(Pid::from_raw(p.pid), Signal::SIGKILL).unwrap_or(false)
                && killed.insert((p.pid, p.start_time))
            {
                report.killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps every child that has exited, without blocking. Only for a process that has no child
/// owned by an async runtime still running (the runner calls it after its program was awaited).
pub fn reap_orphans() {
    loop {
        match waitpid(NixPid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        }
    }
}

/// Whether the calling process has any child, running or exited and not yet reaped: a
/// non-blocking `waitid` that the kernel answers with `ECHILD` only when there is none.
/// `__WALL` counts children of every kind, including those that announce their end with
/// another signal than SIGCHLD. A child that exited is not reaped here (`WNOWAIT`): its status
/// stays for its owner (tokio's child handle, or [`reap_orphans`]).
fn has_children() -> bool {
    let flags =
        WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT | WaitPidFlag::WEXITED | WaitPidFlag::__WALL;
    !matches!(
        nix::sys::wait::waitid(nix::sys::wait::Id::All, flags),
        Err(Errno::ECHILD)
    )
}

/// Keeps glibc from mapping and unmapping a fresh region for every buffer of 64 to 256 KiB:
/// output moves in chunks of that size, and by default each one would cost page faults and
/// zeroing. Freed memory above 16 MiB at the top of the heap is still given back.
pub fn tune_allocator() {
    // SAFETY: mallopt only sets allocator parameters; it has no preconditions.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 * 1024 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 16 * 1024 * 1024);
    }
}

/// Gives the memory glibc holds free back to the system (`malloc_trim`), after work that
/// allocated much and freed it: a pass over a long history (a round of pruning, `ps --all`, the
/// store's check at start). glibc keeps freed memory in each thread's arena for reuse and trims
/// only the top of the main heap by itself, so without this bosund's resident memory stays at
/// the peak of its largest request for as long as it runs.
pub fn give_back_memory() {
    // SAFETY: malloc_trim only releases free memory of the allocator; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Raises the soft limit of open files to the hard limit: the daemon holds a socket per runner.
pub fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_parsed_from_after_the_last_parenthesis() {
        let line =
            "4242 (a (weird) name) S 1 4242 4242 0 -1 4194304 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2";
        let s = parse_stat(4242, line);
        assert_eq!(
            s,
            Some(ProcStat {
                pid: 4242,
                state: 'S',
                ppid: 1,
                pgid: 4242,
                sid: 4242,
                start_time: 987654
            })
        );
    }

    #[test]
    fn our_own_identity_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id() as i32;
        let id = ProcessIdentity::of(Pid::from_raw(me));
        assert!(id.is_some_and(|i| i.is_alive()));
        let wrong = id.map(|i| ProcessIdentity {
            pid: i.pid,
            start_time: i.start_time + 1,
        });
        assert!(wrong.is_some_and(|w| !w.is_alive() && w.is_reused()));
    }

    #[test]
    fn a_child_counts_until_reaped_and_asking_does_not_reap_it() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 7"])
            .spawn()
            .expect("sh starts");
        assert!(has_children());
        // Exited and not reaped: still a child, and its status is still there for its owner.
        assert!(within_ten_seconds(|| {
            stat(child.id() as i32).is_some_and(|s| s.state == 'Z')
        }));
        assert!(has_children());
        let status = child.wait().expect("the status was left to its owner");
        assert_eq!(status.code(), Some(7));
    }

    /// The processes still running (zombies are done) that carry `BOSUN_TEST_HELPER=<marker>`.
    fn alive_with(marker: &str) -> Vec<ProcStat> {
        all_processes()
            .into_iter()
            .filter(|p| {
                p.state != 'Z'
                    && environ_contains(Pid::from_raw(p.pid), "BOSUN_TEST_HELPER", marker)
            })
            .collect()
    }

    fn sleeps_with(marker: &str) -> usize {
        alive_with(marker)
            .iter()
            .filter(|p| {
                fs::read_to_string(format!("/proc/{}/comm", p.pid))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .count()
    }

    /// Polls `done` for up to ten seconds.
    fn within_ten_seconds(done: impl Fn() -> bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn marker(test: &str) -> String {
        format!("{}-{test}", std::process::id())
    }

    fn two_sleeps(marker: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "sleep 100 & sleep 100"])
            .env("BOSUN_TEST_HELPER", marker)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        cmd
    }

    #[tokio::test]
    async fn a_dropped_helper_takes_its_whole_group_with_it() {
        let marker = marker("dropped");
        let helper = Helper::spawn(&mut two_sleeps(&marker)).unwrap();
        assert!(within_ten_seconds(|| sleeps_with(&marker) == 2));
        drop(helper);
        assert!(within_ten_seconds(|| alive_with(&marker).is_empty()));
    }

    #[tokio::test]
    async fn a_helper_out_of_time_takes_its_whole_group_with_it() {
        let marker = marker("out-of-time");
        let helper = Helper::spawn(&mut two_sleeps(&marker)).unwrap();
        assert!(within_ten_seconds(|| sleeps_with(&marker) == 2));
        let out = helper.output(Duration::from_millis(100)).await;
        assert!(matches!(out, Err(HelperError::TimedOut(_))), "{out:?}");
        assert!(within_ten_seconds(|| alive_with(&marker).is_empty()));
    }

    #[tokio::test]
    async fn what_a_helper_leaves_behind_is_ended_when_it_exits() {
        let marker = marker("leaves-behind");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "sleep 100 & echo done"])
            .env("BOSUN_TEST_HELPER", &marker)
            .stdout(Stdio::piped());
        let out = Helper::spawn(&mut cmd)
            .unwrap()
            .output(Duration::from_secs(10))
            .await
            .unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"done\n");
        assert!(within_ten_seconds(|| alive_with(&marker).is_empty()));
    }

    #[test]
    fn a_blocking_helper_out_of_time_takes_its_whole_group_with_it() {
        let marker = marker("blocking-out-of-time");
        let mut cmd = std::process::Command::new("sh");
        // A watcher sees both sleeps run before the deadline, so the deadline cuts them off.
        cmd.args(["-c", "sleep 100 & sleep 100"])
            .env("BOSUN_TEST_HELPER", &marker);
        let watcher = {
            let marker = marker.clone();
            std::thread::spawn(move || within_ten_seconds(|| sleeps_with(&marker) == 2))
        };
        let out = output_blocking(&mut cmd, Duration::from_secs(2));
        assert!(matches!(out, Err(HelperError::TimedOut(_))), "{out:?}");
        assert!(
            watcher.join().unwrap(),
            "both sleeps ran before the deadline"
        );
        assert!(within_ten_seconds(|| alive_with(&marker).is_empty()));
    }

    #[test]
    fn a_blocking_helper_answers_and_what_it_leaves_behind_is_ended() {
        let marker = marker("blocking-leaves-behind");
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "sleep 100 & echo done"])
            .env("BOSUN_TEST_HELPER", &marker);
        let out = output_blocking(&mut cmd, Duration::from_secs(10)).unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"done\n");
        assert!(within_ten_seconds(|| alive_with(&marker).is_empty()));
    }

    #[test]
    fn signalling_our_own_group_or_init_is_refused() {
        let own = nix::unistd::getpgrp().as_raw();
        assert!(signal_group(Pgid::from_raw(own), Signal::SIGTERM).is_err());
        assert!(signal_group(Pgid::from_raw(1), Signal::SIGTERM).is_err());
        assert!(signal_process(Pid::from_raw(1), Signal::SIGTERM).is_err());
    }
}
