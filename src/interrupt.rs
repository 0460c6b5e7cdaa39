//! SIGINT and SIGTERM: stop at the first, quit at once (cleaned up) at the second.
//!
//! [`install`] starts one thread that waits for either signal (signal-hook's
//! self-pipe: the handler only writes a byte, everything else runs on that
//! ordinary thread, so nothing here has to be async-signal-safe).
//!
//! - The **first** signal is recorded ([`requested`]) and announced with one
//!   line on stderr. Nothing else happens: the run polls [`requested`],
//!   starts no more seeds, abandons the running ones at their next step,
//!   writes its partial reports and exits with [`exit_code`] (130 for
//!   SIGINT, 143 for SIGTERM).
//! - The **second** signal quits at once: every process group registered
//!   with [`guard_group`] gets `SIGKILL`, every directory registered with
//!   [`guard_dir`] is removed, one line goes to stderr, and the process
//!   exits with 128 + that signal's number.
//!
//! The registry is what makes the second signal clean: whoever creates a
//! directory that must not outlive the process (a run's workspace) or
//! starts a process group (an adapter) holds a guard for as long as it
//! exists; dropping the guard unregisters it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A signal that stops a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    /// Ctrl-C.
    Int,
    /// What a CI system or `kill` sends, e.g. at a time limit.
    Term,
    /// Standard output's reader went away (`crashsim run | head`): not a
    /// signal crashsim takes (it ignores SIGPIPE, so an adapter's closed
    /// pipe is an error, not death), but a stop as the reader's SIGPIPE
    /// would be ([`output_closed`]).
    Pipe,
}

impl Signal {
    /// `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Pipe => "SIGPIPE",
        }
    }

    /// The signal's number (2 or 15).
    pub fn number(self) -> i32 {
        match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
            Signal::Pipe => libc::SIGPIPE,
        }
    }

    fn from_number(number: i32) -> Option<Signal> {
        match number {
            libc::SIGINT => Some(Signal::Int),
            libc::SIGTERM => Some(Signal::Term),
            libc::SIGPIPE => Some(Signal::Pipe),
            _ => None,
        }
    }
}

/// The exit code of a run stopped by `signal`, as a shell reports a process
/// killed by it: 128 + its number (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code(signal: Signal) -> u8 {
    (128 + signal.number()) as u8
}

/// The first signal received (0: none).
static REQUESTED: AtomicI32 = AtomicI32::new(0);

/// Whether a stop was asked for, and by which signal (the first one).
pub fn requested() -> Option<Signal> {
    Signal::from_number(REQUESTED.load(Ordering::SeqCst))
}

/// Standard output's reader went away: the run stops as at a first
/// signal, quietly (stderr may be the same closed pipe), and exits 141.
/// A signal received before keeps its exit code.
pub fn output_closed() {
    let _ = REQUESTED.compare_exchange(0, libc::SIGPIPE, Ordering::SeqCst, Ordering::SeqCst);
}

/// Whether [`install`] succeeded once already.
static INSTALLED: Mutex<bool> = Mutex::new(false);

/// Installs the handlers of SIGINT and SIGTERM and starts the thread that
/// acts on them (see the module's documentation). Idempotent: later calls
/// return `Ok(())` and change nothing. Until it is called, both signals
/// keep their default action (the process dies at once).
pub fn install() -> std::io::Result<()> {
    let mut installed = lock(&INSTALLED);
    if *installed {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])?;
    std::thread::Builder::new()
        .name("crashsim-signals".to_string())
        .spawn(move || {
            for number in signals.forever() {
                let Some(signal) = Signal::from_number(number) else {
                    continue;
                };
                on_signal(signal);
            }
        })?;
    *installed = true;
    Ok(())
}

/// What a signal does: record the first, quit at the second.
fn on_signal(signal: Signal) {
    let first = REQUESTED
        .compare_exchange(0, signal.number(), Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        let again = match signal {
            Signal::Int => "press Ctrl-C again to quit at once",
            Signal::Term | Signal::Pipe => "a second SIGTERM or SIGINT quits at once",
        };
        eprintln!(
            "crashsim: {}: stopping (seeds running are abandoned; {again})",
            signal.name()
        );
        return;
    }
    let (groups, dirs) = clean_up();
    eprintln!(
        "crashsim: {} again: quitting at once ({groups} adapter process group{} killed, {dirs} work \
         director{} removed)",
        signal.name(),
        if groups == 1 { "" } else { "s" },
        if dirs == 1 { "y" } else { "ies" },
    );
    std::process::exit(i32::from(exit_code(signal)));
}

