//! `CrashVfs`: power loss over real files.
//!
//! Every call is forwarded to the real file (so real locking and the real
//! WAL index keep working), while this VFS keeps, per file, its *durable
//! image* (the content as of its last `xSync`) and the log of what happened
//! since: writes, truncations, creation, deletion. A cut is armed at a
//! persistence point (the n-th write, truncate, sync or delete); from then
//! on every such call fails with an I/O error, so nothing more reaches the
//! "disk". Once every connection is closed, `restore` rewrites each file
//! from its durable image plus the unsynced log, as the model decides:
//!
//! - `drop_unsynced`: every unsynced operation is lost;
//! - `random`: in the manner of SQLite's own crash-test VFS (test6.c), each
//!   unsynced write is kept, lost, torn (512-byte sectors kept or lost one by
//!   one) or garbled (one sector written with noise), each truncation and
//!   deletion kept or lost, as the seed decides;
//! - `keep_all`: everything is kept: the process died, the disk did not.
//!
//! A deletion is durable only if SQLite asked for the directory to be synced
//! with it, which is what separates `journal_mode=DELETE` under
//! `synchronous=FULL` (the last commit's journal may come back and roll it
//! back) from `EXTRA`. The WAL index (`-shm`) lives in shared memory, never
//! synced: a cut removes it.
//!
//! The device characteristics match the model: `random` tears and garbles
//! sectors, so it claims nothing (no powersafe overwrite, no atomic or
//! sequential writes); the others forward what the real file claims, which
//! their behaviour honours.
//!
//! Time: `xCurrentTime` answers the simulated clock (`set_clock`), so
//! `CURRENT_TIMESTAMP` columns, and with them the files' bytes, are the same
//! for the same seed.

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::ffi;
use serde::{Deserialize, Serialize};

use super::shim::{self, File, Hooks, Registered, VfsError};
use crate::ratio::Ratio;
use crate::sim::prng::Prng;

/// What a power cut does to the writes not yet synced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Every unsynced operation is lost.
    #[default]
    DropUnsynced,
    /// Each unsynced operation kept, lost, torn or garbled, as the seed decides.
    Random,
    /// Everything is kept (process death only).
    KeepAll,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::DropUnsynced => "drop_unsynced",
            Model::Random => "random",
            Model::KeepAll => "keep_all",
        }
    }

    pub const ALL: [Model; 3] = [Model::DropUnsynced, Model::Random, Model::KeepAll];

    /// One line for `crashsim list`.
    pub fn describe(self) -> &'static str {
        match self {
            Model::DropUnsynced => "every write, truncate and delete not yet synced is lost",
            Model::Random => {
                "each unsynced operation kept, dropped, torn at 512 B sectors or garbled (as SQLite's test6.c)"
            }
            Model::KeepAll => "every write kept: process death, not power loss",
        }
    }
}

/// The sector size torn writes are cut at.
const SECTOR: usize = 512;

/// Milliseconds since the Julian epoch of 2026-01-01T00:00:00Z: where the
/// simulated clock starts (tick 0), one tick a millisecond.
pub(crate) const CLOCK_ORIGIN_MS: i64 = 212_633_985_600_000;

/// A change to one file's content.
#[derive(Clone, Debug)]
enum ContentOp {
    Write { offset: u64, data: Vec<u8> },
    Truncate { size: u64 },
}

/// A change to the directory: which name points at which file.
#[derive(Clone, Debug)]
enum DirOp {
    Link { name: String, inode: usize },
    Unlink { name: String },
}

/// A file's content: as of its last sync, and the changes since.
#[derive(Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    pending: Vec<ContentOp>,
}

/// The disk as the cut will find it. Content and names are synced apart, as
/// on a real file system: `xSync` makes a file's content durable, a
/// directory sync makes every name change in the directory durable (the
/// `unix` VFS does one inside the first sync of a new WAL or journal, and
/// after a deletion when SQLite asks for it).
#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    /// Names as they are now, and as they are durably.
    names: BTreeMap<String, usize>,
    durable_names: BTreeMap<String, usize>,
    pending_names: Vec<DirOp>,
    /// Every path this VFS has ever tracked.
    seen: std::collections::BTreeSet<String>,
    /// Persistence points so far: writes, truncations, syncs, deletions.
    points: u64,
    /// The point at which power goes out, if armed.
    cut_at: Option<u64>,
}

