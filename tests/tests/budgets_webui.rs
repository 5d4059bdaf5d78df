//! Budgets in the web UI, in Debian's chromium driven by `tests/node/webui/drive.mjs`: a card's
//! budget set from its page, seen by `bosun board card show`, refused whole when a cap is not a
//! positive amount, partly and then wholly taken off; a project's daily budget set from its
//! page; an agent's budget of each run set from its form, a cap of 0 refused whole; and what a
//! card's run used (Codex against the fake model API, priced by the person's table) shown as
//! spent on the card's page and, for the day, on its project's.

use std::path::PathBuf;
use std::time::Duration;

use bosun_shared::usage::Dollars;
use bosun_tests::webui::Ui;
use bosun_tests::{Bosun, FakeModel, wait_for};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);

/// The budget's block on `page` (`card/ID`, `projects/NAME`) after `steps` (each `{usd,
/// tokens}` typed and set, or `{off: true}`), signed in anew: what the form said after each
/// step, the block's rows by name, its fields.
fn budget_page(b: &Bosun, page: &str, block: &str, steps: Value) -> anyhow::Result<Value> {
    let ui = Ui::start(b)?;
    bosun_tests::browser_scenario(
        &ui.login,
        "budget",
        &[
            ("BOSUN_UI_PAGE", page),
            ("BOSUN_UI_BLOCK", block),
            ("BOSUN_UI_STEPS", &steps.to_string()),
        ],
    )
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A git checkout with one commit, for a project.
fn repo(b: &Bosun) -> anyhow::Result<PathBuf> {
    let dir = b.scratch().join("web");
    bosun_tests::repo_with_one_commit(&dir)?;
    Ok(dir)
}

#[test]
fn browser_sets_refuses_and_takes_off_a_cards_budget_and_sets_a_projects_and_an_agents()
-> anyhow::Result<()> {
    let b = Bosun::new("budget_webui_set");
    let card = b.json(&["board", "card", "add", "Fix login"])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let page = format!("card/{card}");
    let budget = || -> anyhow::Result<Value> {
        Ok(b.json(&["board", "card", "show", &card])?["budget"].clone())
    };

    let seen = budget_page(
        &b,
        &page,
        "card-budget",
        json!([{"usd": "5", "tokens": "2000000"}]),
    )?;
    assert_eq!(seen["said"], json!(["Set."]), "{seen:#}");
    assert_eq!(
        budget()?,
        json!({"caps": {"micro_usd": 5_000_000, "tokens": 2_000_000}, "spent_tokens": 0})
    );
    assert_eq!(
        seen["shown"]["Budget"], "$5.00 and 2000000 tokens for all its runs together",
        "{seen:#}"
    );
    assert_eq!(
        seen["shown"]["Spent so far"], "$0.0000 of $5.00\n0 of 2000000 tokens",
        "{seen:#}"
    );
    assert_eq!(seen["fields"], json!(["5", "2000000"]), "{seen:#}");

    // A cap that is not a positive amount, beside one that is: refused in the parser's words,
    // and neither is applied.
    let seen = budget_page(
        &b,
        &page,
        "card-budget",
        json!([{"usd": "0", "tokens": "100"}, {"usd": "-1", "tokens": "100"},
               {"usd": "8", "tokens": "lots"}]),
    )?;
    assert_eq!(
        seen["said"],
        json!([
            "Nothing was changed: `0` is not a positive amount: a budget in dollars takes a positive amount, such as 5 or 2.50, or off to take it off",
            "Nothing was changed: `-1` is not a positive amount: a budget in dollars takes a positive amount, such as 5 or 2.50, or off to take it off",
            "Nothing was changed: `lots` is not a positive amount: a budget in tokens takes a positive amount, such as 500000, or off to take it off",
        ]),
        "{seen:#}"
    );
    assert_eq!(
        budget()?["caps"],
        json!({"micro_usd": 5_000_000, "tokens": 2_000_000})
    );

    // One cap emptied takes that one off; the button takes off the rest.
    let seen = budget_page(
        &b,
        &page,
        "card-budget",
        json!([{"usd": "", "tokens": "2000000"}]),
    )?;
    assert_eq!(seen["said"], json!(["Set."]), "{seen:#}");
    assert_eq!(budget()?["caps"], json!({"tokens": 2_000_000}));
    let seen = budget_page(&b, &page, "card-budget", json!([{"off": true}]))?;
    assert_eq!(seen["said"], json!(["Taken off."]), "{seen:#}");
    assert_eq!(budget()?, Value::Null);
    assert_eq!(seen["shown"]["Budget"], "none", "{seen:#}");
    assert_eq!(seen["fields"], json!(["", ""]), "{seen:#}");

    // A project's daily budget.
    let repo = repo(&b)?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    let seen = budget_page(
        &b,
        "projects/web",
        "project-budget",
        json!([{"usd": "0", "tokens": ""}, {"usd": "$20", "tokens": "3000000"}]),
    )?;
    assert!(
        text(&seen["said"][0]).starts_with("Nothing was changed: `0` is not a positive amount"),
        "{seen:#}"
    );
    assert_eq!(seen["said"][1], "Set.", "{seen:#}");
    let p = b.json(&["project", "show", "web"])?;
    assert_eq!(
        p["daily_budget"],
        json!({"caps": {"micro_usd": 20_000_000, "tokens": 3_000_000}, "spent_tokens": 0}),
        "{p:#}"
    );
    assert!(
        text(&seen["shown"]["Spent today"]).contains("0 of 3000000 tokens"),
        "{seen:#}"
    );

    // An agent's budget of each run, in its form; a cap of 0 beside another change: refused
    // by bosund in its words, and nothing changed.
    let fake = FakeModel::start("anthropic", "text:done")?;
    b.add_claude_agent("coder", fake.url(), &[])?;
    b.ok(&["agent", "set", "coder", "max-tool-calls=200"])?;
    let ui = Ui::start(&b)?;
    let seen =
        bosun_tests::browser_scenario(&ui.login, "agentbudget", &[("BOSUN_UI_AGENT", "coder")])?;
    assert_eq!(seen["before"], "200", "{seen:#}");
    assert_eq!(seen["shown"], json!(["2.5", "500000"]), "{seen:#}");
    assert!(
        text(&seen["refused"]).contains(
            "`0` is not a positive amount: max-tool-calls takes a positive amount, such as max-tool-calls=200, or off"
        ),
        "{seen:#}"
    );
    assert_eq!(
        b.json(&["agent", "show", "coder"])?["budget"],
        json!({"micro_usd": 2_500_000, "tokens": 500_000}),
    );
    assert_eq!(seen["dialogs"], json!([]));
    b.ok(&["ui", "--stop"])?;
    b.finish()
}

#[test]
fn browser_shows_what_a_cards_run_spent_on_the_card_and_its_projects_day() -> anyhow::Result<()> {
    let b = Bosun::new("budget_webui_spent");
    std::fs::create_dir_all(&b.home)?;
    std::fs::write(
        b.home.join("prices.toml"),
        "date = \"2026-12-01\"\n[models.\"gpt-5.4-mini\"]\ninput = 1000.0\noutput = 2000.0\n",
    )?;
    let fake = FakeModel::start("openai", "text:All done.")?;
    b.add_codex_agent("coder", fake.url(), &["--model", "gpt-5.4-mini"])?;
    let repo = repo(&b)?;
    b.json(&["project", "add", "web", &repo.display().to_string()])?;
    b.ok(&["project", "edit", "web", "--daily-budget-usd", "20"])?;
    let card = b.json(&[
        "board",
        "card",
        "add",
        "Say done",
        "--project",
        "web",
        "--assignee",
        "coder",
    ])?["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    b.ok(&[
        "board",
        "card",
        "edit",
        &card,
        "--budget-usd",
        "5",
        "--budget-tokens",
        "100000",
    ])?;
    b.json(&["board", "card", "move", &card, "To do"])?;
    let run = wait_for("the card's run", Duration::from_secs(60), || {
        let v = b.json(&["board", "card", "show", &card])?;
        Ok(v["run"].as_str().map(str::to_string))
    })?;
    let view = b.wait_ended(&run, WAIT)?;
    assert_eq!(view["outcome"], "succeeded", "{view:#}");
    let usage = &b.show(&run)?["agent"]["usage"];
    let cost = usage["cost"]["micro_usd"].as_u64().unwrap_or_default();
    let tokens: u64 = usage["models"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            ["input", "output", "cache_read", "cache_write"]
                .iter()
                .map(|k| m[*k].as_u64().unwrap_or_default())
                .sum::<u64>()
        })
        .sum();
    // The fake answers each request with 10 tokens in and 5 out, priced by the table.
    let requests = fake.turns().len() as u64;
    assert!(requests >= 1);
    assert_eq!(
        (cost, tokens),
        (20_000 * requests, 15 * requests),
        "{usage:#}"
    );

    let c = b.json(&["board", "card", "show", &card])?;
    assert_eq!(c["budget"]["spent_micro_usd"], cost, "{c:#}");
    assert_eq!(c["budget"]["spent_tokens"], tokens, "{c:#}");
    let seen = budget_page(&b, &format!("card/{card}"), "card-budget", json!([]))?;
    assert_eq!(
        seen["shown"]["Spent so far"],
        format!("{} of $5.00\n{tokens} of 100000 tokens", Dollars(cost)),
        "{seen:#}"
    );
    let seen = budget_page(&b, "projects/web", "project-budget", json!([]))?;
    assert_eq!(
        seen["shown"]["Spent today"],
        format!("{} of $20.00\n{tokens} tokens", Dollars(cost)),
        "{seen:#}"
    );
    b.ok(&["ui", "--stop"])?;
    b.finish()
}
