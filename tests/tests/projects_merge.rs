//! Pull requests, QA verdicts and the lead's `merge_pull_request`, end to end: the real bosund,
//! real `git` worktrees, the real `gh` (Debian's) against the suite's own GitHub over HTTPS with a
//! test CA ([`FakeGithub`]), and the real Claude Code for the QA runs and the lead, against the
//! fake model API, which scripts their tool calls.
//!
//! Each of the eight rules has a refusal (which changes nothing: no merge reaches GitHub, the
//! card stays) and a pass: the one merge that goes through passes every rule at once, and the
//! one kept after an outside tool passes rule 7 when the person approves it. GitHub's log shows
//! each merge asked with `--merge` and `--match-head-commit` (`expectedHeadOid`). A SIGKILL of
//! bosund between GitHub's merge and its record merges once, and the pull request check records
//! it; a merge by the person moves the card to Deploy too.
//!
//! Board checks: the lead is started for each card QA passed in Review of a project that lets it
//! merge; it merges what the tool allows, a merge that has to wait is offered again (also after a
//! restart) until the window after QA closes, and failed checks and conflicts go to the person
//! in the board checks' chat, with a notification an attached UI hears. A card the lead was
//! offered and never tried is offered again too; when the window closes on a merge still owed,
//! the person is told once, in the chat, on the card and by a notification.
//!
//! A QA run that outlives a SIGKILL of bosund gives its verdict to the next one: its token's
//! digest (never the token) is in the store, bosun's MCP server listens at the same address, and
//! the verdict counts as any other.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use bosun_tests::git;
use bosun_tests::github::{Check, FakeGithub, Pr};
use bosun_tests::{Bosun, EventWatcher, FakeModel, everything_bin, post_initialize, wait_for};
use serde_json::Value;

