//! Why a run did not settle: for each workflow that is not done, what it
//! waits on and where that command is stuck.
//!
//! A liveness failure is a symptom; its cause is a row in a wrong state or
//! a step nobody took. `explain` reads the final state and the trace and
//! names, per stuck workflow, the command in its way and that command's
//! state: never enqueued, pending and never sent, sent with no answer,
//! applied with the reply lost, answered as a conflict, marked done without
//! a result or without an effect, or done while no writer moved on. I10
//! reports it per workflow (`liveness.rs`) and the HTML report shows the
//! same table (`report::html::expected`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::snapshot::Effect;
use super::{History, Snapshot};
use crate::model::{Command, OutboxRow, Shown, StoredEvent, command_id};
use crate::store::Outcome;
use crate::workflow::{Trip, decide, replay};

/// One workflow that is not done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    pub workflow_id: String,
    /// The phase its stored history replays to ("new" without events).
    pub phase: String,
    pub waits: Waits,
}

/// What a stuck workflow waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waits {
    /// No event is stored: no writer appended its first one.
    Start,
    /// Its stored history does not replay (I3 says why).
    Replay(String),
    /// Every command of its head event `seq` is done with a result: a
    /// writer should have appended the next event.
    Writer { seq: u64 },
    /// These commands are in its way, in command order.
    Commands(Vec<Blocked>),
}

/// A command in a workflow's way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub command_id: String,
    pub kind: String,
    pub state: State,
}

/// Where a command stands at the end of a run that did not settle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Its event is committed without it.
    NeverEnqueued,
    /// No row under its id, but its event has a row of its kind under an
    /// id no decided command has (`row_id`): the store renamed it.
    UnderAnotherId { row_id: String },
    /// Pending, and no worker ever sent it.
    NeverSent,
    /// Pending; sent, never applied, never answered.
    Unanswered { sends: usize, last: u64 },
    /// Pending; a receiver refused it retryably, and its retry timer waits.
    Retrying {
        attempts: u32,
        next_at: Option<u64>,
        error: String,
    },
    /// Pending; a receiver answered its own request with a key conflict,
    /// and no worker marks a conflict done.
    Conflict { tick: u64 },
    /// Pending; a receiver applied it, but no confirmed reply reached a worker.
    ReplyLost { effect_id: i64, sends: usize },
    /// Pending; a worker received the confirmed result, but the row was
    /// never marked done.
    NotMarked { effect_id: i64, replied: u64 },
    /// Done without a result: nothing delivers it again, and no writer
    /// has an outcome to go on from.
    DoneWithoutResult,
    /// Done, but no receiver performed it: a lost command.
    DoneWithoutEffect,
    /// Done with a result none of its effects returned.
    DoneWrongResult { result: String },
}

impl State {
    /// Whether the row itself is wrong (done wrongly, or missing), not
    /// merely waiting for a step nobody took.
    pub fn wrong_row(&self) -> bool {
        matches!(
            self,
            State::NeverEnqueued
                | State::UnderAnotherId { .. }
                | State::DoneWithoutResult
                | State::DoneWithoutEffect
                | State::DoneWrongResult { .. }
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::NeverEnqueued => f.write_str("never enqueued: its event is committed without it"),
            State::UnderAnotherId { row_id } => write!(
                f,
                "no row under its id, but a row under an id no decided command has ({}): \
                 the store stored it under another id",
                Shown(row_id)
            ),
            State::NeverSent => f.write_str("pending, never delivered: no worker sent it"),
            State::Unanswered { sends, last } => write!(
                f,
                "pending: sent {sends} time(s), last at tick {last}; no receiver applied it and no reply came"
            ),
            State::Retrying {
                attempts,
                next_at,
                error,
            } => match next_at {
                Some(at) => write!(
                    f,
                    "pending: failed {attempts} time(s) ({error}); its retry timer is due at tick {at}"
                ),
                None => write!(f, "pending: failed {attempts} time(s) ({error}); no retry is scheduled"),
            },
            State::Conflict { tick } => write!(
                f,
                "pending: a receiver answered its own request with a key conflict at tick {tick}, \
                 so no worker will mark it done"
            ),
            State::ReplyLost { effect_id, sends } => write!(
                f,
                "applied by a receiver (effect #{effect_id}), but no confirmed reply reached a worker \
                 (sent {sends} time(s)): pending, waiting for a redelivery"
            ),
            State::NotMarked { effect_id, replied } => write!(
                f,
                "applied (effect #{effect_id}) and confirmed to a worker at tick {replied}, \
                 but never marked done"
            ),
            State::DoneWithoutResult => f.write_str(
                "marked done without a result: nothing will deliver it again, and the writer has no result to go on",
            ),
            State::DoneWithoutEffect => f.write_str("marked done, but no receiver ever performed it: a lost command"),
            State::DoneWrongResult { result } => {
                write!(
                    f,
                    "marked done with result {result}, which none of its effects returned"
                )
            }
        }
    }
}