/// Kills every registered process group, then removes every registered
/// directory (the processes first: a process could still write into one).
/// Errors are ignored: this is the last thing the process does. How many
/// groups and directories there were.
fn clean_up() -> (usize, usize) {
    let groups: Vec<i32> = lock(&GROUPS).values().copied().collect();
    for &group in &groups {
        // SAFETY: killpg only sends a signal. The group is registered only
        // while its leader is unreaped, so the id is not someone else's.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
    let dirs: Vec<PathBuf> = lock(&DIRS).values().cloned().collect();
    for dir in &dirs {
        remove_while_written(dir);
    }
    (groups.len(), dirs.len())
}

/// Removes `dir` although seeds still running may be creating files in it:
/// `remove_dir_all` then finds a directory not empty at its last step, and
/// is tried again (a second signal once left a seed's databases behind).
/// Once `dir` itself is gone nothing can be created in it.
fn remove_while_written(dir: &std::path::Path) {
    for _ in 0..1_000 {
        match std::fs::remove_dir_all(dir) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => continue,
            _ => return,
        }
    }
}

/// Registered directories and process groups, by guard id: two guards of the
/// same path are two entries, so dropping one keeps the other registered.
static DIRS: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());
static GROUPS: Mutex<BTreeMap<u64, i32>> = Mutex::new(BTreeMap::new());
static NEXT_GUARD: AtomicU64 = AtomicU64::new(0);

/// A lock that a panicking holder did not make unusable: the maps stay
/// consistent whatever panicked, and the second signal must still work.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps a directory registered for removal at the second signal; dropping
/// it unregisters the directory (it does not remove it).
#[derive(Debug)]
#[must_use = "the directory is unregistered when the guard is dropped"]
pub struct DirGuard {
    id: u64,
}

/// Registers `path` to be removed (`remove_dir_all`) if a second signal
/// quits the process, until the returned guard is dropped.
pub fn guard_dir(path: PathBuf) -> DirGuard {
    let id = NEXT_GUARD.fetch_add(1, Ordering::Relaxed);
    lock(&DIRS).insert(id, path);
    DirGuard { id }
}

/// The directories registered now (for tests of their owners).
#[cfg(test)]
pub(crate) fn guarded_dirs() -> Vec<PathBuf> {
    lock(&DIRS).values().cloned().collect()
}

impl Drop for DirGuard {
    fn drop(&mut self) {
        lock(&DIRS).remove(&self.id);
    }
}

/// Keeps a process group registered for `SIGKILL` at the second signal;
/// dropping it unregisters the group (it does not kill it).
#[derive(Debug)]
#[must_use = "the process group is unregistered when the guard is dropped"]
pub struct GroupGuard {
    id: u64,
    pgid: i32,
}

/// Registers process group `pgid` to be killed if a second signal quits the
/// process, until the returned guard is dropped. Drop the guard once the
/// group is killed, and before its leader is reaped: a reaped group's id can
/// be given to another process group. The group is announced to the
/// [`crate::watchdog`] too, which kills it if crashsim itself is killed.
pub fn guard_group(pgid: i32) -> GroupGuard {
    let id = NEXT_GUARD.fetch_add(1, Ordering::Relaxed);
    lock(&GROUPS).insert(id, pgid);
    crate::watchdog::announce(pgid);
    GroupGuard { id, pgid }
}

/// The process groups registered now (for tests of their owners).
#[cfg(test)]
pub(crate) fn guarded_groups() -> Vec<i32> {
    lock(&GROUPS).values().copied().collect()
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        lock(&GROUPS).remove(&self.id);
        crate::watchdog::withdraw(self.pgid);
    }
}

/// Makes this process the reaper of its orphaned descendants (Linux), so
/// that a process an adapter's shell started (or a fork server's child whose
/// server is gone) can be waited for too, and no lock outlives a kill.
pub fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        // SAFETY: sets a flag of this process; no memory is passed.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_count(path: &str) -> usize {
        lock(&DIRS).values().filter(|dir| dir.as_os_str() == path).count()
    }

    fn group_count(pgid: i32) -> usize {
        lock(&GROUPS).values().filter(|group| **group == pgid).count()
    }

    #[test]
    fn a_dir_guard_registers_until_dropped() {
        let path = "/nonexistent/crashsim-interrupt-test-dir";
        let first = guard_dir(PathBuf::from(path));
        assert_eq!(dir_count(path), 1);
        let second = guard_dir(PathBuf::from(path));
        assert_eq!(dir_count(path), 2);
        drop(first);
        assert_eq!(dir_count(path), 1, "the other guard keeps its registration");
        drop(second);
        assert_eq!(dir_count(path), 0);
    }

    #[test]
    fn a_group_guard_registers_until_dropped() {
        // No process has a negative group id: nothing can be hit by mistake.
        let pgid = -4242;
        let guard = guard_group(pgid);
        assert_eq!(group_count(pgid), 1);
        drop(guard);
        assert_eq!(group_count(pgid), 0);
    }

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(exit_code(Signal::Int), 130);
        assert_eq!(exit_code(Signal::Term), 143);
        assert_eq!(Signal::Int.name(), "SIGINT");
        assert_eq!(Signal::Term.name(), "SIGTERM");
        assert_eq!(Signal::from_number(libc::SIGTERM), Some(Signal::Term));
        assert_eq!(Signal::from_number(0), None);
    }

    // `install` and both signals are tested in tests/suite/interrupt.rs, in a
    // child process: installing handlers here would change what Ctrl-C does
    // to the whole unit-test binary.
}