/// A repository on `main` with one commit and `origin` at `url`.
fn repo(b: &Bosun, name: &str, url: &str) -> anyhow::Result<PathBuf> {
    let dir = b.scratch().join(name);
    std::fs::create_dir_all(&dir)?;
    git(&dir, &["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("README"), "hello\n")?;
    git(&dir, &["add", "."])?;
    git(&dir, &["commit", "-qm", "first"])?;
    git(&dir, &["remote", "add", "origin", url])?;
    Ok(dir)
}

/// A daemon whose gh talks to `gh`, with the pull request check every `secs`.
fn bosun(test: &str, gh: &FakeGithub, secs: &str) -> Bosun {
    let mut b = Bosun::new(test).with_env("BOSUN_PR_CHECK_SECS", secs);
    for (k, v) in gh.env() {
        b = b.with_env(&k, &v);
    }
    b
}

/// A project `name` on GitHub acme/web (its own checkout), testing on, the lead allowed to
/// merge unless `may_merge` is false.
fn project(b: &Bosun, name: &str, origin: &str, may_merge: bool) -> anyhow::Result<PathBuf> {
    let dir = repo(b, name, origin)?;
    b.ok(&["project", "add", name, &dir.display().to_string()])?;
    if may_merge {
        b.ok(&["project", "set", name, "lead-may-merge=on"])?;
    }
    Ok(dir)
}

/// A command agent `worker` whose run commits a file in the card's worktree.
fn add_worker(b: &Bosun) -> anyhow::Result<()> {
    b.ok(&[
        "agent",
        "add",
        "worker",
        "--cli",
        "command",
        "--cwd",
        &b.scratch().display().to_string(),
        "--",
        "sh",
        "-c",
        "echo work > \"work-$$\" && git add -A && git -c user.name=w -c user.email=w@w commit -qm work",
    ])?;
    Ok(())
}

/// A Claude Code QA agent whose runs give the verdicts `script` asks for.
fn add_qa(b: &Bosun, name: &str, fake: &FakeModel) -> anyhow::Result<()> {
    b.add_claude_agent(name, fake.url(), &["--role", "qa"])?;
    Ok(())
}

/// Hands a worked card to QA (agent `qa`, column Testing): its run calls its verdict tool, which
/// the approval policy lets through (a note on its own card: a reversible write to bosun's own
/// board), and nobody is asked. The card once the run is over.
fn qa(b: &Bosun, id: &str) -> anyhow::Result<Value> {
    b.ok(&[
        "board",
        "card",
        "edit",
        id,
        "--assignee",
        "qa",
        "--move",
        "Testing",
    ])?;
    let c = wait_run_over(b, id, 2)?;
    assert!(
        b.waiting_approvals()?.is_empty(),
        "a QA verdict waits for nobody"
    );
    Ok(c)
}

fn card(b: &Bosun, id: &str) -> anyhow::Result<Value> {
    b.json(&["board", "card", "show", id])
}

/// Adds a card in `column` of `project` assigned to `agent` (if any); its short id.
fn add_card(
    b: &Bosun,
    title: &str,
    project: &str,
    column: &str,
    agent: Option<&str>,
) -> anyhow::Result<String> {
    let mut args = vec![
        "board",
        "card",
        "add",
        title,
        "--project",
        project,
        "--column",
        column,
    ];
    if let Some(a) = agent {
        args.extend(["--assignee", a]);
    }
    let v = b.json(&args)?;
    Ok(v["short_id"].as_str().unwrap_or_default().to_string())
}

/// Waits until the card's last run ended (and its end is on the card).
fn wait_run_over(b: &Bosun, id: &str, runs: u64) -> anyhow::Result<Value> {
    wait_for(
        &format!("card {id}'s run {runs} to end"),
        Duration::from_secs(120),
        || {
            let c = card(b, id)?;
            let over = c["runs"].as_u64() == Some(runs)
                && c["run_state"]
                    .as_str()
                    .is_some_and(|s| !matches!(s, "queued" | "starting" | "running" | "stopping"));
            Ok(over.then_some(c))
        },
    )
}

/// A QA run's verdict on the card: `qa_pass` or `qa_fail` (the run's log when there is none).
fn verdict(b: &Bosun, c: &Value) -> anyhow::Result<String> {
    match c["qa"]["verdict"].as_str() {
        Some(v) => Ok(v.to_string()),
        None => {
            let run = c["run"].as_str().unwrap_or_default();
            bail!(
                "no QA verdict on {c:#}; the QA run's log:\n{}",
                String::from_utf8_lossy(&b.logs(run)?)
            )
        }
    }
}

/// Moves a card to a column.
fn move_to(b: &Bosun, id: &str, column: &str) -> anyhow::Result<()> {
    b.ok(&["board", "card", "edit", id, "--move", column])?;
    Ok(())
}

fn branch_of(c: &Value) -> String {
    c["worktree"]["branch"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The tool results the lead got, in order.
fn results(fake: &FakeModel) -> Vec<String> {
    fake.turns()
        .iter()
        .filter_map(|t| t["tool_result"].as_str().map(str::to_string))
        .collect()
}

fn merge_call(card: &str) -> String {
    format!(r#"tool:bosun/merge_pull_request:{{"card":"{card}"}};"#)
}

fn activity(c: &Value) -> Vec<String> {
    c["activity"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["what"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn gh_talks_to_the_fake_github_with_the_calls_bosun_makes() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let head = "1111111111111111111111111111111111111111";
    gh.with_pr(Pr::open(7, "bosun/abc-x", head));
    // gh keeps answers in a cache under $TMPDIR for a day: one of this test's own, as bosund's
    // gh has, so no answer of another test (or another day) decides what gh asks.
    let tmp = tempfile::tempdir()?;
    let run = |args: &[&str]| -> anyhow::Result<std::process::Output> {
        let mut c = Command::new("gh");
        c.args(args)
            .env("TMPDIR", tmp.path())
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN");
        for (k, v) in gh.env() {
            c.env(k, v);
        }
        Ok(c.output()?)
    };
    let out = run(&[
        "pr",
        "list",
        "--head",
        "bosun/abc-x",
        "--repo",
        "acme/web",
        "--state",
        "all",
        "--json",
        "number,state,url",
    ])?;
    let listed: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(listed[0]["number"], 7, "{listed}");
    let out = run(&[
        "pr",
        "merge",
        "7",
        "--repo",
        "acme/web",
        "--merge",
        "--match-head-commit",
        head,
    ])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merges = gh.merges();
    assert_eq!(merges.len(), 1);
    assert_eq!(merges[0]["merge_method"], "MERGE");
    assert_eq!(merges[0]["expected_head_oid"], head);
    // Everything gh asked went to GraphQL.
    assert!(gh.requests().iter().all(|r| r["path"] == "/api/graphql"));
    Ok(())
}

#[test]
fn the_rules_each_refuse_and_one_merge_passes_them_all() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("merge_rules", &gh, "300");
    let origin = "git@github.com:acme/web.git";
    project(&b, "web", origin, true)?;
    project(&b, "closed", origin, false)?;
    project(&b, "untested", origin, true)?;
    b.ok(&["project", "set", "untested", "testing=off"])?;
    project(&b, "released", origin, true)?;
    project(&b, "elsewhere", "git@gitlab.com:acme/web.git", true)?;
    add_worker(&b)?;
    b.ok(&[
        "agent",
        "add",
        "sleeper",
        "--cli",
        "command",
        "--cwd",
        &b.scratch().display().to_string(),
        "--",
        "sleep",
        "600",
    ])?;
    b.ok(&[
        "agent",
        "add",
        "ops",
        "--role",
        "devops",
        "--cli",
        "command",
        "--cwd",
        &b.scratch().display().to_string(),
        "--",
        "true",
    ])?;
    b.ok(&["board", "column", "add", "Deploy"])?;
    let qa_fake = FakeModel::start(
        "anthropic",
        r#"tool:bosun/qa_pass:{"summary":"all good"};text:Passed.;tool:bosun/qa_fail:{"summary":"the login page is broken"};text:Failed."#,
    )?;
    add_qa(&b, "qa", &qa_fake)?;
    b.ok(&["board", "limit", "1"])?;

    // The card that will be merged: worked on, then passed by QA.
    let main = add_card(&b, "Main card", "web", "To do", Some("worker"))?;
    wait_run_over(&b, &main, 1)?;
    let c = qa(&b, &main)?;
    assert_eq!(verdict(&b, &c)?, "qa_pass");
    let qa_head = c["qa"]["head"].as_str().unwrap_or_default().to_string();
    let wt = PathBuf::from(c["worktree"]["path"].as_str().unwrap_or_default());
    assert_eq!(git(&wt, &["rev-parse", "HEAD"])?, qa_head);
    assert!(
        activity(&c)
            .iter()
            .any(|a| a.starts_with("QA passed commit") && a.ends_with("all good")),
        "{c:#}"
    );
    // The QA run was offered only its verdict tools of bosun's.
    let offered: Vec<String> = qa_fake.turns()[0]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let bosun_tools: Vec<&String> = offered
        .iter()
        .filter(|t| t.starts_with("mcp__bosun__"))
        .collect();
    assert_eq!(
        bosun_tools,
        ["mcp__bosun__qa_fail", "mcp__bosun__qa_pass"],
        "{offered:?}"
    );
    move_to(&b, &main, "Review")?;
    let main_branch = branch_of(&c);
    gh.with_pr(Pr::open(1, &main_branch, &qa_head));

    // A card QA failed.
    let failed = add_card(&b, "Failed card", "web", "To do", Some("worker"))?;
    wait_run_over(&b, &failed, 1)?;
    let c = qa(&b, &failed)?;
    assert_eq!(verdict(&b, &c)?, "qa_fail");
    move_to(&b, &failed, "Review")?;
    gh.with_pr(Pr::open(
        2,
        &branch_of(&c),
        c["qa"]["head"].as_str().unwrap_or_default(),
    ));

    // Cards with a branch (a worker's run) and no QA verdict, one per state of their pull
    // request.
    let mut worked = Vec::new();
    for title in [
        "No verdict",
        "Draft",
        "Fork",
        "Other base",
        "Conflicts",
        "Unknown",
        "No PR",
        "Blocked",
    ] {
        let id = add_card(&b, title, "web", "To do", Some("worker"))?;
        worked.push(id);
    }
    for id in &worked {
        let c = wait_run_over(&b, id, 1)?;
        move_to(&b, id, "Review")?;
        let head = git(
            &PathBuf::from(c["worktree"]["path"].as_str().unwrap_or_default()),
            &["rev-parse", "HEAD"],
        )?;
        let n = 10 + worked.iter().position(|w| w == id).unwrap_or(0) as u64;
        let mut pr = Pr::open(n, &branch_of(&c), &head);
        match c["title"].as_str().unwrap_or_default() {
            "Draft" => pr.draft = true,
            "Fork" => pr.fork = true,
            "Other base" => pr.base_ref = "develop".into(),
            "Conflicts" => pr.mergeable = "CONFLICTING".into(),
            "Unknown" => pr.mergeable = "UNKNOWN".into(),
            "Blocked" => pr.merge_state = "BLOCKED".into(),
            "No PR" => continue,
            _ => {}
        }
        gh.with_pr(pr);
    }
    let [
        no_verdict,
        draft,
        fork,
        base,
        conflicts,
        unknown,
        no_pr,
        blocked,
    ] = &worked[..]
    else {
        bail!("eight cards");
    };

    // Cards that fail the rules before the pull request.
    let closed = add_card(&b, "Switch off", "closed", "Review", None)?;
    let backlog = add_card(&b, "In Backlog", "web", "Backlog", None)?;
    let held = add_card(&b, "Held", "web", "Review", None)?;
    b.ok(&[
        "board",
        "card",
        "edit",
        &held,
        "--hold",
        "waiting for the designer",
    ])?;
    let busy = add_card(&b, "Busy", "web", "In progress", Some("sleeper"))?;
    wait_for("the busy card's run", Duration::from_secs(30), || {
        Ok((card(&b, &busy)?["run_state"] == "running").then_some(()))
    })?;
    move_to(&b, &busy, "Review")?;
    let untested = add_card(&b, "Untested", "untested", "Review", None)?;
    let released = add_card(&b, "Waits for the release", "released", "Review", None)?;
    add_card(&b, "Release 1.2", "released", "Deploy", Some("ops"))?;
    let elsewhere = add_card(&b, "On GitLab", "elsewhere", "Review", None)?;

    let cases: Vec<(&str, &str)> = vec![
        (
            &closed,
            "merge_pull_request refused: project closed does not let the lead merge; only the person switches that on (`bosun project set closed lead-may-merge=on`)",
        ),
        (
            &backlog,
            "is in Backlog, not Review; the lead merges only cards in Review",
        ),
        (
            &held,
            "is on hold (waiting for the designer); the person takes it off hold first",
        ),
        (&busy, "an agent is working on card"),
        (&untested, "project untested has testing off, so card"),
        (
            &released,
            "a release is under way in project released: card",
        ),
        (
            &elsewhere,
            "project elsewhere is hosted on gitlab.com, not GitHub; bosun merges only on GitHub",
        ),
        (
            no_pr,
            "has no pull request on GitHub acme/web; open one first",
        ),
        (draft, "pull request #11 is a draft"),
        (fork, "pull request #12 comes from someone-else:"),
        (
            base,
            "pull request #13 goes into develop, not into project web's main branch main",
        ),
        (
            conflicts,
            "GitHub says pull request #14 has conflicts with main",
        ),
        (
            unknown,
            "GitHub is still working out whether pull request #15 can be merged",
        ),
        (blocked, "GitHub says a rule blocks pull request #17"),
        (no_verdict, "has no QA verdict; a QA run passes it first"),
        (&failed, "latest QA verdict is qa_fail"),
    ];
    let mut script: String = cases.iter().map(|(c, _)| merge_call(c)).collect();
    script.push_str("text:Refused.;");
    // The main card, one answer per state of its pull request, then the merge.
    for _ in 0..5 {
        script.push_str(&merge_call(&main));
        script.push_str("text:Answered.;");
    }
    let lead = FakeModel::start("anthropic", &script)?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let before: Vec<Value> = cases
        .iter()
        .map(|(c, _)| card(&b, c))
        .collect::<anyhow::Result<_>>()?;
    b.ok(&["chat", "send", &chat, "merge what you can"])?;
    let got = results(&lead);
    assert_eq!(got.len(), cases.len(), "{got:#?}");
    for ((id, want), got) in cases.iter().zip(&got) {
        assert!(
            got.contains(want),
            "card {id}: wanted `{want}`, got `{got}`"
        );
        assert!(got.starts_with("merge_pull_request refused: "), "{got}");
    }
    // Nothing changed: no merge reached GitHub, every card is as it was.
    assert!(gh.merges().is_empty(), "{:#?}", gh.merges());
    for ((id, _), was) in cases.iter().zip(&before) {
        let now = card(&b, id)?;
        assert_eq!(now["column"], was["column"], "{id}");
        assert_eq!(now["activity"], was["activity"], "{id}");
    }

    // Rule 3: something pushed after QA.
    gh.change(1, |p| {
        p.head_oid = "2222222222222222222222222222222222222222".into()
    });
    b.ok(&["chat", "send", &chat, "again"])?;
    let last = results(&lead).pop().unwrap_or_default();
    assert!(
        last.contains("something was pushed after QA, so QA runs again"),
        "{last}"
    );
    gh.change(1, |p| p.head_oid = qa_head.clone());
    // Rule 5: running checks wait, failed and missing ones refuse.
    for (checks, want) in [
        (
            vec![Check::done("build", "SUCCESS"), Check::running("e2e")],
            "checks are still running on pull request #1 (e2e); wait for them and try again",
        ),
        (
            vec![Check::done("build", "FAILURE"), Check::running("e2e")],
            "checks failed on pull request #1: build (failure)",
        ),
        (vec![], "pull request #1 has no checks"),
    ] {
        gh.change(1, |p| p.checks = checks);
        b.ok(&["chat", "send", &chat, "again"])?;
        let last = results(&lead).pop().unwrap_or_default();
        assert!(last.contains(want), "wanted `{want}`, got `{last}`");
    }
    assert!(gh.merges().is_empty(), "{:#?}", gh.merges());
    assert_eq!(card(&b, &main)?["column"], "Review");

    // Every rule holds: success, skipped and neutral checks pass.
    gh.change(1, |p| {
        p.checks = vec![
            Check::done("build", "SUCCESS"),
            Check::done("docs", "SKIPPED"),
            Check::done("lint", "NEUTRAL"),
        ]
    });
    b.ok(&["chat", "send", &chat, "now"])?;
    let last = results(&lead).pop().unwrap_or_default();
    assert!(
        last.starts_with("The lead merged pull request #1"),
        "{last}"
    );
    let merges = gh.merges();
    assert_eq!(merges.len(), 1, "{merges:#?}");
    assert_eq!(merges[0]["pull_request"], 1);
    assert_eq!(merges[0]["merge_method"], "MERGE");
    assert_eq!(merges[0]["expected_head_oid"], qa_head.as_str());
    assert_eq!(gh.pr(1).map(|p| p.state), Some("MERGED".into()));
    // The card: the lead's comment, moved to Deploy by the pull request check, its worktree gone.
    let c = card(&b, &main)?;
    assert_eq!(c["column"], "Deploy", "{c:#}");
    assert!(c["worktree"].is_null(), "{c:#}");
    assert!(!wt.exists());
    let lines = activity(&c);
    assert!(
        lines.iter().any(
            |l| l.starts_with("comment: The lead merged pull request #1")
                && l.contains(&qa_head)
                && l.contains("build, docs, lint")
        ),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l == "merged by the lead"),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("pull request #1 was merged: moved from Review to Deploy")),
        "{lines:#?}"
    );

    b.ok(&["stop", card(&b, &busy)?["run"].as_str().unwrap_or_default()])?;
    b.finish()
}

#[test]
fn after_an_outside_tool_the_merge_waits_and_approving_checks_every_rule() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("merge_outside", &gh, "300");
    project(&b, "web", "https://github.com/acme/web.git", true)?;
    add_worker(&b)?;
    let qa_fake = FakeModel::start("anthropic", r#"tool:bosun/qa_pass:{};text:Passed."#)?;
    add_qa(&b, "qa", &qa_fake)?;
    let id = add_card(&b, "Outside", "web", "To do", Some("worker"))?;
    wait_run_over(&b, &id, 1)?;
    let c = qa(&b, &id)?;
    assert_eq!(verdict(&b, &c)?, "qa_pass");
    let head = c["qa"]["head"].as_str().unwrap_or_default().to_string();
    move_to(&b, &id, "Review")?;
    gh.with_pr(Pr::open(5, &branch_of(&c), &head));

    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    let ask = format!(
        r#"tool:everything/echo:{{"message":"hi"}};{}text:Asked.;"#,
        merge_call(&id)
    );
    let lead = FakeModel::start("anthropic", &format!("{ask}{ask}"))?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&["chat", "send", &chat, "echo, then merge"])?;
    // Rule 7: kept for the person; nothing merged.
    assert!(results(&lead).iter().any(|r| {
        r.contains("merge_pull_request wasn't run: this answer used mcp__everything__echo")
    }));
    assert!(gh.merges().is_empty());
    let waiting = b.json(&["inbox"])?;
    assert_eq!(waiting[0]["tool"], "merge_pull_request", "{waiting:#}");
    assert_eq!(
        waiting[0]["line"],
        format!("Merge the pull request of card {id}")
    );
    let action = waiting[0]["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // Approving checks every rule again: a check still running refuses, and nothing merges.
    gh.change(5, |p| p.checks.push(Check::running("e2e")));
    let out = b.output(&["approve", &action, "--json"])?;
    assert!(!out.status.success());
    let done: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(done[0]["state"], "failed", "{done:#}");
    assert!(
        done[0]["result"]
            .as_str()
            .is_some_and(|r| r.contains("checks are still running on pull request #5")),
        "{done:#}"
    );
    assert!(gh.merges().is_empty());
    assert_eq!(card(&b, &id)?["column"], "Review");

    // Kept again; with the checks green, the person's Approve merges (every rule holds).
    gh.change(5, |p| p.checks = vec![Check::done("build", "SUCCESS")]);
    b.ok(&["chat", "send", &chat, "echo, then merge again"])?;
    let waiting = b.json(&["inbox"])?;
    let action = waiting[0]["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let done = b.json(&["approve", &action])?;
    assert_eq!(done[0]["state"], "approved", "{done:#}");
    assert!(
        done[0]["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("The lead merged pull request #5")),
        "{done:#}"
    );
    assert_eq!(gh.merges().len(), 1);
    assert_eq!(gh.merges()[0]["expected_head_oid"], head.as_str());
    assert_eq!(gh.merges()[0]["merge_method"], "MERGE");
    assert_eq!(card(&b, &id)?["column"], "Deploy");
    b.finish()
}

#[test]
fn a_crash_between_the_merge_and_its_record_merges_once_and_the_check_records_it()
-> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("merge_crash", &gh, "300");
    project(&b, "web", "git@github.com:acme/web.git", true)?;
    add_worker(&b)?;
    let qa_fake = FakeModel::start("anthropic", r#"tool:bosun/qa_pass:{};text:Passed."#)?;
    add_qa(&b, "qa", &qa_fake)?;
    let id = add_card(&b, "Crash", "web", "To do", Some("worker"))?;
    wait_run_over(&b, &id, 1)?;
    let c = qa(&b, &id)?;
    assert_eq!(verdict(&b, &c)?, "qa_pass");
    let head = c["qa"]["head"].as_str().unwrap_or_default().to_string();
    move_to(&b, &id, "Review")?;
    gh.with_pr(Pr::open(9, &branch_of(&c), &head));
    let lead = FakeModel::start("anthropic", &format!("{}text:Merged.", merge_call(&id)))?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // The daemon that answers dies right after GitHub merged, before the merge is recorded.
    // The merge is the person's chat's, or the board check's: it looks soon after bosund
    // starts, finds this card (in Review, QA passed, the lead may merge) and starts the lead in
    // a chat of its own, which may reach the fake model first. Either way: one merge, cut off
    // before its record.
    b.ok(&["daemon", "stop"])?;
    let out = b
        .cmd(&["chat", "send", &chat, "merge"])
        .env("BOSUN_CRASH_AT", "merge-after-gh")
        .output()?;
    wait_for(
        "the daemon to die after GitHub merged",
        Duration::from_secs(60),
        || Ok(b.daemon_pid().is_none().then_some(())),
    )
    .with_context(|| {
        format!(
            "the chat said {:?}; the lead's model's turns: {:#?}; bosund.log: {}",
            String::from_utf8_lossy(&out.stdout),
            lead.turns(),
            b.daemon_log()
        )
    })?;
    assert_eq!(gh.merges().len(), 1);

    // The next daemon's pull request check finds the merge and records it; nothing merges
    // twice.
    let c = wait_for("the merge recorded", Duration::from_secs(60), || {
        let c = card(&b, &id)?;
        Ok((c["column"] == "Deploy").then_some(c))
    })?;
    let lines = activity(&c);
    assert!(
        lines.iter().any(
            |l| l.starts_with("comment: The lead merged pull request #9") && l.contains(&head)
        ),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("merged by the lead (found by the pull request check")),
        "{lines:#?}"
    );
    assert!(c["worktree"].is_null());
    assert_eq!(gh.merges().len(), 1);
    wait_for("the lead's answer to end", Duration::from_secs(60), || {
        Ok(b.json(&["chat", "show", &chat])?["answering"]
            .is_null()
            .then_some(()))
    })?;
    assert_eq!(gh.merges().len(), 1);
    b.finish()
}

#[test]
fn a_merge_by_the_person_moves_the_card_to_deploy_and_removes_its_worktree() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("merge_person", &gh, "1");
    project(&b, "web", "git@github.com:acme/web.git", false)?;
    add_worker(&b)?;
    let id = add_card(&b, "By hand", "web", "To do", Some("worker"))?;
    let c = wait_run_over(&b, &id, 1)?;
    let wt = PathBuf::from(c["worktree"]["path"].as_str().unwrap_or_default());
    move_to(&b, &id, "Review")?;
    let mut pr = Pr::open(
        3,
        &branch_of(&c),
        "3333333333333333333333333333333333333333",
    );
    gh.with_pr(pr.clone());
    // Two rounds of the pull request check ask GitHub after the pull request is there: the
    // first saw it open and was over before the second began.
    let asked = list_queries(&gh);
    wait_for("two pull request checks", Duration::from_secs(30), || {
        Ok((list_queries(&gh) >= asked + 2).then_some(()))
    })?;
    assert_eq!(
        card(&b, &id)?["column"],
        "Review",
        "an open pull request leaves the card"
    );
    pr.state = "MERGED".into();
    gh.with_pr(pr);
    let c = wait_for("the card in Deploy", Duration::from_secs(30), || {
        let c = card(&b, &id)?;
        Ok((c["column"] == "Deploy").then_some(c))
    })?;
    assert!(c["worktree"].is_null(), "{c:#}");
    assert!(!wt.exists());
    assert!(gh.merges().is_empty(), "bosun merged nothing");
    // The board got its Deploy column, after Review.
    let cols: Vec<String> = b.json(&["board"])?["columns"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let review = cols.iter().position(|c| c == "Review");
    assert_eq!(
        cols.iter().position(|c| c == "Deploy"),
        review.map(|r| r + 1),
        "{cols:?}"
    );
    b.finish()
}

#[test]
fn update_checkout_fast_forwards_and_stashes_only_when_asked() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("update_checkout", &gh, "300");
    // origin: a bare repository on this machine, one commit ahead of the checkout.
    let origin = b.scratch().join("origin.git");
    let seed = repo(&b, "seed", "/dev/null")?;
    git(
        &seed,
        &["clone", "-q", "--bare", ".", &origin.display().to_string()],
    )?;
    let dir = b.scratch().join("web");
    git(
        &b.scratch(),
        &["clone", "-q", &origin.display().to_string(), "web"],
    )?;
    std::fs::write(seed.join("NEW"), "new\n")?;
    git(&seed, &["add", "."])?;
    git(&seed, &["commit", "-qm", "second"])?;
    git(
        &seed,
        &["push", "-q", &origin.display().to_string(), "main"],
    )?;
    let target = git(&seed, &["rev-parse", "HEAD"])?;
    b.ok(&["project", "add", "web", &dir.display().to_string()])?;
    std::fs::write(dir.join("README"), "changed\n")?;

    let lead = FakeModel::start(
        "anthropic",
        concat!(
            r#"tool:bosun/update_checkout:{"project":"web"};"#,
            r#"tool:bosun/update_checkout:{"project":"web","stash":true};"#,
            "text:Done."
        ),
    )?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    let chat = b.json(&["chat", "new"])?["short_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&["chat", "send", &chat, "update the checkout"])?;
    let got = results(&lead);
    assert!(
        got[0].contains("update_checkout refused: project web's checkout")
            && got[0].contains("has changes not committed"),
        "{got:#?}"
    );
    assert!(
        got[1].starts_with("Stashed the checkout's changes")
            && got[1].contains("Brought project web's checkout"),
        "{got:#?}"
    );
    assert_eq!(git(&dir, &["rev-parse", "HEAD"])?, target);
    assert_eq!(std::fs::read_to_string(dir.join("README"))?, "hello\n");
    assert!(git(&dir, &["stash", "list"])?.contains("bosun: before update_checkout"));
    b.finish()
}

/// The board checks' chat, once there is one.
fn checks_chat(b: &Bosun) -> anyhow::Result<Option<String>> {
    let chats = b.json(&["chat", "list"])?;
    Ok(chats.as_array().and_then(|a| {
        a.iter()
            .find(|c| c["board_checks"] == true)
            .and_then(|c| c["short_id"].as_str().map(str::to_string))
    }))
}

/// The chat's messages as (kind, text), once the lead's answer there is over.
fn messages_when_done(
    b: &Bosun,
    chat: &str,
    lead_texts: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    wait_for(
        &format!("{lead_texts} answers of the lead in chat {chat}"),
        Duration::from_secs(120),
        || {
            let c = b.json(&["chat", "show", chat])?;
            let msgs: Vec<(String, String)> = c["messages"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|m| {
                            (
                                m["kind"].as_str().unwrap_or_default().to_string(),
                                m["text"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let answers = msgs.iter().filter(|(k, _)| k == "lead").count();
            Ok((answers >= lead_texts && c["answering"].is_null()).then_some(msgs))
        },
    )
}

/// How many times the fake GitHub was asked for the pull requests of a branch (once per card
/// and round of the pull request check).
fn list_queries(gh: &FakeGithub) -> usize {
    gh.requests()
        .iter()
        .filter(|r| {
            r["body"]["query"]
                .as_str()
                .is_some_and(|q| q.contains("pullRequests("))
        })
        .count()
}

/// Stops the daemon and starts it again (`env`: for the new one), which makes a board check.
fn restart(b: &Bosun, env: &[(&str, &str)]) -> anyhow::Result<()> {
    b.ok(&["daemon", "stop"])?;
    let mut cmd = b.cmd(&["board"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        bail!(
            "bosund did not start again: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The chat's board check notes.
fn checks_in(msgs: &[(String, String)]) -> Vec<String> {
    msgs.iter()
        .filter(|(k, t)| k == "note" && t.starts_with("Board check"))
        .map(|(_, t)| t.clone())
        .collect()
}

#[test]
fn board_checks_merge_what_qa_passed_offer_a_waiting_merge_again_and_tell_the_person_the_rest()
-> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    // A board check at each start of bosund, and (in this test) no other.
    let b = bosun("merge_checks", &gh, "300").with_env("BOSUN_BOARD_CHECK_SECS", "3600");
    project(&b, "web", "git@github.com:acme/web.git", true)?;
    project(&b, "closed", "git@github.com:acme/web.git", false)?;
    add_worker(&b)?;
    let qa_fake = FakeModel::start(
        "anthropic",
        &r#"tool:bosun/qa_pass:{"summary":"fine"};text:Passed.;"#.repeat(5),
    )?;
    add_qa(&b, "qa", &qa_fake)?;
    b.ok(&["board", "limit", "1"])?;
    // Cards worked on and passed by QA, in Review, each with a pull request: green checks, a
    // check still running, a failed check, conflicts; and one in a project that does not let
    // the lead merge.
    let mut ids = Vec::new();
    for (n, (title, proj)) in [
        ("Green", "web"),
        ("Running", "web"),
        ("Failed", "web"),
        ("Conflicts", "web"),
        ("Closed", "closed"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = add_card(&b, title, proj, "To do", Some("worker"))?;
        wait_run_over(&b, &id, 1)?;
        let c = qa(&b, &id)?;
        assert_eq!(verdict(&b, &c)?, "qa_pass");
        move_to(&b, &id, "Review")?;
        let mut pr = Pr::open(
            20 + n as u64,
            &branch_of(&c),
            c["qa"]["head"].as_str().unwrap_or_default(),
        );
        match title {
            "Running" => pr.checks.push(Check::running("e2e")),
            "Failed" => pr.checks = vec![Check::done("build", "FAILURE")],
            "Conflicts" => pr.mergeable = "CONFLICTING".into(),
            _ => {}
        }
        gh.with_pr(pr);
        ids.push(id);
    }
    let [green, running, failed, conflicts, closed] = &ids[..] else {
        bail!("five cards");
    };
    let script = format!(
        "{}{}{}{}text:Merged Green, Running waits, Failed and Conflicts need you.;{}text:Running still waits.;{}text:Merged Running.;",
        merge_call(green),
        merge_call(running),
        merge_call(failed),
        merge_call(conflicts),
        merge_call(running),
        merge_call(running),
    );
    let lead = FakeModel::start("anthropic", &script)?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    // The lead has an outside server and web search on: a board check's answer gets neither.
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    b.ok(&["mcp", "tools", "everything"])?;
    b.ok(&["agent", "set", "lead", "mcp.everything=on", "web.search=on"])?;
    assert!(checks_chat(&b)?.is_none(), "no check yet");

    // The first check: every card QA passed where the lead may merge is offered.
    restart(&b, &[])?;
    let watcher = EventWatcher::start(&b)?;
    let chat = wait_for("the board checks' chat", Duration::from_secs(60), || {
        checks_chat(&b)
    })?;
    let msgs = messages_when_done(&b, &chat, 1)?;
    let checks = checks_in(&msgs);
    assert_eq!(checks.len(), 1, "{msgs:#?}");
    assert!(
        checks[0].starts_with("Board check: offered to the lead for merging"),
        "{msgs:#?}"
    );
    for id in [green, running, failed, conflicts] {
        assert!(checks[0].contains(&format!("card {id}")), "{msgs:#?}");
    }
    assert!(!checks[0].contains(closed.as_str()), "{msgs:#?}");
    assert!(
        msgs.contains(&(
            "lead".to_string(),
            "Merged Green, Running waits, Failed and Conflicts need you.".to_string()
        )),
        "{msgs:#?}"
    );
    let got = results(&lead);
    assert!(
        got[0].starts_with("The lead merged pull request #20"),
        "{got:#?}"
    );
    // The check's answer used bosun's own tools only: no outside server, no web search.
    let runs = b.json(&["ps", "--all"])?;
    let answer = runs
        .as_array()
        .and_then(|r| r.iter().find(|r| r["agent"]["agent_name"] == "lead"))
        .context("the lead's answer run")?;
    let servers = answer["agent"]["servers"].to_string();
    assert!(!servers.contains("everything"), "{servers}");
    // bosun's own lines of a log go to stderr.
    let out = b.output(&["logs", answer["id"].as_str().unwrap_or_default()])?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        log.contains("a board check's answer: only bosun's own tools"),
        "{log}"
    );
    assert!(
        got[1].contains("checks are still running on pull request #21"),
        "{got:#?}"
    );
    // Failed checks and conflicts go to the person, in the chat.
    let notes: Vec<&String> = msgs
        .iter()
        .filter(|(k, t)| k == "note" && t.contains("needs you"))
        .map(|(_, t)| t)
        .collect();
    assert_eq!(notes.len(), 2, "{msgs:#?}");
    assert!(
        notes.iter().any(
            |t| t.starts_with(&format!("Card {failed} (Failed) needs you"))
                && t.contains("Checks failed on pull request #22: build (failure)")
        ),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(
            |t| t.starts_with(&format!("Card {conflicts} (Conflicts) needs you"))
                && t.contains("pull request #23 has conflicts with main")
        ),
        "{notes:#?}"
    );
    // Merged once; the card moved to Deploy.
    assert_eq!(gh.merges().len(), 1, "{:#?}", gh.merges());
    assert_eq!(gh.merges()[0]["pull_request"], 20);
    let c = card(&b, green)?;
    assert_eq!(c["column"], "Deploy", "{c:#}");
    assert!(
        activity(&c)
            .iter()
            .any(|l| l.starts_with("offered to the lead by a board check")),
        "{c:#}"
    );
    // The attached UI heard the merge, and the two for the person.
    let heard = wait_for("three notifications", Duration::from_secs(30), || {
        let h = watcher.of(&["notification"]);
        Ok((h.len() >= 3).then_some(h))
    })?;
    assert_eq!(heard[0]["event"], "notification");
    assert_eq!(heard[0]["kind"], "merged", "{heard:#?}");
    assert!(
        heard[0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!(
                "The lead merged pull request #20 of card {green} (Green)"
            ))),
        "{heard:#?}"
    );
    let for_person: Vec<&Value> = heard.iter().filter(|n| n["kind"] == "needs_you").collect();
    assert_eq!(for_person.len(), 2, "{heard:#?}");
    assert!(
        for_person
            .iter()
            .all(|n| n["chat"].as_str().is_some_and(|c| c.starts_with(&chat))),
        "{heard:#?}"
    );

    // The next check offers the waiting merge again, and only it; it still waits.
    restart(&b, &[])?;
    let msgs = messages_when_done(&b, &chat, 2)?;
    let checks = checks_in(&msgs);
    assert_eq!(checks.len(), 2, "{msgs:#?}");
    assert!(
        checks[1].contains(&format!("card {running}")) && checks[1].contains("offered again"),
        "{checks:#?}"
    );
    for id in [green, failed, conflicts, closed] {
        assert!(!checks[1].contains(&format!("card {id}")), "{checks:#?}");
    }
    let got = results(&lead);
    assert!(
        got.get(4)
            .is_some_and(|r| r.contains("checks are still running on pull request #21")),
        "{got:#?}"
    );

    // Once the window after QA has closed (1 s here, three hours by default), no check offers it.
    let turns = lead.turns().len();
    let found_nothing = "a board check found nothing to offer the lead";
    let before = b.daemon_log().matches(found_nothing).count();
    restart(&b, &[("BOSUN_MERGE_WAIT_SECS", "1")])?;
    wait_for(
        "the restarted bosund's board check",
        Duration::from_secs(30),
        || Ok((b.daemon_log().matches(found_nothing).count() > before).then_some(())),
    )?;
    assert_eq!(lead.turns().len(), turns, "the lead was not started again");
    let msgs = messages_when_done(&b, &chat, 2)?;
    assert_eq!(checks_in(&msgs).len(), 2);
    // The person is told that the window closed on the waiting merge: in the chat, and on the
    // card.
    let closed: Vec<&String> = msgs
        .iter()
        .filter(|(k, t)| k == "note" && t.contains("the merge window closed"))
        .map(|(_, t)| t)
        .collect();
    assert_eq!(closed.len(), 1, "{msgs:#?}");
    assert!(
        closed[0].starts_with(&format!(
            "Card {running} (Running) needs you: the merge window closed without a merge: its merge had to wait"
        )) && closed[0].contains("Merge its pull request yourself"),
        "{closed:#?}"
    );
    assert!(
        activity(&card(&b, running)?).iter().any(
            |l| l.starts_with("The merge window closed without a merge: its merge had to wait")
        ),
        "{:#?}",
        activity(&card(&b, running)?)
    );

    // Within the window (made longer again) it is offered again, after any restart; its checks
    // are green now, and the lead merges it.
    gh.change(21, |p| p.checks = vec![Check::done("build", "SUCCESS")]);
    restart(&b, &[])?;
    let c = wait_for("the waiting card merged", Duration::from_secs(120), || {
        let c = card(&b, running)?;
        Ok((c["column"] == "Deploy").then_some(c))
    })?;
    assert!(
        activity(&c).iter().any(|l| l == "merged by the lead"),
        "{c:#}"
    );
    assert_eq!(gh.merges().len(), 2, "{:#?}", gh.merges());
    let msgs = messages_when_done(&b, &chat, 3)?;
    assert!(
        msgs.iter()
            .any(|(k, t)| k == "lead" && t == "Merged Running."),
        "{msgs:#?}"
    );
    // The cards refused for the person were offered once.
    for id in [failed, conflicts] {
        let lines = activity(&card(&b, id)?);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("offered to the lead"))
                .count(),
            1,
            "{lines:#?}"
        );
    }
    b.finish()
}

/// Whether `hay` holds `needle`, byte for byte.
fn holds(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_qa_verdict_given_after_bosund_was_killed_and_started_again_counts() -> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("qa_restart", &gh, "300").with_env("BOSUN_BOARD_CHECK_SECS", "3600");
    project(&b, "web", "git@github.com:acme/web.git", true)?;
    add_worker(&b)?;
    // The QA run's first answer from the model waits for the test.
    let gate = b.scratch().join("qa-may-go-on");
    let qa_fake = FakeModel::start(
        "anthropic",
        &format!(
            r#"gate:{};tool:bosun/qa_pass:{{"summary":"fine after a restart"}};text:Passed."#,
            gate.display()
        ),
    )?;
    add_qa(&b, "qa", &qa_fake)?;
    let id = add_card(&b, "Login", "web", "To do", Some("worker"))?;
    wait_run_over(&b, &id, 1)?;
    b.ok(&[
        "board",
        "card",
        "edit",
        &id,
        "--assignee",
        "qa",
        "--move",
        "Testing",
    ])?;
    let run = wait_for("the QA run", Duration::from_secs(60), || {
        let c = card(&b, &id)?;
        Ok((c["runs"].as_u64() == Some(2))
            .then(|| c["run"].as_str().map(str::to_string))
            .flatten())
    })?;
    let (url, token) = wait_for("the QA run's MCP config", Duration::from_secs(60), || {
        Ok(b.run_mcp_server(&run))
    })?;
    // Its CLI has listed its tools and waits for the model.
    let turns = qa_fake.wait_turns(1, Duration::from_secs(120))?;
    assert!(
        turns[0]["tools"]
            .to_string()
            .contains("mcp__bosun__qa_pass"),
        "{turns:#?}"
    );
    // The store keeps the token's digest, never the token.
    let store = std::fs::read(b.home.join("bosun.redb"))?;
    assert!(
        !holds(&store, &token),
        "the QA token is in the store in clear"
    );
    assert!(
        holds(&store, &bosun_shared::RunToken::digest_of(&token)),
        "the QA token's digest is not in the store"
    );

    // bosund is killed while the QA run waits, and started again by the next command.
    b.kill_daemon()?;
    let c = card(&b, &id)?;
    assert_eq!(c["run"], run.as_str(), "{c:#}");
    // bosun's MCP server listens at the address the run was given; it takes the run's token,
    // and no other.
    wait_for(
        "bosun's MCP server to take the QA run's token",
        Duration::from_secs(30),
        || Ok((post_initialize(&url, Some(&token)).ok() == Some(200)).then_some(())),
    )?;
    assert_eq!(post_initialize(&url, Some("not-a-token"))?, 401);
    assert_eq!(
        post_initialize(&url, Some(&bosun_shared::RunToken::digest_of(&token)))?,
        401,
        "the digest is no token"
    );
    assert_eq!(post_initialize(&url, None)?, 401);

    // The model answers now: the run gives its verdict to the new bosund.
    std::fs::write(&gate, "")?;
    let c = wait_run_over(&b, &id, 2)?;
    assert_eq!(verdict(&b, &c)?, "qa_pass");
    let worktree = PathBuf::from(c["worktree"]["path"].as_str().unwrap_or_default());
    let head = git(&worktree, &["rev-parse", "HEAD"])?;
    assert_eq!(c["qa"]["run"], run.as_str(), "{c:#}");
    assert_eq!(c["qa"]["head"], head.as_str(), "{c:#}");
    assert_eq!(c["qa"]["summary"], "fine after a restart", "{c:#}");
    assert!(
        activity(&c).iter().any(|l| l
            == &format!(
                "QA passed commit {} (run {}): fine after a restart",
                &head[..12],
                &run[..8]
            )),
        "{c:#}"
    );
    // One verdict per run: its token is spent.
    assert_eq!(post_initialize(&url, Some(&token))?, 401);

    // The verdict counts as any other: in Review, with green checks, the lead merges on it.
    move_to(&b, &id, "Review")?;
    gh.with_pr(Pr::open(30, &branch_of(&c), &head));
    let lead = FakeModel::start(
        "anthropic",
        &format!("{}text:Merged Login.;", merge_call(&id)),
    )?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;
    restart(&b, &[])?;
    let c = wait_for("the card merged", Duration::from_secs(120), || {
        let c = card(&b, &id)?;
        Ok((c["column"] == "Deploy").then_some(c))
    })?;
    assert!(
        activity(&c).iter().any(|l| l == "merged by the lead"),
        "{c:#}"
    );
    assert_eq!(gh.merges().len(), 1, "{:#?}", gh.merges());
    assert_eq!(gh.merges()[0]["pull_request"], 30);
    b.assert_secret_nowhere(&token)?;
    b.finish()
}

/// The chat's notes that tell the person a merge window closed.
fn windows_closed(msgs: &[(String, String)]) -> Vec<String> {
    msgs.iter()
        .filter(|(k, t)| k == "note" && t.contains("needs you: the merge window closed"))
        .map(|(_, t)| t.clone())
        .collect()
}

/// The chat's messages as (kind, text), as they are now.
fn messages_now(b: &Bosun, chat: &str) -> anyhow::Result<Vec<(String, String)>> {
    let c = b.json(&["chat", "show", chat])?;
    Ok(c["messages"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| {
                    (
                        m["kind"].as_str().unwrap_or_default().to_string(),
                        m["text"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}

#[test]
fn a_card_the_lead_never_tried_to_merge_is_offered_again_and_the_person_hears_when_the_window_closes()
-> anyhow::Result<()> {
    let gh = FakeGithub::start("acme", "web")?;
    let b = bosun("merge_window", &gh, "300").with_env("BOSUN_BOARD_CHECK_SECS", "3600");
    project(&b, "web", "git@github.com:acme/web.git", true)?;
    add_worker(&b)?;
    let qa_fake = FakeModel::start(
        "anthropic",
        &r#"tool:bosun/qa_pass:{"summary":"fine"};text:Passed.;"#.repeat(2),
    )?;
    add_qa(&b, "qa", &qa_fake)?;
    b.ok(&["board", "limit", "1"])?;
    // Two cards QA passed, in Review: one with green checks, one with a check still running.
    let mut ids = Vec::new();
    for (n, title) in ["Untried", "Running"].into_iter().enumerate() {
        let id = add_card(&b, title, "web", "To do", Some("worker"))?;
        wait_run_over(&b, &id, 1)?;
        let c = qa(&b, &id)?;
        assert_eq!(verdict(&b, &c)?, "qa_pass");
        move_to(&b, &id, "Review")?;
        let mut pr = Pr::open(
            40 + n as u64,
            &branch_of(&c),
            c["qa"]["head"].as_str().unwrap_or_default(),
        );
        if title == "Running" {
            pr.checks.push(Check::running("e2e"));
        }
        gh.with_pr(pr);
        ids.push(id);
    }
    let [untried, running] = &ids[..] else {
        bail!("two cards");
    };
    // The lead tries only Running at the first check, and nothing at the second, whose answer
    // waits for the test.
    let gate = b.scratch().join("lead-may-go-on");
    let lead = FakeModel::start(
        "anthropic",
        &format!(
            "{}text:Running waits, and Untried can wait too.;gate:{};text:Nothing merged.;",
            merge_call(running),
            gate.display()
        ),
    )?;
    b.add_claude_agent("lead", lead.url(), &["--role", "lead"])?;

    // The first check offers both; Running's merge has to wait, Untried is never tried.
    restart(&b, &[])?;
    let chat = wait_for("the board checks' chat", Duration::from_secs(60), || {
        checks_chat(&b)
    })?;
    let msgs = messages_when_done(&b, &chat, 1)?;
    let checks = checks_in(&msgs);
    assert_eq!(checks.len(), 1, "{msgs:#?}");
    for id in [untried, running] {
        assert!(checks[0].contains(&format!("card {id}")), "{msgs:#?}");
    }
    let got = results(&lead);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0].contains("checks are still running on pull request #41"),
        "{got:#?}"
    );

    // The next check offers both again, the one the lead never tried too.
    restart(&b, &[])?;
    let checks = wait_for("the second check", Duration::from_secs(60), || {
        let checks = checks_in(&messages_now(&b, &chat)?);
        Ok((checks.len() >= 2).then_some(checks))
    })?;
    assert_eq!(checks.len(), 2, "{checks:#?}");
    assert!(
        checks[1].contains(&format!(
            "card {untried} \"Untried\" (project web), offered again: the lead did not try to merge it when it was offered"
        )),
        "{checks:#?}"
    );
    assert!(
        checks[1].contains(&format!(
            "card {running} \"Running\" (project web), offered again: its merge had to wait"
        )),
        "{checks:#?}"
    );
    assert!(
        activity(&card(&b, untried)?).iter().any(|l| l
            == "offered to the lead again by a board check: the lead did not try to merge it when it was offered"),
        "{:#?}",
        activity(&card(&b, untried)?)
    );

    // While the lead's answer waits, bosund is killed and comes back with a window of one
    // second after QA, and a check every two seconds.
    lead.wait_turns(3, Duration::from_secs(120))?;
    let turns = lead.turns().len();
    b.kill_daemon()?;
    let out = b
        .cmd(&["board"])
        .env("BOSUN_MERGE_WAIT_SECS", "1")
        .env("BOSUN_BOARD_CHECK_SECS", "2")
        .output()?;
    if !out.status.success() {
        bail!(
            "bosund did not start again: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let watcher = EventWatcher::start(&b)?;
    std::fs::write(&gate, "")?;
    // Once the answer is over, a check tells the person of both cards, and offers nothing.
    let told = wait_for(
        "the person told that both windows closed",
        Duration::from_secs(120),
        || {
            let told = windows_closed(&messages_now(&b, &chat)?);
            Ok((told.len() >= 2).then_some(told))
        },
    )?;
    for (id, title) in [(untried, "Untried"), (running, "Running")] {
        let words = format!(
            "Card {id} ({title}) needs you: the merge window closed without a merge: the lead was offered it but never tried to merge it, and a board check offers a card to the lead only for 1 second after QA passed it. Merge its pull request yourself, or move it to Testing so that QA passes it again and a new window opens."
        );
        assert!(told.contains(&words), "{told:#?}");
        assert!(
            activity(&card(&b, id)?)
                .iter()
                .any(|l| l.starts_with("The merge window closed without a merge")),
            "{:#?}",
            activity(&card(&b, id)?)
        );
    }
    let heard = wait_for("two notifications", Duration::from_secs(30), || {
        let h = watcher.of(&["notification"]);
        Ok((h.len() >= 2).then_some(h))
    })?;
    for id in [untried, running] {
        assert!(
            heard.iter().any(|n| n["kind"] == "needs_you"
                && n["card"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(id.as_str()))
                && n["chat"].as_str().is_some_and(|c| c.starts_with(&chat))
                && n["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("the merge window closed"))),
            "{heard:#?}"
        );
    }
    // Told once: the checks that follow say nothing more, and the lead is not started again.
    let found_nothing = "a board check found nothing to offer the lead";
    let before = b.daemon_log().matches(found_nothing).count();
    wait_for("two more checks", Duration::from_secs(30), || {
        Ok((b.daemon_log().matches(found_nothing).count() >= before + 2).then_some(()))
    })?;
    let msgs = messages_now(&b, &chat)?;
    assert_eq!(windows_closed(&msgs).len(), 2, "{msgs:#?}");
    assert_eq!(checks_in(&msgs).len(), 2, "{msgs:#?}");
    assert_eq!(watcher.of(&["notification"]).len(), 2);
    assert_eq!(lead.turns().len(), turns, "the lead was not started again");
    assert!(gh.merges().is_empty(), "{:#?}", gh.merges());
    b.finish()
}
