//! `CountingVfs`: a VFS that forwards every call to the default VFS and
//! counts what SQLite asks of the disk: syncs, directory syncs, writes, opens.
//!
//! Why: "fsyncs per commit" must be counted, not assumed from the docs. A
//! WAL commit under `synchronous=FULL` should cost one sync of the WAL; a
//! checkpoint adds a sync of the WAL and one of the database; opening and
//! closing a connection per append adds the WAL's creation and deletion.
//! Counting at the VFS sees exactly the calls SQLite makes, per VFS instance,
//! from any number of threads.
//!
//! How: SQLite allocates `szOsFile` bytes for every open file. This VFS asks
//! for its own small header (`CountingFile`) plus the inner VFS's size, opens
//! the inner file in the bytes after the header, and points the header's
//! `pMethods` at forwarding methods that count and then call the inner
//! file's methods. Nothing is buffered, reordered or changed.
//!
//! What is counted, precisely:
//! - `syncs`: `xSync` calls on any file (database, WAL, rollback journal).
//! - `dir_syncs`: fsyncs of the directory. `xDelete` with `syncDir` set asks
//!   for one after the unlink. And the `unix` VFS fsyncs the directory once
//!   per handle of a WAL or journal opened with `SQLITE_OPEN_CREATE`, inside
//!   that handle's first `xSync` (`UNIXFILE_DIRSYNC` in `unixOpen`): one
//!   counted call, two fsyncs. That second one is invisible at this layer, so
//!   it is counted by applying the same rule, and only over a `unix*` VFS.
//!   It is what makes a connection per append cost one fsync more than the
//!   `xSync` calls suggest: every new connection opens its WAL anew.
//! - `writes`, `write_bytes`: `xWrite` calls and the bytes they carried.
//! - `opens`: files opened successfully.
//!
//! Registration is process-wide and permanent: SQLite keeps a pointer to the
//! VFS for as long as any connection may use it, so a registered VFS is
//! leaked on purpose (a few hundred bytes) and never unregistered. Register
//! one per measurement context under a unique name, not one per connection.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::{mem, ptr};

use rusqlite::ffi;

/// Why a VFS could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum VfsError {
    #[error("VFS name {0:?} contains a NUL byte")]
    BadName(String),
    #[error("a VFS called {0:?} is already registered")]
    NameTaken(String),
    #[error("SQLite has no default VFS to forward to")]
    NoDefault,
    #[error("sqlite3_vfs_register failed with code {0}")]
    Register(c_int),
}

/// What a `CountingVfs` has seen since it was registered. Subtract two
/// readings to count a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `xSync` calls on any file.
    pub syncs: u64,
    /// Directory fsyncs: `xDelete` with `syncDir`, and the `unix` VFS's one
    /// directory sync per new WAL or journal handle (see the module docs).
    pub dir_syncs: u64,
    /// `xWrite` calls.
    pub writes: u64,
    /// Bytes passed to `xWrite`.
    pub write_bytes: u64,
    /// Files opened successfully.
    pub opens: u64,
}

impl Counts {
    /// Every durable-write barrier SQLite asked for: file and directory syncs.
    pub fn fsyncs(&self) -> u64 {
        self.syncs + self.dir_syncs
    }
}

impl std::ops::Sub for Counts {
    type Output = Counts;

