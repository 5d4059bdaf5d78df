//! What each run uses, read from the real CLIs' own lines against the fake model APIs (which
//! answer known token counts): to the token, Claude Code's own cost, a cost worked out from the
//! person's price table, tool calls counted once, and nothing lost or counted twice when bosund
//! is SIGKILLed between reading the CLI's usage and saving it.

use std::time::Duration;

use bosun_tests::{Bosun, FakeModel, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);

/// The run's `usage` as `bosun show --json` has it.
fn usage_of(b: &Bosun, run: &str) -> anyhow::Result<Value> {
    Ok(b.show(run)?["agent"]["usage"].clone())
}

/// Claude Code's own `result` line, from the run's log.
fn claude_result(b: &Bosun, run: &str) -> anyhow::Result<Value> {
    let log = String::from_utf8_lossy(&b.logs(run)?).into_owned();
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v["type"] == "result")
        .ok_or_else(|| anyhow::anyhow!("no result line in the log: {log}"))
}

#[test]
fn claude_codes_usage_and_cost_are_kept_whole_across_a_sigkill_between_reading_and_saving()
-> anyhow::Result<()> {
    let b = Bosun::new("usage_claude");
    let fake = FakeModel::start(
        "anthropic",
        r#"call:Read:{"file_path":"README.md"};text:done"#,
    )?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["daemon", "stop"])?;
    // This bosund kills itself once it has read usage it has not saved yet: the result line.
    let out = b
        .cmd(&["agent", "run", "coder", "read the readme", "--json"])
        .env("BOSUN_CRASH_AT", "usage-read-not-saved")
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout)?;
    let run = run["id"].as_str().unwrap_or_default().to_string();
    wait_for("the daemon to kill itself", WAIT, || {
        Ok(b.daemon_pid().is_none().then_some(()))
    })?;
    // A new bosund reads the rest of the CLI's lines from the log, once.
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let result = claude_result(&b, &run)?;
    let usage = usage_of(&b, &run)?;
    let (model, reported) = result["modelUsage"]
        .as_object()
        .and_then(|m| m.iter().next())
        .ok_or_else(|| anyhow::anyhow!("no modelUsage: {result:#}"))?;
    assert!(
        reported["inputTokens"].as_u64().unwrap_or_default() > 0,
        "{result:#}"
    );
    assert_eq!(
        usage["models"],
        json!([{
            "model": model,
            "input": reported["inputTokens"],
            "output": reported["outputTokens"],
            "cache_read": reported["cacheReadInputTokens"],
            "cache_write": reported["cacheCreationInputTokens"],
            "micro_usd": (reported["costUSD"].as_f64().unwrap_or_default() * 1e6).round() as u64,
        }]),
        "{usage:#}"
    );
    let usd = result["total_cost_usd"].as_f64().unwrap_or_default();
    assert_eq!(
        usage["cost"],
        json!({"micro_usd": (usd * 1e6).round() as u64, "source": {"kind": "reported"}}),
        "{usage:#}"
    );
    assert_eq!(usage["tool_calls"], 1, "one Read, counted once: {usage:#}");
    let shown = b.ok(&["show", &run])?;
    assert!(
        shown.contains("(as the CLI reported it)") && shown.contains(&format!("{model}: ")),
        "{shown}"
    );
    b.finish()
}

