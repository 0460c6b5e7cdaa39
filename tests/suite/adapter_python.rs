//! An outside store written in Python (adapters/python/example_store.py,
//! through the SDK) under crashsim: the clean example passes the shipped
//! scenarios at both granularities, and serves leases (the lease scenario
//! passes; its unfenced acknowledgement is caught by I8) and retry timers
//! (the retries scenario passes; its early de-dup purge is caught by I2),
//! each of its known
//! bugs is caught by the invariant it breaks, a store that crashes or hangs
//! on its own is a
//! finding (A1) whose report keeps its stderr, random ids are caught by
//! `--check-determinism` (D1), and a seed gives the same trace in any
//! directory.
//!
//! These tests need Python 3. Without it they print a note and pass, except
//! in CI (`CI` set), where Python is part of the machine and its absence fails.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::example::{adapter, assert_passes, caught, example, faulty, first_violation, options, runs};
use common::{crashsim, load, python, root, stderr, stdout, work_dir};
use crashsim::adapter::{Adapter, ProcessRecord};
use crashsim::check::Invariant;
use crashsim::runner::{Options, Sut, run_seed};

#[test]
fn the_clean_example_passes_the_shipped_scenarios() {
    let Some(command) = example("") else { return };
    let adapter = adapter(&command, Duration::from_secs(30));
    // One seed each here (a process per connection costs the interpreter's
    // start-up every time); docs/performance.md's figures come from long runs.
    for name in [
        "smoke",
        "contention",
        "crash_storm",
        "swarm",
        "sync_normal",
        "group_commit",
    ] {
        let loaded = load(&format!("scenarios/{name}.toml"));
        assert_passes(&runs(&loaded, 0..1, &adapter), name);
    }
}

/// The example serves leases through the SDK: the lease scenario passes,
/// and acknowledging by `command_id` alone (a late holder's acknowledgement
/// counts) is caught by I8 within a few seeds.
#[test]
fn the_example_serves_leases_and_its_unfenced_acknowledgement_is_caught() {
    let Some(command) = example("") else { return };
    let adapter = adapter(&command, Duration::from_secs(30));
    assert!(adapter.identity().can("leases"), "{:?}", adapter.identity());
    let loaded = load("scenarios/leases.toml");
    assert_passes(&runs(&loaded, 0..3, &adapter), "leases");
    let invariants = caught("unfenced_mark_done", "scenarios/leases.toml").unwrap_or_default();
    assert!(
        invariants.contains(&Invariant::I8),
        "unfenced_mark_done on leases: expected I8, found {invariants:?}"
    );
    // A claim that never takes an expired lease: the answer that left the
    // rows out is named first, not a run that never settled.
    let first = first_violation("claim_unleased", "scenarios/leases.toml");
    assert!(
        first.as_ref().is_some_and(|first| first.invariant == Invariant::I1
            && first.message.contains("more were claimable")
            && first.message.contains("expired at tick")),
        "claim_unleased on leases: {first:?}"
    );
}

