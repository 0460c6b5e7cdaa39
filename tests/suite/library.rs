//! The library API as an outside crate uses it: a store implemented with
//! the public traits only (`examples/own_store/store.rs`, shared with the
//! example), run through `crashsim::harness`; deliberately broken variants
//! of it, each one method away, caught by their own invariant with a replay
//! call and reports; determinism checked; bad input answered with errors.

#[allow(dead_code)]
#[path = "../../examples/own_store/store.rs"]
mod store;

use std::sync::atomic::{AtomicU64, Ordering};

use crashsim::check::{Invariant, Violation};
use crashsim::harness::{Harness, HarnessError, RunOutcome};
use crashsim::model::{Command, Head, OutboxRow, StoredEvent};
use crashsim::store::{
    Applied, Implementation, Lookup, Receiver, Request, Result, Snapshot, Store, System, SystemConfig, Who,
};
use serde_json::Value;
use store::{MyConnection, MyReceiver, MyStore, MySystem};

/// Small and fault-heavy: every mistake shows within a few seeds, and a
/// seed takes a fraction of a second even in the test profile.
const SMALL: &str = r#"
description = "a few trips, every kill point often, lossy network"

[run]
ticks_fault = 1_500
ticks_max = 20_000

[workload]
trips_count = 8
writers_count = 3
workers_count = 3
receivers_count = 2

[faults]
key_conflict = "1/8"

[faults.writer]
before_commit = "1/6"
after_commit = "1/8"

[faults.worker]
after_read_pending = "1/20"
before_deliver = "1/15"
after_deliver = "1/6"
before_mark_done = "1/8"
after_mark_done = "1/10"

[faults.receiver]
before_effect_commit = "1/6"
after_effect_commit = "1/6"

[faults.net]
drop = "1/20"
duplicate = "1/10"
"#;

/// A receiver that forgets to de-duplicate: every request is new, and its
/// key is never remembered.
struct NoDedup(MyReceiver);

impl Receiver for NoDedup {
    fn begin(&mut self) -> Result<()> {
        self.0.begin()
    }
    fn lookup(&mut self, _request: &Request) -> Result<Lookup> {
        Ok(Lookup::New)
    }
    fn apply(&mut self, request: &Request) -> Result<Applied> {
        self.0.book(request)
    }
    fn commit(&mut self) -> Result<()> {
        self.0.commit()
    }
    fn rollback(&mut self) -> Result<()> {
        self.0.rollback()
    }
    fn connection(&self) -> Option<&rusqlite::Connection> {
        self.0.connection()
    }
}

/// A store that commits the event before its commands are inserted, or
/// (`shuffled`) answers `pending` in another order in every other run.
struct Altered {
    inner: MyConnection,
    split: bool,
    shuffled: bool,
}

