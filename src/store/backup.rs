//! Online backups of a store with the reference schema (issue 40): SQLite's
//! online backup API, on connections of their own, while the store's other
//! connections work. The backup reads one consistent snapshot of the
//! database (the WAL's committed frames included) under a read transaction,
//! and writes it into a new file through the same VFS (so a power cut can
//! fall inside it), with the store's own settings.
//!
//! What is judged is the file it leaves (`dump_backup`, then I11 in
//! `check::backups`), never this code's word.

use std::path::Path;

use rusqlite::backup::{Backup, StepResult};

use super::{Result, Snapshot, StoreError, SystemConfig, connection};

/// Copies the store's database at `config.store_path` into `dest`, which
/// must not exist yet; returns once the copy is complete and synced as the
/// store's settings sync a commit. A lock held by another connection that
/// the copy cannot pass is `StoreError::Busy`: the caller tries again later.
pub fn backup(config: &SystemConfig, dest: &Path) -> Result<()> {
    let source = connection::open(&config.store_path, &config.store_sqlite)?;
    let mut target = connection::open(dest, &config.store_sqlite)?;
    let copy = Backup::new(&source, &mut target)?;
    match copy.step(-1)? {
        StepResult::Done => Ok(()),
        StepResult::Busy | StepResult::Locked => Err(StoreError::Busy),
        // A step of every page (-1) either finishes or stops at a lock.
        StepResult::More => Err(StoreError::Broken(
            "the backup stopped with pages left to copy".to_string(),
        )),
        other => Err(StoreError::Broken(format!("the backup answered {other:?}"))),
    }
}

/// The store's part of the canonical dump (`events`, `outbox`, `timers`,
/// `store_integrity`) as the backup at `dest` holds it, read through the
/// run's VFS. A file too damaged to read is a dump that says so (judged,
/// I11), never an error of the run.
pub fn dump_backup(config: &SystemConfig, dest: &Path) -> Result<Snapshot> {
    match Snapshot::read_store(dest, config.store_sqlite.vfs) {
        Ok(snapshot) => Ok(snapshot),
        // A file the backup completed, in the run's own directory, that
        // SQLite cannot open is gone (a power cut took a name that was
        // never made durable): the backup's verdict, not the machine's.
        // (The message names no path: the run's directory is no verdict.)
        Err(error) if error.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen) => Ok(Snapshot::unreadable(
            "the backup's file is gone: SQLite cannot open it".to_string(),
        )),
        Err(error) => {
            let error = StoreError::from(error);
            match error.is_corruption() {
                true => Ok(Snapshot::unreadable(format!("the backup is unreadable: {error}"))),
                false => Err(error),
            }
        }
    }
}
