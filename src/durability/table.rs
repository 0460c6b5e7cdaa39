//! The durability table: what a power cut does to acknowledged commits under
//! each combination of journal mode, `synchronous` and disk model.
//!
//! Each row runs a focused workload many times: the reference store appends
//! events (each with one outbox command) to one workflow through the crash
//! VFS, with a checkpoint every ten appends in WAL mode (so the database
//! file is written too, not only the WAL), and the power goes out at a
//! persistence point drawn uniformly from those the whole workload has (a
//! dry run counts them). Then the files are rewritten by the disk model,
//! reopened with the plain VFS, and judged: `integrity_check`, and how many
//! of the appends that were acknowledged are gone.
//!
//! The same rows measure an outside store (`Target::Outside`, `--sut`):
//! only the appends and checkpoints go another way (`outside`); the disk
//! model, the cut points' draws, the restore and the judge are this code,
//! so the two tables read the same. The judge reads the store's own files,
//! so an outside store must keep its events where crashsim's reference
//! does (`events` in `store.db`); a dry run that finds them missing is an
//! error, never a row.

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use super::outside;
pub use super::workload::Config;
use super::workload::{self, APPENDS, Halt};
use crate::adapter::Adapter;
use crate::prng::Prng;
use crate::ratio::Ratio;
use crate::store::{JournalMode, Synchronous};
use crate::vfs::crash::{CrashVfs, Model};

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    #[serde(with = "crate::vfs::crash::model_name")]
    pub model: Model,
    pub cuts: u64,
    /// Persistence points in the whole workload (the cuts are drawn among them).
    pub points: u64,
    /// Cuts after which some acknowledged append was gone.
    pub runs_losing_acked: u64,
    /// The most acknowledged appends one cut took.
    pub max_acked_lost: u64,
    /// Whether every loss was a tail (the newest appends), never a hole.
    pub tail_only: bool,
    /// Cuts after which `integrity_check` failed or the store could not be read.
    pub inconsistent_runs: u64,
}

/// The rows `crashsim durability` measures by default.
pub fn default_configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for (journal_mode, levels) in [
        (
            JournalMode::Wal,
            [Synchronous::Full, Synchronous::Normal, Synchronous::Off].as_slice(),
        ),
        (JournalMode::Delete, [Synchronous::Extra, Synchronous::Full].as_slice()),
    ] {
        for synchronous in levels {
            for model in [Model::DropUnsynced, Model::Random] {
                configs.push(Config {
                    journal_mode,
                    synchronous: *synchronous,
                    model,
                });
            }
        }
    }
    configs
}

/// What one workload run gave.
struct Outcome {
    acked: u64,
    present: u64,
    /// The surviving seqs are 1..=present (no hole).
    contiguous: bool,
    consistent: bool,
}

/// The store the table measures.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// crashsim's reference store, on a connection of this process.
    InProcess,
    /// An outside store: every append one request to its store process
    /// (`outside`).
    Outside(&'a Adapter),
}

/// Why a row could not be measured (never a verdict).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The store failed where no power cut explains it, or cannot be
    /// measured at all; the cause names the row.
    #[error("{0}")]
    Store(String),
}

/// Runs the workload on a fresh VFS in `dir`, with the power going out at
/// `cut` (or never); returns the outcome and the persistence points seen.
/// Only the appends (and checkpoints) differ between targets: the disk,
/// the cut, the restore and the judging are the same code.
fn workload(
    dir: &Path,
    config: &Config,
    target: Target<'_>,
    cut: Option<u64>,
    seed: u64,
) -> Result<(Outcome, u64), TableError> {
    let name = crate::vfs::crash::unique_name("durability");
    let vfs = match target {
        Target::InProcess => CrashVfs::register(&name, config.model),
        Target::Outside(_) => CrashVfs::shared(&name, config.model, &dir.join("vfs"), seed),
    }
    .map_err(std::io::Error::other)?;
    let path = dir.join("store.db");
    if let Some(point) = cut {
        vfs.arm(point);
    }
    let mut acked = 0u64;
    // Past the cut every write fails: the workload stops at its first error.
    let appended = match target {
        Target::InProcess => workload::in_process(&path, config, &vfs, &mut acked),
        Target::Outside(adapter) => outside::append(adapter, dir, config, &vfs, seed, &mut acked),
    };
    let points = vfs.points();
    let power_out = vfs.is_cut();
    let restored = match power_out {
        true => vfs.restore(&mut Prng::derive(seed, "durability/restore")).map(|_| ()),
        false => Ok(()),
    };
    vfs.retire();
    match appended {
        Err(Halt::Unfit(why)) => return Err(TableError::Store(why)),
        Err(Halt::Failed(why)) if !power_out => {
            return Err(TableError::Store(format!("failed with the power on: {why}")));
        }
        _ => {}
    }
    restored?;
    Ok((judge(&path, acked), points))
}

fn judge(path: &Path, acked: u64) -> Outcome {
    let read = || -> rusqlite::Result<(u64, u64, String)> {
        let conn = Connection::open(path)?;
        let integrity: String = conn.pragma_query_value(None, "integrity_check", |row| row.get(0))?;
        let (count, max): (u64, Option<u64>) = conn
            .query_row(
                "SELECT COUNT(*), MAX(seq) FROM events WHERE workflow_id = 'w'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .or_else(|error| match error {
                // The cut came before the schema was durable: nothing survived.
                rusqlite::Error::SqliteFailure(_, Some(message)) if message.contains("no such table") => Ok((0, None)),
                other => Err(other),
            })?;
        Ok((count, max.unwrap_or(0), integrity))
    };
    match read() {
        Ok((present, max, integrity)) => Outcome {
            acked,
            present,
            contiguous: max == present,
            consistent: integrity == "ok",
        },
        Err(_) => Outcome {
            acked,
            present: 0,
            contiguous: true,
            consistent: false,
        },
    }
}

