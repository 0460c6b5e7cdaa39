//! Durable retry timers and the dead letter: the reference's SQL for
//! recording a retryable failure, and the outbox reads that honour timers
//! (PROTOCOL.md §5, "Durable timers and backoff").
//!
//! A delivery that ends with a retryable error is recorded in one statement
//! (`schedule`): the row's `attempts` grows by one, `last_error` keeps the
//! error, and either `next_attempt_at` is set to `now + delay` (the row is
//! not pending before then), or, once `attempts` reaches `max_attempts`,
//! `dead_lettered_at` is set (the row waits for a person: never pending
//! again, never done). The delay after attempt `n` is
//! `min(cap, base·2^(n-1))` plus a jitter of `delay · jitter_permille / 1000`
//! (the worker draws `jitter_permille` in `0..=500` from its own stream, so
//! at most half the delay). The timer lives in the database, so a restarted
//! worker finds it there; nothing about it is kept in memory.
//!
//! With leases the call is fenced like `lease::mark_done`: it counts only
//! while the caller's token is the row's current one (a stale holder cannot
//! reschedule a row someone else holds), and it releases the lease, since
//! the row is due again only at its timer anyway.
//!
//! Schema: four columns of `outbox` (`attempts`, `next_attempt_at` and
//! `dead_lettered_at` in ticks, `last_error`), added only to the files of
//! runs with `[retries]` (`enable`), so other runs' files stay what they were.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::Result;
use super::lease::Leased;
use super::outbox::{COLUMNS, row, row_at};
use crate::model::OutboxRow;

/// How retryable failures are retried (the scenario's `[retries]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub backoff_base_ticks: u64,
    pub backoff_cap_ticks: u64,
}

impl RetryPolicy {
    /// The delay after failed attempt `attempt` (from 1), with `jitter_permille`
    /// thousandths of it added: what `schedule` stores, in Rust.
    pub fn delay(&self, attempt: u32, jitter_permille: u64) -> u64 {
        let doubled = self
            .backoff_base_ticks
            .saturating_mul(1u64 << attempt.saturating_sub(1).min(40));
        let delay = doubled.min(self.backoff_cap_ticks);
        delay + delay * jitter_permille / 1000
    }
}

/// What recording a retryable failure did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retried {
    /// Failed attempts so far, this one included.
    pub attempts: u32,
    /// The tick the row is due again at; `None` once it is dead-lettered.
    pub next_attempt_at: Option<u64>,
    /// Whether the row went to the dead letter now.
    pub dead_lettered: bool,
}

/// The retry state of one outbox row that failed at least once, as the
/// final dump and the settle check read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    pub command_id: String,
    pub workflow_id: String,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_lettered_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub done: bool,
}

impl Timer {
    /// Failed, not done, not dead-lettered: waiting for its timer.
    pub fn waiting(&self) -> bool {
        !self.done && self.dead_lettered_at.is_none()
    }
}

/// Whether `conn`'s outbox has the timer columns.
///
/// Asked by preparing a statement that names one: every connection asks on
/// open, and `pragma_table_info` cost a nested statement's parse on top.
/// SQLite answers a missing column (or table) with a plain `SQLITE_ERROR`;
/// anything else (busy, I/O, corruption) is an error.
pub fn enabled(conn: &Connection) -> rusqlite::Result<bool> {
    match conn.prepare("SELECT next_attempt_at FROM outbox") {
        Ok(_) => Ok(true),
        Err(rusqlite::Error::SqlInputError { error, .. } | rusqlite::Error::SqliteFailure(error, _))
            if error.code == rusqlite::ErrorCode::Unknown =>
        {
            Ok(false)
        }
        Err(error) => Err(error),
    }
}

/// Adds the timer columns to `outbox`, if they are not there yet.
pub fn enable(conn: &Connection) -> Result<()> {
    if !enabled(conn)? {
        conn.execute_batch(
            "ALTER TABLE outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0; -- failed (retryable) attempts
             ALTER TABLE outbox ADD COLUMN next_attempt_at INTEGER;           -- tick; NULL: due now
             ALTER TABLE outbox ADD COLUMN last_error TEXT;                   -- the last retryable error
             ALTER TABLE outbox ADD COLUMN dead_lettered_at INTEGER;          -- tick; NULL: not dead-lettered",
        )?;
    }
    Ok(())
}

/// The rows that are due: pending, not dead-lettered, timer passed.
const DUE: &str =
    "processed_at IS NULL AND dead_lettered_at IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)";

