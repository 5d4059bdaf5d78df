//! `bosun usage [--by agent|card|project|model|day] [--since 7d] [--json|--csv]`: what the runs
//! of coding CLIs used, summed by bosund from their records.

use std::process::ExitCode;

use bosun_protocol::usage::{UsageBy, UsageReport, UsageRow, UsageView};
use bosun_shared::paths::StateDir;
use bosun_shared::time::{millis, parse_duration};
use bosun_shared::usage::Dollars;
use clap::Args;

use super::{connect, output};

#[derive(Args, Debug)]
pub struct UsageArgs {
    /// What to sum by
    #[arg(long, value_enum, default_value = "agent")]
    by: By,
    /// Only runs created this long ago or since (7d, 12h, 30m)
    #[arg(long, value_name = "DURATION")]
    since: Option<String>,
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Comma-separated values, one row per line, with a header
    #[arg(long)]
    csv: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum By {
    Agent,
    Card,
    Project,
    Model,
    Day,
}

impl From<By> for UsageBy {
    fn from(b: By) -> Self {
        match b {
            By::Agent => UsageBy::Agent,
            By::Card => UsageBy::Card,
            By::Project => UsageBy::Project,
            By::Model => UsageBy::Model,
            By::Day => UsageBy::Day,
        }
    }
}

pub async fn usage(dirs: &StateDir, a: UsageArgs) -> anyhow::Result<ExitCode> {
    let since_ms = since_ms(a.since.as_deref())?;
    let mut client = connect(dirs).await?;
    let view = client
        .call(UsageReport {
            by: a.by.into(),
            since_ms,
        })
        .await?;
    if a.json {
        output::print_json(&view)?;
    } else if a.csv {
        out!("{}", csv(&view));
    } else {
        out!("{}", table(&view));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--since DURATION` (7d, 12h, 30m) in milliseconds, refused in words when it does not read.
pub fn since_ms(since: Option<&str>) -> anyhow::Result<Option<u64>> {
    since
        .map(|text| {
            parse_duration(text)
                .map(millis)
                .map_err(|e| anyhow::anyhow!("--since {text}: {e}"))
        })
        .transpose()
}

const COLUMNS: [&str; 8] = [
    "RUNS",
    "INPUT",
    "OUTPUT",
    "CACHE READ",
    "CACHE WRITE",
    "TOOL CALLS",
    "COST",
    "",
];

fn cells(r: &UsageRow) -> [String; 8] {
    [
        r.runs.to_string(),
        r.tokens.input.to_string(),
        r.tokens.output.to_string(),
        r.tokens.cache_read.to_string(),
        r.tokens.cache_write.to_string(),
        r.tool_calls.to_string(),
        Dollars(r.micro_usd).to_string(),
        match r.unpriced {
            0 => String::new(),
            1 => "(1 run of unknown cost)".into(),
            n => format!("({n} runs of unknown cost)"),
        },
    ]
}

/// The rows as a table, with the total last.
fn table(v: &UsageView) -> String {
    if v.rows.is_empty() {
        return "no runs of coding CLIs\n".into();
    }
    let head = v.by.name().to_ascii_uppercase();
    let mut lines: Vec<Vec<String>> = vec![
        std::iter::once(head)
            .chain(COLUMNS.iter().map(|c| c.to_string()))
            .collect(),
    ];
    for r in v.rows.iter().chain(std::iter::once(&v.total)) {
        lines.push(std::iter::once(r.key.clone()).chain(cells(r)).collect());
    }
    let mut widths = vec![0; lines[0].len()];
    for l in &lines {
        for (w, c) in widths.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for l in &lines {
        let mut line = String::new();
        for (i, (c, w)) in l.iter().zip(&widths).enumerate() {
            match i {
                0 => line.push_str(&format!("{c:<w$}")),
                // The note after the cost.
                8 => line.push_str(&format!("  {c}")),
                _ => line.push_str(&format!("  {c:>w$}")),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The rows as CSV: the key, each count, the cost in dollars (no total: a spreadsheet sums).
fn csv(v: &UsageView) -> String {
    let mut out = format!(
        "{},runs,input,output,cache_read,cache_write,tool_calls,cost_usd,unpriced_runs\n",
        v.by.name()
    );
    for r in &v.rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{:.6},{}\n",
            csv_field(&r.key),
            r.runs,
            r.tokens.input,
            r.tokens.output,
            r.tokens.cache_read,
            r.tokens.cache_write,
            r.tool_calls,
            r.micro_usd as f64 / 1e6,
            r.unpriced
        ));
    }
    out
}

/// A field quoted when it must be (a comma, a quote, a line break).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_shared::usage::Tokens;

    fn view() -> UsageView {
        let row = |key: &str, runs, micro_usd, unpriced| UsageRow {
            key: key.into(),
            runs,
            tokens: Tokens {
                input: 1200,
                output: 30,
                cache_read: 0,
                cache_write: 5,
            },
            micro_usd,
            unpriced,
            tool_calls: 4,
        };
        UsageView {
            by: UsageBy::Card,
            since: None,
            rows: vec![
                row("ab12 Fix \"login\", now", 2, 1_500_000, 0),
                row("-", 1, 0, 1),
            ],
            total: row("total", 3, 1_500_000, 1),
        }
    }

    #[test]
    fn the_table_lines_up_and_says_which_costs_are_unknown() {
        assert_eq!(
            table(&view()),
            "\
CARD                   RUNS  INPUT  OUTPUT  CACHE READ  CACHE WRITE  TOOL CALLS     COST
ab12 Fix \"login\", now     2   1200      30           0            5           4    $1.50
-                         1   1200      30           0            5           4  $0.0000  (1 run of unknown cost)
total                     3   1200      30           0            5           4    $1.50  (1 run of unknown cost)
"
        );
    }

    #[test]
    fn csv_quotes_what_it_must_and_gives_dollars() {
        assert_eq!(
            csv(&view()),
            "card,runs,input,output,cache_read,cache_write,tool_calls,cost_usd,unpriced_runs\n\
             \"ab12 Fix \"\"login\"\", now\",2,1200,30,0,5,4,1.500000,0\n\
             -,1,1200,30,0,5,4,0.000000,1\n"
        );
    }
}
