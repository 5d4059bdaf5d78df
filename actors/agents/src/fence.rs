//! Where the programs of an agent's run may write, for the runner's Landlock fence: the run's
//! folder and the agent's roots, the git directories a worktree's commits write, the CLI's
//! state and caches in folders of the run's own ([`homes`]), a temporary folder of the run's
//! own (`TMPDIR`), and the devices every program writes to. Nothing else: `~/.bashrc`, the
//! person's own CLI configuration, another project, the state directory.
//!
//! Decided per CLI (`docs/approvals.md`, "The fence"): Claude Code and Gemini CLI run under
//! bosun's fence; so does Codex, with its own sandbox switched off, since its sandbox builds a
//! bubblewrap container that a Landlock domain forbids (no `mount` inside one) and bosun's
//! policy already sees each of its commands.

use std::path::{Path, PathBuf};

use bosun_protocol::runner::FencePlan;
use bosun_shared::agents::CliKind;

use crate::homes;

/// The folder in a run's directory that is its `TMPDIR`.
pub const TMP: &str = "tmp";
/// The folder in a run's directory that is the home of a Gemini run.
const HOME: &str = homes::GEMINI;

/// Devices any program may open for writing.
const DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The fence of a run of a `cli` agent working in `folder`, with the agent's `roots`, its
/// environment `_env` and its run directory `run_dir`. The CLI's state and the caches are the
/// run's own folders ([`homes`]), whatever the environment says: never the person's.
pub fn plan(
    cli: CliKind,
    folder: &Path,
    roots: &[PathBuf],
    _env: &[(String, String)],
    run_dir: &Path,
) -> FencePlan {
    let mut writable: Vec<PathBuf> = vec![folder.to_path_buf()];
    writable.extend(roots.iter().cloned());
    writable.extend(worktree_git(folder));
    // Folders a program makes when it needs them: made by the runner first, so that the fence
    // can name them.
    let mut make: Vec<PathBuf> = vec![run_dir.join(TMP)];
    // The CLI's own state, in the run's folder (Gemini's is its home, below).
    match cli {
        CliKind::Claude | CliKind::Codex => make.extend(homes::state(cli).map(|d| run_dir.join(d))),
        CliKind::Gemini | CliKind::Command => {}
    }
    // Caches, the run's own: the XDG cache (the browser's profile among them) and npm's (for
    // the MCP servers started with npx).
    make.extend(homes::CACHES.iter().map(|c| run_dir.join(c)));
    writable.push(run_dir.join(HOME));
    writable.extend(make.iter().cloned());
    writable.extend(DEVICES.iter().map(PathBuf::from));
    let mut seen = Vec::new();
    writable.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    FencePlan { writable, make }
}

/// For a folder that is a git worktree (its `.git` a file naming its git directory): that git
/// directory, and the parts of the repository's common directory that a commit writes (objects,
/// refs and their logs). Never the common directory itself, which holds the configuration and
/// the hooks.
fn worktree_git(folder: &Path) -> Vec<PathBuf> {
    let dot_git = folder.join(".git");
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return Vec::new();
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let gitdir = folder.join(gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| gitdir.join(c.trim()));
    let mut out = vec![gitdir];
    if let Some(common) = common {
        out.extend(["objects", "refs", "logs"].map(|d| common.join(d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_gets_its_git_directory_and_the_commit_parts_of_the_common_one() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let git = repo.join(".git");
        std::fs::create_dir_all(git.join("worktrees/card")).unwrap();
        std::fs::write(git.join("worktrees/card/commondir"), "../..\n").unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", git.join("worktrees/card").display()),
        )
        .unwrap();
        let env = vec![
            ("HOME".to_string(), "/home/me".to_string()),
            ("CLAUDE_CONFIG_DIR".to_string(), "/cfg/claude".to_string()),
        ];
        let plan = plan(
            CliKind::Claude,
            &wt,
            &[PathBuf::from("/data")],
            &env,
            Path::new("/state/runs/r1"),
        );
        let common = git.join("worktrees/card").join("../..");
        // The run's own, never the person's.
        let made = [
            PathBuf::from("/state/runs/r1/tmp"),
            PathBuf::from("/state/runs/r1/claude"),
            PathBuf::from("/state/runs/r1/cache"),
            PathBuf::from("/state/runs/r1/npm"),
        ];
        assert_eq!(plan.make, made);
        let want: Vec<PathBuf> = [
            wt.clone(),
            PathBuf::from("/data"),
            git.join("worktrees/card"),
            common.join("objects"),
            common.join("refs"),
            common.join("logs"),
            PathBuf::from("/state/runs/r1/home"),
        ]
        .into_iter()
        .chain(made)
        .chain(DEVICES.iter().map(PathBuf::from))
        .collect();
        assert_eq!(plan.writable, want);
        assert!(
            !plan
                .writable
                .iter()
                .any(|p| p.starts_with("/home/me") || p.starts_with("/cfg")),
            "{:?}",
            plan.writable
        );
        // Never the repository's configuration or hooks.
        assert!(
            !plan
                .writable
                .iter()
                .any(|p| p == &git || p.ends_with("hooks"))
        );
    }
}
