//! The machine-readable records: one per seed, one summary per run.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Violation;
use crate::runner::SeedResult;
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
        }
    }
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
    pub seeds: u64,
    pub failed: u64,
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
