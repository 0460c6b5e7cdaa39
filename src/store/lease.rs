//! Leases with fencing: the reference's SQL for claiming outbox rows and for
//! acknowledging them with a fencing token (PROTOCOL.md §5).
//!
//! With leases on, workers no longer all read every pending row. A worker
//! *claims* up to `limit` pending rows whose lease is free (never leased, or
//! expired by the simulated clock): each claimed row gets the worker as
//! owner, an expiry `now + ticks`, and a fencing token one greater than the
//! row's last one, in one statement. It delivers the rows and acknowledges
//! each with `mark_done(command_id, token, result)`, which counts only while
//! the token is still the row's current one. A holder that paused, or whose
//! reply came late, past its expiry may find the row claimed again by
//! someone else: its acknowledgement is then rejected (false), however
//! confirmed its delivery was. A holder that died leaves nothing behind but
//! a lease that expires.
//!
//! Schema: three columns of `outbox` (`lease_owner`, `lease_expires` in
//! ticks, `lease_token`). They are added only to the files of runs with
//! leases (`enable`), so the files of lease-free runs stay what they were.

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::Result;
use crate::model::OutboxRow;

/// A row claimed under a lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leased {
    pub row: OutboxRow,
    /// The fencing token of this claim: greater than every earlier claim's of the row.
    pub token: u64,
    /// The tick the lease expires at (claimable again from then on).
    pub expires: u64,
}

/// Adds the lease columns to `outbox`, if they are not there yet.
pub fn enable(conn: &Connection) -> Result<()> {
    let has_token: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('outbox') WHERE name = 'lease_token'",
        [],
        |row| row.get(0),
    )?;
    if !has_token {
        conn.execute_batch(
            "ALTER TABLE outbox ADD COLUMN lease_owner TEXT;                       -- NULL: never claimed
             ALTER TABLE outbox ADD COLUMN lease_expires INTEGER;                  -- tick; NULL: never claimed
             ALTER TABLE outbox ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0; -- grows with every claim",
        )?;
    }
    Ok(())
}

/// Claims up to `limit` pending rows whose lease is free at `now` for
/// `owner` until `now + ticks`, oldest commit first; one statement, so two
/// workers never both claim a row.
pub fn claim(conn: &Connection, owner: &str, now: u64, ticks: u64, limit: usize) -> Result<Vec<Leased>> {
    let sql = format!(
        "UPDATE outbox SET lease_owner = ?1, lease_expires = ?2 + ?3, lease_token = lease_token + 1
          WHERE rowid IN (SELECT rowid FROM outbox
                           WHERE processed_at IS NULL AND (lease_expires IS NULL OR lease_expires <= ?2)
                           ORDER BY rowid LIMIT ?4)
         RETURNING rowid, lease_token, lease_expires, {}",
        super::outbox::COLUMNS
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![owner, now as i64, ticks as i64, limit as i64], |row| {
        let rowid: i64 = row.get(0)?;
        let token: i64 = row.get(1)?;
        let expires: i64 = row.get(2)?;
        let outbox = super::outbox::row_at(row, 3)?;
        Ok((
            rowid,
            Leased {
                row: outbox,
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

/// Marks a row done with its result, only while `token` is its current
/// fencing token; false if nothing changed (the lease passed to another
/// holder, or the row is done already). As `outbox::mark_done`, a row done
/// without a result gets its result when it comes.
pub fn mark_done(conn: &Connection, command_id: &str, token: u64, result: Option<&str>) -> Result<bool> {
    let mut statement = conn.prepare_cached(
        "UPDATE outbox SET processed_at = COALESCE(processed_at, CURRENT_TIMESTAMP), result = ?2
          WHERE command_id = ?1 AND lease_token = ?3
            AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))",
    )?;
    Ok(statement.execute(params![command_id, result, token as i64])? == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Command;

    fn store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        super::super::reference::ReferenceStore::create_schema_in(&conn).unwrap();
        enable(&conn).unwrap();
        enable(&conn).unwrap(); // twice: a no-op
        let command = Command {
            kind: "lock_budget".into(),
            payload: "{}".into(),
        };
        for seq in 1..=3 {
            super::super::outbox::insert(&conn, "trip-000", seq, 0, &command).unwrap();
        }
        conn
    }

    fn ids(claimed: &[Leased]) -> Vec<(&str, u64)> {
        claimed
            .iter()
            .map(|leased| (leased.row.command_id.as_str(), leased.token))
            .collect()
    }

    #[test]
    fn a_claim_takes_free_rows_oldest_first_and_only_once() {
        let conn = store();
        let first = claim(&conn, "worker-0.0", 10, 50, 2).unwrap();
        assert_eq!(ids(&first), [("trip-000:1:0", 1), ("trip-000:2:0", 1)]);
        assert!(first.iter().all(|leased| leased.expires == 60));
        // The claimed rows are not free before their expiry.
        let second = claim(&conn, "worker-1.0", 59, 50, 5).unwrap();
        assert_eq!(ids(&second), [("trip-000:3:0", 1)]);
        assert!(claim(&conn, "worker-2.0", 59, 50, 5).unwrap().is_empty());
    }

    #[test]
    fn an_expired_lease_is_claimable_again_with_a_greater_token() {
        let conn = store();
        claim(&conn, "worker-0.0", 0, 50, 1).unwrap();
        let again = claim(&conn, "worker-1.0", 50, 50, 1).unwrap();
        assert_eq!(ids(&again), [("trip-000:1:0", 2)]);
        assert_eq!(again[0].expires, 100);
        let third = claim(&conn, "worker-0.1", 100, 50, 1).unwrap();
        assert_eq!(ids(&third), [("trip-000:1:0", 3)]);
    }

    #[test]
    fn only_the_current_token_acknowledges() {
        let conn = store();
        claim(&conn, "worker-0.0", 0, 50, 1).unwrap();
        claim(&conn, "worker-1.0", 60, 50, 1).unwrap();
        // The first holder's late acknowledgement does not count.
        assert!(!mark_done(&conn, "trip-000:1:0", 1, Some("tok-1")).unwrap());
        let pending = super::super::outbox::pending(&conn, 10).unwrap();
        assert_eq!(pending[0].command_id, "trip-000:1:0");
        assert!(mark_done(&conn, "trip-000:1:0", 2, Some("tok-1")).unwrap());
        // Done is done: neither holder changes it again, nor is it claimable.
        assert!(!mark_done(&conn, "trip-000:1:0", 2, Some("tok-2")).unwrap());
        assert!(!mark_done(&conn, "trip-000:1:0", 1, Some("tok-2")).unwrap());
        let rows = super::super::outbox::of_event(&conn, "trip-000", 1).unwrap();
        assert_eq!(rows[0].result.as_deref(), Some("tok-1"));
        assert!(claim(&conn, "worker-2.0", 1_000, 50, 1).unwrap()[0].row.command_id != "trip-000:1:0");
    }

    #[test]
    fn an_expired_lease_nobody_took_still_acknowledges() {
        let conn = store();
        claim(&conn, "worker-0.0", 0, 50, 1).unwrap();
        // Past its expiry, but the token is still the row's current one.
        assert!(mark_done(&conn, "trip-000:1:0", 1, Some("tok-1")).unwrap());
    }

    #[test]
    fn a_row_marked_early_gets_its_result_with_the_same_token() {
        let conn = store();
        claim(&conn, "worker-0.0", 0, 50, 1).unwrap();
        assert!(mark_done(&conn, "trip-000:1:0", 1, None).unwrap());
        assert!(mark_done(&conn, "trip-000:1:0", 1, Some("tok-1")).unwrap());
    }
}
