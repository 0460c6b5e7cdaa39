//! Preemption inside a store's own calls: the points where a real SQLite
//! can be overtaken by another connection (lock transitions, shared-memory
//! locks, syncs, busy waits), and the rendezvous that parks a store's
//! process at one of them until crashsim lets it go on.
//!
//! Exactly one process works at a time, so the points are counted on one
//! counter in the control region, and where a park lands is deterministic:
//! crashsim arms `preempt_at` (a point number) before each actor step, from
//! its seed; the process that reaches it parks. A connection that waits for
//! a lock (SQLite's busy handler sleeping, or, while a call is parked, a
//! lock attempt answered `SQLITE_BUSY`) always parks while preemption is
//! live: the lock's holder may be a parked process, which only gets to run
//! again if the waiter yields. So a busy wait never spins against a holder that cannot move,
//! and `xSleep` answers at once (the time it would sleep is simulated).
//!
//! The rendezvous: the parking process takes a ticket, writes the point into
//! the control region, writes one byte into the state directory's FIFO
//! (`preempt`, which crashsim polls next to the adapter's answers), and
//! waits on the region's `resume` word (a futex on Linux) until crashsim
//! stores its ticket there, or kills it. Only a store's process parks:
//! crashsim's own connections never do (`CrashHooks::may_park`).

use std::ffi::c_int;
use std::path::Path;
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering;

use crate::control::Control;

/// The FIFO in the state directory a parking process writes one byte to.
pub const FIFO_FILE: &str = "preempt";

/// The bit of `Control::preempt` that turns preemption on; the kinds' bits
/// follow it.
pub const ON: u64 = 1;

/// A kind of scheduling point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `xLock`: before a connection takes a stronger lock on a database.
    Lock,
    /// `xUnlock`: before it releases (or lowers) one.
    Unlock,
    /// `xShmLock`: WAL's read, write and checkpoint locks, taken or released.
    ShmLock,
    /// `xSync`: before a file is made durable.
    Sync,
    /// A wait for a lock: `xSleep` from SQLite's busy handler, or a lock
    /// attempt answered `SQLITE_BUSY` while a call is parked (the holder
    /// may be it; SQLite's own try-locks, such as the EXCLUSIVE lock a
    /// closing connection tries, fail as often when nobody is). Always
    /// parks while preemption is live.
    Busy,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Lock, Kind::Unlock, Kind::ShmLock, Kind::Sync, Kind::Busy];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Its bit in `Control::preempt`.
    pub fn bit(self) -> u64 {
        2 << self.index()
    }

    /// The name scenarios, traces and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::Unlock => "unlock",
            Kind::ShmLock => "shm_lock",
            Kind::Sync => "sync",
            Kind::Busy => "busy",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    fn from_index(index: u64) -> Option<Kind> {
        Kind::ALL.get(usize::try_from(index).ok()?).copied()
    }
}

/// Where a park happened, as the control region holds it: the kind, and a
/// detail packed into one word (`describe` reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub kind: Kind,
    pub detail: u64,
}

/// Which file a point was on, in the detail's top byte.
const FILE_SHIFT: u32 = 56;
/// A busy `At` of a shared-memory lock.
const SHM_BUSY: u64 = 1 << 48;

impl At {
    /// `xLock`/`xUnlock` to `level`, on a file of `role` (`file_role`).
    pub fn lock(kind: Kind, level: c_int, role: u64) -> At {
        At {
            kind,
            detail: (role << FILE_SHIFT) | (level as u64 & 0xff),
        }
    }

    /// A failed `xShmLock(offset, n, flags)`: a wait for WAL's lock.
    pub fn shm_busy(offset: c_int, n: c_int, flags: c_int) -> At {
        At {
            kind: Kind::Busy,
            detail: At::shm(offset, n, flags).detail | SHM_BUSY,
        }
    }

