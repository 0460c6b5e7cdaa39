//! `Simulator`: the step loop of one run.
//!
//! A run has two phases. In the fault phase (`run.ticks_fault` ticks) actors
//! are killed at seeded kill points and messages are lost, duplicated and
//! probed. In the quiet phase every fault stops, every dead actor restarts,
//! and the run continues until it settles (every workflow terminal, the
//! outbox drained, nothing in flight, every actor idle) or `run.ticks_max`
//! passes, which the liveness checker reports (I10).
//!
//! Everything that happens is an event in one queue ordered by (tick,
//! insertion): an actor's next step, a message's arrival, a restart, the
//! start of the quiet phase, a settle check, a scripted kill. Each actor has
//! at most one live wake-up; a token invalidates the ones it replaces.
//!
//! The implementation under test is given, never looked up here: the
//! reference, a mutant, an outside store behind an adapter, or a library
//! user's own. Its `System` opens every connection and, at the end, dumps
//! the final state the checkers read.
//!
//! Files: this one (the loop and a step), `network.rs` (messages, probes),
//! `output.rs` (what a run returns), `lifecycle.rs` (boot, kill, restart,
//! phases, power cuts, settling),
//! `pause.rs` (actors paused with their state intact), `skew.rs` (each
//! actor's clock, skewed and stepped, and the clocks a step reads),
//! `retryable.rs` (retryable failures, and settling with retry timers).

mod backup;
mod ending;
mod lifecycle;
mod meanwhile;
mod network;
mod output;
mod pause;
mod peek;
mod preempt;
mod restore;
mod retryable;
mod settle;
mod shared_vfs;
mod skew;
mod stall;
mod state;
mod step;
mod twice;

use std::path::{Path, PathBuf};

pub use backup::BackupFile;
pub use output::{RunOutput, SimError};

/// Where an in-process run without power loss keeps its files' bytes.
/// Nothing a seed does depends on it: the same trace either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Files {
    /// In memory (`vfs::memory`), written out when the run ends: no reads,
    /// writes or syncs reach the kernel. Locks stay real.
    #[default]
    Memory,
    /// In the real files: every read, write and sync goes through the kernel.
    Disk,
}

use state::{Event, Life, Phase, Slot};

use super::power::{Power, Recovery};
use super::queue::Queue;
use crate::actors::World;
use crate::actors::{ActorId, Role};
use crate::faults::{Fault, FaultPlan, FaultSource, Injected, KillCounters};
use crate::prng::Prng;
use crate::scenario::Scenario;
use crate::store::{Implementation, Snapshot, Store, StoreError, Synchronous, System, SystemConfig};
use crate::trace::{Op, Recorder};
use crate::vfs::CrashVfs;

pub struct Simulator<'a> {
    scenario: &'a Scenario,
    seed: u64,
    world: World<'a>,
    plan: FaultPlan,
    phase: Phase,
    now: u64,
    queue: Queue<Event>,
    slots: Vec<Slot>,
    implementation: &'a dyn Implementation,
    config: SystemConfig,
    /// Absent between a power cut and its recovery.
    system: Option<Box<dyn System>>,
    /// A read-only connection of the run's own, for settle checks.
    observer: Option<Box<dyn Store>>,
    /// Power loss, when the scenario (or a forced schedule) has any.
    power: Option<Power>,
    /// Pauses, when the scenario (or a forced schedule) has any.
    pause: Option<crate::scenario::PauseFaults>,
    /// Clock skew, when the scenario (or a forced schedule) has any.
    skew: Option<crate::scenario::SkewFaults>,
    /// Without power loss: the VFS that answers SQLite's clock (`skew.rs`).
    clock_vfs: Option<crate::vfs::ClockVfs>,
    /// Without power loss, for an outside store: the shared state through
    /// which its processes' SQLite (with crashsim's extension loaded) reads
    /// the simulated clock.
    outside_clock: Option<CrashVfs>,
    /// Suspensions inside the store's calls, when the scenario has them.
    preemption: Option<preempt::Preemption>,
    recoveries: Vec<Recovery>,
    /// The backups that completed (`[backup]`), as (number, power cuts
    /// before it completed).
    backups_taken: Vec<(u32, usize)>,
    /// What the store held after each restore (`[restore]`).
    restores: Vec<Recovery>,
    /// Backups copied in parts and not complete yet: number -> the power
    /// cuts and the restores there had been at its last part.
    backups_in_parts: std::collections::BTreeMap<u32, (usize, usize)>,
    /// Restores queued and neither done nor skipped yet.
    restores_pending: usize,
    fault_points: Option<u64>,
    /// What ended the run without a verdict, if anything did.
    fatal: Option<ending::Fatal>,
    /// Asked before every event: true abandons the run (a signal).
    cancel: Option<fn() -> bool>,
    trace: Recorder,
    kills: KillCounters,
    source: FaultSource,
    injected: Vec<Injected>,
    /// Fault decisions and everything else draw from separate streams, so a
    /// forced schedule (which draws no decisions) leaves the rest unchanged.
    loss_prng: Prng,
    latency_prng: Prng,
    probe_prng: Prng,
    probe_target_prng: Prng,
    /// Near-miss probes: whether one follows a confirmed reply and its form
    /// (drawn only when drawing), and its target (also when forced).
    near_miss_prng: Prng,
    near_miss_target_prng: Prng,
    /// Keys near-miss probes used (each is used once).
    near_keys: std::collections::BTreeSet<String>,
    /// The run's workflow ids, which no near-miss key may be a command of.
    workflow_ids: std::collections::BTreeSet<String>,
    /// Retryable failures (`[faults.receiver]`/`[faults.net] retryable`, poison).
    retryable: retryable::RetryFaults,
    /// Messages the prober sent (it has no slot).
    prober_sent: u64,
    /// Confirmed replies delivered to workers, for probe occurrences.
    confirmed_replies: u64,
    /// Core parameters of every key a worker sent, for probes.
    requests: std::collections::BTreeMap<String, (String, String)>,
    in_flight: u64,
    steps: u64,
    probes: u64,
    settled: bool,
    /// When the files may next be dumped to confirm that the run settled.
    confirm: settle::Confirm,
    /// Durable progress, for ending a run that can no longer settle.
    stall: stall::Stall,
    store_path: PathBuf,
    receiver_path: PathBuf,
}

