//! The facts the page shows, gathered in one pass over the trace plus the
//! snapshot of the final databases.
//!
//! - Per command: its outbox row, the stored event it belongs to and the
//!   command `decide` emits for that event, the transactions that inserted
//!   it and how each ended, the commits that acknowledged it, deliveries,
//!   timeouts, lost messages, replies, applies, the effects and de-dup
//!   records in the receiver's database, mark-done calls, its lease steps
//!   (claims, leases lost, acknowledgements with a fencing token), the kills
//!   that interrupted it and the violations that name it; with retry timers,
//!   its retry steps (timers stored with their backoff, refusals, replies the
//!   network replaced with an error, the dead letter).
//! - Per workflow: its stored events folded through the reference `decide`
//!   (what each one should emit, or why it does not fit), commits, inserts,
//!   conflicts, kills and violations.
//! - Per kill: who, where, when it came back, and what it interrupted.
//!
//! The trace records a kill as `Op::Kill { point }` on the killed actor
//! without saying what the actor had in hand; that is recovered here from the
//! actor's previous steps: a writer's open transaction (`before_commit`) or
//! the append it had just committed (`after_commit`), a worker's delivery in
//! hand, a receiver's request in hand. Like the checkers, this module only
//! reads; it draws no randomness and iterates ordered maps only.
//!
//! This file holds the facts; `facts/gather.rs` the one pass that gathers them.

mod gather;

use std::collections::BTreeMap;

use crate::actors::{ActorId, Role};
use crate::check::snapshot::{Dedup, Effect};
use crate::check::{History, Invariant, Snapshot, Violation};
use crate::model::{Command, OutboxRow, StoredEvent, command_id};
use crate::store::Outcome;
use crate::trace::{Appended, Op, TraceEvent};
use crate::workflow::{Trip, decide};

/// How a writer's transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxEnd<'a> {
    Committed(u64),
    RolledBack(u64),
    Killed {
        tick: u64,
        point: &'a str,
    },
    /// Still open when the trace ended, or the connection was reopened
    /// without a recorded end.
    Unknown,
}

/// A row a writer inserted in a transaction (an event or a command).
#[derive(Clone, Copy, Debug)]
pub struct Insert<'a> {
    pub tick: u64,
    pub actor: ActorId,
    pub end: TxEnd<'a>,
}

/// A kill, and what it interrupted.
#[derive(Clone, Debug)]
pub struct Kill<'a> {
    /// Its index in the trace.
    pub event: usize,
    pub tick: u64,
    pub actor: ActorId,
    pub point: &'a str,
    /// When the actor's restart began (or it reopened), if it did.
    pub back: Option<u64>,
    /// The commands in hand: a writer's open (or just committed)
    /// transaction, a worker's delivery, a receiver's request.
    pub commands: Vec<String>,
    /// A writer's events in hand, as (workflow, seq).
    pub events: Vec<(String, u64)>,
    /// What the actor was doing, for people.
    pub doing: String,
}

/// One send of a command to a receiver: by a worker from the outbox, or by a
/// writer itself (`dispatch` = `Some(during replay)`).
#[derive(Clone, Copy, Debug)]
pub struct Delivery<'a> {
    pub tick: u64,
    pub actor: ActorId,
    pub key: &'a str,
    pub to: ActorId,
    pub dispatch: Option<bool>,
}

/// One lease step of a command (runs with leases), in trace order. Each
/// variant is one trace op, so a new per-command op is one more variant
/// here, one arm in `gather.rs` and one in `lifecycle.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseStep<'a> {
    /// A worker claimed the row (`Op::Claim`).
    Claimed {
        tick: u64,
        actor: ActorId,
        owner: &'a str,
        token: u64,
        expires: u64,
    },
    /// The holder's lease expired before it sent the row (`Op::LeaseLost`).
    Lost { tick: u64, actor: ActorId, token: u64 },
    /// An acknowledgement with a fencing token (`Op::MarkDone` with
    /// `token`): `changed` false is a late acknowledgement the store rejected
    /// (or one for a row already done).
    Acked {
        tick: u64,
        actor: ActorId,
        token: u64,
        changed: bool,
    },
}