    /// `xShmLock(offset, n, flags)`.
    pub fn shm(offset: c_int, n: c_int, flags: c_int) -> At {
        let pack = |value: c_int, shift: u32| (value as u64 & 0xffff) << shift;
        At {
            kind: Kind::ShmLock,
            detail: pack(offset, 0) | pack(n, 16) | pack(flags, 32),
        }
    }

    /// `xSync` on a file of `role`.
    pub fn sync(role: u64) -> At {
        At {
            kind: Kind::Sync,
            detail: role << FILE_SHIFT,
        }
    }

    /// A busy wait: `slept` (an `xSleep`) or a failed lock to `level`.
    pub fn busy(level: Option<c_int>, role: u64) -> At {
        At {
            kind: Kind::Busy,
            detail: (role << FILE_SHIFT) | level.map_or(0xff, |level| level as u64 & 0xff),
        }
    }

    /// Whether this is `slept`'s point: an `xSleep`, not a refused lock.
    pub fn is_sleep(self) -> bool {
        self == At::busy(None, 0)
    }

    /// Whether this is a wait at a refused lock.
    pub fn is_refused(self) -> bool {
        self.kind == Kind::Busy && !self.is_sleep()
    }

    /// The one rule for a call's "waited" flag, kept per process by the
    /// extension (`crash`) and per coroutine by crashsim's baton: a call
    /// about to park here with the flag `waited` set does not park, and
    /// `Some(flag)` is the flag after a park here (`None`: skipped, the
    /// flag is now clear). A wait at a refused lock sets it: the call
    /// waited while the lock's holder could run, so the `xSleep` SQLite's
    /// busy handler takes next has been waited already, and does not park
    /// again. Any other park, or that sleep, clears it.
    pub fn parks_after(self, waited: bool) -> Option<bool> {
        (!(self.is_sleep() && waited)).then(|| self.is_refused())
    }

    /// Whether a refused lock is one a call waits for: a file lock, or
    /// WAL's write lock (`xShmLock` slot 0). A refused read-mark, checkpoint
    /// or recovery lock is one of SQLite's try-locks (it takes another
    /// mark, or skips the checkpoint) or a retry loop that sleeps
    /// (`xSleep`, a wait of its own) before it tries again.
    pub fn waits(self) -> bool {
        self.kind == Kind::Busy && (self.detail & SHM_BUSY == 0 || self.detail & 0xffff == 0)
    }

    /// What a person reads in a trace: `xLock RESERVED on the database`,
    /// `xShmLock WRITE exclusive lock`, `xSync of the WAL`, …
    pub fn describe(self) -> String {
        let role = match self.detail >> FILE_SHIFT {
            1 => " on the database",
            2 => " of the WAL",
            3 => " of the journal",
            _ => "",
        };
        let level = |level: u64| match level {
            0 => "NONE",
            1 => "SHARED",
            2 => "RESERVED",
            3 => "PENDING",
            4 => "EXCLUSIVE",
            _ => "?",
        };
        match self.kind {
            Kind::Lock => format!("xLock {}{role}", level(self.detail & 0xff)),
            Kind::Unlock => format!("xUnlock to {}{role}", level(self.detail & 0xff)),
            Kind::ShmLock => {
                let (offset, n, flags) = (
                    self.detail & 0xffff,
                    (self.detail >> 16) & 0xffff,
                    (self.detail >> 32) & 0xffff,
                );
                let which = match offset {
                    0 => "WRITE".to_string(),
                    1 => "CHECKPOINT".to_string(),
                    2 => "RECOVER".to_string(),
                    read => format!("READ{}", read - 3),
                };
                let which = if n > 1 { format!("{which}+{}", n - 1) } else { which };
                let mode = if flags & 8 != 0 { "exclusive" } else { "shared" };
                let action = if flags & 1 != 0 { "unlock" } else { "lock" };
                format!("xShmLock {which} {mode} {action}")
            }
            Kind::Sync => format!("xSync{role}"),
            Kind::Busy if self.detail & SHM_BUSY != 0 => {
                let shm = At {
                    kind: Kind::ShmLock,
                    detail: self.detail & !SHM_BUSY,
                };
                format!("{} answered BUSY", shm.describe())
            }
            Kind::Busy => match self.detail & 0xff {
                0xff => "xSleep in the busy handler".to_string(),
                lock => format!("xLock {} answered BUSY{role}", level(lock)),
            },
        }
    }
}

