//! Upgrades from earlier stores. From the previous release: a state directory made by bosun
//! c9425cd (store schema 1; the fixture and the script that made it are in
//! `tests/fixtures/upgrade-v1/`), opened by today's build. Everything is there, item by item; every log is byte for byte what the old
//! build printed; each agent's CLI permission mode is carried over as verdicts and the person is
//! told (`daemon status`, `agent show`, the agent's page in chromium); no canary secret is left anywhere in the migrated store file (free pages included) or
//! its backup; and an `acceptEdits` agent's board run writes without asking. From a store before
//! usage rows (schema 2, `tests/fixtures/upgrade-v2/`): its runs' usage is in `bosun usage`.
//! From the main before finished runs' logs were pruned (schema 4, `tests/fixtures/upgrade-v4/`):
//! its runs read as they did, then their logs go after the retention with their summaries kept.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, mode_of, node_path, wait_for};
use serde_json::Value;

/// Every secret the fixture holds: none may be in the store file after the upgrade.
const CANARIES: [&str; 12] = [
    "canary-env-7f3a91",
    "canary-query-c4e2d8",
    "canary-old-moved-5b0e",
    "canary-old-kept-e8d3",
    "canary-claude-key-19b7",
    "canary-claude-key-2c44",
    "canary-claude-key-3d51",
    "canary-openai-key-4e62",
    "canary-openai-key-5f73",
    "canary-gemini-key-6a84",
    "canary-gemini-key-7b95",
    "canary-shell-key-8ca6",
];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade-v1")
}

/// The store before usage rows (schema 2), with two finished Codex runs (`tests/fixtures/
/// upgrade-v2/make.sh`).
fn fixture_v2() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade-v2")
}

/// The store while a run's decisions were inside its record (schema 3), with one finished run
/// of four decisions (`tests/fixtures/upgrade-v3/make.sh`).
fn fixture_v3() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade-v3")
}

