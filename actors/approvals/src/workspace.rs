//! The workspace's half of the policy's first step: a file tool writes only inside the run's
//! roots, and never into git metadata.
//!
//! The roots are the run's own folder (a card's worktree) and the folders the person added to
//! the agent (`roots=…`). A file-writing tool's target is resolved as the kernel would resolve it
//! — relative to the call's folder, every symbolic link followed (a dangling one too: a write
//! through it would create its target), `..` taken after the link it follows — before it is
//! compared with the roots, so a link, a `..` or a mount point that leads out of a root counts as
//! outside. `workspace=unrestricted` lifts the roots, never the git rule.
//!
//! Git runs programs that its configuration and hooks name, so no file tool writes git
//! metadata: anything under a `.git` directory or file (in any case), under a directory git
//! would take as a git directory (`HEAD`, `objects/` and `refs/`: a bare repository, a
//! worktree's common directory, a separate git directory), under a worktree's own git directory
//! (`HEAD` and `commondir`), or the write that would complete such a directory. Reading stays
//! free.
//!
//! # Caveats
//! - The check and the write are two moments: a link swapped in between escapes the check.
//!   The runner's Landlock fence is what holds the run's processes to the roots whatever they
//!   do; this check is what lets bosun say no with a reason, and keeps git metadata out of
//!   reach inside the roots, where Landlock cannot tell `.git` from the rest.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use bosun_shared::agents::CliKind;
use serde_json::Value;

use super::policy::Refusal;
use super::policy::Rule;

/// How many symbolic links one resolution follows, as the kernel's limit.
const MAX_LINKS: usize = 40;

/// Where a run may write, as resolved when its call is judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    /// Resolved (every link followed), the run's own folder first.
    roots: Vec<PathBuf>,
    unrestricted: bool,
}

