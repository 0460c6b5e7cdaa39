//! One group's SQLite transaction: many callers' transactions, one savepoint
//! each, one COMMIT. The only code that writes events and outbox rows for
//! the group-commit store, whichever committer (stepped or threaded) runs it.
//!
//! ```text
//! BEGIN IMMEDIATE
//!   SAVEPOINT group_member   insert events (head check) + their outbox rows
//!   RELEASE group_member     … or ROLLBACK TO + RELEASE: this member failed alone
//!   … once per member
//! COMMIT                     only now is any member's outcome an answer
//! ```
//!
//! The head check is the reference's own `events::insert`, run inside the
//! group's transaction, so it sees the members before it: two members that
//! extend the same workflow from the same head cannot both commit.

use std::borrow::Borrow;

use rusqlite::Connection;

use crate::model::Command;
use crate::store::connection::run;
use crate::store::{Result, StoreError, events, outbox};

/// One event of a caller's transaction and the commands it emits, as
/// (index, command): they ride in the same savepoint as their event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAppend {
    pub workflow_id: String,
    pub expected_seq: u64,
    pub kind: String,
    pub payload: String,
    pub commands: Vec<(usize, Command)>,
}

/// One caller's transaction: all its appends, or none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transaction {
    pub appends: Vec<EventAppend>,
}

impl Transaction {
    pub fn is_empty(&self) -> bool {
        self.appends.is_empty()
    }
}

