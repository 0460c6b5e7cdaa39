//! The fault model: where the simulator may kill an actor, and the other
//! faults it injects. Each fault names the crash window of PROTOCOL.md §6
//! that it opens and why a correct implementation survives it.
//!
//! Kills. A killed actor loses its connection (SQLite rolls back any open
//! transaction, exactly as when a process dies) and all its memory; after a
//! seeded delay it restarts and must recover from the database alone.
//!
//! | kill point                     | the moment                                   | why the protocol survives |
//! |--------------------------------|----------------------------------------------|---------------------------|
//! | `writer.before_commit`         | event and commands inserted, not committed   | rollback drops both together (I5) |
//! | `writer.after_commit`          | committed, the writer never learns           | the next writer reloads and sees it; never re-appends (I3) |
//! | `worker.after_read_pending`    | rows read, nothing sent                      | rows stay pending |
//! | `worker.before_deliver`        | about to send                                | rows stay pending |
//! | `worker.after_deliver`         | the receiver applied it, the reply is lost   | redelivery with the same key is folded (I2) |
//! | `worker.before_mark_done`      | confirmed, not yet marked                    | as above |
//! | `worker.after_mark_done`       | marked, the worker never learns              | nothing left to do |
//! | `receiver.before_effect_commit`| effect and de-dup record written, uncommitted| rollback drops both; the retry applies once |
//! | `receiver.after_effect_commit` | applied, no reply sent                       | the retry finds the de-dup record (I2) |
//!
//! Network faults. A message may be dropped (the sender times out: outcome
//! unknown, retry with the same key) or duplicated (the receiver folds it).
//!
//! Key-conflict probes. After a command is confirmed, a rogue request may
//! reuse its key with other core parameters; the receiver must reject it as
//! a conflict and perform nothing (I7).
//!
//! Power loss (`[power]`, through the crash VFS of `vfs::crash`). Every actor
//! loses its connection at once and each file keeps only what the disk model
//! lets through: with `synchronous=FULL` in WAL mode, every acknowledged
//! commit survives (I9), and effects never outlive the rows that caused them
//! (I4); weaker settings may lose a tail, and the checkers say which.
//!
//! Pauses (`[faults.pause]`). An actor stops taking steps for a drawn number
//! of ticks with its connection, its open transaction and its memory intact,
//! then takes the step it was about to take as if nothing happened (a GC
//! pause, a stopped VM). Nothing is lost; but the world moved on: a lease
//! the actor holds may have expired and passed to another worker, whose
//! claim carries a greater fencing token, so the paused holder's late
//! acknowledgement must not count (I8). A paused writer keeps its write lock,
//! and everyone else waits.
//!
//! Retryable failures (`[faults.receiver] retryable`, `[faults.net]
//! retryable`, with `[retries]`). A receiver refuses a request before doing
//! anything, or the network turns a confirmed reply (the effect committed)
//! into a retryable error. The worker stores a durable timer and the command
//! is delivered again after its backoff with the same key: the receiver's
//! de-dup record folds it (I2), as long as it is kept past the retry horizon.
//! A poisoned command (`poison`) is refused every time, in every phase, and
//! ends in the dead letter, never done.
//! Clock skew (`[faults.skew]`). Each actor's clock reads the true tick plus
//! an offset within `[-max_ticks, max_ticks]`, drawn at the start of the run;
//! in the fault phase it may step, forward or backward, to a new offset in
//! the same bounds (an NTP correction). Everything the actor reads as "now"
//! is off: its own lease checks, the store's `Clock` (a claim's expiry) and
//! SQLite's `CURRENT_TIMESTAMP` on its connection. A claimer whose clock
//! runs ahead takes a row its holder still believes live; with a lease
//! margin of at least twice the bound the holder stops using it first, and
//! beyond that the fencing token alone keeps the late acknowledgement out
//! (I8). Offsets stay when faults stop: a machine's clock does not heal.
//!
//! Scripted faults (`[[script]]`) kill named actors or cut the power at fixed ticks.
//!
//! All faults stop when the quiet phase begins.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::actors::ActorId;
use crate::prng::Prng;
use crate::ratio::Ratio;
use crate::store::Synchronous;
use crate::workload::{NearMiss, Style};

