//! The command line's contract: exit codes 0 / 1 / 2, and bad input named
//! by file, line and key, never a panic.

use crate::common;

use common::{crashsim, stderr, stdout};

#[test]
fn a_misspelled_key_is_bad_input_with_file_line_and_key() {
    let output = crashsim(&["run", "tests/fixtures/bad_key.toml", "--seeds", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("tests/fixtures/bad_key.toml:5:"), "{message}");
    assert!(message.contains("writer_count"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}

#[test]
fn a_bad_ratio_is_bad_input() {
    let output = crashsim(&["run", "tests/fixtures/bad_ratio.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("bad_ratio.toml:3:"), "{message}");
    assert!(message.contains("faults.writer.after_commit"), "{message}");
    assert!(message.contains("denominator"), "{message}");
}

#[test]
fn a_missing_file_or_bad_flag_is_bad_input() {
    let output = crashsim(&["run", "scenarios/nope.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("scenarios/nope.toml"), "{}", stderr(&output));
    let output = crashsim(&["run", "scenarios/smoke.toml", "--seed", "banana"]);
    assert_eq!(output.status.code(), Some(2));
    let output = crashsim(&["replay", "scenarios/smoke.toml"]);
    assert_eq!(output.status.code(), Some(2), "smoke.toml sets no seed");
    assert!(stderr(&output).contains("no --seed"), "{}", stderr(&output));
}

#[test]
fn a_report_folder_that_cannot_be_written_fails_before_the_first_seed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let report = file.join("reports");
    let output = crashsim(&["run", "smoke", "--seeds", "1", "--report", report.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    let message = stderr(&output);
    assert!(message.contains("--report") && message.contains("a-file"), "{message}");
    assert!(
        !stdout(&output).contains("seeds in"),
        "no seed ran: {}",
        stdout(&output)
    );
}

#[test]
fn passing_and_failing_runs_exit_0_and_1() {
    let pass = crashsim(&["run", "scenarios/contention.toml", "--seeds", "2", "--no-report"]);
    assert_eq!(pass.status.code(), Some(0), "{}", stdout(&pass));
    assert!(stdout(&pass).contains("2 passed, 0 failed"), "{}", stdout(&pass));
    let fail = crashsim(&["run", "tests/fixtures/no_dedup.toml", "--seeds", "2", "--no-report"]);
    assert_eq!(fail.status.code(), Some(1));
    assert!(stdout(&fail).contains("fail: seed=0 I2 "), "{}", stdout(&fail));
    // The next steps: replay, shrink, and where the invariant is explained.
    let text = stdout(&fail);
    assert!(text.contains("replay tests/fixtures/no_dedup.toml --seed 0`"), "{text}");
    assert!(text.contains("shrink tests/fixtures/no_dedup.toml --seed 0`"), "{text}");
    assert!(
        text.contains("I2 (one side effect per command_id) is explained by `crashsim list`"),
        "{text}"
    );
}

#[test]
fn json_output_is_one_object_per_seed_then_a_summary() {
    let output = crashsim(&[
        "run",
        "scenarios/contention.toml",
        "--seeds",
        "3",
        "--start-seed",
        "0x10",
        "--format",
        "json",
        "--no-report",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for (line, seed) in lines[..3].iter().zip(16..) {
        assert_eq!(line["seed"], seed);
        assert_eq!(line["scenario"], "contention");
        assert_eq!(line["ok"], true);
        assert!(line["trace_hash"].as_str().unwrap().len() == 16);
        assert!(line["steps"].as_u64().unwrap() > 0);
        assert!(line["kills"]["writer.before_commit"]["reached"].as_u64().is_some());
        assert!(line["violations"].as_array().unwrap().is_empty());
    }
    let summary = &lines[3];
    assert_eq!(summary["summary"], true);
    assert_eq!(summary["seeds"], 3);
    assert_eq!(summary["failed"], 0);
    assert!(summary["seeds_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn list_names_scenarios_kill_points_and_invariants() {
    let output = crashsim(&["list"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    for needle in [
        "smoke",
        "contention",
        "crash_storm",
        "swarm",
        "reference",
        "worker.after_deliver",
        "I10",
    ] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
}

#[test]
fn a_report_folder_is_one_runs_at_a_time_and_a_rerun_clears_old_seed_folders() {
    let root = tempfile::tempdir().unwrap();
    let report = root.path().to_str().unwrap();
    let held = crashsim::report::claim::claim(root.path(), "contention").unwrap();
    // What the holder left: a failing seed's folder.
    let stale = root.path().join("contention/7");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("result.json"), "{\"ok\": false}").unwrap();
    let busy = crashsim(&["run", "contention", "--seeds", "1", "--report", report]);
    assert_eq!(busy.status.code(), Some(2), "{}", stdout(&busy));
    assert!(
        stderr(&busy).contains("another crashsim run is writing"),
        "{}",
        stderr(&busy)
    );
    assert!(stale.exists(), "a refused run touches nothing");
    drop(held);
    let rerun = crashsim(&["run", "contention", "--seeds", "1", "--report", report]);
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    assert!(!stale.exists(), "the earlier run's failing seed is gone");
    assert!(root.path().join("contention/summary.json").exists());
}
