//! The worker: delivers the outbox at least once.
//!
//! It reads a batch of pending rows, and for each one sends the command to a
//! receiver with its `command_id` as the idempotency key, waits for a reply,
//! and marks the row done with the confirmed result. A timeout means
//! "outcome unknown": it sends again with the same key, never marking done on
//! a guess. Without leases workers compete for the same rows, so a command
//! is often delivered by several of them: the receiver folds those.
//!
//! With leases (`[leases]`), a worker claims its batch instead: each row
//! for `ticks` ticks with a fencing token (`Store::claim`). It sends a row
//! only while its lease is live by its own (possibly skewed) clock, less the
//! lease margin (else it leaves the row to the next claim), and acknowledges with the token
//! (`Store::mark_done_leased`), which the store rejects if the row was
//! claimed again meanwhile (the worker paused, or its reply came late): a
//! late acknowledgement is recorded as rejected and the worker moves on.
//!
//! With retry timers (`[retries]`), a retryable answer is not resent at
//! once: the worker stores the row's next attempt in the database and moves
//! on (`retry.rs`); any worker takes the row up again once it is due.

mod retry;

use std::collections::VecDeque;

use super::{KillPoint, Message, Next, Role, retry_or_crash};
use crate::actors::Ctx;
use crate::model::OutboxRow;
use crate::store::{Leased, Outcome, Request, Store};
use crate::trace::{Claimed, Op};

pub struct Worker {
    store: Box<dyn Store>,
    state: State,
    /// Replies received and not yet looked at, as (key, outcome).
    replies: Vec<(String, Outcome)>,
}

enum State {
    Idle,
    Working {
        batch: VecDeque<(OutboxRow, Option<Lease>)>,
        current: Option<Box<Delivery>>,
    },
}

/// The worker's lease on a row it claimed.
#[derive(Clone, Copy)]
struct Lease {
    token: u64,
    expires: u64,
}

struct Delivery {
    row: OutboxRow,
    /// With leases: the claim the row is delivered under.
    lease: Option<Lease>,
    key: String,
    attempt: u32,
    stage: Stage,
}

enum Stage {
    /// Only for an engine that marks rows done before delivering them.
    MarkEarly,
    Send,
    Await {
        deadline: u64,
    },
    MarkDone {
        result: String,
    },
    /// The delivery failed retryably: store its timer (`retry.rs`).
    Schedule {
        error: String,
        /// The jitter of a `schedule_retry` call suspended inside the
        /// store, which is asked again as it was.
        jitter: Option<u64>,
    },
}

impl Worker {
    pub fn new(store: Box<dyn Store>) -> Worker {
        Worker {
            store,
            state: State::Idle,
            replies: Vec::new(),
        }
    }

    pub fn synchronous(&self) -> Option<u8> {
        self.store.synchronous()
    }

    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    /// Replies are kept for the delivery waiting on them; a nudge needs no
    /// keeping: arriving wakes an idle worker, which then reads pending rows.
    pub fn deliver(&mut self, message: Message) {
        if let Message::Reply { key, outcome } = message {
            self.replies.push((key, outcome));
        }
    }

    pub fn step(&mut self, ctx: &mut Ctx<'_>) -> Next {
        match &mut self.state {
            State::Idle => self.read_pending(ctx).unwrap_or_else(|next| next),
            State::Working { batch, current } => {
                if current.is_none() {
                    let Some((row, lease)) = batch.pop_front() else {
                        // Batch done: look for more in this same step.
                        self.state = State::Idle;
                        return self.read_pending(ctx).unwrap_or_else(|next| next);
                    };
                    let stage = if ctx.world.engine.mark_done_before_delivery() {
                        Stage::MarkEarly
                    } else {
                        Stage::Send
                    };
                    *current = Some(Box::new(Delivery {
                        key: String::new(),
                        row,
                        lease,
                        attempt: 1,
                        stage,
                    }));
                }
                let delivery = current.as_mut().expect("set above");
                let (next, finished) = deliver_step(ctx, &mut *self.store, &mut self.replies, delivery);
                if finished {
                    *current = None;
                }
                next
            }
        }
    }

