//! The worker: delivers the outbox at least once.
//!
//! It reads a batch of pending rows, and for each one sends the command to a
//! receiver with its `command_id` as the idempotency key, waits for a reply,
//! and marks the row done with the confirmed result. A timeout means
//! "outcome unknown": it sends again with the same key, never marking done on
//! a guess. Workers compete for the same rows (there are no leases yet), so a
//! command is often delivered by several of them: the receiver folds those.

use std::collections::VecDeque;

use super::{Next, Role, retry_or_crash};
use crate::model::OutboxRow;
use crate::sim::Ctx;
use crate::sim::faults::KillPoint;
use crate::sim::net::Message;
use crate::store::{Outcome, Request, Store};
use crate::trace::Op;

pub struct Worker {
    store: Box<dyn Store>,
    state: State,
    /// Replies received and not yet looked at, as (key, outcome).
    replies: Vec<(String, Outcome)>,
}

enum State {
    Idle,
    Working {
        batch: VecDeque<OutboxRow>,
        current: Option<Box<Delivery>>,
    },
}

struct Delivery {
    row: OutboxRow,
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
                    let Some(row) = batch.pop_front() else {
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
        let rows = retry_or_crash(ctx, "pending", self.store.pending(ctx.world.pending_batch))?;
        ctx.record(Op::Pending {
            command_ids: rows.iter().map(|row| row.command_id.clone()).collect(),
        });
        if ctx.kill_point(KillPoint::WorkerAfterReadPending) {
            return Err(Next::Killed(KillPoint::WorkerAfterReadPending));
        }
        if rows.is_empty() {
            // A writer's nudge wakes the worker early; else it polls again.
            return Ok(Next::Wait {
                deadline: Some(ctx.now + ctx.world.timing.poll_ticks),
            });
        }
        let mut rows: Vec<OutboxRow> = rows;
        // Shuffled so that competing workers do not march in lockstep.
        ctx.prng.shuffle(&mut rows);
        self.state = State::Working {
            batch: rows.into(),
            current: None,
        };
        Ok(Next::Continue)
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
        Stage::MarkEarly => match mark_done(ctx, store, &delivery.row, None) {
            Ok(next) => {
                delivery.stage = Stage::Send;
                (next, false)
            }
            Err(next) => (next, false),
        },
        Stage::Send => {
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
            let deadline = ctx.now + ctx.world.timing.reply_timeout_ticks;
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
        Stage::MarkDone { result } => match mark_done(ctx, store, &delivery.row, Some(result)) {
            Ok(next) => (next, true),
            Err(next) => (next, false),
        },
    }
}

/// The mark-done step with its kill points; `Err` if the step must be
/// retried or the worker dies.
fn mark_done(ctx: &mut Ctx<'_>, store: &mut dyn Store, row: &OutboxRow, result: Option<&str>) -> Result<Next, Next> {
    if ctx.kill_point(KillPoint::WorkerBeforeMarkDone) {
        return Err(Next::Killed(KillPoint::WorkerBeforeMarkDone));
    }
    let changed = retry_or_crash(ctx, "mark_done", store.mark_done(&row.command_id, result))?;
    ctx.record(Op::MarkDone {
        command_id: row.command_id.clone(),
        changed,
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