struct CrashHooks {
    state: &'static Mutex<State>,
    cut: &'static AtomicBool,
    clock_ms: &'static AtomicI64,
    model: Model,
    /// The inner VFS is `unix*`, whose hidden directory syncs are mirrored.
    inner_is_unix: bool,
}

fn apply(content: &mut Vec<u8>, op: &ContentOp) {
    match op {
        ContentOp::Write { offset, data } => {
            let start = *offset as usize;
            if content.len() < start + data.len() {
                content.resize(start + data.len(), 0);
            }
            content[start..start + data.len()].copy_from_slice(data);
        }
        ContentOp::Truncate { size } => content.resize(*size as usize, 0),
    }
}

impl State {
    fn new_inode(&mut self, durable: Vec<u8>) -> usize {
        self.inodes.push(Inode {
            durable,
            pending: Vec::new(),
        });
        self.inodes.len() - 1
    }

    fn sync_directory(&mut self) {
        self.durable_names = self.names.clone();
        self.pending_names.clear();
    }

    fn record(&mut self, path: &str, op: ContentOp) {
        if let Some(&inode) = self.names.get(path) {
            self.inodes[inode].pending.push(op);
        }
    }
}

impl CrashHooks {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a persistence point; `Err` once power is out (or goes out now).
    fn point(&self, state: &mut State, code: c_int) -> Result<(), c_int> {
        if self.cut.load(Ordering::Acquire) {
            return Err(code);
        }
        state.points += 1;
        if state.cut_at.is_some_and(|at| state.points >= at) {
            self.cut.store(true, Ordering::Release);
            return Err(code);
        }
        Ok(())
    }
}

impl Hooks for CrashHooks {
    fn opened(&self, file: &File<'_>) {
        let Some(path) = file.path else { return };
        let mut state = self.state();
        if state.names.contains_key(path) {
            return;
        }
        let on_disk = std::fs::read(path).unwrap_or_default();
        let first_sight = state.seen.insert(path.to_string());
        if first_sight && !on_disk.is_empty() {
            // On disk before this VFS saw it: durable, name and content.
            let inode = state.new_inode(on_disk);
            state.names.insert(path.to_string(), inode);
            state.durable_names.insert(path.to_string(), inode);
        } else {
            // Created now (or found empty): neither name nor content durable yet.
            let inode = state.new_inode(Vec::new());
            state.inodes[inode].pending.push(ContentOp::Truncate { size: 0 });
            if !on_disk.is_empty() {
                state.inodes[inode].pending.push(ContentOp::Write {
                    offset: 0,
                    data: on_disk,
                });
            }
            state.names.insert(path.to_string(), inode);
            state.pending_names.push(DirOp::Link {
                name: path.to_string(),
                inode,
            });
        }
    }

    fn write(&self, file: &File<'_>, offset: i64, data: &[u8]) -> Result<(), c_int> {
        let Some(path) = file.path else { return Ok(()) };
        let mut state = self.state();
        self.point(&mut state, ffi::SQLITE_IOERR_WRITE)?;
        state.record(
            path,
            ContentOp::Write {
                offset: offset as u64,
                data: data.to_vec(),
            },
        );
        Ok(())
    }

    fn truncate(&self, file: &File<'_>, size: i64) -> Result<(), c_int> {
        let Some(path) = file.path else { return Ok(()) };
        let mut state = self.state();
        self.point(&mut state, ffi::SQLITE_IOERR_TRUNCATE)?;
        state.record(path, ContentOp::Truncate { size: size as u64 });
        Ok(())
    }

