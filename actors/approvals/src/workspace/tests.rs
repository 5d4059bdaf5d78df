//! The workspace rules on a real file system: roots, links and `..` out of them, and git
//! metadata in every spelling and place.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

struct Tree {
    _dir: tempfile::TempDir,
    base: PathBuf,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in [
            "work/src",
            "notes",
            "outside",
            "repo.git/objects",
            "repo.git/refs",
        ] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("repo.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        Tree { _dir: dir, base }
    }

    fn at(&self, p: &str) -> PathBuf {
        self.base.join(p)
    }

    fn space(&self, unrestricted: bool) -> Workspace {
        Workspace::new(&self.at("work"), &[self.at("notes")], unrestricted)
    }

    /// The rule that refuses a write of `target` from the run's folder, if any.
    fn rule(&self, unrestricted: bool, target: &str) -> Option<Rule> {
        self.space(unrestricted)
            .refuse_write("coder", &self.at("work"), target)
            .map(|r| r.rule)
    }
}

#[test]
fn writes_inside_a_root_run_and_writes_outside_every_root_are_refused() {
    let t = Tree::new();
    for ok in [
        "a.txt",
        "src/new/deep/file.rs",
        "./src/../b.txt",
        &t.at("notes/today.md").display().to_string(),
    ] {
        assert_eq!(t.rule(false, ok), None, "{ok}");
    }
    for out in [
        "../outside/x",
        "src/../../outside/x",
        &t.at("outside/x").display().to_string(),
        "/etc/passwd",
        "../work-evil/x",
    ] {
        assert_eq!(t.rule(false, out), Some(Rule::OutsideWorkspace), "{out}");
    }
    // Unrestricted lifts the roots.
    assert_eq!(t.rule(true, "../outside/x"), None);
}

#[test]
fn the_refusal_names_the_roots_and_how_to_add_one() {
    let t = Tree::new();
    let r = t
        .space(false)
        .refuse_write("coder", &t.at("work"), "../outside/x")
        .unwrap();
    assert!(
        r.reason.contains(&t.at("work").display().to_string()),
        "{}",
        r.reason
    );
    assert!(
        r.reason.contains(&t.at("notes").display().to_string()),
        "{}",
        r.reason
    );
    assert!(
        r.reason.contains("bosun agent set coder roots=DIR,"),
        "{}",
        r.reason
    );
}

#[test]
fn a_link_out_of_a_root_counts_as_outside_dangling_or_not() {
    let t = Tree::new();
    symlink(t.at("outside"), t.at("work/out")).unwrap();
    symlink(t.at("outside/not-yet"), t.at("work/dangling")).unwrap();
    symlink("../outside", t.at("work/rel")).unwrap();
    symlink(t.at("work/src"), t.at("work/inside")).unwrap();
    assert_eq!(t.rule(false, "out/x"), Some(Rule::OutsideWorkspace));
    assert_eq!(t.rule(false, "dangling"), Some(Rule::OutsideWorkspace));
    assert_eq!(t.rule(false, "rel/x"), Some(Rule::OutsideWorkspace));
    assert_eq!(t.rule(false, "inside/x"), None);
    // `..` after a link is taken from where the link leads.
    assert_eq!(t.rule(false, "out/../work/x"), None);
    assert_eq!(
        t.rule(false, "inside/../../outside/x"),
        Some(Rule::OutsideWorkspace)
    );
}

#[test]
fn git_metadata_is_never_written_in_any_spelling_even_unrestricted() {
    let t = Tree::new();
    std::fs::create_dir_all(t.at("work/.git/hooks")).unwrap();
    for target in [
        ".git/config",
        ".git/hooks/pre-commit",
        "./src/../.git/HEAD",
        ".GIT/config",
        "src/vendor/.git/config",
        ".git",
        ".git./config",
    ] {
        for unrestricted in [false, true] {
            assert_eq!(
                t.rule(unrestricted, target),
                Some(Rule::GitMetadata),
                "{target} (unrestricted: {unrestricted})"
            );
        }
    }
    // A bare repository, wherever it is, and a link that leads into one.
    let bare = t.at("repo.git/config").display().to_string();
    assert_eq!(t.rule(true, &bare), Some(Rule::GitMetadata));
    symlink(t.at("repo.git"), t.at("work/sneaky")).unwrap();
    assert_eq!(
        t.rule(false, "sneaky/hooks/pre-commit"),
        Some(Rule::GitMetadata)
    );
    // Names that only look alike are fine.
    assert_eq!(t.rule(false, ".gitignore"), None);
    assert_eq!(t.rule(false, "src/.github/workflows/ci.yml"), None);
}

