//! `bosun`: the person's command line. It attaches to `bosund` (starting it when needed) and
//! turns each subcommand into requests of the UI protocol.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    bosun_shared::process::tune_allocator();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bosun: could not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bosun: {e:#}");
            ExitCode::FAILURE
        }
    }
}
