//! The SQLite build's default `synchronous` as a fault: every new connection
//! through a crash VFS whose hooks ask for it starts at a weaker level, as
//! on a SQLite compiled with `SQLITE_DEFAULT_SYNCHRONOUS=1` (or, for WAL
//! files, `SQLITE_DEFAULT_WAL_SYNCHRONOUS=1`, which some distributions and
//! embedded builds ship). A store that sets `PRAGMA synchronous` on every
//! connection is unaffected; one that leaves it to the default (a library
//! that never sets it, a PRAGMA run once) then acknowledges commits a power
//! cut can take back, and the checkers see it by evidence.
//!
//! How: an auto-extension (`sqlite3_auto_extension`), registered once per
//! process when the first shim VFS is, runs on every `sqlite3_open*` after
//! the main file is opened and before the opener runs anything. It asks the
//! connection for its VFS (`SQLITE_FCNTL_VFS_POINTER`); if that is a shim
//! VFS (one `register` registered) whose hooks name a level, it runs `PRAGMA
//! main.synchronous=N`: the store's own PRAGMAs, run later, override it, as
//! they override a compiled-in default. In the loadable extension the
//! functions come from the host's routines table, in crashsim from its
//! linked SQLite; the same code serves both.
//!
//! The PRAGMA reads the schema, so the file is read (never written) at open.
//! If that fails (a rollback-journal file locked by a writer), the
//! connection keeps SQLite's own default: a fault not injected, never a
//! false one; each connection that did start weaker is counted
//! (`Hooks::default_applied`).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use crate::control::Control;
use crate::ffi::{self, Api, ConnectionApi};

/// The functions the hook calls, set once with its registration.
static CONNECTIONS: OnceLock<ConnectionApi> = OnceLock::new();

/// Registers the auto-extension in this process, once; a no-op where the
/// API lacks the connection functions.
pub(super) fn install(api: &Api) {
    let Some(connections) = api.connections else {
        return;
    };
    CONNECTIONS.get_or_init(|| {
        // SAFETY: SQLite calls an auto-extension with the signature
        // `AutoExtension` has; the pointer type it is registered under is
        // `void(*)(void)` by the C API's declaration only.
        unsafe {
            let entry = std::mem::transmute::<ffi::AutoExtension, unsafe extern "C" fn()>(on_open);
            (connections.auto_extension)(Some(entry));
        }
        connections
    });
}

/// `PRAGMA main.synchronous` at each level, NUL-terminated.
fn pragma(level: u8) -> Option<&'static CStr> {
    Some(match level {
        0 => c"PRAGMA main.synchronous=0",
        1 => c"PRAGMA main.synchronous=1",
        2 => c"PRAGMA main.synchronous=2",
        3 => c"PRAGMA main.synchronous=3",
        _ => return None,
    })
}

/// The auto-extension: on a new connection through a shim VFS that asks for
/// a default level, sets it. Never fails the open.
unsafe extern "C" fn on_open(db: *mut ffi::sqlite3, _error: *mut *mut c_char, _routines: *const c_void) -> c_int {
    let Some(api) = CONNECTIONS.get() else {
        return ffi::SQLITE_OK;
    };
    let mut vfs: *mut ffi::sqlite3_vfs = std::ptr::null_mut();
    // SAFETY: `db` is the connection SQLite is opening; the file control
    // writes one pointer into `vfs`.
    let found = unsafe {
        (api.file_control)(
            db,
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_VFS_POINTER,
            (&raw mut vfs).cast::<c_void>(),
        )
    };
    if found != ffi::SQLITE_OK || vfs.is_null() {
        return ffi::SQLITE_OK;
    }
    if !super::is_registered(vfs) {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `vfs` is a VFS `register` registered.
    let registered = unsafe { super::registered(vfs) };
    // A store's connection: one through a VFS that says so, or one opened
    // by a call of an in-process store on crashsim's baton (`local`).
    let statements = registered.hooks.statements().or_else(crate::local::running);
    if let (Some(control), Some(trace_v2)) = (statements, api.trace_v2) {
        // SAFETY: `db` is the connection being opened; the context is a
        // control region that lives as long as the process.
        unsafe {
            trace_v2(
                db,
                ffi::SQLITE_TRACE_STMT,
                Some(statement_started),
                (control as *const Control).cast_mut().cast(),
            );
        }
    }
    let Some(sql) = registered.hooks.default_synchronous().and_then(pragma) else {
        return ffi::SQLITE_OK;
    };
    // SAFETY: a plain statement on the connection being opened; no callback,
    // no error message to free.
    let rc = unsafe { (api.exec)(db, sql.as_ptr(), None, std::ptr::null_mut(), std::ptr::null_mut()) };
    if rc == ffi::SQLITE_OK {
        registered.hooks.default_applied();
    }
    ffi::SQLITE_OK
}

/// The statement trace: a statement started; while an actor's step runs,
/// its SQL goes into the ring (`statements`).
unsafe extern "C" fn statement_started(
    event: c_uint,
    context: *mut c_void,
    _stmt: *mut c_void,
    sql: *mut c_void,
) -> c_int {
    if event != ffi::SQLITE_TRACE_STMT || context.is_null() || sql.is_null() {
        return 0;
    }
    // SAFETY: the context is the `'static` control region `on_open` passed.
    let control = unsafe { &*(context as *const Control) };
    if control.preempt_live() {
        // SAFETY: for `SQLITE_TRACE_STMT` the last argument is the
        // statement's SQL text, NUL-terminated, alive for the call.
        let text = unsafe { CStr::from_ptr(sql as *const c_char) };
        control.statements.record(text.to_bytes());
    }
    0
}
