//! When a finding's cause is an interleaving inside a call (`[preempt]`),
//! its first line says so: a receiver whose `handle` was suspended inside
//! SQLite while another receiver applied the same command, and then
//! applied it too.

use crate::trace::{Op, TraceEvent};

/// For a command applied twice under `key` by two receivers: the sentence
/// naming the suspension of the second receiver's call that let the first
/// apply in between, if the trace shows one.
pub fn apply_between(events: &[TraceEvent], key: &str) -> Option<String> {
    let applies: Vec<&TraceEvent> = events
        .iter()
        .filter(|event| matches!(&event.op, Op::Apply { key: applied, .. } if applied == key))
        .collect();
    for pair in applies.windows(2) {
        let [first, second] = pair else { continue };
        if first.actor == second.actor {
            continue;
        }
        // The second receiver's call: from its last answer before it applied.
        let started = events
            .iter()
            .filter(|event| {
                event.actor == second.actor && event.tick <= second.tick && matches!(event.op, Op::Respond { .. })
            })
            .map(|event| event.tick)
            .filter(|tick| *tick < first.tick)
            .max()
            .unwrap_or(0);
        let suspended = events.iter().find(|event| {
            event.actor == second.actor
                && (started..=first.tick).contains(&event.tick)
                && matches!(&event.op, Op::Preempted { step, .. } if step == "handle")
        });
        if let Some(event) = suspended
            && let Op::Preempted { point, .. } = &event.op
        {
            return Some(format!(
                "an interleaving inside the call: {}'s `handle` of it was suspended inside SQLite at tick {} \
                 ({point}) while {} applied it at tick {}, then applied it again",
                second.actor, event.tick, first.actor, first.tick
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::{ActorId, Role};

    fn event(tick: u64, receiver: u32, op: Op) -> TraceEvent {
        TraceEvent {
            tick,
            actor: ActorId::new(Role::Receiver, receiver),
            op,
        }
    }

    fn apply(tick: u64, receiver: u32) -> TraceEvent {
        let op = Op::Apply {
            key: "k".to_string(),
            effect_id: tick as i64,
            result: "r".to_string(),
        };
        event(tick, receiver, op)
    }

    fn preempted(tick: u64, receiver: u32) -> TraceEvent {
        let op = Op::Preempted {
            step: "handle".to_string(),
            point: "xShmLock READ1 shared unlock".to_string(),
        };
        event(tick, receiver, op)
    }

    #[test]
    fn a_call_suspended_while_another_receiver_applied_is_named() {
        let events = [preempted(5, 1), apply(7, 0), apply(9, 1)];
        let cause = apply_between(&events, "k").expect("named");
        assert!(
            cause.contains("receiver-1's `handle` of it was suspended inside SQLite at tick 5")
                && cause.contains("while receiver-0 applied it at tick 7"),
            "{cause}"
        );
    }

    #[test]
    fn without_a_suspension_in_between_nothing_is_said() {
        assert_eq!(apply_between(&[apply(7, 0), apply(9, 1)], "k"), None);
        assert_eq!(apply_between(&[apply(7, 0), preempted(8, 1), apply(9, 1)], "k"), None);
        assert_eq!(apply_between(&[preempted(5, 0), apply(7, 0), apply(9, 0)], "k"), None);
    }
}
