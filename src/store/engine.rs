//! `Engine`: the application-side choices of the protocol, the ones a
//! workflow engine makes around the store rather than inside it.
//!
//! The actors are crashsim's model of a workflow engine's loops; where such
//! an engine has a real choice to make (and a classic way to get it wrong),
//! the actors ask the implementation's `Engine`. The default methods are
//! the protocol done right; an implementation overrides one to model one
//! mistake (see `crate::mutants`).

use crate::model::{Command, OutboxRow, StoredEvent};
use crate::workflow::Replayed;
use crate::workflow::replay::{ReplayError, replay};

/// Sends a command (its `command_id` and the command) to a receiver, outside
/// the outbox. The reference never calls it.
pub type Dispatch<'a> = dyn FnMut(&str, &Command) + 'a;

pub trait Engine: Send + Sync {
    /// The idempotency key a worker delivers `row` under on its `attempt`-th
    /// try; `nonce` is fresh randomness for engines that want it. Reference:
    /// the `command_id`, the same on every attempt.
    fn idempotency_key(&self, row: &OutboxRow, attempt: u32, nonce: u64) -> String {
        let _ = (attempt, nonce);
        row.command_id.clone()
    }

    /// Whether a worker marks a row done before delivering it (and records the
    /// result when the reply comes). Reference: no, only after a confirmed result.
    fn mark_done_before_delivery(&self) -> bool {
        false
    }

    /// Whether the writer sends an event's commands itself, before its
    /// transaction commits. Reference: no, commands leave only from the outbox.
    fn deliver_before_commit(&self) -> bool {
        false
    }

    /// Rebuilds a workflow's state from its history. Reference: a pure fold
    /// that never calls `dispatch`.
    fn replay(
        &self,
        workflow_id: &str,
        events: &[StoredEvent],
        dispatch: &mut Dispatch<'_>,
    ) -> Result<Replayed, ReplayError> {
        let _ = dispatch;
        replay(workflow_id, events)
    }
}

/// The reference engine: every default.
pub struct ReferenceEngine;

impl Engine for ReferenceEngine {}
