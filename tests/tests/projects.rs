//! Projects and worktrees through the real bosund and real `git`: a project's rules and
//! refusals; cards of one project started at once each in a worktree and branch of their own; a
//! second run of a card in the same worktree; a SIGKILL of the daemon while a worktree is being
//! made leaves one worktree for the card; and cards without a project work as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use bosun_tests::git;
use bosun_tests::{Bosun, wait_for};
use serde_json::Value;

/// A repository on `main` with one commit, an `origin` on GitHub (never fetched), and a
/// post-checkout hook that leaves a mark if anything runs it.
fn repo(b: &Bosun) -> anyhow::Result<PathBuf> {
    let dir = b.scratch().join("web");
    std::fs::create_dir_all(dir.join("src"))?;
    git(&dir, &["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("README"), "hello\n")?;
    git(&dir, &["add", "."])?;
    git(&dir, &["commit", "-qm", "first"])?;
    git(
        &dir,
        &["remote", "add", "origin", "git@github.com:acme/web.git"],
    )?;
    let hook = dir.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().context("hooks")?)?;
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho ran >> {}\n",
            b.scratch().join("hook-ran").display()
        ),
    )?;
    std::process::Command::new("chmod")
        .args(["+x", &hook.display().to_string()])
        .status()?;
    Ok(dir)
}

/// A command agent whose run logs `start|<card line>|<folder>|<branch>`, commits a file of its
/// own, sleeps, and logs `end|<card line>`.
fn add_worker(b: &Bosun, log: &Path, secs: &str) -> anyhow::Result<()> {
    let script = format!(
        "first=$(printf '%s\\n' \"$BOSUN_PROMPT\" | head -n1); \
         echo \"start|$first|$(pwd -P)|$(git rev-parse --abbrev-ref HEAD)\" >> {log}; \
         echo \"$first\" > \"work-$$\" && git add -A && git -c user.name=w -c user.email=w@w commit -qm work; \
         sleep {secs}; echo \"end|$first\" >> {log}",
        log = log.display()
    );
    b.ok(&[
        "agent",
        "add",
        "worker",
        "--cli",
        "command",
        "--cwd",
        &b.scratch().display().to_string(),
        "--",
        "/bin/sh",
        "-c",
        &script,
    ])?;
    // A card's run writes in its worktree (its commit included) and in the agent's roots only:
    // the log's folder is one.
    let logs = log.parent().context("the log's folder")?;
    std::fs::create_dir_all(logs)?;
    b.ok(&[
        "agent",
        "set",
        "worker",
        &format!("roots={}", logs.display()),
    ])?;
    Ok(())
}

/// The `start` lines of the log: (card line, folder, branch).
fn starts(log: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut parts = l.strip_prefix("start|")?.split('|');
            Some((
                parts.next()?.to_string(),
                parts.next()?.to_string(),
                parts.next()?.to_string(),
            ))
        })
        .collect()
}

fn wait_runs_done(b: &Bosun, id: &str, runs: u64) -> anyhow::Result<Value> {
    wait_for("the card's runs to end", Duration::from_secs(30), || {
        let c = b.json(&["board", "card", "show", id])?;
        Ok((c["runs"] == runs && c["run_state"] == "succeeded").then_some(c))
    })
}

/// The worktrees git lists for the repository (its main checkout first).
fn worktrees(repo: &Path) -> anyhow::Result<Vec<String>> {
    Ok(git(repo, &["worktree", "list", "--porcelain"])?
        .lines()
        .filter_map(|l| l.strip_prefix("worktree ").map(str::to_string))
        .collect())
}

