//! A server's requests for the person, through a run's MCP gateway: the real
//! `@modelcontextprotocol/server-everything`, a run of the real Claude Code against its fake
//! model API, and a second client dialling the run's gateway the way the CLI does.
//!
//! With the server's elicitation policy `ask`, its form waits in the inbox (across a SIGKILL
//! of bosund), an answer that does not fit is refused with nothing sent, and the answer that
//! fits reaches the server once; a declined form tells the server so. With the default `deny`
//! the server is never told the client can be asked, so it offers no tool that asks. With the
//! sampling policy `ask`, a request for a message of the model waits for the person, and once
//! allowed the CLI (which declared sampling) writes it.

use std::time::Duration;

use bosun_tests::gateway_client::{GatewayClient, text_of};
use bosun_tests::webui::Ui;
use bosun_tests::{Bosun, FakeModel, wait_for};
use serde_json::{Value, json};

const SERVER_SECRET: &str = "everything-canary-5c1e";

/// server-everything as `everything`, held to `rules` (`bosun mcp edit` flags) before the
/// person's look at its tools; a Claude agent `coder` with it on; a run of it, holding. The
/// run's id and the fake model (which must live as long as the run).
fn a_run(b: &Bosun, rules: &[&str]) -> anyhow::Result<(String, FakeModel)> {
    b.add_everything_unlisted("everything", SERVER_SECRET)?;
    if !rules.is_empty() {
        let mut args = vec!["mcp", "edit", "everything"];
        args.extend(rules);
        b.ok(&args)?;
    }
    b.ok(&["mcp", "tools", "everything"])?;
    let fake = FakeModel::start("anthropic", "hold")?;
    b.add_claude_agent("coder", fake.url(), &["--env", "ENABLE_TOOL_SEARCH=false"])?;
    b.ok(&["agent", "set", "coder", "mcp.everything=on"])?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    fake.wait_turns(1, Duration::from_secs(60))?;
    Ok((id, fake))
}

/// A client of the run's gateway for `everything`, initialized with `capabilities`.
fn client(b: &Bosun, id: &str, capabilities: Value) -> anyhow::Result<GatewayClient> {
    let socket = b.home.join("runs").join(id).join("gateway.sock");
    let mut c = GatewayClient::dial(&socket, "everything")?;
    let init = c.ask(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "probe", "version": "1"},
               "capabilities": capabilities}),
        Duration::from_secs(30),
    )?;
    anyhow::ensure!(init.get("result").is_some(), "not initialized: {init}");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    Ok(c)
}

