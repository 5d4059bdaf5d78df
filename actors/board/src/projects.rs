//! Projects, as the Board keeps them: each a git checkout with its main branch and host, whose
//! cards' runs work in worktrees of their own ([`super::worktree`]). The Board owns them with the
//! cards, so that "no project is removed while a card belongs to it" holds without a race.
//!
//! The switch "the lead may merge" is set by [`BoardState::set_project`] alone, which only a
//! person's request reaches (the CLI and the web UI); the lead's tools read projects and never
//! change them.

use std::path::{Path, PathBuf};

use bosun_shared::projects::{Host, check_name, github_repo};
use bosun_shared::settings::{KeyValue, KeyValueError};
use bosun_shared::usage::{Budget, BudgetScope, CapEdit, day_of};
use bosun_shared::{ProjectId, Timestamp};
use tracing::info;

use super::record::{BoardChange, ProjectRecord};
use super::{BoardError, BoardState, BudgetNow, Project, bad};
use bosun_kit::edit::Edit;
use bosun_kit::git;
use bosun_kit::offload::blocking;

/// A new project.
#[derive(Clone, Debug)]
pub struct NewProject {
    pub name: String,
    /// The repository's folder: a git checkout (its top folder is taken).
    pub folder: PathBuf,
    /// Its main branch; when absent, what `origin/HEAD` says, else the checkout's branch.
    pub main_branch: Option<String>,
    /// GitHub `owner/name`, when the `origin` remote does not say it.
    pub github: Option<String>,
    /// Whether its cards are tested (QA) before review; on when absent.
    pub testing: Option<bool>,
}

/// A change to a project: what is `None` or [`Edit::Keep`] stays.
#[derive(Clone, Debug)]
pub struct ProjectEdit {
    /// Its name or id.
    pub project: String,
    pub name: Option<String>,
    pub folder: Option<PathBuf>,
    pub main_branch: Option<String>,
    /// GitHub `owner/name`; cleared, the host is read from the `origin` remote again.
    pub github: Edit<String>,
    /// What the runs of its cards created on one day (UTC) may cost together.
    pub daily_budget_micro_usd: Option<CapEdit>,
    /// The same in tokens (every kind).
    pub daily_budget_tokens: Option<CapEdit>,
    /// The same in tool calls bosun allowed.
    pub daily_budget_calls: Option<CapEdit>,
}

/// What git says of a folder a project is to use.
struct Checkout {
    top: PathBuf,
    default_branch: Option<String>,
    origin: Option<String>,
}

fn inspect(folder: &Path) -> Result<Checkout, git::GitError> {
    let top = git::toplevel(folder)?;
    Ok(Checkout {
        default_branch: git::default_branch(&top),
        origin: git::origin_url(&top),
        top,
    })
}

/// Whether `branch` names a commit in the checkout, as a local or an `origin` branch.
fn has_main(top: &Path, branch: &str) -> bool {
    git::commit(top, branch).is_some() || git::commit(top, &format!("origin/{branch}")).is_some()
}

fn switch(key: &str, value: &str) -> Result<bool, BoardError> {
    bosun_shared::switch::parse(value).ok_or_else(|| {
        bad(format!(
            "`{}` is not a value for {key}; say {key}=on or {key}=off",
            value.trim()
        ))
    })
}

fn host_of(github: Option<&str>, origin: Option<&str>) -> Result<Host, BoardError> {
    match github.map(str::trim).filter(|g| !g.is_empty()) {
        Some(g) => github_repo(g)
            .map(|repo| Host::Github { repo })
            .ok_or_else(|| {
                bad(format!(
                    "`{g}` is not a GitHub repository; give it as owner/name, such as acme/web"
                ))
            }),
        None => Ok(origin.map_or(Host::None, Host::from_remote)),
    }
}

impl BoardState {
    pub(super) fn project_id(&self, key: &str) -> Result<ProjectId, BoardError> {
        let key = key.trim();
        if let Some(p) = self
            .projects
            .values()
            .find(|p| p.name.eq_ignore_ascii_case(key))
        {
            return Ok(p.id);
        }
        Ok(bosun_kit::prefix::by_prefix(
            self.projects.keys().copied(),
            key,
            "projects'",
            |k| format!("there is no project `{k}`; `bosun project list` shows them"),
        )?)
    }

