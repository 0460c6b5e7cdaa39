//! The Python example store (adapters/python/example_store.py) as the
//! tests that run it through the adapter protocol start it, run it and find
//! its first failing seed.

use std::sync::Arc;
use std::time::Duration;

use crashsim::adapter::Adapter;
use crashsim::check::Invariant;
use crashsim::runner::{Options, SeedResult, Sut, run_seed, run_seeds};
use crashsim::scenario::Loaded;

use super::{load, python, root, work_dir};

/// The example store's command line. `-S` skips site-packages, which the
/// example does not need and some interpreters are slow to import.
pub fn example(args: &str) -> Option<String> {
    let script = root().join("adapters/python/example_store.py");
    Some(format!("{} -S {} {args}", python()?, script.display()))
}

pub fn adapter(command: &str, timeout: Duration) -> Arc<Adapter> {
    Arc::new(Adapter::probe(command, timeout, true).expect("the adapter answers its handshake"))
}

pub fn options(dir: &std::path::Path, adapter: &Arc<Adapter>) -> Options {
    Options {
        work_dir: dir.to_path_buf(),
        keep_failed: false,
        keep_traces: true,
        sut: Sut::Adapter(Arc::clone(adapter)),
        check_determinism: false,
        files: Default::default(),
    }
}

pub fn runs(loaded: &Loaded, seeds: std::ops::Range<u64>, adapter: &Arc<Adapter>) -> Vec<SeedResult> {
    let dir = work_dir();
    let seeds: Vec<u64> = seeds.collect();
    run_seeds(loaded, &seeds, 2, &options(dir.path(), adapter), |_| {}).expect("seeds run")
}

pub fn assert_passes(results: &[SeedResult], what: &str) {
    for result in results {
        assert!(result.ok, "{what}, seed {}: {:#?}", result.seed, result.violations);
    }
}

/// The first violation of `bug`'s first failing seed in seeds 0..4 of `scenario`.
pub fn first_violation(bug: &str, scenario: &str) -> Option<crashsim::check::Violation> {
    first_failing(bug, scenario)?.violations.into_iter().next()
}

/// The first failing seed of `bug` in seeds 0..4 of `scenario`, and its invariants.
pub fn caught(bug: &str, scenario: &str) -> Option<Vec<Invariant>> {
    Some(
        first_failing(bug, scenario)?
            .violations
            .iter()
            .map(|v| v.invariant)
            .collect(),
    )
}

/// The first failing seed of the example with `bug` in seeds 0..4 of `scenario`.
pub fn first_failing(bug: &str, scenario: &str) -> Option<SeedResult> {
    let command = example(&format!("--bug {bug}"))?;
    let adapter = adapter(&command, Duration::from_secs(30));
    let loaded = load(scenario);
    let dir = work_dir();
    (0..4)
        .map(|seed| run_seed(&loaded, seed, &options(dir.path(), &adapter)).expect("seed runs"))
        .find(|result| !result.ok)
}

/// A store that misbehaves as `mode` says (tests/fixtures/adapters/faulty_store.py).
pub fn faulty(mode: &str) -> Option<String> {
    let script = root().join("tests/fixtures/adapters/faulty_store.py");
    Some(format!("{} {} {mode}", python()?, script.display()))
}