fn tools(c: &mut GatewayClient) -> anyhow::Result<Vec<String>> {
    let list = c.ask("tools/list", json!({}), Duration::from_secs(30))?;
    Ok(list["result"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// The inbox's items of `class`.
fn items(b: &Bosun, class: &str, all: bool) -> anyhow::Result<Vec<Value>> {
    let inbox = if all {
        b.json(&["inbox", "--all"])?
    } else {
        b.json(&["inbox"])?
    };
    Ok(inbox
        .as_array()
        .map(|a| a.iter().filter(|i| i["class"] == class).cloned().collect())
        .unwrap_or_default())
}

fn log_text(b: &Bosun, id: &str) -> String {
    b.output(&["logs", id])
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

/// Sends `tools/call` of `tool` under `call`; the inbox item of `class` it brings. The call
/// itself is judged by the approval policy at the gateway first: a tool that is not read-only
/// waits for the person, who allows it.
fn a_call_that_asks(
    b: &Bosun,
    c: &mut GatewayClient,
    tool: &str,
    args: Value,
    call: u64,
    class: &str,
) -> anyhow::Result<Value> {
    c.send(
        &json!({"jsonrpc": "2.0", "id": call, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}),
    )?;
    let mut allowed = false;
    wait_for(
        "the server's request in the inbox",
        Duration::from_secs(30),
        || {
            let waiting = b.json(&["inbox"])?;
            for item in waiting.as_array().into_iter().flatten() {
                if item["class"] == class {
                    return Ok(Some(item.clone()));
                }
                let the_call = item["tool"].as_str().is_some_and(|t| t.ends_with(tool));
                if the_call && !allowed {
                    b.ok(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
                    allowed = true;
                }
            }
            Ok(None)
        },
    )
}

/// A run whose server asks for the person's input (elicitation `ask`), with a call `call` of
/// the tool that asks waiting on its form: the run, its fake model, the client, the item.
fn a_form_waiting(
    b: &Bosun,
    call: u64,
) -> anyhow::Result<(String, FakeModel, GatewayClient, Value)> {
    let (id, fake) = a_run(b, &["--elicitation", "ask"])?;
    let mut c = client(b, &id, json!({}))?;
    let item = a_call_that_asks(
        b,
        &mut c,
        "trigger-elicitation-request",
        json!({}),
        call,
        "elicitation",
    )?;
    Ok((id, fake, c, item))
}

#[test]
fn a_form_waits_in_the_inbox_across_a_sigkill_of_bosund_and_is_answered_once() -> anyhow::Result<()>
{
    let b = Bosun::new("gateway_elicitation");
    // A short deadline per call: the call that waits for the person is held past it.
    let (id, _fake) = a_run(&b, &["--elicitation", "ask", "--call-deadline", "2s"])?;
    let shown = b.json(&["mcp", "show", "everything"])?;
    assert_eq!(shown["rules"]["elicitation"], "ask", "{shown}");

    // The client declares no elicitation of its own: bosun's gateway does, and answers.
    let mut c = client(&b, &id, json!({}))?;
    assert!(
        tools(&mut c)?.contains(&"trigger-elicitation-request".to_string()),
        "the server offers the tool that asks"
    );
    let call = 100;
    let item = a_call_that_asks(
        &b,
        &mut c,
        "trigger-elicitation-request",
        json!({}),
        call,
        "elicitation",
    )?;
    assert_eq!(item["run"], json!(id), "{item}");
    let preview = item["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("server everything asks you to fill in a form")
            && preview.contains("name (text, required): String — Your full, legal name")
            && preview.contains("integer (whole number)"),
        "{preview}"
    );
    let fields = item["input"]["form"]["fields"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(fields >= 12, "every field of the form: {item}");
    let short = item["short_id"].as_str().unwrap_or_default().to_string();
    // The item is saved, then the runner is told it and writes the line: a moment later.
    let how = format!("`bosun approve {short} --answer '");
    wait_for(
        "the log to say how to answer",
        Duration::from_secs(30),
        || Ok(log_text(&b, &id).contains(&how).then_some(())),
    )?;

    // bosund SIGKILLed: the same item waits, and the call with it.
    b.kill_daemon()?;
    let again = wait_for("the item again", Duration::from_secs(30), || {
        Ok(items(&b, "elicitation", false)?.into_iter().next())
    })?;
    assert_eq!(again["id"], item["id"]);

    // An answer that does not fit: refused, saying why, and nothing is sent.
    for (answer, why) in [
        (json!({"integer": 7}), "the form needs `name`"),
        (
            json!({"name": "Ada", "integer": 500}),
            "`integer` must be between 1 and 100",
        ),
        (
            json!({"name": "Ada", "colour": "red"}),
            "the form has no field `colour`",
        ),
    ] {
        let out = b.output(&["approve", &short, "--answer", &answer.to_string()])?;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{answer}: {err}"
        );
        assert!(err.contains("nothing was sent"), "{err}");
    }
    let out = b.output(&["approve", &short])?;
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--answer '{"),
        "an approval without an answer says how to answer"
    );
    assert!(
        !c.drain(Duration::from_millis(300))
            .iter()
            .any(|m| m["id"] == json!(call)),
        "the call still waits"
    );

    let answer = json!({"name": "Ada Lovelace", "integer": 7, "check": true,
                        "untitledMultipleSelectEnum": ["Piano"]});
    b.ok(&["approve", &short, "--answer", &answer.to_string()])?;
    let result = c.answer(call, Duration::from_secs(30))?;
    let text = text_of(&result);
    assert!(
        text.contains("User provided the requested information")
            && text.contains("- Name: Ada Lovelace")
            && text.contains("- Favorite Integer: 7"),
        "{result}"
    );
    // Answered once: a second answer is refused, and the log says it once.
    let twice = b.output(&["approve", &short, "--answer", &answer.to_string()])?;
    assert!(!twice.status.success());
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("was already allowed"),
        "{}",
        String::from_utf8_lossy(&twice.stderr)
    );
    let log = log_text(&b, &id);
    assert_eq!(
        log.matches("everything: the person filled in its form")
            .count(),
        1,
        "{log}"
    );
    let kept = items(&b, "elicitation", true)?;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0]["state"], "allowed");
    assert_eq!(kept[0]["form_answer"]["name"], "Ada Lovelace", "{kept:?}");

    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.assert_secret_nowhere(SERVER_SECRET)?;
    b.finish()
}

#[test]
fn a_declined_form_tells_the_server_and_a_denied_policy_offers_nothing_that_asks()
-> anyhow::Result<()> {
    let b = Bosun::new("gateway_elicitation_decline");
    let (id, _fake, mut c, item) = a_form_waiting(&b, 7)?;
    let short = item["short_id"].as_str().unwrap_or_default().to_string();
    b.ok(&["deny", &short])?;
    let result = c.answer(7, Duration::from_secs(30))?;
    assert!(
        text_of(&result).contains("User declined to provide the requested information"),
        "{result}"
    );
    let kept = items(&b, "elicitation", true)?;
    assert_eq!(kept[0]["state"], "denied", "{kept:?}");

    // The default: denied. A client that declares elicitation itself is not taken at its word
    // (bosun's gateway would refuse the request), so the server offers nothing that asks.
    b.ok(&["mcp", "edit", "everything", "--elicitation", "deny"])?;
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    let run = b.json(&["agent", "run", "coder", "take your time"])?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    let mut c = wait_for("the new run's gateway", Duration::from_secs(60), || {
        Ok(client(&b, &id, json!({"elicitation": {}})).ok())
    })?;
    assert!(
        !tools(&mut c)?.contains(&"trigger-elicitation-request".to_string()),
        "no tool that asks the person"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

#[test]
fn the_web_ui_shows_a_form_as_typed_fields_and_sends_an_answer_that_fits() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_elicitation_web");
    let (id, _fake, mut c, _item) = a_form_waiting(&b, 5)?;
    let ui = Ui::start(&b)?;
    let seen = bosun_tests::browser_scenario(&ui.login, "formitem", &[])?;
    let fields = seen["fields"].as_array().map_or(0, Vec::len);
    assert!(fields >= 12, "every field: {seen:#}");
    assert_eq!(seen["buttons"], json!(["Send", "Decline"]), "{seen:#}");
    assert_eq!(
        seen["kinds"],
        json!({"email": "email", "date": "date", "integer": "number", "check": "SELECT",
               "multi": 5, "integerDefault": "42"}),
        "{seen:#}"
    );
    let refusal = seen["refusal"].as_str().unwrap_or_default();
    assert!(
        refusal.contains("`integer` must be between 1 and 100")
            && refusal.contains("nothing was sent"),
        "{seen:#}"
    );
    assert_eq!(
        seen["kept"], "Grace Hopper",
        "what was typed stays: {seen:#}"
    );
    let result = c.answer(5, Duration::from_secs(30))?;
    let text = text_of(&result);
    assert!(
        text.contains("- Name: Grace Hopper") && text.contains("- Favorite Integer: 12"),
        "{result}"
    );
    // The multiple choice kept its suggestion (Guitar) and took Drums; the single one, Rachel.
    assert!(
        text.contains("[\n      \"Guitar\",\n      \"Drums\"\n    ]")
            && text.contains("\"untitledSingleSelectEnum\": \"Rachel\""),
        "{result}"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.ok(&["ui", "--stop"])?;
    b.finish()
}

#[test]
fn a_sampling_request_waits_for_the_person_then_the_cli_writes_the_message() -> anyhow::Result<()> {
    let b = Bosun::new("gateway_sampling");
    let (id, _fake) = a_run(&b, &["--sampling", "ask"])?;
    let mut c = client(&b, &id, json!({"sampling": {}}))?;
    assert!(tools(&mut c)?.contains(&"trigger-sampling-request".to_string()));

    let call = 9;
    let item = a_call_that_asks(
        &b,
        &mut c,
        "trigger-sampling-request",
        json!({"prompt": "say hello", "maxTokens": 20}),
        call,
        "sampling",
    )?;
    let preview = item["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("asks the run's model for a message (at most 20 tokens)")
            && preview.contains("say hello"),
        "{preview}"
    );
    // Nothing reaches the CLI before the person allows it.
    assert!(
        !c.drain(Duration::from_millis(300))
            .iter()
            .any(|m| m["method"] == "sampling/createMessage")
    );
    b.ok(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
    let asked = wait_for("the request at the CLI", Duration::from_secs(30), || {
        Ok(c.drain(Duration::from_millis(200))
            .into_iter()
            .find(|m| m["method"] == "sampling/createMessage"))
    })?;
    c.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "model": "fake", "stopReason": "endTurn",
        "content": {"type": "text", "text": "hello from the CLI"},
    }}))?;
    let result = c.answer(call, Duration::from_secs(30))?;
    assert!(text_of(&result).contains("hello from the CLI"), "{result}");
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}

