//! What a suspension's `meanwhile` keeps of the statements others ran while
//! the call waited (`Op::Preempted`): enough to show the interleaving, not
//! a second trace.
//!
//! Only actors of the suspended actor's own role (the receivers that race
//! for one key, the writers that race for one head), and of each only its
//! last **complete** write: the statements of its last transaction that
//! reached `COMMIT` (or `END`; one begun before the suspension shows from
//! its first statement after it), or its last writes outside a
//! transaction. A `BEGIN` that met a busy lock, reads, and a transaction
//! still open when the call resumes are left out. A seed's page and its first line quote
//! them; the run's verdicts never read them.

use std::collections::BTreeMap;

use crate::actors::ActorId;
use crate::trace::Ran;

/// The first word of a statement, upper-case.
fn verb(sql: &str) -> String {
    sql.trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_uppercase()
}

/// Whether a statement may change something: not a read.
fn writes(sql: &str) -> bool {
    !matches!(verb(sql).as_str(), "SELECT" | "PRAGMA" | "EXPLAIN" | "VALUES")
}

/// One actor's statements (in order): its last complete write.
fn last_complete(statements: &[Ran]) -> Vec<Ran> {
    let mut last: Vec<Ran> = Vec::new();
    let mut open: Option<Vec<Ran>> = None;
    // Writes outside a transaction seen to begin: each its own transaction,
    // or the tail of one begun before the window (a `COMMIT` then ends them).
    let mut loose: Vec<Ran> = Vec::new();
    for statement in statements {
        match verb(&statement.sql).as_str() {
            "BEGIN" => {
                if !loose.is_empty() {
                    last = std::mem::take(&mut loose);
                }
                open = Some(vec![statement.clone()]);
            }
            "COMMIT" | "END" => {
                let mut transaction = open.take().unwrap_or_else(|| std::mem::take(&mut loose));
                let wrote = transaction.iter().any(|statement| verb(&statement.sql) != "BEGIN");
                transaction.push(statement.clone());
                // A transaction that wrote nothing shows nothing.
                if wrote {
                    last = transaction;
                }
            }
            "ROLLBACK" => {
                open = None;
                loose.clear();
            }
            _ if !writes(&statement.sql) => {}
            _ => match &mut open {
                Some(transaction) => transaction.push(statement.clone()),
                None => loose.push(statement.clone()),
            },
        }
    }
    if !loose.is_empty() {
        last = loose;
    }
    last
}

/// From the statements others ran while `suspended` waited (oldest first,
/// none of its own): what its suspension's `meanwhile` keeps, in the order
/// they ran.
pub(super) fn kept(suspended: ActorId, ran: Vec<Ran>) -> Vec<Ran> {
    let mut by_actor: BTreeMap<ActorId, Vec<Ran>> = BTreeMap::new();
    for statement in ran
        .into_iter()
        .filter(|statement| statement.actor.role == suspended.role)
    {
        by_actor.entry(statement.actor).or_default().push(statement);
    }
    let mut kept: Vec<Ran> = by_actor
        .values()
        .flat_map(|statements| last_complete(statements))
        .collect();
    kept.sort_by_key(|statement| statement.tick);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::Role;

    fn ran(role: Role, index: u32, tick: u64, sql: &str) -> Ran {
        Ran {
            actor: ActorId::new(role, index),
            tick,
            sql: sql.to_string(),
        }
    }

    #[test]
    fn each_peer_keeps_its_last_committed_write_and_nothing_else() {
        let w = |index, tick, sql| ran(Role::Writer, index, tick, sql);
        let statements = vec![
            w(0, 1, "BEGIN IMMEDIATE"), // busy: never committed
            w(0, 2, "BEGIN IMMEDIATE"),
            w(0, 2, "INSERT INTO events VALUES (?)"),
            w(0, 2, "COMMIT"),
            w(1, 3, "SELECT seq FROM events"),
            w(1, 3, "BEGIN"),
            w(1, 3, "COMMIT"),                   // wrote nothing
            w(2, 4, "UPDATE heads SET seq = ?"), // a write on its own
            w(2, 5, "BEGIN IMMEDIATE"),
            w(2, 5, "INSERT INTO events VALUES (?)"), // still open
            // The tail of a transaction begun before the suspension.
            w(4, 2, "INSERT INTO outbox VALUES (?)"),
            w(4, 2, "COMMIT"),
            ran(Role::Worker, 0, 6, "UPDATE outbox SET processed_at = ?"),
            w(0, 7, "BEGIN IMMEDIATE"),
            w(0, 7, "DELETE FROM events"),
            w(0, 7, "ROLLBACK"),
        ];
        let kept = kept(ActorId::new(Role::Writer, 3), statements);
        let shown: Vec<(u32, &str)> = kept
            .iter()
            .map(|statement| (statement.actor.index, statement.sql.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (0, "BEGIN IMMEDIATE"),
                (0, "INSERT INTO events VALUES (?)"),
                (0, "COMMIT"),
                (4, "INSERT INTO outbox VALUES (?)"),
                (4, "COMMIT"),
                (2, "UPDATE heads SET seq = ?"),
            ]
        );
    }
}
