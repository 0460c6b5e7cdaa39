//! I2 one side effect per command, I4 no ghost effect (none without a
//! committed row, none before its row committed), I7 key conflicts surface
//! and keys are compared exactly (payloads as JSON: `workflow::payload::same`).
//!
//! I2 has one exception: an application after a purge that the scenario's
//! de-dup retention permitted (`retention.rs`).
//!
//! Effects are mapped to commands through the keys workers sent them under
//! (the trace), so an implementation that derives keys badly is still judged
//! per logical command. Effects under near-miss keys belong to the prober's
//! requests, not to any command.
//!
//! I7 has three clauses: a rogue request reusing a key with other core
//! parameters is rejected (a key-conflict probe); a request under a near
//! miss of a key (another case, a space at either end, the other Unicode
//! normalization form) is another operation, never answered with the
//! original key's result nor called a conflict; and a worker's own request
//! is called a conflict only if an operation with exactly its key and other
//! parameters took effect.

use crate::model::Shown;
use std::collections::BTreeMap;

use super::retention::Purges;
use super::snapshot::Effect;
use super::{History, Input, Invariant, Violation};
use crate::store::Outcome;
use crate::workflow::payload;
use crate::workload::NearMiss;

pub fn check(input: &Input<'_>, history: &History<'_>, purges: &Purges) -> Vec<Violation> {
    let mut violations = Vec::new();
    let snapshot = input.snapshot;
    let rows = snapshot.rows_by_id();
    let mut by_command: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    let mut by_key: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &snapshot.effects {
        by_key.entry(effect.key.as_str()).or_default().push(effect);
        if history.near_misses.contains_key(effect.key.as_str()) {
            continue;
        }
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
                                "effect #{} of {command_shown} was applied at tick {applied}, before its event \
                                 {}#{} committed at tick {committed}: delivered before commit",
                                effect.effect_id,
                                row.workflow_id,
                                row.event_seq,
                                command_shown = Shown(command)
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
            .partition(|effect| effect.kind == row.kind && payload::same(&effect.payload, &row.payload));
        for effect in rogue {
            violations.push(
                Violation::new(
                    Invariant::I7,
                    format!(
                        "effect #{} reused key {} of {command_shown} with other core parameters ({}): \
                         the conflict was not surfaced",
                        effect.effect_id,
                        effect.key,
                        effect.payload,
                        command_shown = Shown(command)
                    ),
                )
                .command(command)
                .ticks(tick_of(effect)),
            );
        }
        let mut applied: Vec<Option<u64>> = genuine.iter().map(|effect| tick_of(effect)).collect();
        applied.sort_unstable();
        let excused = applied
            .windows(2)
            .all(|pair| matches!(pair, [Some(first), Some(again)] if purges.excuse(*first, *again)));
        if genuine.len() > 1 && !excused {
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
                        "{command_shown} ({}) took effect {} times: {}",
                        row.kind,
                        genuine.len(),
                        list.join(", "),
                        command_shown = Shown(command)
                    ),
                )
                .command(command)
                .ticks(genuine.iter().filter_map(|effect| tick_of(effect))),
            );
        }
    }

    for (tick, key, outcome) in &history.probe_replies {
        if let Some((of, form)) = history.near_misses.get(key) {
            violations.extend(near_miss(history, &by_key, (*tick, key, outcome), of, *form));
            continue;
        }
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
                    "a request reusing key {key_shown} with other core parameters was {answered}, not rejected as a conflict", key_shown = Shown(key)
                ),
            )
            .command(history.command_of(key))
            .ticks([*tick]),
        );
    }
    violations.extend(unfounded_conflicts(history, &rows, &by_key));
    violations
}

/// A near-miss probe's answer: it is another operation, so applied (or
/// refused retryably), or a repeat of itself, never `of`'s result nor a conflict.
fn near_miss(
    history: &History<'_>,
    by_key: &BTreeMap<&str, Vec<&Effect>>,
    (tick, key, outcome): (u64, &str, &Outcome),
    of: &str,
    form: NearMiss,
) -> Option<Violation> {
    let own = |result: &str| {
        by_key
            .get(key)
            .is_some_and(|effects| effects.iter().any(|e| e.result == result))
    };
    let answered = match outcome {
        Outcome::Applied { .. } | Outcome::Retryable { .. } => return None,
        // A duplicated probe finds its own first copy's record.
        Outcome::Duplicate { result } if own(result) => return None,
        Outcome::Duplicate { result } => {
            let of_result = by_key
                .get(of)
                .is_some_and(|effects| effects.iter().any(|e| &e.result == result));
            match of_result {
                true => format!(
                    "answered with the result of {of_shown} ({result})",
                    of_shown = Shown(of)
                ),
                false => format!("answered as a repeat ({result}), though no operation under it took effect"),
            }
        }
        Outcome::Conflict => format!(
            "rejected as a conflict, though only {of_shown} (another key) had been used",
            of_shown = Shown(of)
        ),
    };
    Some(
        Violation::new(
            Invariant::I7,
            format!(
                "a request under key {key_shown} (key {of_shown} {}), carrying the parameters of {of_shown}, \
                 was {answered}: the receiver compares keys inexactly, and a different key is a different operation",
                form.describe(),
                key_shown = Shown(key),
                of_shown = Shown(of)
            ),
        )
        .command(history.command_of(of))
        .ticks([tick]),
    )
}

/// Conflicts a receiver answered to a worker's own request (its row's
/// kind and payload) with no operation under exactly that key and other
/// parameters having taken effect: the receiver matched the key to
/// another key's record.
fn unfounded_conflicts(
    history: &History<'_>,
    rows: &BTreeMap<&str, &crate::model::OutboxRow>,
    by_key: &BTreeMap<&str, Vec<&Effect>>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (key, replies) in &history.replies {
        let Some((tick, _)) = replies.iter().find(|(_, outcome)| matches!(outcome, Outcome::Conflict)) else {
            continue;
        };
        let command = history.command_of(key);
        let Some(row) = rows.get(command) else {
            continue;
        };
        let founded = by_key.get(key).is_some_and(|effects| {
            effects
                .iter()
                .any(|effect| effect.kind != row.kind || !payload::same(&effect.payload, &row.payload))
        });
        if founded {
            continue;
        }
        violations.push(
            Violation::new(
                Invariant::I7,
                format!(
                    "a receiver rejected {key_shown}, sent for {command_shown} with its own parameters, as a key conflict, \
                     though no operation under exactly that key and other parameters ever took effect: \
                     it matched the key to another key's record", key_shown = Shown(key), command_shown = Shown(command)
                ),
            )
            .command(command)
            .ticks([*tick]),
        );
    }
    violations
}
