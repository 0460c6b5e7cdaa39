//! Suspensions inside the store's own calls (`[preempt]`): before each
//! actor step the simulator arms the scheduling point at which the step's
//! call parks (drawn from the actor's own preemption stream, in the fault
//! phase), and after it disarms it. A step whose call parked answers
//! `Next::Preempted`; the actor waits 1..=`hold_ticks_max` ticks while the
//! others run, then asks the same call again, which goes on where it
//! stopped (`adapter::rendezvous` for a store's process, `sim::baton` for
//! an in-process store's coroutine).
//!
//! In the quiet phase nothing is armed, but preemption stays live: a wait
//! for a lock still parks, so a call suspended in the fault phase that
//! holds a lock is resumed before anyone starves waiting for it.

use std::sync::atomic::Ordering;

use super::state::Phase;
use super::{SimError, Simulator};
use crate::actors::ActorId;
use crate::faults::{Fault, Injected, StepPoints, SuspensionCount};
use crate::prng::Prng;
use crate::ratio::Ratio;
use crate::scenario::{Preempt, Scenario};
use crate::sim::baton::BatonSystem;
use crate::store::{Implementation, System};
use crate::trace::Ran;
use crate::vfs::CrashVfs;

/// How many scheduling points an arming looks ahead, at most: past them
/// the step's call is not suspended.
const LOOKAHEAD: u64 = 4_096;

/// A run's preemption: the shared control region and the scenario's section.
pub(super) struct Preemption {
    control: &'static crashsim_vfs::control::Control,
    /// The store lives in this process: its calls park on the baton
    /// (`sim::baton`), not at the FIFO.
    local: bool,
    rate: Ratio,
    hold_ticks_max: u64,
    /// The points reached before the armed step began (`None` between
    /// steps, and in steps where nothing can be suspended).
    step_began: Option<[u64; KINDS]>,
    /// Points reached inside armed steps, per kind: where a suspension
    /// could land (the coverage gate's denominator).
    armed: [u64; KINDS],
    /// The suspension armed for the step under way, if any.
    suspension: Option<Suspension>,
    /// The step under way: its actor, its count, the scheduling points
    /// counted before it began.
    under_way: Option<(ActorId, u64, u64)>,
    /// The scheduling points each armed step passed (`StepPoints`).
    steps: Vec<StepPoints>,
}

/// Where the step under way parks: `slot`'s `step`-th step in the fault
/// phase, at its `point`-th scheduling point; its hold if forced.
struct Suspension {
    slot: usize,
    step: u64,
    point: u64,
    hold: Option<u64>,
}

const KINDS: usize = crashsim_vfs::preempt::Kind::ALL.len();

impl Preemption {
    fn reached(&self) -> [u64; KINDS] {
        std::array::from_fn(|index| self.control.reached[index].load(Ordering::Acquire))
    }
}

/// The seed's suspensions: the scenario's `[preempt]`, or in a swarm the
/// seed's own draw from it, from a stream of its own.
pub(super) fn drawn(scenario: &Scenario, seed: u64) -> Option<Preempt> {
    let declared = scenario.preempt.as_ref()?;
    Some(match scenario.faults.swarm {
        true => declared.swarm(&mut Prng::derive(seed, "swarm/preempt")),
        false => declared.clone(),
    })
}

/// The scheduling points each armed step passed, taken out for the output.
pub(super) fn steps(preemption: &mut Option<Preemption>) -> Vec<StepPoints> {
    preemption
        .as_mut()
        .map(|preemption| std::mem::take(&mut preemption.steps))
        .unwrap_or_default()
}

/// Whether `implementation`'s calls can be suspended: an outside store's
/// processes (the run's VFS is shared with them), or an in-process store
/// whose connections share nothing (`setup` says why not).
pub(super) fn suspendable(implementation: &dyn Implementation, vfs: Option<CrashVfs>) -> bool {
    vfs.is_some_and(|vfs| vfs.shared_dir().is_some())
        || (implementation.in_process() && implementation.suspendable_in_process())
}

