//! The reference event store's SQL: load, heads, and the optimistic append.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use super::error::{StoreError, is_constraint};
use crate::model::{Head, StoredEvent};

/// The events of one workflow, ordered by `seq`.
pub fn load(conn: &Connection, workflow_id: &str) -> Result<Vec<StoredEvent>> {
    load_query(
        conn,
        "SELECT seq, kind, payload FROM events WHERE workflow_id = ?1 ORDER BY seq",
        workflow_id,
    )
}

/// The events `sql` (`seq, kind, payload`, bound to the workflow id as
/// `?1`) selects, in its order; mutants with another order share it.
pub fn load_query(conn: &Connection, sql: &str, workflow_id: &str) -> Result<Vec<StoredEvent>> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map([workflow_id], |row| {
        Ok(StoredEvent {
            workflow_id: workflow_id.to_string(),
            seq: row.get(0)?,
            kind: row.get(1)?,
            payload: row.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `heads`' query. With MAX() as the only aggregate, SQLite takes the bare
/// column `kind` from the row holding the maximum: one pass over
/// `events_head`, which holds all three columns (a test checks the plan).
const HEADS: &str = "SELECT h.workflow_id, h.seq, h.kind,
        (SELECT COUNT(*) FROM outbox o
          WHERE o.workflow_id = h.workflow_id AND o.event_seq = h.seq
            AND o.processed_at IS NOT NULL)
   FROM (SELECT workflow_id, MAX(seq) AS seq, kind FROM events GROUP BY workflow_id) h
  ORDER BY h.workflow_id";

/// The head event of every workflow, with how many of its commands are done.
pub fn heads(conn: &Connection) -> Result<Vec<Head>> {
    heads_query(conn, HEADS)
}

/// Heads from `sql`, whose columns are those of `HEADS` (a mutant's query
/// reads them the same way).
pub fn heads_query(conn: &Connection, sql: &str) -> Result<Vec<Head>> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map([], |row| {
        Ok(Head {
            workflow_id: row.get(0)?,
            last_seq: row.get(1)?,
            kind: row.get(2)?,
            commands_done: row.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The workflow's last `seq`, 0 if it has no events.
pub fn last_seq(conn: &Connection, workflow_id: &str) -> Result<u64> {
    let mut statement = conn.prepare_cached("SELECT MAX(seq) FROM events WHERE workflow_id = ?1")?;
    let last: Option<u64> = statement
        .query_row([workflow_id], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(last.unwrap_or(0))
}

/// Inserts at `expected_seq + 1` only if the head is still `expected_seq`.
///
/// The primary key alone rejects a writer whose `seq + 1` is taken; the head
/// check also rejects one that would leave a gap. Either way the writer gets
/// `Conflict` and must reload and decide again.
///
/// The check and the insert are two statements, not one
/// `INSERT … SELECT … WHERE (SELECT MAX(seq) …) = ?`: an `INSERT` whose
/// `SELECT` reads the table it writes is first copied into a temporary
/// table, which cost more than the rest of the insert (batches of 100 ran
/// 1.5× faster without it). Nothing can come between the two: a writer
/// holds the write lock (`BEGIN IMMEDIATE`), and without one the head can
/// only move by inserting `expected_seq + 1`, which the primary key rejects.
pub fn insert(conn: &Connection, workflow_id: &str, expected_seq: u64, kind: &str, payload: &str) -> Result<u64> {
    let conflict = || StoreError::Conflict {
        workflow_id: workflow_id.to_string(),
        expected_seq,
    };
    if last_seq(conn, workflow_id)? != expected_seq {
        return Err(conflict());
    }
    match insert_row(conn, workflow_id, expected_seq + 1, kind, payload) {
        Ok(()) => Ok(expected_seq + 1),
        Err(error) if is_constraint(&error) => Err(conflict()),
        Err(error) => Err(error.into()),
    }
}

/// Writes the event at `seq`, checking nothing but the primary key.
pub fn insert_row(conn: &Connection, workflow_id: &str, seq: u64, kind: &str, payload: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO events (workflow_id, seq, kind, payload) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![workflow_id, seq, kind, payload])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        crate::store::reference::ReferenceStore::create_schema_in(&conn).unwrap();
        conn
    }

    #[test]
    fn heads_reads_the_events_from_the_covering_index_alone() {
        let conn = store();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {HEADS}"))
            .unwrap()
            .query_map([], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step == "SCAN events USING COVERING INDEX events_head"),
            "{plan:#?}"
        );
    }

    #[test]
    fn a_head_is_the_last_event_with_its_own_kind() {
        let conn = store();
        for (workflow_id, seq, kind) in [
            ("b", 1, "requested"),
            ("a", 1, "requested"),
            ("a", 2, "booked"),
            ("a", 3, "paid"),
        ] {
            insert_row(&conn, workflow_id, seq, kind, "{}").unwrap();
        }
        let heads: Vec<(String, u64, String)> = heads(&conn)
            .unwrap()
            .into_iter()
            .map(|head| (head.workflow_id, head.last_seq, head.kind))
            .collect();
        assert_eq!(
            heads,
            [("a".into(), 3, "paid".into()), ("b".into(), 1, "requested".into())]
        );
    }
}
