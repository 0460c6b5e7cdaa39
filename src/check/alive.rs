//! Which effects a receiver held at a given moment of the run: the state
//! its answers are judged against.
//!
//! A receiver's answer (a repeat with a first result, a conflict, a new
//! application) is right or wrong for the records it held when it gave
//! it. The final dump is no witness for that once the power went out in
//! between: a database on `synchronous` NORMAL or OFF may lose its unsynced
//! tail in a cut, and an effect that made an answer right is then gone from
//! every later state. Such a loss is what the setting allows (I9 judges it
//! where the settings promise durability, `durability.rs`); it never turns
//! an answer that was right when given into a finding.
//!
//! So an effect is placed in time from the trace (`History::applied`): it
//! exists from its `Apply` on, is committed at its receiver's `Commit`,
//! rolled back by a kill before that, and taken by a cut whose recovery
//! (`History::recoveries`) no longer holds it. `History::alive` says what
//! the trace fixes about it at a position of the trace:
//!
//! - **certain**: committed before then, and every cut in between kept it
//!   (a cut that kept it proves it committed, whenever that was);
//! - **maybe**: applied before then, its commit not seen yet or never seen
//!   (a process that died inside the call), or a cut in between whose
//!   recovery the checker does not have;
//! - **no**: not applied yet, rolled back, or taken by a cut.
//!
//! A finding needs a certain effect (an answer wrong in spite of it); an
//! excuse takes a possible one. Effects a dump holds (the final one, or a
//! recovery's) that no `Apply` placed (a store killed inside a call that
//! committed anyway) are possible at every moment (`Records`).

use std::collections::BTreeMap;

use super::History;
use super::snapshot::Effect;
use crate::actors::ActorId;
use crate::store::Snapshot;

/// What the trace fixes about an effect at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Alive {
    No,
    Maybe,
    Certain,
}

impl History<'_> {
    /// What the trace fixes about `applied[effect]` just before trace
    /// position `at`.
    pub fn alive(&self, effect: usize, at: usize) -> Alive {
        let applied = &self.applied[effect];
        if applied.index >= at || applied.rolled_back {
            return Alive::No;
        }
        let mut certain = applied.acked.is_some_and(|(acked, _)| acked < at);
        for (cut, (position, _, _)) in self.cuts.iter().enumerate() {
            if *position <= applied.index {
                continue;
            }
            if *position >= at {
                break;
            }
            match self.survived(effect, cut) {
                Some(false) => return Alive::No,
                // Recovery found it: it had committed.
                Some(true) => certain = true,
                None => certain = false,
            }
        }
        match certain {
            true => Alive::Certain,
            false => Alive::Maybe,
        }
    }

    /// Whether the `cut`-th power cut kept `applied[effect]`, if the
    /// checker has what recovery found.
    fn survived(&self, effect: usize, cut: usize) -> Option<bool> {
        let snapshot = &self.recoveries.get(cut)?.snapshot;
        if snapshot.unreadable.is_some() {
            return None;
        }
        let applied = &self.applied[effect];
        Some(
            snapshot
                .effects
                .iter()
                .any(|kept| kept.effect_id == applied.effect_id && kept.key == applied.key),
        )
    }

    /// Whether a row of `command_id` marked done with `result` was backed
    /// when a worker marked it: an effect of the command with that result
    /// existed then (as far as the trace knows), and a power cut took it
    /// afterwards. The mark was right when given; the loss is the cut's
    /// (I9 where the receiver's settings promise durability).
    pub fn backed_when_marked(&self, command_id: &str, result: &str) -> bool {
        let end = usize::MAX;
        let mut marks = self.marked.iter().filter(|(_, marked)| *marked == command_id);
        marks.any(|(mark, _)| {
            self.unknown_then_cut(command_id, *mark)
                || self.applied.iter().enumerate().any(|(effect, applied)| {
                    applied.result == result
                        && !self.near_misses.contains_key(applied.key)
                        && self.command_of(applied.key) == command_id
                        && self.alive(effect, *mark) != Alive::No
                        && self.alive(effect, end) == Alive::No
                })
        })
    }

    /// Whether a receiver was killed inside a call handling `command_id`
    /// before the mark at trace position `mark` (its effect may have
    /// committed without a sync: another connection's recovery of the WAL
    /// then sees it, and answers from it), and a power cut came after the
    /// mark (which takes such an effect back). What the row was marked
    /// with then rests on an effect no dump can show: judged by neither
    /// bound, as an append whose commit no one learned.
    fn unknown_then_cut(&self, command_id: &str, mark: usize) -> bool {
        let killed = self
            .killed_handling
            .iter()
            .any(|(kill, key)| *kill < mark && self.command_of(key) == command_id);
        killed && self.cuts.iter().any(|(cut, _, _)| *cut > mark)
    }
}

