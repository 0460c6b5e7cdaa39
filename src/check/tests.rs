//! Negative space: each checker rejects a hand-made violation of its
//! invariant, and the clean fixture passes them all.

use std::collections::BTreeSet;

use super::Invariant::{self, *};
use super::fixtures::{Fixture, clean};
use super::snapshot::Effect;
use crate::actors::{ActorId, Role};
use crate::model::StoredEvent;
use crate::store::Outcome;
use crate::trace::{Appended, Op, TraceEvent};

fn only(fixture: &Fixture, expected: &[Invariant]) {
    let found = fixture.invariants();
    let expected: BTreeSet<Invariant> = expected.iter().copied().collect();
    assert_eq!(found, expected, "violations: {:#?}", fixture.violations());
}

#[test]
fn the_clean_run_passes_every_checker() {
    let fixture = clean();
    assert_eq!(fixture.snapshot.events.len(), 8, "4 events per trip");
    assert_eq!(fixture.snapshot.outbox.len(), 8, "3 commands, then 3 + 2 compensations");
    only(&fixture, &[]);
}

#[test]
fn i1_rejects_a_command_never_marked_done() {
    let mut fixture = clean();
    fixture.row("trip-000:2:0").done = false;
    only(&fixture, &[I1]);
}

#[test]
fn i1_rejects_a_command_marked_done_without_an_effect() {
    let mut fixture = clean();
    fixture.snapshot.effects.retain(|effect| effect.key != "trip-001:4:1");
    only(&fixture, &[I1]);
}

