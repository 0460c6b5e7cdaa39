//! When a finding's cause is an interleaving inside a call (`[preempt]`),
//! its first line says so: a receiver whose `handle` was suspended inside
//! SQLite while another receiver applied the same command, and then
//! applied it too (I2); a writer whose append was suspended while another
//! writer committed from the same head, and then committed too (I3).
//!
//! Where crashsim saw them (a store's SQLite with its extension), the line
//! names the statements around the point: the one the suspended connection
//! was in, and those the other actor's connection ran meanwhile.

use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// The steps of an append, whole (`call`) or split (`step`).
const APPEND_STEPS: [&str; 5] = ["append", "begin", "insert_event", "insert_command", "commit"];

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
        let suspended = events.iter().position(|event| {
            event.actor == second.actor
                && (started..=first.tick).contains(&event.tick)
                && matches!(&event.op, Op::Preempted { step, .. } if step == "handle")
        });
        if let Some(index) = suspended
            && let Op::Preempted { point, sql, .. } = &events[index].op
        {
            return Some(format!(
                "an interleaving inside the call: {}'s `handle` of it was suspended inside SQLite at tick {} \
                 ({}) while {} applied it at tick {}{}, then applied it again",
                second.actor,
                events[index].tick,
                at(point, sql.as_deref()),
                first.actor,
                first.tick,
                meanwhile(events, index, first.actor, first.tick)
            ));
        }
    }
    None
}

/// For two appends decided from one head that both committed, `first` by
/// its actor at its tick and then `second`: the sentence naming the
/// suspension of the second writer's append that let the first commit in
/// between, if the trace shows one.
pub fn commit_between(events: &[TraceEvent], first: (ActorId, u64), second: (ActorId, u64)) -> Option<String> {
    let ((first_actor, first_tick), (second_actor, second_tick)) = (first, second);
    if first_actor == second_actor || second_tick < first_tick {
        return None;
    }
    // The second writer's append began after its last append ended.
    let started = events
        .iter()
        .filter(|event| {
            event.actor == second_actor
                && event.tick < first_tick
                && matches!(event.op, Op::Commit { .. } | Op::Conflict { .. } | Op::Rollback)
        })
        .map(|event| event.tick)
        .max()
        .unwrap_or(0);
    let index = events.iter().position(|event| {
        event.actor == second_actor
            && (started..=first_tick).contains(&event.tick)
            && matches!(&event.op, Op::Preempted { step, .. } if APPEND_STEPS.contains(&step.as_str()))
    })?;
    let Op::Preempted { step, point, sql, .. } = &events[index].op else {
        return None;
    };
    Some(format!(
        "an interleaving inside the call: {second_actor}'s `{step}` was suspended inside SQLite at tick {} \
         ({}) while {first_actor} committed from the same head at tick {first_tick}{}, then was acknowledged too",
        events[index].tick,
        at(point, sql.as_deref()),
        meanwhile(events, index, first_actor, first_tick)
    ))
}

/// The longest a statement is quoted in a first line.
const QUOTED: usize = 72;

fn quoted(sql: &str) -> String {
    match sql.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("`{}…`", &sql[..cut]),
        None => format!("`{sql}`"),
    }
}

/// The point, and the statement the suspended connection was in there.
fn at(point: &str, sql: Option<&str>) -> String {
    match sql {
        Some(sql) => format!("{point}, in {}", quoted(sql)),
        None => point.to_string(),
    }
}

