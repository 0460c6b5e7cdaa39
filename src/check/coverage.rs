//! Coverage: what a run actually exercised, next to what its scenario
//! declared.
//!
//! An invariant is only as strong as the situations it was judged in: "one
//! side effect per command_id" says nothing about a run in which no command
//! reached a receiver twice. So each seed records which invariants met
//! their situation (`exercised`, read from the trace), and which faults
//! fired, by kind; a scenario says which it expects (`declared_faults`,
//! `required`). A gap (declared, never seen across a whole run) is a
//! warning in the summary, and a failure under `--require-fired`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Invariant;
use crate::faults::{Fault, Injected, KillPoint};
use crate::scenario::Scenario;
use crate::trace::{Op, TraceEvent};

/// The invariants coverage speaks of: the protocol's, I1–I11 (A1 and D1
/// are judged by the way a run is made, not by what its faults did).
pub fn invariants() -> impl Iterator<Item = Invariant> {
    Invariant::ALL
        .into_iter()
        .filter(|invariant| !matches!(invariant, Invariant::A1 | Invariant::D1))
}

/// The situation each invariant guards, in words (for messages and docs).
pub fn situation(invariant: Invariant) -> &'static str {
    match invariant {
        Invariant::I1 => "a command was enqueued and an actor was killed or the power cut",
        Invariant::I2 => "a receiver got the same key more than once",
        Invariant::I3 => "a writer's append was rejected as stale",
        Invariant::I4 | Invariant::I5 => "a transaction ended without a commit (rolled back, killed or cut)",
        Invariant::I6 => "a writer replayed a workflow's events",
        Invariant::I7 => "a receiver got a key-conflict probe or a near miss",
        Invariant::I8 => "a worker claimed rows under a lease",
        Invariant::I9 => "the power was cut and restored",
        Invariant::I10 => "the run settled after its faults stopped",
        Invariant::I11 => "a backup completed",
        Invariant::A1 | Invariant::D1 => "",
    }
}

/// The invariants whose situation arose in this trace.
pub fn exercised(events: &[TraceEvent]) -> BTreeSet<Invariant> {
    let mut seen = BTreeSet::new();
    let (mut commands, mut interrupted) = (false, false);
    let mut received: BTreeMap<&str, u32> = BTreeMap::new();
    // Actors inside a transaction (after Begin, before Commit or Rollback).
    let mut open = BTreeSet::new();
    for event in events {
        match &event.op {
            Op::InsertCommand { .. } => commands = true,
            Op::Begin => {
                open.insert(event.actor);
            }
            Op::Commit { appended } => {
                open.remove(&event.actor);
                // A `call` append records its commands only here.
                commands |= appended.iter().any(|append| !append.command_ids.is_empty());
            }
            Op::Rollback => {
                open.remove(&event.actor);
                seen.extend([Invariant::I4, Invariant::I5]);
            }
            Op::Kill { point } => {
                interrupted = true;
                // Killed inside a transaction: one opened step by step, or
                // one `call` the kill landed inside (through the VFS).
                let inside_a_call = [KillPoint::WriterBeforeCommit, KillPoint::ReceiverBeforeEffectCommit]
                    .iter()
                    .any(|inside| inside.name() == point);
                if open.remove(&event.actor) || inside_a_call {
                    seen.extend([Invariant::I4, Invariant::I5]);
                }
            }
            Op::PowerCut { .. } => {
                interrupted = true;
                if !open.is_empty() {
                    seen.extend([Invariant::I4, Invariant::I5]);
                }
                open.clear();
            }
            Op::Restored { .. } => {
                seen.insert(Invariant::I9);
            }
            Op::Receive { key, .. } => {
                let count = received.entry(key.as_str()).or_default();
                *count += 1;
                if *count == 2 {
                    seen.insert(Invariant::I2);
                }
            }
            Op::Conflict { .. } => {
                seen.insert(Invariant::I3);
            }
            Op::Load { .. } => {
                seen.insert(Invariant::I6);
            }
            Op::Probe { .. } | Op::NearMiss { .. } => {
                seen.insert(Invariant::I7);
            }
            Op::Claim { .. } => {
                seen.insert(Invariant::I8);
            }
            Op::Settled | Op::Stalled { .. } => {
                seen.insert(Invariant::I10);
            }
            Op::BackedUp { .. } => {
                seen.insert(Invariant::I11);
            }
            _ => {}
        }
    }
    if commands && interrupted {
        seen.insert(Invariant::I1);
    }
    seen
}

