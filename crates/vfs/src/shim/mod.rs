//! The forwarding layer every crashsim VFS is built on: a VFS registered
//! through `rusqlite::ffi` that forwards every call to SQLite's default VFS
//! (`unix` on Linux), and calls a `Hooks` object around the calls that touch
//! durable state (open, write, truncate, sync, delete).
//!
//! Why one layer: the FFI is the only `unsafe` code in crashsim, and every
//! callback must be a thin forwarder whose invariants are written down once.
//! The counting VFS (syncs per commit) and the crash VFS (power loss) differ
//! only in their hooks.
//!
//! How: SQLite allocates `szOsFile` bytes for every open file. This VFS asks
//! for its own header (`ShimFile`) plus the inner VFS's size, opens the inner
//! file in the bytes after the header, and points the header's `pMethods` at
//! forwarding methods with the inner file's own `iVersion` (so SQLite never
//! believes we support more than the inner file does: shared memory for WAL,
//! memory mapping). Locks, shared memory, reads and file controls go straight
//! through, which is why real locking and the real WAL index keep working;
//! the hooks only see the lock calls (`Hooks::lock`, …), where a store's
//! process may park (`preempt`).
//!
//! With `Hooks::images` (the clock VFS of in-process runs), the bytes of
//! databases, WALs and journals live in memory instead (`vfs::memory`):
//! reads, writes, truncations, sizes and syncs are answered there, `xAccess`
//! answers for them, `xDelete` forgets them, and they are never mapped. The
//! real file is still opened, locked and deleted, so locking is unchanged.
//!
//! Files: this one (registration and the data methods), `error.rs`, `system.rs` (the
//! VFS-level methods), `mapping.rs` (shared memory, memory mapping),
//! `default_level.rs` (a weaker default `synchronous` for new connections),
//! `hooks.rs` (what a VFS does around the forwarded calls).
//!
//! Invariants the callbacks rely on:
//! - `pAppData` of a registered VFS points at its leaked `Registered`, which
//!   is never freed (a connection keeps its VFS pointer for its life), so a
//!   name is never reused: register one per run context, not per
//!   connection. `unregister` only unlinks it from SQLite's list (which
//!   `sqlite3_vfs_find` scans linearly), so connections still open through
//!   it keep working; what stays behind is the small `Registered`.
//! - A file's `pMethods` is ours exactly when the inner open set the inner
//!   file's `pMethods`, so SQLite calls `xClose` exactly when the inner file
//!   must be closed, and every method sees an initialised header.
//! - The header owns its path (`Box<Option<String>>`), freed in `xClose`,
//!   and its image, if any (an `Arc` turned raw), released in `xClose`.
//! - Hooks are `Send + Sync`: SQLite may call a VFS from any thread.

use std::ffi::{CStr, CString, c_int, c_void};
use std::sync::{Mutex, PoisonError};
use std::{mem, ptr};

use crate::ffi;

use crate::ffi::Api;
use crate::local;
use crate::memory::Image;
use crate::preempt::{At, Kind, file_role};

mod default_level;
mod error;
mod hooks;
mod mapping;
mod system;
pub use error::VfsError;
pub use hooks::{File, Hooks};
use mapping::*;
use system::*;

/// A registered VFS and everything its callbacks reach through `pAppData`.
pub struct Registered {
    /// The struct SQLite links into its list (it writes `pNext`).
    vfs: std::cell::UnsafeCell<ffi::sqlite3_vfs>,
    name: CString,
    /// The VFS every call is forwarded to; SQLite's own, never freed.
    inner: *mut ffi::sqlite3_vfs,
    /// The inner VFS's name (`unix`, …).
    inner_name: String,
    hooks: Box<dyn Hooks>,
    /// The SQLite functions to (un)register with.
    api: Api,
}

