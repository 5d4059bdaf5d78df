//! The UI protocol's requests about runs and the daemon itself: start, list, show and stop runs,
//! follow their logs, subscribe to their changes, the daemon's status and its stop. (The run's
//! own view, [`RunView`], and the params of starting and following are in [`super::ui`].)

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::call::calls;
use super::ui::{FollowParams, RunView, StartRunParams};
use crate::Timestamp;

/// The runs that are not over; with `all`, the finished ones too.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListRuns {
    pub all: bool,
}

/// One run, by full id or unique prefix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetRun {
    pub run: String,
}

/// Stop a run by its ladder.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StopRun {
    pub run: String,
}

/// Stop a log subscription opened by a [`FollowParams`] request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unfollow {
    pub sub: u64,
}

/// Receive `Event::RunChanged` for every run, and the chats' and pending actions' events,
/// from now on.
#[derive(Clone, Copy, Debug, Default)]
pub struct SubscribeRuns;

/// The daemon's [`DaemonStatusView`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonStatus;

/// Stop every run by its ladder and exit. A second `DaemonStop` (or a second signal) makes the
/// stop immediate.
#[derive(Clone, Copy, Debug, Default)]
pub struct DaemonStop;

calls! {
    StartRunParams => StartRun: RunView;
    ListRuns => ListRuns: Vec<RunView>;
    GetRun => GetRun: RunView;
    StopRun => StopRun: RunView;
    FollowParams => FollowLog: Following;
    Unfollow => Unfollow: ();
    unit SubscribeRuns => SubscribeRuns: ();
    unit DaemonStatus => DaemonStatus: DaemonStatusView;
    unit DaemonStop => DaemonStop: ();
}

/// A log subscription opened; its events carry `sub`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Following {
    pub sub: u64,
    pub run: Box<RunView>,
    /// For a direct subscription: the run's log file, which the subscriber reads itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DaemonStatusView {
    pub pid: u32,
    pub version: String,
    pub protocol_version: u32,
    pub state_dir: PathBuf,
    pub started_at: Timestamp,
    pub live_runs: usize,
    /// Live runs whose runner is connected now (after a restart, the ones reattached so far).
    pub attached_runners: usize,
    pub shutting_down: bool,
    /// Set while output cannot be written to the state directory: why, and how many runs wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_fault: Option<String>,
    /// The last storage fault that ended since bosund started: what it was, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_last_fault: Option<String>,
    /// Where runners on other hosts dial bosund (mutual TLS), when remote placement is
    /// configured; bosund listens on no network address otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_listener: Option<String>,
    /// What this bosund did when it upgraded the store at its start, in words (the schema, the
    /// backup, what each agent's permission mode was carried over as); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<String>,
}
