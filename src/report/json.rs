//! The machine-readable records: one per seed, one summary per run.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Violation;
use crate::runner::{ErrorKind, RunError, SeedResult};
use crate::sim::faults::{KillCounters, KillPoint};

/// How often a kill point was reached and fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KillCount {
    pub reached: u64,
    pub fired: u64,
}

/// Kill counters by point name, in the order of `KillPoint::ALL`'s names.
pub fn kills(counters: &KillCounters) -> BTreeMap<&'static str, KillCount> {
    KillPoint::ALL
        .into_iter()
        .map(|point| {
            (
                point.name(),
                KillCount {
                    reached: counters.reached[point.index()],
                    fired: counters.fired[point.index()],
                },
            )
        })
        .collect()
}

/// One seed, as a JSON line of `run --format json`.
#[derive(Serialize)]
pub struct SeedRecord<'a> {
    pub scenario: &'a str,
    pub seed: u64,
    /// "pass" or "fail" ("error" is an `ErrorRecord`).
    pub outcome: &'static str,
    pub ok: bool,
    pub violations: &'a [Violation],
    pub trace_hash: &'a str,
    pub steps: u64,
    pub ticks: u64,
    pub settled: bool,
    pub faults: &'a str,
    pub kills: BTreeMap<&'static str, KillCount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl<'a> SeedRecord<'a> {
    pub fn new(result: &'a SeedResult, replay: Option<String>) -> SeedRecord<'a> {
        SeedRecord {
            scenario: &result.scenario,
            seed: result.seed,
            outcome: if result.ok { "pass" } else { "fail" },
            ok: result.ok,
            violations: &result.violations,
            trace_hash: &result.trace_hash,
            steps: result.steps,
            ticks: result.ticks,
            settled: result.settled,
            faults: &result.faults,
            kills: kills(&result.kills),
            replay,
        }
    }
}

/// A seed that ended with an error instead of a verdict, as a JSON line of
/// `run --format json` (and in summaries): never a finding.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorRecord {
    pub scenario: String,
    pub seed: u64,
    /// Always "error".
    pub outcome: &'static str,
    pub ok: bool,
    pub error: ErrorCause,
    pub replay: String,
}

/// What kind of error, and its cause in words.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorCause {
    pub kind: ErrorKind,
    pub cause: String,
}

impl ErrorRecord {
    pub fn new(scenario: &str, seed: u64, error: &RunError, replay: String) -> ErrorRecord {
        ErrorRecord {
            scenario: scenario.to_string(),
            seed,
            outcome: "error",
            ok: false,
            error: ErrorCause {
                kind: error.kind(),
                cause: error.cause(),
            },
            replay,
        }
    }
}

/// A failing seed in a summary.
#[derive(Clone, Debug, Serialize)]
pub struct FailingSeed {
    pub seed: u64,
    pub invariants: Vec<String>,
    pub first: String,
    pub replay: String,
}

/// One scenario's run over many seeds.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub path: String,
    pub store: String,
    pub seeds: u64,
    pub passed: u64,
    pub failed: u64,
    pub seconds: f64,
    pub seeds_per_s: f64,
    pub steps: u64,
    pub steps_per_s: f64,
    /// Failing seeds per invariant.
    pub violations_by_invariant: BTreeMap<String, u64>,
    pub kills: BTreeMap<&'static str, KillCount>,
    /// Kill points the scenario declares that never fired in this run.
    pub never_fired: Vec<String>,
    /// Kill points the store under test cannot reach (a `call` adapter has
    /// no moment inside its transactions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<String>,
    /// The outside store, when one was under test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sut: Option<SutSummary>,
    pub failing_seeds: Vec<FailingSeed>,
    /// Seeds that ended with an error instead of a verdict: never findings.
    pub errored: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorRecord>,
    /// Seeds asked for that did not run: abandoned at a signal, or not
    /// started after an error that would have met them too.
    pub not_run: u64,
    /// The seeds that ended (with a verdict or an error), as ranges.
    pub covered: String,
    /// The signal that interrupted the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl ScenarioSummary {
    /// The summary of one scenario's seeds, as `crashsim run` and the
    /// library harness report it; `replay` gives a failing seed's replay
    /// command. `sut` is left for the caller.
    pub fn of(
        loaded: &crate::scenario::Loaded,
        store: &str,
        results: &[SeedResult],
        seconds: f64,
        unreachable: &[KillPoint],
        replay: impl Fn(u64) -> String,
    ) -> ScenarioSummary {
        let mut counters = KillCounters::default();
        let mut by_invariant: BTreeMap<String, u64> = BTreeMap::new();
        let mut failing = Vec::new();
        let mut steps = 0;
        for result in results {
            counters.add(&result.kills);
            steps += result.steps;
            let mut invariants: Vec<String> = result.violations.iter().map(|v| v.invariant.to_string()).collect();
            invariants.dedup();
            for invariant in &invariants {
                *by_invariant.entry(invariant.clone()).or_default() += 1;
            }
            if !result.ok {
                failing.push(FailingSeed {
                    seed: result.seed,
                    invariants,
                    first: result.violations.first().map(ToString::to_string).unwrap_or_default(),
                    replay: replay(result.seed),
                });
            }
        }
        let never_fired = loaded
            .scenario
            .faults
            .declared()
            .into_iter()
            .filter(|point| counters.fired[point.index()] == 0 && !unreachable.contains(point))
            .map(|point| point.name().to_string())
            .collect();
        ScenarioSummary {
            scenario: loaded.label(),
            path: loaded.path.display().to_string(),
            store: store.to_string(),
            seeds: results.len() as u64,
            passed: results.iter().filter(|result| result.ok).count() as u64,
            failed: failing.len() as u64,
            seconds,
            seeds_per_s: results.len() as f64 / seconds.max(1e-9),
            steps,
            steps_per_s: steps as f64 / seconds.max(1e-9),
            violations_by_invariant: by_invariant,
            kills: kills(&counters),
            never_fired,
            unreachable: unreachable.iter().map(|point| point.name().to_string()).collect(),
            sut: None,
            failing_seeds: failing,
            errored: 0,
            errors: Vec::new(),
            not_run: 0,
            covered: ranges(results.iter().map(|result| result.seed)),
            interrupted: None,
        }
    }

    /// Adds the seeds that ended with an error, and those that did not run.
    pub fn with_errors(mut self, errors: Vec<ErrorRecord>, not_run: u64, covered: String) -> ScenarioSummary {
        self.errored = errors.len() as u64;
        self.errors = errors;
        self.not_run = not_run;
        self.covered = covered;
        self
    }
}

