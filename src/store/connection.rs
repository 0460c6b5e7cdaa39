//! The one function through which every connection is opened.
//!
//! `journal_mode=WAL` persists in the file, but `synchronous` and the busy
//! timeout belong to the connection: they must be applied on every open, not
//! once (mistake 10). Keeping a single `open` makes that impossible to forget.
//!
//! One more per-connection setting is about speed, not safety: the query
//! planner stability guarantee (QPSG). Statements are prepared once and
//! cached (`prepare_cached`), but rusqlite clears a statement's bindings
//! when it goes back to the cache, and SQLite expires, and re-prepares on
//! its next step, every statement whose plan might depend on a bound value,
//! which in this SQLite means any `column = ?` term. Without QPSG every
//! cached statement was parsed and planned again on every call (16% of the
//! simulator's time, a third of an append's CPU). With it, plans do not
//! depend on bound values; results are the same.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

/// `PRAGMA synchronous`: how often SQLite waits for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Off,
    Normal,
    #[default]
    Full,
    Extra,
}

impl Synchronous {
    /// The level `PRAGMA synchronous` reads back: 0 OFF … 3 EXTRA.
    pub fn level(self) -> u8 {
        match self {
            Synchronous::Off => 0,
            Synchronous::Normal => 1,
            Synchronous::Full => 2,
            Synchronous::Extra => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
            Synchronous::Extra => "EXTRA",
        }
    }
}

/// `PRAGMA journal_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalMode {
    #[default]
    Wal,
    Delete,
}

impl JournalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            JournalMode::Wal => "WAL",
            JournalMode::Delete => "DELETE",
        }
    }
}

/// Per-database connection settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqliteSettings {
    /// Persists in the file; WAL by default.
    pub journal_mode: JournalMode,
    /// Per connection; FULL by default.
    pub synchronous: Synchronous,
    /// Per connection, in milliseconds. The simulator uses 0: in one thread a
    /// connection that waits for a lock waits for itself (see `sim`).
    pub busy_timeout_ms: u32,
    /// The VFS every connection goes through, by name (`None`: SQLite's
    /// default). The simulator sets its crash VFS here for power-loss runs;
    /// the store only passes it on.
    #[serde(skip)]
    pub vfs: Option<&'static str>,
}

impl Default for SqliteSettings {
    fn default() -> Self {
        SqliteSettings {
            journal_mode: JournalMode::Wal,
            synchronous: Synchronous::Full,
            busy_timeout_ms: 5_000,
            vfs: None,
        }
    }
}

/// Opens `path` (creating it if needed, through `settings.vfs`) and applies
/// every setting.
pub fn open(path: &Path, settings: &SqliteSettings) -> rusqlite::Result<Connection> {
    open_via(path, settings, settings.vfs)
}

/// `open` through a registered VFS (`None`: SQLite's default), such as the
/// bench's `vfs::CountingVfs`.
pub fn open_via(path: &Path, settings: &SqliteSettings, vfs: Option<&str>) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs)?,
        None => Connection::open_with_flags(path, flags)?,
    };
    conn.busy_timeout(Duration::from_millis(u64::from(settings.busy_timeout_ms)))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // `journal_mode` answers with the mode now in force; reading it back
    // catches a file that refused the change.
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", settings.journal_mode.as_str(), |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case(settings.journal_mode.as_str()) {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(format!(
                "journal_mode stayed {mode}, wanted {}",
                settings.journal_mode.as_str()
            )),
        ));
    }
    conn.pragma_update(None, "synchronous", settings.synchronous.as_str())?;
    Ok(conn)
}

/// Runs one statement without results (`BEGIN IMMEDIATE`, `COMMIT`, a
/// savepoint), prepared once per connection, not parsed on every call.
pub fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The settings actually in force on `conn`, read back from SQLite.
pub fn effective(conn: &Connection) -> rusqlite::Result<(String, i64)> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
    let synchronous: i64 = conn.pragma_query_value(None, "synchronous", |row| row.get(0))?;
    Ok((mode, synchronous))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_open_applies_every_setting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let settings = SqliteSettings {
            synchronous: Synchronous::Normal,
            ..SqliteSettings::default()
        };
        let first = open(&path, &settings).unwrap();
        let second = open(&path, &settings).unwrap();
        for conn in [&first, &second] {
            let (mode, synchronous) = effective(conn).unwrap();
            assert_eq!(mode, "wal");
            assert_eq!(synchronous, 1, "NORMAL is 1");
            assert!(conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG).unwrap());
        }
    }

    #[test]
    fn cached_statements_stay_prepared_across_calls_with_other_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let conn = open(&path, &SqliteSettings::default()).unwrap();
        conn.execute_batch("CREATE TABLE t (k TEXT, v INTEGER, PRIMARY KEY (k, v))")
            .unwrap();
        let sql = "SELECT MAX(v) FROM t WHERE k = ?1";
        for index in 0..10 {
            let mut statement = conn.prepare_cached(sql).unwrap();
            let _: Option<i64> = statement.query_row([format!("k{index}")], |row| row.get(0)).unwrap();
        }
        let statement = conn.prepare_cached(sql).unwrap();
        assert_eq!(statement.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }
}
