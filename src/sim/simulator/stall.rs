//! A run that can no longer settle ends (`run.end_when_certain`): in the
//! quiet phase, once nothing durable has changed for longer than every
//! legitimate wait of the scenario (`Budget::stall_window`), the run stops
//! where it is and is judged as a run that did not settle (I10), its
//! stuck workflows explained as at the budget. Until now such a run went on
//! to `run.ticks_max`, its writers and workers retrying against a store
//! that answers wrongly, for a verdict that was certain long before.
//!
//! Durable change is read from the trace, never from the store's word
//! alone, and only the first time each fact shows: a commit of a
//! workflow's seq, a command first marked done, an effect first applied
//! under its key, a retry timer's attempt, a dead letter. A store that
//! answers "done" for the same row forever makes no progress here. A
//! restore forgets the store's facts, so redoing what it rolled back is.
//!
//! The check runs at each settle check, so where a run ends depends only
//! on the trace and the scenario: the same seed ends at the same tick in
//! every mode, and the ending is an event of the trace (`Op::Stalled`).

use std::collections::BTreeSet;

use super::Simulator;
use super::state::Phase;
use crate::actors::ActorId;
use crate::trace::{Op, TraceEvent};

/// What the run has made durable so far, and when it last grew.
#[derive(Default)]
pub(super) struct Stall {
    /// Events of the trace already read.
    read: usize,
    /// Facts seen, each once (`facts`).
    facts: BTreeSet<(Fact, String, u64)>,
    /// The tick of the last new fact.
    last: u64,
    /// The run ended here (`Op::Stalled`).
    pub(super) ended: bool,
    /// The next tick the trace so far is judged at (`certain`): the
    /// interval doubles, so judging costs at most twice one final check.
    next_judged: u64,
    /// A finding no later event can undo was met: the run ends after this
    /// tick, with why (`Op::Certain`).
    pub(super) end_after: Option<(u64, String)>,
    /// The tick faults stopped at (`run.ticks_fault`, or sooner when the
    /// run was stuck with them on).
    pub(super) quiet_from: u64,
    /// From ending rule 5, the cue to judge now: a command applied twice
    /// (`twice`), held until a judgement may run.
    twice: super::twice::Twice,
    cued: bool,
    /// A cue judged and found nothing (a correct store's receiver, killed
    /// before its commit, applied the command again): the next cue waits
    /// until this tick, the wait doubling each time, so a correct run
    /// copies its databases a logarithmic number of times.
    cue_after: u64,
    cue_wait: u64,
    /// From ending rule 6, the next tick the connections' settings are
    /// judged at in the fault phase of a run with power loss (doubling).
    next_settings: u64,
    /// From ending rule 7, the cuts whose recovery was judged in the fault
    /// phase (`stop_faults_if_certain`).
    cuts_judged: usize,
    /// The faults stopped before their phase's end, at a finding no cut
    /// takes back (rule 6), or stuck with faults on (rule 3's
    /// `FaultsEnded`, from rule 8): scripted faults still to come are
    /// skipped.
    pub(super) faults_stopped: bool,
}

/// The kinds of durable fact (`facts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fact {
    Commit,
    Done,
    Effect,
    Timer,
    DeadLetter,
}

/// The durable facts an event shows, each as (kind, id, number).
fn facts(event: &TraceEvent) -> Vec<(Fact, String, u64)> {
    match &event.op {
        Op::Commit { appended } => appended
            .iter()
            .map(|append| (Fact::Commit, append.workflow_id.clone(), append.seq))
            .collect(),
        Op::MarkDone {
            command_id,
            changed: true,
            ..
        } => vec![(Fact::Done, command_id.clone(), 0)],
        Op::Apply { key, .. } => vec![(Fact::Effect, key.clone(), 0)],
        Op::RetryScheduled {
            command_id, attempt, ..
        } => vec![(Fact::Timer, command_id.clone(), u64::from(*attempt))],
        Op::DeadLettered { command_id, .. } => vec![(Fact::DeadLetter, command_id.clone(), 0)],
        _ => Vec::new(),
    }
}

