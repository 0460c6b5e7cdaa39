//! The single-connection configurations: one append per transaction under
//! each `synchronous` mode, with outbox rows, in batches, and with a new
//! connection per append. They run the reference store's own code
//! (`ReferenceStore`), opened through the counting VFS, on a database of
//! their own that persists across rounds.
//!
//! Steady state, as in a long-running process: before the first round,
//! `steady_state` grows each database's WAL once to the size at which SQLite
//! checkpoints it (1000 pages by default) and checkpoints it, and a
//! connection kept open for the whole bench stops the last close from
//! deleting it. Commits then rewrite the WAL in place, which is what the
//! limit (`raw_overwrite_fsync_4k`) models; a growing WAL would add a
//! metadata update to every sync. The connection-per-append pattern gets
//! neither, by design: creating and deleting the WAL is its cost.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::measure::{Budget, Sample, timed_loop};
use super::plant;
use crate::model::Command;
use crate::store::group_commit::batch::{EventAppend, Transaction, commit_group};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, SqliteSettings, Store, Synchronous, connection, events};
use crate::vfs::CountingVfs;

/// What every benchmark event looks like: a realistic kind and a payload of
/// about a hundred bytes of canonical JSON.
pub const KIND: &str = "flight_booked";
pub const PAYLOAD: &str =
    r#"{"city":"Oslo","fare":"EUR 123.45","ref":"FL0123456789","seat":"14C","trip_id":"trip-000042"}"#;

/// The `index`-th command of a benchmark event.
pub fn command(index: usize) -> Command {
    Command {
        kind: "book_hotel".to_string(),
        payload: format!(r#"{{"city":"Oslo","index":"{index}","trip_id":"trip-000042"}}"#),
    }
}

/// A configuration's database: `dir/store.db`, created on first use.
pub fn database(dir: &Path, vfs: &CountingVfs) -> Result<PathBuf> {
    let path = dir.join("store.db");
    if !path.exists() {
        let conn = connection::open_via(&path, &SqliteSettings::default(), Some(vfs.name()))?;
        ReferenceStore::create_schema_in(&conn)?;
    }
    Ok(path)
}

/// Bytes written once to grow a WAL to its steady-state size: a little more
/// than SQLite's autocheckpoint threshold of 1000 pages of 4 KiB.
const WAL_BYTES: usize = 1050 * 4096;

/// Creates the database in `dir` if needed, grows its WAL to steady-state
/// size, checkpoints it, and returns an idle connection to hold open until
/// the bench ends, so the WAL is rewritten in place instead of recreated.
pub fn steady_state(dir: &Path, vfs: &CountingVfs) -> Result<Connection> {
    let path = database(dir, vfs)?;
    let conn = connection::open_via(&path, &settings(Synchronous::Full), Some(vfs.name()))?;
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS wal_padding (bytes BLOB);
         INSERT INTO wal_padding VALUES (zeroblob({WAL_BYTES}));
         DELETE FROM wal_padding;"
    ))?;
    // Everything is copied back: the next commit starts the WAL over, in place.
    conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    Ok(conn)
}

/// The connection settings of a configuration: the given `synchronous`,
/// WAL, SQLite's default busy handling with a 5 s timeout.
pub fn settings(synchronous: Synchronous) -> SqliteSettings {
    SqliteSettings {
        synchronous,
        ..SqliteSettings::default()
    }
}

/// A store on `path` through the counting VFS.
pub fn open(path: &Path, synchronous: Synchronous, vfs: &CountingVfs) -> Result<ReferenceStore> {
    let conn = connection::open_via(path, &settings(synchronous), Some(vfs.name()))?;
    ReferenceStore::from_connection(conn)
}

/// Adds the syncs the VFS counted during the timed loop.
fn counted(vfs: &CountingVfs, run: impl FnOnce() -> Result<Sample>) -> Result<Sample> {
    let before = vfs.counts();
    let mut sample = run()?;
    sample.fsyncs = (vfs.counts() - before).fsyncs();
    Ok(sample)
}

