//! A Rust store given to the library API, its calls suspended inside its
//! own SQLite (`[preempt]`): this test is its own program (`harness =
//! false`), which serves `MyStore` one connection per process when crashsim
//! starts it to (`serve_if_asked`, first in `main`), as a user's program
//! does with `Harness::serve_from_this_program`.
//!
//! - `interleave` passes against `MyStore` (from `examples/own_store`), and
//!   its calls were really suspended;
//! - the same seed gives the same trace hash twice;
//! - without `serve_from_this_program` the store runs in this process, its
//!   calls on coroutines (`sim::baton`): it passes too, suspended as often.

#[allow(dead_code)]
#[path = "../examples/own_store/store.rs"]
mod store;

use std::process::ExitCode;

use crashsim::faults::Fault;
use crashsim::harness::Harness;
use store::MyStore;

/// One check: `Err` says what went wrong.
type Check = fn() -> Result<(), String>;

fn main() -> ExitCode {
    if let Some(code) = crashsim::adapter::serve::serve_if_asked(&MyStore) {
        return ExitCode::from(code);
    }
    let checks: [(&str, Check); 3] = [
        ("interleave passes with its calls suspended", passes_suspended),
        ("the same seed gives the same trace hash", same_hash),
        ("in-process, its calls are suspended too", suspended_in_process),
    ];
    let mut failed = 0;
    for (name, check) in checks {
        match check() {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED\n{why}");
            }
        }
    }
    println!("library_preempt: {} passed, {failed} failed", checks.len() - failed);
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn harness() -> Result<Harness<'static>, String> {
    Harness::new(&MyStore)
        .scenario("interleave")
        .map_err(|error| error.to_string())
        .map(|harness| harness.jobs(2).serve_from_this_program())
}

fn passes_suspended() -> Result<(), String> {
    passes_with_suspensions(harness()?)
}

fn same_hash() -> Result<(), String> {
    same_hash_twice(&harness()?)
}

fn suspended_in_process() -> Result<(), String> {
    let in_process = || {
        Harness::new(&MyStore)
            .scenario("interleave")
            .map_err(|error| error.to_string())
    };
    passes_with_suspensions(in_process()?)?;
    same_hash_twice(&in_process()?)
}

/// Seeds 0..4 pass, with more than 4 suspensions among them.
fn passes_with_suspensions(harness: Harness<'_>) -> Result<(), String> {
    let outcome = harness.seeds(0..4).run().map_err(|error| error.to_string())?;
    if !outcome.passed() {
        return Err(format!("{outcome}"));
    }
    let suspensions = outcome
        .results()
        .iter()
        .flat_map(|result| &result.injected)
        .filter(|injected| matches!(injected.fault, Fault::Preempt { .. }))
        .count();
    match suspensions > 4 {
        true => Ok(()),
        false => Err(format!("only {suspensions} suspensions in 4 seeds")),
    }
}

/// Seed 1 replays to one trace hash, twice.
fn same_hash_twice(harness: &Harness<'_>) -> Result<(), String> {
    let hash = || {
        harness
            .replay(1)
            .map(|replay| replay.result().trace_hash.clone())
            .map_err(|error| error.to_string())
    };
    let (first, second) = (hash()?, hash()?);
    match first == second {
        true => Ok(()),
        false => Err(format!("{first} then {second}")),
    }
}
