//! The cue to judge an effect applied twice (I2) now rather than at the
//! next doubling interval (`stall::judge_so_far`): a command applied a
//! second time (`Op::Apply`, under any key it was sent with), one of its
//! applications committed (the same receiver's `Op::Commit`). One killed
//! before its commit counts too: a store that commits an effect apart from
//! its de-dup record keeps it, which is what the rows show. Only a cue:
//! whether it took effect twice is judged by `check::certain` on what the
//! receiver's database holds then (`System::peek`), never on the trace's
//! word. Read incrementally, each event once, so a run pays next to
//! nothing for it.

use std::collections::BTreeMap;

use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// What the trace so far shows of effects committed.
#[derive(Default)]
pub(super) struct Twice {
    /// Events of the trace already read.
    read: usize,
    /// Each key to the command it was sent for.
    commands: BTreeMap<String, String>,
    /// Each receiver's effect, by key, until its commit (or its death).
    applying: BTreeMap<ActorId, String>,
    /// Each command's effects applied and committed, as (applied, committed).
    counts: BTreeMap<String, (u32, u32)>,
    /// A command's effect committed twice since the last judgement.
    cued: bool,
}

impl Twice {
    /// Reads the events recorded since the last call. True if, since the
    /// last time it answered true, a command applied at least twice, once
    /// committed, was applied or committed again.
    pub(super) fn cue(&mut self, events: &[TraceEvent]) -> bool {
        for event in events.get(self.read..).unwrap_or_default() {
            match &event.op {
                Op::Send { command_id, key, .. } => {
                    self.commands.entry(key.clone()).or_insert_with(|| command_id.clone());
                }
                Op::Dispatch { command_id, .. } => {
                    self.commands
                        .entry(command_id.clone())
                        .or_insert_with(|| command_id.clone());
                }
                Op::Apply { key, .. } => {
                    self.count(key, (1, 0));
                    self.applying.insert(event.actor, key.clone());
                }
                Op::Commit { .. } => {
                    if let Some(key) = self.applying.remove(&event.actor) {
                        self.count(&key, (0, 1));
                    }
                }
                // Whether its transaction committed, nothing here says.
                Op::Kill { .. } | Op::Died { .. } | Op::Rollback => {
                    self.applying.remove(&event.actor);
                }
                Op::PowerCut { .. } => self.applying.clear(),
                _ => {}
            }
        }
        self.read = events.len();
        std::mem::take(&mut self.cued)
    }

    /// Adds `(applied, committed)` to the command of `key`.
    fn count(&mut self, key: &str, (applied, committed): (u32, u32)) {
        let command = self.commands.get(key).map_or(key, String::as_str);
        let counts = self.counts.entry(command.to_string()).or_default();
        counts.0 += applied;
        counts.1 += committed;
        self.cued |= counts.0 > 1 && counts.1 > 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::Role;
    use crate::trace::Appended;

    fn at(tick: u64, actor: ActorId, op: Op) -> TraceEvent {
        TraceEvent { tick, actor, op }
    }

    fn apply(key: &str) -> Op {
        Op::Apply {
            key: key.to_string(),
            effect_id: 1,
            result: String::new(),
        }
    }

    fn commit() -> Op {
        Op::Commit {
            appended: Vec::<Appended>::new(),
        }
    }

    #[test]
    fn a_command_applied_twice_once_committed_is_the_cue() {
        let (one, two) = (ActorId::new(Role::Receiver, 0), ActorId::new(Role::Receiver, 1));
        let mut twice = Twice::default();
        // Applied, killed before its commit, applied again: no commit yet.
        let mut events = vec![
            at(1, one, apply("k")),
            at(2, one, Op::Kill { point: "p".into() }),
            at(3, two, apply("k")),
        ];
        assert!(!twice.cue(&events));
        events.push(at(4, two, commit()));
        assert!(twice.cue(&events), "the kill may not have taken the first");
        assert!(!twice.cue(&events), "a cue is given once");
        // A commit with no application open is another transaction.
        events.push(at(5, one, commit()));
        assert!(!twice.cue(&events));
        events.push(at(6, one, apply("j")));
        events.push(at(7, one, commit()));
        assert!(!twice.cue(&events), "another command");
    }
}
