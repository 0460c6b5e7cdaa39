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
#[derive(Clone)]
pub struct World<'a> {
    /// The implementation's application-side choices.
    pub engine: &'a dyn crate::store::Engine,
    /// How the implementation's roles are driven: a step at a time, or a
    /// whole append (delivery) per call.
    pub roles: crate::store::Roles,
    /// Ordered by `trip_id`.
    pub trips: Vec<TripRequest>,
    pub timing: Timing,
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
}

impl<'a> World<'a> {
    /// The world of seed `seed` of `scenario`, with the plan's (maybe
    /// swarm-drawn) styles of ids and payload strings.
    pub fn new(
        scenario: &crate::scenario::Scenario,
        plan: &super::faults::FaultPlan,
        seed: u64,
        engine: &'a dyn crate::store::Engine,
        roles: crate::store::Roles,
    ) -> World<'a> {
        let count = scenario.workload.trips_count;
        let ids = crate::workload::ids::trip_ids(count, &plan.ids, &mut Prng::derive(seed, "workload/ids"));
        let cities = crate::workload::cities::cities(&plan.payloads);
        let mut prng = Prng::derive(seed, "workload/trips");
        let mut trips: Vec<TripRequest> = ids
            .into_iter()
            .map(|trip_id| TripRequest {
                trip_id,
                city: prng.pick(&cities).expect("cities").clone(),
            })
            .collect();
        trips.sort_by(|a, b| a.trip_id.cmp(&b.trip_id));
        World {
            engine,
            roles,
            trips,
            timing: scenario.timing.clone(),
            writers_count: scenario.workload.writers_count,
            workers_count: scenario.workload.workers_count,
            receivers_count: scenario.workload.receivers_count,
            pending_batch: scenario.workload.pending_batch as usize,
            lease_ticks: scenario.leases.map(|leases| leases.ticks),
            retries: scenario.retries.map(|retries| retries.policy()),
            dedup_retention_ticks: scenario.receivers.and_then(|receivers| receivers.dedup_retention_ticks),
            lease_margin_ticks: scenario.leases.map_or(0, |leases| leases.margin_ticks),
        }
    }
}

/// Decides whether an actor dies at a kill point (the simulator's
/// `KillGate`; a trait object so that `Ctx` need not name its lifetimes).
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

/// Persistence points a kill inside a call is armed within: a few writes
/// and syncs, about one commit's worth (a call that makes fewer dies as it
/// returns, before the actor hears its answer).
const INSIDE_WINDOW: u64 = 8;

/// Where kills inside calls land: the shared control region of the run.
pub(crate) struct Inside {
    pub control: &'static crashsim_vfs::control::Control,
    pub seed: u64,
}

/// Decides kills: counts every time a point is reached and, while faults
/// are on, draws from the actor's own fault stream (or looks the occurrence
/// up in a forced schedule).
pub(crate) struct KillGate<'a> {
    pub plan: &'a FaultPlan,
    pub source: &'a FaultSource,
    pub counters: &'a mut KillCounters,
    /// This actor's reaches per point, across its lives.
    pub reaches: &'a mut [u64; KILL_POINTS],
    pub prng: &'a mut Prng,
    pub injected: &'a mut Vec<Injected>,
    pub active: bool,
    /// Kills inside `call`-granularity calls, where the run has them.
    pub inside: Option<&'a Inside>,
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

impl KillGate<'_> {
    /// The actor reached `point`: true if it dies here.
    pub fn reach(&mut self, now: u64, actor: ActorId, point: KillPoint) -> bool {
        self.counters.reached[point.index()] += 1;
        self.reaches[point.index()] += 1;
        let fault = Fault::Kill {
            actor,
            point,
            reach: self.reaches[point.index()],
        };
        if !self.active || !self.source.fires(self.prng, self.plan.rate(point), &fault) {
            return false;
        }
        self.counters.fired[point.index()] += 1;
        self.injected.push(Injected { tick: now, fault });
        true
    }
}

impl Gate for KillGate<'_> {
    fn decide(&mut self, now: u64, actor: ActorId, point: KillPoint) -> bool {
        self.reach(now, actor, point)
    }

    /// Decided as any kill point (the actor's fault stream, or the forced
    /// schedule); where in the call it lands comes from the seed, the
    /// actor and how often it reached the point, so a forced replay lands
    /// on the same persistence point.
    fn inside_call(&mut self, now: u64, actor: ActorId, point: KillPoint) -> bool {
        let Some(inside) = self.inside else {
            return false;
        };
        if !self.reach(now, actor, point) {
            return false;
        }
        let reach = self.reaches[point.index()];
        let mut state = inside.seed ^ fnv(actor.to_string().as_bytes()) ^ (reach << 8) ^ point.index() as u64;
        let offset = 1 + crashsim_vfs::crash::splitmix64(&mut state) % INSIDE_WINDOW;
        inside.control.arm_kill(offset);
        true
    }

    fn call_over(&mut self) {
        if let Some(inside) = self.inside {
            inside.control.disarm_kill();
        }
    }
}

/// FNV-1a over `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
