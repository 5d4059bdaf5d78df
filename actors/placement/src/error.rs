//! Why placing a run on another host, or asking a cluster about its job, failed: in the
//! person's words, with what to do, each cause a variant a caller can match.

use std::path::PathBuf;

use super::CONFIG_FILE;
use super::ca::CaError;
use super::kubernetes::KubeError;
use super::slurm::SlurmError;

#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// `placement.toml` could not be read, is not of the right shape, or names something that
    /// cannot work: from `PlacementConfig::load` at bosund's start, and from
    /// `Kubernetes::connect`. Retrying cannot help; the message says what to change.
    #[error("{}: {problem}", path.display())]
    Config { path: PathBuf, problem: String },
    /// A run asks for a backend `placement.toml` does not configure: from every method that
    /// takes a placement. Retrying cannot help until the section is added.
    #[error(
        "runs placed on {backend} need a [{backend}] section in $BOSUN_HOME/{CONFIG_FILE} ({needs}); add it and restart bosund with `bosun daemon stop`"
    )]
    NotConfigured {
        backend: &'static str,
        needs: &'static str,
    },
    /// A local run was handed to what only a run on another host has (a folder there, a job):
    /// a mistake of the caller's, never of the person's.
    #[error("a local run {0}")]
    Local(&'static str),
    /// The run's folder or its link file on the shared filesystem could not be made or
    /// written: from `Remote::submit`. Retrying helps once the filesystem takes writes.
    #[error("could not {action} {}: {source}", path.display())]
    Files {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A run's certificate could not be issued or read back, or its link could not be written
    /// as JSON: from `Remote::submit`.
    #[error("{0}")]
    Certificate(String),
    /// bosund's own certificate authority could not be opened, made or used.
    #[error(transparent)]
    Ca(#[from] CaError),
    /// Slurm refused a command or did not answer.
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    /// The Kubernetes API refused or did not answer, or its configuration cannot be used.
    #[error(transparent)]
    Kubernetes(#[from] KubeError),
}
