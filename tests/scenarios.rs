//! Every shipped scenario passes at least 200 seeds against the reference.

mod common;

use std::path::Path;

use common::{load, root, work_dir};
use crashsim::runner::{Options, run_seeds};

const SEEDS: u64 = 200;

/// The scenarios shipped in `scenarios/`; a new file must be added here.
const SHIPPED: [&str; 5] = ["smoke", "contention", "crash_storm", "swarm", "sync_normal"];

fn passes(name: &str) {
    let loaded = load(&format!("scenarios/{name}.toml"));
    let dir = work_dir();
    let options = Options {
        work_dir: dir.path().to_path_buf(),
        keep_failed: false,
        keep_traces: false,
    };
    let seeds: Vec<u64> = (0..SEEDS).collect();
    let results = run_seeds(&loaded, &seeds, 1, &options, |_| {}).unwrap();
    let failures: Vec<String> = results
        .iter()
        .filter(|result| !result.ok)
        .map(|result| format!("seed {}: {}", result.seed, result.violations[0]))
        .collect();
    assert!(
        failures.is_empty(),
        "{name}: {} failing seeds: {failures:#?}",
        failures.len()
    );
    let fired: u64 = results.iter().map(|result| result.kills.total_fired()).sum();
    assert!(fired > 0, "{name}: no kill ever fired");
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
