//! Process mode: every connection a `crashsim serve` process, spoken to over
//! the adapter protocol and killed with SIGKILL at kill points. The same
//! seed injects the same faults and gives the same trace and verdict as
//! in-process mode (a `call` role goes further: its process is killed
//! inside its calls through crashsim's VFS), a writer killed right after its commit leaves the
//! event durable for the next opener to recover, and power cuts reach the
//! served store through crashsim's VFS.

use crate::common;

use std::sync::Arc;

use common::{load, work_dir};
use crashsim::adapter::{Adapter, DEFAULT_TIMEOUT};
use crashsim::faults::KillPoint;
use crashsim::mutants::MUTANTS;
use crashsim::runner::{Options, SeedResult, Sut, run_seed};
use crashsim::scenario::Loaded;
use crashsim::trace::Op;

fn options(dir: &std::path::Path, sut: Sut) -> Options {
    Options {
        work_dir: dir.to_path_buf(),
        keep_failed: false,
        keep_traces: true,
        sut,
        check_determinism: false,
        files: Default::default(),
    }
}

/// The scenario's store served by `crashsim serve`, as `--mode process` does.
fn process(loaded: &Loaded) -> Sut {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_crashsim"));
    Sut::Adapter(Arc::new(
        Adapter::serve(exe, &loaded.scenario.store, DEFAULT_TIMEOUT, true).unwrap(),
    ))
}

fn both(loaded: &Loaded, seed: u64) -> (SeedResult, SeedResult) {
    let dir = work_dir();
    let inside = run_seed(loaded, seed, &options(dir.path(), Sut::Scenario)).unwrap();
    let outside = run_seed(loaded, seed, &options(dir.path(), process(loaded))).unwrap();
    (inside, outside)
}

#[test]
fn a_writer_aborted_after_its_commit_leaves_the_event_durable() {
    let scenario = r#"
        [run]
        ticks_fault = 2000
        [workload]
        trips_count = 6
        writers_count = 3
        workers_count = 2
        receivers_count = 1
        [faults.writer]
        after_commit = "1/1"
        "#;
    let path = std::path::PathBuf::from("after_commit.toml");
    let loaded = Loaded {
        name: "after_commit".into(),
        scenario: crashsim::scenario::parse(scenario, &path).unwrap(),
        path,
        mutant: None,
        sut: None,
        source: crashsim::scenario::Source::File,
    };
    let dir = work_dir();
    let result = run_seed(&loaded, 11, &options(dir.path(), process(&loaded))).unwrap();
    assert!(result.ok, "{:#?}", result.violations);
    let events = result.events.unwrap();
    let snapshot = result.snapshot.unwrap();
    let mut aborted = 0;
    for (index, event) in events.iter().enumerate() {
        let Op::Commit { appended } = &event.op else { continue };
        let Some(append) = appended.first() else { continue };
        let killed = events[index + 1..]
            .iter()
            .find(|next| next.actor == event.actor)
            .is_some_and(|next| matches!(&next.op, Op::Kill { point } if point == KillPoint::WriterAfterCommit.name()));
        if killed {
            aborted += 1;
            let durable = snapshot
                .events
                .iter()
                .any(|stored| stored.workflow_id == append.workflow_id && stored.seq == append.seq);
            assert!(
                durable,
                "{}#{} was committed before the abort",
                append.workflow_id, append.seq
            );
        }
    }
    assert!(aborted >= 6, "writers aborted right after committing: {aborted}");
}

#[test]
fn both_modes_agree_on_the_reference_and_every_mutant() {
    let base = load("tests/fixtures/detect.toml");
    let (inside, outside) = both(&base, 2);
    assert_eq!(inside.trace_hash, outside.trace_hash, "reference");
    assert!(inside.ok && outside.ok);
    for mutant in &MUTANTS {
        if mutant.name == "lookup_outside_txn" {
            // Its mistake shows only where calls are suspended inside
            // SQLite (tests/suite/preempt.rs), which detect.toml does not do.
            continue;
        }
        let loaded = base.clone().with_mutant(mutant.name).unwrap();
        let (inside, outside) = both(&loaded, 2);
        let roles = crashsim::store::Implementation::roles(mutant);
        if !KillPoint::unreachable(roles).is_empty() {
            // A `call` role: in-process nothing comes inside the call, while
            // `crashsim serve`'s SQLite runs crashsim's VFS, through which
            // its process is killed inside the call too. Process mode goes
            // further; it must catch the mutant at the point in-process
            // cannot reach.
            let reached = |result: &SeedResult| {
                KillPoint::unreachable(roles)
                    .iter()
                    .map(|point| result.kills.reached[point.index()])
                    .sum::<u64>()
            };
            assert_eq!(reached(&inside), 0, "{}", mutant.name);
            assert!(reached(&outside) > 0, "{}: killed inside its calls", mutant.name);
            assert!(!outside.ok, "{}: caught in process mode", mutant.name);
            continue;
        }
        assert_eq!(inside.injected, outside.injected, "{}: the same faults", mutant.name);
        assert_eq!(
            inside.violations, outside.violations,
            "{}: the same verdict",
            mutant.name
        );
        assert_eq!(inside.trace_hash, outside.trace_hash, "{}", mutant.name);
    }
}

