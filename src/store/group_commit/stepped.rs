//! The group committer driven by its callers' own steps, in one thread: what
//! the simulator runs as `store = "group_commit"`.
//!
//! Handles (`GroupCommitStore`, one per writer or worker) share one
//! `Committer` through `Rc<RefCell<…>>`. The committer owns its own
//! connection, used only to commit groups; each handle reads and marks done
//! on a connection of its own, like the reference store.
//!
//! Flush policy, which needs no timer and no second thread:
//! - a handle's first `commit` queues its transaction and answers
//!   `StoreError::Pending`: ask again;
//! - the first queued handle that asks again flushes the whole queue as one
//!   group (`batch::commit_group`) and gets its own outcome at once; the
//!   other members find theirs waiting when they ask again;
//! - a queue that reaches `max_group` transactions is flushed at once, by
//!   the handle whose transaction filled it.
//!
//! So a group holds every transaction queued between its flusher's first
//! and second `commit`: in the simulator, the writers that reach their
//! commit within one step of each other. Nobody is answered before the
//! group's `COMMIT` returned. A group that fails as a whole (a lock, a
//! failed `COMMIT`) stays queued, and its flusher gets the error: `Busy`
//! means ask again later, anything else is the flusher's to handle.
//!
//! A queued transaction belongs to its handle. Dropping the handle (the
//! simulator kills its actor) or calling `rollback` withdraws it while its
//! group has not been flushed: it never commits. Once flushed it stands,
//! like a transaction whose `COMMIT` succeeded but whose caller died before
//! hearing so; its outcome is discarded.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use rusqlite::Connection;

use super::GroupStats;
use super::batch::{Transaction, commit_group};
use super::draft::Draft;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, SqliteSettings, Store, StoreError, connection};

/// The default `max_group`: generous, since the simulator's groups are
/// bounded by its writer count anyway.
pub const MAX_GROUP: usize = 64;

/// A committer shared by the handles of one thread.
pub type SharedCommitter = Rc<RefCell<Committer>>;

/// The queue of transactions waiting for a group, and the outcomes of
/// flushed ones that their handles have not collected yet.
pub struct Committer {
    conn: Connection,
    max_group: usize,
    /// Waiting transactions, by handle id, in the order they were queued.
    queue: Vec<(u64, Transaction)>,
    /// Outcomes of flushed transactions, by handle id.
    outcomes: BTreeMap<u64, Result<()>>,
    next_handle: u64,
    stats: GroupStats,
}

impl Committer {
    /// A committer with its own connection to `path`.
    pub fn open(path: &Path, settings: &SqliteSettings) -> Result<SharedCommitter> {
        Ok(Self::from_connection(connection::open(path, settings)?, MAX_GROUP))
    }

    /// A committer over a connection opened by `connection::open*`.
    pub fn from_connection(conn: Connection, max_group: usize) -> SharedCommitter {
        Rc::new(RefCell::new(Committer {
            conn,
            max_group: max_group.max(1),
            queue: Vec::new(),
            outcomes: BTreeMap::new(),
            next_handle: 0,
            stats: GroupStats::default(),
        }))
    }

    /// Groups committed so far and the transactions they carried.
    pub fn stats(&self) -> GroupStats {
        self.stats
    }

    /// Transactions waiting for a group.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Commits every queued transaction as one group and files each
    /// outcome; on failure the queue stays as it was.
    fn flush(&mut self) -> Result<()> {
        if self.queue.is_empty() {
            return Ok(());
        }
        let members: Vec<&Transaction> = self.queue.iter().map(|(_, transaction)| transaction).collect();
        let outcomes = commit_group(&self.conn, &members)?;
        self.stats.record(self.queue.len());
        for ((handle, _), outcome) in self.queue.drain(..).zip(outcomes) {
            self.outcomes.insert(handle, outcome);
        }
        Ok(())
    }

    /// Forgets the handle's transaction: withdrawn if queued, its outcome
    /// discarded if flushed.
    fn withdraw(&mut self, handle: u64) {
        self.queue.retain(|(owner, _)| *owner != handle);
        self.outcomes.remove(&handle);
    }
}

/// One connection's view of a group-commit store: reads, `mark_done` and
/// the early head check on its own connection, appends through the shared
/// committer.
pub struct GroupCommitStore {
    id: u64,
    local: ReferenceStore,
    committer: SharedCommitter,
    draft: Draft,
    /// Its last transaction was handed to the committer and not yet answered.
    queued: bool,
}

impl GroupCommitStore {
    /// A handle with its own connection to `path`, sharing `committer`.
    pub fn open(path: &Path, settings: &SqliteSettings, committer: &SharedCommitter) -> Result<GroupCommitStore> {
        Ok(Self::new(ReferenceStore::open(path, settings)?, committer))
    }