impl Stall {
    /// Reads the events recorded since the last call; the tick of the last
    /// durable change.
    fn progress(&mut self, events: &[TraceEvent]) -> u64 {
        for event in events.get(self.read..).unwrap_or_default() {
            // A restore takes the store's facts back (the receivers keep
            // theirs): work made again after it is progress again.
            if let Op::RolledBack { .. } = event.op {
                self.facts.retain(|(kind, _, _)| *kind == Fact::Effect);
                self.last = self.last.max(event.tick);
            }
            for fact in facts(event) {
                if self.facts.insert(fact) {
                    self.last = self.last.max(event.tick);
                }
            }
        }
        self.read = events.len();
        self.last
    }
}

/// The tick of the earliest commit in `events` that no cut has been
/// through yet (under rule 6: the run's first commit), if any.
///
/// A finding whose evidence begins before it leads whatever a cut still to
/// come may reveal (`leads`): a lost commit, a ghost effect or a second
/// application, whose evidence begins at such a commit, or later. A commit
/// that came through a cut is on disk, and stays there in WAL mode at
/// `synchronous` NORMAL or stricter (SQLite syncs the WAL before it
/// checkpoints and the database before it resets the WAL; a rollback
/// journal at FULL), so its evidence would have shown at that cut. Below
/// that, with a disk model that keeps some unsynced writes, a later cut
/// might reveal an older loss. Under rule 6, only a finding before the
/// run's first commit leads (a connection that opened weak at tick 0, not
/// a commit left unsynced at tick 21); from rule 7, one before every commit
/// since the last cut.
fn first_open_commit(events: &[TraceEvent], rule: u32) -> Option<u64> {
    let since = match rule {
        ..=6 => 0,
        _ => events
            .iter()
            .rposition(|event| matches!(event.op, Op::PowerCut { .. }))
            .unwrap_or(0),
    };
    events[since..]
        .iter()
        .filter(|event| matches!(event.op, Op::Commit { .. }))
        .map(|event| event.tick)
        .min()
}

/// Whether a finding whose evidence begins at `tick` leads, given the run's
/// `first_open_commit`.
fn leads(first_open_commit: Option<u64>, tick: u64) -> bool {
    first_open_commit.is_none_or(|first| tick < first)
}

/// At tick `now`, the last durable change at `last` and faults stopped at
/// `quiet`: since when the run has been stuck, if nothing changed for a
/// whole `window` of the quiet phase.
fn stuck_since(now: u64, last: u64, quiet: u64, window: u64) -> Option<u64> {
    let since = last.max(quiet);
    (now.saturating_sub(since) >= window).then_some(since)
}

