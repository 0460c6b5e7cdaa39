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
//! parameters had taken effect.
//!
//! Each answer, and each effect applied under a key another request held,
//! is judged against the effects alive when it was given (`alive.rs`), not
//! against the final dump: on a setting weaker than FULL a later power cut
//! may have taken the effect that made it right (or, gone before it, made
//! applying a rogue request under the key right). So is "delivered before
//! commit": against the earliest moment any version of the event may have
//! committed.

use crate::model::Shown;
use std::collections::{BTreeMap, BTreeSet};

use super::alive::{self, Alive, Record, Records};
use super::history::Answer;
use super::retention::Purges;
use super::snapshot::Effect;
use super::{History, Invariant, Snapshot, Violation};
use crate::actors::ActorId;
use crate::store::Outcome;
use crate::trace::TraceEvent;
use crate::workflow::payload;
use crate::workload::NearMiss;

/// Whether a restore rolled back `command`'s row after its append was
/// acknowledged: the receiver keeps the effect, and the row comes back
/// only when the workflow decides that event again (one waiting on a dead
/// letter may never), under the same id (`restores.rs` judges another).
fn rolled_back(history: &History<'_>, command: &str) -> bool {
    history
        .commits
        .iter()
        .filter(|commit| commit.appended.command_ids.iter().any(|id| id == command))
        .any(|commit| {
            history
                .restores_between(commit.index, usize::MAX)
                .any(|restored| !restored.outbox.iter().any(|row| row.command_id == command))
        })
}

/// Whether the trace shows some command applied twice (under any of its
/// keys, never a near miss's), one of them committed: where `certain`
/// looks at the receiver's rows for I2 while the run goes. One rolled
/// back by a kill counts: a store may have committed it all the same.
pub fn applied_twice(history: &History<'_>) -> bool {
    let mut counts: BTreeMap<&str, (u32, bool)> = BTreeMap::new();
    history
        .applied
        .iter()
        .filter(|applied| !history.near_misses.contains_key(applied.key))
        .any(|applied| {
            let counts = counts.entry(history.command_of(applied.key)).or_default();
            counts.0 += 1;
            counts.1 |= applied.acked.is_some();
            counts.0 > 1 && counts.1
        })
}

