//! Retry timers and the dead letter, judged under I1 (no lost command): a
//! command that failed retryably is neither lost nor done by accident. It
//! is retried by a timer the store keeps, never before that timer is due,
//! at most `max_attempts` times, and then handed to a person: visible in
//! the dead letter with its attempts and last error, and never marked done.
//!
//! - A dead-lettered row is not done.
//! - Every dead-lettered row has `attempts >= max_attempts` and its last
//!   error; no row has more than `max_attempts` attempts.
//! - Every command the trace dead-lettered is dead-lettered in the final
//!   dump (unless a power cut may have taken the write back: I9's business).
//! - No worker sends a command it read before the command's stored timer
//!   was due (`next_at`, by the clock the store read; the reader is judged
//!   by its own, skewed, clock): the store must not
//!   hand out a row whose timer is in the future. A power cut may take
//!   back the timer stored in the step it cut (its writes not yet synced):
//!   after a cut, the timers are the ones recovery found.
//!
//! Runs without `[retries]` have no timers and no such ops: nothing to judge.

use crate::model::Shown;
use std::collections::BTreeMap;

use super::{Input, Invariant, Violation};
use crate::actors::ActorId;
use crate::trace::Op;

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let snapshot = input.snapshot;
    let rows = snapshot.rows_by_id();
    let dead = snapshot.dead_lettered();
    for timer in &snapshot.timers {
        let id = timer.command_id.as_str();
        let done = timer.done || rows.get(id).is_some_and(|row| row.done);
        if let Some(at) = timer.dead_lettered_at {
            if done {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!(
                            "{id_shown} is dead-lettered (tick {at}) and marked done: a dead letter waits for a person",
                            id_shown = Shown(id)
                        ),
                    )
                    .command(id)
                    .ticks([at]),
                );
            }
            if timer.last_error.is_none() {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!(
                            "{id_shown} is dead-lettered without its last error",
                            id_shown = Shown(id)
                        ),
                    )
                    .command(id)
                    .ticks([at]),
                );
            }
            if let Some(max) = input.max_attempts
                && timer.attempts < max
            {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!(
                            "{id_shown} is dead-lettered after {} attempt(s), before its {max} allowed",
                            timer.attempts,
                            id_shown = Shown(id)
                        ),
                    )
                    .command(id)
                    .ticks([at]),
                );
            }
        }
        if let Some(max) = input.max_attempts
            && timer.attempts > max
        {
            violations.push(
                Violation::new(
                    Invariant::I1,
                    format!(
                        "{id_shown} was attempted {} times, more than max_attempts {max}",
                        timer.attempts,
                        id_shown = Shown(id)
                    ),
                )
                .command(id),
            );
        }
    }

    // The latest timer's due tick per command; the tick and due tick of
    // each worker's latest read of a command, if it came early.
    let mut timers: BTreeMap<&str, u64> = BTreeMap::new();
    let mut early: BTreeMap<(ActorId, &str), (u64, u64)> = BTreeMap::new();
    // Timers are due by the clock of the store that read them, so reads
    // and sends are judged by the reading actor's own (skewed) clock.
    let mut offsets: BTreeMap<ActorId, i64> = BTreeMap::new();
    let mut cuts = super::resets(input.events, input.recoveries, input.restores).into_iter();
    // The timers and the clock when each actor's call was first suspended
    // inside the store (`[preempt]`): a read answered after a suspension
    // may show the rows as they were when it began.
    let mut suspended: BTreeMap<ActorId, (BTreeMap<&str, u64>, u64)> = BTreeMap::new();
    for event in input.events {
        let clock = event
            .tick
            .saturating_add_signed(offsets.get(&event.actor).copied().unwrap_or(0));
        let began = match event.op {
            Op::Preempted { .. } => {
                suspended.entry(event.actor).or_insert_with(|| (timers.clone(), clock));
                continue;
            }
            // Recorded before the call is asked again.
            ref op if op.at_step_start() => None,
            _ => suspended.remove(&event.actor),
        };
        let (read_timers, read_clock) = match &began {
            Some((timers, clock)) => (timers, *clock),
            None => (&timers, clock),
        };
        match &event.op {
            Op::Skew { offset } | Op::ClockStep { offset, .. } => {
                offsets.insert(event.actor, *offset);
            }
            Op::RetryScheduled {
                command_id, next_at, ..
            } => {
                timers.insert(command_id, *next_at);
            }
            // A cut inside the step that stored a timer may take it back
            // (its writes were not synced yet): from here on, the timers
            // are the ones recovery found, and every actor starts afresh.
            Op::PowerCut { .. } | Op::RolledBack { .. } => {
                timers.clear();
                early.clear();
                if let Some(recovery) = cuts.next() {
                    for timer in &recovery.snapshot.timers {
                        if let Some(due) = timer.next_attempt_at {
                            timers.insert(timer.command_id.as_str(), due);
                        }
                    }
                }
            }
            // Visible at the end, unless a power cut or a restore took the write back.
            Op::DeadLettered { command_id, .. }
                if !dead.contains_key(command_id.as_str())
                    && input.recoveries.is_empty()
                    && input.restores.is_empty() =>
            {
                violations.push(
                    Violation::new(
                        Invariant::I1,
                        format!(
                            "{command_id_shown} was dead-lettered at tick {}, but the final dump does not show it",
                            event.tick,
                            command_id_shown = Shown(command_id)
                        ),
                    )
                    .command(command_id)
                    .ticks([event.tick]),
                );
            }
            Op::Pending { command_ids, .. } => {
                for command_id in command_ids {
                    note_read(read_timers, &mut early, event.actor, command_id, read_clock);
                }
            }
            Op::Claim { claimed, .. } => {
                for claim in claimed {
                    note_read(read_timers, &mut early, event.actor, &claim.command_id, read_clock);
                }
            }
            Op::Send { command_id, .. } => {
                if let Some((read, due)) = early.remove(&(event.actor, command_id.as_str()))
                    && clock < due
                {
                    violations.push(
                        Violation::new(
                            Invariant::I1,
                            format!(
                                "{} sent {command_id_shown} at tick {clock} by its clock, before its retry timer was due \
                                 (tick {due}): the store handed it out at {read} by its clock",
                                event.actor, command_id_shown = Shown(command_id)
                            ),
                        )
                        .command(command_id)
                        .ticks([event.tick]),
                    );
                }
            }
            _ => {}
        }
    }
    violations
}