/// The kill points are the actors' vocabulary (`actors::kill`); the fault
/// plan here decides when they fire.
pub use crate::actors::{KILL_POINTS, KillPoint};

/// The kill rates swarm mode chooses from: very different weights, so that
/// some seeds hammer one window and others barely touch it.
const SWARM_MENU: [Ratio; 4] = [
    Ratio::new(1, 4),
    Ratio::new(1, 16),
    Ratio::new(1, 64),
    Ratio::new(1, 256),
];

/// The faults of one run: a rate per kill point (zero is off) and the
/// network and probe rates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultPlan {
    pub kill: [Ratio; KILL_POINTS],
    pub net_drop: Ratio,
    pub net_duplicate: Ratio,
    pub key_conflict: Ratio,
    /// Chance that a confirmed command is followed by a near-miss probe
    /// (`[faults] near_miss_key`; `workload::near_miss`).
    #[serde(skip_serializing_if = "zero")]
    pub near_miss: Ratio,
    /// Chance per actor step that power goes out (see `scenario::Power`).
    pub power_loss: Ratio,
    /// Chance per actor step that the actor pauses (`[faults.pause]`).
    #[serde(skip_serializing_if = "zero")]
    pub pause: Ratio,
    /// Chance that a receiver refuses a request retryably (`[faults.receiver] retryable`).
    #[serde(skip_serializing_if = "zero")]
    pub receiver_retryable: Ratio,
    /// Chance that a confirmed reply becomes a retryable error (`[faults.net] retryable`).
    #[serde(skip_serializing_if = "zero")]
    pub net_retryable: Ratio,
    /// Share of commands a receiver refuses every time (`[faults.receiver] poison`).
    #[serde(skip_serializing_if = "zero")]
    pub poison: Ratio,
    /// The bound on every actor's clock offset (`[faults.skew] max_ticks`); 0: no skew.
    #[serde(skip_serializing_if = "is_zero_ticks")]
    pub skew_ticks: u64,
    /// Chance per actor step that its clock steps (`[faults.skew] step_rate`).
    #[serde(skip_serializing_if = "zero")]
    pub clock_step: Ratio,
    /// The classes of hostile text in workflow ids (`[workload] ids`),
    /// drawn per seed in swarm mode.
    #[serde(skip_serializing_if = "Style::is_plain")]
    pub ids: Style,
    /// The same for payload strings (`[workload] payloads`).
    #[serde(skip_serializing_if = "Style::is_plain")]
    pub payloads: Style,
    /// The SQLite build's default `synchronous` every new connection starts
    /// at (`[sqlite] default_synchronous`, or drawn per seed in a swarm with
    /// power loss: `default_synchronous`); `None`: SQLite's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_synchronous: Option<Synchronous>,
    /// True if `kill` was drawn by swarm mode for this seed.
    pub swarm: bool,
    /// With `[preempt]` in a swarm: the suspensions this seed drew, as
    /// `Preempt::describe` says them (`preempt=1/6@shm_lock+sync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preempt: Option<String>,
}

/// The SQLite build's default `synchronous` for one seed: the scenario's
/// (`written`), or, in a swarm with power loss, NORMAL (a build with
/// `SQLITE_DEFAULT_WAL_SYNCHRONOUS=1`) or SQLite's own with even odds, from
/// a stream of its own so that every other draw stays as it was.
pub fn default_synchronous(written: Option<Synchronous>, swarm_with_power: bool, seed: u64) -> Option<Synchronous> {
    if written.is_some() || !swarm_with_power {
        return written;
    }
    Prng::derive(seed, "swarm/default_synchronous")
        .chance(Ratio::new(1, 2))
        .then_some(Synchronous::Normal)
}

