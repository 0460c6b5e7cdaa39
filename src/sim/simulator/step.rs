//! One actor step: the actor's life (boot, run, crash), what its step
//! asked for next, and the step itself inside the actor's context.

use super::state::{Life, Phase};
use super::{Simulator, ending, skew};
use crate::actors::{Ctx, Next};
use crate::sim::gate::KillGate;

impl Simulator<'_> {
    pub(super) fn step(&mut self, slot: usize, token: u64) {
        if self.slots[slot].token != token || self.pause(slot) {
            return;
        }
        self.clock_step(slot);
        self.slots[slot].waiting = false;
        self.steps += 1;
        // The step reads the actor's own clock, wherever it reads one.
        self.set_clocks(self.actor_clock(slot));
        let syncs = self.syncs_before();
        let next = self.life_step(slot);
        if let Some(before) = syncs {
            self.judge_syncs(slot, before);
        }
        self.set_clocks(self.now);
        if let Some(next) = next {
            self.after_step(slot, next);
        }
    }

    /// The step itself: boot, or the actor's own step (none if it is down).
    fn life_step(&mut self, slot: usize) -> Option<Next> {
        Some(match self.slots[slot].life {
            Life::Down => return None,
            Life::Booting => {
                // A new connection that waits for a lock a suspended call
                // holds yields too; the boot is then retried as a busy one.
                self.arm_preempt_waits(slot);
                let next = self.boot(slot);
                self.disarm_preempt();
                next
            }
            Life::Up(_) => {
                if self.phase == Phase::Faults
                    && let Some(power) = &mut self.power
                {
                    power.draw(self.plan.power_loss);
                }
                self.arm_preempt(slot);
                let next = self.actor_step(slot);
                self.disarm_preempt();
                next
            }
        })
    }

    /// Schedules what follows a step.
    fn after_step(&mut self, slot: usize, next: Next) {
        // A suspended call is no answer yet: a waiter that parks between
        // two `BUSY`s keeps backing off, as it would without suspensions.
        if !matches!(next, Next::Busy | Next::Preempted) {
            self.slots[slot].busy_streak = 0;
        }
        self.slots[slot].parked = false;
        match next {
            Next::Preempted => self.preempted(slot),
            Next::Busy => {
                let entry = &mut self.slots[slot];
                let cap = self.scenario.timing.busy_backoff_ticks_max;
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
            Next::Abort(message) => {
                let id = self.slots[slot].id;
                self.fatal = Some(ending::Fatal::Broken(format!("{id}: {message}")));
            }
            Next::Environment(cause) => self.environment_failed(slot, cause),
        }
    }

    fn actor_step(&mut self, slot: usize) -> Next {
        let mut outgoing = Vec::new();
        let inside = self.inside_calls();
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
            ..
        } = self;
        let entry = &mut slots[slot];
        let Life::Up(actor) = &mut entry.life else {
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
            inside: inside.as_ref(),
        };
        let clock = skew::skewed(*now, entry.offset);
        let mut ctx = Ctx {
            now: *now,
            clock,
            me: entry.id,
            incarnation: entry.incarnation,
            prng: &mut entry.prng,
            world,
            kill: &mut gate,
            trace,
            outgoing: &mut outgoing,
        };
        let next = actor.step(&mut ctx);
        let from = entry.id;
        for (to, message) in outgoing {
            self.send(from, to, message);
        }
        next
    }
}