/// Turns preemption on for a run that asks for it, before any process
/// starts: an outside store's processes park at the FIFO, an in-process
/// store's calls on the baton (`sim::baton`); a store that can be neither
/// is refused (exit code 2), never run without it. `preempt` is the
/// scenario's section, or a swarm seed's draw from it.
pub(super) fn setup(
    preempt: Option<&Preempt>,
    implementation: &dyn Implementation,
    vfs: Option<CrashVfs>,
) -> Result<Option<Preemption>, SimError> {
    let Some(Preempt {
        rate,
        points,
        hold_ticks_max,
    }) = preempt.cloned()
    else {
        return Ok(None);
    };
    let unsupported = |why: String| SimError::Unsupported(format!("the store `{}`", implementation.description()), why);
    let (control, local) = match vfs.filter(|vfs| vfs.shared_dir().is_some()) {
        // An outside store's processes park at the FIFO.
        Some(vfs) => {
            vfs.enable_preempt(&points)
                .map_err(|error| SimError::Environment(format!("laying out the preemption FIFO: {error}")))?;
            (vfs.control(), false)
        }
        // An in-process store's calls park on the baton.
        None if implementation.in_process() && implementation.suspendable_in_process() => {
            crate::sim::baton::install();
            let control = crashsim_vfs::control::Control::leaked();
            control.enable_preempt(&points);
            (control, true)
        }
        None => {
            return Err(unsupported(
                "[preempt]: a call is suspended inside the store's own SQLite while other \
                 connections' calls run, and this store's connections share state in this process \
                 (group_commit: one committer for all of its writers)"
                    .to_string(),
            ));
        }
    };
    Ok(Some(Preemption {
        control,
        local,
        rate,
        hold_ticks_max,
        step_began: None,
        armed: [0; KINDS],
        suspension: None,
        under_way: None,
        steps: Vec::new(),
    }))
}

impl Preemption {
    /// After the set-up: evidence that the store's SQLite runs through
    /// crashsim's VFS extension, without which nothing can be suspended.
    pub(super) fn loaded(&self, implementation: &dyn Implementation) -> Result<(), SimError> {
        if self.local || self.control.loads.load(Ordering::Acquire) > 0 {
            return Ok(());
        }
        Err(SimError::Unsupported(
            format!("the adapter `{}`", implementation.description()),
            "[preempt]: none of its processes loaded crashsim's VFS extension into its SQLite, so no \
             call of it can be suspended (docs/adapter-protocol.md, \"Power loss\", says how an \
             adapter loads it; its stderr says why it could not)"
                .to_string(),
        ))
    }
}

/// Every scheduling point an in-process store's calls reached (`None` for
/// an outside store, or without preemption).
pub(super) fn local_points(preemption: Option<&Preemption>) -> Option<u64> {
    let preemption = preemption.filter(|preemption| preemption.local)?;
    Some(preemption.reached().iter().sum())
}

/// The run's `System` as the simulator drives it: an in-process store's
/// stores and receivers on the baton when its calls may be suspended.
pub(super) fn system(preemption: Option<&Preemption>, system: Box<dyn System>) -> Box<dyn System> {
    match preemption {
        Some(preemption) if preemption.local => Box::new(BatonSystem::new(system, preemption.control)),
        _ => system,
    }
}

