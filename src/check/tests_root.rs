//! The first violation names the cause (`order`), and messages that say
//! what happened once: the I1 wording, a re-encoded payload that is no
//! finding, a changed one that says so, an I6 whose evidence begins at the
//! writer's replay.

use super::Invariant::{self, *};
use super::fixtures::clean;
use super::{Violation, order};
use crate::actors::{ActorId, Role};
use crate::trace::{Op, TraceEvent};

fn at(invariant: Invariant, message: &str, ticks: &[u64]) -> Violation {
    Violation::new(invariant, message).ticks(ticks.iter().copied())
}

#[test]
fn the_violation_with_the_earliest_evidence_comes_first() {
    let expected = vec![
        at(I6, "decided from a state replay does not give", &[40, 90]),
        at(I3, "does not follow: a stale head", &[90]),
        at(I1, "b: never marked done", &[120]),
        at(I2, "took effect twice", &[120]),
        at(I1, "a: no tick", &[]),
        at(I9, "integrity_check", &[]),
    ];
    // Whatever order the checkers produced them in.
    let mut reversed: Vec<Violation> = expected.iter().rev().cloned().collect();
    order(&mut reversed);
    assert_eq!(reversed, expected);
    let mut by_invariant = expected.clone();
    by_invariant.sort_by_key(|violation| violation.invariant);
    order(&mut by_invariant);
    assert_eq!(by_invariant, expected);
}

#[test]
fn ties_are_broken_by_invariant_then_message() {
    let mut found = vec![
        at(I5, "z", &[7]),
        at(I5, "a", &[7, 9]),
        at(I1, "m", &[7]),
        at(I5, "a", &[7]),
    ];
    order(&mut found);
    let keys: Vec<(Invariant, &str, usize)> = found
        .iter()
        .map(|violation| (violation.invariant, violation.message.as_str(), violation.ticks.len()))
        .collect();
    assert_eq!(keys, [(I1, "m", 1), (I5, "a", 1), (I5, "a", 2), (I5, "z", 1)]);
}

#[test]
fn i1_says_but_once_when_a_sent_command_was_never_performed() {
    let mut fixture = clean();
    fixture.snapshot.effects.retain(|effect| effect.key != "trip-001:4:1");
    let found = fixture.violations();
    let lost = found.iter().find(|v| v.invariant == I1).expect("lost");
    assert_eq!(lost.message.matches("but").count(), 1, "{}", lost.message);
    assert!(
        lost.message
            .contains("is marked done, but no receiver ever performed it (it was sent at tick "),
        "{}",
        lost.message
    );
}

#[test]
fn a_payload_stored_as_equal_json_in_other_bytes_is_no_finding() {
    let mut fixture = clean();
    let row = fixture.row("trip-000:2:0");
    let spaced = row.payload.replace("\":\"", "\": \"").replace("\",\"", "\", \"");
    assert_ne!(spaced, row.payload);
    row.payload = spaced;
    assert_eq!(fixture.violations(), []);
}

#[test]
fn a_changed_payload_is_named_as_one() {
    let mut fixture = clean();
    let row = fixture.row("trip-000:2:0");
    row.payload = row.payload.replace("Oslo", "Bergen");
    let found = fixture.violations();
    let changed = found.iter().find(|v| v.invariant == I5).expect("I5");
    assert!(
        changed
            .message
            .contains("the stored payload differs from the one appended"),
        "{}",
        changed.message
    );
    assert!(!changed.ticks.is_empty(), "the commit of its event is its evidence");
}

#[test]
fn i6_evidence_begins_at_the_writers_replay() {
    let mut fixture = clean();
    let writer = ActorId::new(Role::Writer, 0);
    // The commit of trip-000#3, and a load of trip-000 by its writer just before it.
    let index = fixture
        .events
        .iter()
        .position(|event| matches!(&event.op, Op::Commit { appended } if appended.first().is_some_and(|append| append.seq == 3)))
        .unwrap();
    let commit_tick = fixture.events[index].tick;
    let load_tick = fixture.events[index - 1].tick;
    assert!(load_tick < commit_tick);
    // The load answers the committed history (judged by `answers`).
    let events = fixture
        .snapshot
        .events
        .iter()
        .filter(|event| event.workflow_id == "trip-000" && event.seq <= 2)
        .map(|event| crate::trace::Loaded {
            seq: event.seq,
            kind: event.kind.clone(),
            workflow_id: None,
        })
        .collect();
    fixture.events.insert(
        index,
        TraceEvent {
            tick: load_tick,
            actor: writer,
            op: Op::Load {
                workflow_id: "trip-000".into(),
                last_seq: 2,
                phase: "budget_locked".into(),
                events,
            },
        },
    );
    let Op::Commit { appended } = &mut fixture.events[index + 1].op else {
        panic!()
    };
    appended[0].state = r#"{"trip_id":"trip-000","phase":"requested"}"#.into();
    let found = fixture.violations();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].invariant, I6);
    assert_eq!(found[0].ticks, [load_tick, commit_tick]);
}

#[test]
fn a_command_stored_under_another_id_is_explained_as_such() {
    let mut fixture = clean();
    fixture.settled = false;
    fixture.truncate("trip-000", 3);
    fixture.row("trip-000:2:0").command_id = "cmd-1700000000".into();
    for effect in &mut fixture.snapshot.effects {
        if effect.key == "trip-000:2:0" {
            effect.key = "cmd-1700000000".into();
        }
    }
    let found = fixture.violations();
    let stuck = found
        .iter()
        .find(|v| v.invariant == I10 && v.workflow_id.as_deref() == Some("trip-000"))
        .expect("explained");
    assert!(
        stuck
            .message
            .contains("no row under its id, but a row under an id no decided command has (cmd-1700000000)"),
        "{}",
        stuck.message
    );
    assert!(!stuck.message.contains("never enqueued"), "{}", stuck.message);
    let missing = found.iter().find(|v| v.invariant == I5).expect("I5");
    assert!(
        missing.message.contains("(cmd-1700000000) stands in its place"),
        "{}",
        missing.message
    );
}