/// The role of a file by its name, for `At`: 1 the database, 2 a WAL, 3 a
/// journal, 0 anything else.
pub fn file_role(path: Option<&str>) -> u64 {
    match path {
        Some(path) if path.ends_with("-wal") => 2,
        Some(path) if path.ends_with("-journal") => 3,
        Some(_) => 1,
        None => 0,
    }
}

impl Control {
    /// Whether a process may park now: preemption on, and an actor's step
    /// under way (crashsim set `preempt_live`).
    pub fn preempt_live(&self) -> bool {
        self.preempt.load(Ordering::Acquire) & ON != 0 && self.preempt_live.load(Ordering::Acquire) != 0
    }

    /// A store's process reached a scheduling point `at`: counts it, and
    /// says whether it parks here (the armed point, or a busy wait).
    pub fn reach(&self, at: At) -> bool {
        if !self.preempt_live() {
            return false;
        }
        self.reached[at.kind.index()].fetch_add(1, Ordering::AcqRel);
        if at.kind == Kind::Busy {
            return true;
        }
        if self.preempt.load(Ordering::Acquire) & at.kind.bit() == 0 {
            return false;
        }
        let points = self.sched_points.fetch_add(1, Ordering::AcqRel) + 1;
        let armed = self.preempt_at.load(Ordering::Acquire);
        if armed == 0 || points < armed {
            return false;
        }
        self.preempt_at.store(0, Ordering::Release);
        true
    }

    /// A lock attempt answered `SQLITE_BUSY`: a wait only while a call is
    /// parked (otherwise one of SQLite's own try-locks, or a holder that is
    /// between two requests and will answer `BUSY` in turn), and only for
    /// a lock a call waits for (`At::waits`).
    pub fn lock_refused(&self, at: At) -> bool {
        at.waits() && self.parked_now.load(Ordering::Acquire) > 0 && self.reach(at)
    }

    /// Parks this process at `at` until crashsim resumes it (or kills it).
    /// Tells crashsim through the FIFO in `dir`; if nobody reads it, goes on.
    pub fn park(&self, at: At, dir: &Path) {
        let ticket = self.note_park(at);
        if !notify(dir) {
            return;
        }
        let ticket = ticket as u32;
        loop {
            let seen = self.resume.load(Ordering::Acquire);
            if seen == ticket {
                return;
            }
            wait(&self.resume, seen);
        }
    }

    /// A park at `at`, written where crashsim reads it (`parked`) and
    /// counted: its ticket.
    pub fn note_park(&self, at: At) -> u64 {
        let ticket = self.park_seq.fetch_add(1, Ordering::AcqRel) + 1;
        self.park_kind.store(at.kind.index() as u64, Ordering::Release);
        self.park_detail.store(at.detail, Ordering::Release);
        self.park_ticket.store(ticket, Ordering::Release);
        self.parks[at.kind.index()].fetch_add(1, Ordering::AcqRel);
        ticket
    }

    /// crashsim's side: the point the last park was at, and its ticket.
    pub fn parked(&self) -> (u64, At) {
        let kind = Kind::from_index(self.park_kind.load(Ordering::Acquire)).unwrap_or(Kind::Busy);
        let at = At {
            kind,
            detail: self.park_detail.load(Ordering::Acquire),
        };
        (self.park_ticket.load(Ordering::Acquire), at)
    }

