//! `crashsim explore`: every schedule of suspensions inside the store's
//! calls up to a bound, for one seed of a small scenario, instead of a
//! sample of them. Preemption bounding, in the manner of CHESS: most
//! interleaving bugs need one or two preemptions, and the schedules with at
//! most `bound` of them are few enough to run them all.
//!
//! The seed's other faults (kills, duplicated deliveries, …) are kept as
//! it drew them, forced by occurrence; its own suspensions are dropped.
//! The run without any suspension lists the scheduling points each actor's
//! step passed (`StepPoints`); every one of them, at each hold asked for,
//! is one schedule with one suspension. With a bound of 2, each of those
//! runs lists the points that came after its suspension, and each is tried
//! as a second one; and so on, depth first. Every schedule is judged by
//! all the checkers, and a failing one is a forced fault list a capsule
//! replays.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::check::Invariant;
use crate::faults::{Fault, FaultSource};
use crate::runner::{Options, RunError, SeedResult, run_seed, run_seed_with};
use crate::scenario::Loaded;

/// What an exploration found.
#[derive(Clone, Debug, Serialize)]
pub struct Exploration {
    pub scenario: String,
    pub seed: u64,
    /// At most this many suspensions per schedule.
    pub bound: usize,
    /// The hold (ticks) each suspension was tried at.
    pub holds: Vec<u64>,
    /// Scheduling points the run without suspensions passed in its fault
    /// phase: the first suspension's choices, per hold.
    pub points: u64,
    /// Schedules run, the one without suspensions included.
    pub schedules: u64,
    /// Distinct traces among them.
    pub distinct: u64,
    /// False if `max_runs` cut the search short.
    pub complete: bool,
    /// Schedules in which some invariant failed.
    pub failing: u64,
    /// Failing schedules per invariant of their first violation.
    pub by_invariant: BTreeMap<Invariant, u64>,
    /// The first failing schedule, if any.
    #[serde(skip)]
    pub first_failure: Option<SeedResult>,
}

/// What to explore.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// Suspensions per schedule, at most (1 or more).
    pub bound: usize,
    /// Holds to try each suspension at (ticks, 1 or more).
    pub holds: Vec<u64>,
    /// Schedules to run at most.
    pub max_runs: u64,
}

/// Explores seed `seed` of `loaded`, which must suspend calls (`[preempt]`).
/// `progress` gets the schedules run so far.
pub fn explore(
    loaded: &Loaded,
    seed: u64,
    bounds: &Bounds,
    options: &Options,
    progress: &mut dyn FnMut(u64),
) -> Result<Exploration, RunError> {
    let drawn = run_seed(loaded, seed, options)?;
    let base: Vec<Fault> = drawn
        .injected
        .iter()
        .map(|injected| injected.fault.clone())
        .filter(|fault| !matches!(fault, Fault::Preempt { .. }))
        .collect();
    let mut search = Search {
        loaded,
        seed,
        options,
        bounds,
        base,
        hashes: BTreeSet::new(),
        exploration: Exploration {
            scenario: loaded.label(),
            seed,
            bound: bounds.bound,
            holds: bounds.holds.clone(),
            points: 0,
            schedules: 0,
            distinct: 0,
            complete: true,
            failing: 0,
            by_invariant: BTreeMap::new(),
            first_failure: None,
        },
        progress,
    };
    let root = search.run(&[])?;
    search.exploration.points = root.suspension_steps.iter().map(|step| step.points).sum();
    search.below(&[], &root)?;
    let mut exploration = search.exploration;
    exploration.distinct = search.hashes.len() as u64;
    Ok(exploration)
}

/// The depth-first search's state.
struct Search<'a> {
    loaded: &'a Loaded,
    seed: u64,
    options: &'a Options,
    bounds: &'a Bounds,
    /// The seed's faults other than suspensions, forced in every schedule.
    base: Vec<Fault>,
    hashes: BTreeSet<String>,
    exploration: Exploration,
    progress: &'a mut dyn FnMut(u64),
}

impl Search<'_> {
    /// Runs the schedule with the suspensions `chosen`, and records it.
    fn run(&mut self, chosen: &[Fault]) -> Result<SeedResult, RunError> {
        let faults = self.base.iter().chain(chosen).cloned().collect();
        let result = run_seed_with(self.loaded, self.seed, self.options, FaultSource::Forced(faults))?;
        let exploration = &mut self.exploration;
        exploration.schedules += 1;
        self.hashes.insert(result.trace_hash.clone());
        if let Some(first) = result.violations.first() {
            exploration.failing += 1;
            *exploration.by_invariant.entry(first.invariant).or_default() += 1;
            if exploration.first_failure.is_none() {
                exploration.first_failure = Some(result.clone());
            }
        }
        (self.progress)(exploration.schedules);
        Ok(result)
    }

    /// Tries each suspension that can follow `chosen` in `result` (its run).
    fn below(&mut self, chosen: &[Fault], result: &SeedResult) -> Result<(), RunError> {
        if chosen.len() >= self.bounds.bound {
            return Ok(());
        }
        // After the last suspension chosen: its step ended at it, so the
        // points that follow are those of the steps listed after it.
        let after = match chosen.last() {
            Some(Fault::Preempt { actor, step, .. }) => {
                let at = result
                    .suspension_steps
                    .iter()
                    .position(|listed| listed.actor == *actor && listed.step == *step);
                match at {
                    Some(at) => at + 1,
                    // The suspension did not land (the run took another course).
                    None => return Ok(()),
                }
            }
            _ => 0,
        };
        let bounds = self.bounds;
        for listed in &result.suspension_steps[after..] {
            for point in 1..=listed.points {
                for &hold in &bounds.holds {
                    if self.exploration.schedules >= bounds.max_runs {
                        self.exploration.complete = false;
                        return Ok(());
                    }
                    let mut next = chosen.to_vec();
                    next.push(Fault::Preempt {
                        actor: listed.actor,
                        step: listed.step,
                        point,
                        hold,
                    });
                    let child = self.run(&next)?;
                    self.below(&next, &child)?;
                }
            }
        }
        Ok(())
    }
}