/// What became of a seed's backups (`[backup]`), read from its trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backups {
    /// Backups begun.
    pub begun: u64,
    /// Completed, and judged after the run (I11).
    pub completed: u64,
    /// Cut short by a power cut that fell inside them.
    pub cut: u64,
    /// Its process killed inside it (`backup.kill`, outside stores).
    #[serde(default)]
    pub killed: u64,
    /// Failed with the store's error (not judged).
    pub failed: u64,
    /// Copied in parts, with a restore between two of them (not judged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned: u64,
    /// Restores made from a backup (`[restore]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restored: u64,
    /// Events the restores rolled back (made after their backup): no finding.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rolled_back: u64,
    /// Restores skipped: no backup had completed by the end of the faults.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restores_skipped: u64,
    /// Restores that could not read their backup (I11 judges it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restores_failed: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Backups {
    /// The counts in `events`.
    pub fn of(events: &[TraceEvent]) -> Backups {
        let mut backups = Backups::default();
        for (index, event) in events.iter().enumerate() {
            match event.op {
                Op::Backup { .. } => {
                    backups.begun += 1;
                    if events
                        .get(index + 1)
                        .is_some_and(|next| matches!(next.op, Op::PowerCut { .. }))
                    {
                        backups.cut += 1;
                    }
                }
                Op::BackedUp { .. } => backups.completed += 1,
                Op::BackupFailed { .. } => backups.failed += 1,
                Op::BackupKilled { .. } => backups.killed += 1,
                // Between two parts: cut short as an operator's script is.
                Op::BackupAbandoned { restored: false, .. } => backups.cut += 1,
                Op::BackupAbandoned { restored: true, .. } => backups.abandoned += 1,
                Op::RolledBack { events, .. } => {
                    backups.restored += 1;
                    backups.rolled_back += events.unwrap_or(0);
                }
                Op::RestoreSkipped { .. } => backups.restores_skipped += 1,
                Op::RestoreFailed { .. } => backups.restores_failed += 1,
                _ => {}
            }
        }
        backups
    }

    pub fn add(&mut self, other: &Backups) {
        self.begun += other.begun;
        self.completed += other.completed;
        self.cut += other.cut;
        self.killed += other.killed;
        self.failed += other.failed;
        self.abandoned += other.abandoned;
        self.restored += other.restored;
        self.rolled_back += other.rolled_back;
        self.restores_skipped += other.restores_skipped;
        self.restores_failed += other.restores_failed;
    }

    /// One line for the run's summary: "backups: 12 begun, 10 completed and
    /// judged (I11), 2 cut short by a power cut".
    pub fn describe(&self) -> String {
        let mut parts = vec![
            format!("{} begun", self.begun),
            format!("{} completed and judged (I11)", self.completed),
        ];
        if self.cut > 0 {
            parts.push(format!("{} cut short by a power cut", self.cut));
        }
        if self.killed > 0 {
            parts.push(format!("{} killed inside (their process)", self.killed));
        }
        if self.failed > 0 {
            parts.push(format!("{} failed (the store's error, not judged)", self.failed));
        }
        if self.abandoned > 0 {
            parts.push(format!("{} abandoned (a restore between two parts)", self.abandoned));
        }
        let mut line = format!("backups: {}", parts.join(", "));
        if self.restored + self.restores_skipped + self.restores_failed > 0 {
            line.push_str(&format!(
                "; restores: {} made, rolling back {} event(s) made after their backup (no finding)",
                self.restored, self.rolled_back
            ));
            if self.restores_skipped > 0 {
                line.push_str(&format!(
                    ", {} skipped (no backup completed in the fault phase)",
                    self.restores_skipped
                ));
            }
            if self.restores_failed > 0 {
                line.push_str(&format!(
                    ", {} failed (their backup unreadable: judged by I11)",
                    self.restores_failed
                ));
            }
        }
        line
    }
}

