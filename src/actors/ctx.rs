//! `Ctx`: what an actor may touch during one step.
//!
//! The simulator owns time, randomness, the network, the fault plan and the
//! trace; an actor sees them only through this handle, for the duration of
//! one step. That is what keeps actors from reading a wall clock or drawing
//! from a stream that is not theirs. The handle is the actors' word, defined
//! here below the simulator: the simulator fills it in (`sim::gate` decides
//! the kills, `sim::world` builds the `World`), and actors never import the
//! simulator.

use super::{ActorId, Address, KillPoint, Message, Role};
use crate::prng::Prng;
use crate::trace::{Op, Recorder};

/// A trip the outside world requests: the input every writer may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TripRequest {
    pub trip_id: String,
    pub city: String,
}

/// The fixed facts of a run that actors need.
#[derive(Clone)]
pub struct World<'a> {
    /// The implementation's application-side choices.
    pub engine: &'a dyn crate::store::Engine,
    /// How the implementation's roles are driven: a step at a time, or a
    /// whole append (delivery) per call.
    pub roles: crate::store::Roles,
    /// Ordered by `trip_id`.
    pub trips: Vec<TripRequest>,
    /// An idle writer or worker looks for work again after this long
    /// (`[timing] poll_ticks`).
    pub poll_ticks: u64,
    /// A worker gives up waiting for a reply after this long (`[timing]
    /// reply_timeout_ticks`).
    pub reply_timeout_ticks: u64,
    pub writers_count: u32,
    pub workers_count: u32,
    pub receivers_count: u32,
    pub pending_batch: usize,
    /// With leases: a lease's length in ticks (workers claim their rows).
    pub lease_ticks: Option<u64>,
    /// With `[retries]`: how workers retry a retryable failure (a durable timer).
    pub retries: Option<crate::store::RetryPolicy>,
    /// With `[receivers] dedup_retention_ticks`: how long receivers keep de-dup records.
    pub dedup_retention_ticks: Option<u64>,
    /// With leases: a holder sends only while its clock reads before
    /// `expires - lease_margin_ticks`.
    pub lease_margin_ticks: u64,
    /// A writer that finds its awaited command done without a result waits
    /// for its poll before it scans again (ending rule 4; before it, it
    /// scanned again at once, and spun on a store that leaves rows so).
    pub wait_on_resultless: bool,
}

/// Decides whether an actor dies at a kill point (the simulator's
/// `sim::gate::KillGate`; a trait object so that `Ctx` need not name its
/// lifetimes).
pub trait Gate {
    fn decide(&mut self, now: u64, actor: ActorId, point: KillPoint) -> bool;
    /// The actor reached `point` just before one call that holds a whole
    /// transaction (`call` granularity): true if it dies inside that call,
    /// at a persistence point its store's SQLite makes (an outside store
    /// with crashsim's VFS extension loaded); false where that cannot be.
    fn inside_call(&mut self, now: u64, actor: ActorId, point: KillPoint) -> bool {
        let _ = (now, actor, point);
        false
    }
    /// The call `inside_call` was asked about is over.
    fn call_over(&mut self) {}
}

/// One actor's view of the simulation during one step.
pub struct Ctx<'a> {
    /// The true tick: what the simulator schedules by (wake-ups, timeouts,
    /// which a real program measures with a monotonic clock).
    pub now: u64,
    /// The actor's own wall clock: `now` plus its skew (`clock()`).
    pub(crate) clock: u64,
    pub me: ActorId,
    pub incarnation: u32,
    /// The actor's own decision stream.
    pub prng: &'a mut Prng,
    pub world: &'a World<'a>,
    pub(crate) kill: &'a mut dyn Gate,
    pub(crate) trace: &'a mut Recorder,
    pub(crate) outgoing: &'a mut Vec<(Address, Message)>,
}

impl Ctx<'_> {
    /// The time the actor's own clock reads: the true tick plus its skew
    /// (`[faults.skew]`; saturating at 0). What it must judge wall-clock
    /// deadlines by, such as a lease's expiry, which another actor's clock set.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Records what the actor just did.
    pub fn record(&mut self, op: Op) {
        self.trace.record(self.now, self.me, op);
    }

    /// The actor has reached `point`: true if the simulator kills it here.
    /// The actor must then return `Next::Killed(point)` at once.
    pub fn kill_point(&mut self, point: KillPoint) -> bool {
        self.kill.decide(self.now, self.me, point)
    }

    /// The actor has reached `point` just before a call that holds a whole
    /// transaction: true if its process dies inside the call. The actor
    /// makes the call anyway, then calls `call_over` and returns
    /// `Next::Killed(point)`, whatever the call answered.
    pub fn kill_inside_call(&mut self, point: KillPoint) -> bool {
        self.kill.inside_call(self.now, self.me, point)
    }

    /// The call `kill_inside_call` armed a kill for is over.
    pub fn call_over(&mut self) {
        self.kill.call_over();
    }

    /// Sends a message; the simulator decides when (and whether) it arrives.
    pub fn send(&mut self, to: Address, message: Message) {
        self.outgoing.push((to, message));
    }

    /// Sends a hint about `workflow_id` to a random actor of `role`.
    pub fn nudge(&mut self, role: Role, workflow_id: &str) {
        let count = match role {
            Role::Writer => self.world.writers_count,
            Role::Worker => self.world.workers_count,
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
        ActorId::new(Role::Receiver, index)
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
