//! What `crashsim run` prints for people at the end of a scenario: its
//! failing seeds, errors, counts, coverage and kill table.

use std::collections::BTreeMap;

use super::super::output::{failure_lines, kill_table, next_steps, replay_command, shrink_command};
use crate::faults::KillPoint;
use crate::report::json::ScenarioSummary;
use crate::report::number::{self, thousands};
use crate::runner::{self, SeedResult};
use crate::scenario::Loaded;

/// Failing seeds printed in full; the rest are in the report.
const FAILURES_SHOWN: usize = 10;

pub(super) fn print(
    summary: &ScenarioSummary,
    loaded: &Loaded,
    results: &[SeedResult],
    report_dirs: &BTreeMap<u64, std::path::PathBuf>,
    flags: &str,
    unreachable: &[KillPoint],
    work_dir: &std::path::Path,
) {
    for result in results.iter().filter(|result| !result.ok).take(FAILURES_SHOWN) {
        let replay = replay_command(loaded, result.seed, flags);
        let swarm_mix = loaded.scenario.faults.swarm.then_some(result.faults.as_str());
        let report = report_dirs.get(&result.seed).map(|dir| dir.as_path());
        out!(
            "{}",
            failure_lines(result.seed, &result.violations, swarm_mix, &replay, report)
        );
        out!(
            "{}",
            next_steps(&result.violations, &shrink_command(loaded, result.seed, flags))
        );
        if let Some(dir) = &result.kept_dir {
            outln!("note: databases kept in {}", dir.display());
        }
    }
    if summary.failed as usize > FAILURES_SHOWN {
        outln!(
            "… and {} more failing seeds (see summary.json)",
            summary.failed as usize - FAILURES_SHOWN
        );
    }
    // Errors go to stderr, like every error of the command line.
    for error in summary.errors.iter().take(FAILURES_SHOWN) {
        eprintln!(
            "error: seed={} ({}, not a finding): {}",
            error.seed,
            error.error.kind.name(),
            error.error.cause
        );
        eprintln!("note: replay with `{}`", error.replay);
    }
    if summary
        .errors
        .iter()
        .any(|error| error.error.kind == runner::ErrorKind::Environment)
        && let Some((free, total)) = crate::platform::space_of(work_dir)
    {
        eprintln!(
            "note: the work directory {} has {} free of {} (--dir chooses another)",
            work_dir.display(),
            number::bytes(free),
            number::bytes(total)
        );
    }
    if summary.errored as usize > FAILURES_SHOWN {
        eprintln!(
            "… and {} more seeds with errors (see summary.json)",
            summary.errored as usize - FAILURES_SHOWN
        );
    }
    let mut ended = format!(
        "{} passed, {} failed",
        thousands(summary.passed),
        thousands(summary.failed)
    );
    if summary.errored > 0 {
        ended.push_str(&format!(", {} errors (not findings)", thousands(summary.errored)));
    }
    if summary.not_run > 0 {
        ended.push_str(&format!(", {} not run", thousands(summary.not_run)));
    }
    outln!(
        "{}: {} seeds in {:.1} s ({}, {} steps/s, {} steps/seed): {ended}",
        summary.scenario,
        thousands(summary.seeds),
        summary.seconds,
        number::seed_rate(summary.seeds_per_s),
        number::short(summary.steps_per_s),
        number::short(summary.steps_per_seed),
    );
    if let Some(signal) = &summary.interrupted {
        outln!(
            "  interrupted by {signal}: seeds ended: {}; running seeds were abandoned",
            if summary.covered.is_empty() {
                "none"
            } else {
                &summary.covered
            }
        );
    } else if summary.not_run > 0 {
        outln!("  the run stopped at the first error that would meet every later seed too");
    } else if summary.selection.stopped_at_failure {
        outln!(
            "  stopped at the first failure (--fail-fast): seeds {} ended (a prefix of the range {})",
            summary.covered,
            summary.selection.selection().range()
        );
    } else if summary.selection.budget_spent {
        let ended = summary.seeds + summary.errored;
        let rerun = match summary.selection.partition {
            Some(partition) => format!("--partition {partition} --seeds {}", ended * partition.total),
            None => format!("--seeds {ended}"),
        };
        outln!(
            "  time budget spent: seeds {} ended (a prefix of the range {}); `{rerun}` covers them again",
            if summary.covered.is_empty() {
                "none"
            } else {
                &summary.covered
            },
            summary.selection.selection().range()
        );
    } else if let Some(partition) = summary.selection.partition {
        outln!(
            "  partition {partition} of {}: seeds {}",
            summary.selection.selection().range(),
            summary.covered
        );
    }
    if summary.seeds == 0 {
        outln!("  invariants: no seed ended with a verdict");
        return;
    }
    outln!("  {}", summary.verdicts());
    if let Some(faults) = summary.coverage.faults_line() {
        outln!("  {faults}");
    }
    if let Some(backups) = &summary.coverage.backups {
        outln!("  {}", backups.describe());
    }
    out!("{}", kill_table(&summary.kills, unreachable));
    // Under the coverage gate, gaps are errors (`super::gate`).
    if !summary.require_fired {
        for gap in &summary.coverage.gaps {
            outln!("warning: {}: {gap}", summary.scenario);
        }
    }
}
