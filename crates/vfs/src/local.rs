//! Suspensions of a store that lives in crashsim's own process: crashsim
//! runs each of the store's connections on a coroutine of its own (one
//! runs at a time, on the seed's thread) and installs a `Baton` here. The
//! shim asks it at every scheduling point (`preempt::Kind`): the call
//! running on this thread, if any, is counted in its run's control region
//! and, at the armed point or a wait for a lock, suspended, exactly as a
//! store's process parks at the FIFO (`preempt`). The extension never
//! installs one: there every call below is a no-op.
//!
//! A call killed while suspended goes on only to return: from then on
//! nothing it does reaches the files (every write, truncation, sync and
//! deletion fails with an I/O error, as after a cut), and the locks it
//! drops on its way out are what the kernel frees when a process dies.

use std::sync::OnceLock;

use crate::control::Control;
use crate::preempt::At;

/// crashsim's side of an in-process suspension.
pub struct Baton {
    /// The control region of the store call running on this thread, if
    /// one runs (crashsim's own connections: none).
    pub running: fn() -> Option<&'static Control>,
    /// Suspends that call at `at` until crashsim lets it go on (or kills it).
    pub park: fn(At),
    /// Whether the call running on this thread was killed: nothing it does
    /// from now on reaches the files.
    pub dead: fn() -> bool,
}

static BATON: OnceLock<Baton> = OnceLock::new();

/// Installs crashsim's baton (once per process; later calls change nothing).
pub fn install(baton: Baton) {
    let _ = BATON.set(baton);
}

/// The control region of the store call running on this thread, if one runs.
pub fn running() -> Option<&'static Control> {
    BATON.get().and_then(|baton| (baton.running)())
}

/// A scheduling point `at`: counted, and the call parks if it is the armed
/// one (or a wait).
pub fn point(at: At) {
    if let Some(baton) = BATON.get()
        && let Some(control) = (baton.running)()
        && control.reach(at)
    {
        (baton.park)(at);
    }
}

/// A lock attempt answered `SQLITE_BUSY`: parks while a call is parked (its
/// holder may be that call).
pub fn refused(at: At) {
    if let Some(baton) = BATON.get()
        && let Some(control) = (baton.running)()
        && control.lock_refused(at)
    {
        (baton.park)(at);
    }
}

/// `xSleep` (SQLite's busy handler, or its own retry loops): true if the
/// wait parked instead, or the call is dead, and the sleep is to be
/// answered at once (its time is simulated).
pub fn slept() -> bool {
    let Some(baton) = BATON.get() else {
        return false;
    };
    if (baton.dead)() {
        return true;
    }
    let Some(control) = (baton.running)() else {
        return false;
    };
    if !control.preempt_live() {
        return false;
    }
    let at = At::busy(None, 0);
    if control.reach(at) {
        (baton.park)(at);
    }
    true
}

/// Whether the call running on this thread was killed while suspended.
pub fn dead() -> bool {
    BATON.get().is_some_and(|baton| (baton.dead)())
}
