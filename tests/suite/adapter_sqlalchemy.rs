//! The SQLAlchemy example (adapters/python/sqlalchemy_store: a store whose
//! library owns the connection, served at `call` granularity) under
//! crashsim: the clean example passes a seed of `contention` and of
//! `power_loss` (whose SQLite defaults to synchronous=NORMAL: the example
//! pins FULL on every pooled connection) twice over with the same traces,
//! and each of its known bugs is caught on one seed by the invariant it
//! breaks: on a shipped scenario, or, for a bug whose seeds then run to
//! their budget (minutes on the shipped ones), on a tiny one.
//!
//! It runs with the interpreter of `target/python-sqlalchemy`, the venv
//! `.ci/python` installs SQLAlchemy into from the example's pinned
//! requirements. Without Python these tests print a note and pass, as
//! tests/suite/adapter_python.rs does, except in CI (`CI` set), which fails. A
//! missing venv is skipped with a note outside CI; in CI (where `cargo
//! test` runs before `.ci/python`) it is installed first by `.ci/python
//! sqlalchemy-venv`.

use crate::common;

use std::process::Command;
use std::sync::OnceLock;

use common::{crashsim, python, root, stderr, stdout};

/// The venv's interpreter, or `None` (with a note) where it cannot be had
/// outside CI.
fn venv_python() -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            python()?;
            let interpreter = root().join("target/python-sqlalchemy/bin/python");
            if !interpreter.exists() {
                if std::env::var_os("CI").is_none() {
                    eprintln!(
                        "note: {} is missing (`.ci/python sqlalchemy-venv` installs it); \
                         the SQLAlchemy example's tests are skipped",
                        interpreter.display()
                    );
                    return None;
                }
                let status = Command::new("bash")
                    .args([".ci/python", "sqlalchemy-venv"])
                    .current_dir(root())
                    .status()
                    .expect(".ci/python runs");
                assert!(status.success(), ".ci/python sqlalchemy-venv: {status}");
            }
            Some(interpreter.display().to_string())
        })
        .clone()
}

/// The example's command line, with `args` (a `--bug`).
fn example(args: &str) -> Option<String> {
    let script = root().join("adapters/python/sqlalchemy_store/adapter.py");
    Some(format!("{} {} {args}", venv_python()?, script.display()))
}

/// `crashsim run` of `scenarios` on `seed` against `command`: its exit code
/// and what it printed.
fn run(command: &str, scenarios: &[&str], seed: &str, more: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["run"];
    args.extend_from_slice(scenarios);
    args.extend_from_slice(&["--seed", seed, "--jobs", "2", "--no-report", "--sut", command]);
    args.extend_from_slice(more);
    let output = crashsim(&args);
    (output.status.code(), format!("{}{}", stdout(&output), stderr(&output)))
}

#[test]
fn the_clean_example_passes_and_is_deterministic() {
    let Some(command) = example("") else { return };
    let (code, text) = run(&command, &["contention", "power_loss"], "0", &["--check-determinism"]);
    assert_eq!(code, Some(0), "{text}");
    for scenario in ["contention", "power_loss"] {
        let line = format!("{scenario}+sqlalchemy_store: 1 seeds");
        assert!(text.contains(&line) && text.contains("1 passed, 0 failed"), "{text}");
    }
    assert!(text.contains("store (call), receiver (call)"), "{text}");
}

/// A scenario small enough that a seed which never settles (a stale writer
/// let in, a row never marked done) still ends in seconds: writers killed
/// inside their append often, receivers inside their delivery.
const TINY: &str = "description = \"the SQLAlchemy example's bugs, small\"\n\
    [run]\nticks_fault = 300\nticks_max = 4_600\n\
    [workload]\ntrips_count = 4\nwriters_count = 4\nworkers_count = 2\nreceivers_count = 1\n\
    [faults.writer]\nbefore_commit = \"1/6\"\n\
    [faults.receiver]\nbefore_effect_commit = \"1/4\"\n";

/// `bug` on `scenario`'s seed `seed` fails, and the run names `invariant`
/// (`scenario` "tiny" is TINY).
fn assert_caught(bug: &str, scenario: &str, seed: &str, invariant: &str) {
    let Some(command) = example(&format!("--bug {bug}")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let tiny = dir.path().join("tiny.toml");
    std::fs::write(&tiny, TINY).expect("writing the tiny scenario");
    let scenario = if scenario == "tiny" {
        tiny.to_str().expect("a UTF-8 path")
    } else {
        scenario
    };
    let (code, text) = run(&command, &[scenario], seed, &[]);
    assert_eq!(
        code,
        Some(1),
        "{bug} on {scenario} seed {seed}: a finding expected\n{text}"
    );
    let violations = text
        .lines()
        .find(|line| line.trim_start().starts_with("violations:"))
        .unwrap_or_default();
    assert!(
        violations.contains(&format!("{invariant} in")),
        "{bug} on {scenario} seed {seed}: expected {invariant}\n{text}"
    );
}

#[test]
fn the_pragma_listener_on_one_engine_loses_commits_in_a_power_cut() {
    // Caught where the build's default is weaker than the scenario asks.
    let scenario = std::fs::read_to_string(root().join("scenarios/power_loss.toml")).expect("power_loss.toml");
    if !scenario.contains("default_synchronous") {
        eprintln!("note: scenarios/power_loss.toml runs SQLite's own default synchronous: nothing to catch");
        return;
    }
    assert_caught("pragmas_one_engine", "power_loss", "0", "I9");
}

#[test]
fn an_autocommit_engine_leaves_events_without_their_commands() {
    assert_caught("autocommit_engine", "tiny", "1", "I5");
}

#[test]
fn a_unique_violation_retried_at_the_next_seq_lets_a_stale_writer_in() {
    assert_caught("retry_next_seq", "tiny", "0", "I3");
}

#[test]
fn a_dedup_record_in_a_second_block_applies_a_redelivery_again() {
    assert_caught("dedup_second_block", "smoke", "1", "I2");
}

#[test]
fn mark_done_without_commit_is_seen_by_the_next_read() {
    assert_caught("mark_done_no_commit", "tiny", "0", "I6");
}
