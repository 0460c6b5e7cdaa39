//! A restore, as an operator makes one: with every process of the store
//! stopped, the store's database is replaced by a backup's content
//! through SQLite itself (the sqlite3 shell's `.restore`: the online backup
//! API from the backup's file into the store's), so the journal or WAL
//! left beside the old file can never resurrect it. Written through the
//! run's VFS with the strongest `synchronous` and a truncating checkpoint:
//! once it returns, the restored state is durable, and a later power cut
//! cannot tear it back.
//!
//! This is crashsim's act, not the store's: it works on any store whose
//! database is one SQLite file, whatever its schema.

use std::path::Path;

use rusqlite::OpenFlags;
use rusqlite::backup::{Backup, StepResult};

use super::{StoreError, SystemConfig, connection};

/// Why a restore did not happen.
#[derive(Debug)]
pub enum Unrestorable {
    /// SQLite cannot read the backup as a database (its file gone, not a
    /// database, corrupt): no operator can restore from it. The backup's
    /// own fault, which I11 judges; the words name no path.
    Backup(&'static str),
    /// The machine or crashsim failed: no verdict.
    Environment(StoreError),
}

/// What a SQLite error from reading the backup says about it, if it is
/// the backup's fault.
fn backup_fault(error: &rusqlite::Error) -> Option<&'static str> {
    match error.sqlite_error_code()? {
        rusqlite::ErrorCode::CannotOpen => Some("SQLite cannot open the backup's file"),
        rusqlite::ErrorCode::NotADatabase => Some("the backup's file is not a database"),
        rusqlite::ErrorCode::DatabaseCorrupt => Some("the backup is corrupt"),
        _ => None,
    }
}

/// Replaces the store's database at `config.store_path` with the backup at
/// `from`, whose content is only read (opened read-write all the same: a
/// WAL left beside it, from a deletion a power cut undid, needs a writer
/// to be read). Every connection to the store must be closed. A backup
/// SQLite cannot read is `Unrestorable::Backup`, and the store is left as
/// it was; anything else that fails is the machine's or crashsim's.
pub fn restore(config: &SystemConfig, from: &Path) -> Result<(), Unrestorable> {
    let settings = &config.store_sqlite;
    let step = |what: &'static str| {
        move |error: rusqlite::Error| match backup_fault(&error) {
            Some(fault) if what != "opening the store" => Unrestorable::Backup(fault),
            _ => Unrestorable::Environment(StoreError::Environment(format!("{what}: {error}"))),
        }
    };
    if !from.exists() {
        return Err(Unrestorable::Backup("the backup's file is gone"));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let source = match settings.vfs {
        Some(vfs) => rusqlite::Connection::open_with_flags_and_vfs(from, flags, vfs),
        None => rusqlite::Connection::open_with_flags(from, flags),
    }
    .map_err(step("opening the backup"))?;
    let mut target = connection::open(&config.store_path, settings).map_err(step("opening the store"))?;
    // EXTRA: in rollback-journal mode the journal's deletion is synced too,
    // so no hot journal can roll the restore back after a cut.
    target
        .pragma_update(None, "synchronous", "EXTRA")
        .map_err(step("opening the store"))?;
    {
        let copy = Backup::new(&source, &mut target).map_err(step("starting the copy"))?;
        match copy.step(-1).map_err(step("copying the pages"))? {
            StepResult::Done => {}
            other => {
                return Err(Unrestorable::Environment(StoreError::Broken(format!(
                    "restoring from a backup with every connection closed answered {other:?}"
                ))));
            }
        }
    }
    if settings.journal_mode == connection::JournalMode::Wal {
        target
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(step("opening the store"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(path: &Path) -> Vec<String> {
        let conn = rusqlite::Connection::open(path).expect("open");
        let mut statement = conn.prepare("SELECT name FROM t ORDER BY name").expect("prepare");
        statement
            .query_map([], |row| row.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    #[test]
    fn a_restore_brings_back_the_backup_and_nothing_after_it() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let config = crate::adapter::default_config(dir.path());
        let backup = dir.path().join("store.db.backup-1");
        {
            let store = connection::open(&config.store_path, &config.store_sqlite).expect("open");
            store
                .execute_batch("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('before');")
                .expect("written");
            let mut copy = connection::open(&backup, &config.store_sqlite).expect("open");
            Backup::new(&store, &mut copy)
                .expect("a backup")
                .step(-1)
                .expect("copied");
            store.execute_batch("INSERT INTO t VALUES ('after');").expect("written");
        }
        assert_eq!(rows(&config.store_path), ["after", "before"]);
        restore(&config, &backup).expect("restored");
        let gone = dir.path().join("store.db.backup-2");
        assert!(matches!(restore(&config, &gone), Err(Unrestorable::Backup(_))));
        std::fs::write(&gone, b"not a database, not at all, and longer than a header").expect("written");
        assert!(matches!(restore(&config, &gone), Err(Unrestorable::Backup(_))));
        assert_eq!(rows(&config.store_path), ["before"], "left as it was");
        assert_eq!(rows(&config.store_path), ["before"]);
        assert_eq!(rows(&backup), ["before"], "the backup is unchanged");
        let wal = dir.path().join("store.db-wal");
        assert!(
            std::fs::metadata(&wal).map_or(true, |meta| meta.len() == 0),
            "checkpointed"
        );
    }
}