    /// The project with how many cards belong to it and its daily budget as it stands today.
    pub(super) fn project(&self, p: &ProjectRecord) -> Project {
        Project {
            record: p.clone(),
            cards: self
                .cards
                .values()
                .filter(|c| c.project == Some(p.id))
                .count() as u32,
            daily_budget: (!p.daily_budget.is_empty()).then(|| {
                let day = day_of(Timestamp::now());
                let scope = BudgetScope::ProjectDay {
                    project: p.id,
                    name: p.name.clone(),
                    day: day.clone(),
                };
                BudgetNow {
                    caps: p.daily_budget,
                    more: self.ctx.spend.granted(&scope),
                    spent: self.ctx.spend.day(p.id, &day),
                }
            }),
        }
    }

    fn project_reply(&self, id: ProjectId) -> Result<Project, BoardError> {
        self.projects
            .get(&id)
            .map(|p| self.project(p))
            .ok_or_else(|| BoardError::internal("the project went away"))
    }

    pub(super) fn show_project(&self, key: &str) -> Result<Project, BoardError> {
        self.project_reply(self.project_id(key)?)
    }

    pub(super) fn list_projects(&self) -> Vec<Project> {
        let mut projects: Vec<Project> = self.projects.values().map(|p| self.project(p)).collect();
        projects.sort_by(|a, b| a.record.name.cmp(&b.record.name));
        projects
    }

    fn check_unique(&self, name: &str, not: Option<ProjectId>) -> Result<(), BoardError> {
        check_name(name).map_err(|e| bad(e.to_string()))?;
        match self
            .projects
            .values()
            .find(|p| p.name.eq_ignore_ascii_case(name) && Some(p.id) != not)
        {
            Some(p) => Err(BoardError::conflict(format!(
                "there is a project `{}` already; choose another name",
                p.name
            ))),
            None => Ok(()),
        }
    }

    /// The checkout at `folder`, refused in plain words when it is none, is bosun's own, or is
    /// another project's already.
    async fn checkout(
        &self,
        folder: &Path,
        not: Option<ProjectId>,
    ) -> Result<Checkout, BoardError> {
        if !folder.is_absolute() {
            return Err(bad(format!(
                "give the project's folder as an absolute path; `{}` is not one",
                folder.display()
            )));
        }
        let dir = folder.to_path_buf();
        let found = blocking(move || inspect(&dir)).await?.map_err(|why| {
            bad(format!(
                "{} is not a git checkout ({why}); give the folder of a repository made with `git clone` or `git init`",
                folder.display()
            ))
        })?;
        let worktrees = self.ctx.worktrees.canonicalize().unwrap_or_default();
        if found.top.starts_with(&self.ctx.worktrees)
            || (!worktrees.as_os_str().is_empty() && found.top.starts_with(&worktrees))
        {
            return Err(bad(format!(
                "{} is a card's worktree of bosun's own; give the project's own checkout",
                found.top.display()
            )));
        }
        if let Some(other) = self
            .projects
            .values()
            .find(|p| p.folder == found.top && Some(p.id) != not)
        {
            return Err(BoardError::conflict(format!(
                "{} is project {}'s folder already; one checkout is one project",
                found.top.display(),
                other.name
            )));
        }
        Ok(found)
    }