impl FaultPlan {
    /// The plan exactly as configured.
    pub fn fixed(kill: [Ratio; KILL_POINTS], net_drop: Ratio, net_duplicate: Ratio, key_conflict: Ratio) -> FaultPlan {
        FaultPlan {
            kill,
            net_drop,
            net_duplicate,
            key_conflict,
            near_miss: Ratio::ZERO,
            power_loss: Ratio::ZERO,
            pause: Ratio::ZERO,
            receiver_retryable: Ratio::ZERO,
            net_retryable: Ratio::ZERO,
            poison: Ratio::ZERO,
            skew_ticks: 0,
            clock_step: Ratio::ZERO,
            ids: Style::plain(),
            payloads: Style::plain(),
            default_synchronous: None,
            swarm: false,
            preempt: None,
        }
    }

    /// Swarm mode: each kill point is on with probability 1/2, at a rate
    /// drawn from a menu of very different weights (TigerBeetle's swarm
    /// testing); at least one point is always on. Then the classes of
    /// hostile ids and payloads are a subset of the configured ones, each
    /// kept with probability 1/2 (drawn after the kills, so a plain
    /// scenario draws its kills as before).
    pub fn swarm(mut self, prng: &mut Prng) -> FaultPlan {
        loop {
            for rate in self.kill.iter_mut() {
                *rate = if prng.chance(Ratio::new(1, 2)) {
                    *prng.pick(&SWARM_MENU).expect("menu is not empty")
                } else {
                    Ratio::ZERO
                };
            }
            if self.kill.iter().any(|rate| !rate.is_zero()) {
                break;
            }
        }
        self.ids = self.ids.swarm(prng);
        self.payloads = self.payloads.swarm(prng);
        self.swarm = true;
        self
    }

    pub fn rate(&self, point: KillPoint) -> Ratio {
        self.kill[point.index()]
    }

    /// The kill points this plan turns on.
    pub fn enabled(&self) -> impl Iterator<Item = KillPoint> + '_ {
        KillPoint::ALL.into_iter().filter(|point| !self.rate(*point).is_zero())
    }

    /// A one-line rendering, printed with the seed: `writer.before_commit=1/40 …`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .enabled()
            .map(|point| format!("{point}={}", self.rate(point)))
            .collect();
        for (name, rate) in [
            ("net.drop", self.net_drop),
            ("net.duplicate", self.net_duplicate),
            ("key_conflict", self.key_conflict),
            ("near_miss_key", self.near_miss),
            ("power.loss", self.power_loss),
            ("pause", self.pause),
            ("receiver.retryable", self.receiver_retryable),
            ("net.retryable", self.net_retryable),
            ("receiver.poison", self.poison),
        ] {
            if !rate.is_zero() {
                parts.push(format!("{name}={rate}"));
            }
        }
        if self.skew_ticks > 0 {
            parts.push(format!("skew=±{}", self.skew_ticks));
            if !self.clock_step.is_zero() {
                parts.push(format!("clock.step={}", self.clock_step));
            }
        }
        for (name, style) in [("ids", &self.ids), ("payloads", &self.payloads)] {
            if !style.is_plain() {
                parts.push(format!("{name}={style}"));
            }
        }
        if let Some(level) = self.default_synchronous {
            parts.push(format!("default_synchronous={}", level.as_str()));
        }
        parts.extend(self.preempt.clone());
        if parts.is_empty() {
            "no faults".to_string()
        } else {
            parts.join(" ")
        }
    }
}

fn zero(ratio: &Ratio) -> bool {
    ratio.is_zero()
}

fn is_zero_ticks(ticks: &u64) -> bool {
    *ticks == 0
}

