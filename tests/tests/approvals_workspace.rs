//! Every switch holds and every run stays in its workspace, checked from the outside with the
//! real CLIs against the fake model APIs: a tool whose switch is off is refused by bosun's policy
//! in every mode (whatever the CLI's own flags did), a file tool writes only inside the run's
//! roots and never into git metadata, and a command the person allowed still cannot write
//! outside the roots, because the runner fenced the run in with Landlock. Each refusal is read
//! from the run's record (`bosun show`), and each file that must not exist is checked.

use std::path::Path;
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel};
use serde_json::Value;

/// A Claude agent `coder` (its folder `<scratch>/coder/work`) with `settings` set.
fn claude(b: &Bosun, fake: &FakeModel, settings: &[&str]) -> anyhow::Result<()> {
    b.add_claude_agent("coder", fake.url(), &[])?;
    if !settings.is_empty() {
        let mut args = vec!["agent", "set", "coder"];
        args.extend_from_slice(settings);
        b.ok(&args)?;
    }
    Ok(())
}

/// A command agent `tool` working in `work`, running `program`.
fn command_agent(b: &Bosun, work: &Path, program: &[&str]) -> anyhow::Result<()> {
    let cwd = work.display().to_string();
    let mut args = vec![
        "agent", "add", "tool", "--cli", "command", "--cwd", &cwd, "--",
    ];
    args.extend_from_slice(program);
    b.ok(&args)?;
    Ok(())
}

/// Runs the agent to its end and returns its decisions.
fn decisions_of_run(b: &Bosun, agent: &str) -> anyhow::Result<(String, Vec<Value>)> {
    let run = b.run_agent(agent, "do as scripted")?;
    let view = b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(view["state"], "exited", "{view:#}");
    Ok((run.clone(), b.decisions(&run)?))
}

fn by(d: &Value) -> &str {
    d["by"].as_str().unwrap_or_default()
}

fn told(d: &Value) -> &str {
    d["message"].as_str().unwrap_or_default()
}

fn json_str(p: &Path) -> String {
    serde_json::to_string(&p.display().to_string()).unwrap_or_default()
}

#[test]
fn a_tool_whose_switch_is_off_is_refused_by_bosun_even_when_the_cli_ignores_its_flags()
-> anyhow::Result<()> {
    let b = Bosun::new("workspace_switches");
    // A CLI that ignores every flag: `fake-claude` speaks Claude Code's control protocol as
    // recorded and hands each scripted call to bosun, whatever its command line said.
    let script = serde_json::json!([
        [{"tool": "WebFetch", "input": {"url": "http://127.0.0.1:9/secret.txt", "prompt": "read"}}],
        [{"tool": "WebSearch", "input": {"query": "bosun"}}],
        [{"tool": "Skill", "input": {"skill": "verify"}}],
        [{"tool": "FancyTool", "input": {}}],
        [{"tool": "mcp__from-user-config__delete", "input": {}}],
        [{"tool": "Read", "input": {"file_path": "README"}}],
    ]);
    b.add_fake_claude_agent("coder", &script)?;
    // The person allows each of them and runs the most permissive mode: the switches still win.
    b.ok(&[
        "agent",
        "set",
        "coder",
        "approval=skip",
        "WebFetch=allow",
        "WebSearch=allow",
        "Skill=allow",
        "FancyTool=allow",
    ])?;
    let (_, ds) = decisions_of_run(&b, "coder")?;
    let got: Vec<(&str, &str, &str)> = ds
        .iter()
        .map(|d| {
            (
                d["tool"].as_str().unwrap_or(""),
                d["decision"].as_str().unwrap_or(""),
                by(d),
            )
        })
        .collect();
    let off = "the agent's switch for this tool is off (step 0)";
    assert_eq!(
        got,
        [
            ("WebFetch", "denied", off),
            ("WebSearch", "denied", off),
            ("Skill", "denied", off),
            ("FancyTool", "denied", off),
            ("mcp__from-user-config__delete", "denied", off),
            (
                "Read",
                "allowed",
                "the agent's approval mode lets tools of this kind run without asking (step 6)"
            ),
        ],
        "{ds:#?}"
    );
    for (d, says) in ds.iter().zip([
        "bosun agent set coder web.fetch=any",
        "bosun agent set coder web.search=on",
        "bosun agent set coder skills=on",
        "bosun agent set coder builtin.FancyTool=on",
        "not an MCP server bosun gave this run",
    ]) {
        assert!(told(d).contains(says), "{}", told(d));
    }
    b.finish()
}

