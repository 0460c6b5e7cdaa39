//! Expected vs found: what the checker expected of a command or a workflow,
//! next to the rows the recovered database holds and the trace facts that
//! explain them (who committed, which transaction a kill cut short).
//!
//! The expectations are the protocol's (docs/protocol.md), computed with the
//! reference `decide`, never with the implementation under test: a stored
//! event must have exactly the commands `decide` emits for it, each command
//! one effect and a done row carrying that effect's result.

use std::fmt::Write;

use super::Page;
use super::facts::{CommandFacts, Insert, TxEnd};
use super::text::{Esc, Id, esc};
use crate::model::StoredEvent;
use crate::store::Outcome;
use crate::workflow::payload;

mod workflow;

pub(super) use workflow::workflow;

/// Items listed in one cell before "…".
const LIST_MAX: usize = 8;

/// Said of a stored event whose every inserting transaction failed to commit.
const UNACKNOWLEDGED: &str = "<br><b class=\"bad\">stored although no transaction that inserted it \
                              committed: it was made durable apart from its commands</b>";

/// A table row: aspect, expected, found, and whether found is as expected
/// (`None`: informative only).
fn row(out: &mut String, aspect: &str, expected: &str, found: &str, good: Option<bool>) {
    let class = match good {
        Some(true) => " class=\"found-ok\"",
        Some(false) => " class=\"found-bad\"",
        None => "",
    };
    let _ = writeln!(
        out,
        "<tr><th>{aspect}</th><td>{expected}</td><td{class}>{found}</td></tr>"
    );
}

fn table_start(out: &mut String) {
    out.push_str(
        "<table class=\"grid\"><tr><th></th><th>expected</th><th>found in the recovered database / trace</th></tr>\n",
    );
}

/// How a transaction ended, for people.
pub(super) fn tx_end(end: &TxEnd<'_>) -> String {
    match end {
        TxEnd::Committed(tick) => format!("committed at tick {tick}"),
        TxEnd::RolledBack(tick) => format!("rolled back at tick {tick}"),
        TxEnd::Killed { tick, point } => format!(
            "<span class=\"kill\">killed at {} (tick {tick})</span> before committing",
            Esc(point)
        ),
        TxEnd::Unknown => "never ended in the trace".to_string(),
    }
}

/// "inserted by writer-5 at tick 2561; its transaction was killed …".
pub(super) fn insert_line(insert: &Insert<'_>) -> String {
    format!(
        "inserted by {} at tick {}; its transaction {}",
        insert.actor,
        insert.tick,
        tx_end(&insert.end)
    )
}

pub(super) fn event_text(event: &StoredEvent) -> String {
    format!(
        "<code>{}#{}</code> {} <code>{}</code>",
        Id(&event.workflow_id),
        event.seq,
        Esc(&event.kind),
        Esc(&event.payload)
    )
}

