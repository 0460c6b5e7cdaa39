//! I2 one side effect per command, I4 no ghost effect (none without a
//! committed row, none before its row committed), I7 key conflicts surface.
//!
//! Effects are mapped to commands through the keys workers sent them under
//! (the trace), so an implementation that derives keys badly is still judged
//! per logical command.

use std::collections::BTreeMap;

use super::snapshot::Effect;
use super::{History, Input, Invariant, Violation};
use crate::store::Outcome;

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let snapshot = input.snapshot;
    let rows = snapshot.rows_by_id();
    let mut by_command: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &snapshot.effects {
        by_command
            .entry(history.command_of(&effect.key))
            .or_default()
            .push(effect);
    }
    let tick_of = |effect: &Effect| history.apply_ticks.get(&effect.effect_id).copied();

    for (command, effects) in &by_command {
        let Some(row) = rows.get(command) else {
            for effect in effects {
                violations.push(
                    Violation::new(
                        Invariant::I4,
                        format!(
                            "effect #{} ({}) was performed for key {}, which belongs to no committed outbox row",
                            effect.effect_id, effect.kind, effect.key
                        ),
                    )
                    .command(command)
                    .ticks(tick_of(effect)),
                );
            }
            continue;
        };
        // An effect can only follow its command's commit; one that precedes
        // it was delivered before commit and would be a ghost had the
        // transaction failed.
        if let Some(committed) = history.commit_tick(&row.workflow_id, row.event_seq) {
            for effect in effects {
                if let Some(applied) = tick_of(effect).filter(|applied| *applied < committed) {
                    violations.push(
                        Violation::new(
                            Invariant::I4,
                            format!(
                                "effect #{} of {command} was applied at tick {applied}, before its event \
                                 {}#{} committed at tick {committed}: delivered before commit",
                                effect.effect_id, row.workflow_id, row.event_seq
                            ),
                        )
                        .command(command)
                        .ticks([applied, committed]),
                    );
                }
            }
        }
        let (genuine, rogue): (Vec<&Effect>, Vec<&Effect>) = effects
            .iter()
            .partition(|effect| effect.kind == row.kind && effect.payload == row.payload);
        for effect in rogue {
            violations.push(
                Violation::new(
                    Invariant::I7,
                    format!(
                        "effect #{} reused key {} of {command} with other core parameters ({}): \
                         the conflict was not surfaced",
                        effect.effect_id, effect.key, effect.payload
                    ),
                )
                .command(command)
                .ticks(tick_of(effect)),
            );
        }
        if genuine.len() > 1 {
            let list: Vec<String> = genuine
                .iter()
                .map(|effect| match tick_of(effect) {
                    Some(tick) => format!("#{} at tick {tick}", effect.effect_id),
                    None => format!("#{}", effect.effect_id),
                })
                .collect();
            violations.push(
                Violation::new(
                    Invariant::I2,
                    format!(
                        "{command} ({}) took effect {} times: {}",
                        row.kind,
                        genuine.len(),
                        list.join(", ")
                    ),
                )
                .command(command)
                .ticks(genuine.iter().filter_map(|effect| tick_of(effect))),
            );
        }
    }

    for (tick, key, outcome) in &history.probe_replies {
        let answered = match outcome {
            // Probes are never refused nor replaced; a retryable answer performed nothing.
            Outcome::Conflict | Outcome::Retryable { .. } => continue,
            Outcome::Applied { .. } => "applied as a new operation",
            Outcome::Duplicate { .. } => "answered with the first result",
        };
        violations.push(
            Violation::new(
                Invariant::I7,
                format!(
                    "a request reusing key {key} with other core parameters was {answered}, not rejected as a conflict"
                ),
            )
            .command(history.command_of(key))
            .ticks([*tick]),
        );
    }
    violations
}
