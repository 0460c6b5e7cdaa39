//! The reference outbox's SQL: enqueue, pending, an event's commands, mark done.

use rusqlite::{Connection, Row, params};

use super::Result;
use crate::model::{Command, OutboxRow, command_id};

/// The columns `row` reads, in its order.
pub(crate) const COLUMNS: &str = "command_id, workflow_id, event_seq, kind, payload, processed_at IS NOT NULL, result";

/// An outbox row from a query of `COLUMNS`.
pub(crate) fn row(row: &Row<'_>) -> rusqlite::Result<OutboxRow> {
    row_at(row, 0)
}

/// An outbox row from a query whose `COLUMNS` start at column `at`.
pub(crate) fn row_at(row: &Row<'_>, at: usize) -> rusqlite::Result<OutboxRow> {
    Ok(OutboxRow {
        command_id: row.get(at)?,
        workflow_id: row.get(at + 1)?,
        event_seq: row.get(at + 2)?,
        kind: row.get(at + 3)?,
        payload: row.get(at + 4)?,
        done: row.get(at + 5)?,
        result: row.get(at + 6)?,
    })
}

/// Enqueues a command under its derived id (PROTOCOL.md §3).
pub fn insert(conn: &Connection, workflow_id: &str, event_seq: u64, index: usize, command: &Command) -> Result<String> {
    let id = command_id(workflow_id, event_seq, index);
    let mut statement = conn.prepare_cached(
        "INSERT INTO outbox (command_id, workflow_id, event_seq, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    statement.execute(params![id, workflow_id, event_seq, command.kind, command.payload])?;
    Ok(id)
}

/// Pending rows, oldest commit first (rowid order is commit order here).
pub fn pending(conn: &Connection, limit: usize) -> Result<Vec<OutboxRow>> {
    let sql = format!("SELECT {COLUMNS} FROM outbox WHERE processed_at IS NULL ORDER BY rowid LIMIT ?1");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map([limit as i64], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The commands of one event, in emission order.
pub fn of_event(conn: &Connection, workflow_id: &str, event_seq: u64) -> Result<Vec<OutboxRow>> {
    let sql = format!("SELECT {COLUMNS} FROM outbox WHERE workflow_id = ?1 AND event_seq = ?2 ORDER BY rowid");
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![workflow_id, event_seq], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Marks a row done with its result; false if nothing changed.
///
/// A row already done with a result is never touched again. A row marked done
/// without one (by an engine that marks before confirmation) gets its result
/// when it comes.
pub fn mark_done(conn: &Connection, command_id: &str, result: Option<&str>) -> Result<bool> {
    let mut statement = conn.prepare_cached(
        "UPDATE outbox SET processed_at = COALESCE(processed_at, CURRENT_TIMESTAMP), result = ?2
          WHERE command_id = ?1 AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))",
    )?;
    Ok(statement.execute(params![command_id, result])? == 1)
}