/// A store without the `leases` capability (the SDK's toy store, which has
/// no lease methods) still runs lease-free scenarios, and a lease scenario
/// stops before any seed is judged, naming what is missing.
#[test]
fn a_lease_scenario_against_an_adapter_without_leases_is_refused() {
    let Some(python) = python() else { return };
    let toy = root().join("adapters/python/tests/toy_adapter.py");
    let command = format!("{python} -S {} step", toy.display());
    let adapter = adapter(&command, Duration::from_secs(30));
    let dir = work_dir();
    let loaded = load("scenarios/leases.toml");
    let error = run_seed(&loaded, 0, &options(dir.path(), &adapter)).unwrap_err();
    assert_eq!(error.kind(), crashsim::runner::ErrorKind::Contract, "{error}");
    let message = error.to_string();
    assert!(
        message.contains("`leases` capability") && message.contains("claim"),
        "{message}"
    );
    let output = crashsim(&["run", "leases", "--sut", &command, "--seeds", "1", "--no-report"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("`leases` capability"), "{}", stderr(&output));
    // A gate over every built-in scenario skips it, saying why, and runs the rest...
    let tiny = dir.path().join("tiny.toml");
    std::fs::write(
        &tiny,
        "[run]\nticks_fault = 200\nticks_max = 5_000\n[workload]\ntrips_count = 2\n\
         writers_count = 1\nworkers_count = 1\nreceivers_count = 1\n",
    )
    .expect("writing a scenario");
    let tiny = tiny.to_string_lossy();
    let args = ["run", "leases", &tiny, "--sut", &command, "--seeds", "1", "--no-report"];
    let output = crashsim(&[&args[..], &["--skip-unsupported"]].concat());
    let stdout = String::from_utf8_lossy(&output.stdout);
    // (The toy store's verdict is not the point: it answers, it does not store.)
    assert_ne!(output.status.code(), Some(2), "{stdout}{}", stderr(&output));
    assert!(
        stdout.contains("skipped leases+toy: ") && stdout.contains("`leases` capability"),
        "{stdout}"
    );
    assert!(stdout.contains("tiny+toy: 1 seeds"), "{stdout}");
    // ...but a run left with nothing to check is an error, not a pass.
    let output = crashsim(&["run", "leases", "--sut", &command, "--seeds", "1", "--skip-unsupported"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("can run none"), "{}", stderr(&output));
}

/// The example serves retry timers and de-dup retention through the SDK:
/// the retries scenario passes, and a receiver that purges its de-dup
/// records far too early is caught by I2 within a few seeds.
#[test]
fn the_example_serves_retries_and_its_early_dedup_purge_is_caught() {
    let Some(command) = example("") else { return };
    let adapter = adapter(&command, Duration::from_secs(30));
    assert!(adapter.identity().can("retries"), "{:?}", adapter.identity());
    let loaded = load("scenarios/retries.toml");
    assert_passes(&runs(&loaded, 0..2, &adapter), "retries");
    let invariants = caught("early_dedup_purge", "scenarios/retries.toml").unwrap_or_default();
    assert!(
        invariants.contains(&Invariant::I2),
        "early_dedup_purge on retries: expected I2, found {invariants:?}"
    );
}

/// A store without the `retries` capability (the SDK's toy store, which
/// has no timer methods) makes a `[retries]` scenario stop before any seed
/// is judged, naming the missing capability and its ops.
#[test]
fn a_retries_scenario_against_an_adapter_without_timers_is_refused() {
    let Some(python) = python() else { return };
    let toy = root().join("adapters/python/tests/toy_adapter.py");
    let command = format!("{python} -S {} step", toy.display());
    let adapter = adapter(&command, Duration::from_secs(30));
    assert!(!adapter.identity().can("retries"), "{:?}", adapter.identity());
    let dir = work_dir();
    let loaded = load("scenarios/retries.toml");
    let error = run_seed(&loaded, 0, &options(dir.path(), &adapter)).unwrap_err();
    assert_eq!(error.kind(), crashsim::runner::ErrorKind::Contract, "{error}");
    let message = error.to_string();
    assert!(
        message.contains("`retries` capability") && message.contains("schedule_retry"),
        "{message}"
    );
}

/// At `call` granularity the points inside a transaction are reached by
/// killing the store's process inside its call, through crashsim's VFS
/// extension; an adapter that does not load it cannot reach them, and the
/// run says so instead of warning.
#[test]
fn the_call_granularity_example_passes_and_says_what_it_cannot_reach() {
    let Some(command) = example("--granularity call") else {
        return;
    };
    let run = |command: &str| {
        let output = common::crashsim(&[
            "run",
            "tests/fixtures/detect.toml",
            "--seeds",
            "2",
            "--no-report",
            "--sut",
            command,
        ]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
        assert!(text.contains("store (call), receiver (call)"), "{text}");
        text
    };
    let rows = |text: &str| -> Vec<String> {
        ["writer.before_commit", "receiver.before_effect_commit"]
            .iter()
            .map(|point| {
                let row = format!("  {point} ");
                text.lines()
                    .find(|line| line.starts_with(&row))
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    let with = run(&command);
    for line in rows(&with) {
        assert!(!line.is_empty() && !line.contains("unreachable"), "{line}: {with}");
    }
    assert!(
        !with.contains("was never exercised"),
        "no false coverage warning: {with}"
    );
    let without = run(&format!("env -u CRASHSIM_VFS_EXTENSION {command}"));
    for line in rows(&without) {
        assert!(line.contains("unreachable (call granularity)"), "{line}: {without}");
    }
    assert!(
        !without.contains("never fired"),
        "unreachable points are not warnings: {without}"
    );
}

/// A small scenario with every fault on, which catches each mutant in a seed or two.
const DETECT: &str = "tests/fixtures/detect.toml";

#[test]
fn each_known_bug_of_the_example_is_caught_by_its_invariant() {
    if python().is_none() {
        return;
    }
    for (bug, scenario, invariant) in [
        ("dict_dedup", DETECT, Invariant::I2),
        ("two_transactions", DETECT, Invariant::I5),
        ("max_seq", DETECT, Invariant::I3),
        // detect.toml asks for NORMAL, which the bug happens to match.
        ("sync_normal", "scenarios/smoke.toml", Invariant::I9),
        ("dedup_apart", DETECT, Invariant::I2),
        ("body_key", DETECT, Invariant::I2),
        // Near-miss keys (another case, a space at an end) catch both,
        // with polite ids too; smoke.toml's hostile ids do as well (docs/scenarios.md).
        ("key_lower", DETECT, Invariant::I7),
        ("key_strip", DETECT, Invariant::I7),
        // No BEGIN: an append killed before its commit stays stored.
        ("autocommit", DETECT, Invariant::I5),
        // CURRENT_TIMESTAMP answered by crashsim's VFS with skewed clocks.
        ("load_by_created_at", "tests/fixtures/clocks_small.toml", Invariant::I6),
        // Later connections run SQLite's default FULL where EXTRA is asked of
        // a rollback journal (on power_loss, where the build's default is
        // NORMAL, they lose acknowledged commits: tests/suite/default_synchronous.rs).
        ("pragmas_once", "tests/fixtures/sync_extra.toml", Invariant::I9),
    ] {
        let invariants = caught(bug, scenario).unwrap_or_default();
        assert!(
            invariants.contains(&invariant),
            "{bug} on {scenario}: expected {invariant}, found {invariants:?}"
        );
    }
}

#[test]
fn an_outside_stores_effect_applied_twice_ends_the_seed_when_it_happens() {
    // The example committing its effect apart from its de-dup record: from
    // ending rule 5 the adapter's own `dump` of a copy of its files, taken
    // when the trace showed the command applied again, is the evidence,
    // and the seed ends there, as the in-process mutant's does.
    let Some(command) = example("--bug dedup_apart") else {
        return;
    };
    let adapter = adapter(&command, Duration::from_secs(30));
    let loaded = load("scenarios/smoke.toml");
    let dir = work_dir();
    let now = run_seed(&loaded, 0, &options(dir.path(), &adapter)).expect("a verdict");
    let mut old = loaded.clone();
    old.scenario.run.ending_rule = 4;
    let old = run_seed(&old, 0, &options(dir.path(), &adapter)).expect("a verdict");
    assert_eq!(now.violations[0], old.violations[0]);
    assert_eq!(now.violations[0].invariant, Invariant::I2);
    assert!(now.steps * 3 < old.steps, "{} against {}", now.steps, old.steps);
    let in_process = run_seed(
        &loaded.clone().with_mutant("dedup_apart").unwrap(),
        0,
        &common::options(dir.path()),
    )
    .expect("a verdict");
    assert_eq!(now.steps, in_process.steps);
}

#[test]
fn a_peek_process_that_cannot_start_stops_the_seed_without_a_verdict() {
    // The process that dumps the copies is the one started without
    // crashsim's VFS variables: here such a process exits at once (the
    // marker is written after the probe). A failure of that reading is
    // exit 2 with its cause, never a silent "no early end", which would
    // make the trace depend on it.
    let Some(command) = example("--bug dedup_apart") else {
        return;
    };
    let dir = work_dir();
    let marker = dir.path().join("refuse-bare-processes");
    let command = format!(
        "if [ -z \"$CRASHSIM_VFS_STATE\" ] && [ -e '{}' ]; then echo 'no copies' >&2; exit 3; fi; exec {command}",
        marker.display()
    );
    let adapter = adapter(&command, Duration::from_secs(30));
    std::fs::write(&marker, "").unwrap();
    let loaded = load("scenarios/smoke.toml");
    let error = run_seed(&loaded, 0, &options(dir.path(), &adapter)).expect_err("no verdict");
    assert!(error.cause().contains("dumping a copy of the databases"), "{error}");
    assert_eq!(error.kind(), crashsim::runner::ErrorKind::Contract, "{error}");
}

#[test]
fn random_ids_are_caught_by_running_each_seed_twice() {
    let Some(command) = example("--bug uuid_ids") else {
        return;
    };
    let adapter = adapter(&command, Duration::from_secs(30));
    let loaded = load(DETECT);
    let dir = work_dir();
    let options = Options {
        check_determinism: true,
        ..options(dir.path(), &adapter)
    };
    let result = run_seed(&loaded, 0, &options).expect("seed runs");
    let d1 = result
        .violations
        .iter()
        .find(|violation| violation.invariant == Invariant::D1)
        .expect("two runs of the seed differ");
    assert!(
        d1.message.contains("insert_command"),
        "names the request: {}",
        d1.message
    );
    assert!(d1.message.contains("the first time"), "{}", d1.message);

    let clean = adapter_for_clean();
    let Some(clean) = clean else { return };
    let options = Options {
        check_determinism: true,
        sut: Sut::Adapter(clean),
        ..options
    };
    let result = run_seed(&loaded, 0, &options).expect("seed runs");
    assert!(
        result.ok,
        "the clean example is deterministic: {:#?}",
        result.violations
    );
}

fn adapter_for_clean() -> Option<Arc<Adapter>> {
    Some(adapter(&example("")?, Duration::from_secs(30)))
}

#[test]
fn a_seed_gives_the_same_trace_in_any_directory() {
    let Some(adapter) = adapter_for_clean() else { return };
    let loaded = load(DETECT);
    let (one, two) = (work_dir(), work_dir());
    let first = run_seed(&loaded, 5, &options(one.path(), &adapter)).expect("seed runs");
    let second = run_seed(&loaded, 5, &options(two.path(), &adapter)).expect("seed runs");
    assert_eq!(first.trace_hash, second.trace_hash);
    assert!(first.ok, "{:#?}", first.violations);
}

#[test]
fn every_process_of_a_run_is_gone_when_it_ends() {
    let Some(adapter) = adapter_for_clean() else { return };
    let loaded = load(DETECT);
    let dir = work_dir();
    let result = run_seed(&loaded, 1, &options(dir.path(), &adapter)).expect("seed runs");
    let listed = result
        .artifacts
        .iter()
        .find(|artifact| artifact.name == "adapter/processes.json")
        .expect("the run lists its processes");
    let processes: Vec<ProcessRecord> = serde_json::from_slice(&listed.content()).unwrap();
    let killed_at_points = result.kills.total_fired();
    assert!(
        processes.len() as u64 > killed_at_points,
        "a process per connection and life"
    );
    for process in &processes {
        assert_eq!(process.end.as_deref(), Some("killed"), "{process:?}");
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(process.pid as libc::pid_t, 0) == 0 };
        assert!(!alive, "{} ({}) is gone", process.label, process.pid);
    }
}

#[test]
fn a_store_that_crashes_on_its_own_is_a_finding_with_its_stderr() {
    let Some(command) = faulty("crash") else { return };
    let reports = tempfile::tempdir().unwrap();
    let report = reports.path().display().to_string();
    let output = common::crashsim(&[
        "run",
        "tests/fixtures/detect.toml",
        "--seed",
        "0",
        "--report",
        &report,
        "--sut",
        &command,
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "a finding: {text}{}", stderr(&output));
    assert!(text.contains("A1 store process stays up"), "{text}");
    assert!(
        text.contains("exited unasked during `mark_done` (exit code 7)"),
        "{text}"
    );
    assert!(text.contains("note: replay with"), "{text}");
    let folder = PathBuf::from(&report).join("detect+faulty_store/0");
    let result = std::fs::read_to_string(folder.join("result.json")).expect("the seed's report");
    assert!(
        result.contains("exiting in the middle of mark_done"),
        "its stderr tail: {result}"
    );
    let kept: Vec<String> = std::fs::read_dir(folder.join("adapter"))
        .expect("the adapter's files are kept")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(kept.iter().any(|name| name.ends_with(".stderr")), "{kept:?}");
    assert!(kept.contains(&"transcript.jsonl".to_string()), "{kept:?}");
    // processes.json names each kept stderr file by its name in this folder.
    let listed = std::fs::read(folder.join("adapter/processes.json")).expect("processes.json");
    let processes: Vec<ProcessRecord> = serde_json::from_slice(&listed).unwrap();
    let named: Vec<&str> = processes
        .iter()
        .map(|process| process.stderr.as_str())
        .filter(|name| !name.is_empty())
        .collect();
    assert!(!named.is_empty(), "{processes:?}");
    for name in named {
        assert!(kept.iter().any(|kept| kept == name), "{name} is in {kept:?}");
    }
}

#[test]
fn a_store_that_hangs_is_killed_and_is_a_finding() {
    let Some(command) = faulty("hang") else { return };
    let output = common::crashsim(&[
        "run",
        "tests/fixtures/detect.toml",
        "--seed",
        "0",
        "--no-report",
        // Long enough that a loaded machine's Python start-up never hits
        // it (1 s did, naming `hello` instead), short for a test.
        "--sut-timeout",
        "10",
        "--sut",
        &command,
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(text.contains("did not answer `mark_done` within 10 s"), "{text}");
}

#[test]
fn a_replay_names_the_outside_store_in_its_banner() {
    let Some(command) = example("") else { return };
    let output = crashsim(&[
        "replay",
        "tests/fixtures/detect.toml",
        "--seed",
        "0",
        "--quiet",
        "--sut",
        &command,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let banner = stdout(&output).lines().next().unwrap_or_default().to_string();
    assert!(banner.contains("store=example_store (outside store)"), "{banner}");
}

/// The run's header and its summaries name the SQLite the store runs on
/// (the one its VFS extension read, Python's `sqlite3` library) beside
/// crashsim's bundled one.
#[test]
fn the_header_and_summary_name_the_stores_sqlite_beside_crashsims() {
    let Some(command) = example("") else { return };
    let Some(python) = python() else { return };
    let version = std::process::Command::new(&python)
        .args(["-S", "-c", "import sqlite3; print(sqlite3.sqlite_version)"])
        .output()
        .expect("python runs");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let dir = work_dir();
    let report = dir.path().join("reports");
    let output = crashsim(&[
        "run",
        "smoke",
        "--seeds",
        "1",
        "--sut",
        &command,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let header = stdout(&output).lines().next().unwrap_or_default().to_string();
    assert!(header.contains(&format!("the store's SQLite {version}")), "{header}");
    let folder = std::fs::read_dir(&report).unwrap().next().unwrap().unwrap().path();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["store_sqlite_version"], version.as_str(), "{summary}");
    let markdown = std::fs::read_to_string(folder.join("summary.md")).unwrap();
    assert!(
        markdown.contains(&format!("the store's: SQLite {version}")),
        "{markdown}"
    );
}