#[test]
fn an_allowed_sampling_request_goes_to_the_cli_within_its_limit_and_one_over_it_is_refused()
-> anyhow::Result<()> {
    let b = Bosun::new("gateway_sampling_allow");
    let bad = b.output(&["mcp", "add", "x", "--", "true"])?;
    assert!(bad.status.success());
    let refused = b.fails(&["mcp", "edit", "x", "--elicitation", "allow"])?;
    assert!(
        refused.contains("a form `x` asks for is answered by the person"),
        "{refused}"
    );
    let refused = b.fails(&["mcp", "edit", "x", "--sampling-max-tokens", "0"])?;
    assert!(
        refused.contains("1 to 100000 tokens; 0 is not"),
        "{refused}"
    );
    let (id, _fake) = a_run(&b, &["--sampling", "allow", "--sampling-max-tokens", "50"])?;
    let shown = b.ok(&["mcp", "show", "everything"])?;
    assert!(
        shown.contains(
            "allow: the run's CLI writes the messages the server asks for, up to 50 tokens each"
        ),
        "{shown}"
    );
    let mut c = client(&b, &id, json!({"sampling": {}}))?;
    let call = |c: &mut GatewayClient, n: u64, tokens: u64| {
        c.send(&json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "trigger-sampling-request",
                                  "arguments": {"prompt": "say hello", "maxTokens": tokens}}}))
    };
    // The call itself is judged at the gateway first: if it waits, the person allows it
    // once, always. Within the limit the server's request goes straight to the CLI.
    call(&mut c, 1, 20)?;
    let mut allowed = false;
    let asked = wait_for("the request at the CLI", Duration::from_secs(30), || {
        if !allowed {
            let waiting = b.json(&["inbox"])?;
            if let Some(item) = waiting.as_array().and_then(|a| a.first()) {
                b.ok(&[
                    "approve",
                    item["short_id"].as_str().unwrap_or_default(),
                    "--always",
                ])?;
                allowed = true;
            }
        }
        Ok(c.drain(Duration::from_millis(200))
            .into_iter()
            .find(|m| m["method"] == "sampling/createMessage"))
    })?;
    assert!(
        items(&b, "sampling", true)?.is_empty(),
        "nothing asked of the person"
    );
    c.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "model": "fake", "stopReason": "endTurn",
        "content": {"type": "text", "text": "hello without asking"},
    }}))?;
    let result = c.answer(1, Duration::from_secs(30))?;
    assert!(
        text_of(&result).contains("hello without asking"),
        "{result}"
    );
    // Over it: refused, saying the limit.
    call(&mut c, 2, 500)?;
    // The first call's result was the server's (untrusted) answer, so this call waits for the
    // person's OK again; allowed, the server's request is refused at the gateway.
    let over = wait_for("the answer to call 2", Duration::from_secs(30), || {
        for item in b.json(&["inbox"])?.as_array().into_iter().flatten() {
            b.ok(&["approve", item["short_id"].as_str().unwrap_or_default()])?;
        }
        Ok(c.drain(Duration::from_millis(200))
            .into_iter()
            .find(|m| m["id"] == 2))
    })?;
    assert!(
        text_of(&over).contains("it asks for up to 500 tokens, more than the 50 its policy allows"),
        "{over}"
    );
    drop(c);
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(30))?;
    b.finish()
}
