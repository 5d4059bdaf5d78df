//! Each CLI's usage lines, as recorded from the real CLIs against the fake model APIs, read into
//! a run's usage: to the token, totals replaced and turns added, the cost the CLI said or the
//! one the price table gives.

use std::sync::Arc;

use bosun_shared::agents::CliKind;
use bosun_shared::usage::{Cost, CostSource, ModelUsage, Tokens, Usage};

use crate::record::AgentRun;
use crate::stream::StreamParser;
use bosun_shared::prices::Prices;

fn read(cli: CliKind, model: Option<&str>, lines: &[&str], prices: Prices) -> Usage {
    let mut run = AgentRun {
        cli: Some(cli),
        model: model.map(str::to_string),
        ..AgentRun::default()
    };
    let mut p = StreamParser::new(cli, Arc::new(prices));
    for l in lines {
        p.feed(format!("{l}\n").as_bytes(), &mut run);
    }
    run.usage
}

fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
    }
}

fn prices(text: &str) -> Prices {
    let path = std::env::temp_dir().join(format!("bosun-prices-{}.toml", std::process::id()));
    std::fs::write(&path, text).expect("written");
    let p = Prices::load(&path).expect("a price table");
    let _ = std::fs::remove_file(&path);
    p
}

#[test]
fn claude_codes_result_line_gives_tokens_per_model_and_its_own_cost() {
    let result = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.0013440000000000001,"usage":{"input_tokens":36,"output_tokens":60},"modelUsage":{"claude-opus-5-5":{"inputTokens":36,"outputTokens":60,"cacheReadInputTokens":7,"cacheCreationInputTokens":3,"costUSD":0.001344}}}"#;
    let tool = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#;
    let u = read(
        CliKind::Claude,
        Some("claude-opus-5-5"),
        &[tool, tool, result],
        Prices::default(),
    );
    assert_eq!(
        u.models,
        [ModelUsage {
            model: "claude-opus-5-5".into(),
            tokens: tokens(36, 60, 7, 3),
            micro_usd: Some(1_344),
        }]
    );
    assert_eq!(
        u.cost,
        Some(Cost {
            micro_usd: 1_344,
            source: CostSource::Reported
        })
    );
    assert_eq!(u.tool_calls, 1, "the same call seen twice is one call");
}

#[test]
fn codex_exec_adds_each_turn_and_the_app_server_gives_totals() {
    let turn = r#"{"type":"turn.completed","usage":{"input_tokens":20,"cached_input_tokens":5,"cache_write_input_tokens":1,"output_tokens":10,"reasoning_output_tokens":4}}"#;
    let table = prices(
        "date = \"2026-12-01\"\n[models.\"gpt-test\"]\ninput = 1.0\noutput = 2.0\ncache_read = 0.5\n",
    );
    let u = read(
        CliKind::Codex,
        Some("gpt-test"),
        &[turn, turn],
        table.clone(),
    );
    assert_eq!(u.models[0].tokens, tokens(30, 20, 10, 2));
    // 30 × 1 + 20 × 2 + 10 × 0.5 + 2 × 1, per million.
    assert_eq!(
        u.cost,
        Some(Cost {
            micro_usd: 77,
            source: CostSource::Computed {
                date: "2026-12-01".into()
            }
        })
    );
    let update = |input: u64, output: u64| {
        format!(
            r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"th","turnId":"t","tokenUsage":{{"total":{{"totalTokens":0,"inputTokens":{input},"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":{output},"reasoningOutputTokens":0}},"last":{{}}}}}}}}"#
        )
    };
    let (a, b) = (update(10, 5), update(30, 15));
    let u = read(CliKind::Codex, None, &[&a, &b, &b], table);
    assert_eq!(
        u.models,
        [ModelUsage {
            model: "codex".into(),
            tokens: tokens(30, 15, 0, 0),
            micro_usd: None,
        }],
        "totals replace what came before"
    );
    assert_eq!(u.cost, None, "no price for a model bosun cannot name");
}