/// One retry step of a command (runs with `[retries]`), in trace order.
/// Like `LeaseStep`, each variant is one trace op: one arm in `gather.rs`
/// and one in `lifecycle.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryStep<'a> {
    /// A receiver refused the request retryably before doing anything
    /// (`Op::Refuse`); `poison`: it refuses this key every time.
    Refused {
        tick: u64,
        actor: ActorId,
        error: &'a str,
        poison: bool,
    },
    /// The network replaced the receiver's confirmed reply (its effect is
    /// committed) with a retryable error (`Op::ReplyReplaced`).
    Replaced {
        tick: u64,
        actor: ActorId,
        to: ActorId,
        error: &'a str,
    },
    /// A worker stored the timer of the `attempt`-th failure, due again at
    /// `next_at` by the clock the store read (`Op::RetryScheduled`).
    Scheduled {
        tick: u64,
        actor: ActorId,
        attempt: u32,
        next_at: u64,
        error: &'a str,
    },
    /// The failure changed nothing: done or dead-lettered already, or the
    /// lease passed on (`Op::RetryUnchanged`).
    Unchanged { tick: u64, actor: ActorId, error: &'a str },
    /// The last allowed failure: the row waits for a person, never done
    /// (`Op::DeadLettered`).
    DeadLettered {
        tick: u64,
        actor: ActorId,
        attempts: u32,
        error: &'a str,
    },
}

/// How an acknowledgement with a fencing token fared, judged against the
/// claims of its row recorded before it: a token smaller than the latest
/// claim's is stale (the lease had passed on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFate {
    /// The current holder's acknowledgement counted.
    Accepted,
    /// A stale acknowledgement counted: the mistake I8 is about.
    StaleCounted,
    /// A stale acknowledgement was rejected, as fencing should.
    LateRejected,
    /// The current holder's acknowledgement changed nothing (the row was
    /// done already).
    Unchanged,
}

/// Everything known about one command id.
#[derive(Clone, Debug, Default)]
pub struct CommandFacts<'a> {
    pub id: String,
    pub workflow_id: String,
    pub event_seq: Option<u64>,
    pub row: Option<&'a OutboxRow>,
    /// The stored event the command belongs to.
    pub event: Option<&'a StoredEvent>,
    /// What `decide` emits under this id for the stored event.
    pub expected: Option<Command>,
    pub inserts: Vec<Insert<'a>>,
    /// Writer commits that acknowledged it, as (tick, writer).
    pub commits: Vec<(u64, ActorId)>,
    pub deliveries: Vec<Delivery<'a>>,
    pub timeouts: Vec<u64>,
    /// Ticks at which a message with one of its keys was lost.
    pub lost: Vec<u64>,
    pub replies: Vec<(u64, ActorId, &'a Outcome)>,
    /// Effects applied in the trace, as (tick, receiver, effect id); those
    /// whose transaction did not commit are not in `effects`.
    pub applies: Vec<(u64, ActorId, i64)>,
    /// Effect rows in the receiver's database, with the tick they were applied.
    pub effects: Vec<(&'a Effect, Option<u64>)>,
    pub dedup: Vec<&'a Dedup>,
    /// Mark-done calls, as (tick, worker, changed).
    pub marks: Vec<(u64, ActorId, bool)>,
    /// Claims, leases lost and fenced acknowledgements, in trace order.
    pub leases: Vec<LeaseStep<'a>>,
    /// Refusals, replaced replies, stored timers and the dead letter, in
    /// trace order.
    pub retries: Vec<RetryStep<'a>>,
    /// Key-conflict probes that reused one of its keys, by tick.
    pub probes: Vec<u64>,
    /// Indexes into `Facts::kills`.
    pub kills: Vec<usize>,
    /// Indexes into the seed's violations.
    pub violations: Vec<usize>,
}

/// What replaying `decide` says of one stored event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fold {
    /// It follows; `decide` emits these commands for it, with their ids.
    Fits(Vec<(String, Command)>),
    /// Its `seq` is not the next one.
    Gap { expected: u64 },
    /// It does not fit the state before it.
    Misfit { phase: String, reason: String },
    /// An earlier event did not fold: replay stops there.
    Unreached,
}

/// Everything known about one workflow.
#[derive(Clone, Debug, Default)]
pub struct WorkflowFacts<'a> {
    pub id: String,
    /// Its stored events, by seq.
    pub events: Vec<&'a StoredEvent>,
    /// One per stored event.
    pub folds: Vec<Fold>,
    /// The phase replay reaches (up to the first event that does not fold).
    pub phase: &'static str,
    pub terminal: bool,
    /// Writer commits of its events, as (tick, writer, append).
    pub commits: Vec<(u64, ActorId, &'a Appended)>,
    /// Events of it that writers inserted, as (seq, insert).
    pub inserts: Vec<(u64, Insert<'a>)>,
    /// Stale appends rejected, as (tick, writer, expected_seq).
    pub conflicts: Vec<(u64, ActorId, u64)>,
    pub kills: Vec<usize>,
    pub violations: Vec<usize>,
}

/// The page's facts about one seed.
pub struct Facts<'a> {
    pub history: History<'a>,
    pub commands: BTreeMap<String, CommandFacts<'a>>,
    pub workflows: BTreeMap<String, WorkflowFacts<'a>>,
    pub kills: Vec<Kill<'a>>,
    /// Whether workers claimed rows with leases (the page then shows them).
    pub leased: bool,
    /// Whether the trace has retry steps (the page then shows them).
    pub retried: bool,
}

