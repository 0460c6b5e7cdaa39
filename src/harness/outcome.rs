//! What a run and a replay give back: `RunOutcome` (every seed's verdict,
//! the summary `crashsim run` computes, replay calls, where the reports
//! went) and `Replay` (one seed with its trace).
//!
//! The summary and the report files are built the way `crashsim run`
//! builds them (`cli/run.rs`) and written through the same `report`
//! functions, so a CI system reads a library run's `summary.json` and
//! `junit.xml` like a command-line run's. Only the replay string differs:
//! it is a Rust call, because the binary cannot load a library user's type.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{Harness, HarnessError};
use crate::faults::KillPoint;
use crate::report::{self, json};
use crate::runner::SeedResult;
use crate::scenario::Loaded;
use crate::trace::{recorder, render};
use crate::{check, platform};

/// Failing seeds `Display` prints in full; the rest are in `failures()`.
const FAILURES_SHOWN: usize = 10;

/// The verdicts of one run: one `SeedResult` per seed, in seed order.
///
/// `Display` prints what `crashsim run` prints for a failing seed (its
/// first violation, the replay call, the report folder) and a summary line,
/// so `assert!(outcome.passed(), "{outcome}")` explains a failure.
#[derive(Debug)]
pub struct RunOutcome {
    results: Vec<SeedResult>,
    summary: json::ScenarioSummary,
    /// `Harness::replay_call` of every seed, by seed.
    replays: BTreeMap<u64, String>,
    /// `<report_dir>/<label>/`, if reports were written.
    report_dir: Option<PathBuf>,
}

impl RunOutcome {
    /// Judges `results`, writes the reports if asked: the summary first
    /// needs every seed, so the seeds' folders come first, then the summary.
    pub(super) fn new(
        harness: &Harness<'_>,
        loaded: &Loaded,
        results: Vec<SeedResult>,
        seconds: f64,
        jobs: usize,
        work_dir: &Path,
    ) -> Result<RunOutcome, HarnessError> {
        let replays: BTreeMap<u64, String> = results
            .iter()
            .map(|result| (result.seed, with_hash(&harness.replay_call(result.seed), result)))
            .collect();
        let unreachable = KillPoint::unreachable_by(harness.implementation);
        let summary = summarize(
            loaded,
            harness.implementation.name(),
            &results,
            seconds,
            &replays,
            &unreachable,
        );
        let mut outcome = RunOutcome {
            results,
            summary,
            replays,
            report_dir: None,
        };
        if let Some(root) = &harness.report_dir {
            outcome.write_reports(root, jobs, work_dir)?;
        }
        Ok(outcome)
    }

    fn write_reports(&mut self, root: &Path, jobs: usize, work_dir: &Path) -> Result<(), HarnessError> {
        let failed = |source| HarnessError::Report {
            path: root.to_path_buf(),
            source,
        };
        for result in self.results.iter().filter(|result| !result.ok) {
            report::write_seed(root, result, &self.replays[&result.seed]).map_err(failed)?;
        }
        let run = json::RunSummary::new(
            std::slice::from_ref(&self.summary),
            self.summary.seconds,
            jobs,
            "in-process",
            work_dir,
            &platform::filesystem_of(work_dir),
        );
        self.report_dir = Some(report::write_summary(root, &self.summary.scenario, &run).map_err(failed)?);
        Ok(())
    }

    /// Whether every seed held every invariant.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|result| result.ok)
    }

    /// Every seed's result, in seed order. A failing seed keeps its trace
    /// (`events`) and the final state (`snapshot`); a passing one does not.
    pub fn results(&self) -> &[SeedResult] {
        &self.results
    }

    /// The failing seeds' results, in seed order.
    pub fn failures(&self) -> impl Iterator<Item = &SeedResult> {
        self.results.iter().filter(|result| !result.ok)
    }

    /// The result of `seed`, if it ran.
    pub fn result(&self, seed: u64) -> Option<&SeedResult> {
        self.results.iter().find(|result| result.seed == seed)
    }

    /// How to replay `seed`, as the reports print it: the Rust call and the
    /// trace hash it must give again.
    pub fn replay(&self, seed: u64) -> Option<&str> {
        self.replays.get(&seed).map(String::as_str)
    }

    /// What `summary.json` holds for this scenario: counts, violations by
    /// invariant, kill points reached and fired, failing seeds.
    pub fn summary(&self) -> &json::ScenarioSummary {
        &self.summary
    }

    /// `<report_dir>/<scenario>+<name>/`, when `report_dir` was set.
    pub fn report_dir(&self) -> Option<&Path> {
        self.report_dir.as_deref()
    }
}