    fn sub(self, earlier: Counts) -> Counts {
        Counts {
            syncs: self.syncs.saturating_sub(earlier.syncs),
            dir_syncs: self.dir_syncs.saturating_sub(earlier.dir_syncs),
            writes: self.writes.saturating_sub(earlier.writes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            opens: self.opens.saturating_sub(earlier.opens),
        }
    }
}

/// The live counters. Relaxed atomics: each is an independent tally, read
/// only after the threads that bump it have been joined or paused.
#[derive(Default)]
struct Counters {
    syncs: AtomicU64,
    dir_syncs: AtomicU64,
    writes: AtomicU64,
    write_bytes: AtomicU64,
    opens: AtomicU64,
}

impl Counters {
    fn read(&self) -> Counts {
        Counts {
            syncs: self.syncs.load(Ordering::Relaxed),
            dir_syncs: self.dir_syncs.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            write_bytes: self.write_bytes.load(Ordering::Relaxed),
            opens: self.opens.load(Ordering::Relaxed),
        }
    }
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// A registered VFS and everything its callbacks reach through `pAppData`.
struct Registered {
    /// The struct SQLite links into its list (it writes `pNext`, hence the cell).
    vfs: UnsafeCell<ffi::sqlite3_vfs>,
    name: CString,
    /// The VFS every call is forwarded to; SQLite's own, never freed.
    inner: *mut ffi::sqlite3_vfs,
    /// Whether `inner` is a `unix*` VFS, whose hidden directory syncs we mirror.
    inner_is_unix: bool,
    counters: Counters,
}

// SAFETY: `inner` points at a VFS that SQLite keeps for the life of the
// process and that is itself safe to call from any thread (SQLite is built
// thread-safe); `vfs` is only written by SQLite under its own VFS-list mutex;
// the counters are atomics.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

/// Serialises find-then-register, so two threads cannot both take a name.
static REGISTRY: Mutex<()> = Mutex::new(());

/// A handle on a registered counting VFS. Copy it freely: the VFS lives for
/// the rest of the process.
#[derive(Clone, Copy)]
pub struct CountingVfs {
    registered: &'static Registered,
}

impl std::fmt::Debug for CountingVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingVfs")
            .field("name", &self.name())
            .field("counts", &self.counts())
            .finish()
    }
}

impl CountingVfs {
    /// Registers a counting VFS called `name` over the default VFS (not as
    /// the new default). Connections use it by name:
    /// `store::connection::open_via(path, settings, Some(vfs.name()))`.
    pub fn register(name: &str) -> Result<CountingVfs, VfsError> {
        let c_name = CString::new(name).map_err(|_| VfsError::BadName(name.to_string()))?;
        let _guard = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: plain SQLite API calls; both initialise SQLite if needed.
        let (taken, inner) = unsafe {
            (
                !ffi::sqlite3_vfs_find(c_name.as_ptr()).is_null(),
                ffi::sqlite3_vfs_find(ptr::null()),
            )
        };
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
            vfs: UnsafeCell::new(vfs_struct(inner_version.clamp(1, 3), inner_size, inner_path_max)),
            name: c_name,
            inner,
            inner_is_unix: inner_name.starts_with("unix"),
            counters: Counters::default(),
        }));
        let vfs = registered.vfs.get();
        // SAFETY: SQLite has not seen this struct yet, so nothing else reads
        // it; afterwards it is only touched through SQLite.
        let rc = unsafe {
            (*vfs).zName = registered.name.as_ptr();
            (*vfs).pAppData = registered as *const Registered as *mut c_void;
            ffi::sqlite3_vfs_register(vfs, 0)
        };
        if rc != ffi::SQLITE_OK {
            return Err(VfsError::Register(rc));
        }
        Ok(CountingVfs { registered })
    }

    /// The name connections open it by.
    pub fn name(&self) -> &'static str {
        self.registered.name.to_str().expect("registered from a &str")
    }

    /// Everything counted so far.
    pub fn counts(&self) -> Counts {
        self.registered.counters.read()
    }
}

