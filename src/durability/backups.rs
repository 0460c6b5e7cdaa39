//! The durability table's backup dimension (issue 40 §3): per journal mode,
//! `synchronous` level and backup method, how many backups taken in the
//! middle of a workload were inconsistent, lacked appends acknowledged
//! before they began, or were gone, with the power staying on and with
//! the power going out after the backup completed. The measured form of
//! the protocol's warning that a copy of the main `.db` file alone is no
//! backup (mistake 16).
//!
//! Each run appends `APPENDS` events to one workflow on crashsim's
//! reference store through the crash VFS (the durability table's
//! workload, `workload::appends`), takes one backup after an
//! append drawn from the seed, goes on appending, and, in the rows with a
//! cut, loses the power at a persistence point drawn after the backup
//! completed. The backup's file is then read with the plain VFS.

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use super::table::TableError;
use super::workload::{self, APPENDS, Config};
use crate::prng::Prng;
use crate::store::{JournalMode, Synchronous, SystemConfig};
use crate::vfs::crash::{CrashVfs, Model};

/// How the backup is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// SQLite's online backup API (the reference's, `store::backup`).
    Online,
    /// A copy of the main `.db` file's bytes alone (`cp store.db`, the
    /// mutant `backup_db_file_only`).
    MainFile,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Online => "online",
            Method::MainFile => "main file",
        }
    }

    fn take(self, config: &SystemConfig, dest: &Path) -> crate::store::Result<()> {
        match self {
            Method::Online => crate::store::backup::backup(config, dest),
            Method::MainFile => crate::mutants::backup::db_file_only(config, dest, 0).map(|_| ()),
        }
    }
}

/// One row of the backup table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackupRow {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    pub method: Method,
    /// Whether the power went out after each backup completed.
    pub cut: bool,
    pub runs: u64,
    /// Backups whose file was gone or unreadable afterwards.
    pub gone: u64,
    /// Readable backups whose `integrity_check` failed.
    pub inconsistent: u64,
    /// Backups that lacked some append acknowledged before they began.
    pub lacking: u64,
    /// The most acknowledged appends one backup lacked.
    pub max_lacking: u64,
}

impl BackupRow {
    /// Whether every backup of the row was whole: readable, consistent,
    /// with every append acknowledged before it began.
    pub fn whole(&self) -> bool {
        self.gone == 0 && self.inconsistent == 0 && self.lacking == 0
    }
}

/// The rows `crashsim durability --backups` measures: WAL at FULL and
/// NORMAL, a rollback journal at EXTRA and FULL, each method, without and
/// with a power cut after the backup (disk model `drop_unsynced`).
pub fn default_rows() -> Vec<(Config, Method, bool)> {
    let mut rows = Vec::new();
    for (journal_mode, synchronous) in [
        (JournalMode::Wal, Synchronous::Full),
        (JournalMode::Wal, Synchronous::Normal),
        (JournalMode::Delete, Synchronous::Extra),
        (JournalMode::Delete, Synchronous::Full),
    ] {
        for method in [Method::Online, Method::MainFile] {
            for cut in [false, true] {
                let config = Config {
                    journal_mode,
                    synchronous,
                    model: Model::DropUnsynced,
                };
                rows.push((config, method, cut));
            }
        }
    }
    rows
}

/// What one run left in the backup's file.
struct Judged {
    gone: bool,
    consistent: bool,
    lacking: u64,
}

/// One run in `dir`: the backup after append `after`, the power out at
/// `cut` (or never). Returns what the backup holds, and the persistence
/// points seen when the backup completed and in all.
fn once(
    dir: &Path,
    config: &Config,
    method: Method,
    after: usize,
    cut: Option<u64>,
    seed: u64,
) -> Result<(Judged, u64, u64), TableError> {
    let vfs =
        CrashVfs::register(&crate::vfs::crash::unique_name("backups"), config.model).map_err(std::io::Error::other)?;
    let path = dir.join("store.db");
    let dest = dir.join("store.db.backup");
    let system = SystemConfig {
        store_path: path.clone(),
        store_sqlite: workload::settings(config, vfs.name()),
        ..crate::adapter::default_config(dir)
    };
    if let Some(point) = cut {
        vfs.arm(point);
    }
    let (mut before, mut at_backup) = (None, 0);
    let ran = workload::appends(&path, &system.store_sqlite, |acked| {
        if acked == after {
            method.take(&system, &dest)?;
            before = Some(after as u64);
            at_backup = vfs.points();
        }
        Ok(())
    });
    let (points, power_out) = (vfs.points(), vfs.is_cut());
    let restored = match power_out {
        true => vfs
            .restore(&mut Prng::derive(seed, "durability/backups/restore"))
            .map(|_| ()),
        false => Ok(()),
    };
    vfs.retire();
    if let Err((_, error)) = ran
        && !power_out
    {
        return Err(TableError::Store(format!("failed with the power on: {error}")));
    }
    restored?;
    let Some(before) = before else {
        return Err(TableError::Store(
            "the power went out before the backup completed".to_string(),
        ));
    };
    Ok((judge(&dest, before), at_backup, points))
}

