//! `ClockVfs`: the VFS of a run without power loss. It answers SQLite's
//! clock and, optionally, keeps the files' bytes in memory.
//!
//! `xCurrentTime` answers the simulated clock (`set_clock`) instead of the
//! machine's. A run without power loss opens its connections through one,
//! so `CURRENT_TIMESTAMP` and `datetime('now')` on a simulated connection
//! read the run's time (and, with clock skew, the stepping actor's skewed
//! time), never the wall clock. Runs with power loss get the same from the
//! crash VFS, which answers the clock the same way.
//!
//! [`ClockVfs::in_memory`] also keeps every database, WAL and journal in
//! memory (`vfs::memory`): no read, write or sync reaches the kernel, while
//! locks and the WAL index stay real. `retire` writes the files out.
//! Otherwise every call is forwarded to the default VFS unchanged.
//!
//! Registrations are permanent and process-wide (see `shim`): one per run,
//! `retire`d when the run's connections are closed.

use std::sync::atomic::{AtomicI64, Ordering};

use super::crash::{CLOCK_ORIGIN_MS, unique_name};
use super::memory::Images;
use super::shim::{self, Hooks, Registered, VfsError};

struct ClockHooks {
    clock_ms: &'static AtomicI64,
    images: Option<&'static Images>,
}

impl Hooks for ClockHooks {
    fn current_time_ms(&self) -> Option<i64> {
        Some(CLOCK_ORIGIN_MS + self.clock_ms.load(Ordering::Relaxed))
    }

    fn images(&self) -> Option<&Images> {
        self.images
    }
}

/// A registered clock VFS. One per run.
#[derive(Clone, Copy)]
pub struct ClockVfs {
    registered: &'static Registered,
    clock_ms: &'static AtomicI64,
    images: Option<&'static Images>,
}

impl std::fmt::Debug for ClockVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClockVfs").field("name", &self.name()).finish()
    }
}

impl ClockVfs {
    /// Registers a clock VFS with a fresh name made from `label`; the files
    /// stay the real ones.
    pub fn register(label: &str) -> Result<ClockVfs, VfsError> {
        ClockVfs::with_images(label, None)
    }

    /// Registers a clock VFS that also keeps every file's bytes in memory
    /// until `retire`.
    pub fn in_memory(label: &str) -> Result<ClockVfs, VfsError> {
        // Leaked like the registration itself (see `shim`); `retire` empties it.
        ClockVfs::with_images(label, Some(Box::leak(Box::default())))
    }

    fn with_images(label: &str, images: Option<&'static Images>) -> Result<ClockVfs, VfsError> {
        let clock_ms: &'static AtomicI64 = Box::leak(Box::default());
        let registered = shim::register(
            &unique_name(&format!("clock-{label}")),
            Box::new(ClockHooks { clock_ms, images }),
        )?;
        Ok(ClockVfs {
            registered,
            clock_ms,
            images,
        })
    }

    pub fn name(&self) -> &'static str {
        self.registered.name()
    }

    /// Sets the clock `xCurrentTime` answers, in ticks (milliseconds).
    pub fn set_clock(&self, tick: u64) {
        self.clock_ms
            .store(i64::try_from(tick).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// The bytes of the file at `path` as the run's connections see it:
    /// the image held in memory, if any, else the real file's (`None` if
    /// neither exists; an error if the real file could not be read).
    pub fn bytes(&self, path: &std::path::Path) -> std::io::Result<Option<Vec<u8>>> {
        match self.images.and_then(|images| images.bytes(&path.to_string_lossy())) {
            Some(bytes) => Ok(Some(bytes)),
            None => read_if_there(path),
        }
    }

    /// Unlinks the VFS (connections still open through it keep working)
    /// and writes the files held in memory to their paths.
    pub fn retire(&self) -> std::io::Result<()> {
        shim::unregister(self.registered);
        self.images.map_or(Ok(()), Images::flush)
    }
}

/// The bytes of the file at `path`, `None` if there is none.
pub(crate) fn read_if_there(path: &std::path::Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
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
        vfs.retire().unwrap();
    }

    /// Two connections through an in-memory clock VFS share one database
    /// with real locking, nothing reaches the files until `retire`, and
    /// then the files hold what the connections committed.
    #[test]
    fn files_in_memory_are_shared_locked_and_written_out_at_retire() {
        let vfs = ClockVfs::in_memory("memtest").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let open = || {
            let conn = rusqlite::Connection::open_with_flags_and_vfs(&path, rusqlite::OpenFlags::default(), vfs.name())
                .unwrap();
            conn.pragma_update(None, "journal_mode", "WAL").unwrap();
            conn
        };
        let (a, b) = (open(), open());
        a.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        let count = |conn: &rusqlite::Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM t", [], |row| row.get(0)).unwrap()
        };
        assert_eq!(count(&b), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "the bytes stay in memory");
        a.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (2);").unwrap();
        let busy = b.execute_batch("BEGIN IMMEDIATE").unwrap_err();
        assert_eq!(busy.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy));
        a.execute_batch("COMMIT").unwrap();
        assert_eq!(count(&b), 2);
        drop((a, b));
        vfs.retire().unwrap();
        let plain = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(count(&plain), 2);
        let integrity: String = plain.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
        assert_eq!(integrity, "ok");
    }
}
