//! `CountingVfs`: a VFS that forwards every call to the default VFS and
//! counts what SQLite asks of the disk: syncs, directory syncs, writes, opens.
//!
//! Why: "fsyncs per commit" must be counted, not assumed from the docs. A
//! WAL commit under `synchronous=FULL` should cost one sync of the WAL; a
//! checkpoint adds a sync of the WAL and one of the database; opening and
//! closing a connection per append adds the WAL's creation and deletion.
//! Counting at the VFS sees exactly the calls SQLite makes, per VFS instance,
//! from any number of threads. The forwarding itself is `vfs::shim`'s; this
//! file is only the counting hooks.
//!
//! What is counted, precisely:
//! - `syncs`: successful `xSync` calls on any file (database, WAL, journal).
//! - `dir_syncs`: fsyncs of the directory. `xDelete` with `syncDir` set asks
//!   for one after the unlink. And the `unix` VFS fsyncs the directory once
//!   per handle of a WAL or journal opened with `SQLITE_OPEN_CREATE`, inside
//!   that handle's first `xSync` (`UNIXFILE_DIRSYNC` in `unixOpen`): one
//!   counted call, two fsyncs. That second one is invisible at this layer, so
//!   it is counted by applying the same rule, and only over a `unix*` VFS.
//!   It is what makes a connection per append cost one fsync more than the
//!   `xSync` calls suggest: every new connection opens its WAL anew.
//! - `writes`, `write_bytes`: `xWrite` calls and the bytes they carried.
//! - `opens`: files opened successfully.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

use super::shim::{self, File, Hooks, Registered};
pub use super::shim::{VfsError, default_vfs_name};

/// What a `CountingVfs` has seen since it was registered. Subtract two
/// readings to count a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `xSync` calls on any file.
    pub syncs: u64,
    /// Directory fsyncs: `xDelete` with `syncDir`, and the `unix` VFS's one
    /// directory sync per new WAL or journal handle (see the module docs).
    pub dir_syncs: u64,
    /// `xWrite` calls.
    pub writes: u64,
    /// Bytes passed to `xWrite`.
    pub write_bytes: u64,
    /// Files opened successfully.
    pub opens: u64,
}

impl Counts {
    /// Every durable-write barrier SQLite asked for: file and directory syncs.
    pub fn fsyncs(&self) -> u64 {
        self.syncs + self.dir_syncs
    }
}

impl std::ops::Sub for Counts {
    type Output = Counts;

    fn sub(self, earlier: Counts) -> Counts {
        Counts {
            syncs: self.syncs.saturating_sub(earlier.syncs),
            dir_syncs: self.dir_syncs.saturating_sub(earlier.dir_syncs),
            writes: self.writes.saturating_sub(earlier.writes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            opens: self.opens.saturating_sub(earlier.opens),
        }
    }
}

/// The live counters. Relaxed atomics: each is an independent tally, read
/// only after the threads that bump it have been joined or paused.
#[derive(Default)]
struct Counters {
    syncs: AtomicU64,
    dir_syncs: AtomicU64,
    writes: AtomicU64,
    write_bytes: AtomicU64,
    opens: AtomicU64,
}

impl Counters {
    fn read(&self) -> Counts {
        Counts {
            syncs: self.syncs.load(Ordering::Relaxed),
            dir_syncs: self.dir_syncs.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            write_bytes: self.write_bytes.load(Ordering::Relaxed),
            opens: self.opens.load(Ordering::Relaxed),
        }
    }
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

struct CountingHooks {
    counters: &'static Counters,
    /// The inner VFS is `unix*`, whose hidden directory syncs are mirrored.
    inner_is_unix: bool,
}

impl Hooks for CountingHooks {
    fn opened(&self, _file: &File<'_>) {
        bump(&self.counters.opens, 1);
    }

    fn write(&self, _file: &File<'_>, _offset: i64, data: &[u8]) -> Result<(), c_int> {
        bump(&self.counters.writes, 1);
        bump(&self.counters.write_bytes, data.len() as u64);
        Ok(())
    }

    fn synced(&self, file: &File<'_>, _flags: c_int) {
        bump(&self.counters.syncs, 1);
        // The rule of `unixOpen` for `UNIXFILE_DIRSYNC`: the first sync of a
        // new WAL or journal handle also syncs its directory.
        let kind = file.flags & (ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL);
        if self.inner_is_unix && file.syncs == 0 && file.flags & ffi::SQLITE_OPEN_CREATE != 0 && kind != 0 {
            bump(&self.counters.dir_syncs, 1);
        }
    }

    fn delete(&self, _path: &str, sync_dir: bool) -> Result<(), c_int> {
        if sync_dir {
            bump(&self.counters.dir_syncs, 1);
        }
        Ok(())
    }
}

/// A handle on a registered counting VFS. Copy it freely: the VFS (and its
/// counters, leaked with it) lives for the rest of the process.
#[derive(Clone, Copy)]
pub struct CountingVfs {
    registered: &'static Registered,
    counters: &'static Counters,
}

impl std::fmt::Debug for CountingVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingVfs")
            .field("name", &self.name())
            .field("counts", &self.counts())
            .finish()
    }
}

