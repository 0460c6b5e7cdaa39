//! The shrinker: makes a failing run small enough to read, keeping the same
//! invariant failing.
//!
//! Method (greedy delta debugging, in the spirit of proptest's shrinking):
//! the run is replayed from a forced fault schedule instead of the seed's
//! draws (`FaultSource::Forced`), so its faults can be removed one chunk at
//! a time. Each pass tries, in order:
//!
//! 1. fewer faults: drop halves of the schedule, then quarters, … then
//!    single faults (ddmin);
//! 2. simpler faults: each fault at the first occurrence of its kind (the
//!    first reach of its kill point, the first message sent) and on the
//!    actor with index 0 of its role, so that smaller runs still meet it;
//!    a clock offset (a skew, a clock step) halved toward 0;
//! 3. fewer workflows: `trips_count` of 1, 2, 4, … (smallest first), then
//!    n−1; then the trips themselves, by ddmin over their positions
//!    (`workload.trips_kept`), so a failure that needs trip 2 of 20 keeps
//!    it alone where a smaller count would drop it;
//! 4. fewer actors: the same for writers, workers and receivers;
//! 5. no scripted kills, a shorter fault phase, and (unless the target is
//!    liveness, which a smaller budget would fake) a smaller step budget.
//!
//! A candidate the scenario loader would reject (`Scenario::validate`: a
//! step budget below what the run may need, a scripted kill of an actor
//! that is gone) is never run, so a shrunk scenario loads like any other.
//! The target is the invariant of the run's first violation, the root
//! cause the user saw (`check::order`: earliest evidence first). A
//! candidate is kept if its first violation is still of the target
//! invariant and it fails no invariant the current run does not: shrinking
//! must not trade the bug for another one, nor bury it under a consequence
//! (a shrunk run that leads with I3 is not the I6 the user shrank), so the
//! capsule it writes expects the invariant the summary names. After every accepted step the schedule becomes the faults
//! that actually fired, so faults that no longer occur drop out by
//! themselves. Passes repeat until one changes nothing. The seed stays the
//! same throughout: every other random stream (decisions, latencies) is
//! independent of the removed pieces (streams are derived per component).

use std::collections::BTreeSet;

use crate::actors::ActorId;
use crate::check::Invariant;
use crate::faults::{Fault, FaultSource};
use crate::runner::{Options, RunError, SeedResult, run_seed, run_seed_with};
use crate::scenario::{Loaded, Scenario};
use crate::workload::NearMiss;

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Size {
    pub steps: u64,
    pub faults: usize,
    pub workflows: u32,
    pub actors: u32,
}

impl Size {
    fn of(scenario: &Scenario, result: &SeedResult) -> Size {
        let workload = &scenario.workload;
        Size {
            steps: result.steps,
            faults: result.injected.len() + scenario.script.len(),
            workflows: workload
                .trips_kept
                .as_ref()
                .map_or(workload.trips_count, |kept| kept.len() as u32),
            actors: workload.writers_count + workload.workers_count + workload.receivers_count,
        }
    }
}

/// What the shrinker did.
pub struct Shrunk {
    pub target: Invariant,
    pub original: Size,
    pub shrunk: Size,
    /// The shrunk scenario, with its result (forced schedule in `injected`).
    pub loaded: Loaded,
    pub result: SeedResult,
    /// Runs tried.
    pub runs: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error("seed {seed} passes: there is nothing to shrink")]
    Passes { seed: u64 },
    #[error(transparent)]
    Run(#[from] RunError),
}

struct Shrinker<'a> {
    seed: u64,
    target: Invariant,
    options: &'a Options,
    runs: u64,
    max_runs: u64,
    loaded: Loaded,
    result: SeedResult,
    progress: &'a mut dyn FnMut(&str),
}

/// Shrinks seed `seed` of `loaded`, trying at most `max_runs` candidates.
pub fn shrink(
    loaded: &Loaded,
    seed: u64,
    options: &Options,
    max_runs: u64,
    progress: &mut dyn FnMut(&str),
) -> Result<Shrunk, ShrinkError> {
    let result = run_seed(loaded, seed, options)?;
    let Some(first) = result.violations.first() else {
        return Err(ShrinkError::Passes { seed });
    };
    let target = first.invariant;
    let original = Size::of(&loaded.scenario, &result);
    let mut shrinker = Shrinker {
        seed,
        target,
        options,
        runs: 0,
        max_runs,
        loaded: loaded.clone(),
        result,
        progress,
    };
    loop {
        let before = shrinker.size();
        shrinker.faults()?;
        shrinker.simplify_faults()?;
        shrinker.workflows()?;
        shrinker.trips()?;
        shrinker.actors()?;
        shrinker.script_and_phase()?;
        shrinker.budget()?;
        if shrinker.size() == before || shrinker.runs >= shrinker.max_runs {
            break;
        }
    }
    Ok(Shrunk {
        target,
        original,
        shrunk: shrinker.size(),
        runs: shrinker.runs,
        loaded: shrinker.loaded,
        result: shrinker.result,
    })
}

