//! The control region: the few numbers crashsim and a crash VFS share
//! while a run goes on (persistence points, the armed cut, the simulated
//! clock), as atomics.
//!
//! In-process they live on the heap. For an outside store they live in a
//! small file in the seed's work directory that crashsim and every adapter
//! process map shared (`MAP_SHARED`), so they survive the `SIGKILL` of any
//! process that wrote them and every process of a seed counts on one
//! counter: only one process works at a time, so the count, and with it
//! where a cut lands, is deterministic.

use std::ffi::c_void;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

/// "crashvf1": a region crashsim laid out, of this layout.
const MAGIC: u64 = u64::from_le_bytes(*b"crashvf1");

/// `flags`: record every change in the log (power-loss runs); without it
/// the VFS only answers the clock and counts.
pub const RECORD: u64 = 1;

/// The shared numbers. `#[repr(C)]` and all 8-byte atomics: both sides map
/// the same bytes.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Control {
    magic: AtomicU64,
    /// Persistence points so far: writes, truncations, syncs, deletions.
    pub points: AtomicU64,
    /// The point at which power goes out (from 1), or 0: none armed.
    pub cut_at: AtomicU64,
    /// 1 once the armed point was reached: every later point fails.
    pub cut: AtomicU64,
    /// The simulated clock, in ticks (milliseconds).
    pub clock: AtomicI64,
    /// `RECORD`, or 0.
    pub flags: AtomicU64,
    /// `Model::code` of the disk model (device characteristics).
    pub model: AtomicU64,
    /// Processes that loaded the extension (evidence that the store's
    /// SQLite runs through it, and each process's randomness stream).
    pub loads: AtomicU64,
    /// Files opened through a crash VFS of this region.
    pub opens: AtomicU64,
    /// Syncs (`xSync`) through a crash VFS of this region.
    pub syncs: AtomicU64,
    /// The run's seed: SQLite's randomness (WAL salts) in the processes.
    pub seed: AtomicU64,
    /// `sqlite3_libversion_number()` of the last process that loaded the
    /// extension.
    pub sqlite_version: AtomicU64,
    /// A process kill (not a power cut) armed at this persistence point, or
    /// 0: the adapter process whose call reaches it dies there (`SIGKILL`),
    /// inside the call. Only crash VFSes in adapter processes honour it.
    pub kill_at: AtomicU64,
    /// 1 once a process died at `kill_at`.
    pub killed: AtomicU64,
    /// Changes a process could not append to the log: the model is
    /// incomplete, and the run cannot be judged.
    pub log_errors: AtomicU64,
    /// The `synchronous` level every new connection through a crash VFS of
    /// this region starts at, plus one (0: SQLite's own default), as a
    /// SQLite built with `SQLITE_DEFAULT_SYNCHRONOUS` or
    /// `SQLITE_DEFAULT_WAL_SYNCHRONOUS` would (`shim::default_level`).
    pub default_synchronous: AtomicU64,
    /// Connections that started at that level (evidence the fault reached
    /// the store's SQLite).
    pub defaults_applied: AtomicU64,
    /// Rollback journals deleted without syncing their directory (what
    /// `synchronous=EXTRA` adds to FULL in rollback-journal mode).
    pub journal_deletes_unsynced: AtomicU64,
    /// Preemption (`preempt`): `preempt::ON` and the bits of the kinds of
    /// point a park may be armed at, or 0.
    pub preempt: AtomicU64,
    /// 1 while an actor's step runs: the only time a process may park.
    pub preempt_live: AtomicU64,
    /// Scheduling points of the enabled kinds so far, across processes.
    pub sched_points: AtomicU64,
    /// The scheduling point a process parks at (from 1), or 0: none armed.
    pub preempt_at: AtomicU64,
    /// Per kind (`preempt::Kind`): scheduling points reached while live.
    pub reached: [AtomicU64; 5],
    /// Per kind: parks.
    pub parks: [AtomicU64; 5],
    /// Parks so far: the last one's ticket.
    pub park_seq: AtomicU64,
    /// The last park: its ticket, its kind's index and its detail.
    pub park_ticket: AtomicU64,
    pub park_kind: AtomicU64,
    pub park_detail: AtomicU64,
    /// Calls parked right now, as crashsim counts them (it resumes and
    /// kills them): a failed lock attempt yields only while one is.
    pub parked_now: AtomicU64,
    /// The ticket (its low 32 bits) of the parked process that may go on:
    /// the futex word parked processes wait on.
    pub resume: AtomicU32,
    _pad: AtomicU32,
    /// The statements store processes started while preemption was live
    /// (`statements`): how many so far, the actor crashsim says runs, and
    /// the last few.
    pub statements: crate::statements::Ring,
}

