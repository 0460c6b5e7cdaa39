//! What each trace line is drawn as: its mark (kind, draw order, CSS class,
//! band in the lane), its tooltip line, and which steps change state
//! (folding keeps those). Marks of optional features (retry timers, clock
//! faults) are in the legend only when the run has them.

use super::super::text::signed;
use super::LANE_PX;
use crate::actors::ActorId;
use crate::store::Lookup;
use crate::trace::{Op, TraceEvent, render};

/// What a mark stands for; also its draw order (later on top) and CSS class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Mark {
    Busy,
    Send,
    Dispatch,
    Probe,
    Reply,
    Timeout,
    Duplicate,
    Lost,
    Conflict,
    KeyConflict,
    Failed,
    Commit,
    Apply,
    Done,
    LateAck,
    Purge,
    ClockStep,
    DeadLetter,
    Backup,
    Open,
}

impl Mark {
    pub(super) const ALL: [Mark; 20] = [
        Mark::Commit,
        Mark::Conflict,
        Mark::Send,
        Mark::Dispatch,
        Mark::Reply,
        Mark::Timeout,
        Mark::Lost,
        Mark::Apply,
        Mark::Duplicate,
        Mark::KeyConflict,
        Mark::Done,
        Mark::LateAck,
        Mark::DeadLetter,
        Mark::Purge,
        Mark::ClockStep,
        Mark::Backup,
        Mark::Probe,
        Mark::Failed,
        Mark::Open,
        Mark::Busy,
    ];

    /// Kinds that come in long runs (retries), drawn as bars over adjacent bins.
    pub(super) fn in_runs(self) -> bool {
        matches!(self, Mark::Busy | Mark::Failed)
    }

    /// Kinds of optional features, listed in the legend only when present.
    pub(super) fn optional(self) -> bool {
        matches!(self, Mark::Purge | Mark::ClockStep | Mark::DeadLetter | Mark::Backup)
    }

    pub(super) fn class(self) -> &'static str {
        match self {
            Mark::Busy => "busy",
            Mark::Send => "send",
            Mark::Dispatch => "dispatch",
            Mark::Probe => "probe",
            Mark::Reply => "reply",
            Mark::Timeout => "timeout",
            Mark::Duplicate => "dup",
            Mark::Lost => "lost",
            Mark::Conflict => "conflict",
            Mark::KeyConflict => "keyconflict",
            Mark::Failed => "failed",
            Mark::Commit => "commit",
            Mark::Apply => "apply",
            Mark::Done => "mark",
            Mark::LateAck => "lateack",
            Mark::Purge => "purge",
            Mark::ClockStep => "clockstep",
            Mark::DeadLetter => "deadletter",
            Mark::Backup => "backup",
            Mark::Open => "open",
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Mark::Busy => "busy (lock held elsewhere, retried)",
            Mark::Send => "send to a receiver",
            Mark::Dispatch => "writer sends itself (outside the outbox)",
            Mark::Probe => "key-conflict probe",
            Mark::Reply => "reply received",
            Mark::Timeout => "reply timed out",
            Mark::Duplicate => "duplicate (folded by the receiver, or by the network)",
            Mark::Lost => "message lost",
            Mark::Conflict => "stale writer rejected (conflict)",
            Mark::KeyConflict => "key conflict at the receiver",
            Mark::Failed => "step failed",
            Mark::Commit => "commit (event + commands)",
            Mark::Apply => "effect applied",
            Mark::Done => "outbox row marked done",
            Mark::LateAck => "acknowledgement with a token rejected (late, or done already)",
            Mark::Purge => "de-dup records purged by the receiver",
            Mark::ClockStep => "clock stepped (NTP-like)",
            Mark::DeadLetter => "dead-lettered: waits for a person, never done",
            Mark::Backup => "online backup begun, completed (judged, I11), killed or failed; a restore from one",
            Mark::Open => "open / restart",
        }
    }

    /// Vertical placement in the lane, as (offset, height): sends on top,
    /// answers below, state changes over the full lane, busy a faint floor.
    pub(super) fn band(self) -> (f64, f64) {
        match self {
            Mark::Busy => (LANE_PX - 3.0, 3.0),
            Mark::Failed => (LANE_PX - 4.0, 4.0),
            Mark::Send | Mark::Dispatch | Mark::Probe => (1.0, 7.0),
            Mark::Reply | Mark::Timeout | Mark::Duplicate | Mark::Lost => (10.0, 7.0),
            Mark::Purge => (LANE_PX - 6.0, 6.0),
            _ => (0.0, LANE_PX),
        }
    }
}

