//! Where a run's runner runs: on this machine (`local`, the default) or on a host a cluster
//! engine picks (`slurm`, optionally in a partition, or `kubernetes` in a namespace).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a run goes, as a person writes it: `local`, `slurm`, `slurm:PARTITION` or
/// `kubernetes:NAMESPACE` (`k8s:NAMESPACE` too).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "snake_case")]
pub enum Placement {
    #[default]
    Local,
    Slurm {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<String>,
    },
    /// One Kubernetes Job per run, in this namespace.
    Kubernetes { namespace: String },
}

impl Placement {
    pub fn is_local(&self) -> bool {
        matches!(self, Placement::Local)
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Local => f.write_str("local"),
            Placement::Slurm { partition: None } => f.write_str("slurm"),
            Placement::Slurm { partition: Some(p) } => write!(f, "slurm:{p}"),
            Placement::Kubernetes { namespace } => write!(f, "kubernetes:{namespace}"),
        }
    }
}

const HOW: &str = "write local, slurm, slurm:PARTITION or kubernetes:NAMESPACE";

impl FromStr for Placement {
    type Err = PlacementParseError;

    fn from_str(s: &str) -> Result<Self, PlacementParseError> {
        use PlacementParseError as E;
        let s = s.trim();
        let (backend, rest) = match s.split_once(':') {
            Some((b, r)) => (b, Some(r)),
            None => (s, None),
        };
        match (backend, rest) {
            ("local", None) => Ok(Placement::Local),
            ("local", Some(_)) => Err(E::LocalTakesNothing(s.into())),
            ("slurm", None) => Ok(Placement::Slurm { partition: None }),
            ("slurm", Some(p)) => {
                check_partition(p)?;
                Ok(Placement::Slurm {
                    partition: Some(p.to_string()),
                })
            }
            ("kubernetes" | "k8s", None) => Err(E::NoNamespace(s.into())),
            ("kubernetes" | "k8s", Some(ns)) => {
                check_namespace(ns)?;
                Ok(Placement::Kubernetes {
                    namespace: ns.to_string(),
                })
            }
            _ => Err(E::Unknown(s.into())),
        }
    }
}

/// Why a placement as written was refused; each carries what was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementParseError {
    #[error("`{0}`: local takes nothing after it; {HOW}")]
    LocalTakesNothing(String),
    #[error("`{0}`: say which namespace the run's Job goes to, as kubernetes:NAMESPACE")]
    NoNamespace(String),
    #[error("`{0}` is not a placement; {HOW}")]
    Unknown(String),
    #[error("`slurm:` needs a partition name after the colon; {HOW}")]
    NoPartition,
    #[error("the partition name `{0}` is longer than 64 characters")]
    PartitionTooLong(String),
    #[error(
        "the partition name `{0}` may hold only letters, digits, '-', '_' and '.', and may not start with '-'"
    )]
    PartitionNotAName(String),
    #[error("`kubernetes:` needs a namespace after the colon; {HOW}")]
    NamespaceEmpty,
    #[error(
        "the namespace `{0}` is not a Kubernetes namespace name: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
    )]
    NotANamespace(String),
}

/// A Slurm partition name as bosun passes it to `sbatch --partition`: letters, digits, `-`, `_`
/// and `.`, at most 64 characters — so nothing in it can be read as another option.
fn check_partition(p: &str) -> Result<(), PlacementParseError> {
    if p.is_empty() {
        return Err(PlacementParseError::NoPartition);
    }
    if p.len() > 64 {
        return Err(PlacementParseError::PartitionTooLong(p.into()));
    }
    if p.starts_with('-')
        || !p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(PlacementParseError::PartitionNotAName(p.into()));
    }
    Ok(())
}

/// A Kubernetes namespace name, a DNS-1123 label: 1 to 63 lowercase letters, digits and `-`,
/// starting and ending with a letter or digit.
fn check_namespace(ns: &str) -> Result<(), PlacementParseError> {
    if ns.is_empty() {
        return Err(PlacementParseError::NamespaceEmpty);
    }
    let ok = ns.len() <= 63
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if !ok {
        return Err(PlacementParseError::NotANamespace(ns.into()));
    }
    Ok(())
}

/// Where a placed run is, as `bosun ps`/`show` and the web UI show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedView {
    pub placement: Placement,
    /// The cluster engine's id of the run's job (Slurm's job id, the Kubernetes Job's name).
    pub job: String,
    /// The host it runs on, once the engine has picked one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// How long its job waited in the engine's queue (milliseconds), once it has left it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_ms: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_as_people_write_them() {
        for (text, want) in [
            ("local", Placement::Local),
            ("slurm", Placement::Slurm { partition: None }),
            (
                "slurm:gpu-a.1",
                Placement::Slurm {
                    partition: Some("gpu-a.1".into()),
                },
            ),
            (
                "kubernetes:team-a1",
                Placement::Kubernetes {
                    namespace: "team-a1".into(),
                },
            ),
        ] {
            let p: Placement = text.parse().expect(text);
            assert_eq!(p, want);
            assert_eq!(p.to_string(), text);
        }
    }

    #[test]
    fn bad_placements_are_refused_with_the_way_to_write_one() {
        for (text, says) in [
            ("slurm:", "needs a partition name"),
            ("slurm:--wrap=x", "may not start with '-'"),
            ("slurm:a b", "only letters"),
            ("local:x", "takes nothing after it"),
            ("kubernetes", "say which namespace"),
            ("kubernetes:", "needs a namespace"),
            ("kubernetes:Team", "not a Kubernetes namespace name"),
            ("k8s:-a", "not a Kubernetes namespace name"),
            ("k8s:a_b", "not a Kubernetes namespace name"),
            ("moon", "is not a placement"),
        ] {
            let e = text.parse::<Placement>().expect_err(text);
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        let long = format!("kubernetes:{}", "a".repeat(64));
        assert!(long.parse::<Placement>().is_err());
        assert_eq!(
            "k8s:ns".parse::<Placement>(),
            Ok(Placement::Kubernetes {
                namespace: "ns".into()
            })
        );
        // The wire shape, as the store and the UI keep it.
        let json = serde_json::to_string(&Placement::Kubernetes {
            namespace: "ns".into(),
        })
        .expect("json");
        assert_eq!(json, r#"{"backend":"kubernetes","namespace":"ns"}"#);
    }
}