/// Seeds as ranges, in the order given: "0..=41, 43, 45..=46".
pub fn ranges(seeds: impl IntoIterator<Item = u64>) -> String {
    let mut parts: Vec<(u64, u64)> = Vec::new();
    for seed in seeds {
        match parts.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(seed) => *last = seed,
            _ => parts.push((seed, seed)),
        }
    }
    parts
        .iter()
        .map(|(first, last)| match first == last {
            true => first.to_string(),
            false => format!("{first}..={last}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An outside store under test (`--sut`).
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct SutSummary {
    pub command: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub version: Option<String>,
    /// The roles it serves, each with its granularity.
    pub roles: crate::adapter::protocol::Served,
    /// SHA-256 (16 hex digits) of each file its command names.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

impl SutSummary {
    pub fn of(adapter: &crate::adapter::Adapter) -> SutSummary {
        let identity = adapter.identity();
        SutSummary {
            command: adapter.command().to_string(),
            name: identity.name.clone(),
            version: identity.version.clone(),
            roles: identity.roles,
            files: adapter.files().clone(),
        }
    }
}

/// The last line of `run --format json`, and `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub summary: bool,
    /// "pass", "fail" (a finding, errors or not), "error" or "interrupted".
    pub outcome: String,
    pub seeds: u64,
    pub failed: u64,
    /// Seeds that ended with an error instead of a verdict.
    pub errored: u64,
    /// Seeds asked for that did not run.
    pub not_run: u64,
    /// The signal that interrupted the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    pub seconds: f64,
    pub seeds_per_s: f64,
    pub steps_per_s: f64,
    pub jobs: usize,
    /// How the store under test ran: "in-process", "process" or "adapter".
    pub mode: String,
    pub work_dir: String,
    pub filesystem: String,
    pub git_commit: String,
    pub sqlite_version: String,
    pub scenarios: Vec<ScenarioSummary>,
}

impl RunSummary {
    /// The summary of a run of `scenarios`, which took `seconds`.
    pub fn new(
        scenarios: &[ScenarioSummary],
        seconds: f64,
        jobs: usize,
        mode: &str,
        work_dir: &std::path::Path,
        filesystem: &str,
    ) -> RunSummary {
        let seeds: u64 = scenarios.iter().map(|s| s.seeds).sum();
        let steps: u64 = scenarios.iter().map(|s| s.steps).sum();
        let busy: f64 = scenarios.iter().map(|s| s.seconds).sum::<f64>().min(seconds).max(1e-9);
        let failed = scenarios.iter().map(|s| s.failed).sum();
        let errored = scenarios.iter().map(|s| s.errored).sum();
        let interrupted = scenarios.iter().find_map(|s| s.interrupted.clone());
        let outcome = if failed > 0 {
            "fail"
        } else if interrupted.is_some() {
            "interrupted"
        } else if errored > 0 {
            "error"
        } else {
            "pass"
        };
        RunSummary {
            summary: true,
            outcome: outcome.to_string(),
            seeds,
            failed,
            errored,
            not_run: scenarios.iter().map(|s| s.not_run).sum(),
            interrupted,
            seconds,
            seeds_per_s: seeds as f64 / busy,
            steps_per_s: steps as f64 / busy,
            jobs,
            mode: mode.to_string(),
            work_dir: work_dir.display().to_string(),
            filesystem: filesystem.to_string(),
            git_commit: crate::platform::git_commit().to_string(),
            sqlite_version: crate::platform::sqlite_version().to_string(),
            scenarios: scenarios.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_read_as_ranges() {
        assert_eq!(super::ranges([0, 1, 2, 3, 5, 7, 8]), "0..=3, 5, 7..=8");
        assert_eq!(super::ranges([9]), "9");
        assert_eq!(super::ranges([]), "");
        assert_eq!(
            super::ranges([u64::MAX - 1, u64::MAX]),
            format!("{}..={}", u64::MAX - 1, u64::MAX)
        );
    }
}
