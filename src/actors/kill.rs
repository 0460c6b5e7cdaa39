//! `KillPoint`: the named places in an actor's loop where the simulator
//! may kill it. An actor names the point it is at (`Ctx::kill_point`); the
//! simulator decides whether it fires (`crate::faults`, which also says why
//! the protocol survives each). The vocabulary lives here, with the actors
//! that reach the points, so that actors never import the simulator's
//! fault plan.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A place in an actor's loop where the simulator may kill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum KillPoint {
    WriterBeforeCommit,
    WriterAfterCommit,
    WorkerAfterReadPending,
    WorkerBeforeDeliver,
    WorkerAfterDeliver,
    WorkerBeforeMarkDone,
    WorkerAfterMarkDone,
    ReceiverBeforeEffectCommit,
    ReceiverAfterEffectCommit,
}

/// The number of kill points.
pub const KILL_POINTS: usize = 9;

impl KillPoint {
    pub const ALL: [KillPoint; KILL_POINTS] = [
        KillPoint::WriterBeforeCommit,
        KillPoint::WriterAfterCommit,
        KillPoint::WorkerAfterReadPending,
        KillPoint::WorkerBeforeDeliver,
        KillPoint::WorkerAfterDeliver,
        KillPoint::WorkerBeforeMarkDone,
        KillPoint::WorkerAfterMarkDone,
        KillPoint::ReceiverBeforeEffectCommit,
        KillPoint::ReceiverAfterEffectCommit,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The dotted name used in scenario files, traces and reports.
    pub fn name(self) -> &'static str {
        match self {
            KillPoint::WriterBeforeCommit => "writer.before_commit",
            KillPoint::WriterAfterCommit => "writer.after_commit",
            KillPoint::WorkerAfterReadPending => "worker.after_read_pending",
            KillPoint::WorkerBeforeDeliver => "worker.before_deliver",
            KillPoint::WorkerAfterDeliver => "worker.after_deliver",
            KillPoint::WorkerBeforeMarkDone => "worker.before_mark_done",
            KillPoint::WorkerAfterMarkDone => "worker.after_mark_done",
            KillPoint::ReceiverBeforeEffectCommit => "receiver.before_effect_commit",
            KillPoint::ReceiverAfterEffectCommit => "receiver.after_effect_commit",
        }
    }

    /// One line on what the point is, for `crashsim list`.
    pub fn describe(self) -> &'static str {
        match self {
            KillPoint::WriterBeforeCommit => "event and commands inserted, transaction not committed",
            KillPoint::WriterAfterCommit => "transaction committed, the writer never learns",
            KillPoint::WorkerAfterReadPending => "pending rows read, nothing delivered",
            KillPoint::WorkerBeforeDeliver => "about to send a command to a receiver",
            KillPoint::WorkerAfterDeliver => "receiver applied it, the reply is lost",
            KillPoint::WorkerBeforeMarkDone => "result confirmed, row not yet marked done",
            KillPoint::WorkerAfterMarkDone => "row marked done, the worker never learns",
            KillPoint::ReceiverBeforeEffectCommit => "effect and de-dup record written, not committed",
            KillPoint::ReceiverAfterEffectCommit => "effect committed, no reply sent",
        }
    }

    pub fn from_name(name: &str) -> Option<KillPoint> {
        KillPoint::ALL.into_iter().find(|point| point.name() == name)
    }

    /// The points `implementation` never reaches: see `unreachable`; none
    /// when the simulator can kill its processes inside a call.
    pub fn unreachable_by(implementation: &dyn crate::store::Implementation) -> Vec<KillPoint> {
        match implementation.kills_inside_calls() {
            true => Vec::new(),
            false => KillPoint::unreachable(implementation.roles()),
        }
    }

    /// The points a store driven with `roles` never reaches: with `call`
    /// granularity a transaction is one call, so there is no moment inside
    /// it (unless its SQLite loads crashsim's VFS: `unreachable_by`).
    pub fn unreachable(roles: crate::store::Roles) -> Vec<KillPoint> {
        use crate::store::Granularity::Call;
        let mut points = Vec::new();
        if roles.store == Call {
            points.push(KillPoint::WriterBeforeCommit);
        }
        if roles.receiver == Call {
            points.push(KillPoint::ReceiverBeforeEffectCommit);
        }
        points
    }
}

impl fmt::Display for KillPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<KillPoint> for String {
    fn from(point: KillPoint) -> String {
        point.name().to_string()
    }
}

impl TryFrom<String> for KillPoint {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        KillPoint::from_name(&name).ok_or_else(|| format!("unknown kill point {name:?}"))
    }
}
