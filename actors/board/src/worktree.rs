//! A card's worktree: one per card of a project, at `<state dir>/worktrees/<card id>`, on the
//! card's own branch (`bosun/<card short id>-<slug of its title>`), made from the project's main
//! branch by the card's first run and used by every run of it after.
//!
//! **Never two for one card.** The folder is named by the card's id, so there is one place to
//! look; before each run [`ensure`] reuses what git lists there whole, and removes anything else
//! there (a worktree whose `git worktree add` never finished, a folder git does not know, one
//! recorded but gone) before making it again. The branch is found again by its prefix, so a
//! crash between making the branch and recording it makes no second branch either. At startup
//! [`sweep`] removes the worktrees of cards that are gone.
//!
//! Everything here blocks (git calls): the Board runs it through [`bosun_kit::offload::blocking`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use bosun_shared::CardId;
use bosun_shared::projects::card_branch;
use tracing::{info, warn};

use super::record::{CardWorktree, ProjectRecord};
use bosun_kit::git::{self, GitError};

/// Why a card's worktree could not be made or removed, in the person's words.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The project's folder is no longer a checkout: the person moves it back or edits the
    /// project; retrying as is cannot help.
    #[error(
        "project {project}'s folder {} is not a git checkout any more ({why}); put it back, or point the project at the right one with `bosun project edit {project} --folder DIR`",
        folder.display()
    )]
    NotACheckout {
        project: String,
        folder: PathBuf,
        why: String,
    },
    /// The main branch names no commit: fetching it, or naming the right one, helps.
    #[error(
        "project {project}'s main branch `{branch}` is not in its checkout; fetch it, or name the right one with `bosun project edit {project} --main-branch BRANCH`"
    )]
    NoMainBranch { project: String, branch: String },
    /// git failed (its own words); retrying may help once the cause is fixed.
    #[error("{0}")]
    Git(#[from] GitError),
    /// The state directory's worktrees folder could not be used.
    #[error("bosund could not use {}: {why}", path.display())]
    Io { path: PathBuf, why: String },
}

/// One change to worktrees at a time. Cards of one project are started at once, and git's own
/// locks do not cover a `worktree prune` of one card's against the `worktree add` of another's.
static CHANGING: Mutex<()> = Mutex::new(());

fn changing() -> MutexGuard<'static, ()> {
    // Poisoned only by a panic, which leaves nothing of ours half-done in memory.
    CHANGING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worktrees folder, made (0700) if need be, by its real path: git lists worktrees by
/// theirs.
fn root(worktrees: &Path) -> Result<PathBuf, WorktreeError> {
    let io = |e: std::io::Error| WorktreeError::Io {
        path: worktrees.to_path_buf(),
        why: e.to_string(),
    };
    bosun_shared::paths::create_private_dir(worktrees).map_err(io)?;
    worktrees.canonicalize().map_err(io)
}

/// The card's worktree, ready for a run: reused when git lists it whole at its place, made
/// again otherwise. Also its head commit.
pub fn ensure(
    worktrees: &Path,
    project: &ProjectRecord,
    card: CardId,
    title: &str,
    recorded: Option<&CardWorktree>,
) -> Result<(CardWorktree, String), WorktreeError> {
    let _one = changing();
    let repo = &project.folder;
    git::toplevel(repo).map_err(|e| WorktreeError::NotACheckout {
        project: project.name.clone(),
        folder: repo.clone(),
        why: e.to_string(),
    })?;
    let path = root(worktrees)?.join(card.to_string());
    let listed = git::worktrees(repo)?
        .into_iter()
        .find(|w| same(&w.path, &path));
    if let Some(w) = &listed
        && !w.locked
        && !w.prunable
        && path.is_dir()
    {
        let branch = w
            .branch
            .clone()
            .or_else(|| recorded.map(|r| r.branch.clone()))
            .unwrap_or_else(|| card_branch(&card.short(), title));
        let head = git::commit(&path, "HEAD").unwrap_or_default();
        return Ok((CardWorktree { path, branch }, head));
    }
    // Whatever is at its place is not a whole worktree: clear it, then make it.
    if listed.is_some() || path.exists() {
        info!(card = %card, path = %path.display(), "clearing a worktree left unfinished");
    }
    clear(repo, &path, listed.is_some());
    let base = format!("bosun/{}", card.short());
    let found = git::branches_starting(repo, &base)
        .into_iter()
        .find(|b| *b == base || b.starts_with(&format!("{base}-")));
    let branch = recorded
        .map(|r| r.branch.clone())
        .filter(|b| git::has_branch(repo, b))
        .or(found);
    let where_ = path.display().to_string();
    let branch = match branch {
        Some(b) => {
            git::git(repo, &["worktree", "add", &where_, &b])?;
            b
        }
        None => {
            let start = git::commit(repo, &project.main_branch)
                .or_else(|| git::commit(repo, &format!("origin/{}", project.main_branch)))
                .ok_or_else(|| WorktreeError::NoMainBranch {
                    project: project.name.clone(),
                    branch: project.main_branch.clone(),
                })?;
            let b = card_branch(&card.short(), title);
            git::git(
                repo,
                &["worktree", "add", "--no-track", "-b", &b, &where_, &start],
            )?;
            b
        }
    };
    bosun_kit::crash::point("worktree-after-add");
    info!(card = %card, branch = %branch, "made a card's worktree");
    let head = git::commit(&path, "HEAD").unwrap_or_default();
    Ok((CardWorktree { path, branch }, head))
}