/// The block for one command.
pub(super) fn command(out: &mut String, page: &Page<'_>, facts: &CommandFacts<'_>) {
    table_start(out);
    let id = &facts.id;
    let ghost = facts.row.is_none() && facts.expected.is_none();

    // The event it belongs to, and how it got (or did not get) committed.
    let seq_text = match facts.event_seq {
        Some(seq) => format!("<code>{}#{seq}</code>", Id(&facts.workflow_id)),
        None => "its event".to_string(),
    };
    let expected = if ghost {
        "an event whose commit emits it".to_string()
    } else {
        format!("{seq_text} stored, committed with its commands in one transaction")
    };
    let mut found = match facts.event {
        Some(event) => event_text(event),
        None => format!("<span class=\"bad\">no event {seq_text}</span>"),
    };
    for (tick, actor) in &facts.commits {
        let _ = write!(found, "<br>committed by {actor} at tick {tick}");
    }
    let event_inserts = page
        .facts
        .workflows
        .get(&facts.workflow_id)
        .map(|workflow| {
            workflow
                .inserts
                .iter()
                .filter(|(seq, insert)| Some(*seq) == facts.event_seq && !matches!(insert.end, TxEnd::Committed(_)))
                .map(|(_, insert)| *insert)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for insert in &event_inserts {
        let _ = write!(found, "<br>event {}", insert_line(insert));
    }
    let event_committed = page.facts.workflows.get(&facts.workflow_id).is_some_and(|workflow| {
        workflow
            .commits
            .iter()
            .any(|(_, _, append)| Some(append.seq) == facts.event_seq)
    });
    let unacknowledged = facts.event.is_some() && !event_committed && !event_inserts.is_empty();
    if unacknowledged {
        found.push_str(UNACKNOWLEDGED);
    }
    row(
        out,
        "event",
        &expected,
        &found,
        Some(facts.event.is_some() && !unacknowledged),
    );

    // The outbox row.
    let expected = match &facts.expected {
        Some(command) => format!(
            "one row <code>{}</code>: {} <code>{}</code>",
            Id(id),
            Esc(&command.kind),
            Esc(&command.payload)
        ),
        None if ghost => "no row: no stored event emits this id".to_string(),
        None => "a row, if its event is stored".to_string(),
    };
    let (mut found, good) = match facts.row {
        Some(row) => {
            let same = facts
                .expected
                .as_ref()
                .is_none_or(|command| command.kind == row.kind && payload::same(&command.payload, &row.payload));
            (
                format!(
                    "row <code>{}</code>: {} <code>{}</code>, event_seq {}, {}{}",
                    Id(&row.command_id),
                    Esc(&row.kind),
                    Esc(&row.payload),
                    row.event_seq,
                    if row.done { "done" } else { "pending" },
                    match &row.result {
                        Some(result) => format!(", result <code>{}</code>", Esc(result)),
                        None => String::new(),
                    }
                ),
                same && facts.event.is_some(),
            )
        }
        None => match facts
            .expected
            .as_ref()
            .and_then(|command| crate::check::stuck::under_another_id(page.snapshot, id, &command.kind))
        {
            Some(stray) => (
                format!(
                    "<span class=\"bad\">no row under this id</span>; a row under an id no decided command has: \
                     <code>{}</code>: {} <code>{}</code>, {}",
                    Id(&stray.command_id),
                    Esc(&stray.kind),
                    Esc(&stray.payload),
                    if stray.done { "done" } else { "pending" }
                ),
                false,
            ),
            None => ("<span class=\"bad\">no row</span>".to_string(), ghost),
        },
    };
    for insert in facts
        .inserts
        .iter()
        .filter(|insert| !matches!(insert.end, TxEnd::Committed(_)))
    {
        let _ = write!(found, "<br>{}", insert_line(insert));
    }
    row(out, "outbox row", &expected, &found, Some(good));

    // Deliveries, and sends outside the outbox.
    let sends = facts
        .deliveries
        .iter()
        .filter(|delivery| delivery.dispatch.is_none())
        .count();
    let mut found = format!("{sends} send{} by workers", if sends == 1 { "" } else { "s" });
    if !facts.timeouts.is_empty() {
        let _ = write!(found, ", {} timed out", facts.timeouts.len());
    }
    if !facts.lost.is_empty() {
        let _ = write!(found, ", {} message(s) lost", facts.lost.len());
    }
    let mut keys: Vec<&str> = facts.deliveries.iter().map(|delivery| delivery.key).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.iter().any(|key| key != id) {
        let _ = write!(
            found,
            "<br>under {} key(s): {}",
            keys.len(),
            keys.iter()
                .take(8)
                .map(|key| format!("<code>{}</code>", Id(key)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let dispatches: Vec<String> = facts
        .deliveries
        .iter()
        .filter_map(|delivery| {
            delivery.dispatch.map(|replay| {
                format!(
                    "{} at tick {} → {} ({})",
                    delivery.actor,
                    delivery.tick,
                    delivery.to,
                    if replay { "while replaying" } else { "before its commit" }
                )
            })
        })
        .collect();
    if !dispatches.is_empty() {
        let _ = write!(
            found,
            "<br><span class=\"bad\">sent by writers themselves, outside the outbox, {} time(s): {}{}</span>",
            dispatches.len(),
            dispatches.iter().take(LIST_MAX).cloned().collect::<Vec<_>>().join("; "),
            if dispatches.len() > LIST_MAX { "; …" } else { "" }
        );
    }
    row(
        out,
        "deliveries",
        "from the outbox only, after commit, every retry under the same key",
        &found,
        (!dispatches.is_empty()).then_some(false),
    );

    // Effects at the receiver.
    let genuine = facts.genuine_effects();
    // An effect can only follow its event's commit (I4 "delivered before commit").
    let committed_at = page.facts.workflows.get(&facts.workflow_id).and_then(|workflow| {
        workflow
            .commits
            .iter()
            .filter(|(_, _, append)| Some(append.seq) == facts.event_seq)
            .map(|(tick, _, _)| *tick)
            .min()
    });
    let mut early = false;
    let expected = if ghost {
        "no effect".to_string()
    } else {
        let kind = facts.kind();
        format!("exactly 1 effect ({})", Esc(kind))
    };
    let mut found = String::new();
    if facts.effects.is_empty() {
        found.push_str("no effect");
    }
    for (effect, tick) in &facts.effects {
        let rogue = !genuine.iter().any(|(other, _)| other.effect_id == effect.effect_id);
        let _ = write!(
            found,
            "{}effect <b>#{}</b> key <code>{}</code>: {} <code>{}</code> → <code>{}</code>{}{}",
            if found.is_empty() { "" } else { "<br>" },
            effect.effect_id,
            Id(&effect.key),
            Esc(&effect.kind),
            Esc(&effect.payload),
            Esc(&effect.result),
            match (tick, committed_at) {
                (Some(tick), Some(committed)) if *tick < committed => {
                    early = true;
                    format!(
                        ", applied at tick {tick} <span class=\"bad\">before its event committed (tick {committed})</span>"
                    )
                }
                (Some(tick), _) => format!(", applied at tick {tick}"),
                (None, _) => String::new(),
            },
            if rogue {
                " <span class=\"bad\">(other parameters under its key)</span>"
            } else {
                ""
            }
        );
    }
    let lost_applies: Vec<String> = facts
        .applies
        .iter()
        .filter(|(_, _, effect_id)| !facts.effects.iter().any(|(effect, _)| effect.effect_id == *effect_id))
        .map(|(tick, actor, effect_id)| format!("#{effect_id} by {actor} at tick {tick}"))
        .collect();
    if !lost_applies.is_empty() {
        let _ = write!(
            found,
            "<br><span class=\"note\">applied but rolled back (not in the database): {}</span>",
            lost_applies.join(", ")
        );
    }
    let good = if ghost {
        facts.effects.is_empty()
    } else {
        let done = facts.row.is_some_and(|row| row.done);
        !early && genuine.len() == facts.effects.len() && (genuine.len() == 1 || (!done && genuine.is_empty()))
    };
    row(out, "effects", &expected, &found, Some(good));

    if !facts.dedup.is_empty() {
        let found: Vec<String> = facts
            .dedup
            .iter()
            .map(|record| {
                format!(
                    "key <code>{}</code> → effect #{}, result <code>{}</code>",
                    Id(&record.key),
                    record.effect_id,
                    Esc(&record.result)
                )
            })
            .collect();
        row(
            out,
            "de-dup records",
            "one per key, written with its effect",
            &found.join("<br>"),
            None,
        );
    }

    if !facts.probes.is_empty() {
        let answers: Vec<String> = page
            .facts
            .history
            .probe_replies
            .iter()
            .filter(|(_, key, _)| page.facts.command_of(key) == id)
            .map(|(tick, _, outcome)| {
                let text = match outcome {
                    Outcome::Conflict => "rejected as a conflict".to_string(),
                    Outcome::Retryable { error } => format!("refused, retryable ({})", Esc(error)),
                    Outcome::Applied { result } => format!("<span class=\"bad\">applied</span> ({})", Esc(result)),
                    Outcome::Duplicate { result } => {
                        format!(
                            "<span class=\"bad\">answered with the first result</span> ({})",
                            Esc(result)
                        )
                    }
                };
                format!("tick {tick}: {text}")
            })
            .collect();
        row(
            out,
            "key-conflict probes",
            "rejected as conflicts",
            &format!(
                "{} probe(s) at tick {}{}",
                facts.probes.len(),
                join_ticks(&facts.probes),
                if answers.is_empty() {
                    String::new()
                } else {
                    format!("<br>{}", answers.join("<br>"))
                }
            ),
            None,
        );
    }

    near_misses(out, page, facts);

    // Marked done.
    let effect_results: Vec<&str> = genuine.iter().map(|(effect, _)| effect.result.as_str()).collect();
    let (mut found, good) = match facts.row {
        None => ("no row to mark".to_string(), ghost),
        Some(row) => match (&row.result, row.done) {
            (_, false) => ("<span class=\"bad\">pending</span>".to_string(), false),
            (None, true) => ("<span class=\"bad\">done without a result</span>".to_string(), false),
            (Some(result), true) => {
                let real = effect_results.contains(&result.as_str());
                (
                    format!(
                        "done, result <code>{}</code>{}",
                        Esc(result),
                        if real {
                            ""
                        } else {
                            " <span class=\"bad\">(no effect returned it)</span>"
                        }
                    ),
                    real,
                )
            }
        },
    };
    let marks: Vec<String> = facts
        .marks
        .iter()
        .map(|(tick, actor, changed)| {
            format!(
                "{actor} at tick {tick}{}",
                if *changed { "" } else { " (already done)" }
            )
        })
        .collect();
    if !marks.is_empty() {
        let _ = write!(found, "<br>mark_done: {}", marks.join(", "));
    }
    row(
        out,
        "marked done",
        if ghost {
            "nothing to mark"
        } else {
            "done, with the result its effect returned"
        },
        &found,
        Some(good),
    );
    out.push_str("</table>\n");
}

/// Near-miss probes of the command (its exact request under another case,
/// a padded key or the other Unicode form) and the receiver's answers. An
/// answer is marked wrong where the checker found it wrong: an I7
/// violation about this command at the answer's tick (`check/effects.rs`).
fn near_misses(out: &mut String, page: &Page<'_>, facts: &CommandFacts<'_>) {
    let history = &page.facts.history;
    let ours: Vec<(&str, crate::workload::NearMiss)> = history
        .near_misses
        .iter()
        .filter(|(_, (of, _))| *of == facts.id)
        .map(|(key, (_, form))| (*key, *form))
        .collect();
    if ours.is_empty() {
        return;
    }
    let blamed = |tick: u64| {
        facts.violations.iter().any(|&index| {
            let violation = &page.result.violations[index];
            violation.invariant == crate::check::Invariant::I7 && violation.ticks.contains(&tick)
        })
    };
    let results: Vec<&str> = facts.effects.iter().map(|(effect, _)| effect.result.as_str()).collect();
    let mut good = true;
    let mut lines = Vec::new();
    for (key, form) in &ours {
        let answers: Vec<String> = history
            .probe_replies
            .iter()
            .filter(|(_, replied, _)| replied == key)
            .map(|(tick, _, outcome)| {
                let text = match outcome {
                    Outcome::Applied { result } => format!("applied as a new operation ({})", Esc(result)),
                    Outcome::Retryable { error } => format!("refused, retryable ({})", Esc(error)),
                    Outcome::Duplicate { result } if results.contains(&result.as_str()) => {
                        format!("answered with the result of {} ({})", Id(&facts.id), Esc(result))
                    }
                    Outcome::Duplicate { result } => format!("answered as a repeat ({})", Esc(result)),
                    Outcome::Conflict => "rejected as a conflict".to_string(),
                };
                if blamed(*tick) {
                    good = false;
                    format!("tick {tick}: <span class=\"bad\">{text}</span>")
                } else {
                    format!("tick {tick}: {text}")
                }
            })
            .collect();
        lines.push(format!(
            "key <code>{}</code> ({}): {}",
            Id(key),
            esc(form.describe()),
            if answers.is_empty() {
                "no answer".to_string()
            } else {
                answers.join("; ")
            }
        ));
    }
    row(
        out,
        "near-miss probes",
        "each another operation: applied anew or refused, never answered with this command's result nor called a conflict",
        &lines.join("<br>"),
        Some(good),
    );
}

fn join_ticks(ticks: &[u64]) -> String {
    ticks.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

/// The block for I9: what `PRAGMA integrity_check` said of each file.
pub(super) fn integrity(out: &mut String, page: &Page<'_>) {
    table_start(out);
    for (file, verdict) in [
        ("store database", &page.snapshot.store_integrity),
        ("receiver database", &page.snapshot.receiver_integrity),
    ] {
        row(
            out,
            file,
            "<code>ok</code>",
            &format!("<code>{}</code>", esc(verdict)),
            Some(verdict == "ok"),
        );
    }
    out.push_str("</table>\n");
}
