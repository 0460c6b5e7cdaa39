//! `Draft`: a caller's transaction while it is being built.
//!
//! The `Store` API is step by step (`begin`, `insert_event`,
//! `insert_command`, `commit`). A group-commit handle cannot write at each
//! step, since its transaction will share one SQLite transaction with
//! others, so the steps only record here; `commit` hands the recorded
//! `Transaction` to a committer.
//!
//! `insert_event` still checks the head early, on the caller's own
//! connection, so an append already known to be stale fails at the same step
//! as with the reference store. That check is advisory: another member may
//! move the head before the group commits, and the group's own check (in
//! `batch`) is the one that counts; its `Conflict` then comes from `commit`.

use rusqlite::Connection;

use super::batch::{EventAppend, Transaction};
use crate::model::{Command, command_id};
use crate::store::{Result, StoreError, events};

#[derive(Debug, Default)]
pub struct Draft {
    open: Option<Transaction>,
}

impl Draft {
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    pub fn begin(&mut self) -> Result<()> {
        if self.open.is_some() {
            return Err(StoreError::Invalid("a transaction is already open".to_string()));
        }
        self.open = Some(Transaction::default());
        Ok(())
    }

    /// Records the event at `expected_seq + 1` if the head is `expected_seq`
    /// as far as `reader` and this transaction's own earlier events tell.
    pub fn insert_event(
        &mut self,
        reader: &Connection,
        workflow_id: &str,
        expected_seq: u64,
        kind: &str,
        payload: &str,
    ) -> Result<u64> {
        self.insert_event_with(workflow_id, expected_seq, kind, payload, || {
            events::last_seq(reader, workflow_id)
        })
    }

    /// `insert_event`, with the head (when this transaction has no earlier
    /// event of `workflow_id`) from `committed_head` instead of a read.
    pub fn insert_event_with(
        &mut self,
        workflow_id: &str,
        expected_seq: u64,
        kind: &str,
        payload: &str,
        committed_head: impl FnOnce() -> Result<u64>,
    ) -> Result<u64> {
        let transaction = self.open.as_mut().ok_or_else(no_transaction)?;
        let own = transaction
            .appends
            .iter()
            .rev()
            .find(|append| append.workflow_id == workflow_id);
        let head = match own {
            Some(append) => append.expected_seq + 1,
            None => committed_head()?,
        };
        if head != expected_seq {
            return Err(StoreError::Conflict {
                workflow_id: workflow_id.to_string(),
                expected_seq,
            });
        }
        transaction.appends.push(EventAppend {
            workflow_id: workflow_id.to_string(),
            expected_seq,
            kind: kind.to_string(),
            payload: payload.to_string(),
            commands: Vec::new(),
        });
        Ok(expected_seq + 1)
    }

    /// Records a command of event `event_seq`, which must be in this
    /// transaction: commands ride in their event's savepoint.
    pub fn insert_command(
        &mut self,
        workflow_id: &str,
        event_seq: u64,
        index: usize,
        command: &Command,
    ) -> Result<String> {
        let transaction = self.open.as_mut().ok_or_else(no_transaction)?;
        let Some(append) = transaction
            .appends
            .iter_mut()
            .rev()
            .find(|append| append.workflow_id == workflow_id && append.expected_seq + 1 == event_seq)
        else {
            return Err(StoreError::Invalid(format!(
                "no event {workflow_id}#{event_seq} in this transaction: a command rides with its event"
            )));
        };
        append.commands.push((index, command.clone()));
        Ok(command_id(workflow_id, event_seq, index))
    }

    /// The finished transaction, for a committer.
    pub fn take(&mut self) -> Result<Transaction> {
        self.open.take().ok_or_else(no_transaction)
    }

    pub fn discard(&mut self) {
        self.open = None;
    }
}

fn no_transaction() -> StoreError {
    StoreError::Invalid("no transaction is open".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reference::ReferenceStore;
    use crate::store::{SqliteSettings, connection};

    fn reader() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        ReferenceStore::create_schema(&path, &SqliteSettings::default()).unwrap();
        let conn = connection::open(&path, &SqliteSettings::default()).unwrap();
        conn.execute(
            "INSERT INTO events (workflow_id, seq, kind, payload) VALUES ('wf', 1, 'k', '{}')",
            [],
        )
        .unwrap();
        (dir, conn)
    }

    fn command() -> Command {
        Command {
            kind: "do".to_string(),
            payload: "{}".to_string(),
        }
    }

    #[test]
    fn records_events_and_their_commands_and_checks_heads_early() {
        let (_dir, conn) = reader();
        let mut draft = Draft::default();
        assert!(matches!(
            draft.insert_event(&conn, "wf", 1, "k", "{}"),
            Err(StoreError::Invalid(_))
        ));
        draft.begin().unwrap();
        assert!(matches!(draft.begin(), Err(StoreError::Invalid(_))));
        assert!(matches!(
            draft.insert_event(&conn, "wf", 0, "k", "{}"),
            Err(StoreError::Conflict { .. })
        ));
        assert_eq!(draft.insert_event(&conn, "wf", 1, "k", "{}").unwrap(), 2);
        assert_eq!(
            draft.insert_event(&conn, "wf", 2, "k", "{}").unwrap(),
            3,
            "extends its own earlier event"
        );
        assert_eq!(draft.insert_command("wf", 2, 0, &command()).unwrap(), "wf:2:0");
        assert!(matches!(
            draft.insert_command("wf", 9, 0, &command()),
            Err(StoreError::Invalid(_))
        ));
        let transaction = draft.take().unwrap();
        assert_eq!(transaction.appends.len(), 2);
        assert_eq!(transaction.appends[0].commands.len(), 1);
        assert!(!draft.is_open());
        assert!(matches!(draft.take(), Err(StoreError::Invalid(_))));
    }
}
