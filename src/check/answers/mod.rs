//! The store's answers judged against the state the trace fixes: I6 for
//! the reads a writer decides from, I5 for rows of a transaction that
//! never committed, I1 for a `pending` that hides due rows.
//!
//! The run's verdict must not rest on the store's word. The simulator
//! drives the store through its own reads (`load`, `commands`, `pending`),
//! and a wrong answer there shows up, if at all, far from its cause: as a
//! writer waiting forever (I10), as "never marked done" once the run ends
//! early. So every answer the trace records is compared, at the moment it
//! was given, with what the trace fixes about the store then (`known`):
//!
//! - **`load`** (I6): the committed events of that workflow, in `seq`
//!   order 1, 2, 3 … with no gap, none of another workflow, and none that
//!   no writer committed. An event whose transaction never committed (its
//!   writer rolled back or died before asking to commit) is I5: "stored
//!   although the transaction that wrote it never committed", the mark of a
//!   store in autocommit mode or one that commits its statements apart.
//! - **`heads`** (I6, `heads.rs`): one head per workflow with a committed
//!   event, at its latest committed `seq` and kind, none invented, and no
//!   more commands done than workers could have marked.
//! - **`commands`** (I6): the awaited command is done if and only if a
//!   worker marked it done (or a call that could have did).
//! - **`pending(limit)`** (I1): fewer rows than `limit` while rows were
//!   certainly due (committed, never marked or retried): the answer hid
//!   commands, which is how a command gets lost.
//! - **`claim`** (I1, `claims.rs`): the same, for rows certainly free by
//!   the claimer's clock (never claimed, or their lease expired). Whether
//!   a claim took a live lease is I8 (`leases.rs`).
//!
//! Each family is reported once per workflow (`load`, `commands`) or once
//! per run (`pending`, `heads`), at its first wrong answer. An answer is
//! judged by what the trace fixed when it was given, so a finding stands
//! whatever follows: `check::certain` ends a run on one.

mod claims;
mod heads;
mod known;
mod leased;

pub use claims::Claims;
use std::collections::BTreeMap;

use super::{Input, Invariant, Violation};
use crate::model::Shown;
use crate::trace::render::loaded;
use crate::trace::{Loaded, Op};
use known::{Known, Place};

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    let resets = super::resets(input.events, input.recoveries, input.restores);
    judge_all(input.events, resets, input.claims)
}

/// Every answer of `events` judged, with `resets` what the store held
/// after each power cut and restore, in order (`check::resets`). An answer is judged by what the trace fixed when it
/// was given, so a finding stands whatever follows: `check::certain` judges
/// the trace so far with this same code.
pub fn judge_all(
    events: &[crate::trace::TraceEvent],
    resets: Vec<&crate::sim::Recovery>,
    claims: Option<Claims>,
) -> Vec<Violation> {
    let mut known = Known::default();
    let mut recoveries = resets.into_iter();
    let mut found = Found::default();
    // What was known when each actor's call was first suspended inside the
    // store (`[preempt]`), until the actor's next event answers it, and the
    // caller's clock then: the call asked with it (`claim`).
    let mut suspended: BTreeMap<crate::actors::ActorId, (Known, u64)> = BTreeMap::new();
    for event in events {
        if known.blind {
            break;
        }
        if let Op::Preempted { step, .. } = &event.op {
            // Only reads are judged by their window.
            if READS.contains(&step.as_str()) {
                suspended
                    .entry(event.actor)
                    .or_insert_with(|| (known.at_start(), known.leases.clock(event.actor, event.tick)));
            }
            known.observe(event, &mut recoveries);
            continue;
        }
        let began = match event.op {
            // Recorded at a step's start, before its call is asked again.
            Op::Skew { .. } | Op::ClockStep { .. } | Op::Pause { .. } => None,
            _ => suspended.remove(&event.actor),
        };
        // A claim is judged with the run's claims and its caller's clock.
        let claim = claims.filter(|_| matches!(event.op, Op::Claim { .. })).map(|claims| {
            let clock = match &began {
                Some((_, clock)) => *clock,
                None => known.leases.clock(event.actor, event.tick),
            };
            (claims, clock)
        });
        match began {
            Some((start, _)) => judge(&Known::widened(start, &known), claim, event, &mut found),
            None => judge(&known, claim, event, &mut found),
        }
        known.observe(event, &mut recoveries);
    }
    found.into_violations()
}