impl Simulator<'_> {
    /// At a settle check: judges the trace so far for findings no later
    /// event can undo (`check::certain`), at doubling intervals, and from
    /// rule 5 at once when the trace shows a command's effect committed
    /// twice (`twice`; then the databases are read as they are, through
    /// `System::peek`). The first finding ends the run a grace of `Q`
    /// ticks later (what followed shows in the report). In either phase of a run without power loss or
    /// restores; in a run with them, only once the fault phase is over
    /// (every scripted fault too), from ending rule 4 (before it, never):
    /// a cut or a restore can take a commit back, and after the last one
    /// nothing can.
    pub(super) fn judge_so_far(&mut self) {
        let run = &self.scenario.run;
        if !run.end_when_certain || self.stall.end_after.is_some() {
            return;
        }
        if run.ending_rule >= 5 {
            self.stall.cued |= self.stall.twice.cue(self.trace.events());
        }
        let takes_back = self.power.is_some() || self.scenario.restore.is_some();
        let faults_on = run.ending_rule < 4
            || self.phase != Phase::Quiet
            || (self.now <= run.ticks_fault && !self.stall.faults_stopped);
        if takes_back && faults_on && !self.stop_faults_if_certain() {
            return;
        }
        let run = &self.scenario.run;
        let cued = self.stall.cued && self.now >= self.stall.cue_after;
        let effects_only = self.now < self.stall.next_judged;
        if !effects_only {
            self.stall.next_judged = self.now.max(run.settle_check_ticks).saturating_mul(2);
        } else if !cued {
            return;
        }
        if cued {
            self.stall.cued = false;
            self.stall.cue_wait = self.stall.cue_wait.saturating_mul(2).max(run.settle_check_ticks);
            self.stall.cue_after = self.now.saturating_add(self.stall.cue_wait);
        }
        // The databases are copied only where the checker asks (a command
        // applied twice); a store that offers no `peek` is judged after the run.
        let (claims, retention) = (
            crate::check::Claims::of(self.scenario),
            crate::check::Retention::of(self.scenario),
        );
        // A copy or a dump of it that fails stops the run (no verdict).
        let mut failed = None;
        let mut peek = || {
            let system = self.system.as_deref_mut()?;
            super::peek::peek(system, self.clock_vfs.as_ref(), &self.store_path, &self.receiver_path).unwrap_or_else(
                |fatal| {
                    failed = Some(fatal);
                    None
                },
            )
        };
        let finding = crate::check::certain(
            self.trace.events(),
            &self.recoveries,
            &self.restores,
            crate::check::Now {
                claims,
                retention,
                synchronous: Some(crate::check::Expected::of(self.scenario)),
                durable: Some(crate::check::Durable::of(self.scenario)),
                lease_margin: (self.phase == Phase::Quiet)
                    .then(|| self.scenario.leases.map_or(0, |leases| leases.margin_ticks)),
                peek: Some(&mut peek),
                judge: match effects_only {
                    true => crate::check::Judge::EffectsTwice,
                    false => crate::check::Judge::All,
                },
            },
            run.ending_rule,
        )
        .into_iter()
        .next();
        if let Some(fatal) = failed {
            self.fatal = Some(fatal);
            return;
        }
        let Some(finding) = finding else {
            return;
        };
        let grace = self.scenario.quiet_ticks_min();
        let until = self.now.saturating_add(grace);
        let invariant = finding.invariant.to_string();
        let reason = format!(
            "the run ended at tick {until}, {grace} ticks after a finding no later event can undo \
             ({invariant}, judged at tick {}): liveness is not judged",
            self.now
        );
        self.record(ActorId::SIM, Op::Certain { invariant, until });
        self.stall.end_after = Some((until, reason));
    }

    /// In the fault phase of a run with power loss, from rule 6: judges
    /// what no cut takes back (`Judge::Faults`: the connections' settings
    /// at doubling intervals; from rule 7 also what recovery found after
    /// each cut, at the settle check after it), and at a finding that
    /// leads whatever the faults still to come could reveal (`leads`)
    /// stops the faults now (`Op::Quiet` before `run.ticks_fault`;
    /// scripted faults still to come are skipped), so that from here the
    /// run is judged as after its fault phase: it ends a grace later, with
    /// repair under way and no cut in it. True if the faults stopped. Not
    /// in a run with restores (a restore still to come is a fault too).
    fn stop_faults_if_certain(&mut self) -> bool {
        let run = &self.scenario.run;
        if run.ending_rule < 6 || self.power.is_none() || self.scenario.restore.is_some() || self.phase != Phase::Faults
        {
            return false;
        }
        let settings_due = self.now >= self.stall.next_settings;
        let cut_due = run.ending_rule >= 7 && self.recoveries.len() > self.stall.cuts_judged;
        if !settings_due && !cut_due {
            return false;
        }
        if settings_due {
            self.stall.next_settings = self.now.max(run.settle_check_ticks).saturating_mul(2);
        }
        self.stall.cuts_judged = self.recoveries.len();
        let now = crate::check::Now {
            synchronous: Some(crate::check::Expected::of(self.scenario)),
            durable: (run.ending_rule >= 7).then(|| crate::check::Durable::of(self.scenario)),
            judge: crate::check::Judge::Faults,
            ..Default::default()
        };
        let events = self.trace.events();
        let found = crate::check::certain(events, &self.recoveries, &self.restores, now, run.ending_rule);
        let open = first_open_commit(events, run.ending_rule);
        if !found
            .iter()
            .any(|finding| finding.ticks.first().is_some_and(|tick| leads(open, *tick)))
        {
            return false;
        }
        self.stall.faults_stopped = true;
        self.quiet();
        true
    }

    /// At a settle check that found the run unsettled: ends the run if it
    /// is stuck in the quiet phase (`Op::Stalled`). True if it ended. Stuck
    /// with faults on (rule 3, no power loss), it stops them now
    /// (`Op::FaultsEnded`): the rest of the fault phase would only delay
    /// the verdict, and liveness is judged a window after they stop.
    pub(super) fn stalled(&mut self) -> bool {
        let run = &self.scenario.run;
        if !run.end_when_certain {
            return false;
        }
        let last = self.stall.progress(self.trace.events());
        let window = crate::scenario::Budget::stall_window(self.scenario);
        match self.phase {
            Phase::Faults => {
                // A cut takes facts back, and work redone after it is no new fact.
                if run.ending_rule >= 3
                    && self.power.is_none()
                    && self.scenario.restore.is_none()
                    && let Some(since) = stuck_since(self.now, last, 0, window)
                {
                    self.record(ActorId::SIM, Op::FaultsEnded { since, window });
                    // From rule 8 scripted faults still to come are skipped
                    // too: liveness is judged with every fault over.
                    self.stall.faults_stopped = run.ending_rule >= 8;
                    self.quiet();
                }
                false
            }
            Phase::Quiet => {
                let Some(since) = stuck_since(self.now, last, self.stall.quiet_from, window) else {
                    return false;
                };
                self.record(ActorId::SIM, Op::Stalled { since, window });
                self.stall.ended = true;
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Appended;

    fn event(tick: u64, op: Op) -> TraceEvent {
        TraceEvent {
            tick,
            actor: ActorId::SIM,
            op,
        }
    }

    fn done(tick: u64, command_id: &str, changed: bool) -> TraceEvent {
        event(
            tick,
            Op::MarkDone {
                command_id: command_id.to_string(),
                changed,
                token: None,
            },
        )
    }

    #[test]
    fn a_run_is_stuck_only_after_a_whole_window_of_the_quiet_phase() {
        // Progress in the fault phase counts from the quiet phase's start.
        assert_eq!(stuck_since(3_973, 100, 3_000, 974), None);
        assert_eq!(stuck_since(3_974, 100, 3_000, 974), Some(3_000));
        // Progress in the quiet phase starts the window again.
        assert_eq!(stuck_since(4_973, 4_000, 3_000, 974), None);
        assert_eq!(stuck_since(4_974, 4_000, 3_000, 974), Some(4_000));
    }

    #[test]
    fn only_a_fact_seen_for_the_first_time_is_progress() {
        let mut stall = Stall::default();
        let mut events = vec![done(10, "c1", true), done(20, "c1", false)];
        assert_eq!(stall.progress(&events), 10);
        // The same row answered "done" again, forever: no progress.
        events.push(done(30, "c1", true));
        events.push(event(40, Op::Begin));
        assert_eq!(stall.progress(&events), 10);
        events.push(commit(50));
        events.push(done(60, "c2", true));
        assert_eq!(stall.progress(&events), 60);
    }

    fn commit(tick: u64) -> TraceEvent {
        event(
            tick,
            Op::Commit {
                appended: vec![Appended {
                    workflow_id: "w".to_string(),
                    expected_seq: 0,
                    seq: 1,
                    kind: "trip_requested".to_string(),
                    state: String::new(),
                    command_ids: Vec::new(),
                }],
            },
        )
    }

    #[test]
    fn a_finding_leads_when_no_commit_a_cut_has_not_been_through_precedes_it() {
        let cut = event(
            400,
            Op::PowerCut {
                point: 7,
                model: "random".to_string(),
            },
        );
        let events = vec![commit(13), commit(21), cut, commit(450)];
        let leads = |events: &[TraceEvent], tick, rule| leads(first_open_commit(events, rule), tick);
        // Rule 6: only before the run's first commit.
        assert!(leads(&events[..2], 12, 6));
        assert!(!leads(&events[..2], 13, 6));
        assert!(!leads(&events, 400, 6));
        // Rule 7: the commits at 13 and 21 came through the cut at 400.
        assert!(!leads(&events[..2], 13, 7));
        assert!(leads(&events[..3], 13, 7));
        assert!(leads(&events, 400, 7));
        assert!(leads(&events, 449, 7));
        assert!(!leads(&events, 450, 7));
    }
}
