//! `crashsim bench` end to end: `--quick` on a temporary directory prints one
//! JSON object with the documented schema and writes the report files.
//! Correctness only: no timing is asserted.

mod common;

use common::{crashsim, stderr, stdout};
use serde_json::Value;

/// Every configuration object carries at least these numbers.
const FIELDS: [&str; 8] = [
    "appends_per_s",
    "commits_per_s",
    "fsyncs_per_commit",
    "p50_us",
    "p99_us",
    "max_us",
    "ratio_to_limit",
    "appends_per_commit",
];

fn check_schema(record: &Value) {
    for key in ["git_commit", "sqlite_version", "filesystem"] {
        assert!(
            record[key].as_str().is_some_and(|value| !value.is_empty()),
            "{key}: {record}"
        );
    }
    let configs = record["configs"].as_array().expect("configs is a list");
    let names: Vec<&str> = configs.iter().map(|config| config["name"].as_str().unwrap()).collect();
    for name in [
        "raw_overwrite_fsync_4k",
        "append_full",
        "append_normal",
        "append_off",
        "conn_per_append_full",
        "batch100_full",
        "writers16_full",
        "group_commit16_full",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for config in configs {
        for field in FIELDS {
            let value = config[field].as_f64();
            assert!(
                value.is_some_and(|value| value.is_finite() && value >= 0.0),
                "{}.{field} = {}",
                config["name"],
                config[field]
            );
        }
        assert!(config["appends_per_s"].as_f64().unwrap() > 0.0, "{config}");
    }
    let limit = configs
        .iter()
        .find(|config| config["name"] == "raw_overwrite_fsync_4k")
        .unwrap();
    assert_eq!(limit["ratio_to_limit"].as_f64(), Some(1.0));
    assert_eq!(limit["fsyncs_per_commit"].as_f64(), Some(1.0));
    let off = configs.iter().find(|config| config["name"] == "append_off").unwrap();
    assert_eq!(off["fsyncs_per_commit"].as_f64(), Some(0.0), "OFF never syncs: {off}");
    let per_append = configs
        .iter()
        .find(|config| config["name"] == "conn_per_append_full")
        .unwrap();
    assert_eq!(per_append["fsyncs_per_commit"].as_f64(), Some(5.0), "{per_append}");
    assert!(!record["targets"].as_array().unwrap().is_empty());
}

#[test]
fn quick_runs_end_to_end_and_prints_one_json_object() {
    // On the build's own disk: a temporary directory may be tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let reports = dir.path().join("reports");
    let output = crashsim(&[
        "bench",
        "--quick",
        // Two rounds keep this test to a few seconds; --quick's default is five.
        "--rounds",
        "2",
        "--dir",
        dir.path().to_str().unwrap(),
        "--format",
        "json",
        "--report",
        reports.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    check_schema(&record);
    assert_eq!(record["rounds"], 2);
    assert_eq!(record["quick"], true);

    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("bench/bench.json")).unwrap()).unwrap();
    check_schema(&written);
    let markdown = std::fs::read_to_string(reports.join("bench/bench.md")).unwrap();
    assert!(markdown.contains("`group_commit16_full`"), "{markdown}");
    let svg = std::fs::read_to_string(reports.join("bench/bench.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("append_full"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["reports"], "the bench removed its work directory");
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let output = crashsim(&["bench", "--quick", "--dir", "/nonexistent/disk"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("/nonexistent/disk"), "{}", stderr(&output));
    let output = crashsim(&["bench", "--quick", "--only", "nothing_like_this"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("nothing_like_this"), "{}", stderr(&output));
    let output = crashsim(&["bench", "--rounds", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--rounds"), "{}", stderr(&output));
    let output = crashsim(&["bench", "--sample-ms", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--sample-ms"), "{}", stderr(&output));
}

#[test]
fn the_default_directory_is_never_tmpfs() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() || crashsim::platform::filesystem_of(shm) != "tmpfs" {
        return; // nothing to check on this machine
    }
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .args(["bench", "--quick", "--no-report"])
        .current_dir(shm)
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("tmpfs"), "{}", stderr(&output));
}
