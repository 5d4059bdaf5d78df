//! bosun's MCP gateway, end to end: a run of the real Claude Code against its fake model API,
//! with the real `@modelcontextprotocol/server-everything` behind the gateway of the run's
//! runner. The model sees what the server's rules let through (a denied tool is not offered,
//! results of an untrusted server are framed), and a second client dials the run's gateway
//! itself, the way the CLI does (`bosun-runner gateway --socket … everything`), to hold each
//! rule to account where it is enforced: refusals, the deadline and its cancellation, a
//! server SIGKILLed between two calls, head-and-tail results with the whole kept in the run's
//! log, roots, sampling and elicitation refused, a minimal environment.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bosun_tests::gateway_client::{GatewayClient as Client, text_of};
use bosun_tests::{Bosun, FakeModel, everything_bin, session_members};
use serde_json::{Value, json};

/// The harness's Claude key (`Bosun::add_claude_agent`).
const API_KEY: &str = "sk-ant-test-77c1e0d9a4";
const SERVER_SECRET: &str = "everything-gw-token-7d2e";

/// A Claude agent on the fake API with server-everything on, the server held to `rules`
/// (`bosun mcp edit` flags).
fn setup(b: &Bosun, fake: &FakeModel, rules: &[&str]) -> anyhow::Result<PathBuf> {
    setup_with(b, fake, rules, true)
}

/// With `look`, the person lists the server's tools first: the policy then knows echo only
/// reads, and the gateway holds back a tool that is not among those listed (the test client's
/// own capabilities bring tools that bosun's look does not see).
fn setup_with(b: &Bosun, fake: &FakeModel, rules: &[&str], look: bool) -> anyhow::Result<PathBuf> {
    if look {
        b.add_everything("everything", SERVER_SECRET)?;
    } else {
        b.add_everything_unlisted("everything", SERVER_SECRET)?;
    }
    if !rules.is_empty() {
        let mut args = vec!["mcp", "edit", "everything"];
        args.extend(rules);
        b.ok(&args)?;
    }
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;
    Ok(b.scratch().join("coder").join("work"))
}

/// The agent `coder` talks to `fake` from its next run on.
fn point_at(b: &Bosun, fake: &FakeModel) -> anyhow::Result<()> {
    b.point_claude_at("coder", fake)?;
    Ok(())
}

