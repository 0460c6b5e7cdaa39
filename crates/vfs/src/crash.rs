//! The crash VFS's hooks: every call is forwarded to the real file (so real
//! locking and the real WAL index keep working), while each persistence
//! point (a write, truncation, sync or deletion) is counted in the control
//! region and fails with an I/O error once the armed cut is reached, so
//! nothing more reaches the "disk". Every change goes to the disk model
//! (`disk::State`): straight into it when the model lives in this process,
//! or into the log (`log`) when it lives in crashsim and this is a store's
//! own process.
//!
//! Time: `xCurrentTime` answers the simulated clock of the control region,
//! so `CURRENT_TIMESTAMP` columns, and with them the files' bytes, are the
//! same for the same seed. Randomness (WAL salts, temporary names) can be a
//! seeded stream for the same reason.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::control::{Control, Point};
use crate::disk::{Model, State};
use crate::ffi;
use crate::log::{self, Event};
use crate::preempt::{At, Kind, file_role};
use crate::shim::{File, Hooks};

/// Milliseconds since the Julian epoch of 2026-01-01T00:00:00Z: where the
/// simulated clock starts (tick 0), one tick a millisecond.
pub const CLOCK_ORIGIN_MS: i64 = 212_633_985_600_000;

/// Where the changes go.
pub enum Sink {
    /// The disk model itself, in this process.
    Model(&'static Mutex<State>),
    /// The log crashsim reads back (the model lives in crashsim).
    Log(log::Writer),
}

/// This process's last park was a wait at a refused lock, and no sleep
/// has followed it yet (`At::parks_after`, the rule crashsim's baton keeps
/// per coroutine). A store's process runs one call at a time, so one flag
/// serves it.
static WAITED: AtomicBool = AtomicBool::new(false);

pub struct CrashHooks {
    pub control: &'static Control,
    pub sink: Sink,
    /// The inner VFS is `unix*`, whose hidden directory syncs are mirrored.
    pub inner_is_unix: bool,
    /// SQLite's randomness as a seeded stream (splitmix64 state), or the
    /// inner VFS's.
    pub randomness: Option<Mutex<u64>>,
    /// Whether this process dies at an armed kill point (an adapter's
    /// process, never crashsim's).
    pub may_kill: bool,
    /// Where this process tells crashsim it parked (the state directory),
    /// if it may park at a scheduling point (`preempt`): a store's process,
    /// never crashsim's.
    pub park_dir: Option<std::path::PathBuf>,
}

impl CrashHooks {
    fn record(&self, make: impl FnOnce() -> Event) {
        match &self.sink {
            Sink::Model(state) => {
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                log::apply(&mut state, make(), self.inner_is_unix, &mut Default::default());
            }
            Sink::Log(writer) => {
                if self.control.records() && writer.append(&make()).is_err() {
                    self.control.log_errors.fetch_add(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// A scheduling point: parks here if it is the armed one, or a wait.
    fn schedule(&self, at: At) {
        if self.park_dir.is_some() && self.control.reach(at) {
            self.park(at);
        }
    }

    /// A lock attempt answered `SQLITE_BUSY`: a wait while a call is parked.
    fn refused(&self, at: At) {
        if self.park_dir.is_some() && self.control.lock_refused(at) {
            self.park(at);
        }
    }

    /// Parks at `at`, unless the "waited" flag says this sleep was waited
    /// already (`At::parks_after`).
    fn park(&self, at: At) {
        let Some(dir) = &self.park_dir else { return };
        let Some(waited) = at.parks_after(WAITED.swap(false, Ordering::AcqRel)) else {
            return;
        };
        self.control.park(at, dir);
        WAITED.store(waited, Ordering::Release);
    }

    fn point(&self, code: c_int) -> Result<(), c_int> {
        match self.control.point() {
            Point::Go => Ok(()),
            Point::Cut => Err(code),
            // Only an adapter process may die here; crashsim's own
            // connections (a role its reference serves) go on.
            Point::Kill if self.may_kill => crate::control::die(),
            Point::Kill => Ok(()),
        }
    }
}

impl Hooks for CrashHooks {
    fn opened(&self, file: &File<'_>) {
        let Some(path) = file.path else { return };
        self.control.opens.fetch_add(1, Ordering::AcqRel);
        match &self.sink {
            Sink::Model(state) => {
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                if !state.knows(path) {
                    state.open(path, std::fs::read(path).unwrap_or_default());
                }
            }
            Sink::Log(_) => self.record(|| Event::Opened {
                path: path.to_string(),
                size: std::fs::metadata(path).map_or(0, |meta| meta.len()),
            }),
        }
    }

    fn write(&self, file: &File<'_>, offset: i64, data: &[u8]) -> Result<(), c_int> {
        let Some(path) = file.path else { return Ok(()) };
        self.point(ffi::SQLITE_IOERR_WRITE)?;
        self.record(|| Event::Write {
            path: path.to_string(),
            offset: offset as u64,
            data: data.to_vec(),
        });
        Ok(())
    }

    fn truncate(&self, file: &File<'_>, size: i64) -> Result<(), c_int> {
        let Some(path) = file.path else { return Ok(()) };
        self.point(ffi::SQLITE_IOERR_TRUNCATE)?;
        self.record(|| Event::Truncate {
            path: path.to_string(),
            size: size as u64,
        });
        Ok(())
    }

    fn sync(&self, file: &File<'_>, _flags: c_int) -> Result<(), c_int> {
        if file.path.is_none() {
            return Ok(());
        }
        self.schedule(At::sync(file_role(file.path)));
        self.point(ffi::SQLITE_IOERR_FSYNC)
    }

    fn lock(&self, file: &File<'_>, level: c_int) {
        self.schedule(At::lock(Kind::Lock, level, file_role(file.path)));
    }

    fn lock_busy(&self, file: &File<'_>, level: c_int) {
        self.refused(At::busy(Some(level), file_role(file.path)));
    }

    fn shm_lock_busy(&self, offset: c_int, n: c_int, flags: c_int) {
        self.refused(At::shm_busy(offset, n, flags));
    }

    fn unlock(&self, file: &File<'_>, level: c_int) {
        self.schedule(At::lock(Kind::Unlock, level, file_role(file.path)));
    }

    fn shm_lock(&self, offset: c_int, n: c_int, flags: c_int) {
        self.schedule(At::shm(offset, n, flags));
    }

    /// While preemption is live a busy wait parks instead of sleeping: the
    /// lock's holder runs in the meantime, and the wait costs no wall time.
    /// A sleep right after a wait at the refused lock (`WAITED`) does not
    /// park again: that wait was its sleep.
    fn sleep(&self, microseconds: c_int) -> Option<c_int> {
        if self.park_dir.is_none() || !self.control.preempt_live() {
            return None;
        }
        let at = At::busy(None, 0);
        if self.control.reach(at) {
            self.park(at);
        }
        Some(microseconds)
    }

    fn synced(&self, file: &File<'_>, _flags: c_int) {
        let Some(path) = file.path else { return };
        self.control.syncs.fetch_add(1, Ordering::AcqRel);
        self.record(|| Event::Synced {
            path: path.to_string(),
            flags: file.flags,
            syncs: file.syncs,
        });
    }

    fn delete(&self, _path: &str, _sync_dir: bool) -> Result<(), c_int> {
        self.point(ffi::SQLITE_IOERR_DELETE)
    }

    fn deleted(&self, path: &str, sync_dir: bool) {
        if !sync_dir && path.ends_with("-journal") {
            self.control.journal_deletes_unsynced.fetch_add(1, Ordering::AcqRel);
        }
        self.record(|| Event::Deleted {
            path: path.to_string(),
            sync_dir,
        });
    }

    fn device_characteristics(&self, inner: c_int) -> c_int {
        Model::from_code(self.control.model.load(Ordering::Acquire)).device_characteristics(inner)
    }

    fn current_time_ms(&self) -> Option<i64> {
        Some(CLOCK_ORIGIN_MS + self.control.clock.load(Ordering::Acquire))
    }

    fn default_synchronous(&self) -> Option<u8> {
        self.control.default_synchronous()
    }

    fn default_applied(&self) {
        self.control.defaults_applied.fetch_add(1, Ordering::AcqRel);
    }

    fn statements(&self) -> Option<&'static Control> {
        // A process that may park is a store's: crashsim names its SQL.
        self.park_dir.is_some().then_some(self.control)
    }

    fn randomness(&self, out: &mut [u8]) -> bool {
        let Some(stream) = &self.randomness else {
            return false;
        };
        let mut state = stream.lock().unwrap_or_else(PoisonError::into_inner);
        for chunk in out.chunks_mut(8) {
            let word = splitmix64(&mut state).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        true
    }
}

/// One step of splitmix64: a small, well-mixed stream from one `u64`.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