/// A bosun whose state directory is the fixture's in `dir` (its `state/`, as the old build left
/// it, private as bosund keeps it), and what the old build said (a file of its `expected/`).
fn from_state(
    test: &str,
    dir: &Path,
) -> anyhow::Result<(Bosun, impl Fn(&str) -> anyhow::Result<String>)> {
    use std::os::unix::fs::PermissionsExt;
    let b = Bosun::new(test);
    copy_dir(&dir.join("state"), &b.home)?;
    std::fs::set_permissions(&b.home, std::fs::Permissions::from_mode(0o700))?;
    std::fs::set_permissions(
        b.home.join("bosun.redb"),
        std::fs::Permissions::from_mode(0o600),
    )?;
    let expected = dir.join("expected");
    Ok((b, move |name: &str| {
        Ok(std::fs::read_to_string(expected.join(name))?)
    }))
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A bosun whose state directory and keychain are the fixture's, as the old build left them.
fn from_fixture(test: &str) -> anyhow::Result<Bosun> {
    use std::os::unix::fs::PermissionsExt;
    let b = Bosun::new(test);
    copy_dir(&fixture().join("state"), &b.home)?;
    std::fs::set_permissions(&b.home, std::fs::Permissions::from_mode(0o700))?;
    std::fs::copy(fixture().join("keychain.json"), b.keychain_file())?;
    // A checkout keeps no file's mode but its executable bit: the old build's files were 0600.
    for f in [b.keychain_file(), b.home.join("bosun.redb")] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(b)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn expected(name: &str) -> anyhow::Result<Vec<u8>> {
    Ok(std::fs::read(fixture().join("expected").join(name))?)
}

fn run_of(name: &str) -> anyhow::Result<String> {
    Ok(String::from_utf8(expected(&format!("{name}.run"))?)?
        .trim()
        .to_string())
}

/// The saved verdicts of an agent, as `agent show --json` lists them.
fn verdicts(b: &Bosun, agent: &str) -> anyhow::Result<Vec<(String, String)>> {
    let a = b.json(&["agent", "show", agent])?;
    Ok(a["approvals"]["verdicts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let s = |i: usize| v[i].as_str().unwrap_or_default().to_string();
            (s(0), s(1))
        })
        .collect())
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    out.sort();
    out
}

#[test]
fn the_previous_releases_state_opens_item_by_item_with_no_secret_left_in_the_store()
-> anyhow::Result<()> {
    let b = from_fixture("upgrade_fixture")?;
    let db = b.home.join("bosun.redb");
    // The fixture holds what the upgrade must take out: a query kept in a record, and one that
    // c9425cd moved whose old bytes it left in a free page.
    let before = std::fs::read(&db)?;
    assert!(contains(&before, "canary-old-kept-e8d3"));
    let logs_before: Vec<(PathBuf, Vec<u8>)> = ["hello", "shell"]
        .iter()
        .map(|n| {
            let path = b.home.join("runs").join(run_of(n)?).join("log");
            Ok((path.clone(), std::fs::read(&path)?))
        })
        .collect::<anyhow::Result<_>>()?;

    // The first command starts today's bosund, which upgrades the store before it answers.
    let servers = b.json(&["mcp", "list"])?;
    let status = b.json(&["daemon", "status"])?;
    let line = status["upgrade"].as_str().unwrap_or_default().to_string();
    let backup = b.home.join("bosun.redb.v1.bak");
    for want in [
        "upgraded from schema 1 to 4",
        "agents' runs now write only in their own folder",
        &backup.display().to_string(),
        "the address query of old-kept moved to the keychain",
        "coder: Write, MultiEdit, NotebookEdit from acceptEdits",
        "wild: Write, Edit, MultiEdit, NotebookEdit, Bash, Monitor from bypassPermissions",
        "patcher: apply_patch from workspace-write",
        "root: apply_patch, Bash from danger-full-access",
        "editor: write_file, replace from auto_edit",
        "yolo: write_file, replace, Bash from yolo",
    ] {
        assert!(line.contains(want), "{want} in: {line}");
    }
    assert!(!line.contains("careful"), "dontAsk carries nothing: {line}");
    let text = b.ok(&["daemon", "status"])?;
    assert!(
        text.contains("upgrade       the store was upgraded"),
        "{text}"
    );

    // Servers: their lines' names, their secrets in the keychain, the queries hidden.
    let names: Vec<&str> = servers
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    for name in [
        "tools",
        "remote",
        "old-moved",
        "old-kept",
        "chrome-devtools",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let tools = b.json(&["mcp", "show", "tools"])?;
    assert_eq!(tools["env"][0]["name"], "TOOLS_TOKEN");
    assert_eq!(tools["env"][0]["saved"], true);
    for (name, host) in [
        ("remote", "https://mcp.example.com/mcp?…"),
        ("old-moved", "https://old.example.com/mcp?…"),
        ("old-kept", "https://old.example.com/mcp?…"),
    ] {
        let s = b.json(&["mcp", "show", name])?;
        assert_eq!(s["url"], host, "{s:#}");
    }
    let keychain = std::fs::read_to_string(b.keychain_file())?;
    for secret in [
        "canary-env-7f3a91",
        "api_key=canary-query-c4e2d8",
        "api_key=canary-old-moved-5b0e",
        "api_key=canary-old-kept-e8d3",
    ] {
        assert!(keychain.contains(secret), "{secret} in the keychain");
    }

    // Agents of all four kinds, their secrets saved, their modes carried over.
    let agents = b.json(&["agent", "list"])?;
    assert_eq!(agents.as_array().map(Vec::len), Some(8), "{agents:#}");
    for (name, cli, mode) in [
        ("coder", "claude", "acceptEdits"),
        ("wild", "claude", "bypassPermissions"),
        ("careful", "claude", "dontAsk"),
        ("patcher", "codex", "workspace-write"),
        ("root", "codex", "danger-full-access"),
        ("editor", "gemini", "auto_edit"),
        ("yolo", "gemini", "yolo"),
    ] {
        let a = b.json(&["agent", "show", name])?;
        assert_eq!(
            (a["cli"].as_str(), a["permission_mode"].as_str()),
            (Some(cli), Some(mode))
        );
        assert_eq!(a["secret_env"][0]["saved"], true, "{a:#}");
    }
    let shell = b.json(&["agent", "show", "shell"])?;
    assert_eq!(shell["cli"], "command");
    assert!(shell["carried_over"].is_null());
    // The person's own verdict (Edit=ask) and allowed command stay as they were.
    assert_eq!(
        verdicts(&b, "coder")?,
        pairs(&[
            ("Edit", "ask"),
            ("MultiEdit", "allow"),
            ("NotebookEdit", "allow"),
            ("Write", "allow"),
        ])
    );
    let coder = b.json(&["agent", "show", "coder"])?;
    assert_eq!(coder["allowed_commands"][0], "Bash(git *)");
    let note = coder["carried_over"].as_str().unwrap_or_default();
    assert!(
        note.contains("permission mode acceptEdits")
            && note.contains("Write, MultiEdit, NotebookEdit = allow")
            && note.contains("kept as you had them: Edit=ask"),
        "{note}"
    );
    let shown = b.ok(&["agent", "show", "coder"])?;
    assert!(
        shown.contains("carried over from its permission mode acceptEdits"),
        "{shown}"
    );
    // The agent's page in the web UI says it too, and the Daemon page has the upgrade's line.
    let ui = b.json(&["ui", "--no-open"])?;
    let seen = bosun_tests::browser_scenario(
        ui["login_url"].as_str().unwrap_or_default(),
        "carried",
        &[],
    )?;
    b.ok(&["ui", "--stop"])?;
    let page = seen["agent"].as_str().unwrap_or_default();
    assert!(
        page.contains("carried over from its permission mode acceptEdits")
            && page.contains("Write, MultiEdit, NotebookEdit = allow"),
        "{seen:#}"
    );
    assert!(
        seen["daemon"]
            .as_str()
            .is_some_and(|d| d.contains("upgraded from schema 1 to 4")),
        "{seen:#}"
    );
    assert_eq!(
        verdicts(&b, "root")?,
        pairs(&[("Bash", "allow"), ("apply_patch", "allow")])
    );
    assert_eq!(
        verdicts(&b, "yolo")?,
        pairs(&[
            ("Bash", "allow"),
            ("replace", "allow"),
            ("write_file", "allow")
        ])
    );
    assert_eq!(verdicts(&b, "careful")?, Vec::new());
    // Told until the person changes the agent's approvals.
    b.ok(&["agent", "set", "editor", "replace=ask"])?;
    assert!(b.json(&["agent", "show", "editor"])?["carried_over"].is_null());

    // The board: its columns and cards, the hold with its reason.
    let board = b.json(&["board"])?;
    let columns: Vec<&str> = board["columns"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        columns.contains(&"Parked") && columns.contains(&"Backlog"),
        "{columns:?}"
    );
    let cards = board.to_string();
    assert!(cards.contains("Fix the login page") && cards.contains("Ship the release"));
    assert!(cards.contains("which version number?"), "{board:#}");

    // Notes.
    assert_eq!(
        b.ok(&["note", "show", "plans/release.md"])?,
        "Release on Friday.\n"
    );
    assert!(b.ok(&["note", "show", "team.md"])?.contains("Ada, Grace."));

    // Finished runs: their logs as the old build printed them, their files untouched.
    for name in ["hello", "shell"] {
        let run = run_of(name)?;
        let out = b.output(&["logs", &run])?;
        assert_eq!(
            out.stdout,
            expected(&format!("{run}.stdout"))?,
            "{name}'s stdout"
        );
        assert_eq!(
            out.stderr,
            expected(&format!("{run}.stderr"))?,
            "{name}'s stderr"
        );
        assert_eq!(b.show(&run)?["outcome"], "succeeded");
    }
    for (path, bytes) in &logs_before {
        assert_eq!(&std::fs::read(path)?, bytes, "{}", path.display());
    }

    // No canary anywhere in the migrated file, nor in its backup; the backup is private.
    b.ok(&["daemon", "stop"])?;
    let after = std::fs::read(&db)?;
    let kept = std::fs::read(&backup)?;
    for secret in CANARIES {
        assert!(!contains(&after, secret), "{secret} in the migrated store");
        assert!(!contains(&kept, secret), "{secret} in the backup");
    }
    assert_eq!(mode_of(&backup), Some(0o600));
    assert_eq!(mode_of(&db), Some(0o600));
    b.finish()
}

#[test]
fn a_store_of_a_newer_schema_is_refused_with_words() -> anyhow::Result<()> {
    let b = from_fixture("upgrade_newer")?;
    {
        let db = redb::Database::open(b.home.join("bosun.redb"))?;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("meta"))?;
            meta.insert("schema_version", 9u64.to_be_bytes().as_slice())?;
        }
        txn.commit()?;
    }
    let e = b.fails(&["agent", "list"])?;
    assert!(
        e.contains(
            "this state directory was made by a newer bosun: upgrade, or restore the backup it made"
        ) && e.contains("bosun.redb.v4.bak"),
        "{e}"
    );
    b.finish()
}

