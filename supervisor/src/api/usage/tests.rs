//! The sums of `bosun usage`, on records made here: by each key, with runs of no card, an
//! unpriced run, a run before `since`, and a plain program's run (which has no usage row).

use std::collections::HashMap;

use bosun_protocol::usage::{UsageBy, UsageRow, UsageView};
use bosun_runs::record::RunRecord;
use bosun_runs::spend::UsageRow as RunUsage;
use bosun_shared::usage::Tokens;
use bosun_shared::{CardId, Timestamp};
use bosun_store::{Record, decode_part};
use serde_json::{Value, json};

use super::{Card, Names, RowView, Sums};

const DAY: u64 = 86_400_000;
const CARD: &str = "01j9aaaaaaaaaaaaaaaaaaaac1";

/// A run of `agent` created on day `day`, with `models` as (model, input, output, micro_usd):
/// a whole record, its usage row, and that row as a report by anything but the model reads it
/// (checked to read the same).
fn run(
    agent: &str,
    day: u64,
    card: bool,
    models: &[(&str, u64, u64, Option<u64>)],
) -> Option<RunUsage> {
    let priced = models.iter().all(|m| m.3.is_some());
    let cost: u64 = models.iter().filter_map(|m| m.3).sum();
    let usage = json!({
        "models": models.iter().map(|(m, i, o, c)| {
            let mut v = json!({"model": m, "input": i, "output": o, "cache_read": 0, "cache_write": 0});
            if let Some(c) = c { v["micro_usd"] = json!(c); }
            v
        }).collect::<Vec<_>>(),
        "cost": priced.then(|| json!({"micro_usd": cost, "source": {"kind": "reported"}})),
        "tool_calls": 2,
    });
    let mut agent_run = json!({"agent_name": agent, "cli": "claude", "servers": [], "tools": [],
        "calls": [], "session": null, "model": null, "result": null, "usage": usage});
    if card {
        agent_run["card"] = json!([CARD, 1]);
    }
    if agent == "plain" {
        agent_run["cli"] = Value::Null;
    }
    let v: Value = json!({
        "id": bosun_shared::RunId::new(), "name": null, "program": "claude", "args": [], "cwd": "/w",
        "env_names": [], "time_cap_ms": null, "ladder": {"int_grace_ms": 1, "term_grace_ms": 1},
        "state": {"exited": "succeeded"}, "created_at": 1_800_000_000_000u64 + day * DAY,
        "started_at": null, "ended_at": null, "runner": null, "process": null,
        "token_digest": "d", "stop": null, "exit": null, "last_seq": 0, "secret_files": [],
        "agent": agent_run,
    });
    let whole: RunRecord = serde_json::from_value(v).expect("a run record");
    let row = RunUsage::of(&whole)?;
    let bytes = row.encode();
    let view: RowView<'_> = decode_part::<RunUsage, _>(&bytes).expect("read as a report reads it");
    assert_eq!(
        view,
        RowView {
            created_at: row.created_at,
            agent_name: row.agent_name.as_str().into(),
            card: row.card,
            project: row.project,
            tokens: row.tokens,
            micro_usd: row.micro_usd,
            tool_calls: row.tool_calls,
        }
    );
    Some(row)
}

/// The card's title and project, and no project of a run's own.
fn names() -> Names {
    let card = Card {
        title: "Fix login".into(),
        project: Some("web".into()),
    };
    Names {
        cards: HashMap::from([(CARD.parse().expect("id"), card)]),
        projects: HashMap::new(),
    }
}

/// The report over `runs` as bosund makes it from their stored bytes.
fn report(runs: &[RunUsage], names: &Names, by: UsageBy, since: Option<Timestamp>) -> UsageView {
    let mut sums = Sums::new(by, since);
    for run in runs {
        match by {
            UsageBy::Model => sums.add_models(run),
            UsageBy::Agent | UsageBy::Card | UsageBy::Project | UsageBy::Day => sums
                .add_bytes(&run.encode(), names)
                .expect("a row read back"),
        }
    }
    sums.finish(names)
}

fn row(key: &str, runs: u64, input: u64, output: u64, micro_usd: u64, unpriced: u64) -> UsageRow {
    UsageRow {
        key: key.into(),
        runs,
        tokens: Tokens {
            input,
            output,
            ..Tokens::default()
        },
        micro_usd,
        unpriced,
        tool_calls: 2 * runs,
    }
}

#[test]
fn usage_is_summed_by_each_key_the_costliest_first_and_unknown_costs_counted() {
    assert_eq!(
        run("plain", 0, false, &[("m", 1, 1, Some(1))]),
        None,
        "a plain program's run has no usage row"
    );
    let runs: Vec<RunUsage> = [
        run(
            "coder",
            0,
            true,
            &[("opus", 100, 10, Some(500)), ("haiku", 20, 2, Some(20))],
        ),
        run("coder", 1, false, &[("opus", 50, 5, Some(250))]),
        run("reviewer", 1, true, &[("gpt", 10, 1, None)]),
    ]
    .into_iter()
    .flatten()
    .collect();
    let v = report(&runs, &names(), UsageBy::Agent, None);
    assert_eq!(
        v.rows,
        [
            row("coder", 2, 170, 17, 770, 0),
            row("reviewer", 1, 10, 1, 0, 1)
        ]
    );
    assert_eq!(
        v.total,
        UsageRow {
            key: "total".into(),
            ..row("", 3, 180, 18, 770, 1)
        }
    );

    let v = report(&runs, &names(), UsageBy::Card, None);
    let card = CARD.parse::<CardId>().expect("id").short();
    assert_eq!(
        v.rows,
        [
            row(&format!("{card} Fix login"), 2, 130, 13, 520, 1),
            row("-", 1, 50, 5, 250, 0)
        ]
    );
    let v = report(&runs, &names(), UsageBy::Project, None);
    assert_eq!(v.rows[0].key, "web");

    let v = report(&runs, &names(), UsageBy::Model, None);
    let models: Vec<(&str, u64, u64)> = v
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.runs, r.micro_usd))
        .collect();
    assert_eq!(models, [("opus", 2, 750), ("haiku", 1, 20), ("gpt", 1, 0)]);

    let v = report(&runs, &names(), UsageBy::Day, None);
    let days: Vec<&str> = v.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(days, ["2027-01-15", "2027-01-16"]);

    let since = Timestamp::from_millis(1_800_000_000_000 + DAY);
    let v = report(&runs, &names(), UsageBy::Agent, Some(since));
    assert_eq!(v.total.runs, 2, "the first day's run is before `since`");
}
