//! `crashsim durability --sut CMD`: the durability table and the cut-point
//! enumeration of a store in another process, through crashsim's VFS
//! extension loaded into that process's SQLite.
//!
//! - crashsim's reference, served over the adapter protocol, gives the table
//!   SQLite documents: WAL with FULL loses nothing, NORMAL loses only a tail
//!   (so the cuts do reach the adapter's writes), DELETE with FULL at most
//!   its last commit;
//! - every enumerated crash state of a small served run holds every
//!   invariant;
//! - an adapter whose SQLite does not load the extension is an error (exit
//!   code 2, no table), whether the probe or the session finds it out;
//! - `--sut` and `--mutant` together are bad input.
//!
//! The Python test needs Python 3; without it it prints a note and passes,
//! except in CI (`CI` set).

use crate::common;

use std::time::Duration;

use common::{crashsim, python, root, stderr, stdout, work_dir};
use crashsim::adapter::Adapter;
use crashsim::durability::table::{Config, TableError, Target, measure_on};
use crashsim::store::{JournalMode, Synchronous};
use crashsim::vfs::Model;

fn serve() -> String {
    format!("{} serve reference", env!("CARGO_BIN_EXE_crashsim"))
}

fn rows(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

fn count(row: &serde_json::Value, key: &str) -> u64 {
    row[key].as_u64().unwrap_or_else(|| panic!("no {key} in {row}"))
}

#[test]
fn the_table_of_a_served_reference_is_as_documented() {
    let output = crashsim(&[
        "durability",
        "--sut",
        &serve(),
        "--cuts",
        "4",
        "--format",
        "json",
        "--no-report",
    ]);
    // Exit 0: every row is as documented (settings that promise durability
    // lose nothing and stay consistent).
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let rows = rows(&stdout(&output));
    assert_eq!(rows.len(), 10, "{rows:?}");
    let mut normal_lost = 0;
    for row in &rows {
        let settings = (
            row["journal_mode"].as_str().unwrap(),
            row["synchronous"].as_str().unwrap(),
        );
        assert_eq!(count(row, "cuts"), 4, "{row}");
        assert!(count(row, "points") > 40, "every append is a few points: {row}");
        match settings {
            ("wal", "full") | ("delete", "extra") => {
                assert_eq!(count(row, "runs_losing_acked"), 0, "{row}");
                assert_eq!(count(row, "inconsistent_runs"), 0, "{row}");
            }
            ("wal", "normal") => {
                assert_eq!(row["tail_only"], true, "{row}");
                assert_eq!(count(row, "inconsistent_runs"), 0, "{row}");
                normal_lost += count(row, "runs_losing_acked");
            }
            ("delete", "full") => assert!(count(row, "max_acked_lost") <= 1, "{row}"),
            ("wal", "off") => {}
            other => panic!("an unexpected row {other:?}: {row}"),
        }
    }
    // The cuts reach the adapter's own writes: NORMAL's unsynced tail goes.
    assert!(normal_lost > 0, "{rows:?}");
}

#[test]
fn the_human_table_names_the_store_first() {
    let output = crashsim(&["durability", "--sut", &serve(), "--cuts", "1", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let text = stdout(&output);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("store: outside store reference"), "{text}");
    assert!(first.contains("serve reference"), "{text}");
    assert!(text.contains("1 cuts per row"), "{text}");
}

#[test]
fn every_enumerated_cut_of_a_served_run_holds() {
    let output = crashsim(&[
        "durability",
        "--exhaustive",
        "tests/fixtures/power_bytes.toml",
        "--sut",
        &serve(),
        "--seed",
        "0",
        "--every",
        "50",
        "--format",
        "json",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    let found: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    assert!(count(&found, "tried") > 5, "{found}");
    assert!(count(&found, "points") >= count(&found, "tried"), "{found}");
    assert_eq!(count(&found, "failing"), 0, "{found}");
    assert_eq!(found["scenario"], "power_bytes+reference-outside", "{found}");
}

#[test]
fn an_adapter_without_the_extension_is_bad_input_never_a_table() {
    let Some(python) = python() else { return };
    let script = root().join("adapters/python/example_store.py");
    let command = format!("env -u CRASHSIM_VFS_EXTENSION {python} -S {}", script.display());
    for extra in [&[][..], &["--exhaustive", "tests/fixtures/power_bytes.toml"]] {
        let mut args = vec!["durability", "--sut", &command, "--cuts", "2", "--no-report"];
        args.extend_from_slice(extra);
        let output = crashsim(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stdout(&output));
        assert!(stdout(&output).is_empty(), "{args:?}: {}", stdout(&output));
        let message = stderr(&output);
        assert!(message.contains("cannot be measured"), "{message}");
        assert!(message.contains("VFS extension"), "{message}");
    }
}

#[test]
fn a_session_whose_sqlite_skips_the_extension_is_an_error_not_a_row() {
    // The probe would refuse this adapter; the session checks again, from
    // what the extension counted, in case a store's processes differ.
    // (`crashsim serve` registers the VFS when it is handed the state.)
    let command = format!("env -u {} {}", crashsim::vfs::extension::ENV_STATE, serve());
    let adapter = Adapter::probe(&command, Duration::from_secs(30), true).expect("the adapter answers its handshake");
    assert!(!adapter.vfs().loaded());
    let config = Config {
        journal_mode: JournalMode::Wal,
        synchronous: Synchronous::Full,
        model: Model::DropUnsynced,
    };
    let dir = work_dir();
    match measure_on(&config, Target::Outside(&adapter), 1, 0, dir.path()) {
        Err(TableError::Store(message)) => {
            assert!(message.starts_with("wal/full/drop_unsynced: "), "{message}");
            assert!(message.contains("loaded crashsim's VFS extension"), "{message}");
        }
        other => panic!("not an error naming the cause: {other:?}"),
    }
}

#[test]
fn sut_and_mutant_together_are_bad_input() {
    let output = crashsim(&[
        "durability",
        "--exhaustive",
        "tests/fixtures/power_bytes.toml",
        "--sut",
        &serve(),
        "--mutant",
        "sync_off",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(stderr(&output).contains("--sut and --mutant"), "{}", stderr(&output));
}
