//! I3 stale writers rejected.
//!
//! Per workflow, `seq` runs 1..n without a gap and the history folds under
//! the reference `decide` (an event that does not fit the state before it
//! was decided from a stale head). From the trace: every committed append
//! landed at `expected_seq + 1`, and no two appends decided from the same
//! head both committed.

use crate::actors::ActorId;
use crate::model::Shown;
use std::collections::BTreeMap;

use super::{History, Input, Invariant, Violation};
use crate::workflow::replay::{ReplayError, replay};

pub fn check(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = from_files(input, history);
    violations.extend(stale(input.events, history));
    violations
}

/// From the final files: each workflow's events in order, each following
/// from the state before it.
fn from_files(input: &Input<'_>, history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let by_workflow = input.snapshot.events_by_workflow();
    for (workflow_id, events) in &by_workflow {
        match replay(workflow_id, events) {
            Ok(_) => {}
            Err(ReplayError::Gap { expected, found, .. }) => violations.push(
                Violation::new(
                    Invariant::I3,
                    format!(
                        "{workflow_id_shown}: seq jumps from {} to {found}",
                        expected - 1,
                        workflow_id_shown = Shown(workflow_id)
                    ),
                )
                .workflow(workflow_id)
                .seq(found),
            ),
            Err(ReplayError::Decide { seq, source }) => violations.push(
                Violation::new(
                    Invariant::I3,
                    format!(
                        "{workflow_id_shown}#{seq} ({}) does not follow from the state before it ({}): \
                         it was decided from a stale head",
                        source.event_kind,
                        source.phase,
                        workflow_id_shown = Shown(workflow_id)
                    ),
                )
                .workflow(workflow_id)
                .seq(seq)
                .ticks(history.commit_tick(workflow_id, seq)),
            ),
        }
    }
    violations
}

/// From the trace alone: a committed append stored at another seq than
/// the one it was decided for, and two appends decided from one head that
/// both committed. No later event undoes either, except a power cut or a
/// restore that loses one of the commits (`History::lost`), so once none
/// can follow they are judged on the trace so far (`certain`).
pub fn stale(events: &[crate::trace::TraceEvent], history: &History<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut from_head: BTreeMap<(&str, u64), Vec<(u64, ActorId)>> = BTreeMap::new();
    for (index, commit) in history.commits.iter().enumerate() {
        if history.lost.contains(&index) {
            continue;
        }
        let append = commit.appended;
        if append.seq != append.expected_seq + 1 {
            violations.push(
                Violation::new(
                    Invariant::I3,
                    format!(
                        "{} decided {} from seq {} but its event was stored at seq {}: \
                         renumbered instead of decided again",
                        commit.actor, append.workflow_id, append.expected_seq, append.seq
                    ),
                )
                .workflow(&append.workflow_id)
                .seq(append.seq)
                .ticks([commit.tick]),
            );
        }
        from_head
            .entry((&append.workflow_id, append.expected_seq))
            .or_default()
            .push((commit.tick, commit.actor));
    }
    // The second commit from a head is the finding, whatever follows: the
    // first two name it, so a run ended early on it says what a full run says.
    for ((workflow_id, expected_seq), commits) in from_head {
        if let [(first_tick, first), (second_tick, second), ..] = commits[..] {
            let cause = super::interleaving::commit_between(events, (first, first_tick), (second, second_tick))
                .map(|cause| format!(": {cause}"))
                .unwrap_or_default();
            violations.push(
                Violation::new(
                    Invariant::I3,
                    format!(
                        "two appends decided from {workflow_id_shown} seq {expected_seq} both committed ({first} at \
                         tick {first_tick}, {second} at tick {second_tick}){cause}",
                        workflow_id_shown = Shown(workflow_id)
                    ),
                )
                .workflow(workflow_id)
                .seq(expected_seq + 1)
                .ticks([first_tick, second_tick]),
            );
        }
    }
    violations
}