/// Commits `members` as one SQLite transaction on `conn`, each in its own
/// savepoint, and returns each member's outcome, in order.
///
/// `Err`: the group failed as a whole (its `BEGIN` met a lock, its `COMMIT`
/// failed, a savepoint could not be undone) and was rolled back: no member
/// committed. `Ok`: the `COMMIT` returned; a member's `Ok(())` is durable as
/// far as the connection's `synchronous` makes it, and a member's `Err`
/// (`Conflict` for a stale append) changed nothing.
pub fn commit_group<T: Borrow<Transaction>>(conn: &Connection, members: &[T]) -> Result<Vec<Result<()>>> {
    run(conn, "BEGIN IMMEDIATE")?;
    let outcomes = members_then_commit(conn, members);
    if outcomes.is_err() && !conn.is_autocommit() {
        // A failed COMMIT (a deferred constraint, say) leaves the transaction
        // open; the group's error is the one to report.
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcomes
}

fn members_then_commit<T: Borrow<Transaction>>(conn: &Connection, members: &[T]) -> Result<Vec<Result<()>>> {
    let mut outcomes = Vec::with_capacity(members.len());
    for member in members {
        run(conn, "SAVEPOINT group_member")?;
        match apply(conn, member.borrow()) {
            Ok(()) => {
                run(conn, "RELEASE group_member")?;
                outcomes.push(Ok(()));
            }
            // This connection holds the write lock, so a lock now means the
            // database is not in the state the group assumed: fail it whole.
            Err(StoreError::Busy) => return Err(StoreError::Busy),
            Err(error) => {
                run(conn, "ROLLBACK TO group_member")?;
                run(conn, "RELEASE group_member")?;
                outcomes.push(Err(error));
            }
        }
    }
    run(conn, "COMMIT")?;
    Ok(outcomes)
}

/// One member's inserts, in its savepoint.
fn apply(conn: &Connection, transaction: &Transaction) -> Result<()> {
    for append in &transaction.appends {
        let seq = events::insert(
            conn,
            &append.workflow_id,
            append.expected_seq,
            &append.kind,
            &append.payload,
        )?;
        for (index, command) in &append.commands {
            outbox::insert(conn, &append.workflow_id, seq, *index, command)?;
        }
    }
    Ok(())
}

/// Test set-up: a deferred foreign key that an event of workflow `poison`
/// violates, so every statement succeeds and the COMMIT itself fails.
#[cfg(test)]
pub(super) const POISON_ON_COMMIT: &str = "PRAGMA foreign_keys = ON;
    CREATE TABLE parent (id INTEGER PRIMARY KEY);
    CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER poison AFTER INSERT ON events WHEN NEW.workflow_id = 'poison'
    BEGIN INSERT INTO child VALUES (42); END;";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reference::ReferenceStore;
    use crate::store::{SqliteSettings, connection, events};

    fn database() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let settings = SqliteSettings::default();
        ReferenceStore::create_schema(&path, &settings).unwrap();
        let conn = connection::open(&path, &settings).unwrap();
        (dir, conn)
    }

    fn append(workflow_id: &str, expected_seq: u64, commands: usize) -> Transaction {
        Transaction {
            appends: vec![EventAppend {
                workflow_id: workflow_id.to_string(),
                expected_seq,
                kind: "happened".to_string(),
                payload: format!(r#"{{"after":"{expected_seq}"}}"#),
                commands: (0..commands)
                    .map(|index| {
                        (
                            index,
                            Command {
                                kind: "do".to_string(),
                                payload: format!(r#"{{"i":"{index}"}}"#),
                            },
                        )
                    })
                    .collect(),
            }],
        }
    }

    fn outbox_ids(conn: &Connection) -> Vec<String> {
        let mut statement = conn
            .prepare("SELECT command_id FROM outbox ORDER BY command_id")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_stale_member_fails_alone_and_the_others_commit_with_their_outbox_rows() {
        let (_dir, conn) = database();
        commit_group(&conn, &[append("wf-b", 0, 0)]).unwrap();
        // wf-b is at 1: a member expecting 0 is stale.
        let group = [append("wf-a", 0, 2), append("wf-b", 0, 3), append("wf-c", 0, 1)];
        let outcomes = commit_group(&conn, &group).unwrap();
        assert!(outcomes[0].is_ok(), "{outcomes:?}");
        assert!(
            matches!(&outcomes[1], Err(StoreError::Conflict { workflow_id, expected_seq: 0 }) if workflow_id == "wf-b"),
            "{outcomes:?}"
        );
        assert!(outcomes[2].is_ok(), "{outcomes:?}");
        assert_eq!(events::last_seq(&conn, "wf-a").unwrap(), 1);
        assert_eq!(
            events::last_seq(&conn, "wf-b").unwrap(),
            1,
            "the stale append left nothing"
        );
        assert_eq!(events::last_seq(&conn, "wf-c").unwrap(), 1);
        assert_eq!(
            outbox_ids(&conn),
            ["wf-a:1:0", "wf-a:1:1", "wf-c:1:0"],
            "the stale member's commands rolled back with its event"
        );
    }

    #[test]
    fn two_members_from_the_same_head_the_first_wins() {
        let (_dir, conn) = database();
        let outcomes = commit_group(&conn, &[append("wf", 0, 1), append("wf", 0, 1), append("wf", 1, 0)]).unwrap();
        assert!(outcomes[0].is_ok());
        assert!(matches!(outcomes[1], Err(StoreError::Conflict { .. })), "{outcomes:?}");
        assert!(
            outcomes[2].is_ok(),
            "a member may extend one committed before it in the group"
        );
        assert_eq!(events::last_seq(&conn, "wf").unwrap(), 2);
        assert_eq!(outbox_ids(&conn), ["wf:1:0"]);
    }

    #[test]
    fn a_member_with_several_events_commits_all_or_none() {
        let (_dir, conn) = database();
        let mut both = append("wf-a", 0, 0);
        both.appends.extend(append("wf-b", 5, 0).appends); // wf-b is at 0: stale
        let outcomes = commit_group(&conn, &[both, append("wf-c", 0, 0)]).unwrap();
        assert!(matches!(outcomes[0], Err(StoreError::Conflict { .. })));
        assert!(outcomes[1].is_ok());
        assert_eq!(
            events::last_seq(&conn, "wf-a").unwrap(),
            0,
            "its first event rolled back too"
        );
        assert_eq!(events::last_seq(&conn, "wf-c").unwrap(), 1);
    }

    #[test]
    fn a_failed_commit_fails_every_member_and_leaves_nothing() {
        let (_dir, conn) = database();
        // A deferred foreign key that a poisoned event violates: every
        // statement succeeds, and the COMMIT itself fails.
        conn.execute_batch(POISON_ON_COMMIT).unwrap();
        let result = commit_group(&conn, &[append("wf-a", 0, 1), append("poison", 0, 0)]);
        assert!(matches!(result, Err(StoreError::Sqlite(_))), "{result:?}");
        assert!(conn.is_autocommit(), "the failed group was rolled back");
        assert_eq!(events::last_seq(&conn, "wf-a").unwrap(), 0);
        assert!(outbox_ids(&conn).is_empty());
        // The connection is usable again.
        assert!(commit_group(&conn, &[append("wf-a", 0, 1)]).unwrap()[0].is_ok());
    }

    #[test]
    fn a_locked_database_fails_the_group_before_anything_is_written() {
        let (dir, conn) = database();
        let settings = SqliteSettings {
            busy_timeout_ms: 0,
            ..SqliteSettings::default()
        };
        let holder = connection::open(&dir.path().join("store.db"), &settings).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        assert!(matches!(
            commit_group(&conn, &[append("wf", 0, 0)]),
            Err(StoreError::Busy)
        ));
        holder.execute_batch("ROLLBACK").unwrap();
        assert!(commit_group(&conn, &[append("wf", 0, 0)]).unwrap()[0].is_ok());
    }

    #[test]
    fn an_empty_group_commits_nothing() {
        let (_dir, conn) = database();
        let none: [Transaction; 0] = [];
        assert!(commit_group(&conn, &none).unwrap().is_empty());
        assert!(conn.is_autocommit());
    }
}
