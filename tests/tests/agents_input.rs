//! Agents: bad input gets a clear refusal and nothing is half-saved; the switches are all
//! applied or none; secrets go to the keychain only; a command agent runs any program with the
//! prompt in `BOSUN_PROMPT`.

use std::time::Duration;

use bosun_tests::Bosun;
use serde_json::Value;

fn agent_names(b: &Bosun) -> anyhow::Result<Vec<String>> {
    Ok(b.json(&["agent", "list"])?
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

#[test]
fn bad_agents_are_refused_with_the_reason_and_nothing_is_saved() -> anyhow::Result<()> {
    let b = Bosun::new("agent_bad_input");
    let cwd = b.scratch().display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["agent", "add", "x", "--cli", "cursor"],
            "`cursor` is not a CLI bosun runs; choose claude, codex, gemini or command",
        ),
        (
            vec!["agent", "add", "bad name", "--cli", "claude", "--cwd", &cwd],
            "an agent's name takes only letters, digits, - and _",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "codex",
                "--permission-mode",
                "acceptEdits",
                "--cwd",
                &cwd,
            ],
            "`acceptEdits` is not a permission mode of codex; it takes read-only, workspace-write, danger-full-access",
        ),
        (
            vec![
                "agent", "add", "x", "--cli", "claude", "--allow", "Bash(git", "--cwd", &cwd,
            ],
            "`Bash(git` is not an allowed command",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "claude",
                "--cwd",
                "/no/such/folder",
            ],
            "the working folder /no/such/folder does not exist",
        ),
        // Issue 25: a file is not a missing folder.
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "claude",
                "--cwd",
                "/etc/passwd",
            ],
            "the working folder /etc/passwd is a file, not a folder; give a folder with --cwd",
        ),
        (
            vec!["agent", "add", "x", "--cli", "command", "--cwd", &cwd],
            "a command agent needs its program",
        ),
        (
            vec![
                "agent", "add", "x", "--cli", "claude", "--cwd", &cwd, "--", "make",
            ],
            "a claude agent runs claude, so it takes no command of its own",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "claude",
                "--cwd",
                &cwd,
                "--env",
                "BOSUN_HOME=/x",
            ],
            "BOSUN_HOME starts with BOSUN_",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "claude",
                "--cwd",
                &cwd,
                "--codex-config",
                "model=\"o3\"",
            ],
            "Codex settings (--codex-config) are for a codex agent",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "codex",
                "--cwd",
                &cwd,
                "--codex-config",
                "mcp_servers.x.command=\"sh\"",
            ],
            "`mcp_servers.x.command` is not a Codex setting an agent may carry",
        ),
        (
            vec![
                "agent",
                "add",
                "x",
                "--cli",
                "claude",
                "--cwd",
                &cwd,
                "--time-cap",
                "0s",
            ],
            "`0s` is zero; a duration must be longer than that",
        ),
    ];
    for (args, want) in &cases {
        let err = b.fails(args)?;
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(agent_names(&b)?.is_empty(), "nothing was saved");

    b.ok(&["agent", "add", "coder", "--cli", "claude", "--cwd", &cwd])?;
    let err = b.fails(&["agent", "add", "coder", "--cli", "codex", "--cwd", &cwd])?;
    assert!(
        err.contains("there is already an agent named `coder`"),
        "{err}"
    );
    let err = b.fails(&["agent", "show", "nobody"])?;
    assert!(
        err.contains("there is no agent `nobody`; `bosun agent list` shows them"),
        "{err}"
    );
    let err = b.fails(&["agent", "run", "coder", "  "])?;
    assert!(err.contains("no prompt given"), "{err}");
    b.finish()
}