    async fn main_branch(
        &self,
        top: &Path,
        given: Option<String>,
        found: Option<String>,
    ) -> Result<String, BoardError> {
        let given = given
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty());
        let Some(branch) = given.or(found) else {
            return Err(bad(format!(
                "could not tell the main branch of {} (no origin/HEAD, no branch checked out); name it with --main-branch BRANCH",
                top.display()
            )));
        };
        let (dir, b) = (top.to_path_buf(), branch.clone());
        if !blocking(move || has_main(&dir, &b)).await? {
            return Err(bad(format!(
                "there is no branch `{branch}` in {}; name one it has with --main-branch BRANCH",
                top.display()
            )));
        }
        Ok(branch)
    }

    pub(super) async fn add_project(&mut self, p: NewProject) -> Result<Project, BoardError> {
        let name = p.name.trim().to_string();
        self.check_unique(&name, None)?;
        let found = self.checkout(&p.folder, None).await?;
        let main_branch = self
            .main_branch(&found.top, p.main_branch, found.default_branch.clone())
            .await?;
        let now = Timestamp::now();
        let project = ProjectRecord {
            id: ProjectId::new(),
            name,
            folder: found.top,
            main_branch,
            host: host_of(p.github.as_deref(), found.origin.as_deref())?,
            testing: p.testing.unwrap_or(true),
            lead_may_merge: false,
            created_at: now,
            updated_at: now,
            daily_budget: Budget::default(),
        };
        self.save(vec![BoardChange::Project(Box::new(project.clone()))])
            .await?;
        info!(project = %project.name, folder = %project.folder.display(), "project added");
        let id = project.id;
        self.projects.insert(id, project);
        self.project_reply(id)
    }

    pub(super) async fn edit_project(&mut self, p: ProjectEdit) -> Result<Project, BoardError> {
        let id = self.project_id(&p.project)?;
        let Some(mut project) = self.projects.get(&id).cloned() else {
            return Err(BoardError::internal("the project went away"));
        };
        if let Some(name) = &p.name {
            let name = name.trim();
            self.check_unique(name, Some(id))?;
            project.name = name.to_string();
        }
        let mut origin = None;
        if let Some(folder) = &p.folder {
            let found = self.checkout(folder, Some(id)).await?;
            if found.top != project.folder {
                let working: Vec<String> = self
                    .cards
                    .values()
                    .filter(|c| c.project == Some(id) && c.worktree.is_some())
                    .map(|c| c.id.short())
                    .collect();
                if !working.is_empty() {
                    return Err(BoardError::conflict(format!(
                        "cards {} of project {} have worktrees of its folder {}; remove those cards first (`bosun board card remove CARD`), or keep the folder",
                        working.join(", "),
                        project.name,
                        project.folder.display()
                    )));
                }
                project.folder = found.top;
            }
            origin = found.origin;
        }
        if let Some(b) = p.main_branch {
            project.main_branch = self.main_branch(&project.folder, Some(b), None).await?;
        }
        match p.github {
            Edit::Clear => {
                let dir = project.folder.clone();
                let url = match origin {
                    Some(o) => Some(o),
                    None => blocking(move || git::origin_url(&dir)).await?,
                };
                project.host = host_of(None, url.as_deref())?;
            }
            Edit::Set(g) => project.host = host_of(Some(&g), None)?,
            Edit::Keep => {}
        }
        project.daily_budget = super::cards::edit_budget(
            project.daily_budget,
            [
                p.daily_budget_micro_usd,
                p.daily_budget_tokens,
                p.daily_budget_calls,
            ],
            "a project's daily budget",
        )?;
        project.updated_at = Timestamp::now();
        self.save(vec![BoardChange::Project(Box::new(project.clone()))])
            .await?;
        self.projects.insert(id, project);
        self.project_reply(id)
    }

    /// The person's switches: `testing` and `lead-may-merge`, checked whole before any is set.
    pub(super) async fn set_project(
        &mut self,
        key: &str,
        settings: &[String],
    ) -> Result<Project, BoardError> {
        let id = self.project_id(key)?;
        let Some(mut project) = self.projects.get(&id).cloned() else {
            return Err(BoardError::internal("the project went away"));
        };
        if settings.is_empty() {
            return Err(bad(
                "say what to set, such as `lead-may-merge=on` or `testing=off`",
            ));
        }
        // A key given twice is refused with the rest, before anything is set: which of the two
        // the person meant cannot be known.
        let pairs = bosun_shared::settings::parse(settings).map_err(|e| match e {
            KeyValueError::NotKeyValue(s) => bad(format!(
                "`{s}` is not a setting; write it as key=value, such as lead-may-merge=on"
            )),
            e @ (KeyValueError::NoKey(_) | KeyValueError::Twice { .. }) => bad(e.to_string()),
        })?;
        for KeyValue { key, value: v, .. } in pairs {
            match key {
                "lead-may-merge" => project.lead_may_merge = switch("lead-may-merge", v)?,
                "testing" => project.testing = switch("testing", v)?,
                other => {
                    return Err(bad(format!(
                        "`{other}` is not a project setting; the settings are testing=on|off and lead-may-merge=on|off"
                    )));
                }
            }
        }
        project.updated_at = Timestamp::now();
        self.save(vec![BoardChange::Project(Box::new(project.clone()))])
            .await?;
        info!(project = %project.name, lead_may_merge = project.lead_may_merge, testing = project.testing, "project set");
        self.projects.insert(id, project);
        self.project_reply(id)
    }

    pub(super) async fn remove_project(&mut self, key: &str) -> Result<Project, BoardError> {
        let id = self.project_id(key)?;
        let Some(project) = self.projects.get(&id).cloned() else {
            return Err(BoardError::internal("the project went away"));
        };
        let mut cards: Vec<String> = self
            .cards
            .values()
            .filter(|c| c.project == Some(id))
            .map(|c| c.id.short())
            .collect();
        if !cards.is_empty() {
            cards.sort();
            return Err(BoardError::conflict(format!(
                "project {} has {} card{} ({}); remove them first (`bosun board card remove CARD`), then the project",
                project.name,
                cards.len(),
                if cards.len() == 1 { "" } else { "s" },
                cards.join(", ")
            )));
        }
        let view = self.project(&project);
        self.save(vec![BoardChange::DeleteProject(id)]).await?;
        self.projects.remove(&id);
        info!(project = %project.name, "project removed");
        Ok(view)
    }
}
