//! crashsim's crash VFS as a SQLite loadable extension: loaded into an
//! outside store's own SQLite (Python's `sqlite3`, Go, Node, Java, the
//! `sqlite3` shell), it registers itself as that process's **default** VFS,
//! so the store's own `connect(path)` goes through it unchanged.
//!
//! It finds the seed's shared state through the environment crashsim starts
//! every adapter process with: `CRASHSIM_VFS_STATE` names a directory
//! holding the control region (`control`: points, the armed cut, the
//! simulated clock) and the change log (`log`). With the control region's
//! `RECORD` flag it logs every change for crashsim's disk model and fails
//! every persistence point from the armed cut on; without it, it only
//! answers the clock and counts.
//!
//! The entry point is `sqlite3_crashsimvfs_init` (the name SQLite derives
//! from `libcrashsim_vfs.so`), also exported as `sqlite3_extension_init`.
//! It returns `SQLITE_OK_LOAD_PERMANENTLY`: the VFS must outlive the
//! connection that loaded it. The host's SQLite functions come from the
//! `sqlite3_api_routines` table it is handed; this code links no SQLite.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use crate::control::Control;
use crate::crash::{CrashHooks, Sink, splitmix64};
use crate::ffi::{self, Api, api_slot};
use crate::log;
use crate::shim::{self, Registered};

/// The environment variable naming the seed's shared state directory.
pub const ENV_STATE: &str = "CRASHSIM_VFS_STATE";
/// The control region's file in that directory.
pub const CONTROL_FILE: &str = "control";
/// The change log's file in that directory.
pub const LOG_FILE: &str = "log";
/// The name the extension's VFS registers under (and becomes the default).
pub const VFS_NAME: &str = "crashsim";

/// Whose process a logging crash VFS is registered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Process {
    /// A store's (the extension, `crashsim serve`): the VFS becomes the
    /// default, counts itself as a load of the extension (evidence for
    /// crashsim), seeds SQLite's randomness, and the process dies at an
    /// armed kill.
    Store,
    /// crashsim's own, for the roles its reference serves: by name only,
    /// and it never dies.
    Crashsim,
}

/// Registers a crash VFS called `name` that logs to the state in `dir`
/// (which crashsim laid out), forwarding to `api`'s default VFS, in
/// `process`.
pub fn register_logging(
    api: Api,
    dir: &Path,
    name: &str,
    process: Process,
) -> Result<(&'static Control, &'static Registered), String> {
    let control_path = dir.join(CONTROL_FILE);
    let control =
        Control::open(&control_path).map_err(|error| format!("mapping {}: {error}", control_path.display()))?;
    let log_path = dir.join(LOG_FILE);
    let writer = log::Writer::open(&log_path).map_err(|error| format!("opening {}: {error}", log_path.display()))?;
    let store = process == Process::Store;
    let randomness = store.then(|| {
        let index = control.loads.fetch_add(1, Ordering::AcqRel);
        let mut stream = control.seed.load(Ordering::Acquire) ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d);
        Mutex::new(splitmix64(&mut stream))
    });
    let hooks = CrashHooks {
        control,
        sink: Sink::Log(writer),
        inner_is_unix: shim::default_vfs_name(&api).starts_with("unix"),
        randomness,
        may_kill: store,
        park_dir: store.then(|| dir.to_path_buf()),
    };
    let registered = shim::register(api, name, Box::new(hooks), store).map_err(|error| error.to_string())?;
    Ok((control, registered))
}

/// What loading in this process came to (it is done once).
static LOADED: OnceLock<Result<(), String>> = OnceLock::new();

