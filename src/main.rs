//! The `crashsim` binary: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A child of `--mode process` (not a command for people).
    if std::env::args().nth(1).as_deref() == Some("__actor") {
        return crashsim::sim::process::child::main();
    }
    let cli = crashsim::cli::Cli::parse();
    crashsim::cli::main(cli).into()
}
