//! Import from the coding CLIs: config files written by the real Claude Code, Codex and Gemini
//! CLIs in a scratch home, read (never written), shown by name only, and copied into bosun's
//! list with their values in the keychain.

use std::path::{Path, PathBuf};
use std::process::Command;

use bosun_tests::{Bosun, node_bin};
use serde_json::Value;

const CANARY: &str = "canary-import-5c0de";

/// A scratch home with servers added by the real CLIs.
struct Homes {
    home: PathBuf,
    project: PathBuf,
}

impl Homes {
    fn new(b: &Bosun) -> anyhow::Result<Self> {
        let home = b.scratch().join("home");
        let project = b.scratch().join("project");
        for d in [home.join(".claude"), home.join(".codex"), project.clone()] {
            std::fs::create_dir_all(d)?;
        }
        Ok(Self { home, project })
    }

    fn cli(&self, name: &str, args: &[&str]) -> anyhow::Result<()> {
        let out = Command::new(node_bin(name))
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", self.home.join(".claude"))
            .env("CODEX_HOME", self.home.join(".codex"))
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .output()?;
        if !out.status.success() {
            anyhow::bail!(
                "{name} {args:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![
            self.home.join(".claude/.claude.json"),
            self.home.join(".codex/config.toml"),
            self.home.join(".gemini/settings.json"),
        ]
    }
}

fn bosun_for(b: Bosun, homes: &Homes) -> Bosun {
    b.with_env("HOME", homes.home.to_str().unwrap_or_default())
        .with_env(
            "CLAUDE_CONFIG_DIR",
            homes.home.join(".claude").to_str().unwrap_or_default(),
        )
        .with_env(
            "CODEX_HOME",
            homes.home.join(".codex").to_str().unwrap_or_default(),
        )
}

#[test]
fn servers_written_by_the_real_clis_are_imported_and_their_files_left_untouched()
-> anyhow::Result<()> {
    let b = Bosun::new("mcp_import");
    let homes = Homes::new(&b)?;
    let token_line = format!("GH_TOKEN={CANARY}");
    let auth = format!("Authorization: Bearer {CANARY}");
    homes.cli(
        "claude",
        &[
            "mcp",
            "add",
            "--scope",
            "user",
            "--transport",
            "stdio",
            "cgithub",
            "-e",
            &token_line,
            "--",
            "/bin/echo",
            "hi",
        ],
    )?;
    homes.cli(
        "claude",
        &[
            "mcp",
            "add",
            "--scope",
            "user",
            "--transport",
            "http",
            "cremote",
            "https://mcp.example.com/mcp",
            "-H",
            &auth,
        ],
    )?;
    homes.cli(
        "claude",
        &[
            "mcp",
            "add",
            "--transport",
            "sse",
            "clocal",
            "https://local.example.com/sse",
        ],
    )?;
    homes.cli(
        "codex",
        &[
            "mcp",
            "add",
            "xtool",
            "--env",
            &token_line,
            "--",
            "/bin/echo",
            "codex",
        ],
    )?;
    homes.cli(
        "gemini",
        &[
            "mcp",
            "add",
            "-s",
            "user",
            "-t",
            "http",
            "-H",
            &format!("X-Key: {CANARY}"),
            "gremote",
            "https://gemini.example.com/mcp",
        ],
    )?;
    let before: Vec<(PathBuf, Vec<u8>)> = homes
        .files()
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap_or_default();
            (f, bytes)
        })
        .collect();
    assert!(
        before.iter().all(|(_, b)| !b.is_empty()),
        "each CLI wrote its file"
    );

    let b = bosun_for(b, &homes);
    let found = b.json(&["mcp", "import"])?;
    let cands = found["candidates"].as_array().cloned().unwrap_or_default();
    let by_name = |n: &str| {
        cands
            .iter()
            .find(|c| c["name"] == n)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_name("cgithub")["source"], "Claude Code");
    assert_eq!(by_name("cgithub")["scope"], "user");
    assert_eq!(by_name("cgithub")["kind"], "stdio");
    assert_eq!(
        by_name("cgithub")["env_names"],
        serde_json::json!(["GH_TOKEN"])
    );
    assert_eq!(
        by_name("cremote")["header_names"],
        serde_json::json!(["Authorization"])
    );
    assert!(
        by_name("clocal")["scope"]
            .as_str()
            .is_some_and(|s| s.starts_with("local (")),
        "{cands:?}"
    );
    assert_eq!(by_name("clocal")["kind"], "sse");
    assert_eq!(by_name("xtool")["source"], "Codex");
    assert_eq!(by_name("gremote")["source"], "Gemini CLI");
    assert_eq!(by_name("gremote")["kind"], "http");
    assert!(cands.iter().all(|c| c["status"] == "new"));
    let text = b.ok(&["mcp", "import"])?;
    assert!(
        text.contains("GH_TOKEN") && !text.contains(CANARY),
        "names only: {text}"
    );

    let imported = b.json(&["mcp", "import", "cgithub", "cremote", "xtool", "gremote"])?;
    assert_eq!(imported.as_array().map(Vec::len), Some(4));
    let shown = b.json(&["mcp", "show", "cgithub"])?;
    assert_eq!(
        shown["env"][0],
        serde_json::json!({"name": "GH_TOKEN", "saved": true})
    );
    assert_eq!(shown["command"], "/bin/echo");
    let keys = std::fs::read_to_string(b.keychain_file())?;
    assert_eq!(
        keys.matches(CANARY).count(),
        4,
        "every value went to the keychain: {}",
        keys.len()
    );

    // Now marked as in the list; --all takes only what is new.
    let again = b.json(&["mcp", "import"])?;
    let status = |n: &str| {
        again["candidates"].as_array().and_then(|a| {
            a.iter()
                .find(|c| c["name"] == n)
                .map(|c| c["status"].clone())
        })
    };
    assert_eq!(status("cgithub"), Some(Value::from("already_in_list")));
    let rest = b.json(&["mcp", "import", "--all"])?;
    assert_eq!(
        rest.as_array()
            .map(|a| a.iter().map(|s| s["name"].clone()).collect::<Vec<_>>()),
        Some(vec![Value::from("clocal")])
    );

    for (f, bytes) in &before {
        assert_eq!(
            &std::fs::read(f)?,
            bytes,
            "{} must be byte for byte unchanged",
            f.display()
        );
    }
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn clashes_and_unreadable_files_are_refused_plainly() -> anyhow::Result<()> {
    let b = Bosun::new("mcp_import_bad");
    let homes = Homes::new(&b)?;
    homes.cli(
        "claude",
        &[
            "mcp",
            "add",
            "--scope",
            "user",
            "--transport",
            "stdio",
            "tool",
            "--",
            "/bin/echo",
            "one",
        ],
    )?;
    let b = bosun_for(b, &homes);
    b.ok(&["mcp", "add", "tool", "--", "/bin/echo", "other"])?;
    let found = b.json(&["mcp", "import"])?;
    assert_eq!(found["candidates"][0]["status"], "name_taken");
    let err = b.fails(&["mcp", "import", "tool"])?;
    assert!(err.contains("there is already a server named `tool`; import it under another name with --as tool=NEW"), "{err}");
    let ok = b.json(&["mcp", "import", "tool", "--as", "tool=tool-claude"])?;
    assert_eq!(ok[0]["name"], "tool-claude");
    let err = b.fails(&["mcp", "import", "nope"])?;
    assert!(
        err.contains("no server `nope` was found to import"),
        "{err}"
    );

    let missing = homes.home.join("missing/.claude.json");
    let err = b.fails(&[
        "mcp",
        "import",
        "--file",
        missing.to_str().unwrap_or_default(),
    ])?;
    assert!(
        err.contains("could not read") && err.contains("there is no such file"),
        "{err}"
    );
    let broken = homes.home.join("broken/settings.json");
    std::fs::create_dir_all(broken.parent().unwrap_or(Path::new("/")))?;
    std::fs::write(&broken, "{ \"mcpServers\": { ")?;
    let err = b.fails(&[
        "mcp",
        "import",
        "--file",
        broken.to_str().unwrap_or_default(),
    ])?;
    assert!(err.contains("is not valid JSON"), "{err}");
    let odd = homes.home.join("notes.txt");
    std::fs::write(&odd, "x")?;
    let err = b.fails(&["mcp", "import", "--file", odd.to_str().unwrap_or_default()])?;
    assert!(err.contains("is not a file bosun can import from"), "{err}");
    let names: Vec<String> = b
        .json(&["mcp", "list"])?
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|s| s["builtin"] != true)
                .filter_map(|s| s["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, ["tool", "tool-claude"], "nothing half-imported");
    b.finish()
}
