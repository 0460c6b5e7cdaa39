//! De-duplication retention: the reference receiver's SQL for stamping each
//! de-dup record with the tick it was applied at, and for purging the old
//! ones (PROTOCOL.md §4, last bullet).
//!
//! A receiver cannot keep every record forever in practice; it may purge a
//! record once no producer can still retry its command: after the retry
//! horizon (`scenario::horizon`). Purging sooner is mistake 12: a late
//! retry finds no record and applies the command again (I2).
//!
//! Schema: one column of `dedup` (`recorded_at`, in ticks), added only to
//! the files of runs with a retention (`enable`), so other runs' files stay
//! what they were. A record without a tick (written by a receiver that does
//! not stamp) is never purged.

use rusqlite::{Connection, params};

use super::Result;

/// Adds the `recorded_at` column to `dedup`, if it is not there yet.
pub fn enable(conn: &Connection) -> Result<()> {
    let has: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('dedup') WHERE name = 'recorded_at'",
        [],
        |row| row.get(0),
    )?;
    if !has {
        conn.execute_batch("ALTER TABLE dedup ADD COLUMN recorded_at INTEGER; -- tick the effect was applied at")?;
    }
    Ok(())
}

/// Stamps the record of `key` with `now`, in the transaction that wrote it.
pub fn stamp(conn: &Connection, key: &str, now: u64) -> Result<()> {
    conn.prepare_cached("UPDATE dedup SET recorded_at = ?2 WHERE key = ?1")?
        .execute(params![key, now as i64])?;
    Ok(())
}

/// Deletes the records applied before `older_than`; returns how many.
pub fn purge(conn: &Connection, older_than: u64) -> Result<u64> {
    let removed = conn
        .prepare_cached("DELETE FROM dedup WHERE recorded_at < ?1")?
        .execute([older_than as i64])?;
    Ok(removed as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stamped_records_older_than_the_cut_go() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(include_str!("receiver.sql")).unwrap();
        enable(&conn).unwrap();
        enable(&conn).unwrap();
        for (key, tick) in [("a", Some(10)), ("b", Some(20)), ("c", None)] {
            conn.execute(
                "INSERT INTO dedup (key, digest, result, effect_id) VALUES (?1, 'd', 'r', 1)",
                [key],
            )
            .unwrap();
            if let Some(tick) = tick {
                stamp(&conn, key, tick).unwrap();
            }
        }
        assert_eq!(purge(&conn, 20).unwrap(), 1);
        assert_eq!(purge(&conn, 1_000).unwrap(), 1);
        let left: i64 = conn
            .query_row("SELECT count(*) FROM dedup", [], |row| row.get(0))
            .unwrap();
        assert_eq!(left, 1);
    }
}