#[test]
fn gemini_gives_its_totals_in_its_result_line_and_per_model_in_its_prompts_answer() {
    let result = r#"{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":51,"input_tokens":36,"output_tokens":15,"cached":6,"input":36,"duration_ms":333,"tool_calls":1,"models":{"mock":{}}}}"#;
    let u = read(
        CliKind::Gemini,
        Some("gemini-2.5-flash"),
        &[result],
        Prices::default(),
    );
    assert_eq!(u.models[0].tokens, tokens(30, 15, 6, 0));
    assert!(
        matches!(&u.cost, Some(Cost { source: CostSource::Computed { date }, .. }) if date == "2026-07-01"),
        "{u:?}"
    );
    let answer = r#"{"jsonrpc":"2.0","id":"bosun-prompt","result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":96,"output_tokens":40},"model_usage":[{"model":"gemini-3.8-flash","token_count":{"input_tokens":12,"output_tokens":5}},{"model":"auto","token_count":{"input_tokens":84,"output_tokens":35}}]}}}}"#;
    let u = read(CliKind::Gemini, None, &[answer], Prices::default());
    assert_eq!(
        u.models,
        [
            ModelUsage::new("gemini-3.8-flash".into(), tokens(12, 5, 0, 0)),
            ModelUsage::new("auto".into(), tokens(84, 35, 0, 0))
        ]
    );
    assert_eq!(u.total(), tokens(96, 40, 0, 0));
}

#[test]
fn claude_codes_messages_are_counted_once_each_as_they_stream_and_its_total_settles_them() {
    let table = prices(
        "date = \"2026-12-01\"\n[models.\"claude-t\"]\ninput = 1.0\noutput = 10.0\ncache_read = 0.1\ncache_write = 2.0\n",
    );
    let mut run = AgentRun {
        cli: Some(CliKind::Claude),
        ..AgentRun::default()
    };
    let mut p = StreamParser::new(CliKind::Claude, Arc::new(table));
    let mut feed = |line: &str, run: &mut AgentRun| {
        p.feed(format!("{line}\n").as_bytes(), run);
    };
    let start = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","model":"claude-t","usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":10}}},"api_message_id":"msg_1"}"#;
    let piece = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"api_message_id":"msg_1"}"#;
    let text = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-t","content":[{"type":"text","text":"Hi"}],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":10}}}"#;
    let tool = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-t","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":10}}}"#;
    let end = r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":50}},"api_message_id":"msg_1"}"#;
    for line in [start, piece, text, tool] {
        feed(line, &mut run);
    }
    // As the message began: its input, and the placeholder of its output.
    assert_eq!(run.usage.total(), tokens(100, 1, 1000, 10));
    feed(end, &mut run);
    // Its end gives its output, once, however many lines repeat the message.
    feed(tool, &mut run);
    feed(end, &mut run);
    assert_eq!(run.usage.total(), tokens(100, 50, 1000, 10));
    // 100 × 1 + 50 × 10 + 1000 × 0.1 + 10 × 2, per million.
    assert_eq!(run.usage.cost.as_ref().map(|c| c.micro_usd), Some(720));
    assert_eq!(run.usage.tool_calls, 1);

    // The prompt's end: the CLI's own total and cost replace what was counted.
    let result = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.001,"modelUsage":{"claude-t":{"inputTokens":100,"outputTokens":52,"cacheReadInputTokens":1000,"cacheCreationInputTokens":10,"costUSD":0.001}}}"#;
    feed(result, &mut run);
    assert_eq!(run.usage.total(), tokens(100, 52, 1000, 10));
    assert_eq!(
        run.usage.cost,
        Some(Cost {
            micro_usd: 1_000,
            source: CostSource::Reported
        })
    );
    // The next prompt's message counts on top of it, priced by the table.
    let next = r#"{"type":"assistant","message":{"id":"msg_2","model":"claude-t","content":[],"usage":{"input_tokens":200,"output_tokens":30}}}"#;
    feed(next, &mut run);
    feed(next, &mut run);
    assert_eq!(run.usage.total(), tokens(300, 82, 1000, 10));
    assert_eq!(
        run.usage.cost.as_ref().map(|c| c.micro_usd),
        Some(1_000 + 500)
    );

    // Read again from a saved record (a restart): what the record counted is not added twice.
    let saved: AgentRun =
        serde_json::from_value(serde_json::to_value(&run).expect("saves")).expect("reads");
    let mut again = saved.clone();
    let mut p2 = StreamParser::new(CliKind::Claude, Arc::new(Prices::default()));
    p2.feed(format!("{next}\n").as_bytes(), &mut again);
    assert_eq!(again.usage, saved.usage);
}

#[test]
fn a_synthetic_message_and_the_pieces_of_a_message_count_nothing() {
    let synthetic = r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"Not logged in"}],"usage":{"input_tokens":5,"output_tokens":5}}}"#;
    let piece = r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""},"usage":{"input_tokens":9}}}"#;
    let u = read(
        CliKind::Claude,
        None,
        &[synthetic, piece],
        Prices::default(),
    );
    assert_eq!(u, Usage::default());
}