#[test]
fn claude_code_is_not_offered_what_is_switched_off() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_switches_claude");
    let fake = FakeModel::start(
        "anthropic",
        r#"call:WebFetch:{"url":"http://127.0.0.1:9/secret.txt","prompt":"read it"};call:WebSearch:{"query":"bosun"};text:done"#,
    )?;
    claude(&b, &fake, &["WebFetch=allow", "WebSearch=allow"])?;
    let (run, ds) = decisions_of_run(&b, "coder")?;
    // Neither ran: Claude Code refused them itself (they were off on its command line), or
    // bosun did when a call reached it.
    for d in &ds {
        assert_eq!(d["decision"], "denied", "{d:#}");
    }
    let turns = fake.turns();
    let offered: Vec<String> = turns
        .first()
        .and_then(|t| t["tools"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    assert!(
        !offered.iter().any(|t| t == "WebFetch" || t == "WebSearch"),
        "offered: {offered:?}"
    );
    let view = b.show(&run)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    b.finish()
}

#[test]
fn a_fetch_outside_the_domain_list_is_refused_naming_the_host() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_fetch_domains");
    let fake = FakeModel::start(
        "anthropic",
        r#"call:WebFetch:{"url":"http://127.0.0.1:9/secret.txt","prompt":"read it"};call:WebFetch:{"url":"https://docs.rs/tokio","prompt":"read it"};text:done"#,
    )?;
    claude(&b, &fake, &["web.fetch=docs.rs", "WebFetch=allow"])?;
    let (_, ds) = decisions_of_run(&b, "coder")?;
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["decision"], "denied", "{:#}", ds[0]);
    assert!(
        told(&ds[0])
            .contains("`127.0.0.1` is not among the domains this agent may fetch (docs.rs)"),
        "{}",
        told(&ds[0])
    );
    // A listed host goes on to the rest of the policy (here: the person's "always allow").
    assert_eq!(ds[1]["decision"], "allowed", "{:#}", ds[1]);
    assert_eq!(by(&ds[1]), "the person always allows this tool (step 4)");
    b.finish()
}

#[test]
fn file_tools_write_only_inside_the_workspace_and_never_git_metadata() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_file_tools");
    let work = b.scratch().join("coder/work");
    let outside = b.scratch().join("outside");
    std::fs::create_dir_all(&outside)?;
    std::fs::create_dir_all(&work)?;
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&work)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()?;
    assert!(git.success());
    let config = std::fs::read(work.join(".git/config"))?;
    std::os::unix::fs::symlink(&outside, work.join("link"))?;
    let script = [
        format!(
            r#"call:Write:{{"file_path":{},"content":"x"}}"#,
            json_str(&outside.join("direct.txt"))
        ),
        r#"call:Write:{"file_path":"link/through-link.txt","content":"x"}"#.to_string(),
        format!(
            r#"call:Read:{{"file_path":{}}}"#,
            json_str(&work.join(".git/config"))
        ),
        format!(
            r#"call:Write:{{"file_path":{},"content":"[core]\n\thooksPath = /tmp\n"}}"#,
            json_str(&work.join(".git/config"))
        ),
        format!(
            r##"call:Write:{{"file_path":{},"content":"#!/bin/sh\necho pwned\n"}}"##,
            json_str(&work.join(".git/hooks/pre-commit"))
        ),
        format!(
            r#"call:Write:{{"file_path":{},"content":"fine\n"}}"#,
            json_str(&work.join("inside.txt"))
        ),
        "text:done".to_string(),
    ]
    .join(";");
    let fake = FakeModel::start("anthropic", &script)?;
    // Writes run without asking, as an agent trusted to edit freely has them.
    claude(&b, &fake, &["Write=allow", "Edit=allow"])?;
    let (run, ds) = decisions_of_run(&b, "coder")?;
    let got: Vec<(&str, &str)> = ds
        .iter()
        .map(|d| (d["tool"].as_str().unwrap_or(""), by(d)))
        .collect();
    let outside_rule = "a file tool may write only inside the run's workspace, and this file is outside it (step 0)";
    let git_rule = "file tools never write git metadata (step 0)";
    assert_eq!(
        got,
        [
            ("Write", outside_rule),
            ("Write", outside_rule),
            (
                "Read",
                "the agent's approval mode lets tools of this kind run without asking (step 6)"
            ),
            ("Write", git_rule),
            ("Write", git_rule),
            ("Write", "the person always allows this tool (step 4)"),
        ],
        "{ds:#?}"
    );
    assert!(
        told(&ds[0]).contains(&format!("{}", work.canonicalize()?.display()))
            && told(&ds[0]).contains("bosun agent set coder roots=DIR,"),
        "the refusal names the roots and how to add one: {}",
        told(&ds[0])
    );
    assert!(told(&ds[1]).contains("it resolves to"), "{}", told(&ds[1]));
    // From the outside: nothing written out of the workspace or into git, the rest written.
    assert!(!outside.join("direct.txt").exists());
    assert!(!outside.join("through-link.txt").exists());
    assert!(!work.join(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read(work.join(".git/config"))?, config);
    assert_eq!(std::fs::read_to_string(work.join("inside.txt"))?, "fine\n");
    // The run says where it could write and under which fence.
    let view = b.show(&run)?;
    let fence = view["agent"]["fence"].as_str().unwrap_or_default();
    assert!(fence.starts_with("Landlock (ABI"), "{view:#}");
    b.finish()
}

