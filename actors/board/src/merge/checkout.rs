//! `update_checkout`: a project's checkout brought up to date with its `origin` main branch,
//! fast-forward only, stashing first when asked, and why it was refused ([`UpdateError`]).

use std::path::Path;

use super::short;
use crate::{BoardError, BoardState};
use bosun_kit::git;
use bosun_kit::offload::blocking;

impl BoardState {
    /// Brings a project's checkout up to date with `origin`'s main branch (fast-forward only),
    /// stashing its changes first when asked; refused, changing nothing, when the checkout is
    /// not on its main branch, has changes and no stash was asked, or has gone its own way.
    pub(crate) async fn update_checkout(
        &mut self,
        key: &str,
        stash: bool,
    ) -> Result<String, BoardError> {
        let id = self.project_id(key)?;
        let project = self
            .projects
            .get(&id)
            .cloned()
            .ok_or_else(|| BoardError::internal("the project went away"))?;
        let said =
            blocking(move || update(&project.folder, &project.main_branch, &project.name, stash))
                .await?
                .map_err(|why| BoardError::conflict(format!("update_checkout refused: {why}")))?;
        Ok(said)
    }
}

fn update(folder: &Path, main: &str, name: &str, stash: bool) -> Result<String, UpdateError> {
    use UpdateError as E;
    let at = folder.display();
    let checkout = || Checkout {
        name: name.into(),
        at: folder.into(),
        main: main.into(),
    };
    let branch = git::git(folder, &["symbolic-ref", "--quiet", "--short", "HEAD"])
        .map_err(|why| E::NoBranch { c: checkout(), why })?;
    if branch != main {
        return Err(E::OffMain {
            c: checkout(),
            branch,
        });
    }
    let dirty = git::dirty(folder).map_err(E::Dirty)?;
    if dirty && !stash {
        return Err(E::Uncommitted { c: checkout() });
    }
    git::git(folder, &["fetch", "--no-tags", "origin", main])
        .map_err(|why| E::Fetch { c: checkout(), why })?;
    let before = git::commit(folder, "HEAD").unwrap_or_default();
    let target = git::commit(folder, "FETCH_HEAD").unwrap_or_default();
    let ahead = git::git(
        folder,
        &["merge-base", "--is-ancestor", "HEAD", "FETCH_HEAD"],
    )
    .is_err();
    if ahead {
        return Err(E::Diverged { c: checkout() });
    }
    let mut said = String::new();
    if dirty {
        git::git(
            folder,
            &[
                "stash",
                "push",
                "--include-untracked",
                "-m",
                "bosun: before update_checkout",
            ],
        )
        .map_err(E::Stash)?;
        said.push_str("Stashed the checkout's changes (`git stash list` shows them). ");
    }
    if before == target {
        said.push_str(&format!(
            "Project {name}'s checkout {at} is up to date with origin's {main} ({}).",
            short(&target)
        ));
        return Ok(said);
    }
    git::git(folder, &["merge", "--ff-only", "FETCH_HEAD"])
        .map_err(|why| E::FastForward { c: checkout(), why })?;
    said.push_str(&format!(
        "Brought project {name}'s checkout {at} up to date: {main} moved from {} to {}.",
        short(&before),
        short(&target)
    ));
    Ok(said)
}

/// The project checkout an update was refused for: the project's name, its folder and its
/// main branch.
#[derive(Debug)]
pub(crate) struct Checkout {
    name: String,
    at: std::path::PathBuf,
    main: String,
}

/// Why [`update`] refused to bring a checkout up to date (`c`); it changed nothing, except
/// after a stash (which it says it made).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpdateError {
    #[error(
        "project {}'s checkout {} is on no branch ({why}); check out {} there first",
        .c.name, .c.at.display(), .c.main
    )]
    NoBranch { c: Checkout, why: git::GitError },
    /// The checkout is on this other branch.
    #[error(
        "project {}'s checkout {} is on branch {branch}, not its main branch {}; check out {} there first",
        .c.name, .c.at.display(), .c.main, .c.main
    )]
    OffMain { c: Checkout, branch: String },
    #[error("{0}")]
    Dirty(git::GitError),
    /// It has changes and no stash was asked.
    #[error(
        "project {}'s checkout {} has changes not committed; ask again with stash on to put them aside first (`git stash`), or commit them",
        .c.name, .c.at.display()
    )]
    Uncommitted { c: Checkout },
    #[error("git could not fetch {} from origin: {why}", .c.main)]
    Fetch { c: Checkout, why: git::GitError },
    /// Its main branch has commits origin's has not: no fast-forward, the person sees to it.
    #[error(
        "project {}'s {} has commits that origin's {} has not; it cannot be brought up to date by a fast-forward, so the person sees to it",
        .c.name, .c.main, .c.main
    )]
    Diverged { c: Checkout },
    #[error("git could not stash the changes: {0}")]
    Stash(git::GitError),
    #[error("git could not fast-forward {}: {why}", .c.main)]
    FastForward { c: Checkout, why: git::GitError },
}
