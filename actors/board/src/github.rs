//! A card's pull request, through the person's own `gh` and its sign-in (bosun keeps no GitHub
//! token): found by the card's branch (`gh pr list --head`), read (`gh pr view --json`), and
//! merged (`gh pr merge --merge --match-head-commit`: a merge commit, only while the head is
//! the commit asked; never `--admin`, `--auto`, squash or rebase, and no branch deleted).
//!
//! Each call is a helper process (`output_blocking`: a process group of its own, a deadline,
//! the group killed afterwards), with gh's prompts, pager, colours and update check off. All of
//! it blocks: callers run it through [`bosun_kit::offload::blocking`].

use std::process::Command;
use std::time::Duration;

use bosun_shared::process::{HelperError, output_blocking};
use serde::Deserialize;

/// A gh call that does not end in this long is killed with its group.
const DEADLINE: Duration = Duration::from_secs(60);

/// What `gh pr view` is asked for.
pub const VIEW_FIELDS: &str = "number,state,isDraft,headRefName,headRefOid,headRepositoryOwner,isCrossRepository,baseRefName,mergeable,mergeStateStatus,statusCheckRollup,url";

#[derive(Debug, thiserror::Error)]
pub enum GhError {
    /// `gh` could not be started: the person installs it (or puts it on bosund's PATH).
    #[error(
        "bosund could not run gh ({0}); install the GitHub CLI (`gh`) and sign in with `gh auth login`"
    )]
    Spawn(String),
    /// It ran past its deadline and was killed; retrying may help.
    #[error("gh {0} did not finish within {secs} s", secs = DEADLINE.as_secs())]
    TimedOut(String),
    /// It said no: what it said on stderr (a sign-in missing, a pull request not found).
    #[error("gh {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    /// Its answer was not the JSON asked for.
    #[error("gh {args} answered something bosun could not read: {why}")]
    Unreadable { args: String, why: String },
}