#[test]
fn i1_rejects_a_result_no_effect_returned() {
    let mut fixture = clean();
    fixture.row("trip-000:1:0").result = Some(r#"{"token":"tok-999"}"#.into());
    only(&fixture, &[I1]);
}

#[test]
fn i1_and_i5_reject_an_event_committed_without_its_command() {
    let mut fixture = clean();
    fixture.snapshot.outbox.retain(|row| row.command_id != "trip-001:4:0");
    fixture.snapshot.effects.retain(|effect| effect.key != "trip-001:4:0");
    only(&fixture, &[I1, I5]);
}

#[test]
fn i5_rejects_an_outbox_row_without_its_event() {
    let mut fixture = clean();
    let mut orphan = fixture.snapshot.outbox[0].clone();
    orphan.command_id = "trip-000:9:0".into();
    orphan.event_seq = 9;
    fixture.snapshot.outbox.push(orphan);
    only(&fixture, &[I5]);
}

#[test]
fn i2_rejects_a_command_that_took_effect_twice() {
    let mut fixture = clean();
    let mut again: Effect = fixture.snapshot.effects[1].clone();
    again.effect_id = 100;
    fixture.snapshot.effects.push(again);
    only(&fixture, &[I2]);
}

#[test]
fn i2_follows_keys_that_are_not_the_command_id() {
    // A worker that invents a fresh key per attempt: two effects, two keys,
    // one command.
    let mut fixture = clean();
    let mut again: Effect = fixture.snapshot.effects[0].clone();
    again.effect_id = 100;
    again.key = "random-key-7".into();
    fixture.snapshot.effects.push(again);
    let worker = ActorId::new(Role::Worker, 1);
    fixture.push(
        worker,
        Op::Send {
            command_id: "trip-000:1:0".into(),
            key: "random-key-7".into(),
            to: ActorId::new(Role::Receiver, 0),
            attempt: 2,
        },
    );
    only(&fixture, &[I2]);
}

#[test]
fn i3_rejects_a_gap_in_seq() {
    let mut fixture = clean();
    for event in fixture
        .snapshot
        .events
        .iter_mut()
        .filter(|event| event.workflow_id == "trip-000")
    {
        if event.seq == 4 {
            event.seq = 5;
        }
    }
    // The hotel-booked event moved: the outbox rows of seq 4 (none) are unaffected.
    only(&fixture, &[I3]);
}

#[test]
fn i3_rejects_an_event_decided_from_a_stale_head() {
    // Two writers both recorded the budget lock: the second at seq 3.
    let mut fixture = clean();
    let budget = fixture.snapshot.events[1].clone();
    let stale = StoredEvent { seq: 5, ..budget };
    fixture.snapshot.events.insert(4, stale);
    let found = fixture.invariants();
    assert!(found.contains(&I3), "{:#?}", fixture.violations());
}

#[test]
fn i3_rejects_a_renumbered_append_and_a_double_commit() {
    let mut fixture = clean();
    let writer = ActorId::new(Role::Writer, 5);
    let Op::Commit { appended } = fixture.events[0].op.clone() else {
        panic!()
    };
    let renumbered = Appended {
        seq: 7,
        ..appended[0].clone()
    };
    fixture.push(
        writer,
        Op::Commit {
            appended: vec![renumbered],
        },
    );
    let found = fixture.violations();
    assert!(
        found
            .iter()
            .any(|v| v.invariant == I3 && v.message.contains("renumbered")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|v| v.invariant == I3 && v.message.contains("both committed")),
        "{found:#?}"
    );
    assert!(found.iter().all(|v| v.invariant == I3), "{found:#?}");
}

#[test]
fn i4_rejects_an_effect_without_a_committed_row() {
    let mut fixture = clean();
    let mut ghost = fixture.snapshot.effects[0].clone();
    ghost.effect_id = 100;
    ghost.key = "trip-009:1:0".into();
    fixture.snapshot.effects.push(ghost);
    only(&fixture, &[I4]);
}

#[test]
fn i6_rejects_a_decision_from_a_state_replay_does_not_give() {
    let mut fixture = clean();
    let Op::Commit { appended } = &mut fixture.events[0].op else {
        panic!()
    };
    appended[0].state = r#"{"trip_id":"trip-000","phase":"booked"}"#.into();
    only(&fixture, &[I6]);
}

#[test]
fn i6_rejects_a_replay_that_dispatches() {
    let mut fixture = clean();
    fixture.push(
        ActorId::new(Role::Writer, 2),
        Op::Dispatch {
            command_id: "trip-000:1:0".into(),
            to: ActorId::new(Role::Receiver, 0),
            replay: true,
        },
    );
    only(&fixture, &[I6]);
}

#[test]
fn i4_rejects_an_effect_applied_before_its_event_committed() {
    // The first effect (trip-000:1:0) is applied at tick 3; move the commit of
    // its event after it, as a writer that delivers before committing would.
    let mut fixture = clean();
    fixture.events[0].tick = 50;
    fixture.events.sort_by_key(|event| event.tick);
    let found = fixture.violations();
    assert!(
        found
            .iter()
            .any(|v| v.invariant == I4 && v.message.contains("before its event")),
        "{found:#?}"
    );
    only(&fixture, &[I4]);
}

/// The first event's commit suspended at tick 1 (after it landed, as a
/// `COMMIT` suspended at its WRITE unlock does), its clock stepped at tick
/// 2 with `clock_step`, answered at tick 5: the effect at tick 4 may
/// follow it.
fn commit_suspended_after_it_landed(clock_step: bool) -> Fixture {
    let writer = ActorId::new(Role::Writer, 0);
    let mut fixture = clean();
    fixture.events[0].tick = 5;
    let suspended = Op::Preempted {
        step: "commit".into(),
        point: "xShmLock WRITE exclusive unlock".into(),
        sql: Some("COMMIT".into()),
        meanwhile: Vec::new(),
    };
    fixture.events.push(TraceEvent {
        tick: 1,
        actor: writer,
        op: suspended,
    });
    if clock_step {
        let op = Op::ClockStep { by: -40, offset: -40 };
        fixture.events.push(TraceEvent {
            tick: 2,
            actor: writer,
            op,
        });
    }
    fixture.events.sort_by_key(|event| event.tick);
    fixture
}

#[test]
fn i4_counts_a_suspended_commit_from_its_suspension_through_a_clock_step() {
    only(&commit_suspended_after_it_landed(false), &[]);
    only(&commit_suspended_after_it_landed(true), &[]);
}

#[test]
fn i9_rejects_a_connection_opened_without_the_configured_synchronous() {
    let mut fixture = clean();
    fixture.push(
        ActorId::new(Role::Writer, 1),
        Op::Open {
            incarnation: 0,
            synchronous: Some(2),
        },
    );
    only(&fixture, &[]);
    fixture.push(
        ActorId::new(Role::Receiver, 0),
        Op::Open {
            incarnation: 1,
            synchronous: Some(1),
        },
    );
    only(&fixture, &[I9]);
}

#[test]
fn i7_rejects_a_probe_that_was_not_a_conflict_and_its_effect() {
    let mut fixture = clean();
    fixture.probe_reply("trip-000:1:0", Outcome::Conflict);
    only(&fixture, &[]);
    fixture.probe_reply("trip-000:1:0", Outcome::Applied { result: "{}".into() });
    let mut rogue = fixture.snapshot.effects[0].clone();
    rogue.effect_id = 100;
    rogue.payload = r#"{"probe":"1","trip_id":"trip-000"}"#.into();
    fixture.snapshot.effects.push(rogue);
    let found = fixture.violations();
    assert_eq!(found.iter().filter(|v| v.invariant == I7).count(), 2, "{found:#?}");
    only(&fixture, &[I7]);
}

#[test]
fn i9_rejects_a_failed_integrity_check() {
    let mut fixture = clean();
    fixture.snapshot.receiver_integrity = "row 3 missing from index".into();
    only(&fixture, &[I9]);
}

#[test]
fn i10_rejects_a_run_that_did_not_settle() {
    let mut fixture = clean();
    fixture.settled = false;
    fixture
        .snapshot
        .events
        .retain(|event| !(event.workflow_id == "trip-000" && event.seq == 4));
    let found = fixture.violations();
    assert_eq!(found.len(), 2, "the run, then its one stuck workflow: {found:#?}");
    assert!(found.iter().all(|violation| violation.invariant == I10));
    assert!(
        found[0].message.contains("trip-000 (flight_booked)"),
        "{}",
        found[0].message
    );
    assert_eq!(found[1].workflow_id.as_deref(), Some("trip-000"));
    assert!(found[1].message.contains("waits for a writer"), "{}", found[1].message);
}

/// Where each stuck workflow's command is stuck, one I10 violation each.
#[test]
fn i10_explains_each_stuck_workflow_by_its_command_state() {
    let mut fixture = clean();
    fixture.settled = false;
    // trip-000 waits on book_hotel (trip-000:3:0): applied, reply lost, pending.
    fixture.truncate("trip-000", 4);
    fixture.unmark("trip-000:3:0");
    // trip-001 waits on book_flight (trip-001:2:0): pending, never sent.
    fixture.truncate("trip-001", 3);
    fixture.unmark("trip-001:2:0");
    fixture.snapshot.effects.retain(|effect| effect.key != "trip-001:2:0");
    fixture
        .events
        .retain(|event| !matches!(&event.op, Op::Send { command_id, .. } if command_id == "trip-001:2:0"));
    let found = fixture.violations();
    let stuck: Vec<&super::Violation> = found
        .iter()
        .filter(|v| v.invariant == I10 && v.workflow_id.is_some())
        .collect();
    assert_eq!(stuck.len(), 2, "{found:#?}");
    assert_eq!(stuck[0].command_id.as_deref(), Some("trip-000:3:0"));
    assert!(
        stuck[0].message.contains("no confirmed reply") && stuck[0].message.contains("effect #"),
        "{}",
        stuck[0].message
    );
    assert_eq!(stuck[1].command_id.as_deref(), Some("trip-001:2:0"));
    assert!(stuck[1].message.contains("never delivered"), "{}", stuck[1].message);
    only(&fixture, &[I10]);
}

/// The mark-done audit runs whether or not the run settled: a row marked
/// done that no effect backs is a lost command (I1) even while the run is
/// stuck (I10), and the stuck workflow names it.
#[test]
fn i1_audits_rows_marked_done_on_runs_that_did_not_settle() {
    let mut fixture = clean();
    fixture.settled = false;
    fixture.truncate("trip-000", 3);
    fixture.snapshot.effects.retain(|effect| effect.key != "trip-000:2:0");
    fixture.row("trip-000:2:0").result = None;
    let found = fixture.violations();
    let lost: Vec<&super::Violation> = found.iter().filter(|v| v.invariant == I1).collect();
    assert_eq!(lost.len(), 1, "{found:#?}");
    assert_eq!(lost[0].command_id.as_deref(), Some("trip-000:2:0"));
    assert!(
        lost[0].message.contains("no receiver ever performed it"),
        "{}",
        lost[0].message
    );
    let stuck = found
        .iter()
        .find(|v| v.invariant == I10 && v.workflow_id.is_some())
        .expect("explained");
    assert!(
        stuck.message.contains("marked done without a result"),
        "{}",
        stuck.message
    );
    only(&fixture, &[I1, I10]);

    // A row done without a result, though its effect happened, is lost too.
    let mut fixture = clean();
    fixture.settled = false;
    fixture.row("trip-001:4:1").result = None;
    let found = fixture.violations();
    assert!(
        found
            .iter()
            .any(|v| v.invariant == I1 && v.message.contains("without a result")),
        "{found:#?}"
    );
}

/// Near-miss probes: another key is another operation. Applied is right
/// (its effect belongs to no command and is no ghost); the original's
/// result, or a conflict, is I7.
#[test]
fn i7_judges_near_miss_probes_as_other_operations() {
    use crate::workload::NearMiss;
    let near = "TRIP-000:1:0";
    let mut fixture = clean();
    fixture.push(
        ActorId::PROBER,
        Op::NearMiss {
            key: near.into(),
            of: "trip-000:1:0".into(),
            form: NearMiss::Case,
            to: ActorId::new(Role::Receiver, 0),
        },
    );
    let mut effect: Effect = fixture.snapshot.effects[0].clone();
    effect.effect_id = 100;
    effect.key = near.into();
    effect.result = r#"{"token":"tok-100"}"#.into();
    fixture.snapshot.effects.push(effect);
    fixture.probe_reply(
        near,
        Outcome::Applied {
            result: r#"{"token":"tok-100"}"#.into(),
        },
    );
    // A duplicated probe finds its own record.
    fixture.probe_reply(
        near,
        Outcome::Duplicate {
            result: r#"{"token":"tok-100"}"#.into(),
        },
    );
    only(&fixture, &[]);

    let original = fixture.snapshot.effects[0].result.clone();
    let mut folded = fixture_with_near_miss(near);
    folded.probe_reply(near, Outcome::Duplicate { result: original });
    only(&folded, &[I7]);
    assert!(folded.violations()[0].message.contains("in another case"));
    let mut conflict = fixture_with_near_miss(near);
    conflict.probe_reply(near, Outcome::Conflict);
    only(&conflict, &[I7]);
}

fn fixture_with_near_miss(near: &str) -> Fixture {
    let mut fixture = clean();
    fixture.push(
        ActorId::PROBER,
        Op::NearMiss {
            key: near.into(),
            of: "trip-000:1:0".into(),
            form: crate::workload::NearMiss::Case,
            to: ActorId::new(Role::Receiver, 0),
        },
    );
    fixture
}

/// A worker's own request called a conflict, with no other operation under
/// exactly its key: the receiver matched it to another key's record (I7).
#[test]
fn i7_rejects_a_conflict_no_operation_under_the_key_founded() {
    let mut fixture = clean();
    fixture.push(
        ActorId::new(Role::Worker, 0),
        Op::Reply {
            key: "trip-001:1:0".into(),
            outcome: Outcome::Conflict,
        },
    );
    only(&fixture, &[I7]);
    // A conflict founded on a rogue effect under that very key is the rogue's I7 only.
    let mut rogue = fixture.snapshot.effects[0].clone();
    rogue.effect_id = 100;
    rogue.key = "trip-001:1:0".into();
    rogue.payload = r#"{"probe":"1","trip_id":"trip-001"}"#.into();
    fixture.snapshot.effects.push(rogue);
    let found = fixture.violations();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("other core parameters"),
        "{}",
        found[0].message
    );
}