/// The steps whose answers `judge` reads (`load`'s, `commands`'s
/// `Awaiting`, `heads`, `pending`, `claim`): a suspended one is judged by
/// the window its call spanned.
const READS: [&str; 5] = ["load", "commands", "heads", "pending", "claim"];

/// One answer against what the trace fixes; `claim`, for a claim in a run
/// with leases, is what it was asked with.
fn judge(known: &Known, claim: Option<(Claims, u64)>, event: &crate::trace::TraceEvent, found: &mut Found) {
    match &event.op {
        Op::Load {
            workflow_id, events, ..
        } => {
            if let Some(violation) = judge_load(known, workflow_id, events) {
                found.note(format!("load {workflow_id}"), violation.ticks([event.tick]), event);
            }
        }
        Op::Awaiting { command_id, done } => {
            if let Some(violation) = judge_awaiting(known, command_id, *done) {
                let workflow = crate::model::workflow_of(command_id).to_string();
                found.note(format!("commands {workflow}"), violation.ticks([event.tick]), event);
            }
        }
        Op::Heads { heads, .. } => {
            if let Some(violation) = heads::judge_heads(known, heads) {
                found.note("heads".to_string(), violation.ticks([event.tick]), event);
            }
        }
        Op::Pending { limit, command_ids } => {
            if let Some(violation) = judge_pending(known, *limit, command_ids) {
                found.note("pending".to_string(), violation.ticks([event.tick]), event);
            }
        }
        Op::Claim { claimed, .. } => {
            let Some((claims, clock)) = claim else {
                return;
            };
            if let Some(violation) = claims::judge_claim(known, claims, clock, claimed) {
                found.note("claim".to_string(), violation.ticks([event.tick]), event);
            }
        }
        _ => {}
    }
}

/// The first wrong answer of each family, placed at its answer (the tick
/// `check::order` sorts by): the store went wrong there, whatever ticks its
/// words name, so a wrong answer found late never leads a run before a
/// finding that came first. Later ones are not counted: a
/// run that ends early on a finding (`check::certain`) must lead with the
/// words a full run gives, and how many wrong answers a run collects
/// depends on how long it goes on. They are in the trace.
#[derive(Default)]
struct Found {
    first: BTreeMap<String, Violation>,
}

impl Found {
    fn note(&mut self, family: String, violation: Violation, event: &crate::trace::TraceEvent) {
        self.first.entry(family).or_insert_with(|| Violation {
            message: format!(
                "{} (answer to {} at tick {})",
                violation.message, event.actor, event.tick
            ),
            ..violation
        });
    }

    fn into_violations(self) -> Vec<Violation> {
        self.first.into_values().collect()
    }
}

/// A `load` answer against the committed history: the first wrong event.
fn judge_load(known: &Known, workflow_id: &str, answer: &[Loaded]) -> Option<Violation> {
    let empty = BTreeMap::new();
    let committed = known.committed.get(workflow_id).unwrap_or(&empty);
    let shown = Shown(workflow_id);
    let wrong = |message: String, seq: u64| {
        Some(
            Violation::new(
                Invariant::I6,
                format!("load({shown}) answered [{}]: {message}", loaded(answer)),
            )
            .workflow(workflow_id)
            .seq(seq),
        )
    };
    for (index, event) in answer.iter().enumerate() {
        let position = index as u64 + 1;
        if let Some(other) = &event.workflow_id {
            return wrong(
                format!("event {position} is {}#{} of another workflow", Shown(other), event.seq),
                event.seq,
            );
        }
        if event.seq != position {
            let what = match answer.iter().any(|later| later.seq == position) {
                true => "out of seq order",
                false => "a gap",
            };
            return wrong(
                format!(
                    "event {position} has seq {} where seq {position} belongs ({what})",
                    event.seq
                ),
                event.seq,
            );
        }
        match committed.get(&event.seq) {
            Some((kind, _)) if *kind == event.kind => {}
            Some((kind, tick)) => {
                return wrong(
                    format!(
                        "seq {} is {}, but the event committed at seq {} (tick {tick}) is {kind}",
                        event.seq, event.kind, event.seq
                    ),
                    event.seq,
                );
            }
            None => {
                let place: Place = (workflow_id.to_string(), event.seq, event.kind.clone());
                if known.maybe.contains(&place) {
                    continue;
                }
                let answered = format!("load({shown}) still answered [{}]", loaded(answer));
                if let Some(violation) = uncommitted(known, &place, &answered) {
                    return Some(violation);
                }
                return wrong(
                    format!("seq {} ({}) is an event no writer committed", event.seq, event.kind),
                    event.seq,
                );
            }
        }
    }
    // Every committed event must be in the answer.
    let missing = committed.range(answer.len() as u64 + 1..).next();
    missing.and_then(|(seq, (kind, tick))| {
        wrong(
            format!("it leaves out seq {seq} ({kind}), committed at tick {tick}"),
            *seq,
        )
    })
}

