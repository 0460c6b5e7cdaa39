//! Mutants of the backup (mistake 16, crashsim's addition to PROTOCOL.md
//! §7, from its §6: "copying the main `.db` file alone is an inconsistent
//! backup").
//!
//! `backup_db_file_only` copies the bytes of the store's main database
//! file, as an operator's `cp store.db backup.db` would, through the run's
//! VFS (so it reads what the file holds, in memory or on disk, and a power
//! cut may fall inside it) and with no lock: in WAL mode the commits since
//! the last checkpoint live in `-wal`, which it leaves behind.
//!
//! `backup_file_set_unlocked` copies the whole file set, `-wal` first, then
//! (a part later, while the actors go on) checkpoints and copies the main
//! file, as a script of `cp` commands would with no read transaction held
//! across them: the main file then holds pages newer than the `-wal` copy
//! that SQLite lays over them when the backup is opened. A torn state.

use std::ffi::{CString, c_int, c_void};
use std::path::{Path, PathBuf};

use rusqlite::ffi;

use crate::store::{Backed, Result, StoreError, SystemConfig, connection};

/// How a mutant's `System` takes a backup (`System::backup`): one call
/// per part, from 0.
pub type Method = fn(&SystemConfig, &Path, u32) -> Result<Backed>;

/// The reference's online backup (SQLite's backup API), in one part.
pub fn online(config: &SystemConfig, dest: &Path, _part: u32) -> Result<Backed> {
    crate::store::backup::backup(config, dest).map(|()| Backed::Complete)
}

/// `cp store.db dest`, in one part.
pub fn db_file_only(config: &SystemConfig, dest: &Path, _part: u32) -> Result<Backed> {
    copy(config, &config.store_path, dest)?;
    Ok(Backed::Complete)
}

/// Part 0: `cp store.db-wal dest-wal` (if there is one). Part 1: a
/// checkpoint on a connection of its own (`PASSIVE`, as a store's own
/// maintenance or SQLite's auto-checkpoint runs one), then `cp store.db
/// dest`.
pub fn file_set_unlocked(config: &SystemConfig, dest: &Path, part: u32) -> Result<Backed> {
    if part == 0 {
        let wal = with_suffix(&config.store_path, "-wal");
        match copy(config, &wal, &with_suffix(dest, "-wal")) {
            Ok(()) => {}
            // No `-wal` (rollback journal, or none yet): nothing to copy.
            Err(StoreError::Sqlite(error)) if error.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen) => {}
            Err(error) => return Err(error),
        }
        return Ok(Backed::More);
    }
    let source = connection::open(&config.store_path, &config.store_sqlite)?;
    source.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    drop(source);
    copy(config, &config.store_path, dest)?;
    Ok(Backed::Complete)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// `cp from to` through the VFS `config.store_sqlite.vfs` names.
fn copy(config: &SystemConfig, from: &Path, to: &Path) -> Result<()> {
    let vfs_name = config
        .store_sqlite
        .vfs
        .map(CString::new)
        .transpose()
        .map_err(|error| StoreError::Broken(error.to_string()))?;
    // SAFETY: a VFS found by name stays registered for the run; each file
    // below is opened, used and closed within this call.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(vfs_name.as_ref().map_or(std::ptr::null(), |name| name.as_ptr()));
        if vfs.is_null() {
            return Err(StoreError::Broken("no such VFS".to_string()));
        }
        let source = RawFile::open(vfs, from, ffi::SQLITE_OPEN_READONLY)?;
        let target = RawFile::open(vfs, to, ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE)?;
        let mut size: ffi::sqlite3_int64 = 0;
        check(source.method(|io| io.xFileSize)?(source.file(), &mut size))?;
        let mut buffer = vec![0u8; 4096];
        let mut offset: ffi::sqlite3_int64 = 0;
        while offset < size {
            let length = (size - offset).min(buffer.len() as i64) as c_int;
            let buf = buffer.as_mut_ptr().cast::<c_void>();
            check(source.method(|io| io.xRead)?(source.file(), buf, length, offset))?;
            check(target.method(|io| io.xWrite)?(target.file(), buf, length, offset))?;
            offset += i64::from(length);
        }
        check(target.method(|io| io.xSync)?(target.file(), ffi::SQLITE_SYNC_FULL))?;
        Ok(())
    }
}

fn check(code: c_int) -> Result<()> {
    match code {
        ffi::SQLITE_OK => Ok(()),
        code => Err(StoreError::from(rusqlite::Error::SqliteFailure(
            ffi::Error::new(code),
            None,
        ))),
    }
}

/// One file opened straight through a VFS, as the main database (no pager,
/// no lock), closed on drop.
struct RawFile {
    /// `szOsFile` bytes, 8-byte aligned, as SQLite allocates them.
    storage: Vec<u64>,
    /// Must outlive the open file (`xOpen`'s contract).
    name: ffi::sqlite3_filename,
    open: bool,
}

impl RawFile {
    unsafe fn open(vfs: *mut ffi::sqlite3_vfs, path: &Path, flags: c_int) -> Result<RawFile> {
        let path = CString::new(path.display().to_string()).map_err(|error| StoreError::Broken(error.to_string()))?;
        // SAFETY: the caller's VFS is registered; the name SQLite builds is
        // freed on drop, after the close.
        unsafe {
            let size = usize::try_from((*vfs).szOsFile).unwrap_or(0);
            let name = ffi::sqlite3_create_filename(path.as_ptr(), c"".as_ptr(), c"".as_ptr(), 0, std::ptr::null_mut());
            let mut file = RawFile {
                storage: vec![0; size.div_ceil(8).max(1)],
                name,
                open: false,
            };
            let x_open = (*vfs)
                .xOpen
                .ok_or_else(|| StoreError::Broken("a VFS without xOpen".to_string()))?;
            let mut out: c_int = 0;
            check(x_open(
                vfs,
                name,
                file.file(),
                flags | ffi::SQLITE_OPEN_MAIN_DB,
                &mut out,
            ))?;
            file.open = true;
            Ok(file)
        }
    }

    fn file(&self) -> *mut ffi::sqlite3_file {
        self.storage.as_ptr().cast_mut().cast()
    }

    /// One of the open file's methods.
    unsafe fn method<T>(&self, pick: impl FnOnce(&ffi::sqlite3_io_methods) -> Option<T>) -> Result<T> {
        // SAFETY: an open file's `pMethods` points at its VFS's methods.
        unsafe {
            let methods = (*self.file()).pMethods;
            methods
                .as_ref()
                .and_then(pick)
                .ok_or_else(|| StoreError::Broken("a file without that method".to_string()))
        }
    }
}

impl Drop for RawFile {
    fn drop(&mut self) {
        // SAFETY: closes a file this struct opened, then frees its name.
        unsafe {
            if self.open
                && let Ok(close) = self.method(|io| io.xClose)
            {
                close(self.file());
            }
            ffi::sqlite3_free_filename(self.name);
        }
    }
}
