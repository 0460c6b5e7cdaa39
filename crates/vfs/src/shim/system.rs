//! The shim's VFS-level methods: everything but `xDelete`, `xAccess` (which
//! consult the memory images, if any) and the clock forwards unchanged.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;

use crate::ffi;
use crate::local;

use super::registered;

/// The inner VFS of a registration.
///
/// # Safety
/// As `registered`.
unsafe fn inner_vfs<'a>(vfs: *mut ffi::sqlite3_vfs) -> (*mut ffi::sqlite3_vfs, &'a ffi::sqlite3_vfs) {
    // SAFETY: the inner VFS is SQLite's default, valid for the process.
    unsafe {
        let inner = registered(vfs).inner;
        (inner, &*inner)
    }
}

pub(super) unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    // SAFETY: see `registered`; SQLite passes a NUL-terminated path.
    unsafe {
        let hooks = &registered(vfs).hooks;
        let path = CStr::from_ptr(name).to_string_lossy();
        if local::dead() {
            return ffi::SQLITE_IOERR_DELETE;
        }
        if let Err(code) = hooks.delete(&path, sync_dir != 0) {
            return code;
        }
        let (inner, methods) = inner_vfs(vfs);
        let rc = methods
            .xDelete
            .map_or(ffi::SQLITE_IOERR_DELETE, |delete| delete(inner, name, sync_dir));
        // Gone from memory whatever the real file said (it may never have
        // been written, and unix reports a missing file as deleted).
        if let Some(images) = hooks.images() {
            images.forget(&path);
        }
        if rc == ffi::SQLITE_OK {
            hooks.deleted(&path, sync_dir != 0);
        }
        rc
    }
}

pub(super) unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: see `registered`; SQLite passes a NUL-terminated path and a
    // writable `out`.
    unsafe {
        // A file held in memory exists when it has bytes, as unix answers
        // for a real one (its real file stays empty).
        if flags == ffi::SQLITE_ACCESS_EXISTS
            && let Some(images) = registered(vfs).hooks.images()
            && let Some(exists) = images.exists(&CStr::from_ptr(name).to_string_lossy())
        {
            *out = c_int::from(exists);
            return ffi::SQLITE_OK;
        }
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xAccess
            .map_or(ffi::SQLITE_IOERR_ACCESS, |access| access(inner, name, flags, out))
    }
}

pub(super) unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    out_size: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xFullPathname
            .map_or(ffi::SQLITE_CANTOPEN, |full| full(inner, name, out_size, out))
    }
}

pub(super) unsafe extern "C" fn x_dl_open(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *mut c_void {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xDlOpen.map_or(ptr::null_mut(), |open| open(inner, name))
    }
}

pub(super) unsafe extern "C" fn x_dl_error(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        if let Some(error) = methods.xDlError {
            error(inner, size, out);
        }
    }
}

pub(super) unsafe extern "C" fn x_dl_sym(
    vfs: *mut ffi::sqlite3_vfs,
    handle: *mut c_void,
    symbol: *const c_char,
) -> Option<ffi::DlSym> {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xDlSym.and_then(|sym| sym(inner, handle, symbol))
    }
}

pub(super) unsafe extern "C" fn x_dl_close(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void) {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        if let Some(close) = methods.xDlClose {
            close(inner, handle);
        }
    }
}

pub(super) unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) -> c_int {
    // SAFETY: see `registered`; SQLite passes `size` writable bytes at `out`.
    unsafe {
        let bytes = std::slice::from_raw_parts_mut(out as *mut u8, usize::try_from(size).unwrap_or(0));
        if registered(vfs).hooks.randomness(bytes) {
            return size;
        }
        let (inner, methods) = inner_vfs(vfs);
        methods.xRandomness.map_or(0, |randomness| randomness(inner, size, out))
    }
}

pub(super) unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        if local::slept() {
            return microseconds;
        }
        if let Some(answer) = registered(vfs).hooks.sleep(microseconds) {
            return answer;
        }
        let (inner, methods) = inner_vfs(vfs);
        methods.xSleep.map_or(0, |sleep| sleep(inner, microseconds))
    }
}

pub(super) unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: see `registered`; `out` is writable.
    unsafe {
        if let Some(ms) = registered(vfs).hooks.current_time_ms() {
            *out = ms as f64 / 86_400_000.0;
            return ffi::SQLITE_OK;
        }
        let (inner, methods) = inner_vfs(vfs);
        methods.xCurrentTime.map_or(ffi::SQLITE_ERROR, |now| now(inner, out))
    }
}

pub(super) unsafe extern "C" fn x_get_last_error(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xGetLastError.map_or(0, |last| last(inner, size, out))
    }
}

pub(super) unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    // SAFETY: see `registered`; SQLite calls this only if our iVersion ≥ 2,
    // which is the inner VFS's version; `out` is writable.
    unsafe {
        if let Some(ms) = registered(vfs).hooks.current_time_ms() {
            *out = ms;
            return ffi::SQLITE_OK;
        }
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xCurrentTimeInt64
            .map_or(ffi::SQLITE_ERROR, |now| now(inner, out))
    }
}

pub(super) unsafe extern "C" fn x_set_system_call(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    call: ffi::sqlite3_syscall_ptr,
) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xSetSystemCall
            .map_or(ffi::SQLITE_NOTFOUND, |set| set(inner, name, call))
    }
}

pub(super) unsafe extern "C" fn x_get_system_call(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
) -> ffi::sqlite3_syscall_ptr {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xGetSystemCall.and_then(|get| get(inner, name))
    }
}

pub(super) unsafe extern "C" fn x_next_system_call(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *const c_char {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xNextSystemCall.map_or(ptr::null(), |next| next(inner, name))
    }
}
