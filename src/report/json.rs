//! The machine-readable records: one per seed, one summary per run.
//! Every top-level record carries `schema_version` (`SCHEMA_VERSION`);
//! `reports/README.md` documents each field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::coverage::Coverage;
use crate::runner::{Partition, Selection};

use crate::check::Violation;
use crate::faults::{KillCounters, KillPoint};
use crate::runner::{ErrorKind, RunError, SeedResult};

/// The version of every JSON record crashsim writes: raised when a field
/// changes meaning or goes; new fields may come without it.
pub const SCHEMA_VERSION: u32 = 1;

/// How often a kill point was reached and fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillCount {
    pub reached: u64,
    pub fired: u64,
    /// A suspension point's reaches inside an actor's step in the fault
    /// phase, where a suspension could land (absent for kill points).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armed: Option<u64>,
}

/// The key of suspensions at scheduling points of `kind` in `kills`.
pub const SUSPENDED_PREFIX: &str = "suspended.";

/// Kill counters by point name, in the order of `KillPoint::ALL`'s names;
/// with `[preempt]`, suspensions by kind of point as `suspended.KIND`.
pub fn kills(counters: &KillCounters) -> BTreeMap<String, KillCount> {
    let points = KillPoint::ALL.into_iter().map(|point| {
        (
            point.name().to_string(),
            KillCount {
                reached: counters.reached[point.index()],
                fired: counters.fired[point.index()],
                armed: None,
            },
        )
    });
    let suspended = counters.suspended.iter().map(|(kind, count)| {
        (
            format!("{SUSPENDED_PREFIX}{kind}"),
            KillCount {
                reached: count.reached,
                fired: count.fired,
                armed: Some(count.armed),
            },
        )
    });
    points.chain(suspended).collect()
}

/// One seed, as a JSON line of `run --format json`.
#[derive(Serialize)]
pub struct SeedRecord<'a> {
    pub schema_version: u32,
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
    pub kills: BTreeMap<String, KillCount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl<'a> SeedRecord<'a> {
    pub fn new(result: &'a SeedResult, replay: Option<String>) -> SeedRecord<'a> {
        SeedRecord {
            schema_version: SCHEMA_VERSION,
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorRecord {
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    pub scenario: String,
    pub seed: u64,
    /// Always "error".
    pub outcome: String,
    pub ok: bool,
    pub error: ErrorCause,
    pub replay: String,
}

/// What kind of error, and its cause in words.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorCause {
    pub kind: ErrorKind,
    pub cause: String,
}

impl ErrorRecord {
    pub fn new(scenario: &str, seed: u64, error: &RunError, replay: String) -> ErrorRecord {
        ErrorRecord {
            schema_version: SCHEMA_VERSION,
            scenario: scenario.to_string(),
            seed,
            outcome: "error".to_string(),
            ok: false,
            error: ErrorCause {
                kind: error.kind(),
                cause: error.cause(),
            },
            replay,
        }
    }
}

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

/// A failing seed in a summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FailingSeed {
    pub seed: u64,
    pub invariants: Vec<String>,
    pub first: String,
    pub replay: String,
}

/// Which seeds a run was asked for, and what stopped it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SelectionSummary {
    pub start_seed: u64,
    /// The range's length (`--seeds`); `null`: open-ended (a time budget).
    pub seeds: Option<u64>,
    /// This job's share of the range (`--partition`), if only a share ran.
    pub partition: Option<Partition>,
    /// `--time-budget` in seconds, if one was given.
    pub time_budget_s: Option<f64>,
    /// The budget ran out: the seeds that ended are a prefix of the share.
    pub budget_spent: bool,
    /// `--fail-fast` stopped starting seeds after a failing one: the seeds
    /// that ended are a prefix of the share.
    #[serde(default)]
    pub stopped_at_failure: bool,
}

impl SelectionSummary {
    pub fn new(selection: &Selection, time_budget_s: Option<f64>) -> SelectionSummary {
        SelectionSummary {
            start_seed: selection.start,
            seeds: selection.count,
            partition: selection.partition,
            time_budget_s,
            budget_spent: false,
            stopped_at_failure: false,
        }
    }

    /// The selection it describes.
    pub fn selection(&self) -> Selection {
        Selection {
            start: self.start_seed,
            count: self.seeds,
            partition: self.partition,
        }
    }
}

/// One scenario's run over many seeds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub path: String,
    /// SHA-256 (16 hex digits) of the scenario as loaded: runs to merge
    /// must have the same.
    pub scenario_hash: String,
    pub store: String,
    pub seeds: u64,
    pub passed: u64,
    pub failed: u64,
    pub seconds: f64,
    pub seeds_per_s: f64,
    pub steps: u64,
    pub steps_per_s: f64,
    /// Actor steps per seed with a verdict: the simulator's work per seed.
    #[serde(default)]
    pub steps_per_seed: f64,
    /// Failing seeds per invariant.
    pub violations_by_invariant: BTreeMap<String, u64>,
    pub kills: BTreeMap<String, KillCount>,
    /// Kill points the scenario declares that never fired in this run.
    pub never_fired: Vec<String>,
    /// Kill points the store under test cannot reach (a `call` adapter has
    /// no moment inside its transactions).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub unreachable: Vec<String>,
    /// Kill points, faults and invariants: declared, and seen.
    pub coverage: Coverage,
    /// The coverage gate was on (`--require-fired`): a gap fails the run.
    #[serde(default)]
    pub require_fired: bool,
    /// The outside store, when one was under test.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sut: Option<SutSummary>,
    pub failing_seeds: Vec<FailingSeed>,
    /// Seeds that ended with an error instead of a verdict: never findings.
    pub errored: u64,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub errors: Vec<ErrorRecord>,
    /// Seeds asked for that did not run: abandoned at a signal, or not
    /// started after an error that would have met them too.
    pub not_run: u64,
    /// The seeds that ended (with a verdict or an error), as ranges
    /// (`a..=b by N` in a partition's share).
    pub covered: String,
    /// The seeds asked for (`--seeds`, `--partition`, `--time-budget`).
    pub selection: SelectionSummary,
    /// XOR of a hash of (seed, trace hash, verdict) over every seed that
    /// ended (`digest`): two runs with equal digests ran the same seeds to
    /// the same traces and verdicts, and a merge XORs its partitions'.
    pub digest: String,
    /// The signal that interrupted the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub interrupted: Option<String>,
    /// A merged summary's jobs (`crashsim report merge`), one per input.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub parts: Vec<PartSummary>,
    /// The shares of a partitioned range that no merged input had.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub missing_partitions: Vec<Partition>,
}

