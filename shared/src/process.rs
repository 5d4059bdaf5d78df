//! Processes: the one module where bosun reads `/proc`, signals process groups and sweeps what a
//! run left behind.
//!
//! - [`ProcessIdentity`] pins a process by pid *and* start time, so a pid reused by an unrelated
//!   process is never mistaken for one of ours.
//! - [`signal_group`] signals a process group; a group that is already gone is not an error.
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

use std::fs;
use std::io;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// A process pinned by pid and start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: i32,
    /// Clock ticks since boot, `/proc/<pid>/stat` field 22.
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity of a process that exists now.
    pub fn of(pid: i32) -> Option<Self> {
        stat(pid).map(|s| Self {
            pid,
            start_time: s.start_time,
        })
    }

    /// Whether this very process is still alive (a zombie is not).
    pub fn is_alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_time == self.start_time && s.state != 'Z')
    }

    /// Whether the pid now belongs to some other process: then neither the pid nor a session or
    /// group numbered after it is ours any more.
    pub fn is_reused(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_time != self.start_time)
    }
}

/// The fields of `/proc/<pid>/stat` bosun uses.
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
pub fn environ_contains(pid: i32, key: &str, value: &str) -> bool {
    let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{key}={value}");
    env.split(|b| *b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// Sends `sig` to the process group `pgid`. `Ok(false)` when the group no longer exists. Refuses
/// groups 0 and 1 and bosun's own group, whatever the caller passes.
pub fn signal_group(pgid: i32, sig: Signal) -> io::Result<bool> {
    if pgid <= 1 || pgid == nix::unistd::getpgrp().as_raw() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    match killpg(Pid::from_raw(pgid), sig) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Sends `sig` to one process. `Ok(false)` when it no longer exists.
pub fn signal_process(pid: i32, sig: Signal) -> io::Result<bool> {
    if pid <= 1 || pid == std::process::id() as i32 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process {pid}"),
        ));
    }
    match kill(Pid::from_raw(pid), sig) {
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
    pgid: i32,
}

impl ProcessGroupGuard {
    /// Guards the group `pgid` (a child started with `process_group(0)`, so pgid == its pid).
    pub fn new(pgid: i32) -> Self {
        Self { pgid }
    }

    /// Sends `sig` to the group now.
    pub fn signal(&self, sig: Signal) {
        if self.pgid > 1 {
            let _ = signal_group(self.pgid, sig);
        }
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
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
    /// between rounds.
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
        }
        let members: Vec<ProcStat> = all_processes()
            .into_iter()
            .filter(|p| p.pid != me && p.pid > 1 && p.state != 'Z')
            .filter(|p| {
                session.is_some_and(|r| p.sid == r.pid || p.ppid == r.pid && r.pid == me)
                    || group.is_some_and(|l| p.pgid == l.pid)
                    || target
                        .marker
                        .as_deref()
                        .is_some_and(|m| environ_contains(p.pid, crate::RUN_MARKER_ENV, m))
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
            if signal_process(p.pid, Signal::SIGKILL).unwrap_or(false)
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
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        }
    }
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
        let id = ProcessIdentity::of(me);
        assert!(id.is_some_and(|i| i.is_alive()));
        let wrong = id.map(|i| ProcessIdentity {
            pid: i.pid,
            start_time: i.start_time + 1,
        });
        assert!(wrong.is_some_and(|w| !w.is_alive() && w.is_reused()));
    }

    #[test]
    fn signalling_our_own_group_or_init_is_refused() {
        let own = nix::unistd::getpgrp().as_raw();
        assert!(signal_group(own, Signal::SIGTERM).is_err());
        assert!(signal_group(1, Signal::SIGTERM).is_err());
        assert!(signal_process(1, Signal::SIGTERM).is_err());
    }
}
