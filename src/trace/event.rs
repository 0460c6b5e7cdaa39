//! `TraceEvent`: one recorded step of a run.
//!
//! A trace line holds the tick, the actor and what it did, with ids and
//! outcomes but never a path, a wall-clock time or SQLite's `created_at`:
//! the same scenario and seed must give the same bytes in any directory on
//! any machine.

use serde::{Deserialize, Serialize};

use super::ActorId;
use crate::store::{Lookup, Outcome};

/// One trace line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub tick: u64,
    pub actor: ActorId,
    #[serde(flatten)]
    pub op: Op,
}

/// A statement another actor's connection started while a call was
/// suspended (`Op::Preempted`'s `meanwhile`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ran {
    pub actor: ActorId,
    pub tick: u64,
    pub sql: String,
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at tick {}: `{}`", self.actor, self.tick, self.sql)
    }
}

/// An append a writer's transaction committed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    pub workflow_id: String,
    pub expected_seq: u64,
    pub seq: u64,
    pub kind: String,
    /// The state the writer decided from (`Trip::digest`).
    pub state: String,
    pub command_ids: Vec<String>,
}

/// One event of a `load` answer, as the store returned it (in its order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loaded {
    pub seq: u64,
    pub kind: String,
    /// Set only when the event belongs to another workflow than the one loaded.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow_id: Option<String>,
}

/// One row of a `heads` answer, as the store returned it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadSeen {
    pub workflow_id: String,
    pub seq: u64,
    pub kind: String,
    /// How many of the head event's commands the store said were done.
    pub done: u64,
}