/// The backup at `dest`, read with the plain VFS, against the `before`
/// appends acknowledged before it began (seqs 1..=before).
fn judge(dest: &Path, before: u64) -> Judged {
    if !dest.exists() {
        return Judged {
            gone: true,
            consistent: false,
            lacking: before,
        };
    }
    let read = || -> rusqlite::Result<(String, u64)> {
        let conn = Connection::open(dest)?;
        let integrity: String = conn.pragma_query_value(None, "integrity_check", |row| row.get(0))?;
        let held: u64 = conn.query_row(
            "SELECT COUNT(*) FROM events WHERE workflow_id = 'w' AND seq <= ?1",
            [before],
            |row| row.get(0),
        )?;
        Ok((integrity, held))
    };
    match read() {
        Ok((integrity, held)) => Judged {
            gone: false,
            consistent: integrity == "ok",
            lacking: before.saturating_sub(held),
        },
        Err(_) => Judged {
            gone: true,
            consistent: false,
            lacking: before,
        },
    }
}

/// Measures one row over `runs` seeded runs, each in its own directory
/// under `work_dir`.
pub fn measure(
    config: &Config,
    method: Method,
    cut: bool,
    runs: u64,
    seed: u64,
    work_dir: &Path,
) -> Result<BackupRow, TableError> {
    let label = format!(
        "durability/backups/{:?}/{:?}/{}/{cut}",
        config.journal_mode,
        config.synchronous,
        method.name()
    );
    let mut prng = Prng::derive(seed, &label);
    let mut row = BackupRow {
        journal_mode: config.journal_mode,
        synchronous: config.synchronous,
        method,
        cut,
        runs,
        gone: 0,
        inconsistent: 0,
        lacking: 0,
        max_lacking: 0,
    };
    for run in 0..runs {
        // After an append that is not the tenth: in WAL mode the last
        // checkpoint left commits in `-wal`.
        let after = 1 + prng.below(APPENDS as u64 - 1) as usize;
        let point = match cut {
            false => None,
            true => {
                let dry = tempfile::tempdir_in(work_dir)?;
                let (_, at_backup, points) = once(dry.path(), config, method, after, None, seed ^ run)?;
                Some(at_backup + 1 + prng.below(points.saturating_sub(at_backup).max(1)))
            }
        };
        let dir = tempfile::tempdir_in(work_dir)?;
        let (judged, _, _) = once(dir.path(), config, method, after, point, seed ^ run)?;
        if judged.gone {
            row.gone += 1;
            continue;
        }
        if !judged.consistent {
            row.inconsistent += 1;
        }
        if judged.lacking > 0 {
            row.lacking += 1;
            row.max_lacking = row.max_lacking.max(judged.lacking);
        }
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(journal_mode: JournalMode, synchronous: Synchronous) -> Config {
        Config {
            journal_mode,
            synchronous,
            model: Model::DropUnsynced,
        }
    }

    #[test]
    fn an_online_backup_is_whole_and_a_main_file_copy_in_wal_lacks_commits() {
        let dir = tempfile::tempdir().unwrap();
        let wal = config(JournalMode::Wal, Synchronous::Full);
        for cut in [false, true] {
            let online = measure(&wal, Method::Online, cut, 5, 1, dir.path()).unwrap();
            assert!(online.whole(), "{online:?}");
        }
        let copy = measure(&wal, Method::MainFile, false, 5, 1, dir.path()).unwrap();
        assert!(copy.lacking > 0 && copy.max_lacking > 0, "{copy:?}");
        // In rollback-journal mode the main file holds every commit.
        let delete = config(JournalMode::Delete, Synchronous::Extra);
        let copy = measure(&delete, Method::MainFile, false, 5, 1, dir.path()).unwrap();
        assert!(copy.whole(), "{copy:?}");
    }
}
