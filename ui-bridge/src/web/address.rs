//! `$BOSUN_HOME/ui.json`: where the running web UI listens, which process it is, and the
//! current sign-in token. Mode 0600, like every secret of the state directory: the token in it is
//! what lets a browser in. The bridge writes it once it listens (and again each time the token
//! is used up), and removes it when it ends; `bosun ui` reads it to find the bridge.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use bosun_shared::Timestamp;
use bosun_shared::paths::StateDir;
use bosun_shared::process::{Pid, ProcessIdentity};
use serde::{Deserialize, Serialize};

/// The running bridge, as its address file says.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Address {
    pub pid: u32,
    /// The bridge process's start time (clock ticks since boot), so a reused pid is not taken
    /// for it.
    pub start_time: u64,
    pub listen: IpAddr,
    pub port: u16,
    /// The one-time sign-in token: the next `/login?token=` that may pass.
    pub token: String,
    pub started_at: Timestamp,
}

impl Address {
    pub fn path(dirs: &StateDir) -> PathBuf {
        dirs.root().join("ui.json")
    }

    /// The address file, if there is one that can be read.
    pub fn read(dirs: &StateDir) -> Option<Self> {
        let text = fs::read(Self::path(dirs)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Writes the file whole (a temporary file, then a rename), mode 0600 from the start.
    pub fn write(&self, dirs: &StateDir) -> io::Result<()> {
        let path = Self::path(dirs);
        let tmp = dirs.root().join(format!(".ui.json.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&serde_json::to_vec_pretty(self).map_err(io::Error::other)?)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)
    }

    /// Removes the file if it is this process's (a successor's file is left alone).
    pub fn remove_if_mine(dirs: &StateDir) {
        if Self::read(dirs).is_some_and(|a| a.pid == std::process::id()) {
            let _ = fs::remove_file(Self::path(dirs));
        }
    }

    /// This process's identity, for the file.
    pub fn this_process() -> (u32, u64) {
        let pid = std::process::id();
        let start_time = ProcessIdentity::of(Pid::this())
            .map(|i| i.start_time)
            .unwrap_or(0);
        (pid, start_time)
    }

    /// Whether the bridge the file names is still alive (the pid with the same start time).
    pub fn is_alive(&self) -> bool {
        ProcessIdentity {
            pid: Pid::of_child(self.pid),
            start_time: self.start_time,
        }
        .is_alive()
    }

    /// The address a browser on this machine opens: loopback, even when the bridge listens on
    /// every address.
    pub fn base_url(&self) -> String {
        let host = match self.listen {
            IpAddr::V4(v4) if v4.is_unspecified() || v4.is_loopback() => "127.0.0.1".to_string(),
            IpAddr::V6(v6) if v6.is_unspecified() => "127.0.0.1".to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        };
        format!("http://{host}:{}", self.port)
    }

    /// The address that signs a browser in, once.
    pub fn login_url(&self) -> String {
        format!("{}/login?token={}", self.base_url(), self.token)
    }
}
