//! `Invariant`: the names of PROTOCOL.md §8's invariants (I1-I11), of A1
//! and D1. They are vocabulary: the checkers (`check`) judge them, the
//! mutants say which catches each mistake, reports and capsules name them.
//! Living below all of those, the name carries no checker with it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An invariant of PROTOCOL.md §8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Invariant {
    I1,
    I2,
    I3,
    I4,
    I5,
    I6,
    I7,
    I8,
    I9,
    I10,
    /// Every completed backup is a state the store was in (issue 40).
    I11,
    /// An outside store's process dies only when crashsim kills it, and
    /// answers every request in time.
    A1,
    /// The same seed gives the same answers (`--check-determinism`).
    D1,
}

impl Invariant {
    pub const ALL: [Invariant; 13] = [
        Invariant::I1,
        Invariant::I2,
        Invariant::I3,
        Invariant::I4,
        Invariant::I5,
        Invariant::I6,
        Invariant::I7,
        Invariant::I8,
        Invariant::I9,
        Invariant::I10,
        Invariant::I11,
        Invariant::A1,
        Invariant::D1,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Invariant::I1 => "no lost command",
            Invariant::I2 => "one side effect per command_id",
            Invariant::I3 => "stale writers rejected",
            Invariant::I4 => "no ghost effect",
            Invariant::I5 => "atomic append",
            Invariant::I6 => "replay is pure",
            Invariant::I7 => "key conflicts surface",
            Invariant::I8 => "lease safety",
            Invariant::I9 => "durability",
            Invariant::I10 => "liveness",
            Invariant::I11 => "backups",
            Invariant::A1 => "store process stays up",
            Invariant::D1 => "deterministic answers",
        }
    }

    /// Whether crashsim checks it yet (every one is; I8 in runs with leases).
    pub fn checked(self) -> bool {
        true
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
