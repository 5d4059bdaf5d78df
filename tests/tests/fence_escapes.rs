//! The four escapes an allowed command had from the fence, tried from inside real runs of
//! Claude Code, Codex and Gemini CLI against their fake model APIs, and checked from outside:
//! - a hook planted in the person's own CLI settings (the file is unchanged);
//! - a git hook planted in the run's own repository (the file does not exist);
//! - a secret key read (it is in no request the fake model API received);
//! - a host reached that the agent did not list (a listener on 127.0.0.2 counts no connection,
//!   over TCP through the proxy or around it, nor over UDP); through the proxy it is asked for,
//!   nobody answers, and the wait's end refuses it with 403 (`fence_ask_host.rs` answers).
//!
//! The same run then works normally: it writes in its folder and reaches a host its
//! `web.fetch` lists, through bosun's proxy, once; each connection is in its log.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bosun_tests::{Bosun, CountingServer, FakeModel};

const KEY: &str = "CANARY-PRIVATE-KEY-5d1e9b";

/// The approval wait of the agents here: the ask for the unlisted host is refused when it runs
/// out, well within the 5 s the script's curl waits.
const NOBODY_ANSWERS: &str = "approval.wait=1s";

/// What the allowed command tries, as one shell script run by `bash`, given the person's
/// settings file to plant a hook in, the listener it must not reach, the UDP port it must not
/// reach, and the allowed host's port.
fn attempts(settings: &Path, key: &Path, refused: u16, udp: u16, allowed: u16) -> String {
    format!(
        "echo '{{\"hooks\":{{\"SessionStart\":[{{\"hooks\":[{{\"type\":\"command\",\"command\":\"touch /tmp/pwned\"}}]}}]}}}}' > {settings} 2>/dev/null; echo settings=$?; \
         echo 'touch /tmp/pwned' > .git/hooks/post-commit 2>/dev/null; echo hook=$?; \
         cat {key} 2>&1; echo key=$?; \
         curl -s -m 5 http://127.0.0.2:{refused}/ -o /dev/null -w 'proxied=%{{http_code}} '; echo curl=$?; \
         curl -s -m 5 --noproxy '*' http://127.0.0.2:{refused}/; echo direct=$?; \
         (exec 3<>/dev/tcp/127.0.0.2/{refused}) 2>/dev/null; echo tcp=$?; \
         echo hi > /dev/udp/127.0.0.1/{udp}; \
         echo inside > ok.txt; \
         echo '{{\"mcpServers\":{{}}}}' > .mcp.json; mkdir -p .vscode && echo '{{}}' > .vscode/tasks.json; \
         curl -s -m 10 http://127.0.0.1:{allowed}/page; echo allowed=$?",
        settings = settings.display(),
        key = key.display(),
    )
}

/// The person's side of a run: a git repository as the run's folder, a private key in the
/// person's home, the listeners.
struct Scene {
    work: PathBuf,
    home: PathBuf,
    refused: CountingServer,
    udp: UdpSocket,
    allowed: CountingServer,
}

