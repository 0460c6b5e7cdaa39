//! Power loss in a run: the crash VFS every connection goes through, when
//! the power goes out, and what recovery found.
//!
//! A cut is armed at a persistence point (a write, sync, truncation or
//! deletion the VFS sees): drawn per actor step with the scenario's
//! `power.loss` rate (at one of the next `WINDOW` points, drawn from the
//! seed, so a cut may fall between two commits of one store call), scripted
//! at a tick (at the next point), or forced from a recorded schedule. Arming at a point rather than cutting between
//! steps means a drawn cut and its forced replay happen at the same byte.
//! The cut itself (every actor dies, the files are rewritten, recovery is
//! judged) is `Simulator::power_cut`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::faults::{Fault, FaultSource};
use crate::prng::Prng;
use crate::ratio::Ratio;
use crate::store::Snapshot;
use crate::vfs::crash::{CrashVfs, Model, Restored, pin_sqlite_prng, unique_name};
use crate::vfs::shim::VfsError;

/// A drawn cut lands on one of this many persistence points after the
/// draw: a few writing steps' worth (a commit is a handful of WAL frame
/// writes and a sync), so that every point of a step, not only its first,
/// is as likely to be hit.
pub const WINDOW: u64 = 32;

/// What the databases held right after a cut, once recovered.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// The tick the power went out at.
    pub tick: u64,
    /// The persistence point it went out at.
    pub point: u64,
    pub snapshot: Snapshot,
}

pub struct Power {
    pub vfs: CrashVfs,
    /// Points at which the power goes out: forced, scripted or drawn.
    cuts: BTreeSet<u64>,
    /// Which of them belong in the run's schedule: the drawn ones and the
    /// forced ones (scripted cuts belong to the scenario). A forced run's
    /// schedule must list its forced cuts again, or a capsule of a shrunk
    /// power-loss run would replay without them.
    scheduled: BTreeSet<u64>,
    /// Whether cuts are drawn (not forced).
    drawing: bool,
    decide: Prng,
    restore: Prng,
}

impl Power {
    /// A fresh crash VFS for one run, with SQLite's own PRNG pinned to the
    /// seed. `shared`: the run's connections live in other processes (an
    /// outside store), which load the extension and share its state in
    /// this directory.
    pub fn new(seed: u64, model: Model, source: &FaultSource, shared: Option<&Path>) -> Result<Power, VfsError> {
        // VFS registrations are permanent and process-wide: one name per run.
        let name = unique_name(&format!("{seed:016x}"));
        let vfs = match shared {
            Some(dir) => CrashVfs::shared(&name, model, dir, seed)?,
            None => CrashVfs::register(&name, model)?,
        };
        pin_sqlite_prng(seed);
        let (drawing, cuts) = match source {
            FaultSource::Drawn => (true, BTreeSet::new()),
            FaultSource::Forced(faults) => (
                false,
                faults
                    .iter()
                    .filter_map(|fault| match fault {
                        Fault::PowerCut { point } => Some(*point),
                        _ => None,
                    })
                    .collect(),
            ),
        };
        Ok(Power {
            vfs,
            scheduled: cuts.clone(),
            cuts,
            drawing,
            decide: Prng::derive(seed, "power/loss"),
            restore: Prng::derive(seed, "power/restore"),
        })
    }

    /// The run begins: points count from here (the set-up's writes are not
    /// places a cut can hit) and forced cuts are armed.
    pub fn start(&self) {
        self.vfs.reset_points();
        self.rearm();
    }

    fn rearm(&self) {
        match self.cuts.first() {
            Some(point) => self.vfs.arm(*point),
            None => self.vfs.disarm(),
        }
    }

    /// Before an actor step in the fault phase: with probability `rate`, the
    /// power goes out at one of the next `WINDOW` persistence points, drawn
    /// uniformly (unless a cut is pending). The point may lie anywhere in
    /// the coming steps, between two writes or two commits of one store
    /// call as well as at a step's first write.
    pub fn draw(&mut self, rate: Ratio) {
        if !self.drawing || !self.cuts.is_empty() || !self.decide.chance(rate) {
            return;
        }
        let point = self.vfs.points() + 1 + self.decide.below(WINDOW);
        self.cuts.insert(point);
        self.scheduled.insert(point);
        self.rearm();
    }

    /// A scripted cut: at the next persistence point.
    pub fn script(&mut self) {
        self.cuts.insert(self.vfs.points() + 1);
        self.rearm();
    }

    /// The quiet phase: no more cuts. Returns the persistence points the
    /// fault phase had (the ones a cut could have hit).
    pub fn quiet(&mut self) -> u64 {
        self.cuts.clear();
        self.scheduled.clear();
        self.vfs.disarm();
        self.vfs.points()
    }

    /// The point the power just went out at, if it did.
    pub fn cut(&self) -> Option<u64> {
        self.vfs.cut_point()
    }

    /// After the cut at `point`: rewrites the files and powers the disk back
    /// on with no cut armed: recovery is not a place a cut lands
    /// ([`Power::resume`] arms again once it is done). Returns whether the
    /// cut belongs in the schedule (drawn or forced, not scripted), and what
    /// the restore did.
    pub fn restore(&mut self, point: u64) -> std::io::Result<(bool, Restored)> {
        let scheduled = self.scheduled.contains(&point);
        let restored = self.vfs.restore(&mut self.restore)?;
        Ok((scheduled, restored))
    }

    /// No cut lands from here until [`Power::resume`]: for the operator's
    /// own writes (a restore), which are not the store's.
    pub fn hold(&self) {
        self.vfs.disarm();
    }

    /// Recovery is done: the cuts up to its last point are dropped (the one
    /// that struck, and a drawn cut still pending when a scripted one struck,
    /// which would otherwise fail recovery's own writes, an I/O error that
    /// ended the run), and the next one is armed.
    pub fn resume(&mut self) {
        let now = self.vfs.points();
        self.cuts.retain(|cut| *cut > now);
        self.scheduled.retain(|cut| *cut > now);
        self.rearm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashsim_vfs::control::Point;

    /// Two cuts: `first`, then `second`; the power goes out at the first,
    /// and recovery makes `recovery` points before `resume`.
    fn after_recovery(second: u64, recovery: u64) -> Power {
        let faults = BTreeSet::from([Fault::PowerCut { point: 1 }, Fault::PowerCut { point: second }]);
        let mut power = Power::new(7, Model::DropUnsynced, &FaultSource::Forced(faults), None).expect("a VFS");
        power.start();
        let control = power.vfs.control();
        assert_eq!(control.point(), Point::Cut);
        assert_eq!(power.cut(), Some(1));
        power.restore(1).expect("restored");
        for _ in 0..recovery {
            assert_eq!(control.point(), Point::Go, "no cut lands in recovery");
        }
        power.resume();
        power
    }

    #[test]
    fn a_cut_recovery_passed_is_dropped() {
        let power = after_recovery(3, 5);
        assert_eq!(power.vfs.control().point(), Point::Go);
        assert_eq!(power.cut(), None);
    }

    #[test]
    fn a_cut_beyond_recovery_still_lands() {
        let power = after_recovery(10, 5);
        let control = power.vfs.control();
        for _ in 0..3 {
            assert_eq!(control.point(), Point::Go);
        }
        assert_eq!(control.point(), Point::Cut);
        assert_eq!(power.cut(), Some(10));
    }
}
