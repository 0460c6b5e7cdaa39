//! The few SQLite C types and codes a VFS needs, written out from
//! `sqlite3.h` (their layout has been stable since SQLite 3.7.17).
//!
//! Why not `libsqlite3-sys`: this crate is compiled twice, into crashsim
//! (which links its bundled SQLite) and into a loadable extension that runs
//! inside another program's SQLite, whatever its version. The extension
//! must call that SQLite's functions through the `sqlite3_api_routines`
//! table it is handed, and must not link a SQLite of its own. With no
//! dependency at all, the extension builds with a bare `rustc` (crashsim's
//! build script does that), and both builds share every line of the disk
//! model. crashsim's tests compare these definitions with rusqlite's.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_uint, c_void};

pub type sqlite3_filename = *const c_char;
pub type sqlite3_syscall_ptr = Option<unsafe extern "C" fn()>;

#[repr(C)]
pub struct sqlite3_file {
    pub pMethods: *const sqlite3_io_methods,
}

#[repr(C)]
pub struct sqlite3_io_methods {
    pub iVersion: c_int,
    pub xClose: Option<unsafe extern "C" fn(*mut sqlite3_file) -> c_int>,
    pub xRead: Option<unsafe extern "C" fn(*mut sqlite3_file, *mut c_void, c_int, i64) -> c_int>,
    pub xWrite: Option<unsafe extern "C" fn(*mut sqlite3_file, *const c_void, c_int, i64) -> c_int>,
    pub xTruncate: Option<unsafe extern "C" fn(*mut sqlite3_file, i64) -> c_int>,
    pub xSync: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xFileSize: Option<unsafe extern "C" fn(*mut sqlite3_file, *mut i64) -> c_int>,
    pub xLock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xUnlock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xCheckReservedLock: Option<unsafe extern "C" fn(*mut sqlite3_file, *mut c_int) -> c_int>,
    pub xFileControl: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int, *mut c_void) -> c_int>,
    pub xSectorSize: Option<unsafe extern "C" fn(*mut sqlite3_file) -> c_int>,
    pub xDeviceCharacteristics: Option<unsafe extern "C" fn(*mut sqlite3_file) -> c_int>,
    pub xShmMap: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int, c_int, c_int, *mut *mut c_void) -> c_int>,
    pub xShmLock: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int, c_int, c_int) -> c_int>,
    pub xShmBarrier: Option<unsafe extern "C" fn(*mut sqlite3_file)>,
    pub xShmUnmap: Option<unsafe extern "C" fn(*mut sqlite3_file, c_int) -> c_int>,
    pub xFetch: Option<unsafe extern "C" fn(*mut sqlite3_file, i64, c_int, *mut *mut c_void) -> c_int>,
    pub xUnfetch: Option<unsafe extern "C" fn(*mut sqlite3_file, i64, *mut c_void) -> c_int>,
}

/// What `xDlSym` returns: a function pointer of no particular type.
pub type DlSym = unsafe extern "C" fn(*mut sqlite3_vfs, *mut c_void, *const c_char);

#[repr(C)]
pub struct sqlite3_vfs {
    pub iVersion: c_int,
    pub szOsFile: c_int,
    pub mxPathname: c_int,
    pub pNext: *mut sqlite3_vfs,
    pub zName: *const c_char,
    pub pAppData: *mut c_void,
    pub xOpen:
        Option<unsafe extern "C" fn(*mut sqlite3_vfs, sqlite3_filename, *mut sqlite3_file, c_int, *mut c_int) -> c_int>,
    pub xDelete: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int) -> c_int>,
    pub xAccess: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int, *mut c_int) -> c_int>,
    pub xFullPathname: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, c_int, *mut c_char) -> c_int>,
    pub xDlOpen: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char) -> *mut c_void>,
    pub xDlError: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char)>,
    pub xDlSym: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut c_void, *const c_char) -> Option<DlSym>>,
    pub xDlClose: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut c_void)>,
    pub xRandomness: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char) -> c_int>,
    pub xSleep: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int>,
    pub xCurrentTime: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut f64) -> c_int>,
    pub xGetLastError: Option<unsafe extern "C" fn(*mut sqlite3_vfs, c_int, *mut c_char) -> c_int>,
    pub xCurrentTimeInt64: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *mut i64) -> c_int>,
    pub xSetSystemCall: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char, sqlite3_syscall_ptr) -> c_int>,
    pub xGetSystemCall: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char) -> sqlite3_syscall_ptr>,
    pub xNextSystemCall: Option<unsafe extern "C" fn(*mut sqlite3_vfs, *const c_char) -> *const c_char>,
}

/// A database connection, only ever handled by pointer.
pub enum sqlite3 {}

