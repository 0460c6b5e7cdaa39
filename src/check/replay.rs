//! I6 replay is pure: the state each live writer decided from is the state a
//! fresh replay of the stored log gives at the same `seq`, and no replay
//! dispatched a command.

use super::{History, Input, Invariant, Violation};
use crate::model::Shown;
use crate::model::StoredEvent;
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
                .ticks([commit.tick]),
            );
        }
    }
    for (tick, actor, command_id, replay) in &history.dispatches {
        if *replay {
            violations.push(
                Violation::new(
                    Invariant::I6,
                    format!(
                        "{actor} dispatched {command_id_shown} while replaying history: replay must dispatch nothing",
                        command_id_shown = Shown(command_id)
                    ),
                )
                .command(command_id)
                .ticks([*tick]),
            );
        }
    }
    violations
}
