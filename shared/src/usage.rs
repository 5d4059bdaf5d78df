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

impl Tokens {
    /// Each count the larger of the two.
    pub fn max(self, o: Tokens) -> Tokens {
        Tokens {
            input: self.input.max(o.input),
            output: self.output.max(o.output),
            cache_read: self.cache_read.max(o.cache_read),
            cache_write: self.cache_write.max(o.cache_write),
        }
    }

    /// Each count less `o`'s, never below zero.
    pub fn minus(self, o: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(o.input),
            output: self.output.saturating_sub(o.output),
            cache_read: self.cache_read.saturating_sub(o.cache_read),
            cache_write: self.cache_write.saturating_sub(o.cache_write),
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Tokens::default()
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

    /// The tokens of `model` (none when it has none).
    pub fn tokens_of(&self, model: &str) -> Tokens {
        self.models
            .iter()
            .find(|m| m.model == model)
            .map(|m| m.tokens)
            .unwrap_or_default()
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

/// What one run of an agent may use before its next tool call waits for the person: a cost, a
/// number of tokens (all kinds together), a number of tool calls. Each is unlimited when absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micro_usd: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
}

/// A cap a run has reached: what it used, and what it may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    Cost { spent: u64, cap: u64 },
    Tokens { used: u64, cap: u64 },
    ToolCalls { made: u64, cap: u64 },
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        *self == Budget::default()
    }

    /// The first cap `usage` (with `calls` tool calls decided so far) has reached, if any.
    pub fn reached(&self, usage: &Usage, calls: u64) -> Option<Reached> {
        self.reached_by(&Spent::of(usage, calls), calls)
    }

    /// The first cap `spent` (with `calls` tool calls decided so far) has reached, if any.
    pub fn reached_by(&self, spent: &Spent, calls: u64) -> Option<Reached> {
        if let (Some(cap), Some(cost)) = (self.micro_usd, spent.micro_usd)
            && cost >= cap
        {
            return Some(Reached::Cost { spent: cost, cap });
        }
        let used = spent.tokens;
        if let Some(cap) = self.tokens
            && used >= cap
        {
            return Some(Reached::Tokens { used, cap });
        }
        match self.tool_calls {
            Some(cap) if calls >= cap => Some(Reached::ToolCalls { made: calls, cap }),
            Some(_) | None => None,
        }
    }

    /// This budget with `grant` more of each cap it has (a cap it does not have stays
    /// unlimited).
    pub fn extended(&self, grant: &Budget) -> Budget {
        let add = |a: Option<u64>, b: Option<u64>| a.map(|a| a.saturating_add(b.unwrap_or(0)));
        Budget {
            micro_usd: add(self.micro_usd, grant.micro_usd),
            tokens: add(self.tokens, grant.tokens),
            tool_calls: add(self.tool_calls, grant.tool_calls),
        }
    }

    /// Two grants together.
    pub fn plus(&self, more: &Budget) -> Budget {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        Budget {
            micro_usd: add(self.micro_usd, more.micro_usd),
            tokens: add(self.tokens, more.tokens),
            tool_calls: add(self.tool_calls, more.tool_calls),
        }
    }

    /// The caps in words: `$2.00, 500000 tokens, 200 tool calls a run`.
    pub fn words(&self) -> String {
        match self.caps_words() {
            None => "none".into(),
            Some(caps) => format!("{caps} a run"),
        }
    }