/// The statements `by` ran up to tick `until` (its commit or effect) while
/// the actor suspended at `events[index]` waited, across that suspension
/// and its later ones, as a clause; empty if the trace has none.
fn meanwhile(events: &[TraceEvent], index: usize, by: ActorId, until: u64) -> String {
    let suspended = &events[index];
    let ran: Vec<String> = events[index..]
        .iter()
        .take_while(|event| event.tick <= until)
        .filter(|event| event.actor == suspended.actor)
        .filter_map(|event| match &event.op {
            Op::Preempted { meanwhile, .. } => Some(meanwhile),
            _ => None,
        })
        .flatten()
        .filter(|ran| ran.actor == by && (suspended.tick..=until).contains(&ran.tick))
        .map(|ran| quoted(&ran.sql))
        .collect();
    match ran.is_empty() {
        true => String::new(),
        false => format!(" (running {})", ran.join("; ")),
    }
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
            sql: None,
            meanwhile: Vec::new(),
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

    fn writer(tick: u64, index: u32, op: Op) -> TraceEvent {
        TraceEvent {
            tick,
            actor: ActorId::new(Role::Writer, index),
            op,
        }
    }

    #[test]
    fn an_append_suspended_while_another_writer_committed_is_named() {
        let commit = || Op::Commit { appended: Vec::new() };
        let suspended = Op::Preempted {
            step: "append".to_string(),
            point: "xShmLock WRITE exclusive lock".to_string(),
            sql: None,
            meanwhile: Vec::new(),
        };
        let events = [
            writer(2, 1, commit()),
            writer(5, 1, suspended),
            writer(7, 0, commit()),
            writer(9, 1, commit()),
        ];
        let (first, second) = ((ActorId::new(Role::Writer, 0), 7), (ActorId::new(Role::Writer, 1), 9));
        let cause = commit_between(&events, first, second).expect("named");
        assert!(
            cause.contains("writer-1's `append` was suspended inside SQLite at tick 5")
                && cause.contains("while writer-0 committed from the same head at tick 7"),
            "{cause}"
        );
        // A suspension in an earlier append, before the writer's last commit, is not the cause.
        let earlier = [
            events[1].clone(),
            events[0].clone(),
            events[2].clone(),
            events[3].clone(),
        ];
        let earlier = earlier.map(|mut event| {
            if matches!(event.op, Op::Preempted { .. }) {
                event.tick = 1;
            }
            event
        });
        assert_eq!(commit_between(&earlier, first, second), None);
        assert_eq!(commit_between(&events, second, first), None, "in commit order only");
    }

    #[test]
    fn without_a_suspension_in_between_nothing_is_said() {
        assert_eq!(apply_between(&[apply(7, 0), apply(9, 1)], "k"), None);
        assert_eq!(apply_between(&[apply(7, 0), preempted(8, 1), apply(9, 1)], "k"), None);
        assert_eq!(apply_between(&[preempted(5, 0), apply(7, 0), apply(9, 0)], "k"), None);
    }

    #[test]
    fn the_statements_around_the_point_are_named_when_the_trace_has_them() {
        let ran = |receiver: u32, tick: u64, sql: &str| crate::trace::Ran {
            actor: ActorId::new(Role::Receiver, receiver),
            tick,
            sql: sql.to_string(),
        };
        let suspended = Op::Preempted {
            step: "handle".to_string(),
            point: "xShmLock READ1 shared unlock".to_string(),
            sql: Some("SELECT 1 FROM dedup WHERE key = ?".to_string()),
            meanwhile: vec![
                ran(0, 6, "BEGIN IMMEDIATE"),
                ran(2, 6, "DELETE FROM dedup"),
                ran(0, 7, "COMMIT"),
                // After the effect it is charged with: not part of it.
                ran(0, 8, "BEGIN IMMEDIATE"),
            ],
        };
        let events = [event(5, 1, suspended), apply(7, 0), apply(9, 1)];
        let cause = apply_between(&events, "k").expect("named");
        assert!(
            cause.contains("(xShmLock READ1 shared unlock, in `SELECT 1 FROM dedup WHERE key = ?`)")
                && cause.contains("applied it at tick 7 (running `BEGIN IMMEDIATE`; `COMMIT`), then"),
            "{cause}"
        );
        let long = "x".repeat(QUOTED + 10);
        assert_eq!(quoted(&long), format!("`{}…`", "x".repeat(QUOTED)));
    }
}