pub use crate::model::parse_command_id;

/// A sort key that puts `trip-006:10:0` after `trip-006:9:0`.
pub fn command_order(id: &str) -> (String, u64, u64, String) {
    match parse_command_id(id) {
        Some((workflow_id, seq, index)) => (workflow_id.to_string(), seq, index, id.to_string()),
        None => (id.to_string(), 0, 0, id.to_string()),
    }
}

impl<'a> CommandFacts<'a> {
    fn new(id: &str) -> CommandFacts<'a> {
        let (workflow_id, event_seq) = match parse_command_id(id) {
            Some((workflow_id, seq, _)) => (workflow_id.to_string(), Some(seq)),
            None => (String::new(), None),
        };
        CommandFacts {
            id: id.to_string(),
            workflow_id,
            event_seq,
            ..CommandFacts::default()
        }
    }

    /// Whether the page lists it: it is in a database, expected by one, was
    /// sent, or is named by a violation. A command that only ever sat in a
    /// rolled-back transaction is not.
    pub fn shown(&self) -> bool {
        self.row.is_some()
            || self.expected.is_some()
            || !self.commits.is_empty()
            || !self.deliveries.is_empty()
            || !self.effects.is_empty()
            || !self.violations.is_empty()
    }

    /// Effects performing this very command (its kind and payload); the rest
    /// reused one of its keys for something else.
    pub fn genuine_effects(&self) -> Vec<(&'a Effect, Option<u64>)> {
        let (kind, payload) = match (self.row, &self.expected) {
            (Some(row), _) => (row.kind.as_str(), row.payload.as_str()),
            (None, Some(expected)) => (expected.kind.as_str(), expected.payload.as_str()),
            (None, None) => return self.effects.clone(),
        };
        self.effects
            .iter()
            .filter(|(effect, _)| effect.kind == kind && crate::workflow::payload::same(&effect.payload, payload))
            .copied()
            .collect()
    }

    /// The command's kind, from whatever knows it.
    pub fn kind(&self) -> &str {
        if let Some(row) = self.row {
            &row.kind
        } else if let Some(expected) = &self.expected {
            &expected.kind
        } else if let Some((effect, _)) = self.effects.first() {
            &effect.kind
        } else {
            ""
        }
    }

    /// The fate of each lease step that is an acknowledgement, in step order.
    pub fn ack_fates(&self) -> Vec<Option<AckFate>> {
        let mut latest: Option<u64> = None;
        self.leases
            .iter()
            .map(|step| match *step {
                LeaseStep::Claimed { token, .. } => {
                    latest = latest.max(Some(token));
                    None
                }
                LeaseStep::Lost { .. } => None,
                LeaseStep::Acked { token, changed, .. } => {
                    let stale = latest.is_some_and(|latest| token < latest);
                    Some(match (changed, stale) {
                        (true, false) => AckFate::Accepted,
                        (true, true) => AckFate::StaleCounted,
                        (false, true) => AckFate::LateRejected,
                        (false, false) => AckFate::Unchanged,
                    })
                }
            })
            .collect()
    }

    /// The dead letter, as (tick, attempts, error), if the row got one.
    pub fn dead_letter(&self) -> Option<(u64, u32, &'a str)> {
        self.retries.iter().find_map(|step| match *step {
            RetryStep::DeadLettered {
                tick, attempts, error, ..
            } => Some((tick, attempts, error)),
            _ => None,
        })
    }

    /// A one-word status and its CSS class. A dead-lettered row waits for a
    /// person: `manual`, neither done nor pending.
    pub fn status(&self) -> (&'static str, &'static str) {
        match self.row {
            Some(row) if !row.done && self.dead_letter().is_some() => ("dead-lettered", "manual"),
            None if self.expected.is_some() => ("missing", "bad"),
            None => ("ghost", "bad"),
            Some(_) if self.event.is_none() => ("orphan", "bad"),
            Some(row) if !row.done => ("pending", "warn"),
            Some(row) if row.result.is_none() => ("no result", "bad"),
            Some(_) => match self.genuine_effects().len() {
                1 if self.effects.len() == 1 => ("ok", "ok"),
                0 => ("no effect", "bad"),
                _ => ("repeated", "bad"),
            },
        }
    }
}