/// Pending rows that are due at `now`, oldest commit first.
pub fn pending(conn: &Connection, now: u64, limit: usize) -> Result<Vec<OutboxRow>> {
    let sql = format!("SELECT {COLUMNS} FROM outbox WHERE {DUE} ORDER BY rowid LIMIT ?2");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![now as i64, limit as i64], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `lease::claim` that also skips rows whose timer is in the future and
/// dead-lettered rows.
pub fn claim(conn: &Connection, owner: &str, now: u64, ticks: u64, limit: usize) -> Result<Vec<Leased>> {
    let sql = format!(
        "UPDATE outbox SET lease_owner = ?3, lease_expires = ?1 + ?4, lease_token = lease_token + 1
          WHERE rowid IN (SELECT rowid FROM outbox
                           WHERE {DUE} AND (lease_expires IS NULL OR lease_expires <= ?1)
                           ORDER BY rowid LIMIT ?2)
         RETURNING rowid, lease_token, lease_expires, {COLUMNS}"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![now as i64, limit as i64, owner, ticks as i64], |row| {
        let rowid: i64 = row.get(0)?;
        let token: i64 = row.get(1)?;
        let expires: i64 = row.get(2)?;
        Ok((
            rowid,
            Leased {
                row: row_at(row, 3)?,
                token: token as u64,
                expires: expires as u64,
            },
        ))
    })?;
    let mut claimed = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    // RETURNING gives rows in no promised order.
    claimed.sort_by_key(|(rowid, _)| *rowid);
    Ok(claimed.into_iter().map(|(_, leased)| leased).collect())
}

/// Records a retryable failure of `command_id` at `now` (module docs); with
/// a `token`, only while it is the row's current fencing token, and the
/// lease is released. `None` if nothing changed: the row is done or
/// dead-lettered already, or the lease passed to another holder.
pub fn schedule(
    conn: &Connection,
    command_id: &str,
    token: Option<u64>,
    now: u64,
    error: &str,
    policy: &RetryPolicy,
    jitter_permille: u64,
) -> Result<Option<Retried>> {
    let fence = match token {
        None => "",
        Some(_) => ", lease_owner = NULL, lease_expires = NULL",
    };
    let fenced = match token {
        None => "",
        Some(_) => " AND lease_token = ?8",
    };
    let sql = format!(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ?2,
                next_attempt_at = CASE WHEN attempts + 1 >= ?4 THEN NULL
                    ELSE ?3 + min(?6, ?5 << min(attempts, 40)) * (1000 + ?7) / 1000 END,
                dead_lettered_at = CASE WHEN attempts + 1 >= ?4 THEN ?3 ELSE NULL END{fence}
          WHERE command_id = ?1 AND processed_at IS NULL AND dead_lettered_at IS NULL{fenced}
         RETURNING attempts, next_attempt_at, dead_lettered_at"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let values = params![
        command_id,
        error,
        now as i64,
        i64::from(policy.max_attempts),
        policy.backoff_base_ticks as i64,
        policy.backoff_cap_ticks as i64,
        jitter_permille.min(500) as i64,
        token.unwrap_or(0) as i64,
    ];
    // Without a token the statement names no `?8`, and SQLite refuses an
    // extra parameter.
    let values = if token.is_some() { values } else { &values[..7] };
    let retried = statement
        .query_row(values, |row| {
            let attempts: i64 = row.get(0)?;
            let next: Option<i64> = row.get(1)?;
            let dead: Option<i64> = row.get(2)?;
            Ok(Retried {
                attempts: attempts as u32,
                next_attempt_at: next.map(|tick| tick as u64),
                dead_lettered: dead.is_some(),
            })
        })
        .optional()?;
    Ok(retried)
}