impl Workspace {
    /// The run's folder and the agent's own roots, each resolved now.
    pub fn new(folder: &Path, extra: &[PathBuf], unrestricted: bool) -> Self {
        let mut roots: Vec<PathBuf> = Vec::new();
        for root in std::iter::once(folder).chain(extra.iter().map(PathBuf::as_path)) {
            let resolved = resolve(root);
            if !roots.contains(&resolved) {
                roots.push(resolved);
            }
        }
        Workspace {
            roots,
            unrestricted,
        }
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Why a file tool may not write `target` (as the call wrote it, relative to `cwd`), if it
    /// may not.
    pub fn refuse_write(&self, agent: &str, cwd: &Path, target: &str) -> Option<Refusal> {
        let raw = Path::new(target);
        let absolute = if raw.is_absolute() {
            raw.to_path_buf()
        } else {
            cwd.join(raw)
        };
        let resolved = resolve(&absolute);
        if let Some(why) = git_metadata(&absolute, &resolved) {
            return Some(Refusal {
                rule: Rule::GitMetadata,
                reason: format!(
                    "{target} is git metadata ({why}); file tools never write there, since git runs the programs its configuration and hooks name. Change git's settings with a git command instead, which asks the person as a command does"
                ),
            });
        }
        if self.unrestricted || self.inside(&resolved) {
            return None;
        }
        let shown = if resolved == absolute {
            String::new()
        } else {
            format!(" (it resolves to {})", resolved.display())
        };
        Some(Refusal {
            rule: Rule::OutsideWorkspace,
            reason: format!(
                "{target} is outside the folders this run may write in{shown}: {}. The person adds a folder with `bosun agent set {agent} roots=DIR,…`",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    fn inside(&self, resolved: &Path) -> bool {
        let Some(root) = self.roots.iter().find(|r| resolved.starts_with(r)) else {
            return false;
        };
        // A mount point below the root (a bind mount, say) may show anything there.
        !mount_points()
            .iter()
            .any(|m| m.starts_with(root) && m != root && resolved.starts_with(m))
    }
}

/// The files a call writes, when its tool is one of a CLI's file-writing tools (`None` for any
/// other tool); an empty list when the call does not say, which is refused.
pub fn written_paths(cli: CliKind, tool: &str, input: &Value) -> Option<Vec<String>> {
    let field = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter_map(|n| input.get(n).and_then(Value::as_str))
            .map(str::to_string)
            .take(1)
            .collect()
    };
    match (cli, tool) {
        (CliKind::Claude, "Write" | "Edit" | "MultiEdit") => Some(field(&["file_path"])),
        (CliKind::Claude, "NotebookEdit") => Some(field(&["notebook_path", "file_path"])),
        (CliKind::Gemini, "write_file" | "replace") => {
            let mut paths = field(&["file_path", "absolute_path"]);
            paths.extend(listed(input));
            Some(paths)
        }
        (CliKind::Codex, "apply_patch") => {
            let mut paths = listed(input);
            // Codex may ask for a folder to be made writable with the change.
            paths.extend(field(&["grantRoot"]));
            Some(paths)
        }
        (CliKind::Claude | CliKind::Codex | CliKind::Gemini | CliKind::Command, _) => None,
    }
}

/// The paths of a call's `changes` (each change's `path`, and where it moves the file) and of
/// its `paths` list, as the runner passes them for Codex's patches and Gemini's edits.
fn listed(input: &Value) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for change in input
        .get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for at in [
            &change["path"],
            &change["move_path"],
            &change["kind"]["move_path"],
        ] {
            if let Some(p) = at.as_str() {
                paths.push(p.to_string());
            }
        }
    }
    paths.extend(
        input
            .get("paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string),
    );
    paths
}

/// `path` (absolute) as the kernel would find it: each symbolic link followed, `.` dropped and
/// `..` taken after the links before it. What does not exist yet is kept as written.
pub fn resolve(path: &Path) -> PathBuf {
    // The components still to walk, the next one last.
    let mut todo: Vec<OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == "." || part.is_empty() {
            continue;
        }
        if part == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() && links < MAX_LINKS => {
                links += 1;
                let Ok(target) = std::fs::read_link(&next) else {
                    at = next;
                    continue;
                };
                if target.is_absolute() {
                    at = PathBuf::from("/");
                }
                push_components(&mut todo, &target);
            }
            Ok(_) | Err(_) => at = next,
        }
    }
    at
}

/// Pushes the parts of `path` so that the first is popped first.
fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// Why a write to `resolved` (written `absolute`) would touch git metadata, if it would.
fn git_metadata(absolute: &Path, resolved: &Path) -> Option<&'static str> {
    let named_git = |p: &Path| {
        p.components().any(|c| match c {
            Component::Normal(name) => name
                .to_str()
                .is_some_and(|n| n.trim_end_matches(['.', ' ']).eq_ignore_ascii_case(".git")),
            Component::ParentDir
            | Component::CurDir
            | Component::RootDir
            | Component::Prefix(_) => false,
        })
    };
    if named_git(absolute) || named_git(resolved) {
        return Some("a .git directory or file");
    }
    let mut child: Option<&std::ffi::OsStr> = resolved.file_name();
    for dir in resolved.ancestors().skip(1) {
        if is_git_dir(dir) {
            return Some("inside a git directory");
        }
        if dir.join("HEAD").is_file() && dir.join("commondir").is_file() {
            return Some("inside a worktree's git directory");
        }
        // Would this write, which adds `child` to `dir`, make `dir` a git directory?
        if let Some(name) = child.and_then(|c| c.to_str()) {
            let has = |n: &str| n == name || dir.join(n).exists();
            if ["HEAD", "objects", "refs"].contains(&name)
                && has("HEAD")
                && has("objects")
                && has("refs")
            {
                return Some("it would make a git directory");
            }
        }
        child = dir.file_name();
    }
    None
}

/// Whether git would take `dir` as a git directory.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The machine's mount points, from `/proc/self/mountinfo` (none when it cannot be read).
fn mount_points() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| PathBuf::from(unescape_mount(m)))
        .collect()
}

/// mountinfo writes a space, tab, new line and backslash in a path as octal escapes.
fn unescape_mount(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests;
