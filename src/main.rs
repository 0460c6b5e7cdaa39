//! The `crashsim` binary: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Output piped into a reader that stops early (`crashsim run … | head`)
    // ends crashsim as it ends any Unix tool, instead of a panic on the
    // closed pipe. What the run left is swept by the next one.
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = crashsim::cli::Cli::parse();
    crashsim::cli::main(cli).into()
}
