//! The state directory and what lives in it.
//!
//! `$BOSUN_HOME`, else `$XDG_STATE_HOME/bosun`, else `~/.local/state/bosun`, always mode 0700. It
//! holds the store `bosun.redb`, the socket `bosund.sock` (0600), the daemon's log `bosund.log`,
//! its pid file, and `runs/<run-id>/` with each run's own files.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::RunId;

/// The longest socket path Linux accepts (`sun_path` is 108 bytes with its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Why the state directory can't be used.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    #[error(
        "no state directory: neither BOSUN_HOME, XDG_STATE_HOME nor HOME is set; set BOSUN_HOME to a directory of your own"
    )]
    NoHome,
    #[error("{path} must be an absolute path; set BOSUN_HOME to one")]
    NotAbsolute { path: PathBuf },
    #[error(
        "the socket path {path} is {len} bytes, over the {MAX_SOCKET_PATH} Linux allows; set BOSUN_HOME to a shorter directory"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },
    #[error("could not prepare the state directory {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// The state directory of one daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state directory the environment names.
    pub fn from_env() -> Result<Self, StateDirError> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let root = if let Some(home) = var("BOSUN_HOME") {
            home
        } else if let Some(state) = var("XDG_STATE_HOME") {
            state.join("bosun")
        } else if let Some(home) = var("HOME") {
            home.join(".local/state/bosun")
        } else {
            return Err(StateDirError::NoHome);
        };
        Self::at(root)
    }

    /// A state directory at an explicit path.
    pub fn at(root: impl Into<PathBuf>) -> Result<Self, StateDirError> {
        let root = root.into();
        if !root.is_absolute() {
            return Err(StateDirError::NotAbsolute { path: root });
        }
        let dir = Self { root };
        let socket = dir.socket();
        let len = socket.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(StateDirError::SocketPathTooLong { path: socket, len });
        }
        Ok(dir)
    }

    /// Creates the directory (and `runs/`) if needed and makes sure only its owner can enter it.
    pub fn ensure(&self) -> Result<(), StateDirError> {
        let io_err = |source| StateDirError::Io {
            path: self.root.clone(),
            source,
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(io_err)?;
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o700)).map_err(io_err)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(self.runs())
            .map_err(io_err)?;
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn db(&self) -> PathBuf {
        self.root.join("bosun.redb")
    }

    pub fn socket(&self) -> PathBuf {
        self.root.join("bosund.sock")
    }

    pub fn log(&self) -> PathBuf {
        self.root.join("bosund.log")
    }

    pub fn pid_file(&self) -> PathBuf {
        self.root.join("bosund.pid")
    }

    pub fn runs(&self) -> PathBuf {
        self.root.join("runs")
    }

    pub fn run_dir(&self, id: RunId) -> PathBuf {
        self.runs().join(id.to_string())
    }

    /// Where the cards of projects have their git worktrees: `worktrees/<card id>`.
    pub fn worktrees(&self) -> PathBuf {
        self.root.join("worktrees")
    }
}

/// Creates a run's directory, mode 0700.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
}

/// Why `path` cannot be a working folder, in words that follow its name (`… is a file, not a
/// folder`), or `None` when it is a folder. A file, a missing path and one that cannot be looked
/// at are told apart, since each asks the person for something else.
pub fn not_a_folder(path: &Path) -> Option<String> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(m) if m.is_file() => Some("is a file, not a folder".into()),
        Ok(_) => Some("is not a folder".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some("does not exist".into()),
        Err(e) => Some(format!("cannot be looked at ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_home_is_refused() {
        let err = StateDir::at("rel/dir").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("rel/dir must be an absolute path; set BOSUN_HOME to one")
        );
    }

    #[test]
    fn a_socket_path_too_long_for_linux_is_refused_with_the_fix() {
        let long = format!("/tmp/{}", "x".repeat(120));
        let err = StateDir::at(long)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("set BOSUN_HOME to a shorter directory"),
            "{err}"
        );
    }

    #[test]
    fn ensure_makes_the_directory_private() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path().join("state");
        fs::create_dir(&root)?;
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755))?;
        let dir = StateDir::at(&root)?;
        dir.ensure()?;
        assert_eq!(fs::metadata(&root)?.permissions().mode() & 0o777, 0o700);
        assert!(dir.runs().is_dir());
        Ok(())
    }
}
