//! The usage lines of each CLI, read into the run's [`Usage`]. A line that carries totals so
//! far (Claude Code's `result`, Codex app-server's `thread/tokenUsage/updated`, Gemini CLI's
//! `result` stats and its prompt's answer) replaces what was read before; Codex `exec --json`'s
//! `turn.completed` carries one turn's and is added. Token counts are kept as input not read
//! from the cache, output, cache reads and cache writes (OpenAI and Gemini count cached input
//! inside their input; it is taken out).

use bosun_shared::prices::Prices;
use bosun_shared::usage::{Cost, CostSource, ModelUsage, Tokens, Usage};
use serde_json::Value;

use crate::record::{AgentRun, Streamed, StreamedMessage};

/// The model a line names none for: the run's own, or the CLI's name.
fn model_of(run: &AgentRun, cli: &str) -> String {
    run.model.clone().unwrap_or_else(|| cli.to_string())
}

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Replaces the run's tokens with `models` (totals so far), keeping its tool calls.
fn set_models(usage: &mut Usage, models: Vec<ModelUsage>) {
    if !models.is_empty() {
        usage.models = models;
    }
}

/// Anthropic's token counts, as a message's `usage` gives them (cache reads and writes apart
/// from the input).
fn anthropic_tokens(u: &Value) -> Tokens {
    Tokens {
        input: n(u, "input_tokens"),
        output: n(u, "output_tokens"),
        cache_read: n(u, "cache_read_input_tokens"),
        cache_write: n(u, "cache_creation_input_tokens"),
    }
}

/// One model message's `usage` as Claude Code streams it, counted once: each `assistant` line
/// repeats its message's usage as the message began (the output a placeholder), and with
/// `--include-partial-messages` the message's `message_start` and `message_delta` events give
/// it at its start and its end. Whatever grew since the message was last seen is added to the
/// run; a line that repeats it adds nothing. `id` absent: the message seen last (a
/// `message_delta` names none of its own when its line has no `api_message_id`). Whether the
/// run's tokens changed.
pub(super) fn claude_message(
    id: Option<&str>,
    model: Option<&str>,
    u: &Value,
    run: &mut AgentRun,
) -> bool {
    let seen = anthropic_tokens(u);
    let streamed = &mut run.streamed;
    let at = match id {
        Some(id) => streamed.messages.iter().position(|m| m.id == id),
        None => streamed.messages.len().checked_sub(1),
    };
    let at = match (at, id) {
        (Some(at), _) => at,
        (None, Some(id)) => {
            let model = model
                .map(str::to_string)
                .unwrap_or_else(|| model_of(run, "claude"));
            let streamed = &mut run.streamed;
            if streamed.messages.len() >= Streamed::KEPT {
                streamed.messages.remove(0);
            }
            streamed.messages.push(StreamedMessage {
                id: id.to_string(),
                model,
                tokens: Tokens::default(),
            });
            streamed.messages.len() - 1
        }
        (None, None) => return false,
    };
    let message = &mut run.streamed.messages[at];
    let counted = message.tokens;
    let now = counted.max(seen);
    if now == counted {
        return false;
    }
    message.tokens = now;
    let model = message.model.clone();
    *run.usage.model_mut(&model) += now.minus(counted);
    true
}

/// Prices the run's usage after its tokens changed: past a total of the CLI's own (Claude
/// Code's `result`), that figure plus what came since; before one, by the table alone.
pub(super) fn price(prices: &Prices, run: &mut AgentRun) {
    match &run.streamed.settled {
        Some(settled) => prices.apply_since(settled, &mut run.usage),
        None => prices.apply(&mut run.usage),
    }
}