impl<'a> Simulator<'a> {
    /// Sets up a run of `scenario` against `implementation` with `seed`, its
    /// databases in `dir`, its faults drawn or forced by `source`.
    pub fn new(
        scenario: &'a Scenario,
        implementation: &'a dyn Implementation,
        seed: u64,
        dir: &Path,
        source: FaultSource,
    ) -> Result<Simulator<'a>, SimError> {
        Simulator::with_files(scenario, implementation, seed, dir, source, Files::default())
    }

    /// `new`, choosing where the files' bytes live (`Files`).
    pub fn with_files(
        scenario: &'a Scenario,
        implementation: &'a dyn Implementation,
        seed: u64,
        dir: &Path,
        source: FaultSource,
        files: Files,
    ) -> Result<Simulator<'a>, SimError> {
        let store_path = dir.join("store.db");
        let receiver_path = dir.join("receiver.db");
        let forced_cut = matches!(&source, FaultSource::Forced(faults)
            if faults.iter().any(|fault| matches!(fault, Fault::PowerCut { .. })));
        // An outside store's processes share the crash VFS's state through
        // files here (the loadable extension's `CRASHSIM_VFS_STATE`).
        let vfs_state = (!implementation.in_process()).then(|| dir.join("vfs"));
        let power = if scenario.power_enabled() || forced_cut {
            Some(Power::new(seed, scenario.power.model, &source, vfs_state.as_deref())?)
        } else {
            None
        };
        // The SQLite build's default, before the first connection opens.
        let default_synchronous = crate::faults::default_synchronous(
            scenario.sqlite.default_synchronous,
            scenario.faults.swarm && power.is_some(),
            seed,
        );
        if let Some(power) = &power {
            power
                .vfs
                .control()
                .set_default_synchronous(default_synchronous.map(Synchronous::level));
        }
        let (mut store_sqlite, mut receiver_sqlite) =
            (scenario.sqlite.store_settings(), scenario.sqlite.receiver_settings());
        let clock_vfs = skew::clock_vfs(seed, power.as_ref(), implementation, files)?;
        let outside_clock = shared_vfs::outside_clock(seed, power.as_ref(), vfs_state.as_deref())?;
        if let Some(name) = power
            .as_ref()
            .map(|power| power.vfs.name())
            .or(clock_vfs.map(|vfs| vfs.name()))
            .or(outside_clock.map(|vfs| vfs.name()))
        {
            store_sqlite.vfs = Some(name);
            receiver_sqlite.vfs = Some(name);
        }
        let config = SystemConfig {
            store_path: store_path.clone(),
            receiver_path: receiver_path.clone(),
            store_sqlite,
            receiver_sqlite,
            hotel_failure: scenario.workload.hotel_failure,
            seed,
            clock: crate::store::Clock::default(),
            leases: scenario.leases.is_some(),
            retries: scenario.retries.is_some(),
            dedup_retention: scenario
                .receivers
                .is_some_and(|receivers| receivers.dedup_retention_ticks.is_some()),
            vfs_state: power
                .as_ref()
                .map(|power| power.vfs)
                .or(outside_clock)
                .and_then(|vfs| vfs.shared_dir()),
        };
        let run_vfs = power.as_ref().map(|power| power.vfs).or(outside_clock);
        let mut preempt = preempt::drawn(scenario, seed);
        // A swarm suspends only a store whose calls can be; a scenario's
        // own `[preempt]` refuses any other (`preempt::setup`).
        let unsuspendable = scenario.faults.swarm && !preempt::suspendable(implementation, run_vfs);
        if unsuspendable {
            preempt = None;
        }
        let preemption = preempt::setup(preempt.as_ref(), implementation, run_vfs)?;
        let system = implementation.system(&config).map_err(SimError::Setup)?;
        let mut system = preempt::system(preemption.as_ref(), system);
        let observer = system.open_observer().map_err(SimError::Setup)?;
        if let Some(preemption) = &preemption {
            preemption.loaded(implementation)?;
        }
        if let Some(power) = &power {
            shared_vfs::loaded(power, implementation)?;
            shared_vfs::default_applied(power, implementation)?;
        }

        let mut plan = scenario.fault_plan();
        if scenario.faults.swarm {
            plan = plan.swarm(&mut Prng::derive(seed, "swarm"));
            plan.preempt = match unsuspendable && scenario.preempt.is_some() {
                true => Some("preempt=unsupported".to_string()),
                false => preempt.as_ref().map(crate::scenario::Preempt::describe),
            };
        }
        plan.default_synchronous = default_synchronous;
        let world = World::new(scenario, &plan, seed, implementation.engine(), implementation.roles());
        let workload = &scenario.workload;
        let roles = [
            (Role::Writer, workload.writers_count),
            (Role::Worker, workload.workers_count),
            (Role::Receiver, workload.receivers_count),
        ];
        let slots: Vec<Slot> = roles
            .into_iter()
            .flat_map(|(role, count)| (0..count).map(move |index| ActorId::new(role, index)))
            .map(|id| Slot::new(id, seed))
            .collect();

        let workflow_ids = world.trips.iter().map(|trip| trip.trip_id.clone()).collect();
        let mut simulator = Simulator {
            scenario,
            seed,
            world,
            plan,
            phase: Phase::Faults,
            now: 0,
            queue: Queue::default(),
            slots,
            implementation,
            config,
            system: Some(system),
            observer: Some(observer),
            power,
            pause: pause::pauses(scenario.faults.pause, &source),
            skew: skew::skews(scenario.faults.skew, &source),
            clock_vfs,
            outside_clock,
            preemption,
            recoveries: Vec::new(),
            backups_in_parts: std::collections::BTreeMap::new(),
            backups_taken: Vec::new(),
            restores: Vec::new(),
            restores_pending: 0,
            fault_points: None,
            fatal: None,
            cancel: None,
            trace: Recorder::new(),
            kills: KillCounters::default(),
            source,
            injected: Vec::new(),
            loss_prng: Prng::derive(seed, "net/loss"),
            latency_prng: Prng::derive(seed, "net/latency"),
            probe_prng: Prng::derive(seed, "probe/chance"),
            probe_target_prng: Prng::derive(seed, "probe/target"),
            near_miss_prng: Prng::derive(seed, "probe/near_miss"),
            near_miss_target_prng: Prng::derive(seed, "probe/near_miss_target"),
            near_keys: Default::default(),
            workflow_ids,
            retryable: retryable::RetryFaults::new(seed, scenario.faults.receiver.poison),
            prober_sent: 0,
            confirmed_replies: 0,
            requests: Default::default(),
            in_flight: 0,
            steps: 0,
            probes: 0,
            settled: false,
            confirm: settle::Confirm::default(),
            stall: stall::Stall::default(),
            store_path,
            receiver_path,
        };
        if let Some(power) = &simulator.power {
            power.start();
        }
        simulator.skew_at_start();
        for slot in 0..simulator.slots.len() {
            simulator.wake(slot, 0);
        }
        simulator.queue.push(scenario.run.ticks_fault, Event::Quiet);
        simulator
            .queue
            .push(scenario.run.settle_check_ticks, Event::SettleCheck);
        for (index, entry) in scenario.script.iter().enumerate() {
            simulator.queue.push(entry.tick, Event::Script { index });
        }
        simulator.schedule_backups();
        simulator.schedule_restores();
        Ok(simulator)
    }

    /// Abandons the run (`SimError::Interrupted`) at the first event for
    /// which `cancelled` says so.
    pub fn cancel_on(mut self, cancelled: fn() -> bool) -> Self {
        self.cancel = Some(cancelled);
        self
    }

    /// Runs to the end and returns what happened. The actors' connections
    /// are closed before the implementation dumps the final state.
    pub fn run(mut self) -> Result<RunOutput, SimError> {
        let (ticks_max, steps_max) = (self.scenario.run.ticks_max, self.scenario.run.steps_max);
        let mut budget_ended = None;
        while let Some((tick, event)) = self.queue.pop() {
            if tick > ticks_max || self.steps >= steps_max {
                budget_ended = Some(if tick > ticks_max { ticks_max } else { self.now });
                break;
            }
            if self.stall.end_after.as_ref().is_some_and(|(until, _)| tick > *until) {
                break;
            }
            if self.cancel.is_some_and(|cancelled| cancelled()) {
                self.fatal = Some(ending::Fatal::Interrupted);
                break;
            }
            self.now = tick;
            self.set_clocks(tick);
            match event {
                Event::Step { slot, token } => self.step(slot, token),
                Event::Deliver { to, message } => self.deliver(to, message),
                Event::Restart { slot, incarnation } => self.restart(slot, incarnation),
                Event::Quiet => self.quiet(),
                Event::SettleCheck => self.settle_check(),
                Event::Script { index } => self.script(index),
                Event::Backup { n, part, attempt } => self.backup(n, part, attempt),
                Event::Restore { n } => self.restore(n),
            }
            if self.power.as_ref().is_some_and(|power| power.cut().is_some()) {
                self.power_cut();
            }
            if self.settled || self.stall.ended || self.fatal.is_some() {
                break;
            }
        }
        // A run that settled before its quiet phase made all its points in faults.
        if self.fault_points.is_none() {
            self.fault_points = self.power.as_ref().map(|power| power.vfs.points());
        }
        let vfs_points = self.power.as_ref().map(|power| power.vfs.points());
        let local_sched_points = preempt::local_points(self.preemption.as_ref());
        let inconclusive = match self.settled {
            true => None,
            false => budget_ended
                .and_then(|ended| self.inconclusive(ended))
                .or_else(|| self.stall.end_after.take().map(|(_, reason)| reason)),
        };
        self.count_suspensions();
        // Closing every connection rolls back what is open and checkpoints the WAL.
        self.observer = None;
        self.slots.clear();
        let dumped = match (&self.fatal, self.system.as_deref_mut()) {
            (Some(fatal), _) => Err(fatal.clone().into_error()),
            (None, system) => {
                let dumped = match system {
                    Some(system) => system.dump(),
                    // A power cut left files no set-up could open: read them as they are.
                    None => Snapshot::read(&self.store_path, &self.receiver_path).map_err(StoreError::from),
                };
                match dumped {
                    // What the run left is damaged beyond reading: a verdict (I9).
                    Err(error) if error.is_corruption() => Ok(Snapshot::unreadable(format!(
                        "unreadable at the end of the run: {error}"
                    ))),
                    dumped => dumped.map_err(SimError::Dump),
                }
            }
        };
        let backups = match (&dumped, self.system.as_deref_mut()) {
            (Ok(_), Some(system)) => {
                let taken: Vec<u32> = self.backups_taken.iter().map(|(n, _)| *n).collect();
                backup::read(&taken, &self.store_path, system)
            }
            _ => Ok(Vec::new()),
        };
        let artifacts = self.system.as_deref_mut().map(System::artifacts).unwrap_or_default();
        self.system = None;
        if let Some(power) = &self.power {
            power.vfs.retire();
        }
        // Files held in memory are written out for whatever reads them next.
        if let Some(vfs) = &self.outside_clock {
            vfs.retire();
        }
        let written = self.clock_vfs.as_ref().map_or(Ok(()), crate::vfs::ClockVfs::retire);
        let snapshot = dumped?;
        let backups = backups?;
        written.map_err(|error| SimError::Environment(format!("writing the databases out of memory: {error}")))?;
        Ok(RunOutput {
            seed: self.seed,
            events: self.trace.into_events(),
            plan: self.plan,
            injected: self.injected,
            kills: self.kills,
            trips: self.world.trips,
            steps: self.steps,
            ticks: self.now,
            settled: self.settled,
            store_path: self.store_path,
            receiver_path: self.receiver_path,
            snapshot,
            artifacts,
            recoveries: self.recoveries,
            restores: self.restores,
            backups,
            fault_points: self.fault_points,
            suspension_steps: preempt::steps(&mut self.preemption),
            vfs_points,
            local_sched_points,
            inconclusive,
        })
    }

    fn record(&mut self, actor: ActorId, op: Op) {
        self.trace.record(self.now, actor, op);
    }

    /// Replaces the slot's wake-up with one `delay` ticks from now.
    fn wake(&mut self, slot: usize, delay: u64) {
        let entry = &mut self.slots[slot];
        entry.token += 1;
        entry.waiting = false;
        let token = entry.token;
        self.queue.push(self.now + delay, Event::Step { slot, token });
    }

    /// One step's duration: 1..=step_ticks_max.
    fn step_delay(&mut self, slot: usize) -> u64 {
        let max = self.scenario.timing.step_ticks_max;
        self.slots[slot].sched.range_inclusive(1, max)
    }
}