// SAFETY: `inner` points at a VFS that SQLite keeps for the life of the
// process and that is itself safe to call from any thread (SQLite is built
// thread-safe); `vfs` is written only by SQLite under its VFS-list mutex;
// `hooks` is `Send + Sync`.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

impl Registered {
    /// The name connections open it by.
    pub fn name(&self) -> &str {
        self.name.to_str().expect("registered from a &str")
    }

    /// Whether the VFS forwards to a `unix*` VFS (whose hidden directory syncs
    /// the counting hooks mirror).
    pub fn inner_is_unix(&self) -> bool {
        self.inner_name.starts_with("unix")
    }
}

/// Unlinks `registered` from SQLite's list of VFSes: no new connection can
/// open it by name. Its struct stays valid (it is never freed), so a
/// connection still open through it is unaffected.
pub fn unregister(registered: &'static Registered) {
    let _guard = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: the struct was registered by `register` and lives for the
    // process; unregistering a VFS that is not in the list is a no-op.
    unsafe {
        (registered.api.vfs_unregister)(registered.vfs.get());
    }
}

/// Serialises find-then-register, so two threads cannot both take a name;
/// holds the address of every VFS registered in this process (never freed).
static REGISTRY: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Whether `vfs` is one `register` registered (its `pAppData` a `Registered`).
fn is_registered(vfs: *const ffi::sqlite3_vfs) -> bool {
    let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    registry.contains(&(vfs as usize))
}

/// The default VFS's name, without registering anything.
pub fn default_vfs_name(api: &Api) -> String {
    // SAFETY: plain SQLite API; the default VFS and its name live for the process.
    unsafe {
        let vfs = (api.vfs_find)(ptr::null());
        if vfs.is_null() || (*vfs).zName.is_null() {
            return "none".to_string();
        }
        CStr::from_ptr((*vfs).zName).to_string_lossy().into_owned()
    }
}

/// Registers a VFS called `name` that forwards to the default VFS and calls
/// `hooks`; it becomes the default itself if `make_default` (the loadable
/// extension's way into a store's own `connect(path)`). Permanent: see the
/// module docs.
pub fn register(
    api: Api,
    name: &str,
    hooks: Box<dyn Hooks>,
    make_default: bool,
) -> Result<&'static Registered, VfsError> {
    let c_name = CString::new(name).map_err(|_| VfsError::BadName(name.to_string()))?;
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: plain SQLite API calls; both initialise SQLite if needed.
    let (taken, inner) = unsafe { (!(api.vfs_find)(c_name.as_ptr()).is_null(), (api.vfs_find)(ptr::null())) };
    if taken {
        return Err(VfsError::NameTaken(name.to_string()));
    }
    if inner.is_null() {
        return Err(VfsError::NoDefault);
    }
    // SAFETY: `inner` is SQLite's default VFS, valid for the process.
    let (inner_version, inner_size, inner_path_max, inner_name) = unsafe {
        let name = if (*inner).zName.is_null() {
            String::new()
        } else {
            CStr::from_ptr((*inner).zName).to_string_lossy().into_owned()
        };
        ((*inner).iVersion, (*inner).szOsFile, (*inner).mxPathname, name)
    };
    let registered: &'static Registered = Box::leak(Box::new(Registered {
        vfs: std::cell::UnsafeCell::new(vfs_struct(inner_version.clamp(1, 3), inner_size, inner_path_max)),
        name: c_name,
        inner,
        inner_name,
        hooks,
        api,
    }));
    let vfs = registered.vfs.get();
    // SAFETY: SQLite has not seen this struct yet, so nothing else reads it;
    // afterwards it is only touched through SQLite.
    let rc = unsafe {
        (*vfs).zName = registered.name.as_ptr();
        (*vfs).pAppData = registered as *const Registered as *mut c_void;
        (api.vfs_register)(vfs, c_int::from(make_default))
    };
    if rc != ffi::SQLITE_OK {
        return Err(VfsError::Register(rc));
    }
    registry.push(vfs as usize);
    drop(registry);
    default_level::install(&api);
    Ok(registered)
}