/// Measures one row of the in-process table over `cuts` seeded cuts, each
/// in its own directory under `work_dir`.
pub fn measure(config: &Config, cuts: u64, seed: u64, work_dir: &Path) -> Result<Row, TableError> {
    measure_on(config, Target::InProcess, cuts, seed, work_dir)
}

/// Measures one row of `target` over `cuts` seeded cuts, each in its own
/// directory under `work_dir`.
pub fn measure_on(
    config: &Config,
    target: Target<'_>,
    cuts: u64,
    seed: u64,
    work_dir: &Path,
) -> Result<Row, TableError> {
    let name = format!(
        "{}/{}/{}",
        config.journal_mode.as_str().to_lowercase(),
        config.synchronous.as_str().to_lowercase(),
        config.model.name()
    );
    let in_row = |error: TableError| match error {
        TableError::Store(why) => TableError::Store(format!("{name}: {why}")),
        other => other,
    };
    let dry = tempfile::tempdir_in(work_dir)?;
    let (uncut, points) = workload(dry.path(), config, target, None, seed).map_err(in_row)?;
    if uncut.acked != APPENDS as u64 || uncut.present != uncut.acked || !uncut.consistent {
        // Without a cut every append is there, or the judge cannot read this store.
        return Err(in_row(TableError::Store(format!(
            "without a power cut, {} of the {} acknowledged appends were found in store.db (table `events`, \
             workflow `w`), integrity {}: the table judges a store by those files",
            uncut.present,
            uncut.acked,
            if uncut.consistent { "ok" } else { "not ok" }
        ))));
    }
    let mut row = Row {
        journal_mode: config.journal_mode,
        synchronous: config.synchronous,
        model: config.model,
        cuts,
        points,
        runs_losing_acked: 0,
        max_acked_lost: 0,
        tail_only: true,
        inconsistent_runs: 0,
    };
    let label = format!(
        "durability/{:?}/{:?}/{}",
        config.journal_mode,
        config.synchronous,
        config.model.name()
    );
    let mut prng = Prng::derive(seed, &label);
    for cut in 0..cuts {
        let point = 1 + prng.below(points.max(1));
        let dir = tempfile::tempdir_in(work_dir)?;
        let (outcome, _) = workload(dir.path(), config, target, Some(point), seed ^ cut).map_err(in_row)?;
        let lost = outcome.acked.saturating_sub(outcome.present);
        if lost > 0 {
            row.runs_losing_acked += 1;
            row.max_acked_lost = row.max_acked_lost.max(lost);
        }
        if !outcome.contiguous {
            row.tail_only = false;
        }
        if !outcome.consistent {
            row.inconsistent_runs += 1;
        }
    }
    Ok(row)
}

/// True if the row is what SQLite documents for its settings: durable
/// settings lose nothing and stay consistent.
pub fn as_documented(row: &Row) -> bool {
    let durable = match row.journal_mode {
        JournalMode::Wal => row.synchronous >= Synchronous::Full,
        JournalMode::Delete => row.synchronous >= Synchronous::Extra,
    };
    !durable || (row.runs_losing_acked == 0 && row.inconsistent_runs == 0)
}

/// The share of runs that lost something, for people.
pub fn share(count: u64, of: u64) -> String {
    if of == 0 {
        return "-".to_string();
    }
    let ratio = Ratio::new(count.min(of) as u32, of as u32);
    format!("{ratio} ({:.0}%)", 100.0 * count as f64 / of as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAL_FULL: Config = Config {
        journal_mode: JournalMode::Wal,
        synchronous: Synchronous::Full,
        model: Model::DropUnsynced,
    };

    #[test]
    fn an_uncut_workload_keeps_every_append_and_counts_its_points() {
        let dir = tempfile::tempdir().unwrap();
        let (outcome, points) = workload(dir.path(), &WAL_FULL, Target::InProcess, None, 0).unwrap();
        assert_eq!((outcome.acked, outcome.present), (APPENDS as u64, APPENDS as u64));
        assert!(outcome.contiguous && outcome.consistent);
        assert!(points > APPENDS as u64, "every commit writes and syncs: {points}");
    }

    #[test]
    fn a_cut_stops_the_workload_and_wal_full_keeps_what_was_acknowledged() {
        let dir = tempfile::tempdir().unwrap();
        let (outcome, _) = workload(dir.path(), &WAL_FULL, Target::InProcess, Some(200), 3).unwrap();
        assert!(outcome.acked > 0 && outcome.acked < APPENDS as u64, "{}", outcome.acked);
        assert!(outcome.present >= outcome.acked && outcome.consistent);
    }

    #[test]
    fn a_failure_with_the_power_on_is_an_error_not_a_loss() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("not-there");
        match workload(&missing, &WAL_FULL, Target::InProcess, None, 0) {
            Err(TableError::Store(message)) => assert!(message.starts_with("failed with the power on: "), "{message}"),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a store that cannot open its file measured a row"),
        }
    }
}
