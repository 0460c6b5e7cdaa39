//! The checkers: read-only judges of a finished run.
//!
//! Each checker looks at the recorded history (the trace) and a read-only
//! snapshot of the final database files, and returns `Violation`s. None of
//! them mutates anything or draws randomness. The oracle for what the
//! workflow *should* have stored is the pure reference `decide`, never the
//! implementation under test.
//!
//! | file          | invariants |
//! |---------------|------------|
//! | commands.rs   | I1 no lost command (the mark-done audit on every run), I5 atomic append (each command stored as emitted; payloads compared as JSON: re-encoded is the same, changed is "the stored payload differs from the one appended") |
//! | answers/      | the store's own answers judged when given: I6 `load` and `commands`, I5 rows of a transaction that never committed, I1 a `pending` that hides due rows |
//! | retries.rs    | I1 for retry timers: a dead letter is never done, is visible with its attempts, no early retry |
//! | effects.rs    | I2 one effect per command, I4 no ghost effect, I7 key conflicts surface, keys compared exactly |
//! | retention.rs  | I2's exception: an application after a purge the scenario's de-dup retention permitted |
//! | sequence.rs   | I3 stale writers rejected |
//! | replay.rs     | I6 replay is pure |
//! | leases.rs     | I8 lease safety: a late acknowledgement never counts, one live lease per row |
//! | liveness.rs   | I10 the run settles, and each stuck workflow explained (`stuck.rs`); I9 (partly) integrity_check |
//! | settings.rs   | I9 (partly) every connection runs with the configured `synchronous` |
//! | durability.rs | I9 across power cuts (acknowledged commits survive, integrity), I4 ghosts after a cut |
//! | backups.rs    | I11 every completed backup is a state the store was in, holding every commit acknowledged before it began |
//! | restores.rs   | I2 across a restore: a command derived again after a restore rolled its event back carries the same id, so the receiver folds it |
//! | adapter.rs    | A1 an outside store's process dies only when killed, and answers in time |
//! | alive.rs      | not a verdict: which effects a receiver held at a moment (committed, rolled back, taken by a cut), for judging answers when they were given |
//!
//! D1 (the same seed gives the same answers) is judged by running a seed
//! twice (`determinism`), not from one run.
//!
//! Outcomes the harness could not confirm (a reply lost, a timeout) are not
//! judged from the trace: only the database settles them.
//!
//! An answer (a receiver's repeat or conflict, a store's read, a row marked
//! done) is judged against the state when it was given, never against the
//! final dump alone: after a power cut on a setting weaker than FULL the
//! final dump may lack what made it right (`alive.rs`, `answers/`).
//!
//! Every safety invariant is judged on every run, settled or not, on the
//! state the run reached (after the quiet phase, or where its budget ended):
//! a run that did not settle still shows the row that is wrong. Only I10
//! and I1's "every row is done" clause need the run to have settled.

pub mod adapter;
mod alive;
mod answers;
mod apart;
mod backups;
mod commands;
pub mod coverage;
mod durability;
mod effects;
mod history;
mod interleaving;
mod leases;
mod liveness;
mod replay;
mod restores;
mod retention;
mod retries;
mod sequence;
mod settings;
pub mod stuck;
/// The canonical dump the checkers read (it lives with the store, which produces it).
pub use crate::store::dump as snapshot;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::trace::Op;

pub use crate::invariant::Invariant;
pub use crate::store::Snapshot;
pub use history::History;
pub use retention::Retention;

use crate::actors::TripRequest;
use crate::trace::TraceEvent;

/// One broken invariant, with what and when.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Violation {
    pub invariant: Invariant,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The ticks of the steps involved, earliest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ticks: Vec<u64>,
}

impl Violation {
    pub fn new(invariant: Invariant, message: impl Into<String>) -> Violation {
        Violation {
            invariant,
            message: message.into(),
            workflow_id: None,
            command_id: None,
            seq: None,
            ticks: Vec::new(),
        }
    }

    pub fn workflow(mut self, workflow_id: &str) -> Violation {
        self.workflow_id = Some(workflow_id.to_string());
        self
    }

