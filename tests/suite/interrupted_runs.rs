//! `crashsim run` under SIGINT and SIGTERM, as a CI system or a person at a
//! terminal stops it: the JSON rows stream while the run goes, the first
//! signal ends it with a partial summary and reports marked "interrupted",
//! a second one ends it at once, and no work directory is left behind.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// Starts a long run of `smoke` with its work and report folders in `dir`.
fn start(dir: &Path) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "smoke", "--seeds", "100000", "--jobs", "2", "--format", "json"])
        .arg("--dir")
        .arg(dir.join("work"))
        .arg("--report")
        .arg(dir.join("reports"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crashsim starts");
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    (child, stdout)
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Reads `count` seed rows: they arrive while the run goes on.
fn rows(stdout: &mut BufReader<ChildStdout>, count: usize) -> Vec<serde_json::Value> {
    (0..count)
        .map(|_| {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("a row");
            serde_json::from_str(&line).expect("a JSON row")
        })
        .collect()
}

fn work_dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("work")).unwrap().next().is_none()
}

#[test]
fn the_first_signal_writes_a_partial_summary_and_exits_130_or_143() {
    for (sig, code, name) in [(libc::SIGINT, 130, "SIGINT"), (libc::SIGTERM, 143, "SIGTERM")] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let (mut child, mut stdout) = start(dir.path());
        let first = rows(&mut stdout, 2);
        assert_eq!(
            (first[0]["seed"].as_u64(), first[1]["seed"].as_u64()),
            (Some(0), Some(1))
        );
        assert!(child.try_wait().unwrap().is_none(), "rows stream before the run ends");
        signal(&child, sig);
        let mut rest = String::new();
        for line in stdout.lines() {
            rest = line.unwrap();
        }
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{name}");
        let summary: serde_json::Value = serde_json::from_str(&rest).expect("the summary is the last line");
        assert_eq!(summary["summary"], true);
        assert_eq!(summary["outcome"], "interrupted");
        assert_eq!(summary["interrupted"], name);
        assert_eq!(summary["failed"], 0);
        let covered = summary["scenarios"][0]["covered"].as_str().unwrap();
        assert!(covered.starts_with("0..="), "{covered}");
        assert!(summary["not_run"].as_u64().unwrap() > 0);
        let written = std::fs::read_to_string(dir.path().join("reports/smoke/summary.json")).unwrap();
        let written: serde_json::Value = serde_json::from_str(&written).unwrap();
        assert_eq!(written["interrupted"], name);
        let junit = std::fs::read_to_string(dir.path().join("reports/smoke/junit.xml")).unwrap();
        assert!(junit.contains(&format!("interrupted by {name}")), "{junit}");
        assert!(
            work_dir_is_empty(dir.path()),
            "{name}: a work directory was left behind"
        );
    }
}

#[test]
fn a_second_signal_quits_at_once_and_still_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let (mut child, mut stdout) = start(dir.path());
    rows(&mut stdout, 1);
    signal(&child, libc::SIGINT);
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(work_dir_is_empty(dir.path()), "a work directory was left behind");
}

#[test]
fn a_killed_runs_work_directory_is_swept_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let (mut child, mut stdout) = start(dir.path());
    rows(&mut stdout, 1);
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    assert!(!work_dir_is_empty(dir.path()), "SIGKILL leaves the workspace");
    let next = Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "smoke", "--seeds", "1", "--no-report"])
        .arg("--dir")
        .arg(dir.path().join("work"))
        .output()
        .unwrap();
    assert_eq!(next.status.code(), Some(0));
    let said = String::from_utf8_lossy(&next.stderr);
    assert!(said.contains("removed 1 work directory"), "{said}");
    assert!(work_dir_is_empty(dir.path()));
}

/// `crashsim run … | head`: the reader goes away after one line. The
/// next line the run prints fails to write: no panic, nothing more is
/// printed, the run stops as at a first signal, nothing is left in its work
/// directory, and what it found still decides the exit code.
#[test]
fn a_reader_that_goes_away_stops_the_run_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crashsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "smoke", "--mutant", "no_dedup", "--seeds", "40", "--jobs", "2"])
        .arg("--dir")
        .arg(dir.path().join("work"))
        .arg("--report")
        .arg(dir.path().join("reports"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("crashsim starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    drop(stdout);
    let mut waited = 0;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        waited += 1;
        if waited > 6_000 {
            let _ = child.kill();
            panic!("the run went on after its reader went away");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A finding outranks the stop; a stop before the first seed ended is 141,
    // as a SIGPIPE'd process (which line meets the closed pipe is a race).
    assert!(matches!(status.code(), Some(1 | 141)), "{status:?} {stderr}");
    assert!(work_dir_is_empty(dir.path()), "{stderr}");
}
