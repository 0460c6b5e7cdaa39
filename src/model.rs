//! The protocol's records, shared by the store, the workflow, the actors and
//! the checkers: an event, a command, and the rows they are stored as.
//!
//! Kinds and payloads are plain strings (payloads are canonical JSON, see
//! `workflow::payload`) because that is what the protocol stores; typed views
//! live in `workflow`.

use serde::{Deserialize, Serialize};

/// A fact in a workflow's history, before it is stored.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Event {
    pub kind: String,
    pub payload: String,
}

/// A command that an event emits, before it is enqueued in the outbox.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Command {
    pub kind: String,
    pub payload: String,
}

/// An event as stored: its place in its workflow plus the event itself.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StoredEvent {
    pub workflow_id: String,
    pub seq: u64,
    pub kind: String,
    pub payload: String,
}

impl StoredEvent {
    pub fn event(&self) -> Event {
        Event {
            kind: self.kind.clone(),
            payload: self.payload.clone(),
        }
    }
}

/// An outbox row. `result` is the receiver's confirmed answer, written by
/// `mark_done` together with `processed_at`; it is how the workflow learns the
/// outcome of its command (a refinement of PROTOCOL.md §3, which leaves the
/// result's transport open).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OutboxRow {
    pub command_id: String,
    pub workflow_id: String,
    pub event_seq: u64,
    pub kind: String,
    pub payload: String,
    pub done: bool,
    pub result: Option<String>,
}

/// The head of one workflow's history, as a writer looking for work sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Head {
    pub workflow_id: String,
    pub last_seq: u64,
    pub kind: String,
    /// How many of the head event's commands are marked done.
    pub commands_done: u64,
}

/// The command id of the `index`-th command emitted by event `seq` of
/// `workflow_id`: the identity of the business intent, stable across retries.
pub fn command_id(workflow_id: &str, seq: u64, index: usize) -> String {
    format!("{workflow_id}:{seq}:{index}")
}