#[test]
fn an_accept_edits_agent_of_the_old_store_writes_without_asking_in_a_board_run()
-> anyhow::Result<()> {
    let b = from_fixture("upgrade_accept_edits")?;
    let work = b.scratch().join("coder");
    for d in ["work", "home", "claude"] {
        std::fs::create_dir_all(work.join(d))?;
    }
    let file = work.join("work").join("out.txt");
    let fake = FakeModel::start(
        "anthropic",
        &format!(
            r#"tool:Write:{{"file_path":"{}","content":"written"}};text:All done."#,
            file.display()
        ),
    )?;
    // Where the fixture's agent works and which model it talks to: this test's.
    b.ok(&[
        "agent",
        "edit",
        "coder",
        "--cwd",
        &work.join("work").display().to_string(),
        "--env",
        &format!("ANTHROPIC_BASE_URL={}", fake.url()),
        "--env",
        &format!("HOME={}", work.join("home").display()),
        "--env",
        &format!("CLAUDE_CONFIG_DIR={}", work.join("claude").display()),
        "--env",
        &format!("PATH={}", node_path()),
    ])?;
    b.ok(&["agent", "set", "coder", "mcp.tools=off"])?;
    // The fixture's card for coder waits in Backlog; in To do (an Auto column) the board starts
    // it, as a run nobody watches.
    let board = b.json(&["board"])?;
    let card = board["cards"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["title"] == "Fix the login page"))
        .and_then(|c| c["short_id"].as_str())
        .unwrap_or_default()
        .to_string();
    b.json(&["board", "card", "move", &card, "To do"])?;
    let run = wait_for("the card's run", Duration::from_secs(60), || {
        let c = b.json(&["board", "card", "show", &card])?;
        Ok(c["run"].as_str().map(str::to_string))
    })?;
    let view = b.wait_ended(&run, Duration::from_secs(90))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    assert_eq!(std::fs::read_to_string(&file)?, "written");
    let ds: Vec<Value> = b.decisions(&run)?;
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0]["tool"], "Write");
    assert_eq!(ds[0]["decision"], "allowed");
    assert!(
        ds[0]["by"]
            .as_str()
            .is_some_and(|by| by.contains("(step 4)")),
        "allowed by the carried-over verdict: {ds:#?}"
    );
    assert!(b.waiting_approvals()?.is_empty(), "nothing asked");
    b.finish()
}