#[test]
fn a_violation_reads_a_workflow_id_with_colons_from_the_right() {
    let violation = super::Violation::new(I1, "x").command("trip:4:1:2:0");
    assert_eq!(violation.workflow_id.as_deref(), Some("trip:4:1"));
    assert_eq!(crate::model::Shown("trip-007:1:0").to_string(), "trip-007:1:0");
    assert_eq!(crate::model::Shown("trip s1 ").to_string(), "\"trip s1 \"");
    assert_eq!(crate::model::Shown("cafe\u{301}").to_string(), "\"cafe\\u{301}\"");
    assert_eq!(crate::model::Shown("\u{2126}").to_string(), "\"\\u{2126}\"");
    assert_ne!(
        crate::model::Shown("caf\u{e9}").to_string(),
        crate::model::Shown("cafe\u{301}").to_string()
    );
}

#[test]
fn a_long_id_is_shown_by_its_ends_its_length_and_a_digest() {
    use crate::model::{SHOWN_MAX, Shown};
    let exact = "x".repeat(SHOWN_MAX);
    assert_eq!(Shown(&exact).to_string(), exact);
    let long = format!("trip-{}:1:0", "a".repeat(300));
    let shown = Shown(&long).to_string();
    assert!(shown.starts_with("trip-aaaaaaaaaaaaaaaaaaa…[309 chars #"), "{shown}");
    assert!(shown.ends_with("]…aaaaaaaaaaaaaaaaaaaa:1:0"), "{shown}");
    assert!(shown.chars().count() < 80, "{shown}");
    // Two ids alike at both ends still read differently.
    let other = format!("trip-{}b{}:1:0", "a".repeat(150), "a".repeat(149));
    assert_eq!(other.chars().count(), long.chars().count());
    assert_ne!(Shown(&other).to_string(), shown);
    // Quoted and escaped as a short one is, whitespace at the ends visible.
    let spaced = format!(" {}\u{a0}", "b".repeat(100));
    let shown = Shown(&spaced).to_string();
    assert!(
        shown.starts_with("\" bbb") && shown.ends_with("bbb\\u{a0}\""),
        "{shown}"
    );
}

#[test]
fn files_sqlite_cannot_read_are_judged_by_integrity_alone() {
    let mut fixture = clean();
    fixture.snapshot = crate::store::Snapshot::unreadable("file is not a database".to_string());
    // Every row is gone from the dump, but only the damage is a verdict.
    only(&fixture, &[I9]);
}
