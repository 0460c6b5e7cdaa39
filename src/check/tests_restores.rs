//! The checkers across a restore (`[restore]`): a command derived again
//! under the same id is folded (no finding); under another id, the
//! receiver's second application of the same request is I2; a row the
//! restore took is no ghost while its event is not decided again.

use super::Invariant;
use super::fixtures::{Fixture, clean};
use crate::actors::{ActorId, Role};
use crate::model::command_id;
use crate::trace::Op;

const TRIP: &str = "trip-000";

/// The clean run, then a restore whose store lacks trip-000's first
/// command (its event was made after the backup), and trip-000's event
/// decided again: its command stored under `again`, sent and applied.
fn restored(again: &str) -> Fixture {
    let mut fixture = clean();
    let first = command_id(TRIP, 1, 0);
    let mut restored = fixture.snapshot.clone();
    restored.outbox.retain(|row| row.command_id != first);
    fixture.push(ActorId::SIM, Op::Restore { n: 1, backup: 1 });
    fixture.push(ActorId::SIM, Op::RolledBack { n: 1, events: Some(1) });
    fixture.restores.push(crate::sim::Recovery {
        tick: fixture.events.last().map_or(0, |event| event.tick),
        point: 0,
        snapshot: restored,
    });
    if again != first {
        let effect = fixture
            .snapshot
            .effects
            .iter()
            .find(|effect| effect.key == first)
            .cloned()
            .expect("the first command was applied");
        fixture.row(&first).command_id = again.to_string();
        fixture.push(
            ActorId::new(Role::Worker, 0),
            Op::Send {
                command_id: again.to_string(),
                key: again.to_string(),
                to: ActorId::new(Role::Receiver, 0),
                attempt: 1,
            },
        );
        let mut twice = effect;
        twice.effect_id += 1_000;
        twice.key = again.to_string();
        fixture.snapshot.effects.push(twice);
    }
    fixture
}

#[test]
fn a_command_derived_again_under_its_own_id_is_folded() {
    let fixture = restored(&command_id(TRIP, 1, 0));
    assert!(fixture.violations().is_empty(), "{:#?}", fixture.violations());
}

#[test]
fn a_command_derived_again_under_another_id_is_applied_twice() {
    let fixture = restored("b3c1f0e2-uuid");
    let violations = fixture.violations();
    let across = violations.iter().find(|violation| violation.invariant == Invariant::I2);
    assert!(
        across.is_some_and(|violation| violation.message.contains("restore #1")
            && violation.message.contains("b3c1f0e2-uuid")
            && violation.message.contains("two side effects")),
        "{violations:#?}"
    );
}

#[test]
fn a_row_a_restore_took_is_no_ghost_until_its_event_is_decided_again() {
    // The workflow never decided the event again (waiting on a dead letter,
    // say): the receiver keeps an effect whose row is gone.
    let mut fixture = restored(&command_id(TRIP, 1, 0));
    let first = command_id(TRIP, 1, 0);
    fixture.snapshot.outbox.retain(|row| row.command_id != first);
    let ghosts: Vec<_> = fixture
        .violations()
        .into_iter()
        .filter(|violation| violation.invariant == Invariant::I4)
        .collect();
    assert!(ghosts.is_empty(), "{ghosts:#?}");
    // Without the restore the same effect is a ghost.
    let mut unrestored = clean();
    unrestored.snapshot.outbox.retain(|row| row.command_id != first);
    assert!(unrestored.invariants().contains(&Invariant::I4));
}