/// The host's functions, from its `sqlite3_api_routines`.
///
/// # Safety
/// `routines` is the table SQLite hands an extension's entry point.
unsafe fn host_api(routines: *const c_void) -> Option<(Api, c_int)> {
    type Slot = Option<unsafe extern "C" fn()>;
    if routines.is_null() {
        return None;
    }
    let slots = routines as *const Slot;
    // SAFETY: the table is an array of function pointers at least as long
    // as the slots read (it only grows), each with the type `sqlite3ext.h`
    // gives it; a null slot is `None`.
    unsafe {
        let slot = |index: usize| *slots.add(index);
        let version: unsafe extern "C" fn() -> c_int = std::mem::transmute(slot(api_slot::LIBVERSION_NUMBER)?);
        let connections = match (
            slot(api_slot::AUTO_EXTENSION),
            slot(api_slot::FILE_CONTROL),
            slot(api_slot::EXEC),
        ) {
            (Some(auto_extension), Some(file_control), Some(exec)) => Some(ffi::ConnectionApi {
                auto_extension: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(Option<unsafe extern "C" fn()>) -> c_int,
                >(auto_extension),
                file_control: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(*mut ffi::sqlite3, *const c_char, c_int, *mut c_void) -> c_int,
                >(file_control),
                exec: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(
                        *mut ffi::sqlite3,
                        *const c_char,
                        Option<ffi::ExecCallback>,
                        *mut c_void,
                        *mut *mut c_char,
                    ) -> c_int,
                >(exec),
                // The table is as long as the host's version made it: the
                // slot exists from 3.14 on.
                trace_v2: (version() >= 3_014_000)
                    .then(|| slot(api_slot::TRACE_V2))
                    .flatten()
                    .map(|trace_v2| {
                        std::mem::transmute::<
                            unsafe extern "C" fn(),
                            unsafe extern "C" fn(
                                *mut ffi::sqlite3,
                                std::ffi::c_uint,
                                Option<ffi::TraceCallback>,
                                *mut c_void,
                            ) -> c_int,
                        >(trace_v2)
                    }),
            }),
            _ => None,
        };
        Some((
            Api {
                vfs_find: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(*const c_char) -> *mut ffi::sqlite3_vfs,
                >(slot(api_slot::VFS_FIND)?),
                vfs_register: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(*mut ffi::sqlite3_vfs, c_int) -> c_int,
                >(slot(api_slot::VFS_REGISTER)?),
                vfs_unregister: std::mem::transmute::<
                    unsafe extern "C" fn(),
                    unsafe extern "C" fn(*mut ffi::sqlite3_vfs) -> c_int,
                >(slot(api_slot::VFS_UNREGISTER)?),
                connections,
            },
            version(),
        ))
    }
}

/// The extension's entry point.
///
/// # Safety
/// Called by SQLite's `sqlite3_load_extension` with its routines table.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sqlite3_crashsimvfs_init(
    _db: *mut c_void,
    _error: *mut *mut c_char,
    routines: *const c_void,
) -> c_int {
    let outcome = LOADED.get_or_init(|| {
        // SAFETY: as this function's contract.
        let (api, version) = unsafe { host_api(routines) }.ok_or("SQLite handed no routines table")?;
        // 3.7.17: the first with version-3 VFS and file methods.
        if version < 3_007_017 {
            return Err(format!("SQLite {version} is older than 3.7.17"));
        }
        let dir = std::env::var_os(ENV_STATE).ok_or_else(|| format!("{ENV_STATE} is not set"))?;
        let (control, _) = register_logging(api, Path::new(&dir), VFS_NAME, Process::Store)?;
        control.sqlite_version.store(version as u64, Ordering::Release);
        Ok(())
    });
    match outcome {
        Ok(()) => ffi::SQLITE_OK_LOAD_PERMANENTLY,
        Err(message) => {
            // The host's error string needs its allocator; stderr is the
            // adapter's log, which crashsim keeps.
            eprintln!("crashsim VFS extension: {message}");
            ffi::SQLITE_ERROR
        }
    }
}

/// The same entry point under SQLite's default name.
///
/// # Safety
/// As `sqlite3_crashsimvfs_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sqlite3_extension_init(
    db: *mut c_void,
    error: *mut *mut c_char,
    routines: *const c_void,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { sqlite3_crashsimvfs_init(db, error, routines) }
}