/// The registered struct, without its name and back pointer (set once the
/// allocation's address is known).
fn vfs_struct(version: c_int, inner_size: c_int, path_max: c_int) -> ffi::sqlite3_vfs {
    ffi::sqlite3_vfs {
        iVersion: version,
        szOsFile: mem::size_of::<CountingFile>() as c_int + inner_size,
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
struct CountingFile {
    base: ffi::sqlite3_file,
    counters: *const Counters,
    inner: *mut ffi::sqlite3_file,
    /// The inner `unix` file will fsync its directory on its first `xSync`.
    dir_sync_pending: bool,
}

/// The forwarding methods for each `iVersion` the inner file may have: SQLite
/// decides what a file supports (shared memory for WAL, memory mapping) from
/// the version, so ours must not claim more than the inner file has.
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
/// `vfs` must be a VFS registered by `CountingVfs::register`.
unsafe fn registered<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a Registered {
    // SAFETY: `pAppData` was set to the leaked `Registered` before registration.
    unsafe { &*((*vfs).pAppData as *const Registered) }
}

/// The inner file and its methods.
///
/// # Safety
/// `file` must be a file opened by `x_open` whose inner open set `pMethods`.
unsafe fn inner_of<'a>(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'a ffi::sqlite3_io_methods) {
    // SAFETY: SQLite calls file methods only on files whose `pMethods` we
    // set, which we do only when the inner file's `pMethods` is set.
    unsafe {
        let inner = (*(file as *mut CountingFile)).inner;
        (inner, &*(*inner).pMethods)
    }
}

/// # Safety
/// As `inner_of`.
unsafe fn counters_of<'a>(file: *mut ffi::sqlite3_file) -> &'a Counters {
    // SAFETY: set by `x_open` to the registration's counters, which never die.
    unsafe { &*(*(file as *mut CountingFile)).counters }
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives us `szOsFile` bytes at `file`, 8-byte aligned;
    // `CountingFile` is a multiple of 8 bytes, so the inner file that follows
    // it is aligned as well.
    unsafe {
        let registered = registered(vfs);
        let this = file as *mut CountingFile;
        let inner_file = (file as *mut u8).add(mem::size_of::<CountingFile>()) as *mut ffi::sqlite3_file;
        (*this).base.pMethods = ptr::null();
        (*this).counters = &registered.counters;
        (*this).inner = inner_file;
        // The rule of `unixOpen` for `UNIXFILE_DIRSYNC`.
        let kind = flags & (ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL);
        (*this).dir_sync_pending = registered.inner_is_unix && flags & ffi::SQLITE_OPEN_CREATE != 0 && kind != 0;
        (*inner_file).pMethods = ptr::null();
        let Some(open) = (*registered.inner).xOpen else {
            return ffi::SQLITE_CANTOPEN;
        };
        let rc = open(registered.inner, name, inner_file, flags, out_flags);
        // SQLite calls xClose exactly when `pMethods` is set, so mirror the
        // inner file: set ours if and only if it set its own.
        let inner_methods = (*inner_file).pMethods;
        if !inner_methods.is_null() {
            (*this).base.pMethods = match (*inner_methods).iVersion {
                ..=1 => &METHODS_V1,
                2 => &METHODS_V2,
                _ => &METHODS_V3,
            };
        }
        if rc == ffi::SQLITE_OK {
            bump(&registered.counters.opens, 1);
        }
        rc
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        let rc = methods.xClose.map_or(ffi::SQLITE_OK, |close| close(inner));
        (*file).pMethods = ptr::null();
        rc
    }
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xRead
            .map_or(ffi::SQLITE_IOERR_READ, |read| read(inner, buf, amount, offset))
    }
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let counters = counters_of(file);
        bump(&counters.writes, 1);
        bump(&counters.write_bytes, u64::try_from(amount).unwrap_or(0));
        let (inner, methods) = inner_of(file);
        methods
            .xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |write| write(inner, buf, amount, offset))
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |truncate| truncate(inner, size))
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let counters = counters_of(file);
        bump(&counters.syncs, 1);
        let this = file as *mut CountingFile;
        let (inner, methods) = inner_of(file);
        let rc = methods.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |sync| sync(inner, flags));
        if rc == ffi::SQLITE_OK && (*this).dir_sync_pending {
            (*this).dir_sync_pending = false;
            bump(&counters.dir_syncs, 1);
        }
        rc
    }
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xFileSize
            .map_or(ffi::SQLITE_IOERR_FSTAT, |file_size| file_size(inner, size))
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |lock| lock(inner, level))
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xUnlock
            .map_or(ffi::SQLITE_IOERR_UNLOCK, |unlock| unlock(inner, level))
    }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xCheckReservedLock
            .map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |check| check(inner, out))
    }
}

unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |control| control(inner, op, arg))
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        // 4096 is SQLite's own default sector size.
        methods.xSectorSize.map_or(4096, |sector_size| sector_size(inner))
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xDeviceCharacteristics
            .map_or(0, |characteristics| characteristics(inner))
    }
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    region_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: see `inner_of`; SQLite calls this only on files of version ≥ 2.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |map| {
            map(inner, region, region_size, extend, out)
        })
    }
}

unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xShmLock
            .map_or(ffi::SQLITE_IOERR_SHMLOCK, |lock| lock(inner, offset, n, flags))
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(inner);
        }
    }
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods.xShmUnmap.map_or(ffi::SQLITE_OK, |unmap| unmap(inner, delete))
    }
}

unsafe extern "C" fn x_fetch(file: *mut ffi::sqlite3_file, offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int {
    // SAFETY: see `inner_of`; SQLite calls this only on files of version ≥ 3.
    unsafe {
        let (inner, methods) = inner_of(file);
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

unsafe extern "C" fn x_unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    // SAFETY: see `inner_of`.
    unsafe {
        let (inner, methods) = inner_of(file);
        methods
            .xUnfetch
            .map_or(ffi::SQLITE_OK, |unfetch| unfetch(inner, offset, page))
    }
}

// ---------------------------------------------------------------------------
// The VFS itself: everything but xOpen and xDelete forwards without counting.

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

unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        if sync_dir != 0 {
            bump(&registered(vfs).counters.dir_syncs, 1);
        }
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xDelete
            .map_or(ffi::SQLITE_IOERR_DELETE, |delete| delete(inner, name, sync_dir))
    }
}

unsafe extern "C" fn x_access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xAccess
            .map_or(ffi::SQLITE_IOERR_ACCESS, |access| access(inner, name, flags, out))
    }
}

unsafe extern "C" fn x_full_pathname(
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

unsafe extern "C" fn x_dl_open(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *mut c_void {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xDlOpen.map_or(ptr::null_mut(), |open| open(inner, name))
    }
}

unsafe extern "C" fn x_dl_error(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        if let Some(error) = methods.xDlError {
            error(inner, size, out);
        }
    }
}

type DlSym = unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char);

unsafe extern "C" fn x_dl_sym(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void, symbol: *const c_char) -> Option<DlSym> {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xDlSym.and_then(|sym| sym(inner, handle, symbol))
    }
}

unsafe extern "C" fn x_dl_close(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void) {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        if let Some(close) = methods.xDlClose {
            close(inner, handle);
        }
    }
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xRandomness.map_or(0, |randomness| randomness(inner, size, out))
    }
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xSleep.map_or(0, |sleep| sleep(inner, microseconds))
    }
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xCurrentTime.map_or(ffi::SQLITE_ERROR, |now| now(inner, out))
    }
}

unsafe extern "C" fn x_get_last_error(vfs: *mut ffi::sqlite3_vfs, size: c_int, out: *mut c_char) -> c_int {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xGetLastError.map_or(0, |last| last(inner, size, out))
    }
}

unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    // SAFETY: see `registered`; SQLite calls this only if our iVersion ≥ 2,
    // which is the inner VFS's version.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods
            .xCurrentTimeInt64
            .map_or(ffi::SQLITE_ERROR, |now| now(inner, out))
    }
}

