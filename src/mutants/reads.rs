//! Mutants whose reads answer wrongly (crashsim's mistake 15): the store's
//! writes are right, but what it tells the engine is not. Caught only by
//! judging each answer against what the trace fixes (`check::answers`),
//! never by believing it.

use rusqlite::params;

use super::forward::forward_store;
use crate::model::{Head, OutboxRow, StoredEvent};
use crate::store::Leased;
use crate::store::events;
use crate::store::outbox::{self, COLUMNS};
use crate::store::reference::ReferenceStore;
use crate::store::{Result, Store};

/// `pending` pages through the outbox with an `OFFSET` it keeps between
/// calls, starting over only when a page comes back empty. Rows marked done
/// meanwhile shift the rest down, so the next page skips as many pending
/// rows as were done: they wait for the wrap-around, or, with a worker
/// that reads only as long as pages come back full, forever.
pub struct PendingOffsetDrift {
    pub inner: ReferenceStore,
    pub offset: usize,
}

impl Store for PendingOffsetDrift {
    forward_store!(
        load,
        heads,
        commands,
        begin,
        insert_event,
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

    fn pending(&mut self, limit: usize) -> Result<Vec<OutboxRow>> {
        let sql = format!("SELECT {COLUMNS} FROM outbox WHERE processed_at IS NULL ORDER BY rowid LIMIT ?1 OFFSET ?2");
        let mut statement = self.inner.conn().prepare_cached(&sql)?;
        let rows = statement.query_map(params![limit as i64, self.offset as i64], outbox::row)?;
        let rows: Vec<OutboxRow> = rows.collect::<rusqlite::Result<_>>()?;
        self.offset = match rows.is_empty() {
            true => 0,
            false => self.offset + rows.len(),
        };
        Ok(rows)
    }
}

/// `load` orders a workflow's events by `created_at` (stamped with
/// `CURRENT_TIMESTAMP`, a second's grain, by the writer's own clock)
/// instead of by `seq`: right while clocks agree, wrong when one steps back.
pub struct LoadByTimestamp {
    pub inner: ReferenceStore,
}

impl Store for LoadByTimestamp {
    forward_store!(
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
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn load(&mut self, workflow_id: &str) -> Result<Vec<StoredEvent>> {
        let sql = "SELECT seq, kind, payload FROM events WHERE workflow_id = ?1 ORDER BY created_at";
        events::load_query(self.inner.conn(), sql, workflow_id)
    }
}

/// `heads` counts a workflow's done commands over all its events, not only
/// the head event's (the join forgets `event_seq`): once an earlier step's
/// command is done, the head reports commands done that no worker marked.
pub struct HeadsDoneUnscoped {
    pub inner: ReferenceStore,
}

impl Store for HeadsDoneUnscoped {
    forward_store!(
        load,
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
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn heads(&mut self) -> Result<Vec<Head>> {
        let sql = "SELECT h.workflow_id, h.seq, h.kind,
                (SELECT COUNT(*) FROM outbox o
                  WHERE o.workflow_id = h.workflow_id AND o.processed_at IS NOT NULL)
           FROM (SELECT workflow_id, MAX(seq) AS seq, kind FROM events GROUP BY workflow_id) h
          ORDER BY h.workflow_id";
        events::heads_query(self.inner.conn(), sql)
    }
}

/// `claim` takes only rows nobody ever leased (`lease_expires IS NULL`),
/// never one whose lease expired: a worker that dies holding a lease
/// leaves its rows to no one. Its answers look fine one by one (rows,
/// tokens, expiries); only what they leave out is wrong.
pub struct ClaimUnleasedOnly {
    pub inner: ReferenceStore,
}

impl Store for ClaimUnleasedOnly {
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
        mark_done_leased,
        schedule_retry,
        timers
    );

    fn claim(&mut self, owner: &str, lease_ticks: u64, limit: usize) -> Result<Vec<Leased>> {
        let sql = format!(
            "UPDATE outbox SET lease_owner = ?1, lease_expires = ?2 + ?3, lease_token = lease_token + 1
              WHERE rowid IN (SELECT rowid FROM outbox WHERE processed_at IS NULL AND lease_expires IS NULL
                               ORDER BY rowid LIMIT ?4)
             RETURNING rowid, lease_token, lease_expires, {COLUMNS}"
        );
        let now = self.inner.now();
        let mut statement = self.inner.conn().prepare_cached(&sql)?;
        let rows = statement.query_map(params![owner, now as i64, lease_ticks as i64, limit as i64], |row| {
            let rowid: i64 = row.get(0)?;
            let token: i64 = row.get(1)?;
            let expires: i64 = row.get(2)?;
            let leased = Leased {
                row: outbox::row_at(row, 3)?,
                token: token as u64,
                expires: expires as u64,
            };
            Ok((rowid, leased))
        })?;
        let mut claimed = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        claimed.sort_by_key(|(rowid, _)| *rowid);
        Ok(claimed.into_iter().map(|(_, leased)| leased).collect())
    }
}
