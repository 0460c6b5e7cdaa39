//! Expected vs found for one workflow: its stored events folded through
//! the reference `decide`, next to the states its writers decided from.

use std::fmt::Write;

use super::super::Page;
use super::super::facts::{Fold, TxEnd, WorkflowFacts};
use super::super::text::{Esc, command_link};
use super::{UNACKNOWLEDGED, insert_line, row, table_start};
use crate::model::StoredEvent;
use crate::workflow::{payload, replay};

/// The block for one workflow: its stored events against replaying `decide`.
pub(in crate::report::html) fn workflow(
    out: &mut String,
    page: &Page<'_>,
    workflow: &WorkflowFacts<'_>,
    seq: Option<u64>,
) {
    let _ = writeln!(
        out,
        "<p>Stored history of <code>{}</code> ({} event{}), folded through the reference <code>decide</code>: \
         replay reaches phase <b>{}</b>{}.</p>",
        Esc(&workflow.id),
        workflow.events.len(),
        if workflow.events.len() == 1 { "" } else { "s" },
        workflow.phase,
        if workflow.terminal { " (terminal)" } else { "" }
    );
    out.push_str(
        "<table class=\"grid\"><tr><th>seq</th><th>kind</th><th>payload</th><th>replaying decide</th>\
         <th>commands it emits → outbox</th><th>in the trace</th></tr>\n",
    );
    for (event, fold) in workflow.events.iter().zip(&workflow.folds) {
        let involved = seq == Some(event.seq);
        let (verdict, good) = match fold {
            Fold::Fits(_) => ("fits".to_string(), true),
            Fold::Gap { expected } => (format!("expected seq {expected} here: a gap"), false),
            Fold::Misfit { phase, reason } => (format!("does not fit phase {}: {}", Esc(phase), Esc(reason)), false),
            Fold::Unreached => ("not reached".to_string(), true),
        };
        let commands = match fold {
            Fold::Fits(commands) if commands.is_empty() => "none".to_string(),
            Fold::Fits(commands) => commands
                .iter()
                .map(|(id, command)| {
                    let status = match page.facts.commands.get(id).and_then(|facts| facts.row) {
                        None => "<span class=\"bad\">✗ no row</span>".to_string(),
                        Some(row) if row.kind != command.kind || !payload::same(&row.payload, &command.payload) => {
                            "<span class=\"bad\">≠ stored differently</span>".to_string()
                        }
                        Some(row) if row.done => "<span class=\"ok\">✓ done</span>".to_string(),
                        Some(_) => "<span class=\"warn\">pending</span>".to_string(),
                    };
                    format!("{} {} {status}", command_link(id), Esc(&command.kind))
                })
                .collect::<Vec<_>>()
                .join("<br>"),
            _ => "—".to_string(),
        };
        let commands_good = match fold {
            Fold::Fits(commands) => commands.iter().all(|(id, command)| {
                page.facts
                    .commands
                    .get(id)
                    .and_then(|facts| facts.row)
                    .is_some_and(|row| row.kind == command.kind && payload::same(&row.payload, &command.payload))
            }),
            _ => true,
        };
        let mut trace: Vec<String> = workflow
            .commits
            .iter()
            .filter(|(_, _, append)| append.seq == event.seq)
            .map(|(tick, actor, append)| {
                let mut text = if append.expected_seq + 1 == append.seq {
                    format!(
                        "committed by {actor} at tick {tick}, decided from seq {}",
                        append.expected_seq
                    )
                } else {
                    format!(
                        "committed by {actor} at tick {tick}, <span class=\"bad\">decided from seq {} but stored at \
                         seq {}</span>",
                        append.expected_seq, append.seq
                    )
                };
                if append.kind != event.kind {
                    let _ = write!(text, " as <b>{}</b>", Esc(&append.kind));
                }
                text
            })
            .collect();
        let committed = !trace.is_empty();
        let cut: Vec<String> = workflow
            .inserts
            .iter()
            .filter(|(inserted, insert)| *inserted == event.seq && !matches!(insert.end, TxEnd::Committed(_)))
            .map(|(_, insert)| insert_line(insert))
            .collect();
        if !committed && !cut.is_empty() {
            trace.extend(cut);
            trace.push(UNACKNOWLEDGED.trim_start_matches("<br>").to_string());
        } else {
            trace.extend(cut);
        }
        let _ = writeln!(
            out,
            "<tr{}><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"{}\">{verdict}</td>\
             <td class=\"{}\">{commands}</td><td>{}</td></tr>",
            if involved { " class=\"involved\"" } else { "" },
            event.seq,
            Esc(&event.kind),
            Esc(&event.payload),
            if good { "found-ok" } else { "found-bad" },
            if commands_good { "" } else { "found-bad" },
            if trace.is_empty() {
                "<span class=\"note\">no commit in the trace</span>".to_string()
            } else {
                trace.join("<br>")
            }
        );
    }
    out.push_str("</table>\n");
    if let Some(seq) = seq {
        decided_states(out, workflow, seq);
    }
}

/// For appends at `seq`: the state the writer decided from against a fresh
/// replay of the stored log up to where it decided (I6).
fn decided_states(out: &mut String, workflow: &WorkflowFacts<'_>, seq: u64) {
    let appends: Vec<_> = workflow
        .commits
        .iter()
        .filter(|(_, _, append)| append.seq == seq)
        .collect();
    if appends.is_empty() {
        return;
    }
    table_start(out);
    for (tick, actor, append) in appends {
        let prefix: Vec<StoredEvent> = workflow
            .events
            .iter()
            .filter(|event| event.seq <= append.expected_seq)
            .map(|event| (*event).clone())
            .collect();
        let fresh = match replay(&workflow.id, &prefix) {
            Ok(replayed) => replayed.trip.digest(),
            Err(error) => format!("(unreplayable: {error})"),
        };
        row(
            out,
            &format!("state {actor} decided from (tick {tick})"),
            &format!(
                "replay of the log to seq {}: <code>{}</code>",
                append.expected_seq,
                Esc(&fresh)
            ),
            &format!("<code>{}</code>", Esc(&append.state)),
            Some(fresh == append.state),
        );
    }
    out.push_str("</table>\n");
}