#[test]
fn the_runs_of_a_store_before_usage_rows_are_in_bosun_usage_after_the_upgrade() -> anyhow::Result<()>
{
    let dir = fixture_v2();
    let (b, expected) = from_state("upgrade_usage_rows", &dir)?;
    let (alone, card_run) = (
        expected("alone.run")?.trim().to_string(),
        expected("card.run")?.trim().to_string(),
    );

    // The first command starts today's bosund, which fills the usage rows before it answers;
    // `bosun usage` reads nothing else.
    let by_agent = b.json(&["usage", "--by", "agent"])?;
    let old: Value = serde_json::from_str(&expected("usage-by-agent.json")?)?;
    assert_eq!(by_agent["rows"], old["rows"], "{by_agent:#}");
    assert_eq!(by_agent["total"], old["total"], "{by_agent:#}");
    assert_eq!(by_agent["total"]["runs"], 2, "{by_agent:#}");
    let status = b.json(&["daemon", "status"])?;
    let line = status["upgrade"].as_str().unwrap_or_default();
    assert!(
        line.contains("upgraded from schema 2 to 4")
            && line.contains("what 2 runs of coding CLIs used is kept apart"),
        "{line}"
    );
    assert!(
        !line.contains("permission mode"),
        "schema 2 had its modes carried over already: {line}"
    );

    // Each run, to the token, as its record has it; the card's run under its card.
    for run in [&alone, &card_run] {
        let recorded: Value = serde_json::from_str(&expected(&format!("{run}.usage.json"))?)?;
        assert_eq!(b.show(run)?["agent"]["usage"], recorded, "{run}");
    }
    let card_usage: Value = serde_json::from_str(&expected(&format!("{card_run}.usage.json"))?)?;
    let by_card = b.json(&["usage", "--by", "card"])?;
    let row = by_card["rows"]
        .as_array()
        .and_then(|rows| {
            rows.iter().find(|r| {
                r["key"]
                    .as_str()
                    .is_some_and(|k| k.ends_with("Count the tokens"))
            })
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["runs"], 1, "{by_card:#}");
    assert_eq!(
        row["input"], card_usage["models"][0]["input"],
        "{by_card:#}"
    );
    assert_eq!(
        row["output"], card_usage["models"][0]["output"],
        "{by_card:#}"
    );
    assert_eq!(
        row["micro_usd"], card_usage["cost"]["micro_usd"],
        "{by_card:#}"
    );
    let by_day = b.json(&["usage", "--by", "day"])?;
    assert_eq!(by_day["total"], old["total"], "{by_day:#}");

    // The upgrade kept the store as it was, and a second start does not upgrade again.
    assert!(b.home.join("bosun.redb.v2.bak").exists());
    b.ok(&["daemon", "stop"])?;
    assert_eq!(b.json(&["usage", "--by", "agent"])?["total"], old["total"]);
    let again = b.json(&["daemon", "status"])?;
    assert!(again["upgrade"].is_null(), "{again:#}");
    b.finish()
}

#[test]
fn a_runs_decisions_kept_in_its_record_are_shown_in_order_after_the_upgrade() -> anyhow::Result<()>
{
    let dir = fixture_v3();
    let (b, expected) = from_state("upgrade_decision_rows", &dir)?;
    let run = expected("run")?.trim().to_string();
    let old: Vec<Value> = serde_json::from_str(&expected("decisions.json")?)?;
    assert_eq!(old.len(), 4);

    // Every decision, field by field and in order, as the old build showed them.
    assert_eq!(b.decisions(&run)?, old);
    let status = b.json(&["daemon", "status"])?;
    let line = status["upgrade"].as_str().unwrap_or_default();
    assert!(
        line.contains("upgraded from schema 3 to 4")
            && line.contains("the runs' decisions on tool calls (4) are now kept a row each"),
        "{line}"
    );
    // The person's decision still names its approval, which is there, denied.
    let approval = old[3]["approval"].as_str().unwrap_or_default();
    let all = b.all_approvals()?;
    assert!(
        all.iter()
            .any(|a| a["id"] == approval && a["state"] == "denied"),
        "{all:#?}"
    );
    // The list of every run carries them too.
    let listed = b.json(&["ps", "--all"])?;
    let listed = listed
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["id"] == run.as_str()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed["agent"]["decisions"], Value::from(old.clone()));

    // Kept as it was, and not upgraded again at the next start.
    assert!(b.home.join("bosun.redb.v3.bak").exists());
    b.ok(&["daemon", "stop"])?;
    assert_eq!(b.decisions(&run)?, old);
    let again = b.json(&["daemon", "status"])?;
    assert!(again["upgrade"].is_null(), "{again:#}");
    b.finish()
}