    fn sync(&self, file: &File<'_>, _flags: c_int) -> Result<(), c_int> {
        if file.path.is_none() {
            return Ok(());
        }
        let mut state = self.state();
        self.point(&mut state, ffi::SQLITE_IOERR_FSYNC)
    }

    fn synced(&self, file: &File<'_>, _flags: c_int) {
        let Some(path) = file.path else { return };
        let mut state = self.state();
        if let Some(&inode) = state.names.get(path) {
            let inode = &mut state.inodes[inode];
            for op in std::mem::take(&mut inode.pending) {
                apply(&mut inode.durable, &op);
            }
        }
        // The `unix` VFS syncs the directory inside the first sync of a WAL or
        // journal handle it created (`UNIXFILE_DIRSYNC`).
        let kind = file.flags & (ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL);
        if self.inner_is_unix && file.syncs == 0 && file.flags & ffi::SQLITE_OPEN_CREATE != 0 && kind != 0 {
            state.sync_directory();
        }
    }

    fn delete(&self, _path: &str, _sync_dir: bool) -> Result<(), c_int> {
        let mut state = self.state();
        self.point(&mut state, ffi::SQLITE_IOERR_DELETE)
    }

    fn deleted(&self, path: &str, sync_dir: bool) {
        let mut state = self.state();
        if state.names.remove(path).is_some() {
            state.pending_names.push(DirOp::Unlink { name: path.to_string() });
        }
        if sync_dir {
            state.sync_directory();
        }
    }

    fn device_characteristics(&self, inner: c_int) -> c_int {
        match self.model {
            Model::Random => 0,
            Model::DropUnsynced | Model::KeepAll => inner,
        }
    }

    fn current_time_ms(&self) -> Option<i64> {
        Some(CLOCK_ORIGIN_MS + self.clock_ms.load(Ordering::Relaxed))
    }
}

/// What a restore did, for the trace and the reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// Unsynced operations applied as they were.
    pub kept: u64,
    /// Unsynced operations lost.
    pub lost: u64,
    /// Writes torn at sector granularity or garbled.
    pub torn: u64,
}

/// A registered crash VFS. One per run: its state is the run's disk.
#[derive(Clone, Copy)]
pub struct CrashVfs {
    registered: &'static Registered,
    state: &'static Mutex<State>,
    cut: &'static AtomicBool,
    clock_ms: &'static AtomicI64,
    model: Model,
}

impl std::fmt::Debug for CrashVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashVfs")
            .field("name", &self.name())
            .field("model", &self.model)
            .field("points", &self.points())
            .field("cut", &self.is_cut())
            .finish()
    }
}

impl CrashVfs {
    /// Registers a crash VFS called `name` with `model`. Registrations are
    /// permanent (see `shim`): use a fresh name per run.
    pub fn register(name: &str, model: Model) -> Result<CrashVfs, VfsError> {
        let state: &'static Mutex<State> = Box::leak(Box::default());
        let cut: &'static AtomicBool = Box::leak(Box::default());
        let clock_ms: &'static AtomicI64 = Box::leak(Box::default());
        let hooks = CrashHooks {
            state,
            cut,
            clock_ms,
            model,
            inner_is_unix: shim::default_vfs_name().starts_with("unix"),
        };
        let registered = shim::register(name, Box::new(hooks))?;
        Ok(CrashVfs {
            registered,
            state,
            cut,
            clock_ms,
            model,
        })
    }