    /// A handle reading through `local`, sharing `committer`.
    pub fn new(local: ReferenceStore, committer: &SharedCommitter) -> GroupCommitStore {
        let id = {
            let mut shared = committer.borrow_mut();
            shared.next_handle += 1;
            shared.next_handle
        };
        GroupCommitStore {
            id,
            local,
            committer: Rc::clone(committer),
            draft: Draft::default(),
            queued: false,
        }
    }
}

impl Store for GroupCommitStore {
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
        if self.queued {
            return Err(StoreError::Invalid(
                "the last transaction still waits for its group: ask `commit` again or `rollback`".to_string(),
            ));
        }
        self.draft.begin()
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        self.draft
            .insert_event(self.local.conn(), workflow_id, expected_seq, kind, payload)
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        self.draft.insert_command(workflow_id, event_seq, index, command)
    }

    /// Queues the transaction (`Pending`), then on a later call flushes the
    /// group or collects the outcome a flush left for it.
    fn commit(&mut self) -> Result<()> {
        let mut committer = self.committer.borrow_mut();
        if !self.queued {
            let transaction = self.draft.take()?;
            if transaction.is_empty() {
                return Ok(());
            }
            committer.queue.push((self.id, transaction));
            self.queued = true;
            if committer.queue.len() < committer.max_group {
                return Err(StoreError::Pending);
            }
        }
        if !committer.outcomes.contains_key(&self.id) {
            committer.flush()?;
        }
        self.queued = false;
        committer
            .outcomes
            .remove(&self.id)
            .expect("a flush files an outcome for every queued transaction")
    }

    fn rollback(&mut self) -> Result<()> {
        self.draft.discard();
        if self.queued {
            self.committer.borrow_mut().withdraw(self.id);
            self.queued = false;
        }
        Ok(())
    }

    fn mark_done(&mut self, command_id: &str, result: Option<&str>) -> Result<bool> {
        self.local.mark_done(command_id, result)
    }

    /// The handle's own connection (reads and `mark_done`), for settings probes.
    fn connection(&self) -> Option<&rusqlite::Connection> {
        Some(self.local.conn())
    }
}

