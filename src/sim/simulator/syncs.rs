//! I9 from what an outside store's SQLite did, not from what it said: a
//! step that committed a write transaction on a database the scenario runs
//! at `synchronous` FULL or stronger must have synced at least once (the
//! WAL, or the journal and the database). crashsim's VFS extension under
//! the store's SQLite counts the persistence points and the syncs of every
//! process in the shared control region; a step whose writes went through
//! it (points moved) with no sync among them committed below FULL, however
//! the adapter answered `open`. Recorded as `Op::Unsynced`, judged by
//! `check::settings`.
//!
//! Also here: where kills inside a `call` land (`inside_calls`), the same
//! shared region.
//!
//! Only where the evidence is the store's own: the shared VFS of a run of
//! an outside store. A step whose writes bypassed the VFS (points did not
//! move) proves nothing and is left alone.

use std::sync::atomic::Ordering;

use super::Simulator;
use crate::actors::Role;
use crate::store::Synchronous;
use crate::trace::Op;

/// The shared counters before a step: persistence points and syncs.
#[derive(Clone, Copy)]
pub(super) struct Before {
    points: u64,
    syncs: u64,
    recorded: usize,
}

impl Simulator<'_> {
    /// The counters to judge the coming step by, in a run of an outside store.
    pub(super) fn syncs_before(&self) -> Option<Before> {
        let vfs = self.power.as_ref().map(|power| power.vfs).or(self.outside_clock)?;
        vfs.shared_dir()?;
        let control = vfs.control();
        Some(Before {
            points: control.points.load(Ordering::Acquire),
            syncs: control.syncs.load(Ordering::Acquire),
            recorded: self.trace.events().len(),
        })
    }

    /// After actor `slot`'s step: a commit it recorded, with writes through
    /// the VFS and not one sync, under a level that demands one.
    pub(super) fn judge_syncs(&mut self, slot: usize, before: Before) {
        let Some(vfs) = self.power.as_ref().map(|power| power.vfs).or(self.outside_clock) else {
            return;
        };
        let control = vfs.control();
        let (points, syncs) = (
            control.points.load(Ordering::Acquire),
            control.syncs.load(Ordering::Acquire),
        );
        // A cut in the step restarted nothing yet, but its failed calls prove nothing.
        if points == before.points || syncs != before.syncs || vfs.is_cut() {
            return;
        }
        let actor = self.slots[slot].id;
        let committed = self.trace.events()[before.recorded..]
            .iter()
            .any(|event| event.actor == actor && matches!(event.op, Op::Commit { .. }));
        let (database, synchronous) = match actor.role {
            Role::Receiver => ("receiver", self.config.receiver_sqlite.synchronous),
            _ => ("store", self.config.store_sqlite.synchronous),
        };
        if committed && synchronous >= Synchronous::Full {
            self.record(
                actor,
                Op::Unsynced {
                    database: database.to_string(),
                },
            );
        }
    }
}

impl Simulator<'_> {
    /// Where kills inside `call`-granularity calls land: the shared control
    /// region, for an outside store whose SQLite loads crashsim's VFS.
    pub(super) fn inside_calls(&self) -> Option<crate::sim::ctx::Inside> {
        if !self.implementation.kills_inside_calls() {
            return None;
        }
        let vfs = self.power.as_ref().map(|power| power.vfs).or(self.outside_clock)?;
        vfs.shared_dir()?;
        Some(crate::sim::ctx::Inside {
            control: vfs.control(),
            seed: self.seed,
        })
    }
}
