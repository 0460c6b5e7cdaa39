//! I1 no lost command, I5 atomic append.
//!
//! I5: every committed event has exactly the commands the reference `decide`
//! emits for it, stored under their derived ids, and every outbox row has
//! its event. I1: every such command is in the outbox and, once the run has
//! settled, is marked done with the result of an effect that really happened,
//! unless it was dead-lettered (manual handling, `retries.rs`).

use std::collections::{BTreeMap, BTreeSet};

use super::snapshot::Effect;
use super::{History, Input, Invariant, Violation};
use crate::model::command_id;
use crate::workflow::{Trip, decide};

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
                let ticks = history.commit_tick(workflow_id, event.seq);
                match rows.get(id.as_str()) {
                    None => {
                        let what = format!(
                            "event {workflow_id}#{} ({}) is committed without its command {id} ({})",
                            event.seq, event.kind, command.kind
                        );
                        violations.push(
                            Violation::new(Invariant::I5, what.clone())
                                .command(&id)
                                .seq(event.seq)
                                .ticks(ticks),
                        );
                        violations.push(
                            Violation::new(Invariant::I1, format!("{id} was never enqueued: {what}"))
                                .command(&id)
                                .seq(event.seq)
                                .ticks(ticks),
                        );
                    }
                    Some(row) if row.kind != command.kind || row.payload != command.payload => {
                        violations.push(
                            Violation::new(
                                Invariant::I5,
                                format!(
                                    "{id} is stored as {} {}, but event {workflow_id}#{} emits {} {}",
                                    row.kind, row.payload, event.seq, command.kind, command.payload
                                ),
                            )
                            .command(&id)
                            .seq(event.seq),
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
                        row.command_id, row.kind, row.workflow_id, row.event_seq
                    ),
                )
                .command(&row.command_id)
                .seq(row.event_seq),
            );
        }
    }

    // Once drained: every row is done, performed, and marked with a real result.
    if input.settled {
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
            if !row.done {
                violations.push(
                    Violation::new(Invariant::I1, format!("{id} ({}) was never marked done", row.kind))
                        .command(id)
                        .ticks(sent),
                );
            } else if performed.is_empty() {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!("{id} ({}) is marked done but no receiver ever performed it", row.kind),
                    )
                    .command(id)
                    .ticks(sent),
                );
            } else if let Some(result) = &row.result
                && !performed.iter().any(|effect| &effect.result == result)
            {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!("{id} is marked done with result {result}, which none of its effects returned"),
                    )
                    .command(id),
                );
            }
        }
    }
    violations
}