/// How often each kill point was reached and how often it fired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KillCounters {
    pub reached: [u64; KILL_POINTS],
    pub fired: [u64; KILL_POINTS],
    /// The reaches that could have fired (faults on, the point's rate not
    /// zero), by that rate: a swarm seed draws its own. How likely a
    /// point's silence was follows from them (`report::coverage`).
    pub armed: [BTreeMap<Ratio, u64>; KILL_POINTS],
    /// With `[preempt]`: per kind of scheduling point inside the store's
    /// SQLite, how often it was reached and calls were suspended there.
    pub suspended: BTreeMap<String, SuspensionCount>,
}

/// One kind of scheduling point inside the store's SQLite, in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SuspensionCount {
    /// Reached at all (boots and the quiet phase included).
    pub reached: u64,
    /// Reached inside an actor's step in the fault phase, where a
    /// suspension could land (the coverage gate judges these).
    pub armed: u64,
    /// Calls suspended there (a busy wait always yields: those too).
    pub fired: u64,
}

impl KillCounters {
    pub fn add(&mut self, other: &KillCounters) {
        for i in 0..KILL_POINTS {
            self.reached[i] += other.reached[i];
            self.fired[i] += other.fired[i];
            for (rate, reaches) in &other.armed[i] {
                *self.armed[i].entry(*rate).or_default() += reaches;
            }
        }
        for (kind, count) in &other.suspended {
            let total = self.suspended.entry(kind.clone()).or_default();
            total.reached += count.reached;
            total.armed += count.armed;
            total.fired += count.fired;
        }
    }

    pub fn total_fired(&self) -> u64 {
        self.fired.iter().sum()
    }
}

/// One injected fault, keyed by occurrence rather than by tick, so that a
/// replay can force it again and a shrinker can remove it: after an earlier
/// fault is removed the run takes another course, but "the third time
/// worker-1 reaches after_deliver" still names a moment of the same kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
    /// Kill `actor` the `reach`-th time (from 1, across its lives) it reaches `point`.
    Kill {
        actor: ActorId,
        point: KillPoint,
        reach: u64,
    },
    /// Lose the `send`-th message (from 1) that `from` sends.
    Drop { from: ActorId, send: u64 },
    /// Deliver the `send`-th message that `from` sends twice.
    Duplicate { from: ActorId, send: u64 },
    /// Follow the `reply`-th confirmed reply to a worker with a key-conflict probe.
    Probe { reply: u64 },
    /// Follow the `reply`-th confirmed reply to a worker with the same
    /// request under a near miss of its key, changed by `form`.
    NearMiss { reply: u64, form: NearMiss },
    /// Cut the power at the `point`-th persistence point (write, sync,
    /// truncation or deletion) the crash VFS sees.
    PowerCut { point: u64 },
    /// Pause `actor` for `ticks` ticks at the `step`-th step (from 1, across
    /// its lives, counting the steps it was about to take in the fault phase).
    Pause { actor: ActorId, step: u64, ticks: u64 },
    /// Receiver `to` refuses the `request`-th worker request (from 1, across
    /// its lives) that reaches it with a retryable error.
    Refuse { to: ActorId, request: u64 },
    /// The `send`-th message `from` sends, a confirmed reply, arrives as a
    /// retryable error.
    ReplyRetryable { from: ActorId, send: u64 },
    /// `actor`'s clock reads `offset` ticks off the true one from the start.
    Skew { actor: ActorId, offset: i64 },
    /// `actor`'s clock steps to `offset` at its `step`-th step (from 1,
    /// across its lives, counting the steps it was about to take in the
    /// fault phase).
    ClockStep { actor: ActorId, step: u64, offset: i64 },
    /// Suspend `actor`'s call inside the store's SQLite (`[preempt]`) at the
    /// `point`-th scheduling point of the enabled kinds in its `step`-th
    /// step (from 1, across its lives, counting its steps in the fault
    /// phase), for `hold` ticks while the others run.
    Preempt {
        actor: ActorId,
        step: u64,
        point: u64,
        hold: u64,
    },
}