/// Candidates below `current`, most aggressive first: 1, 2, 4, … then n−1.
fn smaller(current: u32) -> Vec<u32> {
    let mut values: Vec<u32> = std::iter::successors(Some(1u32), |v| v.checked_mul(2))
        .take_while(|v| *v < current)
        .collect();
    if current > 1 && !values.contains(&(current - 1)) {
        values.push(current - 1);
    }
    values
}

impl Shrinker<'_> {
    fn size(&self) -> Size {
        Size::of(&self.loaded.scenario, &self.result)
    }

    fn schedule(&self) -> Vec<Fault> {
        self.result
            .injected
            .iter()
            .map(|injected| injected.fault.clone())
            .collect()
    }

    /// Runs a candidate; keeps it if the target invariant still fails. A
    /// candidate the loader would reject (a budget too small to settle in,
    /// a scripted kill of an actor that is gone) is not run: the shrunk
    /// scenario must load like any other.
    fn attempt(&mut self, scenario: Scenario, faults: Vec<Fault>) -> Result<bool, ShrinkError> {
        if self.runs >= self.max_runs || scenario.validate().is_err() {
            return Ok(false);
        }
        self.runs += 1;
        let mut candidate = self.loaded.clone();
        candidate.scenario = scenario;
        let source = FaultSource::Forced(faults.into_iter().collect());
        let result = match run_seed_with(&candidate, self.seed, self.options, source) {
            // A budget cut too short to judge liveness: not this failure.
            Err(error) if error.kind() == crate::runner::ErrorKind::Inconclusive => return Ok(false),
            result => result?,
        };
        let now: BTreeSet<Invariant> = self.result.violations.iter().map(|v| v.invariant).collect();
        let keeps = result
            .violations
            .first()
            .is_some_and(|violation| violation.invariant == self.target)
            && result
                .violations
                .iter()
                .all(|violation| now.contains(&violation.invariant));
        if keeps {
            self.loaded = candidate;
            self.result = result;
            let size = self.size();
            (self.progress)(&format!(
                "run {}: {} workflows, {} actors, {} faults, {} steps",
                self.runs, size.workflows, size.actors, size.faults, size.steps
            ));
        }
        Ok(keeps)
    }

    fn workflows(&mut self) -> Result<(), ShrinkError> {
        // Once trips are kept by position, only `trips` removes more.
        if self.loaded.scenario.workload.trips_kept.is_some() {
            return Ok(());
        }
        for trips in smaller(self.loaded.scenario.workload.trips_count) {
            let mut scenario = self.loaded.scenario.clone();
            scenario.workload.trips_count = trips;
            if self.attempt(scenario, self.schedule())? {
                break;
            }
        }
        Ok(())
    }

    /// ddmin over the trips themselves (`workload.trips_kept`): a failure
    /// that needs trip 2 of 20 keeps it and drops the others, where fewer
    /// trips by count would drop trip 2 with the rest.
    fn trips(&mut self) -> Result<(), ShrinkError> {
        let workload = &self.loaded.scenario.workload;
        let all: Vec<u32> = (0..workload.trips_count).collect();
        let mut kept = workload.trips_kept.clone().unwrap_or(all);
        let mut chunk = kept.len().div_ceil(2);
        while kept.len() > 1 {
            let mut start = 0;
            while start < kept.len() && kept.len() > 1 {
                let end = (start + chunk).min(kept.len());
                let candidate: Vec<u32> = kept[..start].iter().chain(&kept[end..]).copied().collect();
                let mut scenario = self.loaded.scenario.clone();
                scenario.workload.trips_kept = Some(candidate.clone());
                if !candidate.is_empty() && self.attempt(scenario, self.schedule())? {
                    kept = candidate;
                } else {
                    start += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2).min(chunk - 1).max(1);
        }
        Ok(())
    }

    fn actors(&mut self) -> Result<(), ShrinkError> {
        type Field = fn(&mut Scenario) -> &mut u32;
        let fields: [Field; 3] = [
            |s| &mut s.workload.writers_count,
            |s| &mut s.workload.workers_count,
            |s| &mut s.workload.receivers_count,
        ];
        for field in fields {
            let current = *field(&mut self.loaded.scenario.clone());
            for count in smaller(current) {
                let mut scenario = self.loaded.scenario.clone();
                *field(&mut scenario) = count;
                if self.attempt(scenario, self.schedule())? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// ddmin over the schedule: remove chunks of halving size.
    fn faults(&mut self) -> Result<(), ShrinkError> {
        let mut chunk = self.result.injected.len().div_ceil(2);
        while chunk >= 1 && !self.result.injected.is_empty() {
            let mut start = 0;
            while start < self.result.injected.len() {
                let schedule = self.schedule();
                let end = (start + chunk).min(schedule.len());
                let kept: Vec<Fault> = schedule[..start].iter().chain(&schedule[end..]).cloned().collect();
                if !self.attempt(self.loaded.scenario.clone(), kept)? {
                    start += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2).min(chunk - 1).max(1);
        }
        Ok(())
    }

    /// Moves each fault to the first occurrence of its kind and to actor 0 of
    /// its role, one change at a time.
    fn simplify_faults(&mut self) -> Result<(), ShrinkError> {
        let mut index = 0;
        while index < self.result.injected.len() {
            let schedule = self.schedule();
            for simpler in simpler(&schedule[index]) {
                if schedule.contains(&simpler) {
                    continue;
                }
                let mut candidate = schedule.clone();
                candidate[index] = simpler;
                if self.attempt(self.loaded.scenario.clone(), candidate)? {
                    break;
                }
            }
            index += 1;
        }
        Ok(())
    }

    /// A smaller step budget, halving while the target still fails. Not for
    /// liveness: a run cut short "fails" to settle by construction.
    fn budget(&mut self) -> Result<(), ShrinkError> {
        if self.target == Invariant::I10 {
            return Ok(());
        }
        loop {
            let steps = self.result.steps;
            let budget = steps / 2;
            if budget < 10 || budget >= self.loaded.scenario.run.steps_max {
                return Ok(());
            }
            let mut scenario = self.loaded.scenario.clone();
            scenario.run.steps_max = budget;
            if !self.attempt(scenario, self.schedule())? {
                return Ok(());
            }
        }
    }

    fn script_and_phase(&mut self) -> Result<(), ShrinkError> {
        let mut index = 0;
        while index < self.loaded.scenario.script.len() {
            let mut scenario = self.loaded.scenario.clone();
            scenario.script.remove(index);
            if !self.attempt(scenario, self.schedule())? {
                index += 1;
            }
        }
        // A shorter fault phase: every fault that still fires must fit in it.
        let last_fault = self
            .result
            .injected
            .iter()
            .map(|injected| injected.tick)
            .max()
            .unwrap_or(0);
        let last_script = self
            .loaded
            .scenario
            .script
            .iter()
            .map(|entry| entry.tick)
            .max()
            .unwrap_or(0);
        let floor = last_fault.max(last_script) + 1;
        let current = self.loaded.scenario.run.ticks_fault;
        if floor < current {
            let mut scenario = self.loaded.scenario.clone();
            scenario.run.ticks_fault = floor;
            self.attempt(scenario, self.schedule())?;
        }
        Ok(())
    }
}

/// Earlier occurrences worth trying instead of the `n`-th: the first few
/// (the same kind of moment often recurs early), then half-way.
fn earlier(n: u64) -> Vec<u64> {
    let mut values: Vec<u64> = [1, 2, 3, 4, n / 2].into_iter().filter(|v| *v >= 1 && *v < n).collect();
    values.sort_unstable();
    values.dedup();
    values
}

/// Simpler versions of a fault: an earlier occurrence, then actor 0 of its role.
fn simpler(fault: &Fault) -> Vec<Fault> {
    let first = |actor: ActorId| ActorId::new(actor.role, 0);
    let mut out = Vec::new();
    match fault.clone() {
        Fault::Kill { actor, point, reach } => {
            out.extend(
                earlier(reach)
                    .into_iter()
                    .map(|reach| Fault::Kill { actor, point, reach }),
            );
            if actor.index > 0 {
                out.push(Fault::Kill {
                    actor: first(actor),
                    point,
                    reach,
                });
            }
        }
        Fault::Drop { from, send } => {
            out.extend(earlier(send).into_iter().map(|send| Fault::Drop { from, send }));
            if from.index > 0 {
                out.push(Fault::Drop {
                    from: first(from),
                    send,
                });
            }
        }
        Fault::Duplicate { from, send } => {
            out.extend(earlier(send).into_iter().map(|send| Fault::Duplicate { from, send }));
            if from.index > 0 {
                out.push(Fault::Duplicate {
                    from: first(from),
                    send,
                });
            }
        }
        Fault::Probe { reply } => {
            out.extend(earlier(reply).into_iter().map(|reply| Fault::Probe { reply }));
        }
        Fault::NearMiss { reply, form } => {
            out.extend(earlier(reply).into_iter().map(|reply| Fault::NearMiss { reply, form }));
            // The plainer change first: a case flip or a trailing space.
            out.extend(
                NearMiss::ALL
                    .into_iter()
                    .filter(|other| *other < form)
                    .map(|form| Fault::NearMiss { reply, form }),
            );
        }
        Fault::PowerCut { point } => {
            out.extend(earlier(point).into_iter().map(|point| Fault::PowerCut { point }));
        }
        Fault::Refuse { to, request } => {
            out.extend(
                earlier(request)
                    .into_iter()
                    .map(|request| Fault::Refuse { to, request }),
            );
        }
        Fault::ReplyRetryable { from, send } => {
            out.extend(
                earlier(send)
                    .into_iter()
                    .map(|send| Fault::ReplyRetryable { from, send }),
            );
        }
        Fault::Pause { actor, step, ticks } => {
            out.extend(
                earlier(step)
                    .into_iter()
                    .map(|step| Fault::Pause { actor, step, ticks }),
            );
            if actor.index > 0 {
                out.push(Fault::Pause {
                    actor: first(actor),
                    step,
                    ticks,
                });
            }
        }
        // Offsets move toward 0 (dropping the fault makes one 0). Skews stay
        // on their actor: each actor has one clock.
        Fault::Skew { actor, offset } => {
            out.extend(toward_zero(offset).map(|offset| Fault::Skew { actor, offset }));
        }
        Fault::ClockStep { actor, step, offset } => {
            out.extend(
                earlier(step)
                    .into_iter()
                    .map(|step| Fault::ClockStep { actor, step, offset }),
            );
            out.extend(toward_zero(offset).map(|offset| Fault::ClockStep { actor, step, offset }));
        }
        // A suspension stays on its actor (the interleaving is between
        // those actors): an earlier step, an earlier point, a shorter hold.
        Fault::Preempt {
            actor,
            step,
            point,
            hold,
        } => {
            let at = |step, point, hold| Fault::Preempt {
                actor,
                step,
                point,
                hold,
            };
            out.extend(earlier(step).into_iter().map(|step| at(step, point, hold)));
            out.extend(earlier(point).into_iter().map(|point| at(step, point, hold)));
            if hold > 1 {
                out.push(at(step, point, hold / 2));
            }
        }
    }
    out
}

/// A smaller offset of the same sign (half of it), unless it is ±1 already.
fn toward_zero(offset: i64) -> Option<i64> {
    (offset / 2 != 0).then_some(offset / 2)
}

#[cfg(test)]
mod tests {
    use super::smaller;

    #[test]
    fn earlier_occurrences_are_few_and_smaller() {
        assert_eq!(super::earlier(46), [1, 2, 3, 4, 23]);
        assert_eq!(super::earlier(3), [1, 2]);
        assert!(super::earlier(1).is_empty());
    }

    #[test]
    fn clock_offsets_shrink_toward_zero_and_steps_come_earlier() {
        use crate::actors::{ActorId, Role};
        use crate::faults::Fault;
        let actor = ActorId::new(Role::Worker, 2);
        assert_eq!(
            super::simpler(&Fault::Skew { actor, offset: -9 }),
            [Fault::Skew { actor, offset: -4 }]
        );
        assert!(super::simpler(&Fault::Skew { actor, offset: 1 }).is_empty());
        let step = Fault::ClockStep {
            actor,
            step: 3,
            offset: 6,
        };
        assert_eq!(
            super::simpler(&step),
            [
                Fault::ClockStep {
                    actor,
                    step: 1,
                    offset: 6
                },
                Fault::ClockStep {
                    actor,
                    step: 2,
                    offset: 6
                },
                Fault::ClockStep {
                    actor,
                    step: 3,
                    offset: 3
                },
            ]
        );
    }

    #[test]
    fn candidates_go_from_small_to_one_less() {
        assert_eq!(smaller(50), [1, 2, 4, 8, 16, 32, 49]);
        assert_eq!(smaller(3), [1, 2]);
        assert_eq!(smaller(2), [1]);
        assert!(smaller(1).is_empty());
    }
}
