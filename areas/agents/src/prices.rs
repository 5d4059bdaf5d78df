//! The price table bosun reckons a run's cost with when its CLI does not say: the repository's
//! (`prices.toml` beside this crate, dated), or the person's `$BOSUN_HOME/prices.toml`, which
//! replaces it whole. Parsed at bosund's start into a table that cannot hold a bad price: a
//! file that does not parse, a price that is negative or not a number, or a model without an
//! input or output price is refused with what is wrong, and bosund does not start on it.

use std::collections::BTreeMap;
use std::path::Path;

use bosun_shared::usage::{Cost, CostSource, Tokens, Usage};
use serde::Deserialize;

/// The repository's table.
const BUILT_IN: &str = include_str!("../prices.toml");

/// Prices per model, in dollars per million tokens, and the date they were listed.
#[derive(Clone, Debug, PartialEq)]
pub struct Prices {
    date: String,
    models: BTreeMap<String, ModelPrice>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct ModelPrice {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    date: String,
    #[serde(default)]
    models: BTreeMap<String, FilePrice>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePrice {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

/// A price table that cannot be used, in words.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("could not read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error(
        "{path} is not a price table ({error}); see the repository's areas/agents/prices.toml for its form"
    )]
    Parse { path: String, error: String },
    #[error(
        "{path}: model `{model}`: {what} must be a price in dollars per million tokens, 0 or more; {value} is not"
    )]
    BadPrice {
        path: String,
        model: String,
        what: &'static str,
        value: f64,
    },
}

/// The repository's table.
impl Default for Prices {
    fn default() -> Self {
        Self::built_in()
    }
}

impl Prices {
    /// The repository's table.
    pub fn built_in() -> Self {
        // Checked by a test; an empty table if it ever were wrong.
        Self::parse(BUILT_IN, "the built-in prices").unwrap_or_else(|_| Self {
            date: String::new(),
            models: BTreeMap::new(),
        })
    }

    /// The person's table at `path` when there is one, else the repository's.
    pub fn load(path: &Path) -> Result<Self, PricesError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::built_in()),
            Err(error) => Err(PricesError::Read {
                path: path.display().to_string(),
                error,
            }),
        }
    }

    fn parse(text: &str, path: &str) -> Result<Self, PricesError> {
        let file: File = toml::from_str(text).map_err(|e| PricesError::Parse {
            path: path.to_string(),
            error: e.message().to_string(),
        })?;
        let mut models = BTreeMap::new();
        for (model, p) in file.models {
            let check = |what: &'static str, value: f64| {
                if value.is_finite() && value >= 0.0 {
                    Ok(value)
                } else {
                    Err(PricesError::BadPrice {
                        path: path.to_string(),
                        model: model.clone(),
                        what,
                        value,
                    })
                }
            };
            let input = check("input", p.input)?;
            let price = ModelPrice {
                input,
                output: check("output", p.output)?,
                cache_read: check("cache_read", p.cache_read.unwrap_or(input))?,
                cache_write: check("cache_write", p.cache_write.unwrap_or(input))?,
            };
            models.insert(model, price);
        }
        Ok(Self {
            date: file.date,
            models,
        })
    }

    /// The price of `model`: the longest name in the table its name starts with.
    fn of(&self, model: &str) -> Option<&ModelPrice> {
        self.models
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, p)| p)
    }

    /// Prices `usage` by this table: each model's tokens, and the whole when every model is
    /// known (a cost the CLI reported is left as it is).
    pub fn apply(&self, usage: &mut Usage) {
        if matches!(&usage.cost, Some(c) if c.source == CostSource::Reported) {
            return;
        }
        let mut total = Some(0u64);
        for m in &mut usage.models {
            m.micro_usd = self.of(&m.model).map(|p| {
                let Tokens {
                    input,
                    output,
                    cache_read,
                    cache_write,
                } = m.tokens;
                (input as f64 * p.input
                    + output as f64 * p.output
                    + cache_read as f64 * p.cache_read
                    + cache_write as f64 * p.cache_write)
                    .round() as u64
            });
            total = total.zip(m.micro_usd).map(|(t, c)| t.saturating_add(c));
        }
        usage.cost = total
            .filter(|_| !usage.models.is_empty())
            .map(|micro_usd| Cost {
                micro_usd,
                source: CostSource::Computed {
                    date: self.date.clone(),
                },
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_parses_and_is_dated() {
        let p = Prices::parse(BUILT_IN, "built-in").expect("the built-in table parses");
        assert_eq!(p.date, "2026-07-01");
        assert!(
            p.of("gpt-5.4-mini-2026-05-01")
                .is_some_and(|m| m.input == 0.75)
        );
        assert!(p.of("gpt-5.4").is_some_and(|m| m.input == 2.50));
        assert!(p.of("claude-opus").is_none());
    }

    #[test]
    fn a_cost_is_worked_out_per_model_and_only_when_every_model_is_known() {
        let p = Prices::parse(
            "date = \"2026-12-01\"\n[models.m]\ninput = 2.0\noutput = 10.0\ncache_read = 0.5\n",
            "t",
        )
        .expect("parses");
        let mut u = Usage::default();
        *u.model_mut("m-1") += Tokens {
            input: 1_000,
            output: 100,
            cache_read: 2_000,
            cache_write: 10,
        };
        // 1000 × 2 + 100 × 10 + 2000 × 0.5 + 10 × 2 (cache writes at the input price), per 1M.
        p.apply(&mut u);
        let cost = u.cost.clone().expect("known");
        assert_eq!(cost.micro_usd, 4_020);
        assert_eq!(
            cost.source,
            CostSource::Computed {
                date: "2026-12-01".into()
            }
        );
        assert_eq!(u.models[0].micro_usd, Some(4_020));
        u.model_mut("other");
        p.apply(&mut u);
        assert_eq!(u.cost, None);
        assert_eq!(
            u.models[0].micro_usd,
            Some(4_020),
            "the known model keeps its price"
        );
    }

    #[test]
    fn a_bad_table_is_refused_with_what_is_wrong() {
        let e = Prices::parse("date = 3", "p.toml").expect_err("refused");
        assert!(
            e.to_string().starts_with("p.toml is not a price table ("),
            "{e}"
        );
        let e = Prices::parse(
            "date = \"d\"\n[models.m]\ninput = -1.0\noutput = 1.0\n",
            "p.toml",
        )
        .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "p.toml: model `m`: input must be a price in dollars per million tokens, 0 or more; -1 is not"
        );
        let e = Prices::parse("date = \"d\"\n[models.m]\ninput = 1.0\n", "p.toml")
            .expect_err("refused");
        assert!(e.to_string().contains("missing field `output`"), "{e}");
    }
}
