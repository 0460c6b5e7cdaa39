//! A correct store in another style passes: one that stores payloads
//! re-encoded as equal JSON (`{"trip_id": "x"}` for `{"trip_id":"x"}`) is
//! judged through its canonical dump like any other outside store, and its
//! payloads are compared as JSON, not as bytes.
//!
//! Needs Python 3 (the example store's `json_spacing` variant); without it
//! the test prints a note and passes, except in CI.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{load, python, root, work_dir};
use crashsim::adapter::Adapter;
use crashsim::runner::{Options, Sut, run_seed};

#[test]
fn a_store_that_respaces_its_json_payloads_passes() {
    let Some(python) = python() else { return };
    let script = root().join("adapters/python/example_store.py");
    for granularity in ["step", "call"] {
        let command = format!(
            "{python} -S {} --bug json_spacing --granularity {granularity}",
            script.display()
        );
        let adapter = Arc::new(Adapter::probe(&command, Duration::from_secs(30), true).expect("the adapter answers"));
        let dir = work_dir();
        let options = Options {
            work_dir: dir.path().to_path_buf(),
            keep_failed: false,
            keep_traces: true,
            sut: Sut::Adapter(adapter),
            check_determinism: false,
            files: Default::default(),
        };
        let loaded = load("tests/fixtures/detect.toml");
        let result = run_seed(&loaded, 0, &options).expect("seed runs");
        // The store did store other bytes than it was given.
        let snapshot = result.snapshot.as_ref().expect("kept");
        assert!(
            snapshot.outbox.iter().any(|row| row.payload.contains("\": \"")),
            "json_spacing re-encodes payloads"
        );
        assert!(result.ok, "{granularity}: {:#?}", result.violations);
    }
}
