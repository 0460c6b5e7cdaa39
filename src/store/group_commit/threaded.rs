//! The group committer on a thread of its own, for writers that are real
//! OS threads (the bench, or an application).
//!
//! One thread owns the committing connection. Each writer holds a
//! `GroupCommitClient` (its own connection for reads and `mark_done`, and
//! a place in the committer's queue); its `commit` queues the transaction
//! and blocks until the group that carried it has committed.
//!
//! Flush policy: wait for one transaction; then keep waiting while some
//! client has begun a transaction it has not queued yet, but never longer
//! than the previous group's `COMMIT` took (`Tuning::sibling_wait_max` at
//! most); commit everything queued as one group (up to `max_group`), answer
//! each member, repeat. While one group's `COMMIT` waits for the disk, the
//! next gathers. Waiting for clients that are about to commit turns the
//! alternation of a large group and a small one (the clients answered last
//! are still on their way) into groups of every active writer; waiting at
//! most one commit's time at most doubles a member's latency, and only when
//! someone is on the way. A lone writer never waits. A group that fails as
//! a whole answers every member with its error; nothing of it was committed.
//!
//! Hand-offs cost more than the work they hand off (a group member's
//! inserts take a few microseconds; waking a thread takes as long, more on
//! a virtual machine), so there are as few as the design allows: the queue
//! is a mutex and a condition variable, and a client wakes the committer
//! only when the committer waits for it (the first transaction, or the last
//! one on its way), not once per transaction; each member is woken once,
//! with its outcome.
//!
//! The early head check (`Draft`) asks the committer first: the heads its
//! groups committed are kept (`Heads`), so a client extending the head it
//! (or another client) committed reads nothing. An append behind a known
//! head fails there at once, as with a read; one the committer knows
//! nothing of is checked on the client's own connection. Either way the
//! check is advisory and the group's own check in `batch` is the one that
//! counts.
//!
//! Checkpoints: SQLite checkpoints the WAL inside the `COMMIT` that crosses
//! 1000 pages, so one group in a few dozen would wait for a whole
//! checkpoint (copying the WAL into the database and syncing both) with all
//! its members. The committer turns that off and checkpoints itself
//! (`PASSIVE`, `Tuning::checkpoint_frames`), between groups: after the
//! group that crossed the threshold has been answered, before the next
//! begins. Nothing is written in between, so the checkpoint backfills the
//! whole WAL (unless a reader holds an old snapshot) and the next group
//! starts it over, rewriting the file in place. A checkpointer running
//! beside a committer that never pauses would never catch up with it: the
//! WAL would never start over and would grow, every sync a metadata update.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::GroupStats;
use super::batch::{Transaction, commit_group};
use super::draft::Draft;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, Store, StoreError, events};

/// The default `max_group`.
pub const MAX_GROUP: usize = 256;

/// The default `sibling_wait_max`.
pub const SIBLING_WAIT_MAX: Duration = Duration::from_millis(1);

/// The default `checkpoint_frames`: SQLite's own autocheckpoint threshold.
pub const CHECKPOINT_FRAMES: u32 = 1000;

/// At most this many workflows' committed heads are kept for the early
/// check; past it the record starts over (and the check reads until it
/// has learnt them again).
const HEADS_MAX: usize = 1 << 16;

/// How the committer forms groups and checkpoints.
pub struct Tuning {
    /// At most this many transactions per group.
    pub max_group: usize,
    /// The longest a group waits for clients that have begun a transaction
    /// and not queued it (it waits at most the previous `COMMIT`'s duration
    /// anyway); zero: never wait.
    pub sibling_wait_max: Duration,
    /// Checkpoint (`PASSIVE`) between groups once the WAL holds this many
    /// frames not yet copied back; `None`: SQLite checkpoints inside the
    /// committer's `COMMIT`, as usual (`wal_autocheckpoint`).
    pub checkpoint_frames: Option<u32>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            max_group: MAX_GROUP,
            sibling_wait_max: SIBLING_WAIT_MAX,
            checkpoint_frames: Some(CHECKPOINT_FRAMES),
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

/// What the committer waits for, so that a client wakes it only then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Awaiting {
    /// Nothing: it is committing (or about to look at the queue).
    Nothing,
    /// Any transaction, or the last client leaving: the queue is empty.
    First,
    /// The last transaction on its way (`preparing` reaching zero), or a
    /// full group.
    Last,
}