/// The region's size on disk: room to grow without a new layout.
pub const SIZE: usize = 32768;
const _: () = assert!(std::mem::size_of::<Control>() <= SIZE);

const PROT_READ: i32 = 1;
const PROT_WRITE: i32 = 2;
const MAP_SHARED: i32 = 1;

unsafe extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> i32;
    fn getpid() -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
}

/// Dies at once, as a `SIGKILL` from outside would leave the process: no
/// cleanup, no close, the kernel frees its locks.
pub fn die() -> ! {
    const SIGKILL: i32 = 9;
    // SAFETY: plain libc calls on this process.
    unsafe {
        kill(getpid(), SIGKILL);
    }
    std::process::abort()
}

impl Control {
    /// A region on the heap, for a VFS whose connections all live in this
    /// process. Never freed: a registered VFS keeps pointing at it.
    pub fn leaked() -> &'static Control {
        let control: &'static Control = Box::leak(Box::default());
        control.magic.store(MAGIC, Ordering::Release);
        control
    }

    /// Creates (or empties) the region file at `path` and maps it.
    pub fn create(path: &Path) -> std::io::Result<&'static Control> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(SIZE as u64)?;
        let control = map(&file)?;
        control.magic.store(MAGIC, Ordering::Release);
        Ok(control)
    }

    /// Maps the region file crashsim created at `path`.
    pub fn open(path: &Path) -> std::io::Result<&'static Control> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        if file.metadata()?.len() < SIZE as u64 {
            return Err(std::io::Error::other(format!(
                "{} is not a control region",
                path.display()
            )));
        }
        let control = map(&file)?;
        if control.magic.load(Ordering::Acquire) != MAGIC {
            return Err(std::io::Error::other(format!(
                "{} was laid out by another crashsim",
                path.display()
            )));
        }
        Ok(control)
    }

    /// Unmaps a region `create` or `open` mapped.
    ///
    /// # Safety
    /// Nothing may use `control` afterwards: every VFS registered with it
    /// unregistered and every connection through it closed.
    pub unsafe fn unmap(control: &'static Control) {
        // SAFETY: the caller promises no further use; the address and size
        // are the mapping's own.
        unsafe {
            munmap(control as *const Control as *mut c_void, SIZE);
        }
    }

    /// Counts a persistence point: what happens to the call there.
    pub fn point(&self) -> Point {
        if self.is_cut() {
            return Point::Cut;
        }
        let points = self.points.fetch_add(1, Ordering::AcqRel) + 1;
        let at = self.cut_at.load(Ordering::Acquire);
        if at != 0 && points >= at {
            self.cut.store(1, Ordering::Release);
            return Point::Cut;
        }
        let kill = self.kill_at.load(Ordering::Acquire);
        if kill != 0 && points >= kill {
            self.killed.store(1, Ordering::Release);
            return Point::Kill;
        }
        Point::Go
    }

    /// The process that makes the `offset`-th persistence point from now
    /// (from 1) dies there.
    pub fn arm_kill(&self, offset: u64) {
        self.killed.store(0, Ordering::Release);
        let at = self.points.load(Ordering::Acquire) + offset.max(1);
        self.kill_at.store(at, Ordering::Release);
    }

    /// No kill armed; returns whether a process died at the one that was.
    pub fn disarm_kill(&self) -> bool {
        self.kill_at.store(0, Ordering::Release);
        self.killed.swap(0, Ordering::AcqRel) != 0
    }

    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Acquire) != 0
    }

    pub fn records(&self) -> bool {
        self.flags.load(Ordering::Acquire) & RECORD != 0
    }

    /// Power goes out at persistence point `point` (from 1); `None`: no cut.
    pub fn arm(&self, point: Option<u64>) {
        self.cut_at.store(point.unwrap_or(0), Ordering::Release);
    }

    /// The armed point, if any.
    pub fn armed(&self) -> Option<u64> {
        Some(self.cut_at.load(Ordering::Acquire)).filter(|at| *at != 0)
    }

    /// Every new connection starts at `synchronous` level `level` (0 OFF …
    /// 3 EXTRA); `None`: at SQLite's compiled-in default.
    pub fn set_default_synchronous(&self, level: Option<u8>) {
        let code = level.map_or(0, |level| u64::from(level) + 1);
        self.default_synchronous.store(code, Ordering::Release);
    }

    /// The level `set_default_synchronous` set, if any.
    pub fn default_synchronous(&self) -> Option<u8> {
        match self.default_synchronous.load(Ordering::Acquire) {
            0 => None,
            code => u8::try_from(code - 1).ok(),
        }
    }

    /// Power is back on: nothing armed, nothing cut.
    pub fn power_on(&self) {
        self.cut_at.store(0, Ordering::Release);
        self.cut.store(0, Ordering::Release);
    }
}