/// One event (and `commands` outbox rows) per transaction on one connection.
/// With `planted`, one extra commit after each (`plant`: a demonstration
/// aid for the regression gate).
pub fn append(
    dir: &Path,
    vfs: &CountingVfs,
    budget: Budget,
    synchronous: Synchronous,
    commands: usize,
    planted: bool,
) -> Result<Sample> {
    const WORKFLOW: &str = "bench-append";
    let path = database(dir, vfs)?;
    let mut store = open(&path, synchronous, vfs)?;
    let commands: Vec<Command> = (0..commands).map(command).collect();
    let mut head = events::last_seq(store.conn(), WORKFLOW)?;
    let mut append = || -> Result<u64> {
        head = store.append_with_commands(WORKFLOW, head, KIND, PAYLOAD, &commands)?.0;
        if planted {
            plant::extra_commit(store.conn(), head)?;
        }
        Ok(1)
    };
    for _ in 0..budget.warmup_ops {
        append()?;
    }
    counted(vfs, || timed_loop(budget.sample, append))
}

/// `appends` events of one workflow per transaction on one connection (FULL).
pub fn batch(dir: &Path, vfs: &CountingVfs, budget: Budget, appends: usize) -> Result<Sample> {
    const WORKFLOW: &str = "bench-batch";
    let path = database(dir, vfs)?;
    let mut store = open(&path, Synchronous::Full, vfs)?;
    let mut head = events::last_seq(store.conn(), WORKFLOW)?;
    let mut transaction = || -> Result<u64> {
        insert_batch(&mut store, WORKFLOW, head, appends)?;
        head += appends as u64;
        Ok(appends as u64)
    };
    for _ in 0..budget.warmup_ops.div_ceil(appends as u32).max(1) {
        transaction()?;
    }
    counted(vfs, || timed_loop(budget.sample, transaction))
}