impl Drop for GroupCommitStore {
    fn drop(&mut self) {
        if self.queued {
            self.committer.borrow_mut().withdraw(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::events;

    struct Fixture {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        committer: SharedCommitter,
        observer: Connection,
    }

    fn fixture(max_group: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let settings = SqliteSettings {
            busy_timeout_ms: 0,
            ..SqliteSettings::default()
        };
        ReferenceStore::create_schema(&path, &settings).unwrap();
        let committer = Committer::from_connection(connection::open(&path, &settings).unwrap(), max_group);
        let observer = connection::open(&path, &settings).unwrap();
        Fixture {
            _dir: dir,
            path,
            committer,
            observer,
        }
    }

    impl Fixture {
        fn handle(&self) -> GroupCommitStore {
            let settings = SqliteSettings {
                busy_timeout_ms: 0,
                ..SqliteSettings::default()
            };
            GroupCommitStore::open(&self.path, &settings, &self.committer).unwrap()
        }

        fn head(&self, workflow_id: &str) -> u64 {
            events::last_seq(&self.observer, workflow_id).unwrap()
        }
    }

    fn command() -> Command {
        Command {
            kind: "do".to_string(),
            payload: "{}".to_string(),
        }
    }

    /// begin + insert_event (+ one command) + the first commit, which queues.
    fn queue(store: &mut GroupCommitStore, workflow_id: &str, expected_seq: u64) {
        store.begin().unwrap();
        let seq = store.insert_event(workflow_id, expected_seq, "k", "{}").unwrap();
        store.insert_command(workflow_id, seq, 0, &command()).unwrap();
        assert!(matches!(store.commit(), Err(StoreError::Pending)));
    }

    #[test]
    fn nothing_is_acknowledged_or_visible_before_the_group_commits() {
        let f = fixture(MAX_GROUP);
        let (mut a, mut b, mut c) = (f.handle(), f.handle(), f.handle());
        queue(&mut a, "wf-a", 0);
        queue(&mut b, "wf-b", 0);
        queue(&mut c, "wf-c", 0);
        assert_eq!(f.committer.borrow().queued(), 3);
        assert_eq!((f.head("wf-a"), f.head("wf-b"), f.head("wf-c")), (0, 0, 0));
        // b asks again: it flushes the group and learns its own outcome.
        b.commit().unwrap();
        assert_eq!((f.head("wf-a"), f.head("wf-b"), f.head("wf-c")), (1, 1, 1));
        assert_eq!(
            f.committer.borrow().stats(),
            GroupStats {
                groups: 1,
                transactions: 3
            }
        );
        // a and c find their outcomes waiting; no second group.
        a.commit().unwrap();
        c.commit().unwrap();
        assert_eq!(f.committer.borrow().stats().groups, 1);
        let rows: i64 = f
            .observer
            .query_row("SELECT COUNT(*) FROM outbox", [], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, 3, "outbox rows rode with their events");
    }

    #[test]
    fn a_stale_member_gets_its_conflict_from_commit_and_the_rest_commit() {
        let f = fixture(MAX_GROUP);
        let (mut a, mut b, mut c) = (f.handle(), f.handle(), f.handle());
        // a and b both pass the early check from head 0; the group decides.
        queue(&mut a, "wf", 0);
        queue(&mut b, "wf", 0);
        queue(&mut c, "wf-c", 0);
        a.commit().unwrap();
        assert!(matches!(b.commit(), Err(StoreError::Conflict { expected_seq: 0, .. })));
        c.commit().unwrap();
        assert_eq!((f.head("wf"), f.head("wf-c")), (1, 1));
        // Once committed, a stale writer fails early, at insert_event.
        b.begin().unwrap();
        assert!(matches!(
            b.insert_event("wf", 0, "k", "{}"),
            Err(StoreError::Conflict { .. })
        ));
        b.rollback().unwrap();
    }

    #[test]
    fn a_dropped_handle_withdraws_its_queued_transaction_but_a_flushed_one_stands() {
        let f = fixture(MAX_GROUP);
        let (mut a, mut b) = (f.handle(), f.handle());
        queue(&mut a, "wf-a", 0);
        queue(&mut b, "wf-b", 0);
        drop(a); // killed before its group committed
        assert_eq!(f.committer.borrow().queued(), 1);
        b.commit().unwrap();
        assert_eq!((f.head("wf-a"), f.head("wf-b")), (0, 1));

        let (mut c, mut d) = (f.handle(), f.handle());
        queue(&mut c, "wf-c", 0);
        queue(&mut d, "wf-d", 0);
        d.commit().unwrap(); // flushes c's transaction too
        drop(c); // killed after its group committed, before it heard
        assert_eq!(f.head("wf-c"), 1);
        assert_eq!(f.committer.borrow().queued(), 0);
    }

    #[test]
    fn rollback_withdraws_a_queued_transaction() {
        let f = fixture(MAX_GROUP);
        let mut a = f.handle();
        queue(&mut a, "wf", 0);
        assert!(matches!(a.begin(), Err(StoreError::Invalid(_))), "still queued");
        a.rollback().unwrap();
        assert_eq!(f.committer.borrow().queued(), 0);
        assert_eq!(a.append("wf", 0, "k", "{}").unwrap(), 1);
    }

    #[test]
    fn a_locked_database_keeps_the_group_queued_and_answers_busy() {
        let f = fixture(MAX_GROUP);
        let (mut a, mut b) = (f.handle(), f.handle());
        queue(&mut a, "wf-a", 0);
        queue(&mut b, "wf-b", 0);
        f.observer.execute_batch("BEGIN IMMEDIATE").unwrap();
        assert!(matches!(a.commit(), Err(StoreError::Busy)));
        assert_eq!(f.committer.borrow().queued(), 2, "nobody was answered");
        f.observer.execute_batch("ROLLBACK").unwrap();
        b.commit().unwrap();
        a.commit().unwrap();
        assert_eq!((f.head("wf-a"), f.head("wf-b")), (1, 1));
    }

    #[test]
    fn a_full_queue_is_flushed_by_the_transaction_that_filled_it() {
        let f = fixture(2);
        let (mut a, mut b) = (f.handle(), f.handle());
        queue(&mut a, "wf-a", 0);
        b.begin().unwrap();
        b.insert_event("wf-b", 0, "k", "{}").unwrap();
        b.commit().unwrap();
        assert_eq!((f.head("wf-a"), f.head("wf-b")), (1, 1));
        a.commit().unwrap();
    }

    #[test]
    fn the_one_call_append_queues_and_flushes_itself() {
        let f = fixture(MAX_GROUP);
        let mut a = f.handle();
        let (seq, ids) = a
            .append_with_commands("wf", 0, "k", "{}", &[command(), command()])
            .unwrap();
        assert_eq!((seq, ids), (1, vec!["wf:1:0".to_string(), "wf:1:1".to_string()]));
        assert!(matches!(a.append("wf", 0, "k", "{}"), Err(StoreError::Conflict { .. })));
        assert!(a.commit().is_err(), "no transaction is open");
        a.begin().unwrap();
        a.commit().unwrap(); // an empty transaction commits nothing
        assert_eq!(f.committer.borrow().stats().groups, 1);
    }
}