impl fmt::Display for Stuck {
    /// "trip-003 (flight_booked) waits on trip-003:3:0 (book_hotel): applied …".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", Shown(&self.workflow_id), self.phase)?;
        match &self.waits {
            Waits::Start => f.write_str(" never started: no writer appended its first event"),
            Waits::Replay(why) => write!(f, ": its history does not replay ({why})"),
            Waits::Writer { seq } => write!(
                f,
                " waits for a writer: every command of its event #{seq} is done, yet no writer appended the next event"
            ),
            Waits::Commands(blocked) => {
                for (index, command) in blocked.iter().enumerate() {
                    let lead = if index == 0 { " waits on" } else { "; and on" };
                    write!(
                        f,
                        "{lead} {} ({}): {}",
                        Shown(&command.command_id),
                        command.kind,
                        command.state
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl Stuck {
    /// The first command in the way, if any.
    pub fn command(&self) -> Option<&Blocked> {
        match &self.waits {
            Waits::Commands(blocked) => blocked.first(),
            _ => None,
        }
    }
}

/// Every one of `workflows` that is not done (not terminal, or with rows
/// not yet done), in the order given; workflows waiting on a dead letter
/// are a person's, not stuck.
pub fn explain(snapshot: &Snapshot, history: &History<'_>, workflows: &[&str]) -> Vec<Stuck> {
    let by_workflow = snapshot.events_by_workflow();
    let dead = snapshot.dead_lettered();
    let manual: BTreeSet<&str> = dead.values().map(|timer| timer.workflow_id.as_str()).collect();
    let rows = snapshot.rows_by_id();
    let mut effects: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &snapshot.effects {
        effects.entry(history.command_of(&effect.key)).or_default().push(effect);
    }
    // Replies to any key a command was sent under, by command.
    let mut replies: BTreeMap<&str, Vec<(u64, &Outcome)>> = BTreeMap::new();
    for (key, answers) in &history.replies {
        replies
            .entry(history.command_of(key))
            .or_default()
            .extend(answers.iter().copied());
    }
    let facts = Facts {
        snapshot,
        history,
        rows: &rows,
        effects: &effects,
        replies: &replies,
    };
    let mut stuck = Vec::new();
    for &workflow_id in workflows {
        if manual.contains(workflow_id) {
            continue;
        }
        let events = by_workflow.get(workflow_id).map(Vec::as_slice).unwrap_or_default();
        let replayed = match replay(workflow_id, events) {
            Ok(replayed) => replayed,
            Err(error) => {
                stuck.push(Stuck {
                    workflow_id: workflow_id.to_string(),
                    phase: "unreplayable".to_string(),
                    waits: Waits::Replay(error.to_string()),
                });
                continue;
            }
        };
        let phase = replayed.trip.phase_name().to_string();
        let Some(head) = events.last() else {
            stuck.push(Stuck {
                workflow_id: workflow_id.to_string(),
                phase,
                waits: Waits::Start,
            });
            continue;
        };
        // The head's commands, then any other row of the workflow not done.
        let mut ids: Vec<(String, String)> = Vec::new();
        if !replayed.trip.is_terminal() {
            ids.extend(
                head_commands(workflow_id, events)
                    .into_iter()
                    .enumerate()
                    .map(|(index, command)| (command_id(workflow_id, head.seq, index), command.kind)),
            );
        }
        for row in snapshot.outbox.iter().filter(|row| row.workflow_id == workflow_id) {
            let listed = ids.iter().any(|(id, _)| *id == row.command_id);
            if !row.done && !dead.contains_key(row.command_id.as_str()) && !listed {
                ids.push((row.command_id.clone(), row.kind.clone()));
            }
        }
        let blocked: Vec<Blocked> = ids
            .into_iter()
            .filter_map(|(id, kind)| facts.state(&id, &kind).map(|state| (id, kind, state)))
            .map(|(command_id, kind, state)| Blocked {
                command_id,
                kind,
                state,
            })
            .collect();
        let waits = match (blocked.is_empty(), replayed.trip.is_terminal()) {
            (false, _) => Waits::Commands(blocked),
            (true, true) => continue,
            (true, false) => Waits::Writer { seq: head.seq },
        };
        stuck.push(Stuck {
            workflow_id: workflow_id.to_string(),
            phase,
            waits,
        });
    }
    stuck
}

/// For a command `id` (of `kind`) with no row under its id: a row of its
/// event and kind under an id that is not of the shape every decided
/// command's id has (`workflow:seq:index` of that event), the first by id.
pub fn under_another_id<'s>(snapshot: &'s Snapshot, id: &str, kind: &str) -> Option<&'s OutboxRow> {
    let (workflow_id, seq, _) = crate::model::parse_command_id(id)?;
    snapshot
        .outbox
        .iter()
        .filter(|row| row.workflow_id == workflow_id && row.event_seq == seq && row.kind == kind)
        .filter(|row| {
            crate::model::parse_command_id(&row.command_id)
                .is_none_or(|(workflow, event_seq, _)| workflow != workflow_id || event_seq != seq)
        })
        .min_by(|a, b| a.command_id.cmp(&b.command_id))
}

/// The commands the last of `events` emitted (the history replays).
fn head_commands(workflow_id: &str, events: &[StoredEvent]) -> Vec<Command> {
    let mut trip = Trip::new(workflow_id);
    let mut commands = Vec::new();
    for event in events {
        match decide(&trip, &event.event()) {
            Ok((next, emitted)) => {
                trip = next;
                commands = emitted;
            }
            Err(_) => return Vec::new(),
        }
    }
    commands
}

struct Facts<'s, 'h> {
    snapshot: &'s Snapshot,
    history: &'s History<'h>,
    rows: &'s BTreeMap<&'s str, &'s OutboxRow>,
    effects: &'s BTreeMap<&'s str, Vec<&'s Effect>>,
    replies: &'s BTreeMap<&'s str, Vec<(u64, &'s Outcome)>>,
}

impl Facts<'_, '_> {
    /// Where command `id` stands; `None` if it is done as it should be.
    fn state(&self, id: &str, kind: &str) -> Option<State> {
        let Some(row) = self.rows.get(id) else {
            return Some(match under_another_id(self.snapshot, id, kind) {
                Some(row) => State::UnderAnotherId {
                    row_id: row.command_id.clone(),
                },
                None => State::NeverEnqueued,
            });
        };
        let performed = self.effects.get(id).map(Vec::as_slice).unwrap_or_default();
        if row.done {
            return match &row.result {
                None => Some(State::DoneWithoutResult),
                // Backed when it was marked; a power cut took the effect since.
                Some(result)
                    if !performed.iter().any(|effect| &effect.result == result)
                        && self.history.backed_when_marked(id, result) =>
                {
                    None
                }
                Some(_) if performed.is_empty() => Some(State::DoneWithoutEffect),
                Some(result) if !performed.iter().any(|effect| &effect.result == result) => {
                    Some(State::DoneWrongResult { result: result.clone() })
                }
                Some(_) => None,
            };
        }
        let sends = self.history.sends.get(id).map(Vec::as_slice).unwrap_or_default();
        let replies = self.replies.get(id).map(Vec::as_slice).unwrap_or_default();
        if let Some(effect) = performed.first() {
            let confirmed = replies.iter().find(|(_, outcome)| outcome.result().is_some());
            return Some(match confirmed {
                Some((tick, _)) => State::NotMarked {
                    effect_id: effect.effect_id,
                    replied: *tick,
                },
                None => State::ReplyLost {
                    effect_id: effect.effect_id,
                    sends: sends.len(),
                },
            });
        }
        if let Some((tick, _)) = replies.iter().find(|(_, outcome)| matches!(outcome, Outcome::Conflict)) {
            return Some(State::Conflict { tick: *tick });
        }
        if let Some(timer) = self
            .snapshot
            .timers
            .iter()
            .find(|timer| timer.command_id == id && timer.waiting())
        {
            return Some(State::Retrying {
                attempts: timer.attempts,
                next_at: timer.next_attempt_at,
                error: timer.last_error.clone().unwrap_or_default(),
            });
        }
        Some(match sends.last() {
            None => State::NeverSent,
            Some(last) => State::Unanswered {
                sends: sends.len(),
                last: *last,
            },
        })
    }
}
