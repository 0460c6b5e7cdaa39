//! The forwarding VFS layer (`crashsim_vfs::shim`) bound to the SQLite
//! crashsim links (rusqlite's bundled one): every VFS crashsim registers in
//! its own process goes through here.

use std::ffi::{c_char, c_int, c_void};

use crashsim_vfs::ffi::{self as own, Api, ConnectionApi, sqlite3_vfs};
use rusqlite::ffi;

pub use crashsim_vfs::shim::{File, Hooks, Registered, VfsError, unregister};

unsafe extern "C" fn vfs_find(name: *const c_char) -> *mut sqlite3_vfs {
    // SAFETY: the same function; the two `sqlite3_vfs` types are one C struct.
    unsafe { ffi::sqlite3_vfs_find(name).cast() }
}

unsafe extern "C" fn vfs_register(vfs: *mut sqlite3_vfs, make_default: c_int) -> c_int {
    // SAFETY: as `vfs_find`.
    unsafe { ffi::sqlite3_vfs_register(vfs.cast(), make_default) }
}

unsafe extern "C" fn vfs_unregister(vfs: *mut sqlite3_vfs) -> c_int {
    // SAFETY: as `vfs_find`.
    unsafe { ffi::sqlite3_vfs_unregister(vfs.cast()) }
}

unsafe extern "C" fn auto_extension(entry: Option<unsafe extern "C" fn()>) -> c_int {
    type Entry = unsafe extern "C" fn(*mut ffi::sqlite3, *mut *mut c_char, *const ffi::sqlite3_api_routines) -> c_int;
    // SAFETY: the entry is an `own::AutoExtension` passed as the C API's
    // `void(*)(void)`; rusqlite declares the type SQLite calls it with.
    unsafe {
        ffi::sqlite3_auto_extension(entry.map(|entry| std::mem::transmute::<unsafe extern "C" fn(), Entry>(entry)))
    }
}

unsafe extern "C" fn file_control(
    db: *mut own::sqlite3,
    database: *const c_char,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: `own::sqlite3` is the same opaque connection.
    unsafe { ffi::sqlite3_file_control(db.cast(), database, op, arg) }
}

unsafe extern "C" fn exec(
    db: *mut own::sqlite3,
    sql: *const c_char,
    callback: Option<own::ExecCallback>,
    argument: *mut c_void,
    error: *mut *mut c_char,
) -> c_int {
    // SAFETY: as `file_control`; the callback type is the same C type.
    unsafe { ffi::sqlite3_exec(db.cast(), sql, callback, argument, error) }
}

unsafe extern "C" fn trace_v2(
    db: *mut own::sqlite3,
    mask: std::ffi::c_uint,
    callback: Option<own::TraceCallback>,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `own::sqlite3` is the same opaque connection, and the
    // callback the same C type rusqlite declares.
    unsafe { ffi::sqlite3_trace_v2(db.cast(), mask, callback, context) }
}

/// The linked SQLite's VFS registry, and what a weaker default
/// `synchronous` needs (`crashsim_vfs::shim::default_level`).
pub fn api() -> Api {
    Api {
        vfs_find,
        vfs_register,
        vfs_unregister,
        connections: Some(ConnectionApi {
            auto_extension,
            file_control,
            exec,
            trace_v2: Some(trace_v2),
        }),
    }
}

/// Registers a VFS called `name` that forwards to the default VFS (without
/// becoming the default) and calls `hooks`. Permanent: see
/// `crashsim_vfs::shim`.
pub fn register(name: &str, hooks: Box<dyn Hooks>) -> Result<&'static Registered, VfsError> {
    crashsim_vfs::shim::register(api(), name, hooks, false)
}

/// The default VFS's name, without registering anything.
pub fn default_vfs_name() -> String {
    crashsim_vfs::shim::default_vfs_name(&api())
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use crashsim_vfs::ffi as own;
    use rusqlite::ffi;

    /// The crate's hand-written C types are rusqlite's, byte for byte.
    #[test]
    fn the_hand_written_ffi_matches_sqlite_h() {
        assert_eq!(size_of::<own::sqlite3_vfs>(), size_of::<ffi::sqlite3_vfs>());
        assert_eq!(
            size_of::<own::sqlite3_io_methods>(),
            size_of::<ffi::sqlite3_io_methods>()
        );
        assert_eq!(size_of::<own::sqlite3_file>(), size_of::<ffi::sqlite3_file>());
        assert_eq!(
            offset_of!(own::sqlite3_vfs, xNextSystemCall),
            offset_of!(ffi::sqlite3_vfs, xNextSystemCall)
        );
        assert_eq!(
            offset_of!(own::sqlite3_io_methods, xUnfetch),
            offset_of!(ffi::sqlite3_io_methods, xUnfetch)
        );
        let codes = [
            (own::SQLITE_OK, ffi::SQLITE_OK),
            (own::SQLITE_ERROR, ffi::SQLITE_ERROR),
            (own::SQLITE_NOTFOUND, ffi::SQLITE_NOTFOUND),
            (own::SQLITE_CANTOPEN, ffi::SQLITE_CANTOPEN),
            (own::SQLITE_OK_LOAD_PERMANENTLY, ffi::SQLITE_OK_LOAD_PERMANENTLY),
            (own::SQLITE_IOERR_READ, ffi::SQLITE_IOERR_READ),
            (own::SQLITE_IOERR_SHORT_READ, ffi::SQLITE_IOERR_SHORT_READ),
            (own::SQLITE_IOERR_WRITE, ffi::SQLITE_IOERR_WRITE),
            (own::SQLITE_IOERR_FSYNC, ffi::SQLITE_IOERR_FSYNC),
            (own::SQLITE_IOERR_TRUNCATE, ffi::SQLITE_IOERR_TRUNCATE),
            (own::SQLITE_IOERR_FSTAT, ffi::SQLITE_IOERR_FSTAT),
            (own::SQLITE_IOERR_UNLOCK, ffi::SQLITE_IOERR_UNLOCK),
            (own::SQLITE_IOERR_DELETE, ffi::SQLITE_IOERR_DELETE),
            (own::SQLITE_IOERR_ACCESS, ffi::SQLITE_IOERR_ACCESS),
            (own::SQLITE_IOERR_CHECKRESERVEDLOCK, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK),
            (own::SQLITE_IOERR_LOCK, ffi::SQLITE_IOERR_LOCK),
            (own::SQLITE_IOERR_SHMLOCK, ffi::SQLITE_IOERR_SHMLOCK),
            (own::SQLITE_IOERR_SHMMAP, ffi::SQLITE_IOERR_SHMMAP),
            (own::SQLITE_OPEN_CREATE, ffi::SQLITE_OPEN_CREATE),
            (own::SQLITE_OPEN_MAIN_DB, ffi::SQLITE_OPEN_MAIN_DB),
            (own::SQLITE_OPEN_MAIN_JOURNAL, ffi::SQLITE_OPEN_MAIN_JOURNAL),
            (own::SQLITE_OPEN_SUPER_JOURNAL, ffi::SQLITE_OPEN_SUPER_JOURNAL),
            (own::SQLITE_OPEN_WAL, ffi::SQLITE_OPEN_WAL),
            (own::SQLITE_ACCESS_EXISTS, ffi::SQLITE_ACCESS_EXISTS),
            (own::SQLITE_FCNTL_SIZE_HINT, ffi::SQLITE_FCNTL_SIZE_HINT),
            (
                own::SQLITE_IOCAP_POWERSAFE_OVERWRITE,
                ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE,
            ),
        ];
        for (own, theirs) in codes {
            assert_eq!(own, theirs);
        }
    }
}
