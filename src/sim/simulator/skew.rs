//! Clock skew: each actor's own idea of "now", and the clocks a step reads.
//!
//! With `[faults.skew]`, every actor's clock reads the true tick plus an
//! offset within `[-max_ticks, max_ticks]` (saturating at 0). The offset is
//! drawn when the run begins (`Fault::Skew`) from the actor's own skew
//! stream; at each step the actor is about to take in the fault phase, with
//! chance `step_rate`, the clock steps to a new offset in the same bounds,
//! forward or backward (`Fault::ClockStep`, counted per actor across its
//! lives like pauses). A forced schedule decides both from itself alone: an
//! actor it gives no skew reads the true tick. Offsets survive kills (the
//! machine's clock, not the process's) and the end of the fault phase.
//!
//! Where the offset is read: the simulator steps one actor at a time, so
//! before each step it sets every clock the step can read to that actor's
//! time, and back to the true tick after it: `Ctx::clock` (the actor's own
//! code, such as a lease check), the store's `Clock` (a claim's expiry; an
//! outside store gets it in every request envelope), and SQLite's
//! `xCurrentTime` through the run's VFS (`CURRENT_TIMESTAMP`,
//! `datetime('now')`). Everything else (the queue, wake-ups, timeouts, settle
//! checks) runs on the true tick, as a program's monotonic clock would.
//!
//! Runs without power loss open their connections through a `ClockVfs`, so
//! SQLite never reads the machine's wall clock in any in-process run, with
//! skew or without.

use super::{Life, Phase, SimError, Simulator};
use crate::faults::{Fault, FaultSource, Injected};
use crate::scenario::SkewFaults;
use crate::sim::power::Power;
use crate::store::Implementation;
use crate::trace::Op;
use crate::vfs::ClockVfs;

/// The VFS that answers SQLite's clock in a run without power loss (the
/// crash VFS answers it in one with), for stores whose connections live in
/// this process.
pub(super) fn clock_vfs(
    seed: u64,
    power: Option<&Power>,
    implementation: &dyn Implementation,
    files: super::Files,
) -> Result<Option<ClockVfs>, SimError> {
    if power.is_some() || !implementation.in_process() {
        return Ok(None);
    }
    let label = format!("{seed:016x}");
    // In-process kills need no disk: the files' bytes stay in memory
    // (`vfs::memory`) until the run retires the VFS.
    Ok(Some(match files {
        super::Files::Memory => ClockVfs::in_memory(&label)?,
        super::Files::Disk => ClockVfs::register(&label)?,
    }))
}

/// Whether runs of this scenario and fault source skew clocks at all: the
/// scenario's `[faults.skew]`, or, for a forced schedule with clock faults
/// and no such table (a hand-written schedule), the forced ones only.
pub(super) fn skews(configured: Option<SkewFaults>, source: &FaultSource) -> Option<SkewFaults> {
    let forced = matches!(source, FaultSource::Forced(faults)
        if faults.iter().any(|fault| matches!(fault, Fault::Skew { .. } | Fault::ClockStep { .. })));
    match configured {
        Some(skew) => Some(skew),
        None if forced => Some(SkewFaults {
            max_ticks: 0,
            step_rate: crate::ratio::Ratio::ZERO,
        }),
        None => None,
    }
}

/// What a clock `offset` ticks off reads at true tick `now` (never below 0).
pub(super) fn skewed(now: u64, offset: i64) -> u64 {
    now.saturating_add_signed(offset)
}

impl Simulator<'_> {
    /// Sets every clock a step may read (the store's, SQLite's) to `tick`.
    pub(super) fn set_clocks(&self, tick: u64) {
        self.config.clock.set(tick);
        if let Some(power) = &self.power {
            power.vfs.set_clock(tick);
        }
        if let Some(vfs) = &self.clock_vfs {
            vfs.set_clock(tick);
        }
        if let Some(vfs) = &self.outside_clock {
            vfs.set_clock(tick);
        }
    }

    /// What actor `slot`'s clock reads now.
    pub(super) fn actor_clock(&self, slot: usize) -> u64 {
        skewed(self.now, self.slots[slot].offset)
    }

    /// Draws (or looks up) every actor's initial offset and records the
    /// ones that are not 0. Draws nothing without skew.
    pub(super) fn skew_at_start(&mut self) {
        let Some(skew) = self.skew else {
            return;
        };
        for slot in 0..self.slots.len() {
            let entry = &mut self.slots[slot];
            let actor = entry.id;
            let offset = self.source.skew(&mut entry.skews, skew.max_ticks, actor);
            entry.offset = offset;
            if offset != 0 {
                self.injected.push(Injected {
                    tick: self.now,
                    fault: Fault::Skew { actor, offset },
                });
                self.record(actor, Op::Skew { offset });
            }
        }
    }

    /// Decides whether actor `slot`, about to step in the fault phase, has
    /// its clock stepped first: if so, records it and moves its offset.
    pub(super) fn clock_step(&mut self, slot: usize) {
        let Some(skew) = self.skew else {
            return;
        };
        if self.phase != Phase::Faults || !matches!(self.slots[slot].life, Life::Up(_)) {
            return;
        }
        let entry = &mut self.slots[slot];
        entry.skew_steps += 1;
        let (actor, step) = (entry.id, entry.skew_steps);
        let stepped = self
            .source
            .clock_step(&mut entry.skews, skew.step_rate, skew.max_ticks, actor, step);
        let Some(offset) = stepped else {
            return;
        };
        let by = offset - entry.offset;
        entry.offset = offset;
        self.injected.push(Injected {
            tick: self.now,
            fault: Fault::ClockStep { actor, step, offset },
        });
        self.record(actor, Op::ClockStep { by, offset });
    }
}
