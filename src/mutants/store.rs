//! Mutants of the event store and outbox (mistakes 1–3, 11).

use super::forward::forward_store;
use crate::store::reference::ReferenceStore;
use crate::store::{Result, Store, StoreError, events};

/// Mistake 1: the sequence is computed as `MAX(seq) + 1` and inserted
/// unconditionally, so a stale writer's event lands after the one it raced.
pub struct MaxSeqPlusOne {
    pub inner: ReferenceStore,
}

impl Store for MaxSeqPlusOne {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        begin,
        insert_command,
        commit,
        rollback,
        mark_done,
        connection,
        claim,
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn insert_event(&mut self, workflow_id: &str, _expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        let conn = self.inner.conn();
        let seq = events::last_seq(conn, workflow_id)? + 1;
        events::insert_row(conn, workflow_id, seq, kind, payload)?;
        Ok(seq)
    }
}

/// Mistake 2: on a conflict, the event is renumbered to the next free `seq`
/// instead of being decided again: a stale decision disguised as a new fact.
pub struct RenumberOnConflict {
    pub inner: ReferenceStore,
}

impl Store for RenumberOnConflict {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        begin,
        insert_command,
        commit,
        rollback,
        mark_done,
        connection,
        claim,
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        match self.inner.insert_event(workflow_id, expected_seq, kind, payload) {
            Err(StoreError::Conflict { .. }) => {
                let conn = self.inner.conn();
                let head = events::last_seq(conn, workflow_id)?;
                self.inner.insert_event(workflow_id, head, kind, payload)
            }
            other => other,
        }
    }
}

/// Mistake 3: the event and its outbox rows are committed in separate
/// transactions: the event commits as soon as it is inserted.
pub struct SplitTransactions {
    pub inner: ReferenceStore,
}

impl Store for SplitTransactions {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        begin,
        insert_command,
        commit,
        rollback,
        mark_done,
        connection,
        claim,
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn insert_event(&mut self, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
        let seq = self.inner.insert_event(workflow_id, expected_seq, kind, payload)?;
        // The event is durable now; the commands follow in a transaction of their own.
        self.inner.commit()?;
        self.inner.begin()?;
        Ok(seq)
    }
}

/// Mistake 11: leases without fencing. `mark_done` goes by `command_id`
/// alone: the token is not compared, nor is a done row left alone, so a
/// holder whose lease expired while it paused, and passed to another
/// worker, still acknowledges, overwriting the current holder's result.
pub struct UnfencedMarkDone {
    pub inner: ReferenceStore,
}

impl Store for UnfencedMarkDone {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        begin,
        insert_event,
        insert_command,
        commit,
        rollback,
        mark_done,
        connection,
        claim,
        schedule_retry,
        timers
    );

    fn mark_done_leased(&mut self, command_id: &str, _token: u64, result: Option<&str>) -> Result<bool> {
        let mut statement = self.inner.conn().prepare_cached(
            "UPDATE outbox SET processed_at = COALESCE(processed_at, CURRENT_TIMESTAMP), result = ?2
              WHERE command_id = ?1",
        )?;
        Ok(statement.execute(rusqlite::params![command_id, result])? == 1)
    }
}

/// Mistake 3 again, as Python's `sqlite3` users meet it: the append runs
/// in autocommit mode (no `BEGIN`), so each statement commits on its own.
/// The event and its commands are all stored once the last insert ran, so
/// the final state looks whole; but a writer that dies before its
/// `COMMIT` has already left its event for the next writer to build on.
pub struct Autocommit {
    pub inner: ReferenceStore,
}

impl Store for Autocommit {
    forward_store!(
        load,
        heads,
        commands,
        pending,
        insert_event,
        insert_command,
        mark_done,
        connection,
        claim,
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn begin(&mut self) -> Result<()> {
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        Ok(())
    }
}
