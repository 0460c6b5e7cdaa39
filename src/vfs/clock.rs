//! `ClockVfs`: a VFS that only answers SQLite's clock.
//!
//! Every call is forwarded to the default VFS unchanged; `xCurrentTime`
//! answers the simulated clock (`set_clock`) instead of the machine's. A
//! run without power loss opens its connections through one, so
//! `CURRENT_TIMESTAMP` and `datetime('now')` on a simulated connection read
//! the run's time (and, with clock skew, the stepping actor's skewed time),
//! never the wall clock. Runs with power loss get the same from the crash
//! VFS, which answers the clock the same way.
//!
//! Registrations are permanent and process-wide (see `shim`): one per run,
//! `retire`d when the run's connections are closed.

use std::sync::atomic::{AtomicI64, Ordering};

use super::crash::{CLOCK_ORIGIN_MS, unique_name};
use super::shim::{self, Hooks, Registered, VfsError};

struct ClockHooks {
    clock_ms: &'static AtomicI64,
}

impl Hooks for ClockHooks {
    fn current_time_ms(&self) -> Option<i64> {
        Some(CLOCK_ORIGIN_MS + self.clock_ms.load(Ordering::Relaxed))
    }
}

/// A registered clock VFS. One per run.
#[derive(Clone, Copy)]
pub struct ClockVfs {
    registered: &'static Registered,
    clock_ms: &'static AtomicI64,
}

impl std::fmt::Debug for ClockVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClockVfs").field("name", &self.name()).finish()
    }
}

impl ClockVfs {
    /// Registers a clock VFS with a fresh name made from `label`.
    pub fn register(label: &str) -> Result<ClockVfs, VfsError> {
        let clock_ms: &'static AtomicI64 = Box::leak(Box::default());
        let registered = shim::register(
            &unique_name(&format!("clock-{label}")),
            Box::new(ClockHooks { clock_ms }),
        )?;
        Ok(ClockVfs { registered, clock_ms })
    }

    pub fn name(&self) -> &'static str {
        self.registered.name()
    }

    /// Sets the clock `xCurrentTime` answers, in ticks (milliseconds).
    pub fn set_clock(&self, tick: u64) {
        self.clock_ms
            .store(i64::try_from(tick).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// Unlinks the VFS (connections still open through it keep working).
    pub fn retire(&self) {
        shim::unregister(self.registered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_now_answers_the_simulated_clock() {
        let vfs = ClockVfs::register("test").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open_with_flags_and_vfs(
            dir.path().join("x.db"),
            rusqlite::OpenFlags::default(),
            vfs.name(),
        )
        .unwrap();
        let now = |conn: &rusqlite::Connection| -> String {
            conn.query_row("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')", [], |row| row.get(0))
                .unwrap()
        };
        vfs.set_clock(0);
        assert_eq!(now(&conn), "2026-01-01 00:00:00.000");
        vfs.set_clock(90_061_500);
        assert_eq!(now(&conn), "2026-01-02 01:01:01.500");
        drop(conn);
        vfs.retire();
    }
}
