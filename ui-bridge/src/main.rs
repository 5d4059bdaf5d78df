//! `bosun`: the person's command line. It attaches to `bosund` (starting it when needed) and
//! turns each subcommand into requests of the UI protocol.

#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod term;
mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Like any Unix filter: when the reader of our output goes away (`bosun logs … | head`),
    // end quietly instead of failing to print.
    // SAFETY: setting a signal's disposition to the default has no preconditions.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
    // A shell asking for completions (BOSUN_COMPLETE set) is answered here, and bosun exits.
    cli::complete::answer_if_asked();
    let args = cli::Args::parse();
    bosun_shared::process::tune_allocator();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("bosun: could not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(code) => code,
        Err(e) => {
            // An error may quote what a server or a program said: its lines after the first
            // are indented, so that none passes for a line of bosun's own.
            let text = format!("{e:#}");
            errln!("bosun: {}", text.replace('\n', "\n  "));
            ExitCode::FAILURE
        }
    }
}
