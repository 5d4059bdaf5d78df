//! bosun-protocol: the wire, and nothing else. Every socket of bosun (the CLI's, the web UI
//! bridge's, a runner's, a runner's over mutual TLS) speaks what this crate defines; it is
//! pinned byte for byte by its snapshot test (`wire_snapshot.rs`).
//!
//! It holds the frames and their codec, the requests and their replies, the events, the
//! runner's messages and the error shape that crosses every socket. It must not hold domain
//! logic: domain values it carries (ids, a run's state, a gateway's rules) come from
//! `bosun-shared`, and the areas of bosund never name a type of this crate's UI wire
//! (`supervisor/src/api` turns their answers into it).
//!
//! Every socket of bosun speaks the same frames ([`frame`]): a big-endian `u32` length, then that
//! many bytes of JSON, or, for the two frames that carry a program's output, a binary header and
//! the raw bytes ([`fast`]). A connection opens with a [`Hello`] naming the protocol version and
//! the peer's role; the daemon answers with a [`HelloReply`]. After that, a UI speaks [`ui`] and
//! a runner speaks [`runner`]. Protocol types are kept apart from the domain types of
//! [`bosun_shared::run`]: they are what crosses the socket, and they change only with the version (or,
//! readable by both versions, with a field an older peer leaves out, such as
//! [`Welcome::binary_output`]).

pub mod agents;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod board;
pub mod bytes;
pub mod call;
pub mod error;
pub mod fast;
pub mod frame;
pub mod lead;
pub mod mcp;
pub mod projects;
pub mod runner;
pub mod runs;
pub mod socket;
pub mod tls;
pub mod ui;
pub mod usage;
#[cfg(test)]
mod wire_snapshot;

use serde::{Deserialize, Serialize};

pub use bytes::LogBytes;
pub use error::{ErrorCode, WireError};
pub use frame::{Decode, FrameError, FrameReader, FrameWriter, MAX_FRAME_LEN};

use bosun_shared::{RunId, RunToken};

/// The version both ends must speak. Raise it with any change a peer of the old version would
/// misread.
pub const PROTOCOL_VERSION: u32 = 1;

/// The first frame of every connection, from the connecting side.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    pub role: Role,
    /// A UI that reads log events in their binary form ([`fast`]) says so; one from before
    /// binary frames leaves this out and is sent JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary_log: bool,
    /// Which UI it is, for the audit log: the local web UI says so; the command line, and a
    /// UI of before, leaves it out.
    #[serde(default, skip_serializing_if = "UiClient::is_cli")]
    pub client: UiClient,
}

/// Which of the person's tools a UI is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UiClient {
    /// `bosun` at this machine's command line.
    #[default]
    Cli,
    /// The local web UI's bridge (`bosun ui`).
    Web,
}

impl UiClient {
    pub fn is_cli(&self) -> bool {
        *self == UiClient::Cli
    }

    pub fn name(self) -> &'static str {
        match self {
            UiClient::Cli => "cli",
            UiClient::Web => "web",
        }
    }
}

/// Who is connecting.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Role {
    /// A person's tool: the `bosun` command line or the web UI.
    Ui,
    /// The runner of one run, proving itself with the token it was given on stdin.
    Runner {
        run_id: RunId,
        token: RunToken,
        /// The runner keeps a decision bosund told before saving it
        /// ([`runner::DaemonMsg::Decided`] with `unsaved`) until bosund says it is saved, and
        /// tells it again after a reconnect ([`runner::RunnerMsg::Unsaved`]). A runner of
        /// before it leaves this out, and bosund saves each decision before telling it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keeps_unsaved: bool,
    },
}

impl Decode for Hello {}

/// The daemon's answer to a [`Hello`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HelloReply {
    Welcome(Welcome),
    Refused(WireError),
}

/// The daemon accepted the connection.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol_version: u32,
    /// The daemon's version, for `bosun daemon status`.
    pub daemon_version: String,
    pub daemon_pid: u32,
    /// For a runner: the highest output seq the daemon has committed for its run, so the runner
    /// resends everything after it. Zero when nothing is committed yet.
    pub acked_seq: u64,
    /// For a runner: a stop the daemon wants carried out (asked for while the runner was away).
    pub stop: Option<runner::StopOrder>,
    /// For a runner: whether the daemon already recorded the program's start.
    pub started_recorded: bool,
    /// For a runner: the daemon reads output frames in their binary form. A daemon from before
    /// binary frames leaves this out, and the runner sends it JSON.
    #[serde(default)]
    pub binary_output: bool,
    /// For a runner: the daemon takes back the decisions it told and lost
    /// ([`runner::RunnerMsg::Unsaved`]). A daemon from before leaves this out, and is not sent
    /// them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeps_unsaved: bool,
}

impl Decode for HelloReply {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_output_is_off_for_a_daemon_that_does_not_say_it() -> Result<(), serde_json::Error> {
        // A welcome from a daemon of before binary frames: its runners must send JSON.
        let old = r#"{"type":"welcome","protocol_version":1,"daemon_version":"0.1.0","daemon_pid":7,"acked_seq":3,"stop":null,"started_recorded":true}"#;
        let HelloReply::Welcome(w) = serde_json::from_str(old)? else {
            panic!("not a welcome");
        };
        assert!(!w.binary_output);
        assert_eq!(w.acked_seq, 3);
        // A new welcome names it; a runner of before binary frames ignores the field.
        let new = serde_json::to_value(HelloReply::Welcome(Welcome {
            binary_output: true,
            ..w
        }))?;
        assert_eq!(new["binary_output"], true);
        Ok(())
    }
}
