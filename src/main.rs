//! The `crashsim` binary: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = crashsim::cli::Cli::parse();
    crashsim::cli::main(cli).into()
}
