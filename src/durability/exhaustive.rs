//! Crash-point enumeration, in the manner of SQLite's I/O-error loops and
//! CrashMonkey: a dry run of a scenario counts the persistence points
//! (writes, syncs, truncations, deletions) its fault phase makes through the
//! crash VFS; then the same seed is run again once per point, with the power
//! cut exactly there and no other fault, and every crash state is judged by
//! all the checkers.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::check::Invariant;
use crate::faults::{Fault, FaultSource};
use crate::runner::{Options, RunError, run_seed_with};
use crate::scenario::Loaded;

/// What the enumeration found.
#[derive(Clone, Debug, Serialize)]
pub struct Enumeration {
    pub scenario: String,
    pub seed: u64,
    /// Persistence points of the dry run's fault phase.
    pub points: u64,
    /// Points a cut was tried at (every `every`-th, up to `max_points`).
    pub tried: u64,
    /// Crash states (runs) in which some invariant failed.
    pub failing: u64,
    /// Crash states that failed each invariant.
    pub by_invariant: BTreeMap<Invariant, u64>,
    /// The first failing points, each with its violations (at most
    /// `VIOLATIONS_KEPT`, in the checkers' order).
    pub failures: Vec<Failure>,
}

/// A crash state in which some invariant failed.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The persistence point the power was cut at.
    pub point: u64,
    pub violations: Vec<String>,
}

/// Failing points kept in full.
const FAILURES_KEPT: usize = 10;

/// Violations kept per failing point.
const VIOLATIONS_KEPT: usize = 20;

/// A cut that never comes: the crash VFS is in place, nothing fails.
fn dry() -> FaultSource {
    FaultSource::Forced(BTreeSet::from([Fault::PowerCut { point: u64::MAX }]))
}

/// No fault but a power cut at persistence point `point`: one crash state
/// (`crashsim replay … --cut POINT` replays it).
pub fn cut_at(point: u64) -> FaultSource {
    FaultSource::Forced(BTreeSet::from([Fault::PowerCut { point }]))
}

/// Enumerates the cut points of seed `seed` of `loaded`.
pub fn enumerate(
    loaded: &Loaded,
    seed: u64,
    every: u64,
    max_points: Option<u64>,
    options: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Enumeration, RunError> {
    let dry_run = run_seed_with(loaded, seed, options, dry())?;
    let points = dry_run.fault_points.unwrap_or(0);
    let mut enumeration = Enumeration {
        scenario: loaded.label(),
        seed,
        points,
        tried: 0,
        failing: 0,
        by_invariant: BTreeMap::new(),
        failures: Vec::new(),
    };
    let cuts: Vec<u64> = (1..=points)
        .step_by(every.max(1) as usize)
        .take(max_points.map_or(usize::MAX, |max| max as usize))
        .collect();
    let total = cuts.len() as u64;
    for point in cuts {
        let result = run_seed_with(loaded, seed, options, cut_at(point))?;
        enumeration.tried += 1;
        if !result.ok {
            enumeration.failing += 1;
            let invariants: BTreeSet<Invariant> = result.violations.iter().map(|v| v.invariant).collect();
            for invariant in invariants {
                *enumeration.by_invariant.entry(invariant).or_default() += 1;
            }
            if enumeration.failures.len() < FAILURES_KEPT {
                enumeration.failures.push(Failure {
                    point,
                    violations: result
                        .violations
                        .iter()
                        .take(VIOLATIONS_KEPT)
                        .map(ToString::to_string)
                        .collect(),
                });
            }
        }
        progress(enumeration.tried, total);
    }
    Ok(enumeration)
}