    fn read_pending(&mut self, ctx: &mut Ctx<'_>) -> Result<Next, Next> {
        let rows: Vec<(OutboxRow, Option<Lease>)> = match ctx.world.lease_ticks {
            None => {
                let rows = retry_or_crash(ctx, "pending", self.store.pending(ctx.world.pending_batch))?;
                ctx.record(Op::Pending {
                    limit: ctx.world.pending_batch,
                    command_ids: rows.iter().map(|row| row.command_id.clone()).collect(),
                });
                rows.into_iter().map(|row| (row, None)).collect()
            }
            Some(ticks) => self.claim(ctx, ticks)?,
        };
        if ctx.kill_point(KillPoint::WorkerAfterReadPending) {
            return Err(Next::Killed(KillPoint::WorkerAfterReadPending));
        }
        if rows.is_empty() {
            // A writer's nudge wakes the worker early; else it polls again.
            return Ok(Next::Wait {
                deadline: Some(ctx.now + ctx.world.poll_ticks),
            });
        }
        let mut rows = rows;
        // Shuffled so that competing workers do not march in lockstep.
        ctx.prng.shuffle(&mut rows);
        self.state = State::Working {
            batch: rows.into(),
            current: None,
        };
        Ok(Next::Continue)
    }

    /// Claims a batch under leases of `ticks` ticks, as this life of the worker.
    fn claim(&mut self, ctx: &mut Ctx<'_>, ticks: u64) -> Result<Vec<(OutboxRow, Option<Lease>)>, Next> {
        let owner = format!("{}#{}", ctx.me, ctx.incarnation);
        let claimed: Vec<Leased> =
            retry_or_crash(ctx, "claim", self.store.claim(&owner, ticks, ctx.world.pending_batch))?;
        ctx.record(Op::Claim {
            owner,
            expires: claimed.first().map_or(ctx.clock() + ticks, |leased| leased.expires),
            claimed: claimed
                .iter()
                .map(|leased| Claimed {
                    command_id: leased.row.command_id.clone(),
                    token: leased.token,
                })
                .collect(),
        });
        Ok(claimed
            .into_iter()
            .map(|leased| {
                let lease = Lease {
                    token: leased.token,
                    expires: leased.expires,
                };
                (leased.row, Some(lease))
            })
            .collect())
    }
}