/// An answer showed `place`, which the trace does not have committed: I5
/// when its transaction ended without a commit or is still open (`answered`
/// says which answer showed it), `None` when nothing is known against it.
fn uncommitted(known: &Known, place: &Place, answered: &str) -> Option<Violation> {
    let (workflow_id, seq, kind) = place;
    let shown = Shown(workflow_id.as_str());
    let unwritten = known.unwritten.get(place).copied();
    let message = if let Some(tick) = unwritten {
        format!(
            "{shown}#{seq} ({kind}) is stored although the transaction that wrote it never committed: it \
             ended without a commit at tick {tick}, and {answered}"
        )
    } else if let Some(writer) = known.writing(place) {
        format!(
            "{shown}#{seq} ({kind}) is visible to another connection before the transaction of {writer} \
             that writes it committed: {answered}"
        )
    } else {
        return None;
    };
    let violation = Violation::new(Invariant::I5, message).workflow(workflow_id).seq(*seq);
    Some(match unwritten {
        Some(tick) => violation.ticks([tick]),
        None => violation,
    })
}

/// The awaited command's `done`, as the store's `commands` answered it.
fn judge_awaiting(known: &Known, command_id: &str, done: bool) -> Option<Violation> {
    let shown = Shown(command_id);
    if !known.rows.contains_key(command_id) {
        // A row the trace does not know (an id the store made up): I1 and I5 judge it from the dump.
        return None;
    }
    match (done, known.marked.get(command_id)) {
        (false, Some(tick)) => Some(
            Violation::new(
                Invariant::I6,
                format!("commands answered {shown} as pending, but it was marked done at tick {tick}"),
            )
            .command(command_id),
        ),
        (true, None) if !known.touched.contains(command_id) => Some(
            Violation::new(
                Invariant::I6,
                format!("commands answered {shown} as done, but no worker ever marked it done"),
            )
            .command(command_id),
        ),
        _ => None,
    }
}

/// The first five of `named`, and how many more.
fn first_five(named: &[String]) -> String {
    let more = match named.len() > 5 {
        true => format!(" and {} more", named.len() - 5),
        false => String::new(),
    };
    format!("{}{more}", named[..named.len().min(5)].join(", "))
}

/// A `pending(limit)` answer that came back short while rows were due.
fn judge_pending(known: &Known, limit: usize, answer: &[String]) -> Option<Violation> {
    if answer.len() >= limit {
        return None;
    }
    let left_out: Vec<(&String, &u64)> = known
        .due()
        .filter(|(command_id, _)| !answer.contains(command_id))
        .collect();
    let (first, _) = *left_out.first()?;
    let named: Vec<String> = left_out
        .iter()
        .map(|(command_id, tick)| format!("{} (committed at tick {tick})", Shown(command_id.as_str())))
        .collect();
    Some(
        Violation::new(
            Invariant::I1,
            format!(
                "pending(limit {limit}) answered {} row(s) while {} more were due: it left out {}",
                answer.len(),
                left_out.len(),
                first_five(&named)
            ),
        )
        .command(first),
    )
}

#[cfg(test)]
mod tests;
