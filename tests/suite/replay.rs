//! Replay round trip: the command a failing seed prints reproduces its trace
//! hash and verdict, and `replay` agrees with `run` for passing seeds too.

use crate::common;

use common::{crashsim, stderr, stdout};
use serde_json::Value;

/// The per-seed JSON lines of `run --format json`, by seed.
fn run_json(args: &[&str]) -> (i32, Vec<Value>) {
    let output = crashsim(args);
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    (output.status.code().unwrap(), lines)
}

#[test]
fn the_printed_replay_command_reproduces_a_failure() {
    let run = crashsim(&["run", "tests/fixtures/no_dedup.toml", "--seeds", "3", "--no-report"]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let text = stdout(&run);
    let command = text
        .lines()
        .find_map(|line| line.strip_prefix("note: replay with `"))
        .and_then(|rest| rest.strip_suffix('`'))
        .expect("a replay command is printed");
    // The printed command may go through cargo; run what follows `replay`.
    let (_, args) = command.split_once(" replay ").expect("a replay subcommand");
    let mut replay_args = vec!["replay"];
    replay_args.extend(args.split_whitespace());
    let seed: u64 = args.split_whitespace().last().unwrap().parse().unwrap();

    let (_, lines) = run_json(&[
        "run",
        "tests/fixtures/no_dedup.toml",
        "--seed",
        &seed.to_string(),
        "--format",
        "json",
        "--no-report",
    ]);
    let recorded = &lines[0];
    assert_eq!(recorded["ok"], false);

    let mut json_args = replay_args.clone();
    json_args.extend(["--format", "json", "--quiet"]);
    let (code, replayed) = run_json(&json_args);
    assert_eq!(code, 1, "the replay fails like the run did");
    let verdict = replayed.last().unwrap();
    assert_eq!(verdict["trace_hash"], recorded["trace_hash"]);
    assert_eq!(verdict["violations"], recorded["violations"]);
    assert!(verdict["violations"][0]["invariant"] == "I2");

    let human = crashsim(&replay_args);
    assert_eq!(human.status.code(), Some(1));
    let text = stdout(&human);
    assert!(text.contains(recorded["trace_hash"].as_str().unwrap()), "{text}");
    assert!(text.contains("verdict: FAIL"), "{text}");
}

#[test]
fn replay_agrees_with_run_on_a_passing_seed() {
    let (code, lines) = run_json(&[
        "run",
        "scenarios/contention.toml",
        "--seed",
        "0x5eed",
        "--format",
        "json",
        "--no-report",
    ]);
    assert_eq!(code, 0);
    let (seed_line, summary) = (&lines[0], lines.last().unwrap());
    assert_eq!(summary["summary"], true);
    assert_eq!(seed_line["seed"], 0x5eed);
    let hash = seed_line["trace_hash"].as_str().unwrap();

    // The scenario's own `seed` is the default for replay.
    let replay = crashsim(&["replay", "scenarios/contention.toml", "--expect-hash", hash]);
    assert_eq!(replay.status.code(), Some(0), "{}{}", stdout(&replay), stderr(&replay));
    assert!(stdout(&replay).contains("verdict: PASS"));

    let wrong = crashsim(&[
        "replay",
        "scenarios/contention.toml",
        "--quiet",
        "--expect-hash",
        "0000000000000000",
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stderr(&wrong).contains("non-determinism"), "{}", stderr(&wrong));
}

#[test]
fn the_trace_hash_is_the_sha256_of_the_written_trace() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().to_str().unwrap();
    let run = crashsim(&["run", "tests/fixtures/no_dedup.toml", "--seed", "5", "--report", report]);
    assert_eq!(run.status.code(), Some(1));
    let seed_dir = dir.path().join("no_dedup").join("5");
    let trace = std::fs::read_to_string(seed_dir.join("trace.jsonl")).unwrap();
    let result: Value = serde_json::from_str(&std::fs::read_to_string(seed_dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(
        crashsim::trace::recorder::hash_jsonl(&trace),
        result["trace_hash"].as_str().unwrap()
    );
    let events = crashsim::trace::recorder::parse_jsonl(&trace).unwrap();
    assert!(!events.is_empty());
    assert!(seed_dir.join("trace.txt").exists());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("no_dedup/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["failed"], 1);
}

#[test]
fn junit_parses_and_counts_the_failing_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().to_str().unwrap();
    let run = crashsim(&[
        "run",
        "tests/fixtures/no_dedup.toml",
        "scenarios/contention.toml",
        "--seeds",
        "3",
        "--report",
        report,
    ]);
    assert_eq!(run.status.code(), Some(1));
    let xml = std::fs::read_to_string(dir.path().join("no_dedup/junit.xml")).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    let suite = &parsed.test_suites[0];
    assert_eq!(suite.name.as_str(), "no_dedup");
    let failing = |suite: &quick_junit::TestSuite| {
        suite
            .test_cases
            .iter()
            .filter(|case| matches!(case.status, quick_junit::TestCaseStatus::NonSuccess { .. }))
            .count()
    };
    // The seed range fails, and each of the three seeds has its own failing case.
    assert_eq!(suite.test_cases.len(), 4);
    assert_eq!(failing(suite), 4);
    let xml = std::fs::read_to_string(dir.path().join("contention/junit.xml")).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    assert_eq!(parsed.test_suites[0].test_cases.len(), 1);
    assert_eq!(failing(&parsed.test_suites[0]), 0);
    let markdown = std::fs::read_to_string(dir.path().join("no_dedup/summary.md")).unwrap();
    assert!(markdown.contains("| I2 | 3 |"), "{markdown}");
}

/// In-process runs keep their files' bytes in memory (`vfs::memory`); a
/// kept failing seed's databases must still be real SQLite files holding
/// what the run committed, readable without crashsim.
#[test]
fn a_kept_failing_seed_leaves_real_database_files() {
    let dir = common::work_dir();
    let loaded = common::load("scenarios/smoke.toml").with_mutant("no_dedup").unwrap();
    let mut options = common::options(dir.path());
    options.keep_failed = true;
    let result = crashsim::runner::run_seed(&loaded, 0, &options).unwrap();
    assert!(!result.ok);
    let kept = result.kept_dir.expect("a failing seed's directory is kept");
    let store = rusqlite::Connection::open(kept.join("store.db")).unwrap();
    let integrity: String = store.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let events: i64 = store
        .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
        .unwrap();
    let appended: usize = result
        .events
        .as_deref()
        .expect("the trace is kept")
        .iter()
        .map(|event| match &event.op {
            crashsim::trace::Op::Commit { appended } => appended.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(events as usize, appended, "every committed event is in the kept file");
    let receiver = rusqlite::Connection::open(kept.join("receiver.db")).unwrap();
    let effects: i64 = receiver
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert!(effects > 0);
}