/// Judges the effects `snapshot` holds: the dump after the run, or one
/// taken while it goes (`System::peek`, from which only I2 is certain).
pub fn check(events: &[TraceEvent], snapshot: &Snapshot, history: &History<'_>, purges: &Purges) -> Vec<Violation> {
    let mut violations = Vec::new();
    let rows = snapshot.rows_by_id();
    let records = Records::of(history, snapshot);
    let mut by_command: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &snapshot.effects {
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
            if rolled_back(history, command) {
                continue;
            }
            // A cut that left it a ghost is its cause, named at the cut
            // (`durability`): what the run did after it (writers committing
            // the lost event again) cannot change that finding.
            for effect in effects
                .iter()
                .filter(|effect| !super::durability::ghost_at_a_cut(history, effect))
            {
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
        if let Some(committed) = history.earliest_commit_tick(&row.workflow_id, row.event_seq) {
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
        for effect in &rogue {
            // Applied over a live record of the key, or placed by no `Apply`.
            if !matches!(applied_over(history, &records, purges, effect), Over::Clear) {
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
        }
        for effect in &genuine {
            // The command's own request, applied while another request's
            // record held its key (one a cut let through first).
            if let Over::Record(over) = applied_over(history, &records, purges, effect) {
                violations.push(
                    Violation::new(
                        Invariant::I7,
                        format!(
                            "effect #{} of {command_shown} was applied under key {} while effect #{} held that key \
                             with other core parameters: the conflict was not surfaced",
                            effect.effect_id,
                            Shown(&effect.key),
                            over.effect_id,
                            command_shown = Shown(command)
                        ),
                    )
                    .command(command)
                    .ticks(tick_of(effect)),
                );
            }
        }
        let mut applied: Vec<Option<u64>> = genuine.iter().map(|effect| tick_of(effect)).collect();
        applied.sort_unstable();
        let excused = applied
            .windows(2)
            .all(|pair| matches!(pair, [Some(first), Some(again)] if purges.excuse(*first, *again)));
        if genuine.len() > 1 && !excused {
            // The first two applications (by effect id, the order the
            // service performed them): what the finding is, whenever the
            // run ended (later ones depend on how long it went on, and are
            // in the dump).
            let first_two = &genuine[..2];
            let list: Vec<String> = first_two
                .iter()
                .map(|effect| match tick_of(effect) {
                    Some(tick) => format!("#{} at tick {tick}", effect.effect_id),
                    None => format!("#{}", effect.effect_id),
                })
                .collect();
            let cause = first_two
                .iter()
                .find_map(|effect| super::interleaving::apply_between(events, &effect.key))
                .or_else(|| super::apart::survived_kill(events, first_two))
                .map(|cause| format!(": {cause}"))
                .unwrap_or_default();
            violations.push(
                Violation::new(
                    Invariant::I2,
                    format!(
                        "{command_shown} ({}) took effect more than once: {}{cause}",
                        row.kind,
                        list.join(", then "),
                        command_shown = Shown(command)
                    ),
                )
                .command(command)
                .ticks(first_two.iter().filter_map(|effect| tick_of(effect))),
            );
        }
    }

    for answer in history.answers.iter().filter(|answer| answer.to == ActorId::PROBER) {
        if let Some((of, form)) = history.near_misses.get(answer.key) {
            violations.extend(near_miss(history, &records, answer, of, *form));
            continue;
        }
        violations.extend(conflict_probe(history, &records, purges, answer));
    }
    violations.extend(unfounded_conflicts(history, &rows, &records));
    violations
}

/// What an effect of the final dump was applied over.
enum Over<'r> {
    /// No other record of its key, with other core parameters, was
    /// certainly alive when it was applied.
    Clear,
    /// This one was.
    Record(&'r Record<'r>),
    /// No `Apply` places it in time: judged on the final dump alone.
    Unplaced,
}

/// Whether `effect` was applied while a record of its key with other core
/// parameters certainly held the key: a conflict the receiver should have
/// surfaced. Judged at its application, not against the final dump, where
/// a record a power cut took no longer shows.
fn applied_over<'r>(history: &History<'_>, records: &'r Records<'r>, purges: &Purges, effect: &Effect) -> Over<'r> {
    let Some(record) = records.of_effect(effect) else {
        return Over::Unplaced;
    };
    let Some(applied) = record.applied else {
        return Over::Unplaced;
    };
    let (at, tick) = (history.applied[applied].index, history.applied[applied].tick);
    records
        .under(&effect.key)
        .iter()
        .filter(|other| other.applied != Some(applied))
        .find(|other| held(history, purges, other, at, tick) && record.differs(other))
        .map_or(Over::Clear, Over::Record)
}

/// Whether `record` certainly held its key at trace position `at` (tick
/// `tick`): committed and alive then, and not deleted before by a purge
/// the scenario's de-dup retention permits (`retention.rs`). A request
/// reusing a purged key finds no record, and applying it is right.
fn held(history: &History<'_>, purges: &Purges, record: &Record<'_>, at: usize, tick: u64) -> bool {
    record.alive(history, at) == Alive::Certain
        && !record
            .applied
            .is_some_and(|applied| purges.excuse(history.applied[applied].tick, tick))
}

