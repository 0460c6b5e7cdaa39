//! The violations: the first ones in full (message, what they are about,
//! the kills that interrupted it, expected vs found, the trace lines about
//! it), the rest one line each. Every one links to its lifecycle row and to
//! its ticks on the timeline.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::facts::Kill;
use super::text::{Esc, Id, command_anchor, command_link, tick_link, violation_anchor};
use super::{Page, expected};
use crate::check::{Invariant, Violation};
use crate::model::command_id;
use crate::trace::{Op, render};

/// Violations shown in full; a run can have a thousand (one per dispatch).
const DETAILED_MAX: usize = 12;
/// Trace lines shown per violation: the first and last half of this.
const TRACE_LINES_MAX: usize = 80;
/// Kills named per violation.
const KILLS_MAX: usize = 6;

pub(super) fn write(out: &mut String, page: &Page<'_>) {
    let violations = &page.result.violations;
    out.push_str("<section id=\"violations\">\n<h2>Violations</h2>\n");
    if violations.is_empty() {
        out.push_str("<p>None: every invariant held.</p>\n</section>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<p>{} violation{}: {}.{}</p>",
        violations.len(),
        if violations.len() == 1 { "" } else { "s" },
        super::header::counts_by_invariant(page),
        if violations.len() > DETAILED_MAX {
            format!(" The first {DETAILED_MAX} are shown in full, the rest one line each below.")
        } else {
            String::new()
        }
    );
    // A subject (command, workflow, run) is explained once; later
    // violations about it link to the first.
    let mut explained: BTreeMap<String, usize> = BTreeMap::new();
    for (index, violation) in violations.iter().enumerate().take(DETAILED_MAX) {
        card(out, page, index, violation, &mut explained);
    }
    if violations.len() > DETAILED_MAX {
        out.push_str("<table class=\"compact\"><tr><th>#</th><th>invariant</th><th>message</th><th>about</th><th>ticks</th></tr>\n");
        for (index, violation) in violations.iter().enumerate().skip(DETAILED_MAX) {
            let _ = writeln!(
                out,
                "<tr id=\"{}\"><td>{}</td><td><span class=\"inv\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                violation_anchor(index),
                index + 1,
                violation.invariant,
                Esc(&violation.message),
                about(page, violation),
                ticks(violation)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
}

/// "workflow trip-006 · command trip-006:3:0 · seq 3"; a workflow links to
/// the lifecycle row of the first command of its event in question.
fn about(page: &Page<'_>, violation: &Violation) -> String {
    let mut parts = Vec::new();
    if let Some(workflow) = &violation.workflow_id {
        let row = violation
            .seq
            .map(|seq| command_id(workflow, seq, 0))
            .filter(|id| page.facts.commands.get(id).is_some_and(|facts| facts.shown()));
        match row {
            Some(id) if violation.command_id.is_none() => parts.push(format!(
                "workflow <a href=\"#{}\"><code>{}</code></a>",
                command_anchor(&id),
                Id(workflow)
            )),
            _ => parts.push(format!("workflow <code>{}</code>", Id(workflow))),
        }
    }
    if let Some(command) = &violation.command_id {
        parts.push(format!("command {}", command_link(command)));
    }
    if let Some(seq) = violation.seq {
        parts.push(format!("seq {seq}"));
    }
    parts.join(" · ")
}

fn ticks(violation: &Violation) -> String {
    violation
        .ticks
        .iter()
        .map(|tick| tick_link(*tick))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The kills that interrupted what a violation is about, as indexes into `Facts::kills`.
pub(super) fn kills_of(page: &Page<'_>, violation: &Violation) -> Vec<usize> {
    let mut kills = kills_about(page, violation);
    // I2's ticks are the effects themselves: a kill after the last of them
    // cannot have caused the duplicate (other invariants' ticks may be the
    // start of what a later kill interrupted, such as a send).
    if violation.invariant == Invariant::I2
        && let Some(last) = violation.ticks.last()
    {
        kills.retain(|kill| page.facts.kills[*kill].tick <= *last);
    }
    kills
}

fn kills_about(page: &Page<'_>, violation: &Violation) -> Vec<usize> {
    let facts = &page.facts;
    if let Some(command) = &violation.command_id {
        facts
            .commands
            .get(command)
            .map(|command| command.kills.clone())
            .unwrap_or_default()
    } else if let Some(workflow) = &violation.workflow_id {
        let Some(workflow_facts) = facts.workflows.get(workflow) else {
            return Vec::new();
        };
        workflow_facts
            .kills
            .iter()
            .copied()
            .filter(|index| {
                let kill = &facts.kills[*index];
                violation.seq.is_none_or(|seq| {
                    kill.events.iter().any(|(w, s)| w == workflow && *s == seq)
                        || kill.commands.iter().any(|id| {
                            super::facts::parse_command_id(id).is_some_and(|(w, s, _)| w == workflow && s == seq)
                        })
                })
            })
            .collect()
    } else {
        Vec::new()
    }
}

/// The ticks to mark for a violation on the timeline: the checker's, or
/// when it names none (a row that is simply missing), its kills'.
pub(super) fn marked_ticks(page: &Page<'_>, violation: &Violation) -> Vec<u64> {
    if !violation.ticks.is_empty() {
        return violation.ticks.clone();
    }
    let mut ticks: Vec<u64> = kills_of(page, violation)
        .into_iter()
        .map(|kill| page.facts.kills[kill].tick)
        .collect();
    ticks.sort_unstable();
    ticks.dedup();
    ticks
}

/// One kill as a sentence.
pub(super) fn kill_sentence(kill: &Kill<'_>, index: usize) -> String {
    format!(
        "<b>{}</b> was killed at <span class=\"kill\">{}</span> at tick <a href=\"#kill-{index}\">{}</a>: it {}{}.",
        kill.actor,
        Esc(kill.point),
        kill.tick,
        Esc(&kill.doing),
        match kill.back {
            Some(tick) => format!("; it restarted at tick {tick}"),
            None => "; it never restarted".to_string(),
        }
    )
}

fn card(
    out: &mut String,
    page: &Page<'_>,
    index: usize,
    violation: &Violation,
    explained: &mut BTreeMap<String, usize>,
) {
    let _ = writeln!(
        out,
        "<article class=\"violation\" id=\"{}\">\n<h3><span class=\"inv\">{}</span> {} \
         <a class=\"note\" href=\"#{}\">#{}</a></h3>\n<p class=\"msg\">{}</p>",
        violation_anchor(index),
        violation.invariant,
        violation.invariant.title(),
        violation_anchor(index),
        index + 1,
        Esc(&violation.message)
    );
    let mut facts_line = about(page, violation);
    let marked = marked_ticks(page, violation);
    if !marked.is_empty() {
        if !facts_line.is_empty() {
            facts_line.push_str(" · ");
        }
        let links: Vec<String> = marked.iter().map(|tick| tick_link(*tick)).collect();
        if violation.ticks.is_empty() {
            let _ = write!(facts_line, "on the timeline at its kill: tick {}", links.join(", "));
        } else {
            let _ = write!(facts_line, "ticks {}", links.join(", "));
        }
    }
    if !facts_line.is_empty() {
        let _ = writeln!(out, "<p>{facts_line}</p>");
    }

    let kills = kills_of(page, violation);
    if !kills.is_empty() {
        let _ = writeln!(
            out,
            "<h4>{} that interrupted it</h4>",
            if kills.len() == 1 { "The kill" } else { "Kills" }
        );
    }
    for kill in kills.iter().take(KILLS_MAX) {
        let _ = writeln!(
            out,
            "<p class=\"cause\">{}</p>",
            kill_sentence(&page.facts.kills[*kill], *kill)
        );
    }
    if kills.len() > KILLS_MAX {
        let _ = writeln!(
            out,
            "<p class=\"note\">… and {} more kills.</p>",
            kills.len() - KILLS_MAX
        );
    }

    // Expected vs found, once per subject.
    let subject = match (&violation.command_id, &violation.workflow_id, violation.invariant) {
        (Some(command), _, _) => Some(format!("command {command}")),
        (None, Some(workflow), _) => Some(format!("workflow {workflow} {:?}", violation.seq)),
        (None, None, Invariant::I10) => Some("stuck".to_string()),
        (None, None, Invariant::I9) if violation.message.contains("integrity_check") => Some("integrity".to_string()),
        _ => None,
    };
    if let Some(subject) = subject {
        if let Some(first) = explained.get(&subject) {
            let _ = writeln!(
                out,
                "<p class=\"note\">Expected vs found: as in <a href=\"#{}\">#{}</a>.</p>",
                violation_anchor(*first),
                first + 1
            );
        } else {
            explained.insert(subject, index);
            out.push_str("<h4>Expected vs found</h4>\n");
            if let Some(command) = violation.command_id.as_ref().and_then(|id| page.facts.commands.get(id)) {
                expected::command(out, page, command);
            } else if let Some(workflow) = violation
                .workflow_id
                .as_ref()
                .and_then(|id| page.facts.workflows.get(id))
            {
                expected::workflow(out, page, workflow, violation.seq);
            } else if violation.invariant == Invariant::I10 {
                super::stuck::block(out, page);
            } else {
                expected::integrity(out, page);
            }
        }
    }

    let lines = trace_lines(page, violation);
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "<details{}><summary>The trace about it ({} line{})</summary>\n<pre class=\"trace\">{}</pre></details>",
            if index == 0 { " open" } else { "" },
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            excerpt(page, &lines)
        );
    }
    out.push_str("</article>\n");
}

/// The trace lines about a violation's command or workflow, by index.
fn trace_lines(page: &Page<'_>, violation: &Violation) -> Vec<usize> {
    let facts = &page.facts;
    let kills: Vec<usize> = kills_of(page, violation)
        .into_iter()
        .map(|kill| facts.kills[kill].event)
        .collect();
    let mut lines = Vec::new();
    if let Some(command) = &violation.command_id {
        let seq = facts.commands.get(command).and_then(|command| command.event_seq);
        let workflow = facts
            .commands
            .get(command)
            .map(|command| command.workflow_id.as_str())
            .unwrap_or_default();
        let mine = |key: &str| facts.command_of(key) == command;
        // Near misses of it: its request under another key, and the
        // receiver's handling and answer, which show an inexact compare.
        let near = |key: &str| facts.history.near_misses.get(key).is_some_and(|(of, _)| of == command);
        for (index, event) in page.events.iter().enumerate() {
            let relevant = match &event.op {
                Op::InsertCommand { command_id }
                | Op::MarkDone { command_id, .. }
                | Op::Awaiting { command_id, .. }
                | Op::Send { command_id, .. }
                | Op::Dispatch { command_id, .. } => command_id == command,
                Op::InsertEvent {
                    workflow_id, seq: s, ..
                } => workflow_id == workflow && Some(*s) == seq,
                Op::Commit { appended } => appended.iter().any(|append| append.command_ids.contains(command)),
                Op::Timeout { key, .. }
                | Op::Reply { key, .. }
                | Op::Lost { key, .. }
                | Op::Duplicated { key, .. }
                | Op::Probe { key, .. }
                | Op::ProbeReply { key, .. }
                // A receiver's lookups show a check-then-act race: two
                // `lookup …: new` of one key before either effect.
                | Op::Lookup { key, .. }
                | Op::Apply { key, .. } => mine(key) || near(key),
                Op::NearMiss { key, .. } | Op::Receive { key, .. } | Op::Respond { key, .. } => near(key),
                // A writer that finds the event without its commands says so by workflow and seq.
                Op::Failed { error, .. } => {
                    error.contains(command.as_str())
                        || seq.is_some_and(|seq| {
                            let event = format!("{workflow} seq {seq}");
                            error.ends_with(&event) || error.contains(&format!("{event} "))
                        })
                }
                Op::Kill { .. } => kills.contains(&index),
                _ => false,
            };
            if relevant {
                lines.push(index);
            }
        }
    } else if let Some(workflow) = &violation.workflow_id {
        let seq = violation.seq;
        // The decision for seq s is made from seq s - 1.
        let from = seq.map(|seq| seq.saturating_sub(1));
        for (index, event) in page.events.iter().enumerate() {
            let relevant = match &event.op {
                Op::Decide {
                    workflow_id,
                    expected_seq,
                    ..
                }
                | Op::Conflict {
                    workflow_id,
                    expected_seq,
                } => workflow_id == workflow && from.is_none_or(|from| *expected_seq == from),
                Op::InsertEvent {
                    workflow_id, seq: s, ..
                } => workflow_id == workflow && seq.is_none_or(|seq| *s == seq),
                Op::Commit { appended } => appended
                    .iter()
                    .any(|append| &append.workflow_id == workflow && seq.is_none_or(|seq| append.seq == seq)),
                Op::Kill { .. } => kills.contains(&index),
                _ => false,
            };
            if relevant {
                lines.push(index);
            }
        }
    }
    lines
}

/// Rendered trace lines, the middle elided past `TRACE_LINES_MAX`; kills in bold.
fn excerpt(page: &Page<'_>, lines: &[usize]) -> String {
    let half = TRACE_LINES_MAX / 2;
    let mut text = String::new();
    for (position, index) in lines.iter().enumerate() {
        if lines.len() > TRACE_LINES_MAX && position >= half && position < lines.len() - half {
            if position == half {
                let _ = writeln!(text, "          … {} lines …", lines.len() - TRACE_LINES_MAX);
            }
            continue;
        }
        let event = &page.events[*index];
        let line = render::line(event);
        if matches!(event.op, Op::Kill { .. }) {
            let _ = writeln!(text, "<b>{}</b>", Esc(&line));
        } else {
            let _ = writeln!(text, "{}", Esc(&line));
        }
    }
    text
}