    pub fn command(mut self, command_id: &str) -> Violation {
        self.command_id = Some(command_id.to_string());
        if self.workflow_id.is_none() {
            self.workflow_id = Some(crate::model::workflow_of(command_id).to_string());
        }
        self
    }

    pub fn seq(mut self, seq: u64) -> Violation {
        self.seq = Some(seq);
        self
    }

    pub fn ticks(mut self, ticks: impl IntoIterator<Item = u64>) -> Violation {
        self.ticks.extend(ticks);
        self.ticks.sort_unstable();
        self.ticks.dedup();
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.invariant, self.invariant.title(), self.message)
    }
}

/// Everything a checker may look at.
pub struct Input<'a> {
    pub events: &'a [TraceEvent],
    pub snapshot: &'a Snapshot,
    pub trips: &'a [TripRequest],
    /// Whether the run settled within its budget.
    pub settled: bool,
    pub ticks_max: u64,
    pub steps_max: u64,
    /// Where the run ended: (tick, steps).
    pub ended: (u64, u64),
    /// The `synchronous` levels the scenario asks of the store's and the
    /// receiver's connections.
    pub synchronous: Expected,
    /// What recovery found after each power cut.
    pub recoveries: &'a [crate::sim::Recovery],
    /// What the store held after each restore (`[restore]`), in order.
    pub restores: &'a [crate::sim::Recovery],
    /// Every backup that completed, as its file held it after the run.
    pub backups: &'a [crate::sim::BackupFile],
    /// Whether each database's settings promise that acknowledged commits
    /// survive a power cut.
    pub durable: Durable,
    /// Files the implementation kept about the run (an outside store's
    /// stderr, quoted by A1).
    pub artifacts: &'a [crate::store::Artifact],
    /// With `[retries]`: the attempts after which a command is dead-lettered.
    pub max_attempts: Option<u32>,
    /// The scenario's `leases.margin_ticks` (0 without leases), for I8's
    /// one-live-lease clause under clock skew (`leases.rs`).
    pub lease_margin_ticks: u64,
    /// With leases: what claims are asked with, to judge their answers.
    pub claims: Option<Claims>,
}

pub use answers::Claims;

/// Which databases' settings promise durability across power loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Durable {
    pub store: bool,
    pub receiver: bool,
}

impl Durable {
    /// Which of `scenario`'s databases its settings promise durability.
    pub fn of(scenario: &crate::scenario::Scenario) -> Durable {
        Durable {
            store: Durable::promised(&scenario.sqlite.store_settings()),
            receiver: Durable::promised(&scenario.sqlite.receiver_settings()),
        }
    }

    /// WAL with FULL or EXTRA; a rollback journal only with EXTRA (FULL does
    /// not sync the directory after deleting the journal).
    pub fn promised(settings: &crate::store::SqliteSettings) -> bool {
        use crate::store::{JournalMode, Synchronous};
        match settings.journal_mode {
            JournalMode::Wal => settings.synchronous >= Synchronous::Full,
            JournalMode::Delete => settings.synchronous >= Synchronous::Extra,
        }
    }
}

/// Settings every connection must run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    pub store: u8,
    pub receiver: u8,
    /// Both databases' journal mode, in which the levels are judged
    /// (`settings::same_syncs`).
    pub journal_mode: crate::store::JournalMode,
}

impl Expected {
    /// The levels `scenario` asks of each database's connections.
    pub fn of(scenario: &crate::scenario::Scenario) -> Expected {
        Expected {
            store: scenario.sqlite.store_settings().synchronous.level(),
            receiver: scenario.sqlite.receiver_settings().synchronous.level(),
            journal_mode: scenario.sqlite.journal_mode,
        }
    }
}

/// What the store held after each of its resets, in the order of the
/// trace: recovery after a power cut (`Op::PowerCut`), or the restored
/// store after a restore (`Op::RolledBack`). Checkers that follow the
/// store's contents start again from each.
pub fn resets<'a>(
    events: &[TraceEvent],
    cuts: &'a [crate::sim::Recovery],
    restores: &'a [crate::sim::Recovery],
) -> Vec<&'a crate::sim::Recovery> {
    let (mut cuts, mut restores) = (cuts.iter(), restores.iter());
    events
        .iter()
        .filter_map(|event| match event.op {
            Op::PowerCut { .. } => cuts.next(),
            Op::RolledBack { .. } => restores.next(),
            _ => None,
        })
        .collect()
}