/// One step of one delivery; returns the next wake-up and whether the
/// delivery is over.
fn deliver_step(
    ctx: &mut Ctx<'_>,
    store: &mut dyn Store,
    replies: &mut Vec<(String, Outcome)>,
    delivery: &mut Delivery,
) -> (Next, bool) {
    match &delivery.stage {
        Stage::MarkEarly => match mark_done(ctx, store, delivery, None) {
            Ok(next) => {
                delivery.stage = Stage::Send;
                (next, false)
            }
            Err(next) => (next, false),
        },
        Stage::Send => {
            // The lease is judged by the worker's own clock, which may be
            // skewed, and given up `lease_margin_ticks` early.
            if let Some(lease) = delivery.lease
                && ctx.clock() >= lease.expires.saturating_sub(ctx.world.lease_margin_ticks)
            {
                ctx.record(Op::LeaseLost {
                    command_id: delivery.row.command_id.clone(),
                    token: lease.token,
                });
                return (Next::Continue, true);
            }
            if ctx.kill_point(KillPoint::WorkerBeforeDeliver) {
                return (Next::Killed(KillPoint::WorkerBeforeDeliver), false);
            }
            let nonce = ctx.prng.next_u64();
            delivery.key = ctx.world.engine.idempotency_key(&delivery.row, delivery.attempt, nonce);
            let to = ctx.pick_receiver();
            let request = Request {
                key: delivery.key.clone(),
                kind: delivery.row.kind.clone(),
                payload: delivery.row.payload.clone(),
                attempt: delivery.attempt,
                sent_tick: ctx.now,
            };
            ctx.record(Op::Send {
                command_id: delivery.row.command_id.clone(),
                key: delivery.key.clone(),
                to,
                attempt: delivery.attempt,
            });
            ctx.request(to, request);
            let deadline = ctx.now + ctx.world.reply_timeout_ticks;
            delivery.stage = Stage::Await { deadline };
            (
                Next::Wait {
                    deadline: Some(deadline),
                },
                false,
            )
        }
        Stage::Await { deadline } => {
            let deadline = *deadline;
            // Replies to earlier keys (late answers to finished deliveries) are dropped.
            let found = replies.iter().position(|(key, _)| *key == delivery.key);
            let reply = found.map(|index| replies.swap_remove(index));
            replies.clear();
            let Some((key, outcome)) = reply else {
                if ctx.now < deadline {
                    return (
                        Next::Wait {
                            deadline: Some(deadline),
                        },
                        false,
                    );
                }
                ctx.record(Op::Timeout {
                    key: delivery.key.clone(),
                    attempt: delivery.attempt,
                });
                delivery.attempt += 1;
                delivery.stage = Stage::Send;
                return (Next::Continue, false);
            };
            ctx.record(Op::Reply {
                key,
                outcome: outcome.clone(),
            });
            if ctx.kill_point(KillPoint::WorkerAfterDeliver) {
                return (Next::Killed(KillPoint::WorkerAfterDeliver), false);
            }
            match outcome.result() {
                Some(result) => {
                    delivery.stage = Stage::MarkDone {
                        result: result.to_string(),
                    };
                    (Next::Continue, false)
                }
                None if matches!(outcome, Outcome::Retryable { .. }) => retry::on_retryable(ctx, delivery, outcome),
                None => {
                    // A conflict on our own key means someone else used it for
                    // another operation: never mark done on that. The row stays
                    // pending and the run will not settle (reported).
                    ctx.record(Op::Failed {
                        step: "deliver".to_string(),
                        error: format!("receiver reported a key conflict for {}", delivery.key),
                    });
                    (Next::Continue, true)
                }
            }
        }
        Stage::MarkDone { result } => match mark_done(ctx, store, delivery, Some(result)) {
            Ok(next) => (next, true),
            Err(next) => (next, false),
        },
        Stage::Schedule { .. } => retry::schedule(ctx, store, delivery),
    }
}

/// The mark-done step with its kill points; `Err` if the step must be
/// retried or the worker dies.
/// With a lease, the acknowledgement carries its fencing token.
fn mark_done(
    ctx: &mut Ctx<'_>,
    store: &mut dyn Store,
    delivery: &Delivery,
    result: Option<&str>,
) -> Result<Next, Next> {
    if ctx.kill_point(KillPoint::WorkerBeforeMarkDone) {
        return Err(Next::Killed(KillPoint::WorkerBeforeMarkDone));
    }
    let row = &delivery.row;
    let token = delivery.lease.map(|lease| lease.token);
    let marked = match token {
        None => store.mark_done(&row.command_id, result),
        Some(token) => store.mark_done_leased(&row.command_id, token, result),
    };
    let changed = retry_or_crash(ctx, "mark_done", marked)?;
    ctx.record(Op::MarkDone {
        command_id: row.command_id.clone(),
        changed,
        token,
    });
    if ctx.kill_point(KillPoint::WorkerAfterMarkDone) {
        return Err(Next::Killed(KillPoint::WorkerAfterMarkDone));
    }
    // Only a result is news for the writers.
    if changed && result.is_some() {
        ctx.nudge(Role::Writer, &row.workflow_id);
    }
    Ok(Next::Continue)
}
