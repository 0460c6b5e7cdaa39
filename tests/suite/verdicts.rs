//! A gate that never cries wolf: what is not the store's fault ends a seed
//! as an error (exit 2), never as a finding (exit 1).
//!
//! - a full disk under a correct store is an environment error;
//! - a budget that ends before liveness can be judged is inconclusive, yet
//!   a safety violation found before it is still a finding;
//! - a run that can no longer settle ends a stall window into the quiet
//!   phase (stuck with faults on, they stop early), and one with a finding
//!   no later event can undo ends after a grace, each with the first
//!   finding a run to its budget gives;
//! - the CLI reproductions of a full work directory (a real 600 KiB tmpfs,
//!   where this machine lets the test mount one).

use crate::common;

use std::path::Path;

use common::{crashsim, load, options, stderr, stdout, work_dir};
use crashsim::check::Invariant;
use crashsim::faults::FaultSource;
use crashsim::runner::{ErrorKind, run_seed, run_seed_on};
use crashsim::store::reference::{ReferenceStore, ReferenceSystem};
use crashsim::store::{self, Implementation, Receiver, Snapshot, Store, System, SystemConfig, Who};

/// The reference on a disk that fills up: every store connection may use
/// only a few pages, so SQLite answers `SQLITE_FULL` as a full disk would.
struct Cramped;

struct CrampedSystem(ReferenceSystem);

impl Implementation for Cramped {
    fn name(&self) -> &str {
        "cramped"
    }

    fn description(&self) -> &str {
        "the reference on a disk with a few pages free"
    }

    fn system(&self, config: &SystemConfig) -> store::Result<Box<dyn System>> {
        Ok(Box::new(CrampedSystem(ReferenceSystem::create(config)?)))
    }
}