    /// crashsim's side: lets the process parked with `ticket` go on.
    pub fn resume(&self, ticket: u64) {
        self.unparked();
        self.resume.store(ticket as u32, Ordering::Release);
        wake(&self.resume);
    }

    /// crashsim's side: a call parked.
    pub fn parked_one(&self) {
        self.parked_now.fetch_add(1, Ordering::AcqRel);
    }

    /// crashsim's side: a parked call was resumed, or its process killed.
    pub fn unparked(&self) {
        let _ = self
            .parked_now
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| now.checked_sub(1));
    }

    /// crashsim's side: the next park is at the `offset`-th scheduling
    /// point from now (from 1); `live` while an actor's step runs.
    pub fn arm_preempt(&self, offset: Option<u64>) {
        let at = offset.map_or(0, |offset| self.sched_points.load(Ordering::Acquire) + offset.max(1));
        self.preempt_at.store(at, Ordering::Release);
        self.preempt_live.store(1, Ordering::Release);
    }

    /// crashsim's side: the step is over; nothing parks until the next.
    pub fn disarm_preempt(&self) {
        self.preempt_at.store(0, Ordering::Release);
        self.preempt_live.store(0, Ordering::Release);
    }

    /// crashsim's side: preemption on, at the points of `kinds`.
    pub fn enable_preempt(&self, kinds: &[Kind]) {
        let bits = kinds.iter().fold(ON, |bits, kind| bits | kind.bit());
        self.preempt.store(bits, Ordering::Release);
    }
}

