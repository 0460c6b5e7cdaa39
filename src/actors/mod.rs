//! The actors: writers, workers and receivers, each a step machine over its
//! own connection.
//!
//! An actor's `step` performs at most one store operation (one statement or
//! one transaction boundary) and says when it wants to run next (`Next`).
//! Between two steps the simulator may run any other actor, or kill this one
//! at a named kill point (`Ctx::kill_point`). Actors hold no state the
//! database does not: a killed actor is rebuilt from nothing.
//!
//! The actors are the harness's model of the application around the store
//! (the workflow engine's loops); the store and receiver they drive are the
//! code under test.
//!
//! The words actors and the simulator share live here, below the simulator:
//! `KillPoint` (kill.rs) and `Message`, `Address` (message.rs). The fault
//! plan (`crate::faults`) and the simulator (`sim::net`) re-export them.
//! Who acts (`ActorId`, `Role`) is the trace's word, re-exported here.

mod ctx;
mod kill;
mod message;
pub mod receiver;
pub mod worker;
pub mod writer;

pub use crate::trace::{ActorId, Role};
pub use ctx::{Ctx, Gate, TripRequest, World};
pub use kill::{KILL_POINTS, KillPoint};
pub use message::{Address, Message};

use crate::store::{self, System, Who};

/// When the actor wants its next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Soon: after one step's duration.
    Continue,
    /// After this many ticks (polling for work).
    Sleep(u64),
    /// When a message arrives, or at the deadline tick if there is one.
    Wait { deadline: Option<u64> },
    /// The step met a lock: retry it after a backoff that grows with each
    /// busy answer in a row, as SQLite's own busy handler does, in ticks.
    Busy,
    /// The step's call is suspended inside the store's SQLite
    /// (`StoreError::Preempted`): the simulator lets others run, then
    /// steps the actor again, which asks the same call again.
    Preempted,
    /// The simulator fired this kill point: the actor dies now.
    Killed(KillPoint),
    /// An unexpected store error: the actor dies as a process would on an
    /// unhandled error, and restarts like after a kill.
    Crash,
    /// The store broke its contract with the harness (see
    /// `StoreError::Broken`): the run stops without a verdict.
    Abort(String),
    /// The environment failed under the store (a full disk, an I/O error:
    /// `StoreError::environment`). Unless the simulator caused it (a power
    /// cut), the run stops without a verdict.
    Environment(String),
}

/// One live actor.
pub enum Actor {
    Writer(writer::Writer),
    Worker(worker::Worker),
    Receiver(receiver::ReceiverActor),
}

impl Actor {
    /// Opens the actor's connection: a fresh life with empty memory.
    pub fn open(role: Role, system: &mut dyn System, who: &Who<'_>) -> store::Result<Actor> {
        Ok(match role {
            Role::Writer => Actor::Writer(writer::Writer::new(system.open_store(who)?)),
            Role::Worker => Actor::Worker(worker::Worker::new(system.open_store(who)?)),
            Role::Receiver => Actor::Receiver(receiver::ReceiverActor::new(system.open_receiver(who)?)),
            Role::Prober | Role::Sim => unreachable!("{role:?} is not an actor with a connection"),
        })
    }

    pub fn step(&mut self, ctx: &mut Ctx<'_>) -> Next {
        match self {
            Actor::Writer(writer) => writer.step(ctx),
            Actor::Worker(worker) => worker.step(ctx),
            Actor::Receiver(receiver) => receiver.step(ctx),
        }
    }

    /// Hands the actor a message that arrived for it.
    pub fn deliver(&mut self, message: Message) {
        match self {
            Actor::Writer(writer) => writer.deliver(message),
            Actor::Worker(worker) => worker.deliver(message),
            Actor::Receiver(receiver) => receiver.deliver(message),
        }
    }

    /// The `synchronous` level the actor's connection runs with, if known.
    pub fn synchronous(&self) -> Option<u8> {
        match self {
            Actor::Writer(writer) => writer.synchronous(),
            Actor::Worker(worker) => worker.synchronous(),
            Actor::Receiver(receiver) => receiver.synchronous(),
        }
    }

    /// True if the actor holds no work in progress (no transaction, no
    /// batch, no queued request).
    pub fn is_idle(&self) -> bool {
        match self {
            Actor::Writer(writer) => writer.is_idle(),
            Actor::Worker(worker) => worker.is_idle(),
            Actor::Receiver(receiver) => receiver.is_idle(),
        }
    }
}

/// The one error policy of every actor: `Busy` retries the same step later
/// (a lock is a scheduling outcome, never a sleep); `Pending` retries it
/// after one ordinary step, without backoff (a group-commit store queued the
/// transaction and answers when asked again, see `store::group_commit`);
/// a store whose process died unasked is recorded as such (a finding) and
/// crashes the actor like any other failure, which is recorded and crashes
/// the actor, which recovers from the database alone; a store that broke
/// its contract with the harness stops the run, and so does a failure of
/// the machine under it (the simulator decides whether it injected it).
pub(crate) fn retry_or_crash<T>(ctx: &mut Ctx<'_>, step: &str, result: store::Result<T>) -> Result<T, Next> {
    match result {
        Ok(value) => Ok(value),
        Err(store::StoreError::Busy) => {
            ctx.record(crate::trace::Op::Busy { step: step.to_string() });
            Err(Next::Busy)
        }
        Err(store::StoreError::Pending) => {
            ctx.record(crate::trace::Op::Queued { step: step.to_string() });
            Err(Next::Continue)
        }
        Err(store::StoreError::Preempted { point, sql }) => {
            ctx.record(crate::trace::Op::Preempted {
                step: step.to_string(),
                point,
                sql,
                meanwhile: Vec::new(),
            });
            Err(Next::Preempted)
        }
        Err(store::StoreError::Died(cause)) => {
            ctx.record(crate::trace::Op::Died {
                step: step.to_string(),
                cause,
            });
            Err(Next::Crash)
        }
        Err(store::StoreError::Broken(message)) => Err(Next::Abort(format!("{step}: {message}"))),
        // The run needs what the store said it offers (a capability): no verdict.
        Err(error @ store::StoreError::Unsupported(_)) => Err(Next::Abort(format!("{step}: {error}"))),
        Err(error) => {
            ctx.record(crate::trace::Op::Failed {
                step: step.to_string(),
                error: error.to_string(),
            });
            match error.environment() {
                Some(cause) => Err(Next::Environment(format!("{step}: {cause}"))),
                None => Err(Next::Crash),
            }
        }
    }
}
