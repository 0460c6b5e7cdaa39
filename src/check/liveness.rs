//! I10 liveness: once faults stop, the run settles within its budget
//! (`run.ticks_max` ticks and `run.steps_max` steps).
//! I9 (the part that needs no power loss): `PRAGMA integrity_check` passes.

use super::{Input, Invariant, Violation};
use crate::workflow::replay;

/// At most this many ids are listed in one message.
const LIST_MAX: usize = 5;

fn listed(items: &[String]) -> String {
    let mut text = items.iter().take(LIST_MAX).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > LIST_MAX {
        text.push_str(&format!(", … ({} more)", items.len() - LIST_MAX));
    }
    text
}

/// I9: `PRAGMA integrity_check` of each final file.
pub fn integrity(snapshot: &crate::store::Snapshot) -> Vec<Violation> {
    [
        ("store", &snapshot.store_integrity),
        ("receiver", &snapshot.receiver_integrity),
    ]
    .into_iter()
    .filter(|(_, verdict)| verdict.as_str() != "ok")
    .map(|(file, verdict)| {
        Violation::new(
            Invariant::I9,
            format!("PRAGMA integrity_check of the {file} database: {verdict}"),
        )
    })
    .collect()
}

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    let snapshot = input.snapshot;
    let mut violations = integrity(snapshot);
    if input.settled {
        return violations;
    }
    let by_workflow = snapshot.events_by_workflow();
    // A workflow waiting on a dead-lettered command is settled: a person
    // handles it (retry timers).
    let dead = snapshot.dead_lettered();
    let manual: std::collections::BTreeSet<&str> = dead.values().map(|timer| timer.workflow_id.as_str()).collect();
    let unfinished: Vec<String> = input
        .trips
        .iter()
        .filter(|trip| !manual.contains(trip.trip_id.as_str()))
        .filter_map(|trip| {
            let events = by_workflow
                .get(trip.trip_id.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            match replay(&trip.trip_id, events) {
                Ok(replayed) if replayed.trip.is_terminal() => None,
                Ok(replayed) => Some(format!("{} ({})", trip.trip_id, replayed.trip.phase_name())),
                Err(_) => Some(format!("{} (unreplayable)", trip.trip_id)),
            }
        })
        .collect();
    let pending: Vec<String> = snapshot
        .outbox
        .iter()
        .filter(|row| !row.done && !dead.contains_key(row.command_id.as_str()))
        .map(|row| row.command_id.clone())
        .collect();
    let (tick, steps) = input.ended;
    let mut message = format!(
        "the run did not settle within its budget ({} ticks, {} steps; it stopped at tick {tick} after {steps} steps)",
        input.ticks_max, input.steps_max
    );
    if !unfinished.is_empty() {
        message.push_str(&format!(
            "; {} workflow(s) not terminal: {}",
            unfinished.len(),
            listed(&unfinished)
        ));
    }
    if !pending.is_empty() {
        message.push_str(&format!("; {} command(s) pending: {}", pending.len(), listed(&pending)));
    }
    // Rows done without a result are the usual reason a workflow waits forever:
    // nothing will deliver them again and the writer has no result to record.
    let orphaned: Vec<String> = snapshot
        .outbox
        .iter()
        .filter(|row| row.done && row.result.is_none())
        .map(|row| row.command_id.clone())
        .collect();
    if !orphaned.is_empty() {
        message.push_str(&format!(
            "; {} command(s) marked done without a result, never to be delivered again: {}",
            orphaned.len(),
            listed(&orphaned)
        ));
    }
    violations.push(Violation::new(Invariant::I10, message).ticks([tick]));
    violations
}
