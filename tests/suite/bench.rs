//! `crashsim bench` end to end: `--quick` on a temporary directory prints one
//! JSON object with the documented schema and writes the report files; with
//! `--sut`, an outside store (crashsim's own `serve reference`, and the
//! Python example where python3 exists) is measured in the same run, and a
//! command that is no usable adapter is exit code 2 with a message.
//! Correctness only: no timing is asserted.

use crate::common;

use common::{crashsim, stderr, stdout};
use serde_json::Value;

/// Every configuration object carries at least these numbers
/// (`fsyncs_per_commit` too, unless it measured an outside store).
const FIELDS: [&str; 7] = [
    "appends_per_s",
    "commits_per_s",
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
        assert_eq!(config["sut"], false, "{config}");
        assert!(config["fsyncs_per_commit"].as_f64().is_some(), "{config}");
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
    assert!(record["sut"].is_null(), "no outside store: {}", record["sut"]);
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
        "--save-baseline",
        dir.path().join("reports/baseline.json").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let baseline: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("baseline.json")).unwrap()).unwrap();
    assert_eq!(baseline["schema_version"], 1);
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
    // The regression gate's input is read before anything runs.
    let output = crashsim(&["bench", "--baseline", "/nonexistent/baseline.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/nonexistent/baseline.json"),
        "{}",
        stderr(&output)
    );
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, r#"{"schema_version": 99}"#).unwrap();
    let output = crashsim(&["bench", "--baseline", newer.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("schema_version 99"), "{}", stderr(&output));
    let output = crashsim(&[
        "bench",
        "--baseline",
        newer.to_str().unwrap(),
        "--max-regression",
        "150%",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
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

/// crashsim's own reference served over the adapter protocol: an outside
/// store that needs no Python.
fn served_reference() -> String {
    format!("'{}' serve reference", env!("CARGO_BIN_EXE_crashsim"))
}

/// A directory on the build's disk (a temporary directory may be tmpfs).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// `bench --quick --rounds 2 --format json --sut SUT` in `dir`, plus `extra`.
fn bench_sut(dir: &std::path::Path, sut: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bench",
        "--quick",
        "--rounds",
        "2",
        "--dir",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "--sut",
        sut,
    ];
    args.extend_from_slice(extra);
    crashsim(&args)
}

/// The outside store's part of a record: its configurations flagged, their
/// fsyncs unknown (null, never 0), the ping and the ratios present.
fn check_sut_schema(record: &Value, name: &str, expected: &[&str]) {
    let configs = record["configs"].as_array().expect("configs is a list");
    let names: Vec<&str> = configs.iter().map(|config| config["name"].as_str().unwrap()).collect();
    assert_eq!(names, expected);
    for config in configs {
        let sut = config["name"].as_str().unwrap().starts_with("sut_");
        assert_eq!(config["sut"], sut, "{config}");
        assert_eq!(config["fsyncs_per_commit"].is_null(), sut, "{config}");
        for field in FIELDS {
            assert!(
                config[field]
                    .as_f64()
                    .is_some_and(|value| value.is_finite() && value >= 0.0),
                "{}.{field} = {}",
                config["name"],
                config[field]
            );
        }
        assert!(config["appends_per_s"].as_f64().unwrap() > 0.0, "{config}");
    }
    let sut = &record["sut"];
    assert_eq!(sut["name"], name, "{sut}");
    assert!(
        sut["command"].as_str().is_some_and(|command| !command.is_empty()),
        "{sut}"
    );
    assert!(sut["granularity"].is_string(), "{sut}");
    let own: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|name| name.starts_with("sut_"))
        .collect();
    assert_eq!(sut["configs"], serde_json::json!(own));
    let p50 = sut["ping_p50_us"].as_f64().expect("the ping's p50");
    let p99 = sut["ping_p99_us"].as_f64().expect("the ping's p99");
    assert!(p50 > 0.0 && p99 >= p50, "{sut}");
    for field in ["connect_fork_p50_us", "connect_spawn_p50_us"] {
        assert!(sut[field].as_f64().is_some_and(|us| us > 0.0), "{field}: {sut}");
    }
    for ratio in [
        "append_vs_limit",
        "ping_share_of_append_p50",
        "connect_spawn_vs_fork_p50",
    ] {
        let value = sut["ratios"][ratio].as_f64();
        assert!(
            value.is_some_and(|value| value.is_finite() && value > 0.0),
            "{ratio}: {sut}"
        );
    }
}

#[test]
fn sut_benches_an_outside_store_next_to_the_limit_and_the_reference() {
    let dir = disk_dir();
    let reports = dir.path().join("reports");
    let output = bench_sut(
        dir.path(),
        &served_reference(),
        &["--report", reports.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    let expected = [
        "raw_overwrite_fsync_4k",
        "raw_overwrite_fdatasync_4k",
        "raw_wal_frames2_fsync",
        "raw_append_fdatasync_4k",
        "raw_append_fdatasync_200b",
        "append_full",
        "append_outbox1_full",
        "sut_append_full",
        "sut_append_outbox1_full",
        "sut_ping",
        "sut_suspend",
        "sut_connect_fork",
        "sut_connect_spawn",
    ];
    check_sut_schema(&record, "reference", &expected);
    // A suspension's rendezvous, measured: the served reference loads the extension.
    assert!(
        record["sut"]["suspend_p99_us"].as_f64().is_some_and(|us| us > 0.0),
        "{}",
        record["sut"]
    );
    assert!(
        record["sut"]["rendezvous_p50_us"].as_f64().is_some(),
        "{}",
        record["sut"]
    );
    for ratio in ["append_vs_reference", "outbox1_vs_reference", "suspend_vs_append_p50"] {
        assert!(
            record["sut"]["ratios"][ratio].as_f64().is_some(),
            "{ratio}: {}",
            record["sut"]
        );
    }
    let append = record["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sut_append_full")
        .unwrap();
    assert!(
        append.get("note").is_none(),
        "the served reference's WAL is steady: {append}"
    );

    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("bench/bench.json")).unwrap()).unwrap();
    check_sut_schema(&written, "reference", &expected);
    let markdown = std::fs::read_to_string(reports.join("bench/bench.md")).unwrap();
    assert!(
        markdown.contains("`sut_ping`") && markdown.contains("## Outside store"),
        "{markdown}"
    );
    let svg = std::fs::read_to_string(reports.join("bench/bench.svg")).unwrap();
    assert!(
        svg.contains(">sut_append_full</text>") && svg.contains("reference"),
        "{svg}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["reports"], "the bench removed its work directory");
}

#[test]
fn the_python_example_store_benches_too() {
    let python = std::path::Path::new("/usr/bin/python3");
    if !python.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so this must run, but /usr/bin/python3 is missing"
        );
        eprintln!("note: skipping the Python bench: /usr/bin/python3 is missing (with CI set, this fails)");
        return;
    }
    let dir = disk_dir();
    let output = bench_sut(
        dir.path(),
        "/usr/bin/python3 adapters/python/example_store.py",
        &["--only", "sut_", "--no-report"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    check_sut_schema(
        &record,
        "example_store",
        &[
            "raw_overwrite_fsync_4k",
            "sut_append_full",
            "sut_append_outbox1_full",
            "sut_ping",
            "sut_suspend",
            "sut_connect_fork",
            "sut_connect_spawn",
        ],
    );
    assert!(
        record["sut"]["ratios"]["append_vs_reference"].is_null(),
        "append_full did not run: {}",
        record["sut"]
    );
}

#[test]
fn a_sut_that_is_no_usable_adapter_exits_2_naming_it() {
    let dir = disk_dir();
    let run = |sut: &str, extra: &[&str]| {
        let mut args = vec!["--no-report"];
        args.extend_from_slice(extra);
        let output = bench_sut(dir.path(), sut, &args);
        assert_eq!(output.status.code(), Some(2), "{sut}: {}", stderr(&output));
        assert!(stdout(&output).trim().is_empty(), "{sut}: {}", stdout(&output));
        stderr(&output)
    };
    for sut in ["true", "echo hi"] {
        let message = run(sut, &[]);
        assert!(message.contains(&format!("`{sut}`")), "{message}");
    }
    let receiver_only = r#"read l; echo '{"id":0,"ok":{"protocol":1,"name":"inbox","roles":{"receiver":"call"}}}'"#;
    let message = run(receiver_only, &[]);
    assert!(message.contains("serves no store role"), "{message}");
    // Answers its handshake and `setup`/`open`, then exits: dies in the first sample.
    let dies = r#"read l; echo '{"id":0,"ok":{"protocol":1,"name":"dies","roles":{"store":"call"}}}'; read l; echo '{"id":1,"ok":{}}'; echo 'bye from the adapter' >&2"#;
    let message = run(dies, &["--only", "sut_append_full"]);
    assert!(
        message.contains("sut_append_full") && message.contains("exited"),
        "{message}"
    );
    assert!(
        message.contains("bye from the adapter"),
        "its stderr is quoted: {message}"
    );
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 0, "the work directory is removed after a failure too");
}

#[test]
fn sut_configurations_need_a_sut() {
    let output = crashsim(&["bench", "--quick", "--only", "sut_ping", "--no-report"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--sut"), "{}", stderr(&output));
}

/// `sut_suspend` needs crashsim's VFS extension in the store's SQLite: an
/// adapter that does not load it has it left out of the default selection
/// (with a note), and asking for it alone is an error naming the cause.
#[test]
fn a_store_without_the_vfs_extension_is_not_suspended() {
    let python = std::path::Path::new("/usr/bin/python3");
    if !python.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, but /usr/bin/python3 is missing"
        );
        return;
    }
    let dir = disk_dir();
    let sut = "env -u CRASHSIM_VFS_EXTENSION /usr/bin/python3 adapters/python/example_store.py";
    let output = bench_sut(dir.path(), sut, &["--only", "sut_", "--no-report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("sut_suspend left out"), "{}", stderr(&output));
    let record: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    assert!(record["sut"]["suspend_p50_us"].is_null(), "{}", record["sut"]);
    let output = bench_sut(dir.path(), sut, &["--only", "sut_suspend", "--no-report"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(stderr(&output).contains("VFS extension"), "{}", stderr(&output));
}
