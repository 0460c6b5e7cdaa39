//! The worker's side of retry timers: what it does with a retryable answer.
//!
//! With `[retries]`, the failure is recorded in one store call
//! (`Store::schedule_retry`): one more attempt and the row's next due tick,
//! or the dead letter once the attempts are spent. The worker then drops the
//! row; it keeps nothing about it in memory, so a worker that dies (before
//! or after the call) leaves the database to say what happens next: before
//! the call, the row is still due and is delivered again at once (an
//! attempt that is not counted); after it, the row waits for its timer.
//! The jitter is drawn from the worker's own stream, and only in runs with
//! `[retries]`, so other runs draw nothing new.
//!
//! Without `[retries]` (an outside store that answers retryably anyway) the
//! answer is treated as a timeout: the same key is sent again at once.

use super::{Delivery, Stage};
use crate::actors::Ctx;
use crate::actors::{Next, retry_or_crash};
use crate::store::{Outcome, Store};
use crate::trace::Op;

/// The most jitter, in thousandths of the delay: at most half of it.
pub const JITTER_PERMILLE_MAX: u64 = 500;

/// The delivery got `outcome`, a retryable error.
pub(super) fn on_retryable(ctx: &mut Ctx<'_>, delivery: &mut Delivery, outcome: Outcome) -> (Next, bool) {
    let Outcome::Retryable { error } = outcome else {
        unreachable!("called for retryable outcomes only")
    };
    if ctx.world.retries.is_none() {
        delivery.attempt += 1;
        delivery.stage = Stage::Send;
    } else {
        delivery.stage = Stage::Schedule { error, jitter: None };
    }
    (Next::Continue, false)
}

/// Stores the timer (or the dead letter) of the delivery's row; the
/// delivery is over either way.
pub(super) fn schedule(ctx: &mut Ctx<'_>, store: &mut dyn Store, delivery: &mut Delivery) -> (Next, bool) {
    let Stage::Schedule { error, jitter: pinned } = &mut delivery.stage else {
        unreachable!("called at the schedule stage only")
    };
    let error = error.clone();
    let policy = ctx.world.retries.expect("scheduled only with [retries]");
    let jitter = match pinned.take() {
        Some(jitter) => jitter,
        None => ctx.prng.range_inclusive(0, JITTER_PERMILLE_MAX),
    };
    let command_id = delivery.row.command_id.clone();
    let token = delivery.lease.map(|lease| lease.token);
    let stored = store.schedule_retry(&command_id, token, &error, &policy, jitter);
    let retried = match retry_or_crash(ctx, "schedule_retry", stored) {
        Ok(retried) => retried,
        Err(Next::Preempted) => {
            if let Stage::Schedule { jitter: pinned, .. } = &mut delivery.stage {
                *pinned = Some(jitter);
            }
            return (Next::Preempted, false);
        }
        Err(next) => return (next, false),
    };
    ctx.record(match retried {
        None => Op::RetryUnchanged {
            command_id,
            error,
            token,
        },
        Some(retried) if retried.dead_lettered => Op::DeadLettered {
            command_id,
            attempts: retried.attempts,
            error,
        },
        Some(retried) => Op::RetryScheduled {
            command_id,
            attempt: retried.attempts,
            next_at: retried.next_attempt_at.unwrap_or(ctx.now),
            error,
            token,
        },
    });
    (Next::Continue, true)
}
