//! Injected faults are data: forcing the list a run recorded reproduces that
//! run exactly, and forcing a sub-list gives a run with only those faults.

use crate::common;

use common::{load, options, work_dir};
use crashsim::faults::{Fault, FaultSource};
use crashsim::runner::{run_seed, run_seed_with};

fn forced(faults: impl IntoIterator<Item = Fault>) -> FaultSource {
    FaultSource::Forced(faults.into_iter().collect())
}

#[test]
fn forcing_the_recorded_faults_reproduces_the_run() {
    let dir = work_dir();
    let cases = [
        ("scenarios/smoke.toml", None, 3),
        ("scenarios/crash_storm.toml", None, 1),
        ("scenarios/swarm.toml", None, 2),
        ("scenarios/smoke.toml", Some("no_dedup"), 0),
        ("scenarios/leases.toml", None, 1),
        ("scenarios/leases.toml", Some("unfenced_mark_done"), 0),
        ("scenarios/retries.toml", None, 1),
        ("scenarios/retries.toml", Some("early_dedup_purge"), 0),
    ];
    for (path, mutant, seed) in cases {
        let mut loaded = load(path);
        if let Some(mutant) = mutant {
            loaded = loaded.with_mutant(mutant).unwrap();
        }
        let drawn = run_seed(&loaded, seed, &options(dir.path())).unwrap();
        assert!(!drawn.injected.is_empty(), "{path}: no fault fired");
        let kinds: std::collections::BTreeSet<&str> = drawn
            .injected
            .iter()
            .map(|injected| match injected.fault {
                Fault::Kill { .. } => "kill",
                Fault::Drop { .. } => "drop",
                Fault::Duplicate { .. } => "duplicate",
                Fault::Probe { .. } => "probe",
                Fault::NearMiss { .. } => "near miss",
                Fault::PowerCut { .. } => "power cut",
                Fault::Pause { .. } => "pause",
                Fault::Refuse { .. } => "refuse",
                Fault::ReplyRetryable { .. } => "reply retryable",
                Fault::Skew { .. } => "skew",
                Fault::ClockStep { .. } => "clock step",
                Fault::Preempt { .. } => "suspension",
            })
            .collect();
        if path.ends_with("smoke.toml") {
            assert!(
                kinds.contains("near miss"),
                "{path} seed {seed}: no near-miss probe ({kinds:?})"
            );
        }
        if path.ends_with("leases.toml") {
            assert!(kinds.contains("pause"), "{path} seed {seed}: no pause ({kinds:?})");
            assert!(kinds.contains("skew"), "{path} seed {seed}: no skew ({kinds:?})");
        }
        if path.ends_with("retries.toml") {
            assert!(
                kinds.contains("refuse") && kinds.contains("reply retryable"),
                "{path} seed {seed}: no retryable fault ({kinds:?})"
            );
        }
        let schedule = forced(drawn.injected.iter().map(|injected| injected.fault.clone()));
        let replayed = run_seed_with(&loaded, seed, &options(dir.path()), schedule).unwrap();
        assert_eq!(drawn.trace_hash, replayed.trace_hash, "{path} seed {seed} ({kinds:?})");
        assert_eq!(drawn.injected, replayed.injected);
        assert_eq!(drawn.violations, replayed.violations);
    }
}

/// Suspensions inside the store's calls (`[preempt]`) are faults like the
/// others: forcing the recorded ones reproduces the run, waits for locks
/// and all; forcing none of them runs it without one (how the shrinker
/// drops the suspensions that do not matter).
#[test]
fn forcing_the_recorded_suspensions_reproduces_the_run() {
    let dir = work_dir();
    let command = format!("{} serve reference", env!("CARGO_BIN_EXE_crashsim"));
    let adapter = crashsim::adapter::Adapter::probe(&command, std::time::Duration::from_secs(30), true)
        .expect("crashsim serve answers its handshake");
    let mut served = options(dir.path());
    served.sut = crashsim::runner::Sut::Adapter(std::sync::Arc::new(adapter));
    let loaded = load("scenarios/interleave.toml");
    let drawn = run_seed(&loaded, 2, &served).unwrap();
    let suspensions = |result: &crashsim::runner::SeedResult| {
        result
            .injected
            .iter()
            .filter(|injected| matches!(injected.fault, Fault::Preempt { .. }))
            .count()
    };
    assert!(suspensions(&drawn) > 0, "interleave seed 2 suspended nothing");
    let schedule = forced(drawn.injected.iter().map(|injected| injected.fault.clone()));
    let replayed = run_seed_with(&loaded, 2, &served, schedule).unwrap();
    assert_eq!(drawn.trace_hash, replayed.trace_hash);
    assert_eq!(drawn.injected, replayed.injected);
    let others = drawn
        .injected
        .iter()
        .filter(|injected| !matches!(injected.fault, Fault::Preempt { .. }))
        .map(|injected| injected.fault.clone());
    let without = run_seed_with(&loaded, 2, &served, forced(others)).unwrap();
    assert_eq!(suspensions(&without), 0);
    let parked = without
        .events
        .iter()
        .flatten()
        .filter(|event| matches!(&event.op, crashsim::trace::Op::Preempted { point, .. } if !point.contains("BUSY") && !point.starts_with("xSleep")))
        .count();
    assert_eq!(parked, 0, "only waits for locks park without a forced suspension");
}

