//! What a run of a coding CLI used, as the CLI reported it: tokens per model, what it cost and
//! how that figure was found, and how many tool calls it made. A cost is kept in millionths of
//! a dollar, so that sums are exact.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens per model, in the order the models were first reported.
    pub models: Vec<ModelUsage>,
    /// What it cost, when the CLI said or bosun's prices know every model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// The tool calls the CLI made.
    #[serde(default)]
    pub tool_calls: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    pub model: String,
    #[serde(flatten)]
    pub tokens: Tokens,
    /// What this model's tokens cost, when the CLI said or a price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_usd: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Input read from the model's prompt cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input written to the model's prompt cache.
    #[serde(default)]
    pub cache_write: u64,
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, o: Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// A cost, and where the figure comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub micro_usd: u64,
    pub source: CostSource,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CostSource {
    /// The CLI's own figure (Claude Code's `total_cost_usd`).
    Reported,
    /// Worked out by bosun from its price table of `date` (the repository's, or the person's
    /// `prices.toml`).
    Computed { date: String },
}

impl ModelUsage {
    /// `model`'s `tokens`, not priced yet.
    pub fn new(model: String, tokens: Tokens) -> Self {
        Self {
            model,
            tokens,
            micro_usd: None,
        }
    }
}

impl Usage {
    /// Every model's tokens together.
    pub fn total(&self) -> Tokens {
        let mut t = Tokens::default();
        for m in &self.models {
            t += m.tokens;
        }
        t
    }

    /// The tokens of `model`, made if it is new.
    pub fn model_mut(&mut self, model: &str) -> &mut Tokens {
        let i = match self.models.iter().position(|m| m.model == model) {
            Some(i) => i,
            None => {
                self.models
                    .push(ModelUsage::new(model.to_string(), Tokens::default()));
                self.models.len() - 1
            }
        };
        &mut self.models[i].tokens
    }
}

/// Dollars as people read them: `$0.0123`, `$1.20`, `$14.05` (four decimals under a dollar).
pub struct Dollars(pub u64);

impl fmt::Display for Dollars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.0 as f64 / 1e6;
        if self.0 < 1_000_000 {
            write!(f, "${usd:.4}")
        } else {
            write!(f, "${usd:.2}")
        }
    }
}

/// Dollars (`2`, `0.5`, `$1.25`) as millionths of a dollar: positive and below a million.
pub fn parse_dollars(text: &str) -> Option<u64> {
    let t = text.trim().trim_start_matches('$');
    let usd: f64 = t.parse().ok()?;
    (usd.is_finite() && usd > 0.0 && usd < 1e6).then(|| (usd * 1e6).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_read_and_print_as_people_write_them() {
        assert_eq!(Dollars(656).to_string(), "$0.0007");
        assert_eq!(Dollars(12_300).to_string(), "$0.0123");
        assert_eq!(Dollars(14_050_000).to_string(), "$14.05");
        assert_eq!(parse_dollars("2"), Some(2_000_000));
        assert_eq!(parse_dollars("$0.5"), Some(500_000));
        for bad in ["0", "-1", "abc", "", "NaN", "inf", "1e9"] {
            assert_eq!(parse_dollars(bad), None, "{bad}");
        }
    }

    #[test]
    fn tokens_add_up_per_model_in_the_order_seen() {
        let mut u = Usage::default();
        *u.model_mut("b") += Tokens {
            input: 1,
            output: 2,
            cache_read: 3,
            cache_write: 4,
        };
        *u.model_mut("a") += Tokens {
            input: 10,
            ..Tokens::default()
        };
        *u.model_mut("b") += Tokens {
            input: 1,
            ..Tokens::default()
        };
        assert_eq!(
            u.models
                .iter()
                .map(|m| m.model.as_str())
                .collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert_eq!(
            u.total(),
            Tokens {
                input: 12,
                output: 2,
                cache_read: 3,
                cache_write: 4
            }
        );
    }
}