#[test]
fn codexs_tokens_are_priced_by_the_persons_table_and_geminis_unknown_models_have_no_cost()
-> anyhow::Result<()> {
    let b = Bosun::new("usage_codex");
    std::fs::create_dir_all(&b.home)?;
    std::fs::write(
        b.home.join("prices.toml"),
        "date = \"2026-12-01\"\n[models.\"gpt-5.4-mini\"]\ninput = 1000.0\noutput = 2000.0\n",
    )?;
    let openai = FakeModel::start("openai", "text:All done.")?;
    b.add_codex_agent("coder", openai.url(), &["--model", "gpt-5.4-mini"])?;
    let run = b.run_agent("coder", "say you are done")?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    // The fake answers each request with 10 tokens in and 5 out.
    let requests = openai.turns().len() as u64;
    assert!(requests >= 1);
    let usage = usage_of(&b, &run)?;
    assert_eq!(
        usage["models"],
        json!([{"model": "gpt-5.4-mini", "input": 10 * requests, "output": 5 * requests,
                "cache_read": 0, "cache_write": 0, "micro_usd": 20_000 * requests}]),
        "{usage:#}"
    );
    // (10 × $1000 + 5 × $2000) per million tokens, per request.
    assert_eq!(
        usage["cost"],
        json!({"micro_usd": 20_000 * requests, "source": {"kind": "computed", "date": "2026-12-01"}}),
        "{usage:#}"
    );
    let ps = b.ok(&["ps", "--all"])?;
    assert!(ps.contains(&format!("~$0.{:04}", 200 * requests)), "{ps}");

    let gemini = FakeModel::start("gemini", "text:All done.")?;
    b.add_gemini_agent("gem", gemini.url(), &[])?;
    let run = b.run_agent("gem", "say you are done")?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let usage = usage_of(&b, &run)?;
    let models = usage["models"].as_array().cloned().unwrap_or_default();
    assert!(!models.is_empty(), "{usage:#}");
    // The fake answers each request with 12 tokens in and 5 out, whichever model asked.
    let sum = |k: &str| {
        models
            .iter()
            .map(|m| m[k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(sum("output") * 12, sum("input") * 5, "{usage:#}");
    assert!(sum("output") % 5 == 0 && sum("output") > 0, "{usage:#}");
    assert_eq!(
        usage["cost"],
        Value::Null,
        "no price for its models: {usage:#}"
    );
    let shown = b.ok(&["show", &run])?;
    assert!(shown.contains("cost          unknown"), "{shown}");

    // Summed: by agent, the costliest first, the Gemini run's cost said to be unknown.
    let report = b.json(&["usage", "--by", "agent", "--since", "1h"])?;
    let rows = report["rows"].as_array().cloned().unwrap_or_default();
    let keys: Vec<&str> = rows.iter().filter_map(|r| r["key"].as_str()).collect();
    assert_eq!(keys, ["coder", "gem"], "{report:#}");
    assert_eq!(rows[0]["micro_usd"], 20_000 * requests);
    assert_eq!(
        (rows[1]["unpriced"].as_u64(), rows[1]["micro_usd"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(report["total"]["runs"], 2);
    let csv = b.ok(&["usage", "--by", "model", "--csv"])?;
    assert!(
        csv.starts_with(
            "model,runs,input,output,cache_read,cache_write,tool_calls,cost_usd,unpriced_runs\n"
        ) && csv.contains(&format!(
            "gpt-5.4-mini,1,{},{},0,0,0,{:.6},0\n",
            10 * requests,
            5 * requests,
            0.02 * requests as f64
        )),
        "{csv}"
    );
    let table = b.ok(&["usage", "--by", "day"])?;
    assert!(
        table.starts_with("DAY ") && table.contains("(1 run of unknown cost)"),
        "{table}"
    );
    let e = b.fails(&["usage", "--since", "5x"])?;
    assert!(e.contains("--since 5x: "), "{e}");

    // The web UI's Usage page, in chromium: the same sums, a bar for today, the Runs page's costs.
    let ui = b.json(&["ui", "--no-open"])?;
    let seen =
        bosun_tests::browser_scenario(ui["login_url"].as_str().unwrap_or_default(), "usage", &[])?;
    b.ok(&["ui", "--stop"])?;
    let cost = format!("$0.{:04}", 200 * requests);
    assert_eq!(seen["rows"][0][0], "coder", "{seen:#}");
    assert_eq!(seen["rows"][0][7], cost, "{seen:#}");
    assert_eq!(seen["rows"][1][7], "$0.0000 (+1 unknown)", "{seen:#}");
    assert_eq!(seen["rows"][2][0], "total", "{seen:#}");
    let today = bosun_shared::Timestamp::now().rfc3339()[..10].to_string();
    assert_eq!(
        seen["bars"],
        json!([[today, 20_000 * requests]]),
        "{seen:#}"
    );
    assert_eq!(seen["models"][0][0], "gpt-5.4-mini", "{seen:#}");
    let mut costs: Vec<String> = seen["costs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    costs.sort();
    assert_eq!(costs, ["?", format!("~{cost}").as_str()], "{seen:#}");
    b.finish()
}

#[test]
fn a_price_table_that_cannot_be_read_keeps_bosund_from_starting_and_says_why() -> anyhow::Result<()>
{
    let b = Bosun::new("usage_bad_prices");
    std::fs::create_dir_all(&b.home)?;
    std::fs::write(
        b.home.join("prices.toml"),
        "date = \"2026-12-01\"\n[models.m]\ninput = -1.0\noutput = 1.0\n",
    )?;
    let err = b.fails(&["ps"])?;
    assert!(
        err.contains(
            "prices.toml, line 3: model `m`: input must be a price in dollars per million tokens, from 0 to 10000; `-1.0` is not"
        ),
        "{err}"
    );
    b.finish()
}

/// Issue 44: `date = "banana"` and `input = 1e300` were taken, the costs of runs reckoned with
/// them, and `bosun doctor` had nothing to say of the price table. Now bosund does not start on
/// such a table and says why, with the file's line (`bosun` that started it, and `daemon
/// status` after); doctor says the same as a failing check, and of a good table which file it
/// is, how many models it prices and their date.
#[test]
fn a_price_table_with_no_real_date_or_a_price_out_of_range_keeps_bosund_from_starting_and_doctor_says_so()
-> anyhow::Result<()> {
    let b = Bosun::new("usage_prices_checked");
    let prices = b.home.join("prices.toml");
    let path = prices.display().to_string();
    let doctor = |b: &Bosun| -> anyhow::Result<(bool, Value)> {
        let out = b.output(&["doctor", "--json"])?;
        let report: Value = serde_json::from_slice(&out.stdout)?;
        let check = report["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "prices").cloned())
            .unwrap_or_default();
        Ok((out.status.success(), check))
    };
    let (_, check) = doctor(&b)?;
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["found"]
            .as_str()
            .is_some_and(|f| f.starts_with("the built-in table: ")
                && f.contains(" models, prices of 2026-07-01")),
        "{check}"
    );
    std::fs::create_dir_all(&b.home)?;
    for (table, want) in [
        (
            "# mine\ndate = \"banana\"\n[models.m]\ninput = 1.0\noutput = 1.0\n",
            format!(
                "{path}, line 2: date `banana` is not a day of the calendar; write the day the prices were listed as YYYY-MM-DD"
            ),
        ),
        (
            "date = \"2026-12-01\"\n[models.m]\ninput = 1e300\noutput = 1.0\n",
            format!(
                "{path}, line 3: model `m`: input must be a price in dollars per million tokens, from 0 to 10000; `1e300` is not"
            ),
        ),
    ] {
        std::fs::write(&prices, table)?;
        let err = b.fails(&["ps"])?;
        assert!(
            err.contains("bosund did not start, since its price table cannot be used: "),
            "{err}"
        );
        assert!(err.contains(&want), "{err}");
        assert!(b.daemon_pid().is_none(), "bosund did not start");
        let status = String::from_utf8_lossy(&b.output(&["daemon", "status"])?.stdout).to_string();
        assert!(status.contains(&want), "{status}");
        let (ok, check) = doctor(&b)?;
        assert!(!ok, "doctor fails: {check}");
        assert_eq!(check["status"], "failing", "{check}");
        assert!(
            check["found"].as_str().is_some_and(|f| f.contains(&want)),
            "{check}"
        );
        assert_eq!(
            check["advice"],
            "bosund does not start until it is fixed or moved aside"
        );
    }
    std::fs::write(
        &prices,
        "date = \"2026-12-01\"\n[models.a]\ninput = 1.0\noutput = 2.0\n[models.b]\ninput = 10000\noutput = 0\n",
    )?;
    let (_, check) = doctor(&b)?;
    assert_eq!(check["status"], "ok", "{check}");
    assert_eq!(
        check["found"],
        format!("{path}: 2 models, prices of 2026-12-01")
    );
    b.ok(&["ps"])?;
    b.finish()
}

/// Issue 48: a command agent's run (the person's program, no model) counted as a run of
/// unknown cost on the Usage page ("+1 unknown"). It costs nothing, and that is known.
#[test]
fn a_command_agents_run_costs_nothing_rather_than_an_unknown_amount() -> anyhow::Result<()> {
    let b = Bosun::new("usage_command");
    let cwd = b.scratch().join("work");
    std::fs::create_dir_all(&cwd)?;
    let cwd = cwd.display().to_string();
    b.ok(&[
        "agent",
        "add",
        "tool",
        "--cli",
        "command",
        "--cwd",
        &cwd,
        "--",
        "sh",
        "-c",
        "echo done",
    ])?;
    let run = b.run_agent("tool", "go")?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let usage = b.json(&["usage"])?;
    assert_eq!(usage["total"]["runs"], 1, "{usage:#}");
    assert_eq!(usage["total"]["unpriced"], 0, "{usage:#}");
    assert_eq!(usage["total"]["micro_usd"], 0, "{usage:#}");
    b.finish()
}
