//! Where a run's runner runs: on this machine (`local`, the default) or on a host a cluster
//! engine picks (`slurm`, optionally in a partition).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a run goes, as a person writes it: `local`, `slurm` or `slurm:PARTITION`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "snake_case")]
pub enum Placement {
    #[default]
    Local,
    Slurm {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<String>,
    },
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
        }
    }
}

const HOW: &str = "write local, slurm or slurm:PARTITION";

impl FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (backend, rest) = match s.split_once(':') {
            Some((b, r)) => (b, Some(r)),
            None => (s, None),
        };
        match (backend, rest) {
            ("local", None) => Ok(Placement::Local),
            ("local", Some(_)) => Err(format!("`{s}`: local takes nothing after it; {HOW}")),
            ("slurm", None) => Ok(Placement::Slurm { partition: None }),
            ("slurm", Some(p)) => {
                check_partition(p)?;
                Ok(Placement::Slurm {
                    partition: Some(p.to_string()),
                })
            }
            ("kubernetes" | "k8s", _) => Err(format!(
                "`{s}`: the Kubernetes backend is not part of this build of bosun; {HOW}"
            )),
            _ => Err(format!("`{s}` is not a placement; {HOW}")),
        }
    }
}

/// A Slurm partition name as bosun passes it to `sbatch --partition`: letters, digits, `-`, `_`
/// and `.`, at most 64 characters — so nothing in it can be read as another option.
fn check_partition(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err(format!(
            "`slurm:` needs a partition name after the colon; {HOW}"
        ));
    }
    if p.len() > 64 {
        return Err(format!(
            "the partition name `{p}` is longer than 64 characters"
        ));
    }
    if p.starts_with('-')
        || !p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "the partition name `{p}` may hold only letters, digits, '-', '_' and '.', and may not start with '-'"
        ));
    }
    Ok(())
}

/// Where a placed run is, as `bosun ps`/`show` and the web UI show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedView {
    pub placement: Placement,
    /// The cluster engine's id of the run's job (Slurm's job id).
    pub job: String,
    /// The host it runs on, once the engine has picked one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
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
            ("kubernetes:ns", "not part of this build"),
            ("moon", "is not a placement"),
        ] {
            let e = text.parse::<Placement>().expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