fn gh(args: &[&str]) -> Result<String, GhError> {
    let mut cmd = Command::new("gh");
    cmd.args(args)
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("GH_PAGER", "cat")
        .env("NO_COLOR", "1")
        .env("CLICOLOR", "0")
        .env("GH_SPINNER_DISABLED", "1")
        .env_remove("GH_DEBUG")
        .env_remove("DEBUG");
    let words = args.join(" ");
    let out = output_blocking(&mut cmd, DEADLINE).map_err(|e| match e {
        HelperError::TimedOut(_) => GhError::TimedOut(words.clone()),
        other => GhError::Spawn(other.to_string()),
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(GhError::Failed {
            args: words,
            stderr: if stderr.is_empty() {
                format!("it exited with {}", out.status)
            } else {
                stderr
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn json<T: for<'de> Deserialize<'de>>(args: &[&str]) -> Result<T, GhError> {
    let text = gh(args)?;
    serde_json::from_str(&text).map_err(|e| GhError::Unreadable {
        args: args.join(" "),
        why: e.to_string(),
    })
}

#[derive(Clone, Debug, Deserialize)]
pub struct Listed {
    pub number: u64,
    pub state: String,
    #[serde(default)]
    pub url: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct Owner {
    #[serde(default)]
    pub login: String,
}

/// One entry of `statusCheckRollup`: a CheckRun (`status`, `conclusion`) or a commit status
/// (`state`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    #[serde(default, rename = "__typename")]
    pub typename: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub context: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub conclusion: String,
    #[serde(default)]
    pub state: String,
}

impl Check {
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            self.context.clone()
        } else {
            self.name.clone()
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequest {
    pub number: u64,
    pub state: String,
    pub is_draft: bool,
    pub head_ref_name: String,
    pub head_ref_oid: String,
    #[serde(default)]
    pub head_repository_owner: Option<Owner>,
    pub is_cross_repository: bool,
    pub base_ref_name: String,
    pub mergeable: String,
    /// `CLEAN`, `BLOCKED` (a rule such as a required review), `BEHIND`, `DIRTY`, …
    #[serde(default)]
    pub merge_state_status: Option<String>,
    #[serde(default)]
    pub status_check_rollup: Vec<Check>,
    #[serde(default)]
    pub url: String,
}

/// The checks of a pull request, as the merge rule reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Every one completed with success (skipped and neutral count as passed).
    Green(Vec<String>),
    /// Some still running (none failed).
    Running(Vec<String>),
    /// Some failed.
    Failed(Vec<String>),
    /// There are none.
    None,
}

/// Reads the checks: a failure anywhere is Failed; else anything not finished is Running; else
/// Green; and no checks at all is None.
pub fn checks(rollup: &[Check]) -> Checks {
    if rollup.is_empty() {
        return Checks::None;
    }
    let (mut passed, mut running, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for c in rollup {
        let label = c.label();
        if c.typename == "StatusContext" || (!c.state.is_empty() && c.status.is_empty()) {
            match c.state.to_ascii_uppercase().as_str() {
                "SUCCESS" => passed.push(label),
                "PENDING" | "EXPECTED" => running.push(label),
                _ => failed.push(format!("{label} ({})", c.state.to_ascii_lowercase())),
            }
            continue;
        }
        if !c.status.eq_ignore_ascii_case("COMPLETED") {
            running.push(label);
            continue;
        }
        match c.conclusion.to_ascii_uppercase().as_str() {
            "SUCCESS" | "SKIPPED" | "NEUTRAL" => passed.push(label),
            other => failed.push(format!("{label} ({})", other.to_ascii_lowercase())),
        }
    }
    if !failed.is_empty() {
        Checks::Failed(failed)
    } else if !running.is_empty() {
        Checks::Running(running)
    } else {
        Checks::Green(passed)
    }
}

/// The pull requests of a branch, in every state.
pub fn list(repo: &str, branch: &str) -> Result<Vec<Listed>, GhError> {
    json(&[
        "pr",
        "list",
        "--head",
        branch,
        "--repo",
        repo,
        "--state",
        "all",
        "--json",
        "number,state,url",
    ])
}

/// The branch's pull request: an open one first, else a merged one, else the newest.
pub fn find(repo: &str, branch: &str) -> Result<Option<Listed>, GhError> {
    let mut all = list(repo, branch)?;
    all.sort_by_key(|p| std::cmp::Reverse(p.number));
    let pick = all
        .iter()
        .find(|p| p.state == "OPEN")
        .or_else(|| all.iter().find(|p| p.state == "MERGED"))
        .or(all.first())
        .cloned();
    Ok(pick)
}

pub fn view(repo: &str, number: u64) -> Result<PullRequest, GhError> {
    json(&[
        "pr",
        "view",
        &number.to_string(),
        "--repo",
        repo,
        "--json",
        VIEW_FIELDS,
    ])
}

/// Merges with a merge commit, only while `head` is the pull request's head commit.
pub fn merge(repo: &str, number: u64, head: &str) -> Result<(), GhError> {
    gh(&[
        "pr",
        "merge",
        &number.to_string(),
        "--repo",
        repo,
        "--merge",
        "--match-head-commit",
        head,
    ])
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, conclusion: &str) -> Check {
        Check {
            typename: "CheckRun".into(),
            name: "ci".into(),
            status: status.into(),
            conclusion: conclusion.into(),
            ..Check::default()
        }
    }

    #[test]
    fn checks_read_as_the_merge_rule_reads_them() {
        assert_eq!(checks(&[]), Checks::None);
        for ok in ["SUCCESS", "SKIPPED", "NEUTRAL"] {
            assert!(matches!(checks(&[run("COMPLETED", ok)]), Checks::Green(_)));
        }
        assert!(matches!(
            checks(&[run("COMPLETED", "SUCCESS"), run("IN_PROGRESS", "")]),
            Checks::Running(_)
        ));
        assert!(matches!(
            checks(&[run("IN_PROGRESS", ""), run("COMPLETED", "FAILURE")]),
            Checks::Failed(_)
        ));
        let status = Check {
            typename: "StatusContext".into(),
            context: "ci/legacy".into(),
            state: "PENDING".into(),
            ..Check::default()
        };
        assert!(matches!(checks(&[status]), Checks::Running(_)));
    }
}
