//! I1 no lost command, I5 atomic append.
//!
//! I5: every committed event has exactly the commands the reference `decide`
//! emits for it, stored under their derived ids with their kind and
//! payload (a payload compared as JSON: re-encoded, it is the same; changed,
//! it is "the stored payload differs from the one appended"), and every
//! outbox row has its event. I1: every such command is in the outbox; every row marked done
//! (on every run, settled or not: the mark-done audit) is backed by an
//! effect of its own command at a receiver, with the result it was marked
//! with, when it was marked (an effect a later power cut took backed it
//! all the same: `alive.rs`); and once the run has settled every row is
//! done, unless it was dead-lettered (manual handling, `retries.rs`).

use crate::model::Shown;
use std::collections::{BTreeMap, BTreeSet};

use super::snapshot::Effect;
use super::{History, Input, Invariant, Violation};
use crate::model::command_id;
use crate::trace::Op;
use crate::workflow::{Trip, decide, payload};

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let snapshot = input.snapshot;
    let rows = snapshot.rows_by_id();
    let by_workflow = snapshot.events_by_workflow();

    // Every command each committed event emits is in the outbox, as emitted.
    for (workflow_id, events) in &by_workflow {
        let mut trip = Trip::new(workflow_id);
        for event in events {
            // A history that stops folding is the I3 checker's to report.
            let Ok((next, commands)) = decide(&trip, &event.event()) else {
                break;
            };
            for (index, command) in commands.iter().enumerate() {
                let id = command_id(workflow_id, event.seq, index);
                let ticks = history
                    .commit_tick(workflow_id, event.seq)
                    .or_else(|| written_at(input, workflow_id, event.seq));
                match rows.get(id.as_str()) {
                    None => {
                        let mut what = format!(
                            "event {workflow_id_shown}#{} ({}) is committed without its command {id_shown} ({})",
                            event.seq,
                            event.kind,
                            command.kind,
                            workflow_id_shown = Shown(workflow_id),
                            id_shown = Shown(&id)
                        );
                        if let Some(stray) = super::stuck::under_another_id(snapshot, &id, &command.kind) {
                            what.push_str(&format!(
                                ": a row under an id no decided command has ({}) stands in its place",
                                Shown(&stray.command_id)
                            ));
                        }
                        violations.push(
                            Violation::new(Invariant::I5, what.clone())
                                .command(&id)
                                .seq(event.seq)
                                .ticks(ticks),
                        );
                        violations.push(
                            Violation::new(
                                Invariant::I1,
                                format!("{id_shown} was never enqueued: {what}", id_shown = Shown(&id)),
                            )
                            .command(&id)
                            .seq(event.seq)
                            .ticks(ticks),
                        );
                    }
                    Some(row) if row.kind != command.kind => {
                        violations.push(
                            Violation::new(
                                Invariant::I5,
                                format!(
                                    "{id_shown} is stored as {} {}, but event {workflow_id_shown}#{} emits {} {}",
                                    row.kind,
                                    row.payload,
                                    event.seq,
                                    command.kind,
                                    command.payload,
                                    id_shown = Shown(&id),
                                    workflow_id_shown = Shown(workflow_id)
                                ),
                            )
                            .command(&id)
                            .seq(event.seq)
                            .ticks(ticks),
                        );
                    }
                    // Equal JSON in other bytes is the same payload.
                    Some(row) if !payload::same(&row.payload, &command.payload) => {
                        violations.push(
                            Violation::new(
                                Invariant::I5,
                                format!(
                                    "{id_shown} ({}): the stored payload differs from the one appended: stored {}, \
                                     event {workflow_id_shown}#{} emits {}",
                                    row.kind,
                                    row.payload,
                                    event.seq,
                                    command.payload,
                                    id_shown = Shown(&id),
                                    workflow_id_shown = Shown(workflow_id)
                                ),
                            )
                            .command(&id)
                            .seq(event.seq)
                            .ticks(ticks),
                        );
                    }
                    Some(_) => {}
                }
            }
            trip = next;
        }
    }

    // Every outbox row has its event.
    let stored: BTreeSet<(&str, u64)> = snapshot
        .events
        .iter()
        .map(|event| (event.workflow_id.as_str(), event.seq))
        .collect();
    for row in &snapshot.outbox {
        if !stored.contains(&(row.workflow_id.as_str(), row.event_seq)) {
            violations.push(
                Violation::new(
                    Invariant::I5,
                    format!(
                        "outbox row {} ({}) has no event {}#{}",
                        Shown(&row.command_id),
                        row.kind,
                        Shown(&row.workflow_id),
                        row.event_seq
                    ),
                )
                .command(&row.command_id)
                .seq(row.event_seq),
            );
        }
    }

    // The mark-done audit, on every run: a row marked done is backed by an
    // effect of its own command with the result it was marked with. Once
    // drained, every row is done.
    let mut effects: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &snapshot.effects {
        effects.entry(history.command_of(&effect.key)).or_default().push(effect);
    }
    // Rows without their event are I5's; I1 is about commands of committed events.
    // A dead-lettered row waits for a person: neither done nor performed
    // is demanded of it (`retries.rs` judges the dead letter).
    let dead = snapshot.dead_lettered();
    let owned = snapshot
        .outbox
        .iter()
        .filter(|row| stored.contains(&(row.workflow_id.as_str(), row.event_seq)))
        .filter(|row| !dead.contains_key(row.command_id.as_str()));
    for row in owned {
        let id = row.command_id.as_str();
        let performed = effects.get(id).map(Vec::as_slice).unwrap_or_default();
        let sent = history.first_send.get(id).copied();
        let marked = history.mark_tick(id);
        if !row.done {
            if input.settled {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!("{id_shown} ({}) was never marked done", row.kind, id_shown = Shown(id)),
                    )
                    .command(id)
                    .ticks(sent),
                );
            }
        } else if row.result.as_deref().is_some_and(|result| {
            !performed.iter().any(|effect| effect.result == result) && history.backed_when_marked(id, result)
        }) {
            // Backed by its effect when it was marked; a power cut took the
            // effect since (I9's, where the receiver promises durability).
        } else if performed.is_empty() {
            let delivered = match sent {
                Some(tick) => format!("no receiver ever performed it (it was sent at tick {tick})"),
                None => "it was never even sent".to_string(),
            };
            violations.push(
                Violation::new(
                    Invariant::I1,
                    format!(
                        "{id_shown} ({}) is marked done, but {delivered}: the command is lost (row: done, result {})",
                        row.kind,
                        row.result.as_deref().unwrap_or("none"),
                        id_shown = Shown(id)
                    ),
                )
                .command(id)
                .ticks(sent.into_iter().chain(marked)),
            );
        } else if let Some(result) = &row.result {
            if !performed.iter().any(|effect| &effect.result == result) {
                let returned: Vec<&str> = performed.iter().map(|effect| effect.result.as_str()).collect();
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!(
                            "{id_shown} is marked done with result {result}, which none of its effects returned ({}): \
                             the workflow goes on from another command's outcome",
                            returned.join(", "),
                            id_shown = Shown(id)
                        ),
                    )
                    .command(id)
                    .ticks(marked),
                );
            }
        } else {
            violations.push(
                Violation::new(
                    Invariant::I1,
                    format!(
                        "{id_shown} ({}) is marked done without a result, although a receiver performed it (effect #{}): \
                         the confirmed outcome never reached the outbox, and nothing will deliver it again",
                        row.kind, performed[0].effect_id, id_shown = Shown(id)
                    ),
                )
                .command(id)
                .ticks(marked),
            );
        }
    }
    violations
}

/// When `workflow_id`'s event `seq` was first written, for an event no
/// acknowledged commit reports (its writer was killed inside the append):
/// its insert, or at `call` granularity the decision the append carried.
fn written_at(input: &Input<'_>, workflow_id: &str, seq: u64) -> Option<u64> {
    input.events.iter().find_map(|event| match &event.op {
        Op::InsertEvent {
            workflow_id: written,
            seq: at,
            ..
        } if written == workflow_id && *at == seq => Some(event.tick),
        Op::Decide {
            workflow_id: decided,
            expected_seq,
            ..
        } if decided == workflow_id && *expected_seq + 1 == seq => Some(event.tick),
        _ => None,
    })
}
