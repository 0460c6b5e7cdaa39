//! Pauses: an actor stops taking steps for a while, its connection and
//! memory intact, then goes on as if nothing happened (see `crate::faults`).
//!
//! The decision is made when an actor that is up is about to take a step in
//! the fault phase: each such step is an occurrence (`Fault::Pause`'s
//! `step`, counted per actor across its lives), drawn from the actor's own
//! pause stream or looked up in a forced schedule. A paused actor's step is
//! put off by the pause's length; messages that arrive meanwhile wait in its
//! memory, and only a kill (a script, a power cut) ends a pause early.

use super::{Life, Phase, Simulator};
use crate::faults::{Fault, FaultSource, Injected};
use crate::scenario::PauseFaults;
use crate::trace::Op;

/// Whether runs of this scenario and fault source decide pauses at all: the
/// scenario's `[faults.pause]`, or, for a forced schedule with pauses and no
/// such table (a hand-written schedule), pauses at the forced steps only.
pub(super) fn pauses(configured: Option<PauseFaults>, source: &FaultSource) -> Option<PauseFaults> {
    let forced = matches!(source, FaultSource::Forced(faults)
        if faults.iter().any(|fault| matches!(fault, Fault::Pause { .. })));
    match configured {
        Some(pause) => Some(pause),
        None if forced => Some(PauseFaults {
            rate: crate::ratio::Ratio::ZERO,
            ticks_min: 1,
            ticks_max: 1,
        }),
        None => None,
    }
}

impl Simulator<'_> {
    /// Decides whether actor `slot`, about to step, pauses instead: if so,
    /// records it and puts the step off. True if it paused.
    pub(super) fn pause(&mut self, slot: usize) -> bool {
        let Some(pause) = self.pause else {
            return false;
        };
        if self.phase != Phase::Faults || !matches!(self.slots[slot].life, Life::Up(_)) {
            return false;
        }
        let entry = &mut self.slots[slot];
        entry.pause_steps += 1;
        let (actor, step) = (entry.id, entry.pause_steps);
        let range = (pause.ticks_min, pause.ticks_max);
        let Some(ticks) = self.source.pause(&mut entry.pauses, pause.rate, range, actor, step) else {
            return false;
        };
        self.injected.push(Injected {
            tick: self.now,
            fault: Fault::Pause { actor, step, ticks },
        });
        self.record(actor, Op::Pause { ticks });
        self.wake(slot, ticks);
        true
    }
}
