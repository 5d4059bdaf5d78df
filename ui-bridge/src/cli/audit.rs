//! `bosun audit [--since 7d] [--json]` and `bosun audit verify`: bosund's record of who changed
//! what agents may do, and who answered what.

use std::process::ExitCode;

use bosun_protocol::audit::{AuditCheck, AuditList};
use bosun_shared::paths::StateDir;
use bosun_shared::text::visible;
use clap::{Args, Subcommand};

use super::{connect, output};

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(subcommand)]
    command: Option<AuditCommand>,
    /// Only entries this long ago or since (7d, 12h, 30m)
    #[arg(long, value_name = "DURATION")]
    since: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum AuditCommand {
    /// Check that no entry was edited, removed or put out of order since it was written
    Verify {
        #[arg(long)]
        json: bool,
    },
}

pub async fn audit(dirs: &StateDir, a: AuditArgs) -> anyhow::Result<ExitCode> {
    if let Some(AuditCommand::Verify { json }) = a.command {
        return verify(dirs, json).await;
    }
    let since_ms = super::usage::since_ms(a.since.as_deref())?;
    let mut client = connect(dirs).await?;
    let view = client
        .call(AuditList {
            since_ms,
            verify: false,
        })
        .await?;
    if a.json {
        output::print_json(&view.entries)?;
        return Ok(ExitCode::SUCCESS);
    }
    if view.entries.is_empty() {
        outln!(
            "nothing on record{}",
            if a.since.is_some() {
                " in that time"
            } else {
                ""
            }
        );
    }
    for e in &view.entries {
        outln!(
            "{:>5}  {:>9}  {:<6}  {}",
            e.n,
            output::age(e.at),
            e.who,
            visible(&e.what)
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn verify(dirs: &StateDir, json: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(dirs).await?;
    let view = client
        .call(AuditList {
            since_ms: Some(0),
            verify: true,
        })
        .await?;
    let check = view
        .check
        .ok_or_else(|| anyhow::anyhow!("bosund did not check the audit log"))?;
    if json {
        output::print_json(&check)?;
    }
    match check {
        AuditCheck::Intact { entries } => {
            if !json {
                outln!("the audit log is intact: {entries} entries, each as it was written");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCheck::Broken { line, why } => {
            if !json {
                errln!(
                    "the audit log was changed after it was written: line {line}: {why} ({})",
                    dirs.root().join("audit.jsonl").display()
                );
            }
            Ok(ExitCode::from(1))
        }
    }
}