impl Simulator<'_> {
    /// Before actor `slot`'s step: arms where its call parks (in faults),
    /// drawn from its own stream or given by a forced schedule.
    pub(super) fn arm_preempt(&mut self, slot: usize) {
        let Some(preemption) = &self.preemption else {
            return;
        };
        preemption.control.statements.set_running(slot as u64 + 1, self.now);
        if self.slots[slot].parked {
            self.resumed(slot);
        }
        let Some(preemption) = &mut self.preemption else {
            return;
        };
        preemption.suspension = None;
        let armable = !preemption.rate.is_zero() || self.source.forces_preempt();
        let offset = match self.phase {
            Phase::Faults if armable => {
                preemption.step_began = Some(preemption.reached());
                let entry = &mut self.slots[slot];
                entry.preempt_steps += 1;
                let (actor, step) = (entry.id, entry.preempt_steps);
                let counted = preemption.control.sched_points.load(Ordering::Acquire);
                preemption.under_way = Some((actor, step, counted));
                let decided = self
                    .source
                    .preempt(&mut entry.preempts, preemption.rate, LOOKAHEAD, actor, step);
                decided.map(|(point, hold)| {
                    preemption.suspension = Some(Suspension {
                        slot,
                        step,
                        point,
                        hold,
                    });
                    point
                })
            }
            _ => None,
        };
        preemption.control.arm_preempt(offset);
    }

    /// Before a boot: nothing is armed, but a wait for a lock parks.
    pub(super) fn arm_preempt_waits(&self, slot: usize) {
        if let Some(preemption) = &self.preemption {
            preemption.control.statements.set_running(slot as u64 + 1, self.now);
            preemption.control.arm_preempt(None);
        }
    }

    /// Actor `slot`'s parked call is asked again: the statements the others
    /// started while it waited complete its suspension's event (what of
    /// them it keeps: `meanwhile`).
    fn resumed(&mut self, slot: usize) {
        let Some(preemption) = &self.preemption else {
            return;
        };
        // Statements are numbered by slot from 1 (`set_running`). Only its
        // peers' are kept (`meanwhile`), so only theirs are decoded; what
        // the ring no longer holds is left out.
        let me = self.slots[slot].id;
        let peer = |actor: u64| {
            usize::try_from(actor)
                .ok()
                .and_then(|actor| self.slots.get(actor.checked_sub(1)?))
                .filter(|entry| entry.id != me && entry.id.role == me.role)
        };
        let (statements, _lost) = preemption
            .control
            .statements
            .since(self.slots[slot].parked_sql, |actor| peer(actor).is_some());
        let ran: Vec<Ran> = statements
            .into_iter()
            .filter_map(|statement| {
                Some(Ran {
                    actor: peer(statement.actor)?.id,
                    tick: statement.tick,
                    sql: statement.sql,
                })
            })
            .collect();
        let meanwhile = super::meanwhile::kept(me, ran);
        if let Some(crate::trace::TraceEvent {
            op: crate::trace::Op::Preempted { meanwhile: kept, .. },
            ..
        }) = self.slots[slot]
            .parked_event
            .and_then(|index| self.trace.event_mut(index))
        {
            *kept = meanwhile;
        }
    }

    /// After the step: nothing parks between steps.
    pub(super) fn disarm_preempt(&mut self) {
        if let Some(preemption) = &mut self.preemption {
            preemption.control.disarm_preempt();
            if let Some((actor, step, counted)) = preemption.under_way.take() {
                let points = preemption
                    .control
                    .sched_points
                    .load(Ordering::Acquire)
                    .saturating_sub(counted);
                if points > 0 {
                    preemption.steps.push(StepPoints { actor, step, points });
                }
            }
            if let Some(began) = preemption.step_began.take() {
                let now = preemption.reached();
                for (armed, (now, began)) in preemption.armed.iter_mut().zip(now.into_iter().zip(began)) {
                    *armed += now.saturating_sub(began);
                }
            }
        }
    }

    /// The step's call parked: the actor asks again after a hold. A park
    /// at the armed point is the injected suspension (`Fault::Preempt`); a
    /// wait for a lock is not a fault, and waits from a stream of its own.
    pub(super) fn preempted(&mut self, slot: usize) {
        let Some(preemption) = &mut self.preemption else {
            return;
        };
        let max = preemption.hold_ticks_max;
        let (_, at) = preemption.control.parked();
        let armed = preemption.suspension.take().filter(|armed| armed.slot == slot);
        let entry = &mut self.slots[slot];
        let hold = match armed {
            Some(armed) if at.kind != crashsim_vfs::preempt::Kind::Busy => {
                let hold = armed.hold.unwrap_or_else(|| entry.preempts.range_inclusive(1, max));
                let fault = Fault::Preempt {
                    actor: entry.id,
                    step: armed.step,
                    point: armed.point,
                    hold,
                };
                self.injected.push(Injected { tick: self.now, fault });
                hold
            }
            _ => entry.waits.range_inclusive(1, max),
        };
        let parked_sql = preemption.control.statements.seq();
        // The actor recorded its suspension last (`actors::retry_or_crash`).
        let actor = self.slots[slot].id;
        let parked_event = self.trace.events().len().checked_sub(1).filter(|index| {
            let event = &self.trace.events()[*index];
            event.actor == actor && matches!(event.op, crate::trace::Op::Preempted { .. })
        });
        let entry = &mut self.slots[slot];
        entry.parked = true;
        entry.parked_sql = parked_sql;
        entry.parked_event = parked_event;
        self.wake(slot, hold);
    }

    /// Scheduling points reached and calls suspended there, per kind of
    /// point, into the run's counters (the coverage table).
    pub(super) fn count_suspensions(&mut self) {
        let Some(preemption) = &self.preemption else {
            return;
        };
        let control = preemption.control;
        for kind in crashsim_vfs::preempt::Kind::ALL {
            let count = SuspensionCount {
                reached: control.reached[kind.index()].load(Ordering::Acquire),
                armed: preemption.armed[kind.index()],
                fired: control.parks[kind.index()].load(Ordering::Acquire),
            };
            self.kills.suspended.insert(kind.name().to_string(), count);
        }
    }
}