/// Runs every checker; violations come out root first (`order`).
pub fn check(input: &Input<'_>) -> Vec<Violation> {
    check_with(input, None)
}

/// `check`, for a scenario with a de-dup retention: I2 does not blame an
/// application after a purge the retention permitted (`retention.rs`).
pub fn check_with(input: &Input<'_>, retention: Option<Retention>) -> Vec<Violation> {
    // Files SQLite cannot read hold no rows to judge: only their integrity
    // (and what the recoveries and the processes showed) is a verdict.
    if input.snapshot.unreadable.is_some() {
        let history = History::from_events(input.events).with_recoveries(input.recoveries, input.restores);
        let mut violations = liveness::integrity(input.snapshot);
        violations.extend(durability::check(input, &history));
        violations.extend(adapter::check(input));
        order(&mut violations);
        return violations;
    }
    let history = history_with_losses(input.events, input.recoveries, input.restores);
    let mut violations = Vec::new();
    violations.extend(commands::check(input, &history));
    violations.extend(answers::check(input));
    violations.extend(retries::check(input));
    violations.extend(effects::check(
        input.events,
        input.snapshot,
        &history,
        &retention::Purges::of(input.events, retention),
    ));
    violations.extend(sequence::check(input, &history));
    violations.extend(replay::check(input, &history));
    violations.extend(leases::check(input));
    violations.extend(liveness::check(input, &history));
    violations.extend(settings::check(&input.synchronous, &history));
    violations.extend(durability::check(input, &history));
    violations.extend(backups::check(input, &history));
    violations.extend(restores::check(input, &history));
    violations.extend(adapter::check(input));
    order(&mut violations);
    violations
}

/// The history of `events`, with the commits a cut or a restore lost
/// (`History::lost`): what every judgement of stale appends and replays
/// reads, after the run and during it (`certain`).
fn history_with_losses<'a>(
    events: &'a [TraceEvent],
    recoveries: &'a [crate::sim::Recovery],
    restores: &'a [crate::sim::Recovery],
) -> History<'a> {
    let mut history = History::from_events(events).with_recoveries(recoveries, restores);
    history.lost = durability::lost_commits(&history);
    history
}