/// The queue between the clients and the committer.
struct Queue {
    requests: Vec<Request>,
    /// Clients with a transaction begun and not yet queued: a client counts
    /// itself in at `begin` and out when it queues the transaction, rolls
    /// back or sends nothing.
    preparing: usize,
    /// Clients and the `GroupCommitter` handle: the committer ends once
    /// there are none and nothing is queued.
    senders: usize,
    /// The committer has ended (or died): nothing queued will be answered.
    closed: bool,
    awaiting: Awaiting,
}

/// What the committer and its clients share.
struct Shared {
    groups: AtomicU64,
    transactions: AtomicU64,
    checkpoints: AtomicU64,
    max_group: usize,
    queue: Mutex<Queue>,
    /// The committer waits here; see `Queue::awaiting` for when it is woken.
    wake: Condvar,
    heads: Heads,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves the queue consistent (every
        // change is one assignment); keep serving.
        self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes the committer if what it waits for has happened.
    fn wake_if_awaited(&self, queue: &mut Queue) {
        let wake = match queue.awaiting {
            Awaiting::Nothing => false,
            Awaiting::First => !queue.requests.is_empty() || queue.senders == 0,
            Awaiting::Last => queue.preparing == 0 || queue.requests.len() >= self.max_group,
        };
        if wake {
            queue.awaiting = Awaiting::Nothing;
            self.wake.notify_one();
        }
    }

    /// One client stops preparing a transaction without queuing it.
    fn done_preparing(&self) {
        let mut queue = self.queue();
        queue.preparing -= 1;
        self.wake_if_awaited(&mut queue);
    }

    /// One sender (a client, or the `GroupCommitter` handle) goes away.
    fn leave(&self) {
        let mut queue = self.queue();
        queue.senders -= 1;
        self.wake_if_awaited(&mut queue);
    }
}

/// The heads this committer's groups committed, by workflow: a head here
/// was committed, so the workflow's head is at least that.
#[derive(Default)]
struct Heads(Mutex<BTreeMap<String, u64>>);

impl Heads {
    fn get(&self, workflow_id: &str) -> Option<u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(workflow_id)
            .copied()
    }

    /// Records the heads of the members that committed.
    fn record(&self, group: &[Request], outcomes: &[Result<()>]) {
        let mut heads = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if heads.len() >= HEADS_MAX {
            heads.clear();
        }
        let committed = group.iter().zip(outcomes).filter(|(_, outcome)| outcome.is_ok());
        for append in committed.flat_map(|(request, _)| &request.transaction.appends) {
            let seq = append.expected_seq + 1;
            match heads.get_mut(append.workflow_id.as_str()) {
                Some(head) => *head = (*head).max(seq),
                None => {
                    heads.insert(append.workflow_id.clone(), seq);
                }
            }
        }
    }
}

/// The committer thread and the way to reach it.
pub struct GroupCommitter {
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl GroupCommitter {
    /// Starts the committer thread on `conn` (opened by `connection::open*`)
    /// with at most `max_group` transactions per group and the default
    /// sibling wait and checkpoints.
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
        let shared = Arc::new(Shared {
            groups: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            max_group: tuning.max_group.max(1),
            queue: Mutex::new(Queue {
                requests: Vec::new(),
                preparing: 0,
                senders: 1,
                closed: false,
                awaiting: Awaiting::Nothing,
            }),
            wake: Condvar::new(),
            heads: Heads::default(),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("group-committer".to_string())
            .spawn(move || {
                let _closing = Closing(&thread_shared);
                serve(&conn, &tuning, &thread_shared);
            })
            .expect("spawn the committer thread");
        GroupCommitter {
            thread: Some(thread),
            shared,
        }
    }

    /// A writer's handle: reads go through `local`, commits through the committer.
    pub fn client(&self, local: ReferenceStore) -> GroupCommitClient {
        self.shared.queue().senders += 1;
        GroupCommitClient {
            local,
            draft: Draft::default(),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Clients with a transaction begun and not yet queued (for tests).
    pub fn preparing(&self) -> usize {
        self.shared.queue().preparing
    }

    /// Checkpoints run between groups so far.
    pub fn checkpoints(&self) -> u64 {
        self.shared.checkpoints.load(Ordering::Relaxed)
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
        self.shared.leave();
        if let Some(thread) = self.thread.take() {
            // A panic on the committer thread is a crashsim bug; surface it.
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        self.stats()
    }
}

impl Drop for GroupCommitter {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Dropped without `stop`: the thread ends after the last client.
            self.shared.leave();
        }
    }
}

/// On the committer thread's way out, however it leaves: nothing queued
/// will be answered, so the queue is closed and emptied (each waiting
/// client hears its reply channel close).
struct Closing<'a>(&'a Shared);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        queue.closed = true;
        queue.requests.clear();
    }
}