    /// The caps in words, without saying what for (`$2.00, 500000 tokens`); `None` when there
    /// is none.
    pub fn caps_words(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = self.micro_usd {
            parts.push(Dollars(c).to_string());
        }
        if let Some(t) = self.tokens {
            parts.push(format!("{t} tokens"));
        }
        if let Some(n) = self.tool_calls {
            parts.push(format!("{n} tool calls"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// What was spent, as a budget counts it: a cost when one is known (a run whose cost is
/// unknown counts nothing toward a cost cap, its tokens still count), and tokens of every kind
/// together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    pub micro_usd: Option<u64>,
    pub tokens: u64,
    /// Tool calls bosun allowed.
    pub calls: u64,
}

impl Spent {
    /// What one run's `usage` spent, with the `calls` bosun allowed it.
    pub fn of(usage: &Usage, calls: u64) -> Spent {
        let t = usage.total();
        Spent {
            micro_usd: usage.cost.as_ref().map(|c| c.micro_usd),
            tokens: t
                .input
                .saturating_add(t.output)
                .saturating_add(t.cache_read)
                .saturating_add(t.cache_write),
            calls,
        }
    }

    /// Two together: a cost is known once either's is.
    pub fn plus(&self, o: &Spent) -> Spent {
        Spent {
            micro_usd: match (self.micro_usd, o.micro_usd) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            },
            tokens: self.tokens.saturating_add(o.tokens),
            calls: self.calls.saturating_add(o.calls),
        }
    }

    /// This less `o`, which it holds (what a run spent before, taken out of a sum it is in).
    pub fn minus(&self, o: &Spent) -> Spent {
        Spent {
            micro_usd: match (self.micro_usd, o.micro_usd) {
                (Some(a), Some(b)) => Some(a.saturating_sub(b)),
                (a, _) => a,
            },
            tokens: self.tokens.saturating_sub(o.tokens),
            calls: self.calls.saturating_sub(o.calls),
        }
    }
}

/// A budget shared by several runs, besides each run's own: a card's (every run of the card,
/// its QA runs too) or a project's for one day (UTC; every run of its cards created that day).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BudgetScope {
    Card {
        card: crate::CardId,
        title: String,
    },
    ProjectDay {
        project: crate::ProjectId,
        name: String,
        /// `2026-12-03`.
        day: String,
    },
}

impl BudgetScope {
    /// The key its grants are kept under: `card/<id>`, `project/<id>/<day>`.
    pub fn key(&self) -> String {
        match self {
            BudgetScope::Card { card, .. } => format!("card/{card}"),
            BudgetScope::ProjectDay { project, day, .. } => format!("project/{project}/{day}"),
        }
    }

    /// What it is in words: `card 'Fix login'`, `project 'web' on 2026-12-03`.
    pub fn words(&self) -> String {
        match self {
            BudgetScope::Card { title, .. } => format!("card '{title}'"),
            BudgetScope::ProjectDay { name, day, .. } => format!("project '{name}' on {day}"),
        }
    }

    /// What was reached, said of this scope: `budget reached: card 'Fix login' $2.04 of $2.00`.
    pub fn reached_words(&self, reached: &Reached) -> String {
        let what = match self {
            BudgetScope::Card { .. } => "budget reached",
            BudgetScope::ProjectDay { .. } => "daily budget reached",
        };
        match reached {
            Reached::Cost { spent, cap } => format!(
                "{what}: {} {} of {}",
                self.words(),
                Dollars(*spent),
                Dollars(*cap)
            ),
            Reached::Tokens { used, cap } => {
                format!("{what}: {} {used} of {cap} tokens", self.words())
            }
            Reached::ToolCalls { made, cap } => {
                format!("{what}: {} {made} of {cap} tool calls", self.words())
            }
        }
    }
}

/// The day (UTC) of a moment, as `2026-12-03`: the day a run counts toward in its project's
/// daily budget, and its row in `bosun usage --by day`.
pub fn day_of(at: crate::Timestamp) -> String {
    at.rfc3339().chars().take(10).collect()
}

/// A change to one cap of a card's or a project's budget (absent: it stays): taken off, or set
/// to a positive amount (millionths of a dollar, or tokens). Made from what the person wrote by
/// [`CapEdit::parse`]; whoever receives one still refuses `Set(0)`, which a client could send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapEdit {
    Off,
    Set(u64),
}

impl CapEdit {
    /// What the person wrote (`5`, `$2.50`, `500000`, `off`), as [`parse_cap`] reads it.
    pub fn parse(what: &str, text: &str, dollars: bool) -> Result<CapEdit, CapError> {
        Ok(match parse_cap(what, text, dollars)? {
            Some(n) => CapEdit::Set(n),
            None => CapEdit::Off,
        })
    }
}

/// A cap as the person writes it for a card or a project (`5`, `$2.50`, `500000`), or `off` to
/// take it off: `Ok(None)`. Anything else is refused with the reason, naming `what` (such as
/// "a card's budget in dollars"). `dollars` reads it as dollars by [`parse_dollars`] (kept in
/// millionths), else as a whole number of tokens by [`parse_count`].
pub fn parse_cap(what: &str, text: &str, dollars: bool) -> Result<Option<u64>, CapError> {
    let v = text.trim();
    if matches!(v, "off" | "none") {
        return Ok(None);
    }
    let parsed = if dollars {
        parse_dollars(v)
    } else {
        parse_count(v)
    };
    let example = if dollars { "5 or 2.50" } else { "500000" };
    parsed.map(Some).map_err(|reason| CapError {
        reason,
        what: what.into(),
        example,
    })
}

/// A cap [`parse_cap`] refused: not an amount bosun can keep, nor `off`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {what} takes a positive amount, such as {example}, or off to take it off")]
pub struct CapError {
    /// What is wrong with what the person wrote.
    pub reason: AmountError,
    /// The cap it was for, in words ("a card's budget in dollars").
    pub what: String,
    /// How to write one instead.
    pub example: &'static str,
}

/// Why an amount (of dollars, or a count of tokens or calls) is not one bosun can keep. Each
/// quotes what the person wrote; the caller adds what the amount was for and how to write one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Zero, negative, or not a number written as bosun reads one (`5`, `2.50`, `$1.25`).
    #[error("`{0}` is not a positive amount")]
    NotPositive(String),
    /// Above zero, but less than a millionth of a dollar, which would be kept as nothing.
    #[error(
        "`{0}` is less than $0.000001, the smallest amount bosun keeps (it counts dollars in millionths)"
    )]
    TooSmall(String),
    /// More decimals than a millionth of a dollar, which would be rounded.
    #[error(
        "`{0}` has more than six decimals; bosun counts dollars in millionths, such as 0.000125"
    )]
    TooFine(String),
    /// A million dollars or more.
    #[error("`{0}` is too large; an amount of dollars is under 1000000")]
    TooLarge(String),
}

