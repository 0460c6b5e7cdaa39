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

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use crate::model::Command;
use crate::ratio::Ratio;
use crate::sim::prng::Prng;
use crate::store::reference::ReferenceStore;
use crate::store::{JournalMode, SqliteSettings, Store, Synchronous};
use crate::vfs::crash::{CrashVfs, Model};

/// Appends per workload.
const APPENDS: usize = 40;

/// One row's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    pub model: Model,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
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

fn settings(config: &Config, vfs: &'static str) -> SqliteSettings {
    SqliteSettings {
        journal_mode: config.journal_mode,
        synchronous: config.synchronous,
        busy_timeout_ms: 0,
        vfs: Some(vfs),
    }
}

/// Runs the workload on a fresh VFS in `dir`, with the power going out at
/// `cut` (or never); returns the outcome and the persistence points seen.
fn workload(dir: &Path, config: &Config, cut: Option<u64>, seed: u64) -> std::io::Result<(Outcome, u64)> {
    let vfs = CrashVfs::register(&crate::vfs::crash::unique_name("durability"), config.model)
        .map_err(std::io::Error::other)?;
    let path = dir.join("store.db");
    let settings = settings(config, vfs.name());
    if let Some(point) = cut {
        vfs.arm(point);
    }
    let command = Command {
        kind: "notify".to_string(),
        payload: r#"{"n":"1"}"#.to_string(),
    };
    let mut acked = 0u64;
    let mut run = || -> crate::store::Result<()> {
        ReferenceStore::create_schema(&path, &settings)?;
        let mut store = ReferenceStore::open(&path, &settings)?;
        for index in 0..APPENDS {
            store.append_with_commands(
                "w",
                index as u64,
                "event",
                r#"{"i":"x"}"#,
                std::slice::from_ref(&command),
            )?;
            acked += 1;
            if config.journal_mode == JournalMode::Wal && (index + 1) % 10 == 0 {
                store.conn().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
            }
        }
        Ok(())
    };
    // Past the cut every write fails: the workload stops at its first error.
    let _ = run();
    let points = vfs.points();
    let restored = match vfs.is_cut() {
        true => vfs.restore(&mut Prng::derive(seed, "durability/restore")).map(|_| ()),
        false => Ok(()),
    };
    vfs.retire();
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

/// Measures one row over `cuts` seeded cuts, each in its own directory under `work_dir`.
pub fn measure(config: &Config, cuts: u64, seed: u64, work_dir: &Path) -> std::io::Result<Row> {
    let dry = tempfile::tempdir_in(work_dir)?;
    let (_, points) = workload(dry.path(), config, None, seed)?;
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
        let (outcome, _) = workload(dir.path(), config, Some(point), seed ^ cut)?;
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
