//! An actor's lives (boot, kill, restart), the run's phases and scripted
//! faults, power cuts and their recovery, and settling.

use super::ending::Fatal;
use super::{Event, Life, Phase, Simulator};
use crate::actors::{Actor, ActorId, Next};
use crate::faults::{Fault, Injected};
use crate::sim::power::{Power, Recovery};
use crate::store::{Snapshot, StoreError, Who};
use crate::trace::Op;

impl Simulator<'_> {
    pub(super) fn boot(&mut self, slot: usize) -> Next {
        let (id, incarnation) = (self.slots[slot].id, self.slots[slot].incarnation);
        let Some(system) = self.system.as_deref_mut() else {
            return self.boot_failed(id, "the databases are not recovered".to_string());
        };
        let name = id.to_string();
        let who = Who {
            actor: &name,
            incarnation,
        };
        match Actor::open(id.role, system, &who) {
            Ok(actor) => {
                // Read back what the new connection really runs with: the
                // per-connection PRAGMAs must be applied on every open (I9).
                let synchronous = actor.synchronous();
                self.booted(slot, actor, synchronous)
            }
            // The open waited for a lock a suspended call holds: its
            // process is gone with the failed open; try again later.
            Err(StoreError::Busy | StoreError::Preempted { .. }) => self.boot_busy(id),
            Err(StoreError::Broken(message)) => Next::Abort(message),
            Err(StoreError::Died(cause)) => {
                self.record(
                    id,
                    Op::Died {
                        step: "open".to_string(),
                        cause,
                    },
                );
                Next::Crash
            }
            Err(error) => match error.environment() {
                // The machine failed under the store, and not because the
                // power is out: no verdict.
                Some(cause) if !self.cutting() => Next::Environment(format!("open: {cause}")),
                _ => self.boot_failed(id, error.to_string()),
            },
        }
    }

    fn booted(&mut self, slot: usize, actor: Actor, synchronous: Option<u8>) -> Next {
        let (id, incarnation) = (self.slots[slot].id, self.slots[slot].incarnation);
        self.slots[slot].life = Life::Up(Box::new(actor));
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
        Next::Sleep(self.scenario.timing.poll_ticks)
    }

    /// Kills the actor: its connection closes (an open transaction rolls
    /// back) and its memory is gone. It restarts after a seeded delay.
    pub(super) fn kill(&mut self, slot: usize, point: &str) {
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
        let timing = &self.scenario.timing;
        let delay = match self.phase {
            Phase::Faults => self.slots[slot]
                .sched
                .range_inclusive(timing.restart_ticks_min, timing.restart_ticks_max),
            Phase::Quiet => 1,
        };
        self.queue
            .push(self.now + delay.max(1), Event::Restart { slot, incarnation });
    }

    pub(super) fn restart(&mut self, slot: usize, incarnation: u32) {
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

    /// Faults stop: at `run.ticks_fault`, or sooner for a stuck run (`stall`).
    pub(super) fn quiet(&mut self) {
        if self.phase == Phase::Quiet {
            return;
        }
        self.phase = Phase::Quiet;
        self.stall.quiet_from = self.now;
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

    pub(super) fn script(&mut self, index: usize) {
        // The faults stopped early (`Stall::faults_stopped`).
        if self.stall.faults_stopped {
            return;
        }
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
    pub(super) fn power_cut(&mut self) {
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
        match power.restore(point) {
            Ok((scheduled, restored)) => {
                if scheduled {
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
                // The crash VFS could not rewrite the files: crashsim's own
                // failure, never a verdict.
                self.fatal = Some(Fatal::Environment(format!(
                    "restoring the files after the power cut at point {point}: {error}"
                )));
                return;
            }
        }
        // Recovery is what the implementation finds when it starts again:
        // its own set-up, then its own dump (through the run's VFS), the one
        // path every checker reads.
        let snapshot = match self.start_again() {
            Ok(snapshot) => {
                self.record_recovered(&snapshot);
                snapshot
            }
            Err(error) if error.is_corruption() => {
                let error = error.to_string();
                let op = Op::Failed {
                    step: "recovery".to_string(),
                    error: error.clone(),
                };
                self.record(ActorId::SIM, op);
                // Damaged beyond reading after the cut: judged as a failed
                // integrity check, and every cut keeps its place among the
                // recoveries.
                Snapshot::unreadable(format!("unreadable after the cut: {error}"))
            }
            Err(error) => {
                // Anything else (I/O, a full disk, a broken dump) is not a
                // verdict on the store: the run stops without one.
                self.fatal = Some(Fatal::of(
                    &format!("recovering after the power cut at point {point}"),
                    &error,
                ));
                return;
            }
        };
        if let Some(power) = self.power.as_mut() {
            power.resume();
        }
        self.recoveries.push(Recovery {
            tick: self.now,
            point,
            snapshot,
        });
        if let Some(system) = self.system.as_deref_mut() {
            self.observer = system.open_observer().ok();
        }
    }

    /// The implementation's own set-up on the files as they are now, then
    /// its own dump (through the run's VFS): what it finds when it starts
    /// again after a cut or a restore. The new system is the run's.
    pub(super) fn start_again(&mut self) -> Result<Snapshot, StoreError> {
        self.implementation.system(&self.config).and_then(|system| {
            let mut system = super::preempt::system(self.preemption.as_ref(), system);
            let snapshot = system.dump();
            self.system = Some(system);
            snapshot
        })
    }

    /// Records what the store and the receivers hold after a recovery.
    pub(super) fn record_recovered(&mut self, snapshot: &Snapshot) {
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
    }
}
