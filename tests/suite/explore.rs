//! `crashsim explore` (docs/preemption.md): every schedule with one
//! suspension inside the store's calls, on the tiny scope
//! `scenarios/explore/two_receivers.toml`.
//!
//! - the reference (in-process, its calls on coroutines) holds in every
//!   schedule, and the count of schedules is the count of points plus one;
//! - the `lookup_outside_txn` mutant and the Python example's bug of the
//!   same name fail in some schedule, with I2, and the capsule written for
//!   it replays to the same verdict;
//! - a scenario without `[preempt]`, a bound or a hold of 0 are errors.

use crate::common;

use common::{crashsim, python, root, stderr, stdout, work_dir};
use serde_json::Value;

const SCOPE: &str = "scenarios/explore/two_receivers.toml";

/// `crashsim explore SCOPE --format json` with `extra`: its exit code and record.
fn explore(extra: &[&str]) -> (Option<i32>, Value) {
    let scope = root().join(SCOPE).display().to_string();
    let mut args = vec!["explore", scope.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    let output = crashsim(&args);
    let text = stdout(&output);
    let record = serde_json::from_str(text.trim()).unwrap_or_else(|error| panic!("{error}: {text}{}", stderr(&output)));
    (output.status.code(), record)
}

#[test]
fn the_reference_holds_in_every_schedule_with_one_suspension() {
    let (code, record) = explore(&["--seed", "0", "--no-report"]);
    assert_eq!(code, Some(0), "{record:#}");
    assert_eq!(record["failing"], 0, "{record:#}");
    assert_eq!(record["complete"], true);
    let points = record["points"].as_u64().unwrap();
    assert!(points > 20, "{record:#}");
    // One schedule per point at the scenario's one hold, and the one without.
    assert_eq!(record["schedules"].as_u64().unwrap(), points + 1, "{record:#}");
    assert_eq!(record["holds"], serde_json::json!([90]));
    assert!(record["distinct"].as_u64().unwrap() > points / 2, "{record:#}");
}

/// The schedule that fails is a forced fault list: its capsule replays.
fn caught(extra: &[&str]) {
    let dir = work_dir();
    let capsule = dir.path().join("capsule.toml").display().to_string();
    let mut args = vec!["--seed", "0", "--out", capsule.as_str()];
    args.extend_from_slice(extra);
    let (code, record) = explore(&args);
    assert_eq!(code, Some(1), "{record:#}");
    assert!(record["by_invariant"]["I2"].as_u64().unwrap() > 0, "{record:#}");
    assert_eq!(record["capsule"], capsule.as_str());
    let output = crashsim(&["replay", "--capsule", &capsule]);
    let replayed = stdout(&output) + &stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{replayed}");
    assert!(
        replayed.contains("the capsule's recorded verdict is reproduced"),
        "{replayed}"
    );
    assert!(replayed.contains("an interleaving inside the call"), "{replayed}");
}

#[test]
fn the_mutant_fails_in_some_schedule_and_its_capsule_replays() {
    caught(&["--mutant", "lookup_outside_txn"]);
}

#[test]
fn the_python_examples_lookup_outside_the_transaction_fails_in_some_schedule() {
    let Some(python) = python() else { return };
    let script = root().join("adapters/python/example_store.py");
    let command = format!(
        "{python} -S {} --granularity call --bug lookup_outside_txn",
        script.display()
    );
    caught(&["--sut", &command]);
}

#[test]
fn bad_input_is_an_error() {
    let scope = root().join(SCOPE).display().to_string();
    for (args, needle) in [
        (vec!["explore", "smoke", "--no-report"], "[preempt]"),
        (
            vec!["explore", scope.as_str(), "--bound", "0", "--no-report"],
            "--bound",
        ),
        (
            vec!["explore", scope.as_str(), "--holds", "0", "--no-report"],
            "--holds",
        ),
    ] {
        let output = crashsim(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.contains(needle) && !message.contains("panicked"),
            "{args:?}: {message}"
        );
    }
}
