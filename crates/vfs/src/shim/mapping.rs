//! The shim's shared-memory (WAL index) and memory-mapping methods: the
//! WAL index is always the inner VFS's; a file whose bytes live in memory
//! is never mapped.

use std::ffi::{c_int, c_void};
use std::ptr;

use crate::ffi;
use crate::local;
use crate::preempt::At;

use super::parts;

pub(super) unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    region_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: see `parts`; SQLite calls this only on files of version ≥ 2.
    unsafe {
        let (_, inner, methods) = parts(file);
        methods.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |map| {
            map(inner, region, region_size, extend, out)
        })
    }
}

pub(super) unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        // A dead call takes no lock (flag 1 is `SQLITE_SHM_UNLOCK`).
        if flags & 1 == 0 && local::dead() {
            return ffi::SQLITE_IOERR_SHMLOCK;
        }
        local::point(At::shm(offset, n, flags));
        this.hooks().shm_lock(offset, n, flags);
        let rc = methods
            .xShmLock
            .map_or(ffi::SQLITE_IOERR_SHMLOCK, |lock| lock(inner, offset, n, flags));
        if rc == ffi::SQLITE_BUSY {
            local::refused(At::shm_busy(offset, n, flags));
            this.hooks().shm_lock_busy(offset, n, flags);
        }
        rc
    }
}

pub(super) unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: see `parts`.
    unsafe {
        let (_, inner, methods) = parts(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(inner);
        }
    }
}

pub(super) unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (_, inner, methods) = parts(file);
        methods.xShmUnmap.map_or(ffi::SQLITE_OK, |unmap| unmap(inner, delete))
    }
}

pub(super) unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: see `parts`; SQLite calls this only on files of version ≥ 3.
    unsafe {
        let (this, inner, methods) = parts(file);
        // The real file of bytes held in memory is empty: never map it.
        if this.image().is_some() {
            *out = ptr::null_mut();
            return ffi::SQLITE_OK;
        }
        match methods.xFetch {
            Some(fetch) => fetch(inner, offset, amount, out),
            None => {
                // "No mapping": SQLite falls back to xRead.
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

pub(super) unsafe extern "C" fn x_unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if this.image().is_some() {
            return ffi::SQLITE_OK;
        }
        methods
            .xUnfetch
            .map_or(ffi::SQLITE_OK, |unfetch| unfetch(inner, offset, page))
    }
}
