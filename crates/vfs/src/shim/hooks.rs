//! What a shim VFS does around the calls it forwards: the `Hooks` a VFS
//! (counting, crash, clock) implements, and the `File` they see.

use std::ffi::c_int;

use crate::memory::Images;

/// A file as the hooks see it.
pub struct File<'a> {
    /// The path SQLite opened (absolute); `None` for temporary files.
    pub path: Option<&'a str>,
    /// The flags of `xOpen` (`SQLITE_OPEN_WAL`, `SQLITE_OPEN_CREATE`, …).
    pub flags: c_int,
    /// Successful `xSync` calls on this handle before the current call.
    pub syncs: u64,
}

/// What a VFS does around the forwarded calls. Every method has a default
/// that changes nothing; a pre-call hook returning `Err(code)` refuses the
/// call, and SQLite sees `code` instead of the inner VFS's answer.
pub trait Hooks: Send + Sync + 'static {
    /// A file was opened successfully.
    fn opened(&self, file: &File<'_>) {
        let _ = file;
    }
    /// Before `xWrite` of `data` at `offset`.
    fn write(&self, file: &File<'_>, offset: i64, data: &[u8]) -> Result<(), c_int> {
        let _ = (file, offset, data);
        Ok(())
    }
    /// Before `xTruncate` to `size`.
    fn truncate(&self, file: &File<'_>, size: i64) -> Result<(), c_int> {
        let _ = (file, size);
        Ok(())
    }
    /// Before `xSync`.
    fn sync(&self, file: &File<'_>, flags: c_int) -> Result<(), c_int> {
        let _ = (file, flags);
        Ok(())
    }
    /// After a successful `xSync`.
    fn synced(&self, file: &File<'_>, flags: c_int) {
        let _ = (file, flags);
    }
    /// Before `xDelete` (`sync_dir`: SQLite asked for the directory to be synced).
    fn delete(&self, path: &str, sync_dir: bool) -> Result<(), c_int> {
        let _ = (path, sync_dir);
        Ok(())
    }
    /// After a successful `xDelete`.
    fn deleted(&self, path: &str, sync_dir: bool) {
        let _ = (path, sync_dir);
    }
    /// Before `xLock` to `level` (a scheduling point: may park).
    fn lock(&self, file: &File<'_>, level: c_int) {
        let _ = (file, level);
    }
    /// `xLock` to `level` was answered `SQLITE_BUSY` (a wait for a lock).
    fn lock_busy(&self, file: &File<'_>, level: c_int) {
        let _ = (file, level);
    }
    /// Before `xUnlock` to `level`.
    fn unlock(&self, file: &File<'_>, level: c_int) {
        let _ = (file, level);
    }
    /// `xShmLock(offset, n, flags)` was answered `SQLITE_BUSY`.
    fn shm_lock_busy(&self, offset: c_int, n: c_int, flags: c_int) {
        let _ = (offset, n, flags);
    }
    /// Before `xShmLock(offset, n, flags)`.
    fn shm_lock(&self, offset: c_int, n: c_int, flags: c_int) {
        let _ = (offset, n, flags);
    }
    /// `xSleep` for `microseconds`: `Some(answer)` answers it without
    /// sleeping; `None` sleeps in the inner VFS.
    fn sleep(&self, microseconds: c_int) -> Option<c_int> {
        let _ = microseconds;
        None
    }
    /// What the file claims about the device, given what the inner file claims.
    fn device_characteristics(&self, inner: c_int) -> c_int {
        inner
    }
    /// The current time in milliseconds since the Julian epoch (what
    /// `xCurrentTimeInt64` answers), or `None` for the inner VFS's clock.
    fn current_time_ms(&self) -> Option<i64> {
        None
    }
    /// Fills `out` with SQLite's randomness (`xRandomness`) and says so, or
    /// `false`: the inner VFS's.
    fn randomness(&self, out: &mut [u8]) -> bool {
        let _ = out;
        false
    }
    /// Where the bytes of databases, WALs and journals live instead of their
    /// real files (`memory`), or `None`: in the real files.
    fn images(&self) -> Option<&Images> {
        None
    }
    /// The `synchronous` level a new connection through this VFS starts at
    /// instead of SQLite's compiled-in default (`default_level`), if any.
    fn default_synchronous(&self) -> Option<u8> {
        None
    }
    /// A new connection was set to `default_synchronous`.
    fn default_applied(&self) {}
    /// The control region whose statement ring a new connection through
    /// this VFS records its statements in (`statements`), if it does.
    fn statements(&self) -> Option<&'static crate::control::Control> {
        None
    }
}