/// A row a worker claimed, with the claim's fencing token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    pub command_id: String,
    pub token: u64,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    // Lifecycle, recorded by the simulator.
    /// The actor opened its connection (its `incarnation`-th life), which
    /// runs with this `PRAGMA synchronous` level (0 OFF … 3 EXTRA), if known.
    Open {
        incarnation: u32,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        synchronous: Option<u8>,
    },
    /// The simulator killed the actor at a kill point (or by script).
    Kill {
        point: String,
    },
    /// The actor's restart was scheduled to begin now.
    Restart {
        incarnation: u32,
    },
    /// The fault phase ended.
    Quiet,
    /// Every workflow is terminal, the outbox is drained and nothing is in flight.
    Settled,
    /// The run ended unsettled: nothing durable changed (no commit, first
    /// acknowledgement, effect, retry timer or dead letter) from tick
    /// `since` for `window` ticks of the quiet phase, longer than every
    /// legitimate wait of the scenario (`run.end_when_certain`).
    Stalled {
        since: u64,
        window: u64,
    },
    /// Faults stopped before `run.ticks_fault`: nothing durable changed
    /// from tick `since` for `window` ticks with them on (`run.end_when_certain`).
    /// The quiet phase follows; the run ends if it stays stuck a window more.
    FaultsEnded {
        since: u64,
        window: u64,
    },
    /// The trace so far holds a finding of `invariant` that no later event
    /// can undo: the run ends after tick `until` (`run.end_when_certain`).
    Certain {
        invariant: String,
        until: u64,
    },
    /// The simulator paused the actor: it takes no step for `ticks` ticks,
    /// keeping its connection and memory, then goes on where it was.
    Pause {
        ticks: u64,
    },

    // Writers.
    /// Looked for work: `candidates` workflows could take a step; `heads`
    /// is the store's answer as it came (judged, `check::answers`).
    Heads {
        candidates: usize,
        heads: Vec<HeadSeen>,
    },
    /// Loaded and replayed a workflow: `events` is the store's answer as
    /// it came (judged against the committed history, `check::answers`);
    /// `phase` is `unreplayable` when the answer does not fold.
    Load {
        workflow_id: String,
        last_seq: u64,
        phase: String,
        events: Vec<Loaded>,
    },
    /// Looked up the result of the command the workflow waits for.
    Awaiting {
        command_id: String,
        done: bool,
    },
    /// Decided the next event from the replayed state.
    Decide {
        workflow_id: String,
        expected_seq: u64,
        kind: String,
        state: String,
    },
    Begin,
    InsertEvent {
        workflow_id: String,
        expected_seq: u64,
        seq: u64,
    },
    /// The append was rejected: another writer moved the head (a stale writer).
    Conflict {
        workflow_id: String,
        expected_seq: u64,
    },
    InsertCommand {
        command_id: String,
    },
    Commit {
        appended: Vec<Appended>,
    },
    Rollback,

    // Workers.
    /// The store's answer to `pending(limit)`.
    Pending {
        limit: usize,
        command_ids: Vec<String>,
    },
    Send {
        command_id: String,
        key: String,
        to: ActorId,
        attempt: u32,
    },
    Reply {
        key: String,
        #[serde(flatten)]
        outcome: Outcome,
    },
    Timeout {
        key: String,
        attempt: u32,
    },
    /// `changed` false: nothing changed (done already, or, with a
    /// `token`, the lease passed to another holder: a late acknowledgement).
    MarkDone {
        command_id: String,
        changed: bool,
        /// The fencing token acknowledged with (leases only).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        token: Option<u64>,
    },
    /// Leases: the worker (`owner`, its actor and life) claimed these rows
    /// until tick `expires`.
    Claim {
        owner: String,
        expires: u64,
        claimed: Vec<Claimed>,
    },
    /// Leases: the worker's lease on the row expired (by its own clock)
    /// before it sent the command: it leaves the row to the next claim.
    LeaseLost {
        command_id: String,
        token: u64,
    },

    // Receivers.
    Receive {
        key: String,
        from: ActorId,
    },
    Lookup {
        key: String,
        #[serde(flatten)]
        found: Lookup,
    },
    Apply {
        key: String,
        effect_id: i64,
        result: String,
    },
    Respond {
        key: String,
        to: ActorId,
        #[serde(flatten)]
        outcome: Outcome,
    },

    // The network and the prober.
    /// A message was lost: dropped by a fault or addressed to a dead actor.
    Lost {
        key: String,
        to: ActorId,
        reason: String,
    },
    /// A message was duplicated by a fault.
    Duplicated {
        key: String,
        to: ActorId,
    },
    /// A rogue request reusing `key` with other core parameters was sent.
    Probe {
        key: String,
        to: ActorId,
        payload: String,
    },
    /// The prober sent the request of key `of`, its exact parameters,
    /// under `key`, a near miss of `of` changed by `form`: another operation.
    NearMiss {
        key: String,
        of: String,
        form: crate::workload::NearMiss,
        to: ActorId,
    },
    /// The receiver's answer to a probe (a key-conflict or a near-miss one).
    ProbeReply {
        key: String,
        #[serde(flatten)]
        outcome: Outcome,
    },

    /// A writer sent a command to a receiver itself, outside the outbox:
    /// while replaying history (`replay`), or before its transaction committed.
    Dispatch {
        command_id: String,
        to: ActorId,
        replay: bool,
    },
    /// The power went out at this persistence point of the crash VFS.
    PowerCut {
        point: u64,
        model: String,
    },
    /// The disk model rewrote the files: unsynced operations kept, lost, torn.
    Restored {
        kept: u64,
        lost: u64,
        torn: u64,
    },
    /// What the recovered databases hold right after the cut.
    Recovered {
        events: usize,
        outbox: usize,
        effects: usize,
        store_integrity: String,
        receiver_integrity: String,
    },
    /// A hint sent to another actor (see `actors::Message::Nudge`).
    Nudge {
        workflow_id: String,
        to: ActorId,
    },

    // Any actor.
    /// The step met a lock held by another connection and will be retried.
    Busy {
        step: String,
    },
    /// The step was queued for a group commit; the actor asks again.
    Queued {
        step: String,
    },
    /// The step's call was suspended inside the store's SQLite at `point`
    /// (`[preempt]`): other actors run, then the actor asks again and the
    /// call goes on where it stopped. Until then it may have done anything
    /// its statements so far do (a commit included). `sql`: the statement
    /// its connection was running there, as the store's SQLite started it.
    /// `meanwhile`: of the statements the other actors' connections started
    /// until the call was asked again, each same-role actor's last complete
    /// write (`sim::simulator::meanwhile`), filled in then: the suspension
    /// is one fact, and no event of the actor's comes between it and its
    /// call's answer.
    Preempted {
        step: String,
        point: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        sql: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        meanwhile: Vec<Ran>,
    },
    /// The step failed for another reason.
    Failed {
        step: String,
        error: String,
    },
    /// The store's process died, or stopped answering, without being
    /// killed (an outside store behind an adapter): a crash of the code
    /// under test (invariant A1). The actor restarts as after a kill.
    Died {
        step: String,
        cause: String,
    },

    // Retry timers and de-dup retention (`[retries]`, `[receivers]`).
    /// A worker stored the timer of a delivery that failed retryably: the
    /// command's `attempt`-th failure, due again at tick `next_at` (by the
    /// clock the store read), `error` as the reply said.
    RetryScheduled {
        command_id: String,
        attempt: u32,
        next_at: u64,
        error: String,
        /// The fencing token the timer was stored under (leases only).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        token: Option<u64>,
    },
    /// A worker recorded the command's last allowed failure: it is
    /// dead-lettered after `attempts` attempts, waiting for a person; never done.
    DeadLettered {
        command_id: String,
        attempts: u32,
        error: String,
    },
    /// A worker's retryable failure changed nothing: the row was done or
    /// dead-lettered already, or (with a token) its lease passed on.
    RetryUnchanged {
        command_id: String,
        error: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        token: Option<u64>,
    },
    /// A receiver refused a request with a retryable error before doing
    /// anything: `poison` if it refuses this key every time.
    Refuse {
        key: String,
        from: ActorId,
        error: String,
        poison: bool,
    },
    /// The network replaced a receiver's confirmed reply (the effect is
    /// committed) with a retryable error on its way to the worker.
    ReplyReplaced {
        key: String,
        to: ActorId,
        error: String,
    },
    /// A receiver was asked to purge the de-dup records applied before tick
    /// `before` (now minus the retention) and deleted `removed` records: a
    /// correct receiver deletes none applied later.
    DedupPurged {
        before: u64,
        removed: u64,
    },

    /// The actor's step committed a write transaction (`Commit`) on a
    /// database whose scenario asks for `synchronous` FULL or stronger, and
    /// crashsim's VFS under the store's SQLite saw no sync in the whole
    /// step: the connection does not run the level it must, whatever it
    /// reported (recorded by the simulator, for stores whose SQLite loaded
    /// the VFS extension). `directory`: the step synced, but the scenario
    /// asks for EXTRA in rollback-journal mode and the journal was deleted
    /// without syncing its directory (what only EXTRA adds to FULL).
    Unsynced {
        database: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        directory: bool,
    },

    // Backups, recorded by the simulator (`[backup]`).
    /// The seed's `n`-th online backup began, on a connection of its own:
    /// every commit acknowledged before this point must be in it (I11).
    Backup {
        n: u32,
    },
    /// The `n`-th backup copied its `part`-th part and goes on later
    /// (`Backed::More`: a file set copied one file at a time),
    /// while the actors move. Only the last part completes it.
    BackupPart {
        n: u32,
        part: u32,
    },
    /// The `n`-th backup, copied in parts, never got its next part: the
    /// power went out (or, `restored`, the store was restored) between two
    /// of them, ending it as it ends an operator's script. Not judged.
    BackupAbandoned {
        n: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        restored: bool,
    },
    /// The `n`-th backup completed: its file is judged after the run (I11).
    BackedUp {
        n: u32,
    },
    /// The `n`-th backup's process was killed inside it (`backup.kill`):
    /// it never completed, and is not judged.
    BackupKilled {
        n: u32,
    },
    /// The `n`-th backup did not complete: the store's error (a power cut
    /// that fell inside it ends it too, with no such event). Not judged.
    BackupFailed {
        n: u32,
        error: String,
    },
    /// The `n`-th restore (`[restore]`): every actor is stopped, the
    /// store's database replaced with backup #`backup`'s content, and the
    /// actors start again from it. Commits acknowledged after the backup
    /// are rolled back: counted, never a finding.
    Restore {
        n: u32,
        backup: u32,
    },
    /// The `n`-th restore did not happen: no backup had completed by the
    /// end of the fault phase.
    RestoreSkipped {
        n: u32,
    },
    /// The `n`-th restore could not read backup #`backup` (its file gone,
    /// not a database, corrupt: I11 judges it): the actors start again on
    /// the store as it was.
    RestoreFailed {
        n: u32,
        backup: u32,
        error: String,
    },
    /// The `n`-th restore is done: of the events the store held just
    /// before it, `events` are gone (made after the backup): no finding.
    /// `None`: the store was unreadable before it (after a power cut).
    RolledBack {
        n: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        events: Option<u64>,
    },

    // Clock faults, recorded by the simulator (`[faults.skew]`).
    /// The actor's clock reads the true tick plus `offset` from the start.
    Skew {
        offset: i64,
    },
    /// The actor's clock stepped (an NTP correction) by `by` ticks, forward
    /// or backward: it now reads the true tick plus `offset`.
    ClockStep {
        by: i64,
        offset: i64,
    },
}

impl Op {
    /// Recorded by the simulator at the start of an actor's step, before the
    /// step asks its store call again: a pause, a clock skew or a clock step.
    /// Such an event does not end the wait of a call suspended inside the
    /// store (`Op::Preempted`); the actor's next event of any other kind does.
    pub fn at_step_start(&self) -> bool {
        matches!(self, Op::Pause { .. } | Op::Skew { .. } | Op::ClockStep { .. })
    }
}