impl Scene {
    fn new(b: &Bosun, agent: &str) -> anyhow::Result<Scene> {
        let dir = b.scratch().join(agent);
        let (work, home) = (dir.join("work"), dir.join("home"));
        std::fs::create_dir_all(&work)?;
        std::fs::create_dir_all(home.join(".ssh"))?;
        std::fs::write(home.join(".ssh/id_ed25519"), KEY)?;
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&work)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()?;
        assert!(git.success());
        let udp = UdpSocket::bind("127.0.0.1:0")?;
        udp.set_read_timeout(Some(Duration::from_millis(500)))?;
        Ok(Scene {
            work,
            home,
            refused: CountingServer::start("127.0.0.2")?,
            udp,
            allowed: CountingServer::start("127.0.0.1")?,
        })
    }

    /// Writes what the command tries into `escape.sh` in the run's folder (each CLI's shell
    /// tool quotes a long line its own way), and returns the command that runs it.
    fn script(&self, settings: &Path) -> anyhow::Result<String> {
        let script = attempts(
            settings,
            &self.home.join(".ssh/id_ed25519"),
            self.refused.port,
            self.udp.local_addr()?.port(),
            self.allowed.port,
        );
        std::fs::write(self.work.join("escape.sh"), script)?;
        Ok("bash escape.sh".to_string())
    }

    /// Checks from outside that no escape worked and the normal work did, and returns the
    /// run's log.
    fn check(
        &self,
        b: &Bosun,
        run: &str,
        fake: &FakeModel,
        settings: &Path,
    ) -> anyhow::Result<String> {
        let view = b.wait_ended(run, Duration::from_secs(120))?;
        assert_eq!(view["outcome"], "succeeded", "{view:#}");
        assert!(!self.work.join(".git/hooks/post-commit").exists());
        // What can run programs, made by the run where nothing was, is set aside at its end.
        for made in [".mcp.json", ".vscode"] {
            assert!(!self.work.join(made).exists(), "{made} is left in place");
            assert!(
                self.work
                    .join(format!("{made}.set-aside-by-bosun"))
                    .exists(),
                "{made} was not set aside"
            );
        }
        let turns = serde_json::to_string(&fake.turns())?;
        assert!(!turns.contains(KEY), "the key reached the model: {turns}");
        assert!(turns.contains("key="), "the command ran: {turns}");
        assert_eq!(self.refused.count(), 0, "a host not listed was reached");
        let mut buf = [0u8; 16];
        assert!(
            self.udp.recv(&mut buf).is_err(),
            "a UDP packet left the run"
        );
        assert_eq!(
            std::fs::read_to_string(self.work.join("ok.txt")).unwrap_or_default(),
            "inside\n",
            "{turns}"
        );
        assert!(
            turns.contains("reached-ok!"),
            "the allowed host was not reached: {turns}"
        );
        assert_eq!(self.allowed.count(), 1, "the allowed host is reached once");
        assert!(
            turns.contains("proxied=403"),
            "the proxy refused it: {turns}"
        );
        // bosun's own lines in the run's log go to stderr.
        let log = String::from_utf8_lossy(&b.output(&["logs", run])?.stderr).into_owned();
        assert!(
            log.contains(&format!(
                "bosun's proxy: refused 127.0.0.2:{}",
                self.refused.port
            )),
            "{log}"
        );
        assert!(
            log.contains(&format!("bosun's proxy: 127.0.0.1:{}", self.allowed.port)),
            "{log}"
        );
        assert!(!settings.exists(), "{} was written", settings.display());
        let shown = b.ok(&["show", run])?;
        assert!(
            shown.contains("network: only through bosun's proxy"),
            "{shown}"
        );
        Ok(log)
    }
}

#[test]
fn claude_code_s_allowed_commands_cannot_escape_the_fence() -> anyhow::Result<()> {
    let b = Bosun::new("fence_escapes_claude");
    let scene = Scene::new(&b, "coder")?;
    let settings = b.scratch().join("coder/claude/settings.json");
    let command = scene.script(&settings)?;
    let fake = FakeModel::running("anthropic", &command)?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "Bash=allow",
        "web.fetch=127.0.0.1",
        NOBODY_ANSWERS,
    ])?;
    let run = b.run_agent("coder", "try")?;
    scene.check(&b, &run, &fake, &settings)?;
    // The person's own settings in their home are out of reach too.
    assert!(!scene.home.join(".claude/settings.json").exists());
    b.finish()
}

#[test]
fn codex_s_allowed_commands_cannot_escape_the_fence() -> anyhow::Result<()> {
    let b = Bosun::new("fence_escapes_codex");
    let scene = Scene::new(&b, "coder")?;
    let settings = b.scratch().join("coder/codex/config.toml");
    let before = std::fs::read(&settings).ok();
    let command = scene.script(&b.scratch().join("coder/codex/planted.json"))?;
    let fake = FakeModel::running("openai", &command)?;
    b.add_codex_agent("coder", fake.url(), &[])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "exec_command=allow",
        "web.fetch=127.0.0.1",
        NOBODY_ANSWERS,
    ])?;
    let run = b.run_agent("coder", "try")?;
    scene.check(
        &b,
        &run,
        &fake,
        &b.scratch().join("coder/codex/planted.json"),
    )?;
    assert_eq!(
        std::fs::read(&settings).ok(),
        before,
        "Codex's config changed"
    );
    b.finish()
}