/// What one job ran, in a merged summary (`report::merge`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartSummary {
    pub file: String,
    pub partition: Option<Partition>,
    pub seeds: u64,
    pub failed: u64,
    pub errored: u64,
    pub covered: String,
    pub seconds: f64,
    pub budget_spent: bool,
    #[serde(default)]
    pub stopped_at_failure: bool,
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
            // Root first (the order the checkers give), each once.
            let mut invariants: Vec<String> = Vec::new();
            for violation in &result.violations {
                let invariant = violation.invariant.to_string();
                if !invariants.contains(&invariant) {
                    invariants.push(invariant);
                }
            }
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
            scenario_hash: scenario_hash(&loaded.scenario),
            store: store.to_string(),
            seeds: results.len() as u64,
            passed: results.iter().filter(|result| result.ok).count() as u64,
            failed: failing.len() as u64,
            seconds,
            seeds_per_s: results.len() as f64 / seconds.max(1e-9),
            steps,
            steps_per_s: steps as f64 / seconds.max(1e-9),
            steps_per_seed: steps as f64 / results.len().max(1) as f64,
            violations_by_invariant: by_invariant,
            kills: kills(&counters),
            never_fired,
            unreachable: unreachable.iter().map(|point| point.name().to_string()).collect(),
            coverage: Coverage::of(&loaded.scenario, results, &counters, unreachable),
            require_fired: false,
            sut: None,
            failing_seeds: failing,
            errored: 0,
            errors: Vec::new(),
            not_run: 0,
            covered: ranges(results.iter().map(|result| result.seed)),
            // The span of the seeds given; `run` sets what it was asked for.
            selection: SelectionSummary::new(&span(results), None),
            digest: digest_hex(results.iter().fold(0, |digest, result| {
                digest ^ seed_digest(result.seed, &result.trace_hash, result.ok)
            })),
            interrupted: None,
            parts: Vec::new(),
            missing_partitions: Vec::new(),
        }
    }

    /// Sets the seeds asked for, and describes the covered ones in its terms.
    pub fn with_selection(mut self, selection: SelectionSummary, covered: impl IntoIterator<Item = u64>) -> Self {
        self.covered = selection.selection().ranges(covered);
        self.selection = selection;
        self
    }

    /// What the invariants said, in one line: "invariants: all held (…)" or
    /// "violations: I2 in 3 seed(s), …" (the CLI's and the harness's).
    pub fn verdicts(&self) -> String {
        if self.violations_by_invariant.is_empty() {
            return "invariants: all held (I1-I11)".to_string();
        }
        let parts: Vec<String> = self
            .violations_by_invariant
            .iter()
            .map(|(invariant, seeds)| format!("{invariant} in {seeds} seed(s)"))
            .collect();
        format!("violations: {}", parts.join(", "))
    }

    /// Adds the seeds that ended with an error, and those that did not run.
    pub fn with_errors(mut self, errors: Vec<ErrorRecord>, not_run: u64, covered: String) -> ScenarioSummary {
        let digest = errors.iter().fold(digest_of(&self.digest), |digest, error| {
            digest ^ seed_digest(error.seed, error.error.kind.name(), false)
        });
        self.digest = digest_hex(digest);
        self.errored = errors.len() as u64;
        self.errors = errors;
        self.not_run = not_run;
        self.covered = covered;
        self
    }
}

