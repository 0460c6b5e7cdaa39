//! The durability table's workload, the part both targets share: a row's
//! settings (`Config`), the appends' shape, why a workload stops (`Halt`),
//! and the appends on crashsim's reference store in this process (an
//! outside store's are `outside`). `table` runs it under cuts and judges.

use std::path::Path;

use serde::Serialize;

use crate::model::Command;
use crate::store::reference::ReferenceStore;
use crate::store::{JournalMode, SqliteSettings, Store, Synchronous};
use crate::vfs::crash::{CrashVfs, Model};

/// Appends per workload.
pub(super) const APPENDS: usize = 40;

/// One row's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Config {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    #[serde(with = "crate::vfs::crash::model_name")]
    pub model: Model,
}

/// Why a workload stopped before its last append.
pub(super) enum Halt {
    /// An append or checkpoint failed: expected past the cut, the store's
    /// own failure before it.
    Failed(String),
    /// The store cannot be measured, cut or not.
    Unfit(String),
}

pub(super) fn settings(config: &Config, vfs: &'static str) -> SqliteSettings {
    SqliteSettings {
        journal_mode: config.journal_mode,
        synchronous: config.synchronous,
        busy_timeout_ms: 0,
        vfs: Some(vfs),
    }
}

/// The one command every append carries.
pub(super) fn command() -> Command {
    Command {
        kind: "notify".to_string(),
        payload: r#"{"n":"1"}"#.to_string(),
    }
}

/// The workload's appends on the reference store, in this process.
pub(super) fn in_process(path: &Path, config: &Config, vfs: &CrashVfs, acked: &mut u64) -> Result<(), Halt> {
    let settings = settings(config, vfs.name());
    appends(path, &settings, |_| Ok(()))
        .map(|done| *acked = done)
        .map_err(|(done, error)| {
            *acked = done;
            Halt::Failed(error.to_string())
        })
}

/// The appends themselves, on `path` with `settings`: a checkpoint every
/// ten in WAL mode, and `after(n)` once the n-th is acknowledged. Returns
/// how many were acknowledged, also when one failed.
pub(super) fn appends(
    path: &Path,
    settings: &SqliteSettings,
    mut after: impl FnMut(usize) -> crate::store::Result<()>,
) -> Result<u64, (u64, crate::store::StoreError)> {
    let command = command();
    let mut acked = 0u64;
    let mut run = || -> crate::store::Result<()> {
        ReferenceStore::create_schema(path, settings)?;
        let mut store = ReferenceStore::open(path, settings)?;
        for index in 0..APPENDS {
            store.append_with_commands(
                "w",
                index as u64,
                "event",
                r#"{"i":"x"}"#,
                std::slice::from_ref(&command),
            )?;
            acked += 1;
            if settings.journal_mode == JournalMode::Wal && (index + 1) % 10 == 0 {
                store.conn().execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
            }
            after(index + 1)?;
        }
        Ok(())
    };
    match run() {
        Ok(()) => Ok(acked),
        Err(error) => Err((acked, error)),
    }
}