/// The registered struct, without its name and back pointer (set once the
/// allocation's address is known).
fn vfs_struct(version: c_int, inner_size: c_int, path_max: c_int) -> ffi::sqlite3_vfs {
    ffi::sqlite3_vfs {
        iVersion: version,
        szOsFile: mem::size_of::<ShimFile>() as c_int + inner_size,
        mxPathname: path_max,
        pNext: ptr::null_mut(),
        zName: ptr::null(),
        pAppData: ptr::null_mut(),
        xOpen: Some(x_open),
        xDelete: Some(x_delete),
        xAccess: Some(x_access),
        xFullPathname: Some(x_full_pathname),
        xDlOpen: Some(x_dl_open),
        xDlError: Some(x_dl_error),
        xDlSym: Some(x_dl_sym),
        xDlClose: Some(x_dl_close),
        xRandomness: Some(x_randomness),
        xSleep: Some(x_sleep),
        xCurrentTime: Some(x_current_time),
        xGetLastError: Some(x_get_last_error),
        xCurrentTimeInt64: Some(x_current_time_int64),
        xSetSystemCall: Some(x_set_system_call),
        xGetSystemCall: Some(x_get_system_call),
        xNextSystemCall: Some(x_next_system_call),
    }
}

// ---------------------------------------------------------------------------
// Files.

/// The head of every file this VFS opens; the inner VFS's file follows it in
/// the same allocation. `base` must come first: SQLite sees a `sqlite3_file`.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    registered: *const Registered,
    inner: *mut ffi::sqlite3_file,
    path: *mut Option<String>,
    flags: c_int,
    syncs: u64,
    /// The file's bytes, when they live in memory (`Arc::into_raw`, released
    /// in `xClose`); null when they live in the inner file.
    image: *const Image,
}

// The inner file follows the header: it must stay 8-byte aligned.
const _: () = assert!(mem::size_of::<ShimFile>() % 8 == 0);

/// The forwarding methods for each `iVersion` the inner file may have.
static METHODS_V1: ffi::sqlite3_io_methods = io_methods(1);
static METHODS_V2: ffi::sqlite3_io_methods = io_methods(2);
static METHODS_V3: ffi::sqlite3_io_methods = io_methods(3);

const fn io_methods(version: c_int) -> ffi::sqlite3_io_methods {
    ffi::sqlite3_io_methods {
        iVersion: version,
        xClose: Some(x_close),
        xRead: Some(x_read),
        xWrite: Some(x_write),
        xTruncate: Some(x_truncate),
        xSync: Some(x_sync),
        xFileSize: Some(x_file_size),
        xLock: Some(x_lock),
        xUnlock: Some(x_unlock),
        xCheckReservedLock: Some(x_check_reserved_lock),
        xFileControl: Some(x_file_control),
        xSectorSize: Some(x_sector_size),
        xDeviceCharacteristics: Some(x_device_characteristics),
        xShmMap: if version >= 2 { Some(x_shm_map) } else { None },
        xShmLock: if version >= 2 { Some(x_shm_lock) } else { None },
        xShmBarrier: if version >= 2 { Some(x_shm_barrier) } else { None },
        xShmUnmap: if version >= 2 { Some(x_shm_unmap) } else { None },
        xFetch: if version >= 3 { Some(x_fetch) } else { None },
        xUnfetch: if version >= 3 { Some(x_unfetch) } else { None },
    }
}

/// The registration a VFS callback was called on.
///
/// # Safety
/// `vfs` must be a VFS registered by `register`.
unsafe fn registered<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a Registered {
    // SAFETY: `pAppData` was set to the leaked `Registered` before registration.
    unsafe { &*((*vfs).pAppData as *const Registered) }
}