/// A key-conflict probe's answer (the key of a worker's request, other
/// core parameters): a conflict, unless no record held the key when it
/// was given (a power cut took it), when applying it is right. A repeat
/// is right only as the answer to a copy of the probe itself, finding its
/// own record.
fn conflict_probe(
    history: &History<'_>,
    records: &Records<'_>,
    purges: &Purges,
    answer: &Answer<'_>,
) -> Option<Violation> {
    let under = records.under(answer.key);
    let answered = match answer.outcome {
        // Probes are never refused nor replaced; a retryable answer performed nothing.
        Outcome::Conflict | Outcome::Retryable { .. } => return None,
        Outcome::Applied { result } => {
            let held = under
                .iter()
                .any(|record| record.result != result && held(history, purges, record, answer.given, answer.tick));
            if !held {
                return None;
            }
            "applied as a new operation"
        }
        Outcome::Duplicate { result } => {
            let own = under.iter().any(|record| {
                record.result == result
                    && record.requester == Some(ActorId::PROBER)
                    && record.alive(history, answer.given) != Alive::No
            });
            if own {
                return None;
            }
            "answered with the first result"
        }
    };
    Some(
        Violation::new(
            Invariant::I7,
            format!(
                "a request reusing key {key_shown} with other core parameters was {answered}, not rejected as a conflict",
                key_shown = Shown(answer.key)
            ),
        )
        .command(history.command_of(answer.key))
        .ticks([answer.tick]),
    )
}

/// A near-miss probe's answer: it is another operation, so applied (or
/// refused retryably), or a repeat of itself, never `of`'s result nor a
/// conflict. A repeat is judged against the records the receiver held
/// when it answered, not against the final dump.
fn near_miss(
    history: &History<'_>,
    records: &Records<'_>,
    answer: &Answer<'_>,
    of: &str,
    form: NearMiss,
) -> Option<Violation> {
    let key = answer.key;
    let held = |key: &str, result: &str| {
        records
            .under(key)
            .iter()
            .any(|record| record.result == result && record.alive(history, answer.given) != Alive::No)
    };
    let answered = match answer.outcome {
        Outcome::Applied { .. } | Outcome::Retryable { .. } => return None,
        // A duplicated probe finds its own first copy's record.
        Outcome::Duplicate { result } if held(key, result) => return None,
        Outcome::Duplicate { result } => match held(of, result) {
            true => format!(
                "answered with the result of {of_shown} ({result})",
                of_shown = Shown(of)
            ),
            false => format!("answered as a repeat ({result}), though no operation under it had taken effect by then"),
        },
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
        .ticks([answer.tick]),
    )
}

/// Conflicts a receiver answered to a worker's own request (its row's
/// kind and payload) while no operation under exactly that key and other
/// parameters had taken effect: the receiver matched the key to another
/// key's record. Each answer is judged when it was given: a record a later
/// cut took still founds it, and one applied later does not. Once per key.
fn unfounded_conflicts(
    history: &History<'_>,
    rows: &BTreeMap<&str, &crate::model::OutboxRow>,
    records: &Records<'_>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut reported = BTreeSet::new();
    let conflicts = history
        .answers
        .iter()
        .filter(|answer| answer.to != ActorId::PROBER && matches!(answer.outcome, Outcome::Conflict));
    for answer in conflicts {
        let key = answer.key;
        let command = history.command_of(key);
        let Some(row) = rows.get(command) else {
            continue;
        };
        if reported.contains(key) {
            continue;
        }
        let founded = records.under(key).iter().any(|record| {
            let other = match record.params {
                Some(params) => !alive::same(params, (&row.kind, &row.payload)),
                None => record.requester == Some(ActorId::PROBER),
            };
            other && record.alive(history, answer.given) != Alive::No
        });
        if founded {
            continue;
        }
        reported.insert(key);
        violations.push(
            Violation::new(
                Invariant::I7,
                format!(
                    "a receiver rejected {key_shown}, sent for {command_shown} with its own parameters, as a key conflict, \
                     though no operation under exactly that key and other parameters had taken effect: \
                     it matched the key to another key's record", key_shown = Shown(key), command_shown = Shown(command)
                ),
            )
            .command(command)
            .ticks([answer.tick]),
        );
    }
    violations
}