impl fmt::Display for Reached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reached::Cost { spent, cap } => {
                write!(
                    f,
                    "budget reached: {} of {}",
                    Dollars(*spent),
                    Dollars(*cap)
                )
            }
            Reached::Tokens { used, cap } => {
                write!(f, "budget reached: {used} of {cap} tokens")
            }
            Reached::ToolCalls { made, cap } => {
                write!(f, "tool call cap reached: {made} of {cap} calls")
            }
        }
    }
}

/// For `skip_serializing_if`: a count that is 0.
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Dollars as people read them: `$0.0123`, `$1.20`, `$14.05` (four decimals under a dollar, and
/// up to six under a hundredth of a cent, so that the smallest amount a budget takes is not
/// shown as `$0.0000`).
pub struct Dollars(pub u64);

impl fmt::Display for Dollars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let usd = self.0 as f64 / 1e6;
        if self.0 > 0 && self.0 < 100 {
            let six = format!("{usd:.6}");
            write!(f, "${}", six.trim_end_matches('0'))
        } else if self.0 < 1_000_000 {
            write!(f, "${usd:.4}")
        } else {
            write!(f, "${usd:.2}")
        }
    }
}

/// The most dollars an amount may be: just under a million, in millionths.
const MAX_MICRO_USD: u64 = 1_000_000 * 1_000_000 - 1;

