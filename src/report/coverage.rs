//! A run's coverage in its summary: for every kill point, fault kind and
//! invariant, whether the scenario declared it and how often the run
//! reached, fired or exercised it (`check::coverage` says what each
//! means). Sums of partitions merge into the coverage of their whole run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::Invariant;
use crate::check::coverage;
use crate::faults::{KillCounters, KillPoint};
use crate::runner::SeedResult;
use crate::scenario::Scenario;

/// One kill point across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointCoverage {
    /// The scenario turns it on, and the store under test can reach it.
    pub declared: bool,
    pub reached: u64,
    pub fired: u64,
}

/// One kind of fault across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCoverage {
    pub declared: bool,
    /// Times it fired.
    pub fired: u64,
    /// Seeds in which it fired at least once.
    pub seeds: u64,
}

/// One invariant across a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantCoverage {
    /// The scenario's faults and workload make its situation (`check::coverage::required`).
    pub required: bool,
    /// Seeds with a verdict in which its situation arose.
    pub exercised: u64,
}

/// What a run covered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    pub kill_points: BTreeMap<String, PointCoverage>,
    pub faults: BTreeMap<String, FaultCoverage>,
    pub invariants: BTreeMap<Invariant, InvariantCoverage>,
    /// Everything declared or required that the run never fired or
    /// exercised, in words; `--require-fired` fails the run on any.
    pub gaps: Vec<String>,
}

impl Coverage {
    /// The coverage of `results`, seeds of `scenario` whose kill counters
    /// add up to `kills`, run against a store that cannot reach `unreachable`.
    pub fn of(
        scenario: &Scenario,
        results: &[SeedResult],
        kills: &KillCounters,
        unreachable: &[KillPoint],
    ) -> Coverage {
        let declared_points = scenario.faults.declared();
        let declared_faults = coverage::declared_faults(scenario);
        let required = coverage::required(scenario, unreachable);
        let mut coverage = Coverage::default();
        for kind in coverage::FAULTS {
            let declared = declared_faults.contains(kind);
            coverage.faults.insert(
                kind.to_string(),
                FaultCoverage {
                    declared,
                    ..Default::default()
                },
            );
        }
        for invariant in coverage::invariants() {
            let required = required.contains(&invariant);
            let entry = InvariantCoverage { required, exercised: 0 };
            coverage.invariants.insert(invariant, entry);
        }
        for result in results {
            for (kind, fired) in coverage::fired(&result.injected) {
                let entry = coverage.faults.entry(kind.to_string()).or_default();
                entry.fired += fired;
                entry.seeds += 1;
            }
            // A seed that broke an invariant exercised it, whatever the
            // store's own trace says it arose (or the gap would say "never
            // exercised" under "I10 in N seeds").
            let broken = result.violations.iter().map(|violation| &violation.invariant);
            let exercised: std::collections::BTreeSet<_> = result.exercised.iter().chain(broken).collect();
            for invariant in exercised {
                coverage.invariants.entry(*invariant).or_default().exercised += 1;
            }
        }
        for point in KillPoint::ALL {
            let declared = declared_points.contains(&point) && !unreachable.contains(&point);
            let entry = PointCoverage {
                declared,
                reached: kills.reached[point.index()],
                fired: kills.fired[point.index()],
            };
            coverage.kill_points.insert(point.name().to_string(), entry);
        }
        coverage.gaps = coverage.find_gaps(results.len() as u64);
        coverage
    }

    /// The coverage of two runs of one scenario together (partitions).
    pub fn merge(&mut self, other: &Coverage, seeds: u64) {
        for (name, point) in &other.kill_points {
            let entry = self.kill_points.entry(name.clone()).or_default();
            entry.declared |= point.declared;
            entry.reached += point.reached;
            entry.fired += point.fired;
        }
        for (name, fault) in &other.faults {
            let entry = self.faults.entry(name.clone()).or_default();
            entry.declared |= fault.declared;
            entry.fired += fault.fired;
            entry.seeds += fault.seeds;
        }
        for (name, invariant) in &other.invariants {
            let entry = self.invariants.entry(*name).or_default();
            entry.required |= invariant.required;
            entry.exercised += invariant.exercised;
        }
        self.gaps = self.find_gaps(seeds);
    }

    /// What was declared and never seen in `seeds` seeds.
    fn find_gaps(&self, seeds: u64) -> Vec<String> {
        let seeds = match seeds {
            1 => "1 seed".to_string(),
            n => format!("{n} seeds"),
        };
        let mut gaps = Vec::new();
        for (name, point) in &self.kill_points {
            if point.declared && point.fired == 0 {
                let reached = match point.reached {
                    0 => "never reached".to_string(),
                    reached => format!("reached {reached} times"),
                };
                gaps.push(format!(
                    "kill point {name} is declared but never fired in {seeds} ({reached})"
                ));
            }
        }
        for (name, fault) in &self.faults {
            if fault.declared && fault.fired == 0 {
                gaps.push(format!("fault {name} is declared but never fired in {seeds}"));
            }
        }
        for (invariant, entry) in &self.invariants {
            let invariant = *invariant;
            if entry.required && entry.exercised == 0 {
                gaps.push(format!(
                    "invariant {invariant} ({}) was never exercised in {seeds}: no seed in which {}",
                    invariant.title(),
                    coverage::situation(invariant)
                ));
            }
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violation;

    fn result(exercised: &[Invariant], broken: &[Invariant]) -> SeedResult {
        SeedResult {
            scenario: "smoke".into(),
            seed: 0,
            ok: broken.is_empty(),
            violations: broken
                .iter()
                .map(|invariant| Violation {
                    invariant: *invariant,
                    message: "broken".into(),
                    workflow_id: None,
                    command_id: None,
                    seq: None,
                    ticks: Vec::new(),
                })
                .collect(),
            trace_hash: String::new(),
            steps: 0,
            ticks: 0,
            settled: true,
            faults: String::new(),
            kills: KillCounters::default(),
            exercised: exercised.iter().copied().collect(),
            injected: Vec::new(),
            fault_points: None,
            events: None,
            snapshot: None,
            artifacts: Vec::new(),
            kept_dir: None,
        }
    }

    #[test]
    fn a_broken_invariant_counts_as_exercised_so_no_gap_contradicts_the_finding() {
        let loaded = crate::scenario::builtin::find(std::path::Path::new("smoke"))
            .expect("built in")
            .load()
            .expect("loads");
        // The trace never marked I10's situation, but the seed broke I10.
        let results = [result(&[Invariant::I1], &[Invariant::I10])];
        let coverage = Coverage::of(&loaded.scenario, &results, &KillCounters::default(), &[]);
        assert!(coverage.invariants[&Invariant::I10].required);
        assert_eq!(coverage.invariants[&Invariant::I10].exercised, 1);
        assert!(
            !coverage.gaps.iter().any(|gap| gap.contains("I10")),
            "{:?}",
            coverage.gaps
        );
        let untouched = Coverage::of(&loaded.scenario, &results[..0], &KillCounters::default(), &[]);
        assert_eq!(untouched.invariants[&Invariant::I10].exercised, 0);
    }
}
