//! Backups and restores of an outside store written in Python (the
//! example, through the SDK): it takes online backups that pass I11 at both
//! granularities, its backup bugs (the main file alone; the file set copied
//! in parts with no read transaction) are caught by I11, a backup process
//! that dies unasked is A1, and it survives restores from its own backups
//! while random command ids apply an effect twice across one (I2).
//!
//! These tests need Python 3 (see tests/suite/adapter_python.rs).

use crate::common;

use std::time::Duration;

use common::example::{adapter, assert_passes, example, faulty, first_violation, options, runs};
use common::{crashsim, load, python, root, stderr, stdout, work_dir};
use crashsim::check::Invariant;
use crashsim::runner::run_seed;

/// The example takes online backups through the SDK (`backup`, and `dump`
/// of a backup's path): the backup scenario passes at both granularities,
/// and a copy of the main file alone, leaving the WAL's commits behind, is
/// caught by I11 naming the first acknowledged append the backup lacks. A
/// store without the capability is refused, naming it (exit 2).
#[test]
fn the_example_takes_backups_and_a_copy_of_the_main_file_alone_is_caught() {
    let Some(command) = example("") else { return };
    let loaded = load("scenarios/backups.toml");
    let mut killed = 0;
    for granularity in ["", "--granularity call"] {
        let adapter = adapter(&format!("{command} {granularity}"), Duration::from_secs(30));
        assert!(adapter.identity().can("backup"), "{:?}", adapter.identity());
        let results = runs(&loaded, 0..2, &adapter);
        assert_passes(&results, "backups");
        killed += results.iter().map(|result| result.backups.killed).sum::<u64>();
    }
    // A backup's own process killed inside it: not judged, no finding.
    assert!(killed > 0, "no backup process was killed in 4 seeds");
    let first = first_violation("backup_db_file_only", "scenarios/backups.toml");
    assert!(
        first.as_ref().is_some_and(
            |first| first.invariant == Invariant::I11 && first.message.contains("acknowledged before it began")
        ),
        "backup_db_file_only on backups: {first:?}"
    );
    // The file set copied in two parts, -wal first, the main file a part
    // later: a torn backup, damaged or holding no state the store was in.
    let first = first_violation("backup_file_set_unlocked", "scenarios/backups.toml");
    let torn = ["integrity_check", "not a state the store was in", "never committed"];
    assert!(
        first.as_ref().is_some_and(
            |first| first.invariant == Invariant::I11 && torn.iter().any(|sign| first.message.contains(sign))
        ),
        "backup_file_set_unlocked on backups: {first:?}"
    );
    let Some(python) = python() else { return };
    let toy = root().join("adapters/python/tests/toy_adapter.py");
    let toy = format!("{python} -S {} step", toy.display());
    let output = crashsim(&["run", "backups", "--sut", &toy, "--seeds", "1", "--no-report"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("`backup` capability"), "{}", stderr(&output));
}

/// Restores of an outside store's database from its own backups (crashsim
/// stops every process, restores through SQLite, starts them again): the
/// clean example passes `restores` at `call`, and with random command ids
/// (`uuid_ids`) the command a workflow derives again after a restore is a
/// second command to the receiver, which applies it twice (I2, across the
/// restore), beside the findings random ids always make.
#[test]
fn the_example_survives_restores_and_random_ids_apply_twice_across_one() {
    let Some(command) = example("--granularity call") else {
        return;
    };
    let loaded = load("scenarios/restores.toml");
    let clean = adapter(&command, Duration::from_secs(30));
    let results = runs(&loaded, 0..2, &clean);
    assert_passes(&results, "restores");
    let restored: u64 = results.iter().map(|result| result.backups.restored).sum();
    assert!(restored > 0, "no restore in 2 seeds");
    let Some(buggy) = example("--granularity call --bug uuid_ids") else {
        return;
    };
    let dir = work_dir();
    let buggy = adapter(&buggy, Duration::from_secs(30));
    let result = run_seed(&loaded, 0, &options(dir.path(), &buggy)).expect("seed runs");
    assert!(
        result
            .violations
            .iter()
            .any(|violation| violation.invariant == Invariant::I2
                && violation.message.contains("rolled its event back")
                && violation.message.contains("two side effects")),
        "uuid_ids on restores: {:#?}",
        result.violations
    );
}

/// A backup process that exits on its own is A1, as an actor's would: the
/// run names the backup, and every other invariant still holds.
#[test]
fn a_backup_process_that_dies_unasked_is_a1() {
    let Some(command) = faulty("backup_crash") else { return };
    let output = common::crashsim(&["run", "backups", "--seed", "0", "--no-report", "--sut", &command]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "a finding: {text}{}", stderr(&output));
    assert!(
        text.contains("A1 store process stays up: the process of backup #1 died unasked"),
        "{text}"
    );
    assert!(text.contains("violations: A1 in 1 seed(s)"), "{text}");
}