/// The committer thread's loop.
fn serve(conn: &Connection, tuning: &Tuning, shared: &Shared) {
    if tuning.checkpoint_frames.is_some() {
        // The committer checkpoints between groups instead.
        let _ = conn.pragma_update(None, "wal_autocheckpoint", 0);
    }
    // No COMMIT yet: wait as long as allowed for the first group.
    let mut last_commit = tuning.sibling_wait_max;
    while let Some(group) = gather(shared, last_commit.min(tuning.sibling_wait_max)) {
        let members: Vec<&Transaction> = group.iter().map(|request| &request.transaction).collect();
        let started = now();
        let outcome = commit_group(conn, &members);
        last_commit = now() - started;
        match outcome {
            Ok(outcomes) => {
                shared.groups.fetch_add(1, Ordering::Relaxed);
                shared.transactions.fetch_add(group.len() as u64, Ordering::Relaxed);
                shared.heads.record(&group, &outcomes);
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
        if let Some(frames) = tuning.checkpoint_frames
            && checkpoint_if_due(conn, frames)
        {
            shared.checkpoints.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The next group: waits for a first transaction, then for the clients
/// still preparing one, at most `wait`. `None`: every sender is gone and
/// nothing is queued.
fn gather(shared: &Shared, wait: Duration) -> Option<Vec<Request>> {
    let mut queue = shared.queue();
    while queue.requests.is_empty() {
        if queue.senders == 0 {
            return None;
        }
        queue.awaiting = Awaiting::First;
        queue = shared
            .wake
            .wait(queue)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
    let deadline = now() + wait;
    while queue.preparing > 0 && queue.requests.len() < shared.max_group {
        let left = deadline.saturating_duration_since(now());
        if left.is_zero() {
            break;
        }
        queue.awaiting = Awaiting::Last;
        queue = shared
            .wake
            .wait_timeout(queue, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    queue.awaiting = Awaiting::Nothing;
    let members = queue.requests.len().min(shared.max_group);
    Some(queue.requests.drain(..members).collect())
}

/// A `PASSIVE` checkpoint if the WAL holds `frames` or more frames not yet
/// copied back; whether one ran. A failure (a reader in the way) is left
/// for the next group to retry.
fn checkpoint_if_due(conn: &Connection, frames: u32) -> bool {
    let counts = conn
        .prepare_cached("PRAGMA wal_checkpoint(NOOP)")
        .and_then(|mut statement| statement.query_row([], |row| Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))));
    let Ok((log, copied)) = counts else {
        return false;
    };
    if log - copied < i64::from(frames) {
        return false;
    }
    conn.prepare_cached("PRAGMA wal_checkpoint(PASSIVE)")
        .and_then(|mut statement| statement.query_row([], |_| Ok(())))
        .is_ok()
}

/// One writer's view of a threaded group-commit store. `commit` blocks
/// until the transaction's group has committed (or failed).
pub struct GroupCommitClient {
    local: ReferenceStore,
    draft: Draft,
    shared: Arc<Shared>,
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
        self.shared.queue().preparing += 1;
        Ok(())
    }

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        let (reader, heads) = (self.local.conn(), &self.shared.heads);
        self.draft
            .insert_event_with(workflow_id, expected_seq, kind, payload, || {
                match heads.get(workflow_id) {
                    // Committed here: the head is that far at least.
                    Some(head) if head >= expected_seq => Ok(head),
                    _ => events::last_seq(reader, workflow_id),
                }
            })
    }

    fn insert_command(&mut self, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
        self.draft.insert_command(workflow_id, event_seq, index, command)
    }

    fn commit(&mut self) -> Result<()> {
        let transaction = self.draft.take()?;
        if transaction.is_empty() {
            self.shared.done_preparing();
            return Ok(());
        }
        // The committer holds the only sender: if it ends without an
        // answer, `recv` hears so.
        let (reply, outcome) = mpsc::sync_channel(1);
        {
            let mut queue = self.shared.queue();
            queue.preparing -= 1;
            if queue.closed {
                return Err(stopped());
            }
            queue.requests.push(Request { transaction, reply });
            self.shared.wake_if_awaited(&mut queue);
        }
        outcome.recv().map_err(|_| stopped())?
    }

    fn rollback(&mut self) -> Result<()> {
        if self.draft.is_open() {
            self.draft.discard();
            self.shared.done_preparing();
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
        self.shared.leave();
    }
}

#[cfg(test)]
#[path = "threaded_tests.rs"]
mod tests;
