//! The cause of a command applied twice when one of its effects outlived
//! the transaction that should have held it: the receiver was killed
//! before its commit, yet the effect is in the final dump. Its de-dup
//! record did not survive with it (the redelivery was applied again), so
//! the effect was committed apart from the record of its key: another
//! database file, another connection, a statement in autocommit. The
//! page shows the kill and two effects; this sentence draws the inference
//! a reader would otherwise have to.
//!
//! Read from the trace alone: at `step` granularity the `Apply` that made
//! the effect (its `effect_id`) and the kill of its receiver before any
//! `Commit` or `Rollback` of it; at `call` granularity, where a call killed
//! inside answers nothing, an effect no `Apply` placed and a receiver
//! killed inside its call for that key. A power cut in between takes
//! every uncommitted write, so it breaks the chain.

use crate::store::dump::Effect;
use crate::trace::{Op, TraceEvent};

/// The sentence for the first of `effects` (one command's) that survived
/// its receiver's kill before the commit, if the trace shows one.
pub fn survived_kill(events: &[TraceEvent], effects: &[&Effect]) -> Option<String> {
    effects.iter().find_map(|effect| {
        let applied = events.iter().position(|event| {
            matches!(&event.op, Op::Apply { key, effect_id, .. }
                if *effect_id == effect.effect_id && *key == effect.key)
        });
        match applied {
            Some(index) => after_apply(events, index, effect),
            None => inside_call(events, effect),
        }
    })
}

/// `step` granularity: the receiver that applied `effect` at `index` died
/// before it committed or rolled back.
fn after_apply(events: &[TraceEvent], index: usize, effect: &Effect) -> Option<String> {
    let applier = &events[index];
    let end = events[index + 1..].iter().find(|event| {
        matches!(event.op, Op::PowerCut { .. })
            || (event.actor == applier.actor
                && matches!(
                    event.op,
                    Op::Commit { .. } | Op::Rollback | Op::Kill { .. } | Op::Died { .. }
                ))
    })?;
    let how = match &end.op {
        Op::Kill { point } => format!("was killed at {point}"),
        Op::Died { step, .. } => format!("died in `{step}`"),
        _ => return None,
    };
    Some(format!(
        "effect #{} survived its transaction: {} applied it at tick {} and {how} at tick {}, before \
         its commit, yet the effect stayed while its de-dup record did not: the effect was committed \
         apart from the record of its key",
        effect.effect_id, applier.actor, applier.tick, end.tick
    ))
}

/// `call` granularity: no call answered with `effect`, and a receiver was
/// killed inside its call for the effect's key.
fn inside_call(events: &[TraceEvent], effect: &Effect) -> Option<String> {
    let mut handling: std::collections::BTreeMap<crate::actors::ActorId, &str> = Default::default();
    let mut cut_since = false;
    let mut killed = None;
    for event in events {
        match &event.op {
            Op::Receive { key, .. } => {
                handling.insert(event.actor, key);
            }
            Op::Respond { .. } => {
                handling.remove(&event.actor);
            }
            // Any kill ends the call; one inside it, before its commit, is the one.
            Op::Kill { point } => {
                let key = handling.remove(&event.actor);
                if point == "receiver.before_effect_commit" && key == Some(effect.key.as_str()) {
                    killed = Some(event);
                    cut_since = false;
                }
            }
            Op::PowerCut { .. } => cut_since = true,
            _ => {}
        }
    }
    let killed = killed.filter(|_| !cut_since)?;
    Some(format!(
        "effect #{} survived its call: no answered call applied it, and {}'s call handling its key was \
         killed inside, before its commit, at tick {}, yet the effect stayed while its de-dup record did \
         not: the effect was committed apart from the record of its key",
        effect.effect_id, killed.actor, killed.tick
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::{ActorId, Role};

    fn at(tick: u64, actor: ActorId, op: Op) -> TraceEvent {
        TraceEvent { tick, actor, op }
    }

    fn effect(effect_id: i64) -> Effect {
        Effect {
            effect_id,
            key: "k".into(),
            kind: "book".into(),
            payload: "{}".into(),
            result: "ok".into(),
        }
    }

    fn apply(effect_id: i64) -> Op {
        Op::Apply {
            key: "k".into(),
            effect_id,
            result: "ok".into(),
        }
    }

    fn kill() -> Op {
        Op::Kill {
            point: "receiver.before_effect_commit".into(),
        }
    }

    fn receive() -> Op {
        Op::Receive {
            key: "k".into(),
            from: ActorId::new(Role::Worker, 0),
        }
    }

    #[test]
    fn an_effect_applied_and_killed_before_its_commit_was_committed_apart() {
        let (a, b) = (ActorId::new(Role::Receiver, 0), ActorId::new(Role::Receiver, 1));
        let events = [
            at(1, a, apply(1)),
            at(2, a, kill()),
            at(5, b, apply(2)),
            at(6, b, Op::Commit { appended: Vec::new() }),
        ];
        let (one, two) = (effect(1), effect(2));
        let cause = survived_kill(&events, &[&one, &two]).expect("a cause");
        assert!(cause.contains("effect #1 survived its transaction"), "{cause}");
        assert!(cause.contains("receiver.before_effect_commit at tick 2"), "{cause}");
        assert!(cause.contains("committed apart from the record of its key"), "{cause}");
        // Committed, then killed: no such cause.
        let events = [
            at(1, a, apply(1)),
            at(2, a, Op::Commit { appended: Vec::new() }),
            at(3, a, kill()),
        ];
        assert_eq!(survived_kill(&events, &[&one]), None);
        // A power cut first takes every uncommitted write: no inference.
        let events = [at(1, a, apply(1)), at(2, ActorId::SIM, power_cut()), at(3, a, kill())];
        assert_eq!(survived_kill(&events, &[&one]), None);
    }

    fn power_cut() -> Op {
        Op::PowerCut {
            point: 0,
            model: "lose".into(),
        }
    }

    #[test]
    fn an_effect_of_a_call_killed_inside_was_committed_apart() {
        let a = ActorId::new(Role::Receiver, 0);
        let events = [at(1, a, receive()), at(2, a, kill())];
        let cause = survived_kill(&events, &[&effect(7)]).expect("a cause");
        assert!(cause.contains("effect #7 survived its call"), "{cause}");
        assert!(cause.contains("receiver-0's call"), "{cause}");
        // A call killed for another key says nothing of this one.
        let other = [
            at(
                1,
                a,
                Op::Receive {
                    key: "other".into(),
                    from: ActorId::new(Role::Worker, 0),
                },
            ),
            at(2, a, kill()),
        ];
        assert_eq!(survived_kill(&other, &[&effect(7)]), None);
    }
}