/// `outbox::mark_done` that never marks a dead-lettered row done: it waits
/// for a person, whatever a late reply says.
pub fn mark_done(conn: &Connection, command_id: &str, token: Option<u64>, result: Option<&str>) -> Result<bool> {
    let fenced = match token {
        None => "",
        Some(_) => " AND lease_token = ?3",
    };
    let sql = format!(
        "UPDATE outbox SET processed_at = COALESCE(processed_at, CURRENT_TIMESTAMP), result = ?2
          WHERE command_id = ?1 AND dead_lettered_at IS NULL{fenced}
            AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let changed = match token {
        None => statement.execute(params![command_id, result])?,
        Some(token) => statement.execute(params![command_id, result, token as i64])?,
    };
    Ok(changed == 1)
}

/// Every row that failed at least once, oldest commit first.
pub fn timers(conn: &Connection) -> rusqlite::Result<Vec<Timer>> {
    let mut statement = conn.prepare(
        "SELECT command_id, workflow_id, attempts, next_attempt_at, dead_lettered_at, last_error,
                processed_at IS NOT NULL
           FROM outbox WHERE attempts > 0 OR dead_lettered_at IS NOT NULL ORDER BY rowid",
    )?;
    let rows = statement.query_map([], |row| {
        let attempts: i64 = row.get(2)?;
        let next: Option<i64> = row.get(3)?;
        let dead: Option<i64> = row.get(4)?;
        Ok(Timer {
            command_id: row.get(0)?,
            workflow_id: row.get(1)?,
            attempts: attempts as u32,
            next_attempt_at: next.map(|tick| tick as u64),
            dead_lettered_at: dead.map(|tick| tick as u64),
            last_error: row.get(5)?,
            done: row.get(6)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Command;

    const POLICY: RetryPolicy = RetryPolicy {
        max_attempts: 3,
        backoff_base_ticks: 10,
        backoff_cap_ticks: 25,
    };

    fn store(leases: bool) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        super::super::reference::ReferenceStore::create_schema_in(&conn).unwrap();
        if leases {
            super::super::lease::enable(&conn).unwrap();
        }
        enable(&conn).unwrap();
        enable(&conn).unwrap(); // twice: a no-op
        let command = Command {
            kind: "lock_budget".into(),
            payload: "{}".into(),
        };
        for seq in 1..=2 {
            super::super::outbox::insert(&conn, "trip-000", seq, 0, &command).unwrap();
        }
        conn
    }

    fn ids(rows: &[OutboxRow]) -> Vec<&str> {
        rows.iter().map(|row| row.command_id.as_str()).collect()
    }

    #[test]
    fn the_delay_doubles_up_to_the_cap_and_jitter_adds_at_most_half() {
        assert_eq!(POLICY.delay(1, 0), 10);
        assert_eq!(POLICY.delay(2, 0), 20);
        assert_eq!(POLICY.delay(3, 0), 25);
        assert_eq!(POLICY.delay(2, 500), 30);
        assert_eq!(POLICY.delay(60, 0), 25);
    }

    #[test]
    fn a_timer_hides_the_row_until_due_then_the_dead_letter_hides_it_for_good() {
        let conn = store(false);
        let first = schedule(&conn, "trip-000:1:0", None, 100, "busy", &POLICY, 0).unwrap();
        assert_eq!(
            first,
            Some(Retried {
                attempts: 1,
                next_attempt_at: Some(110),
                dead_lettered: false
            })
        );
        assert_eq!(ids(&pending(&conn, 109, 10).unwrap()), ["trip-000:2:0"]);
        assert_eq!(ids(&pending(&conn, 110, 10).unwrap()), ["trip-000:1:0", "trip-000:2:0"]);
        let second = schedule(&conn, "trip-000:1:0", None, 110, "busy", &POLICY, 500).unwrap();
        assert_eq!(second.unwrap().next_attempt_at, Some(110 + POLICY.delay(2, 500)));
        let third = schedule(&conn, "trip-000:1:0", None, 200, "still busy", &POLICY, 0).unwrap();
        assert_eq!(
            third,
            Some(Retried {
                attempts: 3,
                next_attempt_at: None,
                dead_lettered: true
            })
        );
        assert_eq!(ids(&pending(&conn, 1_000_000, 10).unwrap()), ["trip-000:2:0"]);
        // Dead is dead: no more attempts, and never done.
        assert_eq!(
            schedule(&conn, "trip-000:1:0", None, 300, "x", &POLICY, 0).unwrap(),
            None
        );
        assert!(!mark_done(&conn, "trip-000:1:0", None, Some("tok-1")).unwrap());
        let timers = timers(&conn).unwrap();
        assert_eq!(timers.len(), 1);
        assert_eq!(timers[0].attempts, 3);
        assert_eq!(timers[0].dead_lettered_at, Some(200));
        assert_eq!(timers[0].last_error.as_deref(), Some("still busy"));
        assert!(!timers[0].done && !timers[0].waiting());
    }

    #[test]
    fn the_probe_answers_from_the_schema() {
        let bare = Connection::open_in_memory().unwrap();
        assert!(!enabled(&bare).unwrap(), "no outbox at all");
        super::super::reference::ReferenceStore::create_schema_in(&bare).unwrap();
        assert!(!enabled(&bare).unwrap(), "an outbox without the columns");
        enable(&bare).unwrap();
        assert!(enabled(&bare).unwrap());
    }

    #[test]
    fn a_done_row_takes_no_timer() {
        let conn = store(false);
        assert!(mark_done(&conn, "trip-000:1:0", None, Some("tok-1")).unwrap());
        assert_eq!(
            schedule(&conn, "trip-000:1:0", None, 5, "late", &POLICY, 0).unwrap(),
            None
        );
    }

    #[test]
    fn with_leases_only_the_current_holder_schedules_and_the_lease_is_released() {
        let conn = store(true);
        let first = claim(&conn, "worker-0.0", 0, 50, 1).unwrap();
        assert_eq!(first[0].token, 1);
        let second = claim(&conn, "worker-1.0", 60, 50, 1).unwrap();
        assert_eq!(second[0].token, 2);
        // The stale holder cannot reschedule.
        assert_eq!(
            schedule(&conn, "trip-000:1:0", Some(1), 61, "x", &POLICY, 0).unwrap(),
            None
        );
        let retried = schedule(&conn, "trip-000:1:0", Some(2), 62, "x", &POLICY, 0).unwrap();
        assert_eq!(retried.unwrap().next_attempt_at, Some(72));
        // Released, but not claimable before its timer.
        let early = claim(&conn, "worker-2.0", 71, 50, 5).unwrap();
        assert!(early.iter().all(|leased| leased.row.command_id != "trip-000:1:0"));
        let due = claim(&conn, "worker-2.0", 72, 50, 5).unwrap();
        assert_eq!(due[0].row.command_id, "trip-000:1:0");
        assert!(mark_done(&conn, "trip-000:1:0", Some(due[0].token), Some("tok-1")).unwrap());
    }
}