/// Issue 25: `--instructions-file /dev/zero` read 2 GB before memory ran out, and a 10 MB
/// instructions file or secret value was refused in the frame limit's words. Each is read no
/// further than one byte past its rule and refused in the rule's words, before anything is sent
/// (bosund hears nothing: no agent is added).
#[test]
fn instructions_and_secret_values_are_read_no_further_than_their_rule() -> anyhow::Result<()> {
    let b = Bosun::new("agent_input_limits");
    let cwd = b.scratch().display().to_string();
    let big = b.scratch().join("big.txt");
    std::fs::write(&big, "x".repeat(10 << 20))?;
    let big_name = big.display().to_string();
    let add = ["agent", "add", "x", "--cli", "claude", "--cwd", &cwd];

    for file in ["/dev/zero", big_name.as_str()] {
        let args = [&add[..], &["--instructions-file", file]].concat();
        let started = std::time::Instant::now();
        let err = b.fails(&args)?;
        assert!(
            err.contains(&format!(
                "the instructions in {file} are over 64 KiB; keep them under 64 KiB"
            )),
            "{err}"
        );
        assert!(!err.contains("frame"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "read it all?");
    }
    // Exactly the limit is taken.
    let at_limit = b.scratch().join("at-limit.txt");
    std::fs::write(&at_limit, "y".repeat(64 * 1024))?;
    let at_limit = at_limit.display().to_string();
    b.ok(&[&add[..], &["--instructions-file", &at_limit]].concat())?;
    b.ok(&["agent", "remove", "x"])?;

    // A secret value piped in: one name takes all of stdin.
    for source in ["/dev/zero", big_name.as_str()] {
        let out = b
            .cmd(&[&add[..], &["--secret-env", "API_KEY"]].concat())
            .stdin(std::fs::File::open(source)?)
            .output()?;
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is over 64 KiB"), "{err}");
        assert!(!err.contains("frame"), "{err}");
    }
    let out = b
        .cmd(&[
            "mcp",
            "add",
            "s",
            "--url",
            "https://example.com/mcp",
            "--client-secret-stdin",
        ])
        .stdin(std::fs::File::open(&big)?)
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the value of the client secret is over 64 KiB"),
        "{err}"
    );
    assert!(agent_names(&b)?.is_empty(), "nothing was saved");
    b.finish()
}

#[test]
fn switches_are_checked_whole_and_applied_all_or_none() -> anyhow::Result<()> {
    let b = Bosun::new("agent_switches");
    let cwd = b.scratch().display().to_string();
    b.add_everything("everything", "token-switches")?;
    b.ok(&["agent", "add", "coder", "--cli", "claude", "--cwd", &cwd])?;
    b.ok(&["agent", "add", "cx", "--cli", "codex", "--cwd", &cwd])?;
    let before = b.json(&["agent", "show", "coder"])?;

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["web.search=on", "mcp.github=on"],
            "there is no MCP server `github`; add it with `bosun mcp add github …` first",
        ),
        (
            vec!["web.search=on", "web.fetch=https://docs.rs"],
            "`https://docs.rs` is not a domain for fetching pages: leave out the scheme",
        ),
        (
            vec!["web.fetch=docs.rs,local"],
            "`local` is not a domain for fetching pages: it needs a dot",
        ),
        (vec!["web.search=maybe"], "web.search takes on or off"),
        (
            vec!["mcp.everything.nope=on"],
            "`everything` has no tool `nope` in its last listing",
        ),
        (vec!["shell=on"], "`shell` is not a switch; the keys are"),
        (
            vec!["browser"],
            "`browser` is not a setting; write KEY=VALUE",
        ),
    ];
    for (settings, want) in &cases {
        let mut args = vec!["agent", "set", "coder"];
        args.extend(settings);
        let err = b.fails(&args)?;
        assert!(err.contains(want), "{settings:?}: {err}");
    }
    let after = b.json(&["agent", "show", "coder"])?;
    assert_eq!(
        before["switches"], after["switches"],
        "nothing was half-applied"
    );

    let err = b.fails(&["agent", "set", "cx", "skills=on"])?;
    assert!(
        err.contains("skills=on is refused for a codex agent: bosun has no checked per-run switch"),
        "{err}"
    );

    // A good set: domains kept in order, lower-cased.
    let shown = b.json(&[
        "agent",
        "set",
        "coder",
        "web.fetch=docs.rs,*.Laravel.com",
        "web.search=on",
        "skills=on",
        "mcp.everything=on",
        "mcp.everything.get-sum=off",
    ])?;
    let s = &shown["switches"];
    assert_eq!(
        s["web_fetch"],
        serde_json::json!({"mode": "domains", "domains": ["docs.rs", "*.laravel.com"]})
    );
    assert_eq!(s["web_search"], true);
    assert_eq!(s["skills"], true);
    // Moving the agent to Codex takes skills off (Codex has no checked switch for them).
    let moved = b.json(&["agent", "edit", "coder", "--cli", "codex"])?;
    assert_eq!(moved["switches"]["skills"], false);
    assert!(
        moved["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w
                .as_str()
                .is_some_and(|w| w.contains("Codex has no switch of its own for fetching pages")))),
        "{moved:#}"
    );
    b.finish()
}

