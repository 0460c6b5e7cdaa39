//! I10 liveness: once faults stop, the run settles within its budget
//! (`run.ticks_max` ticks and `run.steps_max` steps); when it does not,
//! each stuck workflow is explained: the command in its way and its state.
//! I9 (the part that needs no power loss): `PRAGMA integrity_check` passes.

use super::{History, Input, Invariant, Violation, stuck};
use crate::model::Shown;

/// At most this many ids are listed in one message.
const LIST_MAX: usize = 5;
/// At most this many stuck workflows are explained, one violation each.
const STUCK_MAX: usize = 50;

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

/// I10 for a run that did not settle: one violation for the run (its
/// budget and what was left), then one per stuck workflow naming the
/// command in its way and that command's state (`stuck.rs`).
pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let snapshot = input.snapshot;
    let mut violations = integrity(snapshot);
    if input.settled {
        return violations;
    }
    let workflows: Vec<&str> = input.trips.iter().map(|trip| trip.trip_id.as_str()).collect();
    let stuck = stuck::explain(snapshot, history, &workflows);
    let dead = snapshot.dead_lettered();
    let pending: Vec<String> = snapshot
        .outbox
        .iter()
        .filter(|row| !row.done && !dead.contains_key(row.command_id.as_str()))
        .map(|row| Shown(&row.command_id).to_string())
        .collect();
    let (tick, steps) = input.ended;
    let stalled = input.events.iter().rev().find_map(|event| match event.op {
        crate::trace::Op::Stalled { since, window } => Some((since, window)),
        _ => None,
    });
    let mut message = match stalled {
        Some((since, window)) => format!(
            "the run can no longer settle: nothing durable changed from tick {since} for {window} ticks \
             of the quiet phase, longer than every legitimate wait of the scenario (its stall window), \
             so it ended at tick {tick} after {steps} steps, short of its budget ({} ticks, {} steps)",
            input.ticks_max, input.steps_max
        ),
        None => format!(
            "the run did not settle within its budget ({} ticks, {} steps; it stopped at tick {tick} after {steps} steps)",
            input.ticks_max, input.steps_max
        ),
    };
    if !stuck.is_empty() {
        let names: Vec<String> = stuck
            .iter()
            .map(|stuck| format!("{} ({})", Shown(&stuck.workflow_id), stuck.phase))
            .collect();
        message.push_str(&format!("; {} workflow(s) not done: {}", stuck.len(), listed(&names)));
    }
    if !pending.is_empty() {
        message.push_str(&format!("; {} command(s) pending: {}", pending.len(), listed(&pending)));
    }
    violations.push(Violation::new(Invariant::I10, message).ticks([tick]));
    for stuck in stuck.iter().take(STUCK_MAX) {
        let violation = Violation::new(Invariant::I10, stuck.to_string()).workflow(&stuck.workflow_id);
        violations.push(match stuck.command() {
            Some(blocked) => violation.command(&blocked.command_id),
            None => violation,
        });
    }
    if stuck.len() > STUCK_MAX {
        violations.push(Violation::new(
            Invariant::I10,
            format!(
                "… and {} more stuck workflow(s), not explained one by one",
                stuck.len() - STUCK_MAX
            ),
        ));
    }
    violations
}