/// How many scheduling points of the enabled kinds one armed step of an
/// actor passed (`[preempt]`): the suspensions `Fault::Preempt` could name
/// there are points 1..=`points` of that step (`crashsim explore`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StepPoints {
    pub actor: ActorId,
    /// The actor's step in the fault phase, as `Fault::Preempt` counts it.
    pub step: u64,
    pub points: u64,
}

/// A fault that fired, and when.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Injected {
    pub tick: u64,
    #[serde(flatten)]
    pub fault: Fault,
}

/// Where fault decisions come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FaultSource {
    /// Drawn from the seed's fault streams with the plan's rates.
    #[default]
    Drawn,
    /// Exactly these faults, whenever their occurrence comes up during the
    /// fault phase (a replay capsule, or a shrinker's candidate).
    Forced(BTreeSet<Fault>),
}

impl FaultSource {
    /// Decides a fault: draws with `rate` from `prng`, or looks `fault` up.
    pub fn fires(&self, prng: &mut Prng, rate: Ratio, fault: &Fault) -> bool {
        match self {
            FaultSource::Drawn => prng.chance(rate),
            FaultSource::Forced(faults) => faults.contains(fault),
        }
    }

    /// Decides a pause of `actor` at its `step`-th step: draws with `rate`
    /// and a length in `ticks` from `prng`, or looks the step up in a forced
    /// schedule (with the length it records). The length of the pause, if any.
    pub fn pause(&self, prng: &mut Prng, rate: Ratio, ticks: (u64, u64), actor: ActorId, step: u64) -> Option<u64> {
        match self {
            FaultSource::Drawn => prng.chance(rate).then(|| prng.range_inclusive(ticks.0, ticks.1)),
            FaultSource::Forced(faults) => {
                let at = |ticks| Fault::Pause { actor, step, ticks };
                faults.range(at(0)..=at(u64::MAX)).next().map(|fault| match fault {
                    Fault::Pause { ticks, .. } => *ticks,
                    _ => unreachable!("the range holds pauses only"),
                })
            }
        }
    }
}

impl FaultSource {
    /// Decides where `actor`'s `step`-th step in the fault phase is
    /// suspended: the first of the next `lookahead` scheduling points to
    /// draw `rate` from `prng`, its hold drawn later (`None`); or the point
    /// and hold a forced schedule gives that step.
    pub fn preempt(
        &self,
        prng: &mut Prng,
        rate: Ratio,
        lookahead: u64,
        actor: ActorId,
        step: u64,
    ) -> Option<(u64, Option<u64>)> {
        match self {
            FaultSource::Drawn if rate.is_zero() => None,
            FaultSource::Drawn => (1..=lookahead).find(|_| prng.chance(rate)).map(|point| (point, None)),
            FaultSource::Forced(faults) => {
                let at = |point, hold| Fault::Preempt {
                    actor,
                    step,
                    point,
                    hold,
                };
                faults
                    .range(at(0, 0)..=at(u64::MAX, u64::MAX))
                    .next()
                    .map(|fault| match fault {
                        Fault::Preempt { point, hold, .. } => (*point, Some(*hold)),
                        _ => unreachable!("the range holds suspensions only"),
                    })
            }
        }
    }

    /// Whether a forced schedule suspends any call.
    pub fn forces_preempt(&self) -> bool {
        matches!(self, FaultSource::Forced(faults)
            if faults.iter().any(|fault| matches!(fault, Fault::Preempt { .. })))
    }

