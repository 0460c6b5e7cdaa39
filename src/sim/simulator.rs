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

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::ctx::{Ctx, KillGate, TripRequest, World};
use super::faults::{Fault, FaultPlan, FaultSource, Injected, KILL_POINTS, KillCounters};
use super::net::{Address, Message};
use super::power::{Power, Recovery};
use super::prng::Prng;
use super::process::parent::{Spawned, Turn};
use super::process::{self, ChildActor, Mode};
use super::queue::Queue;
use crate::actors::{Actor, ActorId, Next, Role};
use crate::check::Snapshot;
use crate::scenario::Scenario;
use crate::store::{self, Implementation, Request, StoreError, System, SystemConfig};
use crate::trace::{Op, Recorder, TraceEvent};
use crate::workflow::payload;
use crate::workflow::trip::{HOTEL_BOOKED, HOTEL_FAILED};

/// A run that could not be set up (not an invariant violation).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("unknown implementation {0:?}")]
    UnknownStore(String),
    #[error("setting up the databases: {0}")]
    Setup(#[from] StoreError),
    #[error("opening the observer connection: {0}")]
    Observer(#[from] rusqlite::Error),
    #[error("registering the crash VFS: {0}")]
    Vfs(#[from] crate::vfs::VfsError),
    #[error("process mode cannot run {0}")]
    Unsupported(String),
    #[error("an actor process failed: {0}")]
    Process(String),
}

/// What a run produced, for the checkers and the reports.
pub struct RunOutput {
    pub seed: u64,
    pub events: Vec<TraceEvent>,
    pub plan: FaultPlan,
    /// Every fault that fired, in order: a forced replay of this list
    /// reproduces the run.
    pub injected: Vec<Injected>,
    pub kills: KillCounters,
    pub trips: Vec<TripRequest>,
    /// Actor steps taken.
    pub steps: u64,
    /// The tick the run ended at.
    pub ticks: u64,
    pub settled: bool,
    pub store_path: PathBuf,
    pub receiver_path: PathBuf,
    /// What recovery found after each power cut.
    pub recoveries: Vec<Recovery>,
    /// Persistence points the crash VFS saw during the fault phase (the
    /// points a cut could hit), for power-loss runs that reached the quiet phase.
    pub fault_points: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Faults,
    Quiet,
}

enum Event {
    Step { slot: usize, token: u64 },
    Deliver { to: Address, message: Message },
    Restart { slot: usize, incarnation: u32 },
    Quiet,
    SettleCheck,
    Script { index: usize },
}

enum Life {
    /// Alive but not yet connected: the next step opens the connection.
    Booting,
    Up(Box<Backend>),
    Down,
}

/// Where a live actor runs.
enum Backend {
    Local(Actor),
    /// In a child process (process mode); dropping it kills and reaps the child.
    Child(ChildActor),
}

/// One actor's place in the simulation, which outlives its lives.
struct Slot {
    id: ActorId,
    life: Life,
    incarnation: u32,
    token: u64,
    /// Waiting for a message: an arrival wakes it.
    waiting: bool,
    /// Busy answers in a row, for the backoff.
    busy_streak: u32,
    /// How often the actor reached each kill point, across its lives.
    reaches: [u64; KILL_POINTS],
    /// Messages it sent, across its lives.
    sent: u64,
    /// The actor's decisions.
    prng: Prng,
    /// Its step durations and restart delays.
    sched: Prng,
    /// Its kill draws.
    faults: Prng,
}

pub struct Simulator<'a> {
    scenario: &'a Scenario,
    seed: u64,
    world: World,
    plan: FaultPlan,
    phase: Phase,
    now: u64,
    queue: Queue<Event>,
    slots: Vec<Slot>,
    implementation: &'static dyn Implementation,
    config: SystemConfig,
    /// Absent between a power cut and its recovery.
    system: Option<Box<dyn System>>,
    observer: Option<Connection>,
    /// Power loss, when the scenario (or a forced schedule) has any.
    power: Option<Power>,
    recoveries: Vec<Recovery>,
    fault_points: Option<u64>,
    mode: Mode,
    /// The scenario as TOML, for children (process mode).
    scenario_text: String,
    /// A failure of crashsim itself that ends the run (process mode).
    fatal: Option<String>,
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
    store_path: PathBuf,
    receiver_path: PathBuf,
}

impl<'a> Simulator<'a> {
    /// Sets up a run of `scenario` with `seed`, its databases in `dir`, its
    /// faults drawn or forced by `source`.
    pub fn new(scenario: &'a Scenario, seed: u64, dir: &Path, source: FaultSource) -> Result<Simulator<'a>, SimError> {
        let implementation =
            crate::mutants::resolve(&scenario.store).ok_or_else(|| SimError::UnknownStore(scenario.store.clone()))?;
        let store_path = dir.join("store.db");
        let receiver_path = dir.join("receiver.db");
        let forced_cut = matches!(&source, FaultSource::Forced(faults)
            if faults.iter().any(|fault| matches!(fault, Fault::PowerCut { .. })));
        let power = if scenario.power_enabled() || forced_cut {
            Some(Power::new(seed, scenario.power.model, &source)?)
        } else {
            None
        };
        let (mut store_sqlite, mut receiver_sqlite) =
            (scenario.sqlite.store_settings(), scenario.sqlite.receiver_settings());
        if let Some(power) = &power {
            store_sqlite.vfs = Some(power.vfs.name());
            receiver_sqlite.vfs = Some(power.vfs.name());
        }
        let config = SystemConfig {
            store_path: store_path.clone(),
            receiver_path: receiver_path.clone(),
            store_sqlite,
            receiver_sqlite,
            hotel_failure: scenario.workload.hotel_failure,
        };
        let system = implementation.system(&config)?;
        let observer = store::connection::open(&store_path, &config.store_sqlite)?;

        let mut plan = scenario.fault_plan();
        if scenario.faults.swarm {
            plan = plan.swarm(&mut Prng::derive(seed, "swarm"));
        }
        let world = World::new(scenario, seed, implementation.engine());
        let workload = &scenario.workload;
        let roles = [
            (Role::Writer, workload.writers_count),
            (Role::Worker, workload.workers_count),
            (Role::Receiver, workload.receivers_count),
        ];
        let slots: Vec<Slot> = roles
            .into_iter()
            .flat_map(|(role, count)| (0..count).map(move |index| ActorId::new(role, index)))
            .map(|id| Slot {
                id,
                life: Life::Booting,
                incarnation: 0,
                token: 0,
                waiting: false,
                busy_streak: 0,
                reaches: [0; KILL_POINTS],
                sent: 0,
                prng: Prng::derive(seed, &format!("{id}/decide")),
                sched: Prng::derive(seed, &format!("{id}/sched")),
                faults: Prng::derive(seed, &format!("{id}/faults")),
            })
            .collect();

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
            recoveries: Vec::new(),
            fault_points: None,
            mode: Mode::InProcess,
            scenario_text: String::new(),
            fatal: None,
            trace: Recorder::new(),
            kills: KillCounters::default(),
            source,
            injected: Vec::new(),
            loss_prng: Prng::derive(seed, "net/loss"),
            latency_prng: Prng::derive(seed, "net/latency"),
            probe_prng: Prng::derive(seed, "probe/chance"),
            probe_target_prng: Prng::derive(seed, "probe/target"),
            prober_sent: 0,
            confirmed_replies: 0,
            requests: Default::default(),
            in_flight: 0,
            steps: 0,
            probes: 0,
            settled: false,
            store_path,
            receiver_path,
        };
        if let Some(power) = &simulator.power {
            power.start();
        }
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
        Ok(simulator)
    }

    /// Runs the actors as child processes of `exe` (see `process`).
    pub fn in_mode(mut self, mode: Mode) -> Result<Self, SimError> {
        if let Mode::Process { .. } = mode {
            if self.power.is_some() {
                return Err(SimError::Unsupported(
                    "power loss (the crash VFS lives in one process)".to_string(),
                ));
            }
            if self.scenario.store == "group_commit" {
                return Err(SimError::Unsupported(
                    "group_commit (its writers share one in-process committer)".to_string(),
                ));
            }
            self.scenario_text =
                toml::to_string(self.scenario).map_err(|error| SimError::Unsupported(error.to_string()))?;
        }
        self.mode = mode;
        Ok(self)
    }

    /// Runs to the end and returns what happened. The actors' connections
    /// are closed before this returns, so the files can be judged.
    pub fn run(mut self) -> Result<RunOutput, SimError> {
        let (ticks_max, steps_max) = (self.scenario.run.ticks_max, self.scenario.run.steps_max);
        while let Some((tick, event)) = self.queue.pop() {
            if tick > ticks_max || self.steps >= steps_max {
                break;
            }
            self.now = tick;
            if let Some(power) = &self.power {
                power.vfs.set_clock(tick);
            }
            match event {
                Event::Step { slot, token } => self.step(slot, token),
                Event::Deliver { to, message } => self.deliver(to, message),
                Event::Restart { slot, incarnation } => self.restart(slot, incarnation),
                Event::Quiet => self.quiet(),
                Event::SettleCheck => self.settle_check(),
                Event::Script { index } => self.script(index),
            }
            if self.power.as_ref().is_some_and(|power| power.cut().is_some()) {
                self.power_cut();
            }
            if self.settled || self.fatal.is_some() {
                break;
            }
        }
        // A run that settled before its quiet phase made all its points in faults.
        if self.fault_points.is_none() {
            self.fault_points = self.power.as_ref().map(|power| power.vfs.points());
        }
        // Closing every connection rolls back what is open and checkpoints the WAL.
        self.observer = None;
        self.slots.clear();
        self.system = None;
        if let Some(power) = &self.power {
            power.vfs.retire();
        }
        if let Some(message) = self.fatal {
            return Err(SimError::Process(message));
        }
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
            recoveries: self.recoveries,
            fault_points: self.fault_points,
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
        let max = self.world.timing.step_ticks_max;
        self.slots[slot].sched.range_inclusive(1, max)
    }

    fn step(&mut self, slot: usize, token: u64) {
        if self.slots[slot].token != token {
            return;
        }
        self.slots[slot].waiting = false;
        self.steps += 1;
        let next = match self.slots[slot].life {
            Life::Down => return,
            Life::Booting => self.boot(slot),
            Life::Up(_) => {
                if self.phase == Phase::Faults
                    && let Some(power) = &mut self.power
                {
                    power.draw(self.plan.power_loss);
                }
                self.actor_step(slot)
            }
        };
        if next != Next::Busy {
            self.slots[slot].busy_streak = 0;
        }
        match next {
            Next::Busy => {
                let entry = &mut self.slots[slot];
                let cap = self.world.timing.busy_backoff_ticks_max;
                let backoff = (1u64 << entry.busy_streak.min(20)).min(cap);
                entry.busy_streak += 1;
                let delay = backoff + entry.sched.range_inclusive(0, backoff);
                self.wake(slot, delay);
            }
            Next::Continue => {
                let delay = self.step_delay(slot);
                self.wake(slot, delay);
            }
            Next::Sleep(ticks) => {
                let delay = ticks + self.step_delay(slot) - 1;
                self.wake(slot, delay);
            }
            Next::Wait { deadline } => {
                match deadline {
                    Some(deadline) => {
                        let delay = deadline.saturating_sub(self.now).max(1);
                        self.wake(slot, delay);
                    }
                    None => self.slots[slot].token += 1,
                }
                self.slots[slot].waiting = true;
            }
            Next::Killed(point) => self.kill(slot, point.name()),
            Next::Crash => self.kill(slot, "crash"),
        }
    }

    fn boot(&mut self, slot: usize) -> Next {
        let id = self.slots[slot].id;
        if let Mode::Process { exe } = &self.mode {
            let init = process::protocol::Init {
                scenario: self.scenario_text.clone(),
                seed: self.seed,
                actor: id,
                store_path: self.store_path.clone(),
                receiver_path: self.receiver_path.clone(),
            };
            return match ChildActor::spawn(exe, &init) {
                Ok(Spawned::Up(child, synchronous)) => self.booted(slot, Backend::Child(child), synchronous),
                Ok(Spawned::Busy) => self.boot_busy(id),
                Ok(Spawned::Failed(error)) => self.boot_failed(id, error),
                Err(error) if process::parent::is_fatal(&error) => {
                    self.fatal = Some(error.to_string());
                    Next::Crash
                }
                Err(error) => self.boot_failed(id, error.to_string()),
            };
        }
        let role = id.role;
        let Some(system) = self.system.as_deref_mut() else {
            return self.boot_failed(id, "the databases are not recovered".to_string());
        };
        match Actor::open(role, system) {
            Ok(actor) => {
                // Read back what the new connection really runs with: the
                // per-connection PRAGMAs must be applied on every open (I9).
                let synchronous = actor.connection().and_then(|conn| {
                    conn.pragma_query_value(None, "synchronous", |row| row.get::<_, u8>(0))
                        .ok()
                });
                self.booted(slot, Backend::Local(actor), synchronous)
            }
            Err(StoreError::Busy) => self.boot_busy(id),
            Err(error) => self.boot_failed(id, error.to_string()),
        }
    }

    fn booted(&mut self, slot: usize, backend: Backend, synchronous: Option<u8>) -> Next {
        let (id, incarnation) = (self.slots[slot].id, self.slots[slot].incarnation);
        self.slots[slot].life = Life::Up(Box::new(backend));
        self.record(
            id,
            Op::Open {
                incarnation,
                synchronous,
            },
        );
        Next::Continue
    }

    fn boot_busy(&mut self, id: ActorId) -> Next {
        self.record(
            id,
            Op::Busy {
                step: "open".to_string(),
            },
        );
        Next::Busy
    }

    fn boot_failed(&mut self, id: ActorId, error: String) -> Next {
        self.record(
            id,
            Op::Failed {
                step: "open".to_string(),
                error,
            },
        );
        Next::Sleep(self.world.timing.poll_ticks)
    }

    fn actor_step(&mut self, slot: usize) -> Next {
        let mut outgoing = Vec::new();
        let Simulator {
            slots,
            world,
            plan,
            source,
            kills,
            injected,
            trace,
            phase,
            now,
            fatal,
            ..
        } = self;
        let entry = &mut slots[slot];
        let Life::Up(backend) = &mut entry.life else {
            unreachable!("actor_step on an actor that is not up")
        };
        let mut gate = KillGate {
            plan,
            source,
            counters: kills,
            reaches: &mut entry.reaches,
            prng: &mut entry.faults,
            injected,
            active: *phase == Phase::Faults,
        };
        let next = match &mut **backend {
            Backend::Local(actor) => {
                let mut ctx = Ctx {
                    now: *now,
                    me: entry.id,
                    incarnation: entry.incarnation,
                    prng: &mut entry.prng,
                    world,
                    kill: &mut gate,
                    trace,
                    outgoing: &mut outgoing,
                };
                actor.step(&mut ctx)
            }
            Backend::Child(child) => {
                let turn = Turn {
                    now: *now,
                    incarnation: entry.incarnation,
                    actor: entry.id,
                };
                match child.step(turn, &mut entry.prng, &mut gate, trace, &mut outgoing) {
                    Ok(next) => next,
                    Err(error) => {
                        if process::parent::is_fatal(&error) {
                            *fatal = Some(error.to_string());
                        }
                        let op = Op::Failed {
                            step: "process".to_string(),
                            error: error.to_string(),
                        };
                        trace.record(*now, entry.id, op);
                        Next::Crash
                    }
                }
            }
        };
        let from = entry.id;
        for (to, message) in outgoing {
            self.send(from, to, message);
        }
        next
    }

    /// Puts a message on the wire: it may be lost or duplicated while faults
    /// are on, and arrives after 1..=latency_ticks_max ticks.
    fn send(&mut self, from: ActorId, to: Address, message: Message) {
        let faults_on = self.phase == Phase::Faults;
        if let Message::Request { request, reply_to } = &message
            && reply_to.actor.role == Role::Worker
        {
            self.requests
                .entry(request.key.clone())
                .or_insert_with(|| (request.kind.clone(), request.payload.clone()));
        }
        let send = match self.slot_of(from) {
            Some(slot) => {
                self.slots[slot].sent += 1;
                self.slots[slot].sent
            }
            None => {
                self.prober_sent += 1;
                self.prober_sent
            }
        };
        let drop = Fault::Drop { from, send };
        if faults_on && self.source.fires(&mut self.loss_prng, self.plan.net_drop, &drop) {
            self.injected.push(Injected {
                tick: self.now,
                fault: drop,
            });
            let op = Op::Lost {
                key: message.key().to_string(),
                to: to.actor,
                reason: "dropped by the network".to_string(),
            };
            self.record(from, op);
            return;
        }
        let mut copies = 1;
        let duplicate = Fault::Duplicate { from, send };
        if faults_on
            && self
                .source
                .fires(&mut self.loss_prng, self.plan.net_duplicate, &duplicate)
        {
            copies = 2;
            self.injected.push(Injected {
                tick: self.now,
                fault: duplicate,
            });
            let op = Op::Duplicated {
                key: message.key().to_string(),
                to: to.actor,
            };
            self.record(from, op);
        }
        for _ in 0..copies {
            let latency = self
                .latency_prng
                .range_inclusive(1, self.world.timing.latency_ticks_max);
            self.in_flight += 1;
            self.queue.push(
                self.now + latency,
                Event::Deliver {
                    to,
                    message: message.clone(),
                },
            );
        }
    }

    fn slot_of(&self, id: ActorId) -> Option<usize> {
        let workload = &self.scenario.workload;
        let offset = match id.role {
            Role::Writer => 0,
            Role::Worker => workload.writers_count,
            Role::Receiver => workload.writers_count + workload.workers_count,
            Role::Prober | Role::Sim => return None,
        };
        Some((offset + id.index) as usize)
    }

    fn deliver(&mut self, to: Address, message: Message) {
        self.in_flight -= 1;
        if to.actor == ActorId::PROBER {
            if let Message::Reply { key, outcome } = message {
                self.record(ActorId::PROBER, Op::ProbeReply { key, outcome });
            }
            return;
        }
        let slot = self.slot_of(to.actor).expect("messages go to actors");
        let entry = &mut self.slots[slot];
        let alive = matches!(entry.life, Life::Up(_)) && to.incarnation.is_none_or(|life| life == entry.incarnation);
        if !alive {
            let op = Op::Lost {
                key: message.key().to_string(),
                to: to.actor,
                reason: "recipient is down or restarted".to_string(),
            };
            self.record(ActorId::SIM, op);
            return;
        }
        let probe = match &message {
            Message::Reply { key, outcome } if outcome.result().is_some() => Some(key.clone()),
            _ => None,
        };
        if let Life::Up(backend) = &mut entry.life {
            match &mut **backend {
                Backend::Local(actor) => actor.deliver(message),
                // A child that cannot take a message is dead: its next step says so.
                Backend::Child(child) => {
                    let _ = child.deliver(message);
                }
            }
        }
        if entry.waiting {
            let delay = self.step_delay(slot);
            self.wake(slot, delay);
        }
        if let Some(key) = probe {
            self.maybe_probe(key);
        }
    }

    /// After a confirmed reply, maybe send a rogue request that reuses the
    /// key with other core parameters (I7).
    fn maybe_probe(&mut self, key: String) {
        self.confirmed_replies += 1;
        let probe = Fault::Probe {
            reply: self.confirmed_replies,
        };
        if self.phase != Phase::Faults || !self.source.fires(&mut self.probe_prng, self.plan.key_conflict, &probe) {
            return;
        }
        let Some((kind, original)) = self.requests.get(&key).cloned() else {
            return;
        };
        let Ok(mut fields) = payload::decode(&original) else {
            return;
        };
        self.injected.push(Injected {
            tick: self.now,
            fault: probe,
        });
        self.probes += 1;
        fields.insert("probe".to_string(), self.probes.to_string());
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let altered = payload::encode(&pairs);
        let index = self.probe_target_prng.below(u64::from(self.world.receivers_count)) as u32;
        let to = ActorId::new(Role::Receiver, index);
        self.record(
            ActorId::PROBER,
            Op::Probe {
                key: key.clone(),
                to,
                payload: altered.clone(),
            },
        );
        let request = Request {
            key,
            kind,
            payload: altered,
            attempt: 0,
            sent_tick: self.now,
        };
        let reply_to = Address {
            actor: ActorId::PROBER,
            incarnation: None,
        };
        self.send(
            ActorId::PROBER,
            Address {
                actor: to,
                incarnation: None,
            },
            Message::Request { request, reply_to },
        );
    }

    /// Kills the actor: its connection closes (an open transaction rolls
    /// back) and its memory is gone. It restarts after a seeded delay.
    fn kill(&mut self, slot: usize, point: &str) {
        let entry = &mut self.slots[slot];
        if matches!(entry.life, Life::Down) {
            return;
        }
        entry.life = Life::Down;
        entry.incarnation += 1;
        entry.token += 1;
        entry.waiting = false;
        let (id, incarnation) = (entry.id, entry.incarnation);
        self.record(
            id,
            Op::Kill {
                point: point.to_string(),
            },
        );
        let timing = &self.world.timing;
        let delay = match self.phase {
            Phase::Faults => self.slots[slot]
                .sched
                .range_inclusive(timing.restart_ticks_min, timing.restart_ticks_max),
            Phase::Quiet => 1,
        };
        self.queue
            .push(self.now + delay.max(1), Event::Restart { slot, incarnation });
    }

    fn restart(&mut self, slot: usize, incarnation: u32) {
        let entry = &mut self.slots[slot];
        if entry.incarnation != incarnation || !matches!(entry.life, Life::Down) {
            return;
        }
        entry.life = Life::Booting;
        let id = entry.id;
        self.record(id, Op::Restart { incarnation });
        let delay = self.step_delay(slot);
        self.wake(slot, delay);
    }

    fn quiet(&mut self) {
        self.phase = Phase::Quiet;
        if let Some(power) = &mut self.power {
            self.fault_points = Some(power.quiet());
        }
        self.record(ActorId::SIM, Op::Quiet);
        for slot in 0..self.slots.len() {
            let entry = &self.slots[slot];
            if matches!(entry.life, Life::Down) {
                let incarnation = entry.incarnation;
                self.queue.push(self.now + 1, Event::Restart { slot, incarnation });
            }
        }
    }

    fn script(&mut self, index: usize) {
        let Some(target) = self.scenario.script[index].kill.clone() else {
            if let Some(power) = &mut self.power {
                power.script();
            }
            return;
        };
        let targets = self.scenario.kill_targets(&target).unwrap_or_default();
        for (role, actor) in targets {
            if let Some(slot) = self.slot_of(ActorId::new(role, actor)) {
                self.kill(slot, "script");
            }
        }
    }

    /// The power went out: every actor dies at once, the files are rewritten
    /// as the disk model leaves them, and what recovery finds is recorded for
    /// the checkers (I9, I4). Then the run goes on: actors restart as after
    /// kills and recover from what survived.
    fn power_cut(&mut self) {
        let Some(point) = self.power.as_ref().and_then(Power::cut) else {
            return;
        };
        let model = self.scenario.power.model.name().to_string();
        self.record(ActorId::SIM, Op::PowerCut { point, model });
        // Their connections close with the power out: nothing more is written.
        self.observer = None;
        for slot in 0..self.slots.len() {
            if !matches!(self.slots[slot].life, Life::Down) {
                self.kill(slot, "power_cut");
            }
        }
        self.system = None;
        let power = self.power.as_mut().expect("checked above");
        let vfs = power.vfs.name();
        match power.restore(point) {
            Ok((drawn, restored)) => {
                if drawn {
                    self.injected.push(Injected {
                        tick: self.now,
                        fault: Fault::PowerCut { point },
                    });
                }
                self.record(
                    ActorId::SIM,
                    Op::Restored {
                        kept: restored.kept,
                        lost: restored.lost,
                        torn: restored.torn,
                    },
                );
            }
            Err(error) => {
                let op = Op::Failed {
                    step: "restore".to_string(),
                    error: error.to_string(),
                };
                self.record(ActorId::SIM, op);
            }
        }
        match Snapshot::read_via(&self.store_path, &self.receiver_path, Some(vfs)) {
            Ok(snapshot) => {
                self.record(
                    ActorId::SIM,
                    Op::Recovered {
                        events: snapshot.events.len(),
                        outbox: snapshot.outbox.len(),
                        effects: snapshot.effects.len(),
                        store_integrity: snapshot.store_integrity.clone(),
                        receiver_integrity: snapshot.receiver_integrity.clone(),
                    },
                );
                self.recoveries.push(Recovery {
                    tick: self.now,
                    point,
                    snapshot,
                });
            }
            Err(error) => {
                let op = Op::Failed {
                    step: "recovery".to_string(),
                    error: error.to_string(),
                };
                self.record(ActorId::SIM, op);
            }
        }
        match self.implementation.system(&self.config) {
            Ok(system) => self.system = Some(system),
            Err(error) => {
                let op = Op::Failed {
                    step: "recovery".to_string(),
                    error: error.to_string(),
                };
                self.record(ActorId::SIM, op);
            }
        }
        self.observer = store::connection::open(&self.store_path, &self.config.store_sqlite).ok();
    }

    fn settle_check(&mut self) {
        if self.is_settled() {
            self.settled = true;
            self.record(ActorId::SIM, Op::Settled);
        } else {
            self.queue
                .push(self.now + self.scenario.run.settle_check_ticks, Event::SettleCheck);
        }
    }

    /// Nothing in flight, every live actor idle, every workflow terminal and
    /// the outbox drained. The cheap in-memory tests go first.
    fn is_settled(&mut self) -> bool {
        if self.in_flight > 0 {
            return false;
        }
        let busy = self.slots.iter_mut().any(|slot| match &mut slot.life {
            Life::Up(backend) => match &mut **backend {
                Backend::Local(actor) => !actor.is_idle(),
                Backend::Child(child) => !child.is_idle().unwrap_or(false),
            },
            Life::Booting | Life::Down => false,
        });
        if busy {
            return false;
        }
        let Some(observer) = &self.observer else {
            return false;
        };
        let query = || -> rusqlite::Result<bool> {
            let pending: i64 =
                observer.query_row("SELECT COUNT(*) FROM outbox WHERE processed_at IS NULL", [], |row| {
                    row.get(0)
                })?;
            if pending > 0 {
                return Ok(false);
            }
            let terminal: i64 = observer.query_row(
                "SELECT COUNT(*) FROM events e
                  WHERE e.seq = (SELECT MAX(seq) FROM events m WHERE m.workflow_id = e.workflow_id)
                    AND e.kind IN (?1, ?2)",
                [HOTEL_BOOKED, HOTEL_FAILED],
                |row| row.get(0),
            )?;
            Ok(terminal as usize == self.world.trips.len())
        };
        // An observer read can only fail on a broken file; then it is not settled.
        query().unwrap_or(false)
    }
}