/// What a persistence point comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The call goes on.
    Go,
    /// The power is out: the call fails with an I/O error.
    Cut,
    /// The process dies here (a kill armed inside a call).
    Kill,
}

/// Maps `file`'s first `SIZE` bytes shared, for the life of the process
/// (the mapping outlives the descriptor).
fn map(file: &std::fs::File) -> std::io::Result<&'static Control> {
    // SAFETY: a fresh shared mapping of a file at least SIZE bytes long;
    // the kernel aligns it to a page, and `Control` is plain atomics, valid
    // for any bytes (zeroes included).
    unsafe {
        let address = mmap(
            std::ptr::null_mut(),
            SIZE,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if address as isize == -1 || address.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        Ok(&*(address as *const Control))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_of_one_region_share_its_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control");
        let crashsim = Control::create(&path).unwrap();
        let store = Control::open(&path).unwrap();
        crashsim.clock.store(1_500, Ordering::Release);
        assert_eq!(store.clock.load(Ordering::Acquire), 1_500);
        // Two points, then a cut armed at the fourth.
        assert_eq!((store.point(), store.point()), (Point::Go, Point::Go));
        crashsim.arm(Some(4));
        assert_eq!((store.point(), store.point()), (Point::Go, Point::Cut));
        assert!(crashsim.is_cut() && crashsim.armed() == Some(4));
        assert_eq!(store.point(), Point::Cut, "every later point fails");
        assert_eq!(
            crashsim.points.load(Ordering::Acquire),
            4,
            "a point after the cut is not counted"
        );
        crashsim.power_on();
        // A kill armed two points ahead lands on the second.
        crashsim.arm_kill(2);
        assert_eq!((store.point(), store.point()), (Point::Go, Point::Kill));
        assert!(crashsim.disarm_kill(), "the kill happened");
        assert!(!crashsim.disarm_kill());
        assert_eq!(store.point(), Point::Go);
        // SAFETY: nothing uses either mapping afterwards.
        unsafe {
            Control::unmap(store);
            Control::unmap(crashsim);
        }
    }

    #[test]
    fn a_file_crashsim_did_not_lay_out_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control");
        std::fs::write(&path, [0u8; SIZE]).unwrap();
        assert!(Control::open(&path).is_err(), "no magic");
        std::fs::write(&path, [0u8; 16]).unwrap();
        assert!(Control::open(&path).is_err(), "too short");
        assert!(Control::open(&dir.path().join("missing")).is_err());
    }
}