unsafe extern "C" fn x_set_system_call(
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

unsafe extern "C" fn x_get_system_call(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> ffi::sqlite3_syscall_ptr {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xGetSystemCall.and_then(|get| get(inner, name))
    }
}

unsafe extern "C" fn x_next_system_call(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *const c_char {
    // SAFETY: see `registered`.
    unsafe {
        let (inner, methods) = inner_vfs(vfs);
        methods.xNextSystemCall.map_or(ptr::null(), |next| next(inner, name))
    }
}

/// The name SQLite's default VFS goes by (`unix` on Linux), for reports.
pub fn default_vfs_name() -> String {
    // SAFETY: plain SQLite API; the default VFS and its name live for the process.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(ptr::null());
        if vfs.is_null() || (*vfs).zName.is_null() {
            return "none".to_string();
        }
        CStr::from_ptr((*vfs).zName).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    use rusqlite::{Connection, OpenFlags};

    use super::*;

    /// A fresh name per test: registrations are process-wide and permanent.
    fn unique(label: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        format!("counting-test-{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn open(path: &Path, vfs: &CountingVfs, synchronous: &str) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs.name()).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "synchronous", synchronous).unwrap();
        conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x INTEGER PRIMARY KEY, y TEXT)")
            .unwrap();
        conn
    }

    fn insert(conn: &Connection, count: usize) {
        for _ in 0..count {
            conn.execute("INSERT INTO t (y) VALUES ('hello')", []).unwrap();
        }
    }

    #[test]
    fn forwards_everything_so_the_default_vfs_reads_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let vfs = CountingVfs::register(&unique("forward")).unwrap();
        let conn = open(&path, &vfs, "FULL");
        insert(&conn, 3);
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal", "shared memory works through the shim");
        assert_eq!(
            conn.pragma_query_value(None, "integrity_check", |r| r.get::<_, String>(0))
                .unwrap(),
            "ok"
        );
        drop(conn);
        let plain = Connection::open(&path).unwrap();
        let rows: i64 = plain.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 3);
        let counts = vfs.counts();
        assert!(counts.opens >= 2, "database and WAL: {counts:?}");
        assert!(counts.writes > 0 && counts.write_bytes >= 4096, "{counts:?}");
    }

    #[test]
    fn a_wal_commit_under_full_is_one_sync_and_under_normal_or_off_none() {
        let dir = tempfile::tempdir().unwrap();
        for (synchronous, syncs_per_commit) in [("FULL", 1), ("NORMAL", 0), ("OFF", 0)] {
            let vfs = CountingVfs::register(&unique(synchronous)).unwrap();
            let conn = open(&dir.path().join(format!("{synchronous}.db")), &vfs, synchronous);
            // The first commits create and sync the WAL header; steady state after.
            insert(&conn, 3);
            let before = vfs.counts();
            insert(&conn, 10);
            let window = vfs.counts() - before;
            assert_eq!(window.syncs, 10 * syncs_per_commit, "{synchronous}: {window:?}");
            assert_eq!(window.dir_syncs, 0, "{synchronous}: {window:?}");
            assert!(window.writes >= 10, "{synchronous}: every commit writes: {window:?}");
        }
    }

    #[test]
    fn a_connection_per_append_costs_four_syncs_and_a_directory_sync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let vfs = CountingVfs::register(&unique("per-append")).unwrap();
        drop(open(&path, &vfs, "FULL"));
        for _ in 0..3 {
            let before = vfs.counts();
            let conn = open(&path, &vfs, "FULL");
            insert(&conn, 1);
            drop(conn);
            let window = vfs.counts() - before;
            // The new WAL's header and the commit, then the checkpoint on close:
            // the WAL and the database. The WAL is unlinked without a directory
            // sync, but the first sync of the new WAL synced the directory.
            assert_eq!(window.syncs, 4, "{window:?}");
            assert_eq!(window.dir_syncs, 1, "{window:?}");
            assert_eq!(window.fsyncs(), 5);
        }
    }

    #[test]
    fn threads_share_one_vfs_and_every_sync_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = CountingVfs::register(&unique("threads")).unwrap();
        let before = vfs.counts();
        std::thread::scope(|scope| {
            for index in 0..4 {
                let path = dir.path().join(format!("t{index}.db"));
                scope.spawn(move || {
                    let conn = open(&path, &vfs, "FULL");
                    insert(&conn, 5);
                });
            }
        });
        let window = vfs.counts() - before;
        // Per thread: the table's creation, 5 commits, the WAL header and the
        // checkpoint on close. A fresh file switches to WAL through a rollback
        // journal, then creates the WAL: two new files, two directory syncs.
        assert!(window.syncs >= 4 * 5, "{window:?}");
        assert_eq!(window.dir_syncs, 4 * 2, "{window:?}");
    }

    #[test]
    fn names_are_unique_and_nul_free() {
        let name = unique("taken");
        CountingVfs::register(&name).unwrap();
        assert!(matches!(CountingVfs::register(&name), Err(VfsError::NameTaken(_))));
        assert!(matches!(CountingVfs::register("a\0b"), Err(VfsError::BadName(_))));
        assert!(matches!(
            CountingVfs::register(&default_vfs_name()),
            Err(VfsError::NameTaken(_))
        ));
    }

    #[test]
    fn a_failed_open_is_reported_and_not_counted() {
        let vfs = CountingVfs::register(&unique("missing")).unwrap();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE; // no CREATE
        let result = Connection::open_with_flags_and_vfs("/nonexistent/dir/x.db", flags, vfs.name());
        assert!(result.is_err());
        assert_eq!(vfs.counts().opens, 0);
    }
}