    pub fn name(&self) -> &'static str {
        self.registered.name()
    }

    pub fn model(&self) -> Model {
        self.model
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Persistence points so far.
    pub fn points(&self) -> u64 {
        self.state().points
    }

    /// Power goes out at persistence point `point` (from 1): that call and
    /// every later one fails.
    pub fn arm(&self, point: u64) {
        self.state().cut_at = Some(point);
    }

    /// Counts persistence points from zero again (a run counts its own,
    /// after its set-up).
    pub fn reset_points(&self) {
        self.state().points = 0;
    }

    /// No cut planned.
    pub fn disarm(&self) {
        self.state().cut_at = None;
    }

    /// Power goes out at the next persistence point. Returns that point.
    pub fn arm_next(&self) -> u64 {
        let mut state = self.state();
        let next = state.points + 1;
        state.cut_at = Some(next);
        next
    }

    /// Whether power is out (a cut point was reached).
    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Acquire)
    }

    /// The point power went out at, if it did.
    pub fn cut_point(&self) -> Option<u64> {
        self.is_cut().then(|| self.state().cut_at).flatten()
    }

    /// The run is over: frees the files' images and logs (a run's worth of
    /// database pages) and unlinks the VFS, so a long sweep of seeds holds
    /// one run's disk at a time, not every run's. Call once every connection
    /// through it is closed; one still open keeps working, untracked.
    pub fn retire(&self) {
        *self.state() = State::default();
        shim::unregister(self.registered);
    }

    /// Sets the simulated clock (`xCurrentTime`), in ticks (milliseconds).
    pub fn set_clock(&self, tick: u64) {
        self.clock_ms
            .store(i64::try_from(tick).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// After a cut, with every connection closed: rewrites each file as the
    /// model leaves it, removes the WAL index, and powers the disk back on.
    pub fn restore(&self, prng: &mut Prng) -> std::io::Result<Restored> {
        let mut state = self.state();
        let mut restored = Restored::default();
        // Names first: which file each path is after the cut.
        let mut names = state.durable_names.clone();
        for op in std::mem::take(&mut state.pending_names) {
            let fate = match self.model {
                Model::KeepAll => Fate::Keep,
                Model::DropUnsynced => Fate::Lose,
                Model::Random => Fate::draw_other(prng),
            };
            if !matches!(fate, Fate::Keep) {
                restored.lost += 1;
                continue;
            }
            restored.kept += 1;
            match op {
                DirOp::Link { name, inode } => {
                    names.insert(name, inode);
                }
                DirOp::Unlink { name } => {
                    names.remove(&name);
                }
            }
        }
        // Then every file's content.
        for inode in &mut state.inodes {
            let mut content = std::mem::take(&mut inode.durable);
            for op in inode.pending.drain(..) {
                let fate = match self.model {
                    Model::KeepAll => Fate::Keep,
                    Model::DropUnsynced => Fate::Lose,
                    Model::Random => Fate::draw_content(&op, prng),
                };
                match (fate, op) {
                    (Fate::Keep, op) => {
                        apply(&mut content, &op);
                        restored.kept += 1;
                    }
                    (Fate::Lose, _) => restored.lost += 1,
                    (Fate::Tear, ContentOp::Write { mut offset, data }) => {
                        for sector in data.chunks(SECTOR) {
                            if prng.chance(Ratio::new(1, 2)) {
                                let op = ContentOp::Write {
                                    offset,
                                    data: sector.to_vec(),
                                };
                                apply(&mut content, &op);
                            }
                            offset += sector.len() as u64;
                        }
                        restored.torn += 1;
                    }
                    (Fate::Garble, ContentOp::Write { offset, mut data }) => {
                        let sectors = data.len().div_ceil(SECTOR).max(1);
                        let start = prng.index(sectors) * SECTOR;
                        let end = (start + SECTOR).min(data.len());
                        for byte in &mut data[start..end] {
                            *byte = prng.below(256) as u8;
                        }
                        apply(&mut content, &ContentOp::Write { offset, data });
                        restored.torn += 1;
                    }
                    (Fate::Tear | Fate::Garble, op) => {
                        apply(&mut content, &op);
                        restored.kept += 1;
                    }
                }
            }
            inode.durable = content;
        }
        // Write the result: every path ever seen exists or not as `names` says.
        let paths: Vec<String> = state.names.keys().chain(state.durable_names.keys()).cloned().collect();
        let mut seen = std::collections::BTreeSet::new();
        for path in paths.into_iter().filter(|path| seen.insert(path.clone())) {
            match names.get(&path) {
                Some(&inode) => std::fs::write(&path, &state.inodes[inode].durable)?,
                None => remove(&path)?,
            }
            if !path.ends_with("-wal") && !path.ends_with("-journal") {
                remove(&format!("{path}-shm"))?;
            }
        }
        state.names = names.clone();
        state.durable_names = names;
        state.cut_at = None;
        self.cut.store(false, Ordering::Release);
        Ok(restored)
    }
}

fn remove(path: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// What the `random` model does with one unsynced operation.
enum Fate {
    Keep,
    Lose,
    Tear,
    Garble,
}

impl Fate {
    fn draw_content(op: &ContentOp, prng: &mut Prng) -> Fate {
        match op {
            ContentOp::Write { .. } => match prng.below(8) {
                0..=3 => Fate::Keep,
                4 | 5 => Fate::Lose,
                6 => Fate::Tear,
                _ => Fate::Garble,
            },
            ContentOp::Truncate { .. } => Fate::draw_other(prng),
        }
    }

    fn draw_other(prng: &mut Prng) -> Fate {
        if prng.chance(Ratio::new(1, 2)) {
            Fate::Keep
        } else {
            Fate::Lose
        }
    }
}

/// A VFS name no registration in this process has used (registrations are
/// permanent, so every run or measurement needs its own).
pub fn unique_name(label: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("crashsim-{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Pins SQLite's own PRNG (WAL salts, temporary names) to `seed`.
///
/// SQLite's PRNG is process-wide: runs on parallel threads interleave their
/// draws, which changes salts (never the logical outcome). Byte-identical
/// files need one run at a time in the process.
pub fn pin_sqlite_prng(seed: u64) {
    // Fold the seed into the int the test control takes.
    let folded = (seed ^ (seed >> 32)) as u32 as c_int;
    // SAFETY: SQLITE_TESTCTRL_PRNG_SEED takes an int and a (nullable) db
    // pointer; with a null db it seeds the PRNG from the int.
    unsafe {
        ffi::sqlite3_test_control(
            ffi::SQLITE_TESTCTRL_PRNG_SEED,
            folded,
            std::ptr::null_mut::<ffi::sqlite3>(),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    use rusqlite::{Connection, OpenFlags};

    use super::*;

    fn unique(label: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        format!("crash-test-{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn open(path: &Path, vfs: &CrashVfs, journal: &str, synchronous: &str) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs.name()).unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        conn.pragma_update(None, "journal_mode", journal).unwrap();
        conn.pragma_update(None, "synchronous", synchronous).unwrap();
        conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x INTEGER PRIMARY KEY, y TEXT)")
            .unwrap();
        conn
    }

    /// Inserts until power goes out; returns how many commits were acknowledged.
    fn insert_until_cut(conn: &Connection, limit: usize) -> usize {
        let mut acked = 0;
        for _ in 0..limit {
            if conn.execute("INSERT INTO t (y) VALUES ('hello')", []).is_err() {
                break;
            }
            acked += 1;
        }
        acked
    }

    fn rows_after(path: &Path) -> (i64, String) {
        let conn = Connection::open(path).unwrap();
        let integrity: String = conn.pragma_query_value(None, "integrity_check", |r| r.get(0)).unwrap();
        let rows = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap_or(-1);
        (rows, integrity)
    }

    fn cut_run(model: Model, journal: &str, synchronous: &str, cut_after: u64, seed: u64) -> (usize, i64, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let vfs = CrashVfs::register(&unique(model.name()), model).unwrap();
        let conn = open(&path, &vfs, journal, synchronous);
        vfs.arm(vfs.points() + cut_after);
        let acked = insert_until_cut(&conn, 10_000);
        assert!(vfs.is_cut(), "the cut was reached");
        drop(conn);
        vfs.restore(&mut Prng::derive(seed, "restore")).unwrap();
        let (rows, integrity) = rows_after(&path);
        (acked, rows, integrity)
    }

    #[test]
    fn wal_full_keeps_every_acknowledged_commit() {
        for model in [Model::DropUnsynced, Model::Random] {
            for (cut_after, seed) in [(7, 1), (40, 2), (101, 3), (333, 4)] {
                let (acked, rows, integrity) = cut_run(model, "WAL", "FULL", cut_after, seed);
                assert_eq!(integrity, "ok", "{model:?} cut after {cut_after}");
                assert!(
                    rows >= acked as i64,
                    "{model:?} cut after {cut_after}: {acked} acked, {rows} survived"
                );
            }
        }
    }

    #[test]
    fn wal_normal_loses_a_tail_but_stays_consistent() {
        let mut lost_any = false;
        for (cut_after, seed) in [(50, 1), (120, 2), (250, 3)] {
            let (acked, rows, integrity) = cut_run(Model::DropUnsynced, "WAL", "NORMAL", cut_after, seed);
            assert_eq!(integrity, "ok");
            assert!(rows <= acked as i64);
            lost_any |= rows < acked as i64;
        }
        assert!(
            lost_any,
            "NORMAL never syncs the WAL on commit: some acknowledged tail must vanish"
        );
    }

    /// Power out right after a commit was acknowledged, before anything else.
    fn lost_right_after_a_commit(journal: &str, synchronous: &str) -> i64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let vfs = CrashVfs::register(&unique(synchronous), Model::DropUnsynced).unwrap();
        let conn = open(&path, &vfs, journal, synchronous);
        insert_until_cut(&conn, 5);
        vfs.arm_next();
        assert_eq!(insert_until_cut(&conn, 1), 0, "the next commit meets the cut");
        drop(conn);
        vfs.restore(&mut Prng::derive(0, "restore")).unwrap();
        let (rows, integrity) = rows_after(&path);
        assert_eq!(integrity, "ok");
        5 - rows
    }

    #[test]
    fn rollback_journal_full_may_lose_the_last_commit_and_extra_does_not() {
        assert_eq!(
            lost_right_after_a_commit("DELETE", "FULL"),
            1,
            "FULL does not sync the directory after deleting the journal: it comes back hot"
        );
        assert_eq!(lost_right_after_a_commit("DELETE", "EXTRA"), 0);
        assert_eq!(lost_right_after_a_commit("WAL", "FULL"), 0);
    }

    #[test]
    fn keep_all_is_process_death_only() {
        let (acked, rows, integrity) = cut_run(Model::KeepAll, "WAL", "OFF", 60, 1);
        assert_eq!(integrity, "ok");
        assert_eq!(rows, acked as i64);
    }

    #[test]
    fn the_clock_is_the_simulated_one() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = CrashVfs::register(&unique("clock"), Model::DropUnsynced).unwrap();
        let conn = open(&dir.path().join("t.db"), &vfs, "WAL", "FULL");
        vfs.set_clock(1_000);
        let now: String = conn.query_row("SELECT CURRENT_TIMESTAMP", [], |r| r.get(0)).unwrap();
        assert_eq!(now, "2026-01-01 00:00:01");
    }

    #[test]
    fn a_retired_vfs_lets_go_of_its_images_and_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = CrashVfs::register(&unique("retire"), Model::DropUnsynced).unwrap();
        let path = dir.path().join("t.db");
        let conn = open(&path, &vfs, "WAL", "FULL");
        insert_until_cut(&conn, 5);
        assert!(!vfs.state().inodes.is_empty());
        vfs.retire();
        assert!(vfs.state().inodes.is_empty() && vfs.state().names.is_empty());
        // The open connection keeps working, untracked.
        assert_eq!(insert_until_cut(&conn, 5), 5);
        drop(conn);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE;
        assert!(Connection::open_with_flags_and_vfs(&path, flags, vfs.name()).is_err());
    }

    #[test]
    fn device_characteristics_match_the_model() {
        let hooks = |model| CrashHooks {
            state: Box::leak(Box::default()),
            cut: Box::leak(Box::default()),
            clock_ms: Box::leak(Box::default()),
            model,
            inner_is_unix: true,
        };
        let claimed = ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE;
        assert_eq!(hooks(Model::Random).device_characteristics(claimed), 0);
        assert_eq!(hooks(Model::DropUnsynced).device_characteristics(claimed), claimed);
    }
}
