//! I9 durability and I4 across power cuts, judged on what recovery found
//! right after each cut (`sim::Recovery`), before the run went on.
//!
//! - I9: `PRAGMA integrity_check` passes after every cut; and where the
//!   settings promise durability (WAL with `synchronous` FULL or EXTRA, a
//!   rollback journal with EXTRA), every commit acknowledged before the cut
//!   is still there: appended events, rows marked done, receivers' effects.
//!   Weaker settings may lose a tail; that is counted, not judged.
//! - I4: no effect at a receiver outlives the outbox row that caused it. An
//!   effect is only ever applied after its row committed, so with durable
//!   settings on both databases this cannot happen; with the store on
//!   NORMAL and the receiver on FULL it can (a ghost effect).

use crate::model::Shown;
use std::collections::BTreeSet;

use super::{Durable, History, Input, Invariant, Violation};

/// Indices (into `history.commits`) of commits whose event a cut or a
/// restore lost: a commit is lost if the first cut after it, or any
/// restore after it, leaves a store without its event.
pub fn lost_commits(history: &History<'_>) -> BTreeSet<usize> {
    let mut lost = BTreeSet::new();
    for (index, commit) in history.commits.iter().enumerate() {
        let cut = history
            .cuts
            .iter()
            .position(|(at, _, _)| *at > commit.index)
            .and_then(|cut| history.recoveries.get(cut));
        let cut_lost = cut.is_some_and(|recovery| !holds(&recovery.snapshot, commit.appended));
        let restored_away = history
            .restores_between(commit.index, usize::MAX)
            .any(|restored| !holds(restored, commit.appended));
        if cut_lost || restored_away {
            lost.insert(index);
        }
    }
    lost
}

/// Whether `snapshot` holds the event `append` committed.
fn holds(snapshot: &crate::store::Snapshot, append: &crate::trace::Appended) -> bool {
    snapshot
        .events
        .iter()
        .any(|event| event.workflow_id == append.workflow_id && event.seq == append.seq && event.kind == append.kind)
}

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    judge(input.recoveries, input.durable, history)
}

/// What recovery found after each cut in `recoveries` (those so far, during
/// a run: `check::certain`), judged against the commits before it.
pub fn judge(recoveries: &[crate::sim::Recovery], durable: Durable, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for (recovery, (cut_index, tick, point)) in recoveries.iter().zip(&history.cuts) {
        let snapshot = &recovery.snapshot;
        let at = format!("the power cut at tick {tick} (persistence point {point})");
        for (file, verdict) in [
            ("store", &snapshot.store_integrity),
            ("receiver", &snapshot.receiver_integrity),
        ] {
            if verdict != "ok" {
                violations.push(
                    Violation::new(
                        Invariant::I9,
                        format!("after {at}, integrity_check of the {file}: {verdict}"),
                    )
                    .ticks([*tick]),
                );
            }
        }
        if durable.store {
            for commit in history.commits.iter().filter(|commit| commit.index < *cut_index) {
                let append = commit.appended;
                let name = format!("{}#{}", Shown(&append.workflow_id), append.seq);
                // A restore between the commit and the cut rolled it back.
                let restored_away = history
                    .restores_between(commit.index, *cut_index)
                    .any(|restored| !holds(restored, append));
                if !holds(snapshot, append) && !restored_away && reported.insert(name.clone()) {
                    violations.push(
                        Violation::new(
                            Invariant::I9,
                            format!(
                                "{name} ({}) was acknowledged to {} at tick {} and lost in {at}",
                                append.kind, commit.actor, commit.tick
                            ),
                        )
                        .workflow(&append.workflow_id)
                        .seq(append.seq)
                        .ticks([commit.tick, *tick]),
                    );
                }
            }
            for (index, command_id) in &history.marked {
                if index >= cut_index {
                    continue;
                }
                let row = snapshot.outbox.iter().find(|row| row.command_id == *command_id);
                let restored_away = history.restores_between(*index, *cut_index).any(|restored| {
                    !restored
                        .outbox
                        .iter()
                        .any(|row| row.command_id == *command_id && row.done)
                });
                if row.is_some_and(|row| !row.done)
                    && !restored_away
                    && reported.insert(format!("done {command_id_shown}", command_id_shown = Shown(command_id)))
                {
                    violations.push(
                        Violation::new(
                            Invariant::I9,
                            format!(
                                "{command_id_shown} was acknowledged as marked done and is pending again after {at}",
                                command_id_shown = Shown(command_id)
                            ),
                        )
                        .command(command_id)
                        .ticks([*tick]),
                    );
                }
            }
        }
        if durable.receiver {
            let acked = history
                .applied
                .iter()
                .filter_map(|applied| applied.acked.map(|(index, tick)| (index, tick, applied)))
                .filter(|(index, _, _)| index < cut_index);
            for (_, acked_tick, acked) in acked {
                let present = snapshot
                    .effects
                    .iter()
                    .any(|effect| effect.effect_id == acked.effect_id && effect.key == acked.key);
                if !present && reported.insert(format!("effect {} {}", acked.effect_id, acked.key)) {
                    violations.push(
                        Violation::new(
                            Invariant::I9,
                            format!(
                                "effect #{} for key {} was committed by its receiver at tick {acked_tick} and lost in {at}",
                                acked.effect_id,
                                Shown(acked.key),
                            ),
                        )
                        .command(history.command_of(acked.key))
                        .ticks([acked_tick, *tick]),
                    );
                }
            }
        }
        let rows = snapshot.rows_by_id();
        for effect in snapshot
            .effects
            .iter()
            .filter(|effect| ghost(history, &rows, *cut_index, effect))
        {
            let command = history.command_of(&effect.key);
            if reported.insert(format!("ghost {}", effect.effect_id)) {
                violations.push(
                    Violation::new(
                        Invariant::I4,
                        format!(
                            "after {at}, effect #{} ({}) of {command_shown} survives at the receiver but its outbox row \
                             does not: a ghost effect",
                            effect.effect_id, effect.kind, command_shown = Shown(command)
                        ),
                    )
                    .command(command)
                    .ticks([*tick]),
                );
            }
        }
    }
    violations
}

/// Whether recovery after the cut at trace index `cut_index` left `effect`
/// a ghost: its command's outbox row is not among `rows` (that recovery's),
/// and no restore before the cut took the row back (the row comes back when
/// its event is decided again: `check::restores`). Effects under near-miss
/// keys are the prober's, never a command's.
fn ghost(
    history: &History<'_>,
    rows: &std::collections::BTreeMap<&str, &crate::model::OutboxRow>,
    cut_index: usize,
    effect: &super::snapshot::Effect,
) -> bool {
    if history.near_misses.contains_key(effect.key.as_str()) {
        return false;
    }
    let command = history.command_of(&effect.key);
    !rows.contains_key(command)
        && !history
            .restores_between(0, cut_index)
            .any(|restored| !restored.outbox.iter().any(|row| row.command_id == command))
}

/// Whether recovery after some cut left `effect` a ghost: `judge` reports
/// it at that cut, so `effects` leaves it alone.
pub fn ghost_at_a_cut(history: &History<'_>, effect: &super::snapshot::Effect) -> bool {
    history
        .recoveries
        .iter()
        .zip(&history.cuts)
        .any(|(recovery, (cut_index, _, _))| {
            recovery
                .snapshot
                .effects
                .iter()
                .any(|held| held.effect_id == effect.effect_id)
                && ghost(history, &recovery.snapshot.rows_by_id(), *cut_index, effect)
        })
}