#[test]
fn secret_environment_lines_live_in_the_keychain_only() -> anyhow::Result<()> {
    const SECRET: &str = "sk-secret-env-51f0aa";
    let b = Bosun::new("agent_secret_env");
    let cwd = b.scratch().display().to_string();
    b.add_agent(
        "coder",
        &[
            "--cli",
            "claude",
            "--cwd",
            &cwd,
            "--secret-env",
            "ANTHROPIC_API_KEY",
            "--env",
            "FOO=bar",
        ],
        &format!("{SECRET}\n"),
    )?;
    let shown = b.json(&["agent", "show", "coder"])?;
    assert_eq!(
        shown["secret_env"],
        serde_json::json!([{"name": "ANTHROPIC_API_KEY", "saved": true}])
    );
    assert_eq!(shown["env"], serde_json::json!([["FOO", "bar"]]));
    let keychain = std::fs::read_to_string(b.keychain_file())?;
    assert!(keychain.contains(SECRET), "the value is in the keychain");
    assert!(
        !keychain.contains(&format!("{SECRET}\n")),
        "without the newline of stdin"
    );
    b.assert_secret_not_in_files(SECRET)?;

    // Removing the agent takes its secret out of the keychain too.
    b.ok(&["agent", "remove", "coder"])?;
    let keychain: Value = serde_json::from_str(&std::fs::read_to_string(b.keychain_file())?)?;
    assert!(
        keychain.as_object().is_none_or(|m| m.is_empty()),
        "{keychain}"
    );
    b.assert_secret_nowhere(SECRET)?;
    b.finish()
}

#[test]
fn a_command_agent_runs_its_program_with_the_prompt() -> anyhow::Result<()> {
    let b = Bosun::new("agent_command");
    let cwd = b.scratch().display().to_string();
    b.ok(&[
        "agent",
        "add",
        "echoer",
        "--cli",
        "command",
        "--cwd",
        &cwd,
        "--time-cap",
        "1m",
        "--allow",
        "WebFetch(domain:docs.rs)",
        "--",
        "sh",
        "-c",
        "echo \"task: $BOSUN_PROMPT\"",
    ])?;
    let out = b.output(&["agent", "run", "echoer", "count the files", "--follow"])?;
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "task: count the files\n"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("bosun: Left out `WebFetch(domain:docs.rs)` from the allowed commands"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = &b.json(&["ps", "--all"])?[0];
    assert_eq!(run["name"], "echoer");
    assert_eq!(run["time_cap_ms"], 60_000);
    assert_eq!(run["agent"]["agent_name"], "echoer");
    let ended = b.wait_ended(
        run["id"].as_str().unwrap_or_default(),
        Duration::from_secs(10),
    )?;
    assert_eq!(ended["outcome"], "succeeded");
    b.finish()
}
