//! Answers judged at the time they were given (`alive.rs`): a power cut
//! that later takes the effect which made an answer right (a database on
//! NORMAL losing its unsynced tail) turns no right answer into a finding,
//! and an answer wrong when given stays wrong whatever came after.

use std::collections::BTreeSet;

use super::Invariant::{self, I1, I7};
use super::fixtures::{Fixture, clean};
use super::snapshot::Effect;
use crate::actors::{ActorId, Role};
use crate::store::Outcome;
use crate::trace::Op;
use crate::workload::NearMiss;

const KEY: &str = "trip-000:1:0";
const NEAR: &str = "TRIP-000:1:0";
const PROBED: &str = r#"{"probe":"1","trip_id":"trip-000"}"#;

fn receiver() -> ActorId {
    ActorId::new(Role::Receiver, 0)
}

fn worker() -> ActorId {
    ActorId::new(Role::Worker, 0)
}

fn only(fixture: &Fixture, expected: &[Invariant]) {
    let found = fixture.invariants();
    let expected: BTreeSet<Invariant> = expected.iter().copied().collect();
    assert_eq!(found, expected, "violations: {:#?}", fixture.violations());
}

fn result(effect_id: i64) -> String {
    format!(r#"{{"token":"tok-{effect_id}"}}"#)
}

/// A receiver takes up `from`'s request under `key`, applies it as
/// `effect_id` and commits (the effect is acknowledged); the answer is
/// given to `from` (and received, as a probe reply or a worker's reply).
fn applied(fixture: &mut Fixture, from: ActorId, key: &str, effect_id: i64) {
    let receiver = receiver();
    let result = result(effect_id);
    fixture.push(receiver, Op::Receive { key: key.into(), from });
    fixture.push(
        receiver,
        Op::Apply {
            key: key.into(),
            effect_id,
            result: result.clone(),
        },
    );
    fixture.push(receiver, Op::Commit { appended: Vec::new() });
    answered(fixture, from, key, Outcome::Applied { result });
}

/// A receiver answers `from`'s request under `key` with `outcome`
/// without applying anything, and `from` receives it.
fn answered(fixture: &mut Fixture, from: ActorId, key: &str, outcome: Outcome) {
    let receiver = receiver();
    if !matches!(outcome, Outcome::Applied { .. }) {
        fixture.push(receiver, Op::Receive { key: key.into(), from });
    }
    fixture.push(
        receiver,
        Op::Respond {
            key: key.into(),
            to: from,
            outcome: outcome.clone(),
        },
    );
    match from == ActorId::PROBER {
        true => fixture.probe_reply(key, outcome),
        false => fixture.push(
            from,
            Op::Reply {
                key: key.into(),
                outcome,
            },
        ),
    }
}

/// The power goes out; recovery finds the final dump without the effects
/// `taken` (the receiver's unsynced tail), which the final dump lacks too.
fn cut(fixture: &mut Fixture, taken: &[i64]) {
    fixture.push(
        ActorId::SIM,
        Op::PowerCut {
            point: 9,
            model: "drop_unsynced".into(),
        },
    );
    fixture
        .snapshot
        .effects
        .retain(|effect| !taken.contains(&effect.effect_id));
    let tick = fixture.events.last().unwrap().tick;
    let snapshot = fixture.snapshot.clone();
    fixture.recoveries.push(crate::sim::Recovery {
        tick,
        point: 9,
        snapshot,
    });
}

/// A worker marks `trip-000:1:0` done (after its effect committed): the
/// store keeps the mark through the cuts that follow.
fn marked(fixture: &mut Fixture) {
    fixture.push(
        worker(),
        Op::MarkDone {
            command_id: KEY.into(),
            changed: true,
            token: None,
        },
    );
}

/// The clean run, `trip-000:1:0` marked done, then a cut that takes its
/// effect (#1): the receiver no longer knows the key.
fn genuine_taken() -> Fixture {
    let mut fixture = clean();
    marked(&mut fixture);
    cut(&mut fixture, &[1]);
    fixture
}

/// The effect `effect_id` under `key` in the final dump, with `trip-000:1:0`'s
/// parameters or other ones.
fn dumped(fixture: &mut Fixture, key: &str, effect_id: i64, payload: Option<&str>) {
    let mut effect: Effect = fixture.snapshot.effects[0].clone();
    effect.effect_id = effect_id;
    effect.key = key.into();
    effect.result = result(effect_id);
    if let Some(payload) = payload {
        effect.payload = payload.into();
    }
    fixture.snapshot.effects.push(effect);
}

/// The clean run with a near-miss probe of `trip-000:1:0` applied as effect
/// #100, in the final dump.
fn near_miss_applied() -> Fixture {
    let mut fixture = clean();
    fixture.push(
        ActorId::PROBER,
        Op::NearMiss {
            key: NEAR.into(),
            of: KEY.into(),
            form: NearMiss::Case,
            to: receiver(),
        },
    );
    applied(&mut fixture, ActorId::PROBER, NEAR, 100);
    dumped(&mut fixture, NEAR, 100, None);
    fixture
}

#[test]
fn a_near_miss_repeat_whose_effect_a_later_cut_took_is_no_finding() {
    // Issue 37 §5: the duplicate was answered as a repeat of the probe's own
    // effect, rightly; the cut took that effect afterwards.
    let mut fixture = near_miss_applied();
    answered(
        &mut fixture,
        ActorId::PROBER,
        NEAR,
        Outcome::Duplicate { result: result(100) },
    );
    only(&fixture, &[]);
    cut(&mut fixture, &[100]);
    only(&fixture, &[]);
}

#[test]
fn a_near_miss_repeat_after_a_cut_took_its_effect_is_a_finding() {
    // By the time of the answer nothing under the key was left to repeat.
    let mut fixture = near_miss_applied();
    cut(&mut fixture, &[100]);
    answered(
        &mut fixture,
        ActorId::PROBER,
        NEAR,
        Outcome::Duplicate { result: result(100) },
    );
    only(&fixture, &[I7]);
    let message = &fixture.violations()[0].message;
    assert!(message.contains("answered as a repeat"), "{message}");
}

#[test]
fn a_near_miss_answered_with_the_original_keys_result_is_a_finding_before_and_after_a_cut() {
    let original = clean().snapshot.effects[0].result.clone();
    for taken in [false, true] {
        let mut fixture = near_miss_applied();
        answered(
            &mut fixture,
            ActorId::PROBER,
            NEAR,
            Outcome::Duplicate {
                result: original.clone(),
            },
        );
        if taken {
            // The cut takes the original's effect and the probe's: the answer was wrong all the same.
            marked(&mut fixture);
            cut(&mut fixture, &[1, 100]);
        }
        only(&fixture, &[I7]);
        let message = &fixture.violations()[0].message;
        assert!(
            message.contains("answered with the result of"),
            "taken {taken}: {message}"
        );
    }
}

#[test]
fn a_key_conflict_probe_applied_after_a_cut_took_the_genuine_effect_is_no_finding() {
    // The receiver lost its record of the key: the rogue request is new to it.
    let mut fixture = genuine_taken();
    applied(&mut fixture, ActorId::PROBER, KEY, 100);
    dumped(&mut fixture, KEY, 100, Some(PROBED));
    only(&fixture, &[]);
}

#[test]
fn a_key_conflict_probe_applied_before_a_cut_took_the_genuine_effect_is_a_finding() {
    let mut fixture = clean();
    applied(&mut fixture, ActorId::PROBER, KEY, 100);
    marked(&mut fixture);
    cut(&mut fixture, &[1]);
    only(&fixture, &[I7]);
    let message = &fixture.violations()[0].message;
    assert!(message.contains("applied as a new operation"), "{message}");
}

#[test]
fn a_conflict_founded_at_its_tick_stays_founded_after_a_cut() {
    // A rogue request took the key (applied and committed), the worker's own
    // request was rightly called a conflict, then a cut took the rogue's effect.
    let mut fixture = genuine_taken();
    applied(&mut fixture, ActorId::PROBER, KEY, 100);
    dumped(&mut fixture, KEY, 100, Some(PROBED));
    answered(&mut fixture, worker(), KEY, Outcome::Conflict);
    only(&fixture, &[]);
    cut(&mut fixture, &[100]);
    only(&fixture, &[]);
}

#[test]
fn a_conflict_founded_by_an_effect_only_a_recovery_showed_stays_founded() {
    // A rogue request's effect no `Apply` placed (its store was killed
    // inside the call, which committed): a cut's recovery shows it, the
    // worker's request is called a conflict, a later cut takes the effect.
    let mut fixture = genuine_taken();
    dumped(&mut fixture, KEY, 100, Some(PROBED));
    cut(&mut fixture, &[]);
    answered(&mut fixture, worker(), KEY, Outcome::Conflict);
    cut(&mut fixture, &[100]);
    only(&fixture, &[]);
}

#[test]
fn a_conflict_unfounded_at_its_tick_stays_unfounded_whatever_came_later() {
    // The worker's request was called a conflict while nothing else held the
    // key; a rogue effect applied under it later founds nothing.
    let mut fixture = genuine_taken();
    answered(&mut fixture, worker(), KEY, Outcome::Conflict);
    applied(&mut fixture, ActorId::PROBER, KEY, 100);
    dumped(&mut fixture, KEY, 100, Some(PROBED));
    only(&fixture, &[I7]);
    let message = &fixture.violations()[0].message;
    assert!(message.contains("as a key conflict"), "{message}");
}

#[test]
fn a_row_marked_done_while_its_effect_stood_is_backed_after_a_cut_took_the_effect() {
    // The receiver's tail (effect #1) is lost; the store kept the mark.
    let fixture = genuine_taken();
    only(&fixture, &[]);
    // A mark before the effect existed was never backed.
    let mut early = clean();
    let apply = early
        .events
        .iter()
        .position(|event| matches!(&event.op, Op::Apply { key, .. } if key == KEY))
        .unwrap();
    let tick = early.events[apply].tick;
    early.events.insert(
        apply,
        crate::trace::TraceEvent {
            tick,
            actor: worker(),
            op: Op::MarkDone {
                command_id: KEY.into(),
                changed: true,
                token: None,
            },
        },
    );
    cut(&mut early, &[1]);
    only(&early, &[I1]);
}

/// The clean run with `trip-000:1:0`'s `Apply` replaced by a kill of its
/// receiver inside the call (a `call` receiver killed through the VFS: the
/// effect may have committed, unsynced, and been answered from since), then
/// the row marked done again; `cut`: a power cut after the mark takes the
/// effect, which the final dump lacks.
fn killed_inside_then_marked(cut_after: bool) -> Fixture {
    let mut fixture = clean();
    let apply = fixture
        .events
        .iter()
        .position(|event| matches!(&event.op, Op::Apply { key, .. } if key == KEY))
        .unwrap();
    fixture.events[apply].op = Op::Kill {
        point: "receiver.before_effect_commit".into(),
    };
    marked(&mut fixture);
    if cut_after {
        cut(&mut fixture, &[1]);
    } else {
        fixture.snapshot.effects.retain(|effect| effect.effect_id != 1);
    }
    fixture
}

#[test]
fn a_mark_resting_on_an_effect_a_kill_inside_the_call_left_unsynced_is_not_blamed_after_a_cut() {
    let blamed = |fixture: &Fixture| {
        fixture
            .violations()
            .into_iter()
            .any(|violation| violation.invariant == I1 && violation.message.contains("no receiver ever performed it"))
    };
    // The power went out after the mark: the effect the answer rested on
    // may have been the killed call's, never synced. Neither bound judges it.
    assert!(!blamed(&killed_inside_then_marked(true)));
    // No cut: nothing could take a committed effect back; the row was marked
    // done on nothing.
    assert!(blamed(&killed_inside_then_marked(false)));
}