#[test]
fn forcing_nothing_gives_a_run_without_faults() {
    let dir = work_dir();
    let loaded = load("scenarios/crash_storm.toml");
    let result = run_seed_with(&loaded, 5, &options(dir.path()), forced([])).unwrap();
    assert!(result.injected.is_empty());
    assert_eq!(result.kills.total_fired(), 0);
    assert!(result.ok, "{:#?}", result.violations);
}

#[test]
fn forcing_one_kill_fires_exactly_that_kill() {
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml");
    let drawn = run_seed(&loaded, 9, &options(dir.path())).unwrap();
    let kill = drawn
        .injected
        .iter()
        .find(|injected| matches!(injected.fault, Fault::Kill { .. }))
        .expect("smoke kills")
        .clone();
    let result = run_seed_with(&loaded, 9, &options(dir.path()), forced([kill.fault.clone()])).unwrap();
    assert_eq!(
        result.injected,
        vec![kill],
        "the one kill fires, at the same tick (nothing earlier changed)"
    );
}

/// A pause is a fault like a kill: forced alone it fires alone, at the same
/// tick and for the same length, and every other fault of the run is gone
/// (which is how the shrinker drops pauses).
#[test]
fn forcing_one_pause_fires_exactly_that_pause() {
    let dir = work_dir();
    let loaded = load("scenarios/leases.toml");
    let drawn = run_seed(&loaded, 4, &options(dir.path())).unwrap();
    let pause = drawn
        .injected
        .iter()
        .find(|injected| matches!(injected.fault, Fault::Pause { .. }))
        .expect("leases.toml pauses")
        .clone();
    let mut keep = options(dir.path());
    keep.keep_traces = true;
    let result = run_seed_with(&loaded, 4, &keep, forced([pause.fault.clone()])).unwrap();
    assert_eq!(result.injected, vec![pause.clone()]);
    let Fault::Pause { actor, ticks, .. } = pause.fault else {
        unreachable!()
    };
    let paused: Vec<_> = result
        .events
        .unwrap()
        .into_iter()
        .filter(|event| matches!(event.op, crashsim::trace::Op::Pause { .. }))
        .collect();
    assert_eq!(paused.len(), 1);
    assert_eq!((paused[0].tick, paused[0].actor), (pause.tick, actor));
    assert_eq!(paused[0].op, crashsim::trace::Op::Pause { ticks });
}

/// SQLite's clock on a simulated connection is the actor's skewed clock:
/// worker-0, forced a day behind (saturating at tick 0), stamps every row it
/// marks done at the simulated epoch, while the others stamp the simulated
/// time of day (never the machine's date).
#[test]
fn sqlite_reads_the_stepping_actors_skewed_clock() {
    use crashsim::actors::{ActorId, Role};
    use crashsim::sim::Simulator;
    use crashsim::trace::Op;
    let loaded = load("scenarios/leases.toml");
    let implementation = crashsim::mutants::resolve("reference").unwrap();
    let dir = work_dir();
    let worker = ActorId::new(Role::Worker, 0);
    let schedule = forced([Fault::Skew {
        actor: worker,
        offset: -86_400_000,
    }]);
    let output = Simulator::new(&loaded.scenario, implementation, 1, dir.path(), schedule)
        .unwrap()
        .run()
        .unwrap();
    assert!(
        output
            .events
            .iter()
            .any(|event| event.op == Op::Skew { offset: -86_400_000 })
    );
    let conn = rusqlite::Connection::open(&output.store_path).unwrap();
    let stamp = |command_id: &str| -> String {
        conn.query_row(
            "SELECT processed_at FROM outbox WHERE command_id = ?1",
            [command_id],
            |row| row.get(0),
        )
        .unwrap()
    };
    let (mut late, mut others) = (0, 0);
    for event in &output.events {
        if let Op::MarkDone {
            command_id,
            changed: true,
            ..
        } = &event.op
        {
            let stamp = stamp(command_id);
            assert!(stamp.starts_with("2026-01-01 "), "{command_id}: {stamp}");
            if event.actor == worker {
                assert_eq!(stamp, "2026-01-01 00:00:00", "{command_id} marked by {worker}");
                late += 1;
            } else if event.tick >= 1_000 {
                assert_ne!(stamp, "2026-01-01 00:00:00", "{command_id} at tick {}", event.tick);
                others += 1;
            }
        }
    }
    assert!(
        late > 0 && others > 0,
        "worker-0 marked {late}, the others {others} after tick 1000"
    );
}

/// Writers scan `heads` only when a scan is likely to find work (see
/// `actors::writer`), yet still race: several writers load and decide the
/// same workflow, and the stale ones are rejected (I3's situation) in every
/// seed. Counts of a deterministic trace, not timings.
#[test]
fn writers_scan_less_than_they_decide_and_still_race() {
    use crashsim::trace::Op;
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml");
    for seed in 0..4 {
        let result = run_seed(&loaded, seed, &options(dir.path())).unwrap();
        assert!(result.ok, "seed {seed}: {:?}", result.violations);
        let events = result.events.as_deref().unwrap();
        let count = |wanted: fn(&Op) -> bool| events.iter().filter(|event| wanted(&event.op)).count();
        let scans = count(|op| matches!(op, Op::Heads { .. }));
        let decisions = count(|op| matches!(op, Op::Decide { .. }));
        let conflicts = count(|op| matches!(op, Op::Conflict { .. }));
        assert!(
            scans < decisions,
            "seed {seed}: {scans} scans for {decisions} decisions"
        );
        assert!(conflicts >= 5, "seed {seed}: only {conflicts} stale appends rejected");
    }
}
