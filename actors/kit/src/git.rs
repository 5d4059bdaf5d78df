//! bosun's own git calls: the one place that runs `git`. Each call is a helper process
//! ([`output_blocking`]: a process group of its own, a deadline, the group killed afterwards),
//! made so that nothing of the repository's runs and nothing of it is written but what the call
//! is for:
//!
//! - hooks off (`core.hooksPath=/dev/null`), the file system monitor off
//!   (`core.fsmonitor=false`), and every filter driver the repository's config names emptied
//!   (`filter.<driver>.{clean,smudge,process}` set to nothing, `required` false), so a checkout
//!   runs no program of the repository's;
//! - no system or global config (`GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`), no
//!   system attributes (`GIT_ATTR_NOSYSTEM=1`), no prompt (`GIT_TERMINAL_PROMPT=0`), no pager,
//!   no optional locks (`GIT_OPTIONAL_LOCKS=0`), and no `GIT_DIR`-like variable of bosund's own
//!   environment leaking in;
//! - never a command that writes config: a worktree's branch is made with `--no-track` (git
//!   would otherwise write `branch.<name>.*` when the start point is a remote branch).
//!
//! All of it is blocking: callers run it through [`crate::offload::blocking`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bosun_shared::process::{HelperError, output_blocking};

/// A git call that does not end in this long is killed with its group.
const DEADLINE: Duration = Duration::from_secs(60);

/// Variables of bosund's environment that would point git elsewhere.
const CLEARED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_TRACE",
];

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started (not installed, not on bosund's PATH).
    #[error("bosund could not run git ({0}); install git, or put it on bosund's PATH")]
    Spawn(String),
    /// It ran past its deadline and was killed.
    #[error("git {0} did not finish within {secs} s", secs = DEADLINE.as_secs())]
    TimedOut(String),
    /// It said no: what it said on stderr.
    #[error("git {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
}

/// Runs `git -C dir <args>` as described above; its stdout, trimmed at the end.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    for c in [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.untrackedCache=false",
        "advice.detachedHead=false",
    ] {
        cmd.args(["-c", c]);
    }
    for driver in filter_drivers(dir) {
        for key in ["clean", "smudge", "process"] {
            cmd.arg("-c").arg(format!("filter.{driver}.{key}="));
        }
        cmd.arg("-c").arg(format!("filter.{driver}.required=false"));
    }
    cmd.arg("--no-pager").args(args);
    plain_env(&mut cmd);
    run(cmd, args)
}