/// The replay call, and the trace hash that seed gave.
fn with_hash(call: &str, result: &SeedResult) -> String {
    format!("{call} // trace hash {}", result.trace_hash)
}

/// The summary `crashsim run` computes for one scenario.
fn summarize(
    loaded: &Loaded,
    store: &str,
    results: &[SeedResult],
    seconds: f64,
    replays: &BTreeMap<u64, String>,
    unreachable: &[KillPoint],
) -> json::ScenarioSummary {
    json::ScenarioSummary::of(loaded, store, results, seconds, unreachable, |seed| {
        replays.get(&seed).cloned().unwrap_or_default()
    })
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summary = &self.summary;
        for result in self.failures().take(FAILURES_SHOWN) {
            if let Some(first) = result.violations.first() {
                let more = match result.violations.len() {
                    1 => String::new(),
                    n => format!(" (+{} more)", n - 1),
                };
                writeln!(f, "fail: seed={} {first}{more}", result.seed)?;
            }
            writeln!(f, "note: replay with `{}`", self.replays[&result.seed])?;
            if let Some(dir) = &self.report_dir {
                writeln!(
                    f,
                    "note: report written to {}/",
                    dir.join(result.seed.to_string()).display()
                )?;
            }
            if let Some(dir) = &result.kept_dir {
                writeln!(f, "note: databases kept in {}", dir.display())?;
            }
        }
        if summary.failed as usize > FAILURES_SHOWN {
            writeln!(
                f,
                "… and {} more failing seeds (see `failures()` or summary.json)",
                summary.failed as usize - FAILURES_SHOWN
            )?;
        }
        let seeds = if summary.seeds == 1 { "seed" } else { "seeds" };
        write!(
            f,
            "{}: {} {seeds}: {} passed, {} failed",
            summary.scenario, summary.seeds, summary.passed, summary.failed
        )?;
        write!(f, "; {}", summary.verdicts())
    }
}

/// One seed run again, with its trace.
///
/// `Display` prints what `crashsim replay` prints: the trace, one line per
/// step, its hash, and the verdict with every violation.
#[derive(Debug)]
pub struct Replay {
    result: SeedResult,
    call: String,
}

impl Replay {
    pub(super) fn new(result: SeedResult, call: String) -> Replay {
        Replay { result, call }
    }

    /// Whether the seed held every invariant.
    pub fn passed(&self) -> bool {
        self.result.ok
    }

    /// The seed's result; its `events` and `snapshot` are always kept.
    pub fn result(&self) -> &SeedResult {
        &self.result
    }

    /// The result, to keep.
    pub fn into_result(self) -> SeedResult {
        self.result
    }

    /// The trace for people, one step a line (`trace.txt` in a report).
    pub fn trace(&self) -> String {
        let mut text = String::new();
        for event in self.events() {
            text.push_str(&render::line(event));
            text.push('\n');
        }
        text
    }

    /// The trace as JSON Lines (`trace.jsonl`); the trace hash is the first
    /// 16 hex digits of its SHA-256.
    pub fn trace_jsonl(&self) -> String {
        recorder::jsonl(self.events())
    }

    /// The violations found, in the order the checkers report them.
    pub fn violations(&self) -> &[check::Violation] {
        &self.result.violations
    }

    fn events(&self) -> &[crate::trace::TraceEvent] {
        self.result.events.as_deref().unwrap_or_default()
    }
}

impl fmt::Display for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let result = &self.result;
        writeln!(f, "seed={} scenario={}", result.seed, result.scenario)?;
        writeln!(f, "faults: {}", result.faults)?;
        f.write_str(&self.trace())?;
        writeln!(
            f,
            "trace hash {} ({} events, {} steps, {} ticks, {} faults injected, {})",
            result.trace_hash,
            self.events().len(),
            result.steps,
            result.ticks,
            result.injected.len(),
            if result.settled { "settled" } else { "did not settle" }
        )?;
        if result.ok {
            return write!(f, "verdict: PASS, every invariant held");
        }
        writeln!(f, "verdict: FAIL, {} violation(s)", result.violations.len())?;
        for violation in &result.violations {
            writeln!(f, "  {violation}")?;
        }
        write!(f, "note: replay with `{}`", with_hash(&self.call, result))
    }
}