/// Claude Code's `result` line: `modelUsage` per model (or `usage` for the run's model) and
/// `total_cost_usd`, the CLI's own figure. It replaces what was counted of the messages, and
/// what comes after it is counted on top.
pub(super) fn claude_result(v: &Value, run: &mut AgentRun) {
    let mut models = Vec::new();
    if let Some(per_model) = v.get("modelUsage").and_then(Value::as_object) {
        for (model, m) in per_model {
            models.push(ModelUsage {
                model: model.clone(),
                tokens: Tokens {
                    input: n(m, "inputTokens"),
                    output: n(m, "outputTokens"),
                    cache_read: n(m, "cacheReadInputTokens"),
                    cache_write: n(m, "cacheCreationInputTokens"),
                },
                micro_usd: m.get("costUSD").and_then(dollars),
            });
        }
    }
    if models.is_empty()
        && let Some(u) = v.get("usage").filter(|u| u.is_object())
    {
        models.push(ModelUsage::new(
            model_of(run, "claude"),
            anthropic_tokens(u),
        ));
    }
    set_models(&mut run.usage, models);
    if let Some(micro_usd) = v.get("total_cost_usd").and_then(dollars) {
        run.usage.cost = Some(Cost {
            micro_usd,
            source: CostSource::Reported,
        });
    }
    run.streamed.settled = Some(Usage {
        tool_calls: 0,
        ..run.usage.clone()
    });
}

/// A number of dollars the CLI wrote, in millionths of a dollar.
fn dollars(v: &Value) -> Option<u64> {
    let usd = v.as_f64()?;
    (usd.is_finite() && usd >= 0.0).then(|| (usd * 1e6).round() as u64)
}

/// OpenAI's token counts (Codex): cached input is inside `input`.
fn openai_tokens(u: &Value, input: &str, cached: &str, cache_write: &str, output: &str) -> Tokens {
    let cache_read = n(u, cached);
    Tokens {
        input: n(u, input).saturating_sub(cache_read),
        output: n(u, output),
        cache_read,
        cache_write: n(u, cache_write),
    }
}

/// Codex `exec --json`'s `turn.completed`: one turn's tokens, added.
pub(super) fn codex_turn(v: &Value, run: &mut AgentRun) {
    let Some(u) = v.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    let tokens = openai_tokens(
        u,
        "input_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
        "output_tokens",
    );
    let model = model_of(run, "codex");
    *run.usage.model_mut(&model) += tokens;
}

/// Codex app-server's `thread/tokenUsage/updated`: the thread's totals so far.
pub(super) fn codex_totals(params: &Value, run: &mut AgentRun) {
    let total = &params["tokenUsage"]["total"];
    if !total.is_object() {
        return;
    }
    let tokens = openai_tokens(
        total,
        "inputTokens",
        "cachedInputTokens",
        "cacheWriteInputTokens",
        "outputTokens",
    );
    let model = model_of(run, "codex");
    set_models(&mut run.usage, vec![ModelUsage::new(model, tokens)]);
}

/// Gemini's token counts: cached input is inside `input`.
fn gemini_tokens(input: u64, cached: u64, output: u64) -> Tokens {
    Tokens {
        input: input.saturating_sub(cached),
        output,
        cache_read: cached,
        cache_write: 0,
    }
}

/// Gemini CLI's `result` line (`-o stream-json`): `stats`, with the run's totals.
pub(super) fn gemini_stats(v: &Value, run: &mut AgentRun) {
    let Some(stats) = v.get("stats").filter(|s| s.is_object()) else {
        return;
    };
    let tokens = gemini_tokens(
        n(stats, "input_tokens"),
        n(stats, "cached"),
        n(stats, "output_tokens"),
    );
    let model = model_of(run, "gemini");
    set_models(&mut run.usage, vec![ModelUsage::new(model, tokens)]);
}

/// The answer to Gemini CLI's prompt (`gemini --acp`): `_meta.quota.model_usage`, per model.
pub(super) fn gemini_quota(result: &Value, run: &mut AgentRun) {
    let quota = &result["_meta"]["quota"];
    let mut models = Vec::new();
    for m in quota["model_usage"].as_array().into_iter().flatten() {
        let Some(model) = m["model"].as_str() else {
            continue;
        };
        let t = &m["token_count"];
        models.push(ModelUsage::new(
            model.to_string(),
            gemini_tokens(
                n(t, "input_tokens"),
                n(t, "cached_tokens"),
                n(t, "output_tokens"),
            ),
        ));
    }
    if models.is_empty() && quota["token_count"].is_object() {
        let t = &quota["token_count"];
        models.push(ModelUsage::new(
            model_of(run, "gemini"),
            gemini_tokens(
                n(t, "input_tokens"),
                n(t, "cached_tokens"),
                n(t, "output_tokens"),
            ),
        ));
    }
    set_models(&mut run.usage, models);
}

#[cfg(test)]
mod tests;
