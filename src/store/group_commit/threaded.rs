//! The group committer on a thread of its own, for writers that are real
//! OS threads (the bench, or an application).
//!
//! One thread owns the committing connection. Each writer holds a
//! `GroupCommitClient` (its own connection for reads, `mark_done` and the
//! early head check, plus a channel to the committer); its `commit` sends
//! the transaction and blocks until the group that carried it has committed.
//!
//! Flush policy: wait for one transaction, take every other one already
//! waiting (up to `max_group`), commit them as one group, answer each
//! member, repeat. There is no timer: while one group's `COMMIT` waits for
//! the disk, the next group gathers, so a group is as large as the number
//! of writers that came to commit during the previous one, and no member
//! waits longer than about two commits. A group that fails as a whole
//! answers every member with its error; nothing of it was committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use rusqlite::Connection;

use super::GroupStats;
use super::batch::{Transaction, commit_group};
use super::draft::Draft;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, Store, StoreError};

/// The default `max_group`.
pub const MAX_GROUP: usize = 256;

/// A transaction and where to send its outcome.
struct Request {
    transaction: Transaction,
    reply: SyncSender<Result<()>>,
}

#[derive(Default)]
struct SharedStats {
    groups: AtomicU64,
    transactions: AtomicU64,
}

/// The committer thread and the way to reach it.
pub struct GroupCommitter {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<SharedStats>,
}

impl GroupCommitter {
    /// Starts the committer thread on `conn` (opened by `connection::open*`).
    pub fn start(conn: Connection, max_group: usize) -> GroupCommitter {
        let (requests, inbox) = mpsc::channel();
        let stats = Arc::new(SharedStats::default());
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("group-committer".to_string())
            .spawn(move || serve(&conn, &inbox, max_group.max(1), &thread_stats))
            .expect("spawn the committer thread");
        GroupCommitter {
            requests: Some(requests),
            thread: Some(thread),
            stats,
        }
    }

    /// A writer's handle: reads go through `local`, commits through the committer.
    pub fn client(&self, local: ReferenceStore) -> GroupCommitClient {
        let (reply, replies) = mpsc::sync_channel(1);
        GroupCommitClient {
            local,
            requests: self.requests.clone().expect("running until stopped"),
            reply,
            replies,
            draft: Draft::default(),
        }
    }

    /// Groups committed so far and the transactions they carried.
    pub fn stats(&self) -> GroupStats {
        GroupStats {
            groups: self.stats.groups.load(Ordering::Relaxed),
            transactions: self.stats.transactions.load(Ordering::Relaxed),
        }
    }

    /// Stops taking new clients and waits for the thread, which ends once
    /// every client is dropped.
    pub fn stop(mut self) -> GroupStats {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            // A panic on the committer thread is a crashsim bug; surface it.
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        self.stats()
    }
}

/// The committer thread's loop.
fn serve(conn: &Connection, inbox: &Receiver<Request>, max_group: usize, stats: &SharedStats) {
    while let Ok(first) = inbox.recv() {
        let mut group = vec![first];
        while group.len() < max_group {
            match inbox.try_recv() {
                Ok(request) => group.push(request),
                Err(_) => break,
            }
        }
        let members: Vec<&Transaction> = group.iter().map(|request| &request.transaction).collect();
        match commit_group(conn, &members) {
            Ok(outcomes) => {
                stats.groups.fetch_add(1, Ordering::Relaxed);
                stats.transactions.fetch_add(group.len() as u64, Ordering::Relaxed);
                for (request, outcome) in group.into_iter().zip(outcomes) {
                    // A client that gave up waiting has nobody to tell.
                    let _ = request.reply.send(outcome);
                }
            }
            Err(error) => {
                for request in group {
                    let _ = request.reply.send(Err(error.duplicate()));
                }
            }
        }
    }
}

/// One writer's view of a threaded group-commit store. `commit` blocks
/// until the transaction's group has committed (or failed).
pub struct GroupCommitClient {
    local: ReferenceStore,
    requests: Sender<Request>,
    reply: SyncSender<Result<()>>,
    replies: Receiver<Result<()>>,
    draft: Draft,
}

fn stopped() -> StoreError {
    StoreError::Invalid("the group committer has stopped".to_string())
}

impl Store for GroupCommitClient {
    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        self.local.load(workflow_id)
    }

    fn heads(&mut self) -> Result<Vec<Head>> {
        self.local.heads()
    }

    fn commands(&mut self, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
        self.local.commands(workflow_id, event_seq)
    }

    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        self.local.pending(limit)
    }

    fn begin(&mut self) -> Result<()> {
        self.draft.begin()
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        self.draft
            .insert_event(self.local.connection(), workflow_id, expected_seq, kind, payload)
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        self.draft.insert_command(workflow_id, event_seq, index, command)
    }

    fn commit(&mut self) -> Result<()> {
        let transaction = self.draft.take()?;
        if transaction.is_empty() {
            return Ok(());
        }
        let request = Request {
            transaction,
            reply: self.reply.clone(),
        };
        self.requests.send(request).map_err(|_| stopped())?;
        self.replies.recv().map_err(|_| stopped())?
    }

    fn rollback(&mut self) -> Result<()> {
        self.draft.discard();
        Ok(())
    }

    fn mark_done(&mut self, command_id: &str, result: &str) -> Result<bool> {
        self.local.mark_done(command_id, result)
    }
}

#[cfg(test)]
mod tests {
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
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
             CREATE TRIGGER poison AFTER INSERT ON events WHEN NEW.workflow_id = 'poison'
             BEGIN INSERT INTO child VALUES (42); END;",
        )
        .unwrap();
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
}
