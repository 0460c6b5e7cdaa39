//! I6 replay is pure: the state each live writer decided from is the state a
//! fresh replay of the stored log gives at the same `seq`, and no replay
//! dispatched a command.
//!
//! A wrong decision's evidence begins where the writer replayed the log it
//! decided from (its `load`), before the commit: a replay that skips an
//! event is the root of what later checkers see (an event that does not
//! follow, I3), so its violation carries the load's tick.

use super::history::Commit;
use super::{History, Input, Invariant, Violation};
use crate::model::Shown;
use crate::model::StoredEvent;
use crate::trace::Op;
use crate::workflow::replay;

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let by_workflow = input.snapshot.events_by_workflow();
    for (index, commit) in history.commits.iter().enumerate() {
        if history.lost.contains(&index) {
            continue;
        }
        let append = commit.appended;
        let Some(events) = by_workflow.get(append.workflow_id.as_str()) else {
            continue;
        };
        // Judge only appends that are in the log as committed.
        let stored = events
            .iter()
            .any(|event| event.seq == append.seq && event.kind == append.kind);
        if !stored {
            continue;
        }
        let prefix: Vec<StoredEvent> = events
            .iter()
            .filter(|event| event.seq <= append.expected_seq)
            .cloned()
            .collect();
        let Ok(replayed) = replay(&append.workflow_id, &prefix) else {
            continue;
        };
        let fresh = replayed.trip.digest();
        if fresh != append.state {
            violations.push(
                Violation::new(
                    Invariant::I6,
                    format!(
                        "{} decided {}#{} from state {}, but replaying the log to seq {} gives {}",
                        commit.actor, append.workflow_id, append.seq, append.state, append.expected_seq, fresh
                    ),
                )
                .workflow(&append.workflow_id)
                .seq(append.seq)
                .ticks(replayed_at(input, commit).into_iter().chain([commit.tick])),
            );
        }
    }
    violations.extend(dispatched(history));
    violations
}

/// Commands a replay dispatched, from the trace alone: a finding no later
/// event can undo (`check::certain`).
pub fn dispatched(history: &History<'_>) -> Vec<Violation> {
    history
        .dispatches
        .iter()
        .filter(|(_, _, _, replay)| *replay)
        .map(|(tick, actor, command_id, _)| {
            Violation::new(
                Invariant::I6,
                format!(
                    "{actor} dispatched {command_id_shown} while replaying history: replay must dispatch nothing",
                    command_id_shown = Shown(command_id)
                ),
            )
            .command(command_id)
            .ticks([*tick])
        })
        .collect()
}

/// The tick of the `load` (the replay) the committing writer decided from:
/// its last load of the workflow before the commit, in the same life.
fn replayed_at(input: &Input<'_>, commit: &Commit<'_>) -> Option<u64> {
    let workflow_id = commit.appended.workflow_id.as_str();
    input.events[..commit.index]
        .iter()
        .rev()
        .filter(|event| event.actor == commit.actor)
        .take_while(|event| !matches!(event.op, Op::Open { .. } | Op::Kill { .. }))
        .find_map(|event| match &event.op {
            Op::Load {
                workflow_id: loaded, ..
            } if loaded == workflow_id => Some(event.tick),
            _ => None,
        })
}
