//! Negative space: each checker rejects a hand-made violation of its
//! invariant, and the clean fixture passes them all.

use std::collections::BTreeSet;

use super::Invariant::{self, *};
use super::fixtures::{Fixture, clean};
use super::snapshot::Effect;
use crate::actors::{ActorId, Role};
use crate::model::StoredEvent;
use crate::store::Outcome;
use crate::trace::{Appended, Op};

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
            .any(|v| v.invariant == I3 && v.message.contains("all committed")),
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
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].invariant, I10);
    assert!(
        found[0].message.contains("trip-000 (flight_booked)"),
        "{}",
        found[0].message
    );
}

#[test]
fn files_sqlite_cannot_read_are_judged_by_integrity_alone() {
    let mut fixture = clean();
    fixture.snapshot = crate::store::Snapshot::unreadable("file is not a database".to_string());
    // Every row is gone from the dump, but only the damage is a verdict.
    only(&fixture, &[I9]);
}
