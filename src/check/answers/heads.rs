//! `heads` answers judged (I6): a writer picks its next workflow from them,
//! so a head that is stale, invented or left out sends it to the wrong
//! work (a stale append, a workflow started twice, one never resumed).
//!
//! Each workflow with committed events must have exactly one head, at its
//! highest committed `seq` (or a later append whose outcome no one
//! learned), with that event's kind; a head's count of done commands must
//! not exceed what workers could have marked.

use std::collections::BTreeSet;

use super::known::{Known, Place};
use super::{Invariant, Violation, uncommitted};
use crate::model::{Shown, command_id};
use crate::trace::HeadSeen;

/// A `heads` answer against the committed history: its first wrong row.
pub(super) fn judge_heads(known: &Known, answer: &[HeadSeen]) -> Option<Violation> {
    let wrong = |workflow_id: &str, seq: u64, message: String| {
        Some(
            Violation::new(
                Invariant::I6,
                format!("heads answered {} row(s): {message}", answer.len()),
            )
            .workflow(workflow_id)
            .seq(seq),
        )
    };
    let mut seen = BTreeSet::new();
    for head in answer {
        let workflow_id = head.workflow_id.as_str();
        let shown = Shown(workflow_id);
        if !seen.insert(workflow_id) {
            return wrong(workflow_id, head.seq, format!("{shown} has two heads"));
        }
        let committed = known.committed.get(workflow_id);
        let top = committed.and_then(|events| events.last_key_value());
        match committed.and_then(|events| events.get(&head.seq)) {
            Some((kind, tick)) if *kind != head.kind => {
                return wrong(
                    workflow_id,
                    head.seq,
                    format!(
                        "the head of {shown} is seq {} ({}), but the event committed at seq {} (tick {tick}) \
                         is {kind}",
                        head.seq, head.kind, head.seq
                    ),
                );
            }
            Some(_) => {}
            None => {
                let place: Place = (workflow_id.to_string(), head.seq, head.kind.clone());
                if !known.maybe.contains(&place) {
                    let answered = format!("heads answered {shown} at seq {} ({})", head.seq, head.kind);
                    return uncommitted(known, &place, &answered).or_else(|| {
                        wrong(
                            workflow_id,
                            head.seq,
                            format!(
                                "the head of {shown} is seq {} ({}), an event no writer committed",
                                head.seq, head.kind
                            ),
                        )
                    });
                }
            }
        }
        if let Some((seq, (kind, tick))) = top
            && *seq > head.seq
        {
            return wrong(
                workflow_id,
                head.seq,
                format!(
                    "the head of {shown} is seq {} ({}), but seq {seq} ({kind}) committed at tick {tick}: \
                     a stale head",
                    head.seq, head.kind
                ),
            )
            .map(|violation| violation.ticks([*tick]));
        }
        if let Some(message) = judge_done(known, head) {
            return wrong(workflow_id, head.seq, message);
        }
    }
    // Every workflow with a committed event has a head.
    let missing = known
        .committed
        .iter()
        .filter(|(workflow_id, _)| !seen.contains(workflow_id.as_str()))
        .find_map(|(workflow_id, events)| events.last_key_value().map(|top| (workflow_id, top)));
    missing.and_then(|(workflow_id, (seq, (kind, tick)))| {
        wrong(
            workflow_id,
            *seq,
            format!(
                "it leaves out {}, whose seq {seq} ({kind}) committed at tick {tick}",
                Shown(workflow_id.as_str())
            ),
        )
        .map(|violation| violation.ticks([*tick]))
    })
}

/// A head's `done` count against its event's outbox rows: no more than it
/// has, and none unless a worker marked (or may have marked) one of them.
fn judge_done(known: &Known, head: &HeadSeen) -> Option<String> {
    let place: Place = (head.workflow_id.clone(), head.seq, head.kind.clone());
    if head.done == 0 || known.maybe.contains(&place) {
        return None;
    }
    let rows: Vec<String> = (0..)
        .map(|index| command_id(&head.workflow_id, head.seq, index))
        .take_while(|id| known.rows.contains_key(id))
        .collect();
    let shown = Shown(head.workflow_id.as_str());
    if rows.is_empty() {
        // Rows under ids the trace does not derive: I1 and I5 judge them from the dump.
        None
    } else if head.done > rows.len() as u64 {
        Some(format!(
            "the head of {shown} says {} of its commands are done, but its event has {}",
            head.done,
            rows.len()
        ))
    } else if !rows.iter().any(|id| known.touched.contains(id)) {
        Some(format!(
            "the head of {shown} says {} of its commands are done, but no worker marked any of them",
            head.done
        ))
    } else {
        None
    }
}
