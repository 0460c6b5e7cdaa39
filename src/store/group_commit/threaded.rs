//! The group committer on a thread of its own, for writers that are real
//! OS threads (the bench, or an application).
//!
//! One thread owns the committing connection. Each writer holds a
//! `GroupCommitClient` (its own connection for reads, `mark_done` and the
//! early head check, plus a channel to the committer); its `commit` sends
//! the transaction and blocks until the group that carried it has committed.
//!
//! Flush policy: wait for one transaction; then take every other one
//! already waiting, and keep waiting while some client has begun a
//! transaction it has not sent yet, but never longer than the previous
//! group's `COMMIT` took (`Tuning::sibling_wait_max` at most); commit them
//! as one group (up to `max_group`), answer each member, repeat. While one
//! group's `COMMIT` waits for the disk, the next gathers. Waiting for
//! clients that are about to commit turns the alternation of a large group
//! and a small one (the clients answered last are still on their way) into
//! groups of every active writer; waiting at most one commit's time at
//! most doubles a member's latency, and only when someone is on the way.
//! A lone writer never waits. A group that fails as a whole answers every
//! member with its error; nothing of it was committed.
//!
//! Checkpoints: SQLite checkpoints the WAL inside the `COMMIT` that crosses
//! 1000 pages, so one group in a few dozen would wait for a whole
//! checkpoint (copying the WAL into the database and syncing both) with all
//! its members. Given a second connection (`Tuning::checkpointer`), the
//! committer turns that off and a background thread checkpoints instead
//! (`PASSIVE`: it never blocks the committer) every `CHECKPOINT_INTERVAL`
//! while commits come in.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::GroupStats;
use super::batch::{Transaction, commit_group};
use super::draft::Draft;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, Store, StoreError};

/// The default `max_group`.
pub const MAX_GROUP: usize = 256;

/// The default `sibling_wait_max`.
pub const SIBLING_WAIT_MAX: Duration = Duration::from_millis(1);

/// How often the background checkpointer runs while commits come in.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(100);

/// How the committer forms groups and checkpoints.
pub struct Tuning {
    /// At most this many transactions per group.
    pub max_group: usize,
    /// The longest a group waits for clients that have begun a transaction
    /// and not sent it (it waits at most the previous `COMMIT`'s duration
    /// anyway); zero: never wait.
    pub sibling_wait_max: Duration,
    /// A second connection to the same database for background checkpoints;
    /// `None`: SQLite checkpoints inside the committer's `COMMIT`, as usual.
    pub checkpointer: Option<Connection>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            max_group: MAX_GROUP,
            sibling_wait_max: SIBLING_WAIT_MAX,
            checkpointer: None,
        }
    }
}

/// The wall clock, for the committer's waits.
#[expect(
    clippy::disallowed_methods,
    reason = "the threaded committer serves real threads and never runs in a simulation"
)]
fn now() -> Instant {
    Instant::now()
}

/// A transaction and where to send its outcome.
struct Request {
    transaction: Transaction,
    reply: SyncSender<Result<()>>,
}

/// What the committer and its clients share.
#[derive(Default)]
struct Shared {
    groups: AtomicU64,
    transactions: AtomicU64,
    /// Clients with a transaction begun and not yet received by the
    /// committer: a client counts itself in at `begin`, the committer
    /// counts it out when it receives the transaction (the client itself
    /// if it rolls back or sends nothing).
    preparing: AtomicUsize,
}

/// The committer thread and the way to reach it.
pub struct GroupCommitter {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl GroupCommitter {
    /// Starts the committer thread on `conn` (opened by `connection::open*`)
    /// with at most `max_group` transactions per group, the default
    /// sibling wait, and SQLite's own checkpoints.
    pub fn start(conn: Connection, max_group: usize) -> GroupCommitter {
        Self::start_with(
            conn,
            Tuning {
                max_group,
                ..Tuning::default()
            },
        )
    }

    /// Starts the committer thread on `conn` tuned by `tuning`.
    pub fn start_with(conn: Connection, tuning: Tuning) -> GroupCommitter {
        let (requests, inbox) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("group-committer".to_string())
            .spawn(move || serve(&conn, &inbox, tuning, &thread_shared))
            .expect("spawn the committer thread");
        GroupCommitter {
            requests: Some(requests),
            thread: Some(thread),
            shared,
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
            shared: Arc::clone(&self.shared),
        }
    }

    /// Clients with a transaction begun and not yet received (for tests).
    pub fn preparing(&self) -> usize {
        self.shared.preparing.load(Ordering::Acquire)
    }