#[test]
fn a_worktrees_own_git_directory_and_a_git_directory_made_by_writes_are_metadata() {
    let t = Tree::new();
    let gitdir = t.at("outside/main/.git/worktrees/card");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::write(gitdir.join("HEAD"), "ref: refs/heads/x\n").unwrap();
    std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    let plain = t.at("outside/elsewhere");
    std::fs::create_dir_all(plain.join("wt")).unwrap();
    std::fs::write(plain.join("wt/HEAD"), "x").unwrap();
    std::fs::write(plain.join("wt/commondir"), "x").unwrap();
    assert_eq!(
        t.rule(true, &plain.join("wt/index").display().to_string()),
        Some(Rule::GitMetadata)
    );
    // objects/ and refs/ made: HEAD would complete a git directory.
    std::fs::create_dir_all(t.at("work/fake/objects")).unwrap();
    std::fs::create_dir_all(t.at("work/fake/refs")).unwrap();
    assert_eq!(t.rule(false, "fake/HEAD"), Some(Rule::GitMetadata));
    assert_eq!(t.rule(false, "fake/README"), None);
}

#[test]
fn each_clis_file_tools_say_what_they_write() {
    let claude = |tool: &str, input| written_paths(CliKind::Claude, tool, &input);
    assert_eq!(
        claude("Write", json!({"file_path": "/w/a", "content": "x"})),
        Some(vec!["/w/a".to_string()])
    );
    assert_eq!(
        claude("NotebookEdit", json!({"notebook_path": "/w/n.ipynb"})),
        Some(vec!["/w/n.ipynb".to_string()])
    );
    assert_eq!(claude("Edit", json!({})), Some(vec![]));
    assert_eq!(claude("Read", json!({"file_path": "/w/a"})), None);
    assert_eq!(claude("Bash", json!({"command": "touch x"})), None);
    let patch = json!({
        "changes": [
            {"path": "/w/a", "kind": {"type": "add"}},
            {"path": "/w/b", "kind": {"type": "update", "move_path": "/w/c"}}
        ],
        "grantRoot": "/w2"
    });
    assert_eq!(
        written_paths(CliKind::Codex, "apply_patch", &patch),
        Some(vec![
            "/w/a".into(),
            "/w/b".into(),
            "/w/c".into(),
            "/w2".into()
        ])
    );
    // A large patch cut down for the ask keeps its paths.
    let cut = json!({"changes": "(900000 bytes)", "paths": ["/w/a"]});
    assert_eq!(
        written_paths(CliKind::Codex, "apply_patch", &cut),
        Some(vec!["/w/a".into()])
    );
    assert_eq!(
        written_paths(CliKind::Gemini, "write_file", &json!({"file_path": "/w/a"})),
        Some(vec!["/w/a".into()])
    );
    assert_eq!(
        written_paths(CliKind::Gemini, "read_file", &json!({"file_path": "/w/a"})),
        None
    );
}

#[test]
fn resolving_follows_links_as_the_kernel_does() {
    let t = Tree::new();
    symlink("src", t.at("work/s")).unwrap();
    assert_eq!(resolve(&t.at("work/s/x")), t.at("work/src/x"));
    assert_eq!(resolve(&t.at("work/./s/../a")), t.at("work/a"));
    assert_eq!(resolve(Path::new("/")), PathBuf::from("/"));
    // A loop ends.
    symlink("loop", t.at("work/loop")).unwrap();
    let _ = resolve(&t.at("work/loop/x"));
}