/// Removes the card's worktree (its branch stays). Unless `force`, one with changes not
/// committed is left, and the answer says so.
pub fn remove(repo: &Path, wt: &CardWorktree, force: bool) -> Result<(), Uncommitted> {
    let _one = changing();
    if !force && wt.path.is_dir() && git::dirty(&wt.path).unwrap_or(false) {
        return Err(Uncommitted(wt.clone()));
    }
    clear(repo, &wt.path, true);
    Ok(())
}

/// Why [`remove`] kept a worktree: it has changes not committed, which only `force` drops.
#[derive(Debug, thiserror::Error)]
#[error(
    "its worktree {} has changes not committed to branch {}; commit them there first, or remove the card with --force to drop them",
    .0.path.display(),
    .0.branch
)]
pub struct Uncommitted(pub CardWorktree);

/// Takes whatever is at `path` away, in git's list and on disk. Best effort: what is left is
/// found again by the next [`ensure`] or [`sweep`].
fn clear(repo: &Path, path: &Path, listed: bool) {
    let where_ = path.display().to_string();
    if listed {
        // A locked one (an add that never finished) is not pruned until unlocked.
        let _ = git::git(repo, &["worktree", "unlock", &where_]);
        if let Err(e) = git::git(repo, &["worktree", "remove", "--force", &where_]) {
            warn!(path = %where_, error = %e, "git could not remove a worktree; removing its folder");
        }
    }
    if path.exists()
        && let Err(e) = std::fs::remove_dir_all(path)
    {
        warn!(path = %where_, error = %e, "could not remove a worktree's folder");
    }
    let _ = git::git(repo, &["worktree", "prune"]);
}

/// At startup: the worktrees of cards that are gone (removed while bosund died, or whatever
/// else is in the folder) are removed, from each project's repository and from disk.
pub fn sweep(worktrees: &Path, keep: &HashSet<CardId>, repos: &[PathBuf]) {
    let _one = changing();
    let Ok(entries) = std::fs::read_dir(worktrees) else {
        return;
    };
    let Ok(root) = worktrees.canonicalize() else {
        return;
    };
    let gone: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<CardId>().ok())
                .is_none_or(|id| !keep.contains(&id))
        })
        .map(|e| root.join(e.file_name()))
        .collect();
    if gone.is_empty() {
        return;
    }
    for repo in repos {
        let listed = git::worktrees(repo).unwrap_or_default();
        for path in &gone {
            if listed.iter().any(|w| same(&w.path, path)) {
                clear(repo, path, true);
            }
        }
    }
    for path in gone.iter().filter(|p| p.exists()) {
        info!(path = %path.display(), "removing the worktree of a card that is gone");
        if let Err(e) = std::fs::remove_dir_all(path) {
            warn!(path = %path.display(), error = %e, "could not remove a worktree's folder");
        }
    }
}

/// Whether two paths name the same place (git lists real paths).
fn same(a: &Path, b: &Path) -> bool {
    a == b
        || a.canonicalize()
            .ok()
            .is_some_and(|a| Some(a) == b.canonicalize().ok())
}
