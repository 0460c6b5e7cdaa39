//! `Known`: what the trace fixes about the store's state at each point of
//! the run, for judging the store's answers (`super`).
//!
//! The trace fixes a lower bound and an upper bound. An append whose
//! commit a writer saw acknowledged is **committed**. An append whose
//! transaction ended without a commit (rolled back, a conflict, its
//! writer killed or crashed before it asked to commit) is **unwritten**:
//! its rows must not be in the store. Between them lie the appends whose
//! outcome no one learned (a kill or a crash inside the commit call, a
//! transaction a group-commit store queued): **maybe**, judged by neither
//! bound. The same for outbox rows: a row is **due** once its append
//! committed, until a worker's `mark_done` (any outcome, or a call whose
//! outcome was lost) or a retry timer touched it.
//!
//! A power cut resets everything to what recovery found in the files
//! (`Recovery::snapshot`): what the disk kept is what the store holds.

use std::collections::{BTreeMap, BTreeSet};

use crate::actors::{ActorId, Role};
use crate::sim::Recovery;
use crate::trace::{Op, TraceEvent};

/// An append by its place and kind: `(workflow_id, seq, kind)`.
pub type Place = (String, u64, String);

/// A writer's append in progress, as far as the trace shows it.
#[derive(Clone)]
struct Open {
    workflow_id: String,
    seq: u64,
    kind: String,
    stage: Stage,
    /// When it was first queued or its call suspended: it may be visible
    /// to others from then on.
    queued_at: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Decided, no statement of it seen yet (a `call` store does it all in one call).
    Decided,
    /// Its transaction inserted the event.
    Inserted,
    /// A group-commit store queued it: it may commit any time now.
    Queued,
}

/// The state the trace fixes, updated event by event.
#[derive(Clone, Default)]
pub struct Known {
    /// Committed events by workflow: seq to (kind, tick committed).
    pub committed: BTreeMap<String, BTreeMap<u64, (String, u64)>>,
    /// Appends that may or may not have committed.
    pub maybe: BTreeSet<Place>,
    /// Appends that never committed, with the tick their transaction ended.
    pub unwritten: BTreeMap<Place, u64>,
    /// Appends whose transaction is open right now, by writer.
    open: BTreeMap<ActorId, Open>,
    /// Outbox rows committed, with the tick.
    pub rows: BTreeMap<String, u64>,
    /// The earliest tick each committed row may have been seen from: its
    /// commit's, or the first suspension (or queueing) of the call that
    /// committed it, which may have landed before it answered.
    pub landed: BTreeMap<String, u64>,
    /// Rows no longer judged due: marked, maybe marked, or given a retry timer.
    pub touched: BTreeSet<String>,
    /// Each worker's last batch, as its `pending` answered it.
    batches: BTreeMap<ActorId, Vec<String>>,
    /// The command each worker last sent: the one a retry timer it stores
    /// is for.
    sending: BTreeMap<ActorId, String>,
    /// Rows marked done (an acknowledgement that changed the row), with the tick.
    pub marked: BTreeMap<String, u64>,
    /// Set after a power cut whose files recovery could not read: nothing
    /// is known from then on.
    pub blind: bool,
    /// The leases claims took (`leased.rs`).
    pub leases: super::leased::Leases,
}