/// The kinds of fault besides kills, by the name coverage reports them under.
pub const FAULTS: [&str; 10] = [
    "drop",
    "duplicate",
    "key_conflict",
    "near_miss",
    "power_cut",
    "pause",
    "receiver_retryable",
    "net_retryable",
    "skew",
    "clock_step",
];

/// The name of an injected fault's kind; `None` for kills (counted per
/// kill point) and suspensions (per kind of scheduling point).
pub fn fault_kind(fault: &Fault) -> Option<&'static str> {
    Some(match fault {
        // Suspensions have coverage of their own (`report::suspensions`).
        Fault::Kill { .. } | Fault::Preempt { .. } => return None,
        Fault::Drop { .. } => "drop",
        Fault::Duplicate { .. } => "duplicate",
        Fault::Probe { .. } => "key_conflict",
        Fault::NearMiss { .. } => "near_miss",
        Fault::PowerCut { .. } => "power_cut",
        Fault::Pause { .. } => "pause",
        Fault::Refuse { .. } => "receiver_retryable",
        Fault::ReplyRetryable { .. } => "net_retryable",
        Fault::Skew { .. } => "skew",
        Fault::ClockStep { .. } => "clock_step",
    })
}

/// Faults that fired in one seed, by kind.
pub fn fired(injected: &[Injected]) -> BTreeMap<&'static str, u64> {
    let mut fired = BTreeMap::new();
    for kind in injected.iter().filter_map(|injected| fault_kind(&injected.fault)) {
        *fired.entry(kind).or_default() += 1;
    }
    fired
}

/// The fault kinds (besides kills) a scenario turns on.
pub fn declared_faults(scenario: &Scenario) -> BTreeSet<&'static str> {
    let plan = scenario.fault_plan();
    let on = [
        ("drop", !plan.net_drop.is_zero()),
        ("duplicate", !plan.net_duplicate.is_zero()),
        ("key_conflict", !plan.key_conflict.is_zero()),
        ("near_miss", !plan.near_miss.is_zero()),
        ("power_cut", scenario.power_enabled()),
        ("pause", !plan.pause.is_zero()),
        ("receiver_retryable", !plan.receiver_retryable.is_zero()),
        ("net_retryable", !plan.net_retryable.is_zero()),
        ("skew", plan.skew_ticks > 0),
        ("clock_step", !plan.clock_step.is_zero()),
    ];
    on.into_iter().filter(|(_, on)| *on).map(|(kind, _)| kind).collect()
}

