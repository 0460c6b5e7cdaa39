//! `KillGate`: the simulator's side of `Ctx::kill_point`. It counts every
//! time an actor reaches a kill point and, while faults are on, draws from
//! the actor's own fault stream (or looks the occurrence up in a forced
//! schedule); inside a `call`-granularity call it arms the crash VFS to kill
//! the store's process at a persistence point.

use crate::actors::{ActorId, Gate, KILL_POINTS, KillPoint};
use crate::faults::{Fault, FaultPlan, FaultSource, Injected, KillCounters};
use crate::prng::Prng;

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
        let rate = self.plan.rate(point);
        if self.active && !rate.is_zero() {
            *self.counters.armed[point.index()].entry(rate).or_default() += 1;
        }
        if !self.active || !self.source.fires(self.prng, rate, &fault) {
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