/// Writes one byte into the FIFO crashsim reads: false if it cannot (no
/// FIFO, nobody reading it).
fn notify(dir: &Path) -> bool {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    #[cfg(target_os = "linux")]
    const O_NONBLOCK: i32 = 0o4000;
    #[cfg(not(target_os = "linux"))]
    const O_NONBLOCK: i32 = 0x0004;
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(O_NONBLOCK)
        .open(dir.join(FIFO_FILE));
    match opened {
        Ok(mut fifo) => fifo.write_all(b"p").is_ok(),
        Err(_) => false,
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod futex {
    use std::sync::atomic::AtomicU32;

    unsafe extern "C" {
        fn syscall(number: i64, ...) -> i64;
    }
    #[cfg(target_arch = "x86_64")]
    const SYS_FUTEX: i64 = 202;
    #[cfg(target_arch = "aarch64")]
    const SYS_FUTEX: i64 = 98;
    const FUTEX_WAIT: i32 = 0;
    const FUTEX_WAKE: i32 = 1;

    /// Sleeps while `word` still holds `seen` (shared across processes: not
    /// the private futex).
    pub fn wait(word: &AtomicU32, seen: u32) {
        // SAFETY: a futex wait on a live, aligned 4-byte word; no timeout.
        unsafe {
            syscall(SYS_FUTEX, word.as_ptr(), FUTEX_WAIT, seen, std::ptr::null::<u8>());
        }
    }

    pub fn wake(word: &AtomicU32) {
        // SAFETY: a futex wake on a live, aligned 4-byte word.
        unsafe {
            syscall(SYS_FUTEX, word.as_ptr(), FUTEX_WAKE, i32::MAX);
        }
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
use futex::{wait, wake};

/// Elsewhere: a short sleep between looks.
#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn wait(_word: &AtomicU32, _seen: u32) {
    std::thread::sleep(std::time::Duration::from_micros(50));
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn wake(_word: &AtomicU32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_armed_point_of_an_enabled_kind_parks_and_busy_always_does() {
        let control = Control::leaked();
        let lock = At::lock(Kind::Lock, 2, 1);
        assert!(!control.reach(lock), "preemption off");
        control.enable_preempt(&[Kind::Lock]);
        assert!(!control.reach(lock), "no step under way");
        control.arm_preempt(Some(2));
        assert!(!control.reach(At::sync(2)), "sync is not enabled, and not counted");
        assert!(!control.reach(lock));
        assert!(control.reach(lock), "the second lock point");
        assert!(!control.reach(lock), "one park per arming");
        assert!(control.reach(At::busy(None, 0)));
        let refused = At::busy(Some(4), 1);
        assert!(!control.lock_refused(refused), "a try-lock while nobody is parked");
        control.parked_one();
        assert!(control.lock_refused(refused), "a wait while a call is parked");
        control.unparked();
        control.unparked();
        assert_eq!(control.parked_now.load(Ordering::Acquire), 0, "never below zero");
        control.disarm_preempt();
        assert!(!control.reach(At::busy(None, 0)), "between steps nothing parks");
        assert_eq!(control.reached[Kind::Lock.index()].load(Ordering::Acquire), 3);
    }

    #[test]
    fn only_a_lock_a_call_waits_for_is_a_wait_when_refused() {
        let control = Control::leaked();
        control.enable_preempt(&[Kind::ShmLock]);
        control.arm_preempt(None);
        control.parked_one();
        let (exclusive, shared) = (2 | 8, 2 | 4);
        assert!(control.lock_refused(At::shm_busy(0, 1, exclusive)), "WAL's write lock");
        assert!(control.lock_refused(At::busy(Some(2), 1)), "a file lock");
        for (offset, flags) in [(4, exclusive), (4, shared), (1, exclusive), (2, shared)] {
            assert!(
                !control.lock_refused(At::shm_busy(offset, 1, flags)),
                "slot {offset}: a try-lock, or a retry loop that sleeps"
            );
        }
        assert!(At::busy(None, 0).is_sleep() && !At::busy(None, 0).is_refused());
        assert!(At::shm_busy(0, 1, exclusive).is_refused() && !At::shm(0, 1, exclusive).is_refused());
        // A sleep right after a wait at a refused lock does not park; any
        // park decides the flag for the next sleep.
        let (sleep, refused) = (At::busy(None, 0), At::shm_busy(0, 1, exclusive));
        assert_eq!(sleep.parks_after(true), None);
        assert_eq!(sleep.parks_after(false), Some(false));
        assert_eq!(refused.parks_after(false), Some(true));
        assert_eq!(At::shm(0, 1, exclusive).parks_after(true), Some(false));
    }

    #[test]
    fn points_read_as_sqlite_names_them() {
        assert_eq!(At::lock(Kind::Lock, 2, 1).describe(), "xLock RESERVED on the database");
        assert_eq!(
            At::lock(Kind::Unlock, 0, 1).describe(),
            "xUnlock to NONE on the database"
        );
        assert_eq!(At::shm(0, 1, 2 | 8).describe(), "xShmLock WRITE exclusive lock");
        assert_eq!(At::shm(4, 1, 1 | 4).describe(), "xShmLock READ1 shared unlock");
        assert_eq!(At::sync(2).describe(), "xSync of the WAL");
        assert_eq!(At::busy(None, 0).describe(), "xSleep in the busy handler");
        assert_eq!(
            At::busy(Some(4), 1).describe(),
            "xLock EXCLUSIVE answered BUSY on the database"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_parked_process_goes_on_when_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join(FIFO_FILE);
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        unsafe extern "C" {
            fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
        }
        // SAFETY: a valid path.
        assert_eq!(unsafe { mkfifo(path.as_ptr(), 0o600) }, 0);
        use std::os::unix::fs::OpenOptionsExt;
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(0o4000)
            .open(&fifo)
            .unwrap();
        let control = Control::leaked();
        let dir_path = dir.path().to_path_buf();
        let parked = std::thread::spawn(move || control.park(At::sync(2), &dir_path));
        let mut byte = [0u8; 1];
        loop {
            use std::io::Read;
            if let Ok(1) = reader.read(&mut byte) {
                break;
            }
            std::thread::yield_now();
        }
        let (ticket, at) = control.parked();
        assert_eq!((ticket, at), (1, At::sync(2)));
        control.resume(ticket);
        parked.join().unwrap();
    }
}