/// The invariants a scenario's faults and workload must exercise in a run
/// of many seeds: each whose situation those faults make (I6 and I10 every
/// run does), against a store that cannot reach the kill points `unreachable`.
pub fn required(scenario: &Scenario, unreachable: &[KillPoint]) -> BTreeSet<Invariant> {
    let mut declared = scenario.faults.declared();
    declared.retain(|point| !unreachable.contains(point));
    let faults = declared_faults(scenario);
    let power = scenario.power_enabled();
    let kills = !declared.is_empty();
    let redelivers = declared
        .iter()
        .any(|point| !matches!(point, KillPoint::WriterBeforeCommit | KillPoint::WriterAfterCommit))
        || ["drop", "duplicate", "net_retryable"]
            .iter()
            .any(|kind| faults.contains(kind));
    let torn = power || declared.contains(&KillPoint::WriterBeforeCommit);
    let rules = [
        (Invariant::I1, kills || power),
        (Invariant::I2, redelivers),
        (Invariant::I3, scenario.workload.writers_count > 1),
        (Invariant::I4, torn),
        (Invariant::I5, torn),
        (Invariant::I6, true),
        (
            Invariant::I7,
            faults.contains("key_conflict") || faults.contains("near_miss"),
        ),
        (Invariant::I8, scenario.leases.is_some()),
        (Invariant::I9, power),
        (Invariant::I10, true),
        (Invariant::I11, scenario.backup.is_some()),
    ];
    rules
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(invariant, _)| invariant)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::{ActorId, Role};

    fn at(actor: ActorId, op: Op) -> TraceEvent {
        TraceEvent { tick: 0, actor, op }
    }

    #[test]
    fn a_kill_inside_a_transaction_exercises_atomicity_and_a_kill_after_it_does_not() {
        let writer = ActorId::new(Role::Writer, 0);
        let killed = |point: &str| Op::Kill {
            point: point.to_string(),
        };
        let inside = exercised(&[
            at(writer, Op::InsertCommand { command_id: "c".into() }),
            at(writer, Op::Begin),
            at(writer, killed("writer_before_commit")),
        ]);
        assert!(inside.contains(&Invariant::I5) && inside.contains(&Invariant::I1));
        let after = exercised(&[
            at(writer, Op::Begin),
            at(writer, Op::Commit { appended: Vec::new() }),
            at(writer, killed("writer_after_commit")),
        ]);
        assert!(!after.contains(&Invariant::I5));
        assert!(!after.contains(&Invariant::I1), "no command was enqueued");
    }

    #[test]
    fn a_call_append_with_commands_and_a_kill_exercise_no_lost_command() {
        // At `call` granularity an append is one call: no `InsertCommand`
        // line, its commands only in the commit.
        let writer = ActorId::new(Role::Writer, 0);
        let append = |command_ids: Vec<String>| Op::Commit {
            appended: vec![crate::trace::Appended {
                workflow_id: "w".into(),
                expected_seq: 0,
                seq: 1,
                kind: "trip_requested".into(),
                state: "{}".into(),
                command_ids,
            }],
        };
        let kill = Op::Kill {
            point: "worker.after_deliver".into(),
        };
        let call = exercised(&[at(writer, append(vec!["w:1:0".into()])), at(writer, kill.clone())]);
        assert!(call.contains(&Invariant::I1), "{call:?}");
        let none = exercised(&[at(writer, append(Vec::new())), at(writer, kill)]);
        assert!(!none.contains(&Invariant::I1), "no command was enqueued");
    }

    #[test]
    fn a_key_received_twice_exercises_one_effect_per_command() {
        let receiver = ActorId::new(Role::Receiver, 0);
        let got = |key: &str| Op::Receive {
            key: key.to_string(),
            from: ActorId::new(Role::Worker, 0),
        };
        assert!(!exercised(&[at(receiver, got("a")), at(receiver, got("b"))]).contains(&Invariant::I2));
        assert!(exercised(&[at(receiver, got("a")), at(receiver, got("a"))]).contains(&Invariant::I2));
    }

    #[test]
    fn the_smoke_scenario_requires_what_its_faults_make() {
        let scenario = crate::scenario::builtin::find(std::path::Path::new("smoke"))
            .expect("built in")
            .load()
            .expect("loads")
            .scenario;
        let required = required(&scenario, &[]);
        for invariant in [
            Invariant::I1,
            Invariant::I2,
            Invariant::I3,
            Invariant::I7,
            Invariant::I10,
        ] {
            assert!(required.contains(&invariant), "{invariant}");
        }
        assert!(!required.contains(&Invariant::I9), "smoke has no power loss");
        assert!(!required.contains(&Invariant::I8), "smoke has no leases");
        let call = super::required(&scenario, &[KillPoint::WriterBeforeCommit]);
        assert!(
            !call.contains(&Invariant::I5),
            "a store of call granularity has no moment inside a commit"
        );
        assert!(FAULTS.iter().all(|kind| !kind.is_empty()));
        for kind in declared_faults(&scenario) {
            assert!(FAULTS.contains(&kind));
        }
    }
}
