//! Tests of the threaded group committer: real threads on real files.

use std::path::Path;
use std::sync::Barrier;

use super::*;
use crate::store::{SqliteSettings, connection, events};

fn database(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("store.db");
    ReferenceStore::create_schema(&path, &SqliteSettings::default()).unwrap();
    path
}

fn client(committer: &GroupCommitter, path: &Path) -> GroupCommitClient {
    committer.client(ReferenceStore::open(path, &SqliteSettings::default()).unwrap())
}

fn command() -> Command {
    Command {
        kind: "do".to_string(),
        payload: "{}".to_string(),
    }
}

#[test]
fn concurrent_writers_all_commit_and_every_acknowledged_append_is_visible() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let committer = GroupCommitter::start(connection::open(&path, &SqliteSettings::default()).unwrap(), 16);
    const WRITERS: usize = 8;
    const APPENDS: u64 = 25;
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let mut store = client(&committer, &path);
            let path = &path;
            scope.spawn(move || {
                let observer = connection::open(path, &SqliteSettings::default()).unwrap();
                let workflow_id = format!("wf-{writer}");
                for expected_seq in 0..APPENDS {
                    let (seq, ids) = store
                        .append_with_commands(&workflow_id, expected_seq, "k", "{}", &[command()])
                        .unwrap();
                    assert_eq!(seq, expected_seq + 1);
                    assert_eq!(ids, [format!("{workflow_id}:{seq}:0")]);
                    // Acknowledged means committed: another connection sees it now.
                    assert_eq!(events::last_seq(&observer, &workflow_id).unwrap(), seq);
                }
            });
        }
    });
    let stats = committer.stop();
    assert_eq!(stats.transactions, WRITERS as u64 * APPENDS);
    assert!(stats.groups >= 1 && stats.groups <= stats.transactions, "{stats:?}");
}

#[test]
fn a_stale_append_in_a_concurrent_group_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let committer = GroupCommitter::start(connection::open(&path, &SqliteSettings::default()).unwrap(), 16);
    let mut setup = client(&committer, &path);
    setup.append("shared", 0, "k", "{}").unwrap();
    // Both contenders pass the early check from head 1, then race.
    let barrier = Barrier::new(4);
    let outcomes: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ["shared", "shared", "own-a", "own-b"]
            .into_iter()
            .map(|workflow_id| {
                let mut store = client(&committer, &path);
                let barrier = &barrier;
                scope.spawn(move || {
                    store.begin().unwrap();
                    let expected = if workflow_id == "shared" { 1 } else { 0 };
                    store.insert_event(workflow_id, expected, "k", "{}").unwrap();
                    barrier.wait();
                    store.commit()
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    let conflicts = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Err(StoreError::Conflict { .. })))
        .count();
    assert_eq!(conflicts, 1, "{outcomes:?}");
    assert!(outcomes[2].is_ok() && outcomes[3].is_ok(), "{outcomes:?}");
    let observer = connection::open(&path, &SqliteSettings::default()).unwrap();
    assert_eq!(events::last_seq(&observer, "shared").unwrap(), 2);
    drop(setup);
    committer.stop();
}

#[test]
fn a_group_whose_commit_fails_acknowledges_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let conn = connection::open(&path, &SqliteSettings::default()).unwrap();
    // COMMIT fails on a deferred foreign key that only 'poison' violates.
    conn.execute_batch(super::super::batch::POISON_ON_COMMIT).unwrap();
    let committer = GroupCommitter::start(conn, 16);
    let mut poisoned = client(&committer, &path);
    assert!(matches!(
        poisoned.append("poison", 0, "k", "{}"),
        Err(StoreError::Sqlite(_))
    ));
    let observer = connection::open(&path, &SqliteSettings::default()).unwrap();
    assert_eq!(events::last_seq(&observer, "poison").unwrap(), 0);
    // The committer goes on serving.
    let mut healthy = client(&committer, &path);
    assert_eq!(healthy.append("fine", 0, "k", "{}").unwrap(), 1);
    drop((poisoned, healthy));
    committer.stop();
}