#[test]
fn a_command_the_person_allowed_still_cannot_write_outside_the_roots() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_fence_bash");
    let work = b.scratch().join("coder/work");
    let outside = b.scratch().join("home-of-the-person");
    let notes = b.scratch().join("notes");
    for d in [&outside, &notes, &work] {
        std::fs::create_dir_all(d)?;
    }
    let command = format!(
        "echo pwned > {out}/.bashrc; echo inside > ok.txt; echo noted > {notes}/n.txt; echo tmp > \"$TMPDIR/t\" && echo tmp-ok",
        out = outside.display(),
        notes = notes.display()
    );
    let fake = FakeModel::running("anthropic", &command)?;
    claude(
        &b,
        &fake,
        &["Bash=allow", &format!("roots={}", notes.display())],
    )?;
    let (run, ds) = decisions_of_run(&b, "coder")?;
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(
        ds[0]["decision"], "allowed",
        "the person allowed it: {ds:#?}"
    );
    let result = fake.result_at(1);
    // bash says "Permission denied", zsh "permission denied": Claude Code runs
    // the person's own $SHELL.
    assert!(
        result.to_lowercase().contains("permission denied"),
        "{result}"
    );
    assert!(
        result.contains("tmp-ok"),
        "its own temporary folder is writable: {result}"
    );
    assert!(!outside.join(".bashrc").exists(), "the fence held");
    assert_eq!(std::fs::read_to_string(work.join("ok.txt"))?, "inside\n");
    assert_eq!(std::fs::read_to_string(notes.join("n.txt"))?, "noted\n");
    let view = b.show(&run)?;
    let roots = view["agent"]["workspace"]["roots"].clone();
    assert_eq!(
        roots,
        serde_json::json!([notes.canonicalize()?]),
        "{view:#}"
    );
    // The run's temporary folder went with it.
    let tmp = b
        .home
        .join("runs")
        .join(view["id"].as_str().unwrap_or_default())
        .join("tmp");
    assert!(!tmp.exists(), "{} is left", tmp.display());
    b.finish()
}

#[test]
fn a_command_agents_programs_are_fenced_unless_its_workspace_is_unrestricted() -> anyhow::Result<()>
{
    let b = Bosun::new("workspace_fence_command");
    let work = b.scratch().join("work");
    let outside = b.scratch().join("outside");
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&outside)?;
    let script = format!(
        "echo a > inside.txt; (echo b > {out}/escaped.txt) 2>&1; mkdir {out}/made 2>&1; ln -s /etc {out}/link 2>&1; true",
        out = outside.display()
    );
    command_agent(&b, &work, &["sh", "-c", &script])?;
    let run = b.run_agent("tool", "go")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let log = String::from_utf8_lossy(&b.logs(&run)?).into_owned();
    assert_eq!(log.matches("Permission denied").count(), 3, "{log}");
    assert!(work.join("inside.txt").exists());
    for gone in ["escaped.txt", "made", "link"] {
        assert!(!outside.join(gone).exists(), "{gone} was made");
    }
    let shown = b.ok(&["show", &run])?;
    assert!(
        shown.contains("fence") && shown.contains("Landlock"),
        "{shown}"
    );

    // Unrestricted, the same program writes there: no fence, and the run says so.
    b.ok(&["agent", "set", "tool", "workspace=unrestricted"])?;
    let text = b.ok(&["agent", "show", "tool"])?;
    assert!(text.contains("unrestricted"), "{text}");
    let run = b.run_agent("tool", "go")?;
    b.wait_ended(&run, Duration::from_secs(60))?;
    assert!(outside.join("escaped.txt").exists());
    let view = b.show(&run)?;
    assert_eq!(view["agent"]["workspace"]["unrestricted"], true, "{view:#}");
    assert!(view["agent"]["fence"].is_null(), "{view:#}");
    b.finish()
}