/// One effect under a key, for judging answers: placed in time by the
/// trace, or known from the final dump only.
pub struct Record<'s> {
    /// Index into `History::applied`; `None`: only the final dump has it.
    pub applied: Option<usize>,
    pub effect_id: i64,
    pub result: &'s str,
    pub requester: Option<ActorId>,
    /// Its kind and payload, where a dump (the final one, or a recovery's) shows it.
    pub params: Option<(&'s str, &'s str)>,
}

/// Every effect of the run by the exact key it was applied under.
pub struct Records<'s> {
    by_key: BTreeMap<&'s str, Vec<Record<'s>>>,
}

impl<'s> Records<'s> {
    pub fn of(history: &'s History<'s>, snapshot: &'s Snapshot) -> Records<'s> {
        // Every dump's effects by id and key, the final dump's first.
        let mut dumped: BTreeMap<(i64, &str), &'s Effect> = BTreeMap::new();
        let dumps = std::iter::once(snapshot).chain(
            history
                .recoveries
                .iter()
                .chain(history.restored)
                .map(|recovery| &recovery.snapshot),
        );
        for effect in dumps.flat_map(|dump| dump.effects.iter()) {
            dumped.entry((effect.effect_id, effect.key.as_str())).or_insert(effect);
        }
        let mut by_key: BTreeMap<&'s str, Vec<Record<'s>>> = BTreeMap::new();
        for (index, applied) in history.applied.iter().enumerate() {
            let params = dumped
                .get(&(applied.effect_id, applied.key))
                .map(|effect| (effect.kind.as_str(), effect.payload.as_str()));
            by_key.entry(applied.key).or_default().push(Record {
                applied: Some(index),
                effect_id: applied.effect_id,
                result: applied.result,
                requester: applied.requester,
                params,
            });
        }
        // Effects no `Apply` placed: a store killed inside a call that
        // committed anyway (a later cut may have taken one again).
        for effect in dumped.into_values() {
            let records = by_key.entry(effect.key.as_str()).or_default();
            if records.iter().any(|record| record.effect_id == effect.effect_id) {
                continue;
            }
            records.push(Record {
                applied: None,
                effect_id: effect.effect_id,
                result: &effect.result,
                requester: None,
                params: Some((&effect.kind, &effect.payload)),
            });
        }
        Records { by_key }
    }

    /// The effects applied under exactly `key`.
    pub fn under(&self, key: &str) -> &[Record<'s>] {
        self.by_key.get(key).map(Vec::as_slice).unwrap_or_default()
    }

    /// The record of an effect of the final dump: the latest `Apply` of
    /// its id under its key, or the dump's own.
    pub fn of_effect(&self, effect: &Effect) -> Option<&Record<'s>> {
        self.under(&effect.key)
            .iter()
            .rev()
            .find(|record| record.effect_id == effect.effect_id)
    }
}

impl Record<'_> {
    /// What the trace fixes about this effect just before trace position `at`.
    pub fn alive(&self, history: &History<'_>, at: usize) -> Alive {
        match self.applied {
            Some(effect) => history.alive(effect, at),
            None => Alive::Maybe,
        }
    }

    /// Whether this effect's request had other core parameters than
    /// `other`'s: as the dumps show them, else by who asked (the prober's
    /// key-conflict probes carry other parameters than a worker's request;
    /// near-miss probes never share a worker's key).
    pub fn differs(&self, other: &Record<'_>) -> bool {
        match (self.params, other.params) {
            (Some(mine), Some(theirs)) => !same(mine, theirs),
            _ => (self.requester == Some(ActorId::PROBER)) != (other.requester == Some(ActorId::PROBER)),
        }
    }
}

/// Two (kind, payload) pairs are the same request's (payloads as JSON).
pub fn same((kind, payload): (&str, &str), (other_kind, other_payload): (&str, &str)) -> bool {
    kind == other_kind && crate::workflow::payload::same(payload, other_payload)
}
