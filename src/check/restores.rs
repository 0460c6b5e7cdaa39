//! I2 across a restore (`[restore]`): receivers keep their databases when
//! the store is restored from a backup, so an effect applied for a command
//! whose event the restore rolled back must be folded into when the
//! workflow decides that event again: the command derived again must carry
//! **the same id**. A store whose ids are not derived from the event (a
//! random id per append) makes the receiver apply the same command twice.
//!
//! Judged on the final dump, against the trace: an effect whose command
//! the final store no longer holds, beside a row the store holds for the
//! same request (kind and payload, and the same event where the trace says
//! which emitted the first) under another id, applied too.

use std::collections::BTreeMap;

use super::{History, Input, Invariant, Violation};
use crate::model::Shown;

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    if history.restores.is_empty() {
        return Vec::new();
    }
    let snapshot = input.snapshot;
    let rows = snapshot.rows_by_id();
    // Which append emitted each command, as (workflow, seq).
    let mut emitted_by: BTreeMap<&str, (&str, u64, u64)> = BTreeMap::new();
    for commit in &history.commits {
        let append = commit.appended;
        for command_id in &append.command_ids {
            emitted_by.insert(command_id, (&append.workflow_id, append.seq, commit.tick));
        }
    }
    // The effects the receiver holds, by the command they were applied for.
    let mut applied: BTreeMap<&str, Vec<&crate::store::dump::Effect>> = BTreeMap::new();
    // Effects under near-miss keys are the prober's, never a command's; a
    // command is one a worker or a writer sent.
    for effect in &snapshot.effects {
        if history.near_misses.contains_key(effect.key.as_str()) {
            continue;
        }
        let command_id = history.command_of(&effect.key);
        if history.sends.contains_key(command_id) {
            applied.entry(command_id).or_default().push(effect);
        }
    }
    let mut violations = Vec::new();
    for (command_id, effects) in &applied {
        if rows.contains_key(command_id) {
            continue;
        }
        let Some(effect) = effects.first() else {
            continue;
        };
        // Which event emitted it, where the trace says (a store that
        // answers `insert_command` with its own id: only the row knows).
        let emitted = emitted_by.get(command_id).copied();
        // The command the workflow derived again for the same event: the
        // same request (kind and payload) under another id, applied too.
        let twin = snapshot.outbox.iter().find(|row| {
            row.kind == effect.kind
                && row.payload == effect.payload
                && row.command_id != *command_id
                && applied.contains_key(row.command_id.as_str())
                && emitted.is_none_or(|(workflow_id, seq, _)| row.workflow_id == workflow_id && row.event_seq == seq)
        });
        let Some(twin) = twin else {
            continue;
        };
        let (workflow_id, seq) = (twin.workflow_id.as_str(), twin.event_seq);
        let applied_at = history.apply_ticks.get(&effect.effect_id).copied();
        let since = applied_at.or(emitted.map(|(_, _, tick)| tick)).unwrap_or(0);
        let restore = history
            .restores
            .iter()
            .find(|(_, at, _)| *at >= since)
            .map_or(String::from("a restore"), |(_, at, n)| {
                format!("restore #{n} (tick {at})")
            });
        let message = format!(
            "{} ({}) of {}#{seq} was applied (effect #{}), then {restore} rolled its event back; the event \
             was decided again and its command now carries another id, {}, which the receiver applied again \
             (effect #{}): one command, two side effects. A command's id must be derived from its event",
            Shown(command_id),
            effect.kind,
            Shown(workflow_id),
            effect.effect_id,
            Shown(&twin.command_id),
            applied
                .get(twin.command_id.as_str())
                .and_then(|effects| effects.first())
                .map_or(0, |effect| effect.effect_id),
        );
        violations.push(
            Violation::new(Invariant::I2, message)
                .workflow(workflow_id)
                .seq(seq)
                .command(command_id)
                .ticks(applied_at),
        );
    }
    violations
}
