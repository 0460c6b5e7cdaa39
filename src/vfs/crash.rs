//! `CrashVfs`: power loss over real files, for one run.
//!
//! The disk model (durable images, unsynced changes, the `drop_unsynced`,
//! `random` and `keep_all` models, tearing and garbling) and the VFS hooks
//! live in the `crashsim_vfs` crate, the one implementation shared with the
//! loadable extension outside stores load. This is crashsim's handle on a
//! run's disk, in one of two places:
//!
//! - `register`: every connection lives in this process; the hooks feed the
//!   model directly.
//! - `shared`: an outside store's processes load the extension, which logs
//!   every change to the seed's state directory and counts persistence
//!   points in a control region mapped from a file there; connections in
//!   this process (a role crashsim's reference serves) log the same way.
//!   The model reads the log back before a restore (`log::drain`).
//!
//! A cut is armed at a persistence point (the n-th write, truncate, sync or
//! delete, counted across every process of the run); from then on every
//! such call fails with an I/O error. Once every connection is closed (or
//! its process killed), `restore` rewrites each file as the model decides.
//! `xCurrentTime` answers the simulated clock (`set_clock`).

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crashsim_vfs::control::{Control, RECORD};
use crashsim_vfs::crash::{CrashHooks, Sink};
use crashsim_vfs::disk::{Draws, State};
use crashsim_vfs::extension::{CONTROL_FILE, LOG_FILE, Process};
use crashsim_vfs::log::{self, Strays};
use rusqlite::ffi;

pub use crashsim_vfs::crash::CLOCK_ORIGIN_MS;
pub use crashsim_vfs::disk::Restored;

use super::shim::{self, Registered, VfsError};
use crate::prng::Prng;
use crate::ratio::Ratio;

pub use crashsim_vfs::disk::Model;

