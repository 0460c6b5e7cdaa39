//! Tests a store written outside crashsim with crashsim's library API: the
//! built-in `smoke` scenario over a few seeds, the verdicts printed, reports
//! under `target/crashsim/`.
//!
//! ```sh
//! cargo run --release --example own_store                          # smoke, seeds 0..8
//! cargo run --release --example own_store -- crash_storm 0 200     # another scenario, seeds 0..200
//! cargo run --release --example own_store -- interleave 0 20       # calls suspended inside SQLite
//! ```
//!
//! `store.rs` is the store; this file is what a test of it looks like.

mod store;

use std::process::ExitCode;

use crashsim::harness::{Harness, HarnessError};
use store::MyStore;

fn main() -> ExitCode {
    // Scenarios that suspend calls inside SQLite (`interleave`) run each
    // connection in this program, started again to serve `MyStore`.
    if let Some(code) = crashsim::adapter::serve::serve_if_asked(&MyStore) {
        return ExitCode::from(code);
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, HarnessError> {
    let (scenario, start, end) = arguments()?;
    let my_store = MyStore;
    let harness = Harness::new(&my_store)
        .scenario(scenario)?
        .seeds(start..end)
        .report_dir("target/crashsim")
        .serve_from_this_program();
    let outcome = harness.run()?;
    println!("{outcome}");
    if let Some(dir) = outcome.report_dir() {
        println!("reports in {}/", dir.display());
    }
    if let Some(failing) = outcome.failures().next() {
        // Print the first failing seed's whole trace, as a test would.
        println!("{}", harness.replay(failing.seed)?);
    }
    Ok(outcome.passed())
}

/// `[SCENARIO [START END]]` from the command line; `smoke`, seeds `0..8` by default.
fn arguments() -> Result<(String, u64, u64), HarnessError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seed = |text: &str| {
        text.parse::<u64>()
            .map_err(|error| HarnessError::Invalid(format!("seed {text:?}: {error}")))
    };
    match args.as_slice() {
        [] => Ok(("smoke".to_string(), 0, 8)),
        [scenario] => Ok((scenario.clone(), 0, 8)),
        [scenario, start, end] => Ok((scenario.clone(), seed(start)?, seed(end)?)),
        _ => Err(HarnessError::Invalid(
            "usage: own_store [SCENARIO [START END]]".to_string(),
        )),
    }
}
