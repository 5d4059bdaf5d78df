//! Where the programs of an agent's run may write, for the runner's Landlock fence: the run's
//! folder and the agent's roots, the git directories a worktree's commits write, the CLI's own
//! state and caches, a temporary folder of the run's own (`TMPDIR`), and the devices every
//! program writes to. Nothing else: `~/.bashrc`, another project, the state directory.
//!
//! Decided per CLI (`docs/approvals.md`, "The fence"): Claude Code and Gemini CLI run under
//! bosun's fence; so does Codex, with its own sandbox switched off, since its sandbox builds a
//! bubblewrap container that a Landlock domain forbids (no `mount` inside one) and bosun's
//! policy already sees each of its commands.

use std::path::{Path, PathBuf};

use bosun_protocol::runner::FencePlan;
use bosun_shared::agents::CliKind;

/// The folder in a run's directory that is its `TMPDIR`.
pub const TMP: &str = "tmp";
/// The folder in a run's directory that is the home of a Gemini run.
const HOME: &str = "home";

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
/// environment `env` and its run directory `run_dir`.
pub fn plan(
    cli: CliKind,
    folder: &Path,
    roots: &[PathBuf],
    env: &[(String, String)],
    run_dir: &Path,
) -> FencePlan {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let home = var("HOME");
    let in_home = |rest: &str| home.as_ref().map(|h| h.join(rest));
    let mut writable: Vec<PathBuf> = vec![folder.to_path_buf()];
    writable.extend(roots.iter().cloned());
    writable.extend(worktree_git(folder));
    // Folders a program makes when it needs them: made by the runner first, so that the fence
    // can name them.
    let mut make: Vec<PathBuf> = vec![run_dir.join(TMP)];
    // The CLI's own state.
    match cli {
        CliKind::Claude => {
            make.extend(var("CLAUDE_CONFIG_DIR").or_else(|| in_home(".claude")));
            writable.extend(in_home(".claude.json"));
        }
        CliKind::Codex => make.extend(var("CODEX_HOME").or_else(|| in_home(".codex"))),
        CliKind::Gemini => make.extend(in_home(".gemini")),
        CliKind::Command => {}
    }
    // Caches: npm's (for the MCP servers started with npx) and the XDG cache (the browser's
    // profile among them).
    make.extend(var("XDG_CACHE_HOME").or_else(|| in_home(".cache")));
    make.extend(var("npm_config_cache").or_else(|| in_home(".npm")));
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
        let made = [
            PathBuf::from("/state/runs/r1/tmp"),
            PathBuf::from("/cfg/claude"),
            PathBuf::from("/home/me/.cache"),
            PathBuf::from("/home/me/.npm"),
        ];
        assert_eq!(plan.make, made);
        let want: Vec<PathBuf> = [
            wt.clone(),
            PathBuf::from("/data"),
            git.join("worktrees/card"),
            common.join("objects"),
            common.join("refs"),
            common.join("logs"),
            PathBuf::from("/home/me/.claude.json"),
            PathBuf::from("/state/runs/r1/home"),
        ]
        .into_iter()
        .chain(made)
        .chain(DEVICES.iter().map(PathBuf::from))
        .collect();
        assert_eq!(plan.writable, want);
        // Never the repository's configuration or hooks.
        assert!(
            !plan
                .writable
                .iter()
                .any(|p| p == &git || p.ends_with("hooks"))
        );
    }
}