impl Known {
    /// Takes in `event`, the trace's next; `recoveries` yields what the
    /// store held after each power cut and restore, in order.
    pub fn observe<'r>(&mut self, event: &TraceEvent, recoveries: &mut impl Iterator<Item = &'r Recovery>) {
        self.leases.observe(event);
        let actor = event.actor;
        match &event.op {
            Op::Decide {
                workflow_id,
                expected_seq,
                kind,
                ..
            } => {
                let open = Open {
                    workflow_id: workflow_id.clone(),
                    seq: expected_seq + 1,
                    kind: kind.clone(),
                    stage: Stage::Decided,
                    queued_at: None,
                };
                self.open.insert(actor, open);
            }
            Op::InsertEvent { seq, .. } => {
                if let Some(open) = self.open.get_mut(&actor) {
                    open.seq = *seq;
                    open.stage = Stage::Inserted;
                }
            }
            // A call suspended inside the store may land any time from
            // now, as a queued one: a writer's append or commit, a mark.
            Op::Preempted { step, .. } if actor.role == Role::Worker && step.starts_with("mark_done") => {
                let batch = self.batches.get(&actor).cloned().unwrap_or_default();
                self.touched.extend(batch);
            }
            // A timer (or dead letter) stored by a suspended call may be
            // visible from now on, before its line in the trace.
            Op::Preempted { step, .. } if actor.role == Role::Worker && step == "schedule_retry" => {
                self.touched.extend(self.sending.get(&actor).cloned());
            }
            Op::Send { command_id, .. } if actor.role == Role::Worker => {
                self.sending.insert(actor, command_id.clone());
            }
            Op::Preempted { step, .. } if matches!(step.as_str(), "append" | "commit") => {
                if let Some(open) = self.open.get_mut(&actor)
                    && open.stage != Stage::Queued
                {
                    open.stage = Stage::Queued;
                    open.queued_at = Some(event.tick);
                    self.maybe.insert(place(open));
                }
            }
            Op::Queued { .. } if actor.role == Role::Worker => {
                // A group-commit store queued the worker's mark: it may land any time now.
                let batch = self.batches.get(&actor).cloned().unwrap_or_default();
                self.touched.extend(batch);
            }
            Op::Queued { .. } => {
                if let Some(open) = self.open.get_mut(&actor)
                    && open.stage != Stage::Queued
                {
                    open.stage = Stage::Queued;
                    open.queued_at = Some(event.tick);
                    self.maybe.insert(place(open));
                }
            }
            Op::Commit { appended } => {
                let landed = self
                    .open
                    .get(&actor)
                    .and_then(|open| open.queued_at)
                    .unwrap_or(event.tick);
                for append in appended {
                    self.committed
                        .entry(append.workflow_id.clone())
                        .or_default()
                        .insert(append.seq, (append.kind.clone(), event.tick));
                    for command_id in &append.command_ids {
                        self.rows.entry(command_id.clone()).or_insert(event.tick);
                        self.landed.entry(command_id.clone()).or_insert(landed);
                    }
                }
                // A receiver's commit is no append.
                if let Some(open) = self.open.remove(&actor) {
                    self.maybe.remove(&place(&open));
                }
            }
            Op::Conflict { .. } | Op::Rollback => self.ended(actor, event.tick, false),
            Op::Kill { .. } => self.ended(actor, event.tick, false),
            Op::Failed { step, .. } | Op::Died { step, .. } => {
                let unknown = matches!(step.as_str(), "commit" | "append");
                self.ended(actor, event.tick, unknown);
                // A worker's call that failed may have changed its rows.
                if actor.role == Role::Worker && !matches!(step.as_str(), "pending" | "claim" | "deliver") {
                    let batch = self.batches.get(&actor).cloned().unwrap_or_default();
                    self.touched.extend(batch);
                }
            }
            Op::Pending { command_ids, .. } => {
                self.batches.insert(actor, command_ids.clone());
            }
            Op::Claim { claimed, .. } => {
                self.batches
                    .insert(actor, claimed.iter().map(|claim| claim.command_id.clone()).collect());
            }
            Op::MarkDone {
                command_id, changed, ..
            } => {
                self.touched.insert(command_id.clone());
                if *changed {
                    self.marked.entry(command_id.clone()).or_insert(event.tick);
                }
            }
            Op::RetryScheduled { command_id, .. }
            | Op::DeadLettered { command_id, .. }
            | Op::RetryUnchanged { command_id, .. } => {
                self.touched.insert(command_id.clone());
            }
            // A restore, like a cut, leaves the store as its snapshot says
            // (the kills before it ended every open transaction).
            Op::PowerCut { .. } | Op::RolledBack { .. } => self.cut(recoveries.next()),
            _ => {}
        }
    }

    /// `actor`'s transaction ended without an acknowledged commit:
    /// unwritten, unless the commit's outcome is `unknown` or it was queued.
    fn ended(&mut self, actor: ActorId, tick: u64, unknown: bool) {
        let Some(open) = self.open.remove(&actor) else {
            return;
        };
        let place = place(&open);
        if open.stage == Stage::Inserted && !unknown {
            // A transaction that inserted and never asked to commit.
            self.unwritten.entry(place).or_insert(tick);
        } else {
            // Killed inside a call that holds the whole append, queued by a
            // group-commit store, or a commit call that failed: no one knows.
            self.maybe.insert(place);
        }
    }

    /// The power went out: the store holds what recovery found.
    fn cut(&mut self, recovery: Option<&Recovery>) {
        for (_, open) in std::mem::take(&mut self.open) {
            let place = place(&open);
            match open.stage {
                Stage::Inserted => {
                    self.unwritten.entry(place).or_insert(0);
                }
                Stage::Decided | Stage::Queued => {
                    self.maybe.insert(place);
                }
            }
        }
        let Some(snapshot) = recovery.map(|recovery| &recovery.snapshot) else {
            self.blind = true;
            return;
        };
        if snapshot.unreadable.is_some() {
            self.blind = true;
            return;
        }
        let mut committed: BTreeMap<String, BTreeMap<u64, (String, u64)>> = BTreeMap::new();
        for stored in &snapshot.events {
            let tick = self
                .committed
                .get(&stored.workflow_id)
                .and_then(|events| events.get(&stored.seq))
                .map_or(0, |(_, tick)| *tick);
            committed
                .entry(stored.workflow_id.clone())
                .or_default()
                .insert(stored.seq, (stored.kind.clone(), tick));
        }
        self.committed = committed;
        self.rows = snapshot
            .outbox
            .iter()
            .map(|row| {
                (
                    row.command_id.clone(),
                    self.rows.get(&row.command_id).copied().unwrap_or(0),
                )
            })
            .collect();
        // What the disk kept decides: a row not done there is due again,
        // unless its retry timer survived.
        self.touched = snapshot
            .outbox
            .iter()
            .filter(|row| row.done)
            .map(|row| row.command_id.clone())
            .collect();
        self.touched
            .extend(snapshot.timers.iter().map(|timer| timer.command_id.clone()));
        self.marked.retain(|command_id, _| {
            snapshot
                .outbox
                .iter()
                .any(|row| &row.command_id == command_id && row.done)
        });
        self.batches.clear();
    }

    /// Rows that were certainly due at this point: committed, untouched.
    pub fn due(&self) -> impl Iterator<Item = (&String, &u64)> {
        self.rows
            .iter()
            .filter(|(command_id, _)| !self.touched.contains(*command_id))
    }

    /// The writer whose open transaction wrote `place`, if one does now.
    /// What a suspended read's window needs of the moment its call began
    /// (`widened`): the committed history, the rows and marks, and what
    /// was uncertain; nothing else is cloned.
    pub fn at_start(&self) -> Known {
        Known {
            committed: self.committed.clone(),
            maybe: self.maybe.clone(),
            rows: self.rows.clone(),
            landed: self.landed.clone(),
            touched: self.touched.clone(),
            marked: self.marked.clone(),
            ..Known::default()
        }
    }

    /// What a read may answer when its call began at `start` (`at_start`)
    /// and answered at `end` (a call suspended inside the store,
    /// `[preempt]`): its snapshot is from some moment between. What was
    /// certain at `start` must show; what committed or was marked in
    /// between may or may not; what never committed by the end must not.
    pub fn widened(start: Known, end: &Known) -> Known {
        let mut maybe = start.maybe;
        maybe.extend(end.maybe.iter().cloned());
        for (workflow_id, events) in &end.committed {
            let before = start.committed.get(workflow_id);
            for (seq, (kind, _)) in events {
                if before.is_none_or(|before| !before.contains_key(seq)) {
                    maybe.insert((workflow_id.clone(), *seq, kind.clone()));
                }
            }
        }
        let mut touched = start.touched;
        touched.extend(end.touched.iter().cloned());
        Known {
            committed: start.committed,
            maybe,
            unwritten: end.unwritten.clone(),
            open: end.open.clone(),
            rows: start.rows,
            landed: start.landed,
            touched,
            batches: end.batches.clone(),
            sending: end.sending.clone(),
            marked: start.marked,
            blind: end.blind,
            leases: end.leases.clone(),
        }
    }

    pub fn writing(&self, place: &Place) -> Option<ActorId> {
        self.open
            .iter()
            .find(|(_, open)| open.stage == Stage::Inserted && &self::place(open) == place)
            .map(|(actor, _)| *actor)
    }
}

fn place(open: &Open) -> Place {
    (open.workflow_id.clone(), open.seq, open.kind.clone())
}
