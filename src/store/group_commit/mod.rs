//! The group-commit store: many writers' appends coalesced into one SQLite
//! transaction, one savepoint each, one `COMMIT` (and so one WAL sync under
//! `synchronous=FULL`) for the whole group.
//!
//! Each writer appends to its own workflow with its own `expected_seq`. A
//! stale append fails alone with `Conflict` while the rest of its group
//! commits; an event's outbox rows ride in its savepoint; every caller is
//! answered only after the group's `COMMIT` returned. Reads and `mark_done`
//! go through each handle's own connection, exactly as in the reference.
//!
//! - `batch`: the group's transaction (the only code that writes).
//! - `draft`: a caller's transaction while `begin`/`insert_*` build it.
//! - `stepped`: the committer driven by its callers' steps in one thread,
//!   which the simulator runs (`store = "group_commit"`).
//! - `threaded`: the committer on its own thread, for real threads (bench).
//! - `system`: the `Implementation` and `System` the registry offers.

pub mod batch;
pub mod draft;
pub mod stepped;
pub mod system;
pub mod threaded;

pub use stepped::{Committer, GroupCommitStore, SharedCommitter};
pub use system::GroupCommit;
pub use threaded::{GroupCommitClient, GroupCommitter};

/// What a committer has done: groups committed and the transactions they
/// carried (their ratio is the mean group size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    pub groups: u64,
    pub transactions: u64,
}

impl GroupStats {
    fn record(&mut self, members: usize) {
        self.groups += 1;
        self.transactions += members as u64;
    }
}