/// Power loss reaches `crashsim serve` through the crash VFS it registers
/// from the shared state (the loadable extension's way): the reference
/// passes with real cuts, and `sync_off` leaves a ghost effect (I4) after a
/// cut, as in-process.
#[test]
fn process_mode_cuts_the_power_too() {
    let base = load("tests/fixtures/power_bytes.toml");
    let (inside, outside) = both(&base, 0);
    assert!(inside.ok && outside.ok, "{:#?}", outside.violations);
    let cuts = |result: &SeedResult| {
        result
            .events
            .iter()
            .flatten()
            .filter(|event| matches!(event.op, Op::PowerCut { .. }))
            .count()
    };
    assert!(cuts(&outside) >= 1, "the scripted cut, at least");
    let mut loaded = base.with_mutant("sync_off").unwrap();
    let first = |result: &SeedResult| result.violations.first().map(|violation| violation.invariant);
    // Its connections' settings are certain at tick 0 and stop the faults
    // at the first settle check (ending rule 6), in both modes alike.
    let (inside, outside) = both(&loaded, 0);
    assert_eq!(first(&inside), Some(crashsim::check::Invariant::I9));
    assert_eq!(first(&outside), first(&inside), "{:#?}", outside.violations);
    // With faults to the end of their phase, the cut comes.
    loaded.scenario.run.end_when_certain = false;
    let (inside, outside) = both(&loaded, 0);
    let ghost = |result: &SeedResult| {
        result
            .violations
            .iter()
            .any(|violation| violation.invariant == crashsim::check::Invariant::I4)
    };
    // The root first: its connections opened on synchronous=OFF (I9), then
    // the ghost the cut left (I4).
    assert_eq!(first(&inside), Some(crashsim::check::Invariant::I9));
    assert!(ghost(&inside) && ghost(&outside), "{:#?}", outside.violations);
    assert_eq!(first(&outside), first(&inside), "{:#?}", outside.violations);
}

/// Leases over the protocol: `crashsim serve` declares the capability, and
/// the same seed gives the same trace and verdict as in-process, for the
/// reference and for leases without fencing (I8).
#[test]
fn both_modes_agree_on_leases() {
    let base = load("scenarios/leases.toml");
    let (inside, outside) = both(&base, 1);
    assert!(inside.ok && outside.ok, "{:#?}", inside.violations);
    assert_eq!(inside.trace_hash, outside.trace_hash, "reference");
    let loaded = base.with_mutant("unfenced_mark_done").unwrap();
    let (inside, outside) = both(&loaded, 0);
    assert_eq!(inside.violations, outside.violations);
    assert_eq!(inside.trace_hash, outside.trace_hash, "unfenced_mark_done");
    assert!(
        inside
            .violations
            .iter()
            .any(|v| v.invariant == crashsim::check::Invariant::I8)
    );
}

/// Retry timers, the dead letter and de-dup retention over the protocol:
/// `crashsim serve` declares `retries`, and the same seed gives the same
/// trace and verdict as in-process, for the reference and for a receiver
/// that purges its de-dup records too early (I2).
#[test]
fn both_modes_agree_on_retries() {
    let base = load("scenarios/retries.toml");
    let (inside, outside) = both(&base, 0);
    assert!(inside.ok && outside.ok, "{:#?}", inside.violations);
    assert_eq!(inside.trace_hash, outside.trace_hash, "reference");
    let loaded = base.with_mutant("early_dedup_purge").unwrap();
    let (inside, outside) = both(&loaded, 0);
    assert_eq!(inside.violations, outside.violations);
    assert_eq!(inside.trace_hash, outside.trace_hash, "early_dedup_purge");
}
