//! `Ctx`: what an actor may touch during one step.
//!
//! The simulator owns time, randomness, the network, the fault plan and the
//! trace; an actor sees them only through this handle, for the duration of
//! one step. That is what keeps actors from reading a wall clock or drawing
//! from a stream that is not theirs.

use super::faults::{Fault, FaultPlan, FaultSource, Injected, KILL_POINTS, KillCounters, KillPoint};
use super::net::{Address, Message};
use super::prng::Prng;
use crate::actors::ActorId;
use crate::scenario::Timing;
use crate::trace::{Op, Recorder};

/// A trip the outside world requests: the input every writer may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TripRequest {
    pub trip_id: String,
    pub city: String,
}

/// The fixed facts of a run that actors need.
pub struct World {
    /// The implementation's application-side choices.
    pub engine: &'static dyn crate::store::Engine,
    /// Ordered by `trip_id`.
    pub trips: Vec<TripRequest>,
    pub timing: Timing,
    pub writers_count: u32,
    pub workers_count: u32,
    pub receivers_count: u32,
    pub pending_batch: usize,
}

/// Decides kills: counts every time a point is reached and, while faults
/// are on, draws from the actor's own fault stream (or looks the occurrence
/// up in a forced schedule).
pub(super) struct KillGate<'a> {
    pub plan: &'a FaultPlan,
    pub source: &'a FaultSource,
    pub counters: &'a mut KillCounters,
    /// This actor's reaches per point, across its lives.
    pub reaches: &'a mut [u64; KILL_POINTS],
    pub prng: &'a mut Prng,
    pub injected: &'a mut Vec<Injected>,
    pub active: bool,
}

/// One actor's view of the simulation during one step.
pub struct Ctx<'a> {
    pub now: u64,
    pub me: ActorId,
    pub incarnation: u32,
    /// The actor's own decision stream.
    pub prng: &'a mut Prng,
    pub world: &'a World,
    pub(super) kill: KillGate<'a>,
    pub(super) trace: &'a mut Recorder,
    pub(super) outgoing: &'a mut Vec<(Address, Message)>,
}

impl Ctx<'_> {
    /// Records what the actor just did.
    pub fn record(&mut self, op: Op) {
        self.trace.record(self.now, self.me, op);
    }

    /// The actor has reached `point`: true if the simulator kills it here.
    /// The actor must then return `Next::Killed(point)` at once.
    pub fn kill_point(&mut self, point: KillPoint) -> bool {
        let gate = &mut self.kill;
        gate.counters.reached[point.index()] += 1;
        gate.reaches[point.index()] += 1;
        let fault = Fault::Kill {
            actor: self.me,
            point,
            reach: gate.reaches[point.index()],
        };
        if !gate.active || !gate.source.fires(gate.prng, gate.plan.rate(point), &fault) {
            return false;
        }
        gate.counters.fired[point.index()] += 1;
        gate.injected.push(Injected { tick: self.now, fault });
        true
    }

    /// Sends a message; the simulator decides when (and whether) it arrives.
    pub fn send(&mut self, to: Address, message: Message) {
        self.outgoing.push((to, message));
    }

    /// Sends a hint about `workflow_id` to a random actor of `role`.
    pub fn nudge(&mut self, role: crate::actors::Role, workflow_id: &str) {
        let count = match role {
            crate::actors::Role::Writer => self.world.writers_count,
            crate::actors::Role::Worker => self.world.workers_count,
            _ => return,
        };
        let to = ActorId::new(role, self.prng.below(u64::from(count)) as u32);
        self.record(Op::Nudge {
            workflow_id: workflow_id.to_string(),
            to,
        });
        self.send(
            Address {
                actor: to,
                incarnation: None,
            },
            Message::Nudge {
                workflow_id: workflow_id.to_string(),
            },
        );
    }

    /// A receiver chosen at random (with this actor's decision stream).
    pub fn pick_receiver(&mut self) -> ActorId {
        let index = self.prng.below(u64::from(self.world.receivers_count)) as u32;
        ActorId::new(crate::actors::Role::Receiver, index)
    }

    /// Sends `request` to whichever life of receiver `to` is up, with this
    /// actor's current life as the address for the reply.
    pub fn request(&mut self, to: ActorId, request: crate::store::Request) {
        let reply_to = self.reply_address();
        self.send(
            Address {
                actor: to,
                incarnation: None,
            },
            Message::Request { request, reply_to },
        );
    }

    /// This actor's address for replies.
    pub fn reply_address(&self) -> Address {
        Address {
            actor: self.me,
            incarnation: Some(self.incarnation),
        }
    }
}