/// Findings that no later event can undo, judged on the trace so far by
/// the same code that judges them after the run: I3's stale appends
/// (`sequence::stale`), and from ending `rule` 3 on the store's wrong
/// answers (`answers`: I6, I5, I1's short `pending` and `claim`), each
/// judged by what the trace fixed when it was given, and the commands a
/// replay dispatched (I6, `replay::dispatched`). A cut or a restore can
/// take a commit back: in a run with them, judged only after the last
/// (`sim::simulator::stall`), with the `recoveries` after each cut and the
/// `restores` so far, as after the run. A run that meets one ends after a
/// grace, its verdict the one a full run would give.
///
/// From rule 5, an effect applied twice (I2) too, on what the databases
/// hold now (`Now::peek`, the store's `System::peek`), read only when the
/// trace shows a command's effect committed twice: the trace is the cue,
/// the receiver's rows the evidence. Effects are never taken back once
/// committed (a cut is over, as above), except by a purge the scenario's
/// retention permits, whose excuse a later clock offset can widen: with
/// such a retention, I2 waits for the end.
///
/// From rule 6, I9 by the connections' settings (`settings::check`): a
/// connection that opened, or committed, below the level the scenario asks
/// is a fact no cut takes back, so it is judged in the fault phase of a run
/// with power loss too (`Judge::Faults`).
///
/// From rule 7, what recovery found after each cut so far
/// (`durability::judge`: an acknowledged commit, mark or effect lost, a
/// ghost effect, a failed `integrity_check`): a cut that is over is not
/// taken back, so it is judged in the fault phase too (`Judge::Faults`).
///
/// From rule 8, I8's lease safety (`leases::judge`): a late
/// acknowledgement that counted, a claim of a live lease or with a token
/// that did not grow, each judged by what the trace fixed when it
/// happened; two live leases by the true clock once no clock can step
/// again (`Now::lease_margin`).
pub fn certain(
    events: &[TraceEvent],
    recoveries: &[crate::sim::Recovery],
    restores: &[crate::sim::Recovery],
    now: Now<'_>,
    rule: u32,
) -> Vec<Violation> {
    let history = history_with_losses(events, recoveries, restores);
    let mut violations = Vec::new();
    let all = now.judge == Judge::All;
    if all {
        violations.extend(sequence::stale(events, &history));
    }
    if rule >= 3 && all {
        violations.extend(answers::judge_all(events, Vec::new(), now.claims));
        violations.extend(replay::dispatched(&history));
    }
    if rule >= 8 && all {
        violations.extend(leases::judge(events, now.lease_margin));
    }
    if rule >= 6
        && now.judge != Judge::EffectsTwice
        && let Some(expected) = &now.synchronous
    {
        violations.extend(settings::check(expected, &history));
    }
    if rule >= 7
        && now.judge != Judge::EffectsTwice
        && let Some(durable) = now.durable
    {
        violations.extend(durability::judge(recoveries, durable, &history));
    }
    if rule >= 5
        && now.judge != Judge::Faults
        && !now.retention.is_some_and(Retention::accepted)
        && effects::applied_twice(&history)
        && let Some(peek) = now.peek
        && let Some(snapshot) = peek()
    {
        let purges = retention::Purges::of(events, now.retention);
        violations.extend(
            effects::check(events, &snapshot, &history, &purges)
                .into_iter()
                .filter(|violation| violation.invariant == Invariant::I2),
        );
    }
    order(&mut violations);
    violations
}

/// What `certain` may read besides the trace: the scenario's claims, de-dup
/// retention and asked `synchronous` levels, and the databases as they are
/// now (`peek`: `None` where they cannot be read now, or the store does not
/// offer it).
#[derive(Default)]
pub struct Now<'p> {
    pub claims: Option<Claims>,
    pub retention: Option<Retention>,
    pub synchronous: Option<Expected>,
    /// Which databases promise durability, to judge what recovery found
    /// after each cut so far (I9's lost commits, I4's ghosts).
    pub durable: Option<Durable>,
    /// The scenario's lease margin (0 without leases), given once no clock
    /// can step again (the fault phase is over): I8's clause of one live
    /// lease by the true clock reads each actor's largest offset.
    pub lease_margin: Option<u64>,
    pub peek: Option<&'p mut dyn FnMut() -> Option<Snapshot>>,
    /// Which of its findings to judge now.
    pub judge: Judge,
}

/// Which findings `certain` judges at one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Judge {
    /// Every one.
    #[default]
    All,
    /// Only an effect applied twice (the trace's cue came between two of
    /// the doubling intervals at which everything is judged).
    EffectsTwice,
    /// Only what no cut takes back (the fault phase of a run with power
    /// loss): the connections' settings, and what recovery found after
    /// each cut so far.
    Faults,
}

/// Puts the root cause first: violations by their earliest evidence tick
/// (`Violation::ticks`), those without ticks (final-state findings such as
/// an integrity check) after every one with, ties by invariant, then by
/// message and the rest of the violation, so the order is total and the
/// same on every run. The first violation is what every report leads with
/// (the CLI's `fail:` line, JSON's `first`, JUnit, the HTML page, a
/// capsule's `expect.invariant`, the shrinker's target): when one mistake
/// trips several invariants, the one it tripped first names it.
pub fn order(violations: &mut [Violation]) {
    violations.sort_by(|a, b| {
        let at = |violation: &Violation| match violation.ticks.first() {
            Some(tick) => (false, *tick),
            None => (true, 0),
        };
        at(a)
            .cmp(&at(b))
            .then_with(|| a.invariant.cmp(&b.invariant))
            .then_with(|| a.message.cmp(&b.message))
            .then_with(|| a.cmp(b))
    });
}

#[cfg(test)]
mod tests_root;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_alive;
#[cfg(test)]
mod tests_restores;