/// The store before finished runs' logs were pruned (commit 21a79f4, schema 4 as today), with a
/// plain run and an agent's run whose gateway recorded three MCP calls
/// (`tests/fixtures/upgrade-v4/make.sh`).
fn fixture_v4() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade-v4")
}

#[test]
fn the_previous_mains_runs_read_as_before_and_their_logs_are_pruned_with_their_summaries_kept()
-> anyhow::Result<()> {
    let dir = fixture_v4();
    let (b, expected) = from_state("upgrade_logs_pruned", &dir)?;
    let plain = expected("plain")?.trim().to_string();
    let run = expected("run")?.trim().to_string();

    // As the old build left them: nothing to upgrade, the log byte for byte, the MCP calls.
    assert_eq!(b.ok(&["logs", &plain])?, expected("plain.log")?);
    let tools: Vec<String> = b.show(&run)?["mcp_calls"]["calls"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| c["tool"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    let old: Vec<String> = serde_json::from_str(&expected("mcp_calls.json")?)?;
    assert_eq!(tools, old);
    let status = b.json(&["daemon", "status"])?;
    assert!(status["upgrade"].is_null(), "{status:#}");
    assert!(b.show(&plain)?["log_pruned"].is_null());

    // Their logs are pruned after the retention; what they were stays.
    b.ok(&["daemon", "set", "retention=1s"])?;
    wait_for(
        "the old runs' logs to be pruned",
        Duration::from_secs(60),
        || {
            b.ok(&["daemon", "set", "retention=1s"])?;
            let pruned =
                |r: &str| -> anyhow::Result<bool> { Ok(!b.show(r)?["log_pruned"].is_null()) };
            Ok((pruned(&plain)? && pruned(&run)?).then_some(()))
        },
    )?;
    for id in [&plain, &run] {
        for f in ["log", "runner.log", "mcp-calls.jsonl"] {
            assert!(!b.home.join("runs").join(id).join(f).exists(), "{id}/{f}");
        }
    }
    let shown = b.show(&run)?;
    assert_eq!(shown["outcome"], "succeeded", "{shown:#}");
    assert!(shown["mcp_calls"].is_null(), "{shown:#}");
    assert_eq!(shown["agent"]["decisions_pruned"], 4, "{shown:#}");
    let e = b.fails(&["logs", &plain])?;
    assert!(e.contains("were pruned at"), "{e}");
    // The old store compacts, and opens again after it.
    b.json(&["daemon", "compact"])?;
    b.ok(&["daemon", "stop"])?;
    assert_eq!(b.show(&plain)?["log_pruned"]["why"], "retention");
    b.finish()
}
