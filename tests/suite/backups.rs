//! Online backups as faults (`[backup]`, docs/protocol.md "Backups", I11):
//! the CLI's verdict on a store whose backups lack acknowledged commits,
//! with the command that replays it, a backup copied in parts that tears,
//! and bad `[backup]` sections refused
//! before any seed runs (exit 2, naming the file and the key).

use crate::common;

use common::{crashsim, stderr, stdout, work_dir};

#[test]
fn a_backup_of_the_main_file_alone_fails_the_run_with_i11_and_its_replay() {
    let output = crashsim(&[
        "run",
        "backups",
        "--seed",
        "0",
        "--mutant",
        "backup_db_file_only",
        "--no-report",
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(
        text.contains("fail: seed=0 I11 backups: backup #1 (begun at tick")
            && text.contains("acknowledged before it began"),
        "{text}"
    );
    assert!(
        text.contains("replay backups --seed 0 --mutant backup_db_file_only"),
        "{text}"
    );
    // The reference takes the same backups at the same ticks, and passes.
    let output = crashsim(&["run", "backups", "--seed", "0", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

/// A backup that copies the file set in two parts, `-wal` first and the
/// main file after a checkpoint a part later, with no read transaction
/// across them: the trace shows the parts, and the torn file is I11.
#[test]
fn a_file_set_copied_in_parts_is_torn_and_fails_the_run_with_i11() {
    let output = crashsim(&[
        "replay",
        "backups",
        "--seed",
        "1",
        "--mutant",
        "backup_file_set_unlocked",
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(text.contains("backup #2: part 1 copied, the rest later"), "{text}");
    assert!(
        text.contains("I11") && text.contains("integrity_check of the backup"),
        "{text}"
    );
    // The reference takes the same backups, each in one part, and passes.
    let output = crashsim(&["replay", "backups", "--seed", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(!stdout(&output).contains("part 1 copied"));
}

/// A failing seed's page draws the backups on the simulator's lane, with
/// their trace lines in the tooltip, and lists the mark in its legend.
#[test]
fn a_failing_seeds_page_draws_its_backups() {
    let loaded = common::load("scenarios/backups.toml")
        .with_mutant("backup_db_file_only")
        .expect("known mutant");
    let work = work_dir();
    let result = common::run(&loaded, 0, work.path());
    assert!(!result.ok);
    let reports = tempfile::tempdir().expect("temp dir");
    let replay = "crashsim replay backups --seed 0 --mutant backup_db_file_only".to_string();
    let dir = crashsim::report::write_seed(reports.path(), &result, &replay).expect("report written");
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html exists");
    assert!(page.contains("<rect class=\"backup\""), "no backup mark");
    assert!(
        page.contains("backup #1 begins, on a connection of its own"),
        "no tooltip line"
    );
    assert!(page.contains("online backup begun, completed"), "not in the legend");
}

#[test]
fn bad_backup_sections_are_refused_naming_the_key() {
    let dir = work_dir();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let cases = [
        ("zero.toml", "[backup]\ncount = 0\n", "backup.count"),
        ("many.toml", "[backup]\ncount = 65\n", "backup.count"),
        ("typo.toml", "[backup]\ncount = 2\ncuont = 3\n", "cuont"),
        (
            "cut.toml",
            "[backup]\ncount = 2\npower_cut = \"1/2\"\n",
            "backup.power_cut",
        ),
        (
            "preempt.toml",
            "[backup]\ncount = 2\n[preempt]\nrate = \"1/6\"\n",
            "[preempt]",
        ),
        (
            "grouped.toml",
            "store = \"group_commit\"\n[backup]\ncount = 2\n",
            "cannot take an online backup",
        ),
        ("lonely.toml", "[restore]\ncount = 1\n", "a restore needs backups"),
        (
            "no_restore.toml",
            "[backup]\ncount = 2\n[restore]\ncount = 0\n",
            "restore.count",
        ),
        (
            "many_restores.toml",
            "[backup]\ncount = 2\n[restore]\ncount = 9\n",
            "restore.count",
        ),
        (
            "restore_typo.toml",
            "[backup]\ncount = 2\n[restore]\ncount = 1\nat = 3\n",
            "at",
        ),
    ];
    for (name, text, needle) in cases {
        let path = write(name, text);
        let output = crashsim(&["run", &path, "--seeds", "1", "--no-report"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{name}: {message}{}", stdout(&output));
        assert!(
            message.contains(name) && message.contains(needle) && !message.contains("panicked"),
            "{name}: {message}"
        );
    }
}