#[test]
fn gemini_cli_s_allowed_commands_cannot_escape_the_fence_and_read_deny_hides_more()
-> anyhow::Result<()> {
    let b = Bosun::new("fence_escapes_gemini");
    let scene = Scene::new(&b, "coder")?;
    // Gemini's HOME is the run's own, so the key is hidden by the agent's own list.
    let secrets = scene.home.join(".ssh");
    let settings = scene.home.join(".gemini/settings.json");
    let command = scene.script(&settings)?;
    let fake = FakeModel::running("gemini", &command)?;
    b.add_gemini_agent("coder", fake.url(), &[])?;
    b.ok(&[
        "agent",
        "set",
        "coder",
        "run_shell_command=allow",
        "web.fetch=127.0.0.1",
        NOBODY_ANSWERS,
        &format!("read.deny={}", secrets.display()),
        &format!("roots={}", b.scratch().join("coder/work").display()),
    ])?;
    let run = b.run_agent("coder", "try")?;
    scene.check(&b, &run, &fake, &settings)?;
    b.finish()
}

#[test]
fn read_paths_are_refused_with_the_reason() -> anyhow::Result<()> {
    let b = Bosun::new("fence_read_paths");
    let work = b.scratch().join("work");
    std::fs::create_dir_all(&work)?;
    b.ok(&[
        "agent",
        "add",
        "tool",
        "--cli",
        "command",
        "--cwd",
        &work.display().to_string(),
        "--",
        "true",
    ])?;
    for (value, says) in [
        ("read.deny=relative/dir", "is not an absolute path"),
        ("read.allow=/home/../etc", "names `..`"),
        ("read.deny=/", "the root of the file system"),
        ("fence.net=maybe", "fence.net takes on or off"),
    ] {
        let err = b.fails(&["agent", "set", "tool", value])?;
        assert!(err.contains(says), "{value}: {err}");
    }
    b.ok(&[
        "agent",
        "set",
        "tool",
        "read.deny=/srv/a,/srv/b",
        "fence.net=off",
    ])?;
    let v = b.json(&["agent", "show", "tool"])?;
    assert_eq!(
        v["workspace"]["read_deny"],
        serde_json::json!(["/srv/a", "/srv/b"])
    );
    assert_eq!(v["workspace"]["net_open"], true);
    let text = b.ok(&["agent", "show", "tool"])?;
    assert!(
        text.contains("network not fenced (fence.net=off)"),
        "{text}"
    );
    b.finish()
}

#[test]
fn another_agent_s_folder_cannot_be_read() -> anyhow::Result<()> {
    let b = Bosun::new("fence_other_agents");
    let (mine, theirs) = (b.scratch().join("mine"), b.scratch().join("theirs"));
    std::fs::create_dir_all(&mine)?;
    std::fs::create_dir_all(&theirs)?;
    std::fs::write(theirs.join("notes.txt"), "THEIR-NOTES")?;
    let script = format!(
        "cat {f} 2>&1; echo read=$?; ls {d} 2>&1; echo listed=$?",
        f = theirs.join("notes.txt").display(),
        d = theirs.display()
    );
    for (name, cwd) in [("me", &mine), ("them", &theirs)] {
        let cwd = cwd.display().to_string();
        b.ok(&[
            "agent", "add", name, "--cli", "command", "--cwd", &cwd, "--", "sh", "-c", &script,
        ])?;
    }
    let run = b.run_agent("me", "go")?;
    let view = b.wait_ended(&run, Duration::from_secs(60))?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let log = String::from_utf8_lossy(&b.logs(&run)?).into_owned();
    assert!(!log.contains("THEIR-NOTES"), "{log}");
    assert!(log.contains("read=1") && log.contains("listed=2"), "{log}");
    assert!(log.contains("Permission denied"), "{log}");
    // The other agent's own run reads its folder.
    let run = b.run_agent("them", "go")?;
    b.wait_ended(&run, Duration::from_secs(60))?;
    let log = String::from_utf8_lossy(&b.logs(&run)?).into_owned();
    assert!(log.contains("THEIR-NOTES"), "{log}");
    b.finish()
}