/// The header, the inner file and its methods.
///
/// # Safety
/// `file` must be a file opened by `x_open` whose inner open set `pMethods`.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (&'a mut ShimFile, *mut ffi::sqlite3_file, &'a ffi::sqlite3_io_methods) {
    // SAFETY: SQLite calls file methods only on files whose `pMethods` we
    // set, which we do only when the inner file's `pMethods` is set.
    unsafe {
        let this = &mut *(file as *mut ShimFile);
        let inner = this.inner;
        (this, inner, &*(*inner).pMethods)
    }
}

impl ShimFile {
    fn hooks(&self) -> &dyn Hooks {
        // SAFETY: set by `x_open` to the never-freed registration.
        unsafe { &*(*self.registered).hooks }
    }

    /// The in-memory bytes, if the file has them.
    fn image(&self) -> Option<&Image> {
        // SAFETY: set by `x_open` from `Arc::into_raw`, released only in `x_close`.
        unsafe { self.image.as_ref() }
    }

    fn view(&self) -> File<'_> {
        // SAFETY: `path` is the box `x_open` allocated, freed only in `x_close`.
        let path = unsafe { (*self.path).as_deref() };
        File {
            path,
            flags: self.flags,
            syncs: self.syncs,
        }
    }
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives us `szOsFile` bytes at `file`, 8-byte aligned; the
    // header is a multiple of 8 bytes, so the inner file is aligned as well.
    unsafe {
        let registered = registered(vfs);
        let this = file as *mut ShimFile;
        let inner_file = (file as *mut u8).add(mem::size_of::<ShimFile>()) as *mut ffi::sqlite3_file;
        (*this).base.pMethods = ptr::null();
        (*this).registered = registered;
        (*this).inner = inner_file;
        (*this).path = ptr::null_mut();
        (*this).flags = flags;
        (*this).syncs = 0;
        (*this).image = ptr::null();
        (*inner_file).pMethods = ptr::null();
        let Some(open) = (*registered.inner).xOpen else {
            return ffi::SQLITE_CANTOPEN;
        };
        let rc = open(registered.inner, name, inner_file, flags, out_flags);
        // SQLite calls xClose exactly when `pMethods` is set, so mirror the
        // inner file: set ours if and only if it set its own.
        let inner_methods = (*inner_file).pMethods;
        if !inner_methods.is_null() {
            let path = (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned());
            (*this).path = Box::into_raw(Box::new(path));
            (*this).base.pMethods = match (*inner_methods).iVersion {
                ..=1 => &METHODS_V1,
                2 => &METHODS_V2,
                _ => &METHODS_V3,
            };
            if rc == ffi::SQLITE_OK {
                (*this).image = match open_image(&*this) {
                    Ok(image) => image,
                    Err(code) => return code,
                };
                (*this).hooks().opened(&(*this).view());
            }
        }
        rc
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `parts`; the path box is ours and freed once, here.
    unsafe {
        let (this, inner, methods) = parts(file);
        let rc = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(inner));
        if !this.image.is_null() {
            drop(std::sync::Arc::from_raw(this.image));
            this.image = ptr::null();
        }
        if !this.path.is_null() {
            drop(Box::from_raw(this.path));
            this.path = ptr::null_mut();
        }
        this.base.pMethods = ptr::null();
        rc
    }
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if let Some(image) = this.image() {
            let out = std::slice::from_raw_parts_mut(buf as *mut u8, usize::try_from(amount).unwrap_or(0));
            return match image.read(out, u64::try_from(offset).unwrap_or(0)) {
                true => ffi::SQLITE_OK,
                false => ffi::SQLITE_IOERR_SHORT_READ,
            };
        }
        methods
            .xRead
            .map_or(ffi::SQLITE_IOERR_READ, |read| read(inner, buf, amount, offset))
    }
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: see `parts`; SQLite passes `amount` readable bytes at `buf`.
    unsafe {
        let (this, inner, methods) = parts(file);
        let data = std::slice::from_raw_parts(buf as *const u8, usize::try_from(amount).unwrap_or(0));
        if local::dead() {
            return ffi::SQLITE_IOERR_WRITE;
        }
        if let Err(code) = this.hooks().write(&this.view(), offset, data) {
            return code;
        }
        if let Some(image) = this.image() {
            image.write(data, u64::try_from(offset).unwrap_or(0));
            return ffi::SQLITE_OK;
        }
        methods
            .xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |write| write(inner, buf, amount, offset))
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if local::dead() {
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
        if let Err(code) = this.hooks().truncate(&this.view(), size) {
            return code;
        }
        if let Some(image) = this.image() {
            image.truncate(u64::try_from(size).unwrap_or(0));
            return ffi::SQLITE_OK;
        }
        methods
            .xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |truncate| truncate(inner, size))
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if local::dead() {
            return ffi::SQLITE_IOERR_FSYNC;
        }
        local::point(At::sync(file_role(this.view().path)));
        if let Err(code) = this.hooks().sync(&this.view(), flags) {
            return code;
        }
        // Bytes in memory are as durable as a process death needs.
        let rc = match this.image() {
            Some(_) => ffi::SQLITE_OK,
            None => methods.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |sync| sync(inner, flags)),
        };
        if rc == ffi::SQLITE_OK {
            this.hooks().synced(&this.view(), flags);
            this.syncs += 1;
        }
        rc
    }
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if let Some(image) = this.image() {
            *size = i64::try_from(image.len()).unwrap_or(i64::MAX);
            return ffi::SQLITE_OK;
        }
        methods
            .xFileSize
            .map_or(ffi::SQLITE_IOERR_FSTAT, |file_size| file_size(inner, size))
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        if local::dead() {
            return ffi::SQLITE_IOERR_LOCK;
        }
        let role = file_role(this.view().path);
        local::point(At::lock(Kind::Lock, level, role));
        this.hooks().lock(&this.view(), level);
        let rc = methods.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |lock| lock(inner, level));
        if rc == ffi::SQLITE_BUSY {
            local::refused(At::busy(Some(level), role));
            this.hooks().lock_busy(&this.view(), level);
        }
        rc
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        local::point(At::lock(Kind::Unlock, level, file_role(this.view().path)));
        this.hooks().unlock(&this.view(), level);
        methods
            .xUnlock
            .map_or(ffi::SQLITE_IOERR_UNLOCK, |unlock| unlock(inner, level))
    }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (_, inner, methods) = parts(file);
        methods
            .xCheckReservedLock
            .map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |check| check(inner, out))
    }
}

unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        // A size hint would grow the real file, which holds nothing.
        if op == ffi::SQLITE_FCNTL_SIZE_HINT && this.image().is_some() {
            return ffi::SQLITE_OK;
        }
        methods
            .xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |control| control(inner, op, arg))
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (_, inner, methods) = parts(file);
        // 4096 is SQLite's own default sector size.
        methods.xSectorSize.map_or(4096, |sector_size| sector_size(inner))
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `parts`.
    unsafe {
        let (this, inner, methods) = parts(file);
        let claimed = methods
            .xDeviceCharacteristics
            .map_or(0, |characteristics| characteristics(inner));
        this.hooks().device_characteristics(claimed)
    }
}

/// The image an opened file's bytes live in: for a database, WAL or
/// rollback journal of a VFS with images; null otherwise.
///
/// # Safety
/// `this` is a header `x_open` initialised, its path set.
unsafe fn open_image(this: &ShimFile) -> Result<*const Image, c_int> {
    const KINDS: c_int = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL;
    let (Some(images), Some(path)) = (this.hooks().images(), this.view().path) else {
        return Ok(ptr::null());
    };
    if this.flags & KINDS == 0 {
        return Ok(ptr::null());
    }
    match images.open(path) {
        Ok(image) => Ok(std::sync::Arc::into_raw(image)),
        Err(_) => Err(ffi::SQLITE_IOERR_READ),
    }
}