/// The range from the lowest seed of `results` to the highest.
fn span(results: &[SeedResult]) -> Selection {
    let low = results.iter().map(|result| result.seed).min().unwrap_or(0);
    let high = results.iter().map(|result| result.seed).max().unwrap_or(0);
    Selection {
        start: low,
        count: Some((high - low).saturating_add(1)),
        partition: None,
    }
}

/// SHA-256 (16 hex digits) of a scenario as loaded, defaults filled in.
pub fn scenario_hash(scenario: &crate::scenario::Scenario) -> String {
    let text = serde_json::to_string(scenario).expect("scenarios serialise");
    crate::store::service::hex16(&Sha256::digest(text.as_bytes()))
}

/// One seed's share of a run's `digest` (the first 8 bytes of a SHA-256):
/// its seed, its trace hash (an error's kind for a seed that ended in one)
/// and its verdict. A run's digest is the XOR of its seeds'.
pub fn seed_digest(seed: u64, trace_hash: &str, ok: bool) -> u64 {
    let verdict = if ok { "pass" } else { "fail" };
    let hash = Sha256::digest(format!("{seed}:{trace_hash}:{verdict}").as_bytes());
    u64::from_be_bytes(std::array::from_fn(|index| hash[index]))
}

/// A digest as its 16 hex digits.
pub fn digest_hex(digest: u64) -> String {
    format!("{digest:016x}")
}

/// A digest back from its hex (a malformed one reads as zero).
pub fn digest_of(text: &str) -> u64 {
    u64::from_str_radix(text, 16).unwrap_or(0)
}

/// Seeds as ranges, in the order given: "0..=41, 43, 45..=46".
pub fn ranges(seeds: impl IntoIterator<Item = u64>) -> String {
    crate::runner::selection::strided_ranges(seeds, 1)
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
    /// SHA-256 (16 hex digits) of each file its command names and each
    /// file its hello lists as `sources`.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The SQLite it runs on, where known (`Adapter::store_sqlite_version`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sqlite_version: Option<String>,
}

impl SutSummary {
    /// What differs between the files recorded here and `now` (the same
    /// store's files as hashed today), one warning line each, in file order.
    pub fn changed_files(&self, now: &BTreeMap<String, String>) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|(file, hash)| match now.get(file) {
                Some(now) if now == hash => None,
                Some(_) => Some(format!("{file} changed since the capsule was made")),
                None => Some(format!("{file}, which the capsule's store named, is not there")),
            })
            .collect()
    }

    pub fn of(adapter: &crate::adapter::Adapter) -> SutSummary {
        let identity = adapter.identity();
        SutSummary {
            command: adapter.command().to_string(),
            name: identity.name.clone(),
            version: identity.version.clone(),
            roles: identity.roles,
            files: adapter.files().clone(),
            sqlite_version: adapter.store_sqlite_version(),
        }
    }
}

/// The last line of `run --format json`, and `summary.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSummary {
    pub schema_version: u32,
    pub summary: bool,
    /// "pass", "fail" (a finding, errors or not; or a failed coverage gate), "error" or "interrupted".
    pub outcome: String,
    pub seeds: u64,
    pub failed: u64,
    /// Seeds that ended with an error instead of a verdict.
    pub errored: u64,
    /// Seeds asked for that did not run.
    pub not_run: u64,
    /// The signal that interrupted the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
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
    /// The SQLite an outside store runs on, where known (`sqlite_version`
    /// is crashsim's own, bundled).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub store_sqlite_version: Option<String>,
    /// The summaries a merge read (`crashsim report merge`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub merged_from: Vec<String>,
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
        let gate_failed = scenarios
            .iter()
            .any(|s| s.require_fired && s.interrupted.is_none() && !s.coverage.gaps.is_empty());
        let outcome = if failed > 0 || gate_failed {
            "fail"
        } else if interrupted.is_some() {
            "interrupted"
        } else if errored > 0 {
            "error"
        } else {
            "pass"
        };
        RunSummary {
            schema_version: SCHEMA_VERSION,
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
            store_sqlite_version: None,
            merged_from: Vec::new(),
            scenarios: scenarios.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests;