impl System for CrampedSystem {
    fn open_store(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Store>> {
        let config = &self.0.config;
        let opened = ReferenceStore::open(&config.store_path, &config.store_sqlite)?;
        opened.conn().pragma_update(None, "max_page_count", 12)?;
        let _ = who;
        Ok(Box::new(opened))
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Receiver>> {
        self.0.open_receiver(who)
    }

    fn dump(&mut self) -> store::Result<Snapshot> {
        self.0.dump()
    }
}

#[test]
fn a_full_disk_under_a_correct_store_is_an_environment_error() {
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml");
    let error = run_seed_on(&loaded, &Cramped, 0, &options(dir.path()), FaultSource::Drawn)
        .expect_err("a full disk gives no verdict");
    assert_eq!(error.kind(), ErrorKind::Environment, "{error}");
    assert!(error.cause().contains("the work directory is full"), "{error}");
    assert_eq!(error.seed(), Some(0));
    assert!(error.stops_run());
}

#[test]
fn a_budget_that_ends_in_the_fault_phase_is_inconclusive_not_i10() {
    let dir = work_dir();
    let mut loaded = load("scenarios/smoke.toml");
    // Built in code: the loader refuses such a budget outright.
    loaded.scenario.run.steps_max = 300;
    let error = run_seed(&loaded, 0, &options(dir.path())).expect_err("no verdict on liveness");
    assert_eq!(error.kind(), ErrorKind::Inconclusive, "{error}");
    assert!(error.cause().contains("fault phase"), "{error}");
    assert!(!error.stops_run(), "another seed may still be judged");
}

#[test]
fn a_safety_violation_before_the_budget_ends_is_still_a_finding() {
    let dir = work_dir();
    let mut loaded = load("tests/fixtures/no_dedup.toml");
    loaded.scenario.run.ticks_fault = 30_000;
    loaded.scenario.run.ticks_max = 40_000;
    let settled = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let mut cut = loaded.clone();
    // Cut just before it would have settled: still in the fault phase.
    cut.scenario.run.steps_max = settled.steps - 1;
    let result = run_seed(&cut, 0, &options(dir.path())).expect("safety is judged all the same");
    assert!(!result.ok);
    assert!(result.violations.iter().any(|v| v.invariant == Invariant::I2));
    assert!(result.violations.iter().all(|v| v.invariant != Invariant::I10));
}

/// Seed 0 of a small `smoke` against `mutant`, with runs ending once their
/// verdict is certain and, side by side, with the rule off.
fn early_and_full(
    mutant: &str,
) -> (
    crashsim::runner::SeedResult,
    crashsim::runner::SeedResult,
    crashsim::scenario::Loaded,
) {
    let dir = work_dir();
    let mut loaded = load("scenarios/smoke.toml");
    loaded.scenario.store = mutant.to_string();
    loaded.mutant = Some(mutant.to_string());
    loaded.scenario.workload.trips_count = 4;
    loaded.scenario.workload.writers_count = 2;
    loaded.scenario.workload.workers_count = 1;
    loaded.scenario.workload.receivers_count = 1;
    loaded.scenario.run.ticks_fault = 300;
    loaded.scenario.run.ticks_max = 12_000;
    let early = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let mut full = loaded.clone();
    full.scenario.run.end_when_certain = false;
    let full = run_seed(&full, 0, &options(dir.path())).expect("a verdict");
    assert!(!full.settled && !early.settled);
    assert_eq!(full.ticks, 12_000, "without the rule the run goes on to its budget");
    // The same finding leads, word for word.
    assert_eq!(early.violations[0], full.violations[0]);
    (early, full, loaded)
}

/// A stuck run's I10 says why the run ended.
fn says_it_can_no_longer_settle(result: &crashsim::runner::SeedResult) {
    let i10 = result
        .violations
        .iter()
        .find(|v| v.invariant == Invariant::I10)
        .expect("I10");
    assert!(i10.message.contains("can no longer settle"), "{i10}");
}

fn ending(result: &crashsim::runner::SeedResult) -> Option<(u64, crashsim::trace::Op)> {
    use crashsim::trace::Op;
    let events = result.events.as_ref().expect("traces kept");
    events.iter().find_map(|event| match &event.op {
        op @ (Op::Stalled { .. } | Op::Certain { .. }) => Some((event.tick, op.clone())),
        _ => None,
    })
}

#[test]
fn a_run_that_can_no_longer_settle_ends_a_stall_window_into_the_quiet_phase() {
    // Rows marked done before their results came back: workflows wait forever.
    let (early, _, loaded) = early_and_full("mark_done_before_confirm");
    let window = crashsim::scenario::Budget::stall_window(&loaded.scenario);
    let Some((
        tick,
        crashsim::trace::Op::Stalled {
            since,
            window: recorded,
        },
    )) = ending(&early)
    else {
        panic!("the ending is an event of the trace: {:?}", ending(&early));
    };
    assert_eq!(recorded, window);
    assert!(
        since >= 300 && tick >= since + window && tick < 12_000,
        "{tick} {since} {window}"
    );
    assert_eq!(early.ticks, tick, "the run ends where it stalled");
    assert_eq!(early.violations[0].invariant, Invariant::I1);
    says_it_can_no_longer_settle(&early);
}

#[test]
fn a_run_stuck_with_faults_on_stops_them_and_ends_a_window_later() {
    use crashsim::trace::Op;
    // Contention's fault phase is 3,000 ticks, its stall window a fifth of
    // that: a run stuck early need not wait the faults out.
    let dir = work_dir();
    let mut loaded = load("scenarios/contention.toml");
    loaded.scenario.store = "mark_done_before_confirm".to_string();
    loaded.mutant = Some("mark_done_before_confirm".to_string());
    let early = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let window = crashsim::scenario::Budget::stall_window(&loaded.scenario);
    let events = early.events.as_ref().expect("traces kept");
    let Some((stopped, since, recorded)) = events.iter().find_map(|event| match event.op {
        Op::FaultsEnded { since, window } => Some((event.tick, since, window)),
        _ => None,
    }) else {
        panic!("faults stopped early");
    };
    assert_eq!(recorded, window);
    assert!(
        stopped >= since + window && stopped < loaded.scenario.run.ticks_fault,
        "{stopped}"
    );
    // The quiet phase starts there, once: not again at run.ticks_fault.
    let quiet: Vec<&crashsim::trace::TraceEvent> = events.iter().filter(|e| matches!(e.op, Op::Quiet)).collect();
    assert_eq!(quiet.len(), 1);
    assert_eq!(quiet[0].tick, stopped);
    let Some((tick, Op::Stalled { since, .. })) = ending(&early) else {
        panic!("a stuck run ends stalled: {:?}", ending(&early));
    };
    assert!(since >= stopped && tick >= since + window, "{since} {tick}");
    assert!(early.ticks < loaded.scenario.run.ticks_fault, "{}", early.ticks);
    // A scripted kill still to come when they stopped is a fault too: from
    // ending rule 8 it is skipped, and the run is the same.
    let mut scripted = loaded.clone();
    scripted.scenario.script.push(crashsim::scenario::Scripted {
        tick: (stopped + early.ticks) / 2,
        kill: Some("all".to_string()),
        power_cut: false,
    });
    let scripted = run_seed(&scripted, 0, &options(dir.path())).expect("a verdict");
    let kills = |result: &crashsim::runner::SeedResult| {
        let events = result.events.as_ref().expect("traces kept");
        events.iter().filter(|e| matches!(e.op, Op::Kill { .. })).count()
    };
    assert_eq!(kills(&scripted), kills(&early));
    assert_eq!(scripted.ticks, early.ticks);
    // The finding a run with faults to the end of their phase leads with.
    let mut full = loaded.clone();
    full.scenario.run.end_when_certain = false;
    full.scenario.run.ticks_max = 8_000;
    let full = run_seed(&full, 0, &options(dir.path())).expect("a verdict");
    assert_eq!(early.violations[0].invariant, Invariant::I1);
    assert_eq!(full.violations[0].invariant, Invariant::I1);
    says_it_can_no_longer_settle(&early);
}

#[test]
fn a_finding_no_later_event_can_undo_ends_the_run_after_a_grace() {
    // A head one too far: stale appends commit (I3) and writers never finish.
    let (early, full, loaded) = early_and_full("max_seq_plus_one");
    let Some((tick, crashsim::trace::Op::Certain { invariant, until })) = ending(&early) else {
        panic!("the ending is an event of the trace: {:?}", ending(&early));
    };
    assert_eq!(invariant, "I3");
    assert_eq!(until, tick + loaded.scenario.quiet_ticks_min());
    assert!(early.ticks <= until && early.ticks < 1_000, "{} {until}", early.ticks);
    assert_eq!(early.violations[0].invariant, Invariant::I3);
    // Liveness is not judged on a run ended early; the full run's I10 is its own.
    assert!(early.violations.iter().all(|v| v.invariant != Invariant::I10));
    assert!(full.violations.iter().any(|v| v.invariant == Invariant::I10));
}

/// Ending rule 8: a late acknowledgement that counted (I8's fencing
/// clause) is judged when it happens; the run ends a grace later, with the
/// first line of a run that went on (this mutant's runs settle all the
/// same, so that one ends where the workflows finish).
#[test]
fn a_late_acknowledgement_that_counted_ends_the_run_after_a_grace() {
    let dir = work_dir();
    let loaded = load("scenarios/leases.toml").with_mutant("unfenced_mark_done").unwrap();
    let early = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let mut full = loaded.clone();
    full.scenario.run.end_when_certain = false;
    let full = run_seed(&full, 0, &options(dir.path())).expect("a verdict");
    let Some((_, crashsim::trace::Op::Certain { invariant, .. })) = ending(&early) else {
        panic!("the ending is an event of the trace: {:?}", ending(&early));
    };
    assert_eq!(invariant, "I8");
    assert_eq!(early.violations[0], full.violations[0]);
    assert!(early.steps < full.steps, "{} and {}", early.steps, full.steps);
}

#[test]
fn a_run_with_power_loss_is_judged_early_once_its_faults_are_over() {
    use crashsim::trace::Op;
    // A cut can take a commit back: judging waits for the last one.
    let dir = work_dir();
    let loaded = load("scenarios/power_loss.toml")
        .with_mutant("max_seq_plus_one")
        .unwrap();
    let early = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let events = early.events.as_ref().expect("traces kept");
    let quiet = events
        .iter()
        .find(|e| matches!(e.op, Op::Quiet))
        .expect("a quiet phase")
        .tick;
    let last_cut = events
        .iter()
        .filter(|e| matches!(e.op, Op::PowerCut { .. }))
        .map(|e| e.tick)
        .max()
        .expect("the power went out");
    let Some((tick, Op::Certain { invariant, .. })) = ending(&early) else {
        panic!("the run ends certain: {:?}", ending(&early));
    };
    assert!(
        tick > loaded.scenario.run.ticks_fault && tick >= quiet && tick > last_cut,
        "{tick}"
    );
    assert_eq!(invariant, "I3");
    // Under rule 3 the same seed waited to be stuck; its finding leads the same.
    let mut old = loaded.clone();
    old.scenario.run.ending_rule = 3;
    let old = run_seed(&old, 0, &options(dir.path())).expect("a verdict");
    assert!(early.steps < old.steps, "{} {}", early.steps, old.steps);
    assert_eq!(early.violations[0], old.violations[0]);
}

#[test]
fn a_commit_a_restore_took_back_is_no_stale_append_judged_early() {
    // After a restore rolled a commit back, a writer appends again from the
    // same head: judged on the trace alone two appends from one head both
    // committed; with the restore's snapshot (as after the run) one was lost.
    let dir = work_dir();
    let loaded = load("scenarios/restores.toml");
    for seed in [8, 12] {
        let result = run_seed(&loaded, seed, &options(dir.path())).expect("a verdict");
        assert!(result.ok && result.settled, "seed {seed}: {:?}", result.violations);
        assert_eq!(ending(&result), None, "seed {seed}");
    }
}

#[test]
fn a_writer_does_not_spin_on_a_row_marked_done_without_a_result() {
    // Rows marked done before their results came back: under rule 3 every
    // writer scanned `heads` again at once, picked such a workflow again and
    // found no result, thousands of times; from rule 4 it waits for its poll.
    let dir = work_dir();
    let loaded = load("scenarios/retries.toml")
        .with_mutant("mark_done_before_confirm")
        .unwrap();
    let now = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let mut old = loaded.clone();
    old.scenario.run.ending_rule = 3;
    let old = run_seed(&old, 0, &options(dir.path())).expect("a verdict");
    assert_eq!(now.violations[0].invariant, Invariant::I1);
    assert_eq!(old.violations[0].invariant, Invariant::I1);
    assert!(now.steps * 4 < old.steps, "{} against {}", now.steps, old.steps);
    // No correct store leaves such a row: the reference's runs are as they were.
    let reference = load("scenarios/retries.toml");
    let mut before = reference.clone();
    before.scenario.run.ending_rule = 3;
    for seed in [0, 1] {
        let today = run_seed(&reference, seed, &options(dir.path())).expect("a verdict");
        let before = run_seed(&before, seed, &options(dir.path())).expect("a verdict");
        assert!(today.ok, "seed {seed}");
        assert_eq!(today.trace_hash, before.trace_hash, "seed {seed}");
    }
}

#[test]
fn an_effect_applied_twice_ends_the_run_when_the_receivers_rows_show_it() {
    use crashsim::trace::Op;
    // A receiver without de-duplication applies a command again at tick
    // 162: from rule 5 the trace's second application is the cue, the
    // receiver's rows read then are the evidence, and the run ends certain
    // where rule 4 ran on to settle. The verdict leads the same.
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml").with_mutant("no_dedup").unwrap();
    let now = run_seed(&loaded, 0, &options(dir.path())).expect("a verdict");
    let Some((_, Op::Certain { invariant, .. })) = ending(&now) else {
        panic!("the run ends certain: {:?}", ending(&now));
    };
    assert_eq!(invariant, "I2");
    let mut old = loaded.clone();
    old.scenario.run.ending_rule = 4;
    let old = run_seed(&old, 0, &options(dir.path())).expect("a verdict");
    assert!(now.steps * 3 < old.steps, "{} against {}", now.steps, old.steps);
    assert_eq!(now.violations[0], old.violations[0]);
    // The rows are read on connections that never write: reference runs
    // whose receivers applied a command again after a kill before its
    // commit (the cue) keep the trace they had under rule 4.
    let reference = load("scenarios/crash_storm.toml");
    let mut before = reference.clone();
    before.scenario.run.ending_rule = 4;
    for seed in [0, 1, 2] {
        let today = run_seed(&reference, seed, &options(dir.path())).expect("a verdict");
        let before = run_seed(&before, seed, &options(dir.path())).expect("a verdict");
        assert!(today.ok, "seed {seed}: {:?}", today.violations);
        assert_eq!(today.trace_hash, before.trace_hash, "seed {seed}");
        let mut applied = std::collections::BTreeMap::new();
        for event in today.events.as_deref().unwrap_or_default() {
            if let Op::Apply { key, .. } = &event.op {
                *applied.entry(key.clone()).or_insert(0) += 1;
            }
        }
        assert!(applied.values().any(|n| *n > 1), "seed {seed}: no cue to read the rows");
    }
}

/// A receiver without de-duplication (the `no_dedup` mutant) whose dump of
/// the copies fails as a full disk would.
struct PeekFails;

struct PeekFailsSystem(Box<dyn System>);

impl Implementation for PeekFails {
    fn name(&self) -> &str {
        "peek_fails"
    }

    fn description(&self) -> &str {
        "no_dedup, on a disk that cannot hold a copy of its files"
    }

    fn system(&self, config: &SystemConfig) -> store::Result<Box<dyn System>> {
        let no_dedup = crashsim::mutants::resolve("no_dedup").expect("a shipped mutant");
        Ok(Box::new(PeekFailsSystem(no_dedup.system(config)?)))
    }
}

impl System for PeekFailsSystem {
    fn open_store(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Store>> {
        self.0.open_store(who)
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Receiver>> {
        self.0.open_receiver(who)
    }

    fn dump(&mut self) -> store::Result<Snapshot> {
        self.0.dump()
    }

    fn offers_peek(&self) -> bool {
        true
    }

    fn peek(&mut self, _store: &Path, _receiver: &Path) -> store::Result<Option<Snapshot>> {
        Err(store::StoreError::Environment("no room for the copy".to_string()))
    }
}

#[test]
fn a_peek_that_fails_is_an_environment_error_not_a_later_ending() {
    // Were the failure read as "no early end", the trace would depend on
    // the machine (and the seed would run on to its budget).
    let dir = work_dir();
    let loaded = load("scenarios/smoke.toml");
    let error = run_seed_on(&loaded, &PeekFails, 0, &options(dir.path()), FaultSource::Drawn).expect_err("no verdict");
    assert_eq!(error.kind(), ErrorKind::Environment, "{error}");
    assert!(
        error
            .cause()
            .contains("dumping a copy of the databases: no room for the copy"),
        "{error}"
    );
}

/// Mounts a tmpfs of `size` at `dir`, if this machine allows it (root).
fn mount_tmpfs(dir: &Path, size: &str) -> bool {
    std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output()
        .is_ok_and(|output| output.status.success())
}

struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0).output();
    }
}

#[test]
fn a_full_work_directory_exits_2_with_sqlites_words_and_no_violation() {
    let dir = tempfile::tempdir().unwrap();
    if !mount_tmpfs(dir.path(), "600k") {
        eprintln!("skipped: this machine does not let the test mount a tmpfs");
        return;
    }
    let _unmount = Unmount(dir.path());
    let reports = tempfile::tempdir().unwrap();
    let output = crashsim(&[
        "run",
        "smoke",
        "--seeds",
        "6",
        // In memory the run would never meet the full disk until it wrote
        // its files out; on disk SQLite meets it mid-run.
        "--files-on-disk",
        "--dir",
        dir.path().to_str().unwrap(),
        "--report",
        reports.path().to_str().unwrap(),
    ]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("database or disk is full"), "{err}");
    assert!(err.contains("not a finding"), "{err}");
    assert!(!out.contains("fail:") && !out.contains("I10"), "{out}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.path().join("smoke/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["outcome"], "error");
    assert_eq!(summary["failed"], 0);
    assert!(summary["errored"].as_u64().unwrap() >= 1);
    assert_eq!(summary["scenarios"][0]["errors"][0]["error"]["kind"], "environment");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no work directory is left behind"
    );
}