#[test]
fn every_way_out_of_a_transaction_stops_counting_it_as_on_its_way() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let committer = GroupCommitter::start(connection::open(&path, &SqliteSettings::default()).unwrap(), 16);
    let mut store = client(&committer, &path);
    store.begin().unwrap();
    assert_eq!(committer.preparing(), 1);
    store.rollback().unwrap();
    store.begin().unwrap();
    store.commit().unwrap(); // empty: nothing sent
    store.append("wf", 0, "k", "{}").unwrap(); // received by the committer
    assert!(matches!(
        store.append("wf", 0, "k", "{}"),
        Err(StoreError::Conflict { .. })
    ));
    store.begin().unwrap();
    drop(store); // dropped mid-transaction
    assert_eq!(committer.preparing(), 0);
    committer.stop();
}

#[test]
fn checkpoints_between_groups_keep_the_wal_from_growing() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let settings = SqliteSettings::default();
    let committer = GroupCommitter::start_with(
        connection::open(&path, &settings).unwrap(),
        Tuning {
            checkpoint_frames: Some(8),
            ..Tuning::default()
        },
    );
    // Held open so that no last close checkpoints and deletes the WAL.
    let observer = connection::open(&path, &settings).unwrap();
    let mut store = client(&committer, &path);
    for expected_seq in 0..200 {
        store.append("wf", expected_seq, "k", "{}").unwrap();
    }
    assert!(committer.checkpoints() >= 10, "{}", committer.checkpoints());
    // 200 appends of two frames each, in a WAL that starts over past 8
    // (the threshold, plus the group that crossed it).
    let frame = 24 + 4096;
    let wal = std::fs::metadata(dir.path().join("store.db-wal")).unwrap().len();
    assert!(wal <= 32 + 12 * frame, "{wal} bytes: the WAL grew");
    drop(store);
    assert_eq!(committer.stop().transactions, 200);
    assert_eq!(events::last_seq(&observer, "wf").unwrap(), 200);
}

#[test]
fn the_early_check_knows_committed_heads_and_the_group_check_has_the_last_word() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let committer = GroupCommitter::start(connection::open(&path, &SqliteSettings::default()).unwrap(), 16);
    let (mut a, mut b) = (client(&committer, &path), client(&committer, &path));
    assert_eq!(a.append("wf", 0, "k", "{}").unwrap(), 1);
    // b is behind a head the committer committed: it fails at once.
    b.begin().unwrap();
    assert!(matches!(
        b.insert_event("wf", 0, "k", "{}"),
        Err(StoreError::Conflict { .. })
    ));
    b.rollback().unwrap();
    // A writer outside the committer moves the head on: the early check
    // from the known head passes, and the group's check refuses.
    let mut outside = ReferenceStore::open(&path, &SqliteSettings::default()).unwrap();
    outside.append("wf", 1, "k", "{}").unwrap();
    a.begin().unwrap();
    assert_eq!(a.insert_event("wf", 1, "k", "{}").unwrap(), 2);
    assert!(matches!(a.commit(), Err(StoreError::Conflict { .. })));
    // Beyond the known head, the check reads: 2 is the head now.
    assert_eq!(a.append("wf", 2, "k", "{}").unwrap(), 3);
    drop((a, b));
    assert_eq!(committer.stop().transactions, 2 + 1);
}

#[test]
fn stop_waits_for_the_last_client() {
    let dir = tempfile::tempdir().unwrap();
    let path = database(dir.path());
    let committer = GroupCommitter::start(connection::open(&path, &SqliteSettings::default()).unwrap(), 16);
    let mut store = client(&committer, &path);
    // Stop in the background: it waits for this client to go away.
    let stopping = std::thread::spawn(move || committer.stop());
    store.begin().unwrap();
    store.insert_event("wf", 0, "k", "{}").unwrap();
    // The committer still runs (this client holds the channel open).
    store.commit().unwrap();
    drop(store);
    assert_eq!(stopping.join().unwrap().transactions, 1);
}
