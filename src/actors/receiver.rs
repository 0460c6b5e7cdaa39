//! The receiver actor: serves requests one at a time on its own connection
//! to the receiver's database, through the `Receiver` under test.
//!
//! Handling a request takes several steps (`begin`, `lookup`, `apply`,
//! `commit`), so two receivers (or two deliveries of one command) really
//! contend for the same key. The reply is sent only after the commit.
//!
//! With a de-dup retention (`[receivers] dedup_retention_ticks`), before it
//! takes up a request the receiver purges the records older than the
//! retention (`Receiver::purge_dedup`), at most every `purge_every` ticks.

use std::collections::VecDeque;

use super::{Address, KillPoint, Message, Next, retry_or_crash};
use crate::actors::Ctx;
use crate::store::{Granularity, Lookup, Outcome, Receiver, Request};
use crate::trace::Op;

pub struct ReceiverActor {
    receiver: Box<dyn Receiver>,
    inbox: VecDeque<(Request, Address)>,
    current: Option<Handling>,
    /// With a retention: the tick of this life's last purge.
    purged_at: Option<u64>,
    /// Whether this life's last step was a purge.
    just_purged: bool,
    /// The tick of a purge whose call is suspended inside the store.
    purging: Option<u64>,
}

struct Handling {
    request: Request,
    reply_to: Address,
    stage: Stage,
}

enum Stage {
    Begin,
    Lookup,
    Apply,
    Commit {
        result: String,
    },
    /// A repeat or a conflict: end the transaction, then answer.
    Finish {
        outcome: Outcome,
    },
}

impl ReceiverActor {
    pub fn new(receiver: Box<dyn Receiver>) -> ReceiverActor {
        ReceiverActor {
            receiver,
            inbox: VecDeque::new(),
            current: None,
            purged_at: None,
            just_purged: false,
            purging: None,
        }
    }

    pub fn synchronous(&self) -> Option<u8> {
        self.receiver.synchronous()
    }

    pub fn is_idle(&self) -> bool {
        self.current.is_none() && self.inbox.is_empty()
    }

    pub fn deliver(&mut self, message: Message) {
        if let Message::Request { request, reply_to } = message {
            self.inbox.push_back((request, reply_to));
        }
    }

    pub fn step(&mut self, ctx: &mut Ctx<'_>) -> Next {
        // A purge never takes two steps in a row: however short the
        // retention, a waiting request is taken up between two purges.
        let just_purged = std::mem::take(&mut self.just_purged);
        let due = |receiver: &Self, retention| {
            receiver.current.is_none()
                && !receiver.inbox.is_empty()
                && !just_purged
                && receiver
                    .purged_at
                    .is_none_or(|at| ctx.now >= at + purge_every(retention, ctx))
        };
        if let Some(retention) = ctx.world.dedup_retention_ticks
            && (self.purging.is_some() || due(self, retention))
        {
            // A purge suspended inside the store is asked again as it was.
            let now = *self.purging.get_or_insert(ctx.now);
            let purged = retry_or_crash(ctx, "purge_dedup", self.receiver.purge_dedup(now, retention));
            if !matches!(purged, Err(Next::Preempted)) {
                self.purging = None;
            }
            return match purged {
                Ok(removed) => {
                    self.purged_at = Some(ctx.now);
                    self.just_purged = true;
                    ctx.record(Op::DedupPurged {
                        before: ctx.now.saturating_sub(retention),
                        removed,
                    });
                    Next::Continue
                }
                Err(next) => next,
            };
        }
        if self.current.is_none() {
            let Some((request, reply_to)) = self.inbox.pop_front() else {
                return Next::Wait { deadline: None };
            };
            ctx.record(Op::Receive {
                key: request.key.clone(),
                from: reply_to.actor,
            });
            self.current = Some(Handling {
                request,
                reply_to,
                stage: Stage::Begin,
            });
        }
        let handling = self.current.as_mut().expect("set above");
        match advance(ctx, &mut *self.receiver, handling) {
            Ok(Some(outcome)) => {
                let handling = self.current.take().expect("in progress");
                let key = handling.request.key;
                ctx.record(Op::Respond {
                    key: key.clone(),
                    to: handling.reply_to.actor,
                    outcome: outcome.clone(),
                });
                ctx.send(handling.reply_to, Message::Reply { key, outcome });
                Next::Continue
            }
            Ok(None) => Next::Continue,
            Err(next) => next,
        }
    }
}

