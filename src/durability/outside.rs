//! The durability table's append path for an outside store
//! (`crashsim durability --sut CMD`): the same workload as in-process, but
//! every append is one `append` request to the adapter's own store process.
//!
//! The run's disk is a shared crash VFS (`CrashVfs::shared`): the adapter's
//! processes load crashsim's VFS extension (`SystemConfig::vfs_state`), so
//! their writes and syncs count as persistence points and fail after the
//! cut like crashsim's own. The WAL checkpoint every ten appends is done by
//! crashsim, from a connection of this process opened through the same VFS
//! by name, so it is counted and cut like everything else: an adapter's
//! protocol has no `checkpoint` request, and the point of the checkpoint is
//! only that the database file is written too, not only the WAL.
//!
//! An adapter whose SQLite did not load the extension cannot be measured:
//! its writes would reach the disk unseen, and every row would look
//! durable. That is `Halt::Unfit`, never a row.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::workload::{APPENDS, Config, Halt, command, settings};
use crate::adapter::Adapter;
use crate::store::{JournalMode, Store as _, SystemConfig};
use crate::vfs::crash::CrashVfs;

/// How long crashsim's checkpoint waits for the adapter's locks. The store
/// process is idle between requests, so this is only a safety margin; a
/// wait writes nothing, so it moves no persistence point.
const CHECKPOINT_BUSY: Duration = Duration::from_secs(2);

/// The workload's appends through `adapter`'s store process, on the files
/// in `dir` and the shared crash VFS `vfs`; counts the acknowledged ones in
/// `acked`. Every process of the session is gone when this returns, so the
/// caller may restore and retire `vfs`.
pub(super) fn append(
    adapter: &Adapter,
    dir: &Path,
    config: &Config,
    vfs: &CrashVfs,
    seed: u64,
    acked: &mut u64,
) -> Result<(), Halt> {
    let mut system = crate::adapter::default_config(dir);
    // Roles the adapter does not serve are crashsim's, in this process:
    // through the same VFS, so they are counted and cut too.
    system.store_sqlite = settings(config, vfs.name());
    system.receiver_sqlite = settings(config, vfs.name());
    system.seed = seed;
    system.vfs_state = vfs.shared_dir();
    let failed = |error: &dyn std::fmt::Display| Halt::Failed(cause(dir, &error.to_string()));
    let mut session = adapter.bench_session(&system, true).map_err(|error| failed(&error))?;
    if vfs.control().loads.load(Ordering::Acquire) == 0 {
        return Err(Halt::Unfit(not_loaded(adapter, dir)));
    }
    // Opened once the adapter made the file; dropped before the session, so
    // it is never the last connection (whose close would checkpoint).
    let checkpointer = match config.journal_mode {
        JournalMode::Wal => Some(open_checkpointer(&system, vfs).map_err(|error| failed(&error))?),
        JournalMode::Delete => None,
    };
    let command = command();
    for index in 0..APPENDS {
        let (seq, ids) = session
            .store()
            .append_with_commands(
                "w",
                index as u64,
                "event",
                r#"{"i":"x"}"#,
                std::slice::from_ref(&command),
            )
            .map_err(|error| failed(&error))?;
        if seq != index as u64 + 1 || ids.len() != 1 {
            return Err(Halt::Unfit(format!(
                "the adapter `{}` answered an append at expected_seq {index} with one command with seq {seq} and \
                 {} command id(s)",
                adapter.command(),
                ids.len()
            )));
        }
        *acked += 1;
        if let Some(conn) = checkpointer.as_ref().filter(|_| (index + 1) % 10 == 0) {
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .map_err(|error| failed(&format!("crashsim's checkpoint of the WAL: {error}")))?;
        }
    }
    drop(checkpointer);
    drop(session);
    Ok(())
}

/// crashsim's own connection to the store's database, through the shared
/// VFS, with the row's `synchronous` (which decides what a checkpoint syncs).
fn open_checkpointer(system: &SystemConfig, vfs: &CrashVfs) -> rusqlite::Result<Connection> {
    // Without SQLITE_OPEN_CREATE: the adapter made the file, or the
    // configuration cannot be measured (it keeps its data elsewhere).
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(&system.store_path, flags, vfs.name())?;
    conn.busy_timeout(CHECKPOINT_BUSY)?;
    conn.pragma_update(None, "synchronous", system.store_sqlite.synchronous.as_str())?;
    Ok(conn)
}

/// Why an adapter that did not load the VFS extension cannot be measured.
fn not_loaded(adapter: &Adapter, dir: &Path) -> String {
    cause(
        dir,
        &format!(
            "the adapter `{}` cannot be measured: none of its processes loaded crashsim's VFS extension into \
             its SQLite (the file ${} names, entry point {}), so its writes reach the disk unseen and no power \
             cut can reach them; the Python SDK loads it itself, any other adapter must load it before opening \
             a database (docs/adapter-protocol.md, \"Power loss\"); its stderr says why it could not",
            adapter.command(),
            crate::vfs::extension::ENV_EXTENSION,
            crate::vfs::extension::ENTRY_POINT
        ),
    )
}

fn cause(dir: &Path, text: &str) -> String {
    crate::adapter::with_stderr_tails(dir, text)
}
