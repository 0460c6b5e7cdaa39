//! Every shipped scenario passes 50 seeds against the store it names (the
//! reference, or `group_commit` in `group_commit.toml`), and the
//! group-commit store passes the reference's scenarios too. Longer sweeps
//! (1,000 seeds of each, in-process and outside) are the CLI's job; their
//! results are in docs/performance.md.

use crate::common;

use std::path::Path;

use common::{load, root, work_dir};
use crashsim::runner::{Options, Sut, run_seeds};

const SEEDS: u64 = 50;

/// The scenarios shipped in `scenarios/`; a new file must be added here.
const SHIPPED: [&str; 13] = [
    "smoke",
    "contention",
    "crash_storm",
    "swarm",
    "sync_normal",
    "group_commit",
    "power_loss",
    "leases",
    "retries",
    "clocks",
    "interleave",
    "backups",
    "restores",
];

fn passes(name: &str) {
    passes_with(name, None, SEEDS);
}

/// Runs `seeds` seeds of a shipped scenario, with its `store` replaced if asked.
fn passes_with(name: &str, store: Option<&str>, seeds: u64) {
    passes_on(name, store, seeds, Default::default());
}

/// `passes_with`, the store under test given (`Sut::Adapter`: in processes).
fn passes_on(name: &str, store: Option<&str>, seeds: u64, sut: Sut) {
    let mut loaded = load(&format!("scenarios/{name}.toml"));
    if let Some(store) = store {
        loaded.scenario.store = store.to_string();
    }
    let dir = work_dir();
    let options = Options {
        work_dir: dir.path().to_path_buf(),
        keep_failed: false,
        keep_traces: false,
        sut,
        check_determinism: false,
        files: Default::default(),
    };
    let results = all_pass(&loaded, seeds, &options);
    let fired: u64 = results.iter().map(|result| result.kills.total_fired()).sum();
    assert!(fired > 0, "{name}: no kill ever fired");
}

/// Runs seeds 0..`seeds` of `loaded`, which must all pass.
fn all_pass(loaded: &crashsim::scenario::Loaded, seeds: u64, options: &Options) -> Vec<crashsim::runner::SeedResult> {
    let seeds: Vec<u64> = (0..seeds).collect();
    let results = run_seeds(loaded, &seeds, 1, options, |_| {}).unwrap();
    let failures: Vec<String> = results
        .iter()
        .filter(|result| !result.ok)
        .map(|result| format!("seed {}: {}", result.seed, result.violations[0]))
        .collect();
    assert!(
        failures.is_empty(),
        "{}: {} failing seeds: {failures:#?}",
        loaded.label(),
        failures.len()
    );
    results
}

#[test]
fn smoke() {
    passes("smoke");
}

#[test]
fn contention() {
    passes("contention");
}

#[test]
fn crash_storm() {
    passes("crash_storm");
}

#[test]
fn swarm() {
    passes("swarm");
}

#[test]
fn group_commit() {
    passes("group_commit");
}

/// The same seeds as the reference's, fewer of them: the store under test
/// changes, the workload and the faults do not.
#[test]
fn group_commit_passes_the_reference_scenarios() {
    for name in ["smoke", "contention", "crash_storm", "swarm"] {
        passes_with(name, Some("group_commit"), 25);
    }
}

#[test]
fn every_shipped_scenario_is_tested() {
    let mut found: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter_map(|entry| {
            let path = entry.unwrap().path();
            (path.extension() == Some("toml".as_ref()))
                .then(|| Path::new(&path).file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    found.sort();
    let mut shipped: Vec<String> = SHIPPED.iter().map(|s| s.to_string()).collect();
    shipped.sort();
    assert_eq!(found, shipped);
}

#[test]
fn sync_normal() {
    passes("sync_normal");
}

#[test]
fn power_loss() {
    passes("power_loss");
}

#[test]
fn leases() {
    passes("leases");
}

#[test]
fn retries() {
    passes("retries");
}

#[test]
fn clocks() {
    passes("clocks");
}

/// The reference's backups hold: every seed passes, with backups judged in
/// most, and power cuts falling inside some of them (a backup the cut
/// interrupted never completes, and is not judged).
#[test]
fn backups() {
    let loaded = load("scenarios/backups.toml");
    let dir = work_dir();
    let options = Options {
        keep_traces: true,
        ..common::options(dir.path())
    };
    let results = all_pass(&loaded, SEEDS, &options);
    let judged = results
        .iter()
        .filter(|result| result.exercised.contains(&crashsim::check::Invariant::I11))
        .count();
    assert!(judged as u64 > SEEDS * 9 / 10, "backups judged in {judged} seeds");
    // A backup begun, then the power cut before it completed.
    let cut_inside = results
        .iter()
        .filter(|result| {
            let events = result.events.as_deref().unwrap_or_default();
            events.windows(2).any(|pair| {
                matches!(pair[0].op, crashsim::trace::Op::Backup { .. })
                    && matches!(pair[1].op, crashsim::trace::Op::PowerCut { .. })
            })
        })
        .count();
    assert!(cut_inside > 0, "no power cut fell inside a backup in {SEEDS} seeds");
}

/// The reference survives restores: every seed passes with two restores
/// each, which roll back what was made after their backup (no finding),
/// while the workflows decide it again and complete.
#[test]
fn restores() {
    let loaded = load("scenarios/restores.toml");
    let dir = work_dir();
    let results = all_pass(&loaded, SEEDS, &common::options(dir.path()));
    let restored: u64 = results.iter().map(|result| result.backups.restored).sum();
    let rolled_back: u64 = results.iter().map(|result| result.backups.rolled_back).sum();
    assert!(restored > SEEDS * 3 / 2, "{restored} restores in {SEEDS} seeds");
    assert!(
        rolled_back > restored,
        "{rolled_back} events rolled back by {restored} restores"
    );
}

/// The group-commit store has neither retry timers nor leases: a scenario
/// with either is refused with a message that says what is missing, never
/// judged.
#[test]
fn group_commit_refuses_retries_and_leases() {
    for (file, missing) in [
        ("scenarios/retries.toml", "retry timers"),
        ("scenarios/leases.toml", "leases"),
    ] {
        let mut loaded = load(file);
        loaded.scenario.store = "group_commit".to_string();
        let dir = work_dir();
        let error = crashsim::runner::run_seed(&loaded, 0, &common::options(dir.path())).unwrap_err();
        assert_eq!(error.kind(), crashsim::runner::ErrorKind::Contract, "{file}: {error}");
        let message = error.to_string();
        assert!(
            message.contains("group_commit") && message.contains(missing),
            "{file}: {message}"
        );
    }
}

/// The demonstration of mistake 12's hazard: `retries.toml`'s timers with a
/// de-dup retention far below the retry horizon (accepted only because it
/// is a demonstration). The reference receiver itself then applies a late
/// retry twice (I2), within a few seeds.
#[test]
fn short_retention_lets_the_reference_apply_a_late_retry_twice() {
    let loaded = load("scenarios/demonstrations/short_retention.toml");
    let dir = work_dir();
    let options = common::options(dir.path());
    let caught = (0..20).find(|seed| {
        let result = crashsim::runner::run_seed(&loaded, *seed, &options).unwrap();
        result
            .violations
            .iter()
            .any(|violation| violation.invariant == crashsim::check::Invariant::I2)
    });
    assert!(
        caught.is_some(),
        "a retention below the horizon must show a double effect (I2)"
    );
}

/// Calls suspended inside SQLite: the reference's connections run their
/// calls on coroutines of their own (`sim::baton`), as the CLI runs them.
#[test]
fn interleave() {
    passes("interleave");
}