/// `actor` read `command_id` at `tick`: early if the command's latest timer
/// is not due yet.
fn note_read<'a>(
    timers: &BTreeMap<&str, u64>,
    early: &mut BTreeMap<(ActorId, &'a str), (u64, u64)>,
    actor: ActorId,
    command_id: &'a str,
    tick: u64,
) {
    match timers.get(command_id) {
        Some(due) if tick < *due => {
            early.insert((actor, command_id), (tick, *due));
        }
        _ => {
            early.remove(&(actor, command_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::Invariant::{self, I1};
    use super::super::fixtures::{Fixture, clean};
    use crate::actors::{ActorId, Role};
    use crate::store::Timer;
    use crate::trace::Op;

    const ID: &str = "trip-000:2:0";

    fn only(fixture: &Fixture, expected: &[Invariant]) {
        let found = fixture.invariants();
        let expected: BTreeSet<Invariant> = expected.iter().copied().collect();
        assert_eq!(found, expected, "violations: {:#?}", fixture.violations());
    }

    /// The clean run with `ID` dead-lettered after `attempts` attempts.
    fn dead_lettered(attempts: u32) -> Fixture {
        let mut fixture = clean();
        fixture.max_attempts = Some(3);
        fixture.row(ID).done = false;
        fixture.row(ID).result = None;
        fixture.snapshot.timers.push(Timer {
            command_id: ID.into(),
            workflow_id: "trip-000".into(),
            attempts,
            next_attempt_at: None,
            dead_lettered_at: Some(500),
            last_error: Some("receiver unavailable".into()),
            done: false,
        });
        fixture
    }

    #[test]
    fn a_dead_letter_with_its_attempts_is_settled_and_needs_no_done() {
        only(&dead_lettered(3), &[]);
    }

    #[test]
    fn a_dead_letter_marked_done_is_rejected() {
        let mut fixture = dead_lettered(3);
        fixture.row(ID).done = true;
        only(&fixture, &[I1]);
    }

    #[test]
    fn a_dead_letter_before_its_attempts_or_without_its_error_is_rejected() {
        only(&dead_lettered(2), &[I1]);
        let mut fixture = dead_lettered(3);
        fixture.snapshot.timers[0].last_error = None;
        only(&fixture, &[I1]);
        let mut fixture = dead_lettered(4);
        fixture.snapshot.timers[0].dead_lettered_at = Some(9);
        only(&fixture, &[I1]);
    }

    #[test]
    fn a_dead_letter_the_dump_lost_is_rejected() {
        let mut fixture = clean();
        fixture.push(
            ActorId::new(Role::Worker, 0),
            Op::DeadLettered {
                command_id: ID.into(),
                attempts: 3,
                error: "x".into(),
            },
        );
        only(&fixture, &[I1]);
    }

    fn scheduled(fixture: &mut Fixture, next_at: u64) {
        fixture.push(
            ActorId::new(Role::Worker, 0),
            Op::RetryScheduled {
                command_id: ID.into(),
                attempt: 1,
                next_at,
                error: "x".into(),
                token: None,
            },
        );
    }

    fn send(fixture: &mut Fixture, worker: ActorId) {
        fixture.push(
            worker,
            Op::Send {
                command_id: ID.into(),
                key: ID.into(),
                to: ActorId::new(Role::Receiver, 0),
                attempt: 1,
            },
        );
    }

    fn read_and_send(fixture: &mut Fixture) {
        let worker = ActorId::new(Role::Worker, 1);
        fixture.push(
            worker,
            Op::Pending {
                limit: 1,
                command_ids: vec![ID.into()],
            },
        );
        send(fixture, worker);
    }

    #[test]
    fn a_row_handed_out_before_its_timer_and_sent_is_rejected() {
        let mut fixture = clean();
        let now = fixture.events.last().unwrap().tick;
        scheduled(&mut fixture, now + 100);
        read_and_send(&mut fixture);
        only(&fixture, &[I1]);
    }

    #[test]
    fn a_read_suspended_before_the_timer_was_stored_may_show_the_row() {
        // `[preempt]`: worker-1's `pending` began before the timer was
        // stored, was suspended inside the store, and answered after it.
        let mut fixture = clean();
        let now = fixture.events.last().unwrap().tick;
        let suspended = Op::Preempted {
            step: "pending".into(),
            point: "xShmLock READ1 shared unlock".into(),
            sql: None,
            meanwhile: Vec::new(),
        };
        fixture.push(ActorId::new(Role::Worker, 1), suspended);
        scheduled(&mut fixture, now + 100);
        read_and_send(&mut fixture);
        only(&fixture, &[]);
    }

    #[test]
    fn a_row_read_before_its_timer_was_stored_may_still_be_sent() {
        // Without leases another worker may hold the row already: its send
        // is not a retry the timer governs.
        let mut fixture = clean();
        let now = fixture.events.last().unwrap().tick;
        let worker = ActorId::new(Role::Worker, 1);
        fixture.push(
            worker,
            Op::Pending {
                limit: 1,
                command_ids: vec![ID.into()],
            },
        );
        scheduled(&mut fixture, now + 100);
        send(&mut fixture, worker);
        only(&fixture, &[]);
        // And a row read once due is fine.
        let mut fixture = clean();
        scheduled(&mut fixture, now);
        read_and_send(&mut fixture);
        only(&fixture, &[]);
    }

    #[test]
    fn a_timer_a_power_cut_took_back_governs_no_read_after_it() {
        // The cut came inside the step that stored the timer: its writes
        // were not synced, and recovery found no timer. The row is due.
        let cut = |kept: bool| {
            let mut fixture = clean();
            let now = fixture.events.last().unwrap().tick;
            scheduled(&mut fixture, now + 100);
            fixture.push(
                ActorId::new(Role::Worker, 0),
                Op::PowerCut {
                    point: 9,
                    model: "drop_unsynced".into(),
                },
            );
            let mut snapshot = fixture.snapshot.clone();
            snapshot.timers = match kept {
                true => vec![Timer {
                    command_id: ID.into(),
                    workflow_id: "trip-000".into(),
                    attempts: 1,
                    next_attempt_at: Some(now + 100),
                    dead_lettered_at: None,
                    last_error: Some("x".into()),
                    done: false,
                }],
                false => Vec::new(),
            };
            fixture.recoveries.push(crate::sim::Recovery {
                tick: now + 1,
                point: 9,
                snapshot,
            });
            read_and_send(&mut fixture);
            fixture
        };
        only(&cut(false), &[]);
        // A timer recovery kept still governs.
        only(&cut(true), &[I1]);
    }
}
