//! The price table bosun reckons a run's cost with when its CLI does not say: the repository's
//! (`shared/prices.toml`, dated), or the person's `$BOSUN_HOME/prices.toml`, which replaces it
//! whole. Parsed into a table that cannot hold a bad price: a file that does not parse, a date
//! that is not a day of the calendar, a price that is not a number from 0 to
//! [`MAX_PRICE`] dollars per million tokens, or a model without an input or output price is
//! refused with its line and what is wrong. bosund reads it when it starts and does not start
//! on a bad one; `bosun doctor` reads it the same way, so both say the same. (Here, in the
//! shared crate, because those are two processes that must agree on what a table is.)

use std::collections::BTreeMap;
use std::path::Path;

use crate::usage::{Cost, CostSource, Tokens, Usage};
use serde::Deserialize;
use toml::Spanned;

/// The repository's table.
const BUILT_IN: &str = include_str!("../prices.toml");

/// The most a price may be, in dollars per million tokens: far above any model's, so that only
/// a slip (a misplaced exponent, a price per token written per million) is refused.
pub const MAX_PRICE: f64 = 10_000.0;

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
    date: Spanned<String>,
    #[serde(default)]
    models: BTreeMap<String, FilePrice>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePrice {
    input: Spanned<f64>,
    output: Spanned<f64>,
    cache_read: Option<Spanned<f64>>,
    cache_write: Option<Spanned<f64>>,
}

/// A price table that cannot be used, in words: the file, the line, what is wrong, and what to
/// do. Returned by [`Prices::load`]; the file must be fixed (or moved aside) first.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("could not read {path}: {error}; {TO_DO}")]
    Read { path: String, error: std::io::Error },
    #[error(
        "{path}{}: it is not a price table ({error}); {TO_DO}, in the form of the repository's shared/prices.toml",
        at(*line)
    )]
    Parse {
        path: String,
        line: Option<usize>,
        error: String,
    },
    #[error(
        "{path}, line {line}: date `{value}` is not a day of the calendar; write the day the prices were listed as YYYY-MM-DD, such as 2026-07-01, or move the file aside to use the built-in prices"
    )]
    BadDate {
        path: String,
        line: usize,
        value: String,
    },
    #[error(
        "{path}, line {line}: model `{model}`: {what} must be a price in dollars per million tokens, from 0 to {MAX_PRICE}; `{value}` is not; {TO_DO}"
    )]
    BadPrice {
        path: String,
        line: usize,
        model: String,
        what: &'static str,
        /// As the file writes it.
        value: String,
    },
}

/// What to do about a table that cannot be used.
const TO_DO: &str = "fix it, or move it aside to use the built-in prices";

/// `, line N` where the line is known.
fn at(line: Option<usize>) -> String {
    line.map(|l| format!(", line {l}")).unwrap_or_default()
}