/// How often a receiver purges: every 1/64 of the retention, and at least
/// once per poll interval (so purges come round while retries are pending).
fn purge_every(retention: u64, ctx: &Ctx<'_>) -> u64 {
    (retention / 64).min(ctx.world.poll_ticks).max(1)
}

/// Runs the current stage; `Ok(Some(outcome))` when the request is answered.
fn advance(ctx: &mut Ctx<'_>, receiver: &mut dyn Receiver, handling: &mut Handling) -> Result<Option<Outcome>, Next> {
    let request = &handling.request;
    if ctx.world.roles.receiver == Granularity::Call {
        return handle_call(ctx, receiver, request).map(Some);
    }
    match &handling.stage {
        Stage::Begin => {
            retry_or_crash(ctx, "begin", receiver.begin())?;
            ctx.record(Op::Begin);
            handling.stage = Stage::Lookup;
        }
        Stage::Lookup => {
            let found = retry_or_crash(ctx, "lookup", receiver.lookup(request))?;
            ctx.record(Op::Lookup {
                key: request.key.clone(),
                found: found.clone(),
            });
            handling.stage = match found {
                Lookup::New => Stage::Apply,
                Lookup::Seen { result } => Stage::Finish {
                    outcome: Outcome::Duplicate { result },
                },
                Lookup::Conflict => Stage::Finish {
                    outcome: Outcome::Conflict,
                },
            };
        }
        Stage::Apply => {
            let applied = retry_or_crash(ctx, "apply", receiver.apply(request))?;
            ctx.record(Op::Apply {
                key: request.key.clone(),
                effect_id: applied.effect_id,
                result: applied.result.clone(),
            });
            handling.stage = Stage::Commit { result: applied.result };
        }
        Stage::Commit { result } => {
            if ctx.kill_point(KillPoint::ReceiverBeforeEffectCommit) {
                return Err(Next::Killed(KillPoint::ReceiverBeforeEffectCommit));
            }
            retry_or_crash(ctx, "commit", receiver.commit())?;
            ctx.record(Op::Commit { appended: Vec::new() });
            if ctx.kill_point(KillPoint::ReceiverAfterEffectCommit) {
                return Err(Next::Killed(KillPoint::ReceiverAfterEffectCommit));
            }
            return Ok(Some(Outcome::Applied { result: result.clone() }));
        }
        Stage::Finish { outcome } => {
            retry_or_crash(ctx, "rollback", receiver.rollback())?;
            ctx.record(Op::Rollback);
            return Ok(Some(outcome.clone()));
        }
    }
    Ok(None)
}

/// The whole request as one call, for a receiver of `call` granularity:
/// `receiver.before_effect_commit` is reached only where the simulator can
/// kill the store's process inside the call.
fn handle_call(ctx: &mut Ctx<'_>, receiver: &mut dyn Receiver, request: &Request) -> Result<Outcome, Next> {
    // Where the store's process can die inside the call, it dies there.
    let dies = ctx.kill_inside_call(KillPoint::ReceiverBeforeEffectCommit);
    let handled = receiver.handle(request);
    if dies {
        ctx.call_over();
        return Err(Next::Killed(KillPoint::ReceiverBeforeEffectCommit));
    }
    let handled = retry_or_crash(ctx, "handle", handled)?;
    let found = match &handled.outcome {
        Outcome::Applied { .. } => Lookup::New,
        Outcome::Duplicate { result } => Lookup::Seen { result: result.clone() },
        Outcome::Conflict => Lookup::Conflict,
        // A receiver of `call` granularity that sheds load: it looked nothing up.
        Outcome::Retryable { .. } => return Ok(handled.outcome),
    };
    ctx.record(Op::Lookup {
        key: request.key.clone(),
        found,
    });
    if let Outcome::Applied { result } = &handled.outcome {
        ctx.record(Op::Apply {
            key: request.key.clone(),
            effect_id: handled.effect_id.unwrap_or_default(),
            result: result.clone(),
        });
        ctx.record(Op::Commit { appended: Vec::new() });
        if ctx.kill_point(KillPoint::ReceiverAfterEffectCommit) {
            return Err(Next::Killed(KillPoint::ReceiverAfterEffectCommit));
        }
    }
    Ok(handled.outcome)
}