    /// Decides a near-miss probe after the `reply`-th confirmed reply: draws
    /// with `rate`, then a form among those `applies` accepts, from `prng`;
    /// or looks the reply up in a forced schedule (whose form must still
    /// apply). `applies` is asked only once a probe is due: most confirmed
    /// replies draw no probe.
    pub fn near_miss(
        &self,
        prng: &mut Prng,
        rate: Ratio,
        reply: u64,
        applies: impl Fn(NearMiss) -> bool,
    ) -> Option<NearMiss> {
        match self {
            FaultSource::Drawn => match prng.chance(rate) {
                true => {
                    let applicable: Vec<NearMiss> = NearMiss::ALL.into_iter().filter(|form| applies(*form)).collect();
                    prng.pick(&applicable).copied()
                }
                false => None,
            },
            FaultSource::Forced(faults) => {
                let at = |form| Fault::NearMiss { reply, form };
                faults
                    .range(at(NearMiss::ALL[0])..=at(NearMiss::ALL[NearMiss::ALL.len() - 1]))
                    .find_map(|fault| match fault {
                        Fault::NearMiss { form, .. } => applies(*form).then_some(*form),
                        _ => None,
                    })
            }
        }
    }

    /// `actor`'s initial clock offset: drawn in `[-bound, bound]` from
    /// `prng`, or the forced schedule's (0 if it has none).
    pub fn skew(&self, prng: &mut Prng, bound: u64, actor: ActorId) -> i64 {
        match self {
            FaultSource::Drawn => offset_in(prng, bound),
            FaultSource::Forced(faults) => {
                let at = |offset| Fault::Skew { actor, offset };
                faults
                    .range(at(i64::MIN)..=at(i64::MAX))
                    .next()
                    .map_or(0, |fault| match fault {
                        Fault::Skew { offset, .. } => *offset,
                        _ => unreachable!("the range holds skews only"),
                    })
            }
        }
    }

    /// Decides whether `actor`'s clock steps at its `step`-th step: draws
    /// with `rate` and a new offset in `[-bound, bound]` from `prng`, or looks
    /// the step up in a forced schedule. The new offset, if it steps.
    pub fn clock_step(&self, prng: &mut Prng, rate: Ratio, bound: u64, actor: ActorId, step: u64) -> Option<i64> {
        match self {
            FaultSource::Drawn => prng.chance(rate).then(|| offset_in(prng, bound)),
            FaultSource::Forced(faults) => {
                let at = |offset| Fault::ClockStep { actor, step, offset };
                faults
                    .range(at(i64::MIN)..=at(i64::MAX))
                    .next()
                    .map(|fault| match fault {
                        Fault::ClockStep { offset, .. } => *offset,
                        _ => unreachable!("the range holds clock steps only"),
                    })
            }
        }
    }
}

/// An offset drawn uniformly in `[-bound, bound]`.
fn offset_in(prng: &mut Prng, bound: u64) -> i64 {
    let bound = bound.min(i64::MAX as u64 / 2);
    prng.range_inclusive(0, 2 * bound) as i64 - bound as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for point in KillPoint::ALL {
            assert_eq!(KillPoint::from_name(point.name()), Some(point));
            assert_eq!(KillPoint::ALL[point.index()], point);
        }
        assert_eq!(KillPoint::from_name("writer.during_lunch"), None);
    }

    #[test]
    fn swarm_turns_on_a_subset_with_menu_rates() {
        let base = FaultPlan::fixed([Ratio::ZERO; KILL_POINTS], Ratio::ZERO, Ratio::ZERO, Ratio::ZERO);
        let mut seen_off = false;
        for seed in 0..20 {
            let plan = base.clone().swarm(&mut Prng::derive(seed, "swarm"));
            assert!(plan.swarm);
            assert!(plan.enabled().count() >= 1);
            seen_off |= plan.enabled().count() < KILL_POINTS;
            for point in plan.enabled() {
                assert!(SWARM_MENU.contains(&plan.rate(point)));
            }
            let again = base.clone().swarm(&mut Prng::derive(seed, "swarm"));
            assert_eq!(plan, again, "swarm draws are deterministic");
        }
        assert!(seen_off);
    }
}
