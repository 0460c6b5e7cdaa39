//! Mutants of the engine around the store (mistakes 4, 5, 6 and 9).

use crate::model::{OutboxRow, StoredEvent, command_id};
use crate::store::Engine;
use crate::store::engine::Dispatch;
use crate::workflow::replay::{ReplayError, replay};
use crate::workflow::{Replayed, Trip, decide};

/// Mistake 4: the writer sends the event's commands before its transaction
/// commits; if the commit never happens, the effect is a ghost.
pub struct DeliverBeforeCommit;

impl Engine for DeliverBeforeCommit {
    fn deliver_before_commit(&self) -> bool {
        true
    }
}

/// Mistake 5: a fresh random idempotency key on every delivery attempt, so
/// the receiver cannot tell a retry from a new command.
pub struct RandomKeyPerAttempt;

impl Engine for RandomKeyPerAttempt {
    fn idempotency_key(&self, row: &OutboxRow, _attempt: u32, nonce: u64) -> String {
        format!("{}~{nonce:016x}", row.command_id)
    }
}

/// Mistake 6: the worker marks the row done before the receiver confirmed
/// it; if the delivery is then lost, nothing will ever retry it.
pub struct MarkDoneBeforeConfirm;

impl Engine for MarkDoneBeforeConfirm {
    fn mark_done_before_delivery(&self) -> bool {
        true
    }
}

/// Mistake 9: replay dispatches the commands of the events it folds, as if
/// history were being lived again.
pub struct ReplayDispatches;

impl Engine for ReplayDispatches {
    fn replay(
        &self,
        workflow_id: &str,
        events: &[StoredEvent],
        dispatch: &mut Dispatch<'_>,
    ) -> Result<Replayed, ReplayError> {
        let mut trip = Trip::new(workflow_id);
        for event in events {
            // A history that does not fold is reported by the real replay below.
            let Ok((next, commands)) = decide(&trip, &event.event()) else {
                break;
            };
            for (index, command) in commands.iter().enumerate() {
                dispatch(&command_id(workflow_id, event.seq, index), command);
            }
            trip = next;
        }
        replay(workflow_id, events)
    }
}