/// The line (from 1) of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Whether `text` is a day of the calendar, written `YYYY-MM-DD`.
fn is_day(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) {
        return false;
    }
    if !digits(5..7) || !digits(8..10) {
        return false;
    }
    let num =
        |r: std::ops::Range<usize>| b[r].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
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

    /// The day the prices were listed, `YYYY-MM-DD`.
    pub fn date(&self) -> &str {
        &self.date
    }

    /// How many models the table prices.
    pub fn models(&self) -> usize {
        self.models.len()
    }

    fn parse(text: &str, path: &str) -> Result<Self, PricesError> {
        let file: File = toml::from_str(text).map_err(|e| PricesError::Parse {
            path: path.to_string(),
            line: e.span().map(|s| line_of(text, s.start)),
            error: e.message().to_string(),
        })?;
        let date = file.date.get_ref();
        if !is_day(date) {
            return Err(PricesError::BadDate {
                path: path.to_string(),
                line: line_of(text, file.date.span().start),
                value: date.clone(),
            });
        }
        let mut models = BTreeMap::new();
        for (model, p) in file.models {
            let check = |what: &'static str, price: &Spanned<f64>| {
                let value = *price.get_ref();
                if value.is_finite() && (0.0..=MAX_PRICE).contains(&value) {
                    Ok(value)
                } else {
                    let span = price.span();
                    Err(PricesError::BadPrice {
                        path: path.to_string(),
                        line: line_of(text, span.start),
                        model: model.clone(),
                        what,
                        value: text.get(span).unwrap_or_default().trim().to_string(),
                    })
                }
            };
            let input = check("input", &p.input)?;
            let or_input = |what, price: &Option<Spanned<f64>>| {
                price.as_ref().map_or(Ok(input), |price| check(what, price))
            };
            let price = ModelPrice {
                input,
                output: check("output", &p.output)?,
                cache_read: or_input("cache_read", &p.cache_read)?,
                cache_write: or_input("cache_write", &p.cache_write)?,
            };
            models.insert(model, price);
        }
        Ok(Self {
            date: date.clone(),
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

    /// What `tokens` of `model` cost by this table, in millionths of a dollar, when it prices
    /// the model.
    pub fn cost_of(&self, model: &str, tokens: Tokens) -> Option<u64> {
        self.of(model).map(|p| {
            let Tokens {
                input,
                output,
                cache_read,
                cache_write,
            } = tokens;
            (input as f64 * p.input
                + output as f64 * p.output
                + cache_read as f64 * p.cache_read
                + cache_write as f64 * p.cache_write)
                .round() as u64
        })
    }

    /// Prices `usage` by this table: each model's tokens, and the whole when every model is
    /// known (a cost the CLI reported is left as it is).
    pub fn apply(&self, usage: &mut Usage) {
        if matches!(&usage.cost, Some(c) if c.source == CostSource::Reported) {
            return;
        }
        let mut total = Some(0u64);
        for m in &mut usage.models {
            m.micro_usd = self.cost_of(&m.model, m.tokens);
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

    /// Prices `usage` as it stands beyond `settled`, the CLI's own last total: each model's
    /// figure and the whole are the CLI's, plus what came since worked out by this table. What
    /// came since of a model the table does not price adds nothing: the figure is then what at
    /// least was spent. A total without a cost of the CLI's is priced whole.
    pub fn apply_since(&self, settled: &Usage, usage: &mut Usage) {
        let Some(said) = settled.cost.clone() else {
            usage.cost = None;
            return self.apply(usage);
        };
        let mut more = 0u64;
        for m in &mut usage.models {
            let before = settled.models.iter().find(|s| s.model == m.model);
            let since = m.tokens.minus(before.map(|b| b.tokens).unwrap_or_default());
            let base = before.and_then(|b| b.micro_usd);
            if since.is_zero() {
                m.micro_usd = base;
                continue;
            }
            let priced = self.cost_of(&m.model, since);
            m.micro_usd = match (base, priced) {
                (Some(b), Some(p)) => Some(b.saturating_add(p)),
                (None, Some(p)) if before.is_none() => Some(p),
                _ => base,
            };
            more = more.saturating_add(priced.unwrap_or(0));
        }
        usage.cost = Some(if more == 0 {
            said
        } else {
            Cost {
                micro_usd: said.micro_usd.saturating_add(more),
                source: CostSource::Computed {
                    date: self.date.clone(),
                },
            }
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
        // Claude's: a listed model, and one newer than the table at its family's price.
        assert!(
            p.of("claude-opus-4-1-20250805")
                .is_some_and(|m| m.input == 15.0)
        );
        assert!(
            p.of("claude-opus-4-20250514")
                .is_some_and(|m| m.input == 15.0)
        );
        assert!(p.of("claude-opus-5-5").is_some_and(|m| m.input == 5.0));
        assert!(p.of("claude-sonnet-5-5").is_some_and(|m| m.output == 15.0));
        assert!(p.of("claude-mock").is_none());
    }

    #[test]
    fn past_the_clis_own_total_what_came_since_is_priced_on_top_of_it() {
        let p = Prices::parse(
            "date = \"2026-12-01\"\n[models.m]\ninput = 2.0\noutput = 10.0\n",
            "t",
        )
        .expect("parses");
        let tokens = |input, output| Tokens {
            input,
            output,
            ..Tokens::default()
        };
        // The CLI said $0.5 for 1000 in and 100 out (not what the table gives: its figure
        // stands).
        let mut settled = Usage::default();
        *settled.model_mut("m") += tokens(1_000, 100);
        settled.models[0].micro_usd = Some(500_000);
        settled.cost = Some(Cost {
            micro_usd: 500_000,
            source: CostSource::Reported,
        });
        let mut now = settled.clone();
        p.apply_since(&settled, &mut now);
        assert_eq!(now.cost, settled.cost, "nothing since: the CLI's figure");
        *now.model_mut("m") += tokens(100, 10);
        *now.model_mut("other") += tokens(5, 5);
        p.apply_since(&settled, &mut now);
        // A model the table does not know leaves the whole at what was known: at least this.
        assert_eq!(now.cost.as_ref().map(|c| c.micro_usd), Some(500_000 + 300));
        assert_eq!(now.models[0].micro_usd, Some(500_300));
        assert_eq!(now.models[1].micro_usd, None);
        assert!(matches!(
            now.cost.as_ref().map(|c| &c.source),
            Some(CostSource::Computed { .. })
        ));
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
            e.to_string()
                .starts_with("p.toml, line 1: it is not a price table ("),
            "{e}"
        );
        let e = Prices::parse(
            "date = \"2026-01-31\"\n[models.m]\ninput = -1.0\noutput = 1.0\n",
            "p.toml",
        )
        .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "p.toml, line 3: model `m`: input must be a price in dollars per million tokens, from 0 to 10000; `-1.0` is not; fix it, or move it aside to use the built-in prices"
        );
        let e = Prices::parse("date = \"2026-01-31\"\n[models.m]\ninput = 1.0\n", "p.toml")
            .expect_err("refused");
        assert!(e.to_string().contains("missing field `output`"), "{e}");
        assert!(e.to_string().ends_with("fix it, or move it aside to use the built-in prices, in the form of the repository's shared/prices.toml"), "{e}");
    }

    /// Issue 44: `date = "banana"` and `input = 1e300` were taken, and the costs of runs
    /// reckoned with them.
    #[test]
    fn a_date_that_is_no_day_or_a_price_out_of_range_is_refused_with_its_line() {
        let table = |date: &str, input: &str| {
            format!("# mine\ndate = \"{date}\"\n\n[models.m]\ninput = {input}\noutput = 1.0\n")
        };
        let e = Prices::parse(&table("banana", "1.0"), "p.toml").expect_err("refused");
        assert_eq!(
            e.to_string(),
            "p.toml, line 2: date `banana` is not a day of the calendar; write the day the prices were listed as YYYY-MM-DD, such as 2026-07-01, or move the file aside to use the built-in prices"
        );
        for day in [
            "2026-02-30",
            "2026-13-01",
            "2026-1-01",
            "2025-02-29",
            "20260701",
        ] {
            assert!(Prices::parse(&table(day, "1.0"), "p").is_err(), "{day}");
        }
        assert!(Prices::parse(&table("2024-02-29", "1.0"), "p").is_ok());
        let e = Prices::parse(&table("2026-07-01", "1e300"), "p.toml").expect_err("refused");
        assert_eq!(
            e.to_string(),
            "p.toml, line 5: model `m`: input must be a price in dollars per million tokens, from 0 to 10000; `1e300` is not; fix it, or move it aside to use the built-in prices"
        );
        for bad in ["inf", "nan", "-0.5", "10000.01"] {
            assert!(
                Prices::parse(&table("2026-07-01", bad), "p").is_err(),
                "{bad}"
            );
        }
        let ok = Prices::parse(&table("2026-07-01", "10000"), "p").expect("the most");
        assert_eq!((ok.date(), ok.models()), ("2026-07-01", 1));
    }
}