/// The lane and mark of a trace line, if it is drawn as an ordinary mark.
pub(super) fn classify(event: &TraceEvent) -> Option<(ActorId, Mark)> {
    let actor = event.actor;
    let mark = match &event.op {
        Op::Open { .. } | Op::Restart { .. } => Mark::Open,
        Op::Commit { appended } if !appended.is_empty() => Mark::Commit,
        Op::Conflict { .. } => Mark::Conflict,
        Op::Send { .. } => Mark::Send,
        Op::Dispatch { .. } => Mark::Dispatch,
        Op::Reply { .. } => Mark::Reply,
        Op::Timeout { .. } => Mark::Timeout,
        Op::MarkDone {
            token: Some(_),
            changed: false,
            ..
        } => Mark::LateAck,
        Op::MarkDone { .. } => Mark::Done,
        Op::Apply { .. } => Mark::Apply,
        Op::Lookup { found, .. } => match found {
            Lookup::New => return None,
            Lookup::Seen { .. } => Mark::Duplicate,
            Lookup::Conflict => Mark::KeyConflict,
        },
        // Network events belong to the actor that missed or got the message.
        Op::Lost { to, .. } => return Some((*to, Mark::Lost)),
        Op::Duplicated { to, .. } => return Some((*to, Mark::Duplicate)),
        Op::Probe { .. } | Op::ProbeReply { .. } => Mark::Probe,
        Op::DeadLettered { .. } => Mark::DeadLetter,
        Op::DedupPurged { .. } => Mark::Purge,
        Op::ClockStep { .. } => Mark::ClockStep,
        Op::Backup { .. }
        | Op::BackupPart { .. }
        | Op::BackupAbandoned { .. }
        | Op::BackedUp { .. }
        | Op::BackupFailed { .. }
        | Op::BackupKilled { .. }
        | Op::Restore { .. }
        | Op::RestoreSkipped { .. }
        | Op::RestoreFailed { .. }
        | Op::RolledBack { .. } => Mark::Backup,
        Op::Busy { .. } => Mark::Busy,
        Op::Failed { .. } | Op::Died { .. } => Mark::Failed,
        _ => return None,
    };
    Some((actor, mark))
}

/// A step's line in a mark's tooltip: the trace's own words, but a clock
/// step in the page's ("clock stepped −12 → offset −5").
pub(super) fn describe(op: &Op) -> String {
    match op {
        Op::ClockStep { by, offset } => format!("clock stepped {} → offset {}", signed(*by), signed(*offset)),
        op => render::describe(op),
    }
}

/// Whether a step changes state (or tells of a change): stretches without
/// one are folded.
pub(super) fn eventful(op: &Op) -> bool {
    match op {
        Op::Open { .. }
        | Op::Kill { .. }
        | Op::Restart { .. }
        | Op::Quiet
        | Op::Settled
        | Op::Stalled { .. }
        | Op::FaultsEnded { .. }
        | Op::Certain { .. }
        | Op::InsertEvent { .. }
        | Op::Conflict { .. }
        | Op::Send { .. }
        | Op::Reply { .. }
        | Op::Timeout { .. }
        | Op::MarkDone { .. }
        | Op::Apply { .. }
        | Op::Lost { .. }
        | Op::Duplicated { .. }
        | Op::Probe { .. }
        | Op::ProbeReply { .. }
        | Op::Dispatch { .. }
        | Op::Pause { .. }
        | Op::Preempted { .. }
        | Op::Claim { .. }
        | Op::LeaseLost { .. }
        | Op::RetryScheduled { .. }
        | Op::DeadLettered { .. }
        | Op::DedupPurged { .. }
        | Op::Refuse { .. }
        | Op::ReplyReplaced { .. }
        | Op::Skew { .. }
        | Op::ClockStep { .. }
        | Op::Backup { .. }
        | Op::BackupPart { .. }
        | Op::BackupAbandoned { .. }
        | Op::BackedUp { .. }
        | Op::BackupFailed { .. }
        | Op::BackupKilled { .. }
        | Op::Restore { .. }
        | Op::RestoreSkipped { .. }
        | Op::RestoreFailed { .. }
        | Op::RolledBack { .. } => true,
        Op::Commit { appended } => !appended.is_empty(),
        Op::Lookup { found, .. } => !matches!(found, Lookup::New),
        _ => false,
    }
}
