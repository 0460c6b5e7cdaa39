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
//! Only where the evidence is the store's own: the shared VFS of a run of
//! an outside store. A step whose writes bypassed the VFS (points did not
//! move) proves nothing and is left alone.

use std::sync::atomic::Ordering;

use std::path::Path;

use super::{SimError, Simulator};
use crate::actors::Role;
use crate::sim::power::Power;
use crate::store::Implementation;
use crate::store::{JournalMode, Synchronous};
use crate::trace::Op;
use crate::vfs::CrashVfs;

/// The shared counters before a step: persistence points, syncs and
/// rollback journals deleted without a directory sync.
#[derive(Clone, Copy)]
pub(super) struct Before {
    points: u64,
    syncs: u64,
    journal_deletes: u64,
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
            journal_deletes: control.journal_deletes_unsynced.load(Ordering::Acquire),
            recorded: self.trace.events().len(),
        })
    }

    /// After actor `slot`'s step: a commit it recorded, with writes through
    /// the VFS and not one sync, under a level that demands one; or, where
    /// EXTRA is asked of a rollback journal, a journal deleted without the
    /// directory sync only EXTRA makes.
    pub(super) fn judge_syncs(&mut self, slot: usize, before: Before) {
        let Some(vfs) = self.power.as_ref().map(|power| power.vfs).or(self.outside_clock) else {
            return;
        };
        let control = vfs.control();
        let (points, syncs, journal_deletes) = (
            control.points.load(Ordering::Acquire),
            control.syncs.load(Ordering::Acquire),
            control.journal_deletes_unsynced.load(Ordering::Acquire),
        );
        // A cut in the step restarted nothing yet, but its failed calls prove nothing.
        if points == before.points || vfs.is_cut() {
            return;
        }
        let actor = self.slots[slot].id;
        let committed = self.trace.events()[before.recorded..]
            .iter()
            .any(|event| event.actor == actor && matches!(event.op, Op::Commit { .. }));
        let settings = match actor.role {
            Role::Receiver => self.config.receiver_sqlite,
            _ => self.config.store_sqlite,
        };
        let database = match actor.role {
            Role::Receiver => "receiver",
            _ => "store",
        };
        let directory = if syncs == before.syncs {
            false
        } else if settings.synchronous == Synchronous::Extra
            && settings.journal_mode == JournalMode::Delete
            && journal_deletes != before.journal_deletes
        {
            true
        } else {
            return;
        };
        if committed && settings.synchronous >= Synchronous::Full {
            self.record(
                actor,
                Op::Unsynced {
                    database: database.to_string(),
                    directory,
                },
            );
        }
    }
}

impl Simulator<'_> {
    /// Where kills inside `call`-granularity calls land: the shared control
    /// region, for an outside store whose SQLite loads crashsim's VFS.
    pub(super) fn inside_calls(&self) -> Option<crate::sim::gate::Inside> {
        if !self.implementation.kills_inside_calls() {
            return None;
        }
        let vfs = self.power.as_ref().map(|power| power.vfs).or(self.outside_clock)?;
        vfs.shared_dir()?;
        Some(crate::sim::gate::Inside {
            control: vfs.control(),
            seed: self.seed,
        })
    }
}

/// Without power loss, for an outside store (`dir` is its shared state):
/// a region that only answers SQLite's clock and counts.
pub(super) fn outside_clock(
    seed: u64,
    power: Option<&Power>,
    dir: Option<&Path>,
) -> Result<Option<CrashVfs>, SimError> {
    match (power, dir) {
        (None, Some(dir)) => Ok(Some(CrashVfs::clock_only(
            &crate::vfs::crash::unique_name(&format!("clock-{seed:016x}")),
            dir,
            seed,
        )?)),
        _ => Ok(None),
    }
}

/// For an outside store with power loss: whether its processes' SQLite
/// went through crashsim's VFS extension (they counted themselves in the
/// shared control region), from evidence, not from the adapter's word.
pub(super) fn loaded(power: &Power, implementation: &dyn Implementation) -> Result<(), SimError> {
    if power.vfs.shared_dir().is_none() || power.vfs.control().loads.load(std::sync::atomic::Ordering::Acquire) > 0 {
        return Ok(());
    }
    Err(SimError::Unsupported(
        format!("the adapter `{}`", implementation.description()),
        format!(
            "power loss: none of its processes loaded crashsim's VFS extension into its SQLite \
             (the file ${} names, entry point {}); the Python SDK loads it itself, any other \
             adapter must load it before opening a database (docs/adapter-protocol.md, \"Power \
             loss\"); its stderr says why it could not",
            crate::vfs::extension::ENV_EXTENSION,
            crate::vfs::extension::ENTRY_POINT
        ),
    ))
}

/// With a weaker default `synchronous` (`[sqlite] default_synchronous`): that
/// it reached the store's SQLite, from evidence (connections the crash VFS
/// set to it), once the set-up and the observer have opened theirs. A fault
/// that could not be injected is no test: the run stops (exit code 2).
pub(super) fn default_applied(power: &Power, implementation: &dyn Implementation) -> Result<(), SimError> {
    let control = power.vfs.control();
    let Some(level) = control.default_synchronous() else {
        return Ok(());
    };
    if control.defaults_applied.load(std::sync::atomic::Ordering::Acquire) > 0 {
        return Ok(());
    }
    Err(SimError::Unsupported(
        format!("the store `{}`", implementation.description()),
        format!(
            "[sqlite] default_synchronous: no connection of its set-up or observer started at \
             synchronous level {level}; the SQLite it runs on registered no auto-extension for \
             crashsim's VFS (a SQLite built without sqlite3_auto_extension, or a connection not \
             opened through crashsim's VFS)"
        ),
    ))
}
