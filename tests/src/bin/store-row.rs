//! `store-row`: writes one row into a bosun store file as it is, the way an older bosun wrote
//! it, for the upgrade fixture's script (`tests/fixtures/upgrade-v1/make.sh`). bosund must not
//! be running on the file.
//!
//! ```text
//! store-row DB TABLE KEY < ROW.json
//! ```
//!
//! The row is read from stdin and kept byte for byte under `KEY` in `TABLE` (a `&str` →
//! `&[u8]` table, as every table of the store is). It exits 0 once the row is committed, 1 with
//! why on stderr otherwise.

use std::io::Read;
use std::process::ExitCode;

use redb::{Database, TableDefinition};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store-row: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, table, key] = args.as_slice() else {
        anyhow::bail!("usage: store-row DB TABLE KEY < ROW.json");
    };
    let mut row = Vec::new();
    std::io::stdin().read_to_end(&mut row)?;
    let db = Database::open(db)?;
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(TableDefinition::<&str, &[u8]>::new(table))?;
        t.insert(key.as_str(), row.as_slice())?;
    }
    txn.commit()?;
    Ok(())
}
