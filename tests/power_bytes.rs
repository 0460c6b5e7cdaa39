//! Byte-level determinism of power-loss runs: the same seed leaves
//! byte-identical database files. SQLite's own PRNG is process-wide, so this
//! test lives alone in its binary: no other test draws from it meanwhile.

use std::path::Path;

use crashsim::faults::FaultSource;
use crashsim::scenario;
use crashsim::sim::Simulator;
use crashsim::store::reference::Reference;

fn files_after(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/power_bytes.toml");
    let loaded = scenario::load(&path).unwrap();
    let output = Simulator::new(&loaded.scenario, &Reference, 3, dir, FaultSource::Drawn)
        .unwrap()
        .run()
        .unwrap();
    assert!(!output.recoveries.is_empty(), "the seed cuts the power");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&path).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_same_seed_leaves_byte_identical_files() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = files_after(a.path());
    let second = files_after(b.path());
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&first), names(&second));
    assert!(first.iter().any(|(name, _)| name == "store.db"));
    for ((name, one), (_, two)) in first.iter().zip(&second) {
        assert!(one == two, "{name} differs between two runs of the same seed");
    }
    // Timestamps come from the simulated clock (tick 0 = 2026-01-01), not the
    // wall clock, whose one-second resolution could hide it above.
    let conn = rusqlite::Connection::open(a.path().join("store.db")).unwrap();
    let (first, last): (String, String) = conn
        .query_row("SELECT MIN(created_at), MAX(created_at) FROM events", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert!(first.starts_with("2026-01-01 00:00:0"), "{first}");
    assert!(last.starts_with("2026-01-01 00:00:"), "{last}");
}
