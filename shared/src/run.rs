//! The domain of a run: what starting one asks for, its states, how it ended, and its output
//! streams.
//!
//! A run moves `queued → starting → running → stopping → exited(outcome)`. Every transition is
//! persisted before it is announced; see `docs/supervision.md`.

use std::fmt;
use std::num::NonZeroU64;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::placement::Placement;
use crate::time::{StopGrace, TimeCap};

/// A run to start, as bosund's areas take it: what `bosun run` asked for (read from the wire
/// where it arrives), or what an agent's adapter made. Its time cap, stop ladder and output
/// cap were checked when they were read, so each holds a valid value.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    pub name: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    /// Absolute.
    pub cwd: PathBuf,
    /// The program's whole environment.
    pub env: Vec<(String, String)>,
    pub time_cap: Option<TimeCap>,
    /// The stop ladder's graces; bosun's default when absent.
    pub ladder: Option<Ladder>,
    /// The file mode creation mask the program starts with; 0o022 when absent.
    pub umask: Option<u32>,
    /// The most bytes of output kept; no cap when absent.
    pub max_output: Option<NonZeroU64>,
    /// Where the run's runner runs.
    pub placement: Placement,
}

/// How long each rung of a run's stop ladder waits: SIGINT, `int_grace`, SIGTERM,
/// `term_grace`, SIGKILL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ladder {
    pub int_grace: StopGrace,
    pub term_grace: StopGrace,
}

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Accepted and recorded, waiting for its runner to be started.
    Queued,
    /// Its runner has been started and recorded; the program has not been reported running yet.
    Starting,
    /// The runner reported the program started.
    Running,
    /// A stop (by the person, the time cap or shutdown) is under way.
    Stopping,
    /// Over, with how it ended.
    Exited(Outcome),
}

impl RunState {
    pub fn is_final(self) -> bool {
        matches!(self, RunState::Exited(_))
    }

    /// The one word for the state, as in listings and `--json` (`exited` for every final state).
    pub fn name(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Starting => "starting",
            RunState::Running => "running",
            RunState::Stopping => "stopping",
            RunState::Exited(_) => "exited",
        }
    }

    pub fn outcome(self) -> Option<Outcome> {
        match self {
            RunState::Exited(o) => Some(o),
            RunState::Queued | RunState::Starting | RunState::Running | RunState::Stopping => None,
        }
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunState::Exited(o) => write!(f, "{o}"),
            RunState::Queued | RunState::Starting | RunState::Running | RunState::Stopping => {
                f.write_str(self.name())
            }
        }
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The program exited with status 0 on its own.
    Succeeded,
    /// The program exited with another status, was killed by a signal it was not sent by bosun,
    /// or could not be started.
    Failed,
    /// The person (or a daemon shutdown) stopped it.
    Stopped,
    /// Its time cap was reached and it was stopped.
    TimedOut,
    /// Its runner died without reporting an end; whatever it left was ended.
    Lost,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Stopped => "stopped",
            Outcome::TimedOut => "timed_out",
            Outcome::Lost => "lost",
        })
    }
}

/// How a run's program ended, as recorded: its status or signal, and the reason in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    pub outcome: Outcome,
    /// The exit status, when the program exited by itself.
    pub code: Option<i32>,
    /// The signal that ended the program, when one did.
    pub signal: Option<i32>,
    /// In plain words: "exited with status 2", "stopped by the person", "time cap 10m reached",
    /// "runner lost after daemon restart".
    pub reason: String,
}

impl ExitInfo {
    /// The exit status `bosun run --follow` ends with: the program's own, 128 + signal for a
    /// signal, and 1 when there was neither (never started, lost).
    pub fn shell_status(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 1,
        }
    }
}

/// Which of the program's output streams a piece of output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Stdout,
    Stderr,
    /// bosun's own lines about the run, such as a server left out and why.
    Note,
}

impl Stream {
    pub fn as_byte(self) -> u8 {
        match self {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
            Stream::Note => 3,
        }
    }

    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(Stream::Stdout),
            2 => Some(Stream::Stderr),
            3 => Some(Stream::Note),
            _ => None,
        }
    }
}

/// The name of a signal in words, for reasons ("killed by SIGKILL").
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}