    /// Groups committed so far and the transactions they carried.
    pub fn stats(&self) -> GroupStats {
        GroupStats {
            groups: self.shared.groups.load(Ordering::Relaxed),
            transactions: self.shared.transactions.load(Ordering::Relaxed),
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
fn serve(conn: &Connection, inbox: &Receiver<Request>, tuning: Tuning, shared: &Shared) {
    let max_group = tuning.max_group.max(1);
    let checkpoints = tuning.checkpointer.map(|checkpointer| {
        // The committer no longer checkpoints in its COMMIT; the thread does.
        let _ = conn.pragma_update(None, "wal_autocheckpoint", 0);
        Checkpointer::start(checkpointer)
    });
    // No COMMIT yet: wait as long as allowed for the first group.
    let mut last_commit = tuning.sibling_wait_max;
    while let Ok(first) = inbox.recv() {
        shared.preparing.fetch_sub(1, Ordering::AcqRel);
        let mut group = vec![first];
        let deadline = now() + last_commit.min(tuning.sibling_wait_max);
        while group.len() < max_group {
            let next = match inbox.try_recv() {
                Ok(request) => Some(request),
                Err(TryRecvError::Disconnected) => None,
                Err(TryRecvError::Empty) => {
                    let left = deadline.saturating_duration_since(now());
                    if shared.preparing.load(Ordering::Acquire) == 0 || left.is_zero() {
                        None
                    } else {
                        inbox.recv_timeout(left).ok()
                    }
                }
            };
            let Some(request) = next else { break };
            shared.preparing.fetch_sub(1, Ordering::AcqRel);
            group.push(request);
        }
        let members: Vec<&Transaction> = group.iter().map(|request| &request.transaction).collect();
        let started = now();
        let outcome = commit_group(conn, &members);
        last_commit = now() - started;
        match outcome {
            Ok(outcomes) => {
                shared.groups.fetch_add(1, Ordering::Relaxed);
                shared.transactions.fetch_add(group.len() as u64, Ordering::Relaxed);
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
        if let Some(checkpoints) = &checkpoints {
            checkpoints.nudge();
        }
    }
    if let Some(checkpoints) = checkpoints {
        checkpoints.stop();
    }
}

/// The background checkpointer: `PASSIVE` checkpoints on its own
/// connection, at most every `CHECKPOINT_INTERVAL`, only after commits.
struct Checkpointer {
    nudges: Option<SyncSender<()>>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    fn start(conn: Connection) -> Checkpointer {
        let (nudges, inbox) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("group-checkpointer".to_string())
            .spawn(move || {
                while inbox.recv().is_ok() {
                    // A failed passive checkpoint (a reader in the way) is
                    // retried on the next nudge; it never blocks a commit.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    std::thread::sleep(CHECKPOINT_INTERVAL);
                }
            })
            .expect("spawn the checkpointer thread");
        Checkpointer {
            nudges: Some(nudges),
            thread,
        }
    }

    /// There are new frames; checkpoint when the interval allows.
    fn nudge(&self) {
        if let Some(nudges) = &self.nudges {
            let _ = nudges.try_send(());
        }
    }

    fn stop(mut self) {
        self.nudges = None;
        let _ = self.thread.join();
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
    shared: Arc<Shared>,
}

impl GroupCommitClient {
    /// This client no longer prepares a transaction the committer will receive.
    fn done_preparing(&self) {
        self.shared.preparing.fetch_sub(1, Ordering::AcqRel);
    }
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
        self.draft.begin()?;
        self.shared.preparing.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        self.draft
            .insert_event(self.local.conn(), workflow_id, expected_seq, kind, payload)
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        self.draft.insert_command(workflow_id, event_seq, index, command)
    }

    fn commit(&mut self) -> Result<()> {
        let transaction = self.draft.take()?;
        if transaction.is_empty() {
            self.done_preparing();
            return Ok(());
        }
        let request = Request {
            transaction,
            reply: self.reply.clone(),
        };
        if self.requests.send(request).is_err() {
            self.done_preparing();
            return Err(stopped());
        }
        self.replies.recv().map_err(|_| stopped())?
    }

    fn rollback(&mut self) -> Result<()> {
        if self.draft.is_open() {
            self.draft.discard();
            self.done_preparing();
        }
        Ok(())
    }

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        self.local.mark_done(command_id, result)
    }
}

impl Drop for GroupCommitClient {
    fn drop(&mut self) {
        let _ = self.rollback();
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
    fn with_a_background_checkpointer_everything_commits_and_the_wal_is_checkpointed() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path());
        let settings = SqliteSettings::default();
        let committer = GroupCommitter::start_with(
            connection::open(&path, &settings).unwrap(),
            Tuning {
                checkpointer: Some(connection::open(&path, &settings).unwrap()),
                ..Tuning::default()
            },
        );
        // Held open so that no last close checkpoints and deletes the WAL.
        let observer = connection::open(&path, &settings).unwrap();
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let mut store = client(&committer, &path);
                scope.spawn(move || {
                    for expected_seq in 0..20 {
                        store.append(&format!("wf-{writer}"), expected_seq, "k", "{}").unwrap();
                    }
                });
            }
        });
        // The checkpointer runs after the first group: frames are copied into
        // the database file (NOOP only reads the counts). Polled, not timed.
        let backfilled = |observer: &Connection| -> i64 {
            observer
                .query_row("PRAGMA wal_checkpoint(NOOP)", [], |row| row.get(2))
                .unwrap()
        };
        let mut polls = 0;
        while backfilled(&observer) <= 0 && polls < 500 {
            std::thread::sleep(Duration::from_millis(10));
            polls += 1;
        }
        assert!(backfilled(&observer) > 0, "the background checkpointer never ran");
        assert_eq!(committer.stop().transactions, 80);
        let total: u64 = (0..4)
            .map(|writer| events::last_seq(&observer, &format!("wf-{writer}")).unwrap())
            .sum();
        assert_eq!(total, 80);
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