/// `sqlite3_exec`'s row callback.
pub type ExecCallback = unsafe extern "C" fn(*mut c_void, c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;

/// An auto-extension's entry point, as SQLite calls it on every new connection.
pub type AutoExtension = unsafe extern "C" fn(*mut sqlite3, *mut *mut c_char, *const c_void) -> c_int;

/// The SQLite functions the shim calls: linked ones in crashsim, the
/// host's (from `sqlite3_api_routines`) in the extension.
#[derive(Clone, Copy)]
pub struct Api {
    pub vfs_find: unsafe extern "C" fn(*const c_char) -> *mut sqlite3_vfs,
    pub vfs_register: unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int,
    pub vfs_unregister: unsafe extern "C" fn(*mut sqlite3_vfs) -> c_int,
    /// For a weaker default `synchronous` (`shim::default_level`); `None`
    /// where the host lacks them, and then the default stays SQLite's.
    pub connections: Option<ConnectionApi>,
}

/// The connection-level functions behind a weaker default `synchronous`.
#[derive(Clone, Copy)]
pub struct ConnectionApi {
    /// `sqlite3_auto_extension`, whose argument is really an `AutoExtension`.
    pub auto_extension: unsafe extern "C" fn(Option<unsafe extern "C" fn()>) -> c_int,
    pub file_control: unsafe extern "C" fn(*mut sqlite3, *const c_char, c_int, *mut c_void) -> c_int,
    pub exec:
        unsafe extern "C" fn(*mut sqlite3, *const c_char, Option<ExecCallback>, *mut c_void, *mut *mut c_char) -> c_int,
    /// `sqlite3_trace_v2` (SQLite 3.14 on), for the statements a suspension
    /// names (`statements`); `None` where the host lacks it.
    pub trace_v2: Option<unsafe extern "C" fn(*mut sqlite3, c_uint, Option<TraceCallback>, *mut c_void) -> c_int>,
}

/// A `sqlite3_trace_v2` callback: the event's code, the context, and its
/// two arguments (for `SQLITE_TRACE_STMT`, the statement and its SQL).
pub type TraceCallback = unsafe extern "C" fn(c_uint, *mut c_void, *mut c_void, *mut c_void) -> c_int;

/// `sqlite3_trace_v2`'s event for a statement starting.
pub const SQLITE_TRACE_STMT: c_uint = 0x01;

pub const SQLITE_OK: c_int = 0;
pub const SQLITE_BUSY: c_int = 5;
pub const SQLITE_ERROR: c_int = 1;
pub const SQLITE_IOERR: c_int = 10;
pub const SQLITE_NOTFOUND: c_int = 12;
pub const SQLITE_CANTOPEN: c_int = 14;
/// An extension's entry point asks to stay loaded after its connection closes.
pub const SQLITE_OK_LOAD_PERMANENTLY: c_int = 256;

pub const SQLITE_IOERR_READ: c_int = SQLITE_IOERR | (1 << 8);
pub const SQLITE_IOERR_SHORT_READ: c_int = SQLITE_IOERR | (2 << 8);
pub const SQLITE_IOERR_WRITE: c_int = SQLITE_IOERR | (3 << 8);
pub const SQLITE_IOERR_FSYNC: c_int = SQLITE_IOERR | (4 << 8);
pub const SQLITE_IOERR_TRUNCATE: c_int = SQLITE_IOERR | (6 << 8);
pub const SQLITE_IOERR_FSTAT: c_int = SQLITE_IOERR | (7 << 8);
pub const SQLITE_IOERR_UNLOCK: c_int = SQLITE_IOERR | (8 << 8);
pub const SQLITE_IOERR_DELETE: c_int = SQLITE_IOERR | (10 << 8);
pub const SQLITE_IOERR_ACCESS: c_int = SQLITE_IOERR | (13 << 8);
pub const SQLITE_IOERR_CHECKRESERVEDLOCK: c_int = SQLITE_IOERR | (14 << 8);
pub const SQLITE_IOERR_LOCK: c_int = SQLITE_IOERR | (15 << 8);
pub const SQLITE_IOERR_SHMLOCK: c_int = SQLITE_IOERR | (20 << 8);
pub const SQLITE_IOERR_SHMMAP: c_int = SQLITE_IOERR | (21 << 8);

pub const SQLITE_OPEN_CREATE: c_int = 0x0000_0004;
pub const SQLITE_OPEN_MAIN_DB: c_int = 0x0000_0100;
pub const SQLITE_OPEN_MAIN_JOURNAL: c_int = 0x0000_0800;
pub const SQLITE_OPEN_SUPER_JOURNAL: c_int = 0x0000_4000;
pub const SQLITE_OPEN_WAL: c_int = 0x0008_0000;

pub const SQLITE_ACCESS_EXISTS: c_int = 0;
pub const SQLITE_FCNTL_SIZE_HINT: c_int = 5;
pub const SQLITE_FCNTL_VFS_POINTER: c_int = 27;
pub const SQLITE_IOCAP_POWERSAFE_OVERWRITE: c_int = 0x0000_1000;

/// Slots (pointer-sized, from 0) of `struct sqlite3_api_routines` in
/// `sqlite3ext.h`; the table only ever grows at its end.
pub mod api_slot {
    pub const EXEC: usize = 55;
    pub const LIBVERSION_NUMBER: usize = 67;
    pub const FILE_CONTROL: usize = 127;
    pub const VFS_FIND: usize = 141;
    pub const VFS_REGISTER: usize = 142;
    pub const VFS_UNREGISTER: usize = 143;
    pub const AUTO_EXTENSION: usize = 192;
    pub const TRACE_V2: usize = 214;
}