fn plain_env(cmd: &mut Command) {
    for k in CLEARED {
        cmd.env_remove(k);
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C");
}

fn run(mut cmd: Command, args: &[&str]) -> Result<String, GitError> {
    let words = args.join(" ");
    let out = match output_blocking(&mut cmd, DEADLINE) {
        Ok(out) => out,
        Err(HelperError::TimedOut(_)) => return Err(GitError::TimedOut(words)),
        Err(HelperError::Io(e)) => return Err(GitError::Spawn(e.to_string())),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(GitError::Failed {
            args: words,
            stderr: if stderr.is_empty() {
                format!("it exited with {}", out.status)
            } else {
                stderr
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The filter drivers the repository's own config names (`filter.<driver>.*`), read without
/// running anything of the repository's. None when it cannot be read (then there is nothing of
/// its own to empty either: system and global config are not read).
fn filter_drivers(dir: &Path) -> Vec<String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["config", "--includes", "--name-only", "--get-regexp"])
        .arg(r"^filter\.");
    plain_env(&mut cmd);
    let Ok(names) = run(cmd, &["config"]) else {
        return Vec::new();
    };
    let mut drivers: Vec<String> = names
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("filter.")?;
            let (driver, _) = rest.rsplit_once('.')?;
            Some(driver.to_string())
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    drivers
}

/// The top folder of the checkout `dir` is in; an error when it is in none (or a bare one).
pub fn toplevel(dir: &Path) -> Result<PathBuf, GitError> {
    git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)
}

/// The branch a checkout calls its main one: what `origin/HEAD` points at, else the branch
/// checked out. None when neither says.
pub fn default_branch(repo: &Path) -> Option<String> {
    if let Ok(r) = git(
        repo,
        &[
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ],
    ) && let Some(b) = r.strip_prefix("origin/")
        && !b.is_empty()
    {
        return Some(b.to_string());
    }
    git(repo, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
}

/// The `origin` remote's URL, if it has one.
pub fn origin_url(repo: &Path) -> Option<String> {
    git(repo, &["remote", "get-url", "origin"])
        .ok()
        .filter(|u| !u.is_empty())
}

/// The commit `rev` names, if it names one.
pub fn commit(repo: &Path, rev: &str) -> Option<String> {
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .ok()
}

/// Whether `branch` is a local branch of the repository.
pub fn has_branch(repo: &Path, branch: &str) -> bool {
    commit(repo, &format!("refs/heads/{branch}")).is_some()
}

/// The local branches whose names start with `prefix`.
pub fn branches_starting(repo: &Path, prefix: &str) -> Vec<String> {
    git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            &format!("refs/heads/{prefix}*"),
        ],
    )
    .map(|out| out.lines().map(str::to_string).collect())
    .unwrap_or_default()
}

/// One entry of `git worktree list --porcelain`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    pub branch: Option<String>,
    /// Locked: a `git worktree add` that never finished says `initializing`.
    pub locked: bool,
    /// Its folder is gone.
    pub prunable: bool,
}

/// The repository's worktrees (its main checkout first).
pub fn worktrees(repo: &Path) -> Result<Vec<Worktree>, GitError> {
    let out = git(repo, &["worktree", "list", "--porcelain"])?;
    let mut list: Vec<Worktree> = Vec::new();
    for line in out.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            list.push(Worktree {
                path: PathBuf::from(path),
                ..Worktree::default()
            });
        } else if let Some(last) = list.last_mut() {
            if let Some(b) = line.strip_prefix("branch ") {
                last.branch = Some(b.strip_prefix("refs/heads/").unwrap_or(b).to_string());
            } else if line == "locked" || line.starts_with("locked ") {
                last.locked = true;
            } else if line == "prunable" || line.starts_with("prunable ") {
                last.prunable = true;
            }
        }
    }
    Ok(list)
}

/// Whether the worktree has changes not committed (untracked files count).
pub fn dirty(worktree: &Path) -> Result<bool, GitError> {
    git(
        worktree,
        &["status", "--porcelain", "--untracked-files=normal"],
    )
    .map(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    /// A repository whose own config has a post-checkout hook and a smudge filter that each
    /// leave a mark: a worktree made through [`git`] leaves neither, and the config is as it was.
    #[test]
    fn a_worktree_runs_no_hook_and_no_filter_of_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let marks = dir.path().join("marks");
        sh(
            &repo,
            &format!(
                "git init -q -b main . && git config user.email t@t && git config user.name t \
                 && echo '*.txt filter=mark' > .gitattributes && echo hi > a.txt \
                 && git add . && git commit -qm one \
                 && mkdir -p .git/hooks && printf '#!/bin/sh\\necho hook >> {m}\\n' > .git/hooks/post-checkout \
                 && chmod +x .git/hooks/post-checkout \
                 && git config filter.mark.smudge 'echo smudge >> {m}; cat' \
                 && git config filter.mark.required true",
                m = marks.display()
            ),
        );
        let config = std::fs::read(repo.join(".git/config")).unwrap();
        let wt = dir.path().join("wt");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "--no-track",
                "-b",
                "bosun/x",
                &wt.display().to_string(),
                "main",
            ],
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "hi\n");
        assert!(
            !marks.exists(),
            "{}",
            std::fs::read_to_string(&marks).unwrap()
        );
        assert_eq!(std::fs::read(repo.join(".git/config")).unwrap(), config);
        let list = worktrees(&repo).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].branch.as_deref(), Some("bosun/x"));
        assert_eq!(default_branch(&repo).as_deref(), Some("main"));
        assert_eq!(branches_starting(&repo, "bosun/"), vec!["bosun/x"]);
        assert!(!dirty(&wt).unwrap());
        std::fs::write(wt.join("new"), "x").unwrap();
        assert!(dirty(&wt).unwrap());
        let err = toplevel(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a git repository"), "{err}");
    }
}