/// The group committer's transaction without its threads: `members`
/// workflows each extended by one event, each in its own savepoint, one
/// `COMMIT` (`group_commit::batch::commit_group`), back to back on one
/// connection (FULL). What a group of `members` costs the committer once
/// every member is at hand: no hand-off, no waiting, so the ceiling of
/// `group_commit{members}`. It writes more than `batch{members}`: the
/// workflows' ends of the primary-key index spread over more pages as the
/// workflows grow, up to a page each.
pub fn groups(dir: &Path, vfs: &CountingVfs, budget: Budget, members: usize) -> Result<Sample> {
    let path = database(dir, vfs)?;
    let conn = connection::open_via(&path, &settings(Synchronous::Full), Some(vfs.name()))?;
    let mut heads = (0..members)
        .map(|index| {
            let workflow_id = format!("bench-groups-{index}");
            let head = events::last_seq(&conn, &workflow_id)?;
            Ok((workflow_id, head))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut group = || -> Result<u64> {
        let transactions: Vec<Transaction> = heads
            .iter()
            .map(|(workflow_id, head)| Transaction {
                appends: vec![EventAppend {
                    workflow_id: workflow_id.clone(),
                    expected_seq: *head,
                    kind: KIND.to_string(),
                    payload: PAYLOAD.to_string(),
                    commands: Vec::new(),
                }],
            })
            .collect();
        for outcome in commit_group(&conn, &transactions)? {
            outcome?;
        }
        for (_, head) in &mut heads {
            *head += 1;
        }
        Ok(members as u64)
    };
    for _ in 0..budget.warmup_ops.div_ceil(members as u32).max(1) {
        group()?;
    }
    counted(vfs, || timed_loop(budget.sample, group))
}

/// One transaction of `appends` events extending `workflow_id` from `head`.
fn insert_batch(store: &mut ReferenceStore, workflow_id: &str, head: u64, appends: usize) -> Result<()> {
    store.begin()?;
    let attempt = (|| {
        for offset in 0..appends as u64 {
            store.insert_event(workflow_id, head + offset, KIND, PAYLOAD)?;
        }
        store.commit()
    })();
    if attempt.is_err() {
        let _ = store.rollback();
    }
    attempt
}

/// Open a connection, append one event, close it (FULL): nothing else holds
/// the database open, so every append also creates, checkpoints and deletes
/// the WAL.
pub fn conn_per_append(dir: &Path, vfs: &CountingVfs, budget: Budget) -> Result<Sample> {
    const WORKFLOW: &str = "bench-conn-per-append";
    let path = database(dir, vfs)?;
    let mut head = {
        let store = open(&path, Synchronous::Full, vfs)?;
        events::last_seq(store.conn(), WORKFLOW)?
    };
    let mut append = || -> Result<u64> {
        let mut store = open(&path, Synchronous::Full, vfs)?;
        head = store.append(WORKFLOW, head, KIND, PAYLOAD)?;
        Ok(1)
    };
    for _ in 0..budget.warmup_ops.min(5) {
        append()?;
    }
    counted(vfs, || timed_loop(budget.sample, append))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    pub(crate) fn vfs() -> CountingVfs {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        CountingVfs::register(&format!("bench-sqlite-test-{}", NEXT.fetch_add(1, Ordering::Relaxed))).unwrap()
    }

    const BUDGET: Budget = Budget {
        sample: Duration::from_millis(5),
        warmup_ops: 3,
    };

    #[test]
    fn single_appends_cost_one_sync_under_full_and_none_under_off() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let full = append(dir.path(), &vfs, BUDGET, Synchronous::Full, 3, false).unwrap();
        assert_eq!(full.appends, full.commits);
        // A checkpoint may land in the window: two more syncs.
        assert!(
            full.fsyncs >= full.commits && full.fsyncs <= full.commits + 2,
            "{full:?}"
        );
        let off = append(dir.path(), &vfs, BUDGET, Synchronous::Off, 0, false).unwrap();
        assert_eq!(off.fsyncs, 0, "{off:?}");
        let store = open(&dir.path().join("store.db"), Synchronous::Full, &vfs).unwrap();
        let head = events::last_seq(store.conn(), "bench-append").unwrap();
        assert_eq!(
            head,
            full.appends + off.appends + 2 * 3,
            "both samples appended to one workflow"
        );
        let rows: u64 = store
            .conn()
            .query_row("SELECT COUNT(*) FROM outbox", [], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, 3 * (full.appends + 3), "outbox rows of the FULL sample");
    }

    #[test]
    fn a_planted_slowdown_adds_one_counted_sync_per_append() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let planted = append(dir.path(), &vfs, BUDGET, Synchronous::Full, 0, true).unwrap();
        let syncs = 2 * planted.commits;
        // A checkpoint may land in the window: two more syncs, at most twice.
        assert!(planted.fsyncs >= syncs && planted.fsyncs <= syncs + 4, "{planted:?}");
        let store = open(&dir.path().join("store.db"), Synchronous::Full, &vfs).unwrap();
        let version: u64 = store
            .conn()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(
            version,
            planted.appends + 3,
            "one extra commit per append, warm-up's too"
        );
    }

    #[test]
    fn the_steady_state_wal_is_kept_at_full_size() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let keeper = steady_state(dir.path(), &vfs).unwrap();
        let wal = dir.path().join("store.db-wal");
        let size = std::fs::metadata(&wal).unwrap().len();
        assert!(size >= WAL_BYTES as u64, "{size}");
        append(dir.path(), &vfs, BUDGET, Synchronous::Full, 0, false).unwrap();
        assert_eq!(
            std::fs::metadata(&wal).unwrap().len(),
            size,
            "rewritten in place, not grown"
        );
        drop(keeper);
    }

    #[test]
    fn batches_carry_their_appends_in_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let sample = batch(dir.path(), &vfs, BUDGET, 10).unwrap();
        assert_eq!(sample.appends, 10 * sample.commits);
        assert!(sample.fsyncs >= sample.commits, "{sample:?}");
    }

    #[test]
    fn groups_carry_one_append_per_workflow_in_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let sample = groups(dir.path(), &vfs, BUDGET, 4).unwrap();
        assert_eq!(sample.appends, 4 * sample.commits);
        assert!(sample.fsyncs >= sample.commits, "{sample:?}");
        let store = open(&dir.path().join("store.db"), Synchronous::Full, &vfs).unwrap();
        for index in 0..4 {
            let head = events::last_seq(store.conn(), &format!("bench-groups-{index}")).unwrap();
            assert_eq!(head, sample.commits + 1, "timed and warm-up groups");
        }
    }

    #[test]
    fn a_connection_per_append_costs_five_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = vfs();
        let sample = conn_per_append(dir.path(), &vfs, BUDGET).unwrap();
        assert_eq!(sample.fsyncs, 5 * sample.commits, "{sample:?}");
    }
}