/// Dollars as the person writes them (`2`, `0.5`, `.25`, `$1.25`) as millionths of a dollar,
/// the unit every amount of bosun is kept in: the one parser of an amount of dollars, for the
/// budgets of agents, cards and projects, on the command line, in the web UI and in bosund.
/// The digits are read exactly, never through a float, so that what is kept is what was
/// written: an amount below a millionth, or finer than one, is refused rather than rounded
/// (`0.0000001` would be kept as `$0`), and so are zero, signs, exponents and a million or
/// more.
pub fn parse_dollars(text: &str) -> Result<u64, AmountError> {
    let t = text.trim();
    let not_positive = || AmountError::NotPositive(t.to_string());
    let digits = t.strip_prefix('$').unwrap_or(t);
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !all_digits(whole) || !all_digits(frac) {
        return Err(not_positive());
    }
    // Trailing zeros say nothing more (`2.5000000` is `2.5`).
    let frac = frac.trim_end_matches('0');
    let too_large = || AmountError::TooLarge(t.to_string());
    let whole: u64 = match whole.trim_start_matches('0') {
        "" => 0,
        w => w.parse().map_err(|_| too_large())?,
    };
    if frac.len() > 6 {
        return Err(if whole == 0 && frac.bytes().take(6).all(|b| b == b'0') {
            AmountError::TooSmall(t.to_string())
        } else {
            AmountError::TooFine(t.to_string())
        });
    }
    // At most six digits, padded to six: the millionths.
    let millionths: u64 = format!("{frac:0<6}").parse().map_err(|_| not_positive())?;
    let micro = whole
        .checked_mul(1_000_000)
        .and_then(|w| w.checked_add(millionths))
        .filter(|m| *m <= MAX_MICRO_USD)
        .ok_or_else(too_large)?;
    if micro == 0 {
        return Err(not_positive());
    }
    Ok(micro)
}