impl Store for Altered {
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        self.inner.load(workflow_id)
    }
    fn heads(&mut self) -> Result<Vec<Head>> {
        self.inner.heads()
    }
    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
        self.inner.commands(workflow_id, event_seq)
    }
    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        let mut rows = self.inner.pending(limit)?;
        if self.shuffled {
            rows.reverse();
        }
        Ok(rows)
    }
    fn begin(&mut self) -> Result<()> {
        self.inner.begin()
    }
    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        let seq = self.inner.insert_event(workflow_id, expected_seq, kind, payload)?;
        if self.split {
            self.inner.commit()?;
            self.inner.begin()?;
        }
        Ok(seq)
    }
    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        self.inner.insert_command(workflow_id, event_seq, index, command)
    }
    fn commit(&mut self) -> Result<()> {
        self.inner.commit()
    }
    fn rollback(&mut self) -> Result<()> {
        self.inner.rollback()
    }
    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        self.inner.mark_done(command_id, result)
    }
    fn connection(&self) -> Option<&rusqlite::Connection> {
        self.inner.connection()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mistake {
    NoDedup,
    SplitCommit,
    /// Not a protocol mistake: the answers depend on how many runs came before.
    Nondeterministic,
}

/// `MyStore` with one mistake.
struct Broken(Mistake);

/// Runs of the nondeterministic variant so far (the state it leaks).
static RUNS: AtomicU64 = AtomicU64::new(0);

impl Implementation for Broken {
    fn name(&self) -> &str {
        match self.0 {
            Mistake::NoDedup => "no_dedup_store",
            Mistake::SplitCommit => "split_commit_store",
            Mistake::Nondeterministic => "leaky_store",
        }
    }
    fn description(&self) -> &str {
        "my_store with a mistake"
    }
    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        let run = match self.0 {
            Mistake::Nondeterministic => RUNS.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        Ok(Box::new(BrokenSystem {
            inner: MySystem::create(config)?,
            mistake: self.0,
            shuffled: run % 2 == 1,
        }))
    }
}

struct BrokenSystem {
    inner: MySystem,
    mistake: Mistake,
    shuffled: bool,
}

impl System for BrokenSystem {
    fn open_store(&mut self, _who: &Who<'_>) -> Result<Box<dyn Store>> {
        Ok(Box::new(Altered {
            inner: self.inner.store()?,
            split: self.mistake == Mistake::SplitCommit,
            shuffled: self.shuffled,
        }))
    }
    fn open_receiver(&mut self, who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        Ok(match self.mistake {
            Mistake::NoDedup => Box::new(NoDedup(self.inner.receiver()?)),
            _ => self.inner.open_receiver(who)?,
        })
    }
    fn dump(&mut self) -> Result<Snapshot> {
        self.inner.dump()
    }
}

fn invariants(outcome: &RunOutcome) -> Vec<Invariant> {
    let mut found: Vec<Invariant> = outcome
        .failures()
        .flat_map(|result| {
            result
                .violations
                .iter()
                .map(|violation: &Violation| violation.invariant)
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn my_store_passes_a_shipped_scenario() {
    let outcome = Harness::new(&MyStore)
        .scenario("smoke")
        .unwrap()
        .seeds(0..6)
        .jobs(2)
        .run()
        .unwrap();
    assert!(outcome.passed(), "{outcome}");
    assert_eq!(outcome.results().len(), 6);
    assert!(
        outcome
            .results()
            .iter()
            .all(|result| result.scenario == "smoke+my_store")
    );
    assert_eq!(outcome.summary().store, "my_store");
    assert!(outcome.summary().kills.values().any(|count| count.fired > 0));
    assert!(outcome.report_dir().is_none());
    assert!(outcome.to_string().contains("6 seeds: 6 passed, 0 failed"), "{outcome}");
}

#[test]
fn a_receiver_without_dedup_fails_i2_with_a_replay_call_and_reports() {
    let reports = tempfile::tempdir().unwrap();
    let broken = Broken(Mistake::NoDedup);
    let harness = Harness::new(&broken)
        .scenario_text("small", SMALL)
        .unwrap()
        .seeds(0..6)
        .jobs(2)
        .report_dir(reports.path());
    let outcome = harness.run().unwrap();
    assert!(!outcome.passed());
    assert!(invariants(&outcome).contains(&Invariant::I2), "{outcome}");

    let failing = outcome.failures().next().unwrap();
    let seed = failing.seed;
    let replay = outcome.replay(seed).unwrap();
    assert_eq!(
        replay,
        format!(
            "Harness::new(&<no_dedup_store>).scenario_text(\"small\", <the same TOML>)?.replay({seed})? \
             // trace hash {}",
            failing.trace_hash
        )
    );
    let printed = outcome.to_string();
    assert!(printed.contains(&format!("fail: seed={seed} ")), "{printed}");
    assert!(printed.contains(&format!("note: replay with `{replay}`")), "{printed}");

    // The reports `crashsim run --report` writes, under the same names.
    let dir = reports.path().join("small+no_dedup_store");
    assert_eq!(outcome.report_dir(), Some(dir.as_path()));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["summary"], true);
    assert_eq!(summary["failed"], outcome.failures().count());
    let scenario = &summary["scenarios"][0];
    assert_eq!(scenario["store"], "no_dedup_store");
    assert_eq!(scenario["failing_seeds"][0]["replay"], replay);
    let xml = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let junit = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    let suite = &junit.test_suites[0];
    assert_eq!(suite.name.as_str(), "small+no_dedup_store");
    assert_eq!(suite.test_cases.len(), 1 + outcome.failures().count());
    let seed_dir = dir.join(seed.to_string());
    for file in ["result.json", "trace.jsonl", "trace.txt", "report.html"] {
        assert!(seed_dir.join(file).is_file(), "{file} missing");
    }
    assert!(dir.join("summary.md").is_file());

    // The replay gives the same run, with its trace.
    let again = harness.replay(seed).unwrap();
    assert_eq!(again.result().trace_hash, failing.trace_hash);
    assert_eq!(again.violations(), failing.violations.as_slice());
    let jsonl = std::fs::read_to_string(seed_dir.join("trace.jsonl")).unwrap();
    assert_eq!(again.trace_jsonl(), jsonl);
    assert!(again.to_string().contains("verdict: FAIL"));
}

#[test]
fn commands_committed_apart_from_the_event_fail_i5_or_i1() {
    let broken = Broken(Mistake::SplitCommit);
    let outcome = Harness::new(&broken)
        .scenario_text("small", SMALL)
        .unwrap()
        .seeds(0..6)
        .jobs(2)
        .run()
        .unwrap();
    let found = invariants(&outcome);
    assert!(
        found.contains(&Invariant::I5) || found.contains(&Invariant::I1),
        "{found:?}\n{outcome}"
    );
}

#[test]
fn determinism_is_checked_and_a_leaky_store_is_named() {
    let tiny = "[workload]\ntrips_count = 3\nwriters_count = 2\nworkers_count = 2\n[faults.net]\ndrop = \"1/10\"\n";
    let outcome = Harness::new(&MyStore)
        .scenario_text("tiny", tiny)
        .unwrap()
        .seeds([5])
        .check_determinism(true)
        .run()
        .unwrap();
    assert!(outcome.passed(), "{outcome}");

    let leaky = Broken(Mistake::Nondeterministic);
    let outcome = Harness::new(&leaky)
        .scenario_text("tiny", tiny)
        .unwrap()
        .seeds([5])
        .jobs(1)
        .check_determinism(true)
        .run()
        .unwrap();
    assert_eq!(invariants(&outcome), [Invariant::D1], "{outcome}");
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let error = Harness::new(&MyStore).scenario("no/such/scenario.toml").err().unwrap();
    assert!(matches!(error, HarnessError::Scenario(_)), "{error:?}");
    assert!(error.to_string().contains("smoke"), "names the built-ins: {error}");

    let error = Harness::new(&MyStore)
        .scenario_text("typo", "[workload]\nwriter_count = 3\n")
        .err()
        .unwrap();
    assert!(error.to_string().starts_with("<typo>:2:1: "), "{error}");

    let error = Harness::new(&MyStore).scenario_text("../up", "").err().unwrap();
    assert!(matches!(error, HarnessError::Invalid(_)), "{error:?}");

    let harness = || Harness::new(&MyStore).scenario_text("tiny", "").unwrap();
    for (harness, why) in [
        (harness().seeds([]), "no seeds"),
        (harness().jobs(0), "jobs must be at least 1"),
        (harness().work_dir("/no/such/dir"), "not a directory"),
    ] {
        let error = harness.run().err().unwrap();
        assert!(error.to_string().contains(why), "{error}");
    }
}

/// The reference under another name, whose connections ignore the VFS their
/// settings name: power loss cannot reach it. It borrows its name, so
/// nothing about it is `'static`.
struct PastTheVfs<'n> {
    name: &'n str,
}

impl Implementation for PastTheVfs<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "the reference, its files opened past the run's VFS"
    }
    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        let mut plain = config.clone();
        plain.store_sqlite.vfs = None;
        plain.receiver_sqlite.vfs = None;
        Ok(Box::new(crashsim::store::reference::ReferenceSystem::create(&plain)?))
    }
}