#[test]
fn roots_must_be_absolute_existing_folders_and_not_the_whole_disk() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_roots_input");
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    let file = b.scratch().join("a-file");
    std::fs::write(&file, "x")?;
    command_agent(&b, &work, &["true"])?;
    let missing = b.scratch().join("missing");
    for (root, says) in [
        ("relative/dir".to_string(), "is not an absolute path"),
        (missing.display().to_string(), "does not exist"),
        (file.display().to_string(), "is a file, not a folder"),
        ("/".to_string(), "the root of the file system"),
    ] {
        let err = b.fails(&["agent", "set", "tool", &format!("roots={root}")])?;
        assert!(err.contains(says), "{root}: {err}");
    }
    let err = b.fails(&["agent", "set", "tool", "workspace=anywhere"])?;
    assert!(err.contains("workspace takes roots"), "{err}");
    // A link is resolved once, when set.
    let real = b.scratch().join("real");
    std::fs::create_dir_all(&real)?;
    std::os::unix::fs::symlink(&real, b.scratch().join("alias"))?;
    let v = b.json(&[
        "agent",
        "set",
        "tool",
        &format!("roots={}", b.scratch().join("alias").display()),
    ])?;
    assert_eq!(
        v["workspace"]["roots"],
        serde_json::json!([real.canonicalize()?])
    );
    b.ok(&["agent", "set", "tool", "roots=none"])?;
    let v = b.json(&["agent", "show", "tool"])?;
    assert_eq!(v["workspace"]["roots"], serde_json::json!([]));
    b.finish()
}

#[test]
fn every_permission_mode_of_claude_code_still_brings_a_write_to_bosun() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_claude_modes");
    let outside = b.scratch().join("outside");
    std::fs::create_dir_all(&outside)?;
    for mode in ["default", "acceptEdits", "dontAsk", "bypassPermissions"] {
        let target = outside.join(format!("{mode}.txt"));
        let fake = FakeModel::start(
            "anthropic",
            &format!(
                r#"call:Write:{{"file_path":{},"content":"x"}};text:done"#,
                json_str(&target)
            ),
        )?;
        let name = mode.to_ascii_lowercase();
        // Claude Code takes bypassPermissions as root only on a machine it is told is a sandbox.
        b.add_claude_agent(
            &name,
            fake.url(),
            &["--permission-mode", mode, "--env", "IS_SANDBOX=1"],
        )?;
        b.ok(&["agent", "set", &name, "Write=allow"])?;
        let (_, ds) = decisions_of_run(&b, &name)?;
        assert!(!target.exists(), "{mode}: the write went through");
        let got: Vec<(&str, &str)> = ds
            .iter()
            .map(|d| (d["tool"].as_str().unwrap_or(""), by(d)))
            .collect();
        assert_eq!(
            got,
            [(
                "Write",
                "a file tool may write only inside the run's workspace, and this file is outside it (step 0)"
            )],
            "{mode}: {ds:#?}"
        );
    }
    b.finish()
}

#[test]
fn codex_and_gemini_file_tools_are_held_to_the_workspace_too() -> anyhow::Result<()> {
    let b = Bosun::new("workspace_codex_gemini");
    let outside = b.scratch().join("outside");
    std::fs::create_dir_all(&outside)?;
    let patch = format!(
        "*** Begin Patch\n*** Add File: {}\n+x\n*** End Patch\n",
        outside.join("codex.txt").display()
    );
    let codex = FakeModel::start(
        "openai",
        &format!(
            r#"call:apply_patch:{};call:apply_patch:"*** Begin Patch\n*** Add File: .git/config\n+x\n*** End Patch\n";text:All done."#,
            serde_json::to_string(&patch)?
        ),
    )?;
    b.add_codex_agent("patcher", codex.url(), &[])?;
    b.ok(&["agent", "set", "patcher", "apply_patch=allow"])?;
    let (_, ds) = decisions_of_run(&b, "patcher")?;
    let rules: Vec<&str> = ds.iter().map(by).collect();
    assert_eq!(
        rules,
        [
            "a file tool may write only inside the run's workspace, and this file is outside it (step 0)",
            "file tools never write git metadata (step 0)"
        ],
        "{ds:#?}"
    );
    assert!(!outside.join("codex.txt").exists());
    assert!(!b.scratch().join("patcher/work/.git").exists());

    // Gemini CLI keeps its file tools to its own workspace itself, `.git` included (measured
    // with 0.61: "Path not in workspace", before it asks), so neither write reaches bosun's
    // policy, which would refuse both (`approvals::workspace`'s tests); what counts is that
    // nothing is written and nothing is allowed.
    let gemini = FakeModel::start(
        "gemini",
        &format!(
            r#"call:write_file:{{"file_path":{},"content":"x"}};call:write_file:{{"file_path":".git/config","content":"x"}};text:All done."#,
            json_str(&outside.join("gemini.txt"))
        ),
    )?;
    b.add_gemini_agent("writer", gemini.url(), &[])?;
    b.ok(&["agent", "set", "writer", "write_file=allow"])?;
    let (_, ds) = decisions_of_run(&b, "writer")?;
    assert!(
        ds.iter().all(|d| d["decision"] == "denied"),
        "nothing was allowed: {ds:#?}"
    );
    assert!(!outside.join("gemini.txt").exists());
    assert!(!b.scratch().join("writer/work/.git").exists());
    b.finish()
}
