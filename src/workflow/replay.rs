//! Replay: fold `decide` over a stored history to rebuild a trip's state.
//!
//! Replay returns the state and `last_seq` and nothing else. The commands
//! `decide` returns along the way are dropped on purpose: pending commands
//! live only in the outbox, and a replay that dispatched them would repeat
//! effects on every reload (mistake 9, invariant I6).

use super::trip::{DecideError, Trip, decide};
use crate::model::StoredEvent;

/// A rebuilt trip and the `seq` of the last event folded into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed {
    pub trip: Trip,
    pub last_seq: u64,
}

/// Why a stored history cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("{workflow_id}: expected seq {expected}, found seq {found}")]
    Gap {
        workflow_id: String,
        expected: u64,
        found: u64,
    },
    #[error("seq {seq}: {source}")]
    Decide { seq: u64, source: DecideError },
}

/// Folds `events` (ordered by `seq`) into the state of `workflow_id`.
pub fn replay(workflow_id: &str, events: &[StoredEvent]) -> Result<Replayed, ReplayError> {
    let mut trip = Trip::new(workflow_id);
    let mut last_seq = 0;
    for stored in events {
        if stored.seq != last_seq + 1 {
            return Err(ReplayError::Gap {
                workflow_id: workflow_id.to_string(),
                expected: last_seq + 1,
                found: stored.seq,
            });
        }
        trip = decide(&trip, &stored.event())
            .map_err(|source| ReplayError::Decide {
                seq: stored.seq,
                source,
            })?
            .0;
        last_seq = stored.seq;
    }
    Ok(Replayed { trip, last_seq })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::trip::request;

    fn stored(seq: u64, kind: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            workflow_id: "t".into(),
            seq,
            kind: kind.into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn folds_in_order_and_rejects_gaps() {
        let start = request("Oslo");
        let events = vec![
            stored(1, &start.kind, &start.payload),
            stored(2, "budget_locked", r#"{"token":"x"}"#),
        ];
        let replayed = replay("t", &events).unwrap();
        assert_eq!(replayed.last_seq, 2);
        assert_eq!(replayed.trip.phase_name(), "budget_locked");
        let gap = vec![events[0].clone(), stored(3, "budget_locked", r#"{"token":"x"}"#)];
        assert!(matches!(
            replay("t", &gap),
            Err(ReplayError::Gap {
                expected: 2,
                found: 3,
                ..
            })
        ));
        assert_eq!(replay("t", &[]).unwrap().last_seq, 0);
    }
}