#[test]
fn power_loss_reaches_a_store_through_its_vfs_and_says_when_it_cannot() {
    let cut = "[workload]\ntrips_count = 2\nwriters_count = 1\nworkers_count = 1\nreceivers_count = 1\n\
               [[script]]\ntick = 30\npower_cut = true\n";
    let harness = |implementation| {
        Harness::new(implementation)
            .scenario_text("cut", cut)
            .unwrap()
            .seeds([0])
    };
    // The example opens every connection, its dump's too, through the VFS.
    let outcome = harness(&MyStore).run().unwrap();
    assert!(outcome.passed(), "{outcome}");
    let replay = harness(&MyStore).replay(0).unwrap();
    assert!(replay.trace().contains("POWER CUT"), "{replay}");
    assert!(replay.trace().contains("recovered"), "{replay}");

    let name = String::from("past_the_vfs");
    let error = harness(&PastTheVfs { name: &name }).run().err().unwrap();
    let message = error.to_string();
    assert!(
        message.contains("no write of past_the_vfs went through the crash VFS"),
        "{message}"
    );
}

/// Suspensions reach an in-process store through crashsim's VFS too: one
/// whose connections open around it is told so (exit code 2 on the
/// command line), never run as if its calls had been suspended.
#[test]
fn suspensions_reach_a_store_through_its_vfs_and_say_when_they_cannot() {
    let name = String::from("past_the_vfs");
    let store = PastTheVfs { name: &name };
    let harness = Harness::new(&store).scenario("interleave").unwrap().seeds([0]);
    let Err(error) = harness.run() else {
        panic!("a store around the VFS cannot be suspended");
    };
    let message = error.to_string();
    assert!(
        message.contains("suspends calls ([preempt]), but no call of past_the_vfs reached crashsim's VFS"),
        "{message}"
    );
}

/// An implementation whose code panics.
struct Panicky;

impl Implementation for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "panics while setting up"
    }
    fn system(&self, _config: &SystemConfig) -> Result<Box<dyn System>> {
        panic!("boom")
    }
}

#[test]
fn a_panic_in_the_store_is_an_error_naming_the_seed() {
    let error = Harness::new(&Panicky)
        .scenario_text("tiny", "")
        .unwrap()
        .seeds([3])
        .run()
        .err()
        .unwrap();
    assert!(
        matches!(&error, HarnessError::Panicked { seed: 3, message, .. } if message == "boom"),
        "{error:?}"
    );
    assert!(error.to_string().contains(".replay(3)?"), "{error}");
}