/// A whole number above zero (`500000`), as a cap of tokens or of tool calls is written: the
/// one parser of such a count.
pub fn parse_count(text: &str) -> Result<u64, AmountError> {
    let t = text.trim();
    t.parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| AmountError::NotPositive(t.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_read_and_print_as_people_write_them() {
        assert_eq!(Dollars(656).to_string(), "$0.0007");
        assert_eq!(Dollars(12_300).to_string(), "$0.0123");
        assert_eq!(Dollars(14_050_000).to_string(), "$14.05");
        assert_eq!(Dollars(1).to_string(), "$0.000001");
        assert_eq!(Dollars(20).to_string(), "$0.00002");
        assert_eq!(Dollars(0).to_string(), "$0.0000");
        assert_eq!(parse_dollars("2"), Ok(2_000_000));
        assert_eq!(parse_dollars("$0.5"), Ok(500_000));
        assert_eq!(parse_dollars(" .25 "), Ok(250_000));
        assert_eq!(parse_dollars("0.000001"), Ok(1));
        assert_eq!(parse_dollars("2.5000000"), Ok(2_500_000));
        assert_eq!(parse_dollars("999999.999999"), Ok(999_999_999_999));
        for bad in [
            "0", "0.000000", "-1", "abc", "", ".", "$", "NaN", "inf", "1e2", "+5",
        ] {
            assert_eq!(
                parse_dollars(bad),
                Err(AmountError::NotPositive(bad.trim().into())),
                "{bad}"
            );
        }
        for big in ["1000000", "1e9", "99999999999999999999999"] {
            assert!(parse_dollars(big).is_err(), "{big}");
        }
        assert_eq!(
            parse_dollars("1000000"),
            Err(AmountError::TooLarge("1000000".into()))
        );
    }

    /// Issue 44: `budget.usd=0.0000001` was kept as $0 (the float rounded to no millionths),
    /// while `budget.usd=0` was refused; and a card's budget of the same amount was refused as
    /// "`0` is not a positive amount", naming a value the person never wrote.
    #[test]
    fn an_amount_below_a_millionth_of_a_dollar_is_refused_as_too_small_not_kept_as_zero() {
        let e = parse_dollars("0.0000001").expect_err("too small");
        assert_eq!(
            e.to_string(),
            "`0.0000001` is less than $0.000001, the smallest amount bosun keeps (it counts dollars in millionths)"
        );
        assert_eq!(
            parse_dollars("$0.0000004"),
            Err(AmountError::TooSmall("$0.0000004".into()))
        );
        assert_eq!(
            parse_dollars("0.0000015"),
            Err(AmountError::TooFine("0.0000015".into())),
            "finer than a millionth is refused, not rounded"
        );
        let card = parse_cap("a card's budget in dollars", "0.0000001", true).expect_err("refused");
        assert_eq!(
            card.to_string(),
            "`0.0000001` is less than $0.000001, the smallest amount bosun keeps (it counts dollars in millionths): a card's budget in dollars takes a positive amount, such as 5 or 2.50, or off to take it off"
        );
    }

    #[test]
    fn a_budget_is_reached_by_its_first_cap_and_extended_by_a_grant() {
        let mut u = Usage::default();
        *u.model_mut("m") += Tokens {
            input: 400,
            output: 100,
            ..Tokens::default()
        };
        u.cost = Some(Cost {
            micro_usd: 2_040_000,
            source: CostSource::Reported,
        });
        let b = Budget {
            micro_usd: Some(2_000_000),
            tokens: Some(1_000),
            tool_calls: Some(3),
        };
        let reached = b.reached(&u, 0).expect("the cost");
        assert_eq!(reached.to_string(), "budget reached: $2.04 of $2.00");
        let more = b.extended(&Budget {
            micro_usd: Some(2_000_000),
            ..Budget::default()
        });
        assert_eq!(more.micro_usd, Some(4_000_000));
        assert_eq!(more.reached(&u, 2), None);
        assert_eq!(
            more.reached(&u, 3).map(|r| r.to_string()).as_deref(),
            Some("tool call cap reached: 3 of 3 calls")
        );
        assert_eq!(
            Budget {
                tokens: Some(500),
                ..Budget::default()
            }
            .reached(&u, 0)
            .map(|r| r.to_string())
            .as_deref(),
            Some("budget reached: 500 of 500 tokens")
        );
        assert_eq!(Budget::default().reached(&u, 1_000), None);
        let grants = Budget::default().plus(&Budget {
            tool_calls: Some(3),
            ..Budget::default()
        });
        assert_eq!(grants.tool_calls, Some(3), "the first grant counts whole");
        assert_eq!(
            Budget::default().extended(&grants),
            Budget::default(),
            "a grant does not cap what had no cap"
        );
        assert_eq!(b.words(), "$2.00, 1000 tokens, 3 tool calls a run");
    }

    #[test]
    fn a_shared_cap_is_a_positive_amount_or_off_and_its_scope_is_said_in_words() {
        assert_eq!(parse_cap("a card's budget", "5", true), Ok(Some(5_000_000)));
        assert_eq!(
            parse_cap("a card's budget", "$2.50", true),
            Ok(Some(2_500_000))
        );
        assert_eq!(parse_cap("a card's budget", "off", true), Ok(None));
        assert_eq!(parse_cap("x", "500000", false), Ok(Some(500_000)));
        for bad in ["0", "-1", "lots", "", "2.5e9"] {
            let e = parse_cap("a card's budget in dollars", bad, true).expect_err(bad);
            assert!(
                e.to_string().ends_with(
                    "a card's budget in dollars takes a positive amount, such as 5 or 2.50, or off to take it off"
                ),
                "{e}"
            );
        }
        assert!(parse_cap("x", "1.5", false).is_err(), "tokens are whole");
        let card = BudgetScope::Card {
            card: crate::CardId::new(),
            title: "Fix login".into(),
        };
        assert_eq!(
            card.reached_words(&Reached::Cost {
                spent: 2_040_000,
                cap: 2_000_000
            }),
            "budget reached: card 'Fix login' $2.04 of $2.00"
        );
        let day = BudgetScope::ProjectDay {
            project: crate::ProjectId::new(),
            name: "web".into(),
            day: "2026-12-03".into(),
        };
        assert_eq!(
            day.reached_words(&Reached::Tokens { used: 21, cap: 20 }),
            "daily budget reached: project 'web' on 2026-12-03 21 of 20 tokens"
        );
        assert!(day.key().ends_with("/2026-12-03") && day.key().starts_with("project/"));
        assert_eq!(
            Spent {
                micro_usd: Some(5),
                tokens: 7,
                calls: 4
            }
            .plus(&Spent {
                micro_usd: None,
                tokens: 3,
                calls: 1
            })
            .minus(&Spent {
                micro_usd: Some(2),
                tokens: 1,
                calls: 2
            }),
            Spent {
                micro_usd: Some(3),
                tokens: 9,
                calls: 3
            }
        );
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