/// A run of `coder` against a new fake model answering `script`, followed to its end, which
/// must be a success; the fake, for what the model was sent.
fn run_on(b: &Bosun, script: &str, prompt: &str) -> anyhow::Result<FakeModel> {
    let fake = FakeModel::start("anthropic", script)?;
    point_at(b, &fake)?;
    let out = b.output(&["agent", "run", "coder", prompt, "--follow"])?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(fake)
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// bosun's own lines of a run's log (`bosun logs` prints them on stderr).
fn log_text(b: &Bosun, id: &str) -> String {
    b.output(&["logs", id])
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

#[test]
fn the_model_gets_what_the_rules_let_through_and_the_log_says_each_call() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_model");
    let fake = FakeModel::start(
        "anthropic",
        r#"tool:echo:{"message":"ping"};tool:everything/get-sum:{"a":1,"b":2};text:All done."#,
    )?;
    setup(
        &b,
        &fake,
        &["--deny-tool", "get-sum", "--deny-tool", "trigger-*"],
    )?;
    let shown = b.ok(&["mcp", "show", "everything"])?;
    assert!(
        shown.contains("deny tools  get-sum, trigger-*") && shown.contains("untrusted"),
        "{shown}"
    );

    let out = b.output(&["agent", "run", "coder", "echo ping, then add", "--follow"])?;
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let turns = fake.turns();
    let offered = names(&turns[0]["tools"]);
    assert!(
        offered.contains(&"mcp__everything__echo".to_string()),
        "{offered:?}"
    );
    for held in ["get-sum", "trigger-long-running-operation"] {
        assert!(
            !offered.iter().any(|t| t.ends_with(&held)),
            "the denied tool {held} is not offered: {offered:?}"
        );
    }
    assert!(
        offered.iter().any(|t| t == "mcp__everything__get-env"),
        "a tool no pattern names is offered: {offered:?}"
    );
    let echo = turns[1]["tool_result"].as_str().unwrap_or_default();
    assert!(
        echo.contains("Echo: ping")
            && echo.starts_with("[untrusted content from the MCP server `everything`"),
        "the result of an untrusted server is framed: {echo}"
    );
    let refused = turns[2]["tool_result"].as_str().unwrap_or_default();
    assert!(
        !refused.contains("\"3\"") && !refused.contains("is 3"),
        "the denied call did not run: {refused}"
    );

    let runs = b.json(&["ps", "--all"])?;
    let id = runs[0]["id"].as_str().unwrap_or_default().to_string();
    let log = log_text(&b, &id);
    assert!(
        log.contains(r#"mcp everything/echo {"message":"ping"}: answered in"#),
        "the call is in the run's log: {log}"
    );
    // And in the run's record: `bosun show`, and its page.
    let shown = b.json(&["show", &id])?;
    assert_eq!(shown["mcp_calls"]["total"], 1, "{shown:#}");
    let call = &shown["mcp_calls"]["calls"][0];
    assert_eq!(
        (
            &call["server"],
            &call["tool"],
            &call["args"],
            &call["outcome"]["kind"]
        ),
        (
            &json!("everything"),
            &json!("echo"),
            &json!(r#"{"message":"ping"}"#),
            &json!("answered")
        ),
        "{shown:#}"
    );
    assert!(call["chars"].as_u64().is_some_and(|n| n > 0), "{call}");
    // Judged once: Claude's control protocol brought the call to bosund, and the gateway let it
    // through on that decision without asking again; its entry says who decided.
    const COVERED: &str =
        "the agent's approval mode lets tools of this kind run without asking (step 6)";
    assert_eq!(
        call["decision"],
        json!({"verdict": "allowed", "by": COVERED, "asked": "cli"}),
        "{shown:#}"
    );
    let echoes: Vec<Value> = b
        .decisions(&id)?
        .into_iter()
        .filter(|d| d["tool"] == "mcp__everything__echo")
        .collect();
    assert_eq!(echoes.len(), 1, "one decision for the call: {echoes:#?}");
    assert_eq!(echoes[0]["by"], COVERED);
    assert!(
        b.all_approvals()?.is_empty(),
        "nothing waited for the person"
    );
    let text = b.ok(&["show", &id])?;
    assert!(
        text.contains(r#"everything/echo {"message":"ping"}: answered after"#)
            && text.contains(&format!(
                "allowed by {COVERED} (asked by the CLI before the call)"
            )),
        "{text}"
    );
    let ui = bosun_tests::webui::Ui::start(&b)?;
    let page = bosun_tests::browser_scenario(&ui.login, "mcpcalls", &[("BOSUN_UI_RUN", &id)])?;
    assert_eq!(page["heading"], "MCP calls (1)", "{page:#}");
    assert_eq!(page["calls"][0]["tool"], "echo", "{page:#}");
    assert_eq!(page["calls"][0]["outcome"], "answered", "{page:#}");
    assert_eq!(page["calls"][0]["verdict"], "allowed", "{page:#}");
    assert!(
        page["calls"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!(
                "allowed by {COVERED} (asked by the CLI before the call)"
            ))),
        "{page:#}"
    );
    assert!(
        page["calls"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains(r#"{"message":"ping"}"#)),
        "{page:#}"
    );
    b.ok(&["ui", "--stop"])?;
    b.assert_secret_nowhere(SERVER_SECRET)?;
    b.assert_secret_nowhere(API_KEY)?;

    // An empty pattern clears the list; the other list is kept as it is.
    b.ok(&["mcp", "edit", "everything", "--allow-tool", "echo"])?;
    b.ok(&["mcp", "edit", "everything", "--deny-tool", ""])?;
    let rules = &b.json(&["mcp", "show", "everything"])?["rules"];
    assert!(
        rules["deny_tools"].as_array().is_none_or(Vec::is_empty),
        "{rules:#}"
    );
    assert_eq!(
        rules["allow_tools"],
        serde_json::json!(["echo"]),
        "{rules:#}"
    );
    b.finish()
}

/// The person, letting every call that waits through: `bosun inbox -f --json` followed (it lists
/// what waits, then what starts waiting), and `bosun approve ID` for each. Until dropped.
struct Approver {
    follow: std::process::Child,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Approver {
    fn start(b: &Bosun) -> anyhow::Result<Self> {
        use std::io::BufRead;
        // How `bosun` is run for this test, for the thread that approves.
        let template = b.cmd(&[]);
        let program = template.get_program().to_owned();
        let envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = template
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
            .collect();
        let mut follow = b
            .cmd(&["inbox", "-f", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let out = follow
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let thread = std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let Ok(item) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if item["kind"] != "approval" || item["state"] != "waiting" {
                    continue;
                }
                let mut approve = std::process::Command::new(&program);
                for (k, v) in &envs {
                    match v {
                        Some(v) => approve.env(k, v),
                        None => approve.env_remove(k),
                    };
                }
                let _ = approve
                    .args(["approve", &bosun_tests::short_id(&item)])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        });
        Ok(Self {
            follow,
            thread: Some(thread),
        })
    }
}

impl Drop for Approver {
    fn drop(&mut self) {
        let _ = self.follow.kill();
        let _ = self.follow.wait();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn everything_pids(sid: i32) -> Vec<i32> {
    session_members(sid)
        .into_iter()
        .filter(|(_, c)| c.contains("mcp-server-everything"))
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn each_rule_holds_at_the_gateway_itself() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_rules");
    let fake = FakeModel::start("anthropic", "hold")?;
    let work = setup_with(
        &b,
        &fake,
        &[
            "--deny-tool",
            "get-sum",
            "--call-deadline",
            "1s",
            "--max-result",
            "256",
        ],
        false,
    )?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let view = b.show(&id)?;
    let pid = view["pid"].as_i64().unwrap_or_default() as i32;
    let sid = bosun_tests::session_of(pid).unwrap_or_default();
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let before = everything_pids(sid);

    // No control protocol covers this client's calls: each is judged by bosund's policy at the
    // gateway, and the server's tools are unknown to it (not looked at), so each waits for the
    // person, who lets them all through.
    let approver = Approver::start(&b)?;
    let mut c = Client::dial(&socket, "everything")?;
    let init = c.ask(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "probe", "version": "1"},
               "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}}}),
        Duration::from_secs(30),
    )?;
    let caps = init["result"]["capabilities"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(caps.contains_key("tools"), "{init}");
    assert!(
        !caps.contains_key("resources") && !caps.contains_key("logging"),
        "only what bosun governs reaches the client: {init}"
    );
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    // A capability the person has not approved is refused at the gateway, with what to do.
    let refused = c.ask("resources/list", json!({}), Duration::from_secs(10))?;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("bosun mcp approve everything --capability resources")),
        "{refused}"
    );

    // The denied tool is not listed, and a call to it never reaches the server.
    let list = c.ask("tools/list", json!({}), Duration::from_secs(10))?;
    let listed: Vec<String> = list["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(listed.contains(&"echo".to_string()), "{listed:?}");
    assert!(!listed.contains(&"get-sum".to_string()), "{listed:?}");
    let refused = c.call("get-sum", json!({"a": 1, "b": 2}), Duration::from_secs(10))?;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        text_of(&refused).contains("held back for this run (its deny list holds `get-sum`)"),
        "{refused}"
    );

    // A call answers, framed as untrusted; the server has its secret and a minimal
    // environment, not the CLI's.
    let echo = c.call("echo", json!({"message": "one"}), Duration::from_secs(10))?;
    assert!(text_of(&echo).contains("Echo: one"), "{echo}");
    assert!(text_of(&echo).starts_with("[untrusted content"), "{echo}");
    // A call whose arguments hold a secret of the run: its record says `[redacted]`.
    c.call(
        "echo",
        json!({"message": SERVER_SECRET}),
        Duration::from_secs(10),
    )?;
    let env = text_of(&c.call("get-env", json!({}), Duration::from_secs(10))?);
    // Its result is cut to 256 characters here: the server's own environment is read instead.
    let line = format!("EVERYTHING_TOKEN={SERVER_SECRET}");
    let environs: Vec<Vec<String>> = everything_pids(sid)
        .into_iter()
        .filter(|p| !before.contains(p))
        .map(bosun_tests::environ_of)
        .collect();
    assert!(
        environs.iter().any(|e| e.contains(&line)),
        "the server has its line: {env}"
    );
    // Its network is its own, whose one way out is its own proxy in the runner.
    assert!(
        environs.iter().any(|e| e
            .iter()
            .any(|v| v.starts_with("HTTPS_PROXY=http://127.0.0.1:"))),
        "the server's network goes through its proxy: {environs:?}"
    );
    assert!(
        !env.contains("ANTHROPIC_BASE_URL") && !env.contains("CLAUDE_CONFIG_DIR"),
        "the server's environment is minimal"
    );

    // Roots are the run's workspace.
    let roots = text_of(&c.call("get-roots-list", json!({}), Duration::from_secs(10))?);
    assert!(
        roots.contains(&format!("file://{}", work.display())),
        "roots/list is answered with the workspace: {roots}"
    );

    // Sampling and elicitation are denied by default: the server is not told the client can
    // be asked (though this client said so), so it offers no tool that asks.
    let sampled = c.call(
        "trigger-sampling-request",
        json!({"prompt": "hi", "maxTokens": 10}),
        Duration::from_secs(10),
    )?;
    let elicited = c.call(
        "trigger-elicitation-request",
        json!({}),
        Duration::from_secs(10),
    )?;
    for (what, answer) in [("sampling", &sampled), ("elicitation", &elicited)] {
        let text = format!("{answer}");
        assert!(
            text.contains(&format!("Tool trigger-{what}-request not found")),
            "{what} is not offered: {text}"
        );
    }

    // A long result reaches the client as head and tail; the whole is in the run's log.
    let long: String = (0..100).map(|i| format!("w{i:03} ")).collect();
    let cut = text_of(&c.call("echo", json!({"message": long}), Duration::from_secs(10))?);
    assert!(
        cut.contains("…[omitted ") && cut.contains("w000") && cut.contains("w099"),
        "{cut}"
    );
    assert!(!cut.contains("w050"), "the middle is left out: {cut}");

    // Past its deadline a call ends in an error, and its late answer never comes.
    let started = Instant::now();
    let late = c.call(
        "trigger-long-running-operation",
        json!({"duration": 4, "steps": 2}),
        Duration::from_secs(10),
    )?;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        text_of(&late).contains("did not answer within 1 s"),
        "{late}"
    );
    let late_id = late["id"].clone();
    let after = c.drain(Duration::from_secs(5));
    assert!(
        !after.iter().any(|m| m["id"] == late_id),
        "the late answer is dropped: {after:#?}"
    );

    // The server SIGKILLed between two calls: the next call starts it again and answers.
    let mine: Vec<i32> = everything_pids(sid)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(mine.len(), 1, "one server for this connection: {mine:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(mine[0]),
        nix::sys::signal::Signal::SIGKILL,
    )?;
    std::thread::sleep(Duration::from_millis(500));
    let again = c.call("echo", json!({"message": "two"}), Duration::from_secs(30))?;
    assert!(text_of(&again).contains("Echo: two"), "{again}");

    // What the person sees.
    let log = log_text(&b, &id);
    for want in [
        "mcp everything/get-sum {\"a\":1,\"b\":2}: refused by bosun's gateway (its deny list holds `get-sum`)",
        "mcp everything/echo {\"message\":\"one\"}: answered in",
        "the model got 256 of them (head and tail), the whole result follows",
        "mcp everything/echo whole result: Echo: w000",
        "w050",
        "mcp everything/trigger-long-running-operation {\"duration\":4,\"steps\":2}: no answer within 1 s; cancelled, not sent again",
        "bosun's MCP gateway: everything ended: it was killed by SIGKILL",
        "bosun's MCP gateway: everything was started again and initialized",
    ] {
        assert!(log.contains(want), "the log says {want:?}: {log}");
    }
    assert_eq!(
        log.matches("mcp everything/trigger-long-running-operation")
            .count(),
        1,
        "the late call is said once and never sent again: {log}"
    );
    assert!(!log.contains(SERVER_SECRET), "the log holds no secret");
    // Each call is an entry of the run's record, with how it ended.
    let shown = b.json(&["show", &id])?;
    let calls = shown["mcp_calls"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let kinds: Vec<(String, String)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or_default().to_string(),
                c["outcome"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("get-sum", "refused"),
        ("echo", "answered"),
        ("echo", "answered"),
        ("get-env", "answered"),
        ("get-roots-list", "answered"),
        ("trigger-sampling-request", "answered_error"),
        ("trigger-elicitation-request", "answered_error"),
        ("echo", "answered"),
        ("trigger-long-running-operation", "timed_out"),
        ("echo", "answered"),
    ]
    .iter()
    .map(|(t, k)| (t.to_string(), k.to_string()))
    .collect();
    assert_eq!(kinds, want, "{shown:#}");
    assert_eq!(shown["mcp_calls"]["total"], want.len(), "{shown:#}");
    assert_eq!(calls[2]["args"], r#"{"message":"[redacted]"}"#, "{shown:#}");
    let cut_call = &calls[7];
    assert_eq!(cut_call["model_got"], 256, "{cut_call}");
    assert!(
        cut_call["chars"].as_u64().is_some_and(|n| n > 256),
        "{cut_call}"
    );
    assert!(
        calls[0]["outcome"]["reason"] == "its deny list holds `get-sum`",
        "{shown:#}"
    );
    let record = std::fs::read_to_string(b.home.join("runs").join(&id).join("mcp-calls.jsonl"))?;
    assert!(
        !record.contains(SERVER_SECRET),
        "no secret in the record of calls"
    );

    drop(c);
    drop(approver);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    bosun_tests::wait_for(
        "the run's session to be empty",
        Duration::from_secs(10),
        || Ok(session_members(sid).is_empty().then_some(())),
    )?;
    assert!(
        !socket.exists(),
        "the gateway's socket is gone with the run"
    );
    b.finish()
}

#[test]
fn bad_rules_are_refused_with_the_reason_and_nothing_changes() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_bad_rules");
    let everything = everything_bin().display().to_string();
    b.ok(&["mcp", "add", "everything", "--", &everything, "stdio"])?;
    for (args, want) in [
        (
            vec!["--call-deadline", "2h"],
            "a call's deadline is from 1 s to 1 h",
        ),
        (vec!["--call-deadline", "0s"], "is zero"),
        (
            vec!["--max-result", "10"],
            "from 256 to 10000000 characters",
        ),
        (vec!["--deny-tool", " "], "a tool pattern is empty"),
    ] {
        let mut all = vec!["mcp", "edit", "everything"];
        all.extend(args.iter());
        all.extend(["--trusted"]);
        let out = b.output(&all)?;
        assert!(!out.status.success(), "{args:?} is refused");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let shown = b.json(&["mcp", "show", "everything"])?;
    assert_eq!(shown["rules"]["trusted"], false, "nothing half-applied");
    assert_eq!(shown["rules"]["deadline_ms"], 60_000);
    b.finish()
}

#[test]
fn calls_go_on_while_bosund_is_sigkilled_each_answered_once_in_order() -> anyhow::Result<()> {
    const CALLS: usize = 200;
    let b = Bosun::new("gateway_chaos");
    let fake = FakeModel::start("anthropic", "hold")?;
    setup(&b, &fake, &[])?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "everything")?;
    c.initialize()?;

    // bosund is SIGKILLed at three moments of the 200 calls, and started again by a command
    // meanwhile. Every call is judged by bosund's policy (no control protocol covers this
    // client's calls), so the call made then waits for bosund to be back, and the runner asks
    // again once it is.
    let kills = [CALLS / 5, CALLS / 2, CALLS * 4 / 5];
    for n in 1..=CALLS {
        let mut restart = None;
        if kills.contains(&n) {
            b.kill_daemon()?;
            restart = Some(b.cmd(&["ps"]).stdout(std::process::Stdio::null()).spawn()?);
        }
        let answer = c.call(
            "echo",
            json!({"message": format!("n{n:03}")}),
            Duration::from_secs(30),
        )?;
        if let Some(mut ps) = restart {
            ps.wait()?;
        }
        let text = text_of(&answer);
        assert!(
            text.contains(&format!("Echo: n{n:03}")),
            "call {n} answered with its own result: {answer}"
        );
    }
    // Nothing more comes: no call was answered twice.
    let extra = c.drain(Duration::from_secs(1));
    assert!(
        !extra.iter().any(|m| m.get("id").is_some()),
        "no answer twice: {extra:#?}"
    );

    // The run's log, written across the restarts, says each call once, in order.
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    let log = log_text(&b, &id);
    let said: Vec<String> = log
        .lines()
        .filter_map(|l| {
            l.split("mcp everything/echo {\"message\":\"")
                .nth(1)
                .map(|rest| rest.chars().take(4).collect())
        })
        .collect();
    let want: Vec<String> = (1..=CALLS).map(|n| format!("n{n:03}")).collect();
    assert_eq!(said, want, "each call once, in order, in the run's log");
    // Each call judged exactly once, in order, however often the runner asked again across the
    // kills (and a decision told before a kill saved it was told back and saved once).
    let judged: Vec<String> = b
        .decisions(&id)?
        .into_iter()
        .filter(|d| d["tool"] == "mcp__everything__echo" && d["decision"] == "allowed")
        .filter_map(|d| {
            d["summary"]
                .as_str()
                .and_then(|s| s.split("\"message\":\"").nth(1))
                .map(|rest| rest.chars().take(4).collect())
        })
        .collect();
    assert_eq!(judged, want, "one decision per call, in order");
    b.finish()
}

#[test]
fn a_server_reached_by_address_is_reached_by_the_runner_and_the_cli_holds_none_of_it()
-> anyhow::Result<()> {
    const CANARY: &str = "canary-gw-http-91e4";
    let b = Bosun::new("gateway_http");
    let peer = bosun_tests::Peer::test_server("echo-secrets")?;
    let fake = FakeModel::start("anthropic", "tool:reveal;hold")?;
    let url = format!("{}?key={CANARY}&team=blue", peer.url);
    let out = b.output_with_stdin(
        &["mcp", "add", "remote", "--url", &url, "--env-from-stdin"],
        &format!("X-Api-Key: {CANARY}\n"),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    b.ok(&["mcp", "tools", "remote"])?;
    b.ok(&["mcp", "edit", "remote", "--trusted"])?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.remote=on"])?;

    let run = b.json(&["agent", "run", "coder", "say what you were given"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(2, Duration::from_secs(60))?;
    // The runner reached the server at its whole address with the header line: the server's
    // answer, as the model got it (trusted: not framed), holds both.
    let result = fake.turns()[1]["tool_result"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        result.contains(&format!("{CANARY} key={CANARY}&team=blue"))
            && !result.contains("[untrusted content"),
        "{result}"
    );
    // The CLI holds none of it: its configuration names bosun's gateway, and neither its
    // command line nor its environment has the value.
    let config = std::fs::read_to_string(b.home.join("runs").join(&id).join("mcp.json"))?;
    assert!(
        !config.contains(CANARY) && !config.contains(&peer.url) && config.contains("gateway.sock"),
        "{config}"
    );
    let pid = b.show(&id)?["pid"].as_i64().unwrap_or_default() as i32;
    for what in ["environ", "cmdline"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{what}"))?;
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "the CLI's {what} holds no secret of the server"
        );
    }
    let log = log_text(&b, &id);
    assert!(log.contains("mcp remote/reveal"), "{log}");
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.assert_secret_nowhere(CANARY)?;
    b.finish()
}

#[test]
fn a_tool_that_is_new_or_changed_since_the_person_approved_it_is_held_back_until_they_approve_it()
-> anyhow::Result<()> {
    let b = Bosun::new("gateway_pinning");
    let fake = FakeModel::start("anthropic", "hold")?;
    // A server whose tools change under the person: its mode is read from a file at each
    // start, and its echo's description ends with a note from its environment.
    let mode = b.scratch().join("mode");
    std::fs::write(&mode, "no-annotations")?;
    let script = b.scratch().join("drifting-server");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec {} --mode \"$(cat {})\"\n",
            bosun_tests::test_server_bin().display(),
            mode.display()
        ),
    )?;
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let script_s = script.display().to_string();
    b.ok(&[
        "mcp",
        "add",
        "drift",
        "--env",
        "TEST_TOOL_NOTE=v1",
        "--",
        &script_s,
    ])?;
    b.ok(&["mcp", "tools", "drift"])?;
    // Since the person's look: new tools, and echo's description changed.
    std::fs::write(&mode, "paged")?;
    b.ok(&["mcp", "edit", "drift", "--env", "TEST_TOOL_NOTE=v2"])?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "mcp.drift=on"])?;

    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let offered = names(&fake.turns()[0]["tools"]);
    assert!(
        !offered.iter().any(|t| t.starts_with("mcp__drift__")),
        "neither the new tools nor the changed echo are offered: {offered:?}"
    );
    // The run's gateway told bosund what it held back: the server's pending list has them at
    // once, before any new look at the server.
    bosun_tests::wait_for(
        "the held-back tools in the server's pending list",
        Duration::from_secs(30),
        || {
            let shown = b.json(&["mcp", "show", "drift"])?;
            let pending = shown["pending_tools"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            Ok(
                (pending.contains(&json!({"name": "echo", "change": "changed"}))
                    && pending.contains(&json!({"name": "tool-01", "change": "new"})))
                .then_some(()),
            )
        },
    )?;
    let inspected = b.json(&["mcp", "inspect", "drift"])?;
    assert!(
        inspected["pending_tools"]
            .as_array()
            .is_some_and(|p| p.contains(&json!({"name": "tool-01", "change": "new"}))),
        "{inspected:#}"
    );
    // At the gateway itself: not listed, and a call is refused without reaching the server.
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "drift")?;
    c.initialize()?;
    // Every page of the listing, as a CLI reads it: nothing of it gets through.
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let list = c.ask("tools/list", params, Duration::from_secs(10))?;
        assert_eq!(list["result"]["tools"], json!([]), "{list}");
        cursor = list["result"]["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    let refused = c.call("echo", json!({"message": "x"}), Duration::from_secs(10))?;
    assert!(
        text_of(&refused)
            .contains("its description or input schema changed since the person approved it"),
        "{refused}"
    );
    let refused = c.call("tool-01", json!({}), Duration::from_secs(10))?;
    assert!(
        text_of(&refused).contains("it is new since the person approved the server's tools")
            && text_of(&refused).contains("bosun mcp approve drift tool-01"),
        "{refused}"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    let log = log_text(&b, &id);
    assert!(
        log.contains("drift/tool-01 is held back from this run: it is new")
            && log.contains("drift/echo is held back from this run: its description"),
        "{log}"
    );

    // A new look shows what waits, and lets nothing through by itself.
    let listing = b.json(&["mcp", "tools", "drift"])?;
    let pending_of = |tools: &Value, name: &str| {
        tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .map(|t| t["pending"].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        pending_of(&listing["tools"], "echo"),
        "changed",
        "{listing:#}"
    );
    assert_eq!(
        pending_of(&listing["tools"], "tool-01"),
        "new",
        "{listing:#}"
    );
    let shown = b.json(&["mcp", "show", "drift"])?;
    assert!(
        shown["pending_tools"].as_array().is_some_and(|p| p
            .contains(&json!({"name": "echo", "change": "changed"}))
            && p.contains(&json!({"name": "tool-01", "change": "new"}))),
        "{shown:#}"
    );
    let text = b.ok(&["mcp", "show", "drift"])?;
    assert!(
        text.contains("echo (changed)") && text.contains("bosun mcp approve drift TOOL"),
        "{text}"
    );
    let err = b.fails(&["mcp", "approve", "drift", "nosuch"])?;
    assert!(
        err.contains("`nosuch` is not among the tools `drift` listed last"),
        "{err}"
    );
    let err = b.fails(&["mcp", "approve", "drift"])?;
    assert!(err.contains("say what to approve of `drift`"), "{err}");

    // The person approves echo as it is now: the next run gets it, and still not the others.
    b.ok(&["mcp", "approve", "drift", "echo"])?;
    let fake2 = run_on(&b, "tool:echo:{\"message\":\"seen\"};text:ok", "echo")?;
    let offered = names(&fake2.turns()[0]["tools"]);
    assert!(
        offered.contains(&"mcp__drift__echo".to_string())
            && !offered.contains(&"mcp__drift__tool-01".to_string()),
        "{offered:?}"
    );
    assert!(
        fake2.turns()[1]["tool_result"]
            .as_str()
            .is_some_and(|r| r.contains("Echo: seen")),
        "{:?}",
        fake2.turns()
    );
    // And then every tool: nothing waits, and the next run is offered them all.
    b.ok(&["mcp", "approve", "drift", "--all-tools"])?;
    let shown = b.json(&["mcp", "show", "drift"])?;
    assert!(shown.get("pending_tools").is_none(), "{shown:#}");
    let fake3 = run_on(&b, "text:ok", "hi")?;
    let offered = names(&fake3.turns()[0]["tools"]);
    assert!(
        offered.contains(&"mcp__drift__tool-01".to_string()),
        "{offered:?}"
    );
    b.finish()
}

/// What a client on a run's gateway is offered and may ask of server-everything, which
/// advertises resources, logging and completions besides tools and prompts.
fn capabilities_in_a_run(
    b: &Bosun,
    fake: &FakeModel,
    prompt: &str,
) -> anyhow::Result<(Value, Value, Value, Value)> {
    let run = b.json(&["agent", "run", "coder", prompt])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    let socket = b.home.join("runs").join(&id).join("gateway.sock");
    let mut c = Client::dial(&socket, "everything")?;
    let init = c.initialize()?;
    let resources = c.ask("resources/list", json!({}), Duration::from_secs(10))?;
    let subscribe = c.ask(
        "resources/subscribe",
        json!({"uri": "demo://resource/static/document/architecture.md"}),
        Duration::from_secs(10),
    )?;
    let logging = c.ask(
        "logging/setLevel",
        json!({"level": "debug"}),
        Duration::from_secs(10),
    )?;
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    Ok((
        init["result"]["capabilities"].clone(),
        resources,
        subscribe,
        logging,
    ))
}

#[test]
fn a_capability_reaches_runs_only_once_the_person_approves_it() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_capabilities");
    let fake = FakeModel::start("anthropic", "hold")?;
    setup(&b, &fake, &[])?;

    // The ledger: what runs get, and what the server advertised beyond it.
    let shown = b.json(&["mcp", "show", "everything"])?;
    assert_eq!(
        shown["rules"]["capabilities"],
        json!(["tools", "prompts"]),
        "{shown:#}"
    );
    for c in ["resources", "logging", "completions"] {
        assert!(
            shown["pending_capabilities"]
                .as_array()
                .is_some_and(|p| p.contains(&json!(c))),
            "{c} waits: {shown:#}"
        );
    }
    let inspected = b.json(&["mcp", "inspect", "everything"])?;
    assert_eq!(
        inspected["approved_capabilities"],
        json!(["tools", "prompts"])
    );
    assert!(
        inspected["pending_capabilities"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("resources"))),
        "{inspected:#}"
    );
    let text = b.ok(&["mcp", "inspect", "everything"])?;
    assert!(
        text.contains("bosun mcp approve everything --capability NAME"),
        "{text}"
    );

    let (caps, resources, _, logging) = capabilities_in_a_run(&b, &fake, "first")?;
    assert!(
        caps.get("resources").is_none() && caps.get("logging").is_none(),
        "{caps}"
    );
    assert_eq!(resources["error"]["code"], -32601, "{resources}");
    assert_eq!(logging["error"]["code"], -32601, "{logging}");

    // Bad asks change nothing.
    let err = b.fails(&[
        "mcp",
        "approve",
        "everything",
        "--capability",
        "experimental",
    ])?;
    assert!(
        err.contains("`experimental` is not a capability bosun's gateway can relay"),
        "{err}"
    );
    let err = b.fails(&["mcp", "edit", "everything", "--capabilities", ""])?;
    assert!(err.contains("capabilit"), "{err}");

    // Approved: the next run gets resources (never their subscriptions), and still no logging.
    let approved = b.json(&["mcp", "approve", "everything", "--capability", "resources"])?;
    assert_eq!(
        approved["rules"]["capabilities"],
        json!(["tools", "prompts", "resources"]),
        "{approved:#}"
    );
    assert!(
        !approved["pending_capabilities"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("resources"))),
        "{approved:#}"
    );
    let fake2 = FakeModel::start("anthropic", "hold")?;
    point_at(&b, &fake2)?;
    let (caps, resources, subscribe, logging) = capabilities_in_a_run(&b, &fake2, "second")?;
    assert!(caps.get("resources").is_some(), "{caps}");
    assert!(caps["resources"].get("subscribe").is_none(), "{caps}");
    assert!(
        resources["result"]["resources"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{resources}"
    );
    assert!(
        subscribe["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("resource subscriptions off")),
        "{subscribe}"
    );
    assert_eq!(logging["error"]["code"], -32601, "{logging}");

    // And withdrawn again by the person.
    let edited = b.json(&[
        "mcp",
        "edit",
        "everything",
        "--capabilities",
        "tools,prompts",
    ])?;
    assert_eq!(edited["rules"]["capabilities"], json!(["tools", "prompts"]));
    b.finish()
}