/// The reference, whose backups go to a disk with one page free: the
/// backup's destination cannot be written.
struct CrampedBackups;

struct CrampedBackupSystem(ReferenceSystem);

impl Implementation for CrampedBackups {
    fn name(&self) -> &str {
        "cramped_backups"
    }

    fn description(&self) -> &str {
        "the reference, its backups written to a disk with one page free"
    }

    fn system(&self, config: &SystemConfig) -> store::Result<Box<dyn System>> {
        Ok(Box::new(CrampedBackupSystem(ReferenceSystem::create(config)?)))
    }

    fn backups(&self) -> bool {
        true
    }
}

impl System for CrampedBackupSystem {
    fn open_store(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Store>> {
        self.0.open_store(who)
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> store::Result<Box<dyn Receiver>> {
        self.0.open_receiver(who)
    }

    fn dump(&mut self) -> store::Result<Snapshot> {
        self.0.dump()
    }

    fn backup(&mut self, dest: &Path, _part: u32) -> store::Result<store::Backed> {
        let config = &self.0.config;
        let source = store::connection::open(&config.store_path, &config.store_sqlite)?;
        let mut target = store::connection::open(dest, &config.store_sqlite)?;
        target.pragma_update(None, "max_page_count", 1)?;
        rusqlite::backup::Backup::new(&source, &mut target)?.step(-1)?;
        Ok(store::Backed::Complete)
    }
}

/// A backup whose destination cannot be written (the disk is full) is the
/// machine's error, never a finding about the store's backups.
#[test]
fn a_backup_destination_that_cannot_be_written_is_an_environment_error() {
    let dir = work_dir();
    let loaded = load("scenarios/backups.toml");
    let error = run_seed_on(&loaded, &CrampedBackups, 0, &options(dir.path()), FaultSource::Drawn)
        .expect_err("a full disk gives no verdict");
    assert_eq!(error.kind(), ErrorKind::Environment, "{error}");
    assert!(
        error.cause().contains("backup #1") && error.cause().contains("full"),
        "{error}"
    );
}