#[test]
fn projects_are_added_listed_edited_and_removed_and_refused_in_plain_words() -> anyhow::Result<()> {
    let b = Bosun::new("projects_rules");
    let repo = repo(&b)?;
    let config = std::fs::read(repo.join(".git/config"))?;
    let plain = b.scratch().join("plain");
    std::fs::create_dir_all(&plain)?;
    let s = |p: &Path| p.display().to_string();

    let err = b.fails(&["project", "add", "web", &s(&plain)])?;
    assert!(
        err.contains("is not a git checkout") && err.contains("git clone"),
        "{err}"
    );
    let err = b.fails(&["project", "add", "web app", &s(&repo)])?;
    assert!(err.contains("`web app` is not a project name"), "{err}");
    let err = b.fails(&["project", "add", "web", &s(&repo), "--main-branch", "nope"])?;
    assert!(
        err.contains("there is no branch `nope`") && err.contains("--main-branch"),
        "{err}"
    );

    // From a folder inside the checkout: its top folder is taken.
    let p = b.json(&["project", "add", "web", &s(&repo.join("src"))])?;
    assert_eq!(p["folder"], s(&repo.canonicalize()?));
    assert_eq!(p["main_branch"], "main");
    assert_eq!(p["host"]["kind"], "github");
    assert_eq!(p["host"]["repo"], "acme/web");
    assert_eq!(p["testing"], true);
    assert_eq!(p["lead_may_merge"], false, "off until the person sets it");

    let err = b.fails(&["project", "add", "WEB", &s(&plain)])?;
    assert!(err.contains("there is a project `web` already"), "{err}");
    let err = b.fails(&["project", "add", "other", &s(&repo)])?;
    assert!(err.contains("is project web's folder already"), "{err}");
    assert_eq!(
        b.json(&["project", "list"])?.as_array().map(Vec::len),
        Some(1)
    );

    // Edits and the person's switches.
    let err = b.fails(&["project", "edit", "web", "--github", "not a repo"])?;
    assert!(err.contains("is not a GitHub repository"), "{err}");
    let p = b.json(&[
        "project",
        "edit",
        "web",
        "--name",
        "site",
        "--github",
        "acme/site",
    ])?;
    assert_eq!(
        (p["name"].as_str(), p["host"]["repo"].as_str()),
        (Some("site"), Some("acme/site"))
    );
    // An empty GitHub name reads the host from the `origin` remote again.
    let p = b.json(&["project", "edit", "site", "--github", ""])?;
    assert_eq!(p["host"]["repo"], "acme/web", "{p}");
    let p = b.json(&["project", "edit", "site", "--github", "acme/site"])?;
    assert_eq!(p["host"]["repo"], "acme/site", "{p}");
    let err = b.fails(&["project", "set", "site", "merge=on"])?;
    assert!(err.contains("`merge` is not a project setting"), "{err}");
    let err = b.fails(&["project", "set", "site", "lead-may-merge=maybe"])?;
    assert!(
        err.contains("say lead-may-merge=on or lead-may-merge=off"),
        "{err}"
    );
    let p = b.json(&["project", "set", "site", "lead-may-merge=on", "testing=off"])?;
    assert_eq!(
        (p["lead_may_merge"].as_bool(), p["testing"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(
        b.json(&["project", "show", "site"])?["lead_may_merge"],
        true
    );
    let err = b.fails(&["project", "show", "nowhere"])?;
    assert!(
        err.contains("there is no project `nowhere`; `bosun project list`"),
        "{err}"
    );

    // Cards belong to it; it is not removed while they do.
    let err = b.fails(&["board", "card", "add", "x", "--project", "ghost"])?;
    assert!(err.contains("there is no project `ghost`"), "{err}");
    let c = b.json(&["board", "card", "add", "Fix it", "--project", "site"])?;
    assert_eq!(c["project"], "site");
    let short = c["short_id"].as_str().unwrap_or_default().to_string();
    let err = b.fails(&["project", "remove", "site"])?;
    assert!(
        err.contains(&format!(
            "project site has 1 card ({short}); remove them first"
        )),
        "{err}"
    );
    b.json(&["board", "card", "remove", &short])?;
    let err = b.fails(&["board", "card", "show", &short])?;
    assert!(err.contains("there is no card"), "{err}");
    b.json(&["project", "remove", "site"])?;
    assert_eq!(
        b.json(&["project", "list"])?.as_array().map(Vec::len),
        Some(0)
    );
    assert_eq!(std::fs::read(repo.join(".git/config"))?, config);
    b.finish()
}

#[test]
fn cards_of_one_project_run_at_once_each_in_its_own_worktree_and_run_again_in_it()
-> anyhow::Result<()> {
    let b = Bosun::new("projects_worktrees");
    let repo = repo(&b)?;
    let config = std::fs::read(repo.join(".git/config"))?;
    let main = git(&repo, &["rev-parse", "main"])?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    let log = b.scratch().join("logs/runs.log");
    add_worker(&b, &log, "1.5")?;
    let mut cards = Vec::new();
    for title in ["Fix the login page", "Add a footer"] {
        let c = b.json(&[
            "board",
            "card",
            "add",
            title,
            "--project",
            "web",
            "--assignee",
            "worker",
        ])?;
        cards.push((
            c["id"].as_str().unwrap_or_default().to_string(),
            c["short_id"].as_str().unwrap_or_default().to_string(),
        ));
    }
    for (_, short) in &cards {
        b.json(&["board", "card", "move", short, "To do"])?;
    }
    let mut shown = Vec::new();
    for (_, short) in &cards {
        shown.push(wait_runs_done(&b, short, 1)?);
    }

    // They ran at once, each in its card's worktree, on its card's branch.
    let text = std::fs::read_to_string(&log)?;
    let lines: Vec<&str> = text.lines().collect();
    let first_end = lines.iter().position(|l| l.starts_with("end|"));
    let last_start = lines.iter().rposition(|l| l.starts_with("start|"));
    assert!(last_start < first_end, "the two runs overlapped:\n{text}");
    let root = b.home.join("worktrees").canonicalize()?;
    let by_card: HashMap<String, (String, String)> = starts(&log)
        .into_iter()
        .map(|(line, dir, branch)| (line, (dir, branch)))
        .collect();
    assert_eq!(by_card.len(), 2, "{text}");
    let expected = [
        ("Fix the login page", "fix-the-login-page"),
        ("Add a footer", "add-a-footer"),
    ];
    for (((id, short), (title, slug)), card) in cards.iter().zip(expected).zip(&shown) {
        let (dir, branch) = &by_card[&format!("Card {short}: {title}")];
        assert_eq!(*dir, root.join(id).display().to_string());
        assert_eq!(*branch, format!("bosun/{short}-{slug}"));
        assert_eq!(card["worktree"]["branch"], *branch);
        assert_eq!(card["worktree"]["path"], *dir);
    }
    // Each run's record: its folder, branch, and head at start (main) and end (its commit).
    let runs = b.json(&["ps", "--all"])?;
    let runs = runs.as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let git_part = &r["git"];
        assert_eq!(git_part["head_at_start"], main, "{r:#}");
        let end = git_part["head_at_end"].as_str().unwrap_or_default();
        assert!(!end.is_empty() && end != main, "{r:#}");
        let cwd = r["cwd"].as_str().unwrap_or_default();
        assert_eq!(git(Path::new(cwd), &["rev-parse", "HEAD"])?, end);
        assert_eq!(
            git(Path::new(cwd), &["rev-parse", "--abbrev-ref", "HEAD"])?,
            git_part["branch"].as_str().unwrap_or_default()
        );
    }
    assert_eq!(worktrees(&repo)?.len(), 3);

    // A second run of the first card works in the same worktree, from where the first ended.
    let (id, short) = &cards[0];
    let before = git(&root.join(id), &["rev-parse", "HEAD"])?;
    b.json(&["board", "card", "move", short, "In progress"])?;
    let card = wait_runs_done(&b, short, 2)?;
    let again: Vec<_> = starts(&log)
        .into_iter()
        .filter(|(line, _, _)| line.starts_with(&format!("Card {short}:")))
        .collect();
    assert_eq!(again.len(), 2);
    assert_eq!(again[0].1, again[1].1);
    assert_eq!(again[0].2, again[1].2);
    assert_eq!(
        worktrees(&repo)?.len(),
        3,
        "no second worktree for the card"
    );
    let run = b.json(&["show", card["run"].as_str().unwrap_or_default()])?;
    assert_eq!(run["git"]["head_at_start"], before);

    // No hook of the repository ran, and its config is as it was.
    assert!(!b.scratch().join("hook-ran").exists());
    assert_eq!(std::fs::read(repo.join(".git/config"))?, config);

    // Removing a card removes its worktree, not its branch; changes not committed need --force.
    let (id_b, short_b) = &cards[1];
    std::fs::write(root.join(id_b).join("draft"), "not committed")?;
    let err = b.fails(&["board", "card", "remove", short_b])?;
    assert!(
        err.contains("has changes not committed") && err.contains("--force"),
        "{err}"
    );
    b.json(&["board", "card", "remove", short_b, "--force"])?;
    b.json(&["board", "card", "remove", short])?;
    assert!(!root.join(id).exists() && !root.join(id_b).exists());
    assert_eq!(worktrees(&repo)?.len(), 1);
    let branches = git(&repo, &["branch", "--list", "bosun/*"])?;
    assert_eq!(branches.lines().count(), 2, "{branches}");
    b.finish()
}

#[test]
fn a_daemon_killed_while_making_a_worktree_leaves_one_worktree_for_the_card() -> anyhow::Result<()>
{
    let b = Bosun::new("projects_crash");
    let repo = repo(&b)?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    let log = b.scratch().join("logs/runs.log");
    add_worker(&b, &log, "0")?;
    let c = b.json(&[
        "board",
        "card",
        "add",
        "Crashy",
        "--project",
        "web",
        "--assignee",
        "worker",
    ])?;
    let (id, short) = (
        c["id"].as_str().unwrap_or_default().to_string(),
        c["short_id"].as_str().unwrap_or_default().to_string(),
    );
    b.ok(&["daemon", "stop"])?;
    // The daemon this move starts dies once the worktree is made, before it is recorded.
    let out = b
        .cmd(&["board", "card", "move", &short, "To do"])
        .env("BOSUN_CRASH_AT", "worktree-after-add")
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(
        "the daemon to die at the point",
        Duration::from_secs(20),
        || Ok(b.daemon_pid().is_none().then_some(())),
    )?;
    let root = b.home.join("worktrees").canonicalize()?;
    assert!(
        root.join(&id).is_dir(),
        "the worktree was made before the crash"
    );
    assert!(starts(&log).is_empty(), "no run began before the crash");

    // Something else left in the worktrees folder goes at startup.
    std::fs::create_dir_all(root.join("leftover"))?;
    let card = wait_runs_done(&b, &short, 1)?;
    assert!(!root.join("leftover").exists());
    let listed = worktrees(&repo)?;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[1], root.join(&id).display().to_string());
    assert_eq!(std::fs::read_dir(&root)?.count(), 1);
    let branches = git(&repo, &["branch", "--list", "bosun/*"])?;
    assert_eq!(branches.lines().count(), 1, "{branches}");
    assert_eq!(
        card["worktree"]["path"],
        root.join(&id).display().to_string()
    );
    let ran = starts(&log);
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].1, root.join(&id).display().to_string());

    // Recorded but gone: the next run makes it again in the same place, on the same branch.
    std::fs::remove_dir_all(root.join(&id))?;
    b.json(&["board", "card", "move", &short, "In progress"])?;
    wait_runs_done(&b, &short, 2)?;
    let ran = starts(&log);
    assert_eq!(ran.len(), 2);
    assert_eq!((&ran[1].1, &ran[1].2), (&ran[0].1, &ran[0].2));
    assert_eq!(worktrees(&repo)?.len(), 2);
    b.finish()
}

#[test]
fn cards_without_a_project_work_as_before() -> anyhow::Result<()> {
    let b = Bosun::new("projects_none");
    let log = b.scratch().join("logs/runs.log");
    add_worker(&b, &log, "0")?;
    let c = b.json(&["board", "card", "add", "Plain", "--assignee", "worker"])?;
    let short = c["short_id"].as_str().unwrap_or_default().to_string();
    assert!(
        c.get("project").is_none() && c.get("worktree").is_none(),
        "{c:#}"
    );
    b.json(&["board", "card", "move", &short, "To do"])?;
    // The worker's git commands fail outside a checkout; the run still ends, in its folder.
    let card = wait_runs_done(&b, &short, 1)?;
    let run = b.json(&["show", card["run"].as_str().unwrap_or_default()])?;
    assert_eq!(run["cwd"], b.scratch().display().to_string());
    assert!(run.get("git").is_none(), "{run:#}");
    assert_eq!(
        starts(&log)[0].1,
        b.scratch().canonicalize()?.display().to_string()
    );
    assert!(
        !b.home
            .join("worktrees")
            .join(card["id"].as_str().unwrap_or_default())
            .exists()
    );
    b.finish()
}