/// `Model` by its name in scenarios and reports (`#[serde(with = …)]`):
/// the model itself lives in the dependency-free `crashsim_vfs`.
pub mod model_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use super::Model;

    pub fn serialize<S: Serializer>(model: &Model, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(model.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Model, D::Error> {
        let name = String::deserialize(deserializer)?;
        Model::from_name(&name).ok_or_else(|| {
            const NAMES: [&str; 3] = [Model::ALL[0].name(), Model::ALL[1].name(), Model::ALL[2].name()];
            D::Error::unknown_variant(&name, &NAMES)
        })
    }
}

/// The seed's PRNG, as the disk model draws from it.
impl Draws for Prng {
    fn below(&mut self, n: u64) -> u64 {
        Prng::below(self, n)
    }

    fn coin(&mut self) -> bool {
        self.chance(Ratio::new(1, 2))
    }

    fn index(&mut self, len: usize) -> usize {
        Prng::index(self, len)
    }
}

/// A registered crash VFS. One per run: its state is the run's disk.
#[derive(Clone, Copy)]
pub struct CrashVfs {
    registered: &'static Registered,
    state: &'static Mutex<State>,
    control: &'static Control,
    model: Model,
    inner_is_unix: bool,
    /// The state directory of an outside store's processes (`shared`).
    shared: Option<&'static Path>,
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
    /// Registers a crash VFS called `name` with `model`, for connections in
    /// this process. Registrations are permanent (see `shim`): use a fresh
    /// name per run.
    pub fn register(name: &str, model: Model) -> Result<CrashVfs, VfsError> {
        let control = Control::leaked();
        control.model.store(model.code(), Ordering::Release);
        let state: &'static Mutex<State> = Box::leak(Box::default());
        let inner_is_unix = shim::default_vfs_name().starts_with("unix");
        let hooks = CrashHooks {
            control,
            sink: Sink::Model(state),
            inner_is_unix,
            randomness: None,
            may_kill: false,
            park_dir: None,
        };
        let registered = shim::register(name, Box::new(hooks))?;
        Ok(CrashVfs {
            registered,
            state,
            control,
            model,
            inner_is_unix,
            shared: None,
        })
    }

    /// Lays out the shared state of a run whose connections live in other
    /// processes (the loadable extension's `CRASHSIM_VFS_STATE`) in `dir`,
    /// and registers a crash VFS called `name` that logs there too, for the
    /// connections of this process.
    pub fn shared(name: &str, model: Model, dir: &Path, seed: u64) -> Result<CrashVfs, VfsError> {
        CrashVfs::lay_out(name, model, dir, seed, true)
    }

    /// `shared`, for a run without power loss: the VFS answers the
    /// simulated clock, seeds SQLite's randomness and counts, and records
    /// nothing.
    pub fn clock_only(name: &str, dir: &Path, seed: u64) -> Result<CrashVfs, VfsError> {
        CrashVfs::lay_out(name, Model::KeepAll, dir, seed, false)
    }

    fn lay_out(name: &str, model: Model, dir: &Path, seed: u64, record: bool) -> Result<CrashVfs, VfsError> {
        let io = |error: std::io::Error| VfsError::Io(format!("laying out {}: {error}", dir.display()));
        std::fs::create_dir_all(dir).map_err(io)?;
        let control = Control::create(&dir.join(CONTROL_FILE)).map_err(io)?;
        std::fs::File::create(dir.join(LOG_FILE)).map_err(io)?;
        control.model.store(model.code(), Ordering::Release);
        control.seed.store(seed, Ordering::Release);
        control.flags.store(if record { RECORD } else { 0 }, Ordering::Release);
        let (_, registered) = crashsim_vfs::extension::register_logging(shim::api(), dir, name, Process::Crashsim)
            .map_err(VfsError::Io)?;
        Ok(CrashVfs {
            registered,
            state: Box::leak(Box::default()),
            control,
            model,
            inner_is_unix: shim::default_vfs_name().starts_with("unix"),
            shared: Some(Box::leak(dir.to_path_buf().into_boxed_path())),
        })
    }

    /// Turns suspensions inside the store's calls on, at the points of
    /// `kinds` (`crashsim_vfs::preempt`): lays out the FIFO parked
    /// processes write to, in the shared state directory. Only a shared
    /// VFS (an outside store's processes) can suspend a call.
    pub fn enable_preempt(&self, kinds: &[crashsim_vfs::preempt::Kind]) -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let Some(dir) = self.shared else {
            return Err(std::io::Error::other("no shared state directory"));
        };
        let path = dir.join(crashsim_vfs::preempt::FIFO_FILE);
        let _ = std::fs::remove_file(&path);
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.control.enable_preempt(kinds);
        Ok(())
    }

    pub fn name(&self) -> &'static str {
        self.registered.name()
    }

    pub fn model(&self) -> Model {
        self.model
    }

    /// The shared state directory, for a run of an outside store.
    pub fn shared_dir(&self) -> Option<PathBuf> {
        self.shared.map(Path::to_path_buf)
    }

    /// The control region (what the processes counted).
    pub fn control(&self) -> &'static Control {
        self.control
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Persistence points so far.
    pub fn points(&self) -> u64 {
        self.control.points.load(Ordering::Acquire)
    }

    /// Power goes out at persistence point `point` (from 1): that call and
    /// every later one fails.
    pub fn arm(&self, point: u64) {
        self.control.arm(Some(point));
    }

    /// Counts persistence points from zero again (a run counts its own,
    /// after its set-up).
    pub fn reset_points(&self) {
        self.control.points.store(0, Ordering::Release);
    }

    /// No cut planned.
    pub fn disarm(&self) {
        self.control.arm(None);
    }

    /// Power goes out at the next persistence point. Returns that point.
    pub fn arm_next(&self) -> u64 {
        let next = self.points() + 1;
        self.arm(next);
        next
    }

    /// Whether power is out (a cut point was reached).
    pub fn is_cut(&self) -> bool {
        self.control.is_cut()
    }

    /// The point power went out at, if it did.
    pub fn cut_point(&self) -> Option<u64> {
        self.is_cut().then(|| self.control.armed()).flatten()
    }

    /// The run is over: frees the files' images and logs (a run's worth of
    /// database pages) and unlinks the VFS, so a long sweep of seeds holds
    /// one run's disk at a time, not every run's. Call once every connection
    /// through it is closed; one still open keeps working, untracked.
    ///
    /// A shared VFS also unmaps its control region (a sweep of thousands of
    /// seeds would otherwise keep one page of each): every connection
    /// through it must be closed, and every process of the run gone.
    pub fn retire(&self) {
        *self.state() = State::default();
        shim::unregister(self.registered);
        if self.shared.is_some() {
            // SAFETY: the VFS that points at the region is unregistered, and
            // the caller closed every connection through it.
            unsafe { Control::unmap(self.control) };
        }
    }

    /// Sets the simulated clock (`xCurrentTime`), in ticks (milliseconds).
    pub fn set_clock(&self, tick: u64) {
        self.control
            .clock
            .store(i64::try_from(tick).unwrap_or(i64::MAX), Ordering::Release);
    }

    /// Reads what other processes logged into the model (a shared run).
    /// What the model cannot account for is an error: a connection that
    /// wrote without the VFS, or a change a process could not log.
    pub fn drain(&self) -> std::io::Result<()> {
        let Some(dir) = self.shared else {
            return Ok(());
        };
        let mut strays = Strays::default();
        log::drain(&dir.join(LOG_FILE), &mut self.state(), self.inner_is_unix, &mut strays)?;
        if let Some(path) = strays.unseen_writes.first() {
            return Err(std::io::Error::other(format!(
                "{path} had content the first time crashsim's VFS saw it: a connection wrote it \
                 without the VFS extension loaded, so its durability cannot be judged"
            )));
        }
        if strays.garbled {
            return Err(std::io::Error::other(format!(
                "the VFS log in {} holds a record crashsim cannot read",
                dir.display()
            )));
        }
        let failed = self.control.log_errors.load(Ordering::Acquire);
        if failed > 0 {
            return Err(std::io::Error::other(format!(
                "{failed} change(s) could not be written to the VFS log in {}",
                dir.display()
            )));
        }
        Ok(())
    }

    /// After a cut, with every connection closed: rewrites each file as the
    /// model leaves it, removes the WAL index, and powers the disk back on.
    pub fn restore(&self, prng: &mut Prng) -> std::io::Result<Restored> {
        self.drain()?;
        let restored = self.state().restore(self.model, prng)?;
        self.control.power_on();
        Ok(restored)
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
        assert!(!vfs.state().is_empty());
        vfs.retire();
        assert!(vfs.state().is_empty());
        // The open connection keeps working, untracked.
        assert_eq!(insert_until_cut(&conn, 5), 5);
        drop(conn);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE;
        assert!(Connection::open_with_flags_and_vfs(&path, flags, vfs.name()).is_err());
    }

    #[test]
    fn device_characteristics_match_the_model() {
        let claimed = ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE;
        assert_eq!(Model::Random.device_characteristics(claimed), 0);
        assert_eq!(Model::DropUnsynced.device_characteristics(claimed), claimed);
    }
}