impl CountingVfs {
    /// Registers a counting VFS called `name` over the default VFS (not as
    /// the new default). Connections use it by name:
    /// `store::connection::open_via(path, settings, Some(vfs.name()))`.
    pub fn register(name: &str) -> Result<CountingVfs, VfsError> {
        let counters: &'static Counters = Box::leak(Box::default());
        let hooks = CountingHooks {
            counters,
            inner_is_unix: default_vfs_name().starts_with("unix"),
        };
        let registered = shim::register(name, Box::new(hooks))?;
        Ok(CountingVfs { registered, counters })
    }

    /// The name connections open it by.
    pub fn name(&self) -> &'static str {
        self.registered.name()
    }

    /// Everything counted so far.
    pub fn counts(&self) -> Counts {
        self.counters.read()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    use rusqlite::{Connection, OpenFlags};

    use super::*;

    /// A fresh name per test: registrations are process-wide and permanent.
    fn unique(label: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        format!("counting-test-{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn open(path: &Path, vfs: &CountingVfs, synchronous: &str) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs.name()).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "synchronous", synchronous).unwrap();
        conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x INTEGER PRIMARY KEY, y TEXT)")
            .unwrap();
        conn
    }

    fn insert(conn: &Connection, count: usize) {
        for _ in 0..count {
            conn.execute("INSERT INTO t (y) VALUES ('hello')", []).unwrap();
        }
    }

    #[test]
    fn forwards_everything_so_the_default_vfs_reads_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let vfs = CountingVfs::register(&unique("forward")).unwrap();
        let conn = open(&path, &vfs, "FULL");
        insert(&conn, 3);
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal", "shared memory works through the shim");
        assert_eq!(
            conn.pragma_query_value(None, "integrity_check", |r| r.get::<_, String>(0))
                .unwrap(),
            "ok"
        );
        drop(conn);
        let plain = Connection::open(&path).unwrap();
        let rows: i64 = plain.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 3);
        let counts = vfs.counts();
        assert!(counts.opens >= 2, "database and WAL: {counts:?}");
        assert!(counts.writes > 0 && counts.write_bytes >= 4096, "{counts:?}");
    }

    #[test]
    fn a_wal_commit_under_full_is_one_sync_and_under_normal_or_off_none() {
        let dir = tempfile::tempdir().unwrap();
        for (synchronous, syncs_per_commit) in [("FULL", 1), ("NORMAL", 0), ("OFF", 0)] {
            let vfs = CountingVfs::register(&unique(synchronous)).unwrap();
            let conn = open(&dir.path().join(format!("{synchronous}.db")), &vfs, synchronous);
            // The first commits create and sync the WAL header; steady state after.
            insert(&conn, 3);
            let before = vfs.counts();
            insert(&conn, 10);
            let window = vfs.counts() - before;
            assert_eq!(window.syncs, 10 * syncs_per_commit, "{synchronous}: {window:?}");
            assert_eq!(window.dir_syncs, 0, "{synchronous}: {window:?}");
            assert!(window.writes >= 10, "{synchronous}: every commit writes: {window:?}");
        }
    }

    #[test]
    fn a_connection_per_append_costs_four_syncs_and_a_directory_sync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let vfs = CountingVfs::register(&unique("per-append")).unwrap();
        drop(open(&path, &vfs, "FULL"));
        for _ in 0..3 {
            let before = vfs.counts();
            let conn = open(&path, &vfs, "FULL");
            insert(&conn, 1);
            drop(conn);
            let window = vfs.counts() - before;
            // The new WAL's header and the commit, then the checkpoint on close:
            // the WAL and the database. The WAL is unlinked without a directory
            // sync, but the first sync of the new WAL synced the directory.
            assert_eq!(window.syncs, 4, "{window:?}");
            assert_eq!(window.dir_syncs, 1, "{window:?}");
            assert_eq!(window.fsyncs(), 5);
        }
    }

    #[test]
    fn threads_share_one_vfs_and_every_sync_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = CountingVfs::register(&unique("threads")).unwrap();
        let before = vfs.counts();
        std::thread::scope(|scope| {
            for index in 0..4 {
                let path = dir.path().join(format!("t{index}.db"));
                scope.spawn(move || {
                    let conn = open(&path, &vfs, "FULL");
                    insert(&conn, 5);
                });
            }
        });
        let window = vfs.counts() - before;
        // Per thread: the table's creation, 5 commits, the WAL header and the
        // checkpoint on close. A fresh file switches to WAL through a rollback
        // journal, then creates the WAL: two new files, two directory syncs.
        assert!(window.syncs >= 4 * 5, "{window:?}");
        assert_eq!(window.dir_syncs, 4 * 2, "{window:?}");
    }

    #[test]
    fn names_are_unique_and_nul_free() {
        let name = unique("taken");
        CountingVfs::register(&name).unwrap();
        assert!(matches!(CountingVfs::register(&name), Err(VfsError::NameTaken(_))));
        assert!(matches!(CountingVfs::register("a\0b"), Err(VfsError::BadName(_))));
        assert!(matches!(
            CountingVfs::register(&default_vfs_name()),
            Err(VfsError::NameTaken(_))
        ));
    }

    #[test]
    fn a_failed_open_is_reported_and_not_counted() {
        let vfs = CountingVfs::register(&unique("missing")).unwrap();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE; // no CREATE
        let result = Connection::open_with_flags_and_vfs("/nonexistent/dir/x.db", flags, vfs.name());
        assert!(result.is_err());
        assert_eq!(vfs.counts().opens, 0);
    }
}
